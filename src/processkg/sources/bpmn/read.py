"""Read BPMN 2.0 XML (https://www.omg.org/spec/BPMN/2.0.2/) into a typed model.

Two passes: :func:`read_definitions` collects every element of the BPMN model
namespace by id, then resolves sequence flows, message flows, lanes, boundary
attachments and participants; a reference to an undeclared id raises
:class:`UnresolvedReferenceError`. Vendor extension elements (other namespaces,
``extensionElements``) are ignored. :func:`next_activities` computes the
``bpmn:next`` relation: activity to the activities that follow it, through
gateways, events and sub-process boundaries.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from lxml import etree

from processkg.errors import NotBPMNError, UnresolvedReferenceError
from processkg.sources.xmlio import local, namespace, parse_xml

MODEL = "http://www.omg.org/spec/BPMN/20100524/MODEL"
SPEC = "https://www.omg.org/spec/BPMN/2.0.2/PDF"
TASKS = frozenset({
    "task", "userTask", "serviceTask", "sendTask", "receiveTask", "manualTask",
    "businessRuleTask", "scriptTask",
})
SUBPROCESSES = frozenset({"subProcess", "adHocSubProcess", "transaction"})
ACTIVITIES = TASKS | SUBPROCESSES | {"callActivity"}
EVENTS = frozenset({
    "startEvent", "endEvent", "intermediateCatchEvent", "intermediateThrowEvent", "boundaryEvent",
    "implicitThrowEvent",
})
GATEWAYS = frozenset({
    "exclusiveGateway", "parallelGateway", "inclusiveGateway", "eventBasedGateway", "complexGateway",
})
_Q = f"{{{MODEL}}}"


@dataclass
class FlowNode:
    """An activity, event or gateway (BPMN 2.0.2 §10.3, §10.5, §10.6)."""

    id: str
    tag: str
    name: str
    line: int
    process: str
    parent: str = ""  # id of the enclosing sub-process, if any
    documentation: str = ""
    event_definitions: list = field(default_factory=list)
    attached_to: str = ""
    called_element: str = ""
    default_flow: str = ""
    for_compensation: bool = False  # isForCompensation="true": runs only when compensated
    triggered_by_event: bool = False  # an event sub-process (triggeredByEvent="true")

    @property
    def in_normal_flow(self) -> bool:
        """False for compensation handlers and event sub-processes: no sequence flow enters them."""
        return not (self.for_compensation or self.triggered_by_event)

    @property
    def category(self) -> str:
        if self.tag in ACTIVITIES:
            return "activity"
        return "event" if self.tag in EVENTS else "gateway"


@dataclass
class SequenceFlow:
    id: str
    name: str
    source: str
    target: str
    line: int
    process: str
    condition: str = ""
    parent: str = ""


@dataclass
class MessageFlow:
    id: str
    name: str
    source: str
    target: str
    line: int
    collaboration: str = ""


@dataclass
class Lane:
    id: str
    name: str
    line: int
    process: str
    nodes: list = field(default_factory=list)


@dataclass
class Process:
    id: str
    name: str
    line: int
    executable: bool | None = None
    documentation: str = ""


@dataclass
class Participant:
    id: str
    name: str
    line: int
    process: str = ""
    collaboration: str = ""


@dataclass
class Definitions:
    file: str
    line: int
    exporter: str = ""
    collaborations: list = field(default_factory=list)  # (id, name, line)
    processes: dict = field(default_factory=dict)
    participants: dict = field(default_factory=dict)
    lanes: list = field(default_factory=list)
    nodes: dict = field(default_factory=dict)
    flows: dict = field(default_factory=dict)
    message_flows: list = field(default_factory=list)


def read_definitions(path: Path, display: str | None = None) -> Definitions:
    """Parse one BPMN file: collect (pass 1), then resolve references (pass 2)."""
    name = display or str(path)
    root = parse_xml(path, name).getroot()
    if namespace(root.tag) != MODEL or local(root.tag) != "definitions":
        raise NotBPMNError(
            f"root element is {{{namespace(root.tag)}}}{local(root.tag)}, so this is not a BPMN 2.0 "
            f"document; expected bpmn:definitions in namespace {MODEL} ({SPEC}, §8.2)",
            name, root.sourceline,
        )
    defs = Definitions(name, root.sourceline, root.get("exporter", ""))
    for el in root:
        handler = _TOP_LEVEL.get(el.tag)
        if handler:
            handler(el, defs)
    _resolve(defs)
    return defs


def _documentation(el: etree._Element) -> str:
    parts = [" ".join(d.itertext()).strip() for d in el if d.tag == _Q + "documentation"]
    return "\n".join(p for p in parts if p)


def _collaboration(el: etree._Element, defs: Definitions) -> None:
    cid = el.get("id", "")
    defs.collaborations.append((cid, el.get("name", ""), el.sourceline))
    for child in el:
        if child.tag == _Q + "participant":
            p = Participant(child.get("id", ""), child.get("name", ""), child.sourceline,
                            child.get("processRef", ""), cid)
            defs.participants[p.id] = p
        elif child.tag == _Q + "messageFlow":
            defs.message_flows.append(MessageFlow(
                child.get("id", ""), child.get("name", ""), child.get("sourceRef", ""),
                child.get("targetRef", ""), child.sourceline, cid,
            ))


def _process(el: etree._Element, defs: Definitions) -> None:
    pid = el.get("id", "")
    executable = el.get("isExecutable")
    defs.processes[pid] = Process(
        pid, el.get("name", ""), el.sourceline,
        None if executable is None else executable.lower() == "true", _documentation(el),
    )
    _flow_elements(el, defs, pid, "")


def _flow_elements(container: etree._Element, defs: Definitions, pid: str, parent: str) -> None:
    for el in container:
        if not isinstance(el.tag, str) or not el.tag.startswith(_Q):
            continue  # vendor extensions and comments
        tag = local(el.tag)
        if tag in ACTIVITIES or tag in EVENTS or tag in GATEWAYS:
            _flow_node(el, tag, defs, pid, parent)
        elif tag == "sequenceFlow":
            _sequence_flow(el, defs, pid, parent)
        elif tag == "laneSet":
            _lanes(el, defs, pid)


def _flow_node(el: etree._Element, tag: str, defs: Definitions, pid: str, parent: str) -> None:
    node = FlowNode(
        el.get("id", ""), tag, el.get("name", ""), el.sourceline, pid, parent,
        documentation=_documentation(el),
        attached_to=el.get("attachedToRef", ""),
        called_element=el.get("calledElement", ""),
        default_flow=el.get("default", ""),
        for_compensation=el.get("isForCompensation", "").strip().lower() == "true",
        triggered_by_event=el.get("triggeredByEvent", "").strip().lower() == "true",
    )
    node.event_definitions = sorted(
        local(c.tag) for c in el if c.tag.startswith(_Q) and local(c.tag).endswith("EventDefinition")
    )
    defs.nodes[node.id] = node
    if tag in SUBPROCESSES:
        _flow_elements(el, defs, pid, node.id)


def _sequence_flow(el: etree._Element, defs: Definitions, pid: str, parent: str) -> None:
    cond = el.find(_Q + "conditionExpression")
    defs.flows[el.get("id", "")] = SequenceFlow(
        el.get("id", ""), el.get("name", ""), el.get("sourceRef", ""), el.get("targetRef", ""),
        el.sourceline, pid, (cond.text or "").strip() if cond is not None else "", parent,
    )


def _lanes(lane_set: etree._Element, defs: Definitions, pid: str) -> None:
    for lane in lane_set.iterchildren(_Q + "lane"):
        refs = [(r.text or "").strip() for r in lane.iterchildren(_Q + "flowNodeRef")]
        defs.lanes.append(Lane(lane.get("id", ""), lane.get("name", ""), lane.sourceline, pid, refs))
        for child_set in lane.iterchildren(_Q + "childLaneSet"):
            _lanes(child_set, defs, pid)


def _resolve(defs: Definitions) -> None:
    nodes = defs.nodes
    for flow in defs.flows.values():
        for attribute, ref in (("sourceRef", flow.source), ("targetRef", flow.target)):
            if ref not in nodes:
                raise UnresolvedReferenceError(
                    defs.file, flow.line, "sequenceFlow", flow.id, ref, f"{SPEC} §10.2", attribute
                )
    targets = set(nodes) | set(defs.participants)
    for mf in defs.message_flows:
        for attribute, ref in (("sourceRef", mf.source), ("targetRef", mf.target)):
            if ref not in targets:
                raise UnresolvedReferenceError(
                    defs.file, mf.line, "messageFlow", mf.id, ref, f"{SPEC} §9.3", attribute
                )
    for node in nodes.values():
        if node.attached_to and node.attached_to not in nodes:
            raise UnresolvedReferenceError(
                defs.file, node.line, node.tag, node.id, node.attached_to, f"{SPEC} §10.5.4"
            )
    for lane in defs.lanes:
        lane.nodes = [ref for ref in lane.nodes if ref]
        for ref in lane.nodes:
            if ref not in nodes:
                raise UnresolvedReferenceError(defs.file, lane.line, "lane", lane.id, ref, f"{SPEC} §10.8")
    for p in defs.participants.values():
        if p.process and p.process not in defs.processes:
            raise UnresolvedReferenceError(defs.file, p.line, "participant", p.id, p.process, f"{SPEC} §9.2")


# ---------------------------------------------------------------- bpmn:next

def next_activities(defs: Definitions) -> list[tuple[str, str]]:
    """Pairs (activity, next activity): through gateways and events, into and out of sub-processes.

    A sub-process is followed by its first inner activities and by its own successors; its
    last inner activities are followed by the successors of the sub-process (or, when it has
    none, of the sub-process around it). An activity with a boundary event is followed by what
    the boundary event leads to. Compensation handlers and event sub-processes are outside the
    normal flow: they are never entered from their sub-process and never leave it; their own
    inner activities are still chained.
    """
    flows = defaultdict(list)
    for flow in defs.flows.values():
        flows[flow.source].append(flow.target)
    out = defaultdict(list, {k: list(v) for k, v in flows.items()})
    for node in defs.nodes.values():
        if node.attached_to:
            out[node.attached_to].append(node.id)
    incoming = {flow.target for flow in defs.flows.values()}
    pairs = set()
    for node in defs.nodes.values():
        if node.category == "activity":
            for nxt in _reach(defs, out, flows, incoming, node.id):
                pairs.add((node.id, nxt))
    return sorted(pairs)


def _reach(defs: Definitions, out: dict, flows: dict, incoming: set, start: str) -> set:
    """Activities reached from ``start`` without passing through another activity.

    ``out`` holds sequence-flow successors plus boundary events; ``flows`` only the former.
    """
    node = defs.nodes[start]
    stack = list(out.get(start, ()))
    if node.tag in SUBPROCESSES:
        stack += _entry_nodes(defs, incoming, node.id)
    if not flows.get(start):
        stack += _exits(defs, flows, node)  # a last inner activity leaves its sub-process
    found, seen = set(), set()
    while stack:
        current = stack.pop()
        if current in seen:
            continue
        seen.add(current)
        cur = defs.nodes[current]
        if cur.category == "activity":
            found.add(current)
            continue
        successors = out.get(current, ())
        stack.extend(successors)
        if not successors and not cur.attached_to:
            stack.extend(_exits(defs, flows, cur))  # an inner end leaves the sub-process
    return found


def _exits(defs: Definitions, flows: dict, node: FlowNode) -> list:
    """Where the flow goes when ``node`` (with no outgoing flow) completes its sub-process:
    the sub-process's outgoing sequence flows (its boundary events do not fire on completion).

    Climbs through enclosing sub-processes that have no outgoing flow themselves; stops at
    the process level and at compensation handlers and event sub-processes.
    """
    seen = set()
    while node.in_normal_flow and node.parent and node.parent not in seen:
        seen.add(node.parent)
        node = defs.nodes[node.parent]
        if flows.get(node.id):
            return list(flows[node.id])
    return []


def _entry_nodes(defs: Definitions, incoming: set, sub: str) -> list:
    """Inner nodes of a sub-process where its flow starts: no incoming sequence flow, not a
    boundary event, not a compensation handler or event sub-process."""
    return sorted(
        n.id for n in defs.nodes.values()
        if n.parent == sub and n.id not in incoming and not n.attached_to and n.in_normal_flow
    )


_TOP_LEVEL = {
    _Q + "collaboration": _collaboration,
    _Q + "process": _process,
}
