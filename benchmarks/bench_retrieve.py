"""Benchmark ``kg retrieve`` (figures, not a timed test): index build time, per-query latency
p50/p95 per method with and without the query embedding, expansion (SPARQL) time, batch
throughput, and typed-context tokens per entity set. With ``--eval``: Recall@3/5 per method and
ablation on a query file with a train/test split, and the forward selection of ``hybrid-v1``'s
additions on the train split. With ``--latency-store``: batch-mode latency per query on a store
with a process layer (the routed ``hybrid`` needs one; without it, it is ``hybrid-v1``).

    .venv/bin/python benchmarks/bench_retrieve.py                 # A2X corpus + demo
    .venv/bin/python benchmarks/bench_retrieve.py --eval benchmarks/retrieve-dev-queries.jsonl
    .venv/bin/python benchmarks/bench_retrieve.py --latency-only --latency-store build/sap \
        --latency-queries data/sap/benchmark/queries.jsonl

Prints the figures and writes them as JSON to ``benchmarks/results/retrieve.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from processkg.build.pipeline import BuildOptions, build_store  # noqa: E402
from processkg.graph.handle import StoreHandle, StoreLocation  # noqa: E402
from processkg.retrieve import retriever as R  # noqa: E402
from processkg.retrieve.context import render_set  # noqa: E402
from processkg.retrieve.index import build_index  # noqa: E402
from processkg.retrieve.retriever import METHODS, HybridConfig, RetrievalSettings, Retriever, _subgraph  # noqa: E402
from processkg.retrieve.signals import steps_of  # noqa: E402

A2X = ROOT.parent / "shared" / "data" / "odata" / "s4-a2x"
DEMO = ROOT / "data" / "demo"
RESULTS = ROOT / "benchmarks" / "results" / "retrieve.json"
QUERIES = [
    "create a sales order for a customer",
    "post goods issue for an outbound delivery",
    "supplier invoice payment block",
    "bill of material components",
    "cost centre master data",
    "maintenance order operations",
    "purchase requisition release",
    "business partner address",
    "product plant data",
    "billing document items",
    "sales quotation validity",
    "material stock in a storage location",
    "journal entry line items",
    "equipment classification",
    "customer return reason",
    "pricing condition scales",
    "inbound delivery from supplier",
    "production order confirmation",
    "bank master data",
    "credit memo request items",
    "the goods left the warehouse, now charge the customer",
    "which currencies can we sell in",
    "a dealer orders ten city bikes",
    "pay the suppliers whose invoices are due",
    "who is the contact person of this business partner",
    "schedule lines of a purchase order",
    "the technician finished the repair, close the maintenance notification",
    "GL account in the chart of accounts",
    "time sheet entries of a worker",
    "sales district names",
]


def pct(values: list, p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def ms(values: list) -> dict:
    return {"p50_ms": round(pct(values, 50) * 1000, 3), "p95_ms": round(pct(values, 95) * 1000, 3)}


def timed(fn) -> tuple[float, object]:
    start = time.perf_counter()
    value = fn()
    return time.perf_counter() - start, value


# ---------------------------------------------------------------- stages


def build_stores(work: Path) -> dict:
    stores = {"a2x": work / "a2x", "demo": work / "demo"}
    build_store(BuildOptions(odata=[A2X], store=StoreLocation.parse(stores["a2x"])))
    build_store(
        BuildOptions(
            odata=[DEMO / "odata"],
            bpmn=[DEMO / "bpmn"],
            mapping=DEMO / "mapping.yaml",
            codes=[DEMO / "codes"],
            store=StoreLocation.parse(stores["demo"]),
        )
    )
    return stores


def bench_index(stores: dict) -> dict:
    out = {}
    seconds, report = timed(lambda: build_index(StoreLocation.parse(stores["a2x"])))
    out["a2x_cold_sets"] = {"seconds": round(seconds, 2), "items": report.counts, "encoded": report.encoded}
    seconds, report = timed(lambda: build_index(StoreLocation.parse(stores["a2x"]), odata=[A2X]))
    out["a2x_chunks_added"] = {"seconds": round(seconds, 2), "items": report.counts, "encoded": report.encoded}
    seconds, report = timed(lambda: build_index(StoreLocation.parse(stores["a2x"]), odata=[A2X]))
    out["a2x_warm_rebuild"] = {"seconds": round(seconds, 2), "encoded": report.encoded}
    seconds, report = timed(lambda: build_index(StoreLocation.parse(stores["demo"]), odata=[DEMO / "odata"]))
    out["demo_cold"] = {"seconds": round(seconds, 2), "items": report.counts, "encoded": report.encoded}
    return out


def bench_latency(retriever: Retriever, queries: list, methods=METHODS) -> dict:
    vectors = retriever.embed(queries)
    retriever.retrieve(queries[0], 5)  # warm-up
    out = {}
    for method in methods:
        full, core = [], []
        for query, vector in zip(queries, vectors):
            full.append(timed(lambda: retriever.retrieve(query, 5, method=method))[0])
            core.append(timed(lambda: retriever.retrieve(query, 5, method=method, vector=vector))[0])
        out[method] = {"with_embedding": ms(full), "without_embedding": ms(core)}
    out["embedding_only"] = ms([timed(lambda: retriever.embed([q]))[0] for q in queries])
    return out


REPEATS = 5


def _old_embedding(retriever: Retriever, queries: list, steps: bool) -> None:
    """The batch embedding before ``Encoder.encode_queries``: one ``encode`` call of the queries (and,
    for ``hybrid``, their parts) in batches of 32 ordered by characters, on all torch threads."""
    texts = list(queries) + ([p for q in queries for p in steps_of(q)] if steps else [])
    retriever.encoder.encode(texts)


def text_counts(retriever: Retriever, queries: list) -> dict:
    """The texts the routed hybrid embeds in batch mode and their word pieces (with [CLS] and [SEP]):
    as they are, and padded to the longest of each batch of 32, ordered by characters (as one
    ``encode`` call orders them) or by word pieces (as ``Encoder.encode_queries`` does)."""
    parts = [p for q in queries for p in steps_of(q)]
    texts = list(dict.fromkeys(list(queries) + parts))
    pieces = [len(ids) for ids in retriever.encoder.model.tokenizer(texts)["input_ids"]]

    def padded(order: list) -> int:
        return sum(max(pieces[i] for i in order[a : a + 32]) * len(order[a : a + 32]) for a in range(0, len(order), 32))

    return {
        "queries": len(queries),
        "parts": len(parts),
        "distinct_texts": len(texts),
        "query_tokens": sum(pieces[: len(queries)]),
        "distinct_part_tokens": sum(pieces[len(queries) :]),
        "padded_tokens_by_characters": padded(sorted(range(len(texts)), key=lambda i: -len(texts[i]))),
        "padded_tokens_by_tokens": padded(sorted(range(len(texts)), key=lambda i: pieces[i])),
    }


def bench_batch_latency(
    retriever: Retriever, queries: list, methods=("dense", "hybrid-paper", "hybrid-v1", "hybrid")
) -> dict:
    """Batch mode (``kg retrieve --queries``): the embeddings of all queries (and, for the routed
    ``hybrid``, of their steps) as ``Retriever.retrieve_many`` makes them, shared out evenly, plus each
    query's own ranking time. Side by side in one run, methods interleaved in each of ``REPEATS``
    rounds so that each meets the same load: the medians, hybrid minus dense, and the embedding as it
    was made before (``_old_embedding``) for dense and hybrid."""
    retriever.retrieve(queries[0], 5)  # warm-up: model, matrices, BM25
    retriever.embed_with_steps(queries)  # warm-up: the first batches of new text lengths are slower
    process = retriever.matrices.has_process
    old = {"dense (before)": False, "hybrid (before)": process}
    shares: dict[str, list[float]] = {name: [] for name in (*methods, *old)}
    for _ in range(REPEATS):
        for method in methods:
            start = time.perf_counter()
            if METHODS[method].steps and process:
                retriever.embed_with_steps(queries)
            else:
                retriever.embed(queries)
            shares[method].append((time.perf_counter() - start) / len(queries))
        for name, steps in old.items():
            start = time.perf_counter()
            _old_embedding(retriever, queries, steps)
            shares[name].append((time.perf_counter() - start) / len(queries))
    out: dict = {}
    for method in methods:
        settings = RetrievalSettings(method)
        if METHODS[method].steps and process:
            vectors, steps = retriever.embed_with_steps(queries)
            retriever._steps = dict(zip(queries, steps))
        else:
            vectors = retriever.embed(queries)
        share = statistics.median(shares[method])
        ranking = [timed(lambda: retriever.retrieve(q, 5, settings, vector=v))[0] for q, v in zip(queries, vectors)]
        retriever._steps = {}
        out[method] = {
            "embedding_share_ms": round(share * 1000, 2),
            "embedding_share_runs_ms": [round(x * 1000, 2) for x in shares[method]],
            "ranking": ms(ranking),
            "with_embedding": ms([r + share for r in ranking]),
        }
    for name in old:
        out[name] = {
            "embedding_share_ms": round(statistics.median(shares[name]) * 1000, 2),
            "embedding_share_runs_ms": [round(x * 1000, 2) for x in shares[name]],
        }
    if "dense" in methods and "hybrid" in methods:
        paired = [h - d for h, d in zip(shares["hybrid"], shares["dense"])]
        out["hybrid_minus_dense"] = {
            "p50_with_embedding_ms": round(
                out["hybrid"]["with_embedding"]["p50_ms"] - out["dense"]["with_embedding"]["p50_ms"], 2
            ),
            "embedding_share_median_of_paired_ms": round(statistics.median(paired) * 1000, 2),
            "ranking_p50_ms": round(out["hybrid"]["ranking"]["p50_ms"] - out["dense"]["ranking"]["p50_ms"], 3),
        }
    return out


def bench_expansion(retriever: Retriever) -> dict:
    seeds = [s["iri"] for s in retriever.sets] + [a["iri"] for a in retriever.activities]
    sparql = [timed(lambda: _subgraph(retriever.store, seed))[0] for seed in seeds for _ in range(3)]
    walks = []
    for seed in seeds:
        retriever._chains.clear()
        walks.append(timed(lambda: retriever.chain(seed, 1, R.DEFAULT_HOPS))[0])
    return {"expand_rq": ms(sparql), "expand_rq_plus_walk": ms(walks), "seeds": len(seeds)}


def bench_batch(retriever: Retriever, queries: list, repeat: int = 5) -> dict:
    batch = queries * repeat
    seconds, _ = timed(lambda: retriever.retrieve_many(batch, 5, RetrievalSettings("hybrid")))
    return {"queries": len(batch), "seconds": round(seconds, 3), "queries_per_second": round(len(batch) / seconds, 1)}


def bench_context(retriever: Retriever) -> dict:
    tokens, chars, seconds = [], [], []
    for row in range(len(retriever.sets)):
        took, text = timed(lambda: render_set(retriever.store, retriever.result(row, 1.0)))
        tokens.append(retriever.encoder.count_tokens(text))
        chars.append(len(text))
        seconds.append(took)
    return {
        "entity_sets": len(tokens),
        "wordpiece_tokens": _spread(tokens),
        "chars_div_4": _spread([c / 4 for c in chars]),
        "render": ms(seconds),
    }


def _spread(values: list) -> dict:
    return {
        "mean": round(statistics.mean(values), 1),
        "median": round(statistics.median(values), 1),
        "p95": round(pct(values, 95), 1),
        "max": round(max(values), 1),
    }


# ---------------------------------------------------------------- evaluation


def recall(results: list, gold: list, k: int) -> float:
    """Share of gold entries found in the top k. A gold entry is an entity set name (dev file) or
    ``{"service", "entity_set", "alternatives": [...]}`` (data/sap/benchmark/queries.jsonl)."""
    found = {(r.service, r.entity_set) for r in results[:k]}
    names = {r.entity_set for r in results[:k]}
    return sum(_hit(g, found, names) for g in gold) / len(gold)


def _hit(gold, found: set, names: set) -> bool:
    if isinstance(gold, str):
        return gold in names
    options = [gold] + list(gold.get("alternatives") or [])
    return any((o["service"], o["entity_set"]) in found for o in options)


def evaluate(retriever: Retriever, items: list) -> dict:
    """Recall@3/5 per configuration and split (and for chain queries alone)."""
    vectors = dict(zip((q["id"] for q in items), retriever.embed([q["query"] for q in items])))
    configs = {m: RetrievalSettings(m) for m in METHODS if m != "chunkrag" or retriever.index.items["chunk"]}
    for method in ("hybrid-paper", "hybrid-v1", "hybrid"):
        configs[f"{method} --no-mapping-edges"] = RetrievalSettings(method, mapping_edges=False)
        configs[f"{method} --no-sequence-edges"] = RetrievalSettings(method, sequence_edges=False)
        configs[f"{method} --verify-seeds"] = RetrievalSettings(method, verify_seeds=True)
    table = {}
    for name, settings in configs.items():
        run = lambda q, k: retriever.retrieve(q["query"], k, settings, vector=vectors[q["id"]])  # noqa: E731
        table[name] = {
            split: _scores(run, [q for q in items if q.get("split") == split]) for split in ("train", "test")
        }
    return table


def _scores(run, items: list) -> dict:
    if not items:
        return {}
    out = {}
    for k in (3, 5):
        out[f"R@{k}"] = round(statistics.mean(recall(run(q, k), q["gold"], k) for q in items), 3)
    chain = [q for q in items if q.get("type") in ("chain", "process-chain")]
    if chain:
        out["chain R@3"] = round(statistics.mean(recall(run(q, 3), q["gold"], 3) for q in chain), 3)
    out["n"] = len(items)
    return out


MOVES = {
    "+activity": lambda c: replace(c, lists=c.lists + ("activity",)) if "activity" not in c.lists else None,
    "+chain": lambda c: replace(c, lists=c.lists + ("chain",)) if "chain" not in c.lists else None,
    "+tokens": lambda c: replace(c, lists=c.lists + ("tokens",)) if "tokens" not in c.lists else None,
    "hop 0": lambda c: replace(c, min_hops=0) if c.min_hops else None,
    "cap 1 per seed": lambda c: replace(c, per_seed=1) if c.per_seed != 1 else None,
    "rank expansions": lambda c: replace(c, rank_expansions=True) if not c.rank_expansions else None,
    "+navigation (object queries)": lambda c: replace(c, object_lists=("navigation",)) if not c.object_lists else None,
}


def forward_selection(retriever: Retriever, items: list) -> list:
    """Start from the paper (dense seeds, bpmn:next{1,h}); add the change that most raises train
    R@3 + R@5 while the gain is at least two queries' worth (guard against noise); repeat."""
    train = [q for q in items if q.get("split") == "train"]
    vectors = dict(zip((q["id"] for q in train), retriever.embed([q["query"] for q in train])))
    settings = RetrievalSettings("hybrid-v1")

    def score(config: HybridConfig) -> float:
        return sum(
            statistics.mean(
                recall(R.hybrid_v1(retriever, q["query"], vectors[q["id"]], k, settings, config), q["gold"], k)
                for q in train
            )
            for k in (3, 5)
        )

    current = HybridConfig(lists=("dense",), min_hops=1, object_lists=())
    best, trace = score(current), []
    while True:
        tried = {name: (cfg, score(cfg)) for name, move in MOVES.items() if (cfg := move(current))}
        trace.append({"from": repr(current), "tried": {n: round(s, 3) for n, (_, s) in tried.items()}})
        name, (config, value) = max(tried.items(), key=lambda x: x[1][1]) if tried else (None, (None, best))
        if name is None or value < best + 2 / len(train) - 1e-9:
            return trace + [{"kept": repr(current), "train R@3+R@5": round(best, 3)}]
        trace[-1]["kept"] = name
        current, best = config, value


# ---------------------------------------------------------------- main


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--eval", type=Path, help="JSONL queries with gold entity sets and a split")
    parser.add_argument(
        "--eval-store", type=Path, help="store (with index) to evaluate on; default: the demo store built here"
    )
    parser.add_argument("--eval-only", action="store_true", help="skip the speed figures")
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument(
        "--latency-store",
        type=Path,
        help="also time batch mode on this store (with a process layer, e.g. build/sap) over --latency-queries",
    )
    parser.add_argument("--latency-queries", type=Path, help="JSONL benchmark queries for --latency-store")
    parser.add_argument("--latency-only", action="store_true", help="only the --latency-store figures")
    args = parser.parse_args()
    if not A2X.is_dir():
        sys.exit(f"the A2X corpus is not at {A2X}")
    keep = (args.eval_only or args.latency_only) and args.out.exists()
    results: dict = json.loads(args.out.read_text()) if keep else {}
    if args.latency_store:
        texts = [json.loads(line)["query"] for line in args.latency_queries.read_text().splitlines() if line.strip()]
        retriever = Retriever(StoreHandle.open(args.latency_store))
        results["latency_batch_routed_store"] = {
            "store": args.latency_store.name,
            "queries": len(texts),
            "load_average_before": round(os.getloadavg()[0], 2),
            "methods": bench_batch_latency(retriever, texts),
            "texts": text_counts(retriever, texts),
            "load_average_after": round(os.getloadavg()[0], 2),
        }
        if args.latency_only:
            args.out.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
            print(json.dumps(results["latency_batch_routed_store"], indent=2))
            return
    with tempfile.TemporaryDirectory() as tmp:
        stores = build_stores(Path(tmp))
        demo = None
        if not args.eval_only:
            results["index_build"] = bench_index(stores)
            a2x, demo = Retriever(StoreHandle.open(stores["a2x"])), Retriever(StoreHandle.open(stores["demo"]))
            results["latency_a2x"] = bench_latency(a2x, QUERIES)
            results["latency_demo"] = bench_latency(demo, QUERIES)
            results["expansion_demo"] = bench_expansion(demo)
            results["batch_a2x"] = bench_batch(a2x, QUERIES)
            results["context_tokens"] = {"demo": bench_context(demo), "a2x": bench_context(a2x)}
        if args.eval:
            if demo is None and not args.eval_store:
                build_index(StoreLocation.parse(stores["demo"]), odata=[DEMO / "odata"])
                demo = Retriever(StoreHandle.open(stores["demo"]))
            target = Retriever(StoreHandle.open(args.eval_store)) if args.eval_store else demo
            items = [json.loads(line) for line in args.eval.read_text().splitlines() if line.strip()]
            results.setdefault("eval", {})[args.eval.name] = {
                "store": str(args.eval_store or "demo"),
                "recall": evaluate(target, items),
                "forward_selection": forward_selection(target, items),
            }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
