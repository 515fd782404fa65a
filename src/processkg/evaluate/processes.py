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

Two protocols, reported side by side:

* *queries withheld*: every fold ranks with one :class:`Retriever` over the full store. Only the
  held-out processes' queries are withheld from training; their BPMN, mapping edges, activity
  texts and index entries stay in the graph. This is what the project reported before issue 23.
* *processes removed* (when a ``rebuild`` is given): each fold ranks with a store built again
  without the held-out processes: their BPMN files are left out of the build, their mapping edges
  out of the mapping, so that neither the graph, nor the texts built from it, nor the index, nor
  the fold's training sees them. :func:`without_processes` chooses the inputs of such a build.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from pathlib import Path

import yaml

from processkg.aliases import JSONObject
from processkg.errors import ProcessKGError
from processkg.evaluate.metrics import Hit, Query, evaluate_methods
from processkg.evaluate.train_ranker import Log, examples, train
from processkg.retrieve.retriever import RetrievalSettings, Retriever
from processkg.retrieve.routing import RoutedModel
from processkg.sources.discover import BPMN_SUFFIXES, discover
from processkg.sources.mapping import read_mapping
from processkg.sources.xmlio import local, parse_xml

FOLDS = 3
BASELINES = ("dense", "tokens", "hybrid-paper", "hybrid-v1")
PROCESS_TYPES = ("process-chain", "workflow")
ROUTED = "hybrid"
PROTOCOLS = {
    "held_out": "queries withheld (full graph)",
    "removed": "processes removed (graph, texts, index, training)",
}

#: Builds a store without the given processes and opens its retriever (``kg eval processes --odata ...``).
Rebuild = Callable[[list[str]], Retriever]


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
    entries = [e for e in read_mapping(mapping) if e.process not in gone]
    rows = [
        {"process": e.process, "activity": e.activity, "service": e.service, "entity_set": e.entity_set, "mode": e.mode}
        for e in entries
    ]
    folder.mkdir(parents=True, exist_ok=True)
    out = folder / "mapping.yaml"
    out.write_text(yaml.safe_dump({"mappings": rows}, sort_keys=False), encoding="utf-8")
    return kept, out


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
) -> JSONObject:
    """Every fold: train on its tuning queries, score its held-out and its tuning process queries; with
    ``rebuild``, train and score again on a store built without the fold's held-out processes."""
    held: dict[str, dict[str, list[Hit]]] = {}
    removed: dict[str, dict[str, list[Hit]]] = {}
    tuned: dict[str, dict[str, list[Hit]]] = {}
    held_queries: list[Query] = []
    tuned_queries: list[Query] = []
    report_folds = []
    for f, processes in enumerate(folds(queries)):
        if log:
            log(f"fold {f + 1}: holding out {', '.join(processes)}")
        tuning = tuning_queries(queries, processes)
        seeds = tuple(range(fold_seeds))
        model = train(examples(retriever, tuning), retriever.matrices.family, f"fold {f + 1}", log, seeds=seeds)
        test = [q for q in queries if q.type in PROCESS_TYPES and process_of(q) in processes]
        seen = [q for q in tuning if q.type in PROCESS_TYPES]
        _merge(held, ranked(retriever, test, _routed(retriever, test, model)))
        _merge(tuned, ranked(retriever, seen, _routed(retriever, seen, model)))
        if rebuild is not None:
            if log:
                log(f"fold {f + 1}: building without {', '.join(processes)}")
            pruned = rebuild(processes)
            model = train(examples(pruned, tuning), pruned.matrices.family, f"fold {f + 1} removed", log, seeds=seeds)
            _merge(removed, ranked(pruned, test, _routed(pruned, test, model)))
        held_queries += test
        tuned_queries += seen
        report_folds.append(
            {"fold": f + 1, "held_out": processes, "tuning_queries": len(tuning), "test_queries": len(test)}
        )
    report: JSONObject = {
        "folds": report_folds,
        "held_out": evaluate_methods(held, held_queries, (1, 3, 5, 10)),
        "tuning": evaluate_methods(tuned, tuned_queries, (1, 3, 5, 10)),
    }
    if rebuild is not None:
        report["removed"] = evaluate_methods(removed, held_queries, (1, 3, 5, 10))
    return report


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
    parts = [(p, f"held-out processes, {title}") for p, title in PROTOCOLS.items() if p in report]
    parts.append(("tuning", "the tuning processes (seen), full graph"))
    for part, title in parts:
        lines += ["", f"## Recall@3 / Recall@5 on {title}", ""] + _recall_table(report[part])
    for part, _ in parts[:-1]:
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


def _recall_table(ev: JSONObject) -> list[str]:
    lines = ["| method | all | process-chain | workflow |", "|---|---|---|---|"]
    for method in (ROUTED, *BASELINES):
        by = ev["summary"][method]
        cells = [
            f"{by[g]['recall@3']:.3f} / {by[g]['recall@5']:.3f}" if g in by else "" for g in ("all", *PROCESS_TYPES)
        ]
        lines.append(f"| {method} | " + " | ".join(cells) + " |")
    return lines
