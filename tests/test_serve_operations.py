"""kg serve: calls of function imports, actions and functions over real HTTP on a free loopback port.

Two servers, each started once for the module: one on the session's A2X store (SAP's release, cancel,
post and approval steps), one on the session's operations store (a V2 parameter with a value help and
known codes, V4 bound actions and an action import, TripPin's functions). Tests that change data start
from the generated records (``POST /$reset``).
"""

from __future__ import annotations

import json

import httpx
import pytest

from conftest import running
from processkg.graph.handle import StoreHandle
from processkg.serve.app import open_server
from processkg.serve.operations import EFFECTS
from processkg.validate.calls import Validator, read_calls

PRODUCTION = "/sap/opu/odata/sap/API_PRODUCTION_ORDER_2_SRV/"
SO = "/sap/opu/odata/sap/API_SALES_ORDER_SRV/"
BILLING = "/sap/opu/odata/sap/API_BILLING_DOCUMENT_SRV/"
BD = "/sap/opu/odata4/sap/api_billingdocument/srvd_a2x/sap/api_billingdocument/0001/"
BD_NS = "com.sap.gateway.srvd_a2x.api_billingdocument.v0001."
PO = "/sap/opu/odata4/sap/api_purchaseorder_2/srvd_a2x/sap/api_purchaseorder_2/0001/"
PO_NS = "com.sap.gateway.srvd_a2x.api_purchaseorder_2.v0001."
CUST360 = "/sap/opu/odata/sap/SD_F2187_CUST360_SRV/"
SO_V4 = "/sap/opu/odata4/sap/c_salesordermanage_sd/srvd_a2x/sap/c_salesordermanage_sd/0001/"
SO_NS = "com.sap.gateway.srvd.c_salesordermanage_sd.v0001."
TRIPPIN = "/sap/opu/odata4/sap/trippin/"
ORDER = "0000000001"  # the first generated key of a 10-character key


@pytest.fixture(scope="module")
def a2x_served(a2x_store, tmp_path_factory):
    record = tmp_path_factory.mktemp("serve-operations") / "calls.jsonl"
    with running(open_server(StoreHandle.open(a2x_store), record=record, csrf=False, allow_reset=True)) as client:
        yield client, record


@pytest.fixture
def a2x(a2x_served):
    client, _record = a2x_served
    assert client.post("/$reset").status_code == 204
    return client


@pytest.fixture(scope="module")
def other(operations_store):
    with running(open_server(StoreHandle.open(operations_store), csrf=False)) as client:
        yield client


def message(response: httpx.Response) -> str:
    return json.loads(response.headers["sap-message"])["message"]


def details(response: httpx.Response) -> list[tuple[str, str]]:
    error = response.json()["error"]
    entries = error["innererror"]["errordetails"] if "innererror" in error else error["details"]
    return [(d["code"], d["target"]) for d in entries]


# ---------------------------------------------------------------- known effects


def test_releasing_a_production_order_sets_its_released_flag(a2x):
    before = {k: v for k, v in a2x.get(PRODUCTION + f"A_ProductionOrder_2('{ORDER}')").json()["d"].items()}
    released = a2x.post(PRODUCTION + f"ReleaseOrder?ManufacturingOrder='{ORDER}'")
    assert released.status_code == 200, released.text
    # OrderIsReleased is an ABAP flag, Edm.String of length 1: set is "X"
    assert message(released) == f"ReleaseOrder: set OrderIsReleased to X on A_ProductionOrder_2('{ORDER}')"
    after = a2x.get(PRODUCTION + f"A_ProductionOrder_2('{ORDER}')").json()["d"]
    assert before["OrderIsReleased"] != "X" and after["OrderIsReleased"] == "X"
    assert after["__metadata"]["etag"] != before["__metadata"]["etag"], "a changed entity has a new ETag"
    unchanged = ("OrderIsReleased", "__metadata")
    assert {k: v for k, v in after.items() if k not in unchanged} == {
        k: v for k, v in before.items() if k not in unchanged
    }, "nothing else changed"
    assert a2x.post("/$reset").status_code == 204
    assert a2x.get(PRODUCTION + f"A_ProductionOrder_2('{ORDER}')").json()["d"] == before


def test_cancelling_a_billing_document_and_posting_one_to_accounting(a2x):
    cancelled = a2x.post(BILLING + f"Cancel?BillingDocument='{ORDER}'")
    assert cancelled.status_code == 200 and cancelled.json() == {"d": {"results": []}}  # Collection(CancelResult)
    read = a2x.get(BILLING + f"A_BillingDocument('{ORDER}')?$select=BillingDocumentIsCancelled").json()["d"]
    assert read["BillingDocumentIsCancelled"] is True
    posted = a2x.post(BD + f"BillingDocument('{ORDER}')/{BD_NS}PostToAccounting")
    assert posted.status_code == 204, posted.text
    assert "set AccountingPostingStatus to C on BillingDocument('0000000001')" in message(posted)
    assert a2x.get(BD + f"BillingDocument('{ORDER}')").json()["AccountingPostingStatus"] == "C"


def test_the_effects_table_names_properties_of_the_a2x_services_that_have_the_operation(a2x_store):
    model = Validator(StoreHandle.open(a2x_store)).model
    for name, changes in EFFECTS.items():
        services = {svc.name for svc in model.services.values() for op in svc.operations if op.name == name}
        assert services, f"{name} is no operation of A2X"
        types = [t for t in model.types.values() if t.service in services]
        for prop, _value in changes:
            assert any(prop in t.props for t in types), (name, prop)


# ---------------------------------------------------------------- accepted no-ops


def test_an_approval_with_no_known_effect_is_accepted_and_changes_nothing(a2x):
    before = a2x.get(SO + f"A_SalesOrder('{ORDER}')").json()["d"]
    answer = a2x.post(SO + f"releaseApprovalRequest?SalesOrder='{ORDER}'")
    assert answer.status_code == 200, answer.text
    assert answer.json() == {
        "d": {"releaseApprovalRequest": {"__metadata": {"type": "API_SALES_ORDER_SRV.FunctionResult"}}}
    }
    assert "its effect on the data is not known to this server, so nothing changed (recorded)" in message(answer)
    assert a2x.get(SO + f"A_SalesOrder('{ORDER}')").json()["d"] == before


def test_a_bound_function_and_a_collection_bound_action(a2x):
    pdf = a2x.get(PO + f"PurchaseOrder('{ORDER}')/{PO_NS}GetOutputBinaryData")
    assert pdf.status_code == 200, pdf.text
    assert pdf.json() == {"@odata.context": f"$metadata#{PO_NS}D_PurOrdGetOutputBinaryDataR"}
    created = a2x.post(BD + f"BillingDocument/{BD_NS}CreateFromSDDocument", json={"_Control": {}})
    assert created.status_code == 200, created.text
    assert created.json()["value"] == []


def test_an_entity_named_but_absent_is_not_found(a2x):
    missing = a2x.post(SO + "releaseApprovalRequest?SalesOrder='9999999999'")
    assert missing.status_code == 404
    assert missing.json()["error"]["message"]["value"] == (
        "releaseApprovalRequest acts on A_SalesOrder, which has no entity SalesOrder='9999999999'"
    )
    bound = a2x.post(BD + f"BillingDocument('9999999999')/{BD_NS}PostToAccounting")
    assert bound.status_code == 404


# ---------------------------------------------------------------- rejected calls


def test_a_rejected_call_names_each_violation_and_touches_nothing(a2x):
    cases = {
        "wrong method": ("GET", SO + f"releaseApprovalRequest?SalesOrder='{ORDER}'", [("wrong-method", "")]),
        "unknown operation": ("POST", SO + f"releaseApproval?SalesOrder='{ORDER}'", [("unknown-operation", "")]),
        "unknown parameter": (
            "POST",
            SO + f"releaseApprovalRequest?Order='{ORDER}'",
            [("unknown-parameter", "/Order")],
        ),
        "unquoted string": ("POST", SO + "releaseApprovalRequest?SalesOrder=1", [("datatype", "/SalesOrder")]),
        "GET of an action": ("GET", BD + f"BillingDocument('{ORDER}')/{BD_NS}PostToAccounting", [("wrong-method", "")]),
    }
    for method, url, expected in cases.values():
        answer = a2x.request(method, url)
        assert answer.status_code == 400, (url, answer.text)
        assert answer.json()["error"]["code"] == "invalid-call"
        assert details(answer) == expected
    hint = a2x.get(SO + f"releaseApprovalRequest?SalesOrder='{ORDER}'").json()["error"]["message"]["value"]
    assert hint.endswith('releaseApprovalRequest is called with POST (m:HttpMethod="POST"), not GET; send a POST')


def test_an_invented_code_is_rejected_then_the_repaired_call_accepted(other):
    quotation = other.get(CUST360 + "C_QuotationWl_F1852?$top=1").json()["d"]["results"][0]["SalesQuotation"]
    url = CUST360 + f"REJECT_ALL_ITEMS_QUOTE?SalesQuotation='{quotation}'&SalesDocumentRjcnReason="
    rejected = other.post(url + "'99'")
    assert rejected.status_code == 400
    assert details(rejected) == [("invalid-code", "/SalesDocumentRjcnReason")]
    assert "(codelist: 00, 01, 02, 03)" in rejected.json()["error"]["innererror"]["errordetails"][0]["message"]
    accepted = other.post(url + "'03'")
    assert accepted.status_code == 200, accepted.text
    assert "REJECT_ALL_ITEMS_QUOTE: accepted" in message(accepted)


def test_v4_action_import_bound_actions_and_functions(other):
    assert other.post(SO_V4 + "DiscardChanges").status_code == 204
    item = other.get(SO_V4 + "SalesOrderItem?$top=1").json()["value"][0]
    key = f"SalesOrderItem(SalesOrder='{item['SalesOrder']}',SalesOrderItem='{item['SalesOrderItem']}')"
    prices = other.post(SO_V4 + f"{key}/{SO_NS}UpdatePrices", json={"PricingType": "B"})
    assert prices.status_code == 204, prices.text
    too_long = other.post(SO_V4 + f"{key}/{SO_NS}UpdatePrices", json={"PricingType": "BB"})
    assert too_long.status_code == 400 and details(too_long) == [("max-length", "/PricingType")]
    nearest = other.get(TRIPPIN + "GetNearestAirport(lat=33.9,lon=-118.4)")
    assert nearest.status_code == 200, nearest.text
    assert nearest.json() == {"@odata.context": "$metadata#Microsoft.OData.SampleService.Models.TripPin.Airport"}
    missing = other.get(TRIPPIN + "GetNearestAirport(lat=33.9)")
    assert missing.status_code == 400 and details(missing) == [("missing-required", "/lon")]


def test_a_failing_operation_rolls_back_its_change_set(a2x):
    release = {
        "id": "1",
        "method": "POST",
        "url": f"BillingDocument('{ORDER}')/{BD_NS}PostToAccounting",
        "atomicityGroup": "g",
    }
    wrong = {
        "id": "2",
        "method": "POST",
        "url": f"BillingDocument('{ORDER}')/{BD_NS}PostToAcounting",
        "atomicityGroup": "g",
    }
    answer = a2x.post(BD + "$batch", json={"requests": [release, wrong]})
    assert answer.status_code == 200, answer.text
    [failed] = answer.json()["responses"]  # a failed change set answers with its failure
    assert failed["status"] == 400
    assert [d["code"] for d in failed["body"]["error"]["details"]] == ["unknown-operation"]
    status = a2x.get(BD + f"BillingDocument('{ORDER}')").json()["AccountingPostingStatus"]
    assert status != "C", "the change set failed as a whole"


# ---------------------------------------------------------------- the recording


def test_kg_validate_gives_the_verdicts_the_server_gave(a2x_served, a2x_store):
    client, record = a2x_served
    client.post("/$reset")
    client.post(SO + f"releaseApprovalRequest?SalesOrder='{ORDER}'")
    client.get(SO + f"releaseApprovalRequest?SalesOrder='{ORDER}'")
    client.post(BD + f"BillingDocument('{ORDER}')/{BD_NS}PostToAccounting")
    client.post(BD + f"BillingDocument/{BD_NS}CreateFromSDDocument", json={"_Control": "today"})
    calls = read_calls(record)
    verdicts = Validator(StoreHandle.open(a2x_store)).validate_calls(calls)
    for (_line, call), result in zip(calls, verdicts, strict=True):
        if "/$" in call["url"]:  # $reset, $batch: server administration and envelopes, not OData calls
            continue
        server_said_invalid = call.get("error") == "invalid-call"
        assert result.valid is not server_said_invalid, (call, result.as_dict())
    operation_calls = [c for _l, c in calls if "ApprovalRequest" in c["url"] or BD_NS in c["url"]]
    assert [c["status"] for c in operation_calls][-4:] == [200, 400, 204, 400]
