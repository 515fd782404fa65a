"""Curated document flow: which document a follow-on document is made from, and which fields say so.

``kg build --flow PATH`` reads a CSV file, or every ``*.csv`` of a folder (e.g. ``data/sap/flow``),
with the header ``process,predecessor,follow_on,carriers,required,applies_when,precondition,quantity,
source,note``: one row per (predecessor entity set -> follow-on entity set), both written
``SERVICE/EntitySet``:

* ``carriers``: ``FollowOnProperty=PredecessorKey`` pairs separated by ``;``, one per key property
  of the predecessor (``ReferenceSDDocument=SalesOrder; ReferenceSDDocumentItem=SalesOrderItem``);
* ``required``: ``yes`` when a follow-on record must name a predecessor (``kg serve``:
  ``missing-predecessor``), ``no`` when it may be made without one;
* ``applies_when`` (optional): ``Property=V1|V2`` of the follow-on: the flow holds only for records
  with one of these values (a goods receipt, movement type 101 or 103, not a transfer posting);
* ``precondition`` (optional): ``Property=V1|V2`` of the predecessor: the values that allow a
  follow-on (``OverallGoodsMovementStatus=C``: goods issue posted before billing);
* ``quantity`` (optional): ``FollowOnQuantity<=PredecessorQuantity``: the follow-ons of one
  predecessor record add up to at most its quantity;
* ``process`` the BPMN process id the flow belongs to, ``source`` the document that says so.

The lifted form is :func:`lift` (``kg:DocumentFlow``, docs/ontology.md). A row that cannot be read
stops the build with ``FILE:LINE: ...``; a row naming a service, entity set or property the build
does not have is a warning (as an unused code binding is).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from pyoxigraph import Triple

from processkg.errors import DocumentFlowError
from processkg.sources.bpmn.lift_definitions import element_iri
from processkg.sources.limits import MAX_CODE_ROWS, csv_rows, row_text, unique_rows
from processkg.sources.mapping import ActivityRef
from processkg.sources.odata.flow import Field, KeyedSet
from processkg.triples import Triples, child
from processkg.vocab import KGT, RDF_TYPE

COLUMNS = ("process", "predecessor", "follow_on", "carriers", "required", "source")
OPTIONAL = ("applies_when", "precondition", "quantity", "note")
HEADER = "process,predecessor,follow_on,carriers,required,applies_when,precondition,quantity,source,note"
REQUIRED_VALUES = {"yes": True, "no": False}


@dataclass(frozen=True)
class Condition:
    """``prop`` holds one of ``values``."""

    prop: str
    values: tuple[str, ...]

    def text(self) -> str:
        return f"{self.prop}={'|'.join(self.values)}"


@dataclass(frozen=True)
class QuantityRule:
    """The follow-ons' ``follow_prop`` summed per predecessor record is at most its ``pred_prop``."""

    follow_prop: str
    pred_prop: str


@dataclass(frozen=True)
class SetName:
    service: str
    entity_set: str

    def text(self) -> str:
        return f"{self.service}/{self.entity_set}"


@dataclass(frozen=True)
class FlowRow:
    process: str
    predecessor: SetName
    follow_on: SetName
    carriers: tuple[tuple[str, str], ...]  # (follow-on property, predecessor key property)
    required: bool
    applies_when: Condition | None
    precondition: Condition | None
    quantity: QuantityRule | None
    source: str
    note: str
    file: str  # display name of the CSV, e.g. flow/flow.csv
    line: int

    @property
    def key(self) -> str:
        return f"{self.predecessor.text()} -> {self.follow_on.text()}"


def read_flows(path: Path) -> list[FlowRow]:
    """Every row of the CSV file or folder ``path``, in file order; a row repeating an earlier
    predecessor -> follow-on pair is refused with both lines."""
    return unique_rows(path, _rows, DocumentFlowError)


def _rows(path: Path, display: str) -> Iterator[FlowRow]:
    for count, line, row in csv_rows(path, "document-flow file", COLUMNS, HEADER, DocumentFlowError):
        if count > MAX_CODE_ROWS:
            raise DocumentFlowError(f"more than {MAX_CODE_ROWS:,} rows in one file", str(path), line)
        yield _row(path, display, row, line)


def _row(path: Path, display: str, row: dict[str | None, str | list[str] | None], line: int) -> FlowRow:
    text = row_text(row, COLUMNS, OPTIONAL, DocumentFlowError, path, line)
    where = (str(path), line)
    if text["required"] not in REQUIRED_VALUES:
        raise DocumentFlowError(f"required is {text['required']!r}; expected yes or no", *where)
    return FlowRow(
        text["process"],
        _set_name(text["predecessor"], "predecessor", where),
        _set_name(text["follow_on"], "follow_on", where),
        _carriers(text["carriers"], where),
        REQUIRED_VALUES[text["required"]],
        _condition(text["applies_when"], "applies_when", where),
        _condition(text["precondition"], "precondition", where),
        _quantity(text["quantity"], where),
        text["source"],
        text["note"],
        display,
        line,
    )


def _set_name(text: str, column: str, where: tuple[str, int]) -> SetName:
    service, slash, name = text.rpartition("/")
    if not slash or not service.strip() or not name.strip():
        raise DocumentFlowError(f"{column} is {text!r}; expected SERVICE/EntitySet", *where)
    return SetName(service.strip(), name.strip())


def _carriers(text: str, where: tuple[str, int]) -> tuple[tuple[str, str], ...]:
    pairs = []
    for part in (p.strip() for p in text.split(";")):
        follow, eq, key = part.partition("=")
        if not eq or not follow.strip() or not key.strip():
            raise DocumentFlowError(
                f"carrier {part!r} is not FollowOnProperty=PredecessorKey (pairs separated by ';')", *where
            )
        pairs.append((follow.strip(), key.strip()))
    if len({f for f, _k in pairs}) < len(pairs) or len({k for _f, k in pairs}) < len(pairs):
        raise DocumentFlowError(f"carriers {text!r} name a property twice", *where)
    return tuple(pairs)


def _condition(text: str, column: str, where: tuple[str, int]) -> Condition | None:
    if not text:
        return None
    prop, eq, values = text.partition("=")
    allowed = tuple(v.strip() for v in values.split("|"))
    if not eq or not prop.strip() or not all(allowed):
        raise DocumentFlowError(f"{column} {text!r} is not Property=Value or Property=Value1|Value2", *where)
    return Condition(prop.strip(), allowed)


def _quantity(text: str, where: tuple[str, int]) -> QuantityRule | None:
    if not text:
        return None
    follow, sep, pred = text.partition("<=")
    if not sep or not follow.strip() or not pred.strip():
        raise DocumentFlowError(f"quantity {text!r} is not FollowOnQuantity<=PredecessorQuantity", *where)
    return QuantityRule(follow.strip(), pred.strip())


# ---------------------------------------------------------------- lifting


@dataclass(frozen=True)
class Use:
    """A mapping entry as the flow needs it: an activity of a process writes or reads an entity set."""

    activity: ActivityRef
    mode: str
    service: str
    entity_set: str


def lift(rows: list[FlowRow], sets: list[KeyedSet], uses: list[Use]) -> tuple[list[Triple], list[str]]:
    """One ``kg:DocumentFlow`` node per row that resolves against ``sets`` (the build's entity sets),
    with ``pred kg:documentNext follow``, its carriers (``kg:FlowKey``), the conditions, the process
    and the steps of that process that write the predecessor or the follow-on (or their headers);
    and a warning for each row that does not resolve."""
    by_name = {(s.service, s.name): s for s in sets}
    t, warnings = Triples(""), []
    for row in rows:
        pred = by_name.get((row.predecessor.service, row.predecessor.entity_set))
        follow = by_name.get((row.follow_on.service, row.follow_on.entity_set))
        problem = _unresolved(row, pred, follow)
        if problem:
            warnings.append(f"{row.file}:{row.line}: document flow {row.key}: {problem}")
            continue
        assert pred is not None and follow is not None
        _lift_row(t, row, pred, follow, sets, uses)
    return t.items, warnings


def _fields(s: KeyedSet) -> dict[str, Field]:
    return {f.name: f for f in (*s.key, *s.others)}


def _unresolved(row: FlowRow, pred: KeyedSet | None, follow: KeyedSet | None) -> str:
    """Why ``row`` does not resolve ("" when it does)."""
    if pred is None:
        return f"names no entity set {row.predecessor.text()} of this build"
    if follow is None:
        return f"names no entity set {row.follow_on.text()} of this build"
    pred_props, follow_props = _fields(pred), _fields(follow)
    keys = [f.name for f in pred.key]
    missing = [c for c, _k in row.carriers if c not in follow_props]
    missing += [
        p
        for p in (
            row.applies_when.prop if row.applies_when else None,
            row.quantity.follow_prop if row.quantity else None,
        )
        if p is not None and p not in follow_props
    ]
    if missing:
        return f"{follow.name} has no property {', '.join(missing)}"
    missing = [
        p
        for p in (
            row.precondition.prop if row.precondition else None,
            row.quantity.pred_prop if row.quantity else None,
        )
        if p is not None and p not in pred_props
    ]
    if missing:
        return f"{pred.name} has no property {', '.join(missing)}"
    if sorted(k for _c, k in row.carriers) != sorted(keys):
        return f"the carriers must carry every key property of {pred.name} ({', '.join(keys)})"
    return ""


def _headers(s: KeyedSet, sets: list[KeyedSet]) -> list[KeyedSet]:
    """The sets of ``s``'s service keyed by a proper prefix of its key (its header, by SAP's key convention)."""
    own = [f.name for f in s.key]
    return [
        h
        for h in sets
        if h.service == s.service and 0 < len(h.key) < len(own) and [f.name for f in h.key] == own[: len(h.key)]
    ]


def _steps(process: str, target: KeyedSet, sets: list[KeyedSet], uses: list[Use]) -> list[ActivityRef]:
    """The activities of ``process`` that write ``target`` or its header."""
    names = {(target.service, target.name)} | {(h.service, h.name) for h in _headers(target, sets)}
    found = {
        u.activity.iri.value: u.activity
        for u in uses
        if u.activity.process == process and u.mode == "write" and (u.service, u.entity_set) in names
    }
    return [found[k] for k in sorted(found)]


def _lift_row(
    t: Triples, row: FlowRow, pred: KeyedSet, follow: KeyedSet, sets: list[KeyedSet], uses: list[Use]
) -> None:
    pred_props, follow_props = _fields(pred), _fields(follow)
    node = child(follow.iri, "documentFlow", pred.service, pred.name)
    t.node(node, KGT.DocumentFlow, row.line, f"{pred.name} -> {follow.name}", file=row.file)
    t.add(node, KGT.flowPredecessor, pred.iri)
    t.add(node, KGT.flowFollowOn, follow.iri)
    t.add(pred.iri, KGT.documentNext, follow.iri)
    for carrier, key in row.carriers:
        k = child(node, "key", key)
        t.add(node, KGT.flowKey, k)
        t.add(k, RDF_TYPE, KGT.FlowKey)
        t.add(k, KGT.keyCarrier, follow_props[carrier].iri)
        t.add(k, KGT.keyCarried, pred_props[key].iri)
    t.boolean(node, KGT.predecessorRequired, row.required)
    if row.applies_when:
        t.add(node, KGT.appliesWhenProperty, follow_props[row.applies_when.prop].iri)
        for v in row.applies_when.values:
            t.text(node, KGT.appliesWhenValue, v)
    if row.precondition:
        t.add(node, KGT.preconditionProperty, pred_props[row.precondition.prop].iri)
        for v in row.precondition.values:
            t.text(node, KGT.preconditionValue, v)
    if row.quantity:
        t.add(node, KGT.quantityProperty, follow_props[row.quantity.follow_prop].iri)
        t.add(node, KGT.quantityLimit, pred_props[row.quantity.pred_prop].iri)
    t.text(node, KGT.flowProcessId, row.process)
    in_process = [u.activity for u in uses if u.activity.process == row.process]
    if in_process:
        t.add(node, KGT.flowProcess, element_iri(in_process[0].file, row.process))
    for act in _steps(row.process, pred, sets, uses):
        t.add(node, KGT.predecessorStep, act.iri)
    for act in _steps(row.process, follow, sets, uses):
        t.add(node, KGT.followOnStep, act.iri)
    t.text(node, KGT.flowSource, row.source)
    t.text(node, KGT.flowNote, row.note)
