"""``kg eval``: retrieval evaluation on a benchmark (and, registered from its own module, SOCBench-D)."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import click

from processkg.aliases import JSONObject
from processkg.cli.lazy import LazyGroup
from processkg.cli.options import model_option, out_option, store_option
from processkg.errors import ProcessKGError
from processkg.evaluate.metrics import KS, Hit, Query, evaluate_methods, expansion_effect, read_queries, write_outputs
from processkg.evaluate.overlap import activity_overlap
from processkg.evaluate.train_ranker import routing_accuracy
from processkg.graph.handle import StoreHandle
from processkg.graph.stats import table
from processkg.retrieve.retriever import METHODS, RetrievalSettings, Retriever

DEFAULT_METHODS = ",".join(METHODS)  # the registry of kg retrieve, baselines first
ROUTED = "hybrid"  # the routed method, whose kind classifier the report scores
#: Ablations of a hybrid method: (suffix, RetrievalSettings overrides).
ABLATIONS = (
    ("no-mapping-edges", {"mapping_edges": False}),
    ("no-sequence-edges", {"sequence_edges": False}),
    ("verify-seeds", {"verify_seeds": True}),
)


def _csv(value: str) -> list[str]:
    return [v.strip() for v in value.split(",") if v.strip()]


def run_methods(
    retriever: Retriever, queries: list[Query], methods: list[str], k: int, ablations: bool
) -> tuple[dict[str, dict[str, list[Hit]]], dict[str, list[str]], dict[str, float]]:
    """{label: {qid: [(service, set)]}}, {qid: [source]} of hybrid, {label: seconds}."""

    runs = [(m, RetrievalSettings(method=m)) for m in methods]
    if ablations:
        for base in ("hybrid-paper", "hybrid-v1", "hybrid"):
            if base in methods:
                runs += [(f"{base}/{name}", RetrievalSettings(method=base, **over)) for name, over in ABLATIONS]
    texts = [q.text for q in queries]
    results, sources, seconds = {}, {}, {}
    for label, settings in runs:
        start = time.perf_counter()
        answers = retriever.retrieve_many(texts, k, settings)
        seconds[label] = time.perf_counter() - start
        results[label] = {q.id: [(r.service, r.entity_set) for r in a] for q, a in zip(queries, answers)}
        if label == "hybrid":
            sources = {q.id: [r.source for r in a] for q, a in zip(queries, answers)}
    return results, sources, seconds


#: The evaluations that live in their own modules (imported when used).
LAZY = {
    "mapping": "processkg.cli.map:mapping_cmd",
    "socbench": "processkg.cli.socbench:socbench_cmd",
    "train-ranker": "processkg.cli.ranker:train_ranker_cmd",
    "processes": "processkg.cli.ranker:processes_cmd",
    "agent": "processkg.cli.agent:eval_agent_cmd",
}


class _EvalGroup(LazyGroup):
    lazy = LAZY


@click.group("eval", cls=_EvalGroup)
def eval_group() -> None:
    """Evaluate retrieval on a benchmark."""


@eval_group.command("retrieval")
@store_option("Store with its retrieval index.")
@click.option(
    "--queries",
    "queries_file",
    required=True,
    type=click.Path(path_type=Path),
    help="Benchmark JSONL: id, query, type, split, gold (see processkg.evaluate.metrics).",
)
@click.option("--methods", default=DEFAULT_METHODS, show_default=True, help="Comma-separated methods.")
@click.option("--k", "ks", default=",".join(map(str, KS)), show_default=True, help="Cut-offs, comma-separated.")
@click.option(
    "--split",
    type=click.Choice(["all", "train", "test"]),
    default="all",
    show_default=True,
    help="Evaluate one split only (tune on train, report test).",
)
@click.option(
    "--ablations/--no-ablations",
    default=True,
    show_default=True,
    help="Also run the hybrid methods without mapping edges, without sequence edges, with seed verification.",
)
@model_option()
@out_option("folder", "Write report.md, results.json and PNG plots here.")
@click.option(
    "--overlap-table",
    is_flag=True,
    help="List every query's word overlap with its nearest activity name in report.md (always in results.json).",
)
def retrieval_cmd(
    store: StoreHandle,
    queries_file: Path,
    methods: str,
    ks: str,
    split: str,
    ablations: bool,
    model: str,
    out: Path,
    overlap_table: bool,
) -> None:
    """Recall@k, MRR, nDCG@k per method and query type, with paired significance tests."""

    try:
        cutoffs = sorted({int(k) for k in _csv(ks)})
    except ValueError:
        raise click.BadParameter(f"{ks!r} is not a list of integers", param_hint="--k") from None
    queries = [q for q in read_queries(queries_file) if split == "all" or q.split == split]
    if not queries:
        raise ProcessKGError(f"{queries_file}: no queries in split {split!r}")
    retriever = Retriever(store, model=model)
    results, sources, seconds = run_methods(retriever, queries, _csv(methods), max(cutoffs), ablations)
    evaluation = evaluate_methods(results, queries, cutoffs)
    evaluation["expansion"] = expansion_effect(results, sources, queries, k=3)
    evaluation["seconds"] = {m: round(s, 3) for m, s in seconds.items()}
    evaluation["model"] = retriever.index.model
    evaluation["split"] = split
    if ROUTED in _csv(methods) and retriever.matrices.has_process:
        evaluation["routing"] = routing_accuracy(retriever, queries)
    if retriever.activities:
        evaluation["overlap"] = activity_overlap(queries, [a["name"] for a in retriever.activities])
        evaluation["overlap"]["table"] = overlap_table
    command = "kg eval retrieval " + " ".join(sys.argv[3:]) if len(sys.argv) > 3 else ""
    click.echo(_summary(evaluation, cutoffs))
    if out:
        for path in write_outputs(evaluation, out, command):
            click.echo(f"wrote {path}")


def _summary(evaluation: JSONObject, ks: list[int]) -> str:

    rows = []
    for method, by_type in evaluation["summary"].items():
        for group, m in by_type.items():
            rows.append([method, group, m["n"], *[f"{m[f'recall@{k}']:.3f}" for k in ks], f"{m['mrr']:.3f}"])
    head = ["method", "queries", "n", *[f"R@{k}" for k in ks], "MRR"]
    return table(head, rows)
