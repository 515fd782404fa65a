"""The agent tasks (data/sap/tasks/tasks.jsonl): every task is solvable and every goal discriminates.

Each task's reference calls run through the OData client against the real ``kg serve`` of the task
store (one server for the module, ``POST /$reset`` before each task); every call must answer 2xx and
pass ``kg validate``'s engine without a violation. The goal must not hold on the reset start state
(nor for an empty answer), and must hold after the reference calls, with an answer made of what
those calls returned.
"""

from __future__ import annotations

import json
import re
from collections import Counter

import pytest

from conftest import INVALID, ROOT
from processkg.errors import TaskFileError
from processkg.evaluate.tasks import KINDS, Task, check_answer, check_goal, load_tasks, normalised
from processkg.graph.handle import StoreHandle
from processkg.tools.local_server import LocalServer
from processkg.tools.odata_client import ODataClient
from processkg.validate.calls import Validator

TASKS = ROOT / "data" / "sap" / "tasks" / "tasks.jsonl"
ALL = load_tasks(TASKS)
BAD = INVALID / "tasks"


@pytest.fixture(scope="module")
def served(tasks_store):
    with LocalServer(StoreHandle.open(tasks_store), allow_reset=True) as server:
        client = ODataClient(server.url)
        yield server, client, Validator(StoreHandle.open(tasks_store))
        client.close()


def service(url: str) -> str:
    return re.search(r"/sap/opu/odata4?/sap/([^/]+)/", url).group(1)


def scalars(value: object) -> list[str]:
    """Every scalar value in an OData answer (records, expanded items), metadata left out."""
    if isinstance(value, dict):
        return [s for k, v in value.items() if k != "__metadata" and not k.startswith("@") for s in scalars(v)]
    if isinstance(value, list):
        return [s for v in value for s in scalars(v)]
    return [] if value is None else [str(value)]


# ---------------------------------------------------------------- the task file


def test_the_task_set_has_four_kinds_of_at_least_20_tasks_over_many_services():
    kinds = Counter(t.kind for t in ALL)
    assert len(ALL) >= 80
    assert len({t.id for t in ALL}) == len(ALL)
    assert set(kinds) == set(KINDS) and min(kinds.values()) >= 20, kinds
    services = {service(c["url"]) for t in ALL for c in t.reference}
    assert len(services) >= 15, services
    assert all(t.writes == (t.kind in ("single-write", "deep-write")) for t in ALL)
    assert all(t.reference for t in ALL)


def test_tasks_are_worded_for_a_clerk_not_with_entity_set_names():
    technical = re.compile(r"\bA_\w+|\bto_\w+|\$filter|\$expand|\b[A-Z][a-z]+[A-Z]\w*Type\b")
    assert [t.id for t in ALL if technical.search(t.task)] == []


def test_deep_writes_create_items_in_one_call_or_a_chain():
    for t in ALL:
        if t.kind == "deep-write":
            posts = [c for c in t.reference if c["method"] == "POST"]
            nested = any(isinstance(v, list) for c in posts for v in c["body"].values())
            assert nested or len(posts) > 1, t.id
            assert t.goal["state"].get("expand"), t.id


BROKEN = {
    "not-json": r"not-json.jsonl:2: not valid JSON",
    "not-object": r"not-object.jsonl:2: a task must be a JSON object",
    "missing-field": r"missing-field.jsonl:2: missing field\(s\) goal",
    "unknown-field": r"unknown-field.jsonl:2: unknown field\(s\) hint",
    "bad-id": r"bad-id.jsonl:2: id '../escape' must be",
    "duplicate-id": r"duplicate-id.jsonl:2: task id 'write-ok' repeats the one of line 1",
    "unknown-kind": r"unknown-kind.jsonl:2: task lookup-ok: kind 'chat' is not one of",
    "writes-mismatch": r"writes-mismatch.jsonl:2: task lookup-ok: 'writes' must be false for kind lookup",
    "read-with-state": r"read-with-state.jsonl:2: .*a lookup task reads only",
    "write-without-state": r"write-without-state.jsonl:2: .*a single-write task needs a 'state' goal",
    "empty-answer": r"empty-answer.jsonl:2: .*goal.answer.all must be a non-empty list",
    "any-not-lists": r"any-not-lists.jsonl:2: .*goal.answer.any must be a non-empty list of non-empty lists",
    "state-url-query": r"state-url-query.jsonl:2: .*without a query \(use 'where'\)",
    "where-object": r"where-object.jsonl:2: .*goal.state.where must map property names to strings",
    "count-negative": r"count-negative.jsonl:2: .*goal.state.count: 'min' and 'max' must be whole numbers",
    "expand-no-bounds": r"expand-no-bounds.jsonl:2: .*goal.state.expand.to_Item must be an object with 'min'",
    "reference-method": r"reference-method.jsonl:2: .*reference\[0\].method must be one of",
    "empty": r"empty.jsonl: no tasks in the file",
}


@pytest.mark.parametrize("name", sorted(BROKEN))
def test_a_broken_task_file_fails_with_file_line_and_reason(name):
    with pytest.raises(TaskFileError, match=BROKEN[name]):
        load_tasks(BAD / f"{name}.jsonl")


def test_every_invalid_task_file_is_tested():
    assert sorted(p.stem for p in BAD.glob("*.jsonl")) == sorted(BROKEN)


def test_a_missing_task_file_is_a_task_file_error(tmp_path):
    with pytest.raises(TaskFileError, match=r"missing.jsonl: cannot read tasks"):
        load_tasks(tmp_path / "missing.jsonl")


# ---------------------------------------------------------------- answer matching


@pytest.mark.parametrize(
    ("value", "answer", "met"),
    [
        ("0000000003", "It is delivery 3.", True),
        ("3", "Delivery 0000000003", True),
        ("3", "Delivery 13", False),
        ("30.00", "The net amount is 30 EUR", True),
        ("OR", "a standard order (or)", True),
        ("OR", "the order", False),
        ("Material 3", "the material  3 is ordered", True),
        ("Material 3", "Material 31", False),
        ("AT", "austria, at", True),
    ],
)
def test_answer_values_match_by_token_case_and_number(value, answer, met):
    assert check_answer({"all": [value]}, answer).met is met


def test_any_needs_one_of_each_list():
    goal = {"all": ["OR"], "any": [["USD", "dollar"], ["1710"]]}
    assert check_answer(goal, "OR in dollar, sales org 1710").met
    result = check_answer(goal, "OR in euro, sales org 1710")
    assert not result.met and result.reason == "the answer lacks 'USD or dollar'"


# ---------------------------------------------------------------- every task, against kg serve


@pytest.mark.parametrize("task", ALL, ids=[t.id for t in ALL])
def test_the_reference_meets_the_goal_and_the_start_state_does_not(served, task: Task):
    server, client, validator = served
    assert (
        client.http.post(server.url + "$reset", headers={"x-csrf-token": server.server.csrf_token}).status_code == 204
    )
    assert not check_goal(task, client, "").met
    assert not check_goal(task, client, task.task).met  # repeating the question is not an answer
    returned: list[str] = []
    for call in task.reference:
        exchange = client.send(call["method"], call["url"], call.get("body"))
        assert 200 <= exchange.status < 300, (call["url"], exchange.answer)
        recorded = {"id": task.id, "method": call["method"], "url": call["url"]}
        if "body" in call:
            recorded["payload"] = call["body"]
        result = validator.validate_call(recorded)
        assert result.valid, [v.as_dict() for v in result.violations]
        returned += scalars(exchange.answer)
    answer = " | ".join(returned)
    verdict = check_goal(task, client, answer)
    assert verdict.met, verdict.reason
    if "answer" in task.goal:
        expected = task.goal["answer"]["all"]
        said = {normalised(v) for v in returned}
        assert all(normalised(v) in said for v in expected), (expected, answer[:300])
        partial = " | ".join(expected[:-1])
        assert not check_goal(task, client, partial).met
    else:
        assert (
            client.http.post(server.url + "$reset", headers={"x-csrf-token": server.server.csrf_token}).status_code
            == 204
        )
        assert not check_goal(task, client, answer).met


def test_a_state_goal_reads_through_filter_and_expand(served):
    server, client, _ = served
    task = next(t for t in ALL if t.id == "deep-write-001")
    client.http.post(server.url + "$reset", headers={"x-csrf-token": server.server.csrf_token})
    for call in task.reference:
        client.send(call["method"], call["url"], call.get("body"))
    verdict = check_goal(task, client, "")
    assert verdict.met and "1 record(s) of 1 matching" in verdict.reason
    wrong = Task(task.id, task.kind, task.task, json.loads(json.dumps(task.goal)), task.reference, True)
    wrong.goal["state"]["expand"]["to_Item"][0]["min"] = 3
    assert check_goal(wrong, client, "").reason.startswith("0 record(s) of 1 matching")
