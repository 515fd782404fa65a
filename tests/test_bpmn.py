"""The BPMN 2.0 reader (sources/bpmn/bpmn_xml.py), ``bpmn:next``, and the lifted BPMN graph.

Hand-made models in tests/data/bpmn have known structure and known ``next`` pairs; the
real MIWG reference models and their exports by four tools check the reader against an
independent count and a known path through a business process.
"""

from __future__ import annotations

import csv
from collections import Counter

import pytest
from click.testing import CliRunner

from conftest import DATA, INVALID, SHARED, shared
from processkg.cli import main
from processkg.errors import DuplicateDeclarationError, FlowTooLargeError, MissingIdError, NotBPMNError
from processkg.sources.bpmn import bpmn_xml

ORDER_FLOW = DATA / "bpmn" / "order-flow.bpmn"
ALL_KINDS = DATA / "bpmn" / "all-kinds.bpmn"
EXPORTS = DATA / "bpmn-exports"  # small exports in the styles of other modelers (not in the handmade build)

ORDER_FLOW_NEXT = {
    ("CheckOrder", "ReserveStock"),
    ("CheckOrder", "Reject"),
    ("ReserveStock", "Fulfil"),
    ("Fulfil", "Pick"),
    ("Fulfil", "InvoiceCall"),
    ("Pick", "Pack"),
    ("Pick", "Label"),
    ("Pack", "Ship"),
    ("Label", "Ship"),
    ("Ship", "ShipTask"),
    ("Ship", "InvoiceCall"),
    ("ShipTask", "InvoiceCall"),
    ("CancelSub", "Cancel"),
    ("InvoiceCall", "SendConfirmation"),
    ("InvoiceCall", "Escalate"),
}

ALL_KINDS_NEXT = {
    ("T_task", "T_user"),
    ("T_user", "T_service"),
    ("T_service", "T_send"),
    ("T_send", "T_receive"),
    ("T_receive", "T_manual"),
    ("T_manual", "T_rule"),
    ("T_rule", "T_script"),
    ("T_script", "S_adhoc"),  # through five gateways and three events
    ("S_adhoc", "A_one"),
    ("S_adhoc", "A_two"),
    ("S_adhoc", "S_transaction"),
    ("A_one", "S_transaction"),
    ("A_two", "S_transaction"),  # ad-hoc activities have no flows
    ("S_transaction", "Tx_book"),
    ("S_transaction", "S_plain"),
    ("Tx_book", "S_plain"),
    ("S_plain", "P_inner"),
    ("S_plain", "C_call"),
    ("P_inner", "C_call"),
}


@pytest.fixture(scope="module")
def order_flow() -> bpmn_xml.Definitions:
    return bpmn_xml.read_definitions(ORDER_FLOW, "order-flow.bpmn")


@pytest.fixture(scope="module")
def all_kinds() -> bpmn_xml.Definitions:
    return bpmn_xml.read_definitions(ALL_KINDS, "all-kinds.bpmn")


# ---------------------------------------------------------------- reader


def test_collaboration_participants_and_message_flows(order_flow):
    assert order_flow.collaborations == [("Collaboration_Order", "Order collaboration", 27)]
    assert {p.id: p.process for p in order_flow.participants.values()} == {
        "Participant_Seller": "Process_Order",
        "Participant_Customer": "",
    }
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
        "userTask",
        "Check the order against stock and credit.",
    )
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
    for task in bpmn_xml.TASKS:
        assert tags[task] >= 1, task
    for kind in (
        "subProcess",
        "adHocSubProcess",
        "transaction",
        "callActivity",
        *bpmn_xml.GATEWAYS,
        "startEvent",
        "endEvent",
        "intermediateCatchEvent",
        "intermediateThrowEvent",
        "boundaryEvent",
    ):
        assert tags[kind] >= 1, kind
    categories = Counter(n.category for n in all_kinds.nodes.values())
    assert categories == {"activity": 16, "gateway": 5, "event": 9}
    definitions = {n.id: n.event_definitions for n in all_kinds.nodes.values() if n.event_definitions}
    assert definitions == {
        "Start": ["timerEventDefinition"],
        "E_message": ["messageEventDefinition"],
        "E_signal": ["signalEventDefinition"],
        "E_escalate": ["escalationEventDefinition"],
        "B_error": ["errorEventDefinition"],
        "End_terminate": ["terminateEventDefinition"],
    }
    assert all_kinds.processes["Process_AllKinds"].executable is True


# ---------------------------------------------------------------- bpmn:next


def test_next_through_gateways_events_and_sub_processes(order_flow):
    assert set(bpmn_xml.next_activities(order_flow)) == ORDER_FLOW_NEXT


def test_next_through_every_gateway_kind_and_sub_process_kind(all_kinds):
    assert set(bpmn_xml.next_activities(all_kinds)) == ALL_KINDS_NEXT


def test_next_is_lifted_for_every_pair(handmade):
    pairs = set(
        handmade.rows("""SELECT ?a ?b WHERE { ?x bpmn:next ?y .
        ?x bpmn:elementId ?a ; kg:sourceFile "bpmn/order-flow.bpmn" . ?y bpmn:elementId ?b }""")
    )
    assert pairs == ORDER_FLOW_NEXT


# ---------------------------------------------------------------- lifted graph


def test_lifted_kinds_flows_lanes_and_links(handmade):
    kinds = dict(
        handmade.rows("""SELECT ?id ?kind WHERE { ?a a bpmn:Activity ; bpmn:kind ?kind ;
        bpmn:elementId ?id ; kg:sourceFile "bpmn/all-kinds.bpmn" }""")
    )
    assert {
        kinds[i] for i in ("T_task", "T_user", "T_service", "T_send", "T_receive", "T_manual", "T_rule", "T_script")
    } == set(bpmn_xml.TASKS)
    assert set(
        handmade.values("""SELECT ?k WHERE { ?g a bpmn:Gateway ; bpmn:gatewayKind ?k ;
        kg:sourceFile "bpmn/all-kinds.bpmn" }""")
    ) == set(bpmn_xml.GATEWAYS)
    assert handmade.rows("""SELECT ?kind ?def WHERE { ?e bpmn:elementId "B_error" ; bpmn:eventKind ?kind ;
        bpmn:eventDefinition ?def ; bpmn:attachedTo/bpmn:elementId "S_transaction" }""") == [
        ("boundaryEvent", "errorEventDefinition")
    ]
    flows = handmade.rows("""SELECT ?id ?cond ?default WHERE { ?f a bpmn:SequenceFlow ; bpmn:elementId ?id ;
        bpmn:sourceRef/bpmn:elementId "Gateway_Valid" . OPTIONAL { ?f bpmn:conditionExpression ?cond }
        OPTIONAL { ?f bpmn:isDefault ?default } } ORDER BY ?id""")
    assert flows == [("Flow_Invalid", None, True), ("Flow_Valid", "${valid}", None)]
    assert handmade.values("""SELECT ?n WHERE { ?l a bpmn:Lane ; bpmn:elementId "Lane_Finance" ;
        bpmn:flowElement/bpmn:elementId ?n }""") == sorted(
        ["Event_WaitOneDay", "InvoiceCall", "Boundary_Timeout", "Escalate", "End_Escalated"]
    )
    assert handmade.values("""SELECT ?p WHERE { ?x bpmn:elementId "Participant_Seller" ;
        bpmn:process/bpmn:elementId ?p }""") == ["Process_Order"]
    assert handmade.rows("""SELECT ?s ?t WHERE { ?m a bpmn:MessageFlow ; bpmn:elementId "MessageFlow_Order" ;
        bpmn:sourceRef/bpmn:elementId ?s ; bpmn:targetRef/bpmn:elementId ?t }""") == [
        ("Participant_Customer", "Start_OrderReceived")
    ]
    assert handmade.values("""SELECT ?sub WHERE { ?x bpmn:elementId "ShipTask" ;
        bpmn:subProcessOf/bpmn:elementId ?sub }""") == ["Ship"]
    assert handmade.values("""SELECT ?c WHERE { ?x bpmn:elementId "InvoiceCall" ; bpmn:calledElement ?c }""") == [
        "Process_Invoicing"
    ]
    assert handmade.values("""SELECT ?d WHERE { ?x bpmn:elementId "Process_Order" ; bpmn:documentation ?d }""") == [
        "Handles one customer order from receipt to confirmation."
    ]
    assert handmade.values("""SELECT ?x WHERE { ?x bpmn:elementId "Vendor_Task" }""") == []
    assert handmade.values("""SELECT ?e WHERE { ?d a bpmn:Definitions ; bpmn:exporter ?e }""") == ["processkg tests"]


# ---------------------------------------------------------------- real models

#: Flows the reader leaves out of three SAP Signavio exports (a reference declared nowhere, or none).
SIGNAVIO_DROPPED = {
    "sap-signavio-19.9.0/B.1.0-export.bpmn": [429, 434],
    "sap-signavio-19.9.0/B.2.0-export.bpmn": [1247, 1252, 1257, 1262, 1267, 1272],
    "sap-signavio-19.9.0/C.9.0-export.bpmn": [493],
}


def test_reader_counts_match_the_independent_count_on_all_real_bpmn():
    path = SHARED / "stats" / "bpmn_stats.tsv"
    with path.open(encoding="utf-8") as fh:
        stats = list(csv.DictReader(fh, delimiter="\t"))
    dropped = {}
    for row in stats:
        file = SHARED / "bpmn" / row["source"] / row["file"]
        defs = bpmn_xml.read_definitions(file, row["file"])
        if defs.dropped:
            dropped[row["file"]] = [line for _tag, _id, line in defs.dropped]
        nodes = list(defs.nodes.values())
        got = {
            "processes": len(defs.processes),
            "participants": len(defs.participants),
            "lanes": len(defs.lanes),
            "tasks": sum(n.tag in bpmn_xml.TASKS for n in nodes),
            "subprocesses": sum(n.tag in bpmn_xml.SUBPROCESSES for n in nodes),
            "call_activities": sum(n.tag == "callActivity" for n in nodes),
            "gateways": sum(n.category == "gateway" for n in nodes),
            "events": sum(n.category == "event" for n in nodes),
            "sequence_flows": len(defs.flows) + len(defs.dropped),
            "message_flows": len(defs.message_flows),
        }
        assert got == {k: int(row[k]) for k in got}, row["file"]
    assert len(stats) == 208
    # three SAP Signavio exports have dangling sequence flows: only those are left out, with a warning
    assert dropped == SIGNAVIO_DROPPED


def test_signavio_export_keeps_its_process_and_warns_for_the_dangling_flow():
    defs = bpmn_xml.read_definitions(
        shared("bpmn", "miwg", "sap-signavio-19.9.0", "C.9.0-export.bpmn"), "C.9.0-export.bpmn"
    )
    assert defs.warnings == [
        "C.9.0-export.bpmn:493: sequenceFlow 'sid-02C7B32C-AE9C-4236-B4D3-2B3AA0F07853' has no sourceRef, which is "
        f"required (see {bpmn_xml.SPEC} §10.2); the sequenceFlow is left out"
    ]
    assert "sid-02C7B32C-AE9C-4236-B4D3-2B3AA0F07853" not in defs.flows and len(defs.flows) > 10
    assert bpmn_xml.next_activities(defs)


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
    defs = bpmn_xml.read_definitions(shared("bpmn", "miwg", "reference", "C.6.0.bpmn"))
    names = {n.id: n.name for n in defs.nodes.values()}
    pairs = {(names[a], names[b]) for a, b in bpmn_xml.next_activities(defs)}
    assert ("Make Booking", "Book Hotel") in pairs and ("Make Booking", "Charge Credit Card") in pairs
    assert ("Book Hotel", "Charge Credit Card") in pairs  # leaving the sub-process
    for handler in ("Cancel Hotel", "Cancel Flight", "Handle Compensation"):
        assert not [p for p in pairs if handler in p], handler


# ---------------------------------------------------------------- errors


@pytest.mark.parametrize(
    "name, line, tag, element, message, kept",
    [
        (
            "unresolved-sequenceflow.bpmn",
            10,
            "sequenceFlow",
            "Flow_2",
            "sequenceFlow 'Flow_2' refers to 'Task_Ship', which is not declared",
            {"Flow_1"},
        ),
        (
            "sequenceflow-without-source.bpmn",
            8,
            "sequenceFlow",
            "Flow_Orphan",
            "sequenceFlow 'Flow_Orphan' has no sourceRef, which is required",
            set(),
        ),
        (
            "unresolved-messageflow.bpmn",
            7,
            "messageFlow",
            "MessageFlow_1",
            "messageFlow 'MessageFlow_1' refers to 'Participant_Bank'",
            set(),
        ),
        (
            "unresolved-boundary.bpmn",
            7,
            "boundaryEvent",
            "Boundary_Timeout",
            "boundaryEvent 'Boundary_Timeout' refers to 'Task_Wait'",
            set(),
        ),
    ],
)
def test_a_dangling_reference_leaves_out_its_element_with_a_warning(name, line, tag, element, message, kept):
    defs = bpmn_xml.read_definitions(INVALID / name, name)
    assert defs.dropped[0] == (tag, element, line)
    assert defs.warnings[0].startswith(f"{name}:{line}: {message}")
    assert defs.warnings[0].endswith(f"; the {tag} is left out")
    assert element not in defs.nodes and element not in defs.flows
    assert element not in {m.id for m in defs.message_flows}
    if tag == "sequenceFlow":
        assert set(defs.flows) == kept


def test_qname_references_resolve_through_the_target_namespace():
    defs = bpmn_xml.read_definitions(EXPORTS / "qname-references.bpmn", "qname-references.bpmn")
    assert defs.warnings == [] and defs.dropped == []
    assert {(f.id, f.source, f.target) for f in defs.flows.values()} == {
        ("Flow_1", "Start", "Task_1"),
        ("Flow_2", "Task_1", "Task_2"),
    }
    assert [(m.source, m.target) for m in defs.message_flows] == [("Participant_2", "Start")]
    assert defs.participants["Participant_1"].process == "Process_1"
    assert defs.nodes["Timer"].attached_to == "Task_1"
    assert [lane.nodes for lane in defs.lanes] == [["Task_1"]]
    assert bpmn_xml.next_activities(defs) == [("Task_1", "Task_2")]


def test_a_qname_with_another_namespace_is_not_taken_for_a_local_id(tmp_path):
    text = (EXPORTS / "qname-references.bpmn").read_text(encoding="utf-8")
    path = tmp_path / "other.bpmn"
    path.write_text(text.replace('xmlns:tns="http://example.com/qname"', 'xmlns:tns="http://example.com/other"'))
    defs = bpmn_xml.read_definitions(path, "other.bpmn")
    assert ("sequenceFlow", "Flow_1", 22) in defs.dropped and not defs.flows


def test_lanes_may_list_data_object_and_data_store_references():
    defs = bpmn_xml.read_definitions(EXPORTS / "lane-data-references.bpmn", "lane-data-references.bpmn")
    assert defs.warnings == []
    assert [(lane.nodes, lane.data) for lane in defs.lanes] == [
        (["Task_Write"], ["DataObjectReference_Order", "DataStoreReference_Db"])
    ]


@pytest.mark.parametrize(
    "name, error, message",
    [
        (
            "duplicate-id.bpmn",
            DuplicateDeclarationError,
            r"^duplicate-id\.bpmn:8: task id 'Task_1' is already declared by the task on line 7",
        ),
        ("missing-id.bpmn", MissingIdError, r"^missing-id\.bpmn:7: task has no id"),
    ],
)
def test_duplicate_and_missing_ids_are_errors(name, error, message):
    with pytest.raises(error, match=message):
        bpmn_xml.read_definitions(INVALID / name, name)


def test_duplicate_and_missing_ids_are_warnings_when_not_strict():
    defs = bpmn_xml.read_definitions(INVALID / "duplicate-id.bpmn", "duplicate-id.bpmn", strict=False)
    assert defs.nodes["Task_1"].name == "Check" and defs.dropped == [("task", "Task_1", 8)]
    assert defs.warnings[0].startswith("duplicate-id.bpmn:8: task id 'Task_1' is already declared")
    defs = bpmn_xml.read_definitions(INVALID / "missing-id.bpmn", "missing-id.bpmn", strict=False)
    assert list(defs.nodes) == ["Task_1"] and defs.dropped == [("task", "", 7), ("task", "", 8)]


def test_kg_build_fails_on_a_duplicate_id_and_warns_with_on_error_warn(tmp_path):
    runner = CliRunner()
    failed = runner.invoke(
        main, ["build", "--bpmn", str(INVALID / "duplicate-id.bpmn"), "--out", str(tmp_path / "a.ttl")]
    )
    assert failed.exit_code == 2 and "duplicate-id.bpmn:8: task id 'Task_1' is already declared" in failed.output
    assert not (tmp_path / "a.ttl").exists()
    warned = runner.invoke(
        main,
        ["build", "--bpmn", str(INVALID / "duplicate-id.bpmn"), "--out", str(tmp_path / "b.ttl"), "--on-error", "warn"],
    )
    assert warned.exit_code == 0, warned.output
    assert "warning: duplicate-id.bpmn:8: task id 'Task_1' is already declared" in warned.output
    assert "Check" in (tmp_path / "b.ttl").read_text() and "Ship" not in (tmp_path / "b.ttl").read_text()


def test_odata_given_as_bpmn_is_not_bpmn():
    with pytest.raises(NotBPMNError, match=r"HANDMADE_PURCHASING\.xml:\d+: root element is .*Edmx.*not a BPMN 2\.0"):
        bpmn_xml.read_definitions(DATA / "odata" / "HANDMADE_PURCHASING.xml", "HANDMADE_PURCHASING.xml")
    with pytest.raises(NotBPMNError, match=r"API_SALES_ORDER_SRV\.edmx:\d+: root element is .*Edmx"):
        bpmn_xml.read_definitions(shared("odata", "s4-a2x", "API_SALES_ORDER_SRV.edmx"), "API_SALES_ORDER_SRV.edmx")


def _fan_in_out(ways: int) -> str:
    """``ways`` tasks into one gateway that splits into ``ways`` tasks: ``ways ** 2`` next pairs."""
    parts = ['<definitions xmlns="http://www.omg.org/spec/BPMN/20100524/MODEL" id="D" targetNamespace="urn:t">']
    parts.append('<process id="P">\n<exclusiveGateway id="G"/>')
    for i in range(ways):
        parts.append(
            f'<task id="I{i}"/><task id="O{i}"/><sequenceFlow id="A{i}" sourceRef="I{i}" targetRef="G"/>'
            f'<sequenceFlow id="B{i}" sourceRef="G" targetRef="O{i}"/>'
        )
    return "\n".join(parts + ["</process></definitions>"])


def test_next_pairs_over_the_bound_are_refused_naming_the_gateway(tmp_path):
    path = tmp_path / "fan.bpmn"
    path.write_text(_fan_in_out(10), encoding="utf-8")
    defs = bpmn_xml.read_definitions(path, "fan.bpmn")
    assert len(bpmn_xml.next_activities(defs, limit=100)) == 100
    with pytest.raises(FlowTooLargeError) as caught:
        bpmn_xml.next_activities(defs, limit=99)
    assert str(caught.value) == (
        "fan.bpmn:3: exclusiveGateway 'G': the model derives more than 99 bpmn:next pairs "
        "(it joins 10 flows and leads to 10 activities); split the gateway or the model"
    )


def test_kg_build_skips_a_quadratic_gateway_with_on_error_warn(tmp_path):
    folder = tmp_path / "models"
    folder.mkdir()
    (folder / "fan.bpmn").write_text(_fan_in_out(400), encoding="utf-8")  # 160,000 pairs
    (folder / "order-flow.bpmn").write_bytes(ORDER_FLOW.read_bytes())
    runner = CliRunner()
    failed = runner.invoke(main, ["build", "--bpmn", str(folder), "--out", str(tmp_path / "a.ttl")])
    assert failed.exit_code == 2, failed.output
    assert "error: models/fan.bpmn:3: exclusiveGateway 'G': the model derives more than 100,000" in failed.output
    warned = runner.invoke(
        main, ["build", "--bpmn", str(folder), "--out", str(tmp_path / "b.ttl"), "--on-error", "warn"]
    )
    assert warned.exit_code == 0, warned.output
    assert "skipped 1 file(s):\n  models/fan.bpmn:3: exclusiveGateway 'G'" in warned.output
    assert "ReserveStock" in (tmp_path / "b.ttl").read_text() and "O399" not in (tmp_path / "b.ttl").read_text()
