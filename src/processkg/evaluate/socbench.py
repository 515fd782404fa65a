"""SOCBench-D, run by the benchmark's own protocol (``kg eval socbench ROOT --out DIR``).

Layout: ``ROOT/socbenchd_N/NN-domain/NN-Service/openapi.json`` and one
``ROOT/socbenchd_N/NN-domain/queries.json`` per domain:
``{"queries": [{"query": "...", "endpoints": ["POST /path", ...]}]}``.

Protocol (IAAS/SOCBench, ``socbench-d/code/src/benchmark/llama_index.py``): a query searches
only its own domain's endpoints (5 services x 10 operations); a method returns its top k
(k = 5, 10, 20); the recall of a query is the number of *distinct* gold endpoints among them
divided by the number of gold entries the query lists (a query that lists an endpoint twice
cannot reach 1, as in the published figures); the figure is the mean over all queries.

Endpoints are lifted into the graph (:mod:`processkg.sources.openapi`) and read back with SPARQL
(``queries/openapi-endpoints.rq``, ``openapi-endpoint-inputs.rq``); each is ranked under its
qualified id, service + ``METHOD /path``. The gold lists ``METHOD /path`` without the service;
when two services of a domain have the same ``METHOD /path``, either of them in the top k finds
it (the benchmark's code compares unqualified ids, so this is its rule too).

Methods: ``dense`` (cosine over one text per endpoint), ``tokens`` (BM25), ``hybrid``
(reciprocal rank fusion of the dense and BM25 rankings, then process-chain expansion) and
``hybrid-paper`` (dense seeds, each followed by its process-chain expansion). Expansion runs
``queries/expand.rq`` for every seed; the run reports how many rows it returned and how many
process edges the graph holds.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from pyoxigraph import RdfFormat, Store

from processkg.sources import openapi
from processkg.retrieve.index import EmbeddingCache, Encoder
from processkg.errors import InputError, ProcessKGError
from processkg.retrieve.retriever import CANDIDATES, RRF_K, HybridConfig, Lexical
from processkg.graph.store import canonical_ntriples, load_query, plain, select

KS = (5, 10, 20)
METHODS = ("dense", "tokens", "hybrid", "hybrid-paper")
#: The OData hybrid fuses dense with the activity-chain list, which is empty without a process
#: layer; here the lexical list (an option of the same fusion) takes its place.
SOCBENCH_HYBRID = HybridConfig(lists=("dense", "tokens"))
#: Comparisons tested per k (paired, over all queries).
PAIRS = (("hybrid", "tokens"), ("hybrid", "dense"), ("hybrid-paper", "dense"), ("dense", "tokens"))
#: Published figures (README of the data folder; 5 instances, per-query mean recall).
PUBLISHED = {
    "bge-small-en-v1.5, one chunk per endpoint": {5: 0.502, 10: 0.653, 20: 0.835},
    "NV-Embed-v2, summaries (best)": {5: 0.553, 10: 0.735, 20: 0.899},
}
_INSTANCE = re.compile(r"^socbenchd_\d+$")
_ENDPOINT = re.compile(r"^[A-Z]+ /\S*$")


class SOCBenchError(InputError):
    """A SOCBench-D folder or queries.json that does not follow the benchmark's layout."""


# ---------------------------------------------------------------- the benchmark files

@dataclass
class BenchQuery:
    id: str  # instance/domain/index
    text: str
    gold: list  # "METHOD /path", as listed (duplicates kept: the protocol divides by len)


@dataclass
class Domain:
    instance: str
    name: str
    folder: Path
    queries: list = field(default_factory=list)

    @property
    def id(self) -> str:
        return f"{self.instance}/{self.name}"


def find_domains(root: Path, instances=(), domains=()) -> list[Domain]:
    """The domains under ``root`` (``socbenchd_*/*/queries.json``), optionally filtered by name."""
    root = Path(root)
    if not root.is_dir():
        raise ProcessKGError(f"{root}: no such directory (expected the SOCBench-D folder with socbenchd_1, ...)")
    found = []
    for inst in sorted(p for p in root.iterdir() if p.is_dir() and _INSTANCE.match(p.name)):
        if instances and inst.name not in instances:
            continue
        for folder in sorted(p for p in inst.iterdir() if (p / "queries.json").is_file()):
            if not domains or folder.name in domains:
                found.append(Domain(inst.name, folder.name, folder))
    if not found:
        wanted = " ".join(list(instances) + list(domains))
        raise ProcessKGError(f"{root}: no SOCBench-D domain found (socbenchd_N/DOMAIN/queries.json)"
                             + (f" matching {wanted}" if wanted else ""))
    for domain in found:
        domain.queries = read_queries(domain.folder / "queries.json", domain)
    return found


def read_queries(path: Path, domain: Domain) -> list[BenchQuery]:
    """A domain's ``queries.json``; a malformed entry raises naming file, line and JSON pointer."""
    display = f"{domain.id}/queries.json"
    root = openapi.read_json(path, display)
    items = root.get("queries") if isinstance(root, dict) else None
    if not isinstance(items, list):
        raise SOCBenchError("at #/queries: expected an array of queries", display, openapi.line_of(root))
    return [_query(item, i, display, domain) for i, item in enumerate(items)]


def _query(item, i: int, display: str, domain: Domain) -> BenchQuery:
    where = openapi.pointer(("queries", i))
    line = openapi.line_of(item)
    if not isinstance(item, dict) or not isinstance(item.get("query"), str) or not item["query"].strip():
        raise SOCBenchError(f"at {where}: a query needs a non-empty \"query\" string", display, line)
    gold = item.get("endpoints")
    if not isinstance(gold, list) or not gold or not all(isinstance(g, str) and _ENDPOINT.match(g) for g in gold):
        raise SOCBenchError(f"at {where}/endpoints: expected a non-empty array of \"METHOD /path\" strings",
                            display, line)
    return BenchQuery(f"{domain.id}/{i}", item["query"], list(gold))


# ---------------------------------------------------------------- endpoints from the graph

@dataclass
class Endpoint:
    iri: str
    service: str
    endpoint: str  # "METHOD /path"
    text: str

    @property
    def qualified(self) -> str:
        return f"{self.service}: {self.endpoint}"


def domain_graph(domain: Domain) -> Store:
    """An in-memory store with the domain's OpenAPI documents lifted (queries.json is ignored)."""
    result = openapi.lift_all([domain.folder])
    store = Store()
    store.bulk_load(canonical_ntriples(result.triples), format=RdfFormat.N_TRIPLES)
    return store


def read_endpoints(store: Store) -> list[Endpoint]:
    """One text per operation, from ``openapi-endpoints.rq`` and ``openapi-endpoint-inputs.rq``."""
    inputs: dict = {}
    names, rows = select(store, load_query("openapi-endpoint-inputs"))
    for row in rows:
        rec = dict(zip(names, (plain(v) for v in row)))
        inputs.setdefault(rec["op"], []).append(rec)
    names, rows = select(store, load_query("openapi-endpoints"))
    out = []
    for row in rows:
        rec = dict(zip(names, (plain(v) for v in row)))
        out.append(Endpoint(rec["op"], rec["service"], rec["name"], endpoint_text(rec, inputs.get(rec["op"], []))))
    return out


def endpoint_text(op: dict, inputs: list) -> str:
    """Summary, description, method and path, inputs, service title: most telling first, since
    the encoder truncates long texts at the end."""
    lines = [_sentence(op.get("summary")), _sentence(op.get("description")),
             f"{op['method']} {op['path']} ({' '.join(_words(op['path']))})"]
    params = [i for i in inputs if i["location"] != "body"]
    body = [i for i in inputs if i["location"] == "body"]
    if params:
        lines.append("Parameters: " + "; ".join(_input(i, show_location=True) for i in params) + ".")
    if body:
        lines.append("Request body: " + "; ".join(_input(i, show_location=False) for i in body) + ".")
    if op.get("title"):
        lines.append(f"Service: {op['title']}.")
    return "\n".join(line for line in lines if line)


def _input(rec: dict, show_location: bool) -> str:
    head = " ".join(_words(rec["name"]))
    if show_location:
        head += f" ({rec['location']})"
    desc = (rec.get("description") or "").strip().rstrip(".")
    return f"{head}: {desc}" if desc else head


def _sentence(text) -> str:
    text = (text or "").strip()
    return text if not text or text.endswith((".", "!", "?")) else text + "."


def _words(text: str) -> list[str]:
    from processkg.retrieve.texts import words_of

    return [w.lower() for w in words_of(text)]


def process_edges(store: Store) -> dict:
    names, rows = select(store, load_query("openapi-process-edges"))
    return {k: int(plain(v) or 0) for k, v in zip(names, rows[0])} if rows else {}


# ---------------------------------------------------------------- ranking one domain

class DomainIndex:
    """The endpoints of one domain with their vectors, BM25 and the graph for expansion."""

    def __init__(self, store: Store, endpoints: list[Endpoint], vectors: np.ndarray) -> None:
        self.store = store
        self.endpoints = endpoints
        self.vectors = vectors
        self.lexical = Lexical([e.text for e in endpoints])
        self.row_of = {e.iri: i for i, e in enumerate(endpoints)}
        self._downstream: dict = {}
        self.expansion_rows = 0

    def dense(self, vector: np.ndarray) -> list[int]:
        sims = self.vectors @ vector
        return [int(i) for i in np.lexsort((np.arange(len(sims)), -sims))]

    def tokens(self, query: str) -> list[int]:
        scores = self.lexical.scores(query)
        order = np.lexsort((np.arange(len(scores)), -scores))
        return [int(i) for i in order if scores[i] > 0]

    def fused(self, query: str, vector: np.ndarray, config: HybridConfig = SOCBENCH_HYBRID) -> list[int]:
        """Reciprocal rank fusion of the top CANDIDATES of each list (ties: dense similarity, row)."""
        lists = {"dense": lambda: self.dense(vector), "tokens": lambda: self.tokens(query)}
        score: dict = {}
        for name in config.lists:
            for rank, row in enumerate(lists[name]()[:CANDIDATES], 1):
                score[row] = score.get(row, 0.0) + 1.0 / (RRF_K + rank)
        sims = self.vectors @ vector
        return sorted(score, key=lambda row: (-score[row], -float(sims[row]), row))

    @property
    def seeds_expanded(self) -> int:
        return len(self._downstream)

    def downstream(self, row: int) -> list[int]:
        """Endpoints reached from a seed by process-chain expansion (``queries/expand.rq``)."""
        if row not in self._downstream:
            rows = select(self.store, load_query("expand"), {"seed": self.endpoints[row].iri})[1]
            self.expansion_rows += len(rows)
            found = [self.row_of[r[4].value] for r in rows if r[4] is not None and r[4].value in self.row_of]
            self._downstream[row] = sorted(set(found) - {row})
        return self._downstream[row]

    def expanded(self, seeds: list[int], k: int) -> list[int]:
        """Each seed followed by its downstream endpoints; duplicates dropped, cut at k."""
        out: list = []
        for row in seeds:
            for item in [row] + self.downstream(row):
                if item not in out and len(out) < k:
                    out.append(item)
        return out

    def rank(self, method: str, query: str, vector: np.ndarray, k: int) -> list[int]:
        if method == "dense":
            return self.dense(vector)[:k]
        if method == "tokens":
            return self.tokens(query)[:k]
        if method == "hybrid":
            return self.expanded(self.fused(query, vector)[:k], k)
        if method == "hybrid-paper":
            return self.expanded(self.dense(vector)[:k], k)
        raise ProcessKGError(f"unknown method {method!r}; choose one of {', '.join(METHODS)}")


# ---------------------------------------------------------------- metrics

def protocol_recall(retrieved: list[str], gold: list[str], k: int) -> float:
    """Distinct gold endpoints (METHOD /path) among the top k, over the gold entries listed."""
    return len(set(retrieved[:k]) & set(gold)) / len(gold) if gold else 0.0


# ---------------------------------------------------------------- the run

@dataclass
class QueryResult:
    query: BenchQuery
    domain: Domain
    ranked: dict  # method -> [qualified endpoint] (top max(KS))
    recall: dict  # method -> {k: recall}


@dataclass
class Run:
    model: str
    domains: list = field(default_factory=list)
    results: list = field(default_factory=list)  # QueryResult
    endpoints: int = 0
    services: int = 0
    truncated: int = 0  # endpoint texts longer than the encoder reads
    max_tokens: int = 0
    process_edges: dict = field(default_factory=dict)
    expansion_rows: int = 0
    seeds_expanded: int = 0
    missing_gold: list = field(default_factory=list)  # (query id, "METHOD /path") not in the domain


def run(root: Path, model: str | None = None, instances=(), domains=(), cache_dir: Path | None = None,
        progress=None) -> Run:
    """Evaluate every method on every selected domain (see the module docstring for the protocol)."""
    chosen = find_domains(root, instances, domains)
    encoder = Encoder(model)
    cache = EmbeddingCache.load(cache_dir)
    out = Run(encoder.id, chosen)
    limit = int(getattr(encoder.model, "max_seq_length", 0) or 0)
    for domain in chosen:
        if progress:
            progress(domain.id)
        _run_domain(domain, encoder, cache, out, limit)
    if cache_dir:
        cache.save(Path(cache_dir))
    return out


def _run_domain(domain: Domain, encoder: Encoder, cache: EmbeddingCache, out: Run, limit: int) -> None:
    store = domain_graph(domain)
    endpoints = read_endpoints(store)
    texts = [e.text for e in endpoints]
    index = DomainIndex(store, endpoints, cache.embed(encoder, texts))
    _count_texts(out, encoder, texts, limit, {e.service for e in endpoints})
    for edge, count in process_edges(store).items():
        out.process_edges[edge] = out.process_edges.get(edge, 0) + count
    known = {e.endpoint for e in endpoints}
    vectors = cache.embed(encoder, [q.text for q in domain.queries])
    for query, vector in zip(domain.queries, vectors):
        out.missing_gold.extend((query.id, g) for g in dict.fromkeys(query.gold) if g not in known)
        out.results.append(_evaluate(index, domain, query, vector))
    out.expansion_rows += index.expansion_rows
    out.seeds_expanded += index.seeds_expanded


def _count_texts(out: Run, encoder: Encoder, texts: list, limit: int, services: set) -> None:
    out.endpoints += len(texts)
    out.services += len(services)
    lengths = [encoder.count_tokens(t) + 2 for t in texts]  # + [CLS] and [SEP]
    out.max_tokens = max([out.max_tokens] + lengths)
    out.truncated += sum(1 for n in lengths if limit and n > limit)


def _evaluate(index: DomainIndex, domain: Domain, query: BenchQuery, vector: np.ndarray) -> QueryResult:
    ranked, recall = {}, {}
    for method in METHODS:
        rows = index.rank(method, query.text, vector, max(KS))
        ranked[method] = [index.endpoints[r].qualified for r in rows]
        unqualified = [index.endpoints[r].endpoint for r in rows]
        recall[method] = {k: protocol_recall(unqualified, query.gold, k) for k in KS}
    return QueryResult(query, domain, ranked, recall)


# ---------------------------------------------------------------- summaries

def mean_recall(results: list, method: str, k: int) -> float:
    return float(np.mean([r.recall[method][k] for r in results])) if results else 0.0


def summary(results: list) -> dict:
    """{method: {k: mean recall}} over ``results``."""
    return {m: {k: mean_recall(results, m, k) for k in KS} for m in METHODS}


def grouped(results: list, key) -> dict:
    groups: dict = {}
    for r in results:
        groups.setdefault(key(r), []).append(r)
    return {name: {"n": len(rs), "recall": summary(rs)} for name, rs in sorted(groups.items())}


def tests(results: list) -> list[dict]:
    """Paired tests (Wilcoxon signed-rank and permutation, two-sided) per pair and k."""
    from processkg.evaluate.metrics import paired_test

    rows = []
    for a, b in PAIRS:
        for k in KS:
            test = paired_test([r.recall[a][k] for r in results], [r.recall[b][k] for r in results])
            rows.append({"a": a, "b": b, "k": k, **test})
    return rows


def identical_rankings(results: list, a: str, b: str) -> int:
    """Queries on which two methods return the same top max(KS) list."""
    return sum(1 for r in results if r.ranked[a] == r.ranked[b])


# ---------------------------------------------------------------- report

def as_json(result: Run, test_rows: list) -> dict:
    """Everything the report states, plus every query's rankings (deterministic: no timings)."""
    res = result.results
    return {
        "protocol": "per domain; recall = distinct gold METHOD /path in top k / gold entries listed; "
                    "mean over queries",
        "model": result.model, "ks": list(KS), "methods": list(METHODS),
        "hybrid_lists": list(SOCBENCH_HYBRID.lists), "rrf_k": RRF_K, "candidates": CANDIDATES,
        "counts": {"instances": len({d.instance for d in result.domains}), "domains": len(result.domains),
                   "services": result.services, "endpoints": result.endpoints, "queries": len(res),
                   "truncated_texts": result.truncated, "max_text_tokens": result.max_tokens},
        "recall": _keyed(summary(res)),
        "published": {name: _keyed_k(v) for name, v in PUBLISHED.items()},
        "by_instance": _keyed_groups(grouped(res, lambda r: r.domain.instance)),
        "by_domain": _keyed_groups(grouped(res, lambda r: r.domain.name)),
        "tests": test_rows,
        "expansion": expansion_evidence(result),
        "verdict": verdict(result, test_rows),
        "missing_gold": [list(m) for m in result.missing_gold],
    }


def query_records(result: Run) -> list[dict]:
    """One record per query: gold, recall per method and k, and each method's top max(KS)."""
    return [{"id": r.query.id, "query": r.query.text, "gold": r.query.gold, "recall": _keyed(r.recall),
             "ranked": r.ranked} for r in result.results]


def _keyed_k(values: dict) -> dict:
    return {str(k): v for k, v in values.items()}


def _keyed(by_method: dict) -> dict:
    return {m: _keyed_k(v) for m, v in by_method.items()}


def _keyed_groups(groups: dict) -> dict:
    return {name: {"n": g["n"], "recall": _keyed(g["recall"])} for name, g in groups.items()}


def expansion_evidence(result: Run) -> dict:
    n = len(result.results)
    return {
        "process_edges": result.process_edges, "expand_query_rows": result.expansion_rows,
        "seeds_expanded": result.seeds_expanded,
        "queries_hybrid_paper_equals_dense": identical_rankings(result.results, "hybrid-paper", "dense"),
        "queries": n,
    }


def verdict(result: Run, test_rows: list) -> str:
    """Does process-chain expansion add anything on SOCBench-D? Stated from the evidence."""
    ev = expansion_evidence(result)
    same, n = ev["queries_hybrid_paper_equals_dense"], ev["queries"]
    ps = [t for t in test_rows if t["a"] == "hybrid-paper" and t["b"] == "dense"]
    p_text = ", ".join(f"R@{t['k']} diff {t['mean_diff']:+.3f}, Wilcoxon p = {t['wilcoxon_p']:.3g}, "
                       f"permutation p = {t['permutation_p']:.3g}" for t in ps)
    edges = ", ".join(f"{k} = {v}" for k, v in sorted(ev["process_edges"].items()))
    if same == n and ev["expand_query_rows"] == 0:
        return (f"Confirmed: expansion adds nothing without a process layer. The graph holds no process "
                f"edges ({edges}); queries/expand.rq returned {ev['expand_query_rows']} rows for "
                f"{ev['seeds_expanded']} seed endpoints; hybrid-paper returned exactly the dense top "
                f"{max(KS)} on {same} of {n} queries ({p_text}).")
    return (f"Refuted: expansion changed the ranking on {n - same} of {n} queries "
            f"(expand.rq rows: {ev['expand_query_rows']}; {p_text}).")


def render_markdown(data: dict, command: str = "") -> str:
    c = data["counts"]
    lines = ["# SOCBench-D retrieval evaluation", ""]
    if command:
        lines += ["Produced by:", "", "```", command, "```", ""]
    lines += [f"Model: `{data['model']}`. {c['instances']} instances, {c['domains']} domains, "
              f"{c['services']} services, {c['endpoints']} endpoints, {c['queries']} queries. "
              f"Endpoint texts over the encoder's limit (truncated): {c['truncated_texts']} "
              f"(longest {c['max_text_tokens']} tokens).", "",
              "Protocol: " + data["protocol"] + ".", "", "## Recall (mean over queries)", "",
              "| method | R@5 | R@10 | R@20 |", "|---|---|---|---|"]
    for method, rec in data["recall"].items():
        lines.append(f"| {method} (ours) | " + " | ".join(f"{rec[str(k)]:.3f}" for k in KS) + " |")
    for name, rec in data["published"].items():
        lines.append(f"| {name} (published) | " + " | ".join(f"{rec[str(k)]:.3f}" for k in KS) + " |")
    lines += ["", "## Paired tests (per-query recall, two-sided)", "",
              "| a | b | k | n | mean diff | nonzero | Wilcoxon p | permutation p |",
              "|---|---|---|---|---|---|---|---|"]
    for t in data["tests"]:
        lines.append(f"| {t['a']} | {t['b']} | {t['k']} | {t['n']} | {t['mean_diff']:+.3f} | {t['nonzero']} | "
                     f"{t['wilcoxon_p']:.4g} | {t['permutation_p']:.4g} |")
    lines += ["", "## Process-chain expansion", "", data["verdict"], ""]
    lines += _group_table("By instance", data["by_instance"]) + _group_table("By domain", data["by_domain"])
    if data["missing_gold"]:
        lines += ["", f"Gold endpoints absent from their domain: {len(data['missing_gold'])}", ""]
    return "\n".join(lines).rstrip() + "\n"


def _group_table(title: str, groups: dict) -> list[str]:
    head = " | ".join(f"{m} R@{k}" for m in METHODS for k in KS)
    lines = [f"## {title}", "", f"| group | n | {head} |", "|---|---|" + "---|" * (len(METHODS) * len(KS))]
    for name, g in groups.items():
        cells = " | ".join(f"{g['recall'][m][str(k)]:.3f}" for m in METHODS for k in KS)
        lines.append(f"| {name} | {g['n']} | {cells} |")
    return lines + [""]


def write_outputs(data: dict, out: Path, command: str = "", queries: list | None = None) -> list[Path]:
    """``report.md``, ``results.json`` and (given ``queries``) ``queries.jsonl`` into ``out``,
    each replaced atomically; the same input gives the same bytes."""
    import json

    from processkg.graph.store import write_atomic

    out = Path(out)
    written = [out / "report.md", out / "results.json"]
    write_atomic(written[0], render_markdown(data, command).encode("utf-8"))
    write_atomic(written[1], (json.dumps(data, indent=1, sort_keys=True, ensure_ascii=False) + "\n").encode("utf-8"))
    if queries is not None:
        written.append(out / "queries.jsonl")
        lines = [json.dumps(q, sort_keys=True, ensure_ascii=False) + "\n" for q in queries]
        write_atomic(written[2], "".join(lines).encode("utf-8"))
    return written
