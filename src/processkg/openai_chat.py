"""The one client of any OpenAI-compatible chat-completions endpoint (llama.cpp server, Ollama,
vLLM, a hosted API), with tool calling: ``kg agent`` offers tools, ``kg map propose --llm-url``
none.

The key is read by the caller from an environment variable and sent only in the Authorization
header; it never reaches a trace. Answers are size-capped; a server that answers with an error
status, not JSON or no choice raises :class:`~processkg.errors.LLMError` with one line.
Models that write their tool calls into the text (a server without a tool-call parser) are
understood too: Qwen's ``<tool_call>{...}</tool_call>`` form, the same object without its tags, or
in a fenced JSON block, of which only the first counts (see :func:`_fenced_call`). Such a reply goes
back into the conversation as the calls made, each in a fenced block of its own (:func:`written`),
not as the text: a small model shown its own plan of four calls wrote the same four again in every
later turn. The text stays in :attr:`Reply.text` for the trace. A stop sequence (``ChatSettings.stop``, ``--stop``)
can end a reply where a second fenced block would begin, so that the calls the loop drops are not
generated at all.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field

import httpx

from processkg.aliases import JSONObject, JSONValue
from processkg.errors import ContextFullError, LLMError

MAX_ANSWER = 4_000_000  # bytes of one chat completion
#: How endpoints say that the conversation does not fit the model's context (OpenAI, vLLM,
#: llama-cpp-python: "maximum context length"; OpenAI's code; llama.cpp's server).
_CONTEXT_FULL = re.compile(r"maximum context length|context_length_exceeded|exceeds the available context size", re.I)
#: A call whose JSON does not parse, e.g. ``"Division": 00``: its name and the text of its arguments.
_BROKEN_CALL = re.compile(r'^\{\s*"name"\s*:\s*"([A-Za-z_]\w*)"\s*,\s*"arguments"\s*:\s*(.*)\}\s*$', re.DOTALL)
_TAGGED = re.compile(r"<tool_call>\s*(\{.*?\})\s*</tool_call>", re.DOTALL)
FENCED = re.compile(r"```(?:json)?[ \t]*\n(\{.*?\})\s*(?:```|\Z)", re.DOTALL)  # open at the end: cut by --stop


@dataclass(frozen=True)
class ChatSettings:
    url: str
    model: str
    temperature: float = 0.0
    timeout: float = 120.0
    max_tokens: int | None = None
    api_key: str | None = field(default=None, repr=False)  # never printed
    stop: tuple[str, ...] = ()  # stop sequences sent with every completion (none: the endpoint's own)

    def endpoint(self) -> str:
        url = self.url.rstrip("/")
        if not re.match(r"https?://", url, re.IGNORECASE):
            raise LLMError(f"--llm-url must be an http:// or https:// URL, not {self.url!r}")
        if url.endswith("/chat/completions"):
            return url
        return url + ("/chat/completions" if url.endswith("/v1") else "/v1/chat/completions")


@dataclass
class ToolCall:
    id: str
    name: str
    arguments: str  # JSON text, as the model wrote it


@dataclass
class Reply:
    """One assistant turn: its message (as it goes back into the conversation), tool calls, usage."""

    message: JSONObject
    tool_calls: list[ToolCall]
    prompt_tokens: int
    completion_tokens: int
    seconds: float
    finish_reason: str = ""
    text: str = ""  # the reply's text as the model wrote it, when it is not ``message``'s content


class ChatClient:
    def __init__(self, settings: ChatSettings) -> None:
        self.settings = settings
        self.endpoint = settings.endpoint()
        headers = {"Authorization": f"Bearer {settings.api_key}"} if settings.api_key else {}
        self.http = httpx.Client(timeout=settings.timeout, headers=headers)

    def close(self) -> None:
        self.http.close()

    def complete(self, messages: list[JSONObject], tools: list[JSONObject]) -> Reply:
        """One chat completion with ``tools`` offered (``tool_choice: auto``)."""
        body: JSONObject = {
            "model": self.settings.model,
            "messages": messages,
            "temperature": self.settings.temperature,
        }
        if tools:
            body.update(tools=tools, tool_choice="auto")
        if self.settings.max_tokens:
            body["max_tokens"] = self.settings.max_tokens
        if self.settings.stop:
            body["stop"] = list(self.settings.stop)
        start = time.perf_counter()
        try:
            response = self.http.post(self.endpoint, json=body)
        except httpx.HTTPError as exc:
            raise LLMError(f"{self.endpoint}: {type(exc).__name__}: {exc}") from None
        if response.status_code >= 400:
            error = (
                ContextFullError if response.status_code == 400 and _CONTEXT_FULL.search(response.text) else LLMError
            )
            raise error(f"{self.endpoint}: HTTP {response.status_code}: {response.text[:200]}")
        return parse_reply(response.content, time.perf_counter() - start)


def parse_reply(raw: bytes, seconds: float) -> Reply:
    """A chat completion's first choice as a :class:`Reply`."""
    if len(raw) > MAX_ANSWER:
        raise LLMError(f"the chat completion is larger than {MAX_ANSWER} bytes")
    try:
        data = json.loads(raw)
        choice = data["choices"][0]
        message = choice["message"]
    except (ValueError, KeyError, IndexError, TypeError):
        raise LLMError(f"not an OpenAI chat completion: {raw[:200]!r}") from None
    usage = data.get("usage") or {}
    calls = [_call(c, n) for n, c in enumerate(message.get("tool_calls") or [])]
    content = message.get("content") or ""
    if not calls and isinstance(content, str) and "<tool_call>" in content:
        calls = _tagged_calls(content)
    elif not calls and isinstance(content, str):
        calls = _bare_calls(content) or _fenced_call(content) or _line_call(content)
    in_text = bool(calls) and not message.get("tool_calls")
    kept: JSONObject = {"role": "assistant", "content": written(calls) if in_text else content}
    if calls and not in_text:
        kept["tool_calls"] = tool_calls_json(calls)
    return Reply(
        kept,
        calls,
        int(usage.get("prompt_tokens") or 0),
        int(usage.get("completion_tokens") or 0),
        seconds,
        str(choice.get("finish_reason") or ""),
        str(content) if in_text else "",
    )


def tool_calls_json(calls: list[ToolCall]) -> list[JSONValue]:
    """The calls as an assistant message's ``tool_calls`` in OpenAI's format (arguments as a JSON string)."""
    return [{"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}} for c in calls]


def written(calls: list[ToolCall]) -> str:
    """The calls as a model that writes them into its text reads them back: one fenced block each, the
    arguments as an object. (As ``tool_calls``, a chat template such as Qwen's renders the arguments,
    which OpenAI's format keeps as a JSON string, as a quoted string; the model then quoted its
    arguments once more in every turn.)"""
    blocks = []
    for call in calls:
        try:
            arguments: JSONValue = json.loads(call.arguments)
        except ValueError:
            arguments = call.arguments
        blocks.append(
            "```json\n" + json.dumps({"name": call.name, "arguments": arguments}, ensure_ascii=False) + "\n```"
        )
    return "\n".join(blocks)


def _call(item: JSONValue, n: int) -> ToolCall:
    if not isinstance(item, dict) or not isinstance(item.get("function"), dict):
        raise LLMError(f"tool call {n + 1} of the answer is not a function call: {str(item)[:120]}")
    function = item["function"]
    arguments = function.get("arguments")
    text = arguments if isinstance(arguments, str) else json.dumps(arguments if arguments is not None else {})
    return ToolCall(str(item.get("id") or f"call_{n + 1}"), str(function.get("name") or ""), text)


def _bare_calls(content: str) -> list[ToolCall]:
    """Qwen's tool call with its ``<tool_call>`` tags dropped (a server that does not print special
    tokens, such as llama-cpp-python with the model's own chat template): the whole answer is one
    ``{"name": ..., "arguments": {...}}`` object per line, sometimes in one extra pair of braces."""
    calls: list[ToolCall] = []
    for line in content.strip().splitlines():
        item = _call_object(line.strip())
        if item is None:
            return []  # prose: an answer, not a call
        calls.append(ToolCall(f"call_{len(calls) + 1}", item[0], item[1]))
    return calls


def _fenced_call(content: str) -> list[ToolCall]:
    """A call in a fenced JSON block, as Qwen2.5-Coder-1.5B writes under llama-cpp-python: the first
    block, when it is one ``{"name": ..., "arguments": {...}}`` object. The model often goes on with
    more blocks, calls with results it has not seen yet; those are dropped, as a ReAct turn acts once.
    A block that is a call by its shape but not JSON (``"Division": 00``) is still the call: its
    arguments stay the text the model wrote, and the loop answers that they are not JSON, so that the
    model can write them again instead of ending the run with the call as its answer."""
    match = FENCED.search(content)
    if not match:
        return []
    item = _call_object(match.group(1)) or _broken_call(match.group(1))
    return [ToolCall("call_1", item[0], item[1])] if item else []


def _line_call(content: str) -> list[ToolCall]:
    """A call written on a line of its own after prose ("To read, call with method GET ...", then the
    ``{"name": ..., "arguments": {...}}`` line), as Qwen2.5-Coder-1.5B did: the first such line."""
    for line in content.splitlines():
        item = _call_object(line.strip())
        if item is not None:
            return [ToolCall("call_1", item[0], item[1])]
    return []


def _broken_call(text: str) -> tuple[str, str] | None:
    """``{"name": "x", "arguments": ...}`` whose arguments are not JSON: the name and the arguments' text."""
    match = _BROKEN_CALL.match(text.strip())
    return (match.group(1), match.group(2).strip()) if match else None


def _call_object(text: str) -> tuple[str, str] | None:
    for candidate in (text, text[1:-1] if text.startswith("{{") and text.endswith("}}") else ""):
        try:
            item = json.loads(candidate)
        except ValueError:
            continue
        if not isinstance(item, dict) or not set(item) <= {"name", "function", "arguments"}:
            continue
        name = item.get("name", item.get("function"))  # "function" for "name": a small model's slip
        if isinstance(name, str) and len(set(item) & {"name", "function"}) == 1:
            return name, json.dumps(item.get("arguments") or {})
    return None


def _tagged_calls(content: str) -> list[ToolCall]:
    """Qwen's native form in the text: ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>``."""
    calls = []
    for n, match in enumerate(_TAGGED.finditer(content)):
        try:
            item = json.loads(match.group(1))
        except ValueError:
            broken = _broken_call(match.group(1))
            if broken:
                calls.append(ToolCall(f"call_{n + 1}", *broken))
            continue
        if isinstance(item, dict) and isinstance(item.get("name"), str):
            calls.append(ToolCall(f"call_{n + 1}", item["name"], json.dumps(item.get("arguments") or {})))
    return calls
