"""The BPMN 2.0 reader (bpmn.py), ``bpmn:next``, and the lifted BPMN graph.

Hand-made models in tests/data/bpmn have known structure and known ``next`` pairs; the
real MIWG reference models and their exports by four tools check the reader against an
independent count and a known path through a business process.
"""

from __future__ import annotations

import csv
from collections import Counter

import pytest

from conftest import DATA, INVALID, SHARED, shared
from processkg.sources.bpmn import read as bpmn
from processkg.errors import NotBPMNError, UnresolvedReferenceError

ORDER_FLOW = DATA / "bpmn" / "order-flow.bpmn"
ALL_KINDS = DATA / "bpmn" / "all-kinds.bpmn"

ORDER_FLOW_NEXT = {
    ("CheckOrder", "ReserveStock"), ("CheckOrder", "Reject"),
    ("ReserveStock", "Fulfil"),
    ("Fulfil", "Pick"), ("Fulfil", "InvoiceCall"),
    ("Pick", "Pack"), ("Pick", "Label"),
    ("Pack", "Ship"), ("Label", "Ship"),
    ("Ship", "ShipTask"), ("Ship", "InvoiceCall"), ("ShipTask", "InvoiceCall"),
    ("CancelSub", "Cancel"),
    ("InvoiceCall", "SendConfirmation"), ("InvoiceCall", "Escalate"),
}

ALL_KINDS_NEXT = {
    ("T_task", "T_user"), ("T_user", "T_service"), ("T_service", "T_send"), ("T_send", "T_receive"),
    ("T_receive", "T_manual"), ("T_manual", "T_rule"), ("T_rule", "T_script"),
    ("T_script", "S_adhoc"),  # through five gateways and three events
    ("S_adhoc", "A_one"), ("S_adhoc", "A_two"), ("S_adhoc", "S_transaction"),
    ("A_one", "S_transaction"), ("A_two", "S_transaction"),  # ad-hoc activities have no flows
    ("S_transaction", "Tx_book"), ("S_transaction", "S_plain"), ("Tx_book", "S_plain"),
    ("S_plain", "P_inner"), ("S_plain", "C_call"), ("P_inner", "C_call"),
}


@pytest.fixture(scope="module")
def order_flow() -> bpmn.Definitions:
    return bpmn.read_definitions(ORDER_FLOW, "order-flow.bpmn")


@pytest.fixture(scope="module")
def all_kinds() -> bpmn.Definitions:
    return bpmn.read_definitions(ALL_KINDS, "all-kinds.bpmn")


# ---------------------------------------------------------------- reader

def test_collaboration_participants_and_message_flows(order_flow):
    assert order_flow.collaborations == [("Collaboration_Order", "Order collaboration", 27)]
    assert {p.id: p.process for p in order_flow.participants.values()} == {
        "Participant_Seller": "Process_Order", "Participant_Customer": ""}
    assert [(m.id, m.source, m.target) for m in order_flow.message_flows] == [
        ("MessageFlow_Order", "Participant_Customer", "Start_OrderReceived"),
        ("MessageFlow_Confirmation", "SendConfirmation", "Participant_Customer"),
    ]


def test_process_documentation_and_lanes_including_child_lane_sets(order_flow):
    process = order_flow.processes["Process_Order"]
    assert (process.name, process.executable) == ("Order handling", False)
    assert process.documentation == "Handles one customer order from receipt to confirmation."
    lanes = {lane.id: lane.nodes for lane in order_flow.lanes}
    assert set(lanes) == {"Lane_Sales", "Lane_Operations", "Lane_Warehouse", "Lane_Finance"}
    assert lanes["Lane_Warehouse"] == ["ReserveStock", "Fulfil"]
    assert "InvoiceCall" in lanes["Lane_Finance"]


def test_nodes_kinds_nesting_and_vendor_extensions(order_flow):
    nodes = order_flow.nodes
    assert "Vendor_Task" not in nodes  # <vendor:task> is in another namespace
    assert (nodes["CheckOrder"].tag, nodes["CheckOrder"].documentation) == (
        "userTask", "Check the order against stock and credit.")
    assert nodes["Pick"].parent == "Fulfil" and nodes["ShipTask"].parent == "Ship" and nodes["Ship"].parent == "Fulfil"
    assert nodes["InvoiceCall"].called_element == "Process_Invoicing"
    assert nodes["Boundary_Timeout"].attached_to == "InvoiceCall"
    assert nodes["Boundary_Timeout"].event_definitions == ["timerEventDefinition"]
    assert nodes["End_Done"].event_definitions == ["terminateEventDefinition"]
    assert nodes["Unpack"].for_compensation and not nodes["Unpack"].in_normal_flow
    assert nodes["CancelSub"].triggered_by_event and nodes["Fulfil"].in_normal_flow
    assert nodes["Gateway_Valid"].default_flow == "Flow_Invalid"
    assert order_flow.flows["Flow_Valid"].condition == "${valid}"
    assert order_flow.flows["Flow_ShipStart"].parent == "Ship"
    assert len(order_flow.flows) == 23


def test_every_kind_of_element(all_kinds):
    tags = Counter(n.tag for n in all_kinds.nodes.values())
    for task in bpmn.TASKS:
        assert tags[task] >= 1, task
    for kind in ("subProcess", "adHocSubProcess", "transaction", "callActivity", *bpmn.GATEWAYS,
                 "startEvent", "endEvent", "intermediateCatchEvent", "intermediateThrowEvent", "boundaryEvent"):
        assert tags[kind] >= 1, kind
    categories = Counter(n.category for n in all_kinds.nodes.values())
    assert categories == {"activity": 16, "gateway": 5, "event": 9}
    definitions = {n.id: n.event_definitions for n in all_kinds.nodes.values() if n.event_definitions}
    assert definitions == {
        "Start": ["timerEventDefinition"], "E_message": ["messageEventDefinition"],
        "E_signal": ["signalEventDefinition"], "E_escalate": ["escalationEventDefinition"],
        "B_error": ["errorEventDefinition"], "End_terminate": ["terminateEventDefinition"],
    }
    assert all_kinds.processes["Process_AllKinds"].executable is True


# ---------------------------------------------------------------- bpmn:next

def test_next_through_gateways_events_and_sub_processes(order_flow):
    assert set(bpmn.next_activities(order_flow)) == ORDER_FLOW_NEXT


def test_next_through_every_gateway_kind_and_sub_process_kind(all_kinds):
    assert set(bpmn.next_activities(all_kinds)) == ALL_KINDS_NEXT


def test_next_is_lifted_for_every_pair(handmade):
    pairs = set(handmade.rows("""SELECT ?a ?b WHERE { ?x bpmn:next ?y .
        ?x bpmn:elementId ?a ; kg:sourceFile "bpmn/order-flow.bpmn" . ?y bpmn:elementId ?b }"""))
    assert pairs == ORDER_FLOW_NEXT


# ---------------------------------------------------------------- lifted graph

def test_lifted_kinds_flows_lanes_and_links(handmade):
    kinds = dict(handmade.rows("""SELECT ?id ?kind WHERE { ?a a bpmn:Activity ; bpmn:kind ?kind ;
        bpmn:elementId ?id ; kg:sourceFile "bpmn/all-kinds.bpmn" }"""))
    assert {kinds[i] for i in ("T_task", "T_user", "T_service", "T_send", "T_receive", "T_manual",
                                "T_rule", "T_script")} == set(bpmn.TASKS)
    assert set(handmade.values("""SELECT ?k WHERE { ?g a bpmn:Gateway ; bpmn:gatewayKind ?k ;
        kg:sourceFile "bpmn/all-kinds.bpmn" }""")) == set(bpmn.GATEWAYS)
    assert handmade.rows("""SELECT ?kind ?def WHERE { ?e bpmn:elementId "B_error" ; bpmn:eventKind ?kind ;
        bpmn:eventDefinition ?def ; bpmn:attachedTo/bpmn:elementId "S_transaction" }""") \
        == [("boundaryEvent", "errorEventDefinition")]
    flows = handmade.rows("""SELECT ?id ?cond ?default WHERE { ?f a bpmn:SequenceFlow ; bpmn:elementId ?id ;
        bpmn:sourceRef/bpmn:elementId "Gateway_Valid" . OPTIONAL { ?f bpmn:conditionExpression ?cond }
        OPTIONAL { ?f bpmn:isDefault ?default } } ORDER BY ?id""")
    assert flows == [("Flow_Invalid", None, True), ("Flow_Valid", "${valid}", None)]
    assert handmade.values("""SELECT ?n WHERE { ?l a bpmn:Lane ; bpmn:elementId "Lane_Finance" ;
        bpmn:flowElement/bpmn:elementId ?n }""") == sorted(
        ["Event_WaitOneDay", "InvoiceCall", "Boundary_Timeout", "Escalate", "End_Escalated"])
    assert handmade.values("""SELECT ?p WHERE { ?x bpmn:elementId "Participant_Seller" ;
        bpmn:process/bpmn:elementId ?p }""") == ["Process_Order"]
    assert handmade.rows("""SELECT ?s ?t WHERE { ?m a bpmn:MessageFlow ; bpmn:elementId "MessageFlow_Order" ;
        bpmn:sourceRef/bpmn:elementId ?s ; bpmn:targetRef/bpmn:elementId ?t }""") \
        == [("Participant_Customer", "Start_OrderReceived")]
    assert handmade.values("""SELECT ?sub WHERE { ?x bpmn:elementId "ShipTask" ;
        bpmn:subProcessOf/bpmn:elementId ?sub }""") == ["Ship"]
    assert handmade.values("""SELECT ?c WHERE { ?x bpmn:elementId "InvoiceCall" ; bpmn:calledElement ?c }""") \
        == ["Process_Invoicing"]
    assert handmade.values("""SELECT ?d WHERE { ?x bpmn:elementId "Process_Order" ; bpmn:documentation ?d }""") \
        == ["Handles one customer order from receipt to confirmation."]
    assert handmade.values("""SELECT ?x WHERE { ?x bpmn:elementId "Vendor_Task" }""") == []
    assert handmade.values("""SELECT ?e WHERE { ?d a bpmn:Definitions ; bpmn:exporter ?e }""") == ["processkg tests"]


# ---------------------------------------------------------------- real models

def test_reader_counts_match_the_independent_count_on_all_real_bpmn():
    path = SHARED / "stats" / "bpmn_stats.tsv"
    with path.open(encoding="utf-8") as fh:
        stats = list(csv.DictReader(fh, delimiter="\t"))
    broken, checked = [], 0
    for row in stats:
        file = SHARED / "bpmn" / row["source"] / row["file"]
        try:
            defs = bpmn.read_definitions(file, row["file"])
        except UnresolvedReferenceError as exc:
            broken.append((row["file"], exc.line))
            continue
        nodes = list(defs.nodes.values())
        got = {
            "processes": len(defs.processes), "participants": len(defs.participants), "lanes": len(defs.lanes),
            "tasks": sum(n.tag in bpmn.TASKS for n in nodes),
            "subprocesses": sum(n.tag in bpmn.SUBPROCESSES for n in nodes),
            "call_activities": sum(n.tag == "callActivity" for n in nodes),
            "gateways": sum(n.category == "gateway" for n in nodes),
            "events": sum(n.category == "event" for n in nodes),
            "sequence_flows": len(defs.flows), "message_flows": len(defs.message_flows),
        }
        assert got == {k: int(row[k]) for k in got}, row["file"]
        checked += 1
    assert checked == len(stats) - 3 == 205
    # three SAP Signavio exports have dangling sequence flows; the reader says where
    assert sorted(broken) == [("sap-signavio-19.9.0/B.1.0-export.bpmn", 429),
                              ("sap-signavio-19.9.0/B.2.0-export.bpmn", 1247),
                              ("sap-signavio-19.9.0/C.9.0-export.bpmn", 493)]


def test_miwg_invoice_model_next_pair_and_path_to_the_end(miwg):
    # reference/C.1.0.bpmn: Assign Approver -> Approve Invoice -> (approved?) -> Prepare Bank
    # Transfer -> Archive Invoice; the rejected branch loops back through Review Invoice.
    file = "miwg/reference/C.1.0.bpmn"

    def ask_next(a: str, b: str, path: str = "bpmn:next") -> bool:
        return miwg.ask(f"""ASK {{ ?a bpmn:elementId "{a}" ; kg:sourceFile "{file}" ; {path} ?b .
            ?b bpmn:elementId "{b}" ; kg:sourceFile "{file}" }}""")

    assert ask_next("assignApprover", "approveInvoice")
    assert ask_next("approveInvoice", "reviewInvoice")
    assert not ask_next("assignApprover", "archiveInvoice")
    assert ask_next("assignApprover", "archiveInvoice", "bpmn:next+")
    assert ask_next("reviewInvoice", "reviewInvoice", "bpmn:next+")  # the clarification loop
    assert not miwg.ask(f"""ASK {{ ?a bpmn:elementId "archiveInvoice" ; kg:sourceFile "{file}" ; bpmn:next ?b }}""")


def test_miwg_compensation_and_event_sub_process_are_not_next():
    # reference/C.6.0.bpmn: "Make Booking" contains compensation handlers (Cancel Hotel, Cancel
    # Flight: isForCompensation) and an event sub-process (Handle Compensation: triggeredByEvent)
    defs = bpmn.read_definitions(shared("bpmn", "miwg", "reference", "C.6.0.bpmn"))
    names = {n.id: n.name for n in defs.nodes.values()}
    pairs = {(names[a], names[b]) for a, b in bpmn.next_activities(defs)}
    assert ("Make Booking", "Book Hotel") in pairs and ("Make Booking", "Charge Credit Card") in pairs
    assert ("Book Hotel", "Charge Credit Card") in pairs  # leaving the sub-process
    for handler in ("Cancel Hotel", "Cancel Flight", "Handle Compensation"):
        assert not [p for p in pairs if handler in p], handler


# ---------------------------------------------------------------- errors

@pytest.mark.parametrize("name, line, tag, element, ref, message", [
    ("unresolved-sequenceflow.bpmn", 10, "sequenceFlow", "Flow_2", "Task_Ship",
     "sequenceFlow 'Flow_2' refers to 'Task_Ship', which is not declared"),
    ("sequenceflow-without-source.bpmn", 8, "sequenceFlow", "Flow_Orphan", "",
     "sequenceFlow 'Flow_Orphan' has no sourceRef, which is required"),
    ("unresolved-messageflow.bpmn", 7, "messageFlow", "MessageFlow_1", "Participant_Bank",
     "messageFlow 'MessageFlow_1' refers to 'Participant_Bank'"),
    ("unresolved-boundary.bpmn", 7, "boundaryEvent", "Boundary_Timeout", "Task_Wait",
     "boundaryEvent 'Boundary_Timeout' refers to 'Task_Wait'"),
])
def test_unresolved_references_name_file_line_tag_and_id(name, line, tag, element, ref, message):
    with pytest.raises(UnresolvedReferenceError, match=rf"^{name.replace('.', '[.]')}:{line}: {message}") as info:
        bpmn.read_definitions(INVALID / name, name)
    err = info.value
    assert (err.file, err.line, err.tag, err.element_id, err.ref) == (name, line, tag, element, ref)


def test_odata_given_as_bpmn_is_not_bpmn():
    with pytest.raises(NotBPMNError, match=r"HANDMADE_PURCHASING\.xml:\d+: root element is .*Edmx.*not a BPMN 2\.0"):
        bpmn.read_definitions(DATA / "odata" / "HANDMADE_PURCHASING.xml", "HANDMADE_PURCHASING.xml")
    with pytest.raises(NotBPMNError, match=r"API_SALES_ORDER_SRV\.edmx:\d+: root element is .*Edmx"):
        bpmn.read_definitions(shared("odata", "s4-a2x", "API_SALES_ORDER_SRV.edmx"), "API_SALES_ORDER_SRV.edmx")
