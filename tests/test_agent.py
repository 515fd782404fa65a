"""kg agent run against a scripted OpenAI-compatible server (tests/scripted_llm.py: real HTTP on
loopback, real tool-call JSON) and the in-process kg serve of the indexed demo store.

Each script replays a fixed plan, but reads what it needs from the tools' real answers (the code
a value help labels "Standard Order", the codes a 400's repair hint lists), so the runs exercise
the tools, the server and the loop end to end without a model.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

import scripted_llm
from conftest import DATA, DEMO
from processkg.agent.loop import implied_call, parse_arguments
from processkg.cli import main
from processkg.errors import LLMError
from processkg.graph.handle import StoreHandle
from processkg.openai_chat import ToolCall, parse_reply, written
from processkg.tools.specs import tool_list
from processkg.tools.toolbox import Toolbox


def run(store: Path, llm, out: Path, task: str, *extra: str):
    args = ["agent", "run", task, "--store", str(store), "--llm-url", llm.url, "--model", "scripted"]
    return CliRunner().invoke(main, [*args, "--out", str(out), *extra])


def events(out: Path, kind: str) -> list[dict]:
    lines = [json.loads(line) for line in (out / "trace.jsonl").read_text().splitlines()]
    return [e for e in lines if e["event"] == kind]


def recording(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "calls.jsonl").read_text().splitlines()]


def test_typed_agent_invents_a_code_is_refused_and_repairs_it(demo_indexed_store, llm, tmp_path):
    out = tmp_path / "run"
    before = len(llm.requests)
    result = run(
        demo_indexed_store, llm, out, "Create a standard sales order for customer 0000000001.", "--allow-writes"
    )
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("Created standard sales order 00000000")
    tools = events(out, "tool")
    assert [t["name"] for t in tools] == ["find_entity_sets", "describe", "call", "call"]
    refused, created = tools[2]["answer"], tools[3]["answer"]
    assert refused["sent"] is False and refused["status"] == 400
    assert [(v["kind"], v["path"]) for v in refused["violations"]] == [("invalid-code", "/SalesOrderType")]
    assert "CR, DR, OR, RE, SO" in refused["violations"][0]["message"]
    assert created["sent"] is True and created["status"] == 201 and "SalesOrderType" not in created["answer"]["d"]
    assert created["notes"][0].startswith("5 fields as sent, not repeated")  # SalesOrderType "OR" among them
    end = events(out, "end")[0]
    assert (end["status"], end["steps"], end["tool_calls"], end["http_calls"], end["rejected"]) == (
        "answered",
        5,
        4,
        1,
        1,
    )
    assert end["prompt_tokens"] > 0 and end["completion_tokens"] > 0
    http = events(out, "http")
    assert [(h["method"], h["status"]) for h in http] == [("POST", 201)]
    assert all("authorization" not in {k.lower() for k in h["headers"]} for h in http)
    # the server's recording: the CSRF token fetch and the one POST that was sent (the invalid one never left)
    assert [(c["method"], c["status"]) for c in recording(out)] == [("GET", 200), ("POST", 201)]
    checked = CliRunner().invoke(main, ["validate", str(out / "calls.jsonl"), "--store", str(demo_indexed_store)])
    assert checked.exit_code == 0, checked.output
    sent = llm.requests[before:]
    assert len(sent) == 5 and all(r["temperature"] == 0.0 and r["tool_choice"] == "auto" for r in sent)
    offered = {t["function"]["name"]: t["function"]["parameters"] for t in sent[0]["tools"]}
    assert list(offered) == ["find_entity_sets", "describe", "next_steps", "validate_call", "call"]
    assert offered["call"]["properties"]["method"]["enum"] == ["GET", "POST", "PATCH", "MERGE", "PUT", "DELETE"]
    assert sent[-1]["messages"][-1]["role"] == "tool" and '"status":201' in sent[-1]["messages"][-1]["content"]


def test_an_agent_that_never_answers_stops_at_the_step_limit(demo_indexed_store, llm, tmp_path):
    out = tmp_path / "run"
    result = run(demo_indexed_store, llm, out, "Find the sales order, forever.", "--max-steps", "3")
    assert result.exit_code == 1
    assert result.stdout == ""
    assert "max-steps: 3 steps, 3 tool calls" in result.stderr
    end = events(out, "end")[0]
    assert (end["status"], end["steps"], end["answer"]) == ("max-steps", 3, "")
    assert len(events(out, "llm")) == 3


def test_chunkrag_agent_gets_the_servers_400_and_repairs_from_its_hint(demo_indexed_store, llm, tmp_path):
    out = tmp_path / "run"
    task = "Create a sales order for customer 0000000001 (chunks)."
    extra = ["--condition", "chunkrag", "--odata", str(DEMO / "odata"), "--allow-writes"]
    result = run(demo_indexed_store, llm, out, task, *extra)
    assert result.exit_code == 0, result.output
    start = events(out, "start")[0]
    assert start["tools"] == ["search_metadata", "call"]
    system = events(out, "message")[0]["message"]["content"]
    assert "/sap/opu/odata/sap/DEMO_SALES_ORDER_SRV/" in system and "find_entity_sets" not in system
    search, rejected, created = (t["answer"] for t in events(out, "tool"))
    assert any("<EntityType" in chunk or "<Property" in chunk for chunk in search["chunks"])
    assert "value_helps" not in search
    assert rejected["sent"] is True and rejected["status"] == 400
    assert rejected["answer"]["error"]["innererror"]["errordetails"][0]["code"] == "invalid-code"
    assert created["status"] == 201
    assert [(c["method"], c["status"]) for c in recording(out)][-2:] == [("POST", 400), ("POST", 201)]
    checked = CliRunner().invoke(
        main, ["validate", str(out / "calls.jsonl"), "--store", str(demo_indexed_store), "--format", "json"]
    )
    assert checked.exit_code == 1
    verdicts = json.loads(checked.stdout)
    assert [v["valid"] for v in verdicts] == [True, False, True]
    assert verdicts[1]["violations"][0]["kind"] == "invalid-code"


def test_chunkrag_vh_adds_the_code_lists_as_text(demo_indexed_store, llm, tmp_path):
    out = tmp_path / "run"
    task = "Create a sales order for customer 0000000001 (chunks)."
    extra = ["--condition", "chunkrag-vh", "--odata", str(DEMO / "odata"), "--allow-writes"]
    assert run(demo_indexed_store, llm, out, task, *extra).exit_code == 0
    search = events(out, "tool")[0]["answer"]
    assert search["value_helps"], "the chunks describe entity sets with value helps"
    assert all(re.fullmatch(r"DEMO_\w+/\w+\.\w+: [A-Z0-9]+(, [A-Z0-9]+)*", line) for line in search["value_helps"])
    assert "DEMO_SALES_ORDER_SRV/A_SalesOrderItem.TransactionCurrency: CHF, DKK, EUR, GBP, USD" in search["value_helps"]


def test_chunk_conditions_need_the_metadata_files(demo_indexed_store, llm, tmp_path):
    task = "Create a sales order for customer 0000000001 (chunks)."
    result = run(demo_indexed_store, llm, tmp_path / "run", task, "--condition", "chunkrag")
    assert result.exit_code == 2
    assert "are not in the files given with --odata" in result.stderr


def test_tool_calls_written_in_qwen_tags_are_understood(demo_indexed_store, llm, tmp_path):
    out = tmp_path / "run"
    result = run(demo_indexed_store, llm, out, "What type has sales order 0000000003?")
    assert result.exit_code == 0, result.output
    call = events(out, "tool")[0]
    assert call["name"] == "call" and call["answer"]["status"] == 200
    assert result.stdout.strip() == f"Sales order 0000000003 has type {call['answer']['answer']['d']['SalesOrderType']}"


def test_a_call_whose_json_does_not_parse_is_answered_so_and_sent_again(demo_indexed_store, llm, tmp_path):
    """A small model's call with broken JSON (a real reply's shape) is not taken as its answer: the tool
    answers that the arguments are not JSON, naming the line, and the model's next call goes through."""
    out = tmp_path / "run"
    result = run(demo_indexed_store, llm, out, "Tell me the type of sales order 0000000003.")
    assert result.exit_code == 0, result.output
    broken, good = events(out, "tool")
    assert broken["name"] == "call" and broken["error"] is True
    assert "are not JSON" in broken["answer"]["error"] and "[SalesOrder]" in broken["answer"]["error"]
    assert good["answer"]["status"] == 200
    assert result.stdout.strip() == f"Sales order 0000000003 has type {good['answer']['answer']['d']['SalesOrderType']}"


def test_a_number_with_leading_zeros_is_read_as_text_and_the_answer_says_so(demo_indexed_store, llm, tmp_path):
    """Qwen2.5-Coder-1.5B's real reply with ``"Division": 00``: no JSON, but the code it means is "00"; the
    call goes through with the number read as text, and the answer says which numbers were read so."""
    out = tmp_path / "run"
    result = run(demo_indexed_store, llm, out, "Read sales order 0000000003 with its division.")
    assert result.exit_code == 0, result.output
    (call,) = events(out, "tool")
    assert call["error"] is False and call["arguments"]["Division"] == "00"
    assert call["answer"]["status"] == 200 and call["answer"]["read_as_text"].startswith("00:")
    assert result.stdout.strip() == "Read sales order 0000000003"


def test_a_repeated_graph_tool_call_is_not_run_again_and_the_model_is_told(demo_indexed_store, llm, tmp_path):
    out = tmp_path / "run"
    result = run(demo_indexed_store, llm, out, "Which type has sales order 0000000004? Describe first.")
    assert result.exit_code == 0, result.output
    first, again, read = events(out, "tool")
    assert first["name"] == again["name"] == "describe" and first["error"] is False and first["answer"]["key"]
    assert again["error"] is True and again["answer"] == {
        "error": "you made the same describe call in step 1; its answer is above and would be the same: use it "
        "(for example call with what it gave), or call another tool"
    }
    assert read["answer"]["status"] == 200 and events(out, "end")[0]["tool_errors"] == 1


def test_a_repeated_read_is_not_sent_again_and_the_model_is_told_to_answer(demo_indexed_store, llm, tmp_path):
    out = tmp_path / "run"
    result = run(demo_indexed_store, llm, out, "Read the type of sales order 0000000003, twice.")
    assert result.exit_code == 0, result.output
    read, again = events(out, "tool")
    assert read["answer"]["status"] == 200 and again["error"] is True
    assert again["answer"]["error"].startswith("you made the same GET in step 1 and nothing was written since")
    assert len(recording(out)) == 1  # the second GET never reached the server


def test_a_write_the_server_took_is_not_sent_again(demo_indexed_store, llm, tmp_path):
    """Qwen2.5-Coder-1.5B created one sales order four times (single-write-006, 2026-12-05); a body given as
    a JSON string is the object it holds, so the second POST is the same write and is not sent."""
    out = tmp_path / "run"
    task = "Create a standard sales order for customer 0000000001, twice."
    result = run(demo_indexed_store, llm, out, task, "--allow-writes")
    assert result.exit_code == 0, result.output
    created, again = events(out, "tool")
    assert created["answer"]["status"] == 201 and again["error"] is True
    assert again["answer"]["error"].startswith("you sent this same write in step 1 and the server took it")
    assert [e["method"] for e in recording(out)].count("POST") == 1


def test_a_conversation_too_long_for_the_context_drops_the_oldest_tool_answer(demo_indexed_store, llm, tmp_path):
    """The endpoint refuses the conversation as longer than the model's window (HTTP 400, llama-cpp-python's
    words): the oldest tool answer is dropped and the conversation sent again, so the run goes on."""
    task = "Read sales orders 0000000002 and 0000000003."
    out = tmp_path / "run"
    before = len(llm.requests)
    scripted_llm.CONTEXT_LIMITS[task] = 10**9
    assert run(demo_indexed_store, llm, tmp_path / "probe", task).exit_code == 0
    sizes = [len(json.dumps(r["messages"])) for r in llm.requests[before:]]
    scripted_llm.CONTEXT_LIMITS[task] = sizes[-1] - 100  # the last turn, with both answers, no longer fits
    result = run(demo_indexed_store, llm, out, task)
    assert result.exit_code == 0, result.output
    dropped = events(out, "dropped")
    first = events(out, "tool")[0]
    assert [d["tool_call_id"] for d in dropped] == [first["id"]]
    last = llm.requests[-1]["messages"]
    kept = [m["content"] for m in last if m["role"] == "tool"]
    assert kept[0].startswith("[answer dropped to fit the model's context window:") and '"status":200' in kept[1]
    assert events(out, "end")[0]["status"] == "answered"


def test_a_conversation_that_never_fits_ends_as_context_full_not_as_an_endpoint_error(
    demo_indexed_store, llm, tmp_path
):
    task = "Read sales orders 0000000002 and 0000000003 in a tiny window."
    scripted_llm.CONTEXT_LIMITS[task] = 100  # not even the system prompt fits
    result = run(demo_indexed_store, llm, tmp_path / "run", task)
    assert result.exit_code == 1 and "context-full:" in result.stderr and "Traceback" not in result.output
    end = events(tmp_path / "run", "end")[0]
    assert end["status"] == "context-full" and "maximum context length" in end["error"]


def test_an_endpoint_error_is_one_line_and_exit_2(demo_indexed_store, llm, tmp_path):
    result = run(demo_indexed_store, llm, tmp_path / "run", "A task no script knows.")
    assert result.exit_code == 2
    assert "error: " in result.stderr and "HTTP 500" in result.stderr and "Traceback" not in result.output
    assert events(tmp_path / "run", "end")[0]["status"] == "llm-error"


def test_a_reply_that_is_no_chat_completion_is_refused():
    with pytest.raises(LLMError, match="not an OpenAI chat completion"):
        parse_reply(b'{"choices": []}', 0.1)


#: What llama-cpp-python 0.3.36's server answered with Qwen2.5-Coder-1.5B and the model's own template
#: (kg agent local-model): the <tool_call> tags are special tokens it does not print.
LLAMA_CPP_REPLY = (
    b'{"choices":[{"index":0,"message":{"content":"{{\\"name\\": \\"find_entity_sets\\", \\"arguments\\": '
    b'{\\"task\\": \\"sales orders\\"}}}","role":"assistant"},"finish_reason":"stop"}],'
    b'"usage":{"prompt_tokens":174,"completion_tokens":20,"total_tokens":194}}'
)


def test_a_tool_call_without_its_tags_is_understood_and_prose_is_an_answer():
    reply = parse_reply(LLAMA_CPP_REPLY, 46.5)
    assert [(c.name, json.loads(c.arguments)) for c in reply.tool_calls] == [
        ("find_entity_sets", {"task": "sales orders"})
    ]
    assert reply.prompt_tokens == 174 and reply.message["content"] == written(reply.tool_calls)
    prose = b'{"choices":[{"message":{"role":"assistant","content":"The order {\\"name\\": \\"x\\"} is open."}}]}'
    assert parse_reply(prose, 0.1).tool_calls == []
    other = b'{"choices":[{"message":{"role":"assistant","content":"{\\"name\\": \\"x\\", \\"price\\": 3}"}}]}'
    assert parse_reply(other, 0.1).tool_calls == []  # a JSON answer that is not a call


#: The first answers of three real runs of the local model (kg eval agent, docs/agent.md "The offline smoke model").
FENCED = json.loads((DATA / "llm" / "qwen-fenced-replies.json").read_text(encoding="utf-8"))["replies"]


@pytest.mark.parametrize("reply", FENCED, ids=[r["run"] for r in FENCED])
def test_the_first_call_in_a_fenced_json_block_is_the_call_and_other_json_is_an_answer(reply):
    """Qwen2.5-Coder-1.5B under llama-cpp-python writes its call as a fenced JSON block, then more blocks
    with calls on results it has not seen: only the first block counts; fenced JSON that is no call
    (typed/lookup-002) leaves the prose an answer."""
    body = {"choices": [{"message": {"role": "assistant", "content": reply["content"]}}]}
    calls = parse_reply(json.dumps(body).encode(), 1.0).tool_calls
    assert [[c.name, json.loads(c.arguments)] for c in calls] == reply["expected_calls"]


@pytest.mark.parametrize("reply", [r for r in FENCED if r["expected_calls"]], ids=lambda r: r["run"])
def test_a_call_read_from_the_text_goes_back_as_the_call_alone(reply):
    """The conversation keeps the call the turn made, not the text with the calls it did not make (a small
    model shown its own four-call plan wrote it again every turn); the trace keeps the text."""
    body = {"choices": [{"message": {"role": "assistant", "content": reply["content"]}}]}
    parsed = parse_reply(json.dumps(body).encode(), 1.0)
    assert parsed.text == reply["content"] and "tool_calls" not in parsed.message
    kept = parsed.message["content"]
    assert kept == written(parsed.tool_calls) and kept.count("```json") == len(reply["expected_calls"]) == 1


def test_a_fenced_call_cut_by_a_stop_sequence_is_still_the_call():
    """With --stop '```\\n\\n```' the endpoint ends the reply where the second block would begin, so the first
    block has no closing fence."""
    text = '```json\n{"name": "describe", "arguments": {"service": "S", "entity_set": "E"}}\n'
    body = {"choices": [{"message": {"role": "assistant", "content": text}, "finish_reason": "stop"}]}
    (call,) = parse_reply(json.dumps(body).encode(), 1.0).tool_calls
    assert call.name == "describe" and json.loads(call.arguments) == {"service": "S", "entity_set": "E"}


def test_stop_sequences_are_sent_with_newlines_and_traced(demo_indexed_store, llm, tmp_path):
    out = tmp_path / "run"
    before = len(llm.requests)
    result = run(demo_indexed_store, llm, out, "Which type has sales order 0000000003?", "--stop", "```\\n\\n```")
    assert result.exit_code == 0, result.output
    sent = llm.requests[before:]
    assert sent and all(r["stop"] == ["```\n\n```"] for r in sent)
    assert events(out, "start")[0]["settings"]["stop"] == ["```\n\n```"]


def test_a_run_that_retrieves_first_starts_with_find_entity_sets_on_the_task(demo_indexed_store, llm, tmp_path):
    """--retrieve-first: step 0 is find_entity_sets with the task word for word; the model reads the record it
    names (a call after prose, arguments as a JSON string) and answers from it."""
    out = tmp_path / "run"
    task = "What is the type of sales order 0000000003?"
    result = run(demo_indexed_store, llm, out, task, "--retrieve-first")
    assert result.exit_code == 0, result.output
    found, read = events(out, "tool")
    assert (found["step"], found["name"], found["arguments"]) == (0, "find_entity_sets", {"task": task})
    assert read["step"] == 1 and read["name"] == "call" and read["answer"]["status"] == 200
    assert read["arguments"]["url"].endswith("A_SalesOrder('0000000003')")
    assert events(out, "end")[0]["tool_calls"] == 2 and events(out, "end")[0]["steps"] == 2
    assert result.stdout.strip() == f"Sales order 0000000003 has type {read['answer']['answer']['d']['SalesOrderType']}"


def test_a_json_object_that_fits_one_tool_is_that_tools_call():
    """Qwen2.5-Coder-1.5B wrote the arguments of call without the tool's name (lookup-005, 2026-12-05); where
    call and validate_call both fit, the tool the text names is the one; an object that fits none is no call."""
    specs = tool_list(allow_writes=True)
    text = 'To read, call with method GET and that path.\n```json\n{"method": "GET", "url": "/x/A_Set"}\n```\nDone.'
    implied = implied_call(text, specs)
    assert implied is not None and implied.name == "call"
    assert json.loads(implied.arguments) == {"method": "GET", "url": "/x/A_Set"}
    assert implied_call('{"method": "GET", "url": "/x"}', specs) is None  # call or validate_call: not said
    assert implied_call('Then describe it.\n{"service": "S", "entity_set": "E"}', specs).name == "describe"
    assert implied_call('{"netAmount": 50.0, "plant": "PLANT1"}', specs) is None


def test_calls_go_back_with_their_arguments_as_objects():
    """As tool_calls, Qwen's chat template under llama-cpp-python shows arguments (a JSON string in OpenAI's
    format) as a quoted string, and the model quoted its arguments once more every turn; written back as text
    they are objects."""
    text = written([ToolCall("call_1", "call", '{"method": "GET", "url": "/x"}')])
    assert text == '```json\n{"name": "call", "arguments": {"method": "GET", "url": "/x"}}\n```'
    assert parse_arguments(json.dumps('{"method": "GET"}')) == ({"method": "GET"}, [])  # a quoted object


def test_a_result_line_given_as_the_service_is_read_as_its_service(demo_indexed_store):
    box = Toolbox(StoreHandle.open(demo_indexed_store))
    line = "DEMO_SALES_ORDER_SRV/A_SalesOrder [SalesOrder] Sales Order"
    answer, error = box.run("describe", {"service": line, "entity_set": "A_SalesOrder"})
    assert not error and answer["path"].endswith("DEMO_SALES_ORDER_SRV/A_SalesOrder")
    answer, error = box.run("describe", {"service": "NO_SUCH_SRV/A_SalesOrder", "entity_set": "A_SalesOrder"})
    assert error and "unknown service 'NO_SUCH_SRV/A_SalesOrder'" in answer["error"]
