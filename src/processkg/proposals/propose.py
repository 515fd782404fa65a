"""Propose activity-to-entity-set edges for a person to review (``kg map propose``).

Each entity set is scored against each BPMN activity (name, documentation, lane, process) by a
weighted mean of ``SIGNALS``: ``dense`` (cosine of activity text and set summary, the retrieval
index), ``dense_name`` (cosine of activity name and the set's name and labels), ``lexical``
(BM25 of the activity text over the summaries, over its best score), ``lexical_short`` (BM25 of
name and documentation over names and labels), ``header`` (1 / key count); minus
``unwritable`` when the verb says write and the set is neither creatable nor updatable; plus
the weighted ``CONTEXT`` signals of the activity's process, neighbours and document parts
(``Signals.context``; weight 0 by default: leaving processes out they did not help). Copies
of a set in several services count once, as the copy the reference mapping's conventions
prefer (``_duplicates``). An activity keeps its best ``top_n`` sets scoring at least
``threshold`` and, after the first, ``ratio`` times the first. Verb cues give the mode.
Optionally an OpenAI-compatible endpoint picks among the best ``candidates`` (falling back, with
a warning, on errors). Weights and cut: :func:`tune` on the train half; docs/mapping-proposals.md.
"""

from __future__ import annotations

import json
import logging
import re
from collections import defaultdict
from collections.abc import Callable, Collection, Container, Iterable, Mapping, Sequence
from dataclasses import replace
from itertools import product
from pathlib import Path
from typing import Any, TypeAlias, TypeVar

import numpy as np
import yaml

from processkg.aliases import JSONObject, JSONValue
from processkg.errors import LLMError, MappingError, ProposalError
from processkg.graph.handle import StoreHandle
from processkg.graph.store import StoreGraph, records, write_atomic
from processkg.openai_chat import ChatClient, ChatSettings, Reply
from processkg.proposals.llm_choice import (
    ANSWER_TOKENS,
    LLMChoiceSettings,
    ask_llm,
    build_messages,
    parse_choices,
    reply_text,
)
from processkg.proposals.proposal_facts import ActivityFacts, EntitySetFacts, Proposal, ProposalWeights
from processkg.retrieve.index import Encoder, LoadedIndex, load_index
from processkg.retrieve.lexical import Lexical
from processkg.retrieve.texts import Lexicon, lexicon, type_facts
from processkg.sources.limits import compose_yaml, read_text
from processkg.sources.mapping import MODES, MappingEntry, read_mapping

EdgeKey: TypeAlias = tuple[str, ...]
"""A mapping edge compared with the gold: (process, activity, service, entity set[, mode])."""
_K = TypeVar("_K")  # what ``keep`` keeps: a set row or an edge key

log = logging.getLogger(__name__)

WRITE_VERBS = frozenset(
    [
        "create",
        "post",
        "record",
        "change",
        "enter",
        "add",
        "assign",
        "build",
        "classify",
        "close",
        "complete",
        "correct",
        "install",
        "maintain",
        "move",
        "onboard",
        "pack",
        "pick",
        "plan",
        "raise",
        "reduce",
        "reject",
        "release",
        "remove",
        "request",
        "scrap",
        "staff",
        "update",
        "withdraw",
        "approve",
        "book",
        "block",
        "unblock",
        "cancel",
        "set",
        "register",
        "issue",
        "stage",
        "confirm",
        "code",
        "allocate",
        "convert",
        "extend",
        "delete",
        "reverse",
    ]
)
READ_VERBS = frozenset(
    [
        "check",
        "review",
        "display",
        "monitor",
        "find",
        "look",
        "identify",
        "inspect",
        "verify",
        "explain",
        "clarify",
        "escalate",
        "inform",
        "notify",
        "send",
        "screen",
        "match",
        "report",
        "explode",
        "analyse",
        "analyze",
        "compare",
        "search",
        "read",
        "view",
        "determine",
        "evaluate",
        "list",
        "select",
    ]
)
SKIPPED_KINDS = frozenset({"subProcess", "adHocSubProcess", "transaction"})
HEADER = """\
# PROPOSED activity-to-entity-set edges: NOT reviewed. Every edge needs a person's review.
# Written by `kg map propose` from {store}; settings: {settings}.
# score: the fused similarity of activity and entity set (higher is surer); reason: the signals.
# Delete the wrong edges, fix the modes, add what is missing; the file is then a mapping for
# `kg build --mapping` (which ignores score and reason). See docs/mapping-proposals.md.
"""


# ---------------------------------------------------------------- reading the store


def read_activities(store: StoreGraph) -> list[ActivityFacts]:
    """The activities proposals are made for (not sub-process containers), in a fixed order."""
    out = []
    for r in records(store, "propose-activities"):
        if r["kind"] in SKIPPED_KINDS:
            continue
        out.append(
            ActivityFacts(
                r["activity"],
                r["activityId"],
                r["name"] or r["activityId"],
                r["documentation"] or "",
                r["lane"] or "",
                r["processId"],
                r["processName"] or "",
                r["file"],
            )
        )
    return out


def read_sets(store: StoreGraph, index_sets: list[JSONObject], lex: Lexicon | None = None) -> list[EntitySetFacts]:
    """The entity sets of the index, in index order, with the facts the scores need."""

    lex, facts = lex or lexicon(store), type_facts(store)
    flags = {r["set"]: r for r in records(store, "propose-sets")}
    labels = {r["set"]: (r["label"], r["typeLabel"]) for r in records(store, "retrieve-sets")}
    out = []
    for item in index_sets:
        meta = flags.get(item["iri"], {})
        words = [lex.phrase(item["name"])] + [x for x in dict.fromkeys(labels.get(item["iri"], ())) if x]
        writable = not (meta.get("creatable") is False and meta.get("updatable") is False)
        known = facts.get(item["type_iri"])
        keys = max(1, len(known.keys)) if known else 1
        fields = [_field_text(lex, name, label) for name, label in (known.keys if known else [])]
        fields += [_field_text(lex, name, label, text) for name, label, text in (known.props if known else [])]
        out.append(
            EntitySetFacts(
                item["iri"],
                item["service"],
                item["name"],
                _version(meta.get("odataVersion")),
                writable,
                keys,
                ". ".join(words),
                item["text"],
                ". ".join(fields),
            )
        )
    return out


def _field_text(lex: Lexicon, name: str, label: str | None, description: str | None = None) -> str:
    """A property as words: its name as words, then its label and its description (``sap:quickinfo``,
    ``Common.QuickInfo``, ``Core.Description``) where they say something else."""
    phrase = lex.phrase(name)
    said = [phrase]
    for text in (label, description):
        if text and text.lower() not in said:
            said.append(text.lower())
    return said[0] + (f" ({'; '.join(said[1:])})" if len(said) > 1 else "")


def _version(value: JSONValue) -> float:
    return float(value) if re.fullmatch(r"\d+(\.\d+)?", str(value)) else 9.0


def verb_mode(activity: ActivityFacts) -> tuple[str, str]:
    """(mode, cue word): the first cue verb of the name decides; none found means read."""
    for word in re.findall(r"[a-z]+", activity.name.lower()):
        if word in WRITE_VERBS:
            return "write", word
        if word in READ_VERBS:
            return "read", word
    return "read", ""


# ---------------------------------------------------------------- signals and scores

SIGNALS = ("dense", "dense_name", "lexical", "lexical_short", "header")
#: Signals of an activity's context, added to the fused score of :data:`SIGNALS` (``Signals.context``).
CONTEXT = ("process_service", "item", "neighbour", "known")
#: Signals of the metadata beyond names and summaries (``Signals.metadata``): features of the learned scorer.
METADATA = ("operation_verb", "operation_words", "fields_lexical")
#: Words that say nothing of a step's object (``content_words``).
STOP_WORDS = frozenset(
    ["the", "a", "an", "of", "for", "to", "and", "in", "on", "with", "by", "from", "its", "their", "it"]
)
#: How many of an activity's best sets vote for their services in ``process_service``.
SERVICE_VOTES = 3


class Signals:
    """The five signal matrices (activities x sets) of one store, computed once, and the relations
    the context signals walk: the process of each activity, its neighbours along ``bpmn:next``, the
    service and the document (``propose-items``) of each set, the document flow inferred from the
    metadata, and the mapping edges the store already has."""

    def __init__(self, handle: StoreHandle, model: str | None = None) -> None:
        index = load_index(handle)
        if model and Encoder(model).id != index.model:
            raise ProposalError(f"the index of {handle} was built with {index.model}, not {model}")
        store = handle.graph
        lex = lexicon(store)
        self.activities = read_activities(store)
        self.sets = read_sets(store, index.items["set"], lex)
        del store
        encoder = Encoder(index.model)
        texts = [a.text() for a in self.activities]
        shorts = [s.short for s in self.sets]
        self.matrix = {
            "dense": _activity_vectors(index, encoder, self.activities, texts) @ index.vectors["set"].T,
            "dense_name": encoder.encode([a.name for a in self.activities]) @ encoder.encode(shorts).T,
            "lexical": _bm25(Lexical.of_texts([s.summary for s in self.sets]), texts),
            "lexical_short": _bm25(Lexical.of_texts(shorts), [f"{a.name}. {a.documentation}" for a in self.activities]),
            "header": np.tile(np.array([1.0 / s.keys for s in self.sets], np.float32), (len(texts), 1)),
        }
        self.modes = [verb_mode(a) for a in self.activities]
        self.writable = np.array([s.writable for s in self.sets])
        self.canonical = {mode: _duplicates(self.sets, mode == "write") for mode in MODES}
        self._relations(handle.graph, encoder)
        self.metadata = self._metadata(handle.graph, lex)

    def _relations(self, store: StoreGraph, encoder: Encoder) -> None:
        set_row = {s.iri: j for j, s in enumerate(self.sets)}
        act_row = {a.iri: i for i, a in enumerate(self.activities)}
        processes = sorted({a.process for a in self.activities})
        self.process = np.array([processes.index(a.process) for a in self.activities], dtype=np.int64)
        services = sorted({s.service for s in self.sets})
        self.service = np.zeros((len(self.sets), len(services)), dtype=np.float32)
        self.service[np.arange(len(self.sets)), [services.index(s.service) for s in self.sets]] = 1.0
        #: per set row: the rows of the documents it is a part of
        self.documents: list[list[int]] = [[] for _ in self.sets]
        for r in records(store, "propose-items"):
            if r["header"] in set_row and r["item"] in set_row:
                self.documents[set_row[r["item"]]].append(set_row[r["header"]])
        #: per set row: itself, and the rows of the sets it follows or that follow it
        self.related: list[list[int]] = [[j] for j in range(len(self.sets))]
        #: per set row: the rows of the sets it follows in the inferred flow, and of those that follow it
        self.follows: list[list[int]] = [[] for _ in self.sets]
        self.followed_by: list[list[int]] = [[] for _ in self.sets]
        for r in records(store, "retrieve-flow"):
            if r["from"] in set_row and r["to"] in set_row:
                self.related[set_row[r["from"]]].append(set_row[r["to"]])
                self.related[set_row[r["to"]]].append(set_row[r["from"]])
                self.follows[set_row[r["to"]]].append(set_row[r["from"]])
                self.followed_by[set_row[r["from"]]].append(set_row[r["to"]])
        self.neighbours: list[list[int]] = [[] for _ in self.activities]
        for r in records(store, "retrieve-next"):
            a, b = act_row.get(r["from"]), act_row.get(r["to"])
            if a is not None and b is not None and a != b:
                self.neighbours[a].append(b)
                self.neighbours[b].append(a)
        self.uses = [
            (act_row[r["activity"]], set_row[r["set"]])
            for r in records(store, "retrieve-uses")
            if r["activity"] in act_row and r["set"] in set_row
        ]
        self.names = encoder.encode([a.name for a in self.activities]) if self.activities else np.zeros((0, 1))
        self.matrix["known"] = self.known(self.uses)

    def _metadata(self, store: StoreGraph, lex: Lexicon) -> dict[str, np.ndarray]:
        """Activities x sets, the :data:`METADATA` signals: ``operation_verb``, 1 where the step's verb
        (its cue verb, else its first word) begins the name of an operation acting on the set
        (``propose-operations``); ``operation_words``, the largest share of an operation's words
        (name as words, abbreviations expanded) found in the step's name and documentation;
        ``fields_lexical``, BM25 of name and documentation over every property of the set (name as
        words and label), over the activity's best."""
        set_row = {s.iri: j for j, s in enumerate(self.sets)}
        operations: list[set[str]] = [set() for _ in self.sets]
        for r in records(store, "propose-operations"):
            if r["set"] in set_row:
                operations[set_row[r["set"]]].add(lex.phrase(r["name"]))
        steps = [f"{a.name}. {a.documentation}" for a in self.activities]
        step_words = [set(content_words(t)) for t in steps]
        verbs = [
            cue or next(iter(re.findall(r"[a-z]+", a.name.lower())), "")
            for a, (_, cue) in zip(self.activities, self.modes)
        ]
        verb = np.zeros((len(self.activities), len(self.sets)), dtype=np.float32)
        share = np.zeros_like(verb)
        for j, names in enumerate(operations):
            for name in names:
                first = name.split()[0] if name.split() else ""
                words = set(content_words(name))
                for i, step in enumerate(step_words):
                    if first and verbs[i] == first:
                        verb[i, j] = 1.0
                    if words:
                        share[i, j] = max(share[i, j], len(words & step) / len(words))
        fields = _bm25(Lexical.of_texts([s.fields for s in self.sets]), steps)
        return {"operation_verb": verb, "operation_words": share, "fields_lexical": fields}

    def know(self, entries: Iterable[MappingEntry]) -> None:
        """Let ``known`` draw on these mapping edges instead of the store's (those that name an
        activity and a set of the store)."""
        act_row = {(a.process, a.id): i for i, a in enumerate(self.activities)}
        set_row = {(s.service, s.name): j for j, s in enumerate(self.sets)}
        pairs = [(act_row.get((e.process, e.activity)), set_row.get((e.service, e.entity_set))) for e in entries]
        self.matrix["known"] = self.known([(i, j) for i, j in pairs if i is not None and j is not None])

    def known(self, uses: Sequence[tuple[int, int]]) -> np.ndarray:
        """Activities x sets: the name similarity of the most similar activity of *another* process
        that the mapping links to the set (0 where none is)."""
        out = np.zeros((len(self.activities), len(self.sets)), dtype=np.float32)
        if not uses:
            return out
        sim = np.clip(self.names @ self.names.T, 0.0, 1.0)
        for b, j in uses:
            other = self.process != self.process[b]
            out[other, j] = np.maximum(out[other, j], sim[other, b])
        return out

    def context(self, base: np.ndarray, settings: ProposalWeights) -> np.ndarray:
        """Activities x sets: the weighted context signals of the fused scores ``base``:
        ``process_service``, the share of the process's votes (each activity's best
        :data:`SERVICE_VOTES` sets, by score) that go to the set's service, over the best service's;
        ``item``, the best score of a document the set is a part of; ``neighbour``, the best score,
        for an activity right before or after, of the set or of a set it follows or that follows it
        in the inferred flow; ``known``, :meth:`known` of the store's mapping edges."""
        out = settings.known * self.matrix["known"]
        if settings.process_service:
            out = out + settings.process_service * self._process_service(base)
        if settings.item:
            out = out + settings.item * _column_max(base, self.documents)
        if settings.neighbour:
            near = np.zeros_like(base)
            for i, others in enumerate(self.neighbours):
                if others:
                    near[i] = base[others].max(axis=0)
            out = out + settings.neighbour * _column_max(near, self.related)
        return out

    def _process_service(self, base: np.ndarray) -> np.ndarray:
        votes = np.zeros_like(base)
        top = np.argsort(-base, axis=1, kind="stable")[:, :SERVICE_VOTES]
        rows = np.arange(len(base))[:, None]
        votes[rows, top] = np.maximum(base[rows, top], 0.0)
        by_service = votes @ self.service  # activities x services
        out = np.zeros_like(base)
        for p in np.unique(self.process):
            mine = self.process == p
            share = by_service[mine].sum(axis=0)
            share = share / max(float(share.max()), 1e-9)
            out[mine] = (self.service @ share)[None, :]
        return out

    def copies(self, row: int, mode: str) -> list[int]:
        """The other copies of the set in ``row``, when it is the preferred copy for ``mode``."""
        canonical = self.canonical[mode]
        return [r for r in np.flatnonzero(canonical == row).tolist() if r != row] if canonical[row] == row else []

    def scores(self, settings: ProposalWeights) -> np.ndarray:
        total = sum(getattr(settings, name) for name in SIGNALS)
        fused = sum(getattr(settings, name) * self.matrix[name] for name in SIGNALS) / total
        writes = np.array([mode == "write" for mode, _ in self.modes])
        fused = fused - settings.unwritable * np.outer(writes, ~self.writable)
        fused = fused + self.context(fused, settings)
        if settings.dedupe:
            fused[writes] = _collapse(fused[writes], self.canonical["write"])
            fused[~writes] = _collapse(fused[~writes], self.canonical["read"])
        return fused


def content_words(text: str) -> list[str]:
    """The lower-case words of ``text`` longer than two letters, without :data:`STOP_WORDS`, a plural
    ``s`` stripped."""
    return [
        w[:-1] if w.endswith("s") else w
        for w in re.findall(r"[a-z]+", text.lower())
        if w not in STOP_WORDS and len(w) > 2
    ]


def _column_max(scores: np.ndarray, sources: list[list[int]]) -> np.ndarray:
    """Column j: the best non-negative score in ``scores`` of the columns ``sources[j]`` (0 if none)."""
    out = np.zeros_like(scores)
    for j, rows in enumerate(sources):
        if rows:
            out[:, j] = np.maximum(scores[:, rows].max(axis=1), 0.0)
    return out


def _activity_vectors(
    index: LoadedIndex, encoder: Encoder, activities: list[ActivityFacts], texts: list[str]
) -> np.ndarray:
    """The index's vectors of the activity texts; texts the index lacks are encoded."""
    known = {(item["iri"], item["text"]): row for row, item in enumerate(index.items["activity"])}
    rows = [known.get((a.iri, t)) for a, t in zip(activities, texts)]
    missing = [k for k, row in enumerate(rows) if row is None]
    vectors = np.zeros((len(texts), index.dim), dtype=np.float32)
    if len(rows) > len(missing):
        found = [k for k, row in enumerate(rows) if row is not None]
        vectors[found] = index.vectors["activity"][[row for row in rows if row is not None]]
    if missing:
        vectors[missing] = encoder.encode([texts[k] for k in missing])
    return vectors


def _bm25(lexical: Lexical, queries: list[str]) -> np.ndarray:
    scores = np.stack([lexical.scores(q) for q in queries]) if queries else np.zeros((0, lexical.size))
    return (scores / np.maximum(scores.max(axis=1, keepdims=True), 1e-9)).astype(np.float32)


def _norm_name(name: str) -> str:
    return re.sub(r"^a_", "", name.lower())


def _service_core(service: str) -> str:
    """``API_COSTCENTER_SRV`` -> ``costcenter``: the service name without SAP affixes."""
    core = re.sub(r"^(sap-s4-)?(OP_)?(API_|CE_)?", "", service)
    core = re.sub(r"(_SRV|_PROCESS|_\d+|-v\d+)+$", "", core)
    return re.sub(r"[^a-z]", "", core.lower())


def _duplicates(sets: list[EntitySetFacts], writable_first: bool = False) -> np.ndarray:
    """Row -> the row of the preferred copy of its set (copies: one set name, several services).

    Preferred: a writable copy (for a step that writes), the service named after the set, OData
    V2 before V4, the service with more entity sets: the conventions of the reference mapping.
    """
    size: dict[str, int] = defaultdict(int)
    groups = defaultdict(list)
    for row, s in enumerate(sets):
        size[s.service] += 1
        groups[_norm_name(s.name)].append(row)

    def preference(row: int) -> tuple[bool, bool, float, int, str, int]:
        s = sets[row]
        home = _service_core(s.service) in _norm_name(s.name).replace("_", "")
        return (writable_first and not s.writable, not home, s.version, -size[s.service], s.service, row)

    canonical = np.arange(len(sets))
    for rows in groups.values():
        if len({sets[r].service for r in rows}) > 1:
            canonical[rows] = min(rows, key=preference)
    return canonical


def _collapse(fused: np.ndarray, canonical: np.ndarray) -> np.ndarray:
    """Each group of copies scores as its best copy, on the preferred row; the others drop out."""
    out = fused.copy()
    for best in np.unique(canonical):
        rows = np.flatnonzero(canonical == best)
        if len(rows) > 1:
            out[:, best] = fused[:, rows].max(axis=1)
            out[:, rows[rows != best]] = -np.inf
    return out


def ranked(scores: np.ndarray, i: int, n: int) -> list[int]:
    """The ``n`` best set rows of activity ``i`` (ties by row)."""
    row = scores[i]
    order = np.lexsort((np.arange(len(row)), -row))[:n]
    return [int(j) for j in order if np.isfinite(row[j])]


def keep(top: list[tuple[_K, float]], n: int, threshold: float, ratio: float) -> list[_K]:
    """The items of ``top`` ((item, score), best first) within the first ``n`` that score at
    least ``threshold`` and, after the first, at least ``ratio`` times the first."""
    if not top or top[0][1] < threshold:
        return []
    return [top[0][0]] + [k for k, score in top[1:n] if score >= threshold and score >= ratio * top[0][1]]


def chosen(scores: np.ndarray, i: int, settings: ProposalWeights) -> list[int]:
    """The set rows kept for activity ``i``."""
    top = [(j, float(scores[i, j])) for j in ranked(scores, i, settings.top_n)]
    return keep(top, settings.top_n, settings.threshold, settings.ratio)


# ---------------------------------------------------------------- proposals


def propose(
    handle: StoreHandle | None,
    settings: ProposalWeights | None = None,
    model: str | None = None,
    llm: ChatSettings | None = None,
    warn: Callable[[str], None] | None = None,
    signals: Signals | None = None,
    llm_choice: LLMChoiceSettings | None = None,
    scores: np.ndarray | None = None,
    processes: Collection[str] | None = None,
) -> list[Proposal]:
    """Proposed edges for every activity of the store (of the ``processes`` named, if given), best
    first within each activity; with ``llm``, that endpoint chooses among each activity's best
    candidates (``llm_choice``). Given ``scores`` (activities x sets, such as a learned scorer's),
    they replace the weighted signals of ``settings``, whose cut still applies. The scores are those
    of the whole store either way: the context of a process is the same whether or not others are
    proposed for."""
    settings = (settings or ProposalWeights()).check()
    warn = warn or log.warning
    if llm is not None:
        llm.endpoint()  # a bad URL fails before any work
    if signals is None:
        if handle is None:
            raise ProposalError("propose needs a store or its signals")
        signals = Signals(handle, model)
    rows = _rows_of(signals, processes)
    if scores is None:
        scores = signals.scores(settings)
    fallback = {i: [_proposal(signals, scores, i, j, settings) for j in chosen(scores, i, settings)] for i in rows}
    if llm is not None:
        chat = replace(llm, max_tokens=llm.max_tokens or ANSWER_TOKENS)
        fallback = _with_llm(signals, scores, settings, chat, llm_choice or LLMChoiceSettings(), fallback, warn)
    return [p for i in rows for p in fallback[i]]


def _rows_of(signals: Signals, processes: Collection[str] | None) -> list[int]:
    """The activity rows of ``processes`` (all when None); a process id the store lacks is an error."""
    if processes is None:
        return list(range(len(signals.activities)))
    known = {a.process for a in signals.activities}
    missing = sorted(set(processes) - known)
    if missing:
        raise ProposalError(f"no process {', '.join(missing)} in the store (its processes: {', '.join(sorted(known))})")
    return [i for i, a in enumerate(signals.activities) if a.process in processes]


def _proposal(
    signals: Signals,
    scores: np.ndarray,
    i: int,
    j: int,
    settings: ProposalWeights,
    mode: str | None = None,
    via: str = "",
) -> Proposal:
    a, s = signals.activities[i], signals.sets[j]
    verb_based, cue = signals.modes[i]
    why = ([via] if via else []) + [", ".join(f"{n} {float(signals.matrix[n][i, j]):.2f}" for n in SIGNALS)]
    if (mode or verb_based) == "write" and not s.writable:
        why.append("read: the set is neither creatable nor updatable")
    else:
        why.append(f"{mode}: the LLM" if mode else f"{verb_based}: verb '{cue}'" if cue else "read: no verb cue")
    mode = "read" if not s.writable else mode or verb_based
    copies = signals.copies(j, verb_based)
    if settings.dedupe and copies:
        why.append("also in " + ", ".join(signals.sets[c].service for c in copies))
    return Proposal(
        a.process,
        a.id,
        s.service,
        s.name,
        mode,
        round(float(scores[i, j]), 4),
        "; ".join(why),
        Path(a.file).name,
        a.name,
    )


# ---------------------------------------------------------------- LLM


def _with_llm(
    signals: Signals,
    scores: np.ndarray,
    settings: ProposalWeights,
    llm: ChatSettings,
    choice: LLMChoiceSettings,
    fallback: dict[int, list[Proposal]],
    warn: Callable[[str], None],
) -> dict[int, list[Proposal]]:
    client = ChatClient(llm)
    try:
        return _choose(signals, scores, settings, client, choice, fallback, warn)
    finally:
        client.close()


def _choose(
    signals: Signals,
    scores: np.ndarray,
    settings: ProposalWeights,
    client: ChatClient,
    choice: LLMChoiceSettings,
    fallback: dict[int, list[Proposal]],
    warn: Callable[[str], None],
) -> dict[int, list[Proposal]]:
    out, failures = dict(fallback), 0
    for i in fallback:
        activity = signals.activities[i]
        if failures >= choice.max_failures:
            warn(
                f"the LLM endpoint failed {failures} times in a row; the remaining activities keep the "
                "embedding proposals"
            )
            break
        rows = ranked(scores, i, choice.candidates)
        candidates = [signals.sets[j] for j in rows]
        messages = build_messages(activity, candidates, choice.prompt)
        try:
            reply = ask_llm(client, messages)
            failures = 0
        except LLMError as exc:
            failures += 1
            warn(f"{activity.process}/{activity.id}: LLM request failed ({exc}); using the embedding proposals")
            _record(choice, activity, candidates, messages, None, f"request failed: {exc}")
            continue
        answer = reply_text(reply)
        try:
            picks = parse_choices(answer, candidates)
        except LLMError as exc:
            warn(f"{activity.process}/{activity.id}: unusable LLM answer ({exc}); using the embedding proposals")
            _record(choice, activity, candidates, messages, reply, f"unusable: {exc}")
            continue
        picks = sorted(picks[: choice.most_picks()])
        _record(choice, activity, candidates, messages, reply, "", picks)
        out[i] = [
            _proposal(
                signals,
                scores,
                i,
                rows[k],
                settings,
                mode or None,
                f"llm {client.settings.model}: candidate {k + 1} of {len(rows)}",
            )
            for k, mode in picks
        ]
    return out


def _record(
    choice: LLMChoiceSettings,
    activity: ActivityFacts,
    candidates: list[EntitySetFacts],
    messages: list[JSONObject],
    reply: Reply | None,
    problem: str,
    picks: Sequence[tuple[int, str]] = (),
) -> None:
    """One exchange with the LLM for ``choice.record``, if set: what was asked, what came back, the
    tokens and seconds the endpoint reported, the picks (candidate number from 1, mode) or the problem."""
    if choice.record is None:
        return
    choice.record(
        {
            "process": activity.process,
            "activity": activity.id,
            "candidates": [f"{s.service}/{s.name}" for s in candidates],
            "prompt": messages[-1]["content"],
            "answer": reply_text(reply) if reply else None,
            "prompt_tokens": reply.prompt_tokens if reply else None,
            "completion_tokens": reply.completion_tokens if reply else None,
            "seconds": round(reply.seconds, 3) if reply else None,
            "picks": [[k + 1, mode] for k, mode in picks],
            "problem": problem,
        }
    )


# ---------------------------------------------------------------- files

_PLAIN = re.compile(r"^[A-Za-z_][\w.\-]*$")


def _scalar(value: JSONValue) -> str:
    if isinstance(value, float):
        return f"{value:.4f}"
    text = str(value)
    return (
        text
        if _PLAIN.fullmatch(text) and text.lower() not in ("true", "false", "null", "yes", "no")
        else json.dumps(text, ensure_ascii=False)
    )


def render_proposals(proposals: list[Proposal], store: str = "", settings: ProposalWeights | None = None) -> str:
    """The proposals as a mapping file with ``score`` and ``reason``, grouped by activity."""
    files = defaultdict(set)
    for p in proposals:
        files[p.process].add(p.file)
    out = [HEADER.format(store=store or "a store", settings=(settings or ProposalWeights()).describe()), "mappings:"]
    current = None
    for p in proposals:
        if (p.process, p.activity) != current:
            current = (p.process, p.activity)
            out += ["", f"  # ---- {p.process} / {p.activity_name or p.activity}"]
        out.append(f"  - process: {_scalar(p.process)}")
        keys = ["activity", "service", "entity_set", "mode"] + (["file"] if len(files[p.process]) > 1 else [])
        out += [f"    {k}: {_scalar(getattr(p, k))}" for k in keys]
        out += [f"    score: {_scalar(float(p.score))}", f"    reason: {_scalar(p.reason)}"]
    return "\n".join(out) + "\n"


def write_proposals(
    path: Path, proposals: list[Proposal], store: str = "", settings: ProposalWeights | None = None
) -> None:
    write_atomic(Path(path), render_proposals(proposals, store, settings).encode("utf-8"))


def read_proposals(path: Path) -> list[Proposal]:
    """A proposals file (or any mapping file: score 0, no reason) as proposals."""
    entries = read_mapping(Path(path))
    text = read_text(path, "mapping", str(path), MappingError)
    compose_yaml(text, str(path), MappingError)  # bounded depth, no aliases: safe to construct
    try:
        raw = (yaml.safe_load(text) or {}).get("mappings") or []
    except (yaml.YAMLError, AttributeError) as exc:
        raise MappingError(f"cannot read proposals: {exc}", str(path)) from None
    out = []
    for entry, item in zip(entries, raw):
        try:
            score = float(item.get("score", 0.0))
        except (TypeError, ValueError):
            raise MappingError(f"score {item.get('score')!r} is not a number", str(path), entry.line) from None
        out.append(
            Proposal(
                entry.process,
                entry.activity,
                entry.service,
                entry.entity_set,
                entry.mode,
                score,
                str(item.get("reason", "")),
                entry.file,
            )
        )
    return out


# ---------------------------------------------------------------- evaluation


def split_processes(processes: Iterable[str]) -> tuple[list[str], list[str]]:
    """(train, test): the process ids sorted, alternately train and test (train first)."""
    ordered = sorted(set(processes))
    return ordered[0::2], ordered[1::2]


def _rates(tp: int, proposed: int, gold: int) -> tuple[float, float, float]:
    """(precision, recall, F1) of ``tp`` true edges among ``proposed``, against ``gold`` edges."""
    p = tp / proposed if proposed else 0.0
    r = tp / gold if gold else 0.0
    return p, r, 2 * p * r / (p + r) if p + r else 0.0


def _prf(proposed: set[EdgeKey], gold: set[EdgeKey]) -> dict[str, float]:
    tp = len(proposed & gold)
    p, r, f = _rates(tp, len(proposed), len(gold))
    return {
        "precision": round(p, 4),
        "recall": round(r, 4),
        "f1": round(f, 4),
        "tp": tp,
        "fp": len(proposed - gold),
        "fn": len(gold - proposed),
        "proposed": len(proposed),
        "gold": len(gold),
    }


def _keys(
    items: Iterable[Proposal] | Iterable[MappingEntry], with_mode: bool, processes: Container[str]
) -> set[EdgeKey]:
    return {
        (x.process, x.activity, x.service, x.entity_set) + ((x.mode,) if with_mode else ())
        for x in items
        if x.process in processes
    }


def edge_quality(proposals: list[Proposal], gold_entries: list[MappingEntry], processes: Collection[str]) -> JSONObject:
    """P, R, F1 (and counts) of the proposals of ``processes`` against their gold edges, ignoring
    and with the mode."""
    chosen = set(processes)
    return {
        label: _prf(_keys(proposals, with_mode, chosen), _keys(gold_entries, with_mode, chosen))
        for label, with_mode in (("edges", False), ("edges_with_mode", True))
    }


def evaluate_mapping(proposals: list[Proposal], gold_entries: list[MappingEntry]) -> JSONObject:
    """Edge precision, recall and F1 against a gold mapping: without and with the mode, per
    split (``split_processes`` over the gold's processes), per mode and per process.

    Only the processes of the gold mapping count; activities are compared as written
    (element id or name), so proposals and gold must name them the same way.
    """
    processes = sorted({g.process for g in gold_entries})
    train, test = split_processes(processes)
    groups = {"all": set(processes), "train": set(train), "test": set(test)}
    result: JSONObject = {
        "split": {"rule": "process ids sorted, alternately train and test (train first)", "train": train, "test": test}
    }
    for label, with_mode in (("edges", False), ("edges_with_mode", True)):
        result[label] = {
            g: _prf(_keys(proposals, with_mode, ps), _keys(gold_entries, with_mode, ps)) for g, ps in groups.items()
        }
    result["by_mode"] = {
        m: _prf(
            _keys([p for p in proposals if p.mode == m], True, groups["all"]),
            _keys([g for g in gold_entries if g.mode == m], True, groups["all"]),
        )
        for m in MODES
    }
    result["by_process"] = {
        p: {
            "split": "train" if p in groups["train"] else "test",
            "edges": _prf(_keys(proposals, False, {p}), _keys(gold_entries, False, {p})),
            "edges_with_mode": _prf(_keys(proposals, True, {p}), _keys(gold_entries, True, {p})),
        }
        for p in processes
    }
    found = _keys(proposals, False, groups["all"]) & _keys(gold_entries, False, groups["all"])
    agree = _keys(proposals, True, groups["all"]) & _keys(gold_entries, True, groups["all"])
    result["mode_accuracy"] = round(len(agree) / len(found), 4) if found else 0.0
    return result


TUNE_GRID = {
    "top_n": (1, 2, 3),
    "threshold": tuple(round(0.025 * k, 3) for k in range(33)),
    "ratio": (0.0, 0.8, 0.85, 0.9, 0.95),
}
#: The weights tried by ``tune(..., weights=WEIGHT_GRID)`` (``kg map tune --weights``), in this order.
WEIGHT_GRID = {
    "dense": (0.5, 1.0),
    "dense_name": (0.0, 0.5, 1.0),
    "lexical": (0.5, 1.0),
    "lexical_short": (0.0, 0.5, 1.0),
    "header": (0.0, 0.2, 0.4),
    "unwritable": (0.1, 0.2, 0.4),
}


#: The context weights tried by ``kg map tune --folds --context``, on top of the chosen signal weights.
CONTEXT_GRID = {
    "process_service": (0.0, 0.1, 0.2),
    "item": (0.0, 0.1, 0.2),
    "neighbour": (0.0, 0.1, 0.2),
    "known": (0.0, 0.1, 0.2),
}


def tune(
    signals: Signals,
    gold_entries: list[MappingEntry],
    base: ProposalWeights | None = None,
    grid: Mapping[str, Sequence[float]] | None = None,
    weights: Mapping[str, Sequence[float]] | None = None,
    on: Collection[str] | None = None,
) -> JSONObject:
    """Choose ``top_n``, ``threshold`` and ``ratio`` (and, given a grid of ``weights``, the signal
    weights) by edge F1 on the processes ``on`` (default: the train half of the gold's processes);
    evaluate the choice on train, test and all. Ties go to fewer sets, a higher threshold and
    ratio, then the earlier weights."""
    base, grid = base or ProposalWeights(), grid or TUNE_GRID
    train = set(on) if on is not None else set(split_processes({g.process for g in gold_entries})[0])
    gold = _keys(gold_entries, False, train)
    rows = [i for i, a in enumerate(signals.activities) if a.process in train]
    best_key: tuple[float, ...] = (-1.0,)
    best = base
    for settings in _weight_settings(base, weights):
        tops = _tops(signals, signals.scores(settings), rows, int(max(grid["top_n"])))
        f1s = _Kept(tops, gold).f1s(grid)
        for top_n, threshold, ratio in product(grid["top_n"], grid["threshold"], grid["ratio"]):
            n = int(top_n)
            f1 = f1s[(n, threshold, ratio)]
            if (f1, -n, threshold, ratio) > best_key:
                best_key = (f1, -n, threshold, ratio)
                best = replace(settings, top_n=n, threshold=threshold, ratio=ratio)
    proposals = propose(None, best, signals=signals)
    return {"settings": best, "train_f1": best_key[0], "evaluation": evaluate_mapping(proposals, gold_entries)}


class _Kept:
    """The edge F1 of :func:`keep` over the ``tops`` of every activity, for every (n, threshold, ratio)
    of a tuning grid at once: the tops as arrays, so that numpy counts what each setting keeps instead
    of collecting its edge set (the grid has 495 settings, tried for each weight setting). The counts
    are those of ``_prf`` on the set of kept edges: every edge key of ``tops`` is distinct (checked;
    if not, the sets are collected)."""

    def __init__(self, tops: list[list[tuple[EdgeKey, float]]], gold: set[EdgeKey]) -> None:
        width = max((len(top) for top in tops), default=0) or 1
        self.tops, self.gold = tops, gold
        self.scores = np.full((len(tops), width), -1e30)  # finite: no 0 * inf below
        self.valid = np.zeros((len(tops), width), dtype=bool)
        self.in_gold = np.zeros((len(tops), width), dtype=bool)
        for a, top in enumerate(tops):
            for b, (key, score) in enumerate(top):
                self.scores[a, b], self.valid[a, b], self.in_gold[a, b] = score, True, key in gold
        self.distinct = len({key for top in tops for key, _score in top}) == int(self.valid.sum())
        self._f1: dict[tuple[int, int], float] = {}

    def f1s(self, grid: Mapping[str, Sequence[float]]) -> dict[tuple[int, float, float], float]:
        """``{(n, threshold, ratio): _prf({k for top in tops for k in keep(top, n, threshold, ratio)}, gold)["f1"]}``
        over ``grid`` (``top_n``, ``threshold``, ``ratio``)."""
        settings = [(int(n), t, r) for n, t, r in product(grid["top_n"], grid["threshold"], grid["ratio"])]
        if not self.distinct:
            return {
                (n, t, r): _prf({k for top in self.tops for k in keep(top, n, t, r)}, self.gold)["f1"]
                for n, t, r in settings
            }
        thresholds, ratios = np.array(grid["threshold"], dtype=float), np.array(grid["ratio"], dtype=float)
        first, rest = self.scores[:, 0], self.scores[:, 1:]
        lead = self.valid[:, 0] & (first >= thresholds[:, None])  # [threshold, activity]
        more = (  # [threshold, ratio, activity, rank after the first]
            self.valid[None, None, :, 1:]
            & lead[:, None, :, None]
            & (rest >= thresholds[:, None, None])[:, None]
            & (rest >= ratios[:, None, None] * first[None, :, None])[None]
        )
        # kept and true edges among the first n: the lead, and the ranks 2..n after it
        kept_more = np.concatenate([np.zeros(more.shape[:2] + (1,), dtype=int), more.sum(axis=2).cumsum(axis=-1)], -1)
        true_more = (more & self.in_gold[None, None, :, 1:]).sum(axis=2).cumsum(axis=-1)
        true_more = np.concatenate([np.zeros(more.shape[:2] + (1,), dtype=int), true_more], -1)
        kept_lead, true_lead = lead.sum(axis=1), (lead & self.in_gold[:, 0]).sum(axis=1)
        at_threshold = {t: i for i, t in enumerate(grid["threshold"])}
        at_ratio = {r: i for i, r in enumerate(grid["ratio"])}
        found = {}
        for n, t, r in settings:
            i, j, m = at_threshold[t], at_ratio[r], min(n, self.scores.shape[1]) - 1
            found[(n, t, r)] = self._rounded_f1(
                int(true_lead[i]) + int(true_more[i, j, m]), int(kept_lead[i]) + int(kept_more[i, j, m])
            )
        return found

    def _rounded_f1(self, tp: int, proposed: int) -> float:
        key = (tp, proposed)
        if key not in self._f1:
            self._f1[key] = round(_rates(tp, proposed, len(self.gold))[2], 4)
        return self._f1[key]


def _overrides(names: list[str], values: Sequence[float]) -> dict[str, Any]:
    """Signal weights by name, for ``dataclasses.replace`` (whose keyword types mypy cannot see)."""
    return dict(zip(names, values, strict=True))


def _weight_settings(base: ProposalWeights, weights: Mapping[str, Sequence[float]] | None) -> list[ProposalWeights]:
    names = list(weights or ())
    grid = weights or {}
    combos = [replace(base, **_overrides(names, values)) for values in product(*(grid[n] for n in names))]
    return [c for c in combos if sum(getattr(c, n) for n in SIGNALS) > 0] or [base]


def _tops(signals: Signals, scores: np.ndarray, rows: list[int], n: int) -> list[list[tuple[EdgeKey, float]]]:
    """Per activity row: its ``n`` best (edge key, score), best first."""

    def edge(i: int, j: int) -> EdgeKey:
        return (signals.activities[i].process, signals.activities[i].id, signals.sets[j].service, signals.sets[j].name)

    return [[(edge(i, j), float(scores[i, j])) for j in ranked(scores, i, n)] for i in rows]
