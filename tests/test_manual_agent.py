"""benchmarks/manual_agent.py, the harness of the by-hand measurement (issue 22), run as its drivers run it:
one process per command, against a real kg serve (and a real kg mcp over streamable HTTP) of the tasks' store."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from processkg.tools.local_server import free_port

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "benchmarks" / "manual_agent.py"
TASKS = ROOT / "data" / "sap" / "tasks" / "tasks.jsonl"
ENV = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", PYTHONPATH=str(ROOT / "src"))


def harness(session: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), "--session", str(session), *args],
        input=stdin,
        capture_output=True,
        text=True,
        env=ENV,
        timeout=300,
    )


def task(task_id: str) -> dict:
    return next(t for t in map(json.loads, TASKS.read_text().splitlines()) if t["id"] == task_id)


@pytest.fixture
def select(tmp_path: Path) -> Path:
    path = tmp_path / "select.txt"
    path.write_text("# two lookups\nlookup-001\nlookup-002\n")
    return path


def started(session: Path, store: Path, select: Path, condition: str) -> Iterator[Path]:
    extra = ["--mcp-port", str(free_port()), "--no-warm-up"] if condition == "tools" else []
    done = harness(
        session,
        *["start", "--condition", condition, "--store", str(store), "--select", str(select)],
        *["--port", str(free_port()), *extra],
    )
    try:
        assert done.returncode == 0, done.stdout + done.stderr
        yield session
    finally:
        harness(session, "stop")


@pytest.fixture
def raw(tmp_path: Path, tasks_store: Path, select: Path) -> Iterator[Path]:
    yield from started(tmp_path / "raw", tasks_store, select, "raw")


@pytest.fixture
def tools(tmp_path: Path, tasks_store: Path, select: Path) -> Iterator[Path]:
    yield from started(tmp_path / "tools", tasks_store, select, "tools")


def test_the_selection_file_follows_its_rule():
    listed = [line for line in (ROOT / "benchmarks" / "manual_agent_tasks.txt").read_text().splitlines()]
    ids = [line for line in listed if line and not line.startswith("#")]
    rule = subprocess.run([sys.executable, str(SCRIPT), "select"], capture_output=True, text=True, env=ENV, check=True)
    assert ids == rule.stdout.split() and len(ids) == 24
    kinds = {t["id"]: t["kind"] for t in map(json.loads, TASKS.read_text().splitlines())}
    assert sorted(kinds[i] for i in ids) == sorted(["lookup", "process-read", "single-write", "deep-write"] * 6)
    for sheet in ("tools.md", "raw.md"):  # the drivers' sheets list the same tasks in the same order
        text = (ROOT / "benchmarks" / "manual_agent" / sheet).read_text()
        listed_ids = [line.split(". ", 1)[1] for line in text.split("## Tasks, in this order\n")[1].split("\n") if line]
        assert listed_ids == ids, sheet


def test_raw_scores_the_reference_call_completed_and_a_wrong_answer_not(raw: Path, tmp_path: Path):
    shown = harness(raw, "task", "lookup-001")
    assert shown.stdout == f"Task lookup-001: {task('lookup-001')['task']}\nThis task only reads.\n"
    refused = harness(raw, "http", "GET", "http://example.org/sap/opu/odata/sap/API_SALES_ORDER_SRV/")
    assert refused.stdout.startswith("error: give a path under the server root")
    admin = harness(raw, "http", "GET", "/$dump")
    assert admin.stdout == "error: /$dump is not part of the OData system\n"
    reference = task("lookup-001")["reference"][0]
    read = harness(raw, "http", reference["method"], reference["url"], "--pretty")
    assert read.stdout.startswith("HTTP 200 OK\ncontent-type: application/json")
    ended = harness(raw, "answer", "-", stdin=read.stdout)  # the server's whole answer holds the values
    assert ended.stdout == "lookup-001 finished.\n", "the verdict is never shown to the driver"
    harness(raw, "task", "lookup-002")
    assert harness(raw, "answer", "I could not find it").stdout == "lookup-002 finished.\n"
    assert harness(raw, "task", "lookup-001").stdout == "error: lookup-001 is already finished\n"

    assert harness(raw, "report", "--out", str(tmp_path / "report")).stderr.startswith("error: the session in")
    harness(raw, "stop")
    assert harness(raw, "report", "--out", str(tmp_path / "report")).returncode == 0
    results = json.loads((tmp_path / "report" / "results.json").read_text())
    first, second = results["sessions"][0]["tasks"]
    assert (first["status"], second["status"]) == ("completed", "not completed")
    assert first["calls"] == 1, "the refused requests were not sent, so they are no calls"
    assert first["chars"] == len(read.stdout) + len(refused.stdout) + len(admin.stdout)
    assert (first["reached"], first["rejected"], first["invalid_reached"]) == (1, 0, 0)
    assert results["sessions"][0]["totals"]["completed"] == 1


def test_tools_calls_through_the_mcp_client_and_counts_what_it_printed(tools: Path, tmp_path: Path):
    listed = harness(tools, "tools")
    assert listed.stdout.count("\n## ") == 4 and listed.stdout.startswith("## find_entity_sets\n")
    harness(tools, "task", "lookup-001")
    reference = task("lookup-001")["reference"][0]
    called = harness(tools, "tool", "call", json.dumps({"method": "GET", "url": reference["url"]}))
    answer = json.loads(called.stdout)
    assert answer["sent"] is True and answer["status"] == 200
    invalid = harness(tools, "tool", "call", json.dumps({"method": "GET", "url": reference["url"] + "x"}))
    assert json.loads(invalid.stdout)["sent"] is False
    harness(tools, "answer", called.stdout)
    harness(tools, "stop")

    assert harness(tools, "report", "--out", str(tmp_path / "report")).returncode == 0
    session = json.loads((tmp_path / "report" / "results.json").read_text())["sessions"][0]
    row = session["tasks"][0]
    assert (row["status"], row["calls"], row["by_tool"], row["refused_before_sent"]) == ("completed", 2, {"call": 2}, 1)
    assert row["chars"] == len(called.stdout) + len(invalid.stdout)
    assert row["reached"] == 1 and row["invalid_reached"] == 0, "the invalid call never reached kg serve"
    assert session["totals"]["chars_tool_list"] == len(listed.stdout)
    assert session["totals"]["chars"] == row["chars"] + len(listed.stdout)
