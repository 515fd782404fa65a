"""Retrieval evaluation: Recall@k, MRR, nDCG@k per method and query type, paired tests.

Benchmark queries are JSON Lines::

    {"id": "q001", "query": "...", "type": "process-chain", "split": "test",
     "gold": [{"service": "API_BILLING_DOCUMENT_SRV", "entity_set": "A_BillingDocument",
               "alternatives": [{"service": "...", "entity_set": "..."}]}]}

A gold item is found at the first rank where the result is the item or one of its
alternatives. ``service`` may be omitted (any service then matches). Recall@k is the
fraction of gold items found in the top k; MRR uses the first gold item found; nDCG@k
uses binary gains, one per gold item.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from statistics import mean
from typing import TypeAlias

from processkg.aliases import JSONObject, JSONValue
from processkg.errors import BenchmarkError, JsonLinesError
from processkg.jsonl import read_strict

KS = (1, 3, 5, 10)

Hit: TypeAlias = tuple[str, str]
"""A retrieved or gold entity set: (service, entity set); an empty service matches any."""
Scores: TypeAlias = dict[str, float]
"""One query's metrics: {"recall@3": ..., "ndcg@3": ..., "mrr": ...}."""


@dataclass
class Query:
    id: str
    text: str
    gold: list[list[Hit]]  # [[(service, entity_set), ...alternatives]]
    type: str = ""
    split: str = ""
    extra: JSONObject = field(default_factory=dict)


def read_queries(path: Path) -> list[Query]:
    """Read a benchmark file (JSON Lines, read by :mod:`processkg.jsonl`); a bad line raises
    BenchmarkError naming file and line."""
    try:
        records = list(read_strict(path, what="benchmark queries"))
    except JsonLinesError as exc:
        raise BenchmarkError(str(exc)) from None
    return [_query(_json(record, path, number), path, number) for number, record in records]


def _json(record: JSONValue, path: Path, number: int) -> JSONObject:
    if not isinstance(record, dict):
        raise BenchmarkError(f"{path}:{number}: expected a JSON object")
    return record


def _query(record: JSONObject, path: Path, number: int) -> Query:
    if not record.get("id") or not record.get("query"):
        raise BenchmarkError(f"{path}:{number}: a query needs 'id' and 'query'")
    gold = [_gold_item(g, path, number) for g in record.get("gold", [])]
    extra = {k: v for k, v in record.items() if k not in ("id", "query", "gold", "type", "split")}
    return Query(str(record["id"]), record["query"], gold, record.get("type", ""), record.get("split", ""), extra)


def _gold_item(item: JSONValue, path: Path, number: int) -> list[Hit]:
    if isinstance(item, str):
        return [("", item)]
    if not isinstance(item, dict) or not item.get("entity_set"):
        raise BenchmarkError(f"{path}:{number}: a gold item needs 'entity_set'")
    alts = [item] + list(item.get("alternatives", []))
    return [(a.get("service", ""), a["entity_set"]) for a in alts]


# ---------------------------------------------------------------- metrics


def _matches(result: Hit, alternatives: list[Hit]) -> bool:
    service, entity_set = result
    return any(es == entity_set and (not svc or svc == service) for svc, es in alternatives)


def gold_ranks(results: list[Hit], gold: list[list[Hit]]) -> list[int | None]:
    """1-based rank at which each gold item is first found (None if never)."""
    ranks = []
    for alternatives in gold:
        rank = next((i for i, r in enumerate(results, 1) if _matches(r, alternatives)), None)
        ranks.append(rank)
    return ranks


def recall_at(ranks: list[int | None], k: int) -> float:
    return sum(1 for r in ranks if r is not None and r <= k) / len(ranks) if ranks else 0.0


def reciprocal_rank(ranks: list[int | None]) -> float:
    found = [r for r in ranks if r is not None]
    return 1.0 / min(found) if found else 0.0


def ndcg_at(ranks: list[int | None], k: int) -> float:
    if not ranks:
        return 0.0
    dcg = sum(1.0 / math.log2(r + 1) for r in ranks if r is not None and r <= k)
    ideal = sum(1.0 / math.log2(i + 1) for i in range(1, min(len(ranks), k) + 1))
    return dcg / ideal


def per_query_scores(results: dict[str, list[Hit]], queries: list[Query], ks: Sequence[int] = KS) -> dict[str, Scores]:
    """{query id: {"recall@k": ..., "ndcg@k": ..., "mrr": ...}} for one method."""
    scores = {}
    for q in queries:
        ranks = gold_ranks(results.get(q.id, []), q.gold)
        row = {f"recall@{k}": recall_at(ranks, k) for k in ks}
        row.update({f"ndcg@{k}": ndcg_at(ranks, k) for k in ks})
        row["mrr"] = reciprocal_rank(ranks)
        scores[q.id] = row
    return scores


def summarize(scores: dict[str, Scores], queries: list[Query]) -> dict[str, JSONObject]:
    """Mean of each metric, overall and per query type, with the number of queries."""
    groups = {"all": [q.id for q in queries]}
    for q in queries:
        groups.setdefault(q.type or "untyped", []).append(q.id)
    out = {}
    for name, ids in sorted(groups.items()):
        rows = [scores[i] for i in ids if i in scores]
        metrics = sorted(rows[0]) if rows else []
        out[name] = {"n": len(rows), **{m: mean(r[m] for r in rows) for m in metrics}}
    return out


# ---------------------------------------------------------------- significance


def paired_test(a: list[float], b: list[float]) -> dict[str, float]:
    """Two-sided paired tests of a vs b: Wilcoxon signed-rank and a paired permutation test."""
    from scipy import stats

    diffs = [x - y for x, y in zip(a, b)]
    result = {"n": len(diffs), "mean_diff": mean(diffs) if diffs else 0.0, "nonzero": sum(1 for d in diffs if d)}
    if result["nonzero"] == 0:
        return {**result, "wilcoxon_p": 1.0, "permutation_p": 1.0}
    result["wilcoxon_p"] = float(stats.wilcoxon(a, b, zero_method="wilcox").pvalue)
    import numpy as np

    perm = stats.permutation_test(
        (np.asarray(a, float), np.asarray(b, float)),
        lambda x, y, axis: np.mean(x, axis=axis) - np.mean(y, axis=axis),
        permutation_type="samples",
        vectorized=True,
        n_resamples=9999,
        alternative="two-sided",
        random_state=0,
    )
    result["permutation_p"] = float(perm.pvalue)
    return result


def compare(scores_a: dict[str, Scores], scores_b: dict[str, Scores], ids: list[str], metric: str) -> JSONObject:
    return paired_test([scores_a[i][metric] for i in ids], [scores_b[i][metric] for i in ids])


# ---------------------------------------------------------------- whole evaluation

#: The comparisons reported: each process-aware method against each baseline and each other.
PAIRS = (
    ("hybrid", "dense"),
    ("hybrid", "tokens"),
    ("hybrid", "chunkrag"),
    ("hybrid", "hybrid-paper"),
    ("hybrid", "hybrid-v1"),
    ("hybrid-v1", "dense"),
    ("hybrid-paper", "dense"),
    ("hybrid-paper", "tokens"),
    ("hybrid-paper", "chunkrag"),
)


def evaluate_methods(
    results: dict[str, dict[str, list[Hit]]],
    queries: list[Query],
    ks: Sequence[int] = KS,
    test_metric: str = "recall@3",
) -> JSONObject:
    """{"summary": {method: {type: metrics}}, "tests": [...], "per_query": {...}}.

    ``results`` maps method -> {query id: [(service, entity_set), ...]} in rank order.
    Paired tests run on ``test_metric`` over all queries and per query type.
    """
    per_query = {m: per_query_scores(res, queries, ks) for m, res in results.items()}
    summary = {m: summarize(s, queries) for m, s in per_query.items()}
    return {
        "summary": summary,
        "tests": _tests(per_query, queries, test_metric),
        "per_query": per_query,
        "ks": list(ks),
        "n_queries": len(queries),
        "test_metric": test_metric,
    }


def _tests(per_query: dict[str, dict[str, Scores]], queries: list[Query], metric: str) -> list[JSONObject]:
    groups = {"all": [q.id for q in queries]}
    for q in queries:
        groups.setdefault(q.type or "untyped", []).append(q.id)
    rows = []
    for a, b in PAIRS:
        if a in per_query and b in per_query:
            for group, ids in sorted(groups.items()):
                rows.append(
                    {
                        "a": a,
                        "b": b,
                        "group": group,
                        "metric": metric,
                        **compare(per_query[a], per_query[b], ids, metric),
                    }
                )
    return rows


def expansion_effect(
    results: dict[str, dict[str, list[Hit]]], sources: dict[str, list[str]], queries: list[Query], k: int = 3
) -> JSONObject:
    """What expansion added to the top k (gold hits that came from expansion) and what it pushed out.

    ``sources`` maps query id -> [source of each result] for the hybrid method, and
    results must include "dense" for the pushed-out comparison.
    """
    added = pushed = 0
    hybrid, dense_res = results.get("hybrid", {}), results.get("dense", {})
    for q in queries:
        top = hybrid.get(q.id, [])[:k]
        src = sources.get(q.id, [])[:k]
        added += sum(1 for r, s in zip(top, src) if s == "expanded" and any(_matches(r, g) for g in q.gold))
        lost = [r for r in dense_res.get(q.id, [])[:k] if r not in top]
        pushed += sum(1 for r in lost if any(_matches(r, g) for g in q.gold))
    return {"k": k, "gold_added_by_expansion": added, "gold_pushed_out": pushed}


def render_markdown(evaluation: JSONObject, command: str = "") -> str:
    lines = ["# Retrieval evaluation", ""]
    if command:
        lines += ["Produced by:", "", "```", command, "```", ""]
    ks = evaluation["ks"]
    for method, by_type in sorted(evaluation["summary"].items()):
        lines += [
            f"## {method}",
            "",
            "| type | n | "
            + " | ".join(f"R@{k}" for k in ks)
            + " | MRR | "
            + " | ".join(f"nDCG@{k}" for k in ks)
            + " |",
            "|---|---|" + "---|" * (2 * len(ks) + 1),
        ]
        for group, m in by_type.items():
            cells = [f"{m[f'recall@{k}']:.3f}" for k in ks] + [f"{m['mrr']:.3f}"]
            cells += [f"{m[f'ndcg@{k}']:.3f}" for k in ks]
            lines.append(f"| {group} | {m['n']} | " + " | ".join(cells) + " |")
        lines.append("")
    lines += [
        "## Paired tests (" + evaluation["test_metric"] + ")",
        "",
        "| a | b | queries | n | mean diff | Wilcoxon p | permutation p |",
        "|---|---|---|---|---|---|---|",
    ]
    for t in evaluation["tests"]:
        lines.append(
            f"| {t['a']} | {t['b']} | {t['group']} | {t['n']} | {t['mean_diff']:+.3f} | "
            f"{t['wilcoxon_p']:.4f} | {t['permutation_p']:.4f} |"
        )
    lines += _routing_lines(evaluation.get("routing"))
    lines += _overlap_lines(evaluation.get("overlap"))
    return "\n".join(lines) + "\n"


def _overlap_lines(overlap: JSONObject | None) -> list[str]:
    """Mean word overlap of the queries with their nearest activity name, per type (and per query)."""
    if not overlap:
        return []
    lines = ["", "## Word overlap with the nearest activity name", "", "| queries | n | mean |", "|---|---|---|"]
    lines += [f"| {g} | {v['n']} | {v['mean']:.3f} |" for g, v in overlap["by_type"].items()]
    if overlap.get("table"):
        lines += ["", "| query | overlap | nearest activity |", "|---|---|---|"]
        lines += [f"| {qid} | {v['overlap']:.3f} | {v['activity']} |" for qid, v in overlap["per_query"].items()]
    return lines


def _routing_lines(routing: JSONObject | None) -> list[str]:
    """The kind classifier's accuracy per kind and what it took each kind for."""
    if not routing:
        return []
    kinds = [k for k in routing if k != "all"]
    lines = [
        "",
        "## Query kind classifier (routed hybrid)",
        "",
        "| kind | n | accuracy | " + " | ".join(f"as {k}" for k in kinds) + " |",
    ]
    lines.append("|---|---|---|" + "---|" * len(kinds))
    for kind in kinds:
        row = routing[kind]
        cells = " | ".join(str(row["predicted"][k]) for k in kinds)
        lines.append(f"| {kind} | {row['n']} | {row['accuracy']:.3f} | {cells} |")
    lines.append(f"| all | {routing['all']['n']} | {routing['all']['accuracy']:.3f} |" + " |" * len(kinds))
    return lines


def plot_recall_curves(evaluation: JSONObject, path: Path) -> list[Path]:
    """One PNG per query type: Recall@k against k for every method. Returns the files written."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ks, written = evaluation["ks"], []
    groups = sorted({g for by_type in evaluation["summary"].values() for g in by_type})
    for group in groups:
        fig, ax = plt.subplots(figsize=(6, 4), dpi=100)
        colors = plt.get_cmap("tab20").colors  # type: ignore[attr-defined]  # a ListedColormap
        for i, (method, by_type) in enumerate(sorted(evaluation["summary"].items())):
            if group in by_type:
                ax.plot(
                    ks,
                    [by_type[group][f"recall@{k}"] for k in ks],
                    marker="o",
                    label=method,
                    color=colors[i % len(colors)],
                    linestyle="--" if "/" in method else "-",
                )
        ax.set(xlabel="k", ylabel="Recall@k", title=f"{group} (n={_n(evaluation, group)})", ylim=(0, 1.02))
        ax.set_xticks(ks)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
        fig.tight_layout()
        target = Path(path) / f"recall-{group}.png"
        fig.savefig(target, metadata={"Software": None})
        plt.close(fig)
        written.append(target)
    return written


def _n(evaluation: JSONObject, group: str) -> int:
    return next(iter(evaluation["summary"].values()))[group]["n"]


def write_outputs(evaluation: JSONObject, out: Path, command: str = "") -> list[Path]:
    """report.md, results.json and recall plots into ``out``."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "report.md").write_text(render_markdown(evaluation, command), encoding="utf-8")
    (out / "results.json").write_text(json.dumps(evaluation, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return [out / "report.md", out / "results.json", *plot_recall_curves(evaluation, out)]
