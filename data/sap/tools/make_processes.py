#!/usr/bin/env python3
"""Write the SAP process layer: ``data/sap/processes/*.bpmn`` and ``data/sap/mapping.yaml``.

The processes are modelled on SAP Best Practices scope items (see ``docs/sap-process-layer.md``)
and linked to the entity sets of the 45 A2X OData services in ``../shared/data/odata/s4-a2x``.
This script is the single place where they are written down: each process is a short block of
builder calls below (``build_*``), and each activity carries its hand-chosen ``uses`` edges
(service, entity set, read/write, and a note naming the properties or function imports the step
touches). The script lays the diagrams out, writes BPMN 2.0 XML with diagram interchange (DI) and
writes the mapping file from the same table, so the two cannot drift apart.

Only the standard library is needed. Output is deterministic: the same script writes the same
bytes.

Usage (from the repository root)::

    python data/sap/tools/make_processes.py                 # (re)write processes and mapping
    python data/sap/tools/make_processes.py --check         # exit 1 if the files on disk differ
    python data/sap/tools/make_processes.py --metadata ../shared/data/odata/s4-a2x
                                                             # also check every edge against the metadata
    python data/sap/tools/make_processes.py --verify-store /tmp/sap
                                                             # SPARQL checks on a store built by `kg build`

Every run also checks the diagrams: no two shapes overlap, every shape lies inside its lane,
and no sequence or message flow passes through a shape it does not connect.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path
from xml.sax.saxutils import escape, quoteattr

HERE = Path(__file__).resolve().parent
SAP_DIR = HERE.parent
REPO = SAP_DIR.parent.parent
PROCESS_DIR = SAP_DIR / "processes"
MAPPING_FILE = SAP_DIR / "mapping.yaml"
DEFAULT_METADATA = REPO.parent / "shared" / "data" / "odata" / "s4-a2x"

# ----------------------------------------------------------------- services (file stems)
BP = "API_BUSINESS_PARTNER"
BILL = "API_BILLING_DOCUMENT_SRV"
BILL4 = "sap-s4-CE_BILLINGDOCUMENT_0001-v1"
BOM = "API_BILL_OF_MATERIAL_SRV"
BANK = "CE_BANK_0003"
CC = "API_COSTCENTER_SRV"
CMR = "API_CREDIT_MEMO_REQUEST_SRV"
COCODE = "API_COMPANYCODE_SRV"
CONTRACT = "CE_SALESCONTRACT_0001"
CUSTMAT = "API_CUSTOMER_MATERIAL_SRV"
EQUI = "API_EQUIPMENT"
FLOC = "API_FUNCTIONALLOCATION"
GLACC = "API_GLACCOUNTINCHARTOFACCOUNTS_SRV"
GLITEM = "API_GLACCOUNTLINEITEM"
IBD = "API_INBOUND_DELIVERY_SRV"
INFOREC = "API_INFORECORD_PROCESS_SRV"
IORDER = "API_INTERNALORDER_SRV"
JE = "API_JOURNALENTRYITEMBASIC_SRV"
MATDOC = "API_MATERIAL_DOCUMENT_SRV"
MNOTIF = "API_MAINTNOTIFICATION"
MORDER = "API_MAINTENANCEORDER"
OBD = "API_OUTBOUND_DELIVERY_SRV"
PLANT = "API_PLANT_SRV"
PO = "API_PURCHASEORDER_PROCESS_SRV"
PR = "API_PURCHASEREQ_PROCESS_SRV"
PRICE = "API_SLSPRICINGCONDITIONRECORD_SRV"
PROD = "API_PRODUCT_SRV"
PRODORD = "API_PRODUCTION_ORDER_2_SRV"
PROJ = "API_ENTERPRISE_PROJECT_0002"
PVERS = "PRODUCTIONVERSION"
QUOT = "API_SALES_QUOTATION_SRV"
RET = "API_CUSTOMER_RETURN_SRV"
SINV = "API_SUPPLIERINVOICE_PROCESS"
SO = "API_SALES_ORDER_SRV"
SORG = "API_SALESORGANIZATION_SRV"
STOCK = "API_MATERIAL_STOCK_SRV"
TIME = "API_MANAGE_WORKFORCE_TIMESHEET"


@dataclass(frozen=True)
class Use:
    service: str
    entity_set: str
    mode: str  # read | write
    note: str = ""  # names properties or function imports in `backticks`


def R(service: str, entity_set: str, note: str = "") -> Use:
    return Use(service, entity_set, "read", note)


def W(service: str, entity_set: str, note: str = "") -> Use:
    return Use(service, entity_set, "write", note)


# ----------------------------------------------------------------------------- model
TASK_W, TASK_H = 100, 80
GW = 50
EV = 36
ROW_H = 200  # height of one row of a lane
POOL_X, LANE_X, X0 = 160, 190, 250
POOL_Y = 80
PARTNER_H = 60
PARTNER_GAP = 40
GAP = 50  # between columns
SUB_PAD = 30  # sub-process border around its inner nodes
ACTIVITY_TAGS = {
    "userTask",
    "serviceTask",
    "sendTask",
    "receiveTask",
    "businessRuleTask",
    "manualTask",
    "task",
    "scriptTask",
    "subProcess",
    "callActivity",
}
GATEWAY_TAGS = {"exclusiveGateway", "parallelGateway", "eventBasedGateway", "inclusiveGateway"}
EVENT_TAGS = {"startEvent", "endEvent", "intermediateCatchEvent", "intermediateThrowEvent", "boundaryEvent"}


@dataclass
class Node:
    id: str
    tag: str
    name: str
    lane: str
    row: int = 0
    doc: str = ""
    parent: str = ""
    event: str = ""  # message | timer | ""
    timer: tuple = ()  # (timeDuration|timeCycle|timeDate, expression)
    attached: str = ""
    interrupting: bool = True
    called: str = ""
    shift: int = 0  # extra columns before this node
    uses: list = field(default_factory=list)
    default: str = ""
    incoming: list = field(default_factory=list)
    outgoing: list = field(default_factory=list)
    # layout
    col: int = 0
    x: float = 0
    y: float = 0
    w: float = 0
    h: float = 0

    @property
    def is_activity(self) -> bool:
        return self.tag in ACTIVITY_TAGS

    @property
    def is_gateway(self) -> bool:
        return self.tag in GATEWAY_TAGS

    @property
    def is_event(self) -> bool:
        return self.tag in EVENT_TAGS

    @property
    def cx(self) -> float:
        return self.x + self.w / 2

    @property
    def cy(self) -> float:
        return self.y + self.h / 2

    @property
    def right(self) -> float:
        return self.x + self.w

    @property
    def bottom(self) -> float:
        return self.y + self.h


@dataclass
class Flow:
    id: str
    source: str
    target: str
    name: str = ""
    condition: str = ""
    default: bool = False
    back: bool | str = False  # a loop: True or "below", or "above" (how it is drawn)
    points: list = field(default_factory=list)


@dataclass
class MessageFlow:
    id: str
    name: str
    source: str  # node id or partner key
    target: str
    points: list = field(default_factory=list)


_PREFIXES = (
    "Task_",
    "Gateway_",
    "StartEvent_",
    "EndEvent_",
    "IntermediateCatchEvent_",
    "BoundaryEvent_",
    "SubProcess_",
    "CallActivity_",
)


def _short(node_id: str) -> str:
    for p in _PREFIXES:
        if node_id.startswith(p):
            return node_id[len(p) :]
    return node_id


class Proc:
    """One BPMN process in one file, built with a few calls per element."""

    def __init__(
        self,
        file: str,
        pid: str,
        name: str,
        scope: str,
        doc: str,
        lanes: list,
        partners: list = (),
        first: str = "",
        last: str = "",
    ) -> None:
        self.file = file
        self.id = pid
        self.key = pid.removeprefix("Process_")
        self.name = name
        self.scope = scope  # scope item inspiration, for the doc and the file comment
        self.doc = doc
        self.lanes = list(lanes)  # (key, name)
        self.partners = list(partners)  # (key, name, "top" | "bottom")
        self.first = first
        self.last = last
        self.nodes: dict[str, Node] = {}
        self.flows: list[Flow] = []
        self.messages: list[MessageFlow] = []
        self._parent = ""

    # -- elements
    def _add(self, node: Node) -> str:
        if node.id in self.nodes:
            raise ValueError(f"{self.id}: duplicate id {node.id}")
        if node.lane not in {k for k, _ in self.lanes}:
            raise ValueError(f"{self.id}: {node.id} in unknown lane {node.lane}")
        node.parent = node.parent or self._parent
        self.nodes[node.id] = node
        return node.id

    def task(self, tag, nid, name, lane, doc, uses, row=0, shift=0, called=""):
        return self._add(Node(nid, tag, name, lane, row, doc, uses=list(uses), shift=shift, called=called))

    def user(self, nid, name, lane, doc, uses, row=0, shift=0):
        return self.task("userTask", nid, name, lane, doc, uses, row, shift)

    def service(self, nid, name, lane, doc, uses, row=0, shift=0):
        return self.task("serviceTask", nid, name, lane, doc, uses, row, shift)

    def send(self, nid, name, lane, doc, uses, row=0, shift=0):
        return self.task("sendTask", nid, name, lane, doc, uses, row, shift)

    def rule(self, nid, name, lane, doc, uses, row=0, shift=0):
        return self.task("businessRuleTask", nid, name, lane, doc, uses, row, shift)

    def call(self, nid, name, lane, doc, uses, called, row=0, shift=0):
        return self.task("callActivity", nid, name, lane, doc, uses, row, shift, called)

    def start(self, nid, name, lane, event="", timer=(), row=0):
        return self._add(Node(nid, "startEvent", name, lane, row, event=event, timer=timer))

    def end(self, nid, name, lane, row=0, shift=0):
        return self._add(Node(nid, "endEvent", name, lane, row, shift=shift))

    def catch(self, nid, name, lane, event, timer=(), row=0, shift=0, doc=""):
        return self._add(
            Node(nid, "intermediateCatchEvent", name, lane, row, doc, event=event, timer=timer, shift=shift)
        )

    def boundary(self, nid, name, host, event, timer=(), interrupting=True):
        h = self.nodes[host]
        return self._add(
            Node(
                nid,
                "boundaryEvent",
                name,
                h.lane,
                h.row,
                event=event,
                timer=timer,
                attached=host,
                interrupting=interrupting,
                parent=h.parent,
            )
        )

    def xor(self, nid, name, lane, row=0, shift=0):
        return self._add(Node(nid, "exclusiveGateway", name, lane, row, shift=shift))

    def par(self, nid, lane, row=0, shift=0):
        return self._add(Node(nid, "parallelGateway", "", lane, row, shift=shift))

    def evgw(self, nid, name, lane, row=0, shift=0):
        return self._add(Node(nid, "eventBasedGateway", name, lane, row, shift=shift))

    def sub(self, nid, name, lane, doc, row=0, shift=0):
        self._add(Node(nid, "subProcess", name, lane, row, doc, shift=shift))
        return _SubContext(self, nid)

    # -- flows
    def flow(self, source, target, name="", cond="", default=False, back=False) -> str:
        fid = f"Flow_{_short(source)}_{_short(target)}"
        if any(f.id == fid for f in self.flows):
            raise ValueError(f"{self.id}: duplicate flow {fid}")
        self.flows.append(Flow(fid, source, target, name, cond, default, back))
        return fid

    def chain(self, *ids) -> None:
        for a, b in zip(ids, ids[1:]):
            self.flow(a, b)

    def message(self, source, target, name) -> None:
        mid = f"MessageFlow_{_short(source)}_{_short(target)}"
        self.messages.append(MessageFlow(mid, name, source, target))


class _SubContext:
    def __init__(self, proc: Proc, sid: str) -> None:
        self.proc, self.sid = proc, sid

    def __enter__(self):
        self._saved = self.proc._parent
        self.proc._parent = self.sid
        return self.sid

    def __exit__(self, *exc):
        self.proc._parent = self._saved
        sub = self.proc.nodes[self.sid]
        for n in self.proc.nodes.values():
            if n.parent == self.sid:
                n.lane, n.row = sub.lane, sub.row
        return False


# ---------------------------------------------------------------------------- layout
def _size(n: Node) -> tuple:
    if n.is_activity:
        return TASK_W, TASK_H
    if n.is_gateway:
        return GW, GW
    return EV, EV


class Layout:
    """Columns by longest path over the forward flows; rows by lane and row number."""

    def __init__(self, p: Proc) -> None:
        self.p = p
        self.subs = {n.id: n for n in p.nodes.values() if n.tag == "subProcess"}
        self.lane_rows: dict[str, int] = {}
        self.lane_y: dict[str, float] = {}
        self.partner_box: dict[str, tuple] = {}
        self.pool: tuple = ()
        self.lane_box: dict[str, tuple] = {}
        self.sub_cols: dict[str, tuple] = {}

    def inner(self, sid: str) -> list:
        return [n for n in self.p.nodes.values() if n.parent == sid and not n.attached]

    def run(self) -> None:
        p = self.p
        for n in p.nodes.values():
            n.w, n.h = _size(n)
        self._columns()
        self._rows()
        self._place()
        for f in p.flows:
            f.points = self._route(f)
        for m in p.messages:
            m.points = self._route_message(m)

    def _columns(self) -> None:
        p = self.p
        edges = []  # (a, b, weight)
        has_in = {f.target for f in p.flows}
        has_out = {f.source for f in p.flows}
        for f in p.flows:
            if f.back:
                continue
            sources = [f.source]
            if f.source in self.subs:
                sources = [n.id for n in self.inner(f.source) if n.id not in has_out]
            for s in sources:
                edges.append((s, f.target, 1 + p.nodes[f.target].shift))
        for sid in self.subs:
            for n in self.inner(sid):
                if n.id not in has_in:
                    edges.append((sid, n.id, 0))
        for n in p.nodes.values():
            if n.attached:
                hosts = [n.attached]
                if n.attached in self.subs:
                    hosts = [m.id for m in self.inner(n.attached)]
                for h in hosts:
                    edges.append((h, n.id, 0))
        col = {nid: 0 for nid in p.nodes}
        indeg = {nid: 0 for nid in p.nodes}
        out: dict[str, list] = {nid: [] for nid in p.nodes}
        for a, b, w in edges:
            out[a].append((b, w))
            indeg[b] += 1
        ready = [nid for nid in p.nodes if indeg[nid] == 0]
        seen = 0
        while ready:
            a = ready.pop(0)
            seen += 1
            for b, w in out[a]:
                col[b] = max(col[b], col[a] + w)
                indeg[b] -= 1
                if indeg[b] == 0:
                    ready.append(b)
        if seen != len(p.nodes):
            raise ValueError(f"{p.id}: forward flows have a cycle; mark the loop flow back=True")
        for nid, c in col.items():
            p.nodes[nid].col = c
        for sid in self.subs:
            cols = [n.col for n in self.inner(sid)]
            self.sub_cols[sid] = (min(cols), max(cols))

    def _rows(self) -> None:
        p = self.p
        y = POOL_Y
        for key, _ in p.lanes:
            rows = [n.row for n in p.nodes.values() if n.lane == key]
            self.lane_rows[key] = (max(rows) + 1) if rows else 1
            self.lane_y[key] = y
            y += self.lane_rows[key] * ROW_H

    def _place(self) -> None:
        p = self.p
        ncols = max(n.col for n in p.nodes.values()) + 1
        width = [0.0] * ncols
        for n in p.nodes.values():
            if n.tag == "subProcess" or n.attached:
                continue
            width[n.col] = max(width[n.col], n.w)
        extra = [0] * (ncols + 1)
        for first, last in self.sub_cols.values():
            extra[first] += SUB_PAD
            extra[last + 1] += SUB_PAD
        xs, x = [], X0
        for c in range(ncols):
            x += extra[c] + (GAP if c else 0)
            xs.append(x)
            x += width[c]
        right = x + extra[ncols] + 60
        self.col_x = xs
        for n in p.nodes.values():
            if n.tag == "subProcess" or n.attached:
                continue
            cy = self.lane_y[n.lane] + n.row * ROW_H + ROW_H / 2
            n.x = xs[n.col] + (width[n.col] - n.w) / 2
            n.y = cy - n.h / 2
        for sid, sub in self.subs.items():
            inner = self.inner(sid)
            cy = self.lane_y[sub.lane] + sub.row * ROW_H + ROW_H / 2
            sub.x = min(n.x for n in inner) - SUB_PAD
            sub.w = max(n.right for n in inner) + SUB_PAD - sub.x
            sub.y = cy - 70
            sub.h = 140
        for n in p.nodes.values():
            if n.attached:
                host = p.nodes[n.attached]
                n.x = host.right - 30 - EV / 2
                n.y = host.bottom - EV / 2
        lanes_bottom = POOL_Y + sum(self.lane_rows[k] for k, _ in p.lanes) * ROW_H
        self.pool = (POOL_X, POOL_Y, right - POOL_X, lanes_bottom - POOL_Y)
        for key, _ in p.lanes:
            self.lane_box[key] = (LANE_X, self.lane_y[key], right - LANE_X, self.lane_rows[key] * ROW_H)
        top_y = POOL_Y - PARTNER_GAP - PARTNER_H
        bottom_y = lanes_bottom + PARTNER_GAP
        for key, _, where in p.partners:
            y = top_y if where == "top" else bottom_y
            self.partner_box[key] = (POOL_X, y, right - POOL_X, PARTNER_H)
            if where == "top":
                top_y -= PARTNER_H + PARTNER_GAP
            else:
                bottom_y += PARTNER_H + PARTNER_GAP

    def _blocked(self, s: Node, t: Node) -> bool:
        """Another shape on the straight line between s and t (same row)."""
        lo, hi = s.right, t.x
        for n in self.p.nodes.values():
            if n.id in (s.id, t.id) or n.attached or (n.tag == "subProcess" and n.id in (s.parent, t.parent)):
                continue
            if n.x < hi and n.right > lo and n.y < s.cy < n.bottom:
                return True
        return False

    def _route(self, f: Flow) -> list:
        p = self.p
        s, t = p.nodes[f.source], p.nodes[f.target]
        if s.attached:
            return [(s.cx, s.bottom), (s.cx, t.cy), (t.x, t.cy)]
        if f.back == "above":
            yt = min(s.y, t.y) - 22
            return [(s.cx, s.y), (s.cx, yt), (t.cx, yt), (t.cx, t.y)]
        if f.back:  # below
            yb = max(s.bottom, t.bottom) + 22
            return [(s.cx, s.bottom), (s.cx, yb), (t.cx, yb), (t.cx, t.bottom)]
        if abs(s.cy - t.cy) < 1:
            if self._blocked(s, t):
                yt = min(s.y, t.y) - 22
                return [(s.cx, s.y), (s.cx, yt), (t.cx, yt), (t.cx, t.y)]
            return [(s.right, s.cy), (t.x, t.cy)]
        down = t.cy > s.cy
        split = s.is_gateway and len(s.outgoing) > 1
        join = t.is_gateway and len(t.incoming) > 1
        candidates = []
        if join:  # along the source's row, then into the join from above or below
            candidates.append([(s.right, s.cy), (t.cx, s.cy), (t.cx, t.y if down else t.bottom)])
        if split and s.tag in ("exclusiveGateway", "inclusiveGateway"):
            # labelled siblings leaving the same corner: only the one whose target is nearest uses it
            same_side = [
                p.nodes[g.target]
                for g in p.flows
                if g.source == s.id
                and not g.back
                and (p.nodes[g.target].cy > s.cy + 1 if down else p.nodes[g.target].cy < s.cy - 1)
            ]
            nearest = min(same_side, key=lambda n: (abs(n.cy - s.cy), n.x))
            split = nearest.id == t.id
        if split:  # out of the split's top or bottom corner, then along the target's row
            candidates.append([(s.cx, s.bottom if down else s.y), (s.cx, t.cy), (t.x, t.cy)])
        mx = self.col_x[t.col] - GAP / 2  # in the gap before the target's column
        if t.tag == "subProcess":
            mx = t.x - (GAP + SUB_PAD) / 2
        candidates.append([(s.right, s.cy), (mx, s.cy), (mx, t.cy), (t.x, t.cy)])
        for points in candidates:
            if not flow_crossings(self.p, f, points):
                return points
        return candidates[0]

    def _route_message(self, m: MessageFlow) -> list:
        p = self.p
        if m.source in p.nodes:
            n, box = p.nodes[m.source], self.partner_box[m.target]
            outward = True
        else:
            n, box = p.nodes[m.target], self.partner_box[m.source]
            outward = False
        top = box[1] < POOL_Y
        a = (n.cx, n.y if top else n.bottom)
        b = (n.cx, box[1] + box[3] if top else box[1])
        return [a, b] if outward else [b, a]


# ---------------------------------------------------------------------------- checks
def _rect(n: Node) -> tuple:
    return (n.x, n.y, n.right, n.bottom)


def _overlap(a: tuple, b: tuple) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def _segment_hits(p1: tuple, p2: tuple, r: tuple, margin: float = 1.0) -> bool:
    (x1, y1), (x2, y2) = p1, p2
    lo_x, hi_x = min(x1, x2), max(x1, x2)
    lo_y, hi_y = min(y1, y2), max(y1, y2)
    return lo_x < r[2] - margin and hi_x > r[0] + margin and lo_y < r[3] - margin and hi_y > r[1] + margin


def flow_crossings(p: Proc, f: Flow, points: list) -> list:
    """Ids of the shapes a sequence flow with these waypoints passes through."""
    ends = {f.source, f.target}
    hits = []
    for n in p.nodes.values():
        if n.id in ends or n.attached in ends:
            continue
        if n.tag == "subProcess" and (
            n.id == p.nodes[f.source].parent
            or n.id == p.nodes[f.target].parent
            or any(p.nodes[e].attached == n.id for e in ends)
        ):
            continue
        if any(_segment_hits(a, b, _rect(n)) for a, b in zip(points, points[1:])):
            hits.append(n.id)
    return hits


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


# --------------------------------------------------------------------------- writing
NS = {
    "bpmn": "http://www.omg.org/spec/BPMN/20100524/MODEL",
    "bpmndi": "http://www.omg.org/spec/BPMN/20100524/DI",
    "dc": "http://www.omg.org/spec/DD/20100524/DC",
    "di": "http://www.omg.org/spec/DD/20100524/DI",
    "xsi": "http://www.w3.org/2001/XMLSchema-instance",
}


def _n(v: float) -> str:
    return str(int(round(v)))


def _attrs(**kv) -> str:
    return "".join(
        f" {k.rstrip('_').replace('__', ':')}={quoteattr(str(v))}" for k, v in kv.items() if v is not None and v != ""
    )


class Writer:
    def __init__(self, p: Proc, lay: Layout) -> None:
        self.p, self.lay = p, lay
        self.out: list[str] = []

    def line(self, depth: int, text: str) -> None:
        self.out.append("  " * depth + text)

    def doc(self, depth: int, text: str) -> None:
        if text:
            self.line(depth, f"<bpmn:documentation>{escape(text)}</bpmn:documentation>")

    def write(self) -> str:
        p = self.p
        self.out = ['<?xml version="1.0" encoding="UTF-8"?>']
        self.out.append(
            f"<!-- {escape(p.name)}. Inspired by SAP Best Practices: {escape(p.scope)}. Written for "
            "processkg (Apache-2.0) by data/sap/tools/make_processes.py, which also writes "
            "data/sap/mapping.yaml; edit the script, not this file. -->"
        )
        ns = " ".join(f'xmlns:{k}="{v}"' for k, v in NS.items())
        self.line(
            0,
            f'<bpmn:definitions {ns} id="Definitions_{p.key}" '
            f'targetNamespace="https://w3id.org/processkg/sap/bpmn/{p.key}" '
            'exporter="processkg make_processes.py" exporterVersion="1">',
        )
        for mid, name in self._messages():
            self.line(1, f"<bpmn:message{_attrs(id=mid, name=name)} />")
        self.line(1, f'<bpmn:collaboration id="Collaboration_{p.key}">')
        self.line(2, f"<bpmn:participant{_attrs(id='Participant_' + p.key, name=p.name, processRef=p.id)} />")
        for key, name, _ in p.partners:
            self.line(2, f"<bpmn:participant{_attrs(id='Participant_' + key, name=name)} />")
        for m in p.messages:
            src = m.source if m.source in p.nodes else "Participant_" + m.source
            tgt = m.target if m.target in p.nodes else "Participant_" + m.target
            ref = f"Message_{_short(m.source)}_{_short(m.target)}"
            self.line(
                2, f"<bpmn:messageFlow{_attrs(id=m.id, name=m.name, sourceRef=src, targetRef=tgt, messageRef=ref)} />"
            )
        self.line(1, "</bpmn:collaboration>")
        self.line(1, f'<bpmn:process{_attrs(id=p.id, name=p.name)} isExecutable="false">')
        self.doc(2, p.doc)
        self.line(2, f'<bpmn:laneSet id="LaneSet_{p.key}">')
        for key, name in p.lanes:
            self.line(3, f"<bpmn:lane{_attrs(id='Lane_' + key, name=name)}>")
            for n in p.nodes.values():
                if n.lane == key and not n.parent:
                    self.line(4, f"<bpmn:flowNodeRef>{n.id}</bpmn:flowNodeRef>")
            self.line(3, "</bpmn:lane>")
        self.line(2, "</bpmn:laneSet>")
        self._elements(2, "")
        self.line(1, "</bpmn:process>")
        self._diagram()
        self.line(0, "</bpmn:definitions>")
        return "\n".join(self.out) + "\n"

    def _messages(self) -> list:
        seen = {}
        for n in self.p.nodes.values():
            if n.event == "message":
                seen.setdefault(f"Message_{_short(n.id)}", n.name)
        for m in self.p.messages:
            seen.setdefault(f"Message_{_short(m.source)}_{_short(m.target)}", m.name)
        return sorted(seen.items())

    def _elements(self, depth: int, parent: str) -> None:
        p = self.p
        for n in p.nodes.values():
            if n.parent == parent:
                self._node(depth, n)
        for f in p.flows:
            if p.nodes[f.source].parent == parent:
                a = _attrs(id=f.id, name=f.name, sourceRef=f.source, targetRef=f.target)
                if f.condition:
                    self.line(depth, f"<bpmn:sequenceFlow{a}>")
                    self.line(
                        depth + 1,
                        '<bpmn:conditionExpression xsi:type="bpmn:tFormalExpression">'
                        f"{escape(f.condition)}</bpmn:conditionExpression>",
                    )
                    self.line(depth, "</bpmn:sequenceFlow>")
                else:
                    self.line(depth, f"<bpmn:sequenceFlow{a} />")

    def _node(self, depth: int, n: Node) -> None:
        a = {"id": n.id, "name": n.name}
        if n.tag == "boundaryEvent":
            if not n.interrupting:
                a["cancelActivity"] = "false"
            a["attachedToRef"] = n.attached
        if n.tag == "callActivity":
            a["calledElement"] = n.called
        if n.default:
            a["default"] = n.default
        self.line(depth, f"<bpmn:{n.tag}{_attrs(**a)}>")
        self.doc(depth + 1, n.doc)
        for fid in n.incoming:
            self.line(depth + 1, f"<bpmn:incoming>{fid}</bpmn:incoming>")
        for fid in n.outgoing:
            self.line(depth + 1, f"<bpmn:outgoing>{fid}</bpmn:outgoing>")
        if n.event == "message":
            self.line(
                depth + 1,
                f'<bpmn:messageEventDefinition id="MessageEventDefinition_{_short(n.id)}" '
                f'messageRef="Message_{_short(n.id)}" />',
            )
        elif n.event == "timer":
            kind, expr = n.timer
            self.line(depth + 1, f'<bpmn:timerEventDefinition id="TimerEventDefinition_{_short(n.id)}">')
            self.line(depth + 2, f'<bpmn:{kind} xsi:type="bpmn:tFormalExpression">{escape(expr)}</bpmn:{kind}>')
            self.line(depth + 1, "</bpmn:timerEventDefinition>")
        if n.tag == "subProcess":
            self._elements(depth + 1, n.id)
        self.line(depth, f"</bpmn:{n.tag}>")

    # -- diagram interchange
    def _shape(self, eid: str, box: tuple, extra: str = "", label: tuple = ()) -> None:
        x, y, w, h = box
        self.line(3, f'<bpmndi:BPMNShape id="{eid}_di" bpmnElement="{eid}"{extra}>')
        self.line(4, f'<dc:Bounds x="{_n(x)}" y="{_n(y)}" width="{_n(w)}" height="{_n(h)}" />')
        if label:
            lx, ly, lw, lh = label
            self.line(4, "<bpmndi:BPMNLabel>")
            self.line(5, f'<dc:Bounds x="{_n(lx)}" y="{_n(ly)}" width="{_n(lw)}" height="{_n(lh)}" />')
            self.line(4, "</bpmndi:BPMNLabel>")
        self.line(3, "</bpmndi:BPMNShape>")

    def _edge(self, eid: str, points: list, label: str = "") -> None:
        self.line(3, f'<bpmndi:BPMNEdge id="{eid}_di" bpmnElement="{eid}">')
        for x, y in points:
            self.line(4, f'<di:waypoint x="{_n(x)}" y="{_n(y)}" />')
        if (
            label
            and len(points) == 4
            and points[1][1] == points[2][1]
            and points[1][1] < points[0][1]
            and points[3][1] > points[2][1]
        ):  # a loop drawn above: label on its top segment
            lx, ly = min(points[1][0], points[2][0]) + 10, points[1][1] - 16
            self.line(4, "<bpmndi:BPMNLabel>")
            self.line(5, f'<dc:Bounds x="{_n(lx)}" y="{_n(ly)}" width="{_n(max(24, 7 * len(label)))}" height="14" />')
            self.line(4, "</bpmndi:BPMNLabel>")
        elif label:
            (x1, y1), (x2, y2) = points[0], points[1]
            if abs(x1 - x2) < 1:  # leaves vertically
                lx, ly = x1 + 6, (y1 + y2) / 2 - 7 if abs(y2 - y1) < 60 else (y1 + (12 if y2 > y1 else -26))
            else:
                lx, ly = x1 + 8, y1 - 20
            self.line(4, "<bpmndi:BPMNLabel>")
            self.line(5, f'<dc:Bounds x="{_n(lx)}" y="{_n(ly)}" width="{_n(max(24, 7 * len(label)))}" height="14" />')
            self.line(4, "</bpmndi:BPMNLabel>")
        self.line(3, "</bpmndi:BPMNEdge>")

    def _diagram(self) -> None:
        p, lay = self.p, self.lay
        self.line(1, f'<bpmndi:BPMNDiagram id="BPMNDiagram_{p.key}" name={quoteattr(p.name)}>')
        self.line(2, f'<bpmndi:BPMNPlane id="BPMNPlane_{p.key}" bpmnElement="Collaboration_{p.key}">')
        self._shape("Participant_" + p.key, lay.pool, ' isHorizontal="true"')
        for key, _ in p.lanes:
            self._shape("Lane_" + key, lay.lane_box[key], ' isHorizontal="true"')
        for key, _, _ in p.partners:
            self._shape("Participant_" + key, lay.partner_box[key], ' isHorizontal="true"')
        ordered = [n for n in p.nodes.values() if not n.parent and not n.attached]
        for n in list(ordered):
            if n.tag == "subProcess":
                ordered += [m for m in p.nodes.values() if m.parent == n.id and not m.attached]
        ordered += [n for n in p.nodes.values() if n.attached]
        for n in ordered:
            box = (n.x, n.y, n.w, n.h)
            if n.tag == "subProcess":
                self._shape(n.id, box, ' isExpanded="true"')
            elif n.tag == "exclusiveGateway":
                self._shape(n.id, box, ' isMarkerVisible="true"', self._label(n))
            elif n.is_gateway or n.is_event:
                self._shape(n.id, box, "", self._label(n))
            else:
                self._shape(n.id, box)
        for f in p.flows:
            self._edge(f.id, f.points, f.name)
        for m in p.messages:
            self._edge(m.id, m.points)
        self.line(2, "</bpmndi:BPMNPlane>")
        self.line(1, "</bpmndi:BPMNDiagram>")

    @staticmethod
    def _label(n: Node) -> tuple:
        if not n.name:
            return ()
        lines = max(1, -(-len(n.name) // 18))
        h = 14 * lines
        if n.is_gateway:  # above the gateway
            return (n.cx - 50, n.y - 6 - h, 100, h)
        if n.attached:  # right of the boundary event, below the host
            return (n.right + 4, n.y + 20, 100, h)
        return (n.cx - 50, n.bottom + 5, 100, h)


def write_mapping(procs: list) -> str:
    out = [
        "# SAP process layer: which activity of which BPMN process in data/sap/processes reads or",
        "# writes which entity set of the A2X OData services in ../shared/data/odata/s4-a2x.",
        "# service = the metadata file stem; mode = read | write. The edges are chosen by hand, one by",
        "# one, in data/sap/tools/make_processes.py, which writes this file and the BPMN files from the",
        "# same table; edit the script and run it again instead of editing this file.",
        "# Why each process and edge looks the way it does: docs/sap-process-layer.md.",
        "# The comment above an edge names the properties or function imports the step uses.",
        "mappings:",
    ]
    for p in procs:
        out.append("")
        out.append(f"  # ---- {p.id} ({p.file}) ----")
        for n in p.nodes.values():
            for u in n.uses:
                if u.note:
                    out.append(f"  # {u.note}")
                out.append(f"  - process: {p.id}")
                out.append(f"    activity: {n.id}")
                out.append(f"    service: {u.service}")
                out.append(f"    entity_set: {u.entity_set}")
                out.append(f"    mode: {u.mode}")
    return "\n".join(out) + "\n"


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
    kg = REPO / ".venv" / "bin" / "kg"
    kg_cmd = str(kg) if kg.exists() else "kg"

    def query(text: str) -> list:
        res = subprocess.run(
            [kg_cmd, "query", "--store", str(store), "--format", "json", "-"],
            input=text,
            capture_output=True,
            text=True,
            check=True,
        )
        data = json.loads(res.stdout)
        if isinstance(data, dict) and "results" in data:
            data = data["results"]["bindings"]
        rows = []
        for row in data:
            rows.append({k: (v["value"] if isinstance(v, dict) else v) for k, v in row.items()})
        return rows

    failures = 0
    unmapped = query("""
        SELECT ?process ?id ?kind WHERE {
          ?a a bpmn:Activity ; bpmn:elementId ?id ; bpmn:kind ?kind ; bpmn:process/bpmn:elementId ?process .
          FILTER NOT EXISTS { ?a uses:entitySet ?set }
        } ORDER BY ?process ?id""")
    ours = {p.id for p in procs}
    unmapped = [r for r in unmapped if r["process"] in ours]
    for r in unmapped:
        tag = "ok (sub-process container)" if r["kind"] == "subProcess" else "MISSING"
        if r["kind"] != "subProcess":
            failures += 1
        print(f"  no uses:entitySet: {r['process']}/{r['id']} [{r['kind']}] {tag}")
    for p in procs:
        rows = query(f"""
            SELECT (COUNT(*) AS ?n) WHERE {{
              ?first bpmn:elementId "{p.first}" ; bpmn:process/bpmn:elementId "{p.id}" .
              ?last bpmn:elementId "{p.last}" ; bpmn:process/bpmn:elementId "{p.id}" .
              ?first bpmn:next+ ?last .
            }}""")
        ok = int(rows[0]["n"]) > 0 if rows else False
        failures += 0 if ok else 1
        stray = query(f"""
            SELECT ?id WHERE {{
              ?first bpmn:elementId "{p.first}" ; bpmn:process ?proc .
              ?proc bpmn:elementId "{p.id}" .
              ?a a bpmn:Activity ; bpmn:process ?proc ; bpmn:elementId ?id .
              FILTER (?a != ?first)
              FILTER NOT EXISTS {{ ?first bpmn:next+ ?a }}
            }} ORDER BY ?id""")
        failures += len(stray)
        print(
            f"  {'ok ' if ok else 'FAIL'} {p.id}: {p.first} bpmn:next+ {p.last}; "
            + (
                f"NOT reachable from the first: {[r['id'] for r in stray]}"
                if stray
                else "every activity reachable from the first"
            )
        )
    edges = query("""
        SELECT (COUNT(*) AS ?n) WHERE { ?u a uses:Usage }""")
    print(f"  uses:Usage edges in the store: {edges[0]['n'] if edges else '?'}")
    return failures


# --------------------------------------------------------------------------- driver
def render(procs: list) -> dict:
    files = {}
    problems = []
    for p in procs:
        problems += [f"{p.file}: {x}" for x in check_model(p)]
        lay = Layout(p)
        lay.run()
        problems += [f"{p.file}: {x}" for x in check_layout(p, lay)]
        files[PROCESS_DIR / p.file] = Writer(p, lay).write()
    files[MAPPING_FILE] = write_mapping(procs)
    return files, problems


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true", help="only compare with the files on disk")
    ap.add_argument(
        "--metadata",
        type=Path,
        nargs="?",
        const=DEFAULT_METADATA,
        help="check every edge against the OData metadata in this folder",
    )
    ap.add_argument("--verify-store", type=Path, help="run the SPARQL checks on a built store")
    ap.add_argument("--summary", action="store_true", help="print activity and edge counts")
    ap.add_argument("--preview", type=Path, help="write the BPMN files here even if checks fail")
    args = ap.parse_args(argv)
    procs = build_all()
    ids = [p.id for p in procs]
    if len(set(ids)) != len(ids):
        print("duplicate process ids", file=sys.stderr)
        return 1
    files, problems = render(procs)
    if args.metadata:
        problems += check_metadata(procs, read_metadata(args.metadata))
    for x in problems:
        print("problem:", x, file=sys.stderr)
    if args.preview:
        args.preview.mkdir(parents=True, exist_ok=True)
        for path, text in files.items():
            (args.preview / path.name).write_text(text, encoding="utf-8")
    if problems:
        return 1
    if args.check:
        stale = [
            str(path.relative_to(REPO))
            for path, text in files.items()
            if not path.exists() or path.read_text(encoding="utf-8") != text
        ]
        extra = sorted(str(f.relative_to(REPO)) for f in PROCESS_DIR.glob("*.bpmn") if f not in files)
        for s in stale:
            print("out of date:", s, file=sys.stderr)
        for s in extra:
            print("not written by this script:", s, file=sys.stderr)
        return 1 if stale or extra else 0
    if not args.verify_store:
        PROCESS_DIR.mkdir(parents=True, exist_ok=True)
        for path, text in files.items():
            path.write_text(text, encoding="utf-8")
        print(f"wrote {len(procs)} processes and {MAPPING_FILE.relative_to(REPO)}")
    if args.summary or not args.verify_store:
        total_a = total_e = 0
        for p in procs:
            acts = [n for n in p.nodes.values() if n.is_activity]
            edges = sum(len(n.uses) for n in acts)
            total_a += len(acts)
            total_e += edges
            print(f"  {p.file:40} {p.id:42} {len(acts):3} activities {edges:3} edges")
        print(f"  total: {len(procs)} processes, {total_a} activities, {total_e} mapping edges")
    if args.verify_store:
        return 1 if verify_store(args.verify_store, procs) else 0
    return 0


# =========================================================================== processes
def build_all() -> list:
    return [build() for build in BUILDERS]


BUILDERS: list = []


def process(fn):
    BUILDERS.append(fn)
    return fn


# Each builder returns one Proc. Ids are readable and stable; documentation is written the way
# a clerk would describe the step. The uses= lists are the mapping edges of the activity.


@process
def sales_quotation() -> Proc:
    p = Proc(
        "sales-inquiry-to-quotation.bpmn",
        "Process_SalesQuotation",
        "Sales inquiry to quotation",
        "Sales Quotation (BDG)",
        "A customer asks for an offer. Sales checks the customer's sales area data, stock and "
        "prices, creates a quotation, has large discounts approved by sales management, sends the "
        "quotation and either turns it into a sales order when the customer accepts or records it "
        "as lost when it expires.",
        lanes=[("Sales", "Inside Sales"), ("SalesManagement", "Sales Management")],
        partners=[("Customer", "Customer", "top")],
        first="Task_CheckCustomerSalesData",
        last="Task_CreateSalesOrderFromQuotation",
    )
    p.start("StartEvent_InquiryReceived", "Customer inquiry received", "Sales", event="message")
    p.user(
        "Task_CheckCustomerSalesData",
        "Check the customer's sales data",
        "Sales",
        "Look up the customer's sales area data: terms of payment, incoterms and price group, "
        "so the quotation is made on the right terms.",
        [
            R(
                BP,
                "A_CustomerSalesArea",
                "`CustomerPaymentTerms`, `IncotermsClassification`, `CustomerPriceGroup` of the sales area",
            )
        ],
    )
    p.user(
        "Task_CheckStockForInquiry",
        "Check stock for the requested products",
        "Sales",
        "See how much of each requested product is in unrestricted stock in the delivering "
        "plant, to promise a realistic delivery date.",
        [R(STOCK, "A_MatlStkInAcctMod", "`MatlWrhsStkQtyInMatlBaseUnit` per `Plant` and `InventoryStockType`")],
    )
    p.user(
        "Task_LookUpCustomerPrices",
        "Look up the customer's prices",
        "Sales",
        "Find the valid price and discount condition records for the customer and products.",
        [
            R(
                PRICE,
                "A_SlsPrcgConditionRecord",
                "`ConditionType`, `ConditionRateValue`, validity "
                "`ConditionValidityStartDate` to `ConditionValidityEndDate`",
            )
        ],
    )
    p.user(
        "Task_CreateSalesQuotation",
        "Create the sales quotation",
        "Sales",
        "Enter the quotation with one item per requested product, the quantities, the validity "
        "period and any discount offered.",
        [
            W(
                QUOT,
                "A_SalesQuotation",
                "header with `BindingPeriodValidityStartDate` and "
                "`BindingPeriodValidityEndDate`; items by deep insert via `to_Item`",
            ),
            W(QUOT, "A_SalesQuotationItem", "`Material`, `RequestedQuantity`"),
        ],
    )
    p.xor("Gateway_DiscountNeedsApproval", "Discount above the approval limit?", "Sales")
    p.user(
        "Task_ApproveSalesQuotation",
        "Approve the quotation discount",
        "SalesManagement",
        "The sales manager checks the discount against the margin and approves or rejects the quotation.",
        [
            W(
                QUOT,
                "A_SalesQuotation",
                "`releaseApprovalRequest` or `rejectApprovalRequest`; result in `SalesDocApprovalStatus`",
            )
        ],
    )
    p.xor("Gateway_DiscountApproved", "Discount approved?", "SalesManagement")
    p.user(
        "Task_ReduceQuotationDiscount",
        "Reduce the discount to the standard limit",
        "Sales",
        "When the manager rejects the discount, lower the discount condition on the items to the "
        "limit the sales representative may grant.",
        [
            W(
                QUOT,
                "A_SalesQuotationItemPrcgElmnt",
                "change `ConditionRateValue` of the discount condition (updatable, not creatable)",
            )
        ],
        row=1,
    )
    p.xor("Gateway_QuotationReady", "", "Sales")
    p.send(
        "Task_SendSalesQuotation",
        "Send the quotation to the customer",
        "Sales",
        "Send the quotation document to the customer's contact.",
        [R(QUOT, "A_SalesQuotation", "quotation data for the output")],
    )
    p.evgw("Gateway_WaitForAnswer", "Customer answer?", "Sales")
    p.catch("IntermediateCatchEvent_QuotationAccepted", "Customer accepts the quotation", "Sales", event="message")
    p.catch(
        "IntermediateCatchEvent_QuotationExpired",
        "Quotation validity ended",
        "Sales",
        event="timer",
        timer=("timeDuration", "P30D"),
        row=1,
    )
    p.user(
        "Task_CreateSalesOrderFromQuotation",
        "Create the sales order from the quotation",
        "Sales",
        "Create the sales order with reference to the quotation so that prices and terms are copied unchanged.",
        [
            W(SO, "A_SalesOrder", "`ReferenceSDDocument` = quotation, `ReferenceSDDocumentCategory`"),
            R(QUOT, "A_SalesQuotationItem", "items and quantities to copy"),
        ],
    )
    p.user(
        "Task_RecordQuotationAsLost",
        "Record the quotation as lost",
        "Sales",
        "Set a reason for rejection on the open quotation items so the quotation no longer "
        "counts as open in the sales pipeline.",
        [W(QUOT, "A_SalesQuotationItem", "`SalesDocumentRjcnReason`")],
        row=1,
    )
    p.end("EndEvent_OrderCreated", "Sales order created", "Sales")
    p.end("EndEvent_QuotationLost", "Quotation lost", "Sales", row=1)
    p.chain(
        "StartEvent_InquiryReceived",
        "Task_CheckCustomerSalesData",
        "Task_CheckStockForInquiry",
        "Task_LookUpCustomerPrices",
        "Task_CreateSalesQuotation",
        "Gateway_DiscountNeedsApproval",
    )
    p.flow(
        "Gateway_DiscountNeedsApproval",
        "Task_ApproveSalesQuotation",
        "Yes",
        "${quotation.discountPercent > salesRep.discountLimit}",
    )
    p.flow("Gateway_DiscountNeedsApproval", "Gateway_QuotationReady", "No", default=True)
    p.flow("Task_ApproveSalesQuotation", "Gateway_DiscountApproved")
    p.flow("Gateway_DiscountApproved", "Gateway_QuotationReady", "Yes", "${approvalDecision == 'release'}")
    p.flow("Gateway_DiscountApproved", "Task_ReduceQuotationDiscount", "No", default=True)
    p.flow("Task_ReduceQuotationDiscount", "Gateway_QuotationReady")
    p.chain("Gateway_QuotationReady", "Task_SendSalesQuotation", "Gateway_WaitForAnswer")
    p.flow("Gateway_WaitForAnswer", "IntermediateCatchEvent_QuotationAccepted")
    p.flow("Gateway_WaitForAnswer", "IntermediateCatchEvent_QuotationExpired")
    p.chain("IntermediateCatchEvent_QuotationAccepted", "Task_CreateSalesOrderFromQuotation", "EndEvent_OrderCreated")
    p.chain("IntermediateCatchEvent_QuotationExpired", "Task_RecordQuotationAsLost", "EndEvent_QuotationLost")
    p.message("Customer", "StartEvent_InquiryReceived", "Inquiry")
    p.message("Task_SendSalesQuotation", "Customer", "Quotation")
    p.message("Customer", "IntermediateCatchEvent_QuotationAccepted", "Acceptance")
    return p


@process
def order_to_cash() -> Proc:
    p = Proc(
        "order-to-cash.bpmn",
        "Process_OrderToCash",
        "Order to cash: sell from stock",
        "Sell from Stock (BD9), with the credit check of Basic Credit Management (BD6)",
        "A customer orders products that are in stock. Sales checks that the customer may order "
        "and enters the sales order; an order blocked by the credit check goes to credit "
        "management. The warehouse creates the outbound delivery, picks, packs and posts the "
        "goods issue; billing creates the invoice, posts it to accounting and sends it; accounts "
        "receivable checks the receivable in the general ledger.",
        lanes=[
            ("Sales", "Sales"),
            ("CreditManagement", "Credit Management"),
            ("Warehouse", "Warehouse"),
            ("Billing", "Billing"),
            ("AccountsReceivable", "Accounts Receivable"),
        ],
        partners=[("Customer", "Customer", "top")],
        first="Task_CheckCustomerMayOrder",
        last="Task_CheckReceivablePosting",
    )
    p.start("StartEvent_PurchaseOrderReceived", "Customer purchase order received", "Sales", event="message")
    p.user(
        "Task_CheckCustomerMayOrder",
        "Check that the customer may order",
        "Sales",
        "Make sure the customer is not blocked for orders, deliveries or billing before entering anything.",
        [R(BP, "A_Customer", "`OrderIsBlockedForCustomer`, `DeliveryIsBlocked`, `BillingIsBlockedForCustomer`")],
    )
    p.user(
        "Task_CreateSalesOrder",
        "Create the sales order",
        "Sales",
        "Enter the order with the customer's purchase order number, one item per product and "
        "the requested delivery date; the system checks availability and credit on saving.",
        [
            W(SO, "A_SalesOrder", "`PurchaseOrderByCustomer`; items by deep insert via `to_Item`"),
            W(SO, "A_SalesOrderItem", "`Material`, `RequestedQuantity`"),
        ],
    )
    p.xor("Gateway_CreditBlocked", "Order blocked by the credit check?", "Sales")
    p.user(
        "Task_ReviewCreditStanding",
        "Review the customer's credit standing",
        "CreditManagement",
        "Look at the customer's credit rating and legal status and decide whether the company "
        "accepts the risk of the blocked order.",
        [
            R(
                BP,
                "A_BPCreditWorthiness",
                "`BusPartCreditStanding`, `BPCreditStandingRating`, `BusinessPartnerIsBankrupt`",
            ),
            R(SO, "A_SalesOrder", "`TotalCreditCheckStatus`, `TotalNetAmount`"),
        ],
    )
    p.xor("Gateway_CreditAccepted", "Credit risk accepted?", "CreditManagement")
    p.user(
        "Task_RejectSalesOrder",
        "Reject the order and tell the customer",
        "Sales",
        "Set a reason for rejection on all items and inform the customer that the order cannot be delivered.",
        [W(SO, "A_SalesOrderItem", "`SalesDocumentRjcnReason`")],
        row=1,
    )
    p.end("EndEvent_OrderRejected", "Order rejected", "Sales", row=1)
    p.xor("Gateway_OrderCleared", "", "Sales", shift=2)
    p.user(
        "Task_CreateOutboundDelivery",
        "Create the outbound delivery",
        "Warehouse",
        "Create the delivery for the order items that are due for shipping from the shipping point.",
        [
            W(
                OBD,
                "A_OutbDeliveryHeader",
                "created with reference to the sales order; `ShippingPoint`, `PlannedGoodsIssueDate`",
            )
        ],
    )
    with p.sub(
        "SubProcess_PickPackAndIssue",
        "Pick, pack and post the goods issue",
        "Warehouse",
        "The warehouse picks the items, packs them into handling units and posts the goods "
        "issue, which reduces stock and starts billing.",
    ):
        p.start("StartEvent_PickingStarted", "Delivery due for picking", "Warehouse")
        p.user(
            "Task_PickDeliveryItems",
            "Pick the delivery items",
            "Warehouse",
            "Take the goods from the storage bins and record the picked quantity per item.",
            [W(OBD, "A_OutbDeliveryItem", "picked quantity by `PickOneItem` or `PickAllItems`")],
        )
        p.user(
            "Task_PackHandlingUnits",
            "Pack the goods into handling units",
            "Warehouse",
            "Pack the picked goods into cartons or pallets and record the handling units with "
            "their packaging material and weight.",
            [W(OBD, "A_HandlingUnitHeaderDelivery", "`PackagingMaterial`, `GrossWeight`")],
        )
        p.user(
            "Task_PostGoodsIssue",
            "Post the goods issue",
            "Warehouse",
            "Post the goods issue for the delivery when the truck leaves; stock and the delivery status are updated.",
            [W(OBD, "A_OutbDeliveryHeader", "`PostGoodsIssue`; then `ActualGoodsMovementDate` is set")],
        )
        p.end("EndEvent_GoodsIssued", "Goods issued", "Warehouse")
    p.boundary(
        "BoundaryEvent_GoodsIssueOverdue",
        "Goods issue two days late",
        "SubProcess_PickPackAndIssue",
        "timer",
        ("timeDuration", "P2D"),
        interrupting=False,
    )
    p.user(
        "Task_EscalateLateShipment",
        "Escalate the late shipment",
        "Warehouse",
        "Tell the shipping supervisor which delivery is late and why, so that the customer can "
        "be informed of the new date.",
        [R(OBD, "A_OutbDeliveryHeader", "`PlannedGoodsIssueDate`, `OverallPickingStatus`")],
        row=1,
    )
    p.end("EndEvent_LateShipmentEscalated", "Late shipment escalated", "Warehouse", row=1)
    p.service(
        "Task_CreateBillingDocument",
        "Create the invoice",
        "Billing",
        "Create the customer invoice from the delivery after goods issue.",
        [W(BILL4, "BillingDocument", "`CreateFromSDDocument` with the delivery as reference")],
    )
    p.service(
        "Task_PostBillingToAccounting",
        "Post the invoice to accounting",
        "Billing",
        "Release the invoice to financial accounting so that the receivable and the revenue are posted.",
        [W(BILL4, "BillingDocument", "`PostToAccounting`")],
    )
    p.send(
        "Task_SendInvoice",
        "Send the invoice to the customer",
        "Billing",
        "Send the invoice as PDF to the customer's billing address.",
        [R(BILL, "A_BillingDocument", "`GetPDF` for the invoice document")],
    )
    p.user(
        "Task_CheckReceivablePosting",
        "Check the receivable in the general ledger",
        "AccountsReceivable",
        "Check that the invoice amount is posted as an open receivable on the customer's account.",
        [R(JE, "A_JournalEntryItemBasic", "items filtered by `Customer` and `FiscalYearPeriod`")],
    )
    p.end("EndEvent_OrderBilled", "Order billed", "AccountsReceivable")
    p.chain(
        "StartEvent_PurchaseOrderReceived",
        "Task_CheckCustomerMayOrder",
        "Task_CreateSalesOrder",
        "Gateway_CreditBlocked",
    )
    p.flow("Gateway_CreditBlocked", "Task_ReviewCreditStanding", "Yes", "${salesOrder.TotalCreditCheckStatus == 'B'}")
    p.flow("Gateway_CreditBlocked", "Gateway_OrderCleared", "No", default=True)
    p.flow("Task_ReviewCreditStanding", "Gateway_CreditAccepted")
    p.flow("Gateway_CreditAccepted", "Gateway_OrderCleared", "Yes", "${creditDecision == 'accept'}")
    p.flow("Gateway_CreditAccepted", "Task_RejectSalesOrder", "No", default=True)
    p.flow("Task_RejectSalesOrder", "EndEvent_OrderRejected")
    p.chain(
        "Gateway_OrderCleared",
        "Task_CreateOutboundDelivery",
        "SubProcess_PickPackAndIssue",
        "Task_CreateBillingDocument",
        "Task_PostBillingToAccounting",
        "Task_SendInvoice",
        "Task_CheckReceivablePosting",
        "EndEvent_OrderBilled",
    )
    p.chain(
        "StartEvent_PickingStarted",
        "Task_PickDeliveryItems",
        "Task_PackHandlingUnits",
        "Task_PostGoodsIssue",
        "EndEvent_GoodsIssued",
    )
    p.chain("BoundaryEvent_GoodsIssueOverdue", "Task_EscalateLateShipment", "EndEvent_LateShipmentEscalated")
    p.message("Customer", "StartEvent_PurchaseOrderReceived", "Purchase order")
    p.message("Task_RejectSalesOrder", "Customer", "Rejection")
    p.message("Task_SendInvoice", "Customer", "Invoice")
    return p


@process
def sales_contract() -> Proc:
    p = Proc(
        "sales-contract-call-off.bpmn",
        "Process_SalesContractCallOff",
        "Sales contract with call-off orders",
        "sales contracts with release orders (no scope item id cited)",
        "Key account management agrees a framework contract for a quantity of products at fixed "
        "prices over a period. During the validity period the customer calls off partial "
        "quantities; inside sales checks the remaining contract quantity and creates a call-off "
        "sales order with reference to the contract. At the end of the validity period the "
        "contract is closed.",
        lanes=[("KeyAccount", "Key Account Management"), ("InsideSales", "Inside Sales")],
        partners=[("Customer", "Customer", "top")],
        first="Task_CheckCustomerTerms",
        last="Task_CloseSalesContract",
    )
    p.start("StartEvent_FrameworkAgreed", "Framework agreement negotiated", "KeyAccount")
    p.user(
        "Task_CheckCustomerTerms",
        "Check the customer's sales terms",
        "KeyAccount",
        "Check terms of payment and incoterms in the customer's sales area before they are written into the contract.",
        [R(BP, "A_CustomerSalesArea", "`CustomerPaymentTerms`, `IncotermsClassification`")],
    )
    p.user(
        "Task_CheckContractPrices",
        "Check the agreed prices against the price list",
        "KeyAccount",
        "Compare the negotiated prices with the valid price condition records for the products.",
        [R(PRICE, "A_SlsPrcgConditionRecord", "`ConditionRateValue` for the products")],
    )
    p.user(
        "Task_CreateSalesContract",
        "Create the sales contract",
        "KeyAccount",
        "Enter the contract with its validity period and, per product, the target quantity or "
        "value the customer commits to.",
        [
            W(CONTRACT, "SalesContract", "`SalesContractValidityStartDate`, `SalesContractValidityEndDate`"),
            W(CONTRACT, "SalesContractItem", "`RequestedQuantity` as target, `OutlineAgreementTargetAmount`"),
        ],
    )
    p.send(
        "Task_SendContractConfirmation",
        "Send the contract confirmation",
        "KeyAccount",
        "Send the signed contract confirmation to the customer.",
        [R(CONTRACT, "SalesContract", "contract data for the output")],
    )
    p.xor("Gateway_ContractOpen", "", "InsideSales")
    p.evgw("Gateway_WaitForCallOff", "Call-off or end of validity?", "InsideSales")
    p.catch("IntermediateCatchEvent_CallOffReceived", "Call-off received", "InsideSales", event="message")
    p.catch(
        "IntermediateCatchEvent_ContractExpired",
        "Contract validity ended",
        "InsideSales",
        event="timer",
        timer=("timeDate", "${contract.SalesContractValidityEndDate}"),
        row=1,
    )
    p.user(
        "Task_CheckRemainingQuantity",
        "Check the quantity left in the contract",
        "InsideSales",
        "Compare the called-off quantity with the target quantity minus what has already been released.",
        [R(CONTRACT, "SalesContractItem", "`RequestedQuantity` minus `SlsContrItemReleasedQuantity`")],
    )
    p.xor("Gateway_QuantityLeft", "Enough quantity left?", "InsideSales")
    p.user(
        "Task_RaiseContractQuantity",
        "Raise the contract quantity",
        "KeyAccount",
        "When the customer needs more than agreed, raise the target quantity of the contract "
        "item after agreeing it with the customer.",
        [W(CONTRACT, "SalesContractItem", "`RequestedQuantity`")],
        row=1,
        shift=0,
    )
    p.xor("Gateway_ReadyForCallOff", "", "InsideSales")
    p.user(
        "Task_CreateCallOffOrder",
        "Create the call-off order",
        "InsideSales",
        "Create a sales order with reference to the contract for the called-off quantity; the "
        "released quantity of the contract goes up.",
        [
            W(SO, "A_SalesOrder", "`ReferenceSDDocument` = contract"),
            W(SO, "A_SalesOrderItem", "`ReferenceSDDocument`, `ReferenceSDDocumentItem`, `RequestedQuantity`"),
        ],
    )
    p.user(
        "Task_CloseSalesContract",
        "Close the sales contract",
        "InsideSales",
        "At the end of the validity period, check what was released and close the contract so "
        "no further call-offs can refer to it.",
        [W(CONTRACT, "SalesContract", "`OverallSDProcessStatus` becomes completed")],
        row=1,
    )
    p.end("EndEvent_ContractClosed", "Contract closed", "InsideSales", row=1)
    p.chain(
        "StartEvent_FrameworkAgreed",
        "Task_CheckCustomerTerms",
        "Task_CheckContractPrices",
        "Task_CreateSalesContract",
        "Task_SendContractConfirmation",
        "Gateway_ContractOpen",
        "Gateway_WaitForCallOff",
    )
    p.flow("Gateway_WaitForCallOff", "IntermediateCatchEvent_CallOffReceived")
    p.flow("Gateway_WaitForCallOff", "IntermediateCatchEvent_ContractExpired")
    p.chain("IntermediateCatchEvent_CallOffReceived", "Task_CheckRemainingQuantity", "Gateway_QuantityLeft")
    p.flow("Gateway_QuantityLeft", "Gateway_ReadyForCallOff", "Yes", "${callOff.quantity <= contractItem.openQuantity}")
    p.flow("Gateway_QuantityLeft", "Task_RaiseContractQuantity", "No", default=True)
    p.flow("Task_RaiseContractQuantity", "Gateway_ReadyForCallOff")
    p.flow("Gateway_ReadyForCallOff", "Task_CreateCallOffOrder")
    p.flow("Task_CreateCallOffOrder", "Gateway_ContractOpen", back=True)
    p.chain("IntermediateCatchEvent_ContractExpired", "Task_CloseSalesContract", "EndEvent_ContractClosed")
    p.message("Task_SendContractConfirmation", "Customer", "Contract confirmation")
    p.message("Customer", "IntermediateCatchEvent_CallOffReceived", "Call-off")
    return p


@process
def customer_returns() -> Proc:
    p = Proc(
        "customer-returns.bpmn",
        "Process_CustomerReturns",
        "Customer returns with credit memo",
        "Customer Returns (BDD)",
        "A customer wants to return goods. Customer service checks the original invoice and "
        "creates a returns order, which needs approval above a value limit, and sends the return "
        "authorisation. The warehouse receives the goods, quality inspects them and decides "
        "whether they go back into stock or are scrapped; billing creates and posts the credit "
        "memo.",
        lanes=[
            ("CustomerService", "Customer Service"),
            ("Warehouse", "Warehouse"),
            ("Quality", "Quality Inspection"),
            ("Billing", "Billing"),
        ],
        partners=[("Customer", "Customer", "top")],
        first="Task_CheckOriginalInvoice",
        last="Task_PostCreditMemoToAccounting",
    )
    p.start("StartEvent_ReturnRequested", "Customer asks to return goods", "CustomerService", event="message")
    p.user(
        "Task_CheckOriginalInvoice",
        "Check the original invoice",
        "CustomerService",
        "Find the invoice for the goods and check quantity and price the customer paid.",
        [R(BILL, "A_BillingDocumentItem", "`BillingQuantity`, `NetAmount` of the invoiced item")],
    )
    p.user(
        "Task_CreateReturnsOrder",
        "Create the returns order",
        "CustomerService",
        "Create the returns order with reference to the invoice, with the return reason and "
        "whether the customer gets a credit or a replacement.",
        [
            W(RET, "A_CustomerReturn", "`ReferenceSDDocument` = invoice, `SDDocumentReason`"),
            W(RET, "A_CustomerReturnItem", "`ReturnReason`, `ReturnsRefundType`"),
        ],
    )
    p.xor("Gateway_ReturnNeedsApproval", "Return value above the approval limit?", "CustomerService")
    p.user(
        "Task_ApproveReturnsOrder",
        "Approve the returns order",
        "CustomerService",
        "The customer service lead approves or rejects returns above the value limit.",
        [W(RET, "A_CustomerReturn", "`releaseApprovalRequest` or `rejectApprovalRequest`")],
        row=1,
    )
    p.xor("Gateway_ReturnApproved", "Approved?", "CustomerService", row=1)
    p.end("EndEvent_ReturnRefused", "Return refused", "CustomerService", row=1)
    p.xor("Gateway_ReturnAccepted", "", "CustomerService")
    p.send(
        "Task_SendReturnAuthorization",
        "Send the return authorisation",
        "CustomerService",
        "Send the customer the return authorisation to put with the goods.",
        [R(RET, "A_CustomerReturn", "returns order number and items for the document")],
    )
    p.catch("IntermediateCatchEvent_GoodsArrived", "Returned goods arrive", "Warehouse", event="message")
    p.user(
        "Task_PostReturnsGoodsReceipt",
        "Post the goods receipt for the returned goods",
        "Warehouse",
        "Count the returned goods and post them into returns stock against the returns order.",
        [
            W(
                MATDOC,
                "A_MaterialDocumentHeader",
                "goods receipt into returns stock, items via "
                "`to_MaterialDocumentItem` with movement type 651 and the returns delivery as reference "
                "(nearest A2X support; see the doc)",
            )
        ],
    )
    p.user(
        "Task_InspectReturnedGoods",
        "Inspect the returned goods",
        "Quality",
        "Inspect the goods and record the inspection result on the returns order item.",
        [W(RET, "A_CustomerReturnItem", "`RetMatlInspResultCode`, `CustRetItmFollowUpActivity`")],
    )
    p.xor("Gateway_GoodsResellable", "Goods can be resold?", "Quality")
    p.user(
        "Task_PutBackIntoStock",
        "Move the goods back into sellable stock",
        "Warehouse",
        "Transfer the goods from returns stock to unrestricted stock.",
        [
            W(
                MATDOC,
                "A_MaterialDocumentHeader",
                "transfer posting, items via `to_MaterialDocumentItem` with movement type 453",
            )
        ],
        shift=0,
    )
    p.user(
        "Task_ScrapReturnedGoods",
        "Scrap the returned goods",
        "Warehouse",
        "Post the scrapping of damaged goods from returns stock.",
        [
            W(
                MATDOC,
                "A_MaterialDocumentHeader",
                "scrapping, items via `to_MaterialDocumentItem` with movement type 551",
            )
        ],
        row=1,
    )
    p.xor("Gateway_DispositionDone", "", "Warehouse")
    p.service(
        "Task_CreateCreditMemo",
        "Create the credit memo",
        "Billing",
        "Create the credit memo from the returns order for the refunded items.",
        [W(BILL4, "BillingDocument", "`CreateFromSDDocument` with the returns order as reference")],
    )
    p.service(
        "Task_PostCreditMemoToAccounting",
        "Post the credit memo to accounting",
        "Billing",
        "Release the credit memo to accounting so the customer's account is credited.",
        [W(BILL4, "BillingDocument", "`PostToAccounting`")],
    )
    p.end("EndEvent_CustomerCredited", "Customer credited", "Billing")
    p.chain(
        "StartEvent_ReturnRequested",
        "Task_CheckOriginalInvoice",
        "Task_CreateReturnsOrder",
        "Gateway_ReturnNeedsApproval",
    )
    p.flow(
        "Gateway_ReturnNeedsApproval",
        "Task_ApproveReturnsOrder",
        "Yes",
        "${customerReturn.TotalNetAmount > approvalLimit}",
    )
    p.flow("Gateway_ReturnNeedsApproval", "Gateway_ReturnAccepted", "No", default=True)
    p.flow("Task_ApproveReturnsOrder", "Gateway_ReturnApproved")
    p.flow("Gateway_ReturnApproved", "Gateway_ReturnAccepted", "Yes", "${approvalDecision == 'release'}")
    p.flow("Gateway_ReturnApproved", "EndEvent_ReturnRefused", "No", default=True)
    p.chain(
        "Gateway_ReturnAccepted",
        "Task_SendReturnAuthorization",
        "IntermediateCatchEvent_GoodsArrived",
        "Task_PostReturnsGoodsReceipt",
        "Task_InspectReturnedGoods",
        "Gateway_GoodsResellable",
    )
    p.flow("Gateway_GoodsResellable", "Task_PutBackIntoStock", "Yes", "${inspection.goodsResellable}")
    p.flow("Gateway_GoodsResellable", "Task_ScrapReturnedGoods", "No", default=True)
    p.flow("Task_PutBackIntoStock", "Gateway_DispositionDone")
    p.flow("Task_ScrapReturnedGoods", "Gateway_DispositionDone")
    p.chain(
        "Gateway_DispositionDone",
        "Task_CreateCreditMemo",
        "Task_PostCreditMemoToAccounting",
        "EndEvent_CustomerCredited",
    )
    p.message("Customer", "StartEvent_ReturnRequested", "Return request")
    p.message("Task_SendReturnAuthorization", "Customer", "Return authorisation")
    return p


@process
def credit_memo() -> Proc:
    p = Proc(
        "credit-memo-processing.bpmn",
        "Process_CreditMemoProcessing",
        "Credit memo for a price complaint",
        "Credit Memo Processing (1EZ)",
        "A customer disputes the price on an invoice. Customer service compares the invoiced price "
        "with the agreed price. A justified complaint becomes a credit memo request, approved by "
        "sales management above a limit; billing creates the credit memo, posts it and sends it. "
        "An unjustified complaint is answered with an explanation.",
        lanes=[
            ("CustomerService", "Customer Service"),
            ("SalesManagement", "Sales Management"),
            ("Billing", "Billing"),
        ],
        partners=[("Customer", "Customer", "top")],
        first="Task_ReviewDisputedInvoice",
        last="Task_SendCreditMemo",
    )
    p.start("StartEvent_PriceComplaint", "Customer disputes an invoiced price", "CustomerService", event="message")
    p.user(
        "Task_ReviewDisputedInvoice",
        "Review the disputed invoice",
        "CustomerService",
        "Open the invoice and look at the price conditions that were applied to the item.",
        [R(BILL, "A_BillingDocumentItemPrcgElmnt", "`ConditionType`, `ConditionRateValue` on the invoice item")],
    )
    p.user(
        "Task_CheckAgreedPrice",
        "Check the price agreed with the customer",
        "CustomerService",
        "Look up the price condition record that was valid on the pricing date.",
        [R(PRICE, "A_SlsPrcgConditionRecord", "`ConditionRateValue` valid at the pricing date")],
    )
    p.xor("Gateway_ComplaintJustified", "Complaint justified?", "CustomerService")
    p.send(
        "Task_ExplainPriceToCustomer",
        "Explain the invoiced price",
        "CustomerService",
        "Write to the customer why the invoiced price is correct.",
        [R(BILL, "A_BillingDocument", "invoice number, date and `TotalNetAmount`")],
        row=1,
    )
    p.end("EndEvent_ComplaintAnswered", "Complaint answered", "CustomerService", row=1)
    p.user(
        "Task_CreateCreditMemoRequest",
        "Create the credit memo request",
        "CustomerService",
        "Create a credit memo request with reference to the invoice for the price difference; "
        "it is blocked for billing until released.",
        [
            W(
                CMR,
                "A_CreditMemoRequest",
                "`ReferenceSDDocument` = invoice, `SDDocumentReason`, `HeaderBillingBlockReason`",
            ),
            W(CMR, "A_CreditMemoRequestItem", "credited quantity and amount"),
        ],
    )
    p.xor("Gateway_CreditNeedsApproval", "Credit above the approval limit?", "CustomerService", shift=1)
    p.user(
        "Task_ApproveCreditMemoRequest",
        "Approve the credit memo request",
        "SalesManagement",
        "The sales manager approves or rejects credits above the limit.",
        [W(CMR, "A_CreditMemoRequest", "`releaseApprovalRequest` or `rejectApprovalRequest`")],
    )
    p.xor("Gateway_CreditApproved", "Approved?", "SalesManagement")
    p.end("EndEvent_CreditRefused", "Credit refused", "SalesManagement", row=1)
    p.xor("Gateway_CreditCleared", "", "CustomerService")
    p.user(
        "Task_RemoveBillingBlock",
        "Remove the billing block",
        "CustomerService",
        "Remove the billing block from the credit memo request so that billing can credit the customer.",
        [W(CMR, "A_CreditMemoRequest", "clear `HeaderBillingBlockReason`")],
    )
    p.service(
        "Task_CreateCreditMemo",
        "Create the credit memo",
        "Billing",
        "Create the credit memo from the released credit memo request.",
        [W(BILL4, "BillingDocument", "`CreateFromSDDocument` with the credit memo request")],
    )
    p.service(
        "Task_PostCreditMemo",
        "Post the credit memo to accounting",
        "Billing",
        "Release the credit memo to accounting so the customer's receivable is reduced.",
        [W(BILL4, "BillingDocument", "`PostToAccounting`")],
    )
    p.send(
        "Task_SendCreditMemo",
        "Send the credit memo",
        "Billing",
        "Send the credit memo as PDF to the customer.",
        [R(BILL, "A_BillingDocument", "`GetPDF`")],
    )
    p.end("EndEvent_CustomerCredited", "Customer credited", "Billing")
    p.chain(
        "StartEvent_PriceComplaint", "Task_ReviewDisputedInvoice", "Task_CheckAgreedPrice", "Gateway_ComplaintJustified"
    )
    p.flow("Gateway_ComplaintJustified", "Task_CreateCreditMemoRequest", "Yes", "${invoicedPrice > agreedPrice}")
    p.flow("Gateway_ComplaintJustified", "Task_ExplainPriceToCustomer", "No", default=True)
    p.flow("Task_ExplainPriceToCustomer", "EndEvent_ComplaintAnswered")
    p.flow("Task_CreateCreditMemoRequest", "Gateway_CreditNeedsApproval")
    p.flow(
        "Gateway_CreditNeedsApproval",
        "Task_ApproveCreditMemoRequest",
        "Yes",
        "${creditMemoRequest.TotalNetAmount > approvalLimit}",
    )
    p.flow("Gateway_CreditNeedsApproval", "Gateway_CreditCleared", "No", default=True)
    p.flow("Task_ApproveCreditMemoRequest", "Gateway_CreditApproved")
    p.flow("Gateway_CreditApproved", "Gateway_CreditCleared", "Yes", "${approvalDecision == 'release'}")
    p.flow("Gateway_CreditApproved", "EndEvent_CreditRefused", "No", default=True)
    p.chain(
        "Gateway_CreditCleared",
        "Task_RemoveBillingBlock",
        "Task_CreateCreditMemo",
        "Task_PostCreditMemo",
        "Task_SendCreditMemo",
        "EndEvent_CustomerCredited",
    )
    p.message("Customer", "StartEvent_PriceComplaint", "Complaint")
    p.message("Task_SendCreditMemo", "Customer", "Credit memo")
    return p


@process
def procure_to_pay() -> Proc:
    p = Proc(
        "procure-to-pay.bpmn",
        "Process_ProcureToPay",
        "Procure to pay: direct materials",
        "Procurement of Direct Materials (J45)",
        "Production planning needs a component. A purchase requisition is created and given a "
        "source of supply, a new supplier is onboarded first, and purchasing orders the material. "
        "The supplier's shipping notification becomes an inbound delivery on which the warehouse "
        "posts the goods receipt, while accounts payable enters the supplier invoice. The invoice "
        "is matched against order and goods receipt, posted, and after the payment run accounts "
        "payable confirms that it was cleared.",
        lanes=[
            ("Planning", "Production Planning"),
            ("Purchasing", "Purchasing"),
            ("Warehouse", "Warehouse"),
            ("AccountsPayable", "Accounts Payable"),
        ],
        partners=[("Supplier", "Supplier", "bottom")],
        first="Task_CreatePurchaseRequisition",
        last="Task_ConfirmInvoicePaid",
    )
    p.start("StartEvent_ShortageIdentified", "Component shortage identified", "Planning")
    p.user(
        "Task_CreatePurchaseRequisition",
        "Create the purchase requisition",
        "Planning",
        "Request the component with quantity, plant and the date production needs it.",
        [
            W(PR, "A_PurchaseRequisitionHeader", "items by deep insert via `to_PurchaseReqnItem`"),
            W(PR, "A_PurchaseRequisitionItem", "`Material`, `RequestedQuantity`, `Plant`, `DeliveryDate`"),
        ],
    )
    p.user(
        "Task_AssignSourceOfSupply",
        "Assign a source of supply",
        "Purchasing",
        "Find the supplier and price from the purchasing info records and assign the supplier to the requisition item.",
        [
            R(INFOREC, "A_PurchasingInfoRecord", "`Supplier` and `Material` of valid info records"),
            W(PR, "A_PurchaseRequisitionItem", "`FixedSupplier`"),
        ],
    )
    p.xor("Gateway_SupplierReady", "Supplier set up for purchasing?", "Purchasing")
    p.call(
        "CallActivity_OnboardSupplier",
        "Onboard the new supplier",
        "Purchasing",
        "Run supplier onboarding (Process_SupplierOnboarding) before the first order.",
        [W(BP, "A_BusinessPartner", "new business partner in the supplier role; see Process_SupplierOnboarding")],
        "Process_SupplierOnboarding",
        row=1,
    )
    p.xor("Gateway_SupplierAvailable", "", "Purchasing")
    p.user(
        "Task_CreatePurchaseOrder",
        "Create the purchase order",
        "Purchasing",
        "Convert the requisition into a purchase order with the supplier's price and the delivery date.",
        [
            W(PO, "A_PurchaseOrder", "`Supplier`, `PurchasingOrganization`; items via `to_PurchaseOrderItem`"),
            W(
                PO,
                "A_PurchaseOrderItem",
                "`PurchaseRequisition`, `PurchaseRequisitionItem`, `OrderQuantity`, `NetPriceAmount`",
            ),
        ],
    )
    p.send(
        "Task_SendPurchaseOrder",
        "Send the purchase order to the supplier",
        "Purchasing",
        "Send the purchase order document to the supplier.",
        [R(PO, "A_PurchaseOrder", "`GetPDF` or `GetOutputBinaryData` for the order document")],
    )
    p.par("Gateway_AwaitGoodsAndInvoice", "Warehouse")
    p.catch(
        "IntermediateCatchEvent_ShippingNotification", "Shipping notification received", "Warehouse", event="message"
    )
    p.user(
        "Task_CreateInboundDelivery",
        "Create the inbound delivery",
        "Warehouse",
        "Record the supplier's shipping notification as an inbound delivery for the purchase order items.",
        [W(IBD, "A_InbDeliveryHeader", "`DeliveryDocumentBySupplier`, `DeliveryDate`, `Supplier`")],
    )
    p.user(
        "Task_PostGoodsReceipt",
        "Post the goods receipt",
        "Warehouse",
        "Count the delivered goods, correct the delivered quantity where it differs and post the goods receipt.",
        [W(IBD, "A_InbDeliveryItem", "`ActualDeliveryQuantity`"), W(IBD, "A_InbDeliveryHeader", "`PostGoodsReceipt`")],
    )
    p.catch(
        "IntermediateCatchEvent_InvoiceReceived",
        "Supplier invoice received",
        "AccountsPayable",
        event="message",
        shift=1,
    )
    p.user(
        "Task_EnterSupplierInvoice",
        "Enter the supplier invoice",
        "AccountsPayable",
        "Enter the invoice with reference to the purchase order: gross amount, tax and invoice date.",
        [
            W(
                SINV,
                "A_SupplierInvoice",
                "`SupplierInvoiceIDByInvcgParty`, `InvoiceGrossAmount`, PO reference via `to_SuplrInvcItemPurOrdRef`",
            )
        ],
    )
    p.par("Gateway_GoodsAndInvoiceIn", "AccountsPayable")
    with p.sub(
        "SubProcess_VerifyInvoice",
        "Verify and post the invoice",
        "AccountsPayable",
        "Match the invoice against the purchase order and the goods receipt, clarify variances and post it.",
    ):
        p.start("StartEvent_InvoiceToVerify", "Invoice to verify", "AccountsPayable")
        p.rule(
            "Task_MatchInvoice",
            "Match invoice, order and goods receipt",
            "AccountsPayable",
            "Compare quantity and price on the invoice with the purchase order item and the quantity received.",
            [
                R(PO, "A_PurchaseOrderItem", "`OrderQuantity`, `NetPriceAmount`"),
                R(
                    MATDOC,
                    "A_MaterialDocumentItem",
                    "goods receipt quantity per `PurchaseOrder` and `PurchaseOrderItem`",
                ),
            ],
        )
        p.xor("Gateway_WithinTolerance", "Within tolerance?", "AccountsPayable")
        p.user(
            "Task_ClarifyVariance",
            "Clarify the variance with purchasing",
            "AccountsPayable",
            "Ask the buyer whether the price or quantity difference is agreed.",
            [R(PO, "A_PurOrdPricingElement", "agreed price conditions of the order item")],
            row=0,
        )
        p.xor("Gateway_VarianceSettled", "", "AccountsPayable")
        p.user(
            "Task_PostSupplierInvoice",
            "Post the supplier invoice",
            "AccountsPayable",
            "Post the invoice so the payable is recorded and the invoice becomes due.",
            [W(SINV, "A_SupplierInvoice", "`Post`")],
        )
        p.end("EndEvent_InvoicePosted", "Invoice posted", "AccountsPayable")
    p.catch(
        "IntermediateCatchEvent_PaymentRunDate",
        "Payment run date reached",
        "AccountsPayable",
        event="timer",
        timer=("timeCycle", "R/P1W"),
    )
    p.user(
        "Task_ConfirmInvoicePaid",
        "Confirm that the invoice was paid",
        "AccountsPayable",
        "Check that the payment run cleared the supplier's open item for this invoice.",
        [R(GLITEM, "GLAccountLineItem", "`Supplier`, `ClearingDate`, `ClearingAccountingDocument`")],
    )
    p.end("EndEvent_SupplierPaid", "Supplier paid", "AccountsPayable")
    p.chain(
        "StartEvent_ShortageIdentified",
        "Task_CreatePurchaseRequisition",
        "Task_AssignSourceOfSupply",
        "Gateway_SupplierReady",
    )
    p.flow("Gateway_SupplierReady", "Gateway_SupplierAvailable", "Yes", "${supplier.PurchasingIsBlocked == false}")
    p.flow("Gateway_SupplierReady", "CallActivity_OnboardSupplier", "No", default=True)
    p.flow("CallActivity_OnboardSupplier", "Gateway_SupplierAvailable")
    p.chain(
        "Gateway_SupplierAvailable",
        "Task_CreatePurchaseOrder",
        "Task_SendPurchaseOrder",
        "Gateway_AwaitGoodsAndInvoice",
    )
    p.flow("Gateway_AwaitGoodsAndInvoice", "IntermediateCatchEvent_ShippingNotification")
    p.flow("Gateway_AwaitGoodsAndInvoice", "IntermediateCatchEvent_InvoiceReceived")
    p.chain(
        "IntermediateCatchEvent_ShippingNotification",
        "Task_CreateInboundDelivery",
        "Task_PostGoodsReceipt",
        "Gateway_GoodsAndInvoiceIn",
    )
    p.chain("IntermediateCatchEvent_InvoiceReceived", "Task_EnterSupplierInvoice", "Gateway_GoodsAndInvoiceIn")
    p.chain(
        "Gateway_GoodsAndInvoiceIn",
        "SubProcess_VerifyInvoice",
        "IntermediateCatchEvent_PaymentRunDate",
        "Task_ConfirmInvoicePaid",
        "EndEvent_SupplierPaid",
    )
    p.chain("StartEvent_InvoiceToVerify", "Task_MatchInvoice", "Gateway_WithinTolerance")
    p.flow("Gateway_WithinTolerance", "Gateway_VarianceSettled", "Yes", "${invoice.varianceWithinTolerance}")
    p.flow("Gateway_WithinTolerance", "Task_ClarifyVariance", "No", default=True)
    p.flow("Task_ClarifyVariance", "Gateway_VarianceSettled")
    p.chain("Gateway_VarianceSettled", "Task_PostSupplierInvoice", "EndEvent_InvoicePosted")
    p.message("Task_SendPurchaseOrder", "Supplier", "Purchase order")
    p.message("Supplier", "IntermediateCatchEvent_ShippingNotification", "Shipping notification")
    p.message("Supplier", "IntermediateCatchEvent_InvoiceReceived", "Invoice")
    return p


@process
def supplier_invoice() -> Proc:
    p = Proc(
        "supplier-invoice-processing.bpmn",
        "Process_SupplierInvoiceProcessing",
        "Supplier invoice processing",
        "Accounts Payable (J60)",
        "Accounts payable receives a supplier invoice, identifies the supplier and rules out a "
        "duplicate. An invoice with a purchase order is entered against the order; an invoice "
        "without one is coded to G/L account and cost center and approved by the cost center "
        "manager. The invoice is posted, a payment block is released by the accounts payable lead, "
        "and the supplier's bank details and open items are checked before the payment run.",
        lanes=[
            ("AccountsPayable", "Accounts Payable"),
            ("CostCenterManager", "Cost Center Manager"),
            ("AccountsPayableLead", "Accounts Payable Lead"),
        ],
        partners=[("Supplier", "Supplier", "top")],
        first="Task_IdentifySupplier",
        last="Task_ReviewOpenItems",
    )
    p.start("StartEvent_InvoiceReceived", "Supplier invoice received", "AccountsPayable", event="message")
    p.user(
        "Task_IdentifySupplier",
        "Identify the supplier",
        "AccountsPayable",
        "Find the supplier and check its payment terms and that it is not blocked for posting in the company code.",
        [R(BP, "A_SupplierCompany", "`PaymentTerms`, `SupplierIsBlockedForPosting`")],
    )
    p.user(
        "Task_CheckForDuplicateInvoice",
        "Check that the invoice is not a duplicate",
        "AccountsPayable",
        "Search for an invoice of this supplier with the same reference and amount.",
        [R(SINV, "A_SupplierInvoice", "`InvoicingParty`, `SupplierInvoiceIDByInvcgParty`, `InvoiceGrossAmount`")],
    )
    p.xor("Gateway_Duplicate", "Duplicate?", "AccountsPayable")
    p.end("EndEvent_DuplicateDiscarded", "Duplicate discarded", "AccountsPayable", row=1)
    p.xor("Gateway_PurchaseOrderReference", "Refers to a purchase order?", "AccountsPayable", shift=1)
    p.user(
        "Task_EnterPurchaseOrderInvoice",
        "Enter the invoice against the purchase order",
        "AccountsPayable",
        "Enter the invoice with the purchase order items it bills.",
        [
            W(SINV, "A_SupplierInvoice", "purchase order items via `to_SuplrInvcItemPurOrdRef`"),
            R(PO, "A_PurchaseOrderItem", "open items of the referenced purchase order"),
        ],
    )
    p.user(
        "Task_EnterGLAccountInvoice",
        "Code the invoice to G/L account and cost center",
        "AccountsPayable",
        "Enter the invoice without purchase order, with the expense G/L account and the cost center for each line.",
        [
            W(SINV, "A_SupplierInvoice", "G/L lines via `to_SupplierInvoiceItemGLAcct`"),
            R(GLACC, "A_GLAccountInChartOfAccounts", "expense account exists and is not blocked"),
        ],
        row=1,
    )
    p.user(
        "Task_ApproveCostAssignment",
        "Approve the costs on the cost center",
        "CostCenterManager",
        "The cost center manager confirms that the goods or services were received and that the "
        "cost belongs on the cost center.",
        [R(SINV, "A_SupplierInvoiceItemGLAcct", "`CostCenter`, `GLAccount`, `SupplierInvoiceItemAmount`")],
    )
    p.xor("Gateway_InvoiceEntered", "", "AccountsPayable")
    p.user(
        "Task_PostSupplierInvoice",
        "Post the invoice",
        "AccountsPayable",
        "Post the invoice; price or quantity variances block it for payment.",
        [W(SINV, "A_SupplierInvoice", "`Post`; `PaymentBlockingReason` set on variances")],
    )
    p.xor("Gateway_PaymentBlocked", "Blocked for payment?", "AccountsPayable")
    p.user(
        "Task_ReleaseBlockedInvoice",
        "Release the blocked invoice",
        "AccountsPayableLead",
        "Check the reason for the block and release the invoice for payment once it is resolved.",
        [W(SINV, "A_SupplierInvoice", "`Release`")],
    )
    p.xor("Gateway_ReadyForPayment", "", "AccountsPayable")
    p.user(
        "Task_VerifySupplierBankDetails",
        "Verify the supplier's bank details",
        "AccountsPayable",
        "Check that the bank account the supplier is paid to is on file and unchanged.",
        [R(BP, "A_BusinessPartnerBank", "`IBAN`, `BankNumber`, `BankCountryKey`")],
    )
    p.user(
        "Task_ReviewOpenItems",
        "Review the supplier's open items",
        "AccountsPayable",
        "Look at the supplier's open items in the general ledger before the payment run.",
        [R(GLITEM, "GLAccountLineItem", "`Supplier`, open items without `ClearingDate`")],
    )
    p.end("EndEvent_ReadyForPaymentRun", "Invoice ready for the payment run", "AccountsPayable")
    p.chain("StartEvent_InvoiceReceived", "Task_IdentifySupplier", "Task_CheckForDuplicateInvoice", "Gateway_Duplicate")
    p.flow("Gateway_Duplicate", "EndEvent_DuplicateDiscarded", "Yes", "${duplicateFound}")
    p.flow("Gateway_Duplicate", "Gateway_PurchaseOrderReference", "No", default=True)
    p.flow(
        "Gateway_PurchaseOrderReference", "Task_EnterPurchaseOrderInvoice", "Yes", "${invoice.purchaseOrder != null}"
    )
    p.flow("Gateway_PurchaseOrderReference", "Task_EnterGLAccountInvoice", "No", default=True)
    p.flow("Task_EnterPurchaseOrderInvoice", "Gateway_InvoiceEntered")
    p.chain("Task_EnterGLAccountInvoice", "Task_ApproveCostAssignment", "Gateway_InvoiceEntered")
    p.chain("Gateway_InvoiceEntered", "Task_PostSupplierInvoice", "Gateway_PaymentBlocked")
    p.flow("Gateway_PaymentBlocked", "Task_ReleaseBlockedInvoice", "Yes", "${invoice.PaymentBlockingReason != ''}")
    p.flow("Gateway_PaymentBlocked", "Gateway_ReadyForPayment", "No", default=True)
    p.flow("Task_ReleaseBlockedInvoice", "Gateway_ReadyForPayment")
    p.chain(
        "Gateway_ReadyForPayment",
        "Task_VerifySupplierBankDetails",
        "Task_ReviewOpenItems",
        "EndEvent_ReadyForPaymentRun",
    )
    p.message("Supplier", "StartEvent_InvoiceReceived", "Invoice")
    return p


@process
def supplier_price() -> Proc:
    p = Proc(
        "supplier-price-maintenance.bpmn",
        "Process_SupplierPriceMaintenance",
        "Supplier price list and info record maintenance",
        "source-of-supply master data for J45 (no scope item id cited)",
        "A supplier sends a new price list. Purchasing checks the supplier, finds the purchasing "
        "info record of each product, has price increases above the threshold approved, updates "
        "or creates the info record and adjusts open purchase orders that still carry the old "
        "price.",
        lanes=[("Purchasing", "Purchasing"), ("PurchasingManager", "Purchasing Manager")],
        partners=[("Supplier", "Supplier", "top")],
        first="Task_CheckSupplierStatus",
        last="Task_UpdateOpenPurchaseOrders",
    )
    p.start("StartEvent_PriceListReceived", "New price list received", "Purchasing", event="message")
    p.user(
        "Task_CheckSupplierStatus",
        "Check the supplier's purchasing data",
        "Purchasing",
        "Check that the supplier is not blocked for purchasing in the purchasing organisation "
        "and note its order currency and payment terms.",
        [R(BP, "A_SupplierPurchasingOrg", "`PurchasingIsBlockedForSupplier`, `PurchaseOrderCurrency`, `PaymentTerms`")],
    )
    p.user(
        "Task_FindInfoRecord",
        "Find the purchasing info record",
        "Purchasing",
        "Look up the info record of the supplier and product and the current price.",
        [
            R(INFOREC, "A_PurchasingInfoRecord", "`Supplier`, `Material`"),
            R(INFOREC, "A_PurInfoRecdPrcgCndn", "current `ConditionRateValue`"),
        ],
    )
    p.xor("Gateway_PriceIncrease", "Increase above 5 %?", "Purchasing")
    p.user(
        "Task_ApprovePriceIncrease",
        "Approve the price increase",
        "PurchasingManager",
        "The purchasing manager checks the increase against the market and the contract and "
        "approves it or sends purchasing back to negotiate.",
        [R(INFOREC, "A_PurgInfoRecdOrgPlantData", "`NetPriceAmount` and `MinimumPurchaseOrderQuantity` today")],
    )
    p.xor("Gateway_PriceAccepted", "", "Purchasing")
    p.xor("Gateway_InfoRecordExists", "Info record exists?", "Purchasing")
    p.user(
        "Task_UpdateInfoRecordPrice",
        "Enter the new price in the info record",
        "Purchasing",
        "Add the new price with its validity period to the info record.",
        [
            W(
                INFOREC,
                "A_PurInfoRecdPrcgCndnValidity",
                "new `ConditionValidityStartDate` and `ConditionValidityEndDate`",
            ),
            W(INFOREC, "A_PurInfoRecdPrcgCndn", "`ConditionRateValue`"),
        ],
    )
    p.user(
        "Task_CreateInfoRecord",
        "Create the info record",
        "Purchasing",
        "Create an info record for a product the supplier did not offer before, with its "
        "purchasing organisation and plant data.",
        [
            W(INFOREC, "A_PurchasingInfoRecord", "`Supplier`, `Material`, `SupplierMaterialNumber`"),
            W(INFOREC, "A_PurgInfoRecdOrgPlantData", "`NetPriceAmount`, `StandardPurchaseOrderQuantity`"),
        ],
        row=1,
    )
    p.xor("Gateway_InfoRecordMaintained", "", "Purchasing")
    p.user(
        "Task_FindOpenPurchaseOrders",
        "Find open orders at the old price",
        "Purchasing",
        "List the supplier's open purchase order items for the product whose delivery date "
        "falls into the new validity period.",
        [R(PO, "A_PurchaseOrderItem", "`Material`, `NetPriceAmount`, `IsCompletelyDelivered`")],
    )
    p.xor("Gateway_OpenOrdersFound", "Open orders affected?", "Purchasing")
    p.user(
        "Task_UpdateOpenPurchaseOrders",
        "Update the price in open orders",
        "Purchasing",
        "Change the net price on the affected open purchase order items.",
        [W(PO, "A_PurchaseOrderItem", "`NetPriceAmount`")],
        row=1,
    )
    p.xor("Gateway_OrdersChecked", "", "Purchasing")
    p.end("EndEvent_PricesUpdated", "Prices updated", "Purchasing")
    p.chain("StartEvent_PriceListReceived", "Task_CheckSupplierStatus", "Task_FindInfoRecord", "Gateway_PriceIncrease")
    p.flow(
        "Gateway_PriceIncrease",
        "Task_ApprovePriceIncrease",
        "Yes",
        "${(newPrice - currentPrice) / currentPrice > 0.05}",
    )
    p.flow("Gateway_PriceIncrease", "Gateway_PriceAccepted", "No", default=True)
    p.chain("Task_ApprovePriceIncrease", "Gateway_PriceAccepted", "Gateway_InfoRecordExists")
    p.flow("Gateway_InfoRecordExists", "Task_UpdateInfoRecordPrice", "Yes", "${infoRecord != null}")
    p.flow("Gateway_InfoRecordExists", "Task_CreateInfoRecord", "No", default=True)
    p.flow("Task_UpdateInfoRecordPrice", "Gateway_InfoRecordMaintained")
    p.flow("Task_CreateInfoRecord", "Gateway_InfoRecordMaintained")
    p.chain("Gateway_InfoRecordMaintained", "Task_FindOpenPurchaseOrders", "Gateway_OpenOrdersFound")
    p.flow("Gateway_OpenOrdersFound", "Task_UpdateOpenPurchaseOrders", "Yes", "${openItems.size() > 0}")
    p.flow("Gateway_OpenOrdersFound", "Gateway_OrdersChecked", "No", default=True)
    p.flow("Task_UpdateOpenPurchaseOrders", "Gateway_OrdersChecked")
    p.flow("Gateway_OrdersChecked", "EndEvent_PricesUpdated")
    p.message("Supplier", "StartEvent_PriceListReceived", "Price list")
    return p


@process
def period_end_review() -> Proc:
    p = Proc(
        "period-end-posting-review.bpmn",
        "Process_PeriodEndPostingReview",
        "Period-end posting review",
        "Accounting and Financial Close (J58)",
        "At the end of each posting period the general ledger accountant makes sure that all "
        "operational documents reached accounting: billing posts invoices that are still waiting "
        "for accounting and accounts payable releases blocked supplier invoices, in parallel. "
        "Then the journal entries of the period are reviewed, and controlling checks the postings "
        "on cost centers and internal orders.",
        lanes=[
            ("GeneralLedger", "General Ledger"),
            ("Billing", "Billing"),
            ("AccountsPayable", "Accounts Payable"),
            ("Controlling", "Controlling"),
        ],
        first="Task_CheckCompanyCodeSettings",
        last="Task_ReviewInternalOrders",
    )
    p.start(
        "StartEvent_PeriodEnd",
        "Last working day of the period",
        "GeneralLedger",
        event="timer",
        timer=("timeCycle", "R/P1M"),
    )
    p.user(
        "Task_CheckCompanyCodeSettings",
        "Check the company code and fiscal year variant",
        "GeneralLedger",
        "Confirm currency, fiscal year variant and chart of accounts of the company code whose period is being closed.",
        [R(COCODE, "A_CompanyCode", "`Currency`, `FiscalYearVariant`, `ChartOfAccounts`")],
    )
    p.par("Gateway_StartChecks", "GeneralLedger")
    p.user(
        "Task_FindUnpostedBillingDocuments",
        "Find invoices not yet in accounting",
        "Billing",
        "List the period's billing documents whose accounting posting status is not complete.",
        [R(BILL, "A_BillingDocument", "`AccountingPostingStatus`, `BillingDocumentDate`")],
    )
    p.xor("Gateway_UnpostedInvoices", "Any found?", "Billing")
    p.service(
        "Task_PostBillingDocuments",
        "Post them to accounting",
        "Billing",
        "Release the waiting billing documents to accounting.",
        [W(BILL4, "BillingDocument", "`PostToAccounting`")],
        row=1,
    )
    p.xor("Gateway_BillingDone", "", "Billing")
    p.user(
        "Task_ReviewBlockedSupplierInvoices",
        "Review blocked and parked supplier invoices",
        "AccountsPayable",
        "List supplier invoices of the period that are parked or blocked for payment.",
        [R(SINV, "A_SupplierInvoice", "`SupplierInvoiceStatus`, `PaymentBlockingReason`, `PostingDate`")],
    )
    p.xor("Gateway_InvoicesToRelease", "Any to release?", "AccountsPayable")
    p.user(
        "Task_ReleaseSupplierInvoices",
        "Release or post them",
        "AccountsPayable",
        "Release the invoices whose block reason is resolved and post the parked ones that are complete.",
        [W(SINV, "A_SupplierInvoice", "`Release`, `Post`")],
        row=1,
    )
    p.xor("Gateway_PayablesDone", "", "AccountsPayable")
    p.par("Gateway_ChecksDone", "GeneralLedger")
    p.user(
        "Task_ReviewJournalEntries",
        "Review the period's journal entries",
        "GeneralLedger",
        "Go through the journal entry items of the period by G/L account and look for unusual amounts and accounts.",
        [
            R(JE, "A_JournalEntryItemBasic", "`FiscalYearPeriod`, `GLAccount`, `AmountInCompanyCodeCurrency`"),
            R(GLACC, "A_GLAccountInChartOfAccounts", "`GLAccountType`, account names"),
        ],
    )
    p.user(
        "Task_ReviewCostCenterPostings",
        "Review the cost center postings",
        "Controlling",
        "Compare the period's costs per cost center with expectations and find postings on the wrong cost center.",
        [
            R(GLITEM, "GLAccountLineItem", "`CostCenter`, `FiscalPeriod`, amounts"),
            R(CC, "A_CostCenter", "`CostCenterCategory`, `CostCtrResponsiblePersonName`"),
        ],
    )
    p.user(
        "Task_ReviewInternalOrders",
        "Review the internal order balances",
        "Controlling",
        "Check that the internal orders of the period carry the expected costs.",
        [R(IORDER, "A_InternalOrder", "`InternalOrder`, `OrderType`, `ResponsibleCostCenter`")],
    )
    p.end("EndEvent_PeriodReviewed", "Period reviewed", "Controlling")
    p.chain("StartEvent_PeriodEnd", "Task_CheckCompanyCodeSettings", "Gateway_StartChecks")
    p.flow("Gateway_StartChecks", "Task_FindUnpostedBillingDocuments")
    p.flow("Gateway_StartChecks", "Task_ReviewBlockedSupplierInvoices")
    p.flow("Task_FindUnpostedBillingDocuments", "Gateway_UnpostedInvoices")
    p.flow("Gateway_UnpostedInvoices", "Task_PostBillingDocuments", "Yes", "${unposted.size() > 0}")
    p.flow("Gateway_UnpostedInvoices", "Gateway_BillingDone", "No", default=True)
    p.flow("Task_PostBillingDocuments", "Gateway_BillingDone")
    p.flow("Gateway_BillingDone", "Gateway_ChecksDone")
    p.flow("Task_ReviewBlockedSupplierInvoices", "Gateway_InvoicesToRelease")
    p.flow("Gateway_InvoicesToRelease", "Task_ReleaseSupplierInvoices", "Yes", "${releasable.size() > 0}")
    p.flow("Gateway_InvoicesToRelease", "Gateway_PayablesDone", "No", default=True)
    p.flow("Task_ReleaseSupplierInvoices", "Gateway_PayablesDone")
    p.flow("Gateway_PayablesDone", "Gateway_ChecksDone")
    p.chain(
        "Gateway_ChecksDone",
        "Task_ReviewJournalEntries",
        "Task_ReviewCostCenterPostings",
        "Task_ReviewInternalOrders",
        "EndEvent_PeriodReviewed",
    )
    return p


@process
def make_to_stock() -> Proc:
    p = Proc(
        "make-to-stock-production.bpmn",
        "Process_MakeToStockProduction",
        "Make-to-stock production",
        "Make-to-Stock Production - Discrete Manufacturing (BJ5)",
        "Each week production planning compares stock with demand and creates production orders "
        "for the finished products, using the valid production version. Missing components are "
        "requested from purchasing; when they are available the order is released, the "
        "warehouse issues the components, the shop floor confirms the operations, the finished "
        "goods are received into stock and the order is technically completed.",
        lanes=[("Planning", "Production Planning"), ("Warehouse", "Warehouse"), ("ShopFloor", "Shop Floor Supervisor")],
        first="Task_ReviewStockSituation",
        last="Task_TechnicallyCompleteOrder",
    )
    p.start(
        "StartEvent_WeeklyPlanning",
        "Weekly production planning",
        "Planning",
        event="timer",
        timer=("timeCycle", "R/P1W"),
    )
    p.user(
        "Task_ReviewStockSituation",
        "Review stock of the finished products",
        "Planning",
        "Compare unrestricted stock of each finished product with the planned demand to decide what to produce.",
        [R(STOCK, "A_MatlStkInAcctMod", "`MatlWrhsStkQtyInMatlBaseUnit` by `Plant`")],
    )
    p.user(
        "Task_CheckProductionVersion",
        "Check the production version and BOM",
        "Planning",
        "Make sure a valid production version with bill of material and routing exists for the lot size and date.",
        [
            R(
                PVERS,
                "ProductionVersion",
                "`ValidityStartDate`, `ValidityEndDate`, `ProductionVersionLock`, `BOMCheckStatus`",
            ),
            R(BOM, "MaterialBOM", "BOM header of the production version"),
        ],
    )
    p.user(
        "Task_CreateProductionOrder",
        "Create the production order",
        "Planning",
        "Create the production order for the product, plant, quantity and basic dates.",
        [W(PRODORD, "A_ProductionOrder_2", "`Material`, `ProductionPlant`, `TotalQuantity`, `ProductionVersion`")],
    )
    p.xor("Gateway_CheckAgain", "", "Planning")
    p.user(
        "Task_CheckComponentAvailability",
        "Check the component availability",
        "Planning",
        "Check for every component of the order whether the required quantity is available on the requirement date.",
        [
            R(
                PRODORD,
                "A_ProductionOrderComponent_4",
                "`RequiredQuantity`, `WithdrawnQuantity`, `MatlCompRequirementDate`",
            )
        ],
    )
    p.xor("Gateway_ComponentsAvailable", "All components available?", "Planning")
    p.user(
        "Task_RequestMissingComponents",
        "Request the missing components",
        "Planning",
        "Create a purchase requisition for the components that are short.",
        [W(PR, "A_PurchaseRequisitionHeader", "requisition for the missing components")],
        row=1,
    )
    p.catch(
        "IntermediateCatchEvent_ComponentsDue",
        "Components due",
        "Planning",
        event="timer",
        timer=("timeDate", "${requisitionItem.DeliveryDate}"),
        row=1,
    )
    p.user(
        "Task_ReleaseProductionOrder",
        "Release the production order",
        "Planning",
        "Release the order so that the shop papers can be printed and goods movements posted.",
        [W(PRODORD, "A_ProductionOrder_2", "`ReleaseOrder`")],
    )
    p.user(
        "Task_IssueComponents",
        "Stage and issue the components",
        "Warehouse",
        "Pick the components listed on the order and post the goods issue to the order.",
        [
            R(PRODORD, "A_ProductionOrderComponent_4", "`Reservation`, `ReservationItem`, `StorageLocation`"),
            W(
                MATDOC,
                "A_MaterialDocumentHeader",
                "goods issue to the order, items via `to_MaterialDocumentItem` with movement type 261",
            ),
        ],
    )
    p.user(
        "Task_CheckOperationConfirmations",
        "Check that all operations are confirmed",
        "ShopFloor",
        "Check per operation that the confirmed yield matches the order quantity and that the "
        "actual execution dates are recorded before the goods receipt.",
        [
            R(
                PRODORD,
                "A_ProductionOrderOperation_2",
                "`OperationIsConfirmed`, `OpTotalConfirmedYieldQty`, `OpActualExecutionEndDate`",
            )
        ],
    )
    p.user(
        "Task_PostGoodsReceiptForOrder",
        "Post the goods receipt for the order",
        "Warehouse",
        "Receive the finished products into stock against the production order.",
        [
            W(
                MATDOC,
                "A_MaterialDocumentHeader",
                "goods receipt, items via `to_MaterialDocumentItem` with movement type 101 and the manufacturing order",
            )
        ],
    )
    p.user(
        "Task_TechnicallyCompleteOrder",
        "Technically complete the order",
        "Planning",
        "Set the order to technically complete so that open reservations are removed and the order can be settled.",
        [W(PRODORD, "A_ProductionOrder_2", "`TechlyCmpltOrder`")],
    )
    p.end("EndEvent_ProductsInStock", "Products in stock", "Planning")
    p.chain(
        "StartEvent_WeeklyPlanning",
        "Task_ReviewStockSituation",
        "Task_CheckProductionVersion",
        "Task_CreateProductionOrder",
        "Gateway_CheckAgain",
        "Task_CheckComponentAvailability",
        "Gateway_ComponentsAvailable",
    )
    p.flow("Gateway_ComponentsAvailable", "Task_ReleaseProductionOrder", "Yes", "${missingComponents.size() == 0}")
    p.flow("Gateway_ComponentsAvailable", "Task_RequestMissingComponents", "No", default=True)
    p.flow("Task_RequestMissingComponents", "IntermediateCatchEvent_ComponentsDue")
    p.flow("IntermediateCatchEvent_ComponentsDue", "Gateway_CheckAgain", back=True)
    p.chain(
        "Task_ReleaseProductionOrder",
        "Task_IssueComponents",
        "Task_CheckOperationConfirmations",
        "Task_PostGoodsReceiptForOrder",
        "Task_TechnicallyCompleteOrder",
        "EndEvent_ProductsInStock",
    )
    return p


@process
def reactive_maintenance() -> Proc:
    p = Proc(
        "reactive-maintenance.bpmn",
        "Process_ReactiveMaintenance",
        "Reactive maintenance: notification to completion",
        "Reactive Maintenance (4HH)",
        "An operator reports a malfunction of a machine. The maintenance planner screens the "
        "notification and, if repair is needed, creates a maintenance order with operations and "
        "spare parts; orders above the cost limit are approved by the supervisor. The released "
        "order is carried out by the technician, who withdraws the parts and records damage and "
        "cause. The planner completes order and notification, and the supervisor reviews the "
        "costs.",
        lanes=[
            ("Operations", "Production Operator"),
            ("Planner", "Maintenance Planner"),
            ("Supervisor", "Maintenance Supervisor"),
            ("Technician", "Maintenance Technician"),
        ],
        first="Task_ReportMalfunction",
        last="Task_ReviewMaintenanceCosts",
    )
    p.start("StartEvent_MalfunctionObserved", "Malfunction observed", "Operations")
    p.user(
        "Task_ReportMalfunction",
        "Report the malfunction",
        "Operations",
        "Identify the machine by its equipment number and create a maintenance notification "
        "describing the malfunction and its effect on production.",
        [
            R(EQUI, "Equipment", "`Equipment`, `FunctionalLocation` of the machine"),
            W(MNOTIF, "MaintenanceNotification", "`NotificationText`, `TechnicalObject`, `MaintPriority`"),
        ],
    )
    p.user(
        "Task_ScreenNotification",
        "Screen the notification",
        "Planner",
        "Read the notification and decide whether a repair order is needed.",
        [R(MNOTIF, "MaintenanceNotification", "`MaintNotificationLongText`, `MaintPriority`")],
    )
    p.xor("Gateway_RepairNeeded", "Repair needed?", "Planner")
    p.user(
        "Task_CloseNotificationWithoutOrder",
        "Close the notification without repair",
        "Planner",
        "Complete the notification when no work is needed, with a note for the operator.",
        [W(MNOTIF, "MaintenanceNotification", "`CompleteMaintNotification`")],
        row=1,
    )
    p.end("EndEvent_NoRepair", "No repair needed", "Planner", row=1)
    p.user(
        "Task_CreateMaintenanceOrder",
        "Create the maintenance order",
        "Planner",
        "Create a corrective maintenance order for the machine with reference to the notification.",
        [
            W(
                MORDER,
                "MaintenanceOrder",
                "`MaintenanceNotification`, `Equipment`, `MaintenanceOrderType`, `MaintPriority`",
            )
        ],
    )
    p.user(
        "Task_PlanOperationsAndParts",
        "Plan the operations and spare parts",
        "Planner",
        "Describe the work steps with work center and planned hours, and list the spare parts the repair needs.",
        [
            W(
                MORDER,
                "MaintenanceOrderOperation",
                "operations added through the order's "
                "to_MaintenanceOrderOperation navigation; planned work per operation",
            ),
            W(MORDER, "MaintOrderOpComponent", "spare parts per operation (updatable; added through the operation)"),
        ],
    )
    p.xor("Gateway_CostAboveLimit", "Estimated cost above the limit?", "Planner")
    p.user(
        "Task_ApproveMaintenanceOrder",
        "Approve the maintenance order",
        "Supervisor",
        "The maintenance supervisor approves orders whose estimated cost exceeds the limit.",
        [W(MORDER, "MaintenanceOrder", "`ApproveMaintenanceOrder` after `SubmitMaintOrderForApproval`")],
    )
    p.xor("Gateway_OrderApproved", "", "Planner")
    p.user(
        "Task_ReleaseMaintenanceOrder",
        "Release the maintenance order",
        "Planner",
        "Release the order so that the technician can start and parts can be withdrawn.",
        [W(MORDER, "MaintenanceOrder", "`ReleaseMaintenanceOrder`")],
    )
    with p.sub(
        "SubProcess_CarryOutRepair",
        "Carry out the repair",
        "Technician",
        "The technician takes the parts from the store, repairs the machine and records what was found.",
    ):
        p.start("StartEvent_RepairStarted", "Order released", "Technician")
        p.user(
            "Task_WithdrawSpareParts",
            "Withdraw the spare parts",
            "Technician",
            "Take the reserved spare parts from the store and post the goods issue to the order.",
            [
                W(
                    MATDOC,
                    "A_MaterialDocumentHeader",
                    "goods issue to the maintenance order, items via `to_MaterialDocumentItem` with movement type 261",
                )
            ],
        )
        p.user(
            "Task_RecordDamageAndCause",
            "Record the damage and its cause",
            "Technician",
            "Record on the notification which part was damaged, the damage code and the cause.",
            [
                W(MNOTIF, "MaintenanceNotificationItem", "damage code per object part"),
                W(MNOTIF, "MaintNotificationItemCause", "cause code and text"),
            ],
        )
        p.end("EndEvent_RepairDone", "Machine repaired", "Technician")
    p.user(
        "Task_SetOrderTechnicallyComplete",
        "Technically complete the order",
        "Planner",
        "Set the order to technically complete once the work is done.",
        [W(MORDER, "MaintenanceOrder", "`SetMaintOrdToTechCompleted`")],
    )
    p.user(
        "Task_CompleteNotification",
        "Complete the notification",
        "Planner",
        "Complete the notification so the malfunction history of the machine is closed.",
        [W(MNOTIF, "MaintenanceNotification", "`CompleteMaintNotification`")],
    )
    p.user(
        "Task_ReviewMaintenanceCosts",
        "Review the planned and actual costs",
        "Supervisor",
        "Compare the actual costs of the order with the plan.",
        [R(MORDER, "MaintOrderActlPlndCostItmSet", "actual and planned costs per cost element")],
    )
    p.end("EndEvent_MaintenanceCompleted", "Maintenance completed", "Supervisor")
    p.chain(
        "StartEvent_MalfunctionObserved", "Task_ReportMalfunction", "Task_ScreenNotification", "Gateway_RepairNeeded"
    )
    p.flow("Gateway_RepairNeeded", "Task_CreateMaintenanceOrder", "Yes", "${repairNeeded}")
    p.flow("Gateway_RepairNeeded", "Task_CloseNotificationWithoutOrder", "No", default=True)
    p.flow("Task_CloseNotificationWithoutOrder", "EndEvent_NoRepair")
    p.chain("Task_CreateMaintenanceOrder", "Task_PlanOperationsAndParts", "Gateway_CostAboveLimit")
    p.flow("Gateway_CostAboveLimit", "Task_ApproveMaintenanceOrder", "Yes", "${order.estimatedCost > approvalLimit}")
    p.flow("Gateway_CostAboveLimit", "Gateway_OrderApproved", "No", default=True)
    p.flow("Task_ApproveMaintenanceOrder", "Gateway_OrderApproved")
    p.chain(
        "Gateway_OrderApproved",
        "Task_ReleaseMaintenanceOrder",
        "SubProcess_CarryOutRepair",
        "Task_SetOrderTechnicallyComplete",
        "Task_CompleteNotification",
        "Task_ReviewMaintenanceCosts",
        "EndEvent_MaintenanceCompleted",
    )
    p.chain("StartEvent_RepairStarted", "Task_WithdrawSpareParts", "Task_RecordDamageAndCause", "EndEvent_RepairDone")
    return p


@process
def technical_objects() -> Proc:
    p = Proc(
        "technical-object-setup.bpmn",
        "Process_TechnicalObjectSetup",
        "Technical object set-up for a new machine",
        "technical object master data for 4HH (no scope item id cited)",
        "A new machine is delivered to a plant. The maintenance planner finds or creates the "
        "functional location where it is installed; technical master data creates the equipment "
        "and, in parallel, classifies it, records the supplier's warranty and assigns the "
        "responsible partners; finally the equipment is installed at the functional location.",
        lanes=[("Planner", "Maintenance Planner"), ("MasterData", "Technical Master Data")],
        first="Task_CheckPlant",
        last="Task_InstallEquipment",
    )
    p.start("StartEvent_MachineDelivered", "New machine delivered", "Planner")
    p.user(
        "Task_CheckPlant",
        "Check the maintenance plant",
        "Planner",
        "Confirm the plant where the machine stands and who plans its maintenance.",
        [R(PLANT, "A_Plant", "`Plant`, `PlantName`")],
    )
    p.user(
        "Task_FindFunctionalLocation",
        "Find the functional location",
        "Planner",
        "Look for the functional location (line, station) where the machine will be installed.",
        [R(FLOC, "FunctionalLocation", "`FunctionalLocation`, `MaintenancePlant`")],
    )
    p.xor("Gateway_LocationExists", "Functional location exists?", "Planner")
    p.user(
        "Task_CreateFunctionalLocation",
        "Create the functional location",
        "MasterData",
        "Create the functional location in the plant's structure.",
        [W(FLOC, "FunctionalLocation", "`FunctionalLocation`, `FunctionalLocationName`, `MaintenancePlant`")],
    )
    p.xor("Gateway_LocationReady", "", "Planner")
    p.user(
        "Task_CreateEquipment",
        "Create the equipment",
        "MasterData",
        "Create the equipment master record with manufacturer, model, serial number and start-up date.",
        [W(EQUI, "Equipment", "`EquipmentName`, `ManufacturerPartTypeName`, `ManufacturerSerialNumber`")],
        shift=1,
    )
    p.par("Gateway_EnrichEquipment", "MasterData")
    p.user(
        "Task_ClassifyEquipment",
        "Classify the equipment",
        "MasterData",
        "Assign the equipment class and fill in its technical characteristics.",
        [
            W(EQUI, "EquipmentClass", "class assignment"),
            W(EQUI, "EquipClassCharacteristicValue", "characteristic values"),
        ],
        row=1,
    )
    p.user(
        "Task_RecordWarranty",
        "Record the supplier warranty",
        "MasterData",
        "Enter the warranty the machine supplier grants, with start and end date.",
        [W(EQUI, "EquipmentWarranty", "`WarrantyStartDate`, `WarrantyEndDate`")],
        row=0,
    )
    p.user(
        "Task_AssignResponsiblePartners",
        "Assign the responsible partners",
        "MasterData",
        "Name the people and the supplier responsible for the machine.",
        [W(EQUI, "EquipmentPartner", "`PartnerFunction`, `Partner`")],
        row=2,
    )
    p.par("Gateway_EquipmentComplete", "MasterData")
    p.user(
        "Task_InstallEquipment",
        "Install the equipment at the functional location",
        "Planner",
        "Install the equipment at its functional location so that notifications and orders "
        "find it in the plant structure.",
        [W(EQUI, "Equipment", "`InstallEquipment` at the `FunctionalLocation`")],
    )
    p.end("EndEvent_MachineReady", "Machine ready for maintenance", "Planner")
    p.chain("StartEvent_MachineDelivered", "Task_CheckPlant", "Task_FindFunctionalLocation", "Gateway_LocationExists")
    p.flow("Gateway_LocationExists", "Gateway_LocationReady", "Yes", "${functionalLocation != null}")
    p.flow("Gateway_LocationExists", "Task_CreateFunctionalLocation", "No", default=True)
    p.flow("Task_CreateFunctionalLocation", "Gateway_LocationReady")
    p.chain("Gateway_LocationReady", "Task_CreateEquipment", "Gateway_EnrichEquipment")
    for t in ("Task_ClassifyEquipment", "Task_RecordWarranty", "Task_AssignResponsiblePartners"):
        p.flow("Gateway_EnrichEquipment", t)
        p.flow(t, "Gateway_EquipmentComplete")
    p.chain("Gateway_EquipmentComplete", "Task_InstallEquipment", "EndEvent_MachineReady")
    return p


@process
def production_master_data() -> Proc:
    p = Proc(
        "bom-and-production-version.bpmn",
        "Process_ProductionMasterDataSetup",
        "Bill of material and production version set-up",
        "production master data for BJ5 (no scope item id cited)",
        "Product engineering releases a new product design. Engineering checks that the "
        "components exist in the plant, creates the material bill of material, explodes and "
        "corrects it until it is right and assigns it to further plants; production planning "
        "creates the production version and the product's work scheduling data.",
        lanes=[("Engineering", "Product Engineering"), ("Planning", "Production Planning")],
        first="Task_CheckComponentProducts",
        last="Task_MaintainWorkScheduling",
    )
    p.start("StartEvent_DesignReleased", "Product design released", "Engineering")
    p.user(
        "Task_CheckComponentProducts",
        "Check that the components exist in the plant",
        "Engineering",
        "Make sure every component of the design has plant data in the producing plant.",
        [R(PROD, "A_ProductPlant", "`Product`, `Plant`, `ProcurementType`")],
    )
    p.user(
        "Task_CreateMaterialBOM",
        "Create the bill of material",
        "Engineering",
        "Create the production bill of material of the product with its component items and quantities.",
        [
            W(BOM, "MaterialBOM", "`Material`, `Plant`, `BillOfMaterialVariantUsage`"),
            W(
                BOM,
                "MaterialBOMItem",
                "`BillOfMaterialComponent`, `BillOfMaterialItemQuantity`, `BillOfMaterialItemCategory`",
            ),
        ],
    )
    p.xor("Gateway_CheckBOMAgain", "", "Engineering")
    p.user(
        "Task_ExplodeAndCheckBOM",
        "Explode and check the bill of material",
        "Engineering",
        "Explode the bill of material for the lot size and check components and quantities.",
        [R(BOM, "MaterialBOMItem", "items returned by `ExplodeBOM`")],
    )
    p.xor("Gateway_BOMCorrect", "Bill of material correct?", "Engineering")
    p.user(
        "Task_CorrectBOMItems",
        "Correct the bill of material items",
        "Engineering",
        "Correct the quantity, item category or component of the wrong items.",
        [W(BOM, "MaterialBOMItem", "`BillOfMaterialItemQuantity`, `BillOfMaterialComponent`")],
        row=1,
    )
    p.xor("Gateway_MorePlants", "Produced in further plants?", "Engineering")
    p.user(
        "Task_AssignBOMToPlants",
        "Assign the bill of material to further plants",
        "Engineering",
        "Assign the same bill of material to the other plants that produce the product.",
        [W(BOM, "MaterialBOM", "`AssignPlant`")],
        row=1,
    )
    p.xor("Gateway_PlantsDone", "", "Engineering")
    p.user(
        "Task_CreateProductionVersion",
        "Create the production version",
        "Planning",
        "Combine the bill of material and the routing into a production version with its "
        "validity period and lot size range.",
        [
            W(
                PVERS,
                "ProductionVersion",
                "`ProductionVersion`, `BillOfMaterialVariant`, `BillOfOperationsGroup`, `ValidityStartDate`",
            )
        ],
    )
    p.user(
        "Task_MaintainWorkScheduling",
        "Maintain the product's work scheduling data",
        "Planning",
        "Set the production scheduler and in-house production time on the product's plant data.",
        [W(PROD, "A_ProductWorkScheduling", "`ProductionSupervisor`, `ProductionInvtryManagedLoc`")],
    )
    p.end("EndEvent_ReadyForProduction", "Product ready for production", "Planning")
    p.chain(
        "StartEvent_DesignReleased",
        "Task_CheckComponentProducts",
        "Task_CreateMaterialBOM",
        "Gateway_CheckBOMAgain",
        "Task_ExplodeAndCheckBOM",
        "Gateway_BOMCorrect",
    )
    p.flow("Gateway_BOMCorrect", "Gateway_MorePlants", "Yes", "${bomCheck.passed}")
    p.flow("Gateway_BOMCorrect", "Task_CorrectBOMItems", "No", default=True)
    p.flow("Task_CorrectBOMItems", "Gateway_CheckBOMAgain", back=True)
    p.flow("Gateway_MorePlants", "Task_AssignBOMToPlants", "Yes", "${otherPlants.size() > 0}")
    p.flow("Gateway_MorePlants", "Gateway_PlantsDone", "No", default=True)
    p.flow("Task_AssignBOMToPlants", "Gateway_PlantsDone")
    p.chain(
        "Gateway_PlantsDone",
        "Task_CreateProductionVersion",
        "Task_MaintainWorkScheduling",
        "EndEvent_ReadyForProduction",
    )
    return p


@process
def customer_onboarding() -> Proc:
    p = Proc(
        "customer-onboarding.bpmn",
        "Process_CustomerOnboarding",
        "Business partner onboarding: customer",
        "business partner master data for BD9 (no scope item id cited)",
        "Sales asks for a new customer. Master data checks for an existing business partner, "
        "creates one or adds the customer role, and records the tax number. Finance creates the "
        "company code data, sales the sales area data and credit management the credit standing, "
        "in parallel. Master data then records the bank account and releases the customer for "
        "orders.",
        lanes=[
            ("Sales", "Sales"),
            ("MasterData", "Master Data"),
            ("Finance", "Finance"),
            ("CreditManagement", "Credit Management"),
        ],
        first="Task_CheckForExistingPartner",
        last="Task_ReleaseCustomerForOrders",
    )
    p.start("StartEvent_CustomerRequested", "New customer wants to order", "Sales")
    p.user(
        "Task_CheckForExistingPartner",
        "Check whether the business partner exists",
        "MasterData",
        "Search business partners by name, address and tax number to avoid a duplicate.",
        [R(BP, "A_BusinessPartner", "`BusinessPartnerFullName`, `SearchTerm1`")],
    )
    p.xor("Gateway_PartnerExists", "Business partner exists?", "MasterData")
    p.user(
        "Task_AddCustomerRole",
        "Add the customer role",
        "MasterData",
        "Give the existing business partner (for example a supplier) the customer role.",
        [W(BP, "A_BusinessPartnerRole", "`BusinessPartnerRole` FLCU00 and FLCU01")],
    )
    p.user(
        "Task_CreateBusinessPartner",
        "Create the business partner",
        "MasterData",
        "Create the organisation with name, address and the customer roles.",
        [
            W(
                BP,
                "A_BusinessPartner",
                "`BusinessPartnerCategory` 2 (organisation), `OrganizationBPName1`; roles via `to_BusinessPartnerRole`",
            ),
            W(BP, "A_BusinessPartnerAddress", "`StreetName`, `PostalCode`, `CityName`, `Country`"),
        ],
        row=1,
    )
    p.xor("Gateway_PartnerReady", "", "MasterData")
    p.user(
        "Task_RecordTaxNumber",
        "Record the tax number",
        "MasterData",
        "Record the customer's VAT registration number.",
        [W(BP, "A_BusinessPartnerTaxNumber", "`BPTaxType`, `BPTaxNumber`")],
    )
    p.par("Gateway_SplitAreas", "MasterData")
    p.user(
        "Task_CreateCustomerSalesArea",
        "Create the sales area data",
        "Sales",
        "Enter the customer's data for the sales organisation, distribution channel and "
        "division: customer group, price group, shipping and payment terms.",
        [
            W(
                BP,
                "A_CustomerSalesArea",
                "`SalesOrganization`, `DistributionChannel`, `Division`, `CustomerGroup`, `CustomerPaymentTerms`",
            ),
            R(SORG, "A_SalesOrganization", "valid sales organisations and their company code"),
        ],
    )
    p.user(
        "Task_CreateCustomerCompanyData",
        "Create the company code data",
        "Finance",
        "Enter the reconciliation account, payment terms and dunning data of the customer in the company code.",
        [W(BP, "A_CustomerCompany", "`CompanyCode`, `ReconciliationAccount`, `PaymentTerms`")],
    )
    p.user(
        "Task_RecordCreditStanding",
        "Record the credit standing",
        "CreditManagement",
        "Record the credit rating from the credit agency for the new customer.",
        [W(BP, "A_BPCreditWorthiness", "`CreditRatingAgency`, `BPCreditStandingRating`, `BPCreditStandingDate`")],
    )
    p.par("Gateway_AreasDone", "MasterData")
    p.user(
        "Task_RecordBankAccount",
        "Record the customer's bank account",
        "MasterData",
        "Check that the bank exists and record the customer's bank account for direct debits and refunds.",
        [
            R(BANK, "Bank", "`BankCountry`, `BankInternalID` of the customer's bank"),
            W(BP, "A_BusinessPartnerBank", "`IBAN`, `BankCountryKey`, `BankNumber`"),
        ],
    )
    p.user(
        "Task_ReleaseCustomerForOrders",
        "Release the customer for orders",
        "MasterData",
        "Remove the order block that new customers get until their data is complete.",
        [W(BP, "A_Customer", "`OrderIsBlockedForCustomer` cleared")],
    )
    p.end("EndEvent_CustomerReady", "Customer ready for orders", "MasterData")
    p.chain("StartEvent_CustomerRequested", "Task_CheckForExistingPartner", "Gateway_PartnerExists")
    p.flow("Gateway_PartnerExists", "Task_AddCustomerRole", "Yes", "${partner != null}")
    p.flow("Gateway_PartnerExists", "Task_CreateBusinessPartner", "No", default=True)
    p.flow("Task_AddCustomerRole", "Gateway_PartnerReady")
    p.flow("Task_CreateBusinessPartner", "Gateway_PartnerReady")
    p.chain("Gateway_PartnerReady", "Task_RecordTaxNumber", "Gateway_SplitAreas")
    for t in ("Task_CreateCustomerSalesArea", "Task_CreateCustomerCompanyData", "Task_RecordCreditStanding"):
        p.flow("Gateway_SplitAreas", t)
        p.flow(t, "Gateway_AreasDone")
    p.chain("Gateway_AreasDone", "Task_RecordBankAccount", "Task_ReleaseCustomerForOrders", "EndEvent_CustomerReady")
    return p


@process
def supplier_onboarding() -> Proc:
    p = Proc(
        "supplier-onboarding.bpmn",
        "Process_SupplierOnboarding",
        "Business partner onboarding: supplier",
        "business partner master data for J45 and J60 (no scope item id cited)",
        "Purchasing selects a new supplier. Master data checks for an existing business partner, "
        "creates one or adds the supplier role and records the tax numbers. Accounts payable "
        "verifies the bank (creating the bank master if it is new) and records the supplier's "
        "bank account; then accounts payable creates the company code data and purchasing the "
        "purchasing organisation data, in parallel. Purchasing finally releases the supplier.",
        lanes=[("Purchasing", "Purchasing"), ("MasterData", "Master Data"), ("AccountsPayable", "Accounts Payable")],
        first="Task_CheckForExistingPartner",
        last="Task_ReleaseSupplier",
    )
    p.start("StartEvent_SupplierSelected", "New supplier selected", "Purchasing")
    p.user(
        "Task_CheckForExistingPartner",
        "Check whether the business partner exists",
        "MasterData",
        "Search business partners by name and tax number to avoid a duplicate supplier.",
        [R(BP, "A_BusinessPartner", "`BusinessPartnerFullName`, `SearchTerm1`")],
    )
    p.xor("Gateway_PartnerExists", "Business partner exists?", "MasterData")
    p.user(
        "Task_AddSupplierRole",
        "Add the supplier role",
        "MasterData",
        "Give the existing business partner the supplier roles.",
        [W(BP, "A_BusinessPartnerRole", "`BusinessPartnerRole` FLVN00 and FLVN01")],
    )
    p.user(
        "Task_CreateBusinessPartner",
        "Create the business partner",
        "MasterData",
        "Create the organisation with name, address and the supplier roles.",
        [
            W(
                BP,
                "A_BusinessPartner",
                "`BusinessPartnerCategory` 2, `OrganizationBPName1`; roles via `to_BusinessPartnerRole`",
            ),
            W(BP, "A_BusinessPartnerAddress", "`StreetName`, `PostalCode`, `CityName`, `Country`"),
        ],
        row=1,
    )
    p.xor("Gateway_PartnerReady", "", "MasterData")
    p.user(
        "Task_RecordTaxNumbers",
        "Record the tax numbers",
        "MasterData",
        "Record the supplier's VAT registration and national tax numbers.",
        [W(BP, "A_BusinessPartnerTaxNumber", "`BPTaxType`, `BPTaxNumber`")],
    )
    p.user(
        "Task_CheckSupplierBank",
        "Check the supplier's bank",
        "AccountsPayable",
        "Look up the bank of the supplier's account by country and bank key.",
        [R(BANK, "Bank", "`BankCountry`, `BankInternalID`, `SWIFTCode`")],
    )
    p.xor("Gateway_BankKnown", "Bank known?", "AccountsPayable")
    p.user(
        "Task_CreateBankMaster",
        "Create the bank master record",
        "AccountsPayable",
        "Create the bank with its SWIFT code and address.",
        [W(BANK, "Bank", "`BankCountry`, `BankInternalID`, `LongBankName`, `SWIFTCode`; address via `_BankAddress`")],
        row=1,
    )
    p.xor("Gateway_BankReady", "", "AccountsPayable")
    p.user(
        "Task_RecordBankAccount",
        "Record the supplier's bank account",
        "AccountsPayable",
        "Record the account the supplier is to be paid to.",
        [W(BP, "A_BusinessPartnerBank", "`IBAN`, `BankCountryKey`, `BankNumber`, `BankAccountHolderName`")],
    )
    p.par("Gateway_SplitAreas", "AccountsPayable")
    p.user(
        "Task_CreateSupplierCompanyData",
        "Create the company code data",
        "AccountsPayable",
        "Enter reconciliation account, payment terms and payment methods in the company code.",
        [W(BP, "A_SupplierCompany", "`CompanyCode`, `ReconciliationAccount`, `PaymentTerms`, `PaymentMethodsList`")],
        row=1,
    )
    p.user(
        "Task_CreatePurchasingData",
        "Create the purchasing organisation data",
        "Purchasing",
        "Enter order currency, incoterms and purchasing payment terms for the purchasing organisation.",
        [
            W(
                BP,
                "A_SupplierPurchasingOrg",
                "`PurchasingOrganization`, `PurchaseOrderCurrency`, `IncotermsClassification`",
            )
        ],
    )
    p.par("Gateway_AreasDone", "Purchasing")
    p.user(
        "Task_ReleaseSupplier",
        "Release the supplier for purchasing",
        "Purchasing",
        "Remove the purchasing block that new suppliers get until their data is checked.",
        [W(BP, "A_Supplier", "`PurchasingIsBlocked` cleared")],
    )
    p.end("EndEvent_SupplierReady", "Supplier ready", "Purchasing")
    p.chain("StartEvent_SupplierSelected", "Task_CheckForExistingPartner", "Gateway_PartnerExists")
    p.flow("Gateway_PartnerExists", "Task_AddSupplierRole", "Yes", "${partner != null}")
    p.flow("Gateway_PartnerExists", "Task_CreateBusinessPartner", "No", default=True)
    p.flow("Task_AddSupplierRole", "Gateway_PartnerReady")
    p.flow("Task_CreateBusinessPartner", "Gateway_PartnerReady")
    p.chain("Gateway_PartnerReady", "Task_RecordTaxNumbers", "Task_CheckSupplierBank", "Gateway_BankKnown")
    p.flow("Gateway_BankKnown", "Gateway_BankReady", "Yes", "${bank != null}")
    p.flow("Gateway_BankKnown", "Task_CreateBankMaster", "No", default=True)
    p.flow("Task_CreateBankMaster", "Gateway_BankReady")
    p.chain("Gateway_BankReady", "Task_RecordBankAccount", "Gateway_SplitAreas")
    for t in ("Task_CreateSupplierCompanyData", "Task_CreatePurchasingData"):
        p.flow("Gateway_SplitAreas", t)
        p.flow(t, "Gateway_AreasDone")
    p.chain("Gateway_AreasDone", "Task_ReleaseSupplier", "EndEvent_SupplierReady")
    return p


@process
def product_master() -> Proc:
    p = Proc(
        "product-master-setup.bpmn",
        "Process_ProductMasterSetup",
        "Product master set-up",
        "product master data for BD9, J45 and BJ5 (no scope item id cited)",
        "A new product is approved. Product management makes sure it does not exist yet and "
        "creates its basic data and description; production planning, sales, purchasing and "
        "finance then add their views in parallel. Customers that use their own product numbers "
        "get customer-material records, and product management releases the product.",
        lanes=[
            ("ProductManagement", "Product Management"),
            ("Planning", "Production Planning"),
            ("Sales", "Sales"),
            ("Purchasing", "Purchasing"),
            ("Finance", "Finance"),
        ],
        first="Task_CheckForExistingProduct",
        last="Task_ReleaseProduct",
    )
    p.start("StartEvent_ProductApproved", "New product approved", "ProductManagement")
    p.user(
        "Task_CheckForExistingProduct",
        "Check that the product does not exist yet",
        "ProductManagement",
        "Search products by description, product group and old number.",
        [R(PROD, "A_Product", "`ProductGroup`, `ProductOldID`")],
    )
    p.user(
        "Task_CreateProductBasicData",
        "Create the product with its basic data",
        "ProductManagement",
        "Create the product with product type, base unit, product group, weights and the "
        "descriptions in the company's languages.",
        [
            W(PROD, "A_Product", "`ProductType`, `BaseUnit`, `ProductGroup`, `GrossWeight`"),
            W(PROD, "A_ProductDescription", "`Language`, `ProductDescription`"),
        ],
    )
    p.par("Gateway_SplitViews", "ProductManagement")
    p.user(
        "Task_MaintainPlantData",
        "Maintain the plant and MRP data",
        "Planning",
        "Extend the product to the producing plant with MRP type, lot size and planning times.",
        [
            W(PROD, "A_ProductPlant", "`Plant`, `MRPType`, `MRPResponsible`, `ProcurementType`"),
            W(PROD, "A_ProductSupplyPlanning", "`LotSizingProcedure`, `PlannedDeliveryDurationInDays`"),
        ],
    )
    p.user(
        "Task_MaintainSalesData",
        "Maintain the sales data",
        "Sales",
        "Extend the product to the sales organisation and distribution channel with the "
        "item category group and minimum order quantity.",
        [
            W(
                PROD,
                "A_ProductSalesDelivery",
                "`ProductSalesOrg`, `ProductDistributionChnl`, `ItemCategoryGroup`, `MinimumOrderQuantity`",
            )
        ],
    )
    p.user(
        "Task_MaintainPurchasingData",
        "Maintain the purchasing data",
        "Purchasing",
        "Allow automatic purchase orders and require a source list for the product in the plant.",
        [W(PROD, "A_ProductPlantProcurement", "`IsAutoPurOrdCreationAllowed`, `IsSourceListRequired`")],
    )
    p.user(
        "Task_MaintainValuationData",
        "Maintain the valuation data",
        "Finance",
        "Set valuation class, price control and standard price for the valuation area.",
        [W(PROD, "A_ProductValuation", "`ValuationClass`, `InventoryValuationProcedure`, `StandardPrice`")],
    )
    p.par("Gateway_ViewsDone", "ProductManagement")
    p.xor("Gateway_CustomerNumbers", "Customers use own product numbers?", "ProductManagement")
    p.user(
        "Task_MaintainCustomerMaterial",
        "Record the customers' product numbers",
        "Sales",
        "Record, per customer, the customer's own number and description for the product.",
        [W(CUSTMAT, "A_CustomerMaterial", "`Customer`, `MaterialByCustomer`, `MaterialDescriptionByCustomer`")],
        row=1,
    )
    p.xor("Gateway_CustomerNumbersDone", "", "ProductManagement")
    p.user(
        "Task_ReleaseProduct",
        "Release the product for use",
        "ProductManagement",
        "Set the cross-plant status that allows purchasing, production and sales of the product.",
        [W(PROD, "A_Product", "`CrossPlantStatus`, `CrossPlantStatusValidityDate`")],
    )
    p.end("EndEvent_ProductReady", "Product ready", "ProductManagement")
    p.chain(
        "StartEvent_ProductApproved",
        "Task_CheckForExistingProduct",
        "Task_CreateProductBasicData",
        "Gateway_SplitViews",
    )
    for t in (
        "Task_MaintainPlantData",
        "Task_MaintainSalesData",
        "Task_MaintainPurchasingData",
        "Task_MaintainValuationData",
    ):
        p.flow("Gateway_SplitViews", t)
        p.flow(t, "Gateway_ViewsDone")
    p.flow("Gateway_ViewsDone", "Gateway_CustomerNumbers")
    p.flow("Gateway_CustomerNumbers", "Task_MaintainCustomerMaterial", "Yes", "${customersWithOwnNumbers.size() > 0}")
    p.flow("Gateway_CustomerNumbers", "Gateway_CustomerNumbersDone", "No", default=True)
    p.flow("Task_MaintainCustomerMaterial", "Gateway_CustomerNumbersDone")
    p.chain("Gateway_CustomerNumbersDone", "Task_ReleaseProduct", "EndEvent_ProductReady")
    return p


@process
def sales_pricing() -> Proc:
    p = Proc(
        "sales-price-maintenance.bpmn",
        "Process_SalesPriceMaintenance",
        "Sales pricing conditions maintenance",
        "sales price conditions for BD9 and BDG (no scope item id cited)",
        "Sales management asks for a price change. The pricing specialist checks the current "
        "condition records and the customer's price group, the sales manager checks the margin "
        "against the standard cost and approves, and the specialist changes the existing record "
        "or creates a new one, adds quantity scales where needed and informs the sales team.",
        lanes=[("Pricing", "Pricing Specialist"), ("SalesManagement", "Sales Management")],
        first="Task_CheckCurrentPrices",
        last="Task_InformSalesTeam",
    )
    p.start("StartEvent_PriceChangeRequested", "Price change requested", "Pricing")
    p.user(
        "Task_CheckCurrentPrices",
        "Check the current price conditions",
        "Pricing",
        "List the condition records for the product and customer with their validity.",
        [
            R(
                PRICE,
                "A_SlsPrcgCndnRecdValidity",
                "`ConditionType`, `Material`, `Customer`, `ConditionValidityStartDate`, `ConditionValidityEndDate`",
            )
        ],
    )
    p.user(
        "Task_CheckCustomerPriceGroup",
        "Check the customer's price group",
        "Pricing",
        "See which price group and pricing procedure apply to the customer in the sales area.",
        [R(BP, "A_CustomerSalesArea", "`CustomerPriceGroup`, `CustomerPricingProcedure`")],
    )
    p.user(
        "Task_ApprovePriceChange",
        "Approve the price change",
        "SalesManagement",
        "Check that the new price still covers the product's standard cost and approve it.",
        [R(PROD, "A_ProductValuation", "`StandardPrice`, `PriceUnitQty`")],
    )
    p.xor("Gateway_PriceApproved", "Approved?", "SalesManagement")
    p.end("EndEvent_PriceChangeRejected", "Price change rejected", "SalesManagement", row=1)
    p.xor("Gateway_RecordExists", "Condition record exists for the period?", "Pricing")
    p.user(
        "Task_ChangeConditionRecord",
        "Change the existing price",
        "Pricing",
        "Change the amount of the existing condition record and shorten its validity if the new price starts later.",
        [
            W(PRICE, "A_SlsPrcgConditionRecord", "`ConditionRateValue`"),
            W(PRICE, "A_SlsPrcgCndnRecdValidity", "`ConditionValidityEndDate`"),
        ],
    )
    p.user(
        "Task_CreateConditionRecord",
        "Create a new price condition record",
        "Pricing",
        "Create the condition record with condition type, key fields, amount and validity period.",
        [
            W(
                PRICE,
                "A_SlsPrcgConditionRecord",
                "`ConditionType`, `ConditionRateValue`; key and validity via `to_SlsPrcgCndnRecdValidity`",
            )
        ],
        row=1,
    )
    p.xor("Gateway_RecordMaintained", "", "Pricing")
    p.xor("Gateway_NeedsScales", "Price depends on quantity?", "Pricing")
    p.user(
        "Task_MaintainPriceScales",
        "Maintain the quantity scales",
        "Pricing",
        "Enter the scale quantities and the price for each scale level.",
        [W(PRICE, "A_SlsPrcgCndnRecordScale", "`ConditionScaleQuantity`, `ConditionRateValue`")],
        row=1,
    )
    p.xor("Gateway_ScalesDone", "", "Pricing")
    p.send(
        "Task_InformSalesTeam",
        "Inform the sales team of the new price",
        "Pricing",
        "Tell the sales team which price applies from which date.",
        [R(PRICE, "A_SlsPrcgConditionRecord", "new `ConditionRateValue` and validity")],
    )
    p.end("EndEvent_PriceChanged", "New price valid", "Pricing")
    p.chain(
        "StartEvent_PriceChangeRequested",
        "Task_CheckCurrentPrices",
        "Task_CheckCustomerPriceGroup",
        "Task_ApprovePriceChange",
        "Gateway_PriceApproved",
    )
    p.flow("Gateway_PriceApproved", "Gateway_RecordExists", "Yes", "${marginAboveMinimum}")
    p.flow("Gateway_PriceApproved", "EndEvent_PriceChangeRejected", "No", default=True)
    p.flow("Gateway_RecordExists", "Task_ChangeConditionRecord", "Yes", "${conditionRecord != null}")
    p.flow("Gateway_RecordExists", "Task_CreateConditionRecord", "No", default=True)
    p.flow("Task_ChangeConditionRecord", "Gateway_RecordMaintained")
    p.flow("Task_CreateConditionRecord", "Gateway_RecordMaintained")
    p.flow("Gateway_RecordMaintained", "Gateway_NeedsScales")
    p.flow("Gateway_NeedsScales", "Task_MaintainPriceScales", "Yes", "${scaleLevels.size() > 0}")
    p.flow("Gateway_NeedsScales", "Gateway_ScalesDone", "No", default=True)
    p.flow("Task_MaintainPriceScales", "Gateway_ScalesDone")
    p.chain("Gateway_ScalesDone", "Task_InformSalesTeam", "EndEvent_PriceChanged")
    return p


@process
def enterprise_project() -> Proc:
    p = Proc(
        "enterprise-project-time-recording.bpmn",
        "Process_EnterpriseProjectTimeRecording",
        "Enterprise project set-up and time recording",
        "enterprise projects and time recording (no scope item id cited)",
        "A customer project is won. The project manager creates the enterprise project with its "
        "work breakdown structure, staffs the team and releases the project. Team members record "
        "their working time on the project's work packages every week; at month end the project "
        "controller reviews the costs, and when all work is delivered the project manager closes "
        "the project.",
        lanes=[
            ("ProjectManager", "Project Manager"),
            ("Team", "Project Team Member"),
            ("Controller", "Project Controller"),
        ],
        first="Task_CheckResponsibleCostCenter",
        last="Task_CloseProject",
    )
    p.start("StartEvent_ProjectWon", "Customer project won", "ProjectManager")
    p.user(
        "Task_CheckResponsibleCostCenter",
        "Check the responsible cost center",
        "ProjectManager",
        "Find the cost center and profit center of the delivering department.",
        [R(CC, "A_CostCenter", "`CostCenter`, `ProfitCenter`, `CompanyCode`")],
    )
    p.user(
        "Task_CreateEnterpriseProject",
        "Create the enterprise project",
        "ProjectManager",
        "Create the project with its profile, dates, company code and responsible cost center.",
        [
            W(
                PROJ,
                "A_EnterpriseProject",
                "`ProjectProfileCode`, `ProjectStartDate`, `ProjectEndDate`, `ResponsibleCostCenter`",
            )
        ],
    )
    p.user(
        "Task_BuildWorkBreakdownStructure",
        "Build the work breakdown structure",
        "ProjectManager",
        "Add the phases and work packages as project elements, with planned dates.",
        [
            W(
                PROJ,
                "A_EnterpriseProjectElement",
                "`ProjectElement`, `ProjectElementDescription`, `PlannedStartDate`, `PlannedEndDate`",
            )
        ],
    )
    p.user(
        "Task_StaffProjectTeam",
        "Staff the project team",
        "ProjectManager",
        "Add the team members to the project and give each a project role.",
        [
            W(PROJ, "A_EnterpriseProjectTeamMember", "team member and role"),
            W(PROJ, "A_EnterpriseProjectRole", "`ProjectRoleType`, `ProjectRoleName`"),
        ],
    )
    p.user(
        "Task_ReleaseProject",
        "Release the project",
        "ProjectManager",
        "Release the project so that time and costs can be posted on its work packages.",
        [W(PROJ, "A_EnterpriseProject", "`ChangeEntProjProcgStatus` to released")],
    )
    p.xor("Gateway_NextWeek", "", "Team")
    p.catch(
        "IntermediateCatchEvent_EndOfWeek",
        "End of the working week",
        "Team",
        event="timer",
        timer=("timeCycle", "R/P1W"),
    )
    p.user(
        "Task_RecordWorkingTime",
        "Record the working time",
        "Team",
        "Enter the hours worked per day on the project's work packages and release the time sheet.",
        [
            W(
                TIME,
                "TimeSheetEntryCollection",
                "`TimeSheetDate`, `TimeSheetDataFields` with WBS element and hours, `TimeSheetIsReleasedOnSave`",
            ),
            R(PROJ, "A_EnterpriseProjectElement", "work packages open for time recording"),
        ],
    )
    p.xor("Gateway_MonthEnd", "Month end?", "Team")
    p.user(
        "Task_ReviewProjectCosts",
        "Review the project costs",
        "Controller",
        "Review the costs posted on the project's work packages this period against the plan.",
        [R(JE, "A_JournalEntryItemBasic", "`Project`, `WBSElement`, `FiscalYearPeriod`")],
    )
    p.xor("Gateway_WorkDelivered", "All work delivered?", "Controller")
    p.user(
        "Task_CloseProject",
        "Close the project",
        "ProjectManager",
        "Set the project to closed so that no further time or costs can be posted.",
        [W(PROJ, "A_EnterpriseProject", "`ChangeEntProjProcgStatus` to closed")],
    )
    p.end("EndEvent_ProjectClosed", "Project closed", "ProjectManager")
    p.chain(
        "StartEvent_ProjectWon",
        "Task_CheckResponsibleCostCenter",
        "Task_CreateEnterpriseProject",
        "Task_BuildWorkBreakdownStructure",
        "Task_StaffProjectTeam",
        "Task_ReleaseProject",
        "Gateway_NextWeek",
        "IntermediateCatchEvent_EndOfWeek",
        "Task_RecordWorkingTime",
        "Gateway_MonthEnd",
    )
    p.flow("Gateway_MonthEnd", "Task_ReviewProjectCosts", "Yes", "${isLastWeekOfMonth}")
    p.flow("Gateway_MonthEnd", "Gateway_NextWeek", "No", default=True, back="above")
    p.flow("Task_ReviewProjectCosts", "Gateway_WorkDelivered")
    p.flow("Gateway_WorkDelivered", "Task_CloseProject", "Yes", "${project.allWorkDelivered}")
    p.flow("Gateway_WorkDelivered", "Gateway_NextWeek", "No", default=True, back=True)
    p.flow("Task_CloseProject", "EndEvent_ProjectClosed")
    return p


if __name__ == "__main__":
    sys.exit(main())
