"""The routed ``hybrid``: decide what kind of request a query is, then rank with the model of that kind.

A query is one of four kinds: an object (``single``: "sales order 4711"), an object and its
details (``navigation``: "the schedule lines of order 4711"), a process situation
(``process-chain``: "the goods left the warehouse, now charge the customer") or a multi-step task
(``workflow``: "raise a requisition, find the vendor and order"). A multinomial logistic
regression over features of the query and of its nearest entity sets and activities
(:data:`QUERY_FEATURES`) gives the probability of each kind; each kind has its own linear ranking
model over the signals of :mod:`processkg.retrieve.signals` (a listwise softmax model: the
probability that an entity set is the answer). The ranking of a query is the mixture of the four,
weighted by the kind probabilities, over *all* entity sets at once: an entity set reached along
``bpmn:next`` competes for a slot on its score, never by position.

Near-duplicates (``A_SalesOrder`` and ``SalesOrder``; ``_2``/``_4`` variants) take one slot: the
best-scored member is returned with the others as ``alternatives``. For a multi-step task each
step (the activity that explains a result) gets one slot before any step gets a second.

The weights are learned on the train split of the SAP benchmark (``kg eval train-ranker``) and
shipped frozen in ``assets/ranking/routed.json``; nothing here is hand-set. Without a process layer
(no activity uses an entity set) there are no process signals to route on, and the method is the
fusion of BM25 and dense weighted by the query's length (``retriever.lexical_dense``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from processkg.aliases import JSONObject, JSONValue
from processkg.assets import asset
from processkg.errors import RankingModelError
from processkg.retrieve.signals import GROUPS, SIGNALS, QuerySignals

KINDS = ("single", "navigation", "process-chain", "workflow")
MODEL_FILE = ("ranking", "routed.json")
#: Features of a query for the kind classifier, in this order.
QUERY_FEATURES = (
    "set_max",
    "set_top5",
    "activity_max",
    "activity_top5",
    "set_minus_activity",
    "chain_max",
    "tokens_max",
    "navigation_gap",
    "words",
    "commas",
    "conjunctions",
    "question",
    "digits",
    "goal",
    "situation",
    "blocked",
    "details",
    "activity_words_max",
    "parts",
    "step_activity_max",
    "step_chain_max",
    "asks",
    "object_of",
    "numbers",
)
#: A goal the query wants to reach ("I need to pay the supplier"): what comes before may be missing.
GOAL = re.compile(
    r"\b(need to|needs to|have to|has to|must|want to|wants to|so that|in order to|before|blocked|cannot|can't)\b", re.I
)
#: A situation the query reports ("the goods left the warehouse"): what comes next is wanted.
SITUATION = re.compile(
    r"\b(now|next|already|done|finished|arrived|is in|are in|has been|have been|went out|left)\b", re.I
)
_CONJUNCTIONS = re.compile(r"\b(then|and|after that|once|afterwards|finally)\b", re.I)
_ASKS = re.compile(r"^(show|list|which|what|get|find|give|display|look)\b", re.I)
_OBJECT_OF = re.compile(
    r"\b(of|for) (the |this |our |a )?(order|document|invoice|delivery|partner|customer|supplier|product)\b", re.I
)
_DETAILS = re.compile(r"\b(items?|lines?|partners?|texts?|notes?|schedule|details|address(es)?|its|their|with)\b", re.I)


def _top(values: np.ndarray, n: int) -> float:
    return float(np.sort(values)[-n:].mean()) if len(values) else 0.0


#: The signals :func:`query_features` reads.
QUERY_SIGNALS = ("chain", "navigation", "step_activity", "step_chain")


def _column_max(sig: QuerySignals, name: str) -> float:
    return float(sig.column(name).max()) if sig.features.shape[0] else 0.0


def query_features(query: str, sig: QuerySignals) -> np.ndarray:
    """The classifier's view of a query: how well it matches entity sets and activities, and its form."""
    s, a = sig.set_sims, sig.activity_sims
    s_max, a_max = (float(s.max()) if len(s) else 0.0), (float(a.max()) if len(a) else 0.0)
    nav = sig.column("navigation")
    values = {
        "set_max": s_max,
        "set_top5": _top(s, 5),
        "activity_max": a_max,
        "activity_top5": _top(a, 5),
        "set_minus_activity": s_max - a_max,
        "chain_max": _column_max(sig, "chain"),
        "tokens_max": float(np.log1p(sig.token_scores.max())) if len(s) else 0.0,
        "navigation_gap": float(nav.max()) - s_max if len(s) else 0.0,
        "words": len(query.split()),
        "commas": len(re.findall(r"[,;:]", query)),
        "conjunctions": len(_CONJUNCTIONS.findall(query)),
        "question": float(query.rstrip().endswith("?")),
        "digits": float(bool(re.search(r"\d", query))),
        "goal": float(bool(GOAL.search(query))),
        "situation": float(bool(SITUATION.search(query))),
        "blocked": float(sig.paths.backward),
        "details": len(_DETAILS.findall(query)),
        "activity_words_max": float(np.log1p(sig.activity_token_scores.max())) if len(a) else 0.0,
        "parts": sig.steps,
        "step_activity_max": _column_max(sig, "step_activity"),
        "step_chain_max": _column_max(sig, "step_chain"),
        "asks": float(bool(_ASKS.match(query.strip()))),
        "object_of": float(bool(_OBJECT_OF.search(query))),
        "numbers": len(re.findall(r"\b\d+\b", query)),
    }
    return np.array([values[name] for name in QUERY_FEATURES], dtype=np.float64)


@dataclass(frozen=True)
class Linear:
    """A standardised linear model: ``((x - mean) / scale) @ coef.T + intercept``."""

    features: tuple[str, ...]
    mean: np.ndarray
    scale: np.ndarray
    coef: np.ndarray  # (outputs, features)
    intercept: np.ndarray  # (outputs,)

    @classmethod
    def from_json(cls, data: JSONObject) -> Linear:
        coef = np.atleast_2d(np.asarray(data["coef"], dtype=np.float64))
        return cls(
            tuple(data["features"]),
            np.asarray(data["mean"], dtype=np.float64),
            np.asarray(data["scale"], dtype=np.float64),
            coef,
            np.asarray(data.get("intercept", [0.0] * len(coef)), dtype=np.float64),
        )

    def as_json(self) -> JSONObject:
        return {
            "features": list(self.features),
            "mean": _rounded(self.mean),
            "scale": _rounded(self.scale),
            "coef": [_rounded(row) for row in self.coef],
            "intercept": _rounded(self.intercept),
        }

    def __call__(self, x: np.ndarray) -> np.ndarray:
        z = x - self.mean  # float64, then divided in place: the values of ((x - mean) / scale) @ coef.T + intercept
        z /= self.scale
        out = z @ self.coef.T
        out += self.intercept
        return out


def _rounded(values: np.ndarray) -> list[float]:
    return [float(f"{v:.6g}") for v in np.asarray(values, dtype=np.float64).ravel()]


@dataclass(frozen=True)
class RoutedModel:
    """The frozen kind classifier and one ranking model per kind."""

    classifier: Linear  # over QUERY_FEATURES, one output per kind
    rankers: dict[str, Linear]  # kind -> Linear over a subset of SIGNALS, one output
    slots_per_step: bool  # workflow: one slot per step first
    about: JSONObject
    routing: str = "soft"  # soft: every kind's ranking weighted by its probability; hard: the likeliest kind's

    @classmethod
    def from_json(cls, data: JSONObject) -> RoutedModel:
        if tuple(data.get("kinds", ())) != KINDS:
            raise RankingModelError(f"the routed ranking model has kinds {data.get('kinds')}, not {list(KINDS)}")
        rankers = {kind: Linear.from_json(data["rankers"][kind]) for kind in KINDS}
        unknown = sorted({f for ranker in rankers.values() for f in ranker.features} - set(SIGNALS))
        if unknown:
            raise RankingModelError(f"the routed ranking model weighs unknown signals {unknown}")
        return cls(
            Linear.from_json(data["classifier"]),
            rankers,
            bool(data.get("slots_per_step", False)),
            dict(data.get("about", {})),
            _routing(data.get("routing", "soft")),
        )

    def as_json(self) -> JSONObject:
        return {
            "kinds": list(KINDS),
            "about": self.about,
            "slots_per_step": self.slots_per_step,
            "routing": self.routing,
            "classifier": self.classifier.as_json(),
            "rankers": {kind: self.rankers[kind].as_json() for kind in KINDS},
        }

    @property
    def signals(self) -> tuple[str, ...]:
        """The signals the model reads (its rankers' and :data:`QUERY_SIGNALS`), in :data:`SIGNALS` order:
        the others need not be computed to rank with it."""
        used = {f for ranker in self.rankers.values() for f in ranker.features} | set(QUERY_SIGNALS)
        return tuple(name for name in SIGNALS if name in used)

    def kind_probabilities(self, query: str, sig: QuerySignals) -> np.ndarray:
        return _softmax(self.classifier(query_features(query, sig)))

    def kind_scores(self, sig: QuerySignals) -> np.ndarray:
        """(kinds, sets): each kind's log-probability that a set is the answer."""
        return np.stack([_log_softmax(self._ranker_scores(kind, sig)) for kind in KINDS])

    def _ranker_scores(self, kind: str, sig: QuerySignals) -> np.ndarray:
        model = self.rankers[kind]
        return model(sig.columns(model.features))[:, 0]

    def weights(self, probs: np.ndarray) -> np.ndarray:
        """How much each kind's ranking counts: its probability (soft), or 1 for the likeliest (hard)."""
        return probs if self.routing == "soft" else np.eye(len(KINDS))[int(probs.argmax())]

    def scores(self, query: str, sig: QuerySignals) -> tuple[np.ndarray, np.ndarray]:
        """The mixture P(set) = sum over kinds of w(kind) P(set | kind), and the kind probabilities."""
        probs = self.kind_probabilities(query, sig)
        return self.weights(probs) @ np.exp(self.kind_scores(sig)), probs

    def explain(self, sig: QuerySignals, probs: np.ndarray, rows: list[int]) -> np.ndarray:
        """(rows,): the path group (``GROUPS``) whose weighted terms add most to each of these sets' scores."""
        total = np.zeros((len(rows), len(PATH_GROUPS)))
        for weight, kind in zip(self.weights(probs), KINDS):
            model = self.rankers[kind]
            z = (sig.columns(model.features, rows) - model.mean) / model.scale
            total += weight * (z * model.coef[0]) @ _membership(model.features)
        return np.array(PATH_GROUPS, dtype=object)[total.argmax(axis=1)]


#: The path groups a result can be explained by, in a fixed order.
PATH_GROUPS = tuple(sorted(set(GROUPS.values())))


def _membership(features: tuple[str, ...]) -> np.ndarray:
    """(features, PATH_GROUPS): 1 where a feature belongs to a group."""
    out = np.zeros((len(features), len(PATH_GROUPS)))
    for i, name in enumerate(features):
        if name in GROUPS:
            out[i, PATH_GROUPS.index(GROUPS[name])] = 1.0
    return out


def _routing(value: JSONValue) -> str:
    if value not in ("soft", "hard"):
        raise RankingModelError(f"routing must be 'soft' or 'hard', not {value!r}")
    return str(value)


def _softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max())
    return e / e.sum()


def _log_softmax(x: np.ndarray) -> np.ndarray:
    shifted = x - x.max()
    return shifted - np.log(np.exp(shifted).sum())


def model_path() -> Path:
    return asset(*MODEL_FILE)


@lru_cache(maxsize=4)
def load_model(path: str | None = None) -> RoutedModel:
    """The shipped model (or the one at ``path``); a damaged file is one clear error."""
    target = Path(path) if path else model_path()
    try:
        return RoutedModel.from_json(json.loads(target.read_text(encoding="utf-8")))
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise RankingModelError(
            f"{target}: cannot read the routed ranking model ({type(exc).__name__}: {exc})"
        ) from None


@dataclass(frozen=True)
class Pick:
    """One slot of a routed ranking: the entity set (row) and its near-duplicates (rows)."""

    row: int
    alternatives: tuple[int, ...]


#: How many rows of a routed ranking are put in order before its slots are filled: near-duplicates
#: (a family of about 100 sets at 100x A2X) share a slot, so ``k`` slots may take hundreds of rows;
#: when these do not fill them, the whole ranking is put in order.
HEAD = 4096


def ranked(scores: np.ndarray, limit: int | None = None) -> list[int]:
    """Rows by score, best first (ties by row): all of them, or the first ``limit`` and the rows
    tied with the last of these (so the list is the start of the whole ranking)."""
    rows = np.arange(len(scores))
    if limit is not None and limit < len(scores):
        last = np.partition(scores, len(scores) - limit)[len(scores) - limit]
        rows = np.flatnonzero(scores >= last)
    return rows[np.lexsort((rows, -scores[rows]))].tolist()


def pick_ranked(
    scores: np.ndarray,
    family: np.ndarray,
    k: int,
    steps: np.ndarray | None = None,
    arrange: Callable[[list[int]], list[int]] = list,
) -> list[Pick]:
    """:func:`pick` in the order ``arrange(ranked(scores))``, with only the first :data:`HEAD` rows
    put in order when they fill the ``k`` slots; ``arrange`` may move rows only among the first
    :data:`HEAD` (``goal_order`` moves them among the first 20)."""
    head = ranked(scores, HEAD)
    if len(head) < len(scores):
        chosen, filled = _chosen(family, k, steps, arrange(head))
        if filled:
            return [Pick(row, _members(row, family, scores)) for row in chosen]
    return pick(scores, family, k, steps, arrange(ranked(scores)))


def pick(
    scores: np.ndarray, family: np.ndarray, k: int, steps: np.ndarray | None = None, order: list[int] | None = None
) -> list[Pick]:
    """The best ``k`` rows by score (or in ``order``), one per family of near-duplicates (the
    others become its alternatives); with ``steps`` (a step id per row, -1: none), rows of a step
    that already has a slot wait until every other step has had one."""
    chosen, _filled = _chosen(family, k, steps, ranked(scores) if order is None else order)
    return [Pick(row, _members(row, family, scores)) for row in chosen]


def _chosen(family: np.ndarray, k: int, steps: np.ndarray | None, order: list[int]) -> tuple[list[int], bool]:
    """The rows :func:`pick` chooses, and whether ``k`` were chosen before the waiting rows were
    considered (then a longer ``order`` that starts with this one chooses the same)."""
    chosen: list[int] = []
    waiting: list[int] = []
    families: set[int] = set()
    used: set[int] = set()
    for row in order:
        if len(chosen) >= k:
            break
        if family[row] in families:
            continue
        step = -1 if steps is None else int(steps[row])
        if step >= 0 and step in used:
            waiting.append(row)
            continue
        families.add(family[row])
        used.add(step)
        chosen.append(row)
    filled = len(chosen) >= k
    for row in waiting:  # steps that had a slot already, if slots are left
        if len(chosen) < k and family[row] not in families:
            families.add(family[row])
            chosen.append(row)
    return chosen, filled


def _members(row: int, family: np.ndarray, scores: np.ndarray) -> tuple[int, ...]:
    others = np.flatnonzero((family == family[row]) & (np.arange(len(family)) != row))
    return tuple(int(i) for i in others[np.lexsort((others, -scores[others]))])
