"""kg validate on calls of service operations: V2 function imports, V4 actions and functions.

Real metadata throughout: the A2X corpus (V2 function imports such as ``releaseApprovalRequest``,
``Cancel`` and ``ScheduleProductionOrderOperation``; V4 ``PostToAccounting``, ``CreateFromSDDocument``,
``GetOutputBinaryData``), two Fiori services (a V2 function import whose parameter has a value help,
V4 bound actions and an action import) and OASIS's TripPin (V4 functions with parameters in the URL).
``tests/invalid/operation-calls.jsonl`` holds one call per violation kind (see tests/invalid/README.md).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from conftest import INVALID
from processkg.cli import main
from processkg.graph.handle import StoreHandle
from processkg.validate.calls import KINDS, Validator, read_calls
from processkg.validate.operation_parameters import uri_value

CALLS = INVALID / "operation-calls.jsonl"
#: id -> the (kind, path) pairs kg validate reports for that line of CALLS.
EXPECTED = {
    "good-v2": [],
    "good-v2-typed": [],
    "good-v4-bound": [],
    "good-v4-collection": [],
    "good-v4-function": [],
    "unknown-operation": [("unknown-operation", "")],
    "unknown-bound-operation": [("unknown-operation", "")],
    "wrong-binding": [("unknown-operation", "")],
    "wrong-method": [("wrong-method", "")],
    "wrong-method-action": [("wrong-method", "")],
    "wrong-method-function": [("wrong-method", "")],
    "unknown-parameter": [("unknown-parameter", "/SalesOrdr")],
    "missing-required": [("missing-required", "/OpSchedulingMode")],
    "datatype-unquoted": [("datatype", "/SalesOrder")],
    "datatype-no-prefix": [("datatype", "/PostingDate")],
    "datatype-body": [("datatype", "/_Control")],
    "max-length": [("max-length", "/MaterialDocumentYear")],
    "body-not-query": [("malformed", "")],
}
SO_V4 = "/sap/opu/odata4/sap/c_salesordermanage_sd/srvd/sap/c_salesordermanage_sd/0001/"
SO_NS = "com.sap.gateway.srvd.c_salesordermanage_sd.v0001."
CUST360 = "/sap/opu/odata/sap/SD_F2187_CUST360_SRV/"
TRIPPIN = "/TripPin/"
TRIP_NS = "Microsoft.OData.SampleService.Models.TripPin."


@pytest.fixture(scope="module")
def a2x_validator(a2x_store):
    return Validator(StoreHandle.open(a2x_store))


@pytest.fixture(scope="module")
def mixed(operations_store):
    return Validator(StoreHandle.open(operations_store))


def kinds(result):
    return sorted({(v.kind, v.path) for v in result.violations})


# ---------------------------------------------------------------- one line per kind, on A2X


def test_each_line_of_the_operation_calls_gets_its_verdict(a2x_validator):
    results = a2x_validator.validate_calls(read_calls(CALLS))
    assert {r.id: kinds(r) for r in results} == EXPECTED
    single = [a2x_validator.validate_call(call, line) for line, call in read_calls(CALLS)]
    assert [r.as_dict() for r in single] == [r.as_dict() for r in results]


def test_the_operation_kinds_are_kinds_of_kg_validate():
    assert {"unknown-operation", "unknown-parameter", "wrong-method"} <= set(KINDS)
    assert {kind for pairs in EXPECTED.values() for kind, _path in pairs} >= {
        "unknown-operation",
        "unknown-parameter",
        "wrong-method",
        "missing-required",
        "datatype",
        "max-length",
    }


def test_messages_name_the_repair(a2x_validator):
    results = {r.id: r for r in a2x_validator.validate_calls(read_calls(CALLS))}

    def first(name: str) -> str:
        return results[name].violations[0].message

    assert first("unknown-operation").endswith("did you mean releaseApprovalRequest, rejectApprovalRequest?")
    assert "is bound to one BillingDocument_Type; call it on the URL of one entity" in first("wrong-binding")
    assert first("wrong-method") == (
        'releaseApprovalRequest is called with POST (m:HttpMethod="POST"), not GET; send a POST'
    )
    assert "(an action takes POST)" in first("wrong-method-action")
    assert "(a function takes GET)" in first("wrong-method-function")
    assert first("unknown-parameter").startswith(
        "releaseApprovalRequest has no parameter SalesOrdr; did you mean SalesOrder?"
    )
    assert first("missing-required") == (
        "OpSchedulingMode is a parameter of ScheduleProductionOrderOperation that is not nullable; "
        "give it in the query string: ScheduleProductionOrderOperation?OpSchedulingMode='text'"
    )
    assert (
        first("datatype-unquoted") == "SalesOrder is Edm.String: write it as 'text' in the URL (OData V2 URI literal)"
    )
    assert "datetime'2025-01-31T00:00:00'" in first("datatype-no-prefix")
    assert first("max-length") == "MaterialDocumentYear is at most 4 characters; got 5"


def test_a_non_nullable_parameter_sap_marks_optional_may_be_left_out(a2x_validator):
    # CreateFromSDDocument's _Control and _Reference are Nullable="false" but Core.OptionalParameter
    root = "/sap/opu/odata4/sap/api_billingdocument/srvd_a2x/sap/billingdocument/0001/BillingDocument/"
    action = "com.sap.gateway.srvd_a2x.api_billingdocument.v0001.CreateFromSDDocument"
    assert a2x_validator.validate_call({"method": "POST", "url": root + action}).valid
    wrong = a2x_validator.validate_call(
        {"method": "POST", "url": root + action, "body": {"_Reference": [{"SDDocument": "12345678901"}]}}
    )
    assert kinds(wrong) == [("max-length", "/_Reference/0/SDDocument")]


def test_kg_validate_reports_the_operation_calls(a2x_store):
    result = CliRunner().invoke(main, ["validate", "--store", str(a2x_store), str(CALLS)])
    assert result.exit_code == 1, result.output
    invalid = sum(1 for pairs in EXPECTED.values() if pairs)
    assert f"{len(EXPECTED)} calls: {len(EXPECTED) - invalid} valid, {invalid} invalid" in result.output


# ---------------------------------------------------------------- value helps, V4 actions, imports, functions


def test_an_invented_code_on_a_parameter_with_a_value_help_is_rejected(mixed):
    url = CUST360 + "REJECT_ALL_ITEMS_QUOTE?SalesQuotation='20000001'&SalesDocumentRjcnReason="
    assert mixed.validate_call({"method": "POST", "url": url + "'02'"}).valid
    bad = mixed.validate_call({"method": "POST", "url": url + "'99'"})
    assert kinds(bad) == [("invalid-code", "/SalesDocumentRjcnReason")]
    assert bad.violations[0].message.startswith(
        "'99' is not a known code of SalesDocumentRjcnReason (codelist: 00, 01, 02, 03)"
    )


def test_v4_bound_actions_take_their_parameters_in_the_body(mixed):
    item = SO_V4 + "SalesOrderItem(SalesOrder='1',SalesOrderItem='10')/" + SO_NS
    header = SO_V4 + "SalesOrderManage('1')/" + SO_NS
    ok = mixed.validate_call({"method": "POST", "url": item + "UpdatePrices", "body": {"PricingType": "B"}})
    assert ok.valid, ok.as_dict()
    assert [(n.kind, n.path) for n in ok.notes] == [("codes-unknown", "/PricingType")]  # fixed values, codes unknown
    assert mixed.validate_call({"method": "POST", "url": header + "UpdatePrices", "body": {"PricingType": "B"}}).valid
    cases = {
        "missing": ({}, [("missing-required", "/PricingType")]),
        "too long": ({"PricingType": "BB"}, [("max-length", "/PricingType")]),
        "not a string": ({"PricingType": 1}, [("datatype", "/PricingType")]),
        "unknown": ({"PricingType": "B", "PricingTyp": "B"}, [("unknown-parameter", "/PricingTyp")]),
    }
    for body, expected in cases.values():
        assert kinds(mixed.validate_call({"method": "POST", "url": item + "UpdatePrices", "body": body})) == expected
    not_json = mixed.validate_call({"method": "POST", "url": item + "UpdatePrices", "body": "[1]"})
    assert kinds(not_json) == [("malformed", "")]


def test_an_action_import_is_called_at_the_service_root(mixed):
    assert mixed.validate_call({"method": "POST", "url": SO_V4 + "DiscardChanges"}).valid
    assert kinds(mixed.validate_call({"method": "GET", "url": SO_V4 + "DiscardChanges"})) == [("wrong-method", "")]
    typo = mixed.validate_call({"method": "POST", "url": SO_V4 + "DiscardChange"})
    assert kinds(typo) == [("unknown-operation", "")]
    assert typo.violations[0].message.endswith("did you mean DiscardChanges?")


def test_v4_functions_take_their_parameters_in_the_url(mixed):
    ok = mixed.validate_call({"method": "GET", "url": TRIPPIN + "GetNearestAirport(lat=33.9,lon=-118.4)"})
    assert ok.valid, ok.as_dict()
    alias = mixed.validate_call({"method": "GET", "url": TRIPPIN + "GetNearestAirport(lat=@la,lon=2)?@la=33.9"})
    assert alias.valid, alias.as_dict()
    missing = mixed.validate_call({"method": "GET", "url": TRIPPIN + "GetNearestAirport(lat=33.9)"})
    assert kinds(missing) == [("missing-required", "/lon")]
    assert (
        "in the URL: Microsoft.OData.SampleService.Models.TripPin.GetNearestAirport(lon="
        in missing.violations[0].message
    )
    quoted = mixed.validate_call({"method": "GET", "url": TRIPPIN + "GetNearestAirport(lat='33.9',lon=2)"})
    assert kinds(quoted) == [("datatype", "/lat")]
    posted = mixed.validate_call({"method": "POST", "url": TRIPPIN + "GetNearestAirport(lat=1,lon=2)"})
    assert kinds(posted) == [("wrong-method", "")]
    unset = mixed.validate_call({"method": "GET", "url": TRIPPIN + "GetNearestAirport(lat=@la,lon=2)"})
    assert kinds(unset) == [("missing-required", "/lat")]


def test_bound_v4_functions_and_actions_on_an_entity(mixed):
    person = TRIPPIN + "People('russellwhyte')/" + TRIP_NS
    trips = mixed.validate_call({"method": "GET", "url": person + "GetFriendsTrips(userName='scottketchum')"})
    assert trips.valid, trips.as_dict()
    share = {"method": "POST", "url": person + "ShareTrip", "body": {"userName": "scottketchum", "tripId": 1003}}
    assert mixed.validate_call(share).valid
    share["body"] = {"userName": "scottketchum", "tripId": 10.5}
    assert kinds(mixed.validate_call(share)) == [("datatype", "/tripId")]
    on_airline = mixed.validate_call({"method": "POST", "url": TRIPPIN + "Airlines('AA')/" + TRIP_NS + "ShareTrip"})
    assert kinds(on_airline) == [("unknown-operation", "")]
    assert "is not bound to one Airline: it is bound to one Person" in on_airline.violations[0].message


# ---------------------------------------------------------------- URI literals


@pytest.mark.parametrize(
    "text,edm,v2,value,ok",
    [
        ("'4711'", "Edm.String", True, "4711", True),
        ("'O''Neil'", "Edm.String", True, "O'Neil", True),
        ("4711", "Edm.String", True, "4711", False),
        ("datetime'2024-01-31T00:00:00'", "Edm.DateTime", True, "2024-01-31T00:00:00", True),
        ("'2024-01-31T00:00:00'", "Edm.DateTime", True, "2024-01-31T00:00:00", False),
        ("guid'6f0d3c9e-9a57-4c1e-9d61-3b2f3c8e0a11'", "Edm.Guid", True, "6f0d3c9e-9a57-4c1e-9d61-3b2f3c8e0a11", True),
        ("12.50M", "Edm.Decimal", True, "12.50", True),
        ("42L", "Edm.Int64", True, "42", True),
        ("42", "Edm.Int32", True, 42, True),
        ("'42'", "Edm.Int32", True, "42", False),
        ("true", "Edm.Boolean", True, True, True),
        ("null", "Edm.String", True, None, True),
        ("2025-01-31", "Edm.Date", False, "2025-01-31", True),
        ("6f0d3c9e-9a57-4c1e-9d61-3b2f3c8e0a11", "Edm.Guid", False, "6f0d3c9e-9a57-4c1e-9d61-3b2f3c8e0a11", True),
        ("duration'P1D'", "Edm.Duration", False, "P1D", True),
        ("1.5", "Edm.Double", False, 1.5, True),
        ("'1.5'", "Edm.Double", False, "1.5", False),
    ],
)
def test_uri_literals(text, edm, v2, value, ok):
    got, problem = uri_value(text, edm, v2)
    assert got == value and (problem is None) is ok, problem


def test_the_invalid_calls_file_is_documented():
    readme = (Path(INVALID) / "README.md").read_text(encoding="utf-8")
    assert "operation-calls.jsonl" in readme
    assert all(f"`{name}`" in readme for name in EXPECTED if not name.startswith("good"))
