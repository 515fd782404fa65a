"""What lifting the goal's object (processkg.retrieve.goals) changes in the routed hybrid, per query
set and type: R@1 and R@3 of ``hybrid`` with the goal order (after) and without it (before), in one
run over one store, and the ids of the queries whose gold ranks changed.

    python benchmarks/goal_order_effect.py build/sap data/sap/benchmark/queries.jsonl ... \
        > benchmarks/results/goal-order-effect.txt
"""

from __future__ import annotations

import sys
from collections import defaultdict
from pathlib import Path

import processkg.retrieve.retriever as retriever
from processkg.evaluate.metrics import gold_ranks, read_queries, recall_at
from processkg.graph.handle import StoreHandle


def _unchanged(query: str, summaries: list[str], order: list[int]) -> list[int]:
    return order


def main(store: Path, files: list[Path]) -> None:
    r = retriever.Retriever(StoreHandle.open(store))
    lifted = retriever.goal_order
    for path in files:
        queries = read_queries(path)
        ranks: dict[str, list[list[int | None]]] = {}
        for label, order in (("before", _unchanged), ("after", lifted)):
            retriever.goal_order = order  # type: ignore[assignment]
            results = r.retrieve_many([q.text for q in queries], 10, retriever.RetrievalSettings())
            ranks[label] = [
                gold_ranks([(x.service, x.entity_set) for x in rs], q.gold) for q, rs in zip(queries, results)
            ]
        retriever.goal_order = lifted
        groups: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
        changed = []
        for i, q in enumerate(queries):
            for label in ranks:
                for key in ("all", f"{q.split}/{q.type}"):
                    groups[key][f"{label}@1"].append(recall_at(ranks[label][i], 1))
                    groups[key][f"{label}@3"].append(recall_at(ranks[label][i], 3))
            if ranks["before"][i] != ranks["after"][i]:
                changed.append(f"{q.id} {ranks['before'][i]} -> {ranks['after'][i]}")
        print(path)
        for key in sorted(groups):
            g, n = groups[key], len(groups[key]["before@1"])
            print(
                f"  {key:24s} n={n:3d}  R@1 {sum(g['before@1']) / n:.3f} -> {sum(g['after@1']) / n:.3f}"
                f"  R@3 {sum(g['before@3']) / n:.3f} -> {sum(g['after@3']) / n:.3f}"
            )
        print(f"  gold ranks changed ({len(changed)}): " + "; ".join(changed))


if __name__ == "__main__":
    main(Path(sys.argv[1]), [Path(a) for a in sys.argv[2:]])
