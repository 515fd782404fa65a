"""SOCBench-D, run by the benchmark's own protocol (``kg eval socbench ROOT --out DIR``).

Layout: ``ROOT/socbenchd_N/NN-domain/NN-Service/openapi.json`` and one
``ROOT/socbenchd_N/NN-domain/queries.json`` per domain:
``{"queries": [{"query": "...", "endpoints": ["POST /path", ...]}]}``.

Protocol (IAAS/SOCBench, ``socbench-d/code/src/benchmark/llama_index.py``): a query searches
only its own domain's endpoints (5 services x 10 operations); a method returns its top k
(k = 5, 10, 20); the recall of a query is the number of *distinct* gold endpoints among them
divided by the number of gold entries the query lists (a query that lists an endpoint twice
cannot reach 1, as in the published figures); the figure is the mean over all queries.

One retrieval engine: each domain's OpenAPI documents are built into a store of their own
(``kg build --openapi``) with its retrieval index (``kg index``), and every query is answered
by :class:`processkg.retrieve.retriever.Retriever`, the engine of ``kg retrieve`` and
``kg eval retrieval``, with the methods of its registry. The retrieval unit of an OpenAPI store
is the operation (``kg:Operation``, one text per endpoint from ``queries/openapi-endpoints.rq``
and ``openapi-endpoint-inputs.rq``, :func:`processkg.retrieve.texts.operation_items`), ranked
beside entity sets under its service and ``METHOD /path``. The gold lists ``METHOD /path``
without the service; when two services of a domain have the same ``METHOD /path``, either of
them in the top k finds it (the benchmark's code compares unqualified ids, so this is its rule too).

Methods: every method of the registry that needs no OData metadata chunks (:data:`METHODS`).
Without a process layer ``hybrid`` is the length-weighted fusion of BM25 and dense
(:func:`processkg.retrieve.retriever.lexical_dense`, no expansion) and ``hybrid-v1`` fuses dense
and BM25 (its activity lists are empty) and runs ``queries/expand.rq`` for every seed; the run
reports how many rows it returned and how many process edges the graph holds.
"""

from __future__ import annotations

import json
import re
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeAlias

import numpy as np

from processkg.aliases import JSONObject, JSONValue, ProgressCallback
from processkg.errors import ProcessKGError, SOCBenchError
from processkg.evaluate.metrics import paired_test
from processkg.graph.handle import StoreHandle, StoreLocation
from processkg.graph.store import StoreGraph, load_query, plain, select, write_atomic
from processkg.retrieve.index import Encoder, build_index
from processkg.retrieve.retriever import (
    CANDIDATES,
    HYBRID,
    LEXICAL_EVEN,
    RRF_K,
    Result,
    RetrievalSettings,
    Retriever,
)
from processkg.retrieve.retriever import METHODS as RETRIEVAL_METHODS
from processkg.sources import openapi

KS = (5, 10, 20)

BuildStore: TypeAlias = Callable[[Path, StoreLocation], object]
"""``kg build --openapi FOLDER --store STORE --no-index``: builds one domain's store."""
#: The methods of ``kg retrieve``'s registry that need no raw OData metadata chunks (an OpenAPI
#: store has none): the same engine, the same implementations.
METHODS = tuple(name for name, method in RETRIEVAL_METHODS.items() if not method.chunks)
#: Comparisons tested per k (paired, over all queries).
PAIRS = (("hybrid", "tokens"), ("hybrid", "dense"), ("hybrid-paper", "dense"), ("dense", "tokens"))
#: Published figures (README of the data folder; 5 instances, per-query mean recall).
PUBLISHED = {
    "bge-small-en-v1.5, one chunk per endpoint": {5: 0.502, 10: 0.653, 20: 0.835},
    "NV-Embed-v2, summaries (best)": {5: 0.553, 10: 0.735, 20: 0.899},
}
_INSTANCE = re.compile(r"^socbenchd_\d+$")
_ENDPOINT = re.compile(r"^[A-Z]+ /\S*$")


# ---------------------------------------------------------------- the benchmark files


@dataclass
class BenchQuery:
    id: str  # instance/domain/index
    text: str
    gold: list[str]  # "METHOD /path", as listed (duplicates kept: the protocol divides by len)


@dataclass
class Domain:
    instance: str
    name: str
    folder: Path
    queries: list[BenchQuery] = field(default_factory=list)

    @property
    def id(self) -> str:
        return f"{self.instance}/{self.name}"


def find_domains(root: Path, instances: Sequence[str] = (), domains: Sequence[str] = ()) -> list[Domain]:
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
        raise ProcessKGError(
            f"{root}: no SOCBench-D domain found (socbenchd_N/DOMAIN/queries.json)"
            + (f" matching {wanted}" if wanted else "")
        )
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


def _query(item: JSONValue, i: int, display: str, domain: Domain) -> BenchQuery:
    where = openapi.pointer(("queries", i))
    line = openapi.line_of(item)
    if not isinstance(item, dict) or not isinstance(item.get("query"), str) or not item["query"].strip():
        raise SOCBenchError(f'at {where}: a query needs a non-empty "query" string', display, line)
    gold = item.get("endpoints")
    if not isinstance(gold, list) or not gold or not all(isinstance(g, str) and _ENDPOINT.match(g) for g in gold):
        raise SOCBenchError(
            f'at {where}/endpoints: expected a non-empty array of "METHOD /path" strings', display, line
        )
    return BenchQuery(f"{domain.id}/{i}", item["query"], list(gold))


# ---------------------------------------------------------------- one domain, one store


def domain_store(
    domain: Domain, store: StoreLocation, build_store: BuildStore, model: str | None, cache_dir: Path | None
) -> StoreHandle:
    """The domain's OpenAPI documents built into a store (``build_store(folder, store)``, which
    is ``kg build --openapi FOLDER --store STORE --no-index``; queries.json is not OpenAPI and is
    skipped) with its retrieval index (``kg index``): a store like any other, opened."""
    build_store(domain.folder, store)
    build_index(store, model=model, cache_dir=cache_dir, progress=None)
    return StoreHandle.open(store)


def process_edges(store: StoreGraph) -> dict[str, int]:
    names, rows = select(store, load_query("openapi-process-edges"))
    return {k: int(str(plain(v) or 0)) for k, v in zip(names, rows[0], strict=True)} if rows else {}


# ---------------------------------------------------------------- metrics


def protocol_recall(retrieved: list[str], gold: list[str], k: int) -> float:
    """Distinct gold endpoints (METHOD /path) among the top k, over the gold entries listed."""
    return len(set(retrieved[:k]) & set(gold)) / len(gold) if gold else 0.0


# ---------------------------------------------------------------- the run


@dataclass
class QueryResult:
    query: BenchQuery
    domain: Domain
    ranked: dict[str, list[str]]  # method -> [qualified endpoint] (top max(KS))
    recall: dict[str, dict[int, float]]  # method -> {k: recall}


@dataclass
class Run:
    model: str
    domains: list[Domain] = field(default_factory=list)
    results: list[QueryResult] = field(default_factory=list)
    endpoints: int = 0
    services: int = 0
    truncated: int = 0  # endpoint texts longer than the encoder reads
    max_tokens: int = 0
    process_edges: dict[str, int] = field(default_factory=dict)
    expansion_rows: int = 0
    seeds_expanded: int = 0
    missing_gold: list[tuple[str, str]] = field(default_factory=list)  # (query id, "METHOD /path") not in the domain


def run(
    root: Path,
    model: str | None = None,
    instances: Sequence[str] = (),
    domains: Sequence[str] = (),
    cache_dir: Path | None = None,
    progress: ProgressCallback | None = None,
    build_store: BuildStore | None = None,
    stores_dir: Path | None = None,
) -> Run:
    """Evaluate every method on every selected domain (see the module docstring for the protocol).

    ``build_store(openapi_folder, store_dir)`` writes a store (``kg build --openapi``; the CLI
    passes the pipeline's); ``stores_dir`` keeps the per-domain stores (default: a temporary folder)."""
    if build_store is None:
        raise ProcessKGError("socbench.run needs build_store(folder, store): the kg build of an OpenAPI folder")
    chosen = find_domains(root, instances, domains)
    encoder = Encoder(model)
    out = Run(encoder.id, chosen)
    limit = int(getattr(encoder.model, "max_seq_length", 0) or 0)
    with tempfile.TemporaryDirectory(prefix="socbench-") as tmp:
        folder = Path(stores_dir) if stores_dir else Path(tmp)
        for domain in chosen:
            if progress:
                progress(domain.id)
            location = StoreLocation(path=folder / domain.instance / domain.name)
            with domain_store(domain, location, build_store, model, cache_dir) as handle:
                _run_domain(domain, Retriever(handle, model=model), out, limit)
    return out


def _run_domain(domain: Domain, retriever: Retriever, out: Run, limit: int) -> None:
    units = retriever.sets
    _count_texts(out, retriever.encoder, [u["text"] for u in units], limit, {u["service"] for u in units})
    for edge, count in process_edges(retriever.store).items():
        out.process_edges[edge] = out.process_edges.get(edge, 0) + count
    known = {u["name"] for u in units}
    texts = [q.text for q in domain.queries]
    answers = {m: retriever.retrieve_many(texts, max(KS), RetrievalSettings(method=m)) for m in METHODS}
    for i, query in enumerate(domain.queries):
        out.missing_gold.extend((query.id, g) for g in dict.fromkeys(query.gold) if g not in known)
        out.results.append(_evaluate(domain, query, {m: answers[m][i] for m in METHODS}))
    out.expansion_rows += retriever.expansion["rows"]
    out.seeds_expanded += retriever.expansion["seeds"]


def _count_texts(out: Run, encoder: Encoder, texts: list[str], limit: int, services: set[str]) -> None:
    out.endpoints += len(texts)
    out.services += len(services)
    lengths = [encoder.count_tokens(t) + 2 for t in texts]  # + [CLS] and [SEP]
    out.max_tokens = max([out.max_tokens] + lengths)
    out.truncated += sum(1 for n in lengths if limit and n > limit)


def _evaluate(domain: Domain, query: BenchQuery, answers: dict[str, list[Result]]) -> QueryResult:
    """Each method's ranking as qualified ids (``service: METHOD /path``) and its recall."""
    ranked, recall = {}, {}
    for method, results in answers.items():
        ranked[method] = [f"{r.service}: {r.entity_set}" for r in results]
        recall[method] = {k: protocol_recall([r.entity_set for r in results], query.gold, k) for k in KS}
    return QueryResult(query, domain, ranked, recall)


# ---------------------------------------------------------------- summaries


def mean_recall(results: list[QueryResult], method: str, k: int) -> float:
    return float(np.mean([r.recall[method][k] for r in results])) if results else 0.0


def summary(results: list[QueryResult]) -> dict[str, dict[int, float]]:
    """{method: {k: mean recall}} over ``results``."""
    return {m: {k: mean_recall(results, m, k) for k in KS} for m in METHODS}


def grouped(results: list[QueryResult], key: Callable[[QueryResult], str]) -> dict[str, JSONObject]:
    groups: dict[str, list[QueryResult]] = {}
    for r in results:
        groups.setdefault(key(r), []).append(r)
    return {name: {"n": len(rs), "recall": summary(rs)} for name, rs in sorted(groups.items())}


def tests(results: list[QueryResult]) -> list[JSONObject]:
    """Paired tests (Wilcoxon signed-rank and permutation, two-sided) per pair and k."""

    rows = []
    for a, b in PAIRS:
        for k in KS:
            test = paired_test([r.recall[a][k] for r in results], [r.recall[b][k] for r in results])
            rows.append({"a": a, "b": b, "k": k, **test})
    return rows


def identical_rankings(results: list[QueryResult], a: str, b: str) -> int:
    """Queries on which two methods return the same top max(KS) list."""
    return sum(1 for r in results if r.ranked[a] == r.ranked[b])


# ---------------------------------------------------------------- report


def as_json(result: Run, test_rows: list[JSONObject]) -> JSONObject:
    """Everything the report states, plus every query's rankings (deterministic: no timings)."""
    res = result.results
    return {
        "protocol": "per domain; recall = distinct gold METHOD /path in top k / gold entries listed; mean over queries",
        "model": result.model,
        "ks": list(KS),
        "methods": list(METHODS),
        "fusion": {
            "hybrid": {"lists": ["tokens", "dense"], "rrf_k": RRF_K, "lexical_even": LEXICAL_EVEN},
            "hybrid-v1": {"lists": list(HYBRID.lists), "rrf_k": RRF_K, "candidates": CANDIDATES},
        },
        "counts": {
            "instances": len({d.instance for d in result.domains}),
            "domains": len(result.domains),
            "services": result.services,
            "endpoints": result.endpoints,
            "queries": len(res),
            "truncated_texts": result.truncated,
            "max_text_tokens": result.max_tokens,
        },
        "recall": _keyed(summary(res)),
        "published": {name: _keyed_k(v) for name, v in PUBLISHED.items()},
        "by_instance": _keyed_groups(grouped(res, lambda r: r.domain.instance)),
        "by_domain": _keyed_groups(grouped(res, lambda r: r.domain.name)),
        "tests": test_rows,
        "expansion": expansion_evidence(result),
        "verdict": verdict(result, test_rows),
        "missing_gold": [list(m) for m in result.missing_gold],
    }


def query_records(result: Run) -> list[JSONObject]:
    """One record per query: gold, recall per method and k, and each method's top max(KS)."""
    return [
        {"id": r.query.id, "query": r.query.text, "gold": r.query.gold, "recall": _keyed(r.recall), "ranked": r.ranked}
        for r in result.results
    ]


def _keyed_k(values: dict[int, float]) -> dict[str, float]:
    return {str(k): v for k, v in values.items()}


def _keyed(by_method: dict[str, dict[int, float]]) -> dict[str, dict[str, float]]:
    return {m: _keyed_k(v) for m, v in by_method.items()}


def _keyed_groups(groups: dict[str, JSONObject]) -> dict[str, JSONObject]:
    return {name: {"n": g["n"], "recall": _keyed(g["recall"])} for name, g in groups.items()}


def expansion_evidence(result: Run) -> JSONObject:
    n = len(result.results)
    return {
        "process_edges": result.process_edges,
        "expand_query_rows": result.expansion_rows,
        "seeds_expanded": result.seeds_expanded,
        "queries_hybrid_paper_equals_dense": identical_rankings(result.results, "hybrid-paper", "dense"),
        "queries": n,
    }


def verdict(result: Run, test_rows: list[JSONObject]) -> str:
    """Does process-chain expansion add anything on SOCBench-D? Stated from the evidence."""
    ev = expansion_evidence(result)
    same, n = ev["queries_hybrid_paper_equals_dense"], ev["queries"]
    ps = [t for t in test_rows if t["a"] == "hybrid-paper" and t["b"] == "dense"]
    p_text = ", ".join(
        f"R@{t['k']} diff {t['mean_diff']:+.3f}, Wilcoxon p = {t['wilcoxon_p']:.3g}, "
        f"permutation p = {t['permutation_p']:.3g}"
        for t in ps
    )
    edges = ", ".join(f"{k} = {v}" for k, v in sorted(ev["process_edges"].items()))
    if same == n and ev["expand_query_rows"] == 0:
        return (
            f"Confirmed: expansion adds nothing without a process layer. The graph holds no process "
            f"edges ({edges}); queries/expand.rq returned {ev['expand_query_rows']} rows for "
            f"{ev['seeds_expanded']} seed endpoints; hybrid-paper returned exactly the dense top "
            f"{max(KS)} on {same} of {n} queries ({p_text})."
        )
    return (
        f"Refuted: expansion changed the ranking on {n - same} of {n} queries "
        f"(expand.rq rows: {ev['expand_query_rows']}; {p_text})."
    )


def render_markdown(data: JSONObject, command: str = "") -> str:
    c = data["counts"]
    lines = ["# SOCBench-D retrieval evaluation", ""]
    if command:
        lines += ["Produced by:", "", "```", command, "```", ""]
    lines += [
        f"Model: `{data['model']}`. {c['instances']} instances, {c['domains']} domains, "
        f"{c['services']} services, {c['endpoints']} endpoints, {c['queries']} queries. "
        f"Endpoint texts over the encoder's limit (truncated): {c['truncated_texts']} "
        f"(longest {c['max_text_tokens']} tokens).",
        "",
        "Protocol: " + data["protocol"] + ".",
        "",
        "## Recall (mean over queries)",
        "",
        "| method | R@5 | R@10 | R@20 |",
        "|---|---|---|---|",
    ]
    for method, rec in data["recall"].items():
        lines.append(f"| {method} (ours) | " + " | ".join(f"{rec[str(k)]:.3f}" for k in KS) + " |")
    for name, rec in data["published"].items():
        lines.append(f"| {name} (published) | " + " | ".join(f"{rec[str(k)]:.3f}" for k in KS) + " |")
    lines += [
        "",
        "## Paired tests (per-query recall, two-sided)",
        "",
        "| a | b | k | n | mean diff | nonzero | Wilcoxon p | permutation p |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for t in data["tests"]:
        lines.append(
            f"| {t['a']} | {t['b']} | {t['k']} | {t['n']} | {t['mean_diff']:+.3f} | {t['nonzero']} | "
            f"{t['wilcoxon_p']:.4g} | {t['permutation_p']:.4g} |"
        )
    lines += ["", "## Process-chain expansion", "", data["verdict"], ""]
    lines += _group_table("By instance", data["by_instance"]) + _group_table("By domain", data["by_domain"])
    if data["missing_gold"]:
        lines += ["", f"Gold endpoints absent from their domain: {len(data['missing_gold'])}", ""]
    return "\n".join(lines).rstrip() + "\n"


def _group_table(title: str, groups: dict[str, JSONObject]) -> list[str]:
    head = " | ".join(f"{m} R@{k}" for m in METHODS for k in KS)
    lines = [f"## {title}", "", f"| group | n | {head} |", "|---|---|" + "---|" * (len(METHODS) * len(KS))]
    for name, g in groups.items():
        cells = " | ".join(f"{g['recall'][m][str(k)]:.3f}" for m in METHODS for k in KS)
        lines.append(f"| {name} | {g['n']} | {cells} |")
    return lines + [""]


def write_outputs(
    data: JSONObject, out: Path, command: str = "", queries: list[JSONObject] | None = None
) -> list[Path]:
    """``report.md``, ``results.json`` and (given ``queries``) ``queries.jsonl`` into ``out``,
    each replaced atomically; the same input gives the same bytes."""

    out = Path(out)
    written = [out / "report.md", out / "results.json"]
    write_atomic(written[0], render_markdown(data, command).encode("utf-8"))
    write_atomic(written[1], (json.dumps(data, indent=1, sort_keys=True, ensure_ascii=False) + "\n").encode("utf-8"))
    if queries is not None:
        written.append(out / "queries.jsonl")
        lines = [json.dumps(q, sort_keys=True, ensure_ascii=False) + "\n" for q in queries]
        write_atomic(written[2], "".join(lines).encode("utf-8"))
    return written
