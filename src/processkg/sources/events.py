"""Document flow mined from what happened: recorded calls and event logs (``kg build --events``).

Where neither BPMN nor a curated flow says which document follows which, a record of what users
or agents did still does: the *directly-follows* relation of the write calls of one case. Read
here, each a file (``PATH``) or a folder searched for these suffixes:

* ``.jsonl``: calls as ``kg serve`` records them (``--record``, an agent run's ``calls.jsonl``;
  ``kg validate``'s input format): ``{"method": ..., "url": ..., "status": ...}`` per line. One
  file is one case, unless its lines carry a ``"case"`` string (then one case per value). A write
  is a POST, PUT, PATCH, MERGE or DELETE whose ``status`` (when given) is below 400.
* ``.xes``: an IEEE 1849 XES event log; a case is a ``trace`` (its ``concept:name``), its events
  in the order of their ``time:timestamp`` when each has one, else in file order.
* ``.jsonocel`` / ``.xmlocel``: an OCEL 2.0 object-centric event log (JSON or XML); a case is an
  *object*: the events related to it, by ``time`` (file order on a tie).
* ``.csv``: which entity set an event-log activity writes, for events that do not say it
  themselves: a header ``activity,path`` and one row per activity (``Create Sales Order,
  API_SALES_ORDER_SRV/A_SalesOrder``).

An event of a log names its entity set with a string attribute ``odata:path`` (a URL path or
``SERVICE/EntitySet``), or through the activity table above by its activity (XES ``concept:name``,
OCEL event type); an event named by neither is left out (the log is projected on the activities
that write an entity set of the build, and the events around a gap follow each other). An event with
an ``odata:method`` attribute counts only if that is a write; without one, an event of a log is a
write (it records that something happened).

A target resolves to an entity set of the build when a segment of its path is a service's name (or
an SAP RAP service's short name, after which the 4-digit version is skipped) and the next one is an
entity set of that service, with or without a key (a bound action ``Set(key)/NS.Action`` writes
that set); a function, action or operation import with an ``EntitySet`` writes that set. A write
through a navigation (``A_SalesOrder('1')/to_Item``), to an import without an ``EntitySet`` and a
``$batch`` are left out: which set they write needs the navigation's target, the operation's
effect or the batch's parts.
"""

from __future__ import annotations

import csv
import datetime as dt
import json
import re
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path
from urllib.parse import unquote, urlsplit

from lxml import etree
from pyoxigraph import NamedNode, Triple

from processkg.aliases import JSONValue
from processkg.errors import EventLogError, JsonLinesError
from processkg.jsonl import read_strict
from processkg.sources.discover import discover
from processkg.sources.odata.csdl import ServiceDocument
from processkg.sources.odata.edm import RAP_SERVICE
from processkg.sources.xmlio import local, parse_xml
from processkg.triples import Triples, child
from processkg.vocab import KGT, RDF_TYPE

EVENTS_SUFFIXES = (".jsonl", ".xes", ".jsonocel", ".xmlocel", ".csv")
WRITES = frozenset({"POST", "PUT", "PATCH", "MERGE", "DELETE"})
PATH_ATTRIBUTE = "odata:path"
METHOD_ATTRIBUTE = "odata:method"
ACTIVITY_HEADER = ["activity", "path"]
_VERSION = re.compile(r"\d{4}")


@dataclass(frozen=True)
class Step:
    """One write of a case: what it names (a URL or OData path; "" when only its activity does)."""

    target: str
    activity: str  # an event log's activity or event type; "" for a recorded call
    file: str  # the display name of its file
    where: str  # "FILE:LINE" or "FILE: events[3]": for errors


@dataclass
class Case:
    name: str  # the case's id: the file, its "case" value, the trace's or the object's name
    steps: list[Step] = field(default_factory=list)


@dataclass
class Events:
    """What ``--events`` holds: the cases of every log and recording, and the activity table."""

    cases: list[Case] = field(default_factory=list)
    activities: dict[str, str] = field(default_factory=dict)  # activity -> path
    files: list[str] = field(default_factory=list)  # display names, in order


def read_events(roots: Sequence[Path | str]) -> Events:
    """Every case of the files under ``roots`` (:data:`EVENTS_SUFFIXES`); one bad record stops the
    build with one line naming its file and line or record."""
    out = Events()
    for path, display in discover(roots, EVENTS_SUFFIXES):
        out.files.append(display)
        suffix = path.suffix.lower()
        if suffix == ".jsonl":
            out.cases += _recording(path, display)
        elif suffix == ".xes":
            out.cases += _xes(path, display)
        elif suffix == ".jsonocel":
            out.cases += _ocel_json(path, display)
        elif suffix == ".xmlocel":
            out.cases += _ocel_xml(path, display)
        else:
            for activity, (target, where) in _activity_table(path, display).items():
                if activity in out.activities:
                    raise EventLogError(f"activity {activity!r} is mapped twice (also in another table)", where)
                out.activities[activity] = target
    return out


# ---------------------------------------------------------------- recordings


def _recording(path: Path, display: str) -> list[Case]:
    cases: dict[str, Case] = {}
    try:
        records = list(read_strict(path, what="recorded calls"))
    except JsonLinesError as exc:
        raise EventLogError(exc.message, display, exc.line) from None
    for line, record in records:
        where = f"{display}:{line}"
        if not isinstance(record, dict):
            raise EventLogError("a recorded call is a JSON object", display, line)
        method, url, status = record.get("method"), record.get("url"), record.get("status")
        if not isinstance(method, str) or not isinstance(url, str) or not url:
            raise EventLogError('a recorded call needs "method" and "url" strings', display, line)
        if status is not None and (not isinstance(status, int) or isinstance(status, bool)):
            raise EventLogError(f'"status" is {status!r}; expected an HTTP status number', display, line)
        name = record.get("case", display)
        if not isinstance(name, str) or not name:
            raise EventLogError(f'"case" is {name!r}; expected a non-empty string', display, line)
        case = cases.setdefault(name, Case(name))
        if method.upper() in WRITES and (status is None or status < 400):
            case.steps.append(Step(url, "", display, where))
    return list(cases.values())


# ---------------------------------------------------------------- XES


def _xes(path: Path, display: str) -> list[Case]:
    root = parse_xml(path, display).getroot()
    if local(root.tag) != "log":
        raise EventLogError(
            f"not an XES log: the root element is <{local(root.tag)}>, not <log>", display, root.sourceline
        )
    cases = []
    for t, trace in enumerate(_children(root, "trace"), 1):
        attrs = _xes_attributes(trace)
        case = Case(attrs.get("concept:name") or f"{display}: trace {t}")
        timed: list[tuple[dt.datetime | None, Step, str]] = []
        for e, event in enumerate(_children(trace, "event"), 1):
            where = f"{display}:{event.sourceline}"
            values = _xes_attributes(event)
            activity = values.get("concept:name", "")
            if not activity:
                raise EventLogError(
                    f"event {e} of trace {t} has no concept:name (its activity)", display, event.sourceline
                )
            stamp = _time(values["time:timestamp"], display, event.sourceline) if "time:timestamp" in values else None
            timed.append(
                (
                    stamp,
                    Step(values.get(PATH_ATTRIBUTE, ""), activity, display, where),
                    values.get(METHOD_ATTRIBUTE, ""),
                )
            )
        if all(s is not None for s, _step, _m in timed):
            timed.sort(key=lambda x: _sortable(x[0]))  # stable: file order on a tie
        case.steps = [step for _s, step, method in timed if _is_write(method)]
        cases.append(case)
    return cases


def _xes_attributes(element: etree._Element) -> dict[str, str]:
    """The ``key`` -> ``value`` of an XES element's direct attribute children (string, date, ...)."""
    return {
        str(c.get("key")): str(c.get("value", ""))
        for c in element
        if isinstance(c.tag, str) and local(c.tag) not in ("event", "trace") and c.get("key") is not None
    }


def _children(element: etree._Element, name: str) -> Iterator[etree._Element]:
    return (c for c in element if isinstance(c.tag, str) and local(c.tag) == name)


# ---------------------------------------------------------------- OCEL 2.0


@dataclass
class _OcelEvent:
    id: str
    activity: str
    time: dt.datetime
    attributes: dict[str, str]
    objects: list[str]
    where: str
    line: int | None


def _ocel_json(path: Path, display: str) -> list[Case]:
    try:
        data = json.loads(path.read_bytes())
    except (OSError, ValueError) as exc:
        raise EventLogError(f"not an OCEL 2.0 JSON log: {exc}", display) from None
    if (
        not isinstance(data, dict)
        or not isinstance(data.get("events"), list)
        or not isinstance(data.get("objects"), list)
    ):
        raise EventLogError('not an OCEL 2.0 JSON log: it needs "objects" and "events" lists', display)
    objects = [_ocel_json_object(o, display, i) for i, o in enumerate(data["objects"])]
    events = []
    for i, e in enumerate(data["events"]):
        where = f"{display}: events[{i}]"
        if not isinstance(e, dict) or not all(isinstance(e.get(k), str) and e.get(k) for k in ("id", "type", "time")):
            raise EventLogError(f'events[{i}] needs "id", "type" and "time" strings', display)
        attributes = {
            str(a.get("name")): str(a.get("value", "")) for a in e.get("attributes") or [] if isinstance(a, dict)
        }
        related = [str(r.get("objectId")) for r in e.get("relationships") or [] if isinstance(r, dict)]
        stamp = _time(e["time"], f"{display}: events[{i}]", None)
        events.append(_OcelEvent(e["id"], e["type"], stamp, attributes, related, where, None))
    return _object_cases(objects, events, display)


def _ocel_json_object(o: JSONValue, display: str, i: int) -> str:
    if not isinstance(o, dict) or not isinstance(o.get("id"), str) or not o["id"]:
        raise EventLogError(f'objects[{i}] needs an "id" string', display)
    return str(o["id"])


def _ocel_xml(path: Path, display: str) -> list[Case]:
    root = parse_xml(path, display).getroot()
    if local(root.tag) != "log":
        raise EventLogError(
            f"not an OCEL 2.0 XML log: the root element is <{local(root.tag)}>, not <log>", display, root.sourceline
        )
    objects = []
    for block in _children(root, "objects"):
        for o in _children(block, "object"):
            if not o.get("id"):
                raise EventLogError("an <object> needs an id", display, o.sourceline)
            objects.append(str(o.get("id")))
    events = []
    for block in _children(root, "events"):
        for e in _children(block, "event"):
            if not all(e.get(k) for k in ("id", "type", "time")):
                raise EventLogError("an <event> needs id, type and time", display, e.sourceline)
            attributes = {
                str(a.get("name")): (a.text or "").strip()
                for attrs in _children(e, "attributes")
                for a in _children(attrs, "attribute")
            }
            related = [
                str(r.get("object-id")) for rels in _children(e, "objects") for r in _children(rels, "relationship")
            ]
            stamp = _time(str(e.get("time")), display, e.sourceline)
            events.append(
                _OcelEvent(
                    str(e.get("id")),
                    str(e.get("type")),
                    stamp,
                    attributes,
                    related,
                    f"{display}:{e.sourceline}",
                    e.sourceline,
                )
            )
    return _object_cases(objects, events, display)


def _object_cases(objects: list[str], events: list[_OcelEvent], display: str) -> list[Case]:
    """One case per object: its events by time, file order on a tie."""
    known = set(objects)
    by_object: dict[str, list[tuple[int, _OcelEvent]]] = {o: [] for o in objects}
    for position, e in enumerate(events):
        for o in e.objects:
            if o not in known:
                raise EventLogError(f"event {e.id} relates to object {o!r}, which the log does not declare", e.where)
            by_object[o].append((position, e))
    cases = []
    for o in objects:
        ordered = sorted(by_object[o], key=lambda pe: (_sortable(pe[1].time), pe[0]))
        steps = [
            Step(e.attributes.get(PATH_ATTRIBUTE, ""), e.activity, display, e.where)
            for _p, e in ordered
            if _is_write(e.attributes.get(METHOD_ATTRIBUTE, ""))
        ]
        cases.append(Case(f"{display}: object {o}", steps))
    return cases


# ---------------------------------------------------------------- shared


def _activity_table(path: Path, display: str) -> dict[str, tuple[str, str]]:
    """activity -> (path, where) of an ``activity,path`` CSV."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise EventLogError(f"cannot read the activity table: {exc}", display) from None
    rows = list(csv.reader(text.splitlines()))
    if not rows or [c.strip() for c in rows[0]] != ACTIVITY_HEADER:
        raise EventLogError(f"an activity table starts with the header {','.join(ACTIVITY_HEADER)}", display, 1)
    out: dict[str, tuple[str, str]] = {}
    for line, row in enumerate(rows[1:], 2):
        if not any(c.strip() for c in row):
            continue
        if len(row) != 2 or not row[0].strip() or not row[1].strip():
            raise EventLogError("expected two non-empty fields: activity,path", display, line)
        activity = row[0].strip()
        if activity in out:
            raise EventLogError(f"activity {activity!r} is mapped twice (also on {out[activity][1]})", display, line)
        out[activity] = (row[1].strip(), f"{display}:{line}")
    return out


def _is_write(method: str) -> bool:
    return not method or method.upper() in WRITES


def _time(text: str, display: str, line: int | None) -> dt.datetime:
    try:
        return dt.datetime.fromisoformat(text.strip())
    except ValueError:
        raise EventLogError(f"time {text!r} is not an ISO 8601 date and time", display, line) from None


def _sortable(stamp: dt.datetime | None) -> dt.datetime:
    """A time comparable with any other: one without a zone is taken as UTC (None: never, the caller
    sorts only events that all have a time)."""
    stamp = stamp or dt.datetime.min
    return stamp if stamp.tzinfo is not None else stamp.replace(tzinfo=dt.UTC)


# ---------------------------------------------------------------- resolving and mining


@dataclass(frozen=True)
class Written:
    """The entity set a step writes."""

    service: str
    name: str
    iri: NamedNode


class Catalog:
    """The entity sets of a build, found by the names a URL or an OData path gives them."""

    def __init__(self) -> None:
        self.services: dict[str, str] = {}  # lower-case URL name -> service key
        self.v4: set[str] = set()  # service keys of OData V4 services (a RAP root has a version segment)
        self.sets: dict[tuple[str, str], NamedNode] = {}  # (service key, set name) -> IRI
        self.imports: dict[tuple[str, str], str] = {}  # (service key, operation import) -> its entity set, or ""

    def add(self, doc: ServiceDocument, key: str, set_iris: dict[str, NamedNode]) -> None:
        """One lifted service: ``key`` is its name in the graph, ``set_iris`` its sets."""
        self.services.setdefault(key.lower(), key)
        self.services.setdefault(doc.name.lower(), key)
        for ns in doc.namespaces:
            if m := RAP_SERVICE.match(ns):
                self.services.setdefault(m.group(1).lower(), key)
        if doc.version.startswith("4"):
            self.v4.add(key)
        for name, iri in set_iris.items():
            self.sets[(key, name)] = iri
        for container in doc.containers:
            for op in container.function_imports:
                self.imports[(key, op.name)] = op.entity_set if op.entity_set in set_iris else ""
            for imp in container.operation_imports:
                self.imports[(key, imp.name)] = imp.entity_set if imp.entity_set in set_iris else ""

    def resolve(self, target: str, where: str) -> Written | None:
        """The entity set ``target`` writes; None for a write this reading leaves out (a navigation,
        ``$batch``); an error for a path that names no entity set of the build."""
        segments = [unquote(s) for s in urlsplit(target.strip()).path.split("/") if s]
        names = [s.partition("(")[0] for s in segments]
        for i, name in enumerate(names):
            service = self.services.get(name.lower()) if "(" not in segments[i] else None
            if service is None:
                continue
            rest = names[i + 1 :]
            if (
                service in self.v4
                and (at := next((j for j, n in enumerate(rest) if _VERSION.fullmatch(n)), None)) is not None
            ):
                rest = rest[at + 1 :]
            return self._in_service(service, rest, target, where)
        raise EventLogError(f"{target!r} names no service of this build", where)

    def _in_service(self, service: str, rest: list[str], target: str, where: str) -> Written | None:
        if not rest:
            raise EventLogError(f"{target!r} names service {service} but no entity set", where)
        if rest[0] == "$batch":
            return None
        name = self.imports.get((service, rest[0]), rest[0])
        if not name:  # an operation import that names no entity set: which set it writes is unknown
            return None
        iri = self.sets.get((service, name))
        if iri is None:
            raise EventLogError(f"{target!r}: service {service} has no entity set or function import {rest[0]}", where)
        if len(rest) > 1 and "." not in rest[1]:  # through a navigation: its target is not resolved here
            return None
        return Written(service, name, iri)


@dataclass(frozen=True)
class MinedEdge:
    """``follow`` was written right after ``pred`` in ``cases`` cases, ``count`` times in all."""

    pred: Written
    follow: Written
    count: int
    cases: int
    files: tuple[str, ...]


def mine(events: Events, catalog: Catalog) -> tuple[list[MinedEdge], dict[str, int]]:
    """The directly-follows relation of the writes of each case, between entity sets (a set never
    follows itself), and how many steps were used and left out."""
    count: Counter[tuple[Written, Written]] = Counter()
    cases: Counter[tuple[Written, Written]] = Counter()
    files: dict[tuple[Written, Written], set[str]] = {}
    stats = {"cases": len(events.cases), "writes": 0, "unmapped": 0, "unresolved": 0}
    for case in events.cases:
        written: list[tuple[Written, str]] = []
        for step in case.steps:
            target = step.target or events.activities.get(step.activity, "")
            if not target:
                stats["unmapped"] += 1
                continue
            w = catalog.resolve(target, step.where)
            if w is None:
                stats["unresolved"] += 1
                continue
            stats["writes"] += 1
            written.append((w, step.file))
        seen: set[tuple[Written, Written]] = set()
        for (a, file_a), (b, _) in pairwise(written):
            if a.iri == b.iri:
                continue
            count[(a, b)] += 1
            files.setdefault((a, b), set()).add(file_a)
            if (a, b) not in seen:
                seen.add((a, b))
                cases[(a, b)] += 1
    edges = [MinedEdge(a, b, n, cases[(a, b)], tuple(sorted(files[(a, b)]))) for (a, b), n in count.items()]
    edges.sort(key=lambda e: (e.pred.iri.value, e.follow.iri.value))
    return edges, stats


def lift(edges: list[MinedEdge]) -> list[Triple]:
    """``pred kg:minedNext follow`` and one ``kg:MinedFlow`` node per edge with its counts and files."""
    t = Triples("")
    for e in edges:
        t.add(e.pred.iri, KGT.minedNext, e.follow.iri)
        node = child(e.follow.iri, "minedFrom", e.pred.service, e.pred.name)
        t.add(node, RDF_TYPE, KGT.MinedFlow)
        t.add(node, KGT.minedFrom, e.pred.iri)
        t.add(node, KGT.minedTo, e.follow.iri)
        t.integer(node, KGT.followCount, e.count)
        t.integer(node, KGT.caseCount, e.cases)
        for f in e.files:
            t.text(node, KGT.sourceFile, f)
    return t.items
