"""Train the routed ``hybrid`` (``kg eval train-ranker``): the kind classifier and one ranking model per kind.

Everything is learned on the train split of a benchmark, with cross-validation on train only, and
is deterministic (fixed folds, L-BFGS from zero weights, no sampling):

1. Signals (:mod:`processkg.retrieve.signals`) and query features of every train query.
2. Kind classifier: multinomial logistic regression (scikit-learn) on the query features; its
   regularisation C is chosen by 5-fold cross-validated accuracy (3 fold seeds).
3. One ranking model per kind: a linear score over a subset of the signals, trained with a
   listwise softmax loss (the probability of the gold sets among all entity sets, L2-penalised).
   The subset is chosen by forward selection on 5-fold cross-validated Recall@3 + Recall@5 of
   that kind's train queries (3 fold seeds), starting from dense similarity, adding the signal
   that helps most while it gains at least half a query's worth, then dropping any signal whose
   removal does not hurt.
4. One slot per step for multi-step tasks, kept only if cross-validation on the workflow queries
   says so.

The result is a :class:`~processkg.retrieve.routing.RoutedModel`, written as JSON with what it was
trained on and its cross-validated scores (``about``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TypeAlias

import numpy as np

from processkg.aliases import JSONObject
from processkg.evaluate.metrics import Query, gold_ranks, recall_at
from processkg.retrieve.retriever import Retriever
from processkg.retrieve.routing import KINDS, QUERY_FEATURES, Linear, RoutedModel, load_model, pick, query_features
from processkg.retrieve.signals import SIGNALS, QuerySignals

#: Other names of a kind in query files (the blind set calls a process situation "process").
KIND_OF = {"process": "process-chain"}
Log: TypeAlias = Callable[[str], None]  # told each step of the training, one line at a time
FOLDS = 5
RANKER_SEEDS = (0, 1, 2)
CLASSIFIER_SEEDS = (0, 1, 2)
CLASSIFIER_C = (0.1, 0.3, 1.0, 3.0, 10.0)
RANKER_L2 = 0.1
START: tuple[str, ...] = ("dense",)
MAX_SIGNALS = 8


@dataclass
class Example:
    """One train query: its signals, query features, kind and gold (rows that match each gold item)."""

    query: Query
    signals: QuerySignals
    features: np.ndarray
    kind: int
    gold: list[set[int]]  # per gold item: the rows that match it (or an alternative)
    names: list[tuple[str, str]]  # (service, entity_set) per row


def examples(retriever: Retriever, queries: list[Query]) -> list[Example]:
    """Signals of every query whose type is a kind and whose gold is in the store."""
    names = [(s["service"], s["name"]) for s in retriever.sets]
    row_of = {n: i for i, n in enumerate(names)}
    usable = [q for q in queries if q.type in KINDS]
    vectors = retriever.embed([q.text for q in usable])
    steps = retriever.embed_steps([q.text for q in usable])
    out = []
    for q, vector, step_vectors in zip(usable, vectors, steps):
        words = retriever.activity_lexical.scores(q.text)
        sig = retriever.matrices.signals(vector, retriever.lexical.scores(q.text), q.text, step_vectors, words)
        gold = [{row_of[a] for a in alts if a in row_of} for alts in q.gold]
        if any(gold):
            out.append(Example(q, sig, query_features(q.text, sig), KINDS.index(q.type), gold, names))
    return out


# ---------------------------------------------------------------- the ranking models


def fit_listwise(lists: np.ndarray, golds: np.ndarray, l2: float) -> np.ndarray:
    """Weights w maximising the mean log of the softmax mass of the gold rows of each list, minus
    ``l2 |w|^2``; ``lists`` is (lists, rows, features), ``golds`` (lists, rows) of 0 and 1."""
    from scipy.optimize import minimize

    def loss(w: np.ndarray) -> tuple[float, np.ndarray]:
        scores = lists @ w
        e = np.exp(scores - scores.max(axis=1, keepdims=True))
        gold = e * golds
        p_all, p_gold = e / e.sum(axis=1, keepdims=True), gold / gold.sum(axis=1, keepdims=True)
        value = -float(np.mean(np.log(gold.sum(axis=1) / e.sum(axis=1)))) + l2 * float(w @ w)
        grad = -np.einsum("lr,lrf->f", p_gold - p_all, lists) / len(lists) + 2 * l2 * w
        return value, grad

    result = minimize(loss, np.zeros(lists.shape[2]), jac=True, method="L-BFGS-B", options={"maxiter": 500})
    return result.x


def fit_ranker(train: list[Example], features: tuple[str, ...], l2: float = RANKER_L2) -> Linear:
    columns = [e.signals.columns(features) for e in train]
    stacked = np.concatenate(columns).astype(np.float64)
    mean, scale = stacked.mean(axis=0), stacked.std(axis=0) + 1e-6
    lists = np.stack([(c - mean) / scale for c in columns])
    golds = np.stack([_gold_mask(e) for e in train])
    w = fit_listwise(lists, golds, l2)
    return Linear(tuple(features), mean, scale, w[None, :], np.zeros(1))


def _gold_mask(e: Example) -> np.ndarray:
    mask = np.zeros(e.signals.features.shape[0])
    for rows in e.gold:
        mask[list(rows)] = 1.0
    return mask


def recall(e: Example, scores: np.ndarray, family: np.ndarray, k: int, steps: np.ndarray | None = None) -> float:
    rows = [p.row for p in pick(scores, family, k, steps)]
    return recall_at(gold_ranks([e.names[r] for r in rows], e.query.gold), k)


def _folds(n: int, seed: int) -> list[np.ndarray]:
    order = np.random.default_rng(seed).permutation(n)
    return [order[i::FOLDS] for i in range(FOLDS)]


def cv_ranker(
    items: list[Example],
    features: tuple[str, ...],
    family: np.ndarray,
    steps: bool = False,
    seeds: tuple[int, ...] = RANKER_SEEDS,
) -> float:
    """Cross-validated Recall@3 + Recall@5 of a ranking model over ``features``."""
    total = []
    for seed in seeds:
        for held in _folds(len(items), seed):
            held_set = set(held.tolist())
            model = fit_ranker([e for i, e in enumerate(items) if i not in held_set], features)
            for i in held:
                e = items[i]
                scores = model(e.signals.columns(features))[:, 0]
                step = e.signals.paths.step - 1 if steps else None  # -1: the whole query, no step
                total.append(recall(e, scores, family, 3, step) + recall(e, scores, family, 5, step))
    return float(np.mean(total))


def select_features(
    items: list[Example],
    family: np.ndarray,
    log: Log | None = None,
    offered: tuple[str, ...] = SIGNALS,
    seeds: tuple[int, ...] = RANKER_SEEDS,
) -> tuple[tuple[str, ...], float]:
    """Forward selection, then backward elimination, of the signals of one kind's ranking model."""
    chosen: tuple[str, ...] = START
    best = cv_ranker(items, chosen, family, seeds=seeds)
    margin = 1.0 / len(items)  # half a query's worth of R@3 + R@5
    while len(chosen) < MAX_SIGNALS:
        trials = {f: cv_ranker(items, (*chosen, f), family, seeds=seeds) for f in offered if f not in chosen}
        name, score = max(trials.items(), key=lambda t: (t[1], -SIGNALS.index(t[0])))
        if score < best + margin:
            break
        chosen, best = (*chosen, name), score
        _say(log, f"  + {name}: {score:.3f}")
    for name in chosen[1:]:
        without = tuple(f for f in chosen if f != name)
        score = cv_ranker(items, without, family, seeds=seeds)
        if score >= best:
            chosen, best = without, score
            _say(log, f"  - {name}: {score:.3f}")
    return chosen, best


def _say(log: Log | None, line: str) -> None:
    if log:
        log(line)


# ---------------------------------------------------------------- the kind classifier


def fit_classifier(items: list[Example], c: float) -> Linear:
    from sklearn.linear_model import LogisticRegression

    x = np.stack([e.features for e in items])
    mean, scale = x.mean(axis=0), x.std(axis=0) + 1e-6
    model = LogisticRegression(C=c, max_iter=5000).fit((x - mean) / scale, [e.kind for e in items])
    coef, intercept = np.zeros((len(KINDS), x.shape[1])), np.zeros(len(KINDS))
    for j, kind in enumerate(model.classes_):
        coef[kind], intercept[kind] = model.coef_[j], model.intercept_[j]
    return Linear(QUERY_FEATURES, mean, scale, coef, intercept)


def cv_classifier(items: list[Example], c: float) -> float:
    hits = []
    for seed in CLASSIFIER_SEEDS:
        for held in _stratified_folds(items, seed):
            held_set = set(held.tolist())
            model = fit_classifier([e for i, e in enumerate(items) if i not in held_set], c)
            hits += [int(model(items[i].features).argmax() == items[i].kind) for i in held]
    return float(np.mean(hits))


def _stratified_folds(items: list[Example], seed: int) -> list[np.ndarray]:
    folds: list[list] = [[] for _ in range(FOLDS)]
    rng = np.random.default_rng(seed)
    for kind in range(len(KINDS)):
        rows = rng.permutation([i for i, e in enumerate(items) if e.kind == kind])
        for j, i in enumerate(rows.tolist()):
            folds[j % FOLDS].append(i)
    return [np.array(sorted(f), dtype=np.int64) for f in folds]


# ---------------------------------------------------------------- everything


def train(
    items: list[Example],
    family: np.ndarray,
    source: str = "",
    log: Log | None = None,
    offered: tuple[str, ...] = SIGNALS,
    seeds: tuple[int, ...] = RANKER_SEEDS,
) -> RoutedModel:
    """The routed model, fitted on ``items`` (train queries) with every choice cross-validated."""
    c_scores = {c: cv_classifier(items, c) for c in CLASSIFIER_C}
    c = max(c_scores, key=lambda v: (c_scores[v], -v))
    _say(log, f"classifier: C = {c} (cross-validated accuracy {c_scores[c]:.3f})")
    rankers, cv = {}, {}
    for kind, name in enumerate(KINDS):
        mine = [e for e in items if e.kind == kind]
        _say(log, f"{name}: {len(mine)} queries")
        features, cv[name] = select_features(mine, family, log, offered, seeds)
        rankers[name] = fit_ranker(mine, features)
    routing = cv_routing(items, c, {k: m.features for k, m in rankers.items()}, family)
    mode = max(routing, key=lambda m: (routing[m], m == "soft"))
    _say(log, f"routing: soft {routing['soft']:.3f}, hard {routing['hard']:.3f}: {mode}")
    workflow = [e for e in items if KINDS[e.kind] == "workflow"]
    slots = cv_ranker(workflow, rankers["workflow"].features, family, steps=True, seeds=seeds)
    use_slots = slots > cv["workflow"]
    _say(
        log,
        f"workflow, one slot per step: {slots:.3f} against {cv['workflow']:.3f}: {'kept' if use_slots else 'not kept'}",
    )
    about = {
        "trained_on": source,
        "queries": {name: sum(1 for e in items if e.kind == k) for k, name in enumerate(KINDS)},
        "classifier_c": c,
        "classifier_cv_accuracy": round(c_scores[c], 4),
        "ranker_cv_recall3_plus_recall5": {k: round(v, 4) for k, v in cv.items()},
        "slots_per_step_cv": round(slots, 4),
        "routing_cv_recall3_plus_recall5": {m: round(v, 4) for m, v in routing.items()},
        "ranker_l2": RANKER_L2,
    }
    return RoutedModel(fit_classifier(items, c), rankers, use_slots, about, mode)


def cv_routing(
    items: list[Example], c: float, features: dict[str, tuple[str, ...]], family: np.ndarray
) -> dict[str, float]:
    """Cross-validated Recall@3 + Recall@5 of the whole routed ranking, soft and hard, over all
    kinds (the classifier and the rankers refitted on each fold, their signals as selected)."""
    totals: dict = {"soft": [], "hard": []}
    for seed in CLASSIFIER_SEEDS:
        for held in _stratified_folds(items, seed):
            held_set = set(held.tolist())
            train_part = [e for i, e in enumerate(items) if i not in held_set]
            rankers = {k: fit_ranker([e for e in train_part if KINDS[e.kind] == k], features[k]) for k in KINDS}
            for mode in totals:
                model = RoutedModel(fit_classifier(train_part, c), rankers, False, {}, mode)
                for i in held:
                    scores, _ = model.scores(items[i].query.text, items[i].signals)
                    totals[mode].append(recall(items[i], scores, family, 3) + recall(items[i], scores, family, 5))
    return {mode: float(np.mean(v)) for mode, v in totals.items()}


def fingerprint(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()[:16]


def routing_accuracy(retriever: Retriever, queries: list[Query], model: RoutedModel | None = None) -> JSONObject:
    """How often the kind classifier names each query's type: per kind n, correct, accuracy, and
    the confusion counts (true kind -> predicted kind). Queries of other types are left out."""

    model = model or load_model()
    items = examples(retriever, [replace(q, type=KIND_OF.get(q.type, q.type)) for q in queries])
    out: dict = {}
    for kind in KINDS:
        mine = [e for e in items if KINDS[e.kind] == kind]
        guesses = [KINDS[int(model.kind_probabilities(e.query.text, e.signals).argmax())] for e in mine]
        correct = sum(g == kind for g in guesses)
        confusion = {other: guesses.count(other) for other in KINDS}
        out[kind] = {
            "n": len(mine),
            "correct": correct,
            "accuracy": correct / len(mine) if mine else 0.0,
            "predicted": confusion,
        }
    total = sum(v["n"] for v in out.values())
    out["all"] = {"n": total, "accuracy": sum(v["correct"] for v in out.values()) / total if total else 0.0}
    return out
