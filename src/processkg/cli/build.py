"""``kg build``: read, lift and store; print the summary."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import click
from click._termui_impl import ProgressBar

from processkg.build.pipeline import BuildOptions, build_store
from processkg.cli.options import model_option, out_option, store_location_option
from processkg.graph import stats
from processkg.graph.handle import StoreLocation
from processkg.sources.discover import BPMN_SUFFIXES, ODATA_SUFFIXES, OPENAPI_SUFFIXES, discover


def _progress(files_hint: int) -> tuple[ProgressBar[int] | None, Callable[[str], None] | None]:
    if not sys.stderr.isatty():
        return None, None
    bar = click.progressbar(length=files_hint, label="reading", file=sys.stderr, show_pos=True)
    return bar, (lambda item: bar.update(1))


@click.command("build")
@click.option(
    "--odata",
    "odata",
    multiple=True,
    type=click.Path(path_type=Path),
    help="OData $metadata file or directory (searched recursively). Repeatable.",
)
@click.option(
    "--bpmn",
    "bpmn_paths",
    multiple=True,
    type=click.Path(path_type=Path),
    help="BPMN 2.0 file or directory (searched recursively). Repeatable.",
)
@click.option(
    "--openapi",
    "openapi_paths",
    multiple=True,
    type=click.Path(path_type=Path),
    help="OpenAPI 3 JSON file or directory (services without a process layer). Repeatable.",
)
@click.option("--mapping", type=click.Path(path_type=Path), help="Activity-to-entity-set mapping (YAML).")
@click.option(
    "--codes",
    multiple=True,
    type=click.Path(path_type=Path),
    help="Code-list CSV file or directory (value_list,code,description). Repeatable.",
)
@click.option(
    "--code-bindings",
    type=click.Path(path_type=Path),
    help="YAML binding SERVICE/EntityType/Property (wildcards allowed) to a --codes value list "
    "(default: the bindings.yaml of a --codes folder, if one has it).",
)
@click.option(
    "--required",
    type=click.Path(path_type=Path),
    help="CSV file or directory (service,entity_set,property,source,note) of curated required-on-create fields.",
)
@click.option(
    "--flow",
    type=click.Path(path_type=Path),
    help="CSV file or directory (process,predecessor,follow_on,carriers,required,...) of curated document flow.",
)
@click.option(
    "--events",
    multiple=True,
    type=click.Path(path_type=Path),
    help="Recorded calls (.jsonl), XES (.xes) or OCEL 2.0 (.jsonocel, .xmlocel) event logs, and activity,path "
    "CSV tables, or a directory of them: flow mined from the writes. Repeatable.",
)
@store_location_option(
    "Store directory to (re)write atomically, or the URL of a SPARQL server (docs/deployment.md).", required=False
)
@out_option("file", "Also write the graph as Turtle here.")
@click.option(
    "--on-error",
    type=click.Choice(["fail", "warn", "skip"]),
    default="fail",
    show_default=True,
    help="fail: stop at the first bad file; warn: skip it and say so; skip: skip it quietly.",
)
@click.option(
    "--check", is_flag=True, help="Run shapes/graph.ttl on the new graph; fail (keeping the old store) on violations."
)
@click.option("--no-shapes", is_flag=True, help="Do not write the generated SHACL payload shapes into the store.")
@click.option(
    "--index/--no-index",
    "with_index",
    default=True,
    show_default=True,
    help="Write the retrieval index (STORE/index/) for kg retrieve.",
)
@model_option("Embedding model for the index: a name known offline or a local path.")
@click.option("--chunks", is_flag=True, help="Also index raw metadata chunks for --method chunkrag (slow).")
def build_cmd(
    odata: tuple[Path, ...],
    bpmn_paths: tuple[Path, ...],
    openapi_paths: tuple[Path, ...],
    mapping: Path,
    codes: tuple[Path, ...],
    code_bindings: Path,
    required: Path | None,
    flow: Path | None,
    events: tuple[Path, ...],
    store: StoreLocation | None,
    out: Path,
    on_error: str,
    check: bool,
    no_shapes: bool,
    with_index: bool,
    model: str,
    chunks: bool,
) -> None:
    """Lift OData CSDL (V2, V4), BPMN 2.0 and OpenAPI 3 into one graph; write the store
    (with SHACL payload shapes and the retrieval index) and, with --out, Turtle."""
    if not store and not out:
        raise click.UsageError("give --store DIR and/or --out FILE.ttl")

    total = (
        len(discover(odata, ODATA_SUFFIXES))
        + len(discover(bpmn_paths, BPMN_SUFFIXES))
        + len(discover(openapi_paths, OPENAPI_SUFFIXES))
    )
    bar, progress = _progress(total)
    if check and not store:
        raise click.UsageError("--check needs --store")
    opts = BuildOptions(
        list(odata),
        list(bpmn_paths),
        store,
        out,
        mapping,
        list(codes),
        on_error,
        shapes=not no_shapes,
        check=check,
        index=with_index and bool(store),
        model=model,
        chunks=chunks,
        openapi=list(openapi_paths),
        code_bindings=code_bindings,
        required=required,
        flow=flow,
        events=list(events),
    )
    if bar is not None:
        with bar:
            report = build_store(opts, progress)
    else:
        report = build_store(opts)
    click.echo(stats.build_summary(report, show_skipped=on_error != "skip", store=store, out=out))
