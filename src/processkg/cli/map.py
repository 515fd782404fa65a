"""``kg map``: propose activity-to-entity-set edges for review; ``kg eval mapping``: score them.

``kg map propose`` and ``kg map tune`` read a store with its retrieval index (build it without
``--mapping`` to measure proposals fairly); ``kg eval mapping`` compares a proposals file with
a gold mapping. The work is done by :mod:`processkg.proposals.propose`.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import asdict, replace
from pathlib import Path
from typing import TextIO

import click

from processkg.aliases import JSONObject, JSONValue
from processkg.cli.options import model_option, out_option, proposal_llm_options, store_option
from processkg.errors import ProcessKGError
from processkg.evaluate.processes import SCORERS, mapping_table, proposal_folds
from processkg.graph.handle import StoreHandle
from processkg.graph.stats import table
from processkg.openai_chat import ChatSettings
from processkg.proposals.learned import fit_scorer, shipped_scorer
from processkg.proposals.llm_choice import PROMPTS, LLMChoiceSettings
from processkg.proposals.propose import (
    WEIGHT_GRID,
    ProposalWeights,  # imported late: propose loads numpy and the retrieval code
    Signals,
    evaluate_mapping,
    propose,
    read_proposals,
    split_processes,
    tune,
    write_proposals,
)
from processkg.sources.mapping import MappingEntry, read_mapping

SIGNAL_NAMES = ("dense", "dense_name", "lexical", "lexical_short", "header")  # as propose.SIGNALS


def _defaults() -> ProposalWeights:

    return ProposalWeights()


@click.group("map")
def map_group() -> None:
    """Propose activity-to-entity-set edges for a person to review."""


@map_group.command("propose")
@store_option("Store with its retrieval index.")
@out_option("file", "Proposals file (mapping YAML) to write.", required=True)
@click.option("--top-n", type=int, help="Most entity sets per activity (default: the tuned value).")
@click.option("--threshold", type=float, help="Least fused score of a proposal (default: the tuned value).")
@click.option("--ratio", type=float, help="A second or later set needs this fraction of the best score.")
@click.option(
    "--scorer",
    type=click.Choice(SCORERS),
    default="weights",
    show_default=True,
    help="weights: the weighted mean of the signals; learned: the logistic regression fitted on the train half "
    "(assets/ranking/proposals.json), with its own cut.",
)
@click.option(
    "--process",
    "processes",
    multiple=True,
    help="Propose only for this process id (repeatable; default: every process of the store).",
)
@model_option()
@proposal_llm_options()
@click.option(
    "--llm-prompt",
    type=click.Choice(PROMPTS),
    default="full",
    show_default=True,
    help="full: candidates with summaries, a mode per edge; short (small local models): names only, a worked "
    "example, candidate numbers only (at most 2 kept), modes from the verbs.",
)
@click.option(
    "--llm-log",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write every LLM exchange here (JSON Lines: candidates, prompt, answer, tokens, seconds, picks).",
)
def propose_cmd(
    store: StoreHandle,
    out: Path,
    top_n: int,
    threshold: float,
    ratio: float,
    scorer: str,
    processes: tuple[str, ...],
    model: str | None,
    llm_url: str,
    llm_model: str,
    llm_candidates: int,
    llm_timeout: float,
    llm_prompt: str,
    llm_log: Path | None,
) -> None:
    """Propose edges with a score and a reason (dense + BM25 similarity, verb cues; optionally an LLM).

    The API key for the LLM is read from the environment variable OPENAI_API_KEY, if set.
    """

    learned = shipped_scorer() if scorer == "learned" else None
    settings = _settings(top_n, threshold, ratio, learned.cut if learned else _defaults())
    llm = None
    if llm_url or llm_model:
        if not (llm_url and llm_model):
            raise click.UsageError("--llm-url and --llm-model go together")
        if llm_candidates < 1:
            raise click.BadParameter("must be at least 1", param_hint="--llm-candidates")
        llm = ChatSettings(llm_url, llm_model, timeout=llm_timeout, api_key=os.environ.get("OPENAI_API_KEY") or None)
        llm.endpoint()  # a bad URL fails before any work
    elif llm_log:
        raise click.UsageError("--llm-log goes with --llm-url")
    signals = Signals(store, model)
    with ExitStack() as stack:
        log = stack.enter_context(Path(llm_log).open("w", encoding="utf-8")) if llm_log else None
        proposals = propose(
            None,
            settings,
            llm=llm,
            warn=lambda m: click.echo(f"warning: {m}", err=True),
            signals=signals,
            llm_choice=LLMChoiceSettings(
                candidates=llm_candidates, prompt=llm_prompt, record=_line_writer(log) if log else None
            ),
            scores=learned.scores(signals) if learned else None,
            processes=processes or None,
        )
    write_proposals(out, proposals, str(store), settings)
    activities = len({(p.process, p.activity) for p in proposals})
    click.echo(f"proposed {len(proposals)} edges for {activities} activities (to review): {out}")


def _line_writer(stream: TextIO) -> Callable[[JSONObject], None]:
    """Write each object as one JSON line, at once (a long run can be followed as it goes)."""

    def write(item: JSONObject) -> None:
        stream.write(json.dumps(item, ensure_ascii=False, sort_keys=True) + "\n")
        stream.flush()

    return write


def _settings(
    top_n: int | None, threshold: float | None, ratio: float | None, base: ProposalWeights
) -> ProposalWeights:
    overrides: JSONObject = {
        k: v for k, v in (("top_n", top_n), ("threshold", threshold), ("ratio", ratio)) if v is not None
    }
    return replace(base, **overrides).check()


@map_group.command("tune")
@store_option("Store with its index, built WITHOUT the gold mapping.")
@click.option("--gold", required=True, type=click.Path(path_type=Path), help="Gold mapping (YAML).")
@click.option("--weights", is_flag=True, help="Also choose the signal weights (propose.WEIGHT_GRID).")
@click.option(
    "--folds",
    is_flag=True,
    help="Leave processes out instead: per fold of kg eval processes, fit the scorer (--scorer) and choose the "
    "cut on the other processes' gold and score the fold's processes.",
)
@click.option(
    "--context",
    is_flag=True,
    help="With --folds and --scorer weights (implied): then also choose the context weights (CONTEXT_GRID).",
)
@click.option(
    "--scorer",
    type=click.Choice(SCORERS),
    help="With --folds: learned (a logistic regression over the signals and their context, the default) or "
    "weights (the weighted mean of kg map propose). Without --folds, learned fits the scorer on the train half "
    "and --out writes it as kg map propose --scorer learned ships it.",
)
@out_option("file", "Write the choice and its evaluation here (JSON).")
def tune_cmd(
    store: StoreHandle, gold: Path, weights: bool, folds: bool, context: bool, scorer: str | None, out: Path
) -> None:
    """Choose --top-n, --threshold and --ratio (and the weights) on the train half of the gold's processes."""

    if folds:
        if context and scorer == "learned":
            raise click.UsageError(
                "--context goes with --scorer weights: the learned scorer has the context as features"
            )
        _tune_folds(Signals(store), read_mapping(gold), context, scorer or ("weights" if context else "learned"), out)
        return
    if context:
        raise click.UsageError("--context goes with --folds")
    if scorer == "learned":
        if weights:
            raise click.UsageError("--weights goes with the weighted mean, not --scorer learned")
        _tune_learned(Signals(store), read_mapping(gold), out)
        return
    result = tune(Signals(store), read_mapping(gold), weights=WEIGHT_GRID if weights else None)
    chosen = result["settings"]
    click.echo(
        f"chosen on train (F1 {result['train_f1']:.3f}): --top-n {chosen.top_n} "
        f"--threshold {chosen.threshold} --ratio {chosen.ratio}"
    )
    click.echo("weights: " + ", ".join(f"{k} {getattr(chosen, k)}" for k in (*SIGNAL_NAMES, "unwritable")))
    click.echo(render_summary(result["evaluation"]))
    if out:
        payload = {"settings": asdict(chosen), "train_f1": result["train_f1"], "evaluation": result["evaluation"]}
        Path(out).write_text(json.dumps(payload, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        click.echo(f"wrote {out}")


def _tune_learned(signals: Signals, gold: list[MappingEntry], out: Path | None) -> None:
    """Fit the learned scorer on the train half and evaluate its proposals; ``out`` gets the scorer as
    shipped (assets/ranking/proposals.json), without the training gold for ``known``."""
    train = split_processes({e.process for e in gold})[0]
    fitted = fit_scorer(signals, [e for e in gold if e.process in set(train)])
    shipped = replace(fitted, known=None)
    signals.know([])
    scores = shipped.scores(signals)  # as kg map propose --scorer learned: known from the store's edges
    result = evaluate_mapping(propose(None, shipped.cut, signals=signals, scores=scores), gold)
    chosen = shipped.describe()
    click.echo(
        f"chosen on train (out-of-fold F1 {fitted.tuning_f1:.3f}): " + ", ".join(f"{k} {v}" for k, v in chosen.items())
    )
    click.echo(render_summary(result))
    if out:
        Path(out).write_text(json.dumps(shipped.to_json(train), indent=2) + "\n", encoding="utf-8")
        click.echo(f"wrote {out}")


def _tune_folds(signals: Signals, gold: list[MappingEntry], context: bool, scorer: str, out: Path | None) -> None:
    result = proposal_folds(signals, gold, context, scorer)
    click.echo("\n".join(mapping_table(result)))
    if out:
        Path(out).write_text(json.dumps(result, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        click.echo(f"wrote {out}")


@click.command("mapping")
@click.option("--proposals", required=True, type=click.Path(path_type=Path), help="Proposals file from kg map propose.")
@click.option("--gold", required=True, type=click.Path(path_type=Path), help="Gold mapping (YAML).")
@out_option("folder", "Write report.md and results.json here.")
def mapping_cmd(proposals: Path, gold: Path, out: Path) -> None:
    """Edge precision, recall and F1 of proposals against a gold mapping, with and without mode."""

    gold_entries = read_mapping(gold)
    if not gold_entries:
        raise ProcessKGError(f"{gold}: the gold mapping has no entries")
    result = evaluate_mapping(read_proposals(proposals), gold_entries)
    summary = render_summary(result)
    click.echo(summary)
    if out:
        out = Path(out)
        out.mkdir(parents=True, exist_ok=True)
        command = "kg eval mapping " + " ".join(sys.argv[3:]) if len(sys.argv) > 3 else ""
        (out / "results.json").write_text(json.dumps(result, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        (out / "report.md").write_text(render_report(result, command), encoding="utf-8")
        click.echo(f"wrote {out / 'report.md'}\nwrote {out / 'results.json'}")


# ---------------------------------------------------------------- rendering


def _row(label: str, group: str, m: JSONObject) -> list[JSONValue]:
    return [
        label,
        group,
        m["proposed"],
        m["gold"],
        m["tp"],
        f"{m['precision']:.3f}",
        f"{m['recall']:.3f}",
        f"{m['f1']:.3f}",
    ]


HEAD = ["edges", "processes", "proposed", "gold", "correct", "P", "R", "F1"]


def summary_rows(result: JSONObject) -> list[list[JSONValue]]:
    rows = []
    for label, key in (("ignoring mode", "edges"), ("with mode", "edges_with_mode")):
        rows += [_row(label, group, result[key][group]) for group in ("train", "test", "all")]
    rows += [_row(f"mode {mode}", "all", m) for mode, m in result["by_mode"].items()]
    return rows


def render_summary(result: JSONObject) -> str:

    return table(HEAD, summary_rows(result)) + f"\nmode agreement on correct edges: {result['mode_accuracy']:.3f}"


def _md_table(head: list[str], rows: list[list[JSONValue]]) -> list[str]:
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join(" --- " for _ in head) + "|"]
    return lines + ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]


def render_report(result: JSONObject, command: str = "") -> str:
    split = result["split"]
    lines = ["# Mapping proposals against the gold mapping", ""]
    if command:
        lines += [f"Command: `{command}`", ""]
    lines += [f"Split: {split['rule']}. Train: {', '.join(split['train'])}. Test: {', '.join(split['test'])}.", ""]
    lines += _md_table(HEAD, summary_rows(result))
    lines += ["", f"Mode agreement on the correct edges: {result['mode_accuracy']:.3f}.", "", "## Per process", ""]
    rows = [
        [
            p,
            m["split"],
            m["edges"]["proposed"],
            m["edges"]["gold"],
            m["edges"]["tp"],
            f"{m['edges']['precision']:.3f}",
            f"{m['edges']['recall']:.3f}",
            f"{m['edges']['f1']:.3f}",
            f"{m['edges_with_mode']['f1']:.3f}",
        ]
        for p, m in result["by_process"].items()
    ]
    lines += _md_table(["process", "split", "proposed", "gold", "correct", "P", "R", "F1", "F1 with mode"], rows)
    return "\n".join(lines) + "\n"
