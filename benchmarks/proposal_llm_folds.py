"""Leaving processes out with an LLM: the learned scorer fitted per fold, an LLM choosing among its candidates.

For each fold of ``kg eval processes`` (``fold_of`` of the gold's processes), the learned scorer is
fitted on the other processes' gold alone (as ``kg map tune --folds --scorer learned``), and the
LLM at ``URL`` chooses among the best ``--candidates`` sets of that scorer for every activity of the
fold's processes (``kg map propose --llm-url``). Both the scorer's own proposals and the LLM's are
scored on the fold's processes. Writes OUT/results.json (per fold and in total, without and with the
LLM, the exchanges' tokens and seconds), OUT/proposals.yaml (the LLM's proposals of all folds) and
OUT/exchanges.jsonl (every exchange: candidates, prompt, answer, tokens, seconds, picks).

    python benchmarks/proposal_llm_folds.py STORE GOLD URL MODEL OUT [--candidates N] [--prompt short|full]
        [--timeout SECONDS]

STORE: a store with its index built WITHOUT the gold mapping (docs/mapping-proposals.md).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

from processkg.aliases import JSONObject
from processkg.evaluate.processes import FOLDS, fold_of
from processkg.graph.handle import StoreHandle
from processkg.openai_chat import ChatSettings
from processkg.proposals.learned import fit_scorer
from processkg.proposals.llm_choice import PROMPTS, LLMChoiceSettings
from processkg.proposals.propose import Signals, edge_quality, propose, write_proposals
from processkg.sources.mapping import read_mapping


def totals(folds: list[JSONObject], key: str) -> JSONObject:
    """P, R and F1 over all folds of the edge counts under ``key`` (ignoring the mode)."""
    tp, proposed, gold = (sum(int(f[key][k]) for f in folds) for k in ("tp", "proposed", "gold"))
    p, r = tp / max(1, proposed), tp / max(1, gold)
    return {
        "tp": tp,
        "proposed": proposed,
        "gold": gold,
        "precision": round(p, 4),
        "recall": round(r, 4),
        "f1": round(2 * p * r / (p + r) if p + r else 0.0, 4),
    }


def timing(exchanges: list[JSONObject]) -> JSONObject:
    """Medians and sums of what the endpoint reported per exchange (seconds as the client saw them)."""
    answered = [x for x in exchanges if x["prompt_tokens"] is not None]
    out: JSONObject = {"exchanges": len(exchanges), "answered": len(answered)}
    for k in ("prompt_tokens", "completion_tokens", "seconds"):
        values = [float(x[k]) for x in answered]
        out[f"{k}_median"] = round(statistics.median(values), 3) if values else None
        out[f"{k}_sum"] = round(sum(values), 3)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    for name in ("store", "gold", "url", "model", "out"):
        parser.add_argument(name)
    parser.add_argument("--candidates", type=int, default=10)
    parser.add_argument("--prompt", choices=PROMPTS, default="full")
    parser.add_argument("--timeout", type=float, default=1800.0)
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    signals = Signals(StoreHandle.open(Path(args.store)))
    gold = read_mapping(Path(args.gold))
    names = sorted({e.process for e in gold})
    llm = ChatSettings(args.url, args.model, timeout=args.timeout)
    exchanges: list[JSONObject] = []
    folds: list[JSONObject] = []
    proposals = []
    start = time.perf_counter()
    with (out / "exchanges.jsonl").open("w", encoding="utf-8") as log:

        def record(item: JSONObject) -> None:
            exchanges.append(item)
            log.write(json.dumps(item, ensure_ascii=False, sort_keys=True) + "\n")
            log.flush()

        for f in range(FOLDS):
            held_out = [p for p in names if fold_of(p) == f]
            scorer = fit_scorer(signals, [e for e in gold if e.process not in held_out])
            scores = scorer.scores(signals)
            plain = propose(None, scorer.cut, signals=signals, scores=scores, processes=held_out)
            choice = LLMChoiceSettings(candidates=args.candidates, prompt=args.prompt, record=record)
            chosen = propose(
                None, scorer.cut, signals=signals, scores=scores, processes=held_out, llm=llm, llm_choice=choice
            )
            proposals += chosen
            folds.append(
                {
                    "fold": f + 1,
                    "held_out": held_out,
                    "scorer": scorer.describe(),
                    "no_llm": edge_quality(plain, gold, held_out)["edges"],
                    "llm": edge_quality(chosen, gold, held_out)["edges"],
                    "llm_with_mode": edge_quality(chosen, gold, held_out)["edges_with_mode"],
                }
            )
            print(f"fold {f + 1}: no LLM F1 {folds[-1]['no_llm']['f1']:.3f}, LLM F1 {folds[-1]['llm']['f1']:.3f}")
    result: JSONObject = {
        "model": args.model,
        "prompt": args.prompt,
        "candidates": args.candidates,
        "folds": folds,
        "no_llm": totals(folds, "no_llm"),
        "llm": totals(folds, "llm"),
        "llm_with_mode": totals(folds, "llm_with_mode"),
        "timing": timing(exchanges),
        "wall_seconds": round(time.perf_counter() - start, 1),
    }
    (out / "results.json").write_text(json.dumps(result, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    write_proposals(out / "proposals.yaml", proposals, "a store built without the mapping")
    for key in ("no_llm", "llm"):
        t = result[key]
        print(f"{key}: proposed {t['proposed']} correct {t['tp']} P {t['precision']} R {t['recall']} F1 {t['f1']}")


if __name__ == "__main__":
    main()
