"""pyodata, SAP's Python OData V2 client, against a real ``kg serve`` on loopback (issue 21 §1).

One server per module on the session's A2X store, CSRF on (pyodata is set up as its documentation
says: the token fetched once and sent as a session header); every test starts from the generated
records (``POST /$reset``). Nothing here is mocked: pyodata sends its own URLs and bodies.
"""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pyodata
import pytest
import requests
from pyodata.v2.service import Service

from processkg.serve.app import Server, open_server
from test_serve_a2x import running

SO = "/sap/opu/odata/sap/API_SALES_ORDER_SRV/"
PRODUCT = "/sap/opu/odata/sap/API_PRODUCT_SRV/"


@pytest.fixture(scope="module")
def served(a2x_store) -> Iterator[tuple[Server, httpx.Client]]:
    server = open_server(a2x_store, allow_reset=True)
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
    _server, client = served
    root = client.get("/")
    assert root.status_code == 200
    services = {s["service"]: s for s in root.json()["services"]}
    assert len(services) == 45 and services["API_SALES_ORDER_SRV"]["url"].endswith(SO)
    assert services["CE_SALESORDER_0001"]["version"].startswith("4")
    unknown = client.get("/sap/opu/odata/sap/NO_SUCH_SRV/")
    assert unknown.status_code == 404 and "GET / lists the paths of the 45 services" in unknown.text
