"""Goal-phrased requests (issues 22 and 23 §4): the object of the goal ranks first.

The ranked cases are train goals (data/sap/goals-train), where the routed hybrid alone had the
object 2nd to 6th or not in its top 10; the test goals (data/sap/goals) are only evaluated, in
docs/results/goals."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from processkg.graph.handle import StoreHandle
from processkg.retrieve.goals import goal_order, name_words, object_phrases
from processkg.retrieve.retriever import Retriever
from processkg.tools.toolbox import Toolbox

ROOT = Path(__file__).resolve().parents[1]
TRAIN = ROOT / "data" / "sap" / "goals-train" / "queries.jsonl"


def test_the_object_phrase_follows_the_verb():
    assert object_phrases("Give the business partner a bank account.") == [["business", "partner", "bank", "account"]]
    assert object_phrases("Please create a sales order for customer 17100001") == [["sale", "order"]]
    # a changed field: the owner after "of" is tried next
    assert object_phrases("Change the requested delivery date of a sales order") == [
        ["requested", "delivery", "date"],
        ["sale", "order"],
    ]
    # a goal after a situation, in its own clause
    assert object_phrases("The truck is late: update the inbound delivery 18") == [["inbound", "delivery"]]


def test_a_request_that_is_no_goal_has_no_object():
    assert object_phrases("the goods left the warehouse, now charge the customer") == []
    assert object_phrases("Which customer groups are there?") == []


def test_the_most_specific_name_in_the_phrase_comes_first():
    summaries = [
        "bank (Bank). Bank.",
        "business partner (A_BusinessPartner). Business Partner.",
        "business partner bank (A_BusinessPartnerBank). Bank.",
        "sales order (A_SalesOrder). Sales Order Header.",
    ]
    assert name_words(summaries[3]) == frozenset({"sale", "order"})
    assert goal_order("Give the business partner a bank account", summaries, [0, 3, 1, 2]) == [2, 1, 0, 3]
    # no goal: the order is kept
    assert goal_order("bank of a business partner", summaries, [0, 3, 1, 2]) == [0, 3, 1, 2]


def _train(ids: set[str]) -> list[dict]:
    rows = [json.loads(line) for line in TRAIN.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [row for row in rows if row["id"] in ids]


#: Train goals whose object the routed ranking alone did not put first (rank before: 2 to 6, or none).
RAISED = {
    "goaltrain-005",  # purchase requisition: not in the top 10 before
    "goaltrain-008",  # credit memo request, after a situation clause
    "goaltrain-009",  # business partner: 3rd
    "goaltrain-019",  # purchasing info record: 3rd
    "goaltrain-044",  # payment terms of a purchase order: the owner after "of", 3rd
    "goaltrain-088",  # reverse a material document: 6th
    "goaltrain-097",  # approve a sales order: 4th
}


@pytest.fixture(scope="module")
def sap(sap_store) -> Retriever:
    return Retriever(StoreHandle.open(sap_store))


def test_the_goals_object_ranks_first(sap):
    goals = _train(RAISED)
    assert len(goals) == len(RAISED)
    results = sap.retrieve_many([g["query"] for g in goals], 5)
    for goal, ranked in zip(goals, results):
        gold = goal["gold"][0]
        names = {gold["entity_set"]} | {a["entity_set"] for a in gold.get("alternatives", [])}
        assert ranked[0].entity_set in names, (goal["id"], [r.entity_set for r in ranked])


def test_find_entity_sets_puts_the_goals_object_first(sap_store):
    box = Toolbox(StoreHandle.open(sap_store))
    try:
        top = box.find_entity_sets("Approve sales order 5000400, which is waiting for release because of its discount.")
    finally:
        box.close()
    assert top["results"][0].startswith("API_SALES_ORDER_SRV/A_SalesOrder [")
