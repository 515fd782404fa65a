"""A learned scorer for mapping proposals: logistic regression over (activity, candidate set) features.

Instead of a hand-weighted mean of :data:`~processkg.proposals.propose.SIGNALS`, each activity's best
:data:`CANDIDATES` sets under an untuned mix (:data:`BASE`: the four text signals with equal weight,
the ``unwritable`` penalty, copies merged) get :data:`FEATURES`: the five signals, their ranks within
the activity, the base score, its margin to the activity's best and its rank, the set's
creatable/updatable flags crossed with the step's write or read verb, header or item (to-many
navigation within its service), the context signals of :meth:`Signals.context` computed from the base
scores (the process's services, the document a set is part of, the neighbouring steps along
``bpmn:next`` and the inferred document flow, similar steps of other processes in the known mapping),
and the overlap of the step's object words with the set's name. A logistic regression
(scikit-learn, standardised features, ``C`` from :data:`REGULARISATION`) fitted on the gold of some
processes gives each candidate a probability; the cut (top-n, threshold, ratio) and ``C`` are
chosen on out-of-fold probabilities of those same processes (:data:`INNER_GROUPS` groups of them,
each scored by a model fitted on the others), so :func:`fit_scorer` never reads any other gold.
docs/mapping-proposals.md "A learned scorer".
"""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence
from dataclasses import dataclass, replace
from itertools import product
from typing import Any

import numpy as np

from processkg.assets import asset
from processkg.errors import ProposalError
from processkg.proposals.proposal_facts import ProposalWeights
from processkg.proposals.propose import (
    METADATA,
    SIGNALS,
    Signals,
    _column_max,
    _Kept,
    _keys,
    _tops,
    content_words,
    ranked,
)
from processkg.sources.mapping import MappingEntry

#: Candidates per activity (the best under :data:`BASE`): 178 of the 200 SAP gold edges are among them.
CANDIDATES = 20
#: The untuned mix that picks the candidates: every text signal with weight 1, nothing tuned on gold.
BASE = ProposalWeights(dense=1.0, dense_name=1.0, lexical=1.0, lexical_short=1.0, header=0.0, unwritable=0.2)
#: Inverse regularisation strengths (``C``) of the logistic regression tried, strongest first.
REGULARISATION = (0.03, 0.1, 0.3, 1.0)
#: Groups of the training processes for the out-of-fold probabilities the cut is chosen on (fewer
#: when there are fewer processes: one each).
INNER_GROUPS = 3
#: The cut tried on the out-of-fold probabilities; ties go to fewer sets, a higher threshold and ratio.
LEARNED_GRID = {
    "top_n": (1, 2, 3),
    "threshold": tuple(round(0.025 * k, 3) for k in range(40)),
    "ratio": (0.0, 0.5, 0.6, 0.7, 0.8, 0.9),
}
RANKED_SIGNALS = ("dense", "dense_name", "lexical", "lexical_short")
FEATURES = (
    *SIGNALS,
    *(f"rank_{n}" for n in RANKED_SIGNALS),
    "base",
    "base_margin",
    "rank_base",
    "write_writable",
    "write_unwritable",
    "read_writable",
    "read_unwritable",
    "is_item",
    "has_items",
    "write_item",
    "process_service",
    "item",
    "neighbour",
    "neighbour_same",
    "known",
    "name_overlap",
    "name_overlap_share",
    "name_overlap_any",
    *METADATA,
    "follows_named",
    "followed_by_named",
)


@dataclass(frozen=True)
class LinearModel:
    """A fitted logistic regression on standardised features, as plain numbers (shippable as JSON)."""

    mean: np.ndarray
    scale: np.ndarray
    coef: np.ndarray  # per standard deviation of each feature
    intercept: float

    def probability(self, x: np.ndarray) -> np.ndarray:
        """The probability of the positive class for each row of ``x`` (as scikit-learn computes it)."""
        from scipy.special import expit  # heavy: only when a scorer runs

        decision = ((x - self.mean) / self.scale) @ self.coef[:, None] + self.intercept
        return np.asarray(expit(decision.ravel()), dtype=float)


@dataclass(frozen=True)
class LearnedScorer:
    """A fitted model and the cut chosen for it; ``describe`` for reports, ``to_json`` to ship it."""

    model: LinearModel
    cut: ProposalWeights
    tuning_f1: float
    regularisation: float
    used: tuple[str, ...] = FEATURES
    #: the gold it was fitted on, what ``known`` draws on; None: the store's own mapping edges
    known: tuple[MappingEntry, ...] | None = ()

    def scores(self, signals: Signals) -> np.ndarray:
        """Activities x sets: each candidate's probability of being a gold edge; -inf elsewhere.
        ``known`` draws on the gold the scorer was fitted on (``signals.know``), or with ``known``
        None on whatever the signals know (the store's mapping edges, when nothing else was given)."""
        if self.known is not None:
            signals.know(self.known)
        base = signals.scores(BASE)
        pairs = candidates(base, CANDIDATES)
        out = np.full(base.shape, -np.inf)
        if pairs:
            rows, cols = zip(*pairs, strict=True)
            x = _columns(features(signals, base, pairs), self.used)
            out[list(rows), list(cols)] = self.model.probability(x)
        return out

    def describe(self) -> dict[str, Any]:
        weights = self.model.coef
        return {
            "scorer": "learned",
            "top_n": self.cut.top_n,
            "threshold": self.cut.threshold,
            "ratio": self.cut.ratio,
            "C": self.regularisation,
            "largest_standardised_weights": ", ".join(
                f"{self.used[k]} {weights[k]:+.2f}" for k in np.argsort(-np.abs(weights), kind="stable")[:5]
            ),
        }

    def to_json(self, trained_on: Sequence[str]) -> dict[str, Any]:
        """The scorer as shipped in ``assets/ranking/proposals.json`` (``known`` is not kept)."""
        return {
            "trained_on": list(trained_on),
            "features": list(self.used),
            "mean": self.model.mean.tolist(),
            "scale": self.model.scale.tolist(),
            "coef": self.model.coef.tolist(),
            "intercept": self.model.intercept,
            "C": self.regularisation,
            "tuning_f1": self.tuning_f1,
            "cut": {"top_n": self.cut.top_n, "threshold": self.cut.threshold, "ratio": self.cut.ratio},
        }


def scorer_from_json(data: dict[str, Any]) -> LearnedScorer:
    """A scorer written by :meth:`LearnedScorer.to_json`; ``known`` draws on the store's mapping edges."""
    try:
        model = LinearModel(
            np.array(data["mean"], dtype=float),
            np.array(data["scale"], dtype=float),
            np.array(data["coef"], dtype=float),
            float(data["intercept"]),
        )
        cut = replace(ProposalWeights(), **_cut(data["cut"]))
        used = tuple(str(f) for f in data["features"])
        scorer = LearnedScorer(model, cut.check(), float(data["tuning_f1"]), float(data["C"]), used, None)
    except (KeyError, TypeError, ValueError) as exc:
        raise ProposalError(f"not a learned proposal scorer: {exc}") from None
    if set(used) - set(FEATURES) or not len(used) == len(model.mean) == len(model.scale) == len(model.coef):
        raise ProposalError("not a learned proposal scorer: its features do not match its numbers")
    return scorer


#: The shipped scorer of ``kg map propose --scorer learned``: fitted on the train half of the SAP gold
#: (``kg map tune --scorer learned --out``), in ``assets/ranking/``.
SHIPPED = ("ranking", "proposals.json")


def shipped_scorer() -> LearnedScorer:
    """The scorer fitted on the train half that ``kg map propose --scorer learned`` uses."""
    return scorer_from_json(json.loads(asset(*SHIPPED).read_text(encoding="utf-8")))


def _cut(data: dict[str, Any]) -> dict[str, Any]:
    return {"top_n": int(data["top_n"]), "threshold": float(data["threshold"]), "ratio": float(data["ratio"])}


def candidates(base: np.ndarray, n: int) -> list[tuple[int, int]]:
    """(activity row, set row) of every activity's ``n`` best sets under ``base``."""
    return [(i, j) for i in range(base.shape[0]) for j in ranked(base, i, n)]


def _ranks(matrix: np.ndarray) -> np.ndarray:
    """Per row, each column's rank (0 best; ties by column)."""
    order = np.argsort(-matrix, axis=1, kind="stable")
    out = np.empty_like(order)
    out[np.arange(matrix.shape[0])[:, None], order] = np.arange(matrix.shape[1])[None, :]
    return out


def _words(text: str) -> set[str]:
    return set(content_words(text))


def features(signals: Signals, base: np.ndarray, pairs: Sequence[tuple[int, int]]) -> np.ndarray:
    """One row of :data:`FEATURES` per (activity, set) pair; ``base`` is ``signals.scores(BASE)``."""
    finite = np.where(np.isfinite(base), base, -1.0)
    best = finite.max(axis=1)
    ranks = {n: _ranks(signals.matrix[n]) for n in RANKED_SIGNALS}
    rank_base = _ranks(finite)
    writes = np.array([mode == "write" for mode, _ in signals.modes], dtype=float)
    reads = np.array([mode == "read" and bool(cue) for mode, cue in signals.modes], dtype=float)
    writable = signals.writable.astype(float)
    is_item = np.array([1.0 if docs else 0.0 for docs in signals.documents])
    has_items = np.zeros(len(signals.sets))
    for docs in signals.documents:
        has_items[docs] = 1.0
    context = {
        "process_service": signals.context(finite, ProposalWeights(process_service=1.0)),
        "item": signals.context(finite, ProposalWeights(item=1.0)),
        "neighbour": signals.context(finite, ProposalWeights(neighbour=1.0)),
    }
    same = np.zeros_like(finite)
    for i, others in enumerate(signals.neighbours):
        if others:
            same[i] = np.maximum(finite[others].max(axis=0), 0.0)
    follows = _column_max(finite, signals.follows)
    followed_by = _column_max(finite, signals.followed_by)
    set_words = [_words(s.short.split(".")[0]) for s in signals.sets]
    step_words = [_words(" ".join(a.name.split()[1:])) for a in signals.activities]
    rows = []
    for i, j in pairs:
        overlap = len(step_words[i] & set_words[j])
        rows.append(
            [float(signals.matrix[n][i, j]) for n in SIGNALS]
            + [1.0 / (1 + ranks[n][i, j]) for n in RANKED_SIGNALS]
            + [finite[i, j], finite[i, j] - best[i], 1.0 / (1 + rank_base[i, j])]
            + [
                writes[i] * writable[j],
                writes[i] * (1 - writable[j]),
                reads[i] * writable[j],
                reads[i] * (1 - writable[j]),
            ]
            + [is_item[j], has_items[j], writes[i] * is_item[j]]
            + [float(context[n][i, j]) for n in ("process_service", "item", "neighbour")]
            + [same[i, j], float(signals.matrix["known"][i, j])]
            + [overlap, overlap / max(1, len(set_words[j])), float(overlap > 0)]
            + [float(signals.metadata[n][i, j]) for n in METADATA]
            + [follows[i, j], followed_by[i, j]]
        )
    return np.array(rows, dtype=float).reshape(len(pairs), len(FEATURES))


def _fit(x: np.ndarray, y: np.ndarray, strength: float) -> LinearModel:
    from sklearn.linear_model import LogisticRegression  # heavy: only when a scorer is fitted
    from sklearn.preprocessing import StandardScaler

    if y.all() or not y.any():
        raise ProposalError(
            "the gold of the training processes gives no positive and negative candidates to learn from"
        )
    scaler = StandardScaler().fit(x)
    regression = LogisticRegression(C=strength, max_iter=2000).fit(scaler.transform(x), y)
    return LinearModel(scaler.mean_, scaler.scale_, regression.coef_[0].copy(), float(regression.intercept_[0]))


def _columns(x: np.ndarray, used: Sequence[str]) -> np.ndarray:
    """The columns of the features ``used``, in the order of :data:`FEATURES`."""
    unknown = set(used) - set(FEATURES)
    if unknown:
        raise ProposalError(f"no such proposal features: {', '.join(sorted(unknown))}")
    return x[:, [k for k, name in enumerate(FEATURES) if name in used]]


def _examples(
    signals: Signals, entries: Sequence[MappingEntry], processes: Collection[str], used: Sequence[str]
) -> tuple[list[tuple[int, int]], np.ndarray, np.ndarray]:
    """The candidates of the activities of ``processes``, the ``used`` features (``known`` drawing on
    ``entries``, which must be of those processes only) and whether each is a gold edge."""
    signals.know(entries)
    base = signals.scores(BASE)
    gold = _keys(entries, False, set(processes))
    pairs = [(i, j) for i, j in candidates(base, CANDIDATES) if signals.activities[i].process in processes]
    labels = np.array([_edge(signals, i, j) in gold for i, j in pairs])
    return pairs, _columns(features(signals, base, pairs), used), labels


def _edge(signals: Signals, i: int, j: int) -> tuple[str, ...]:
    a, s = signals.activities[i], signals.sets[j]
    return (a.process, a.id, s.service, s.name)


def fit_scorer(signals: Signals, entries: Sequence[MappingEntry], used: Sequence[str] = FEATURES) -> LearnedScorer:
    """Fit on the gold ``entries`` (their processes are the training processes); choose the
    regularisation (:data:`REGULARISATION`) and the cut on out-of-fold probabilities: the processes
    sorted, every :data:`INNER_GROUPS`-th in one group (one each if fewer), each group scored by a
    model fitted on the others' gold, with ``known`` drawing on theirs (a group whose others have no
    gold edge among their candidates gets no probabilities: no proposals). Ties go to the stronger
    regularisation. ``used``: the features the model sees (all of :data:`FEATURES` but for
    ablations). Afterwards ``known`` draws on all of ``entries``, as for the proposals that follow."""
    processes = sorted({e.process for e in entries})
    if len(processes) < 2:
        raise ProposalError(f"a learned scorer needs the gold of at least 2 processes, not {len(processes)}")
    groups = []
    inner = min(INNER_GROUPS, len(processes))
    for g in range(inner):
        test = set(processes[g::inner])
        train = [e for e in entries if e.process not in test]
        _pairs, x, y = _examples(signals, train, {e.process for e in train}, used)
        groups.append(((x, y), _examples(signals, train, test, used)[:2]))
    best: tuple[float, float, ProposalWeights] | None = None
    for strength in REGULARISATION:
        out_of_fold = np.full((len(signals.activities), len(signals.sets)), -np.inf)
        for (x, y), (pairs, x_test) in groups:
            if not pairs or y.all() or not y.any():
                continue  # nothing to learn from: this group's processes get no proposals here
            rows, cols = zip(*pairs, strict=True)
            out_of_fold[list(rows), list(cols)] = _fit(x, y, strength).probability(x_test)
        cut, f1 = _choose_cut(signals, out_of_fold, entries, processes)
        if best is None or f1 > best[0]:
            best = (f1, strength, cut)
    assert best is not None
    f1, strength, cut = best
    _pairs, x, y = _examples(signals, entries, processes, used)
    used_names = tuple(f for f in FEATURES if f in used)
    return LearnedScorer(_fit(x, y, strength), cut, f1, strength, used_names, tuple(entries))


def _choose_cut(
    signals: Signals, scores: np.ndarray, entries: Sequence[MappingEntry], processes: Collection[str]
) -> tuple[ProposalWeights, float]:
    grid = LEARNED_GRID
    rows = [i for i, a in enumerate(signals.activities) if a.process in processes]
    f1s = _Kept(_tops(signals, scores, rows, int(max(grid["top_n"]))), _keys(entries, False, set(processes))).f1s(grid)
    best_key: tuple[float, ...] = (-1.0,)
    for n, threshold, ratio in product(grid["top_n"], grid["threshold"], grid["ratio"]):
        key = (f1s[(int(n), threshold, ratio)], -n, threshold, ratio)
        best_key = max(best_key, key)
    f1, n, threshold, ratio = best_key
    return replace(ProposalWeights(), top_n=int(-n), threshold=threshold, ratio=ratio), f1
