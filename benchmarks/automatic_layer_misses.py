"""Where the automatic layer's reached gold items go (issue 23 §2): a per-item diagnosis of
``kg eval processes --protocol automatic``.

A held-out gold item is *reached* when a proposed edge of the query's own process uses it (or one of
its alternatives); the report counts how many of those the fold's routed model has in its top 3.
This script takes the fold stores of such a run (``--work`` of ``kg eval processes``), trains each
fold's model again exactly as the run does (the tuning queries over the fold's store, one fold seed),
checks that its Recall@3 per query is the run's (``--results``), and for every reached item that is
*not* in the top 3 records:

* its rank, and what is ranked above it in the top 3, each one classed (the first that applies):
  ``gold`` (another gold item of the query), ``same_activity`` (a set proposed for an activity the
  item is proposed for), ``neighbour_step`` (proposed for an activity one ``bpmn:next`` away from
  one of those), ``same_process`` (proposed for another activity of the query's process),
  ``other_process`` (used, by a hand-made edge, by an activity of a tuning process), ``no_process``
  (used by no activity: a dense, BM25, navigation or flow hit); with the path (``source``) that
  explains it;
* whether the item is proposed for the activity the hand mapping has it on (``right_step``), and
  for process-chain queries whether one of its proposed activities comes right after an activity
  that uses the query's anchor (the structure the query's gold was read off);
* the seeds: the rank, among all activities by similarity to the query, of the best activity of the
  query's own process, of the item's proposed activities, and (process-chain) of the anchor's
  activities; whether the query's nearest activity is of its own process;
* the kind the classifier gives, and the path that explains the item's own score.

It also trains, per fold, the model of the *queries withheld* protocol (the same tuning queries over
the full store with the hand-built layer) and reports both models' process-signal weights, and the
Recall@3 of each model on each store (the fold's store with proposals; the full store), so that the
model and the layer can be told apart. And the upper bound: Recall@3 if every reached item were in the
top 3 (the others as found).

    python benchmarks/automatic_layer_misses.py --work FOLDS --store FULL_STORE \\
        --queries data/sap/benchmark/queries.jsonl --mapping data/sap/mapping.yaml \\
        --results docs/results/processes-automatic/results.json --out benchmarks/results/automatic_layer_misses.json
"""

from __future__ import annotations

import argparse
import json
import time
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

from processkg.evaluate.metrics import Query, gold_ranks, read_queries, recall_at
from processkg.evaluate.processes import PROCESS_TYPES, folds, process_of, tuning_queries
from processkg.evaluate.train_ranker import examples, train
from processkg.graph.handle import StoreHandle, StoreLocation
from processkg.proposals.propose import read_activities
from processkg.retrieve.retriever import Result, Retriever
from processkg.retrieve.routing import KINDS, RoutedModel
from processkg.retrieve.signals import SIGNALS
from processkg.sources.mapping import read_mapping

#: Signals of the process layer (the others: dense, BM25, navigation, flow, family).
PROCESS_SIGNALS = tuple(
    s
    for s in SIGNALS
    if s.split("_")[0] in ("activity", "after", "chain", "after2", "before", "mapped", "starts", "ends", "step", "word")
)
CLASSES = ("gold", "same_activity", "neighbour_step", "same_process", "other_process", "no_process")


def open_retriever(path: Path) -> Retriever:
    return Retriever(StoreHandle.open(StoreLocation(path=path)))


class Layer:
    """The process layer of one store: activity rows by (process, id), each activity's process, the
    uses and the bpmn:next neighbours, the set rows by (service, name)."""

    def __init__(self, r: Retriever) -> None:
        act_row = {a["iri"]: i for i, a in enumerate(r.activities)}
        facts = [a for a in read_activities(r.store) if a.iri in act_row]
        self.row = {(a.process, a.id): act_row[a.iri] for a in facts}
        self.process = {act_row[a.iri]: a.process for a in facts}
        self.set_row = {(s["service"], s["name"]): j for j, s in enumerate(r.sets)}
        self.family = r.matrices.family
        self.users: dict[int, set[int]] = {}  # set row -> activity rows that use it
        for a, j in r.edges("uses").tolist():
            self.users.setdefault(j, set()).add(a)
        self.neighbours: dict[int, set[int]] = {}
        self.successors: dict[int, set[int]] = {}
        for a, b in r.edges("next").tolist():
            self.neighbours.setdefault(a, set()).add(b)
            self.neighbours.setdefault(b, set()).add(a)
            self.successors.setdefault(a, set()).add(b)

    def rows(self, alternatives: list[tuple[str, str]]) -> set[int]:
        return {self.set_row[a] for a in alternatives if a in self.set_row}

    def family_rows(self, row: int) -> set[int]:
        return {int(j) for j in np.flatnonzero(self.family == self.family[row])}

    def users_in(self, rows: set[int], process: str) -> set[int]:
        return {a for j in rows for a in self.users.get(j, ()) if self.process.get(a) == process}


def gold_activities(mapping: Path, layer: Layer) -> dict[tuple[str, str, str], set[int]]:
    """(process, service, set) -> the activity rows the hand mapping has it on."""
    out: dict[tuple[str, str, str], set[int]] = {}
    for e in read_mapping(mapping):
        if (e.process, e.activity) in layer.row:
            out.setdefault((e.process, e.service, e.entity_set), set()).add(layer.row[(e.process, e.activity)])
    return out


def rankings(r: Retriever, model: RoutedModel, queries: list[Query]) -> dict[str, list[Result]]:
    """Every set of the store in the routed order (as ``kg eval processes`` ranks, with no cut)."""
    answers = r.routed_many(model, [q.text for q in queries], len(r.sets))
    return {q.id: a for q, a in zip(queries, answers)}


def recall3(results: dict[str, list[Result]], queries: list[Query]) -> dict[str, float]:
    return {q.id: recall_at(gold_ranks([(x.service, x.entity_set) for x in results[q.id]], q.gold), 3) for q in queries}


def weights(model: RoutedModel) -> dict[str, dict[str, float]]:
    """Per kind: the ranker's standardised weight of each signal it reads."""
    return {k: {f: round(float(w), 3) for f, w in zip(m.features, m.coef[0])} for k, m in model.rankers.items()}


def process_weight(model: RoutedModel, kind: str) -> float:
    """The sum of the absolute standardised weights of the process signals of one kind's ranker."""
    m = model.rankers[kind]
    return round(float(sum(abs(w) for f, w in zip(m.features, m.coef[0]) if f in PROCESS_SIGNALS)), 3)


def activity_rank(sims: np.ndarray, rows: set[int]) -> int | None:
    """The best 1-based rank among all activities, by similarity to the query, of ``rows``."""
    if not rows:
        return None
    order = np.argsort(-sims, kind="stable")
    position = np.empty(len(order), dtype=np.int64)
    position[order] = np.arange(1, len(order) + 1)
    return int(min(position[list(rows)]))


def classify(layer: Layer, row: int, process: str, proposed: set[int], other_gold: list[set[int]]) -> str:
    """The class (:data:`CLASSES`) of a set ranked above a missed item."""
    fam = layer.family_rows(row)
    if any(fam & g for g in other_gold):
        return "gold"
    users = {a for j in fam for a in layer.users.get(j, ())}
    if users & proposed:
        return "same_activity"
    near = {b for a in proposed for b in layer.neighbours.get(a, ())}
    if users & near:
        return "neighbour_step"
    if any(layer.process.get(a) == process for a in users):
        return "same_process"
    if users:
        return "other_process"
    return "no_process"


def diagnose_fold(
    f: int,
    held_out: list[str],
    queries: list[Query],
    fold_store: Path,
    full: Retriever,
    mapping: Path,
    committed: dict[str, float] | None,
) -> dict[str, Any]:
    tuning = tuning_queries(queries, held_out)
    test = [q for q in queries if q.type in PROCESS_TYPES and process_of(q) in held_out]
    r = open_retriever(fold_store)
    layer = Layer(r)
    gold_acts = gold_activities(mapping, layer)
    started = time.perf_counter()
    model = train(examples(r, tuning), r.matrices.family, f"fold {f}", seeds=(0,))
    withheld = train(examples(full, tuning), full.matrices.family, f"fold {f} withheld", seeds=(0,))
    trained = time.perf_counter() - started
    ranked = rankings(r, model, test)
    runs = {
        "fold_model_fold_store": ranked,
        "withheld_model_fold_store": rankings(r, withheld, test),
        "fold_model_full_store": rankings(full, model, test),
        "withheld_model_full_store": rankings(full, withheld, test),
    }
    cross = {name: recall3(results, test) for name, results in runs.items()}
    mismatch = []
    if committed is not None:
        mismatch = [q.id for q in test if abs(cross["fold_model_fold_store"][q.id] - committed[q.id]) > 1e-9]
    texts = [q.text for q in test]
    vectors = r.embed(texts)
    items = []
    every = []  # each gold item: reached, and in the top 3 of each run
    bound = []
    for q, vector in zip(test, vectors):
        process = process_of(q)
        results = ranked[q.id]
        hits = [(x.service, x.entity_set) for x in results]
        ranks = gold_ranks(hits, q.gold)
        sig = r.signals(q.text, vector)
        probs = model.kind_probabilities(q.text, sig)
        sims = sig.activity_sims
        nearest = int(np.argmax(sims)) if len(sims) else -1
        process_rows = {a for a, p in layer.process.items() if p == process}
        anchor_acts: set[int] = set()
        if q.type == "process-chain" and q.extra.get("anchor"):
            anchor = q.extra["anchor"]
            key = (anchor["service"], anchor["entity_set"])
            anchor_acts = {a for (p, s, e), acts in gold_acts.items() if p == process and (s, e) == key for a in acts}
        golds = [layer.rows(list(alts)) for alts in q.gold]
        reached_count = 0
        found_count = 0
        for i, (alts, rank) in enumerate(zip(q.gold, ranks)):
            rows = golds[i]
            proposed = layer.users_in(rows, process)
            found = rank is not None and rank <= 3
            found_count += found
            reached_count += bool(proposed) and not found
            every.append(
                {
                    "query": q.id,
                    "item": f"{alts[0][0]}/{alts[0][1]}",
                    "reached": bool(proposed),
                    "on_gold_step": _on_gold_step(layer, gold_acts, process, list(alts)),
                    **{name: _in_top3(results_of[q.id], alts) for name, results_of in runs.items()},
                }
            )
            if not proposed or found:
                continue
            right = {a for s, e in alts for a in gold_acts.get((process, s, e), set())}
            above = []
            for x in results[:3]:
                row = layer.set_row[(x.service, x.entity_set)]
                above.append(
                    {
                        "set": f"{x.service}/{x.entity_set}",
                        "class": classify(layer, row, process, proposed, [g for k, g in enumerate(golds) if k != i]),
                        "source": x.source,
                    }
                )
            own = results[rank - 1] if rank is not None else None
            items.append(
                {
                    "fold": f,
                    "query": q.id,
                    "type": q.type,
                    "kind": KINDS[int(np.argmax(probs))],
                    "kind_probability": round(float(probs[KINDS.index(q.type)]), 3),
                    "item": f"{alts[0][0]}/{alts[0][1]}",
                    "rank": rank,
                    "source": own.source if own else None,
                    "above": above,
                    "right_step": bool(proposed & right),
                    "proposed_activities": len(proposed),
                    "after_anchor": bool(anchor_acts)
                    and any(b in proposed for a in anchor_acts for b in layer.successors.get(a, ())),
                    "anchor_rank": activity_rank(sims, anchor_acts),
                    "item_activity_rank": activity_rank(sims, proposed),
                    "process_rank": activity_rank(sims, process_rows),
                    "nearest_in_process": nearest in process_rows,
                    "found_withheld": _in_top3(runs["withheld_model_full_store"][q.id], alts),
                }
            )
        n = len(q.gold)
        bound.append(min(3, found_count + reached_count) / n if n else 0.0)
    return {
        "fold": f,
        "held_out": held_out,
        "queries": len(test),
        "seconds_training": round(trained, 1),
        "mismatched_queries": mismatch,
        "recall3": {k: round(float(np.mean(list(v.values()))), 4) for k, v in cross.items()},
        "recall3_if_reached_found": round(float(np.mean(bound)), 4),
        "bound_sum": float(np.sum(bound)),
        "weights": {"fold": weights(model), "withheld": weights(withheld)},
        "process_weight": {
            k: {"fold": process_weight(model, k), "withheld": process_weight(withheld, k)} for k in KINDS
        },
        "items": items,
        "every_item": every,
    }


def _in_top3(results: list[Result], alternatives: list[tuple[str, str]]) -> bool:
    rank = gold_ranks([(x.service, x.entity_set) for x in results[:3]], [list(alternatives)])[0]
    return rank is not None


def _on_gold_step(
    layer: Layer, gold_acts: dict[tuple[str, str, str], set[int]], process: str, alternatives: list[tuple[str, str]]
) -> str:
    """For an item: what the fold's store has on the activities the hand mapping puts it on: ``item`` (the
    item or an alternative), else ``family`` (a near-duplicate), ``same_service`` (another set of its
    service), ``other`` (sets of other services), ``nothing``."""
    steps = {a for s, e in alternatives for a in gold_acts.get((process, s, e), set())}
    rows = layer.rows(alternatives)
    there = {j for j, users in layer.users.items() if users & steps}
    if there & rows:
        return "item"
    families = {int(layer.family[j]) for j in rows}
    if any(int(layer.family[j]) in families for j in there):
        return "family"
    services = {s for s, _e in alternatives}
    names = {j: k for k, j in layer.set_row.items()}
    if any(names[j][0] in services for j in there):
        return "same_service"
    return "other" if there else "nothing"


def summary(report_folds: list[dict[str, Any]]) -> dict[str, Any]:
    items = [it for f in report_folds for it in f["items"]]
    above = [a for it in items for a in it["above"]]
    first_wrong = Counter(next((a["class"] for a in it["above"] if a["class"] != "gold"), "gold") for it in items)
    every = [it for f in report_folds for it in f["every_item"]]
    table = Counter(
        ("reached" if it["reached"] else "not reached")
        + (", found" if it["fold_model_fold_store"] else ", missed")
        + (
            ", found with the hand-built layer"
            if it["withheld_model_full_store"]
            else ", missed with the hand-built layer"
        )
        for it in every
    )
    return {
        "recall3_bounds": bounds(every),
        "items": len(every),
        "items_by_reach_and_top3": dict(sorted(table.items())),
        "not_reached_on_gold_step": dict(
            Counter(it["on_gold_step"] for it in every if not it["reached"]).most_common()
        ),
        "missed_reached_items": len(items),
        "rank": dict(sorted(Counter(_rank_bin(it["rank"]) for it in items).items())),
        "above_classes": dict(Counter(a["class"] for a in above).most_common()),
        "above_sources": dict(Counter(a["source"] for a in above).most_common()),
        "first_non_gold_above": dict(first_wrong.most_common()),
        "item_source": dict(Counter(str(it["source"]) for it in items).most_common()),
        "right_step": sum(it["right_step"] for it in items),
        "type": dict(Counter(it["type"] for it in items)),
        "kind_wrong": sum(it["kind"] != it["type"] for it in items),
        "kind_given": dict(Counter(f"{it['type']} -> {it['kind']}" for it in items).most_common()),
        "nearest_activity_in_process": sum(it["nearest_in_process"] for it in items),
        "item_activity_rank": dict(sorted(Counter(_rank_bin(it["item_activity_rank"]) for it in items).items())),
        "process_chain_after_anchor": sum(it["after_anchor"] for it in items if it["type"] == "process-chain"),
        "process_chain_anchor_rank": dict(
            sorted(Counter(_rank_bin(it["anchor_rank"]) for it in items if it["type"] == "process-chain").items())
        ),
        "found_withheld": sum(it["found_withheld"] for it in items),
    }


def bounds(every: list[dict[str, Any]]) -> dict[str, float]:
    """Recall@3 over the queries (at most 3 items found per query) if, besides the items the run finds:
    every reached item were found (``reached_found``); every reached item the hand-built layer finds
    (``reached_as_hand_built``: the ranking over the proposals as good as over the hand-made edges);
    every item the hand-built layer finds that no
    proposal reaches were found (``unreached_as_hand_built``); both; and the hand-built layer's own."""
    rules = {
        "as_run": lambda it: it["fold_model_fold_store"],
        "reached_found": lambda it: it["fold_model_fold_store"] or it["reached"],
        "reached_as_hand_built": lambda it: (
            it["fold_model_fold_store"] or (it["reached"] and it["withheld_model_full_store"])
        ),
        "unreached_as_hand_built": lambda it: (
            it["fold_model_fold_store"] or (not it["reached"] and it["withheld_model_full_store"])
        ),
        "both": lambda it: it["fold_model_fold_store"] or it["reached"] or it["withheld_model_full_store"],
        "hand_built": lambda it: it["withheld_model_full_store"],
    }
    by_query: dict[str, list[dict[str, Any]]] = {}
    for it in every:
        by_query.setdefault(it["query"], []).append(it)
    return {
        name: round(
            float(np.mean([min(3, sum(bool(rule(it)) for it in items)) / len(items) for items in by_query.values()])), 4
        )
        for name, rule in rules.items()
    }


def _rank_bin(rank: int | None) -> str:
    if rank is None:
        return "none"
    for top in (1, 3, 5, 10, 20):
        if rank <= top:
            return f"<= {top:02d}"
    return "> 20"


def dump(out: dict[str, Any]) -> str:
    """The report as JSON, indented, each per-item record on one line."""
    records: list[str] = []

    def mark(value: object) -> object:
        if isinstance(value, dict):
            if "query" in value and "item" in value:
                records.append(json.dumps(value))
                return f"@record{len(records) - 1}@"
            return {k: mark(v) for k, v in value.items()}
        if isinstance(value, list):
            return [mark(v) for v in value]
        return value

    text = json.dumps(mark(out), indent=1)
    for i, record in enumerate(records):
        text = text.replace(f'"@record{i}@"', record, 1)
    return text + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", type=Path, help="kg eval processes --work of an automatic run")
    parser.add_argument("--store", type=Path, help="the full store (hand-built layer)")
    parser.add_argument("--queries", type=Path)
    parser.add_argument("--mapping", type=Path)
    parser.add_argument("--results", type=Path, help="the run's results.json: its Recall@3 per query is checked")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--summary-only", action="store_true", help="recompute the summary of --out's folds only")
    args = parser.parse_args()
    if args.summary_only:
        kept = json.loads(args.out.read_text(encoding="utf-8"))
        kept["summary"] = summary(kept["folds"])
        args.out.write_text(dump(kept), encoding="utf-8")
        print(json.dumps(kept["summary"]["recall3_bounds"]))
        return
    if None in (args.work, args.store, args.queries, args.mapping):
        parser.error("--work, --store, --queries and --mapping are needed (or --summary-only)")
    queries = read_queries(args.queries)
    committed = None
    if args.results:
        per_query = json.loads(args.results.read_text(encoding="utf-8"))["automatic"]["per_query"]["hybrid"]
        committed = {k: float(v["recall@3"]) for k, v in per_query.items()}
    full = open_retriever(args.store)
    report_folds = []
    for f, held_out in enumerate(folds(queries), 1):
        print(f"fold {f}: {', '.join(held_out)}", flush=True)
        report_folds.append(
            diagnose_fold(f, held_out, queries, args.work / f"automatic-{f}" / "store", full, args.mapping, committed)
        )
    n = sum(int(f["queries"]) for f in report_folds)
    recall = {
        k: round(sum(float(f["recall3"][k]) * int(f["queries"]) for f in report_folds) / n, 4)
        for k in report_folds[0]["recall3"]
    }
    out = {
        "about": "kg eval processes --protocol automatic: reached gold items the routed hybrid misses (benchmarks/automatic_layer_misses.py)",
        "queries": n,
        "recall3": recall,
        "recall3_if_reached_found": round(sum(float(f["bound_sum"]) for f in report_folds) / n, 4),
        "summary": summary(report_folds),
        "folds": report_folds,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(dump(out), encoding="utf-8")
    print(json.dumps({k: v for k, v in out.items() if k != "folds"}, indent=1))


if __name__ == "__main__":
    main()
