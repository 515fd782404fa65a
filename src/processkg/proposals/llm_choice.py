"""An LLM's choice among the best candidate entity sets of a process step (``kg map propose --llm-url``).

The endpoint is whatever the user names; nothing is contacted unless they do. It is asked through
the one chat client, :mod:`processkg.openai_chat` (the key, from ``OPENAI_API_KEY``, goes only
into the Authorization header, never printed; answers are size-capped). The answer text is parsed
leniently; callers fall back to the embedding proposals on any error.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass

from processkg.aliases import JSONObject, JSONValue
from processkg.errors import LLMError
from processkg.openai_chat import ChatClient, Reply
from processkg.proposals.proposal_facts import ActivityFacts, EntitySetFacts
from processkg.sources.mapping import MODES

#: The prompts of ``kg map propose --llm-prompt``: ``full`` (numbered candidates with their summaries, an
#: answer with a mode per edge) and ``short`` (for small local models: names and labels only, a worked
#: example, an answer of candidate numbers alone, at most :data:`SHORT_PICKS` kept, modes from the verbs).
PROMPTS = ("full", "short")
SHORT_PICKS = 2


@dataclass(frozen=True)
class LLMChoiceSettings:
    """How many of the best candidates the LLM chooses among, with which prompt (:data:`PROMPTS`), how
    many consecutive failed requests give it up, and who hears of each exchange; the endpoint is the
    chat client's settings (temperature 0)."""

    candidates: int = 10
    max_failures: int = 3
    prompt: str = "full"
    #: Called with every exchange (what was asked and answered, tokens, seconds; ``kg map propose --llm-log``).
    record: Callable[[JSONObject], None] | None = None

    def most_picks(self) -> int | None:
        """How many of the answer's picks are kept (in the answer's order): all for ``full``."""
        return SHORT_PICKS if self.prompt == "short" else None


ANSWER_TOKENS = 400  # max_tokens of a choice, unless the chat settings name one


SYSTEM_PROMPT = (
    "You link steps of business processes to the SAP OData entity sets they read or write. "
    "Given one process step and numbered candidate entity sets, choose the sets the step really "
    "reads or writes (usually one or two; none if none fits) and say for each whether the step "
    "reads or writes it. Answer with JSON only, in this form: "
    '{"edges": [{"candidate": 1, "mode": "write"}]}'
)

SHORT_SYSTEM_PROMPT = (
    "You match one step of a business process to the SAP entity sets it works on. "
    "Pick the candidate the step creates, changes or reads: usually exactly one, the business document "
    "itself rather than its items, texts or partners, unless the step is about those. "
    "Reply with a JSON list of candidate numbers, best first, at most two, and nothing else, e.g. [2]. "
    "Reply [] if none fits."
)
#: The worked example of the short prompt: invented, from no process or service of the evaluation.
SHORT_EXAMPLE = (
    "Process: Library membership\nStep: Register the new member\nDescription: Enter the member's name "
    "and address.\n\nCandidates:\n1. MemberAddress: member address\n2. Member: member\n3. Loan: book "
    "loan\n4. MemberNote: member note",
    "[2]",
)
SHORT_TEXT = 120  # characters of a candidate's name and labels in the short prompt


def build_messages(activity: ActivityFacts, candidates: list[EntitySetFacts], prompt: str = "full") -> list[JSONObject]:
    """The chat messages asking the LLM to choose among ``candidates`` for ``activity``."""
    if prompt == "short":
        return _short_messages(activity, candidates)
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


def _short_messages(activity: ActivityFacts, candidates: list[EntitySetFacts]) -> list[JSONObject]:
    lines = [
        f"Process: {activity.process_name or activity.process}",
        f"Step: {activity.name}",
        f"Description: {activity.documentation or '-'}",
        "",
        "Candidates:",
    ]
    for k, s in enumerate(candidates, 1):
        flag = " (read-only)" if not s.writable else ""
        lines.append(f"{k}. {s.name.removeprefix('A_')}{flag}: {s.short[:SHORT_TEXT]}")
    example, answer = SHORT_EXAMPLE
    return [
        {"role": "system", "content": SHORT_SYSTEM_PROMPT},
        {"role": "user", "content": example},
        {"role": "assistant", "content": answer},
        {"role": "user", "content": "\n".join(lines)},
    ]


def ask_llm(client: ChatClient, messages: list[JSONObject]) -> Reply:
    """One chat completion, no tools offered."""
    return client.complete(messages, [])


def reply_text(reply: Reply) -> str:
    """The answer text of a reply."""
    content = reply.message.get("content")
    return content if isinstance(content, str) else ""


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
