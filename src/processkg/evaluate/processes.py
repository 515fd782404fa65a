"""Leave processes out (``kg eval processes``): is the routed ``hybrid`` any good on processes it was
never tuned on?

The benchmark's split is by query, so every process has queries in train and test: a model tuned
on train has seen each process's phrasing. Here the processes named by process-chain and workflow
queries are cut into :data:`FOLDS` groups (by the SHA-256 of the process id, so the cut is fixed
and not chosen). For each group the whole routed training (:func:`~processkg.evaluate.train_ranker.train`:
classifier, signal selection, weights, all with cross-validation) runs on the *tuning* queries,
the single and navigation queries of the train split and every process query of the *other*
processes, and the model is scored on the process queries of the held-out processes, which it
never saw. Reported for both: the held-out processes (the honest figure) and the tuning
processes (what the model does on what it was tuned on). ``fold_seeds`` is the number of fold
seeds of each cross-validation inside the training (3 for the shipped model; fewer is faster).

The baselines need no tuning (``dense``, ``tokens``, ``hybrid-paper``); ``hybrid-v1`` was chosen
on the train split of all processes, so on this protocol it has seen the held-out processes.

Three protocols (``PROTOCOLS``), reported side by side for those that ran:

* *queries withheld*: every fold ranks with one :class:`Retriever` over the full store. Only the
  held-out processes' queries are withheld from training; their BPMN, mapping edges, activity
  texts and index entries stay in the graph. This is what the project reported before issue 23.
* *processes removed* (when a ``rebuild`` is given): each fold ranks with a store built again
  without the held-out processes: their BPMN files are left out of the build, their mapping edges
  out of the mapping, so that neither the graph, nor the texts built from it, nor the index, nor
  the fold's training sees them. :func:`without_processes` chooses the inputs of such a build.
* *automatic layer* (when an ``automatic`` build is given): a user brings the held-out processes'
  BPMN without a mapping. Each fold's store keeps every BPMN file; the held-out processes' mapping
  edges are replaced by proposals for them, scored by a model fitted (``learned``:
  :func:`~processkg.proposals.learned.fit_scorer`) or weights tuned (``weights``:
  :func:`~processkg.proposals.propose.tune`) on the gold of the *other* processes only, its cut
  chosen there too (:func:`automatic_mapping`); the inferred document flow is in every build. The
  fold's ranker is trained on that store without the held-out queries, as above.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Collection, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import numpy as np
import yaml

from processkg.aliases import JSONObject
from processkg.errors import ProcessKGError
from processkg.evaluate.metrics import Hit, Query, evaluate_methods, gold_ranks
from processkg.evaluate.train_ranker import Log, examples, train
from processkg.proposals.learned import fit_scorer
from processkg.proposals.proposal_facts import Proposal, ProposalWeights
from processkg.proposals.propose import (
    CONTEXT_GRID,
    WEIGHT_GRID,
    Signals,
    edge_quality,
    propose,
    tune,
    write_proposals,
)
from processkg.retrieve.retriever import RetrievalSettings, Retriever
from processkg.retrieve.routing import RoutedModel
from processkg.sources.discover import BPMN_SUFFIXES, discover
from processkg.sources.mapping import MappingEntry, read_mapping
from processkg.sources.xmlio import local, parse_xml

FOLDS = 3
BASELINES = ("dense", "tokens", "hybrid-paper", "hybrid-v1")
PROCESS_TYPES = ("process-chain", "workflow")
ROUTED = "hybrid"
PROTOCOLS = {
    "held_out": "queries withheld (full graph)",
    "removed": "processes removed (graph, texts, index, training)",
    "automatic": "automatic layer (held-out BPMN kept, its mapping proposed, inferred flow)",
}

#: Builds a store without the given processes and opens its retriever (``kg eval processes --odata ...``).
Rebuild = Callable[[list[str]], Retriever]
#: Builds a store whose held-out processes carry proposed edges: its retriever, the proposals' quality
#: on the held-out processes (:func:`automatic_mapping`), and the retriever of the store the fold's
#: ranker is trained on when that is another (``--tuning-edges train``), else None.
Automatic = Callable[[list[str]], tuple[Retriever, JSONObject, Retriever | None]]


def fold_of(process: str) -> int:
    return int(hashlib.sha256(process.encode("utf-8")).hexdigest(), 16) % FOLDS


def process_of(query: Query) -> str:
    return str(query.extra.get("process") or "")


def folds(queries: list[Query]) -> list[list[str]]:
    """The processes of each fold, sorted."""
    names = sorted({process_of(q) for q in queries if q.type in PROCESS_TYPES and process_of(q)})
    return [[p for p in names if fold_of(p) == f] for f in range(FOLDS)]


def tuning_queries(queries: list[Query], held_out: list[str]) -> list[Query]:
    """Train-split object queries, and every process query of a process that is not held out."""
    keep = []
    for q in queries:
        if q.type in PROCESS_TYPES:
            if process_of(q) and process_of(q) not in held_out:
                keep.append(q)
        elif q.split == "train":
            keep.append(q)
    return keep


def processes_in(path: Path) -> list[str]:
    """The ids of the ``process`` elements of one BPMN file."""
    root = parse_xml(path).getroot()
    return [str(e.get("id")) for e in root.iter() if isinstance(e.tag, str) and local(e.tag) == "process"]


def without_processes(
    bpmn: Sequence[Path | str], mapping: Path | None, held_out: Sequence[str], folder: Path
) -> tuple[list[Path], Path | None]:
    """The BPMN files and a mapping file for a build that leaves the ``held_out`` processes out.

    Every BPMN file under ``bpmn`` that holds a held-out process is dropped; a file that holds a
    held-out process beside one that is kept cannot be split here and is an error. The mapping's
    entries of held-out processes are dropped, and the rest is written to ``folder/mapping.yaml``.
    """
    gone = set(held_out)
    kept: list[Path] = []
    found: set[str] = set()
    for path, display in discover(bpmn, BPMN_SUFFIXES):
        ids = set(processes_in(path))
        if ids & gone and ids - gone:
            raise ProcessKGError(
                f"{display}: holds held-out processes ({', '.join(sorted(ids & gone))}) beside kept ones "
                f"({', '.join(sorted(ids - gone))}); put each process in a file of its own to leave it out"
            )
        found |= ids & gone
        if not ids & gone:
            kept.append(path)
    if missing := gone - found:
        raise ProcessKGError(f"no BPMN file holds the held-out processes {', '.join(sorted(missing))}")
    if mapping is None:
        return kept, None
    return kept, kept_mapping(mapping, held_out, folder / "mapping.yaml")


def kept_mapping(mapping: Path, held_out: Collection[str], out: Path) -> Path:
    """Write to ``out`` the entries of ``mapping`` that are not of a ``held_out`` process."""
    write_mapping(out, mapping_rows([e for e in read_mapping(mapping) if e.process not in set(held_out)]))
    return out


def write_mapping(out: Path, rows: list[JSONObject]) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(yaml.safe_dump({"mappings": rows}, sort_keys=False), encoding="utf-8")


def mapping_rows(entries: Sequence[MappingEntry | Proposal]) -> list[JSONObject]:
    return [
        {"process": e.process, "activity": e.activity, "service": e.service, "entity_set": e.entity_set, "mode": e.mode}
        for e in entries
    ]


#: The kept (tuning) processes' mapping edges in the automatic layer: ``gold``, their hand-made edges;
#: ``proposed``, edges proposed for them as for the held-out ones, each process's by a scorer fitted
#: without its own gold (:func:`tuning_proposals`), in the store the fold's ranker is trained on and
#: ranks over; ``train``, those proposals in the store it is trained on only (``folder/training.yaml``),
#: the hand-made edges in the one it ranks over: trained on the kind of layer the held-out processes have;
#: ``both``, trained on the tuning queries over both stores (each query twice), ranking over the first.
TUNING_EDGES = ("gold", "proposed", "train", "both")
#: Groups of the tuning processes for their out-of-fold proposals: each group's by a scorer fitted on
#: the others' gold (the processes sorted, every third in one group).
TUNING_GROUPS = 3


def automatic_mapping(
    signals: Signals,
    gold: Path,
    held_out: Sequence[str],
    folder: Path,
    context: bool = False,
    scorer: str = "learned",
    tuning: str = "gold",
    scored: Scored | None = None,
) -> JSONObject:
    """Write ``folder/mapping.yaml``: the gold edges of the kept processes (with ``tuning`` ``proposed``,
    their out-of-fold proposals instead: :func:`tuning_proposals`, kept in
    ``folder/tuning-proposals.yaml``) and, for the held-out ones, the edges ``kg map propose`` draws
    with a scorer and cut fitted on the kept processes' gold alone (:func:`fold_proposals`;
    ``folder/proposals.yaml`` keeps them with score and reason; ``folder/gold.yaml`` has the held-out
    processes' gold, for ``kg eval mapping``). Returns the chosen settings and the proposals' P, R and
    F1 on the held-out processes against their gold (and, with ``proposed``, on the kept ones)."""
    if tuning not in TUNING_EDGES:
        raise ProcessKGError(f"unknown tuning edges {tuning!r}: one of {', '.join(TUNING_EDGES)}")
    gone = set(held_out)
    entries = read_mapping(gold)
    kept = [e for e in entries if e.process not in gone]
    folder.mkdir(parents=True, exist_ok=True)
    kept_rows = mapping_rows(kept)
    drawn_rows: list[JSONObject] = []
    tuning_quality: JSONObject | None = None
    if tuning != "gold":
        drawn, tuning_quality = tuning_proposals(signals, kept, context, scorer)
        write_proposals(folder / "tuning-proposals.yaml", drawn, "the fold's store, the tuning processes")
        drawn_rows = mapping_rows(drawn)
        if tuning == "proposed":
            kept_rows = drawn_rows
    proposals, settings, quality, scores = fold_proposals(signals, entries, gone, context, scorer)
    write_proposals(folder / "proposals.yaml", proposals, "the fold's store", settings)
    quality["proposed_sets"] = sorted({(p.process, p.service, p.entity_set) for p in proposals})
    if scored is not None:
        loose = replace(settings, top_n=scored.candidates, threshold=0.0, ratio=0.0)
        candidates = [p for p in propose(None, loose, signals=signals, scores=scores) if p.process in gone]
        candidates = scoped(candidates, proposals, signals, scored.scope)
        write_proposals(folder / "scored.yaml", candidates, "the fold's store, scored candidates", loose)
        quality["scored"] = edge_quality(candidates, entries, gone)
        quality["scored_sets"] = sorted({(p.process, p.service, p.entity_set) for p in candidates})
        _write_scored_rows(folder / "scored.json", signals, scores, candidates)
        if not scored.cut_edges:
            proposals = []
            quality["proposed_sets"] = []
    write_mapping(folder / "mapping.yaml", kept_rows + mapping_rows(proposals))
    if tuning in ("train", "both"):
        write_mapping(folder / "training.yaml", drawn_rows + mapping_rows(proposals))
    write_mapping(folder / "gold.yaml", mapping_rows([e for e in entries if e.process in gone]))
    if tuning_quality is not None:
        quality["tuning_edges"] = tuning_quality
    quality["tuning"] = tuning
    return quality


#: How a scored candidate's weight is made from its score (``--scored-weight``): ``probability``, the
#: score itself; ``relative``, the score over the best of its activity's candidates; ``one``, 1.
SCORED_WEIGHTS = ("probability", "relative", "one")


#: Which of the held-out activities' best candidates are walked (``--scored-scope``): ``all``; ``empty``,
#: those of the activities the cut left without an edge; ``parts``, those that are a document part
#: (an item of, or the header of; ``propose-items``) of a set the cut proposed for the same activity;
#: ``flow``, those that follow or precede such a set in the inferred document flow (``kg:inferredNext``).
SCORED_SCOPES = ("all", "empty", "parts", "flow")


@dataclass(frozen=True)
class Scored:
    """Scored candidates for the held-out activities (``--scored-candidates``): each activity's best
    ``candidates`` sets under the fold's scorer (those of ``scope``, :data:`SCORED_SCOPES`), walked as
    uses with a weight (:data:`SCORED_WEIGHTS`); with ``cut_edges`` False the proposals of the cut are
    not in the store's mapping."""

    candidates: int
    weight: str = "probability"
    cut_edges: bool = True
    scope: str = "all"


def scoped(candidates: list[Proposal], cut: list[Proposal], signals: Signals, scope: str) -> list[Proposal]:
    """The ``candidates`` of ``scope`` (:data:`SCORED_SCOPES`) given the ``cut``'s proposals."""
    if scope == "all":
        return candidates
    if scope == "empty":
        edged = {(p.process, p.activity) for p in cut}
        return [p for p in candidates if (p.process, p.activity) not in edged]
    if scope not in ("parts", "flow"):
        raise ProcessKGError(f"unknown scored scope {scope!r}: one of {', '.join(SCORED_SCOPES)}")
    col = {(t.service, t.name): j for j, t in enumerate(signals.sets)}
    related: dict[int, set[int]] = {}  # set row -> its headers and its items, or the sets it follows and precedes
    for row, others in enumerate(signals.documents if scope == "parts" else signals.follows):
        for other in others:
            related.setdefault(row, set()).add(other)
            related.setdefault(other, set()).add(row)
    parts: set[tuple[str, str, int]] = set()  # (process, activity, set row) a cut edge's part
    for p in cut:
        for j in related.get(col[(p.service, p.entity_set)], ()):
            parts.add((p.process, p.activity, j))
    edges = {p.edge() for p in cut}
    return [
        p
        for p in candidates
        if (p.process, p.activity, col[(p.service, p.entity_set)]) in parts and p.edge() not in edges
    ]


def _write_scored_rows(path: Path, signals: Signals, scores: np.ndarray, candidates: list[Proposal]) -> None:
    """``path``: [activity IRI, entity-set IRI, score] of each candidate, for :func:`add_scored_uses`."""
    act = {(a.process, a.id): i for i, a in enumerate(signals.activities)}
    col = {(t.service, t.name): j for j, t in enumerate(signals.sets)}
    rows = []
    for p in candidates:
        i, j = act[(p.process, p.activity)], col[(p.service, p.entity_set)]
        rows.append([signals.activities[i].iri, signals.sets[j].iri, float(scores[i, j])])
    path.write_text(json.dumps(rows), encoding="utf-8")


def scored_weights(rows: list[tuple[str, str, float]], weight: str) -> np.ndarray:
    """The weight of each (activity, set, score) row (:data:`SCORED_WEIGHTS`), clipped to [0.001, 1]."""
    scores = np.array([score for _a, _s, score in rows], dtype=np.float32)
    if weight == "relative":
        best: dict[str, float] = {}
        for activity, _s, score in rows:
            best[activity] = max(best.get(activity, 0.0), score)
        scores = np.array([score / best[a] if best[a] > 0 else 0.0 for a, _s, score in rows], dtype=np.float32)
    elif weight == "one":
        scores = np.ones(len(rows), dtype=np.float32)
    elif weight != "probability":
        raise ProcessKGError(f"unknown scored weight {weight!r}: one of {', '.join(SCORED_WEIGHTS)}")
    return np.clip(scores, 0.001, 1.0)


def add_scored_uses(retriever: Retriever, path: Path, weight: str) -> None:
    """Give ``retriever`` the scored candidates written to ``path`` as weighted uses."""
    rows = [(str(a), str(s), float(p)) for a, s, p in json.loads(path.read_text(encoding="utf-8"))]
    activity = {a["iri"]: i for i, a in enumerate(retriever.activities)}
    pairs = np.array([[activity[a], retriever.set_row[s]] for a, s, _p in rows], dtype=np.int64).reshape(-1, 2)
    retriever.add_proposed_uses(pairs, scored_weights(rows, weight))


def tuning_proposals(
    signals: Signals, kept: list[MappingEntry], context: bool = False, scorer: str = "learned"
) -> tuple[list[Proposal], JSONObject]:
    """Proposals for every process of the ``kept`` gold, out of fold: the processes sorted, every
    :data:`TUNING_GROUPS`-th in one group, each group's drawn by :func:`fold_proposals` fitted on the
    other groups' gold alone. ``kept`` must hold no held-out process: nothing else is read. Returns
    the proposals and their P, R and F1 against ``kept`` (over all groups, and per group)."""
    names = sorted({e.process for e in kept})
    count = min(TUNING_GROUPS, len(names))
    drawn: list[Proposal] = []
    groups: list[JSONObject] = []
    for g in range(count):
        group = names[g::count]
        proposals, _settings, quality, _scores = fold_proposals(signals, kept, group, context, scorer)
        drawn += proposals
        groups.append({"processes": group, "tuning_f1": quality["tuning_f1"], "edges": quality["held_out"]["edges"]})
    return drawn, {"groups": groups, **edge_quality(drawn, kept, names)}


#: How ``kg map tune --folds`` and the automatic layer score candidates: ``learned``, the logistic
#: regression of :mod:`~processkg.proposals.learned`; ``weights``, the weighted mean of the signals
#: (with ``context``, also the context weights), as ``kg map propose``.
SCORERS = ("learned", "weights")


def fold_proposals(
    signals: Signals,
    gold: list[MappingEntry],
    held_out: Collection[str],
    context: bool = False,
    scorer: str = "learned",
) -> tuple[list[Proposal], ProposalWeights, JSONObject, np.ndarray]:
    """The proposals for the ``held_out`` processes by a scorer fitted on the other processes' ``gold``
    alone (``learned``: :func:`~processkg.proposals.learned.fit_scorer`; ``weights``:
    :func:`proposal_choice`), the settings of their cut, a report (the settings, the tuning F1 and
    the P, R and F1 of the proposals against the held-out processes' gold), and the scorer's scores
    (activities x sets)."""
    settings, scores, quality = fold_scores(signals, gold, held_out, context, scorer)
    proposals = [p for p in propose(None, settings, signals=signals, scores=scores) if p.process in held_out]
    quality["held_out"] = edge_quality(proposals, gold, held_out)
    return proposals, settings, quality, scores


def fold_scores(
    signals: Signals,
    gold: list[MappingEntry],
    held_out: Collection[str],
    context: bool = False,
    scorer: str = "learned",
) -> tuple[ProposalWeights, np.ndarray, JSONObject]:
    """The cut and the scores (activities x sets) of a scorer fitted on the gold of the processes not
    ``held_out`` alone (:func:`fold_proposals`), and its settings and tuning F1."""
    if scorer not in SCORERS:
        raise ProcessKGError(f"unknown proposal scorer {scorer!r}: one of {', '.join(SCORERS)}")
    kept = [e for e in gold if e.process not in held_out]
    if scorer == "learned":
        if context:
            raise ProcessKGError("the context weights go with the weights scorer; the learned one has them as features")
        fitted = fit_scorer(signals, kept)
        return fitted.cut, fitted.scores(signals), {"settings": fitted.describe(), "tuning_f1": fitted.tuning_f1}
    choice = proposal_choice(signals, kept, context)
    settings = choice["settings"]
    return settings, signals.scores(settings), {"settings": asdict(settings), "tuning_f1": choice["train_f1"]}


def proposal_choice(signals: Signals, kept: list[MappingEntry], context: bool = False) -> JSONObject:
    """``tune`` on the ``kept`` gold alone: the signal weights and the cut over ``WEIGHT_GRID`` and, with
    ``context``, then the context weights over ``CONTEXT_GRID`` (``known`` drawing on ``kept``)."""
    signals.know(kept)
    on = {e.process for e in kept}
    choice = tune(signals, kept, weights=WEIGHT_GRID, on=on)
    if context:
        choice = tune(signals, kept, base=choice["settings"], weights=CONTEXT_GRID, on=on)
    return choice


def proposal_folds(
    signals: Signals, gold: list[MappingEntry], context: bool = False, scorer: str = "learned"
) -> list[JSONObject]:
    """Leave processes out for the proposals alone: per fold (:func:`fold_of` of the gold's processes),
    the scorer and cut :func:`fold_proposals` fits on the other processes' gold, and the P, R and F1
    of the proposals on the fold's processes."""
    names = sorted({e.process for e in gold})
    out: list[JSONObject] = []
    for f in range(FOLDS):
        held_out = [p for p in names if fold_of(p) == f]
        _proposals, _settings, mapping, _scores = fold_proposals(signals, gold, held_out, context, scorer)
        out.append({"fold": f + 1, "held_out": held_out, "mapping": mapping})
    return out


def ranked(
    retriever: Retriever, queries: list[Query], model_results: dict[str, list[Hit]]
) -> dict[str, dict[str, list[Hit]]]:
    """{method: {query id: [(service, entity_set)]}}: the baselines, and the fold's own routed model."""
    out: dict[str, dict[str, list[Hit]]] = {ROUTED: model_results}
    texts = [q.text for q in queries]
    for method in BASELINES:
        answers = retriever.retrieve_many(texts, 10, RetrievalSettings(method))
        out[method] = {q.id: [(r.service, r.entity_set) for r in a] for q, a in zip(queries, answers)}
    return out


def _routed(retriever: Retriever, queries: list[Query], model: RoutedModel) -> dict[str, list[Hit]]:
    answers = retriever.routed_many(model, [q.text for q in queries], 10)
    return {q.id: [(r.service, r.entity_set) for r in a] for q, a in zip(queries, answers)}


def run(
    retriever: Retriever,
    queries: list[Query],
    log: Log | None = None,
    fold_seeds: int = 3,
    rebuild: Rebuild | None = None,
    automatic: Automatic | None = None,
    only: Collection[int] | None = None,
    withheld: bool = True,
) -> JSONObject:
    """Every fold (or the folds numbered in ``only``, from 1): with ``withheld``, train on its tuning
    queries over the full store and score its held-out and its tuning process queries; with
    ``rebuild``, train and score on a store built without the fold's held-out processes; with
    ``automatic``, on a store whose held-out processes have proposed mapping edges."""
    held: dict[str, dict[str, list[Hit]]] = {}
    removed: dict[str, dict[str, list[Hit]]] = {}
    auto: dict[str, dict[str, list[Hit]]] = {}
    tuned: dict[str, dict[str, list[Hit]]] = {}
    held_queries: list[Query] = []
    tuned_queries: list[Query] = []
    report_folds = []
    for f, processes in enumerate(folds(queries)):
        if only is not None and f + 1 not in only:
            continue
        if log:
            log(f"fold {f + 1}: holding out {', '.join(processes)}")
        tuning = tuning_queries(queries, processes)
        seeds = tuple(range(fold_seeds))
        test = [q for q in queries if q.type in PROCESS_TYPES and process_of(q) in processes]
        seen = [q for q in tuning if q.type in PROCESS_TYPES]
        if withheld:
            model = train(examples(retriever, tuning), retriever.matrices.family, f"fold {f + 1}", log, seeds=seeds)
            _merge(held, ranked(retriever, test, _routed(retriever, test, model)))
            _merge(tuned, ranked(retriever, seen, _routed(retriever, seen, model)))
        if rebuild is not None:
            if log:
                log(f"fold {f + 1}: building without {', '.join(processes)}")
            pruned = rebuild(processes)
            model = train(examples(pruned, tuning), pruned.matrices.family, f"fold {f + 1} removed", log, seeds=seeds)
            _merge(removed, ranked(pruned, test, _routed(pruned, test, model)))
        fold: JSONObject = {
            "fold": f + 1,
            "held_out": processes,
            "tuning_queries": len(tuning),
            "test_queries": len(test),
        }
        if automatic is not None:
            if log:
                log(f"fold {f + 1}: building with proposed edges for {', '.join(processes)}")
            proposed, fold["mapping"], training = automatic(processes)
            if training is None:
                items = examples(proposed, tuning)
            elif fold["mapping"].get("tuning") == "both":
                items = examples(proposed, tuning) + examples(training, tuning)
            else:
                items = examples(training, tuning)
            model = train(items, proposed.matrices.family, f"fold {f + 1} automatic", log, seeds=seeds)
            fold_results = ranked(proposed, test, _routed(proposed, test, model))
            fold["reached"] = reached(test, fold_results[ROUTED], fold["mapping"].get("proposed_sets", []))
            if "scored_sets" in fold["mapping"]:
                fold["reached_scored"] = reached(test, fold_results[ROUTED], fold["mapping"]["scored_sets"])
            _merge(auto, fold_results)
        held_queries += test
        tuned_queries += seen
        report_folds.append(fold)
    report: JSONObject = {"folds": report_folds}
    if withheld:
        report["held_out"] = evaluate_methods(held, held_queries, (1, 3, 5, 10))
        report["tuning"] = evaluate_methods(tuned, tuned_queries, (1, 3, 5, 10))
    if rebuild is not None:
        report["removed"] = evaluate_methods(removed, held_queries, (1, 3, 5, 10))
    if automatic is not None:
        report["automatic"] = evaluate_methods(auto, held_queries, (1, 3, 5, 10))
    return report


def reached(queries: list[Query], results: dict[str, list[Hit]], proposed: Collection[Sequence[str]]) -> JSONObject:
    """How many gold items of the held-out ``queries`` a proposed edge of the query's own process reaches
    (``proposed``: (process, service, entity set) of each proposed edge; an item is reached if one of
    its alternatives is), and how many of those and of the others are in the routed ``results``' top 3:
    what the proposals leave to retrieval."""
    edges = {tuple(e) for e in proposed}
    counts = {"items": 0, "reached": 0, "reached_found": 0, "other_found": 0}
    for q in queries:
        ranks = gold_ranks(results.get(q.id, []), q.gold)
        for alternatives, rank in zip(q.gold, ranks, strict=True):
            hit = rank is not None and rank <= 3
            counts["items"] += 1
            if any((process_of(q), service, name) in edges for service, name in alternatives):
                counts["reached"] += 1
                counts["reached_found"] += hit
            else:
                counts["other_found"] += hit
    return counts


def _merge(into: dict[str, dict[str, list[Hit]]], more: dict[str, dict[str, list[Hit]]]) -> None:
    for method, results in more.items():
        into.setdefault(method, {}).update(results)


def render(report: JSONObject, command: str = "") -> str:
    """report.md: R@3 / R@5 per method and type on the held-out processes (under each protocol run) and on
    the tuning processes, and the paired tests on the held-out processes."""
    lines = ["# Leave processes out", ""]
    if command:
        lines += ["Produced by:", "", "```", command, "```", ""]
    lines += ["| fold | held-out processes | tuning queries | held-out queries |", "|---|---|---|---|"]
    for f in report["folds"]:
        lines.append(f"| {f['fold']} | {', '.join(f['held_out'])} | {f['tuning_queries']} | {f['test_queries']} |")
    if any("mapping" in f for f in report["folds"]):
        lines += ["", "## Proposed mapping edges on the held-out processes (tuned on the other processes' gold)", ""]
        lines += mapping_table(report["folds"])
    if any("reached" in f for f in report["folds"]):
        lines += ["", "## Held-out gold items reached by a proposed edge of their own process (hybrid, top 3)", ""]
        lines += reached_table(report["folds"])
    if any("reached_scored" in f for f in report["folds"]):
        lines += ["", "## Held-out gold items reached by a scored candidate of their own process (hybrid, top 3)", ""]
        lines += reached_table(
            [{**f, "reached": f["reached_scored"]} for f in report["folds"] if "reached_scored" in f]
        )
        edges = [f["mapping"]["scored"]["edges"] for f in report["folds"] if "scored" in f.get("mapping", {})]
        tp, proposed, gold = (sum(e[k] for e in edges) for k in ("tp", "proposed", "gold"))
        lines += [
            "",
            f"Scored candidates against the held-out gold edges: {proposed} candidates, {tp} of {gold} gold edges "
            f"(P {_ratio(tp, proposed):.3f}, R {_ratio(tp, gold):.3f}).",
        ]
    parts = [(p, f"held-out processes, {title}") for p, title in PROTOCOLS.items() if p in report]
    for part, title in parts + ([("tuning", "the tuning processes (seen), full graph")] if "tuning" in report else []):
        lines += ["", f"## Recall@3 / Recall@5 on {title}", ""] + _recall_table(report[part])
    for part, _ in parts:
        lines += [
            "",
            f"## Paired tests on the held-out processes, {PROTOCOLS[part]} (Recall@3)",
            "",
            "| a | b | queries | n | mean diff | Wilcoxon p | permutation p |",
            "|---|---|---|---|---|---|---|",
        ]
        for t in report[part]["tests"]:
            lines.append(
                f"| {t['a']} | {t['b']} | {t['group']} | {t['n']} | {t['mean_diff']:+.3f} | {t['wilcoxon_p']:.4f} | {t['permutation_p']:.4f} |"
            )
    return "\n".join(lines) + "\n"


def mapping_table(report_folds: list[JSONObject]) -> list[str]:
    """Per fold and over all folds: P / R / F1 of the proposed edges against the held-out gold."""
    lines = [
        "| fold | tuning F1 | proposed | gold | correct | P | R | F1 | F1 with mode | weights and cut |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    total = {"tp": 0, "proposed": 0, "gold": 0}
    total_mode = 0
    for f in report_folds:
        if "mapping" not in f:
            continue
        m = f["mapping"]
        e, w = m["held_out"]["edges"], m["held_out"]["edges_with_mode"]
        total = {k: total[k] + e[k] for k in total}
        total_mode += w["tp"]
        chosen = ", ".join(f"{k} {v}" for k, v in m["settings"].items() if k != "dedupe")
        lines.append(
            f"| {f['fold']} | {m['tuning_f1']:.3f} | {e['proposed']} | {e['gold']} | {e['tp']} | "
            f"{e['precision']:.3f} | {e['recall']:.3f} | {e['f1']:.3f} | {w['f1']:.3f} | {chosen} |"
        )
    p, r = _ratio(total["tp"], total["proposed"]), _ratio(total["tp"], total["gold"])
    pm, rm = _ratio(total_mode, total["proposed"]), _ratio(total_mode, total["gold"])
    lines.append(
        f"| all | | {total['proposed']} | {total['gold']} | {total['tp']} | {p:.3f} | {r:.3f} | "
        f"{_f1(p, r):.3f} | {_f1(pm, rm):.3f} | |"
    )
    return lines


def reached_table(report_folds: list[JSONObject]) -> list[str]:
    """Per fold and over all: the gold items a proposed edge reaches, and the routed hybrid's recall@3 on
    those and on the others (item by item, not averaged per query)."""
    lines = [
        "| fold | gold items | reached | R@3 on reached | R@3 on the others |",
        "|---|---|---|---|---|",
    ]
    total = {"items": 0, "reached": 0, "reached_found": 0, "other_found": 0}
    for f in report_folds:
        if "reached" not in f:
            continue
        total = {k: total[k] + f["reached"][k] for k in total}
        lines.append(_reached_row(str(f["fold"]), f["reached"]))
    lines.append(_reached_row("all", total))
    return lines


def _reached_row(label: str, c: JSONObject) -> str:
    others = c["items"] - c["reached"]
    return (
        f"| {label} | {c['items']} | {c['reached']} ({_ratio(c['reached'], c['items']):.0%}) | "
        f"{_ratio(c['reached_found'], c['reached']):.3f} | {_ratio(c['other_found'], others):.3f} |"
    )


def _ratio(a: int, b: int) -> float:
    return a / b if b else 0.0


def _f1(p: float, r: float) -> float:
    return 2 * p * r / (p + r) if p + r else 0.0


def _recall_table(ev: JSONObject) -> list[str]:
    lines = ["| method | all | process-chain | workflow |", "|---|---|---|---|"]
    for method in (ROUTED, *BASELINES):
        by = ev["summary"][method]
        cells = [
            f"{by[g]['recall@3']:.3f} / {by[g]['recall@5']:.3f}" if g in by else "" for g in ("all", *PROCESS_TYPES)
        ]
        lines.append(f"| {method} | " + " | ".join(cells) + " |")
    return lines
