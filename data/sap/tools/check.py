"""Checks of the process layer: the model, the diagram, the OData metadata, and a built store."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

from layout import Layout, _overlap, _rect, _segment_hits, flow_crossings
from model import (
    Proc,
)

from processkg.graph.handle import open_store
from processkg.graph.store import plain, select


# ---------------------------------------------------------------------------- checks
def check_layout(p: Proc, lay: Layout) -> list:
    problems = []
    nodes = list(p.nodes.values())
    for i, a in enumerate(nodes):
        for b in nodes[i + 1 :]:
            if a.attached == b.id or b.attached == a.id:
                continue
            if a.parent == b.id or b.parent == a.id:
                continue
            if a.attached and b.id == p.nodes[a.attached].parent:
                continue
            if b.attached and a.id == p.nodes[b.attached].parent:
                continue
            if _overlap(_rect(a), _rect(b)):
                problems.append(f"shapes overlap: {a.id} and {b.id}")
    for n in nodes:
        lx, ly, lw, lh = lay.lane_box[n.lane]
        if not (n.x >= lx and n.right <= lx + lw and n.y >= ly and n.bottom <= ly + lh):
            problems.append(f"{n.id} lies outside lane {n.lane}")
    for f in p.flows:
        problems += [f"flow {f.id} crosses {nid}" for nid in flow_crossings(p, f, f.points)]
    for m in p.messages:
        ends = {m.source, m.target}
        for n in nodes:
            if n.id in ends:
                continue
            if _segment_hits(m.points[0], m.points[1], _rect(n)):
                problems.append(f"message flow {m.id} crosses {n.id}")
    return problems


def check_model(p: Proc) -> list:
    problems = []
    ids = set(p.nodes)
    for f in p.flows:
        for end in (f.source, f.target):
            if end not in ids:
                problems.append(f"flow {f.id} refers to unknown {end}")
    for n in p.nodes.values():
        n.incoming = [f.id for f in p.flows if f.target == n.id]
        n.outgoing = [f.id for f in p.flows if f.source == n.id]
        defaults = [f.id for f in p.flows if f.source == n.id and f.default]
        if defaults:
            n.default = defaults[0]
        if n.is_activity and n.tag != "subProcess" and not n.uses:
            problems.append(f"activity {n.id} has no mapping")
        if n.tag == "startEvent" and n.incoming:
            problems.append(f"start event {n.id} has incoming flows")
        if n.tag == "endEvent" and n.outgoing:
            problems.append(f"end event {n.id} has outgoing flows")
        if n.tag not in ("startEvent", "boundaryEvent") and not n.incoming:
            problems.append(f"{n.id} has no incoming flow")
        if n.tag != "endEvent" and not n.outgoing:
            problems.append(f"{n.id} has no outgoing flow")
        if n.tag == "exclusiveGateway" and len(n.outgoing) > 1:
            for fid in n.outgoing:
                f = next(x for x in p.flows if x.id == fid)
                if not f.default and not f.condition:
                    problems.append(f"{f.id} leaves exclusive gateway {n.id} without condition or default")
    for pid in (p.first, p.last):
        if pid not in p.nodes or not p.nodes[pid].is_activity:
            problems.append(f"first/last activity {pid!r} is not an activity of {p.id}")
    return problems


# ------------------------------------------------------------------ metadata checking
EDMX_V2 = "http://schemas.microsoft.com/ado/2008/09/edm"
SAPNS = "http://www.sap.com/Protocols/SAPData"


def read_metadata(folder: Path) -> dict:
    """service -> {"sets": {name: (type, insertable, updatable)}, "types": {name: props},
    "operations": {names}}"""
    services = {}
    for path in sorted(folder.glob("*.edmx")):
        root = ET.parse(path).getroot()
        sets, types, ops = {}, {}, set()
        caps = {}
        for el in root.iter():
            tag = el.tag.split("}")[-1]
            if tag == "EntityType":
                props = {c.get("Name") for c in el if c.tag.split("}")[-1] in ("Property", "NavigationProperty")}
                types[el.get("Name")] = props
            elif tag in ("FunctionImport", "ActionImport", "Action", "Function"):
                ops.add(el.get("Name"))
            elif tag == "Annotations" and "Container/" in (el.get("Target") or ""):
                target = el.get("Target").split("/")[-1]
                found = {}
                for rec in el.iter():
                    if rec.tag.split("}")[-1] != "Annotation":
                        continue
                    term = rec.get("Term", "")
                    for kind, prop in (("InsertRestrictions", "Insertable"), ("UpdateRestrictions", "Updatable")):
                        if term.endswith(kind):
                            for pv in rec.iter():
                                if pv.get("Property") == prop:
                                    found[prop] = pv.get("Bool") == "true"
                caps[target] = found
        for el in root.iter():
            if el.tag.split("}")[-1] != "EntitySet":
                continue
            name = el.get("Name")
            etype = el.get("EntityType", "").split(".")[-1]
            if el.get(f"{{{SAPNS}}}creatable") is not None or el.tag.startswith(f"{{{EDMX_V2}}}"):
                ins = el.get(f"{{{SAPNS}}}creatable", "true") == "true"
                upd = el.get(f"{{{SAPNS}}}updatable", "true") == "true"
            else:
                c = caps.get(name, {})
                ins, upd = c.get("Insertable", True), c.get("Updatable", True)
            sets[name] = (etype, ins, upd)
        services[path.stem] = {"sets": sets, "types": types, "operations": ops}
    return services


def check_metadata(procs: list, meta: dict) -> list:
    problems = []
    for p in procs:
        for n in p.nodes.values():
            for u in n.uses:
                where = f"{p.id}/{n.id} -> {u.service}/{u.entity_set}"
                svc = meta.get(u.service)
                if svc is None:
                    problems.append(f"{where}: no such service")
                    continue
                if u.entity_set not in svc["sets"]:
                    problems.append(f"{where}: no such entity set")
                    continue
                etype, ins, upd = svc["sets"][u.entity_set]
                props = svc["types"].get(etype, set())
                named = re.findall(r"`([A-Za-z_][A-Za-z0-9_]*)`", u.note)
                for word in named:
                    if word not in props and word not in svc["operations"]:
                        problems.append(
                            f"{where}: note names `{word}`, not a property of {etype} nor an operation of the service"
                        )
                ops_named = [w for w in named if w in svc["operations"]]
                if u.mode == "write" and not (ins or upd or ops_named):
                    problems.append(
                        f"{where}: write, but the set is neither creatable nor updatable "
                        "and the note names no operation"
                    )
    return problems


# ------------------------------------------------------------------------ store checks
def verify_store(store: Path, procs: list) -> int:
    """SPARQL checks on a store built from the layer with ``kg build``: every activity uses an entity
    set, and every activity of a process follows its first one along ``bpmn:next``. The queries are
    the ``.rq`` files in ``queries/`` beside this script, run with values bound, never spliced."""
    graph = open_store(store)
    failures = 0
    ours = {p.id for p in procs}
    for r in _rows(graph, "unmapped-activities"):
        if r["process"] not in ours:
            continue
        tag = "ok (sub-process container)" if r["kind"] == "subProcess" else "MISSING"
        failures += 0 if r["kind"] == "subProcess" else 1
        print(f"  no uses:entitySet: {r['process']}/{r['id']} [{r['kind']}] {tag}")
    for p in procs:
        rows = _rows(graph, "chain-reaches", process=p.id, first=p.first, last=p.last)
        ok = bool(rows) and int(rows[0]["n"] or 0) > 0
        failures += 0 if ok else 1
        stray = [r["id"] for r in _rows(graph, "unreachable-activities", process=p.id, first=p.first)]
        failures += len(stray)
        reach = f"NOT reachable from the first: {stray}" if stray else "every activity reachable from the first"
        print(f"  {'ok ' if ok else 'FAIL'} {p.id}: {p.first} bpmn:next+ {p.last}; {reach}")
    edges = _rows(graph, "usage-count")
    print(f"  uses:Usage edges in the store: {edges[0]['n'] if edges else '?'}")
    return failures


def _rows(graph, name: str, **bindings) -> list[dict]:
    text = (QUERIES / f"{name}.rq").read_text(encoding="utf-8")
    names, rows = select(graph, text, bindings)
    return [dict(zip(names, (plain(v) for v in row), strict=True)) for row in rows]


QUERIES = Path(__file__).resolve().parent / "queries"
