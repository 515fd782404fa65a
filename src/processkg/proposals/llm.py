"""A minimal client of an OpenAI-compatible chat endpoint, for mapping proposals (``kg map propose --llm-url``).

The endpoint is whatever the user names; nothing is contacted unless they do. The API key comes
from ``OPENAI_API_KEY`` and is sent only in the Authorization header, never printed. Answers are
size-capped and parsed leniently; callers fall back to the embedding proposals on any error.
"""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.request
from dataclasses import dataclass, field

from processkg.aliases import JSONValue
from processkg.errors import LLMError
from processkg.proposals.model import ActivityFacts, EntitySetFacts
from processkg.sources.mapping import MODES

MAX_RESPONSE = 1 << 20  # bytes read from an LLM answer


@dataclass(frozen=True)
class LLMSettings:
    url: str
    model: str
    api_key: str | None = field(default=None, repr=False)  # never printed
    candidates: int = 10
    timeout: float = 60.0
    max_tokens: int = 400
    max_failures: int = 3  # consecutive HTTP failures before the LLM is given up

    def endpoint(self) -> str:
        url = self.url.rstrip("/")
        if not re.match(r"https?://", url, re.IGNORECASE):
            raise LLMError(f"--llm-url must be an http:// or https:// URL, not {self.url!r}")
        if url.endswith("/chat/completions"):
            return url
        return url + ("/chat/completions" if url.endswith("/v1") else "/v1/chat/completions")


SYSTEM_PROMPT = (
    "You link steps of business processes to the SAP OData entity sets they read or write. "
    "Given one process step and numbered candidate entity sets, choose the sets the step really "
    "reads or writes (usually one or two; none if none fits) and say for each whether the step "
    "reads or writes it. Answer with JSON only, in this form: "
    '{"edges": [{"candidate": 1, "mode": "write"}]}'
)


def build_messages(activity: ActivityFacts, candidates: list[EntitySetFacts]) -> list[dict[str, str]]:
    lines = [
        f"Process: {activity.process_name or activity.process}",
        f"Lane: {activity.lane or '-'}",
        f"Step: {activity.name}",
        f"Description: {activity.documentation or '-'}",
        "",
        "Candidates:",
    ]
    for k, s in enumerate(candidates, 1):
        flag = "" if s.writable else " [read-only]"
        lines.append(f"{k}. {s.service} / {s.name}{flag}: {s.summary[:300]}")
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": "\n".join(lines)}]


def ask_llm(llm: LLMSettings, messages: list[dict[str, str]]) -> str:
    """The answer text of one chat completion (temperature 0, bounded tokens, time and size)."""
    body = json.dumps(
        {"model": llm.model, "messages": messages, "temperature": 0, "max_tokens": llm.max_tokens}
    ).encode("utf-8")
    headers = {"Content-Type": "application/json"}
    if llm.api_key:
        headers["Authorization"] = f"Bearer {llm.api_key}"
    request = urllib.request.Request(llm.endpoint(), data=body, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=llm.timeout) as response:
            raw = response.read(MAX_RESPONSE + 1)
    except urllib.error.HTTPError as exc:
        raise LLMError(f"HTTP {exc.code}") from None
    except (urllib.error.URLError, OSError, ValueError) as exc:
        raise LLMError(str(getattr(exc, "reason", exc))) from None
    if len(raw) > MAX_RESPONSE:
        raise LLMError(f"answer larger than {MAX_RESPONSE} bytes")
    try:
        return json.loads(raw)["choices"][0]["message"]["content"] or ""
    except (ValueError, KeyError, IndexError, TypeError):
        raise LLMError("not an OpenAI chat completion response") from None


def _json_in(text: str) -> JSONValue:
    """The first JSON object or array in ``text`` (code fences and chatter around it ignored)."""
    decoder = json.JSONDecoder()
    for match in re.finditer(r"[\[{]", text):
        try:
            return decoder.raw_decode(text, match.start())[0]
        except ValueError:
            continue
    raise LLMError("no JSON in the answer")


def parse_choices(text: str, candidates: list[EntitySetFacts]) -> list[tuple[int, str]]:
    """[(candidate index, mode or "")] from an answer; raises LLMError when nothing is usable.

    Accepts {"edges": [...]} (or "choices", "entity_sets", "selected") or a bare list, whose
    items are candidate numbers, set names, "SERVICE/SET", or objects with "candidate" (or
    "index", "number", "id") or "entity_set" (and "service"), and an optional "mode".
    """
    data = _json_in(text)
    if isinstance(data, dict):
        data = next((data[k] for k in ("edges", "choices", "entity_sets", "selected") if k in data), None)
    if not isinstance(data, list):
        raise LLMError("expected a list of edges")
    picks: dict[int, str] = {}
    for item in data:
        k, mode = _pick(item, candidates)
        if k is not None and k not in picks:
            picks[k] = mode
    if data and not picks:
        raise LLMError("no edge names a candidate")
    return list(picks.items())


def _pick(item: JSONValue, candidates: list[EntitySetFacts]) -> tuple[int | None, str]:
    mode = ""
    if isinstance(item, dict):
        raw_mode = str(item.get("mode", "")).strip().lower()
        mode = raw_mode if raw_mode in MODES else ""
        ref = next((item[k] for k in ("candidate", "index", "number", "id") if k in item), None)
        if ref is None and item.get("entity_set"):
            ref = f"{item.get('service', '')}/{item['entity_set']}"
        item = ref
    return _candidate(item, candidates), mode


def _candidate(ref: JSONValue, candidates: list[EntitySetFacts]) -> int | None:
    if isinstance(ref, bool) or ref is None:
        return None
    text = str(ref).strip()
    if re.fullmatch(r"\d+", text):
        k = int(text) - 1
        return k if 0 <= k < len(candidates) else None
    service, _, name = text.rpartition("/")
    for k, s in enumerate(candidates):
        if s.name == name.strip() and (not service.strip() or s.service == service.strip()):
            return k
    return None
