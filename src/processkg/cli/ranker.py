"""``kg eval train-ranker``: (re)train the routed ``hybrid``'s models from a benchmark's train split;
``kg eval processes``: the leave-processes-out evaluation of that training."""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from pathlib import Path

import click

from processkg.aliases import JSONObject
from processkg.build.pipeline import BuildOptions, build_store
from processkg.cli.options import out_option, store_option
from processkg.errors import ProcessKGError
from processkg.evaluate import processes
from processkg.evaluate.metrics import read_queries
from processkg.evaluate.train_ranker import examples, fingerprint, train
from processkg.graph.handle import StoreHandle, StoreLocation
from processkg.proposals.propose import Signals
from processkg.retrieve.index import build_index
from processkg.retrieve.retriever import Retriever


@click.command("train-ranker")
@store_option("Store with its retrieval index.")
@click.option(
    "--queries",
    "queries_file",
    required=True,
    type=click.Path(path_type=Path),
    help="Benchmark JSONL with types single, navigation, process-chain, workflow and a train split.",
)
@click.option("--split", default="train", show_default=True, help="The split to learn from (never the test split).")
@out_option(
    "file", "Where to write the model (the shipped one is src/processkg/assets/ranking/routed.json).", required=True
)
def train_ranker_cmd(store: StoreHandle, queries_file: Path, split: str, out: Path) -> None:
    """Learn the kind classifier and the per-kind ranking models, with cross-validation on the split only."""
    if split == "test":
        raise ProcessKGError("--split test: the ranking is learned on train and evaluated once on test")
    queries = [q for q in read_queries(queries_file) if q.split == split]
    if not queries:
        raise ProcessKGError(f"{queries_file}: no queries in split {split!r}")
    retriever = Retriever(store)
    items = examples(retriever, queries)
    source = f"{queries_file.as_posix()} (sha256 {fingerprint(queries_file)}), split {split}, {retriever.index.model}"
    model = train(items, retriever.matrices.family, source, log=click.echo)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(model.as_json(), indent=1) + "\n", encoding="utf-8")
    click.echo(f"wrote {out}")


@click.command("processes")
@store_option("Store with its retrieval index.")
@click.option(
    "--queries",
    "queries_file",
    required=True,
    type=click.Path(path_type=Path),
    help="Benchmark JSONL whose process-chain and workflow queries name their process.",
)
@out_option("folder", "Write report.md and results.json here.")
@click.option(
    "--fold-seeds",
    default=3,
    show_default=True,
    type=click.IntRange(min=1),
    help="Fold seeds of each cross-validation inside a fold's training (the shipped model used 3).",
)
@click.option(
    "--odata",
    multiple=True,
    type=click.Path(path_type=Path),
    help="The store's OData inputs: with --bpmn, each fold is also built again without its held-out processes.",
)
@click.option(
    "--bpmn",
    multiple=True,
    type=click.Path(path_type=Path),
    help="The store's BPMN inputs (one process per file for the held-out ones). Repeatable.",
)
@click.option("--mapping", type=click.Path(path_type=Path), help="The store's mapping; held-out entries are dropped.")
@click.option("--codes", multiple=True, type=click.Path(path_type=Path), help="The store's code lists. Repeatable.")
@click.option("--code-bindings", type=click.Path(path_type=Path), help="The store's code bindings.")
@click.option(
    "--events",
    multiple=True,
    type=click.Path(path_type=Path),
    help="Recordings and event logs (kg build --events) added to every fold's build: mined flow. Repeatable.",
)
@click.option(
    "--work",
    type=click.Path(path_type=Path),
    help="Folder for the folds' stores (with --bpmn; default: OUT/folds).",
)
@click.option(
    "--protocol",
    "protocols",
    multiple=True,
    type=click.Choice(list(processes.PROTOCOLS)),
    help="Run this protocol (repeatable). held_out: queries withheld, full graph; removed: each fold built "
    "without its held-out processes; automatic: each fold keeps their BPMN, with mapping edges proposed by "
    "kg map propose tuned on the other processes' gold. Default: held_out, and removed with --bpmn.",
)
@click.option(
    "--proposal-context",
    is_flag=True,
    help="With --protocol automatic: also choose the proposals' context weights (kg map tune --folds --context); "
    "implies --proposal-scorer weights.",
)
@click.option(
    "--proposal-scorer",
    type=click.Choice(processes.SCORERS),
    help="With --protocol automatic: how the proposals score candidates (kg map tune --folds --scorer): learned "
    "(the default) or weights.",
)
@click.option(
    "--tuning-edges",
    type=click.Choice(processes.TUNING_EDGES),
    default="gold",
    show_default=True,
    help="With --protocol automatic: the tuning processes' mapping edges: gold (hand-made); proposed (out of "
    "fold, each by a scorer fitted without its own gold) in the store the fold's ranker is trained on and ranks "
    "over; train: proposed in a second store it is trained on, gold in the one it ranks over; both: trained on "
    "the tuning queries over both of those stores.",
)
@click.option(
    "--scored-candidates",
    type=click.IntRange(0, 20),
    default=0,
    show_default=True,
    help="With --protocol automatic: also give the routed hybrid each held-out activity's best N candidate sets "
    "under the fold's scorer, with their scores, as weighted uses (in memory, not in the store).",
)
@click.option(
    "--scored-weight",
    type=click.Choice(processes.SCORED_WEIGHTS),
    default="probability",
    show_default=True,
    help="With --scored-candidates: a candidate's weight: its score (probability), its score over its "
    "activity's best (relative), or 1 (one).",
)
@click.option(
    "--scored-scope",
    type=click.Choice(processes.SCORED_SCOPES),
    default="all",
    show_default=True,
    help="With --scored-candidates: which candidates: all; empty: only those of the activities the cut left "
    "without an edge; parts: only the headers and items of the sets the cut proposed for the same activity; "
    "flow: only the sets that follow or precede those in the inferred document flow.",
)
@click.option(
    "--scored-only",
    is_flag=True,
    help="With --scored-candidates: the held-out processes get no proposed mapping edges, only the scored candidates.",
)
@click.option(
    "--fold",
    "only",
    multiple=True,
    type=click.IntRange(1, processes.FOLDS),
    help="Run only this fold (repeatable; default: every fold).",
)
@click.option(
    "--cache",
    "cache_dir",
    type=click.Path(path_type=Path),
    help="Embedding cache shared by the folds' indexes (default: WORK/embedding-cache).",
)
def processes_cmd(
    store: StoreHandle,
    queries_file: Path,
    out: Path | None,
    fold_seeds: int,
    odata: tuple[Path, ...],
    bpmn: tuple[Path, ...],
    mapping: Path | None,
    codes: tuple[Path, ...],
    code_bindings: Path | None,
    events: tuple[Path, ...],
    work: Path | None,
    protocols: tuple[str, ...],
    proposal_context: bool,
    proposal_scorer: str | None,
    tuning_edges: str,
    scored_candidates: int,
    scored_weight: str,
    scored_scope: str,
    scored_only: bool,
    only: tuple[int, ...],
    cache_dir: Path | None,
) -> None:
    """Leave processes out: train the routed hybrid without some processes, test it on their queries.

    With --odata and --bpmn (and --mapping), each fold is also built again without its held-out
    processes (BPMN, mapping edges, texts, index), and both protocols are reported side by side.
    --protocol automatic keeps their BPMN and gives them the mapping edges kg map propose draws,
    tuned on the other processes' gold; --protocol chooses which protocols run."""
    queries = read_queries(queries_file)
    chosen = set(protocols) or {"held_out"} | ({"removed"} if bpmn else set())
    rebuild, auto = None, None
    if chosen & {"removed", "automatic"} and not bpmn:
        raise ProcessKGError("--protocol removed and automatic need --bpmn: the folds' stores are built from it")
    if "automatic" in chosen and not mapping:
        raise ProcessKGError("--protocol automatic needs --mapping: the kept processes' gold tunes the proposals")
    if proposal_context and proposal_scorer == "learned":
        raise ProcessKGError("--proposal-context goes with --proposal-scorer weights")
    scorer = proposal_scorer or ("weights" if proposal_context else "learned")
    if events and not bpmn:
        raise ProcessKGError("--events needs --bpmn: the mined flow goes into the folds' builds")
    if bpmn:
        if not odata:
            raise ProcessKGError("--bpmn needs the --odata the store was built from")
        folder = work or (out / "folds" if out else None)
        if folder is None:
            raise ProcessKGError("--bpmn needs --work or --out: the folds' stores are built there")
        inputs = BuildOptions(
            odata=list(odata),
            bpmn=list(bpmn),
            mapping=mapping,
            codes=list(codes),
            code_bindings=code_bindings,
            events=list(events),
        )
        if "removed" in chosen:
            rebuild = _rebuild(inputs, folder, cache_dir or folder / "embedding-cache")
        if "automatic" in chosen and mapping:
            auto = _automatic(
                inputs,
                mapping,
                folder,
                cache_dir or folder / "embedding-cache",
                proposal_context,
                scorer,
                tuning_edges,
                (
                    processes.Scored(scored_candidates, scored_weight, not scored_only, scored_scope)
                    if scored_candidates
                    else None
                ),
            )
    report = processes.run(
        Retriever(store),
        queries,
        log=click.echo,
        fold_seeds=fold_seeds,
        rebuild=rebuild,
        automatic=auto,
        only=set(only) or None,
        withheld="held_out" in chosen,
    )
    command = "kg eval processes " + " ".join(sys.argv[3:]) if len(sys.argv) > 3 else ""
    text = processes.render(report, command)
    click.echo(text)
    if out:
        out.mkdir(parents=True, exist_ok=True)
        (out / "report.md").write_text(text, encoding="utf-8")
        (out / "results.json").write_text(json.dumps(report, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        click.echo(f"wrote {out / 'report.md'}\nwrote {out / 'results.json'}")


def _rebuild(inputs: BuildOptions, work: Path, cache: Path) -> processes.Rebuild:
    """Each fold's store: the build of ``inputs`` without the fold's held-out processes, with its own
    index, under WORK/without-FOLD."""

    def make(held_out: list[str]) -> Retriever:
        folder = work / f"without-{processes.fold_of(held_out[0]) + 1}"
        kept, kept_mapping = processes.without_processes(inputs.bpmn, inputs.mapping, held_out, folder)
        store = StoreLocation(path=folder / "store")
        build_store(replace(inputs, bpmn=list(kept), mapping=kept_mapping, store=store))
        build_index(store, cache_dir=cache, progress=None)
        return Retriever(StoreHandle.open(store))

    return make


def _automatic(
    inputs: BuildOptions,
    mapping: Path,
    work: Path,
    cache: Path,
    context: bool,
    scorer: str,
    tuning: str = "gold",
    scored: processes.Scored | None = None,
) -> processes.Automatic:
    """Each fold's automatic layer, under WORK/automatic-FOLD: a store of every BPMN file with the
    mapping of the kept processes only (``base``), proposals for the held-out ones drawn from it,
    and the store of every BPMN file with the kept gold (``tuning`` proposed: their out-of-fold
    proposals) and those proposals (``store``); with ``tuning`` train, also the store the fold's
    ranker is trained on, with the kept processes' out-of-fold proposals (``training``)."""

    def make(held_out: list[str]) -> tuple[Retriever, JSONObject, Retriever | None]:
        folder = work / f"automatic-{processes.fold_of(held_out[0]) + 1}"
        base = StoreLocation(path=folder / "base")
        kept = processes.kept_mapping(mapping, held_out, folder / "kept.yaml")
        build_store(replace(inputs, mapping=kept, store=base))
        build_index(base, cache_dir=cache, progress=None)
        quality = processes.automatic_mapping(
            Signals(StoreHandle.open(base)), mapping, held_out, folder, context, scorer, tuning, scored
        )
        store = StoreLocation(path=folder / "store")
        build_store(replace(inputs, mapping=folder / "mapping.yaml", store=store))
        build_index(store, cache_dir=cache, progress=None)
        retriever = Retriever(StoreHandle.open(store))
        if scored:
            processes.add_scored_uses(retriever, folder / "scored.json", scored.weight)
        training = None
        if tuning in ("train", "both"):
            trained_on = StoreLocation(path=folder / "training")
            build_store(replace(inputs, mapping=folder / "training.yaml", store=trained_on))
            build_index(trained_on, cache_dir=cache, progress=None)
            training = Retriever(StoreHandle.open(trained_on))
        return retriever, quality, training

    return make
