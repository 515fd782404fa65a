"""pyodata, SAP's Python OData V2 client, against a real ``kg serve`` on loopback (issue 21 §1).

One server per module on the session's A2X store, CSRF on (pyodata is set up as its documentation
says: the token fetched once and sent as a session header); every test starts from the generated
records (``POST /$reset``). Nothing here is mocked: pyodata sends its own URLs and bodies.
"""

from __future__ import annotations

from collections.abc import Iterator
from urllib.parse import urlsplit

import httpx
import pyodata
import pytest
import requests
from lxml import etree
from pyodata.exceptions import HttpError
from pyodata.v2.service import Service
from pyodata.vendor.SAP import BusinessGatewayError

from conftest import running
from processkg.graph.handle import StoreHandle
from processkg.serve.app import Server, open_server

SO = "/sap/opu/odata/sap/API_SALES_ORDER_SRV/"
PRODUCT = "/sap/opu/odata/sap/API_PRODUCT_SRV/"
PARTNER = "/sap/opu/odata/sap/API_BUSINESS_PARTNER/"
CSDL4 = "http://docs.oasis-open.org/odata/ns/edm"


@pytest.fixture(scope="module")
def served(a2x_store) -> Iterator[tuple[Server, httpx.Client]]:
    server = open_server(StoreHandle.open(a2x_store), allow_reset=True)
    with running(server) as client:
        yield server, client


@pytest.fixture(scope="module")
def session(served) -> requests.Session:
    _server, client = served
    session = requests.Session()
    token = session.head(f"{client.base_url}{SO}", headers={"x-csrf-token": "fetch"}).headers["x-csrf-token"]
    session.headers["x-csrf-token"] = token
    return session


@pytest.fixture
def fresh(served, session) -> requests.Session:
    _server, client = served
    assert session.post(f"{client.base_url}/$reset").status_code == 204
    return session


def service(served: tuple[Server, httpx.Client], session: requests.Session, path: str) -> Service:
    _server, client = served
    return pyodata.Client(f"{client.base_url}{path}", session)


def test_filter_order_by_and_filtered_count(served, fresh):
    """pyodata encodes a space in a query option as ``+`` (form encoding); the server reads it as a space."""
    orders = service(served, fresh, SO).entity_sets.A_SalesOrder
    third = orders.get_entities().filter("SalesOrder eq '0000000003'").execute()
    assert [o.SalesOrder for o in third] == ["0000000003"]
    descending = orders.get_entities().order_by("SalesOrder desc").top(3).execute()
    assert [o.SalesOrder for o in descending] == ["0000000020", "0000000019", "0000000018"]
    assert orders.get_entities().filter("SalesOrder gt '0000000015'").count().execute() == 5
    assert orders.get_entities().count().execute() == 20


def test_the_catalog_service_lists_the_v2_services_to_pyodata(served, session):
    """SAP's V2 catalog (``IWFND/CATALOGSERVICE;v=2``) read by pyodata: its $metadata and ServiceCollection."""
    catalog = service(served, session, "/sap/opu/odata/IWFND/CATALOGSERVICE;v=2/")
    entries = catalog.entity_sets.ServiceCollection.get_entities().execute()
    names = [e.TechnicalServiceName for e in entries]
    assert "API_SALES_ORDER_SRV" in names and len(names) == 39, "the 39 V2 services of the A2X corpus"
    sales = next(e for e in entries if e.TechnicalServiceName == "API_SALES_ORDER_SRV")
    _server, client = served
    assert sales.ServiceUrl == f"{client.base_url}".rstrip("/") + SO
    assert pyodata.Client(sales.ServiceUrl, session).entity_sets.A_SalesOrder  # the URL is usable as it is


def test_the_root_lists_every_service_path(served):
    server, client = served
    root = client.get("/")
    assert root.status_code == 200
    services = {s["service"]: s for s in root.json()["services"]}
    assert len(services) == 45 and services["API_SALES_ORDER_SRV"]["url"].endswith(SO)
    assert services["CE_SALESORDER_0001"]["version"].startswith("4")
    fetched = client.get("/", headers={"x-csrf-token": "Fetch"}).headers["x-csrf-token"]
    assert fetched == server.csrf_token, "a GET of the root gives the CSRF token, as any GET does"
    unknown = client.get("/sap/opu/odata/sap/NO_SUCH_SRV/")
    assert unknown.status_code == 404 and "GET / lists the paths of the 45 services" in unknown.text


V4_CATALOG = "/sap/opu/odata4/iwfnd/config/default/iwfnd/catalog/0002/"


def test_the_v4_catalog_lists_every_v4_service_as_a_service_group(served):
    """SAP Gateway's V4 catalog, asked as SAP's Fiori tools ask it (``@sap-ux/axios-extension``'s
    V4CatalogService; ``benchmarks/sap-clients/catalog.js`` runs that client itself): a group per V4
    service, whose service URL is the path ``GET /`` gives and serves its $metadata."""
    _server, client = served
    root = {urlsplit(s["url"]).path for s in client.get("/").json()["services"] if s["version"].startswith("4")}
    answer = client.get(V4_CATALOG + "ServiceGroups?$count=true&$expand=DefaultSystem($expand=Services())")
    assert answer.status_code == 200 and answer.headers["odata-version"] == "4.0"
    body = answer.json()
    assert body["@odata.context"] == "$metadata#ServiceGroups(DefaultSystem(Services()))"
    assert body["@odata.count"] == len(body["value"]) == len(root) == 6
    urls = {s["ServiceUrl"] for g in body["value"] for s in g["DefaultSystem"]["Services"]}
    assert urls == root
    for url in sorted(urls):
        metadata = client.get(url + "$metadata")
        assert metadata.status_code == 200 and '<edmx:Edmx Version="4.0' in metadata.text
    metadata = etree.fromstring(client.get(V4_CATALOG + "$metadata").content)
    declared = {
        t.get("Name"): {p.get("Name") for p in t.iterfind(f"{{{CSDL4}}}Property")}
        for t in metadata.iter(f"{{{CSDL4}}}EntityType")
    }
    group = body["value"][0]
    assert declared["ServiceGroupType"] == set(group) - {"DefaultSystem"}
    assert declared["SystemType"] == set(group["DefaultSystem"]) - {"Services"}
    assert declared["ServiceType"] == set(group["DefaultSystem"]["Services"][0])
    second = client.get(V4_CATALOG + "ServiceGroups?$skip=1&$top=1").json()["value"]
    assert second == [{k: body["value"][1][k] for k in ("GroupId", "Description")}], "no expand: the groups alone"
    refused = client.get(V4_CATALOG + "ServiceGroups?$filter=GroupId eq 'X'")
    assert refused.status_code == 400 and "$filter" in refused.json()["error"]["message"]


def test_reads_navigation_and_expand_over_several_services(served, fresh):
    product = service(served, fresh, PRODUCT).entity_sets.A_Product.get_entity("0000000002").execute()
    assert product.Product == "0000000002"
    partners = service(served, fresh, PARTNER).entity_sets.A_BusinessPartner.get_entities()
    page = partners.select("BusinessPartner").skip(2).top(3).execute()
    assert [p.BusinessPartner for p in page] == ["0000000003", "0000000004", "0000000005"]
    orders = service(served, fresh, SO).entity_sets.A_SalesOrder
    order = orders.get_entity("0000000004").expand("to_Item").execute()
    assert [i.SalesOrder for i in order.to_Item] == ["0000000004"] * len(order.to_Item) and order.to_Item
    items = orders.get_entity("0000000004").execute().nav("to_Item").get_entities().execute()
    assert [i.SalesOrderItem for i in items] == [i.SalesOrderItem for i in order.to_Item]


def test_deep_insert_update_with_etag_and_delete(served, fresh):
    orders = service(served, fresh, SO).entity_sets.A_SalesOrder
    item = {"Material": "0000000001", "RequestedQuantity": "2", "RequestedQuantityUnit": "PC"}
    body = {"SalesOrderType": "OR", "SoldToParty": "0000000001", "to_Item": [item, {**item, "Material": "0000000002"}]}
    created = orders.create_entity().set(**body).execute()
    assert created.SalesOrder == "0000000021"
    assert [i.Material for i in created.to_Item] == ["0000000001", "0000000002"], "the 201 holds the items"
    read = orders.get_entity("0000000021").execute()
    update = orders.update_entity(SalesOrder="0000000021").set(PurchaseOrderByCustomer="PYODATA")
    update.add_headers({"If-Match": read.etag})  # pyodata's add_headers returns None
    update.execute()
    assert orders.get_entity("0000000021").execute().PurchaseOrderByCustomer == "PYODATA"
    stale = orders.update_entity(SalesOrder="0000000021").set(PurchaseOrderByCustomer="AGAIN")
    stale.add_headers({"If-Match": read.etag})
    with pytest.raises(HttpError) as failed:
        stale.execute()
    assert failed.value.response.status_code == 412
    current = orders.get_entity("0000000021").execute().etag
    delete = orders.delete_entity(SalesOrder="0000000021")
    delete.add_headers({"If-Match": current})
    delete.execute()
    with pytest.raises(HttpError) as gone:
        orders.get_entity("0000000021").execute()
    assert gone.value.response.status_code == 404


def test_batch_with_a_read_and_a_change_set(served, fresh):
    orders = service(served, fresh, SO)
    batch = orders.create_batch()
    batch.add_request(orders.entity_sets.A_SalesOrder.get_entity("0000000005"))
    changes = orders.create_changeset()
    update = orders.entity_sets.A_SalesOrder.update_entity(SalesOrder="0000000005").set(PurchaseOrderByCustomer="X")
    update.add_headers({"If-Match": "*"})
    changes.add_request(update)
    batch.add_request(changes)
    read, changed = batch.execute()
    assert read.SalesOrder == "0000000005" and changed == [None]
    assert orders.entity_sets.A_SalesOrder.get_entity("0000000005").execute().PurchaseOrderByCustomer == "X"


def test_a_rejected_call_is_parsed_by_pyodatas_sap_error_type(served, fresh):
    """pyodata's SAP vendor error reads the server's message and one detail per violation."""
    orders = service(served, fresh, SO).entity_sets.A_SalesOrder
    HttpError.VendorType = BusinessGatewayError
    try:
        with pytest.raises(BusinessGatewayError) as rejected:
            orders.create_entity().set(SalesOrderType="OR", SoldToParty="NOSUCHCUST").execute()
    finally:
        HttpError.VendorType = None
    assert rejected.value.response.status_code == 400
    assert str(rejected.value).startswith("1 unknown reference(s); first at /SoldToParty")
    assert len(rejected.value.errordetails) == 1 and "NOSUCHCUST" in rejected.value.errordetails[0]
