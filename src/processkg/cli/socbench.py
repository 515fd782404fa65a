"""``kg eval socbench``: the SOCBench-D benchmark by its own protocol; the work is done by
:mod:`processkg.evaluate.socbench_protocol`. The lead registers :data:`socbench_cmd` on the ``kg eval`` group.

Input errors are raised as ProcessKGError; the ``kg`` group reports them (exit 2).
"""

from __future__ import annotations

import shlex
import sys
import time
from pathlib import Path

import click

from processkg.aliases import JSONObject
from processkg.build.pipeline import BuildOptions, build_store
from processkg.cli.options import model_option, out_option
from processkg.evaluate import socbench_protocol
from processkg.graph.handle import StoreLocation


def build_openapi_store(folder: Path, store: StoreLocation) -> None:
    """``kg build --openapi FOLDER --store STORE --no-index``: the store SOCBench-D queries (the
    JSON files that are not OpenAPI, queries.json, are skipped with a warning nobody needs here)."""

    build_store(BuildOptions(openapi=[Path(folder)], store=store, index=False))


def _command_line(
    root: Path, out: Path, model: str | None, instances: tuple[str, ...], domains: tuple[str, ...], cache: Path | None
) -> str:
    """The command as a user would type it, for the report (paths as given)."""
    parts = ["kg", "eval", "socbench", str(root), "--out", str(out)]
    if model:
        parts += ["--model", str(model)]
    for name in instances:
        parts += ["--instance", name]
    for name in domains:
        parts += ["--domain", name]
    if cache:
        parts += ["--cache", str(cache)]
    return shlex.join(parts)


@click.command("socbench")
@click.argument("root", type=click.Path(path_type=Path))
@out_option("folder", "Folder for report.md and results.json (created if missing).", required=True)
@model_option("Sentence-transformers model (local path); default all-MiniLM-L6-v2, bundled.")
@click.option("--instance", "instances", multiple=True, help="Only this instance (socbenchd_N). Repeatable.")
@click.option("--domain", "domains", multiple=True, help="Only this domain folder (e.g. 01-energy). Repeatable.")
@click.option("--cache", type=click.Path(path_type=Path), help="Embedding cache folder, kept between runs.")
@click.option(
    "--stores",
    "stores_dir",
    type=click.Path(path_type=Path),
    help="Keep each domain's store here (STORES/socbenchd_N/DOMAIN, for kg retrieve); default: temporary.",
)
def socbench_cmd(
    root: Path,
    out: Path,
    model: str | None,
    instances: tuple[str, ...],
    domains: tuple[str, ...],
    cache: Path,
    stores_dir: Path,
) -> None:
    """Run SOCBench-D through kg retrieve's engine: per domain, build a store of its OpenAPI
    documents with its index and rank its operations for each query with every method that needs
    no metadata chunks; Recall@5/10/20 beside the published figures, paired tests, expansion evidence."""

    start = time.perf_counter()
    progress = (lambda name: click.echo(f"  {name}", err=True)) if sys.stderr.isatty() else None
    result = socbench_protocol.run(root, model, instances, domains, cache, progress, build_openapi_store, stores_dir)
    data = socbench_protocol.as_json(result, socbench_protocol.tests(result.results))
    command = _command_line(root, out, model, instances, domains, cache)
    written = socbench_protocol.write_outputs(data, out, command, socbench_protocol.query_records(result))
    click.echo(_summary(data, time.perf_counter() - start, written))


def _summary(data: JSONObject, seconds: float, written: list[Path]) -> str:
    c = data["counts"]
    lines = [
        f"SOCBench-D: {c['queries']} queries over {c['domains']} domains ({c['endpoints']} endpoints) "
        f"in {seconds:.1f} s",
        "method         R@5    R@10   R@20",
    ]
    for method, rec in data["recall"].items():
        lines.append(f"{method:<14} " + "  ".join(f"{rec[k]:.3f}" for k in ("5", "10", "20")))
    lines.append(data["verdict"])
    lines.extend(f"wrote {p}" for p in written)
    return "\n".join(lines)
