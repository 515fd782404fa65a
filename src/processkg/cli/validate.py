"""``kg validate`` and ``kg shapes``: click commands, registered on the ``kg`` group by cli.py.

Exit codes of ``kg validate``: 0 all calls valid, 1 some are not, 2 unusable input
(no store, unreadable file, a file with no JSON object at all: empty or not JSON Lines);
a bad line is a ``malformed`` violation, not an exit 2. ``-`` reads the calls from standard input.

What a call brings in is echoed back: the text report escapes control characters (a CR or LF
in a URL must not forge report lines), and the JSON report never holds a bare ``NaN``.
"""

from __future__ import annotations

import json
import math
import sys
from collections import Counter
from pathlib import Path

import click
from pyoxigraph import NamedNode

from processkg.aliases import JSONValue
from processkg.cli.exit_codes import ExitCode
from processkg.cli.options import format_option, out_option, store_option
from processkg.cli.text import printable
from processkg.graph.handle import StoreHandle
from processkg.graph.store import write_atomic
from processkg.validate.calls import CallResult, Validator, read_calls
from processkg.validate.payload_shapes import generate_shapes, shapes_turtle, stored_shapes


@click.command("validate")
@store_option("Store directory (kg build), or its SPARQL server's URL.")
@click.argument("calls", type=click.Path(path_type=Path, allow_dash=True))
@format_option(
    "text", "json", "ttl", help="text: for people; json: one result per call; ttl: the SHACL validation report graph."
)
@out_option("file", "Write here instead of standard output.")
def validate_cmd(store: StoreHandle, calls: Path, fmt: str, out: Path) -> None:
    """Check recorded OData calls (JSON Lines) against the service metadata and value helps."""

    pairs = read_calls(calls)
    validator = Validator(store)
    results = validator.validate_calls(pairs)
    text = _render(validator, pairs, results, fmt)
    _emit(text, out)
    sys.exit(ExitCode.OK if all(r.valid for r in results) else ExitCode.PROBLEMS)


def _render(validator: Validator, pairs: list[tuple[int, JSONValue]], results: list[CallResult], fmt: str) -> str:
    if fmt == "json":
        return render_json(results)
    if fmt == "ttl":
        return validator.report_graph().serialize(format="turtle")
    return render_text(results)


def render_json(results: list[CallResult]) -> str:
    """One object per call; strict JSON (a non-finite float from the Python API becomes a string)."""
    return json.dumps(_finite([r.as_dict() for r in results]), indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def render_text(results: list[CallResult]) -> str:
    """One line per violation, grouped by call, then a summary."""
    lines = []
    for r in results:
        where = f" (line {r.line})" if r.line is not None else ""
        lines.append(f"{printable(r.id)}{where}: {'valid' if r.valid else 'INVALID'}")
        for v in r.violations:
            lines.append(f"  {v.kind:<19} {printable(v.path or '/'):<32} {printable(v.message)}")
        for n in r.notes:
            lines.append(f"  note: {printable(n.message)}")
    lines.append("")
    lines.extend(summary_lines(results))
    return "\n".join(lines) + "\n"


def _finite(value: JSONValue) -> JSONValue:
    """Non-finite floats (only the Python API can pass them in) as strings: JSON has no NaN."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value


def summary_lines(results: list[CallResult]) -> list[str]:
    kinds = Counter(v.kind for r in results for v in r.violations)
    valid = sum(1 for r in results if r.valid)
    out = [f"{len(results)} calls: {valid} valid, {len(results) - valid} invalid, {sum(kinds.values())} violations"]
    out.extend(f"  {kind:<19} {count}" for kind, count in sorted(kinds.items()))
    return out


def _emit(text: str, out: Path | None) -> None:
    if out:
        write_atomic(Path(out), text.encode("utf-8"))
    else:
        click.echo(text, nl=False)


@click.command("shapes")
@store_option("Store directory (kg build), or its SPARQL server's URL.")
@out_option("file", "Turtle file to write.", required=True)
def shapes_cmd(store: StoreHandle, out: Path) -> None:
    """Write the payload shapes (SHACL) generated from the graph as Turtle.

    The shapes kg build stored are used; a store built with --no-shapes gets them generated now.
    """

    triples = stored_shapes(store.graph) or generate_shapes(store.graph)
    write_atomic(Path(out), shapes_turtle(triples))
    shapes = sum(
        1
        for t in triples
        if t.predicate.value.endswith("#type") and isinstance(t.object, NamedNode) and t.object.value.endswith("Shape")
    )
    click.echo(f"wrote {shapes:,} shapes ({len(triples):,} triples) to {out}")


__all__ = ["render_json", "render_text", "shapes_cmd", "summary_lines", "validate_cmd"]
