"""``kg stats``, ``kg query`` and ``kg audit``: what is in a store, asked three ways."""

from __future__ import annotations

import csv
import difflib
import io
import json
import sys
from pathlib import Path

import click

from processkg.aliases import JSONValue
from processkg.assets import internal_queries_dir, queries_dir
from processkg.build.audit import audit, render_audit
from processkg.cli.exit_codes import ExitCode
from processkg.cli.options import format_option, store_option
from processkg.errors import ProcessKGError
from processkg.graph import stats
from processkg.graph.bounded import run_bounded
from processkg.graph.handle import StoreHandle
from processkg.graph.store import load_query


@click.command("stats")
@store_option()
@format_option("table", "json", help="Plain tables, or JSON with the same rows.")
def stats_cmd(store: StoreHandle, fmt: str) -> None:
    """Counts per class, per service and per process."""
    result = stats.store_stats(store.graph)
    if fmt == "json":
        click.echo(json.dumps(result, indent=2, sort_keys=True))
    else:
        click.echo(stats.render_stats(result))


def _library_epilog() -> str:
    """The user-facing library queries with their one-line summaries, for ``kg query --help``."""
    lines = ["\b", "Library queries (queries/*.rq; kg docs documents them):"]
    for path in sorted(queries_dir().glob("*.rq")):
        first = path.read_text(encoding="utf-8").partition("\n")[0].lstrip("# ")
        summary = first.split(":", 1)[1].strip() if first.startswith(f"{path.stem}:") else ""
        lines.append(f"  {path.stem:<26} {summary}"[:110].rstrip())
    return "\n".join(lines)


@click.command("query", epilog=_library_epilog())
@store_option()
@click.argument("query")
@click.option(
    "--param",
    "params",
    multiple=True,
    metavar="KEY=VALUE",
    help="Bind ?KEY to VALUE (an IRI if it looks like one, else a literal). Repeatable.",
)
@format_option("table", "csv", "json", help="Output format of the result rows.")
@click.option(
    "--timeout",
    type=click.FloatRange(min=0),
    default=30,
    show_default=True,
    metavar="SECONDS",
    help="Stop the query after this many seconds (0: no limit).",
)
@click.option(
    "--limit",
    type=click.IntRange(min=0),
    default=100_000,
    show_default=True,
    metavar="N",
    help="Fail if the query returns more than N rows (0: no limit).",
)
def query_cmd(store: StoreHandle, query: str, params: tuple[str, ...], fmt: str, timeout: float, limit: int) -> None:
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


def _without_columns(
    names: list[str], rows: list[list[JSONValue]], drop: set[str]
) -> tuple[list[str], list[list[JSONValue]]]:
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


def render_rows(names: list[str], rows: list[list[JSONValue]], fmt: str) -> str:
    if fmt == "json":
        return json.dumps([dict(zip(names, r)) for r in rows], indent=2) + "\n"
    if fmt == "csv":
        buf = io.StringIO()
        writer = csv.writer(buf, lineterminator="\n")
        writer.writerow(names)
        writer.writerows(["" if v is None else v for v in r] for r in rows)
        return buf.getvalue()
    return stats.table(names, rows) + f"\n({len(rows)} rows)\n"


@click.command("audit")
@store_option()
@click.option(
    "--odata",
    multiple=True,
    type=click.Path(path_type=Path),
    help="The OData files or directories the store was built from. Repeatable.",
)
@click.option(
    "--bpmn",
    "bpmn_paths",
    multiple=True,
    type=click.Path(path_type=Path),
    help="The BPMN files or directories the store was built from. Repeatable.",
)
@format_option("table", "json", help="A table of classes, or JSON with per-file rows.")
def audit_cmd(store: StoreHandle, odata: tuple[Path, ...], bpmn_paths: tuple[Path, ...], fmt: str) -> None:
    """Fidelity audit: count each structure in the XML (XPath) and in the graph (SPARQL)."""
    result = audit(store, list(odata), list(bpmn_paths))
    click.echo(json.dumps(result, indent=2) if fmt == "json" else render_audit(result))
    if any(row["source"] != row["graph"] for row in result["classes"]):
        sys.exit(ExitCode.PROBLEMS)
