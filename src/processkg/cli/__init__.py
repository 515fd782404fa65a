"""The ``kg`` command line: wires the pipeline stages; all work is done by library functions."""

from __future__ import annotations

import csv
import io
import json
import sys
from pathlib import Path

import click

from processkg.sources.discover import BPMN_SUFFIXES, ODATA_SUFFIXES, OPENAPI_SUFFIXES, discover
from processkg.graph import stats as stats_mod
from processkg.pipeline import BuildOptions, build
from processkg.errors import ProcessKGError
from processkg.graph.store import load_query, open_store, plain, select


class _Group(click.Group):
    """Turns input errors into one clear line and exit code 2, never a traceback."""

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except ProcessKGError as exc:
            click.echo(f"error: {exc}", err=True)
            sys.exit(2)


@click.group(cls=_Group)
@click.version_option(package_name="processkg")
def main() -> None:
    """processkg: process-aware knowledge graphs from OData $metadata and BPMN 2.0."""


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
def build_cmd(odata, bpmn_paths, openapi_paths, mapping, codes, store, out, on_error, check, no_shapes,
              with_index, model, chunks) -> None:
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
                        chunks=chunks, openapi=list(openapi_paths))
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


@main.command("query")
@click.option("--store", required=True, type=click.Path(path_type=Path), help="Store directory written by kg build.")
@click.argument("query")
@click.option("--param", "params", multiple=True, metavar="KEY=VALUE",
              help="Bind ?KEY to VALUE (an IRI if it looks like one, else a literal). Repeatable.")
@click.option("--format", "fmt", type=click.Choice(["table", "csv", "json"]), default="table", show_default=True,
              help="Output format of the result rows.")
def query_cmd(store, query, params, fmt) -> None:
    """Run a SPARQL SELECT: a .rq file, '-' for stdin, or the name of a library query."""
    text = _query_text(query)
    bindings = {}
    for item in params:
        key, sep, value = item.partition("=")
        if not sep:
            raise click.BadParameter(f"{item!r} is not KEY=VALUE", param_hint="--param")
        bindings[key.lstrip("?")] = value
    names, rows = select(open_store(store), text, bindings)
    click.echo(render_rows(names, [[plain(v) for v in row] for row in rows], fmt), nl=False)


def _query_text(query: str) -> str:
    if query == "-":
        return sys.stdin.read()
    path = Path(query)
    if path.suffix == ".rq" or path.exists():
        if not path.exists():
            raise ProcessKGError(f"{query}: no such query file")
        return path.read_text(encoding="utf-8")
    return load_query(query)


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
