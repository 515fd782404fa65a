"""The typed context (``kg retrieve --context``) names the operations an agent can call on an entity set:
why each is listed, its HTTP method, the URL (and body) of a call and its parameters with their value helps.

On the A2X store (V2 function imports with and without sap:action-for, V4 bound actions and a bound
function) and on the session's operations store (a V2 parameter with a value help and known codes).
"""

from __future__ import annotations

import pytest

from processkg.graph.handle import open_store
from processkg.retrieve.context import render_set, set_context
from processkg.retrieve.retriever import Result

ID = "https://w3id.org/processkg/id/odata/"


@pytest.fixture(scope="module")
def a2x_graph(a2x_store):
    return open_store(a2x_store)


def operations(graph, service: str, entity_set: str) -> dict:
    return {op["name"]: op for op in set_context(graph, f"{ID}{service}/set/{entity_set}")["operations"]}


def text(graph, service: str, entity_set: str) -> str:
    result = Result(service, entity_set, 1.0, iri=f"{ID}{service}/set/{entity_set}")
    rendered = render_set(graph, result)
    start = rendered.index("operations (")
    return rendered[start : rendered.index("\nprocess", start) + 1]


def test_approval_steps_of_a_sales_order_take_its_key(a2x_graph):
    ops = operations(a2x_graph, "API_SALES_ORDER_SRV", "A_SalesOrder")
    assert sorted(ops) == ["rejectApprovalRequest", "releaseApprovalRequest"]
    release = ops["releaseApprovalRequest"]
    assert (release["how"], release["method"], release["returns"]) == (["takes the key"], "POST", "FunctionResult")
    assert release["call"] == "/sap/opu/odata/sap/API_SALES_ORDER_SRV/releaseApprovalRequest?SalesOrder='{SalesOrder}'"
    assert operations(a2x_graph, "API_SALES_ORDER_SRV", "A_SalesOrderItem") == {}  # its key is not their parameters


def test_sap_action_for_and_the_returned_set(a2x_graph):
    ops = operations(a2x_graph, "API_PRODUCTION_ORDER_2_SRV", "A_ProductionOrder_2")
    assert ops["ReleaseOrder"]["how"] == ["acts on"]
    assert ops["ConvertPlndOrder"]["how"] == ["returns"]
    assert {"CloseOrder", "TechlyCmpltOrder", "DeletionFlagOrder"} <= set(ops)
    cancel = operations(a2x_graph, "API_MATERIAL_DOCUMENT_SRV", "A_MaterialDocumentHeader")["Cancel"]
    assert cancel["how"] == ["acts on", "returns"]
    assert cancel["call"].endswith(
        "/Cancel?MaterialDocumentYear='{MaterialDocumentYear}'&MaterialDocument='{MaterialDocument}'"
        "&PostingDate=datetime'{PostingDate}'"
    )


def test_required_parameters_are_marked(a2x_graph):
    ops = operations(a2x_graph, "API_PRODUCTION_ORDER_2_SRV", "A_ProductionOrderOperation_2")
    params = {p["name"]: p for p in ops["ScheduleProductionOrderOperation"]["parameters"]}
    assert params["OpSchedulingMode"]["required"] and not params["OpSchedldStartDate"]["required"]
    assert "  - ManufacturingOrder: String(12), required" in text(
        a2x_graph, "API_PRODUCTION_ORDER_2_SRV", "A_ProductionOrderOperation_2"
    )


def test_v4_bound_operations_are_called_on_the_entity_or_the_collection(a2x_graph):
    billing = text(a2x_graph, "sap-s4-CE_BILLINGDOCUMENT_0001-v1", "BillingDocument")
    ns = "com.sap.gateway.srvd_a2x.api_billingdocument.v0001"
    root = "<sap-s4-CE_BILLINGDOCUMENT_0001-v1 service root>"
    assert (
        f"- PostToAccounting (bound): POST {root}/BillingDocument('{{BillingDocument}}')/{ns}.PostToAccounting\n"
        in billing
    )
    assert (
        f"- CreateFromSDDocument (bound): POST {root}/BillingDocument/{ns}.CreateFromSDDocument"
        ' with body {"_Control": ..., "_Reference": ...}; returns Collection(BillingDocument_Type)'
    ) in billing
    assert "  - _Control: D_BillgDocCrteFrmSDDocCtrlPP\n" in billing  # not required: Core.OptionalParameter
    po = text(a2x_graph, "CE_PURCHASEORDER_0001", "PurchaseOrder")
    assert "(bound): GET <CE_PURCHASEORDER_0001 service root>/PurchaseOrder('{PurchaseOrder}')/" in po
    assert "GetOutputBinaryData(); returns D_PurOrdGetOutputBinaryDataR" in po


def test_a_parameter_value_help_shows_its_codes(operations_store):
    graph = open_store(operations_store)
    quote = text(graph, "SD_F2187_CUST360_SRV", "C_QuotationWl_F1852")
    assert "- REJECT_ALL_ITEMS_QUOTE (takes the key): POST " in quote
    assert (
        '  - SalesDocumentRjcnReason: String; values from I_SalesDocumentRjcnReason (fixed): 00 "Assigned by the '
        'System (Internal)", 01 "Delivery date too late", 02 "Poor quality", 03 "Too expensive"'
    ) in quote


def test_v4_action_import_and_functions_with_parameters(operations_store):
    graph = open_store(operations_store)
    airports = operations(graph, "TripPin", "Airports")["GetNearestAirport"]
    assert airports["how"] == ["returns"] and airports["method"] == "GET"
    assert airports["call"] == "<TripPin service root>/GetNearestAirport(lat={lat},lon={lon})"
    people = operations(graph, "TripPin", "People")
    assert people["ShareTrip"]["call"].endswith(
        "/People('{UserName}')/Microsoft.OData.SampleService.Models.TripPin.ShareTrip"
    )
    assert people["GetFriendsTrips"]["call"].endswith("GetFriendsTrips(userName='{userName}')")


def test_an_entity_set_without_operations_shows_none(a2x_graph):
    rendered = render_set(
        a2x_graph,
        Result("API_SALES_ORDER_SRV", "A_SalesOrderItem", 1.0, iri=f"{ID}API_SALES_ORDER_SRV/set/A_SalesOrderItem"),
    )
    assert "operations (" not in rendered


def test_the_key_predicate_follows_the_key_element_not_the_alphabet(a2x_graph):
    """A_SalesOrderItemPartnerType's Key (API_SALES_ORDER_SRV.edmx, lines 282-286): SalesOrder,
    SalesOrderItem, PartnerFunction; sorted by name, PartnerFunction would come first."""
    context = set_context(a2x_graph, f"{ID}API_SALES_ORDER_SRV/set/A_SalesOrderItemPartner")
    assert [p["name"] for p in context["properties"][:3]] == ["SalesOrder", "SalesOrderItem", "PartnerFunction"]
    assert context["key_predicate"].startswith("A_SalesOrderItemPartner(SalesOrder=")


def test_an_operation_says_what_it_does_in_the_services_own_words(a2x_graph):
    """SAP's A2X services describe their function imports with ``Core.Description`` under an alias they never
    declare (no edmx:Reference includes the Core vocabulary): lifted all the same, and shown in the context."""
    ops = operations(a2x_graph, "API_OUTBOUND_DELIVERY_SRV", "A_OutbDeliveryHeader")
    assert ops["PostGoodsIssue"]["description"] == "Posts goods issue for outbound delivery."
    assert ops["ReverseGoodsIssue"]["description"] == "Reverses goods issue for outbound delivery."
    lines = text(a2x_graph, "API_OUTBOUND_DELIVERY_SRV", "A_OutbDeliveryHeader").splitlines()
    post = next(i for i, line in enumerate(lines) if line.startswith("- PostGoodsIssue "))
    assert lines[post + 1] == "  Posts goods issue for outbound delivery."
    # where the metadata says nothing more than the name and label, nothing is added
    release = operations(a2x_graph, "API_SALES_ORDER_SRV", "A_SalesOrder")["releaseApprovalRequest"]
    assert release["description"] == ""
