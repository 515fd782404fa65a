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
    """One BPMN process in one file; ``_add``, ``flow`` and ``message`` check ids and lanes as it is loaded."""

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

    # -- flows
    def flow(self, source, target, name="", cond="", default=False, back=False) -> str:
        fid = f"Flow_{_short(source)}_{_short(target)}"
        if any(f.id == fid for f in self.flows):
            raise ValueError(f"{self.id}: duplicate flow {fid}")
        self.flows.append(Flow(fid, source, target, name, cond, default, back))
        return fid

    def message(self, source, target, name) -> None:
        mid = f"MessageFlow_{_short(source)}_{_short(target)}"
        self.messages.append(MessageFlow(mid, name, source, target))
