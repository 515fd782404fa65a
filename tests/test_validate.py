"""kg validate: every violation kind on real SAP metadata (A2X, Fiori with annotation files),
deep insert, SAP's documented payloads, GET URLs, malformed lines, the CLI and batch/single agreement."""

from __future__ import annotations

import importlib.util
import json
import random
from pathlib import Path

import pytest
from click.testing import CliRunner
from rdflib import RDF, Namespace

from processkg.build.pipeline import BuildOptions, build_store
from processkg.cli import main
from processkg.cli.validate import shapes_cmd, validate_cmd
from processkg.errors import ProcessKGError
from processkg.graph.handle import StoreHandle, StoreLocation, open_store
from processkg.validate import calls as calls_module
from processkg.validate import urls as urls_module
from processkg.validate.calls import KINDS, Validator, read_calls

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data" / "odata"
A2X = SHARED / "s4-a2x"
FIORI = SHARED / "s4-fiori"
FIORI_SERVICES = ("MM_PUR_PO_MAINT_V2_SRV", "C_SALESORDERMANAGE_SD_V4", "SD_F1814_SO_FS_SRV")
DEMO = ROOT / "data" / "demo"


@pytest.fixture(scope="session")
def a2x_validator(a2x_store):
    return Validator(StoreHandle.open(a2x_store))


@pytest.fixture(scope="session")
def fiori_validator(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("fiori")
    codes = tmp / "po-types.csv"
    codes.write_text(
        "value_list,code,description\nC_POMntnDocumentTypeValueHelp,NB,Standard PO\n"
        "C_POMntnDocumentTypeValueHelp,FO,Framework Order\n",
        encoding="utf-8",
    )
    build_store(
        BuildOptions(odata=[FIORI / s for s in FIORI_SERVICES], codes=[codes], store=StoreLocation.parse(tmp / "store"))
    )
    return Validator(StoreHandle.open(tmp / "store"))


def post(service, entity_set, payload, **extra):
    return {"id": "t", "method": "POST", "service": service, "entity_set": entity_set, "payload": payload, **extra}


def kinds(result):
    return sorted({(v.kind, v.path) for v in result.violations})


SO = "API_SALES_ORDER_SRV"
# SAP's documented create payload for API_SALES_ORDER_SRV (deep insert of partners, items
# and item pricing elements; document numbers are assigned by the server).
SAP_SALES_ORDER = {
    "SalesOrderType": "OR",
    "SalesOrganization": "1710",
    "DistributionChannel": "10",
    "OrganizationDivision": "00",
    "SoldToParty": "17100001",
    "PurchaseOrderByCustomer": "TEST",
    "TransactionCurrency": "USD",
    "to_Partner": [{"PartnerFunction": "SH", "Customer": "17100001"}],
    "to_Item": [
        {
            "Material": "TG11",
            "RequestedQuantity": "1",
            "RequestedQuantityUnit": "PC",
            "to_PricingElement": [{"ConditionType": "PPR0", "ConditionRateValue": "100"}],
        }
    ],
}


# ---------------------------------------------------------------- documented payloads pass


@pytest.mark.parametrize(
    "call",
    [
        {"method": "POST", "url": "/sap/opu/odata/sap/API_SALES_ORDER_SRV/A_SalesOrder", "body": SAP_SALES_ORDER},
        post(
            "API_BUSINESS_PARTNER",
            "A_BusinessPartner",
            {
                "BusinessPartnerCategory": "1",
                "FirstName": "John",
                "LastName": "Doe",
                "BusinessPartnerGrouping": "BP02",
                "to_BusinessPartnerAddress": [
                    {
                        "Country": "US",
                        "CityName": "Palo Alto",
                        "PostalCode": "94304",
                        "StreetName": "Hillview Ave",
                        "HouseNumber": "3410",
                        "Language": "EN",
                    }
                ],
                "to_BusinessPartnerRole": [{"BusinessPartnerRole": "FLCU00"}],
            },
        ),
        post(
            "API_PRODUCT_SRV",
            "A_Product",
            {
                "Product": "TEST_PRODUCT",
                "ProductType": "FERT",
                "BaseUnit": "PC",
                "IndustrySector": "M",
                "to_Description": [{"Language": "EN", "ProductDescription": "Test product"}],
            },
        ),
        post(
            "API_PURCHASEORDER_PROCESS_SRV",
            "A_PurchaseOrder",
            {
                "CompanyCode": "1710",
                "PurchaseOrderType": "NB",
                "Supplier": "17300001",
                "PurchasingOrganization": "1710",
                "PurchasingGroup": "001",
                "DocumentCurrency": "USD",
                "to_PurchaseOrderItem": [
                    {
                        "PurchaseOrderItem": "10",
                        "Plant": "1710",
                        "Material": "TG11",
                        "OrderQuantity": "10",
                        "PurchaseOrderQuantityUnit": "PC",
                        "NetPriceAmount": "12.50",
                    }
                ],
            },
        ),
        {
            "method": "POST",
            "url": "/sap/opu/odata4/sap/api_salesorder/srvd_a2x/sap/salesorder/0001/SalesOrder",
            "body": {
                "SalesOrderType": "OR",
                "SalesOrganization": "1710",
                "DistributionChannel": "10",
                "OrganizationDivision": "00",
                "SoldToParty": "17100001",
                "RequestedDeliveryDate": "2025-03-01",
                "_Item": [{"Product": "TG11", "RequestedQuantity": 2, "RequestedQuantityISOUnit": "PCE"}],
            },
        },
    ],
    ids=["sales-order-v2", "business-partner", "product", "purchase-order", "sales-order-v4"],
)
def test_sap_documented_payloads_are_valid(a2x_validator, call):
    result = a2x_validator.validate_call(call)
    assert result.valid, result.as_dict()


# ---------------------------------------------------------------- every kind on A2X

A2X_CASES = [
    ("unknown-service", post("API_SALES_ORDER_SERVICE", "A_SalesOrder", {}), ""),
    ("unknown-entity-set", post(SO, "A_SalesOrders", {}), ""),
    ("unknown-property", post(SO, "A_SalesOrder", {"SalesOrderTyp": "OR"}), "/SalesOrderTyp"),
    (
        "missing-required",
        post("API_OUTBOUND_DELIVERY_SRV", "A_OutbDeliveryHeaderText", {"Language": "EN"}),
        "/TextElementText",
    ),
    ("read-only", post(SO, "A_SalesOrder", {"TotalNetAmount": "10.00"}), "/TotalNetAmount"),
    ("invalid-code", post(SO, "A_SalesOrder", {"TransactionCurrency": "EURO"}), "/TransactionCurrency"),
    ("datatype", post(SO, "A_SalesOrder", {"CompleteDeliveryIsDefined": "yes"}), "/CompleteDeliveryIsDefined"),
    ("max-length", post(SO, "A_SalesOrder", {"SalesOrganization": "17100"}), "/SalesOrganization"),
    ("decimal-digits", post(SO, "A_SalesOrderItem", {"RequestedQuantity": "2.0005"}), "/RequestedQuantity"),
    ("cardinality", post(SO, "A_SalesOrder", {"to_Item": {"Material": "TG11"}}), "/to_Item"),
    ("unknown-navigation", post(SO, "A_SalesOrder", {"to_Items": [{"Material": "TG11"}]}), "/to_Items"),
    (
        "not-filterable",
        {
            "method": "GET",
            "url": "/sap/opu/odata/sap/API_INBOUND_DELIVERY_SRV/A_InbDeliveryHeader?$filter=SoldToParty eq '1'",
        },
        "/$filter",
    ),
    (
        "unknown-operation",
        {"method": "POST", "url": "/sap/opu/odata/sap/API_SALES_ORDER_SRV/releaseApproval?SalesOrder='1'"},
        "",
    ),
    (
        "unknown-parameter",
        {"method": "POST", "url": "/sap/opu/odata/sap/API_SALES_ORDER_SRV/releaseApprovalRequest?Order='1'"},
        "/Order",
    ),
    (
        "wrong-method",
        {"method": "GET", "url": "/sap/opu/odata/sap/API_SALES_ORDER_SRV/releaseApprovalRequest?SalesOrder='1'"},
        "",
    ),
    ("malformed", {"id": "t", "service": SO, "entity_set": "A_SalesOrder", "payload": {}}, ""),
]


@pytest.mark.parametrize("kind,call,path", A2X_CASES, ids=[c[0] for c in A2X_CASES])
def test_each_kind_on_a2x(a2x_validator, kind, call, path):
    result = a2x_validator.validate_call(call)
    assert (kind, path) in kinds(result), result.as_dict()
    assert all(v.kind == kind for v in result.violations), result.as_dict()


def test_every_kind_is_covered_on_a2x_and_fiori():
    assert {c[0] for c in A2X_CASES} == set(KINDS)
    assert {c[0] for c in FIORI_CASES} == set(KINDS)


def test_messages_name_the_repair(a2x_validator):
    result = a2x_validator.validate_call(
        post(
            SO,
            "A_SalesOrder",
            {
                "SalesOrderTyp": "OR",
                "TransactionCurrency": "EURO",
                "to_Items": [],
                "TotalNetAmount": "1",
                "RequestedDeliveryDate": "tomorrow",
                "SalesOrganization": "17100",
            },
        )
    )
    by_kind = {v.kind: v for v in result.violations}
    assert "did you mean SalesOrderType" in by_kind["unknown-property"].message
    assert "did you mean EUR" in by_kind["invalid-code"].message
    assert "did you mean to_Item" in by_kind["unknown-navigation"].message
    assert "remove it" in by_kind["read-only"].message
    assert "/Date(ms)/ or ISO 8601" in by_kind["datatype"].message
    assert by_kind["max-length"].message == "SalesOrganization is at most 4 characters; got 5"
    assert by_kind["datatype"].value == "tomorrow"


@pytest.mark.parametrize(
    "value,problem",
    [
        ("12.500", None),  # trailing zeros do not count: three places, Scale="3"
        ("12.5000", None),
        ("12.5001", "RequestedQuantity allows 3 decimal places (Scale=3); got 4: round it"),
        ("123456789012", None),  # Precision="15", Scale="3": twelve digits before the point
        ("1234567890123", "RequestedQuantity allows 12 digits before the point (Precision=15, Scale=3); got 13"),
        ("-0.001", None),
    ],
)
def test_a_decimal_is_checked_against_its_scale_and_precision(a2x_validator, value, problem):
    """A_SalesOrderItem.RequestedQuantity is Edm.Decimal Precision="15" Scale="3": SAP rejects more digits."""
    result = a2x_validator.validate_call(post(SO, "A_SalesOrderItem", {"Material": "TG11", "RequestedQuantity": value}))
    assert [v.message for v in result.violations if v.kind == "decimal-digits"] == ([problem] if problem else [])


def test_a_v4_decimal_number_is_checked_against_its_scale(a2x_validator):
    """V4 JSON sends a decimal as a number (or a string): the same digits are counted either way."""
    url = "/sap/opu/odata4/sap/api_salesorder/srvd_a2x/sap/salesorder/0001/SalesOrder('1')/_Item"
    for value in (2.0005, "2.0005"):
        result = a2x_validator.validate_call({"method": "POST", "url": url, "body": {"RequestedQuantity": value}})
        assert [(v.kind, v.path) for v in result.violations if v.kind == "decimal-digits"] == [
            ("decimal-digits", "/RequestedQuantity")
        ], result.as_dict()


@pytest.mark.parametrize(
    "value,ok",
    [
        ("12.50", True),
        (12.5, False),
        ("1e3", False),
        ("abc", False),
    ],
)
def test_v2_decimal_is_a_json_string(a2x_validator, value, ok):
    item = {"Material": "TG11", "RequestedQuantity": value}
    assert a2x_validator.validate_call(post(SO, "A_SalesOrderItem", item)).valid is ok


@pytest.mark.parametrize(
    "value,ok",
    [
        ("/Date(1735689600000)/", True),
        ("2025-01-01T00:00:00", True),
        ("2025-01-01", False),
        (1735689600000, False),
    ],
)
def test_v2_datetime_forms(a2x_validator, value, ok):
    assert a2x_validator.validate_call(post(SO, "A_SalesOrder", {"RequestedDeliveryDate": value})).valid is ok


@pytest.mark.parametrize("value,ok", [(2, True), (2.5, True), ("2.5", True), (True, False), ("two", False)])
def test_v4_decimal_is_a_json_number(a2x_validator, value, ok):
    call = {
        "method": "POST",
        # SalesOrderItem itself is not insertable (Capabilities.InsertRestrictions): items go along _Item
        "url": "/sap/opu/odata4/sap/api_salesorder/srvd_a2x/sap/salesorder/0001/SalesOrder('1')/_Item",
        "body": {"Product": "TG11", "RequestedQuantity": value},
    }
    assert a2x_validator.validate_call(call).valid is ok


# ---------------------------------------------------------------- deep insert


def test_deep_insert_to_many_reports_nested_paths(a2x_validator):
    payload = json.loads(json.dumps(SAP_SALES_ORDER))
    payload["to_Item"].append(
        {
            "Material": "TG12",
            "RequestedQuantity": 3,
            "Plantt": "1710",
            "to_PricingElement": [{"ConditionType": "PPR0"}, {"ConditionRateValue": 5}],
        }
    )
    result = a2x_validator.validate_call(post(SO, "A_SalesOrder", payload))
    assert kinds(result) == [
        ("datatype", "/to_Item/1/RequestedQuantity"),
        ("datatype", "/to_Item/1/to_PricingElement/1/ConditionRateValue"),
        ("unknown-property", "/to_Item/1/Plantt"),
    ]


def test_deep_insert_to_one_object_and_array(a2x_validator):
    bp = {
        "BusinessPartnerCategory": "1",
        "LastName": "Doe",
        "to_Customer": {
            "OrderIsBlockedForCustomer": "XYZ",
            "to_CustomerSalesArea": [{"SalesOrganization": "1710", "Currency": "EURO"}],
        },
    }
    result = a2x_validator.validate_call(post("API_BUSINESS_PARTNER", "A_BusinessPartner", bp))
    assert kinds(result) == [
        ("invalid-code", "/to_Customer/to_CustomerSalesArea/0/Currency"),
        ("max-length", "/to_Customer/OrderIsBlockedForCustomer"),
    ]
    bp["to_Customer"] = [{"OrderIsBlockedForCustomer": "X"}, {"OrderIsBlockedForCustomer": "Y"}]
    result = a2x_validator.validate_call(post("API_BUSINESS_PARTNER", "A_BusinessPartner", bp))
    assert ("cardinality", "/to_Customer") in kinds(result)
    assert "to-one" in next(v.message for v in result.violations if v.kind == "cardinality")


def test_v2_verbose_results_wrapper_and_links_are_accepted(a2x_validator):
    payload = {
        "SalesOrderType": "OR",
        "to_Item": {"results": [{"Material": "TG11"}]},
        "__metadata": {"type": "API_SALES_ORDER_SRV.A_SalesOrderType"},
    }
    assert a2x_validator.validate_call(post(SO, "A_SalesOrder", payload)).valid


def test_null_and_v4_binding(a2x_validator):
    text = post("API_OUTBOUND_DELIVERY_SRV", "A_OutbDeliveryHeaderText", {"TextElementText": None, "Language": "EN"})
    result = a2x_validator.validate_call(text)
    assert kinds(result) == [("datatype", "/TextElementText")]
    assert "not nullable" in result.violations[0].message
    assert a2x_validator.validate_call(post(SO, "A_SalesOrder", {"SalesOrderType": None, "TotalNetAmount": None})).valid
    root = "/sap/opu/odata4/sap/api_salesorder/srvd_a2x/sap/salesorder/0001/SalesOrder('1')/_Item"
    bound = a2x_validator.validate_call(
        {"method": "POST", "url": root, "body": {"Product": "TG11", "_SalesOrder@odata.bind": "x"}}
    )
    assert bound.valid, bound.as_dict()
    unbound = a2x_validator.validate_call(
        {"method": "POST", "url": root, "body": {"_Order@odata.bind": "SalesOrder('1')"}}
    )
    assert kinds(unbound) == [("unknown-navigation", "/_Order@odata.bind")]


def test_post_to_a_navigation_path_uses_the_target_type(a2x_validator):
    call = {
        "method": "POST",
        "url": "/sap/opu/odata/sap/API_SALES_ORDER_SRV/A_SalesOrder('1')/to_Item",
        "body": {"Material": "TG11", "Foo": 1},
    }
    assert kinds(a2x_validator.validate_call(call)) == [("unknown-property", "/Foo")]


def test_not_creatable_entity_set_is_read_only(a2x_validator):
    result = a2x_validator.validate_call(post("API_ENTERPRISE_PROJECT_0002", "A_EntProjElmntWorkItem", {}))
    assert kinds(result) == [("read-only", "")]


# ---------------------------------------------------------------- GET

GET_ROOT = "/sap/opu/odata/sap/API_SALES_ORDER_SRV"
GET_CASES = [
    (
        "/A_SalesOrder('1')?$filter=SalesOrderType eq 'OR'&$select=SalesOrder,SoldToParty&$orderby=SalesOrder desc"
        "&$expand=to_Item/to_PricingElement",
        [],
    ),
    ("/A_SalesOrderItem(SalesOrder='1',SalesOrderItem='10')", []),
    ("/A_SalesOrder?$filter=to_Item/any(d:d/Material eq 'TG11') and startswith(SoldToParty,'17')", []),
    ("/A_SalesOrders", [("unknown-entity-set", "")]),
    ("/$metadata", []),  # the metadata document is a resource; the local model's GET (docs/agent.md):
    ("/$metadata?%24format=json&%24select=Material,Quantity&%24filter=SalesOrder='0000000003'", []),
    ("/A_SalesOrderItem('1')", [("missing-required", "/key")]),
    (
        "/A_SalesOrderItem(SalesOrder='1',Item='10')",
        [("missing-required", "/key/SalesOrderItem"), ("unknown-property", "/key/Item")],
    ),
    ("/A_SalesOrder(1)", [("datatype", "/key")]),
    ("/A_SalesOrder?$filter=SoldToPrty eq '1'", [("unknown-property", "/$filter")]),
    ("/A_SalesOrder?$filter=to_Item/any(d:d/Materiall eq 'X')", [("unknown-property", "/$filter")]),
    ("/A_SalesOrder?$select=SalesOrder,Foo", [("unknown-property", "/$select/1")]),
    ("/A_SalesOrder?$orderby=Foo asc", [("unknown-property", "/$orderby/0")]),
    ("/A_SalesOrder?$expand=to_Item,to_Bar", [("unknown-navigation", "/$expand/1")]),
    ("/A_SalesOrder?$select=to_Itemz/Material", [("unknown-navigation", "/$select/0")]),
]


@pytest.mark.parametrize("url,expected", GET_CASES, ids=[c[0][:40] for c in GET_CASES])
def test_get_urls_on_a2x(a2x_validator, url, expected):
    result = a2x_validator.validate_call({"id": "g", "method": "GET", "url": GET_ROOT + url})
    assert kinds(result) == expected, result.as_dict()


def test_only_a_get_of_the_metadata_document_is_valid(a2x_validator):
    """The local model's POST to .../$metadata#SalesOrder (docs/agent.md) is no entity set."""
    result = a2x_validator.validate_call({"method": "POST", "url": GET_ROOT + "/$metadata#SalesOrder", "payload": {}})
    assert kinds(result) == [("unknown-entity-set", "")]


def test_service_is_found_in_the_url_or_by_name(a2x_validator):
    unknown = a2x_validator.validate_call(
        {"method": "GET", "url": "/sap/opu/odata/sap/API_SALES_ORDERS_SRV/A_SalesOrder"}
    )
    assert kinds(unknown) == [("unknown-service", "")]
    assert unknown.violations[0].value == "API_SALES_ORDERS_SRV"
    assert "did you mean API_SALES_ORDER_SRV" in unknown.violations[0].message
    relative = a2x_validator.validate_call({"method": "GET", "service": SO, "url": "A_SalesOrder?$select=Foo"})
    assert kinds(relative) == [("unknown-property", "/$select/0")]


def test_get_v4_nested_expand(a2x_validator):
    base = "/sap/opu/odata4/sap/api_salesorder/srvd_a2x/sap/salesorder/0001/SalesOrder('1')"
    ok = a2x_validator.validate_call(
        {"method": "GET", "url": base + "?$expand=_Item($select=Product;$expand=_ScheduleLine)"}
    )
    assert ok.valid, ok.as_dict()
    bad = a2x_validator.validate_call({"method": "GET", "url": base + "?$expand=_Item($select=Prodct;$expand=_Nope)"})
    assert kinds(bad) == [("unknown-navigation", "/$expand/0/$expand/0"), ("unknown-property", "/$expand/0/$select/0")]


# ---------------------------------------------------------------- Fiori (value lists from annotation files)

PO = "MM_PUR_PO_MAINT_V2_SRV"
FIORI_CASES = [
    ("unknown-service", post("MM_PUR_PO_MAINTAIN_SRV", "C_PurchaseOrderTP", {}), ""),
    ("unknown-entity-set", post(PO, "C_PurchaseOrder", {}), ""),
    ("unknown-property", post(PO, "C_PurchaseOrderTP", {"Suplier": "17300001"}), "/Suplier"),
    (
        "missing-required",
        {
            "method": "POST",
            "body": {"Assigned": [{}]},
            "url": "/sap/opu/odata/sap/SD_F1814_SO_FS_SRV/ClassificationContextSet",
        },
        "/Assigned/0/Status",
    ),
    ("read-only", post(PO, "C_PurchaseOrderTP", {"PurchaseOrderStatus": "01"}), "/PurchaseOrderStatus"),
    ("invalid-code", post(PO, "C_PurchaseOrderTP", {"DocumentCurrency": "EURO"}), "/DocumentCurrency"),
    ("datatype", post(PO, "C_PurchaseOrderTP", {"CashDiscount1Days": 3}), "/CashDiscount1Days"),
    ("max-length", post(PO, "C_PurchaseOrderTP", {"CompanyCode": "171000"}), "/CompanyCode"),
    ("decimal-digits", post(PO, "C_PurchaseOrderTP", {"CashDiscount1Days": "1000"}), "/CashDiscount1Days"),
    (
        "cardinality",
        post(PO, "C_PurchaseOrderTP", {"to_PurchaseOrderItemTP": {"Material": "TG11"}}),
        "/to_PurchaseOrderItemTP",
    ),
    ("unknown-navigation", post(PO, "C_PurchaseOrderTP", {"to_Items": [{}]}), "/to_Items"),
    (
        "not-filterable",
        {"method": "GET", "url": f"/sap/opu/odata/sap/{PO}/C_PurchaseOrderTP?$filter=ApproverName eq 'X'"},
        "/$filter",
    ),
    ("unknown-operation", {"method": "POST", "url": f"/sap/opu/odata/sap/{PO}/POItemDeleted?DraftUUID=guid'x'"}, ""),
    (
        "unknown-parameter",
        {
            "method": "POST",
            "url": "/sap/opu/odata4/sap/c_salesordermanage_sd/srvd/sap/c_salesordermanage_sd/0001/"
            "SalesOrderManage('1')/com.sap.gateway.srvd.c_salesordermanage_sd.v0001.SetDeliveryBlock",
            "body": {"DeliveryBlockReason": "01", "Reason": "01"},
        },
        "/Reason",
    ),
    (
        "wrong-method",
        {
            "method": "GET",
            "url": "/sap/opu/odata4/sap/c_salesordermanage_sd/srvd/sap/c_salesordermanage_sd/0001/DiscardChanges",
        },
        "",
    ),
    ("malformed", {"method": "POST", "payload": {}}, ""),
]


@pytest.mark.parametrize("kind,call,path", FIORI_CASES, ids=[c[0] for c in FIORI_CASES])
def test_each_kind_on_fiori(fiori_validator, kind, call, path):
    result = fiori_validator.validate_call(call)
    assert (kind, path) in kinds(result), result.as_dict()
    assert all(v.kind == kind for v in result.violations), result.as_dict()


def test_fiori_code_list_codes_and_unknown_codes(fiori_validator):
    ok = fiori_validator.validate_call(
        post(PO, "C_PurchaseOrderTP", {"PurchaseOrderType": "NB", "PurchasingGroup": "001"})
    )
    assert ok.valid
    assert [(n.kind, n.path) for n in ok.notes] == [("codes-unknown", "/PurchasingGroup")]
    bad = fiori_validator.validate_call(post(PO, "C_PurchaseOrderTP", {"PurchaseOrderType": "ZB"}))
    assert kinds(bad) == [("invalid-code", "/PurchaseOrderType")]
    assert "codelist: FO, NB" in bad.violations[0].message
    wrong_type = fiori_validator.validate_call(post(PO, "C_PurchaseOrderTP", {"PurchaseOrderType": 42}))
    assert kinds(wrong_type) == [("datatype", "/PurchaseOrderType")]  # not also invalid-code


def test_fiori_deep_insert_to_many_items(fiori_validator):
    payload = {
        "Supplier": "17300001",
        "to_PurchaseOrderItemTP": [
            {"Material": "TG11", "OrderQuantity": "10"},
            {"Material": "TG11", "OrderQuantity": 10, "Matrial": "X"},
        ],
    }
    result = fiori_validator.validate_call(post(PO, "C_PurchaseOrderTP", payload))
    assert kinds(result) == [
        ("datatype", "/to_PurchaseOrderItemTP/1/OrderQuantity"),
        ("unknown-property", "/to_PurchaseOrderItemTP/1/Matrial"),
    ]


def test_fiori_v4_get_and_post(fiori_validator):
    root = "/sap/opu/odata4/sap/c_salesordermanage_sd/srvd/sap/c_salesordermanage_sd/0001"
    get = fiori_validator.validate_call(
        {"method": "GET", "url": root + "/SalesOrderManage?$select=SalesOrder,SoldToParty"}
    )
    assert get.valid, get.as_dict()
    bad = fiori_validator.validate_call(
        {"method": "POST", "url": root + "/SalesOrderManage", "body": {"SalesOrderTyp": "OR"}}
    )
    assert kinds(bad) == [("unknown-property", "/SalesOrderTyp")]


# ---------------------------------------------------------------- JSONL, batch, CLI


def test_read_calls_reports_bad_lines(tmp_path):
    path = tmp_path / "calls.jsonl"
    path.write_text('{"id": "a", "method": "GET", "url": "/x"}\nnot json\n\n[1, 2]\n', encoding="utf-8")
    lines = read_calls(path)
    assert [n for n, _ in lines] == [1, 2, 4]
    assert str(lines[1][1]).startswith("not valid JSON: Expecting value (column 1)")
    with pytest.raises(ProcessKGError, match="cannot read recorded calls"):
        read_calls(tmp_path / "missing.jsonl")


def test_malformed_lines_are_reported_and_the_rest_validated(a2x_validator, tmp_path):
    path = tmp_path / "calls.jsonl"
    path.write_text(
        "\n".join(
            [
                json.dumps(post(SO, "A_SalesOrder", {"SalesOrderType": "OR"}) | {"id": "good"}),
                "{not json",
                json.dumps({"id": "nomethod", "url": GET_ROOT + "/A_SalesOrder"}),
                json.dumps({"id": "notarget", "method": "GET"}),
                json.dumps(post(SO, "A_SalesOrder", {"Foo": 1}) | {"id": "bad"}),
            ]
        )
        + "\n",
        encoding="utf-8",
    )
    results = a2x_validator.validate_calls(read_calls(path))
    assert [(r.id, r.valid) for r in results] == [
        ("good", True),
        ("line 2", False),
        ("nomethod", False),
        ("notarget", False),
        ("bad", False),
    ]
    assert results[1].violations[0].kind == "malformed" and results[1].violations[0].message.startswith("line 2")
    assert "lacks a method" in results[2].violations[0].message
    assert "lacks a target" in results[3].violations[0].message
    assert results[3].violations[0].message.startswith("line 4:")


def _bench():
    spec = importlib.util.spec_from_file_location("bench_validate", ROOT / "benchmarks" / "bench_validate.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_batch_and_single_agree_on_generated_calls(a2x_validator):
    bench = _bench()
    pairs = bench.generate_calls(a2x_validator.model, 300, seed=11)
    calls = [c for c, _ in pairs]
    batch = a2x_validator.validate_calls(calls)
    single = [a2x_validator.validate_call(c) for c in calls]
    assert [bench.verdict(r) for r in batch] == [bench.verdict(r) for r in single]
    injected = [(kind, r) for (_c, kind), r in zip(pairs, batch) if kind]
    assert len({k for k, _ in injected}) == len(bench.INJECTED)
    assert all(kind in {v.kind for v in r.violations} for kind, r in injected)
    assert all(r.valid for (_c, kind), r in zip(pairs, batch) if not kind)


OD = "API_OUTBOUND_DELIVERY_SRV"
SH = Namespace("http://www.w3.org/ns/shacl#")


def test_a_service_engine_holds_that_service_shapes_alone(a2x_validator):
    a2x_validator.validate_call(post(SO, "A_SalesOrder", SAP_SALES_ORDER))
    types = a2x_validator.model.types.values()
    type_shapes = a2x_validator.engine(SO).known & {t.iri + "/shape" for t in types}
    assert type_shapes == {t.iri + "/shape" for t in types if t.service == SO}
    assert len({t.service for t in types}) > 30  # the other services' shapes were not parsed for it


def test_a_batch_over_two_services_has_one_report_with_both_results(a2x_validator):
    calls = [
        post(SO, "A_SalesOrder", {"TransactionCurrency": "EURO"}),
        post(OD, "A_OutbDeliveryHeaderText", {"Language": "EN"}),
    ]
    batch = a2x_validator.validate_calls(calls)
    assert [kinds(r) for r in batch] == [
        [("invalid-code", "/TransactionCurrency")],
        [("missing-required", "/TextElementText")],
    ]
    report = a2x_validator.report_graph()
    (root,) = report.subjects(RDF.type, SH.ValidationReport)
    assert report.value(root, SH.conforms).toPython() is False
    assert len(list(report.objects(root, SH.result))) == 2
    assert [kinds(r) for r in batch] == [kinds(a2x_validator.validate_call(c)) for c in calls]


def test_a_conforming_batch_over_two_services_conforms(a2x_validator):
    calls = [
        post(SO, "A_SalesOrder", SAP_SALES_ORDER),
        post(OD, "A_OutbDeliveryHeaderText", {"Language": "EN", "TextElementText": "x"}),
    ]
    assert all(r.valid for r in a2x_validator.validate_calls(calls))
    (root,) = a2x_validator.last_report.subjects(RDF.type, SH.ValidationReport)
    assert a2x_validator.last_report.value(root, SH.conforms).toPython() is True


def test_engines_are_kept_for_the_most_recent_services_only(a2x_store, monkeypatch):
    monkeypatch.setattr(calls_module, "ENGINES_KEPT", 1)
    validator = Validator(StoreHandle.open(a2x_store))
    first = validator.engine(SO)
    assert validator.engine(SO) is first
    validator.engine(OD)
    assert validator.engine(SO) is not first
    wrong = post(SO, "A_SalesOrder", {"TransactionCurrency": "EURO"})
    assert kinds(validator.validate_call(wrong)) == [("invalid-code", "/TransactionCurrency")]


def _invoke(command, args):
    return CliRunner().invoke(main, [command.name, *args])


def test_cli_text_on_demo_calls(demo_store):
    result = _invoke(validate_cmd, ["--store", str(demo_store), str(DEMO / "calls.jsonl")])
    expected = [
        r.valid for r in Validator(StoreHandle.open(demo_store)).validate_calls(read_calls(DEMO / "calls.jsonl"))
    ]
    assert result.exit_code == (0 if all(expected) else 1), result.output
    lines = result.output.strip().splitlines()
    assert sum(": INVALID" in line for line in lines) == expected.count(False)
    assert f"{len(expected)} calls: {expected.count(True)} valid, {expected.count(False)} invalid" in result.output


def test_cli_json_and_ttl(demo_store, tmp_path):
    calls = tmp_path / "calls.jsonl"
    calls.write_text(json.dumps(post("DEMO_SALES_ORDER_SRV", "A_SalesOrder", {"SalesOrderType": "ZZZ"})) + "\n")
    out = tmp_path / "out.json"
    result = _invoke(validate_cmd, ["--store", str(demo_store), str(calls), "--format", "json", "--out", str(out)])
    assert result.exit_code == 1
    data = json.loads(out.read_text())
    assert data[0]["valid"] is False and data[0]["violations"][0]["kind"] == "invalid-code"
    assert set(data[0]["violations"][0]) == {"kind", "path", "message", "value"}
    ttl = _invoke(validate_cmd, ["--store", str(demo_store), str(calls), "--format", "ttl"])
    assert "sh:ValidationReport" in ttl.output and "sh:InConstraintComponent" in ttl.output


def test_cli_exit_codes(demo_store, tmp_path):
    good = tmp_path / "good.jsonl"
    good.write_text(json.dumps(post("DEMO_SALES_ORDER_SRV", "A_SalesOrder", {"SalesOrderType": "OR"})) + "\n")
    assert _invoke(validate_cmd, ["--store", str(demo_store), str(good)]).exit_code == 0
    missing = _invoke(validate_cmd, ["--store", str(demo_store), str(tmp_path / "nope.jsonl")])
    assert missing.exit_code == 2 and "cannot read recorded calls" in missing.output
    no_store = _invoke(validate_cmd, ["--store", str(tmp_path / "nostore"), str(good)])
    assert no_store.exit_code == 2 and "no processkg store here" in no_store.output


def test_cli_shapes_writes_turtle(demo_store, tmp_path):
    out = tmp_path / "shapes.ttl"
    result = _invoke(shapes_cmd, ["--store", str(demo_store), "--out", str(out)])
    assert result.exit_code == 0, result.output
    text = out.read_text()
    assert "sh:NodeShape" in text and "sh:closed true" in text and "sh:in" in text
    assert _invoke(shapes_cmd, ["--store", str(demo_store), "--out", str(tmp_path / "again.ttl")]).exit_code == 0
    assert (tmp_path / "again.ttl").read_text() == text


def test_cli_shapes_reads_the_stored_shapes_which_equal_fresh_ones(demo_store, tmp_path):
    """kg shapes exports what kg build stored; a --no-shapes store gets the same shapes generated."""
    from processkg.validate.payload_shapes import generate_shapes, stored_shapes

    graph = open_store(demo_store)
    stored = stored_shapes(graph)
    assert len(stored) > 1000
    assert sorted(map(str, stored)) == sorted(map(str, generate_shapes(graph)))
    bare = tmp_path / "bare"
    build_store(
        BuildOptions(odata=[DEMO / "odata"], codes=[DEMO / "codes"], store=StoreLocation.parse(bare), shapes=False)
    )
    assert stored_shapes(open_store(bare)) == []
    a, b = tmp_path / "a.ttl", tmp_path / "b.ttl"
    assert _invoke(shapes_cmd, ["--store", str(demo_store), "--out", str(a)]).exit_code == 0
    assert _invoke(shapes_cmd, ["--store", str(bare), "--out", str(b)]).exit_code == 0
    assert a.read_bytes() == b.read_bytes()


# ---------------------------------------------------------------- hostile input: never a traceback, a hang or a forged line

INVALID = ROOT / "tests" / "invalid"
DEMO_SO = "DEMO_SALES_ORDER_SRV"
DEMO_ROOT = "/sap/opu/odata/sap/DEMO_SALES_ORDER_SRV/A_SalesOrder"
HOSTILE = [  # tests/invalid/hostile-calls.jsonl: (id, kinds) per line
    ("good-post", []),
    ("line 2", ["malformed"]),
    ("sep\u2028in-id", ["unknown-property"]),
    ("crlf", ["unknown-entity-set"]),
    ("line 5", ["malformed"]),
    ("expand", ["malformed"]),
    ("good-get", []),
]


def _no_nan(text: str):
    def refuse(name):
        raise AssertionError(f"bare {name} in JSON output")

    return json.loads(text, parse_constant=refuse)


def test_hostile_lines_are_reported_and_the_rest_validated(demo_store):
    pairs = read_calls(INVALID / "hostile-calls.jsonl")
    validator = Validator(StoreHandle.open(demo_store))
    batch = validator.validate_calls(pairs)
    assert [(r.id, sorted({v.kind for v in r.violations})) for r in batch] == HOSTILE
    assert [r.line for r in batch] == [1, 2, 3, 4, 5, 6, 7]  # the raw U+2028 on line 3 shifts nothing
    messages = [r.violations[0].message for r in batch if r.violations]
    assert messages[0] == "line 2: not valid JSON: NaN is not a JSON number (RFC 8259); write it as a string"
    assert messages[3] == "line 5: arrays and objects nested deeper than the limit of 64 levels"
    assert messages[4] == "$expand nested deeper than the limit of 16 levels"
    single = [validator.validate_call(call, line) for line, call in pairs]
    assert [r.as_dict() for r in single] == [r.as_dict() for r in batch]


def test_text_report_escapes_control_characters_from_urls(demo_store):
    result = _invoke(validate_cmd, ["--store", str(demo_store), str(INVALID / "hostile-calls.jsonl")])
    assert result.exit_code == 1, result.output
    assert not any(ch in result.output for ch in "\r\x1b\u2028")
    assert "A_SalesOrders\\r\\nfake-call (line 1): valid\\x1b[2J" in result.output
    assert "sep\\u2028in-id (line 3): INVALID" in result.output
    calls = [line for line in result.output.splitlines() if not line.startswith(" ") and "(line " in line]
    assert len(calls) == len(HOSTILE)


def test_json_report_is_strict_json(demo_store, tmp_path):
    out = _invoke(validate_cmd, ["--store", str(demo_store), str(INVALID / "hostile-calls.jsonl"), "--format", "json"])
    assert [r["id"] for r in _no_nan(out.output)] == [i for i, _ in HOSTILE]
    from processkg.cli.validate import render_json  # a non-finite float can only come through the Python API

    result = Validator(StoreHandle.open(demo_store)).validate_call(
        post(DEMO_SO, "A_SalesOrder", {"Foo": float("nan"), "Bar": 1e999})
    )
    values = sorted(v["value"] for v in _no_nan(render_json([result]))[0]["violations"])
    assert values == ["inf", "nan"]


def test_a_file_that_is_not_json_lines_is_one_error(demo_store):
    readme = ROOT / "README.md"
    assert len(readme.read_text(encoding="utf-8").splitlines()) > 50
    result = _invoke(validate_cmd, ["--store", str(demo_store), str(readme)])
    assert result.exit_code == 2
    assert result.output.startswith(
        f"error: {readme}: not JSON Lines of recorded calls: no line is a JSON object (line 1: not valid JSON"
    )
    assert len(result.output.splitlines()) == 1


def test_an_empty_calls_file_is_one_error(demo_store, tmp_path):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n  \n", encoding="utf-8")
    result = _invoke(validate_cmd, ["--store", str(demo_store), str(empty)])
    assert result.exit_code == 2
    assert (
        result.output
        == f"error: {empty}: no recorded calls: the file is empty (JSON Lines: one call object per line)\n"
    )


def test_calls_from_standard_input(demo_store):
    calls = (
        "\n".join(
            json.dumps(c)
            for c in [
                post(DEMO_SO, "A_SalesOrder", {"SalesOrderType": "OR"}),
                post(DEMO_SO, "A_SalesOrder", {"Foo": 1}),
            ]
        )
        + "\n"
    )
    result = CliRunner().invoke(main, ["validate", "--store", str(demo_store), "-", "--format", "json"], input=calls)
    assert result.exit_code == 1, result.output
    assert [r["valid"] for r in json.loads(result.output)] == [True, False]
    empty = CliRunner().invoke(main, ["validate", "--store", str(demo_store), "-"], input="")
    assert empty.exit_code == 2 and "error: <stdin>: no recorded calls" in empty.output


def _deep_insert(levels: int) -> dict:
    """A sales order with ``levels`` entities nested (to_Item, then to_SalesOrder, then to_Item...)."""
    obj: dict = {"SalesOrderType": "OR"} if levels % 2 else {"Material": "X"}
    for level in range(levels - 1, 0, -1):
        obj = {"to_Item": [obj]} if level % 2 else {"to_SalesOrder": obj}
    return obj


def test_huge_and_deep_lines_are_malformed_naming_the_limit(demo_store, tmp_path):
    """The issue's inputs: 25 MB of 1.7 M keys, 100k levels, a deep insert 250 levels deep, then one good call."""
    path = tmp_path / "calls.jsonl"
    good = post(DEMO_SO, "A_SalesOrder", {"SalesOrderType": "OR"})
    with path.open("w", encoding="utf-8") as fh:
        fh.write("{" + ",".join(f'"k{i}":{i}' for i in range(1_700_000)) + "}\n")
        fh.write('{"a":' * 100_000 + "1" + "}" * 100_000 + "\n")
        fh.write(json.dumps(post(DEMO_SO, "A_SalesOrder", _deep_insert(250))) + "\n")
        fh.write(json.dumps(post(DEMO_SO, "A_SalesOrder", _deep_insert(20))) + "\n")
        fh.write(json.dumps(good) + "\n")
    result = _invoke(validate_cmd, ["--store", str(demo_store), str(path), "--format", "json"])
    assert result.exit_code == 1, result.output
    report = _no_nan(result.output)
    assert [r["valid"] for r in report] == [False, False, False, False, True]
    assert [v["kind"] for r in report[:4] for v in r["violations"]] == ["malformed"] * 4
    messages = [r["violations"][0]["message"] for r in report[:4]]
    assert messages[0] == "line 1: line longer than the limit of 10 MB"
    assert messages[1] == messages[2].replace("line 3", "line 2")
    assert messages[2] == "line 3: arrays and objects nested deeper than the limit of 64 levels"
    assert messages[3].endswith("entities nested deeper than the limit of 16 levels of deep insert")


def test_python_api_calls_are_bounded_like_lines(demo_store):
    validator = Validator(StoreHandle.open(demo_store))
    deep = validator.validate_call(post(DEMO_SO, "A_SalesOrder", _deep_insert(250)))
    assert [v.message for v in deep.violations] == ["arrays and objects nested deeper than the limit of 64 levels"]
    wide = validator.validate_call(post(DEMO_SO, "A_SalesOrder", {f"k{i}": i for i in range(10_001)}))
    assert [v.message for v in wide.violations] == [
        "more than the limit of 10,000 values (array items and object members) in one call"
    ]
    body = validator.validate_call(
        {"method": "POST", "service": DEMO_SO, "entity_set": "A_SalesOrder", "body": "[" * 100_000}
    )
    assert [v.message for v in body.violations] == [
        "the POST body is not JSON: arrays and objects nested deeper than the limit of 64 levels"
    ]
    expand = "to_Item($expand=to_SalesOrder($expand=" * 200 + "to_Item" + "))" * 200
    nested = validator.validate_call({"method": "GET", "url": f"{DEMO_ROOT}?$expand={expand}"})
    assert [(v.kind, v.message) for v in nested.violations] == [
        ("malformed", "$expand nested deeper than the limit of 16 levels")
    ]
    ok = validator.validate_call(post(DEMO_SO, "A_SalesOrder", _deep_insert(16)))
    assert ok.valid, ok.as_dict()


def _split_top_by_character(text: str, sep: str) -> list[str]:
    """The definition ``split_top`` keeps: every character visited, quotes toggle, parentheses nest."""
    out, cur, depth, quoted = [], [], 0, False
    for ch in text:
        if ch == "'":
            quoted = not quoted
        elif not quoted and ch in "()":
            depth += 1 if ch == "(" else -1
        if ch == sep and not quoted and depth == 0:
            out.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    out.append("".join(cur))
    return [s.strip() for s in out if s.strip()]


def test_split_top_splits_as_the_character_walk_does():
    """URL paths, query strings, keys and $select/$expand lists are split outside quotes and
    parentheses; the split that visits only the special characters gives the same parts on real
    URLs and on 20,000 random strings of the characters that matter (unbalanced ones included)."""
    real = [
        ("/sap/opu/odata/sap/API_SALES_ORDER_SRV/A_SalesOrder('0000000001')/to_Item", "/"),
        ("$filter=SalesOrder eq 'a&b'&$expand=to_Item($select=Material;$top=2)&$top=5", "&"),
        ("SalesOrder='1',SalesOrderItem='10'", ","),
        ("to_Item($select=A,B),to_Partner", ","),
        ("$select=A;$expand=B($select=C;$top=1)", ";"),
        ("A_X(Key='it''s/(odd)')/to_Y", "/"),
    ]
    rng = random.Random(21)
    randoms = [
        ("".join(rng.choice("ab '()/&,; ") for _ in range(rng.randint(0, 24))), sep)
        for sep in "/&,;"
        for _ in range(5000)
    ]
    for text, sep in real + randoms:
        assert urls_module.split_top(text, sep) == _split_top_by_character(text, sep), (text, sep)
    assert urls_module.split_top(real[0][0], "/")[-2:] == ["A_SalesOrder('0000000001')", "to_Item"]
