"""Leaving processes out, why the learned proposal scorer misses gold edges and proposes wrong ones.

For each fold of ``kg eval processes`` the scorer is fitted on the other processes' gold (as ``kg map
tune --folds``), and every missed gold edge and every wrong proposal of the fold's processes gets
one cause, the first that applies in this order:

missed gold edge (process, activity, service, set):
  outside_candidates  the set is not among the activity's CANDIDATES (the untuned base mix)
  copy_in_other_service  a set of the same name in another service was proposed instead
  header_item         a proposal of the activity is this set's document or one of its parts
                      (a to-many navigation within one service, ``propose-items``)
  cut_too_strict      ranked within the cut's top-n but below its threshold or ratio
  second_of_two       the activity has two gold edges and the other one was proposed
  other_service       ranked too low, and the set's service is none of the services the
                      process's other gold edges use (the reference mapping reaches outside)
  outranked           ranked too low, by a set of the process's own services

wrong proposal:
  copy_in_other_service, header_item  as above, against the activity's gold sets
  extra_after_right   the activity's first proposal is right; this one is an extra (cut too loose)
  gold_outside_candidates  none of the activity's gold sets is among its candidates
  wrong_first_choice  a gold set is among the candidates, ranked below this one

Besides the cause, each edge is tagged ``operation`` when its set has an operation (function import,
bound action) whose name begins with the step's verb, and ``verb``/``no_verb`` by whether the step's
name has a cue verb. Writes one JSON object (counts per cause and per fold, and every edge with its
cause) and prints the counts.

    python benchmarks/proposal_errors.py STORE GOLD OUT.json
"""

from __future__ import annotations

import json
import sys
from collections import Counter, defaultdict
from pathlib import Path

from processkg.evaluate.processes import FOLDS, fold_of
from processkg.graph.handle import StoreHandle
from processkg.graph.store import records
from processkg.proposals.learned import BASE, CANDIDATES, fit_scorer
from processkg.proposals.proposal_facts import ActivityFacts, EntitySetFacts
from processkg.proposals.propose import Signals, propose, ranked
from processkg.retrieve.texts import split_name
from processkg.sources.mapping import MappingEntry, read_mapping


def _operation_verbs(handle: StoreHandle, signals: Signals) -> dict[int, set[str]]:
    """Set row -> the first words (lower case) of the names of the operations that act on it."""
    row = {s.iri: j for j, s in enumerate(signals.sets)}
    out: dict[int, set[str]] = defaultdict(set)
    for r in records(handle.graph, "propose-operations"):
        if r["set"] in row:
            out[row[r["set"]]].add(split_name(r["name"])[0].lower())
    return out


def analyse(handle: StoreHandle, signals: Signals, gold: list[MappingEntry]) -> dict[str, object]:
    names = sorted({e.process for e in gold})
    set_row = {(s.service, s.name): j for j, s in enumerate(signals.sets)}
    verbs = _operation_verbs(handle, signals)
    parts: dict[int, set[int]] = defaultdict(set)  # a set row -> its documents and its parts
    for item, documents in enumerate(signals.documents):
        for doc in documents:
            parts[item].add(doc)
            parts[doc].add(item)
    edges = []
    for f in range(FOLDS):
        held_out = {p for p in names if fold_of(p) == f}
        scorer = fit_scorer(signals, [e for e in gold if e.process not in held_out])
        scores = scorer.scores(signals)
        base = signals.scores(BASE)
        proposals = [p for p in propose(None, scorer.cut, signals=signals, scores=scores) if p.process in held_out]
        for i, a in enumerate(signals.activities):
            if a.process not in held_out:
                continue
            want = [set_row[(e.service, e.entity_set)] for e in gold if (e.process, e.activity) == (a.process, a.id)]
            services = {e.service for e in gold if e.process == a.process and e.activity != a.id}
            got = [
                set_row[(p.service, p.entity_set)] for p in proposals if (p.process, p.activity) == (a.process, a.id)
            ]
            pool = set(ranked(base, i, CANDIDATES))
            top = ranked(scores, i, scorer.cut.top_n)
            _mode, cue = signals.modes[i]
            for j in want:
                if j in got:
                    continue
                s = signals.sets[j]
                if j not in pool:
                    cause = "outside_candidates"
                elif any(signals.sets[k].name == s.name for k in got):
                    cause = "copy_in_other_service"
                elif parts[j] & set(got):
                    cause = "header_item"
                elif j in top:
                    cause = "cut_too_strict"
                elif len(want) == 2 and set(want) & set(got):
                    cause = "second_of_two"
                elif s.service not in services:
                    cause = "other_service"
                else:
                    cause = "outranked"
                edges.append(_edge("missed", f, a, s, cause, cue, cue in verbs.get(j, ())))
            for rank, j in enumerate(got):
                if j in want:
                    continue
                s = signals.sets[j]
                if any(signals.sets[k].name == s.name for k in want):
                    cause = "copy_in_other_service"
                elif parts[j] & set(want):
                    cause = "header_item"
                elif rank > 0 and got[0] in want:
                    cause = "extra_after_right"
                elif not pool & set(want):
                    cause = "gold_outside_candidates"
                else:
                    cause = "wrong_first_choice"
                edges.append(_edge("wrong", f, a, s, cause, cue, cue in verbs.get(j, ())))
    counts: dict[str, object] = {}
    for kind in ("missed", "wrong"):
        mine = [e for e in edges if e["kind"] == kind]
        counts[kind] = {
            "total": len(mine),
            "by_cause": dict(Counter(str(e["cause"]) for e in mine).most_common()),
            "by_fold": dict(sorted(Counter(int(str(e["fold"])) for e in mine).items())),
            "set_has_operation_of_the_verb": sum(1 for e in mine if e["operation"]),
            "step_without_cue_verb": sum(1 for e in mine if not e["verb"]),
        }
    return {"counts": counts, "edges": edges}


def _edge(
    kind: str, fold: int, a: ActivityFacts, s: EntitySetFacts, cause: str, cue: str, operation: bool
) -> dict[str, object]:
    return {
        "kind": kind,
        "fold": fold + 1,
        "process": a.process,
        "activity": a.id,
        "name": a.name,
        "service": s.service,
        "entity_set": s.name,
        "cause": cause,
        "verb": cue,
        "operation": operation,
    }


def main(store: str, gold: str, out: str) -> None:
    handle = StoreHandle.open(Path(store))
    signals = Signals(handle)
    result = analyse(handle, signals, read_mapping(Path(gold)))
    Path(out).write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(result["counts"], indent=2))


if __name__ == "__main__":
    main(*sys.argv[1:4])
