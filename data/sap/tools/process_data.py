"""The SAP processes as data: one YAML file per process in ``data/sap/processes-src/``.

A process file says what a process analyst would write down and nothing about drawing::

    file: order-to-cash.bpmn            # the BPMN file written from it
    id: Process_OrderToCash
    name: Order to Cash
    scope: ...                          # the SAP Best Practices scope item it follows
    doc: ...
    lanes: [{key: sales, name: Sales}, ...]
    partners: [{key: customer, name: Customer, side: top}]   # collaboration pools
    first: Task_CreateSalesOrder        # a chain the check walks with bpmn:next+
    last: Task_PostInvoice
    nodes:                              # in drawing order
      - {id: Task_CreateSalesOrder, type: userTask, name: Create sales order, lane: sales,
         doc: ..., uses: [{write: API_SALES_ORDER_SRV/A_SalesOrder, note: ...}]}
      - {id: Gateway_Credit, type: exclusiveGateway, name: Credit ok?, lane: sales}
      - {id: BoundaryEvent_Late, type: boundaryEvent, attached: Task_Ship, event: timer,
         timer: [timeDuration, P2D]}
    flows: [{from: Task_A, to: Task_B, name: ..., condition: ..., default: true, back: below}]
    messages: [{from: Task_A, to: customer, name: ...}]

Optional node keys: ``row`` and ``shift`` (layout hints: the row within the lane, extra columns
before the node), ``parent`` (the sub-process it sits in), ``event``, ``timer``, ``attached``,
``interrupting``, ``called``. A flow's id is derived from its ends, as in the BPMN files.
"""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path

import yaml
from model import Flow, Node, Proc, Use

SOURCE_DIR = Path(__file__).resolve().parents[1] / "processes-src"
_NODE_KEYS = ("row", "doc", "parent", "event", "timer", "attached", "interrupting", "called", "shift")
_DEFAULTS = {f.name: f.default for f in fields(Node) if f.name in _NODE_KEYS}


def dump(p: Proc) -> dict:
    """The process as plain data (the layout fields, all still unset, are left out)."""
    out = {
        "file": p.file,
        "id": p.id,
        "name": p.name,
        "scope": p.scope,
        "doc": p.doc,
        "lanes": [{"key": k, "name": n} for k, n in p.lanes],
        "partners": [{"key": k, "name": n, "side": s} for k, n, s in p.partners],
        "first": p.first,
        "last": p.last,
        "nodes": [_node(n) for n in p.nodes.values()],
        "flows": [_flow(f) for f in p.flows],
        "messages": [{"from": m.source, "to": m.target, "name": m.name} for m in p.messages],
    }
    return {k: v for k, v in out.items() if v not in ([], "")}


def _node(n: Node) -> dict:
    out: dict = {"id": n.id, "type": n.tag, "name": n.name, "lane": n.lane}
    for key in _NODE_KEYS:
        value = getattr(n, key)
        if value != _DEFAULTS[key]:
            out[key] = list(value) if isinstance(value, tuple) else value
    if n.uses:
        out["uses"] = [{u.mode: f"{u.service}/{u.entity_set}", **({"note": u.note} if u.note else {})} for u in n.uses]
    return out


def _flow(f: Flow) -> dict:
    out: dict = {"from": f.source, "to": f.target}
    for key in ("name", "condition", "default", "back"):
        if getattr(f, key):
            out[key] = getattr(f, key)
    return out


def load(data: dict) -> Proc:
    """A :class:`Proc` from its data, equal to the one the old builder functions made."""
    p = Proc(
        data["file"],
        data["id"],
        data["name"],
        data.get("scope", ""),
        data.get("doc", ""),
        [(lane["key"], lane["name"]) for lane in data.get("lanes", [])],
        [(x["key"], x["name"], x["side"]) for x in data.get("partners", [])],
        data.get("first", ""),
        data.get("last", ""),
    )
    for raw in data.get("nodes", []):
        extra = {k: (tuple(v) if k == "timer" else v) for k, v in raw.items() if k in _NODE_KEYS}
        node = Node(
            raw["id"], raw["type"], raw["name"], raw["lane"], uses=[_use(u) for u in raw.get("uses", [])], **extra
        )
        p._add(node)  # refuses a duplicate id or an unknown lane
    for raw in data.get("flows", []):
        flow = (raw.get("name", ""), raw.get("condition", ""), raw.get("default", False), raw.get("back", False))
        p.flow(raw["from"], raw["to"], *flow)
    for raw in data.get("messages", []):
        p.message(raw["from"], raw["to"], raw["name"])
    return p


def _use(raw: dict) -> Use:
    mode = "write" if "write" in raw else "read"
    service, _, entity_set = raw[mode].partition("/")
    return Use(service, entity_set, mode, raw.get("note", ""))


def load_all(folder: Path = SOURCE_DIR) -> list[Proc]:
    """Every process, in the order of the files' ``order`` key, then by file name."""
    docs = [yaml.safe_load(path.read_text(encoding="utf-8")) for path in sorted(folder.glob("*.yaml"))]
    return [load(d) for d in sorted(docs, key=lambda d: d.get("order", 0))]


def write_all(procs: list[Proc], folder: Path = SOURCE_DIR) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for i, p in enumerate(procs):
        data = {"order": i, **dump(p)}
        text = yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=110)
        (folder / f"{p.file.removesuffix('.bpmn')}.yaml").write_text(text, encoding="utf-8")
