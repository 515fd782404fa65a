"""The process model of the SAP process layer: nodes, flows, lanes, uses (data only, no drawing)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
SAP_DIR = HERE.parent
REPO = SAP_DIR.parent.parent
PROCESS_DIR = SAP_DIR / "processes"
MAPPING_FILE = SAP_DIR / "mapping.yaml"
DEFAULT_METADATA = REPO.parent / "shared" / "data" / "odata" / "s4-a2x"


@dataclass(frozen=True)
class Use:
    service: str
    entity_set: str
    mode: str  # read | write
    note: str = ""  # names properties or function imports in `backticks`


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
