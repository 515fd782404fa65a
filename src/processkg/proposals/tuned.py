"""Adapt the embedding model to the mapping a user already has: ``dense_tuned``.

A copy of the index's sentence-transformers model is fine-tuned on the gold edges of the training
processes alone: each edge is a pair (the step's name and documentation, the set's summary, the
text the ``dense`` signal embeds), and the loss is the contrastive one of sentence-transformers'
``MultipleNegativesRankingLoss`` (cross-entropy over the scaled cosines of a step and every set text
of its batch), with :data:`TuneSettings.negatives` hard negatives per pair: the step's best
candidates under the learned scorer's untuned mix that are not among its gold sets. A set text that
is gold for the step is never its negative (masked). The tuned model then gives ``dense_tuned``,
activities x sets: the cosine of the step's text and the set's summary, a feature of the learned
scorer (:mod:`processkg.proposals.learned`). Seeds are fixed and torch runs on
:data:`TuneSettings.threads` threads, so the same gold gives the same numbers on one machine.
docs/mapping-proposals.md "Adapting the embedding model".
"""

from __future__ import annotations

import random
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from processkg.errors import ProposalError
from processkg.proposals.proposal_facts import ActivityFacts, TuneSettings
from processkg.retrieve.index import load_encoder_model
from processkg.sources.mapping import MappingEntry

if TYPE_CHECKING:  # heavy: torch is imported only when a model is tuned or loaded
    from sentence_transformers import SentenceTransformer

    from processkg.proposals.propose import Signals


@dataclass(frozen=True)
class Pair:
    """A training example: a step's text, its gold set's text and hard negatives' texts; ``gold``: the
    texts of every gold set of the step (never a negative of it)."""

    anchor: str
    positive: str
    negatives: tuple[str, ...]
    gold: frozenset[str]


def step_text(activity: ActivityFacts) -> str:
    """What the tuned model embeds of a step: its name and documentation."""
    return f"{activity.name}. {activity.documentation}".strip()


def training_pairs(signals: Signals, entries: Sequence[MappingEntry], base: np.ndarray, negatives: int) -> list[Pair]:
    """One :class:`Pair` per gold edge of ``entries`` that names an activity (by id or name) and a set
    of the store (copies merged as in ``base``: an edge to another copy of a set counts for the copy ``base``
    keeps), its hard negatives the activity's best non-gold sets under ``base``."""
    act_row = {(a.process, a.name): i for i, a in enumerate(signals.activities)}
    act_row.update({(a.process, a.id): i for i, a in enumerate(signals.activities)})  # an id before a name
    set_row = {(s.service, s.name): j for j, s in enumerate(signals.sets)}
    gold: dict[int, list[int]] = {}
    for e in entries:
        i, j = act_row.get((e.process, e.activity)), set_row.get((e.service, e.entity_set))
        if i is not None and j is not None and j not in gold.setdefault(i, []):
            gold[i].append(j)
    pairs = []
    for i in sorted(gold):
        texts = frozenset(signals.sets[j].summary for j in gold[i])
        order = np.lexsort((np.arange(base.shape[1]), -base[i]))
        hard = [
            signals.sets[j].summary
            for j in order
            if np.isfinite(base[i, j]) and j not in gold[i] and signals.sets[j].summary not in texts
        ][:negatives]
        for j in gold[i]:
            pairs.append(Pair(step_text(signals.activities[i]), signals.sets[j].summary, tuple(hard), texts))
    return pairs


@dataclass(frozen=True)
class TunedModel:
    """A fine-tuned model and what it was tuned on: the sorted gold edges (process, activity, service,
    set) and the settings, or the folder it was loaded from."""

    model: SentenceTransformer
    key: tuple[object, ...]
    pairs: int = 0  # the pairs it learned from
    seconds: float = 0.0  # how long the fine-tuning took


def tune_on(signals: Signals, entries: Sequence[MappingEntry], base: np.ndarray) -> TunedModel:
    """A copy of the store's index model fine-tuned on the gold ``entries`` (``signals.tuning``'s
    settings, the defaults if None), with ``signals.tuned`` holding its similarities afterwards."""
    settings = signals.tuning or TuneSettings()
    pairs = training_pairs(signals, entries, base, settings.negatives)
    start = time.perf_counter()
    model = fine_tune(load_encoder_model(signals.model_id), pairs, settings)
    key = (settings, *sorted({(e.process, e.activity, e.service, e.entity_set) for e in entries}))
    tuned = TunedModel(model, key, len(pairs), time.perf_counter() - start)
    tuned_similarity(signals, tuned)
    return tuned


def tuned_similarity(signals: Signals, tuned: TunedModel) -> np.ndarray:
    """:func:`similarity` of ``tuned``, computed once per model and store (kept in ``signals.tuned``)."""
    if tuned.key not in signals.tuned:
        threads = signals.tuning.threads if signals.tuning else TuneSettings().threads
        signals.tuned[tuned.key] = similarity(tuned.model, signals, threads)
    return signals.tuned[tuned.key]


def fine_tune(
    untuned: SentenceTransformer, pairs: Sequence[Pair], settings: TuneSettings | None = None
) -> SentenceTransformer:
    """A copy of ``untuned`` fine-tuned on ``pairs`` (see the module's docstring); ``untuned`` is not changed."""
    import copy

    import torch

    settings = settings or TuneSettings()
    before = torch.get_num_threads()
    torch.set_num_threads(settings.threads)
    try:
        torch.manual_seed(settings.seed)
        model = copy.deepcopy(untuned)
        model.max_seq_length = settings.tokens
        if not pairs:  # nothing to learn from: the untuned model, cut to as many tokens
            return model
        model.train()
        order = random.Random(settings.seed)
        steps = settings.epochs * -(-len(pairs) // settings.batch)
        optimiser = torch.optim.AdamW(model.parameters(), lr=settings.learning_rate)
        warm = max(1, int(settings.warmup * steps))
        schedule = torch.optim.lr_scheduler.LambdaLR(
            optimiser, lambda k: min((k + 1) / warm, max(0.0, (steps - k) / max(1, steps - warm)))
        )
        for _epoch in range(settings.epochs):
            shuffled = list(pairs)
            order.shuffle(shuffled)
            for start in range(0, len(shuffled), settings.batch):
                loss = _batch_loss(model, shuffled[start : start + settings.batch], settings.scale)
                optimiser.zero_grad()
                loss.backward()
                optimiser.step()
                schedule.step()
        model.eval()
        return model
    finally:
        torch.set_num_threads(before)


def _batch_loss(model: SentenceTransformer, batch: Sequence[Pair], scale: float) -> Any:
    """Cross-entropy of each step against every set text of the batch (its positive first among
    them), other gold sets of the step masked out."""
    import torch

    texts = list(dict.fromkeys(t for p in batch for t in (p.positive, *p.negatives)))
    column = {t: k for k, t in enumerate(texts)}
    anchors = _embed(model, [p.anchor for p in batch])
    candidates = _embed(model, texts)
    logits = scale * anchors @ candidates.T
    mask = torch.zeros_like(logits, dtype=torch.bool)
    for a, p in enumerate(batch):
        for t in p.gold - {p.positive}:
            if t in column:
                mask[a, column[t]] = True
    logits = logits.masked_fill(mask, float("-inf"))
    target = torch.tensor([column[p.positive] for p in batch])
    return torch.nn.functional.cross_entropy(logits, target)


def _embed(model: SentenceTransformer, texts: list[str]) -> Any:
    import torch

    features = model.preprocess(texts)
    out = model(features)["sentence_embedding"]
    return torch.nn.functional.normalize(out, dim=-1)


def encode(model: SentenceTransformer, texts: list[str], threads: int = 1) -> np.ndarray:
    """L2-normalised float32 vectors of ``texts`` under ``model``, on ``threads`` torch threads."""
    import torch

    if not texts:
        return np.zeros((0, 1), dtype=np.float32)
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        vectors = model.encode(
            texts, batch_size=32, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False
        )
    finally:
        torch.set_num_threads(before)
    return np.ascontiguousarray(vectors, dtype=np.float32)


def similarity(model: SentenceTransformer, signals: Signals, threads: int = 1) -> np.ndarray:
    """Activities x sets: the cosine of each step's text and each set's summary under ``model``."""
    steps = encode(model, [step_text(a) for a in signals.activities], threads)
    sets = encode(model, [s.summary for s in signals.sets], threads)
    return steps @ sets.T


def save(model: SentenceTransformer, folder: Path) -> None:
    """Write the tuned model to ``folder`` (sentence-transformers' format, about 90 MB for MiniLM)."""
    model.save(str(folder))


def load(folder: Path) -> TunedModel:
    """A tuned model written by :func:`save`."""
    from sentence_transformers import SentenceTransformer

    if not (Path(folder) / "modules.json").is_file():
        raise ProposalError(f"{folder}: no tuned embedding model here (no modules.json)")
    try:
        model = SentenceTransformer(str(folder), device="cpu")
    except (OSError, ValueError) as exc:
        raise ProposalError(f"{folder}: cannot load the tuned embedding model: {exc}") from None
    return TunedModel(model, (str(Path(folder).resolve()),))
