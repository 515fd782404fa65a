"""Leaving processes out, the learned proposal scorer with ``dense_tuned``: its cost and what it reaches.

For each fold of ``kg eval processes`` (``fold_of`` of the gold's processes) the scorer is fitted on
the other processes' gold with the embedding model fine-tuned on it (``signals.tuning``: what ``kg
map tune --folds --tune-embedding`` does, :mod:`processkg.proposals.tuned`), and its proposals are
scored on the fold's processes. Writes two JSON files into OUT_DIR:

* ``folds-tuned.json``: per fold as ``kg map tune --folds --out`` writes it (the chosen cut and
  weights, the tuning F1, P / R / F1 on the held-out processes);
* ``proposal-tuned.json``: per fold the seconds of the whole fit (seven fine-tunings and their
  similarities), the pairs and seconds of the final fine-tuning, and where the held-out gold edges
  rank: among the 20 candidates of the untuned mix (``BASE``), among the 20 best by the tuned
  similarity alone, by the untuned ``dense``, and first; the peak memory of the run.

    python benchmarks/proposal_tuned.py STORE GOLD OUT_DIR

STORE: a store with its index built WITHOUT the gold mapping (docs/mapping-proposals.md).
"""

from __future__ import annotations

import json
import resource
import sys
import time
from pathlib import Path

import numpy as np

from processkg.evaluate.processes import FOLDS, fold_of, mapping_table
from processkg.graph.handle import StoreHandle
from processkg.proposals.learned import BASE, CANDIDATES, fit_scorer
from processkg.proposals.proposal_facts import TuneSettings
from processkg.proposals.propose import Signals, edge_quality, propose
from processkg.proposals.tuned import tuned_similarity
from processkg.sources.mapping import MappingEntry, read_mapping


def ranks(signals: Signals, matrix: np.ndarray, gold: list[MappingEntry]) -> list[int]:
    """The rank (0 best) of each gold edge's set among its activity's sets under ``matrix``."""
    row = {(a.process, a.id): i for i, a in enumerate(signals.activities)}
    col = {(s.service, s.name): j for j, s in enumerate(signals.sets)}
    finite = np.where(np.isfinite(matrix), matrix, -np.inf)
    out = []
    for e in gold:
        i, j = row[(e.process, e.activity)], col[(e.service, e.entity_set)]
        out.append(int((finite[i] > finite[i, j]).sum()))
    return out


def reach(found: list[int]) -> dict[str, int]:
    return {
        "first": sum(r < 1 for r in found),
        "best_5": sum(r < 5 for r in found),
        "best_20": sum(r < 20 for r in found),
    }


def main(store: str, gold_file: str, out_dir: str) -> None:
    signals = Signals(StoreHandle.open(Path(store)))
    signals.tuning = TuneSettings()
    gold = read_mapping(Path(gold_file))
    names = sorted({e.process for e in gold})
    folds, costs = [], []
    for f in range(FOLDS):
        held_out = [p for p in names if fold_of(p) == f]
        kept = [e for e in gold if e.process not in held_out]
        start = time.perf_counter()
        scorer = fit_scorer(signals, kept)
        seconds = time.perf_counter() - start
        scores = scorer.scores(signals)
        proposals = [p for p in propose(None, scorer.cut, signals=signals, scores=scores) if p.process in held_out]
        mapping = {
            "settings": scorer.describe(),
            "tuning_f1": scorer.tuning_f1,
            "held_out": edge_quality(proposals, gold, held_out),
        }
        folds.append({"fold": f + 1, "held_out": held_out, "mapping": mapping})
        signals.know([])
        assert scorer.tuned is not None
        held_gold = [e for e in gold if e.process in held_out]
        base = signals.scores(BASE)
        in_base = ranks(signals, base, held_gold)
        in_tuned = ranks(signals, tuned_similarity(signals, scorer.tuned), held_gold)
        costs.append(
            {
                "fold": f + 1,
                "fit_seconds": round(seconds, 1),
                "final_tuning": {"pairs": scorer.tuned.pairs, "seconds": round(scorer.tuned.seconds, 1)},
                "held_out_gold_edges": len(held_gold),
                "base": reach(in_base),
                "dense": reach(ranks(signals, signals.matrix["dense"], held_gold)),
                "dense_tuned": reach(in_tuned),
                "in_base_20_or_tuned_20": sum(a < CANDIDATES or b < CANDIDATES for a, b in zip(in_base, in_tuned)),
                "learned": reach(ranks(signals, scores, held_gold)),
            }
        )
        print(json.dumps(costs[-1]), flush=True)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "folds-tuned.json").write_text(json.dumps(folds, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    report = {
        "settings": {k: v for k, v in vars(signals.tuning).items()},
        "folds": costs,
        "peak_memory_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
    }
    (out / "proposal-tuned.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print("\n".join(mapping_table(folds)))


if __name__ == "__main__":
    main(*sys.argv[1:4])
