"""Leaving processes out, the learned proposal scorer without groups of its features.

For each variant and each fold of ``kg eval processes`` (``fold_of`` of the gold's processes), the
scorer is fitted on the other processes' gold without the variant's features
(:func:`processkg.proposals.learned.fit_scorer` with ``used``) and its proposals are scored on the
fold's processes, as ``kg map tune --folds`` does with every feature. Writes one JSON object:
per variant, the dropped features, the totals over the three folds and the F1 per fold.

    python benchmarks/proposal_ablation.py STORE GOLD OUT.json

STORE: a store with its index built WITHOUT the gold mapping (docs/mapping-proposals.md).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from processkg.evaluate.processes import FOLDS, fold_of
from processkg.graph.handle import StoreHandle
from processkg.proposals.learned import FEATURES, fit_scorer
from processkg.proposals.propose import Signals, edge_quality, propose
from processkg.sources.mapping import MappingEntry, read_mapping

VARIANTS = {
    "all features": (),
    "without context (process_service, item, neighbour, neighbour_same, known)": (
        "process_service",
        "item",
        "neighbour",
        "neighbour_same",
        "known",
    ),
    "without known": ("known",),
    "without the metadata features (fields, operations, flow from named sets)": (
        "fields_lexical",
        "operation_verb",
        "operation_words",
        "follows_named",
        "followed_by_named",
    ),
    "without fields_lexical": ("fields_lexical",),
    "without operations (operation_verb, operation_words)": ("operation_verb", "operation_words"),
    "without operation_verb": ("operation_verb",),
    "without flow from named sets (follows_named, followed_by_named)": ("follows_named", "followed_by_named"),
    "without name overlap": ("name_overlap", "name_overlap_share", "name_overlap_any"),
    "without flags x verb": ("write_writable", "write_unwritable", "read_writable", "read_unwritable"),
    "without header and item": ("header", "is_item", "has_items", "write_item"),
    "without ranks and margin": (
        "rank_dense",
        "rank_dense_name",
        "rank_lexical",
        "rank_lexical_short",
        "base_margin",
        "rank_base",
    ),
    "the five signals only": tuple(
        f for f in FEATURES if f not in ("dense", "dense_name", "lexical", "lexical_short", "header")
    ),
}


def variant(signals: Signals, gold: list[MappingEntry], dropped: tuple[str, ...]) -> dict[str, object]:
    used = [f for f in FEATURES if f not in dropped]
    names = sorted({e.process for e in gold})
    totals = {"tp": 0, "proposed": 0, "gold": 0}
    per_fold = []
    for f in range(FOLDS):
        held_out = {p for p in names if fold_of(p) == f}
        scorer = fit_scorer(signals, [e for e in gold if e.process not in held_out], used)
        proposals = [
            p
            for p in propose(None, scorer.cut, signals=signals, scores=scorer.scores(signals))
            if p.process in held_out
        ]
        edges = edge_quality(proposals, gold, held_out)["edges"]
        totals = {k: totals[k] + int(edges[k]) for k in totals}
        per_fold.append(edges["f1"])
    p, r = totals["tp"] / max(1, totals["proposed"]), totals["tp"] / max(1, totals["gold"])
    f1 = 2 * p * r / (p + r) if p + r else 0.0
    return {
        "dropped": list(dropped),
        **totals,
        "precision": round(p, 4),
        "recall": round(r, 4),
        "f1": round(f1, 4),
        "f1_per_fold": per_fold,
    }


def main(store: str, gold: str, out: str) -> None:
    signals = Signals(StoreHandle.open(Path(store)))
    entries = read_mapping(Path(gold))
    result = {label: variant(signals, entries, dropped) for label, dropped in VARIANTS.items()}
    Path(out).write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    for label, r in result.items():
        print(
            f"{label}: proposed {r['proposed']} correct {r['tp']} P {r['precision']:.3f} R {r['recall']:.3f} F1 {r['f1']:.3f}"
        )


if __name__ == "__main__":
    main(*sys.argv[1:4])
