"""Read BPMN 2.0 XML (https://www.omg.org/spec/BPMN/2.0.2/) into a typed model.

Two passes: :func:`read_definitions` collects every element of the BPMN model
namespace by id, then resolves sequence flows, message flows, lanes, boundary
attachments and participants. References may be plain ids or QNames whose prefix
names the document's ``targetNamespace`` (``sourceRef="tns:Task_1"``, BPMN 2.0.2 §8.3.1).
A reference to an id declared nowhere drops the element that holds it, with a warning
naming file, line and id (element-level recovery, as bpmn.io imports); the rest of the
model is kept. Two elements with one id, or an element without an id, raise
:class:`DuplicateDeclarationError` / :class:`MissingIdError`, or (``strict=False``, for
``kg build --on-error warn``) drop the element with a warning. Vendor extension elements
(other namespaces, ``extensionElements``) are ignored. :func:`next_activities` computes the
``bpmn:next`` relation: activity to the activities that follow it, through
gateways, events and sub-process boundaries.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Container
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from lxml import etree

from processkg.errors import (
    DuplicateDeclarationError,
    FlowTooLargeError,
    InputError,
    MissingIdError,
    NotBPMNError,
    UnresolvedReferenceError,
)
from processkg.sources.limits import MAX_NEXT_PAIRS
from processkg.sources.xmlio import local, namespace, parse_xml

_E = TypeVar("_E", "FlowNode", "SequenceFlow")

MODEL = "http://www.omg.org/spec/BPMN/20100524/MODEL"
SPEC = "https://www.omg.org/spec/BPMN/2.0.2/PDF"
TASKS = frozenset(
    {
        "task",
        "userTask",
        "serviceTask",
        "sendTask",
        "receiveTask",
        "manualTask",
        "businessRuleTask",
        "scriptTask",
    }
)
SUBPROCESSES = frozenset({"subProcess", "adHocSubProcess", "transaction"})
ACTIVITIES = TASKS | SUBPROCESSES | {"callActivity"}
EVENTS = frozenset(
    {
        "startEvent",
        "endEvent",
        "intermediateCatchEvent",
        "intermediateThrowEvent",
        "boundaryEvent",
        "implicitThrowEvent",
    }
)
GATEWAYS = frozenset(
    {
        "exclusiveGateway",
        "parallelGateway",
        "inclusiveGateway",
        "eventBasedGateway",
        "complexGateway",
    }
)
#: Flow elements that are not flow nodes; lanes list them as ``flowNodeRef`` too.
DATA = frozenset({"dataObject", "dataObjectReference", "dataStoreReference"})
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
    event_definitions: list[str] = field(default_factory=list)
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
    nodes: list[str] = field(default_factory=list)
    data: list[str] = field(default_factory=list)  # dataObjectReference / dataStoreReference ids


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
    collaborations: list[tuple[str, str, int]] = field(default_factory=list)  # (id, name, line)
    processes: dict[str, Process] = field(default_factory=dict)
    participants: dict[str, Participant] = field(default_factory=dict)
    lanes: list[Lane] = field(default_factory=list)
    nodes: dict[str, FlowNode] = field(default_factory=dict)
    flows: dict[str, SequenceFlow] = field(default_factory=dict)
    message_flows: list[MessageFlow] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)  # "file:line: ..." for each element dropped
    dropped: list[tuple[str, str, int | None]] = field(default_factory=list)  # (tag, id, line) of each element dropped
    target_namespace: str = ""
    strict: bool = True
    # id -> (tag, line), every element read
    declared: dict[str, tuple[str, int]] = field(default_factory=dict, repr=False)

    def drop(self, exc: InputError, tag: str, element_id: str, line: int | None) -> None:
        """Leave an element out of the model and say so (file, line, id, reason)."""
        self.warnings.append(f"{exc}; the {tag} is left out")
        self.dropped.append((tag, element_id, line))

    def problem(self, exc: InputError, tag: str, element_id: str, line: int | None) -> None:
        """An element that makes the document invalid: raise, or (not strict) drop it with a warning."""
        if self.strict:
            raise exc
        self.drop(exc, tag, element_id, line)

    def register(self, el: etree._Element, tag: str) -> str | None:
        """The element's id when it is new; None (after :meth:`problem`) when missing or taken."""
        element_id = (el.get("id") or "").strip()
        if not element_id:
            self.problem(
                MissingIdError(
                    f"{tag} has no id, which BPMN 2.0 requires to refer to it (see {SPEC} §8.3.1)",
                    self.file,
                    el.sourceline,
                ),
                tag,
                "",
                el.sourceline,
            )
            return None
        first = self.declared.get(element_id)
        if first is not None:
            self.problem(
                DuplicateDeclarationError(
                    f"{tag} id {element_id!r} is already declared by the {first[0]} on line {first[1]}; ids must be "
                    f"unique in a document (see {SPEC} §8.3.1)",
                    self.file,
                    el.sourceline,
                ),
                tag,
                element_id,
                el.sourceline,
            )
            return None
        self.declared[element_id] = (tag, el.sourceline)
        return element_id


def read_definitions(path: Path, display: str | None = None, strict: bool = True) -> Definitions:
    """Parse one BPMN file: collect (pass 1), then resolve references (pass 2).

    ``strict=False`` turns duplicate and missing ids into warnings (the element is left out).
    """
    name = display or str(path)
    root = parse_xml(path, name).getroot()
    if namespace(root.tag) != MODEL or local(root.tag) != "definitions":
        raise NotBPMNError(
            f"root element is {{{namespace(root.tag)}}}{local(root.tag)}, so this is not a BPMN 2.0 "
            f"document; expected bpmn:definitions in namespace {MODEL} ({SPEC}, §8.2)",
            name,
            root.sourceline,
        )
    defs = Definitions(
        name, root.sourceline, root.get("exporter", ""), target_namespace=root.get("targetNamespace", ""), strict=strict
    )
    for el in root:
        handler = _TOP_LEVEL.get(el.tag)
        if handler:
            handler(el, defs)
    _resolve(defs)
    return defs


def _documentation(el: etree._Element) -> str:
    parts = [" ".join(d.itertext()).strip() for d in el if d.tag == _Q + "documentation"]
    return "\n".join(p for p in parts if p)


def _ref(el: etree._Element, value: str | None, defs: Definitions) -> str:
    """The id a reference names: ``tns:Task_1`` -> ``Task_1`` when ``tns`` is bound (on ``el``)
    to the document's targetNamespace (a QName reference, BPMN 2.0.2 §8.3.1); else as written."""
    ref = (value or "").strip()
    prefix, colon, rest = ref.partition(":")
    if colon and defs.target_namespace and el.nsmap.get(prefix) == defs.target_namespace:
        return rest
    return ref


def _collaboration(el: etree._Element, defs: Definitions) -> None:
    cid = defs.register(el, "collaboration")
    if cid is None:
        return
    defs.collaborations.append((cid, el.get("name", ""), el.sourceline))
    for child in el:
        if child.tag == _Q + "participant":
            _participant(child, defs, cid)
        elif child.tag == _Q + "messageFlow" and (mid := defs.register(child, "messageFlow")) is not None:
            defs.message_flows.append(
                MessageFlow(
                    mid,
                    child.get("name", ""),
                    _ref(child, child.get("sourceRef"), defs),
                    _ref(child, child.get("targetRef"), defs),
                    child.sourceline,
                    cid,
                )
            )


def _participant(el: etree._Element, defs: Definitions, cid: str) -> None:
    pid = defs.register(el, "participant")
    if pid is not None:
        defs.participants[pid] = Participant(
            pid, el.get("name", ""), el.sourceline, _ref(el, el.get("processRef"), defs), cid
        )


def _process(el: etree._Element, defs: Definitions) -> None:
    pid = defs.register(el, "process")
    if pid is None:
        return
    executable = el.get("isExecutable")
    defs.processes[pid] = Process(
        pid,
        el.get("name", ""),
        el.sourceline,
        None if executable is None else executable.lower() == "true",
        _documentation(el),
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
        elif tag in DATA:
            defs.register(el, tag)


def _flow_node(el: etree._Element, tag: str, defs: Definitions, pid: str, parent: str) -> None:
    node_id = defs.register(el, tag)
    if node_id is None:
        return
    node = FlowNode(
        node_id,
        tag,
        el.get("name", ""),
        el.sourceline,
        pid,
        parent,
        documentation=_documentation(el),
        attached_to=_ref(el, el.get("attachedToRef"), defs),
        called_element=el.get("calledElement", ""),
        default_flow=_ref(el, el.get("default"), defs),
        for_compensation=el.get("isForCompensation", "").strip().lower() == "true",
        triggered_by_event=el.get("triggeredByEvent", "").strip().lower() == "true",
    )
    node.event_definitions = sorted(
        local(c.tag)
        for c in el
        if isinstance(c.tag, str) and c.tag.startswith(_Q) and local(c.tag).endswith("EventDefinition")
    )
    defs.nodes[node.id] = node
    if tag in SUBPROCESSES:
        _flow_elements(el, defs, pid, node.id)


def _sequence_flow(el: etree._Element, defs: Definitions, pid: str, parent: str) -> None:
    flow_id = defs.register(el, "sequenceFlow")
    if flow_id is None:
        return
    cond = el.find(_Q + "conditionExpression")
    defs.flows[flow_id] = SequenceFlow(
        flow_id,
        el.get("name", ""),
        _ref(el, el.get("sourceRef"), defs),
        _ref(el, el.get("targetRef"), defs),
        el.sourceline,
        pid,
        (cond.text or "").strip() if cond is not None else "",
        parent,
    )


def _lanes(lane_set: etree._Element, defs: Definitions, pid: str) -> None:
    for lane in lane_set.iterchildren(_Q + "lane"):
        lane_id = defs.register(lane, "lane")
        if lane_id is None:
            continue
        refs = [_ref(r, r.text, defs) for r in lane.iterchildren(_Q + "flowNodeRef")]
        defs.lanes.append(Lane(lane_id, lane.get("name", ""), lane.sourceline, pid, refs))
        for child_set in lane.iterchildren(_Q + "childLaneSet"):
            _lanes(child_set, defs, pid)


def _resolve(defs: Definitions) -> None:
    """Pass 2: every reference names a declared element, or the element holding it is left out.

    Order matters: a boundary event left out takes its outgoing flows with it.
    """
    for p in defs.participants.values():
        if p.process and p.process not in defs.processes:
            error = UnresolvedReferenceError(defs.file, p.line, "participant", p.id, p.process, f"{SPEC} §9.2")
            defs.warnings.append(f"{error}; its processRef is left out")
            p.process = ""
    _drop_where(
        defs,
        defs.nodes,
        lambda n: n.attached_to and n.attached_to not in defs.nodes,
        lambda n: UnresolvedReferenceError(defs.file, n.line, n.tag, n.id, n.attached_to, f"{SPEC} §10.5.4"),
    )
    _drop_where(
        defs,
        defs.flows,
        lambda f: _dangling(f, defs.nodes) is not None,
        lambda f: _unresolved_flow(defs, f, "sequenceFlow", defs.nodes, "§10.2"),
    )
    for node in defs.nodes.values():
        if node.default_flow and node.default_flow not in defs.flows:
            error = UnresolvedReferenceError(
                defs.file, node.line, node.tag, node.id, node.default_flow, f"{SPEC} §10.6", "default"
            )
            defs.warnings.append(f"{error}; its default is left out")
            node.default_flow = ""
    targets = set(defs.nodes) | set(defs.participants)
    kept = []
    for mf in defs.message_flows:
        if _dangling(mf, targets) is None:
            kept.append(mf)
        else:
            defs.drop(_unresolved_flow(defs, mf, "messageFlow", targets, "§9.3"), "messageFlow", mf.id, mf.line)
    defs.message_flows = kept
    for lane in defs.lanes:
        _resolve_lane(defs, lane)


def _dangling(flow: SequenceFlow | MessageFlow, targets: Container[str]) -> tuple[str, str] | None:
    """(reference, attribute) of the first end of a flow that names nothing in ``targets``."""
    for attribute, ref in (("sourceRef", flow.source), ("targetRef", flow.target)):
        if ref not in targets:
            return ref, attribute
    return None


def _unresolved_flow(
    defs: Definitions, flow: SequenceFlow | MessageFlow, tag: str, targets: Container[str], section: str
) -> UnresolvedReferenceError:
    ref, attribute = _dangling(flow, targets) or ("", "")
    return UnresolvedReferenceError(defs.file, flow.line, tag, flow.id, ref, f"{SPEC} {section}", attribute)


def _drop_where(
    defs: Definitions,
    elements: dict[str, _E],
    dangles: Callable[[_E], object],
    error: Callable[[_E], UnresolvedReferenceError],
) -> None:
    for element_id in [k for k, v in elements.items() if dangles(v)]:
        element = elements.pop(element_id)
        defs.drop(error(element), getattr(element, "tag", "sequenceFlow"), element_id, element.line)


def _resolve_lane(defs: Definitions, lane: Lane) -> None:
    """Flow nodes stay in ``lane.nodes``; data object and data store references (which modelers
    list as ``flowNodeRef`` too) go to ``lane.data``; an id declared nowhere is left out."""
    nodes, data = [], []
    for ref in filter(None, lane.nodes):
        if ref in defs.nodes:
            nodes.append(ref)
        elif defs.declared.get(ref, ("",))[0] in DATA:
            data.append(ref)
        else:
            error = UnresolvedReferenceError(defs.file, lane.line, "lane", lane.id, ref, f"{SPEC} §10.8")
            defs.warnings.append(f"{error}; the flowNodeRef is left out")
    lane.nodes, lane.data = nodes, data


# ---------------------------------------------------------------- bpmn:next


def next_activities(defs: Definitions, limit: int = MAX_NEXT_PAIRS) -> list[tuple[str, str]]:
    """Pairs (activity, next activity): through gateways and events, into and out of sub-processes.

    A sub-process is followed by its first inner activities and by its own successors; its
    last inner activities are followed by the successors of the sub-process (or, when it has
    none, of the sub-process around it). An activity with a boundary event is followed by what
    the boundary event leads to. Compensation handlers and event sub-processes are outside the
    normal flow: they are never entered from their sub-process and never leave it; their own
    inner activities are still chained.

    Linear in the flows plus the pairs it returns: the activities behind each gateway or
    event are computed once, not once per activity that reaches it. The pairs themselves are
    not linear (a gateway joining M branches and splitting into N makes M x N), so more than
    ``limit`` pairs raise :class:`FlowTooLargeError` naming the gateway or event where most meet.
    """
    graph = _FlowGraph(defs)
    pairs: list[tuple[str, str]] = []
    for node in defs.nodes.values():
        if node.category == "activity":
            pairs.extend((node.id, nxt) for nxt in graph.reach(node))
            if len(pairs) > limit:
                raise _too_many_pairs(defs, graph, node, limit)
    return sorted(pairs)


def _too_many_pairs(defs: Definitions, graph: _FlowGraph, activity: FlowNode, limit: int) -> FlowTooLargeError:
    """The error naming the gateway or event with the most (incoming flows x activities behind
    it), or ``activity`` itself when no gateway or event multiplies the pairs."""
    incoming: dict[str, int] = defaultdict(int)
    for flow in defs.flows.values():
        incoming[flow.target] += 1
    node_id = max(graph.behind, key=lambda n: incoming[n] * len(graph.behind[n]), default="")
    if node_id and incoming[node_id] > 1:
        node = defs.nodes[node_id]
        ways = f"it joins {incoming[node_id]:,} flows and leads to {len(graph.behind[node_id]):,} activities"
    else:
        node, ways = activity, f"it is followed by {len(graph.reach(activity)):,} activities"
    return FlowTooLargeError(
        f"{node.tag} {node.id!r}: the model derives more than {limit:,} bpmn:next pairs ({ways}); "
        f"split the gateway or the model",
        defs.file,
        node.line,
    )


class _FlowGraph:
    """Successors of each node, and the activities behind each non-activity node (memoised)."""

    def __init__(self, defs: Definitions) -> None:
        self.defs = defs
        self.flows: dict[str, list[str]] = defaultdict(list)  # sequence-flow successors only
        for flow in defs.flows.values():
            self.flows[flow.source].append(flow.target)
        self.out: dict[str, list[str]] = defaultdict(list, {k: list(v) for k, v in self.flows.items()})
        for node in defs.nodes.values():
            if node.attached_to:
                self.out[node.attached_to].append(node.id)
        incoming = {flow.target for flow in defs.flows.values()}
        self.entries: dict[str, list[str]] = defaultdict(list)
        for n in defs.nodes.values():
            if n.parent and n.id not in incoming and not n.attached_to and n.in_normal_flow:
                self.entries[n.parent].append(n.id)
        self.behind: dict[str, frozenset[str]] = {}  # non-activity id -> frozenset of activity ids

    def reach(self, node: FlowNode) -> set[str]:
        """Activities reached from activity ``node`` without passing through another activity."""
        start = list(self.out.get(node.id, ()))
        if node.tag in SUBPROCESSES:
            start += sorted(self.entries.get(node.id, ()))
        if not self.flows.get(node.id):
            start += _exits(self.defs, self.flows, node)  # a last inner activity leaves its sub-process
        found: set[str] = set()
        for nxt in start:
            found |= {nxt} if self._is_activity(nxt) else self._behind(nxt)
        return found

    def _is_activity(self, node_id: str) -> bool:
        return self.defs.nodes[node_id].category == "activity"

    def _successors(self, node_id: str) -> list[str]:
        successors = self.out.get(node_id, ())
        node = self.defs.nodes[node_id]
        if not successors and not node.attached_to:
            return _exits(self.defs, self.flows, node)  # an inner end leaves the sub-process
        return list(successors)

    def _behind(self, root: str) -> frozenset[str]:
        """Activities behind a gateway or event: Tarjan's strongly connected components over the
        non-activity nodes, iteratively; a component's set is complete when it closes, and every
        member of a cycle of gateways and events shares it."""
        if root in self.behind:
            return self.behind[root]
        index: dict[str, int] = {}
        low: dict[str, int] = {}
        stack: list[str] = []
        on_stack: set[str] = set()
        work = [(root, iter(self._successors(root)))]
        index[root] = low[root] = 0
        stack.append(root)
        on_stack.add(root)
        while work:
            current, successors = work[-1]
            advanced = False
            for nxt in successors:
                if self._is_activity(nxt) or nxt in self.behind:
                    continue
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(self._successors(nxt))))
                    advanced = True
                    break
                if nxt in on_stack:
                    low[current] = min(low[current], index[nxt])
            if advanced:
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[current])
            if low[current] == index[current]:
                self._close(current, stack, on_stack)
        return self.behind[root]

    def _close(self, head: str, stack: list[str], on_stack: set[str]) -> None:
        """Pop the component headed by ``head``; its activities are those its members lead to."""
        members = []
        while True:
            member = stack.pop()
            on_stack.discard(member)
            members.append(member)
            if member == head:
                break
        found: set[str] = set()
        for member in members:
            for nxt in self._successors(member):
                if self._is_activity(nxt):
                    found.add(nxt)
                elif nxt in self.behind:
                    found |= self.behind[nxt]
        result = frozenset(found)
        for member in members:
            self.behind[member] = result


def _exits(defs: Definitions, flows: dict[str, list[str]], node: FlowNode) -> list[str]:
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


_TOP_LEVEL = {
    _Q + "collaboration": _collaboration,
    _Q + "process": _process,
}
