"""Lift BPMN :class:`~processkg.sources.bpmn.bpmn_xml.Definitions` into RDF (``bpmn:`` vocabulary).

IRIs are unique per source file: ``id/bpmn/{file path below the input root}/{element id}``,
so the MIWG exports of one model by four tools never collide.
"""

from __future__ import annotations

from pyoxigraph import NamedNode, Triple

from processkg.sources.bpmn import bpmn_xml
from processkg.triples import Triples, child, mint
from processkg.vocab import BPMNT, KGT

_CLASS = {"activity": BPMNT.Activity, "event": BPMNT.Event, "gateway": BPMNT.Gateway}
_KIND = {"activity": BPMNT.kind, "event": BPMNT.eventKind, "gateway": BPMNT.gatewayKind}


def definitions_iri(slug: str) -> NamedNode:
    return mint("bpmn", slug)


def element_iri(slug: str, element_id: str) -> NamedNode:
    return child(definitions_iri(slug), element_id)


class DefinitionsLifter:
    def __init__(self, defs: bpmn_xml.Definitions, slug: str) -> None:
        self.defs = defs
        self.slug = slug
        self.t = Triples(defs.file)

    def iri(self, element_id: str) -> NamedNode:
        return element_iri(self.slug, element_id)

    def lift(self) -> list[Triple]:
        d = self.defs
        root = self.t.node(definitions_iri(self.slug), BPMNT.Definitions, d.line, self.slug)
        self.t.text(root, BPMNT.exporter, d.exporter)
        for cid, name, line in d.collaborations:
            s = self._named(self.iri(cid), BPMNT.Collaboration, line, name, cid)
            self.t.add(s, BPMNT.definitions, root)
        for process in d.processes.values():
            self._process(root, process)
        for participant in d.participants.values():
            self._participant(participant)
        for lane in d.lanes:
            self._lane(lane)
        for node in d.nodes.values():
            self._flow_node(node)
        for flow in d.flows.values():
            self._sequence_flow(flow)
        for mf in d.message_flows:
            self._message_flow(mf)
        for a, b in bpmn_xml.next_activities(d):
            self.t.add(self.iri(a), BPMNT.next, self.iri(b))
        return self.t.items

    def _named(self, s: NamedNode, cls: NamedNode, line: int, name: str, element_id: str) -> NamedNode:
        self.t.node(s, cls, line, name or None)
        self.t.text(s, KGT.name, name)
        self.t.text(s, BPMNT.elementId, element_id)
        return s

    def _process(self, root: NamedNode, process: bpmn_xml.Process) -> None:
        s = self._named(self.iri(process.id), BPMNT.Process, process.line, process.name, process.id)
        self.t.add(s, BPMNT.definitions, root)
        self.t.boolean(s, BPMNT.isExecutable, process.executable)
        self.t.text(s, BPMNT.documentation, process.documentation)

    def _participant(self, p: bpmn_xml.Participant) -> None:
        s = self._named(self.iri(p.id), BPMNT.Participant, p.line, p.name, p.id)
        if p.collaboration:
            self.t.add(self.iri(p.collaboration), BPMNT.participant, s)
        if p.process:
            self.t.add(s, BPMNT.process, self.iri(p.process))

    def _lane(self, lane: bpmn_xml.Lane) -> None:
        s = self._named(self.iri(lane.id), BPMNT.Lane, lane.line, lane.name, lane.id)
        self.t.add(s, BPMNT.laneOf, self.iri(lane.process))
        for ref in lane.nodes:
            self.t.add(s, BPMNT.flowElement, self.iri(ref))
            self.t.add(self.iri(ref), BPMNT.lane, s)

    def _flow_node(self, node: bpmn_xml.FlowNode) -> None:
        t = self.t
        s = self._named(self.iri(node.id), _CLASS[node.category], node.line, node.name, node.id)
        t.text(s, _KIND[node.category], node.tag)
        t.add(s, BPMNT.process, self.iri(node.process))
        t.add(self.iri(node.process), BPMNT.flowElement, s)
        if node.parent:
            t.add(s, BPMNT.subProcessOf, self.iri(node.parent))
        t.text(s, BPMNT.documentation, node.documentation)
        t.text(s, BPMNT.calledElement, node.called_element)
        for definition in node.event_definitions:
            t.text(s, BPMNT.eventDefinition, definition)
        if node.attached_to:
            t.add(s, BPMNT.attachedTo, self.iri(node.attached_to))

    def _sequence_flow(self, flow: bpmn_xml.SequenceFlow) -> None:
        t = self.t
        s = self._named(self.iri(flow.id), BPMNT.SequenceFlow, flow.line, flow.name, flow.id)
        t.add(s, BPMNT.sourceRef, self.iri(flow.source))
        t.add(s, BPMNT.targetRef, self.iri(flow.target))
        t.add(s, BPMNT.process, self.iri(flow.process))
        t.text(s, BPMNT.conditionExpression, flow.condition)
        if self.defs.nodes[flow.source].default_flow == flow.id:
            t.boolean(s, BPMNT.isDefault, True)

    def _message_flow(self, mf: bpmn_xml.MessageFlow) -> None:
        s = self._named(self.iri(mf.id), BPMNT.MessageFlow, mf.line, mf.name, mf.id)
        if mf.collaboration:
            self.t.add(self.iri(mf.collaboration), BPMNT.messageFlow, s)
        self.t.add(s, BPMNT.sourceRef, self.iri(mf.source))
        self.t.add(s, BPMNT.targetRef, self.iri(mf.target))
