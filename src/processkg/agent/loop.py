"""``kg agent run``: a ReAct loop. The model is offered the tools of a condition; each turn it either
calls tools (their answers go back into the conversation) or answers, which ends the run. A run
that reaches ``max_steps`` turns without answering stops with status ``max-steps``.

A conversation that outgrows the model's context window (the endpoint says so: HTTP 400,
:class:`~processkg.errors.ContextFullError`) is shortened and sent again: the oldest tool answer
still in full is replaced by a note that it was dropped (the model may call the tool again). When
no answer is left to drop, the run stops with status ``context-full``: a run the agent did not
complete, not an endpoint error.

With ``retrieve_first`` the run starts with the condition's retrieval tool called on the task's own
words (``find_entity_sets`` or ``search_metadata``), as step 0 of the trace, before the model's
first turn; it counts as a tool call, not as a model turn.

A reply without a call that holds a JSON object fitting exactly one tool's arguments (``{"method":
"GET", "url": ...}``) is taken as that tool's call (:func:`implied_call`; the trace says ``implied``).

A call of a tool other than ``call`` with the same arguments as an earlier one is not run again:
those tools answer from the graph alone, so the answer would be the same; nor is a GET ``call`` the
same as one made since the last write (the model is told to answer from it), nor a write the same
as one the server already took (it would write twice). The model is told which
step it made the call in and to use that answer or do something else (small models otherwise
repeat one call until the step limit).

Every run writes a trace, one JSON object per line: ``start`` (task, condition, model, settings,
the tool list), ``message`` (each message added to the conversation), ``dropped`` (a tool answer
dropped to fit the context window), ``llm`` (one completion:
tokens, seconds, and the reply's text when its calls were read from it), ``tool`` (name, arguments, answer, seconds), ``http`` (each request ``call`` sent
and the server's answer) and ``end`` (status, answer, counts, tokens, seconds).
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from types import TracebackType
from typing import Protocol

from processkg.aliases import JSONObject, JSONValue
from processkg.errors import ContextFullError, LLMError
from processkg.openai_chat import FENCED, ChatClient, Reply, ToolCall, tool_calls_json, written
from processkg.tools.odata_client import Exchange
from processkg.tools.specs import ToolSpec, answer_text, openai_tools
from processkg.tools.toolbox import object_in_text

MAX_TOOL_TEXT = 16_000  # characters of one tool answer given back to the model
STATUSES = ("answered", "max-steps", "context-full", "llm-error")
REPEATED = (
    "you made the same {name} call in step {step}; its answer is above and would be the same: use it "
    "(for example call with what it gave), or call another tool"
)
#: a bare number with leading zeros after ``:``, ``[`` or ``,`` (``00``, ``0010``, ``007.5``), up to where it ends
LEADING_ZEROS = re.compile(r"(?<=[:\[,])\s*(-?0\d+(?:\.\d+)?)(?=\s*[,}\]])")
REPEATED_READ = (
    "you made the same GET in step {step} and nothing was written since; its answer is above and would be "
    "the same: reply now, without a tool call, with the values the task asks for, copied from that answer"
)
REPEATED_WRITE = (
    "you sent this same write in step {step} and the server took it (its answer is above); sending it again "
    "would write it twice: if the task is done, reply with the result without a tool call"
)
DROPPED = "[answer dropped to fit the model's context window: {n} characters; call the tool again if you need it]"


class ToolSet(Protocol):
    """What the loop needs of a condition's tools (:class:`processkg.agent.conditions.Tools`)."""

    @property
    def specs(self) -> list[ToolSpec]: ...

    @property
    def exchanges(self) -> list[Exchange]: ...

    def system_prompt(self) -> str: ...

    def run(self, name: str, arguments: JSONValue) -> tuple[JSONObject, bool]: ...

    def first_call(self, task: str) -> tuple[str, JSONObject]: ...


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

    def __init__(
        self, chat: ChatClient, tools: ToolSet, trace: Trace, max_steps: int = 15, retrieve_first: bool = False
    ) -> None:
        self.chat, self.tools, self.trace, self.max_steps = chat, tools, trace, max_steps
        self.retrieve_first = retrieve_first
        self.messages: list[JSONObject] = []
        self.counts = {"tool_calls": 0, "tool_errors": 0, "prompt": 0, "completion": 0}
        self.seen = 0  # exchanges already written to the trace
        self.made: dict[tuple[str, str], int] = {}  # (tool, arguments as sorted JSON) -> step, for tools but call
        self.done: dict[str, int] = {}  # a write call's arguments (_write_key) -> the step the server took it

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
            retrieve_first=self.retrieve_first,
            tools=[s.name for s in specs],
        )
        self.add({"role": "system", "content": self.tools.system_prompt()})
        self.add({"role": "user", "content": task})
        if self.retrieve_first:
            self.retrieve(task)
        status, answer, error, steps = "max-steps", "", "", 0
        while steps < self.max_steps:
            steps += 1
            try:
                reply = self.complete(openai_tools(specs), steps)
            except ContextFullError as exc:
                status, error = "context-full", str(exc)
                break
            except LLMError as exc:
                status, error = "llm-error", str(exc)
                break
            self.note(reply, steps)
            if not reply.tool_calls:
                implied = implied_call(str(reply.message.get("content") or ""), specs)
                if implied is not None:
                    self.trace.write("implied", step=steps, name=implied.name, arguments=implied.arguments)
                    self.messages[-1] = {"role": "assistant", "content": written([implied])}
                    self.use(implied, steps)
                    continue
                status, answer = "answered", str(reply.message.get("content") or "")
                break
            for call in reply.tool_calls:
                self.use(call, steps)
        result = self.result(status, answer, steps, time.perf_counter() - start, error)
        self.trace.write("end", **result.as_dict())
        return result

    def retrieve(self, task: str) -> None:
        """Step 0: the condition's retrieval tool called with the task word for word, its answer given to the
        model as the answer of a call it made (``--retrieve-first``; the paper's agent gets its retrieval
        results the same way)."""
        name, arguments = self.tools.first_call(task)
        call = ToolCall("call_0", name, json.dumps(arguments))
        self.add({"role": "assistant", "content": "", "tool_calls": tool_calls_json([call])})
        self.use(call, 0)

    def complete(self, tools: list[JSONObject], step: int) -> Reply:
        """One completion; while the endpoint finds the conversation too long for the model, the oldest
        tool answer still in full is dropped (:data:`DROPPED`) and the conversation sent again."""
        while True:
            try:
                return self.chat.complete(self.messages, tools)
            except ContextFullError:
                if not self.drop_oldest_answer(step):
                    raise

    def drop_oldest_answer(self, step: int) -> bool:
        for message in self.messages:
            content = str(message.get("content") or "")
            if message["role"] == "tool" and not content.startswith("[answer dropped"):
                message["content"] = DROPPED.format(n=len(content))
                self.made.clear()  # a repeat may be needed now: the answer it would repeat is gone
                self.trace.write(
                    "dropped", step=step, tool_call_id=message.get("tool_call_id"), characters=len(content)
                )
                return True
        return False

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
            **({"text": reply.text} if reply.text else {}),
        )
        self.add(reply.message)

    def use(self, call: ToolCall, step: int) -> None:
        """Run one tool call and give its answer back to the model."""
        start = time.perf_counter()
        try:
            arguments, quoted = parse_arguments(call.arguments)
            earlier = self.repeated(call.name, arguments, step)
            done = self.done.get(_write_key(arguments)) if call.name == "call" else None
            if earlier:
                again = REPEATED_READ if call.name == "call" else REPEATED
                answer, is_error = {"error": again.format(name=call.name, step=earlier)}, True
            elif done:
                answer, is_error = {"error": REPEATED_WRITE.format(step=done)}, True
            else:
                answer, is_error = self.tools.run(call.name, arguments)
                if call.name == "call" and not is_error and _wrote(arguments, answer):
                    self.done[_write_key(arguments)] = step
            if quoted:
                answer = {
                    **answer,
                    "read_as_text": f"{', '.join(quoted)}: a number with leading zeros is no JSON number",
                }
        except ValueError as exc:
            answer, is_error = {"error": not_json(call, exc)}, True
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

    def repeated(self, name: str, arguments: JSONValue, step: int) -> int:
        """The step of an earlier call of ``name`` with the same arguments (0 if none); this call's step is
        kept otherwise. For ``call``, whose answer depends on the server's records, only a GET counts, and
        only since the last write ``call`` made."""
        if name == "call":
            method = arguments.get("method") if isinstance(arguments, dict) else None
            if str(method).upper() != "GET":
                self.made = {k: v for k, v in self.made.items() if k[0] != "call"}  # the records may change
                return 0
        made = (name, json.dumps(arguments, sort_keys=True))
        if made in self.made:
            return self.made[made]
        self.made[made] = step
        return 0

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


def _write_key(arguments: JSONValue) -> str:
    """A ``call``'s arguments as sorted JSON, a body given as a JSON string read as the object it holds."""
    if isinstance(arguments, dict) and "body" in arguments:
        arguments = {**arguments, "body": object_in_text(arguments["body"])}
    return json.dumps(arguments, sort_keys=True)


def _wrote(arguments: JSONValue, answer: JSONObject) -> bool:
    """Whether a ``call`` was a write the server took (2xx)."""
    method = arguments.get("method") if isinstance(arguments, dict) else None
    status = answer.get("status")
    return str(method).upper() != "GET" and isinstance(status, int) and 200 <= status < 300


def implied_call(text: str, specs: list[ToolSpec]) -> ToolCall | None:
    """The call a reply without one means, when the reply holds a JSON object (fenced or on a line of its
    own) that fits exactly one tool's arguments (its required ones all there, no others), or, where
    several fit, the one whose name the text says. A small model wrote "To read, call with method GET"
    and ``{"method": "GET", "url": ...}``: the arguments of ``call`` without the tool's name."""
    for candidate in [m.group(1) for m in FENCED.finditer(text)] + text.splitlines():
        try:
            value = json.loads(candidate.strip())
        except ValueError:
            continue
        if not isinstance(value, dict) or not value:
            continue
        fits = [s for s in specs if _fits(value, s.input_schema)]
        if len(fits) > 1:  # call and validate_call take the same arguments: the one the text names
            fits = [s for s in fits if re.search(rf"(?<![\w-]){re.escape(s.name)}(?![\w-])", text)]
        if len(fits) == 1:
            return ToolCall("call_1", fits[0].name, json.dumps(value))
    return None


def _fits(value: JSONObject, schema: JSONObject) -> bool:
    properties = schema.get("properties")
    required = schema.get("required")
    if not isinstance(properties, dict) or not isinstance(required, list) or not required:
        return False
    return set(value) <= set(properties) and all(name in value for name in required if isinstance(name, str))


def parse_arguments(text: str) -> tuple[JSONValue, list[str]]:
    """The arguments of a call and the numbers with leading zeros read as strings (``"Division": 00`` is no
    JSON, but what a model means by it is the code ``"00"``, as OData keys and codes are strings); a
    text that is not JSON even then raises the parser's error of the text as written. Arguments written
    as a JSON string holding the object (``"{\\"service\\": ...}"``: OpenAI's format keeps arguments as a
    string, and Qwen's chat template shows them so in the conversation) are the object."""
    if not text.strip():
        return {}, []
    try:
        value = json.loads(text)
    except ValueError as exc:
        quoted = LEADING_ZEROS.findall(text)
        if not quoted:
            raise
        try:
            return json.loads(LEADING_ZEROS.sub(r'"\1"', text)), quoted
        except ValueError:
            raise exc from None
    if isinstance(value, str) and value.lstrip().startswith("{"):
        return parse_arguments(value)  # the object written as a JSON string, as the chat template shows it
    return value, []


def not_json(call: ToolCall, exc: ValueError) -> str:
    """The error answer for arguments that do not parse, naming the line the parser stopped on."""
    line = getattr(exc, "lineno", 0)
    text = call.arguments.splitlines()[line - 1].strip() if 0 < line <= len(call.arguments.splitlines()) else ""
    where = f" at {text!r}" if text else ""
    return f"the arguments of {call.name} are not JSON ({exc}){where}: send the call again with valid JSON"


__all__ = ["STATUSES", "Agent", "RunResult", "ToolSet", "Trace"]
