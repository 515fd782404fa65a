"""A scripted OpenAI-compatible chat-completions server for the agent tests: real HTTP on loopback,
real tool-call JSON in the OpenAI format, no model.

Each script is a function of the conversation so far (the ``messages`` the agent sent) that returns
the next assistant turn: tool calls, or a final answer. The server picks the script by the task
(the first user message) and keeps every request it got, so tests can check what the agent sent
(messages, tools with their JSON schemas, temperature). An unknown task gets HTTP 500.
"""

from __future__ import annotations

import http.server
import json
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

Turn = dict  # {"tools": [(name, arguments)]} or {"answer": text}
Script = Callable[[list[dict]], Turn]

V2 = "/sap/opu/odata/sap/DEMO_SALES_ORDER_SRV/"
ORDER = {
    "SalesOrganization": "1000",
    "DistributionChannel": "10",
    "OrganizationDivision": "00",
    "SoldToParty": "0000000001",
}


def tool_answers(messages: list[dict]) -> list[dict]:
    """The answers of the tools so far, decoded, oldest first."""
    return [json.loads(m["content"]) for m in messages if m["role"] == "tool"]


def turn(messages: list[dict]) -> int:
    return sum(1 for m in messages if m["role"] == "assistant")


def code_with_label(describe_answer: dict, prop: str, label: str) -> str:
    """The code of ``prop``'s value help whose label is ``label``, read from a ``describe`` answer."""
    pairs = [pair.split("=", 1) for pair in describe_answer["value_helps"][prop].split(", ") if "=" in pair]
    return next(code for code, text in pairs if text == label)


def codes_in_hint(message: str) -> list[str]:
    """The codes a violation's repair hint lists: ``... (codelist: CR, DR, OR, RE, SO)``."""
    listed = re.search(r"\((?:[\w-]+): ([^)]*)\)", message)
    return [c.strip() for c in listed.group(1).split(",")] if listed else []


def typed_invents_then_repairs(messages: list[dict]) -> Turn:
    """find -> describe -> POST with an invented order type (refused, 400) -> POST with the code the
    value help labels "Standard Order" -> answer with the new order's key."""
    answers, n = tool_answers(messages), turn(messages)
    if n == 0:
        return {"tools": [("find_entity_sets", {"task": "create a standard sales order for a customer", "k": 3})]}
    if n == 1:
        service, entity_set = answers[-1]["results"][0].split(" ")[0].split("/")
        described = {"service": service, "entity_set": entity_set, "detail": "full"}
        return {"tools": [("describe", described)]}
    if n == 2:
        return {
            "tools": [
                ("call", {"method": "POST", "url": V2 + "A_SalesOrder", "body": dict(ORDER, SalesOrderType="ZSTD")})
            ]
        }
    if n == 3:
        standard = code_with_label(answers[1], "SalesOrderType", "Standard Order")
        return {
            "tools": [
                ("call", {"method": "POST", "url": V2 + "A_SalesOrder", "body": dict(ORDER, SalesOrderType=standard)})
            ]
        }
    created = answers[-1]["answer"]["d"]["SalesOrder"]
    return {"answer": f"Created standard sales order {created}."}


def runaway(messages: list[dict]) -> Turn:
    """Never answers: searches again and again."""
    return {"tools": [("find_entity_sets", {"task": f"sales order, attempt {turn(messages) + 1}"})]}


def chunkrag_invents_then_repairs(messages: list[dict]) -> Turn:
    """search the raw metadata -> POST with an invented order type (the server answers 400) -> POST
    with the first code the server's repair hint lists -> answer."""
    answers, n = tool_answers(messages), turn(messages)
    if n == 0:
        return {"tools": [("search_metadata", {"query": "sales order type of a sales order header", "k": 3})]}
    if n == 1:
        return {
            "tools": [
                ("call", {"method": "POST", "url": V2 + "A_SalesOrder", "body": dict(ORDER, SalesOrderType="ZSTD")})
            ]
        }
    if n == 2:
        detail = answers[-1]["answer"]["error"]["innererror"]["errordetails"][0]
        return {
            "tools": [
                (
                    "call",
                    {
                        "method": "POST",
                        "url": V2 + "A_SalesOrder",
                        "body": dict(ORDER, SalesOrderType=codes_in_hint(detail["message"])[0]),
                    },
                )
            ]
        }
    return {"answer": f"Created sales order {answers[-1]['answer']['d']['SalesOrder']}."}


def reads_in_qwen_text(messages: list[dict]) -> Turn:
    """A model whose server has no tool-call parser: the call is in the text, in Qwen's tags."""
    if turn(messages) == 0:
        call = {"name": "call", "arguments": {"method": "GET", "url": V2 + "A_SalesOrder('0000000003')"}}
        return {"text": f"<tool_call>\n{json.dumps(call)}\n</tool_call>"}
    return {"answer": "Sales order 0000000003 has type " + tool_answers(messages)[-1]["answer"]["d"]["SalesOrderType"]}


#: What Qwen2.5-Coder-1.5B wrote under llama-cpp-python in a real run (kg eval agent, typed/single-write-001,
#: 2026-12-05): a call in a fenced block whose JSON does not parse (``"Division": 00``), here on the demo service.
BROKEN_FENCED_CALL = """```json
{
  "name": "call",
  "arguments": {
    "method": "GET",
    "url": "V2A_SalesOrder('0000000003')",
    "select": ["SalesOrder", "Division"],
    "Division": 00
  }
}
```""".replace("V2", V2)


#: A call whose JSON does not parse even with its numbers read as text (a name left unquoted).
UNQUOTED_NAME_CALL = """```json
{"name": "call", "arguments": {"method": "GET", "url": "V2A_SalesOrder('0000000003')", "select": [SalesOrder]}}
```""".replace("V2", V2)


def reads_with_leading_zeros(messages: list[dict]) -> Turn:
    """The real reply with ``"Division": 00`` (read as the text "00"), then the answer."""
    if turn(messages) == 0:
        return {"text": BROKEN_FENCED_CALL}
    return {"answer": "Read sales order " + tool_answers(messages)[-1]["answer"]["d"]["SalesOrder"]}


def reads_what_retrieval_named(messages: list[dict]) -> Turn:
    """A run started with find_entity_sets' answer (--retrieve-first): the read it names, written after prose
    on a line of its own with the arguments as a JSON string (two real Qwen2.5-Coder-1.5B habits), then the
    answer copied from the records."""
    found = tool_answers(messages)[0]
    if turn(messages) == 1:  # the retrieval call is the first assistant message
        read = next(line for line in found["named_in_task"] if "/A_SalesOrder: read GET " in line).split("read GET ")[1]
        call = {"name": "call", "arguments": json.dumps({"method": "GET", "url": read.split(";")[0]})}
        return {"text": "To read, call with method GET and that path.\n" + json.dumps(call)}
    return {"answer": "Sales order 0000000003 has type " + tool_answers(messages)[-1]["answer"]["d"]["SalesOrderType"]}


def reads_twice(messages: list[dict]) -> Turn:
    """The same GET twice (as Qwen2.5-Coder-1.5B did until its step limit), then the answer."""
    if turn(messages) < 2:
        return {"tools": [("call", {"method": "GET", "url": V2 + "A_SalesOrder('0000000003')"})]}
    return {"answer": "Sales order 0000000003 has type " + tool_answers(messages)[0]["answer"]["d"]["SalesOrderType"]}


def creates_twice(messages: list[dict]) -> Turn:
    """The same POST twice, its body once as a JSON string (two Qwen2.5-Coder-1.5B habits), then the answer."""
    n = turn(messages)
    body = dict(ORDER, SalesOrderType="OR")
    if n < 2:
        return {
            "tools": [("call", {"method": "POST", "url": V2 + "A_SalesOrder", "body": json.dumps(body) if n else body})]
        }
    return {"answer": "Created sales order " + tool_answers(messages)[0]["answer"]["d"]["SalesOrder"]}


def repairs_its_broken_json(messages: list[dict]) -> Turn:
    """A call whose JSON does not parse, then the same call as JSON once the tool said so, then the answer."""
    if turn(messages) == 0:
        return {"text": UNQUOTED_NAME_CALL}
    if turn(messages) == 1:
        return {
            "text": "```json\n"
            + json.dumps({"name": "call", "arguments": {"method": "GET", "url": V2 + "A_SalesOrder('0000000003')"}})
            + "\n```"
        }
    return {"answer": "Sales order 0000000003 has type " + tool_answers(messages)[-1]["answer"]["d"]["SalesOrderType"]}


def reads_two_orders(messages: list[dict]) -> Turn:
    """Two GETs, then an answer naming both types: for the context window tests (CONTEXT_LIMITS)."""
    n = turn(messages)
    if n < 2:
        return {"tools": [("call", {"method": "GET", "url": V2 + f"A_SalesOrder('000000000{n + 2}')"})]}
    return {"answer": "read two orders"}


def repeats_a_describe(messages: list[dict]) -> Turn:
    """The same describe twice (as Qwen2.5-Coder-1.5B did until its step limit), then the GET, then the answer."""
    describe = ("describe", {"service": "DEMO_SALES_ORDER_SRV", "entity_set": "A_SalesOrder"})
    n = turn(messages)
    if n < 2:
        return {"tools": [describe]}
    if n == 2:
        return {"tools": [("call", {"method": "GET", "url": V2 + "A_SalesOrder('0000000004')"})]}
    return {"answer": "Sales order 0000000004 has type " + tool_answers(messages)[-1]["answer"]["d"]["SalesOrderType"]}


#: Tasks whose conversation the scripted server refuses, as llama-cpp-python's server does, once its JSON is
#: longer than this many characters (the context window tests of tests/test_agent.py).
CONTEXT_LIMITS: dict[str, int] = {}


# ---------------------------------------------------------------- kg eval agent (tests/test_eval_agent.py)
# The same task under every condition; a script reads the condition from the system prompt.


def is_typed(messages: list[dict]) -> bool:
    return "find_entity_sets" in messages[0]["content"]


def looks_up_the_type(messages: list[dict]) -> Turn:
    """GET the order, answer with its type: completes under every condition."""
    if turn(messages) == 0:
        return {"tools": [("call", {"method": "GET", "url": V2 + "A_SalesOrder('0000000003')"})]}
    return {"answer": "Sales order 0000000003 has type " + tool_answers(messages)[-1]["answer"]["d"]["SalesOrderType"]}


def invents_a_code_then_repairs(messages: list[dict]) -> Turn:
    """typed: find, describe, POST with an invented order type (refused), POST with the code labelled
    "Standard Order"; chunkrag: search, POST with the invented type (the server's 400), POST with OR
    from the 400's code list; chunkrag-vh: search, POST with OR from the code lists the search gave.
    All answer with the new order's key."""
    if is_typed(messages):
        return typed_invents_then_repairs(messages)
    answers, n = tool_answers(messages), turn(messages)
    if n == 0:
        return {"tools": [("search_metadata", {"query": "sales order type of a sales order header", "k": 5})]}
    given = [line for line in answers[0].get("value_helps", []) if "A_SalesOrder.SalesOrderType:" in line]
    if n == 1 and given:
        body = dict(ORDER, SalesOrderType="OR" if " OR" in given[0] else "??")
        return {"tools": [("call", {"method": "POST", "url": V2 + "A_SalesOrder", "body": body})]}
    if n in (1, 2) and not given:
        code = "ZSTD"
        if n == 2:
            listed = codes_in_hint(answers[-1]["answer"]["error"]["innererror"]["errordetails"][0]["message"])
            code = "OR" if "OR" in listed else listed[0]
        body = dict(ORDER, SalesOrderType=code)
        return {"tools": [("call", {"method": "POST", "url": V2 + "A_SalesOrder", "body": body})]}
    return {"answer": f"Created standard sales order {answers[-1]['answer']['d']['SalesOrder']}."}


def answers_wrongly_without_types(messages: list[dict]) -> Turn:
    """typed: GET the order, answer with its sold-to party. The chunk conditions: GET an order that
    does not exist (404), then with an invented property in $select (400), then a wrong answer."""
    n = turn(messages)
    if is_typed(messages):
        if n == 0:
            return {"tools": [("call", {"method": "GET", "url": V2 + "A_SalesOrder('0000000002')"})]}
        return {"answer": "Sold-to party: " + tool_answers(messages)[-1]["answer"]["d"]["SoldToParty"]}
    if n == 0:
        return {"tools": [("call", {"method": "GET", "url": V2 + "A_SalesOrder('0000000099')"})]}
    if n == 1:
        return {"tools": [("call", {"method": "GET", "url": V2 + "A_SalesOrder('0000000002')?$select=CustomerNumber"})]}
    return {"answer": "Sold-to party: 0000000009"}


SCRIPTS: dict[str, Script] = {
    "Which type has sales order 0000000003?": looks_up_the_type,
    "Create a standard sales order (OR) for customer 0000000001.": invents_a_code_then_repairs,
    "List every sales order there is, forever.": runaway,
    "Which sold-to party has sales order 0000000002?": answers_wrongly_without_types,
    "Create a standard sales order for customer 0000000001.": typed_invents_then_repairs,
    "Find the sales order, forever.": runaway,
    "Create a sales order for customer 0000000001 (chunks).": chunkrag_invents_then_repairs,
    "What type has sales order 0000000003?": reads_in_qwen_text,
    "Tell me the type of sales order 0000000003.": repairs_its_broken_json,
    "What is the type of sales order 0000000003?": reads_what_retrieval_named,
    "Read the type of sales order 0000000003, twice.": reads_twice,
    "Create a standard sales order for customer 0000000001, twice.": creates_twice,
    "Read sales order 0000000003 with its division.": reads_with_leading_zeros,
    "Read sales orders 0000000002 and 0000000003.": reads_two_orders,
    "Which type has sales order 0000000004? Describe first.": repeats_a_describe,
    "Read sales orders 0000000002 and 0000000003 in a tiny window.": reads_two_orders,
}


@dataclass
class ScriptedLLM:
    server: http.server.ThreadingHTTPServer
    requests: list[dict] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"


def completion(request: dict, turn_: Turn) -> dict:
    """An OpenAI chat completion for ``turn_`` (usage: characters / 4, there being no tokenizer)."""
    n = turn(request["messages"])
    message: dict = {"role": "assistant", "content": turn_.get("answer") or turn_.get("text")}
    if "tools" in turn_:
        message["tool_calls"] = [
            {"id": f"call_{n}_{i}", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
            for i, (name, args) in enumerate(turn_["tools"])
        ]
    prompt = len(json.dumps(request["messages"])) // 4
    return {
        "id": f"chatcmpl-{n}",
        "object": "chat.completion",
        "model": request.get("model", ""),
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if "tools" in turn_ else "stop"}],
        "usage": {"prompt_tokens": prompt, "completion_tokens": len(json.dumps(message)) // 4, "total_tokens": 0},
    }


def start() -> ScriptedLLM:
    llm: ScriptedLLM

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            llm.requests.append(request)
            task = next(m["content"] for m in request["messages"] if m["role"] == "user")
            script = SCRIPTS.get(task)
            if self.path != "/v1/chat/completions" or script is None:
                self._send(500, {"error": {"message": f"no script for {task!r} at {self.path}"}})
                return
            size = len(json.dumps(request["messages"]))
            if size > CONTEXT_LIMITS.get(task, size):
                message = f"This model's maximum context length is {CONTEXT_LIMITS[task]} characters. However, you requested {size}."
                self._send(400, {"error": {"message": message, "type": "invalid_request_error"}})
                return
            self._send(200, completion(request, script(request["messages"])))

        def _send(self, status: int, body: dict) -> None:
            raw = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

        def log_message(self, *args: object) -> None:
            pass

    llm = ScriptedLLM(http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler))
    threading.Thread(target=llm.server.serve_forever, daemon=True).start()
    return llm
