"""``kg eval train-ranker``: (re)train the routed ``hybrid``'s models from a benchmark's train split;
``kg eval processes``: the leave-processes-out evaluation of that training."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from processkg.errors import ProcessKGError
from processkg.evaluate import processes
from processkg.evaluate.metrics import read_queries
from processkg.evaluate.train_ranker import examples, fingerprint, train
from processkg.retrieve.retriever import Retriever


@click.command("train-ranker")
@click.option("--store", required=True, type=click.Path(path_type=Path), help="Store with its retrieval index.")
@click.option(
    "--queries",
    "queries_file",
    required=True,
    type=click.Path(path_type=Path),
    help="Benchmark JSONL with types single, navigation, process-chain, workflow and a train split.",
)
@click.option("--split", default="train", show_default=True, help="The split to learn from (never the test split).")
@click.option(
    "--out",
    required=True,
    type=click.Path(path_type=Path),
    help="Where to write the model (the shipped one is src/processkg/assets/ranking/routed.json).",
)
def train_ranker_cmd(store: Path, queries_file: Path, split: str, out: Path) -> None:
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
@click.option("--store", required=True, type=click.Path(path_type=Path), help="Store with its retrieval index.")
@click.option(
    "--queries",
    "queries_file",
    required=True,
    type=click.Path(path_type=Path),
    help="Benchmark JSONL whose process-chain and workflow queries name their process.",
)
@click.option("--out", type=click.Path(path_type=Path), help="Write report.md and results.json here.")
@click.option(
    "--fold-seeds",
    default=3,
    show_default=True,
    type=click.IntRange(min=1),
    help="Fold seeds of each cross-validation inside a fold's training (the shipped model used 3).",
)
def processes_cmd(store: Path, queries_file: Path, out: Path | None, fold_seeds: int) -> None:
    """Leave processes out: train the routed hybrid without some processes, test it on their queries."""
    queries = read_queries(queries_file)
    report = processes.run(Retriever(store), queries, log=click.echo, fold_seeds=fold_seeds)
    command = "kg eval processes " + " ".join(sys.argv[3:]) if len(sys.argv) > 3 else ""
    text = processes.render(report, command)
    click.echo(text)
    if out:
        out.mkdir(parents=True, exist_ok=True)
        (out / "report.md").write_text(text, encoding="utf-8")
        (out / "results.json").write_text(json.dumps(report, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        click.echo(f"wrote {out / 'report.md'}\nwrote {out / 'results.json'}")
