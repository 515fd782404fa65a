"""BPMN 2.0 XML with diagram interchange, and the mapping file, written from the model."""

from __future__ import annotations

from xml.sax.saxutils import escape, quoteattr

from layout import Layout
from model import (
    Node,
    Proc,
    _short,
)

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
