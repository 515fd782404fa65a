"""What a task's words name (processkg.tools.task_terms): the read of the record a task names and the
codes its words name, on the A2X tasks store with the SAP code lists, and sent to a real kg serve."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from processkg.graph.handle import StoreHandle
from processkg.services.model import Prop
from processkg.tools.local_server import LocalServer
from processkg.tools.odata_client import ODataClient
from processkg.tools.task_terms import Token, named_values, same_word, tokens
from processkg.tools.toolbox import Toolbox


@pytest.fixture(scope="module")
def box(tasks_store) -> Iterator[Toolbox]:
    with LocalServer(StoreHandle.open(tasks_store)) as server:
        toolbox = Toolbox(StoreHandle.open(tasks_store), ODataClient(server.url))
        yield toolbox
        toolbox.close()


@pytest.mark.parametrize(
    ("a", "b", "same"),
    [
        ("order", "order", True),
        ("order", "ordered", True),
        ("german", "germany", True),
        ("us", "usa", True),
        ("china", "chinese", True),
        ("euro", "euros", True),
        ("go", "gold", False),  # two letters take one more at most
        ("come", "comoros", False),  # a vowel replaced only in words of five letters or more
        ("plant", "planned", False),
        ("s", "som", False),
    ],
)
def test_words_match_in_another_form_only(a, b, same):
    assert same_word(a, b) is same and same_word(b, a) is same


def test_a_value_belongs_to_the_property_named_right_before_it():
    prop = Prop("urn:p", "SalesOrganization", "Edm.String", max_length=4)
    assert named_values(tokens("in the sales organization 1710, channel 10"), prop, "", all_words=True) == ["1710"]
    # "10" follows "channel", not the sales organization, though both words are near
    assert named_values(tokens("sales organization and channel 10"), prop, "", all_words=True) == []
    # a value longer than the property's length is not its value; "number" may stand between
    assert named_values(tokens("sales organization 17100"), prop, "", all_words=True) == []
    assert named_values(tokens("sales organization number 1710"), prop, "", all_words=True) == ["1710"]
    assert tokens("no. SW-010 pump")[1].text == "SW-010"  # a value with a hyphen stays one value
    assert tokens("text 'SW-010 pump'")[1] == Token("SW-010 pump", "")  # and so does a quoted text
    possessive = tokens("the customer's text 'pump leaking'")  # an apostrophe opens no quoted text
    assert [t.text for t in possessive] == ["the", "customer", "s", "text", "pump leaking"]


def test_a_quoted_text_is_the_value_of_the_property_named_before_it(box):
    answer = box.find_entity_sets("Report a malfunction with the notification text 'pump at gate 3 leaking'.")
    assert any("values NotificationText=pump at gate 3 leaking" in line for line in answer["named_in_task"])


def test_the_record_a_lookup_names_is_read_with_a_filter_on_its_header_key(box):
    answer = box.find_entity_sets("Which material is ordered in sales order 0000000003, and in what quantity?")
    assert answer["results"][0].startswith("API_SALES_ORDER_SRV/A_SalesOrderItem ")
    line = answer["named_in_task"][0]
    read = "GET /sap/opu/odata/sap/API_SALES_ORDER_SRV/A_SalesOrderItem?$filter=SalesOrder eq '0000000003'"
    assert line == f"API_SALES_ORDER_SRV/A_SalesOrderItem: read {read}"
    sent = box.call("GET", read.removeprefix("GET "))
    items = sent["answer"]["d"]["results"]
    assert sent["status"] == 200 and items and {i["SalesOrder"] for i in items} == {"0000000003"}


def test_a_header_named_by_its_whole_key_is_read_by_key(box):
    answer = box.find_entity_sets("Show outbound delivery 0000000005 with its header data", k=5)
    read = "GET /sap/opu/odata/sap/API_OUTBOUND_DELIVERY_SRV/A_OutbDeliveryHeader('0000000005')"
    assert any(
        line.startswith(f"API_OUTBOUND_DELIVERY_SRV/A_OutbDeliveryHeader: read {read}")
        for line in answer["named_in_task"]
    )
    assert box.call("GET", read.removeprefix("GET "))["status"] == 200


def test_codes_are_named_by_their_labels_and_by_their_values(box):
    answer = box.find_entity_sets(
        "Create a rush order for customer 0000000003 in the German sales organization, channel 10, division 00, "
        "priced in euros.",
        k=5,
    )
    (line,) = [line for line in answer["named_in_task"] if line.startswith("API_SALES_ORDER_SRV/A_SalesOrder:")]
    for named in (
        "values SoldToParty=0000000003",  # SAP's role name of a customer on the order
        "SalesOrderType RO=Rush Order",
        "SalesOrganization 1010=Sales Organization Germany",
        "DistributionChannel 10=Direct Sales",
        "OrganizationDivision 00=Cross Division",
        "TransactionCurrency EUR=Euro",
    ):
        assert named in line
    assert "1710" not in line and "read GET" not in line  # no other org unit; a customer is no sales order key
    # the task asks to create: the line ends with the body of what it named, which kg serve accepts
    path, body = line.split("; create POST ", 1)[1].split(" ", 1)
    assert json.loads(body)["SalesOrderType"] == "RO" and path.endswith("/A_SalesOrder")
    assert box.client is not None and box.client.send("POST", path, json.loads(body)).status == 201


def test_a_task_that_names_nothing_has_no_named_in_task(box):
    assert "named_in_task" not in box.find_entity_sets("which entity set holds the texts of products")


def test_a_path_copied_with_the_rest_of_its_line_is_sent_without_it(box):
    """Qwen2.5-Coder-1.5B copied a named_in_task line whole into call's url (lookup-006, 2026-12-05)."""
    path = "/sap/opu/odata/sap/API_OUTBOUND_DELIVERY_SRV/A_OutbDeliveryHeader('0000000005')"
    sent = box.call("GET", f"{path}; codes DeliveryDocumentType LF=Outbound Delivery")
    assert sent["status"] == 200 and sent["answer"]["d"]["DeliveryDocument"] == "0000000005"
    assert sent["notes"][0].startswith("the text after the path (codes DeliveryDocumentType")
    checked = box.validate_call("GET", f"{path}; codes DeliveryDocumentType LF=Outbound Delivery")
    assert checked["valid"] is True and checked["notes"][0] == sent["notes"][0]  # validate_call reads it alike
