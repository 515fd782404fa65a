"""What each retrieval signal says about every entity set of a store, for one query, as arrays.

The routed ``hybrid`` ranks all entity sets at once: each signal below is one value per entity
set, computed with matrix operations over the whole store (no Python loop over the sets), and a
learned model (:mod:`processkg.retrieve.routing`) weighs them.

* ``dense``: cosine similarity of the query and the set's summary; ``tokens``: BM25.
* ``activity``: the similarity of the nearest activity that uses the set (``uses:entitySet``):
  "create the billing document" finds the activity, the activity names its set.
* ``after``: the query describes a step A and the set is used by a step B right after it
  (``A bpmn:next B``): "the goods left the warehouse" (A), so billing (B) comes next.
  ``chain`` scores the same path by both ends, sim(A) + sim(B); ``after2`` allows two steps.
* ``before``: the set is used by a step B right *before* the step C the query names: "I need
  to pay the supplier" (C) needs the invoice posted before it (B).
* ``navigation``: the set is a navigation target (``kg:targetEntitySet``) of a set that matches
  the query ("the schedule lines of order 4711").
* ``flow``: the set follows, in the document flow inferred from the metadata
  (``kg:inferredNext``, ``queries/internal/retrieve-flow.rq``), a set that matches the query:
  "the goods left the warehouse" matches the delivery, whose items the billing items refer to;
  ``flow_chain`` scores the edge by both ends. It needs no BPMN and no mapping.
* ``mined``, ``mined_chain``: the same along the flow mined from recorded calls and event logs
  (``kg:minedNext``, ``queries/internal/retrieve-mined.rq``): a write to the set came right after
  a write to a set that matches the query, in some recorded case.
* ``family``: near-duplicates (the same object in another service, ``_2``/``_4`` variants) share
  their best dense similarity, and are returned once (:func:`families`).
* process position: whether an activity that uses the set starts or ends its process.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, fields
from functools import lru_cache
from typing import Any, TypeAlias

import numpy as np

#: The signals, one column each of :meth:`ProcessMatrices.features`, in this order.
SIGNALS = (
    "dense",
    "dense_gap",
    "dense_rank",
    "tokens",
    "tokens_rank",
    "activity",
    "activity_gap",
    "after",
    "after_gap",
    "chain",
    "after2",
    "before",
    "before_gap",
    "navigation",
    "navigation_gap",
    "mapped",
    "starts",
    "ends",
    "family_gap",
    "duplicated",
    "activity_rank",
    "after_rank",
    "chain_rank",
    "after2_rank",
    "before_rank",
    "navigation_rank",
    "step_activity",
    "step_after",
    "step_chain",
    "step_activity_rank",
    "step_after_rank",
    "step_chain_rank",
    "word_activity",
    "word_after",
    "word_chain",
    "word_activity_rank",
    "word_after_rank",
    "word_chain_rank",
    "flow",
    "flow_gap",
    "flow_chain",
    "flow_rank",
    "flow_chain_rank",
    "mined",
    "mined_gap",
    "mined_chain",
    "mined_rank",
    "mined_chain_rank",
)
#: The path each signal stands for, which explains a result (its ``source`` and ``via``).
_PATH_OF = {
    "dense": "seed",
    "tokens": "seed",
    "activity": "activity",
    "after": "after",
    "chain": "chain",
    "after2": "after2",
    "before": "before",
    "navigation": "navigation",
    "flow": "flow",
    "mined": "mined",
}
GROUPS = {n: _PATH_OF[n.split("_")[0]] for n in SIGNALS if n.split("_")[0] in _PATH_OF}
GROUPS.update({"step_activity": "step_activity", "step_activity_rank": "step_activity"})
GROUPS.update({"step_after": "step_after", "step_after_rank": "step_after"})
GROUPS.update({"step_chain": "step_chain", "step_chain_rank": "step_chain"})
GROUPS.update({f"word_{n}{r}": f"word_{n}" for n in ("activity", "after", "chain") for r in ("", "_rank")})
#: Where a query is cut into steps: sentence ends, commas, "then", "and then", "after that".
_CUTS = re.compile(r"(?<=[.?!;:])\s+|,\s+|\s+(?:and then|then|after that|afterwards|and)\s+", re.I)
#: A goal the query says is blocked ("we cannot bill the customer yet"): what it asks for comes
#: *before* the step it names, so the process is walked backwards (``bpmn:next`` reversed).
BLOCKED = re.compile(
    r"\b(cannot|can't|can not|won't|will not|blocked|not yet|before (we|i|you|they) can|first need|prerequisite|is required|are required|requires)\b",
    re.I,
)
_NONE = -1.0  # the value of a path signal for a set that no such path reaches
_SET_GAPS = ("navigation", "flow", "mined")  # gaps to the best entity set; the other path gaps: to the best activity

Columns: TypeAlias = dict[str, np.ndarray]
"""Signals by name: one value per entity set."""
PathValue: TypeAlias = Any
"""One field of :class:`Paths`: an array of rows, or a tuple of them."""
_SUFFIX = re.compile(r"_\d+$")


def steps_of(query: str) -> list[str]:
    """The parts of a query that may each name a step ("raise a requisition, find the usual
    vendor and order from them"): two words or more each; none if the query is one part."""
    parts = [p.strip(" ,.;:!?") for p in _CUTS.split(query)]
    parts = [p for p in parts if len(p.split()) >= 2]
    return parts if len(parts) > 1 else []


def family_key(name: str) -> str:
    """``A_SalesOrder`` and ``SalesOrder``, ``A_ProductionOrderComponent_2`` and ``_4`` share a key."""
    return _SUFFIX.sub("", name.removeprefix("A_")).lower()


def families(names: list[str]) -> np.ndarray:
    """A family id per entity set (row): sets whose names differ only by ``A_`` and ``_N`` share one."""
    ids: dict[str, int] = {}  # family key -> id
    return np.array([ids.setdefault(family_key(n), len(ids)) for n in names], dtype=np.int64)


class Edges:
    """A boolean matrix ``mask[i, j]`` kept as compressed columns: the rows i of each column j that
    holds any, in order (``rows``, column after column; ``starts``: where each of the ``nonempty``
    columns begins): a max per column over the edges alone, not over the whole matrix."""

    def __init__(
        self, columns: int, column_of: np.ndarray, rows: np.ndarray, weights: np.ndarray | None = None
    ) -> None:
        """The edges (``rows[e]``, ``column_of[e]``), sorted by column, then row, without duplicates;
        ``weights[e]`` (float32, > 0) scales what edge e carries (None: every edge carries it whole)."""
        self.columns = columns
        self.rows = rows
        self.column_of = column_of
        self.weights = weights
        first = np.ones(len(rows), dtype=bool)
        first[1:] = column_of[1:] != column_of[:-1]
        self.starts = np.flatnonzero(first)
        self.nonempty = column_of[self.starts]

    @classmethod
    def of_mask(cls, mask: np.ndarray) -> Edges:
        columns, rows = np.nonzero(mask.T)  # column by column, rows in order
        return cls(mask.shape[1], columns.astype(np.int64), rows.astype(np.int64))

    @classmethod
    def of_lists(cls, rows_of: Mapping[int, Iterable[int]], columns: int) -> Edges:
        """The edges of ``mask[i, j] = i in rows_of[j]``, without the ``columns`` x ``columns`` mask (for
        tests that state edges as lists; the retriever builds its edges with :meth:`of_pairs`)."""
        pairs = [(i, j) for j, rows in rows_of.items() for i in rows]
        return cls.of_pairs(np.array(pairs, dtype=np.int64).reshape(-1, 2), columns)

    @classmethod
    def of_pairs(cls, pairs: np.ndarray, columns: int) -> Edges:
        """The edges of ``mask[i, j]`` for each row (i, j) of ``pairs`` (duplicates and order aside),
        without the mask and without a Python loop (the process layer at 100x: 685 MB as a mask)."""
        base = int(pairs[:, 0].max()) + 1 if len(pairs) else 1
        keys = np.unique(pairs[:, 1] * base + pairs[:, 0])  # by column, then row
        return cls(columns, keys // base, keys % base)

    @classmethod
    def of_weighted(cls, pairs: np.ndarray, weights: np.ndarray, columns: int) -> Edges:
        """As :meth:`of_pairs`, each edge with its weight (the largest of an edge given twice)."""
        base = int(pairs[:, 0].max()) + 1 if len(pairs) else 1
        keys = pairs[:, 1] * base + pairs[:, 0]
        order = np.lexsort((-weights, keys))  # by column, then row, the largest weight first
        keys, weights = keys[order], weights[order]
        first = np.ones(len(keys), dtype=bool)
        first[1:] = keys[1:] != keys[:-1]
        keys = keys[first]
        return cls(columns, keys // base, keys % base, weights[first].astype(np.float32))


def _masked_max(edges: Edges, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per column j: the max of ``values[i]`` (float32, finite or ``-inf``, no NaN) over the rows i of
    ``edges`` in column j, and the first such i (-1 where the max is ``-inf``); ``-inf`` and -1 where
    there is no row. The max of each column by ``np.maximum.at`` (an unbuffered max per edge, faster
    than ``reduceat``'s call per column when most columns hold one or two rows), then its first row: the
    first edge of the column whose value equals it (``==``: ``-0.0`` and ``0.0`` alike)."""
    top = np.full(edges.columns, -np.inf, dtype=np.float32)
    rows = np.full(edges.columns, -1, dtype=np.int64)
    if not len(edges.rows):
        return top, rows
    scored = values[edges.rows] if edges.weights is None else values[edges.rows] * edges.weights
    np.maximum.at(top, edges.column_of, scored)
    hits = np.flatnonzero(scored == top[edges.column_of])  # every column holds one at least: its max
    columns = edges.column_of[hits]
    lead = np.ones(len(hits), dtype=bool)
    np.not_equal(columns[1:], columns[:-1], out=lead[1:])
    first = hits[lead]  # per nonempty column, in order: the first edge that holds the max
    best = scored[first]
    top[edges.nonempty] = best
    rows[edges.nonempty] = np.where(np.isfinite(best), edges.rows[first], -1)
    return top, rows


_HIGH = np.uint64(32)
_LOW = np.uint64(0xFFFFFFFF)


def _order_bits(values: np.ndarray) -> np.ndarray:
    """float32 ``values`` (no NaN) as uint32 in the same order, ``-0.0`` and ``0.0`` alike."""
    bits = (values + np.float32(0.0)).view(np.uint32)  # -0.0 + 0.0 is 0.0
    return np.where(bits >= 0x80000000, ~bits, bits | np.uint32(0x80000000))


def _descending(scores: np.ndarray) -> np.ndarray:
    """The positions of float32 ``scores`` (no NaN) by descending score, ties by position: the order
    of a stable sort, from one sort of distinct keys (score, then position)."""
    keys = ((~_order_bits(scores)).astype(np.uint64) << _HIGH) | np.arange(len(scores), dtype=np.uint64)
    return (np.sort(keys) & _LOW).astype(np.int64)


def _rank_feature(scores: np.ndarray, valid: np.ndarray | None = None) -> np.ndarray:
    """1 / log2(rank + 1) where ``valid`` (everywhere when None), 0 elsewhere: 1 for the best,
    falling slowly; the rank among all float32 ``scores``, ties broken by row. When every other score
    is below the valid ones (a path signal's -1 for the sets no path reaches), only the valid rows are
    sorted: at 100x A2X a sort of all 41,100 sets per signal was half of a query's time."""
    rows = np.arange(len(scores)) if valid is None else np.flatnonzero(valid)
    out = np.zeros(len(scores), dtype=np.float32)
    if not len(rows):
        return out
    sub = scores[rows]
    discount = _discounts(len(scores))
    if valid is not None and len(rows) < len(scores) and not scores[~valid].max() < sub.min():  # one ranks among them
        position = np.empty(len(scores), dtype=np.int64)
        position[_descending(scores)] = np.arange(len(scores))
        out[rows] = discount[position[rows]]
    else:  # the valid rows come first: their order among themselves is their rank
        out[rows[_descending(sub)]] = discount[: len(rows)]
    return out


@lru_cache(maxsize=4)
def _discounts(count: int) -> np.ndarray:
    """``1 / log2(rank + 1)`` (float32) of the ranks 1 to ``count``, in order."""
    ranks = np.arange(1, count + 1, dtype=np.float32)
    table = (1.0 / np.log2(ranks + 1.0)).astype(np.float32)
    table.flags.writeable = False  # shared by every call
    return table


@dataclass(init=False)
class Paths:
    """For each entity set, the activities that explain its process signals (-1: none). A field is
    computed when first read (``resolve(name)``): a routed result reads the paths of the few groups
    that explain it, so the paths of the others are not made for every set."""

    activity: np.ndarray  # the nearest activity that uses it
    after: tuple[np.ndarray, np.ndarray]  # (A, B): A then B, B uses it
    chain: tuple[np.ndarray, np.ndarray]  # (A, B) best by sim(A) + sim(B)
    after2: tuple[np.ndarray, np.ndarray, np.ndarray]  # (A, X, B)
    before: tuple[np.ndarray, np.ndarray]  # (B, C): B uses it, C comes after B and matches the query
    navigation: np.ndarray  # the entity set it is navigated to from
    flow: np.ndarray  # the entity set it follows in the inferred document flow
    mined: np.ndarray  # the entity set it follows in the mined flow
    step_activity: np.ndarray  # the activity nearest to one step of the query that uses it
    step_after: tuple[np.ndarray, np.ndarray]  # (A, B): a step of the query matches A, B uses it
    step_chain: tuple[np.ndarray, np.ndarray]  # (A, B): one step matches A, another B, and B uses it
    step: np.ndarray  # which step of the query (0: the whole query) matched its step_activity
    word_activity: np.ndarray  # the same three, with the query's words (BM25) matched to activities
    word_after: tuple[np.ndarray, np.ndarray]
    word_chain: tuple[np.ndarray, np.ndarray]
    backward: bool = False  # the query states a blocked goal: "after" paths walk bpmn:next backwards

    def __init__(self, resolve: Callable[[str], PathValue], backward: bool = False) -> None:
        self._resolve = resolve
        self.backward = backward

    def __getattr__(self, name: str) -> PathValue:  # called for a field not read yet
        if name not in _PATH_FIELDS:
            raise AttributeError(name)
        value = self._resolve(name)
        setattr(self, name, value)
        return value


_PATH_FIELDS = frozenset(f.name for f in fields(Paths))


@dataclass
class QuerySignals:
    """Signals for every entity set of one query: ``features`` (sets x ``names``, all of
    :data:`SIGNALS` unless fewer were asked for) and the paths."""

    features: np.ndarray
    names: tuple[str, ...]  # the signal of each column of ``features``
    paths: Paths
    set_sims: np.ndarray
    activity_sims: np.ndarray
    token_scores: np.ndarray
    activity_token_scores: np.ndarray
    steps: int  # parts of the query matched as steps (0: the query is one part)

    def column(self, name: str) -> np.ndarray:
        """Signal ``name`` of every entity set."""
        return self.features[:, self.names.index(name)]

    def columns(self, names: tuple[str, ...], rows: list[int] | None = None) -> np.ndarray:
        """(sets, ``names``), or (``rows``, ``names``): these signals of every entity set, or of ``rows``."""
        cols = [self.names.index(name) for name in names]
        return np.ascontiguousarray(self.features[:, cols] if rows is None else self.features[np.ix_(rows, cols)])


class ProcessMatrices:
    """The store's process layer and navigations as edges between rows of the index."""

    def __init__(
        self,
        set_names: list[str],
        set_vectors: np.ndarray,
        activity_vectors: np.ndarray,
        uses: np.ndarray,
        next_edges: np.ndarray,
        navigations: np.ndarray,
        flows: np.ndarray,
        mined: np.ndarray,
        proposed: np.ndarray | None = None,
        proposed_weights: np.ndarray | None = None,
    ) -> None:
        """Row pairs, one per edge (:mod:`processkg.retrieve.tables`): ``uses`` (activity, entity set)
        per ``uses:entitySet``; ``next_edges`` (activity, activity) per ``bpmn:next``; ``navigations``
        (set, its navigation target); ``flows`` (set, a set that follows it in the inferred document flow);
        ``mined`` (set, a set whose write followed its write in a recorded case); ``proposed`` (activity,
        entity set) per proposed use (given at run time: :meth:`Retriever.add_proposed_uses`), each with its weight in ``proposed_weights``
        (in (0, 1]): the activity signals walk it as a use, the activity's similarity times the weight."""
        self.set_vectors, self.activity_vectors = set_vectors, activity_vectors
        self.use_pairs, self.next_pairs = uses, next_edges
        self.proposed_pairs = proposed if proposed is not None else np.zeros((0, 2), dtype=np.int64)
        self.proposed_weights = (
            proposed_weights.astype(np.float32) if proposed_weights is not None else np.zeros(0, dtype=np.float32)
        )
        count = len(set_names)
        self.navigated_from = Edges.of_pairs(navigations, count)  # per target: the sets navigated to it from
        self.flows = (
            Edges.of_pairs(flows, count),
            Edges.of_pairs(flows[:, ::-1], count),
        )  # (X before Y per Y, Y after X per X)
        self.mined = (Edges.of_pairs(mined, count), Edges.of_pairs(mined[:, ::-1], count))
        self.family = families(set_names)
        self._position(count)

    @property
    def uses(self) -> np.ndarray:
        """``uses[activity, set]``: the activity uses the set (a mask: 685 MB at 100x; for inspection)."""
        mask = np.zeros((len(self.activity_vectors), len(self.family)), dtype=bool)
        mask[self.use_pairs[:, 0], self.use_pairs[:, 1]] = True
        return mask

    @property
    def next(self) -> np.ndarray:
        """``next[a, b]``: ``a bpmn:next b`` (a mask; for inspection)."""
        mask = np.zeros((len(self.activity_vectors),) * 2, dtype=bool)
        mask[self.next_pairs[:, 0], self.next_pairs[:, 1]] = True
        return mask

    def _position(self, count: int) -> None:
        activities = len(self.activity_vectors)
        starts = np.ones(activities, dtype=bool)  # no step before it
        starts[self.next_pairs[:, 1]] = False
        ends = np.ones(activities, dtype=bool)  # no step after it
        ends[self.next_pairs[:, 0]] = False
        users, sets = self.use_pairs[:, 0], self.use_pairs[:, 1]
        self.mapped = _flags(sets, count)
        self.starts = _flags(sets[starts[users]], count)
        self.ends = _flags(sets[ends[users]], count)
        self.family_size = np.bincount(self.family)[self.family] if count else np.zeros(0, dtype=np.int64)
        if len(self.proposed_pairs):  # a use carries its activity's similarity whole, a proposed use times its weight
            pairs = np.vstack([self.use_pairs, self.proposed_pairs])
            weights = np.concatenate([np.ones(len(self.use_pairs), dtype=np.float32), self.proposed_weights])
            self.used_by = Edges.of_weighted(pairs, weights, count)
        else:
            self.used_by = Edges.of_pairs(self.use_pairs, count)
        # (A -> B per B, B -> C per B)
        self.forward = (
            Edges.of_pairs(self.next_pairs, activities),
            Edges.of_pairs(self.next_pairs[:, ::-1], activities),
        )

    @property
    def has_process(self) -> bool:
        return bool(len(self.use_pairs) or len(self.proposed_pairs))

    def ablated(self, mapping_edges: bool, sequence_edges: bool) -> ProcessMatrices:
        """A copy without the ``uses:entitySet`` or the ``bpmn:next`` edges (``--no-mapping-edges``,
        ``--no-sequence-edges``)."""
        out = copy.copy(self)
        if not mapping_edges:
            out.use_pairs = self.use_pairs[:0]
            out.proposed_pairs, out.proposed_weights = self.proposed_pairs[:0], self.proposed_weights[:0]
        if not sequence_edges:
            out.next_pairs = self.next_pairs[:0]
        out._position(len(self.family))
        return out

    def signals(
        self,
        vector: np.ndarray,
        token_scores: np.ndarray,
        query: str = "",
        steps: np.ndarray | None = None,
        activity_tokens: np.ndarray | None = None,
        names: tuple[str, ...] = SIGNALS,
    ) -> QuerySignals:
        """The signals ``names`` (all of :data:`SIGNALS` unless told) of one query, and every path: its
        normalised embedding, its BM25 scores, its text and the embeddings of its steps
        (:func:`steps_of`; none: the whole query is the only step). A signal left out is not computed
        (a rank feature is a sort of up to every set), nor are the maxima only it needs (a path is made
        from them when it is read), and the others are the same as with all."""
        s = (self.set_vectors @ vector).astype(np.float32, copy=False)
        a = (self.activity_vectors @ vector).astype(np.float32, copy=False)
        backward = bool(BLOCKED.search(query))
        words = activity_tokens if activity_tokens is not None else np.zeros(len(a), dtype=np.float32)
        sims = self._step_similarities(vector, a, steps)
        raw = _Query(self, s, a, sims, _normalised(activity_tokens, len(a)), backward)
        s_max = float(s.max()) if len(s) else 0.0
        a_max = float(a.max()) if len(a) else 0.0
        t_max = float(token_scores.max()) if len(token_scores) else 0.0
        made: Columns = {}

        def column(name: str) -> np.ndarray:  # made when first asked for
            if name not in made:
                made[name] = self._column(name, s, token_scores, raw, (s_max, a_max, t_max), column)
            return made[name]

        features = np.empty((len(s), len(names)), dtype=np.float32, order="F")  # filled column by column
        for i, name in enumerate(names):
            features[:, i] = column(name)
        return QuerySignals(features, names, Paths(raw.path, backward), s, a, token_scores, words, len(sims) - 1)

    def _step_similarities(self, vector: np.ndarray, a: np.ndarray, steps: np.ndarray | None) -> np.ndarray:
        """(parts, activities): the similarities of the query (its first row, ``a``) and of each of its
        steps with every activity. A query of one part is its own only step: its row is ``a``, not a second
        product with every activity vector (numpy computes a one-row matrix product as the matrix-vector
        one, bit for bit). With steps, the query and its steps in one matrix product, with the activity
        vectors as its left operand: the same sums as ``parts @ activities.T``, bit for bit, in half the
        time at 100x A2X (tests/test_tables.py pins both)."""
        if steps is None or not len(steps):
            return a[None, :]
        parts = np.vstack([vector[None, :], steps])
        return (self.activity_vectors @ parts.T).T.astype(np.float32, copy=False)

    def _column(
        self,
        name: str,
        s: np.ndarray,
        token_scores: np.ndarray,
        raw: _Query,
        maxima: tuple[float, float, float],
        column: Callable[[str], np.ndarray],
    ) -> np.ndarray:
        """Signal ``name`` from the dense similarities ``s``, the BM25 scores, the path maxima of the
        query (``raw``; ``-inf`` where no path reaches a set), the best set, activity and BM25 scores,
        and the other signals (``column``)."""
        s_max, a_max, t_max = maxima
        if name in RAW:
            return _finite(raw.column(name))
        if name.endswith("_rank"):
            base = name.removesuffix("_rank")
            if base == "dense":
                return _rank_feature(s)
            if base == "tokens":
                return _rank_feature(token_scores, token_scores > 0)
            return _rank_feature(column(base) + 1e-3 * s, column(base) > _NONE)
        if name.endswith("_gap") and name != "family_gap":
            base = name.removesuffix("_gap")
            return s - s_max if base == "dense" else _finite(raw.column(base) - (s_max if base in _SET_GAPS else a_max))
        fixed = {"mapped": self.mapped, "starts": self.starts, "ends": self.ends}
        if name in fixed:
            return fixed[name]
        if name == "dense":
            return s
        if name == "tokens":
            return token_scores / t_max if t_max > 0 else np.zeros_like(s)
        if name == "family_gap":
            return self._family_best(s) - s
        if name == "duplicated":
            return (self.family_size > 1).astype(np.float32)
        raise KeyError(name)

    def _family_best(self, s: np.ndarray) -> np.ndarray:
        best = np.full(int(self.family.max()) + 1 if len(self.family) else 0, -np.inf, dtype=np.float32)
        np.maximum.at(best, self.family, s)
        return best[self.family]


#: The path signals: a max over the edges of the process layer, navigations or flows, per set
#: (``-inf`` where no such path reaches it), each computed by :class:`_Query` when first needed.
RAW = frozenset(
    ["activity", "after", "chain", "after2", "before", "navigation", "flow", "flow_chain", "mined", "mined_chain"]
    + [f"{prefix}_{n}" for prefix in ("step", "word") for n in ("activity", "after", "chain")]
)


class _Query:
    """The path maxima of one query and the rows behind them, each computed when a signal or a path
    first needs it (and once): a routed model reads 15 of the 48 signals, and a result's explanation
    the paths of the few groups that explain it.

    Over the activity scores of a prefix (``""``: the query, ``step``: its best step, ``word``: BM25 of
    its words): per activity B, the best A with A -> B (``pred``); per set, the best activity that
    uses it (``activity``), the best ``pred`` of one (``after``), the best ``pred`` + its own score
    (``chain``); for the query also two steps (``after2``) and the step before one that matches
    (``before``). Over the dense set similarities: ``navigation``, ``flow`` and ``mined``. ``ahead``
    is ``bpmn:next`` and its reverse (for a blocked goal: the reverse and ``bpmn:next``)."""

    def __init__(
        self, m: ProcessMatrices, s: np.ndarray, a: np.ndarray, sims: np.ndarray, words: np.ndarray, backward: bool
    ) -> None:
        self.m, self.s, self.backward = m, s, backward
        self.ahead = m.forward[::-1] if backward else m.forward  # (X before Y per Y, and the reverse)
        best = sims.max(axis=0) if sims.shape[1] else np.zeros(0, dtype=np.float32)
        self.step_of = sims.argmax(axis=0) if sims.shape[1] else np.zeros(0, dtype=np.int64)
        self.scores = {"": a, "step": best, "word": words}  # per activity, by prefix
        self._made: dict[tuple[str, str], tuple[np.ndarray, np.ndarray]] = {}

    def _max(
        self, key: tuple[str, str], make: Callable[[], tuple[np.ndarray, np.ndarray]]
    ) -> tuple[np.ndarray, np.ndarray]:
        if key not in self._made:
            self._made[key] = make()
        return self._made[key]

    def pred(self, prefix: str) -> tuple[np.ndarray, np.ndarray]:
        return self._max(("pred", prefix), lambda: _masked_max(self.ahead[0], self.scores[prefix]))

    def near(self, prefix: str, kind: str) -> tuple[np.ndarray, np.ndarray]:
        """``activity``, ``after`` or ``chain`` of ``prefix``: the max per set and the activity B behind it."""

        def make() -> tuple[np.ndarray, np.ndarray]:
            if kind == "activity":
                return _masked_max(self.m.used_by, self.scores[prefix])
            pred = self.pred(prefix)[0]
            return _masked_max(self.m.used_by, pred if kind == "after" else pred + self.scores[prefix])

        return self._max((kind, prefix), make)

    def pred2(self) -> tuple[np.ndarray, np.ndarray]:
        """Per activity B: the best A -> X -> B, by sim(A), and X."""
        return self._max(("pred2", ""), lambda: _masked_max(self.ahead[0], self.pred("")[0]))

    def after2(self) -> tuple[np.ndarray, np.ndarray]:
        return self._max(("after2", ""), lambda: _masked_max(self.m.used_by, self.pred2()[0]))

    def succ(self) -> tuple[np.ndarray, np.ndarray]:
        """Per activity B: the best C with B -> C."""
        return self._max(("succ", ""), lambda: _masked_max(self.ahead[1], self.scores[""]))

    def before(self) -> tuple[np.ndarray, np.ndarray]:
        return self._max(("before", ""), lambda: _masked_max(self.m.used_by, self.succ()[0]))

    def sets(self, kind: str) -> tuple[np.ndarray, np.ndarray]:
        """``navigation``, ``flow`` or ``mined``: the best similarity of a set it is reached from, and that set."""

        def make() -> tuple[np.ndarray, np.ndarray]:
            if kind == "navigation":
                return _masked_max(self.m.navigated_from, self.s)
            pair = self.m.flows if kind == "flow" else self.m.mined
            return _masked_max(pair[1 if self.backward else 0], self.s)

        return self._max((kind, ""), make)

    def column(self, name: str) -> np.ndarray:
        """Path signal ``name`` of :data:`RAW`, ``-inf`` where no path reaches a set."""
        if name in ("navigation", "flow", "mined"):
            return self.sets(name)[0]
        if name in ("flow_chain", "mined_chain"):
            return self.sets(name.removesuffix("_chain"))[0] + self.s
        if name == "after2":
            return self.after2()[0]
        if name == "before":
            return self.before()[0]
        prefix, _, kind = name.rpartition("_")
        return self.near(prefix, kind)[0]

    def path(self, name: str) -> PathValue:
        """Field ``name`` of :class:`Paths`."""
        if name in ("navigation", "flow", "mined"):
            return self.sets(name)[1]
        if name == "after2":
            x_of = self.pred2()[1]
            b = self.after2()[1]
            x = _pick(x_of, b)
            return (_pick(self.pred("")[1], x), x, b)
        if name == "before":
            b = self.before()[1]
            return (b, _pick(self.succ()[1], b))
        if name == "step":
            return _pick(self.step_of, self.path("step_activity"))
        prefix, _, kind = name.rpartition("_")
        b = self.near(prefix, kind)[1]
        return b if kind == "activity" else (_pick(self.pred(prefix)[1], b), b)


def _flags(rows: np.ndarray, count: int) -> np.ndarray:
    """1.0 at ``rows``, 0.0 elsewhere."""
    out = np.zeros(count, dtype=np.float32)
    out[rows] = 1.0
    return out


def _finite(values: np.ndarray) -> np.ndarray:
    """A path signal with :data:`_NONE` where no path reaches the set."""
    return np.where(np.isfinite(values), values, _NONE).astype(np.float32)


def _normalised(scores: np.ndarray | None, count: int) -> np.ndarray:
    """BM25 scores divided by the best; ``-inf`` (no match) where a score is 0."""
    if scores is None or not len(scores) or scores.max() <= 0:
        return np.full(count, -np.inf, dtype=np.float32)
    return np.where(scores > 0, scores / scores.max(), -np.inf).astype(np.float32)


def _pick(of: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """``of[rows]`` where rows >= 0, else -1 (everywhere -1 when ``of`` is empty: a store without activities)."""
    if not len(of):
        return np.full(len(rows), -1, dtype=np.int64)
    return np.where(rows >= 0, of[np.maximum(rows, 0)], -1)
