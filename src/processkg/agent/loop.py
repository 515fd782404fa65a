"""``kg agent run``: a ReAct loop. The model is offered the tools of a condition; each turn it either
calls tools (their answers go back into the conversation) or answers, which ends the run. A run
that reaches ``max_steps`` turns without answering stops with status ``max-steps``.

Every run writes a trace, one JSON object per line: ``start`` (task, condition, model, settings,
the tool list), ``message`` (each message added to the conversation), ``llm`` (one completion:
tokens, seconds), ``tool`` (name, arguments, answer, seconds), ``http`` (each request ``call`` sent
and the server's answer) and ``end`` (status, answer, counts, tokens, seconds).
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from types import TracebackType
from typing import Protocol

from processkg.aliases import JSONObject, JSONValue
from processkg.errors import LLMError
from processkg.openai_chat import ChatClient, Reply, ToolCall
from processkg.tools.odata_client import Exchange
from processkg.tools.specs import ToolSpec, answer_text, openai_tools

MAX_TOOL_TEXT = 16_000  # characters of one tool answer given back to the model
STATUSES = ("answered", "max-steps", "llm-error")


class ToolSet(Protocol):
    """What the loop needs of a condition's tools (:class:`processkg.agent.conditions.Tools`)."""

    @property
    def specs(self) -> list[ToolSpec]: ...

    @property
    def exchanges(self) -> list[Exchange]: ...

    def system_prompt(self) -> str: ...

    def run(self, name: str, arguments: JSONValue) -> tuple[JSONObject, bool]: ...


@dataclass
class RunResult:
    status: str  # one of STATUSES
    answer: str
    steps: int  # model turns
    tool_calls: int
    tool_errors: int
    http_calls: int
    rejected: int  # calls not sent (invalid) or answered with a 4xx/5xx status
    prompt_tokens: int
    completion_tokens: int
    seconds: float
    error: str = ""

    def as_dict(self) -> JSONObject:
        return asdict(self)


class Trace:
    """The JSON Lines trace of one run (flushed per event, so a killed run keeps what happened)."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.file = self.path.open("w", encoding="utf-8")
        self.start = time.perf_counter()

    def write(self, event: str, **fields: JSONValue) -> None:
        line = {"event": event, "t": round(time.perf_counter() - self.start, 4), **fields}
        self.file.write(json.dumps(line, ensure_ascii=False, default=str) + "\n")
        self.file.flush()

    def close(self) -> None:
        self.file.close()

    def __enter__(self) -> Trace:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


class Agent:
    """One ReAct run of ``task`` with ``tools`` and the chat model behind ``chat``."""

    def __init__(self, chat: ChatClient, tools: ToolSet, trace: Trace, max_steps: int = 15) -> None:
        self.chat, self.tools, self.trace, self.max_steps = chat, tools, trace, max_steps
        self.messages: list[JSONObject] = []
        self.counts = {"tool_calls": 0, "tool_errors": 0, "prompt": 0, "completion": 0}
        self.seen = 0  # exchanges already written to the trace

    def run(self, task: str, condition: str = "") -> RunResult:
        start = time.perf_counter()
        specs = self.tools.specs
        self.trace.write(
            "start",
            task=task,
            condition=condition,
            model=self.chat.settings.model,
            settings={k: v for k, v in asdict(self.chat.settings).items() if k != "api_key"},
            max_steps=self.max_steps,
            tools=[s.name for s in specs],
        )
        self.add({"role": "system", "content": self.tools.system_prompt()})
        self.add({"role": "user", "content": task})
        status, answer, error, steps = "max-steps", "", "", 0
        while steps < self.max_steps:
            steps += 1
            try:
                reply = self.chat.complete(self.messages, openai_tools(specs))
            except LLMError as exc:
                status, error = "llm-error", str(exc)
                break
            self.note(reply, steps)
            if not reply.tool_calls:
                status, answer = "answered", str(reply.message.get("content") or "")
                break
            for call in reply.tool_calls:
                self.use(call, steps)
        result = self.result(status, answer, steps, time.perf_counter() - start, error)
        self.trace.write("end", **result.as_dict())
        return result

    def add(self, message: JSONObject) -> None:
        self.messages.append(message)
        self.trace.write("message", message=message)

    def note(self, reply: Reply, step: int) -> None:
        self.counts["prompt"] += reply.prompt_tokens
        self.counts["completion"] += reply.completion_tokens
        self.trace.write(
            "llm",
            step=step,
            prompt_tokens=reply.prompt_tokens,
            completion_tokens=reply.completion_tokens,
            seconds=round(reply.seconds, 4),
            finish_reason=reply.finish_reason,
            tool_calls=[{"name": c.name, "arguments": c.arguments} for c in reply.tool_calls],
        )
        self.add(reply.message)

    def use(self, call: ToolCall, step: int) -> None:
        """Run one tool call and give its answer back to the model."""
        start = time.perf_counter()
        try:
            arguments = json.loads(call.arguments) if call.arguments.strip() else {}
            answer, is_error = self.tools.run(call.name, arguments)
        except ValueError as exc:
            answer, is_error = {"error": f"the arguments of {call.name} are not JSON: {exc}"}, True
            arguments = call.arguments
        self.counts["tool_calls"] += 1
        self.counts["tool_errors"] += int(is_error)
        seconds = time.perf_counter() - start
        self.trace.write(
            "tool", step=step, id=call.id, name=call.name, arguments=arguments, answer=answer, error=is_error,
            seconds=round(seconds, 4),
        )  # fmt: skip
        for exchange in self.tools.exchanges[self.seen :]:
            self.trace.write("http", step=step, tool_call=call.id, **exchange.as_dict())
        self.seen = len(self.tools.exchanges)
        text = answer_text(answer)
        if len(text) > MAX_TOOL_TEXT:
            text = text[:MAX_TOOL_TEXT] + f"... [cut: {len(text) - MAX_TOOL_TEXT} more characters]"
        self.add({"role": "tool", "tool_call_id": call.id, "name": call.name, "content": text})

    def result(self, status: str, answer: str, steps: int, seconds: float, error: str) -> RunResult:
        sent = self.tools.exchanges
        refused = sum(1 for m in self.messages if m["role"] == "tool" and '"sent":false' in m["content"])
        return RunResult(
            status,
            answer,
            steps,
            self.counts["tool_calls"],
            self.counts["tool_errors"],
            len(sent),
            refused + sum(1 for e in sent if e.status >= 400),
            self.counts["prompt"],
            self.counts["completion"],
            seconds,
            error,
        )


__all__ = ["STATUSES", "Agent", "RunResult", "ToolSet", "Trace"]
