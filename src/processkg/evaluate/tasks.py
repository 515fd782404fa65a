"""The agent tasks (``data/sap/tasks/tasks.jsonl``) and their machine-checkable goals.

A task is one JSON object per line: ``id``, ``kind`` (one of :data:`KINDS`), ``task`` (the
instruction in business language), ``goal``, ``reference`` (calls that achieve the goal) and
``writes``. :func:`load_tasks` checks every record and stops at the first bad one with
``file:line: what is wrong`` (:class:`processkg.errors.TaskFileError`).

A goal has an ``answer`` part, a ``state`` part or both (``data/sap/tasks/README.md``):

* ``{"answer": {"all": [V, ...], "any": [[V, ...], ...]}}``: every value of ``all``, and one
  value of each ``any`` list, occurs in the agent's final answer. Matching ignores case and runs of
  white space; a value is found only as a whole token (``OR`` is not found in ``order``); a
  number is compared by its value with every number of the answer (``0000000003`` = ``3``,
  ``30.00`` = ``30``).
* ``{"state": {"url": PATH, "where": {P: V}, "count": {"min": N, "max": M},
  "expand": {NAV: {"min": N, "max": M, "where": {P: V}}}}}``: after the run, ``GET PATH`` with a
  ``$filter`` of ``where`` (``eq``, joined by ``and``) and ``$expand`` of the navigations,
  through :class:`processkg.tools.odata_client.ODataClient`, so any OData server can be checked.
  The records are filtered again on the client (a server that ignores ``$filter`` is not
  trusted); a record counts when each expanded navigation has between ``min`` and ``max`` items
  matching its ``where`` (a list of such rules: each must hold, e.g. at least 2 items, and at
  least 1 of them for material Y); the number of such records must lie in ``count`` (default
  ``{"min": 1}``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import cast
from urllib.parse import quote

from processkg.aliases import JSONObject, JSONValue
from processkg.errors import JsonLinesError, TaskFileError
from processkg.jsonl import read_strict
from processkg.tools.odata_client import ODataClient

KINDS = ("lookup", "process-read", "single-write", "deep-write")
WRITE_KINDS = ("single-write", "deep-write")
METHODS = ("GET", "POST", "PATCH", "PUT", "MERGE", "DELETE")
FIELDS = {"id", "kind", "task", "goal", "reference", "writes"}
TASK_ID = re.compile(r"[A-Za-z0-9._-]{1,100}")
NUMBER = re.compile(r"\d+(?:\.\d+)?")
WHERE_VALUE = (str, int, float, bool)


@dataclass(frozen=True)
class Task:
    id: str
    kind: str
    task: str
    goal: JSONObject
    reference: list[JSONObject]
    writes: bool


@dataclass(frozen=True)
class GoalResult:
    met: bool
    reason: str


# ---------------------------------------------------------------- reading


def load_tasks(path: Path) -> list[Task]:
    """The tasks of a JSON Lines file; the first bad record raises :class:`TaskFileError` (file:line)."""
    tasks: list[Task] = []
    seen: dict[str, int] = {}
    try:
        for line, value in read_strict(path, what="tasks"):
            task = _task(cast(JSONValue, value), str(path), line)
            if task.id in seen:
                raise TaskFileError(f"task id {task.id!r} repeats the one of line {seen[task.id]}", str(path), line)
            seen[task.id] = line
            tasks.append(task)
    except JsonLinesError as exc:
        raise TaskFileError(exc.message, exc.file, exc.line) from None
    if not tasks:
        raise TaskFileError("no tasks in the file", str(path))
    return tasks


def _task(value: JSONValue, file: str, line: int) -> Task:
    def fail(message: str) -> TaskFileError:
        return TaskFileError(message, file, line)

    if not isinstance(value, dict):
        raise fail("a task must be a JSON object")
    unknown = sorted(set(value) - FIELDS)
    missing = sorted(FIELDS - set(value) - {"reference"})
    if unknown or missing:
        raise fail(f"unknown field(s) {', '.join(unknown)}" if unknown else f"missing field(s) {', '.join(missing)}")
    tid, kind, text, writes = value["id"], value["kind"], value["task"], value["writes"]
    if not isinstance(tid, str) or not TASK_ID.fullmatch(tid):
        raise fail(f"id {tid!r} must be 1-100 letters, digits, '.', '_' or '-'")
    if kind not in KINDS:
        raise fail(f"task {tid}: kind {kind!r} is not one of {', '.join(KINDS)}")
    if not isinstance(text, str) or not text.strip():
        raise fail(f"task {tid}: 'task' must be a non-empty string")
    if writes is not (kind in WRITE_KINDS):
        raise fail(f"task {tid}: 'writes' must be {str(kind in WRITE_KINDS).lower()} for kind {kind}")
    problem = _goal_problem(value["goal"], kind) or _reference_problem(value.get("reference", []))
    if problem:
        raise fail(f"task {tid}: {problem}")
    return Task(tid, kind, text, value["goal"], list(value.get("reference", [])), writes)


def _goal_problem(goal: JSONValue, kind: str) -> str:
    if not isinstance(goal, dict) or not goal or set(goal) - {"answer", "state"}:
        return "goal must be an object with 'answer' and/or 'state'"
    if kind in WRITE_KINDS and "state" not in goal:
        return f"goal: a {kind} task needs a 'state' goal"
    if kind not in WRITE_KINDS and "state" in goal:
        return f"goal: a {kind} task reads only; give an 'answer' goal, not 'state'"
    answer = _answer_problem(goal["answer"]) if "answer" in goal else ""
    return answer or (_state_problem(goal["state"]) if "state" in goal else "")


def _strings(value: JSONValue) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(v, str) and v.strip() for v in value)


def _answer_problem(answer: JSONValue) -> str:
    if not isinstance(answer, dict) or not answer or set(answer) - {"all", "any"}:
        return "goal.answer must be an object with 'all' and/or 'any'"
    if "all" in answer and not _strings(answer["all"]):
        return "goal.answer.all must be a non-empty list of non-empty strings"
    alternatives = answer.get("any", [[""]])
    if "any" in answer and not (isinstance(alternatives, list) and alternatives and all(map(_strings, alternatives))):
        return "goal.answer.any must be a non-empty list of non-empty lists of non-empty strings"
    return ""


def _state_problem(state: JSONValue) -> str:
    if not isinstance(state, dict) or set(state) - {"url", "where", "count", "expand"}:
        return "goal.state must be an object with 'url' and optional 'where', 'count', 'expand'"
    url = state.get("url")
    if not isinstance(url, str) or not url.startswith("/") or "?" in url:
        return "goal.state.url must be a path starting with '/' and without a query (use 'where')"
    problem = _where_problem(state.get("where", {}), "goal.state.where")
    problem = problem or _range_problem(state.get("count", {"min": 1}), "goal.state.count")
    expand = state.get("expand", {})
    if not problem and not isinstance(expand, dict):
        return "goal.state.expand must map navigation names to {min, max, where}"
    for nav, rules in expand.items() if not problem else ():
        for rule in rules if isinstance(rules, list) and rules else [rules]:
            problem = _item_rule_problem(rule, f"goal.state.expand.{nav}")
            if problem:
                return problem
    return problem


def _item_rule_problem(rule: JSONValue, name: str) -> str:
    if not isinstance(rule, dict) or set(rule) - {"min", "max", "where"}:
        return f"{name} must be an object (or a list of objects) with 'min', 'max', 'where'"
    return _range_problem(rule, name) or _where_problem(rule.get("where", {}), f"{name}.where")


def _where_problem(where: JSONValue, name: str) -> str:
    if not isinstance(where, dict) or not all(isinstance(v, WHERE_VALUE) for v in where.values()):
        return f"{name} must map property names to strings, numbers or booleans"
    return ""


def _range_problem(rule: JSONValue, name: str) -> str:
    if not isinstance(rule, dict):
        return f"{name} must be an object with 'min' and/or 'max'"
    bounds = {k: rule[k] for k in ("min", "max") if k in rule}
    if not bounds or set(rule) - {"min", "max", "where"}:
        return f"{name} must be an object with 'min' and/or 'max'"
    if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in bounds.values()):
        return f"{name}: 'min' and 'max' must be whole numbers >= 0"
    return ""


def _reference_problem(reference: JSONValue) -> str:
    if not isinstance(reference, list):
        return "reference must be a list of calls"
    for i, call in enumerate(reference):
        if not isinstance(call, dict) or set(call) - {"method", "url", "body"}:
            return f"reference[{i}] must be an object with 'method', 'url' and optional 'body'"
        if call.get("method") not in METHODS:
            return f"reference[{i}].method must be one of {', '.join(METHODS)}"
        if not isinstance(call.get("url"), str) or not str(call["url"]).startswith("/"):
            return f"reference[{i}].url must be a path starting with '/'"
    return ""


# ---------------------------------------------------------------- checking


def check_goal(task: Task, client: ODataClient, answer: str) -> GoalResult:
    """Whether the run met the task's goal: the server's state (read through ``client``), then the answer."""
    reasons = []
    if "state" in task.goal:
        state = check_state(_object(task.goal["state"]), client)
        if not state.met:
            return state
        reasons.append(state.reason)
    if "answer" in task.goal:
        said = check_answer(_object(task.goal["answer"]), answer)
        if not said.met:
            return said
        reasons.append(said.reason)
    return GoalResult(True, "; ".join(reasons))


def check_answer(goal: JSONObject, answer: str) -> GoalResult:
    text = normalised(answer)
    numbers = {_number(n) for n in NUMBER.findall(text)}
    missing = [v for v in _list(goal.get("all")) if not _found(v, text, numbers)]
    for alternatives in _list(goal.get("any")):
        if not any(_found(v, text, numbers) for v in _list(alternatives)):
            missing.append(" or ".join(str(v) for v in _list(alternatives)))
    if missing:
        return GoalResult(False, f"the answer lacks {', '.join(repr(m) for m in missing)}")
    return GoalResult(True, "the answer names every expected value")


def normalised(text: str) -> str:
    """Case folded, runs of white space as one space."""
    return " ".join(text.casefold().split())


def _found(value: JSONValue, text: str, numbers: set[Decimal | None]) -> bool:
    wanted = normalised(str(value))
    if NUMBER.fullmatch(wanted):
        return _number(wanted) in numbers
    return re.search(rf"(?<![\w]){re.escape(wanted)}(?![\w])", text) is not None


def _number(text: str) -> Decimal | None:
    try:
        return Decimal(text).normalize()
    except InvalidOperation:
        return None


def check_state(state: JSONObject, client: ODataClient) -> GoalResult:
    where, expand = _object(state.get("where", {})), _object(state.get("expand", {}))
    url = state_url(state)
    exchange = client.send("GET", url)
    if not 200 <= exchange.status < 300:
        return GoalResult(False, f"GET {url} answered {exchange.status}")
    records = [r for r in _records(exchange.answer) if _matches(r, where)]
    fitting = [
        r for r in records if all(_items_fit(r, nav, rule) for nav, rules in expand.items() for rule in _rules(rules))
    ]
    count = _object(state.get("count", {"min": 1}))
    low, high = _bounds(count)
    what = f"{len(fitting)} record(s) of {len(records)} matching {_shown(where)}"
    if expand:
        what += f" with {', '.join(expand)} as required"
    if not low <= len(fitting) <= high:
        return GoalResult(False, f"{what}; expected {_range(low, high)}")
    return GoalResult(True, what)


def state_url(state: JSONObject) -> str:
    """The GET that reads what a state goal is about: ``$filter`` from ``where``, ``$expand`` of its navigations."""
    where, expand = _object(state.get("where", {})), _object(state.get("expand", {}))
    options = []
    if where:
        options.append("$filter=" + quote(" and ".join(f"{k} eq {_literal(v)}" for k, v in where.items()), safe="'"))
    if expand:
        options.append("$expand=" + ",".join(expand))
    return str(state["url"]) + ("?" + "&".join(options) if options else "")


def _literal(value: JSONValue) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (int, float)):
        return str(value)
    return "'" + str(value).replace("'", "''") + "'"


def _records(answer: JSONValue) -> list[JSONObject]:
    """The records of a V2 (``d.results`` or ``d``) or V4 (``value``) collection answer."""
    if isinstance(answer, dict):
        inner = answer.get("d", answer)
        if isinstance(inner, dict):
            inner = inner.get("results", inner.get("value", [inner] if "__metadata" in inner else []))
        return [r for r in inner if isinstance(r, dict)] if isinstance(inner, list) else []
    return [r for r in answer if isinstance(r, dict)] if isinstance(answer, list) else []


def _matches(record: JSONObject, where: JSONObject) -> bool:
    return all(_same(record.get(k), v) for k, v in where.items())


def _same(got: JSONValue, wanted: JSONValue) -> bool:
    if isinstance(wanted, bool):
        return got is wanted or str(got).lower() == str(wanted).lower()
    if isinstance(wanted, (int, float)):
        return got is not None and _number(str(got)) == _number(str(wanted))
    return got == wanted


def _items_fit(record: JSONObject, nav: str, rule: JSONObject) -> bool:
    items = [r for r in _records(record.get(nav)) if _matches(r, _object(rule.get("where", {})))]
    low, high = _bounds(rule)
    return low <= len(items) <= high


def _rules(rules: JSONValue) -> list[JSONObject]:
    """The item rules of one navigation: an object, or a list of objects that must all hold."""
    return [_object(r) for r in rules] if isinstance(rules, list) else [_object(rules)]


def _bounds(rule: JSONObject) -> tuple[int, int]:
    low, high = rule.get("min", 0), rule.get("max")
    return int(str(low)), (int(str(high)) if high is not None else 1 << 62)


def _range(low: int, high: int) -> str:
    return f"at least {low}" if high >= 1 << 62 else f"{low} to {high}"


def _shown(where: JSONObject) -> str:
    return ", ".join(f"{k}={v}" for k, v in where.items()) or "the set"


def _object(value: JSONValue) -> JSONObject:
    return value if isinstance(value, dict) else {}


def _list(value: JSONValue) -> list[JSONValue]:
    return value if isinstance(value, list) else []


__all__ = ["KINDS", "GoalResult", "Task", "check_goal", "load_tasks"]
