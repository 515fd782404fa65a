"""SAP's reference organisation in kg serve: org units are checked the same way in every set that
carries them, and the org-unit entity sets hold the same keys the checks accept.

One server per module on the session's tasks store (A2X with SAP's code lists bound by
``data/sap/codes/bindings.yaml``): an org unit (company code, sales organisation, plant, ...)
is a code of ``codes/org-structure.csv`` wherever it is sent, under SAP's role names too
(``ReceivingPlant``); A_Plant, A_CompanyCode, A_SalesOrganization and A_DistributionChannel
are generated from the same codes, so what a client reads there is what a write accepts.
"""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from conftest import ROOT
from processkg.assets import asset
from processkg.errors import AssetMissingError
from processkg.serve import odata_json, org_units
from processkg.serve.app import ServeHTTPError, Server
from processkg.serve.data import Table
from processkg.serve.values import to_json

SO = "/sap/opu/odata/sap/API_SALES_ORDER_SRV/"
ORG_FILE = ROOT / "data" / "sap" / "codes" / "org-structure.csv"
#: SAP's reference organisation (Best Practices, Germany): the first key of each org unit.
REFERENCE = {
    "CompanyCode": "1010",
    "SalesOrganization": "1010",
    "DistributionChannel": "10",
    "Division": "00",
    "Plant": "1010",
    "StorageLocation": "101A",
    "ShippingPoint": "1010",
    "PurchasingOrganization": "1010",
    "PurchasingGroup": "001",
    "ControllingArea": "A000",
}
#: The org-unit entity sets of the A2X services and the org unit that keys each.
ORG_SETS = {
    ("API_PLANT_SRV", "A_Plant"): "Plant",
    ("API_COMPANYCODE_SRV", "A_CompanyCode"): "CompanyCode",
    ("API_JOURNALENTRYITEMBASIC_SRV", "A_CompanyCode"): "CompanyCode",
    ("API_SALESORGANIZATION_SRV", "A_SalesOrganization"): "SalesOrganization",
    ("API_DISTRIBUTIONCHANNEL_SRV", "A_DistributionChannel"): "DistributionChannel",
}


def _org_lists(path: Path) -> dict[str, tuple[str, ...]]:
    lists: dict[str, list[str]] = {}
    with path.open(encoding="utf-8", newline="") as f:
        for row in csv.DictReader(f):
            lists.setdefault(row["value_list"], []).append(row["code"])
    return {name: tuple(sorted(codes)) for name, codes in lists.items()}


ORG_LISTS = _org_lists(ORG_FILE)


def item(**change: object) -> dict[str, object]:
    base = {
        "Material": "0000000001",
        "RequestedQuantity": "2",
        "RequestedQuantityUnit": "PC",
        "ProductionPlant": "1010",
    }
    return {**base, **change}


def order(items: dict[str, object] | None = None, **header: object) -> dict[str, object]:
    body = {
        "SalesOrderType": "OR",
        "SalesOrganization": "1010",
        "DistributionChannel": "10",
        "OrganizationDivision": "00",
        "SoldToParty": "0000000001",
    }
    return {**body, **header, "to_Item": [items or item()]}


def _error(answer) -> tuple[str, str, str]:
    (detail, *_rest) = answer.json()["error"]["innererror"]["errordetails"]
    return detail["code"], detail["target"], detail["message"]


def test_the_reference_organisation_is_accepted_on_a_sales_order(tasks_client):
    created = tasks_client.post(SO + "A_SalesOrder", json=order())
    assert created.status_code == 201, created.text
    head = created.json()["d"]
    assert (head["SalesOrganization"], head["DistributionChannel"], head["OrganizationDivision"]) == (
        "1010",
        "10",
        "00",
    )
    assert head["to_Item"]["results"][0]["ProductionPlant"] == "1010"


def test_the_reference_organisation_exists_where_org_units_have_entity_sets(tasks_client):
    roots = {
        "API_PLANT_SRV": "/sap/opu/odata/sap/API_PLANT_SRV/A_Plant('1010')",
        "API_COMPANYCODE_SRV": "/sap/opu/odata/sap/API_COMPANYCODE_SRV/A_CompanyCode('1010')",
        "API_SALESORGANIZATION_SRV": "/sap/opu/odata/sap/API_SALESORGANIZATION_SRV/A_SalesOrganization('1010')",
        "API_DISTRIBUTIONCHANNEL_SRV": "/sap/opu/odata/sap/API_DISTRIBUTIONCHANNEL_SRV/A_DistributionChannel('10')",
    }
    for service, url in roots.items():
        assert tasks_client.get(url).status_code == 200, (service, url)
    assert tasks_client.get("/sap/opu/odata/sap/API_PLANT_SRV/A_Plant('9999')").status_code == 404


@pytest.mark.parametrize(
    "where, change, target, named",
    [
        ("header", {"SalesOrganization": "9999"}, "/SalesOrganization", "1010"),
        ("header", {"DistributionChannel": "99"}, "/DistributionChannel", "10"),
        ("header", {"OrganizationDivision": "99"}, "/OrganizationDivision", "00"),
        ("item", {"ProductionPlant": "9999"}, "/to_Item/0/ProductionPlant", "1010"),
    ],
)
def test_an_unknown_org_unit_is_rejected_with_a_hint_naming_the_reference_one(
    tasks_client, where, change, target, named
):
    body = order(**change) if where == "header" else order(item(**change))
    answer = tasks_client.post(SO + "A_SalesOrder", json=body)
    assert answer.status_code == 400, answer.text
    code, at, message = _error(answer)
    assert (code, at) == ("invalid-code", target)
    assert named in message.split("codelist: ", 1)[1], message
    assert "create" not in message, "an org unit cannot be created through these services"
    assert tasks_client.get(SO + "A_SalesOrder/$count").text == "20", "a rejected call changes nothing"


def test_every_org_unit_set_holds_the_codes_the_checks_accept(tasks_server):
    """A_Plant, A_CompanyCode, A_SalesOrganization, A_DistributionChannel: their records are the org
    unit's codes, no more and no fewer, and the key property carries the same list."""
    for (service, name), unit in ORG_SETS.items():
        table = tasks_server.data.table(service, name)
        assert table is not None and table.keys == [unit], (service, name)
        assert table.type.props[unit].codes == ORG_LISTS[unit], (service, name)
        assert sorted(k for (k,) in table.rows) == list(ORG_LISTS[unit]), (service, name)
        assert (REFERENCE[unit],) in table.rows


def _org_unit(table: Table, prop: str) -> str | None:
    """The org unit ``prop`` holds, by the code list bound to it (None: no org unit)."""
    codes = table.type.props[prop].codes
    return next((unit for unit, listed in ORG_LISTS.items() if codes == listed), None)


def _json(table: Table, record: dict[str, object]) -> dict[str, object]:
    v2 = odata_json.is_v2(table.type)
    return {k: to_json(v, table.type.props[k].edm_type, v2) for k, v in record.items() if v is not None}


def _create(tasks_server: Server, table: Table, record: dict[str, object]) -> ServeHTTPError | None:
    """The server's verdict on a POST of ``record``'s writable values to ``table`` (None: accepted)."""
    roots = {service: root for root, service in tasks_server.roots.items()}
    props = table.type.props
    writable = {k: v for k, v in record.items() if not (props[k].read_only or props[k].computed)}
    try:
        tasks_server.check_call(
            {"method": "POST", "url": roots[table.service] + table.name, "payload": _json(table, writable)}
        )
    except ServeHTTPError as exc:
        return exc
    return None


def test_every_write_set_takes_the_reference_organisation_and_rejects_an_unknown_org_unit(tasks_server):
    """Every creatable A2X set with a writable org-unit property, under any of SAP's role names
    (ReplacementMatlSupplyingPlant, MaintenancePlanningPlant, ...): its first record with
    the reference organisation's keys is a valid create (a required value of complex type, which the
    generated records lack, let pass as tests/test_serve_seed.py does); with an unknown key, each is
    rejected as an invalid code whose hint names the reference key."""
    walked, accepted, rejected = set(), [], []
    for table in tasks_server.data.all_tables():
        if not table.creatable or not table.keys or not table.rows:
            continue
        props = table.type.props
        units = {
            name: unit
            for name in props
            if not (props[name].key or props[name].read_only or props[name].computed)
            and (unit := _org_unit(table, name)) is not None
        }
        if not units:
            continue
        walked |= {(table.name, name) for name in units}
        record = dict(next(iter(table.rows.values())))
        record.update({name: REFERENCE[unit] for name, unit in units.items()})
        refused = _create(tasks_server, table, record)
        if refused is not None and not all(
            d["code"] == "missing-required" and props[d["target"].lstrip("/")].complex_type is not None
            for d in refused.details or []
        ):
            accepted.append((table.service, table.name, refused.message))
        for name, unit in sorted(units.items()):
            wrong = _create(tasks_server, table, {**record, name: "9" * len(REFERENCE[unit])})
            found = [d for d in (wrong.details or []) if d["target"] == f"/{name}"] if wrong else []
            if [d["code"] for d in found] != ["invalid-code"] or REFERENCE[unit] not in found[0]["message"]:
                rejected.append((table.service, table.name, name, found))
    assert len(walked) > 90
    assert {("A_SalesOrder", "SalesOrganization"), ("A_CustomerReturnItem", "ReplacementMatlSupplyingPlant")} <= walked
    assert accepted == [], accepted
    assert rejected == [], rejected


def test_a_decimal_over_its_scale_is_rejected(tasks_client):
    """A_SalesOrderItem.RequestedQuantity is Precision="15" Scale="3": four places are one too many."""
    answer = tasks_client.post(SO + "A_SalesOrder", json=order(item(RequestedQuantity="2.0005")))
    assert answer.status_code == 400, answer.text
    assert _error(answer) == (
        "decimal-digits",
        "/to_Item/0/RequestedQuantity",
        "RequestedQuantity allows 3 decimal places (Scale=3); got 4: round it",
    )
    fixed = tasks_client.post(SO + "A_SalesOrder", json=order(item(RequestedQuantity="2.0050")))
    assert fixed.status_code == 201, fixed.text


#: SAP's Best Practices reference organisation: company code -> (country, currency).
COMPANY = {"1010": ("DE", "EUR"), "1310": ("CN", "CNY"), "1710": ("US", "USD")}


def test_company_codes_carry_their_country_and_currency_and_what_belongs_to_them_follows(tasks_server):
    """1010 is German and books in euros, 1310 Chinese (yuan), 1710 American (dollars); a plant and a
    sales organisation name the company code of their number, and a sales order's currency (header and
    items) is that of its sales organisation's company code."""
    tasks_server.data.reset()  # the generated records, not what other tests created
    codes = tasks_server.data.table("API_COMPANYCODE_SRV", "A_CompanyCode")
    assert codes is not None
    assert {k: (r["Country"], r["Currency"]) for (k,), r in codes.rows.items()} == COMPANY
    plants = tasks_server.data.table("API_PLANT_SRV", "A_Plant")
    assert plants is not None and {k: r["CompanyCode"] for (k,), r in plants.rows.items()} == {c: c for c in COMPANY}
    orgs = tasks_server.data.table("API_SALESORGANIZATION_SRV", "A_SalesOrganization")
    assert orgs is not None
    assert {k: (r["CompanyCode"], r["SalesOrganizationCurrency"]) for (k,), r in orgs.rows.items()} == {
        c: (c, COMPANY[c][1]) for c in COMPANY
    }
    orders = tasks_server.data.table("API_SALES_ORDER_SRV", "A_SalesOrder")
    items = tasks_server.data.table("API_SALES_ORDER_SRV", "A_SalesOrderItem")
    assert orders is not None and items is not None
    currency = {r["SalesOrder"]: COMPANY[str(r["SalesOrganization"])][1] for r in orders.rows.values()}
    assert {r["TransactionCurrency"] for r in orders.rows.values()} == {"EUR", "CNY", "USD"}
    assert all(r["TransactionCurrency"] == currency[r["SalesOrder"]] for r in orders.rows.values())
    assert all(r["TransactionCurrency"] == currency[r["SalesOrder"]] for r in items.rows.values())
    orgs_of = {r["SalesOrder"]: r["SalesOrganization"] for r in orders.rows.values()}
    assert all(r["ProductionPlant"] == orgs_of[r["SalesOrder"]] for r in items.rows.values()), "plant in its company"


def _storage_locations() -> dict[str, set[str]]:
    """Plant -> its storage locations, as org-structure.csv describes them ("... (Plant 1010)")."""
    found: dict[str, set[str]] = {}
    with ORG_FILE.open(encoding="utf-8", newline="") as f:
        for row in csv.DictReader(f):
            if row["value_list"] == "StorageLocation":
                found.setdefault(row["description"].rsplit("Plant ", 1)[1].rstrip(")"), set()).add(row["code"])
    return found


def test_every_generated_storage_location_is_one_of_its_plant_s(tasks_server):
    tasks_server.data.reset()
    locations = _storage_locations()
    pairs = [("Plant", "StorageLocation"), ("ProductionPlant", "StorageLocation")]
    pairs += [("IssuingOrReceivingPlant", "IssuingOrReceivingStorageLoc")]
    seen, wrong = 0, []
    for table in tasks_server.data.all_tables():
        props = table.type.props
        for plant, location in pairs:
            if plant not in props or location not in props or (plant == "ProductionPlant" and "Plant" in props):
                continue
            for r in table.rows.values():
                if r.get(plant) in locations and r.get(location) not in (None, ""):
                    seen += 1
                    if r[location] not in locations[str(r[plant])]:
                        wrong.append((table.service, table.name, r[plant], r[location]))
    assert seen > 100
    assert wrong == []


def test_a_storage_location_of_another_plant_is_rejected_with_the_plant_s_locations(tasks_client):
    answer = tasks_client.post(SO + "A_SalesOrder", json=order(item(StorageLocation="171A")))
    assert answer.status_code == 400, answer.text
    code, target, message = _error(answer)
    assert (code, target) == ("storage-location-not-in-plant", "/to_Item/0/StorageLocation")
    assert "101A, 101B, 101C, 101E, 101R" in message, message
    assert tasks_client.get(SO + "A_SalesOrder/$count").text == "20", "a rejected call changes nothing"
    accepted = tasks_client.post(SO + "A_SalesOrder", json=order(item(StorageLocation="101B")))
    assert accepted.status_code == 201, accepted.text


def test_the_organisation_is_the_shipped_data_file_and_agrees_with_the_code_lists():
    """The table is data shipped with the package (assets/org_units), not code: every company code, unit and
    storage location it names is a code of org-structure.csv, and each storage location is named after its
    plant (``##1X`` of plant ``##10``)."""
    path = asset(*org_units.ORGANISATION)
    assert org_units._read(path) == (org_units.COMPANY_CODES, org_units.UNIT_COMPANY, org_units.STORAGE_LOCATIONS)
    assert org_units.COMPANY_CODES["1010"] == ("DE", "EUR") and org_units.COMPANY_CODES["1710"] == ("US", "USD")
    with ORG_FILE.open(encoding="utf-8") as handle:
        codes: dict[str, set[str]] = {}
        for row in csv.DictReader(line for line in handle if not line.startswith("#")):
            codes.setdefault(row["value_list"], set()).add(row["code"])
    assert set(org_units.COMPANY_CODES) <= codes["CompanyCode"]
    assert set(org_units.UNIT_COMPANY) <= codes["Plant"] & codes["SalesOrganization"] & codes["ShippingPoint"]
    for plant, locations in org_units.STORAGE_LOCATIONS.items():
        assert set(locations) <= codes["StorageLocation"] and all(x[:3] == plant[:3] for x in locations), plant


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{", r"packaged asset damaged"),
        ('{"company_codes": {}, "unit_company": {}}', r"packaged asset damaged \(KeyError\('storage_locations'\)\)"),
        (
            '{"company_codes": {}, "unit_company": {"1010": "9999"}, "storage_locations": {}}',
            r"unit_company names company codes it does not list: 9999",
        ),
    ],
)
def test_a_damaged_organisation_file_is_one_line_naming_it(tmp_path, text, message):
    path = tmp_path / "reference-organisation.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(AssetMissingError, match=rf"reference-organisation\.json: .*{message}") as caught:
        org_units._read(path)
    assert "\n" not in str(caught.value)
