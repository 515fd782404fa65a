"""The ``kg`` command line: wires the pipeline stages; all work is done by library functions."""

from __future__ import annotations

import csv
import difflib
import errno
import io
import json
import os
import sys
import traceback
from pathlib import Path

import click

from processkg.sources.discover import BPMN_SUFFIXES, ODATA_SUFFIXES, OPENAPI_SUFFIXES, discover
from processkg.graph import stats as stats_mod
from processkg.pipeline import BuildOptions, build
from processkg.errors import ProcessKGError
from processkg.assets import internal_queries_dir, queries_dir
from processkg.graph.bounded import run_bounded
from processkg.graph.store import load_query, open_store


#: Exit codes of every command (listed in ``kg --help``).
EXIT_PROBLEMS, EXIT_ERROR, EXIT_INTERNAL, EXIT_INTERRUPTED = 1, 2, 3, 130


class _Group(click.Group):
    """One line on stderr and a distinct exit code for whatever ends a command, never a traceback.

    An input error is exit 2. A crash (a bug) is exit 3, so that it is never mistaken for
    exit 1, which commands such as ``kg validate`` use for "some calls invalid";
    PROCESSKG_DEBUG=1 shows its traceback. Ctrl-C is exit 130.
    """

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except ProcessKGError as exc:
            click.echo(f"error: {exc}", err=True)
            sys.exit(EXIT_ERROR)
        except KeyboardInterrupt:
            click.echo("interrupted", err=True)
            sys.exit(EXIT_INTERRUPTED)
        except (click.exceptions.ClickException, click.exceptions.Exit, click.exceptions.Abort):
            raise
        except OSError as exc:
            if exc.errno == errno.EPIPE:  # the reader of our output went away: click handles it
                raise
            _internal_error(exc)
        except Exception as exc:
            _internal_error(exc)


def _internal_error(exc: BaseException) -> None:
    if os.environ.get("PROCESSKG_DEBUG", "") not in ("", "0"):
        traceback.print_exception(exc, file=sys.stderr)
    detail = " ".join(f"{type(exc).__name__}: {exc}".split())
    click.echo(f"internal error: {detail}; please report (PROCESSKG_DEBUG=1 shows the traceback)", err=True)
    sys.exit(EXIT_INTERNAL)


@click.group(cls=_Group)
@click.version_option(package_name="processkg")
def main() -> None:
    """processkg: process-aware knowledge graphs from OData $metadata and BPMN 2.0.

    \b
    Exit codes:
      0    success
      1    the command ran and found problems (kg validate: some calls invalid;
           kg audit: counts differ; kg docs --check: pages out of date)
      2    bad input or usage: one line "error: ..." on stderr
      3    internal error (a bug): one line "internal error: ..."; please report it,
           PROCESSKG_DEBUG=1 shows the traceback
      130  interrupted (Ctrl-C)
    """


def _progress(files_hint: int):
    if not sys.stderr.isatty():
        return None, None
    bar = click.progressbar(length=files_hint, label="reading", file=sys.stderr, show_pos=True)
    return bar, (lambda item: bar.update(1))


@main.command("build")
@click.option("--odata", "odata", multiple=True, type=click.Path(path_type=Path),
              help="OData $metadata file or directory (searched recursively). Repeatable.")
@click.option("--bpmn", "bpmn_paths", multiple=True, type=click.Path(path_type=Path),
              help="BPMN 2.0 file or directory (searched recursively). Repeatable.")
@click.option("--openapi", "openapi_paths", multiple=True, type=click.Path(path_type=Path),
              help="OpenAPI 3 JSON file or directory (services without a process layer). Repeatable.")
@click.option("--mapping", type=click.Path(path_type=Path), help="Activity-to-entity-set mapping (YAML).")
@click.option("--codes", multiple=True, type=click.Path(path_type=Path),
              help="Code-list CSV file or directory (value_list,code,description). Repeatable.")
@click.option("--code-bindings", type=click.Path(path_type=Path),
              help="YAML binding SERVICE/EntityType/Property (wildcards allowed) to a --codes value list.")
@click.option("--store", type=click.Path(path_type=Path), help="Store directory to (re)write atomically.")
@click.option("--out", type=click.Path(path_type=Path), help="Also write the graph as Turtle here.")
@click.option("--on-error", type=click.Choice(["fail", "warn", "skip"]), default="fail", show_default=True,
              help="fail: stop at the first bad file; warn: skip it and say so; skip: skip it quietly.")
@click.option("--check", is_flag=True, help="Run shapes/graph.ttl on the new graph; fail (keeping the old store) on violations.")
@click.option("--no-shapes", is_flag=True, help="Do not write the generated SHACL payload shapes into the store.")
@click.option("--index/--no-index", "with_index", default=True, show_default=True,
              help="Write the retrieval index (STORE/index/) for kg retrieve.")
@click.option("--model", help="Embedding model for the index: a name known offline or a local path.")
@click.option("--chunks", is_flag=True, help="Also index raw metadata chunks for --method chunkrag (slow).")
def build_cmd(odata, bpmn_paths, openapi_paths, mapping, codes, code_bindings, store, out, on_error, check,
              no_shapes, with_index, model, chunks) -> None:
    """Lift OData CSDL (V2, V4), BPMN 2.0 and OpenAPI 3 into one graph; write the store
    (with SHACL payload shapes and the retrieval index) and, with --out, Turtle."""
    if not store and not out:
        raise click.UsageError("give --store DIR and/or --out FILE.ttl")

    total = (len(discover(odata, ODATA_SUFFIXES)) + len(discover(bpmn_paths, BPMN_SUFFIXES))
             + len(discover(openapi_paths, OPENAPI_SUFFIXES)))
    bar, progress = _progress(total)
    if check and not store:
        raise click.UsageError("--check needs --store")
    opts = BuildOptions(list(odata), list(bpmn_paths), store, out, mapping, list(codes), on_error,
                        shapes=not no_shapes, check=check, index=with_index and bool(store), model=model,
                        chunks=chunks, openapi=list(openapi_paths), code_bindings=code_bindings)
    if bar is not None:
        with bar:
            report = build(opts, progress)
    else:
        report = build(opts)
    click.echo(stats_mod.build_summary(report, show_skipped=on_error != "skip", store=store, out=out))


@main.command("stats")
@click.option("--store", required=True, type=click.Path(path_type=Path), help="Store directory written by kg build.")
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True,
              help="Plain tables, or JSON with the same rows.")
def stats_cmd(store, fmt) -> None:
    """Counts per class, per service and per process."""
    result = stats_mod.store_stats(open_store(store))
    if fmt == "json":
        click.echo(json.dumps(result, indent=2, sort_keys=True))
    else:
        click.echo(stats_mod.render_stats(result))


def _library_epilog() -> str:
    """The user-facing library queries with their one-line summaries, for ``kg query --help``."""
    lines = ["\b", "Library queries (queries/*.rq; kg docs documents them):"]
    for path in sorted(queries_dir().glob("*.rq")):
        first = path.read_text(encoding="utf-8").partition("\n")[0].lstrip("# ")
        summary = first.split(":", 1)[1].strip() if first.startswith(f"{path.stem}:") else ""
        lines.append(f"  {path.stem:<26} {summary}"[:110].rstrip())
    return "\n".join(lines)


@main.command("query", epilog=_library_epilog())
@click.option("--store", required=True, type=click.Path(path_type=Path), help="Store directory written by kg build.")
@click.argument("query")
@click.option("--param", "params", multiple=True, metavar="KEY=VALUE",
              help="Bind ?KEY to VALUE (an IRI if it looks like one, else a literal). Repeatable.")
@click.option("--format", "fmt", type=click.Choice(["table", "csv", "json"]), default="table", show_default=True,
              help="Output format of the result rows.")
@click.option("--timeout", type=click.FloatRange(min=0), default=30, show_default=True, metavar="SECONDS",
              help="Stop the query after this many seconds (0: no limit).")
@click.option("--limit", type=click.IntRange(min=0), default=100_000, show_default=True, metavar="N",
              help="Fail if the query returns more than N rows (0: no limit).")
def query_cmd(store, query, params, fmt, timeout, limit) -> None:
    """Run a SPARQL SELECT: a .rq file, '-' for stdin, or the name of a library query.

    The query runs read-only and within bounds: SERVICE, FROM and updates are refused
    (nothing is fetched from a network, nothing is changed), and it is stopped after
    --timeout seconds or more than --limit rows. A library query's bound parameters are
    not repeated as columns.
    """
    text, library = _query_text(query)
    bindings = {}
    for item in params:
        key, sep, value = item.partition("=")
        if not sep:
            raise click.BadParameter(f"{item!r} is not KEY=VALUE", param_hint="--param")
        bindings[key.lstrip("?$")] = value
    names, rows = run_bounded(store, text, bindings, timeout=timeout, limit=limit)
    if library:
        names, rows = _without_columns(names, rows, set(bindings))
    click.echo(render_rows(names, rows, fmt), nl=False)


def _without_columns(names: list, rows: list, drop: set) -> tuple[list, list]:
    """Library queries SELECT their parameters only so that substitution can bind them."""
    keep = [i for i, name in enumerate(names) if name not in drop]
    return [names[i] for i in keep], [[row[i] for i in keep] for row in rows]


def _query_text(query: str) -> tuple[str, bool]:
    """The query's text, and whether it is a library query (named, not a file)."""
    if query == "-":
        return sys.stdin.read(), False
    path = Path(query)
    if path.suffix == ".rq" or path.exists():
        if not path.is_file():
            raise ProcessKGError(f"{query}: no such query file")
        return path.read_text(encoding="utf-8"), False
    try:
        return load_query(query), True
    except ProcessKGError as exc:
        names = [p.stem for folder in (queries_dir(), internal_queries_dir()) for p in folder.glob("*.rq")]
        close = difflib.get_close_matches(query, names, n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        raise ProcessKGError(f"{exc}; {hint}(kg query --help lists the library)") from None


def render_rows(names: list, rows: list, fmt: str) -> str:
    if fmt == "json":
        return json.dumps([dict(zip(names, r)) for r in rows], indent=2) + "\n"
    if fmt == "csv":
        buf = io.StringIO()
        writer = csv.writer(buf, lineterminator="\n")
        writer.writerow(names)
        writer.writerows(["" if v is None else v for v in r] for r in rows)
        return buf.getvalue()
    return stats_mod.table(names, rows) + f"\n({len(rows)} rows)\n"


@main.command("audit")
@click.option("--store", required=True, type=click.Path(path_type=Path), help="Store directory written by kg build.")
@click.option("--odata", multiple=True, type=click.Path(path_type=Path),
              help="The OData files or directories the store was built from. Repeatable.")
@click.option("--bpmn", "bpmn_paths", multiple=True, type=click.Path(path_type=Path),
              help="The BPMN files or directories the store was built from. Repeatable.")
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True,
              help="A table of classes, or JSON with per-file rows.")
def audit_cmd(store, odata, bpmn_paths, fmt) -> None:
    """Fidelity audit: count each structure in the XML (XPath) and in the graph (SPARQL)."""
    from processkg.graph.audit import audit, render_audit

    result = audit(store, list(odata), list(bpmn_paths))
    click.echo(json.dumps(result, indent=2) if fmt == "json" else render_audit(result))
    if any(row["source"] != row["graph"] for row in result["classes"]):
        sys.exit(1)


def _register() -> None:
    """Commands of the later pipeline stages, each defined in its own module."""
    from processkg.cli.eval import eval_group
    from processkg.cli.map import map_group, mapping_cmd
    from processkg.cli.retrieve import index_cmd, retrieve_cmd
    from processkg.cli.validate import shapes_cmd, validate_cmd
    from processkg.cli.docs import docs_cmd
    from processkg.cli.serve import serve_cmd

    main.add_command(retrieve_cmd)
    main.add_command(index_cmd)
    main.add_command(eval_group)
    main.add_command(map_group)
    eval_group.add_command(mapping_cmd)
    main.add_command(validate_cmd)
    main.add_command(shapes_cmd)
    main.add_command(docs_cmd)
    main.add_command(serve_cmd)


_register()

if __name__ == "__main__":  # pragma: no cover
    main()
