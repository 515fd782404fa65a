"""kg eval agent end to end: the scripted chat server (tests/scripted_llm.py: real HTTP on loopback,
real tool-call JSON) and the in-process kg serve of the indexed demo store, through CliRunner.

Four tasks (tests/data/tasks/eval-demo.jsonl), each with a script that behaves per condition:
a lookup every condition completes; a write whose order type is invented (typed: refused, then
repaired from the value help; chunkrag: the server's 400, then repaired from its code list;
chunkrag-vh: the code list given with the search, nothing invented); a task the agent never ends
(step limit); a lookup answered right with the typed tools and wrongly without them (an order
that does not exist, 404; an invented property, 400). The numbers below follow from those plans.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from conftest import DATA, DEMO
from processkg.cli import main
from processkg.graph.handle import StoreHandle
from processkg.tools.local_server import LocalServer

TASKS = DATA / "tasks" / "eval-demo.jsonl"
CONDITIONS = "typed,chunkrag,chunkrag-vh"


def evaluate(store: Path, llm, out: Path, *extra: str):
    args = ["eval", "agent", "--tasks", str(TASKS), "--store", str(store), "--llm-url", llm.url]
    args += ["--model", "scripted", "--odata", str(DEMO / "odata"), "--max-steps", "5", "--out", str(out)]
    return CliRunner().invoke(main, [*args, "--conditions", CONDITIONS, *extra])


@pytest.fixture(scope="module")
def evaluated(demo_indexed_store, llm, tmp_path_factory):
    out = tmp_path_factory.mktemp("eval-agent") / "out"
    before = len(llm.requests)
    result = evaluate(demo_indexed_store, llm, out)
    assert result.exit_code == 0, result.output
    return out, result, len(llm.requests) - before


def results(out: Path) -> dict:
    return json.loads((out / "results.json").read_text())


def test_completion_per_condition(evaluated):
    out, result, requests = evaluated
    conditions = results(out)["conditions"]
    assert {c: (s["runs"], s["completed"], s["completion_rate"]) for c, s in conditions.items()} == {
        "typed": (4, 3, 0.75),
        "chunkrag": (4, 2, 0.5),
        "chunkrag-vh": (4, 2, 0.5),
    }
    assert conditions["typed"]["statuses"] == {"answered": 3, "max-steps": 1}
    # one chat completion per step: typed 2 + 5 + 5 + 2, chunkrag 2 + 4 + 5 + 3, chunkrag-vh 2 + 3 + 5 + 3
    assert requests == 14 + 14 + 13
    assert [c["per_task"]["steps"] for c in conditions.values()] == [3.5, 3.5, 3.25]
    assert re.search(r"^typed +4 +0\.750 +0\.250 +3\.50$", result.stdout, re.MULTILINE), result.stdout


def test_invalid_and_invented_calls_are_counted_alike_under_every_condition(evaluated):
    out, _result, _requests = evaluated
    conditions = results(out)["conditions"]
    counts = {c: (s["calls"], s["invalid_calls"], s["runs_with_invalid"]) for c, s in conditions.items()}
    assert counts == {"typed": (4, 1, 1), "chunkrag": (5, 2, 2), "chunkrag-vh": (4, 1, 1)}
    assert conditions["typed"]["invalid_call_rate"] == 0.25 and conditions["chunkrag"]["invalid_call_rate"] == 0.4
    assert {c: s["invented"] for c, s in conditions.items()} == {
        "typed": {"entity_sets": 0, "properties": 0, "keys": 0, "codes": 1},
        "chunkrag": {"entity_sets": 0, "properties": 1, "keys": 1, "codes": 1},
        "chunkrag-vh": {"entity_sets": 0, "properties": 1, "keys": 1, "codes": 0},
    }
    # the typed refusal never reached the server; the chunk conditions' invalid calls did
    recorded = {c: (s["recorded_calls"], s["recorded_invalid"]) for c, s in conditions.items()}
    assert recorded == {"typed": (3, 0), "chunkrag": (5, 2), "chunkrag-vh": (4, 1)}


def test_mcnemar_pairs_runs_by_task(evaluated):
    out, _result, _requests = evaluated
    tests = {(t["a"], t["b"]): t for t in results(out)["mcnemar"]}
    assert list(tests) == [("typed", "chunkrag"), ("typed", "chunkrag-vh"), ("chunkrag", "chunkrag-vh")]
    first = tests[("typed", "chunkrag")]
    assert (first["pairs"], first["both"], first["a_only"], first["b_only"], first["neither"]) == (4, 2, 1, 0, 1)
    assert first["p"] == 1.0  # one discordant pair: exact two-sided binomial p = 1
    last = tests[("chunkrag", "chunkrag-vh")]
    assert (last["a_only"], last["b_only"], last["p"]) == (0, 0, 1.0)


def test_each_run_leaves_its_trace_recording_and_result(evaluated):
    out, _result, _requests = evaluated
    runs = results(out)["runs"]
    assert len(runs) == 12
    refused = out / "runs" / "typed" / "write-order" / "run-1"
    result = json.loads((refused / "result.json").read_text())
    assert (result["met"], result["status"], result["violations"]) == (True, "answered", {"invalid-code": 1})
    sent = [json.loads(line) for line in (refused / "calls.jsonl").read_text().splitlines()]
    assert [(c["method"], c["status"]) for c in sent] == [("POST", 201)]
    ends = [json.loads(line) for line in (refused / "trace.jsonl").read_text().splitlines()]
    assert ends[-1]["event"] == "end" and ends[-1]["rejected"] == 1
    wrong = json.loads((out / "runs" / "chunkrag" / "wrong-party" / "run-1" / "result.json").read_text())
    assert wrong["met"] is False and wrong["answer"] == "Sold-to party: 0000000009"


def test_report_has_the_tables(evaluated):
    out, _result, _requests = evaluated
    report = (out / "report.md").read_text()
    for heading in ("## Per condition", "## Invented", "## Per task (means)", "## Per task kind", "## Paired McNemar"):
        assert heading in report
    assert "| typed | 4 | 3 | 0.750 | 1 of 4 | 0.250 | 1 | 0 of 3 | 0 |" in report
    assert "| chunkrag-vh | 0 (0 runs) | 1 (1 runs) | 1 (1 runs) | 0 (0 runs) |" in report
    assert "| typed | chunkrag | 4 | 2 | 1 | 0 | 1 | 1 |" in report
    assert "0.387" in report and "0.103" in report
    assert (out / "plot.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_rerun_resumes_without_asking_the_model_again(evaluated, demo_indexed_store, llm):
    out, _result, _requests = evaluated
    first = results(out)
    before = len(llm.requests)
    again = evaluate(demo_indexed_store, llm, out)
    assert again.exit_code == 0, again.output
    assert len(llm.requests) == before
    assert results(out)["conditions"] == first["conditions"]


def test_an_unfinished_run_is_run_again(demo_indexed_store, llm, tmp_path):
    out = tmp_path / "out"
    assert evaluate(demo_indexed_store, llm, out, "--conditions", "typed", "--limit", "1").exit_code == 0
    (out / "runs" / "typed" / "lookup-type" / "run-1" / "result.json").unlink()
    before = len(llm.requests)
    assert evaluate(demo_indexed_store, llm, out, "--conditions", "typed", "--limit", "1").exit_code == 0
    assert len(llm.requests) - before == 2
    assert results(out)["conditions"]["typed"]["completed"] == 1


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--conditions", "typed,oracle"], "error: --conditions: oracle; choose from typed, chunkrag, chunkrag-vh"),
        (["--kinds", "lookups"], "error: --kinds: lookups; choose from lookup, process-read, single-write, deep-write"),
    ],
)
def test_bad_choices_are_one_line(demo_indexed_store, llm, tmp_path, extra, message):
    result = evaluate(demo_indexed_store, llm, tmp_path / "out", *extra)
    assert result.exit_code == 2
    assert result.stderr.strip() == message


def test_a_bad_tasks_file_is_one_line(demo_indexed_store, llm, tmp_path):
    bad = tmp_path / "tasks.jsonl"
    bad.write_text('{"id": "t1", "task": "no kind"}\n')
    args = ["eval", "agent", "--tasks", str(bad), "--store", str(demo_indexed_store), "--llm-url", llm.url]
    before = len(llm.requests)
    result = CliRunner().invoke(main, [*args, "--model", "scripted", "--out", str(tmp_path / "out")])
    assert result.exit_code == 2
    assert result.stderr.startswith(f"error: {bad}:1") and result.stderr.count("\n") == 1
    assert len(llm.requests) == before and not (tmp_path / "out").exists()


def test_an_out_folder_of_another_model_is_refused(evaluated, demo_indexed_store, llm):
    out, _result, _requests = evaluated
    result = evaluate(demo_indexed_store, llm, out, "--model", "another")
    assert result.exit_code == 2
    assert "holds runs with another model (scripted); give another --out" in result.stderr


def test_an_endpoint_that_fails_at_once_stops_the_evaluation(demo_indexed_store, recording_server, tmp_path):
    url = f"http://127.0.0.1:{recording_server.server_address[1]}/v1"
    args = ["eval", "agent", "--tasks", str(TASKS), "--store", str(demo_indexed_store), "--llm-url", url]
    result = CliRunner().invoke(main, [*args, "--model", "m", "--conditions", "typed", "--out", str(tmp_path / "o")])
    assert result.exit_code == 2
    assert "error: the chat endpoint" in result.stderr and "the same command resumes" in result.stderr
    first = json.loads((tmp_path / "o" / "runs" / "typed" / "lookup-type" / "run-1" / "result.json").read_text())
    assert first["status"] == "llm-error"


def test_another_kg_serve_by_url_is_reset_before_each_run(demo_indexed_store, llm, tmp_path):
    with LocalServer(
        StoreHandle.open(demo_indexed_store), allow_reset=True
    ) as served:  # CSRF on: the reset sends the token
        before = served.server.data.dump()
        result = evaluate(demo_indexed_store, llm, tmp_path / "out", "--conditions", "typed", "--odata-url", served.url)
        assert result.exit_code == 0, result.output
        assert "warning" not in result.stderr
        typed = results(tmp_path / "out")["conditions"]["typed"]
        assert (typed["completed"], typed["invented"]["codes"]) == (3, 1)
        # the write task created an order, and the next run's reset took it away again
        assert served.server.data.dump() == before


def test_a_server_without_reset_is_warned_about(demo_indexed_store, llm, recording_server, tmp_path):
    url = f"http://127.0.0.1:{recording_server.server_address[1]}/"
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(next(line for line in TASKS.read_text().splitlines() if '"forever"' in line) + "\n")
    args = ["eval", "agent", "--tasks", str(tasks), "--store", str(demo_indexed_store), "--llm-url", llm.url]
    args += ["--model", "scripted", "--conditions", "typed", "--max-steps", "2", "--odata-url", url]
    result = CliRunner().invoke(main, [*args, "--out", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    assert f"warning: {url} does not answer POST /$reset" in result.stderr
    assert results(tmp_path / "out")["conditions"]["typed"]["statuses"] == {"max-steps": 1}
