"""Retrieve the entity sets (or, for OpenAPI services, the operations) a business question
needs (``kg retrieve``). The one retrieval engine: ``kg retrieve``, ``kg eval retrieval`` and
``kg eval socbench`` all rank through :class:`Retriever` with a method of :data:`METHODS`.

Methods (``--method``; the registry :data:`METHODS` holds each one's name, description and
implementation, and the CLI choices, the evaluations and the docs take them from it):

* ``dense``: the entity sets whose summaries are nearest to the query (HNSW, cosine).
* ``tokens``: BM25 (bm25s) over the same summaries: the lexical baseline.
* ``hybrid-paper``: the paper's algorithm: dense seeds, each followed by the entity sets of
  the activities after the seed's activities (``queries/expand.rq``, ``bpmn:next{1,h}``).
* ``hybrid`` (default): routed (:mod:`processkg.retrieve.routing`): a classifier decides what
  kind of request the query is (an object, an object and its details, a process situation, a
  multi-step task) and the learned ranking model of that kind scores every entity set from its
  signals (:mod:`processkg.retrieve.signals`: dense, BM25, the activities that use it, the
  process steps after or before the one the query describes, navigation targets); near-duplicates
  share one slot (``alternatives``). Learned on the train split of ``data/sap/benchmark``
  (``kg eval train-ranker``, ``docs/retrieval.md``). Without a process layer (no activity uses an
  entity set) it fuses BM25 and dense only, BM25 weighing more the longer the query
  (:func:`lexical_dense`), and expands nothing.
* ``hybrid-v1``: the first hybrid, kept for comparison: seeds fused (reciprocal rank fusion)
  from dense over entity sets, the activity-chain ranking (BPMN activities A -> ... -> B matched
  at both ends, the entity sets of B through ``uses:entitySet``), BM25, and the entity sets of
  the nearest activities; for a query about an object rather than a process step (its best
  entity set is about as near as its best activity) also the navigation targets of the nearest
  entity sets; each seed followed by its best downstream entity set. Chosen by forward
  selection on the train split (``benchmarks/bench_retrieve.py --eval``).
* ``chunkrag``: the paper's baseline: raw metadata chunks, mapped back to entity sets.

In ``hybrid-paper`` and ``hybrid-v1`` expansion inserts downstream entity sets right after their
seed, keeps the seeds' order, drops duplicates and cuts the list at ``k``; in ``hybrid`` a set
reached along ``bpmn:next`` competes for its slot on its score. Every result says how it was
found (``source``, :data:`SOURCES`) and through which path (``via``, activity names).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, replace
from itertools import pairwise
from typing import Any, TypeAlias, cast

import numpy as np
from threadpoolctl import threadpool_limits

from processkg.aliases import JSONObject
from processkg.errors import EmptyQueryError, IndexNotFoundError, ProcessKGError
from processkg.graph.handle import StoreHandle
from processkg.graph.store import StoreGraph, load_query, select
from processkg.retrieve.goals import goal_order
from processkg.retrieve.index import Encoder, load_index, model_id
from processkg.retrieve.lexical import Lexical, tokenize
from processkg.retrieve.routing import KINDS, Pick, RoutedModel, load_model, pick_ranked
from processkg.retrieve.signals import SIGNALS, Paths, ProcessMatrices, QuerySignals, steps_of
from processkg.retrieve.tables import edge_rows, item_rows, read_edges, read_lexical

Path_: TypeAlias = tuple[str, ...]
"""A walk along bpmn:next: the activity IRIs (or names, once shown) from a seed onwards."""

DEFAULT_HOPS = 2
MAX_HOPS = 6
RRF_K = 60  # reciprocal rank fusion constant (Cormack et al. 2009)
CANDIDATES = 20  # entries of each list fused by ``hybrid-v1``
LEXICAL_EVEN = 4  # ``hybrid`` without a process layer: query length (content words) at which BM25 and dense
# weigh the same; chosen on SOCBench-D instances 1-2 and the SAP train split (docs/socbench.md)
NAVIGATION_SEEDS = 3  # the nearest entity sets whose navigation targets ``hybrid-v1`` ranks
VERIFY_MARGIN = 0.05
CHUNKS_PER_RESULT = 10
#: What a result's ``source`` says: matched itself (or through an activity that uses it), reached
#: along ``bpmn:next`` after the matched step, reached backwards (a step before the matched one),
#: a navigation target of a matched entity set, or a set that follows a matched one in the document
#: flow inferred from the metadata (``kg:inferredNext``), or one whose write followed a matched one's
#: in a recorded case (``kg:minedNext``).
SOURCES = ("seed", "expanded", "preceding", "navigation", "inferred", "mined")


@dataclass(frozen=True)
class Result:
    """One retrieved entity set."""

    service: str
    entity_set: str
    score: float
    source: str = "seed"  # see SOURCES
    # the path that led here: activity names (or, for "navigation", the entity set navigated from)
    via: tuple[str, ...] = ()
    iri: str = ""
    # near-duplicates returned in this one slot: (service, entity_set) pairs
    alternatives: tuple[tuple[str, str], ...] = ()

    def as_json(self) -> JSONObject:
        return {
            "service": self.service,
            "entity_set": self.entity_set,
            "score": round(float(self.score), 4),
            "source": self.source,
            "via": list(self.via),
            "alternatives": [{"service": s, "entity_set": e} for s, e in self.alternatives],
        }

    def path_text(self) -> str:
        """``via`` as one line: "A > B" along ``bpmn:next``, "C < B" for a step before C."""
        return (" < " if self.source == "preceding" else " > ").join(self.via)


@dataclass(frozen=True)
class RetrievalSettings:
    """How to retrieve: the method and the ablation switches."""

    method: str = "hybrid"
    hops: int = DEFAULT_HOPS
    mapping_edges: bool = True
    sequence_edges: bool = True
    verify_seeds: bool = False

    def check(self) -> RetrievalSettings:
        if self.method not in METHODS:
            raise ProcessKGError(f"unknown method {self.method!r}; choose one of {', '.join(METHODS)}")
        if not 0 <= self.hops <= MAX_HOPS:
            raise ProcessKGError(f"--hops must be between 0 and {MAX_HOPS}, not {self.hops}")
        return self

    def hop_range(self, paper: bool) -> tuple[int, int]:
        """(min, max) hops along bpmn:next; without sequence edges only the seed's own activities."""
        if not self.sequence_edges:
            return 0, 0
        return (1 if paper else 0), self.hops


def check_query(query: str) -> str:
    """A query must say something: an empty one would return arbitrary results (dense ranks
    the embedding of nothing), so it is refused."""
    if not isinstance(query, str) or not query.strip():
        raise EmptyQueryError("the query is empty: give the question to retrieve for")
    return query


def _ranked(scores: np.ndarray, limit: int, positive: bool = False) -> list[int]:
    """Row ids by descending score (ties by row), at most ``limit``."""
    order = np.lexsort((np.arange(len(scores)), -scores))[:limit]
    return [int(i) for i in order if not positive or scores[i] > 0]


# ---------------------------------------------------------------- the retriever


class Retriever:
    """Opens a store and its index once; answers any number of queries with any method."""

    def __init__(self, handle: StoreHandle, model: str | None = None) -> None:
        # numpy's BLAS on one thread in this process: the query's products with every set and activity
        # vector are then summed in the same order whatever the number of cores (the similarities' last
        # bits, so ties, no longer depend on it; the tests pin rankings with one thread), and an idle
        # second BLAS thread no longer spins against the rest of the query (docs/performance.md).
        # The embedding model's threads (torch, OpenMP) are not BLAS and keep their setting.
        threadpool_limits(limits=1, user_api="blas")
        self.handle = handle  # the graph and the index of one build
        self.store = handle.graph
        self.index = load_index(handle)
        if model and model_id(model) != self.index.model:
            raise IndexNotFoundError(
                f"the index of {handle} was built with {self.index.model}, not "
                f"{model_id(model)}; rebuild it with `kg index --model {model}`"
            )
        self.encoder = Encoder(self.index.model)
        self.sets = self.index.items["set"]
        self.activities = self.index.items["activity"]
        self.set_texts = [s["text"] for s in self.sets]  # goal_order's summaries, not listed per query
        self.set_row = {s["iri"]: i for i, s in enumerate(self.sets)}
        self.activity_name = {a["iri"]: a["name"] for a in self.activities}
        self._edges: dict[str, np.ndarray] = {}  # edge table name -> row pairs (tables.EDGES)
        self._uses: dict[str, list[int]] | None = None
        self._navigations: dict[int, list[int]] | None = None
        self._flows: dict[int, list[int]] | None = None
        self._lexical: Lexical | None = None
        self._matrices: ProcessMatrices | None = None
        self._activity_lexical: Lexical | None = None
        self._ablated: dict[tuple[bool, bool], ProcessMatrices] = {}  # (mapping edges, sequence edges) ->
        self._steps: dict[str, np.ndarray] = {}  # query -> embeddings of its steps (retrieve_many: one batch)
        self._chains: dict[tuple[str, int, int], list[tuple[int, Path_]]] = {}  # (seed, hops) -> chain
        self.expansion = {"seeds": 0, "rows": 0}  # expand.rq runs and the rows they returned

    def edges(self, name: str) -> np.ndarray:
        """The row pairs of edge table ``name`` (:data:`~processkg.retrieve.tables.EDGES`): the ones
        ``kg index`` kept, or, missing or stale, from the store's query; read when first needed."""
        if name not in self._edges:
            kept = read_edges(self.handle.index_dir, name, self.index.items)
            self._edges[name] = kept if kept is not None else edge_rows(self.store, name, item_rows(self.index.items))
        return self._edges[name]

    @property
    def uses(self) -> dict[str, list[int]]:
        """Activity IRI -> the rows of the entity sets it uses (``uses:entitySet``)."""
        if self._uses is None:
            uses = defaultdict(list)
            for activity, row in self.edges("uses").tolist():
                uses[self.activities[activity]["iri"]].append(row)
            self._uses = dict(uses)
        return self._uses

    @property
    def navigations(self) -> dict[int, list[int]]:
        """Row -> the rows of its navigation targets."""
        if self._navigations is None:
            self._navigations = _lists(self.edges("navigations"))
        return self._navigations

    @property
    def flows(self) -> dict[int, list[int]]:
        """Row -> the rows that follow it in the inferred document flow (``retrieve-flow.rq``)."""
        if self._flows is None:
            self._flows = _lists(self.edges("flow"))
        return self._flows

    @property
    def lexical(self) -> Lexical:
        """BM25 over the entity-set texts: the one ``kg index`` kept, or built when missing or stale."""
        if self._lexical is None:
            kept = read_lexical(self.handle.index_dir, "set", self.set_texts)
            self._lexical = kept if kept is not None else Lexical.of_texts(self.set_texts)
        return self._lexical

    @property
    def activity_lexical(self) -> Lexical:
        """BM25 over the activity texts: the query's words matched to process steps."""
        if self._activity_lexical is None:
            texts = [a["text"] for a in self.activities]
            kept = read_lexical(self.handle.index_dir, "activity", texts)
            self._activity_lexical = kept if kept is not None else Lexical.of_texts(texts)
        return self._activity_lexical

    @property
    def matrices(self) -> ProcessMatrices:
        """The process layer and navigations as matrices, for the signals of the routed ``hybrid``."""
        if self._matrices is None:
            self._matrices = self._process_matrices()
        return self._matrices

    def add_proposed_uses(self, pairs: np.ndarray, weights: np.ndarray) -> None:
        """Let the routed hybrid also walk these (activity row, entity-set row) pairs as uses, each with
        its weight in (0, 1] (``kg eval processes --scored-candidates``: proposals with their scores,
        given at run time, not in the store): an activity signal carries the activity's similarity
        times the weight. The other methods do not see them."""
        self._matrices = self._process_matrices(
            np.asarray(pairs, dtype=np.int64).reshape(-1, 2), np.asarray(weights, dtype=np.float32)
        )
        self._ablated = {}

    def _process_matrices(
        self, proposed: np.ndarray | None = None, proposed_weights: np.ndarray | None = None
    ) -> ProcessMatrices:
        vectors = self.index.vectors
        return ProcessMatrices(
            [s["name"] for s in self.sets],
            vectors["set"],
            vectors["activity"],
            self.edges("uses"),
            self.edges("next"),
            self.edges("navigations"),
            self.edges("flow"),
            self.edges("mined"),
            proposed,
            proposed_weights,
        )

    def matrices_for(self, settings: RetrievalSettings) -> ProcessMatrices:
        """The matrices with the edges an ablation leaves out removed."""
        key = (settings.mapping_edges, settings.sequence_edges)
        if key == (True, True):
            return self.matrices
        if key not in self._ablated:
            self._ablated[key] = self.matrices.ablated(*key)
        return self._ablated[key]

    def signals(
        self, query: str, vector: np.ndarray, matrices: ProcessMatrices | None = None, names: tuple[str, ...] = SIGNALS
    ) -> QuerySignals:
        """The signals ``names`` of :mod:`processkg.retrieve.signals` (all unless told) for every entity
        set, for one query."""
        steps = self._steps[query] if query in self._steps else self.embed_steps([query])[0]
        words = self.activity_lexical.scores(query)
        return (matrices or self.matrices).signals(vector, self.lexical.scores(query), query, steps, words, names)

    def embed_steps(self, queries: list[str]) -> list[np.ndarray]:
        """The embeddings of each query's steps (:func:`~processkg.retrieve.signals.steps_of`), in one call."""
        parts = [steps_of(q) for q in queries]
        flat = [p for ps in parts for p in ps]
        vectors = self.embed(flat) if flat else np.zeros((0, self.index.dim), dtype=np.float32)
        bounds = np.cumsum([0] + [len(ps) for ps in parts])
        return [vectors[a:b] for a, b in pairwise(bounds)]

    def embed_with_steps(self, queries: list[str]) -> tuple[np.ndarray, list[np.ndarray]]:
        """The embeddings of the queries and of each one's steps, in one call of the model: a query with
        steps costs one call, not two (a resident retriever's warm query). Batched together, a vector's
        last bits may differ from those of separate calls (as a query's do between batches of queries);
        the rankings of the 330 benchmark queries are the same (docs/performance.md)."""
        parts = [steps_of(q) for q in queries]
        vectors = self.embed(list(queries) + [p for ps in parts for p in ps])
        bounds = len(queries) + np.cumsum([0] + [len(ps) for ps in parts])
        return vectors[: len(queries)], [vectors[a:b] for a, b in pairwise(bounds)]

    # ------------------------------------------------------------ public API
    def embed(self, queries: list[str]) -> np.ndarray:
        """The normalised embeddings of ``queries`` (:meth:`~processkg.retrieve.index.Encoder.encode_queries`)."""
        return self.encoder.encode_queries(list(queries))

    def retrieve(
        self,
        query: str,
        k: int = 5,
        settings: RetrievalSettings | None = None,
        vector: np.ndarray | None = None,
        **options: int | bool | str,
    ) -> list[Result]:
        """The top ``k`` entity sets for ``query``; ``options`` override ``settings`` fields."""
        settings = replace(settings or RetrievalSettings(), **cast(dict[str, Any], options)).check()
        if k < 1:
            raise ProcessKGError(f"-k must be at least 1, not {k}")
        check_query(query)
        if vector is None and METHODS[settings.method].dense:
            vector = self.embed([query])[0]
        return METHODS[settings.method].run(self, query, vector, k, settings)

    def retrieve_many(
        self, queries: list[str], k: int = 5, settings: RetrievalSettings | None = None, **options: int | bool | str
    ) -> list[list[Result]]:
        """Batch retrieval: all query embeddings (for ``hybrid`` on a store with a process layer, with
        their steps'; without one, ``hybrid`` does not read them) computed in one call."""
        settings = replace(settings or RetrievalSettings(), **cast(dict[str, Any], options)).check()
        for query in queries:
            check_query(query)
        dense = METHODS[settings.method].dense and queries
        vectors: np.ndarray | list[None] = [None] * len(queries)
        if METHODS[settings.method].steps and queries and self.matrices.has_process:
            vectors, steps = self.embed_with_steps(queries)
            self._steps = dict(zip(queries, steps))
        elif dense:
            vectors = self.embed(queries)
        try:
            return [self.retrieve(q, k, settings, vector=v) for q, v in zip(queries, vectors)]
        finally:
            self._steps = {}

    def routed_many(self, model: RoutedModel, queries: list[str], k: int) -> list[list[Result]]:
        """Batch retrieval with a routed model other than the shipped one (an evaluation's)."""
        for query in queries:
            check_query(query)
        vectors = self.embed(queries)
        self._steps = dict(zip(queries, self.embed_steps(queries)))
        try:
            return [routed_results(self, model, q, v, k, RetrievalSettings()) for q, v in zip(queries, vectors)]
        finally:
            self._steps = {}

    # ------------------------------------------------------------ building blocks
    def result(self, row: int, score: float, source: str = "seed", via: tuple[str, ...] = ()) -> Result:
        s = self.sets[row]
        return Result(s["service"], s["name"], float(score), source, via, s["iri"])

    def dense_sets(self, vector: np.ndarray, n: int) -> list[tuple[int, float]]:
        ids, sims = self.index.hnsw["set"].search(vector, n)
        return list(zip(ids.tolist(), sims.tolist()))

    def dense_activities(self, vector: np.ndarray, n: int) -> list[tuple[str, float]]:
        ids, sims = self.index.hnsw["activity"].search(vector, n)
        return [(self.activities[i]["iri"], s) for i, s in zip(ids.tolist(), sims.tolist())]

    def similarity(self, vector: np.ndarray, row: int) -> float:
        return float(self.index.vectors["set"][row] @ vector)

    def chain(self, seed: str, min_hops: int, max_hops: int) -> list[tuple[int, Path_]]:
        """Entity sets (rows) downstream of ``seed`` (entity set or activity IRI), with their chains."""
        key = (seed, min_hops, max_hops)
        if key not in self._chains:
            self._chains[key] = self._walk(seed, min_hops, max_hops)
        return self._chains[key]

    def _walk(self, seed: str, min_hops: int, max_hops: int) -> list[tuple[int, Path_]]:
        starts, nexts, uses = _subgraph(self.store, seed, self.expansion)
        found: dict[str, tuple[int, Path_]] = {}
        frontier: list[tuple[str, Path_]] = [(a, (a,)) for a in sorted(starts, key=self._activity_key)]
        seen = set(starts)
        for hops in range(max_hops + 1):
            for activity, path in frontier:
                if hops >= min_hops:
                    for iri in sorted(uses.get(activity, ())):
                        if iri in self.set_row and iri != seed and iri not in found:
                            found[iri] = (self.set_row[iri], path)
            frontier = self._step(frontier, nexts, seen)
        return list(found.values())

    def _step(
        self, frontier: list[tuple[str, Path_]], nexts: dict[str, set[str]], seen: set[str]
    ) -> list[tuple[str, Path_]]:
        out = []
        for activity, path in frontier:
            for nxt in sorted(nexts.get(activity, ()), key=self._activity_key):
                if nxt not in seen:
                    seen.add(nxt)
                    out.append((nxt, path + (nxt,)))
        return out

    def _activity_key(self, iri: str) -> tuple[str, str]:
        return (self.activity_name.get(iri) or "", iri)

    def names(self, path: Path_) -> Path_:
        return tuple(self.activity_name.get(a) or a.rsplit("/", 1)[-1] for a in path)

    def verified(self, query: str, row: int, score: float, best: float) -> bool:
        """``--verify-seeds``: a seed is expanded only with lexical support or a near-best score."""
        if score >= best - VERIFY_MARGIN:
            return True
        return bool(set(tokenize(query)) & set(tokenize(self.sets[row]["text"])))


def _lists(pairs: np.ndarray) -> dict[int, list[int]]:
    """Row -> the rows paired with it, in the pairs' order."""
    lists = defaultdict(list)
    for a, b in pairs.tolist():
        lists[a].append(b)
    return dict(lists)


def _subgraph(
    store: StoreGraph, seed: str, counts: dict[str, int] | None = None
) -> tuple[set[str], dict[str, set[str]], dict[str, set[str]]]:
    """The process edges downstream of ``seed``: start activities, bpmn:next and uses:entitySet.
    ``counts`` (seeds, rows) is told what the query returned: evidence for the evaluations."""
    starts, nexts, uses = set(), defaultdict(set), defaultdict(set)
    rows = list(select(store, load_query("expand"), {"seed": seed})[1])
    if counts is not None:
        counts["seeds"] += 1
        counts["rows"] += len(rows)
    for _seed, start, source, target, entity_set in rows:
        starts.add(start.value)
        if target is not None:
            nexts[source.value].add(target.value)
        if entity_set is not None:
            uses[source.value].add(entity_set.value)
    return starts, nexts, uses


# ---------------------------------------------------------------- methods


def dense(r: Retriever, query: str, vector: np.ndarray, k: int, settings: RetrievalSettings) -> list[Result]:
    return [r.result(row, score) for row, score in r.dense_sets(vector, k)]


def tokens(r: Retriever, query: str, vector: np.ndarray, k: int, settings: RetrievalSettings) -> list[Result]:
    scores = r.lexical.scores(query)
    return [r.result(row, scores[row]) for row in _ranked(scores, k, positive=True)]


class _Ranking:
    """An ordered, duplicate-free result list, cut at ``k``."""

    def __init__(self, k: int) -> None:
        self.k = k
        self.items: list[Result] = []
        self.seen: set[str] = set()  # IRIs

    @property
    def full(self) -> bool:
        return len(self.items) >= self.k

    def add(self, result: Result) -> None:
        if not self.full and result.iri not in self.seen:
            self.seen.add(result.iri)
            self.items.append(result)


def hybrid_paper(r: Retriever, query: str, vector: np.ndarray, k: int, settings: RetrievalSettings) -> list[Result]:
    """Dense seeds in dense order, each followed by its downstream entity sets."""
    seeds = r.dense_sets(vector, k)
    best = seeds[0][1] if seeds else 0.0
    out = _Ranking(k)
    for row, score in seeds:
        out.add(r.result(row, score))
        if _expands(r, settings, query, row, score, best):
            _expand(r, out, r.sets[row]["iri"], score, settings.hop_range(paper=True), ())
    return out.items


def _expands(r: Retriever, settings: RetrievalSettings, query: str, row: int, score: float, best: float) -> bool:
    if not settings.mapping_edges:
        return False
    return not settings.verify_seeds or r.verified(query, row, score, best)


def _expand(r: Retriever, out: _Ranking, seed: str, score: float, hops: tuple[int, int], prefix: Path_) -> None:
    for row, path in r.chain(seed, *hops):
        if out.full:
            return
        out.add(r.result(row, score, "expanded", prefix + r.names(path)))


@dataclass(frozen=True)
class HybridConfig:
    """The parts of ``hybrid-v1`` beyond the paper. The default keeps only what won on the train
    split (``benchmarks/bench_retrieve.py --eval``); the other switches stay for re-running that
    selection on another query set."""

    lists: tuple[str, ...] = ("dense", "chain", "tokens", "activity")  # rankings fused into seeds
    object_lists: tuple[str, ...] = ("navigation",)  # fused too when the query is about an object (below)
    object_margin: float = 0.05  # object query: best entity set similarity >= best activity's - margin
    min_hops: int = 1  # 0: a seed's co-used entity sets (same activity) count as expansions too
    per_seed: int = 1  # at most this many expansions per seed (0: no cap)
    rank_expansions: bool = True  # order a seed's expansions by hops, then similarity to the query
    expand_from: str = "end"  # "end": from the last activity of the seed's path; "start": its first


HYBRID = HybridConfig()


@dataclass
class _Seed:
    row: int
    score: float = 0.0
    path: Path_ = ()  # activity IRIs through which the entity set was reached, if any
    dense: float = 0.0
    direct: bool = False  # matched on its own summary (dense or tokens), not only through an activity


def fused_seeds(
    r: Retriever,
    query: str,
    vector: np.ndarray,
    settings: RetrievalSettings,
    config: HybridConfig = HYBRID,
    n: int = CANDIDATES,
) -> list[_Seed]:
    """Candidates by reciprocal rank fusion of the rankings named in ``config.lists``."""
    seeds: dict[int, _Seed] = {}
    for name in config.lists + (config.object_lists if _object_query(r, vector, config) else ()):
        if name in ("activity", "chain") and not settings.mapping_edges:
            continue
        for rank, (row, path) in enumerate(_LISTS[name](r, query, vector, n, settings), 1):
            seed = seeds.setdefault(row, _Seed(row, dense=r.similarity(vector, row)))
            seed.score += 1.0 / (RRF_K + rank)
            seed.path = seed.path or path
            seed.direct = seed.direct or not path
    return sorted(seeds.values(), key=lambda s: (-s.score, -s.dense, s.row))


def _object_query(r: Retriever, vector: np.ndarray, config: HybridConfig) -> bool:
    """Does the query match an entity set about as well as a process activity ("the items of
    sales order 4711") rather than describe a process step ("now charge the customer")? Never
    without a process layer: the test needs activities (and was only tuned with them)."""
    if not config.object_lists or not r.activities or not r.sets:
        return False
    best_set = r.dense_sets(vector, 1)[0][1]
    return best_set >= r.dense_activities(vector, 1)[0][1] - config.object_margin


def _dense_list(
    r: Retriever, query: str, vector: np.ndarray, n: int, settings: RetrievalSettings
) -> list[tuple[int, Path_]]:
    return [(row, ()) for row, _sim in r.dense_sets(vector, n)]


def _token_list(
    r: Retriever, query: str, vector: np.ndarray, n: int, settings: RetrievalSettings
) -> list[tuple[int, Path_]]:
    return [(row, ()) for row in _ranked(r.lexical.scores(query), n, positive=True)]


def _activity_list(
    r: Retriever, query: str, vector: np.ndarray, n: int, settings: RetrievalSettings
) -> list[tuple[int, Path_]]:
    """Entity sets in the order of the activities (nearest first) that use them."""
    out: list[tuple[int, Path_]] = []
    seen: set[int] = set()
    for activity, _sim in r.dense_activities(vector, n):
        for row in sorted(r.uses.get(activity, ()), key=lambda x: (-r.similarity(vector, x), x)):
            if row not in seen:
                seen.add(row)
                out.append((row, (activity,)))
    return out[:n]


def _chain_list(
    r: Retriever, query: str, vector: np.ndarray, n: int, settings: RetrievalSettings
) -> list[tuple[int, Path_]]:
    """Entity sets by their best activity path A -> ... -> B (0..h hops), scored sim(A) + sim(B):
    "the goods left the warehouse (A), now charge the customer (B)" matches both ends."""
    sim_of = dict(r.dense_activities(vector, len(r.activities)))
    best: dict[int, tuple[float, Path_]] = {}
    for start, sim_a in r.dense_activities(vector, n):
        for row, path in r.chain(start, 0, settings.hop_range(paper=False)[1]):
            score = sim_a + sim_of.get(path[-1], 0.0)
            if row not in best or score > best[row][0]:
                best[row] = (score, path)
    ranked = sorted(best.items(), key=lambda x: (-x[1][0], x[0]))
    return [(row, path) for row, (_score, path) in ranked[:n]]


def _navigation_list(
    r: Retriever, query: str, vector: np.ndarray, n: int, settings: RetrievalSettings
) -> list[tuple[int, Path_]]:
    """The navigation targets (``kg:targetEntitySet``) of the nearest entity sets, most similar
    to the query first: "the schedule lines of order 4711" finds the order, needs its lines."""
    targets = {t for row, _sim in r.dense_sets(vector, NAVIGATION_SEEDS) for t in r.navigations.get(row, ())}
    ranked = sorted(targets, key=lambda row: (-r.similarity(vector, row), row))
    return [(row, ()) for row in ranked[:n]]


_LISTS = {
    "dense": _dense_list,
    "tokens": _token_list,
    "activity": _activity_list,
    "chain": _chain_list,
    "navigation": _navigation_list,
}


def hybrid_v1(
    r: Retriever,
    query: str,
    vector: np.ndarray,
    k: int,
    settings: RetrievalSettings,
    config: HybridConfig = HYBRID,
) -> list[Result]:
    """Fused seeds in fused order, each followed by the entity sets downstream of it."""
    fused = fused_seeds(r, query, vector, settings, config)
    seeds = fused[:k]
    best = max((s.dense for s in seeds), default=0.0)
    low, high = settings.hop_range(paper=False)
    hops = (max(config.min_hops, low), high) if settings.sequence_edges else (0, 0)
    order = dict(enumerate((r.index.vectors["set"] @ vector).tolist())) if config.rank_expansions else {}
    out = _Ranking(k)
    for seed in seeds:
        via = () if seed.direct else seed.path
        out.add(r.result(seed.row, seed.score, "expanded" if len(via) > 1 else "seed", r.names(via)))
        if _expands(r, settings, query, seed.row, seed.dense, best):
            for row, path in _grown(r, seed, hops, config, order):
                out.add(r.result(row, seed.score, "expanded", r.names(_joined(via, path))))
    return out.items


def _grown(
    r: Retriever, seed: _Seed, hops: tuple[int, int], config: HybridConfig, order: dict[int, float]
) -> list[tuple[int, Path_]]:
    """The entity sets downstream of a seed: of the entity set itself if it matched directly,
    else of the activity (path) through which it was reached."""
    if seed.path and not seed.direct:
        start = seed.path[-1] if config.expand_from == "end" else seed.path[0]
    else:
        start = r.sets[seed.row]["iri"]
    chain = [(row, path) for row, path in r.chain(start, *hops) if row != seed.row]
    if config.rank_expansions:  # nearest hop first, then the most similar to the query
        chain = sorted(chain, key=lambda c: (len(c[1]), -order.get(c[0], 0.0)))
    return chain[: config.per_seed] if config.per_seed else chain


def _joined(prefix: Path_, path: Path_) -> Path_:
    """A seed's path followed by an expansion path that starts where the seed's path ends."""
    if prefix and path and prefix[-1] == path[0]:
        return prefix + path[1:]
    return path


def hybrid(r: Retriever, query: str, vector: np.ndarray, k: int, settings: RetrievalSettings) -> list[Result]:
    """The routed ranking (:mod:`processkg.retrieve.routing`): every entity set scored at once by
    the learned models, weighted by the kind of the query; near-duplicates in one slot. Without a
    process layer there is nothing to route on: :func:`lexical_dense`."""
    if not r.matrices.has_process:
        return lexical_dense(r, query, vector, k, settings)
    return routed_results(r, load_model(), query, vector, k, settings)


def lexical_dense(r: Retriever, query: str, vector: np.ndarray, k: int, settings: RetrievalSettings) -> list[Result]:
    """``hybrid`` without a process layer: reciprocal rank fusion (``RRF_K``) of BM25 and dense over
    every entity set, no expansion. BM25 weighs n² / (n² + LEXICAL_EVEN²) for a query of n content
    words (:func:`tokenize`), dense the rest: a long query joins several requests, which one dense
    vector blurs and BM25 matches part by part; a short one names an object, which dense finds
    under other words. An entity set that shares no word with the query gets no BM25 share."""
    n = len(tokenize(query))
    lexical_weight = n * n / (n * n + LEXICAL_EVEN**2)
    lexical = _reciprocal_ranks(r.lexical.scores(query), positive=True)
    similarity = _reciprocal_ranks(r.index.vectors["set"] @ vector, positive=False)
    scores = lexical_weight * lexical + (1 - lexical_weight) * similarity
    return [r.result(row, scores[row]) for row in _ranked(scores, k)]


def _reciprocal_ranks(scores: np.ndarray, positive: bool) -> np.ndarray:
    """1 / (RRF_K + rank) by descending score (ties by row); with ``positive``, 0 for a score <= 0."""
    out = np.zeros(len(scores), dtype=np.float64)
    order = _ranked(scores, len(scores), positive)
    out[order] = 1.0 / (RRF_K + np.arange(1, len(order) + 1))
    return out


def routed_results(
    r: Retriever, model: RoutedModel, query: str, vector: np.ndarray, k: int, settings: RetrievalSettings
) -> list[Result]:
    """The top ``k`` of ``model`` (the shipped one, or one trained for an evaluation)."""
    matrices = r.matrices_for(settings)
    sig = r.signals(query, vector, matrices, model.signals)
    scores, probs = model.scores(query, sig)
    workflow = model.slots_per_step and KINDS[int(probs.argmax())] == "workflow"
    steps = sig.paths.step - 1 if workflow else None
    picks = pick_ranked(scores, matrices.family, k, steps, lambda order: goal_order(query, r.set_texts, order))
    groups = model.explain(sig, probs, [p.row for p in picks])
    return [_routed_result(r, p, float(scores[p.row]), group, sig.paths) for p, group in zip(picks, groups)]


def _routed_result(r: Retriever, chosen: Pick, score: float, group: str, paths: Paths) -> Result:
    source, via = _explained(r, chosen.row, group, paths)
    alternatives = tuple((r.sets[i]["service"], r.sets[i]["name"]) for i in chosen.alternatives)
    return replace(r.result(chosen.row, score, source, via), alternatives=alternatives)


def _explained(r: Retriever, row: int, group: str, paths: Paths) -> tuple[str, tuple[str, ...]]:
    """``source`` and ``via`` of a routed result, from the path behind its strongest signal."""
    path = getattr(paths, group, None) if group != "seed" else None
    rows = (
        tuple(int(p[row]) for p in path) if isinstance(path, tuple) else ((int(path[row]),) if path is not None else ())
    )
    if not rows or min(rows) < 0:
        return "seed", ()
    if group == "navigation":
        return "navigation", (r.sets[rows[0]]["name"],)
    if group == "flow":
        return "inferred", (r.sets[rows[0]]["name"],)
    if group == "mined":
        return "mined", (r.sets[rows[0]]["name"],)
    names = tuple(r.activities[i]["name"] for i in rows)
    if len(names) == 1:
        return "seed", names
    if group == "before":  # (B, C): B uses the set, C matched; walked from C
        return ("expanded" if paths.backward else "preceding"), names[::-1]
    return ("preceding" if paths.backward else "expanded"), names


def chunkrag(r: Retriever, query: str, vector: np.ndarray, k: int, settings: RetrievalSettings) -> list[Result]:
    """Raw-metadata chunks nearest to the query, mapped back to the entity sets they describe."""
    chunks = r.index.items["chunk"]
    if not chunks:
        raise ProcessKGError(
            "the index has no metadata chunks: rebuild it with "
            "`kg index --store DIR --odata METADATA_DIR` to use --method chunkrag"
        )
    ids, sims = r.index.hnsw["chunk"].search(vector, k * CHUNKS_PER_RESULT)
    out = _Ranking(k)
    for i, sim in zip(ids.tolist(), sims.tolist()):
        for iri in chunks[i]["sets"]:
            if iri in r.set_row:
                out.add(r.result(r.set_row[iri], sim))
    return out.items


@dataclass(frozen=True)
class Method:
    """One retrieval method: what it ranks (for ``--help``, reports and docs) and how."""

    name: str
    description: str
    run: Callable[..., list[Result]]  # (retriever, query, vector, k, settings); vector None unless dense
    dense: bool = True  # embeds the query
    steps: bool = False  # also embeds the parts of the query that may name steps (retrieve_many: in one batch)
    chunks: bool = False  # needs raw-metadata chunks (OData only: ``kg index --odata``)


#: The registry of retrieval methods, baselines first. ``kg retrieve --method`` offers these,
#: ``kg eval retrieval`` runs them all by default, ``kg eval socbench`` those without chunks.
METHODS: dict[str, Method] = {
    m.name: m
    for m in (
        Method("dense", "cosine nearest summaries (HNSW over one text per entity set or operation)", dense),
        Method("tokens", "BM25 (bm25s, Lucene) over the same summaries: the lexical baseline", tokens, dense=False),
        Method(
            "chunkrag",
            "the paper's baseline: nearest raw-metadata chunks, mapped back to entity sets",
            chunkrag,
            chunks=True,
        ),
        Method(
            "hybrid-paper",
            "the paper's algorithm: dense seeds, each followed by its process-chain expansion",
            hybrid_paper,
        ),
        Method(
            "hybrid-v1",
            "the first hybrid, kept for comparison: reciprocal rank fusion of dense, activity chain, BM25 and "
            "activity lists (and navigation targets for object queries), each seed followed by its best "
            "downstream entity set",
            hybrid_v1,
        ),
        Method(
            "hybrid",
            "the query's kind (object, object and details, process situation, multi-step task) "
            "decides how learned models weigh dense, BM25, activity, process-step and navigation "
            "signals over every entity set; near-duplicates share one slot; without a process layer, "
            "BM25 and dense fused, BM25 weighing more the longer the query",
            hybrid,
            steps=True,
        ),
    )
}

__all__ = ["METHODS", "Method", "Result", "RetrievalSettings", "Retriever", "tokenize"]
