"""describe, compact by default (issue 22): small enough for a small model's context, and its example
create payload is one kg serve accepts. On the tasks store (A2X with the SAP codes), against a real kg serve."""

from __future__ import annotations

import json
import re
import statistics
from collections.abc import Iterator

import pytest

from processkg.graph.handle import StoreHandle
from processkg.tools.local_server import LocalServer
from processkg.tools.odata_client import ODataClient
from processkg.tools.specs import answer_text
from processkg.tools.toolbox import Toolbox

#: Entity sets whose example payload kg serve refuses, with the reason (none is a defect of describe's
#: example that describe could repair from the graph alone).
REFUSED: dict[tuple[str, str], str] = {}
#: describe's hint for a child whose parent key is read-only: the example goes inside a record of the parent.
INSIDE = re.compile(r"^inside its parent: POST (\w+)\(<key>\)/(\w+) with the example")


@pytest.fixture(scope="module")
def described(tasks_store) -> Iterator[tuple[Toolbox, dict[tuple[str, str], dict]]]:
    """A writing toolbox on a real kg serve of the tasks store, and the compact describe of every entity set."""
    with LocalServer(StoreHandle.open(tasks_store)) as server:
        box = Toolbox(StoreHandle.open(tasks_store), ODataClient(server.url), allow_writes=True)
        answers = {}
        for service, name in sorted(box.sets):
            answer, is_error = box.run("describe", {"service": service, "entity_set": name})
            assert not is_error, answer
            answers[(service, name)] = answer
        yield box, answers
        box.close()


def test_compact_describe_is_small_on_every_a2x_entity_set(described):
    _box, answers = described
    sizes = [len(answer_text(a)) for a in answers.values()]
    assert len(sizes) == 411
    assert statistics.median(sizes) < 1500 and max(sizes) <= 4000, (statistics.median(sizes), max(sizes))


def test_compact_describe_of_a_sales_order(described):
    _box, answers = described
    order = answers[("API_SALES_ORDER_SRV", "A_SalesOrder")]
    assert (
        order["key"] == ["SalesOrder"] and order["etag"] is True and order["allows"] == "read, create, update, delete"
    )
    assert "service" not in order and "entity_set" not in order, "the arguments are not echoed"
    assert (
        order["codes"]["SalesOrderType"]
        == "CF=Consignment Fill-up, CI=Consignment Issue, CONR=Consignment Returns, +16 more"
    )
    assert order["codes"]["TransactionCurrency"] == "ISO 4217 currency code (178 codes), e.g. EUR, USD, JPY"
    assert order["codes"]["DistributionChannel"] == "10=Direct Sales"  # a short list whole
    groups = dict(("String", g) if ": " not in g else g.split(": ", 1) for g in order["optional"].split("; ")[:-1])
    assert "RequestedDeliveryDate" in groups["DateTime"].split(", ")  # a date: a field a task sets, ranked first
    assert "PurchaseOrderByCustomer" in groups["String"].split(", ")  # shared by many sales documents
    assert order["optional"].endswith("; +34 more")  # 20 named, the rest counted
    named = {n for g in groups.values() for n in g.split(", ")}
    assert "SalesOrderType" not in named and not set(order["codes"]) & named, (
        "a property under codes is not named again"
    )
    # the curated fields (data/sap/required) are required, with type, length and label
    assert order["required_on_create"] == [
        "DistributionChannel: String(2)",
        'OrganizationDivision: String(2) "Division"',
        "SalesOrderType: String(4)",
        "SalesOrganization: String(4)",
        'SoldToParty: String(10) "Sold-To Party"',
    ]
    assert "to_Item: A_SalesOrderItem" in order["deep_insert"]["navigation"].split(", ")
    partner = answers[("API_BUSINESS_PARTNER", "A_BusinessPartner")]["deep_insert"]["navigation"].split(", ")
    assert "to_Customer (one)" in partner and "to_BusinessPartnerTax: A_BusinessPartnerTaxNumber" in partner
    assert order["deep_insert"]["syntax"] == '"to_Item": {"results": [{...}]}'
    assert order["example_create"]["SoldToParty"] == "0000000001"
    assert "more" not in order and "cut" not in order
    item = answers[("API_SALES_ORDER_SRV", "A_SalesOrderItem")]
    assert item["etag"] is False and "SalesOrder" not in item["example_create"]  # read-only: set by the parent
    assert "to_SalesOrder" not in item["deep_insert"]["navigation"]  # the parent is no child to insert
    assert item["codes"]["ShippingPoint"] == "as ProductionPlant"  # one list shown once


def test_compact_describe_names_every_writable_property(described):
    """Each writable property of every entity set is named once: a required one with its type, one with a
    code list under ``codes``, any other in ``optional`` (by type, a numbered series as ``Name1-9``), or
    counted at its end (``+34 more``: at most 20 are named)."""
    box, answers = described
    model = box.validator.model
    counted_sets = 0
    for (service, name), answer in answers.items():
        t = model.types[model.services[service].sets[name][0]]
        writable = {p.name for p in t.props.values() if not (p.key or p.read_only or p.computed)}
        named = {line.split(":")[0] for line in answer.get("required_on_create", [])} | set(answer.get("codes", {}))
        groups = answer.get("optional", "").split("; ")
        counted = int(groups.pop()[1:].removesuffix(" more")) if groups[-1].startswith("+") else 0
        optional = set()
        for group in filter(None, groups):
            for part in group.rpartition(": ")[2].split(", "):
                stem, _, last = part.partition("-")
                base = stem.rstrip("0123456789")
                optional |= {f"{base}{n}" for n in range(int(stem[len(base) :]), int(last) + 1)} if last else {stem}
        assert len(optional) <= 20 and not optional & named, (service, name)
        assert optional | named <= writable and len(writable - named - optional) == counted, (service, name)
        counted_sets += counted > 0
    assert counted_sets > 50, counted_sets


def test_an_example_child_takes_the_key_of_a_parent_record_kg_serve_has(described):
    """Keyed (PurchaseOrder, PurchaseOrderItem, AccountAssignmentNumber) in the Key element's order: its
    parent is A_PurchaseOrderItem, whose first record kg serve numbers 00010 (not the 00001 of a new key)."""
    _box, answers = described
    assignment = answers[("API_PURCHASEORDER_PROCESS_SRV", "A_PurOrdAccountAssignment")]
    assert assignment["key"][:2] == ["PurchaseOrder", "PurchaseOrderItem"]
    assert {k: assignment["example_create"][k] for k in assignment["key"][:2]} == {
        "PurchaseOrder": "0000000001",
        "PurchaseOrderItem": "00010",
    }


def test_full_describe_is_the_whole_typed_context(described):
    box, _answers = described
    full, _ = box.run("describe", {"service": "API_SALES_ORDER_SRV", "entity_set": "A_SalesOrder", "detail": "full"})
    assert {"value_helps", "navigation", "operations", "process", "properties"} <= set(full)
    assert 'TotalNetAmount: Decimal(16,3), read-only "Net Value"' in full["properties"]
    assert full["value_helps"]["IncotermsClassification"].startswith("CFR=Cost and Freight, CIF=Cost Insurance")
    bad, is_error = box.run(
        "describe", {"service": "API_SALES_ORDER_SRV", "entity_set": "A_SalesOrder", "detail": "all"}
    )
    assert is_error and "argument 'detail' must be" in bad["error"]


def test_describe_gives_a_whole_code_list_on_request(described):
    box, answers = described
    args = {"service": "API_SALES_ORDER_SRV", "entity_set": "A_SalesOrder"}
    listed, is_error = box.run("describe", dict(args, codes=["SalesOrderType", "PurchaseOrderByCustomer"]))
    assert not is_error and set(listed) == {"codes"}
    types = listed["codes"]["SalesOrderType"].split(", ")
    assert len(types) == 19 and types[:2] == ["CF=Consignment Fill-up", "CI=Consignment Issue"]
    assert answers[("API_SALES_ORDER_SRV", "A_SalesOrder")]["codes"]["SalesOrderType"].endswith(f"+{19 - 3} more")
    assert listed["codes"]["PurchaseOrderByCustomer"] == "no code list"
    wrong, is_error = box.run("describe", dict(args, codes="SalesOrderTyp"))
    assert is_error and wrong["error"].startswith(
        "A_SalesOrder has no property 'SalesOrderTyp'; did you mean SalesOrderType"
    )


def test_every_example_create_payload_is_accepted_by_kg_serve(described):
    box, answers = described
    creatable = {k: a for k, a in answers.items() if "example_create" in a}
    assert len(creatable) > 200
    refused, inside = {}, []
    for (service, name), answer in sorted(creatable.items()):
        url = answer["path"]
        hint = INSIDE.match(answer.get("create", ""))
        if hint:  # its parent's key is read-only: POSTed as describe says, inside the parent's first record
            parent = answers[(service, hint[1])]
            first, _ = box.run("call", {"method": "GET", "url": parent["path"] + "?$top=1"})
            record = (first["answer"].get("value") or first["answer"]["d"]["results"])[0]
            url = f"{parent['path'].rpartition('/')[0]}/{parent['one_record'].format(**record)}/{hint[2]}"
            inside.append(name)
        result, _ = box.run("call", {"method": "POST", "url": url, "body": answer["example_create"]})
        if result["status"] != 201:
            refused[(service, name)] = json.dumps(result.get("violations") or result.get("answer"))[:300]
    assert set(refused) == set(REFUSED), json.dumps({f"{s}/{n}": why for (s, n), why in refused.items()}, indent=1)
    assert {"A_SalesOrderItem", "A_CreditMemoReqItemPartner", "A_SlsQtanItemRelatedObject"} <= set(inside), inside


def test_a_child_whose_parent_key_is_read_only_is_created_inside_its_parent(described):
    box, answers = described
    item, order = answers[("API_SALES_ORDER_SRV", "A_SalesOrderItem")], answers[("API_SALES_ORDER_SRV", "A_SalesOrder")]
    assert item["create"] == (
        "inside its parent: POST A_SalesOrder(<key>)/to_Item with the example, or deep insert in the POST of "
        'A_SalesOrder as "to_Item"; its SalesOrder comes from the parent'
    )
    assert "create" not in order
    under, _ = box.run(
        "call", {"method": "POST", "url": order["path"] + "('0000000001')/to_Item", "body": item["example_create"]}
    )
    assert under["status"] == 201 and under["answer"]["d"]["SalesOrder"] == "0000000001", under
    deep = dict(order["example_create"], to_Item={"results": [item["example_create"]]})
    created, _ = box.run("call", {"method": "POST", "url": order["path"], "body": deep, "select": ["SalesOrder"]})
    assert created["status"] == 201, created
