"""Summaries of a build and of a store (``kg stats``), rendered as plain tables."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

from processkg.aliases import JSONObject
from processkg.graph.handle import StoreLocation
from processkg.graph.store import StoreGraph, records
from processkg.vocab import PREFIXES


class IndexFacts(Protocol):
    def headline(self) -> str: ...


class BuildFacts(Protocol):
    """What the build summary reads of ``pipeline.BuildReport`` (a later stage, so not imported)."""

    @property
    def classes(self) -> dict[str, int]: ...

    @property
    def triples(self) -> int: ...

    @property
    def files(self) -> list[str]: ...

    @property
    def seconds(self) -> float: ...

    @property
    def mapping_edges(self) -> int: ...

    @property
    def mined(self) -> dict[str, int]: ...

    @property
    def warnings(self) -> list[str]: ...

    @property
    def skipped(self) -> list[tuple[str, str]]: ...

    @property
    def index(self) -> IndexFacts | None: ...


def table(names: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A fixed-width text table; None shows as empty."""
    cells = [[str(n) for n in names]] + [["" if v is None else str(v) for v in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(names))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _local(iri: str) -> str:
    return iri.rsplit("#", 1)[-1]


def store_stats(store: StoreGraph) -> JSONObject:
    out = {name: records(store, f"stats-{name}") for name in ("classes", "services", "processes")}
    for row in out["classes"]:
        row["class"] = _prefixed(row["class"])
    return out


def _prefixed(iri: str) -> str:

    for prefix, ns in PREFIXES.items():
        if iri.startswith(ns):
            return f"{prefix}:{iri[len(ns) :]}"
    return iri


def render_stats(result: JSONObject) -> str:
    parts = []
    for name in ("classes", "services", "processes"):
        rows = result[name]
        if not rows:
            parts.append(f"{name}: none")
            continue
        names = list(rows[0].keys())
        parts.append(f"{name} ({len(rows)})\n" + table(names, [[r[n] for n in names] for r in rows]))
    return "\n\n".join(parts)


#: Classes counted on the summary's two lines; an optional class shows only when present.
_DATA_CLASSES = ("Service", "EntitySet", "EntityType", "Property", "NavigationProperty", "ValueList", "Code")
_OPTIONAL_DATA_CLASSES = ("Operation",)
_PROCESS_CLASSES = ("Process", "Activity", "Gateway", "Event", "SequenceFlow", "MessageFlow")


def _counts(classes: dict[str, int], names: tuple[str, ...], optional: tuple[str, ...] = ()) -> str:
    shown = list(names) + [k for k in optional if classes.get(k)]
    return "  " + ", ".join(f"{classes.get(k, 0):,} {k}" for k in shown)


def build_summary(
    report: BuildFacts, show_skipped: bool = True, store: StoreLocation | None = None, out: Path | None = None
) -> str:
    """The one-screen summary printed at the end of ``kg build``."""
    c = report.classes
    lines = [
        f"built {report.triples:,} triples from {len(report.files)} files in {report.seconds:.2f} s",
        _counts(c, _DATA_CLASSES, _OPTIONAL_DATA_CLASSES),
        _counts(c, _PROCESS_CLASSES),
        f"  {report.mapping_edges} mapping edges (uses:entitySet)",
    ]
    if report.mined:
        m = report.mined
        lines.append(
            f"  {m['edges']} mined flow edges (kg:minedNext) from {m['writes']} writes in {m['cases']} cases"
            f" ({m['unmapped']} events naming no entity set, {m['unresolved']} writes through a navigation, an operation or $batch left out)"
        )
    if store is not None:
        lines.append(f"store: {store}")
    if report.index is not None and store is not None:
        lines.append("index: " + report.index.headline())
    if out:
        lines.append(f"turtle: {out}")
    for warning in report.warnings:
        lines.append(f"warning: {warning}")
    if report.skipped and show_skipped:
        lines.append(f"skipped {len(report.skipped)} file(s):")
        lines.extend(f"  {msg}" for _file, msg in report.skipped)
    return "\n".join(lines)
