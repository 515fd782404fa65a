"""``kg retrieve`` and ``kg index``: click commands; the work is done by the library.

The lead registers them with ``main.add_command(retrieve_cmd)`` / ``main.add_command(index_cmd)``.
Input errors are raised as ProcessKGError; the ``kg`` group reports them (exit 2).
"""

from __future__ import annotations

import json
from pathlib import Path

import click

from processkg.aliases import JSONObject, JSONValue
from processkg.cli.options import model_option, optional_store_option, store_location_option
from processkg.errors import JsonLinesError, QueryFileError
from processkg.graph.handle import StoreHandle, StoreLocation
from processkg.graph.stats import table
from processkg.jsonl import read_strict
from processkg.retrieve.context import render_context
from processkg.retrieve.index import build_index, terminal_progress
from processkg.retrieve.request import RetrievalRequest
from processkg.retrieve.retriever import DEFAULT_HOPS, METHODS, Result, RetrievalSettings, Retriever, check_query
from processkg.serve.retrieval import ask

COLUMNS = ("rank", "score", "service", "entity_set", "source", "via")


def read_queries(path: Path) -> list[tuple[object, str]]:
    """``(id, query)`` per non-blank JSONL line; a bad line raises naming file and line."""
    try:
        records = list(read_strict(path, what="queries"))
    except JsonLinesError as exc:
        raise QueryFileError(str(exc)) from None
    return [_query_line(path, n, item) for n, item in records]


def _query_line(path: Path, n: int, item: JSONValue) -> tuple[object, str]:
    if not isinstance(item, dict):
        raise QueryFileError(f'{path}:{n}: expected an object like {{"id": ..., "query": ...}}')
    query = item.get("query")
    if not isinstance(query, str) or not query.strip():
        raise QueryFileError(f'{path}:{n}: "query" must be a non-empty string')
    return item.get("id", n), query


def render_table(results: list[Result]) -> str:

    rows = [[n, f"{r.score:.4f}", r.service, r.entity_set, r.source, r.path_text()] for n, r in enumerate(results, 1)]
    return render_rows(rows)


def render_rows(rows: list[list[object]]) -> str:
    return table(list(COLUMNS), rows) if rows else "(no results)"


def _line(qid: JSONValue, query: str, results: list[Result], context: str | None) -> JSONObject:
    line = {"id": qid, "query": query, "results": [r.as_json() for r in results]}
    if context is not None:
        line["context"] = context
    return line


@click.command("retrieve")
@optional_store_option("Store directory (with index/), or its SPARQL server's URL.")
@click.option(
    "--server",
    metavar="URL",
    help="Ask the resident retriever of a running kg serve (GET URL/$processkg/retrieve) instead of "
    "loading the index and model here; the server's store is used.",
)
@click.argument("query", required=False)
@click.option("--queries", type=click.Path(path_type=Path), help='JSONL file of {"id", "query"} lines.')
@click.option("-k", "k", default=5, show_default=True, type=click.IntRange(min=1), help="Entity sets per query.")
@click.option(
    "--method",
    type=click.Choice(list(METHODS)),
    default="hybrid",
    show_default=True,
    help="Ranking method: " + "; ".join(f"{m.name}: {m.description}" for m in METHODS.values()) + ".",
)
@click.option("--hops", default=DEFAULT_HOPS, show_default=True, type=int, help="Bound h of bpmn:next{1,h}.")
@click.option("--no-mapping-edges", is_flag=True, help="Ablation: ignore uses:entitySet edges.")
@click.option("--no-sequence-edges", is_flag=True, help="Ablation: ignore bpmn:next edges.")
@click.option("--verify-seeds", is_flag=True, help="Expand a seed only if it is supported by the query.")
@model_option("Embedding model name or path (default: the one the index was built with).")
@click.option("--json", "as_json", is_flag=True, help="JSON output (one line per query).")
@click.option("--context", "with_context", is_flag=True, help="Also print the typed context.")
def retrieve_cmd(
    store: StoreHandle | None,
    server: str | None,
    query: str,
    queries: Path,
    k: int,
    method: str,
    hops: int,
    no_mapping_edges: bool,
    no_sequence_edges: bool,
    verify_seeds: bool,
    model: str,
    as_json: bool,
    with_context: bool,
) -> None:
    """Retrieve the entity sets a business question needs (one QUERY, or --queries FILE.jsonl)."""

    if (query is None) == (queries is None):
        raise click.UsageError("give either a QUERY or --queries FILE.jsonl")
    if query is not None:
        check_query(query)  # before the store and the model are loaded
    if store is not None and server is not None:
        raise click.UsageError("give either --store DIR or --server URL, not both")
    items = read_queries(queries) if queries else [(None, query)]
    settings = RetrievalSettings(method, hops, not no_mapping_edges, not no_sequence_edges, verify_seeds).check()
    if server is not None:
        requests = [(qid, RetrievalRequest(text, k, settings, with_context).check()) for qid, text in items]
        for qid, request in requests:
            _emit_remote(ask(server, request), qid, as_json, many=len(items) > 1)
        return
    if store is None:
        raise click.UsageError("give --store DIR (or --server URL of a running kg serve)")
    retriever = Retriever(store, model=model)
    answers = retriever.retrieve_many([q for _, q in items], k, settings)
    for (qid, text), results in zip(items, answers):
        _emit(retriever, qid, text, results, as_json, with_context, many=len(items) > 1)


def _emit(
    retriever: Retriever,
    qid: JSONValue,
    text: str,
    results: list[Result],
    as_json: bool,
    with_context: bool,
    many: bool,
) -> None:

    context = render_context(retriever.store, results) if with_context else None
    if as_json:
        click.echo(json.dumps(_line(qid, text, results, context), ensure_ascii=False))
        return
    if many:
        click.echo(f"# {qid}: {text}")
    click.echo(render_table(results))
    if context:
        click.echo("\n" + context.rstrip("\n"))


def _emit_remote(line: JSONObject, qid: JSONValue, as_json: bool, many: bool) -> None:
    """A resident retriever's answer, printed as ``kg retrieve`` prints its own."""
    line = {**line, "id": qid}
    if as_json:
        click.echo(json.dumps(line, ensure_ascii=False))
        return
    if many:
        click.echo(f"# {qid}: {line['query']}")
    results = line["results"] if isinstance(line["results"], list) else []
    click.echo(render_rows([_row(n, r) for n, r in enumerate(results, 1) if isinstance(r, dict)]))
    if line.get("context"):
        click.echo("\n" + str(line["context"]).rstrip("\n"))


def _row(n: int, result: JSONObject) -> list[object]:
    via = result.get("via")
    sep = " < " if result.get("source") == "preceding" else " > "
    path = sep.join(str(v) for v in via) if isinstance(via, list) else ""
    score = result.get("score")
    score_text = f"{score:.4f}" if isinstance(score, (int, float)) else ""
    return [n, score_text, result.get("service"), result.get("entity_set"), result.get("source"), path]


@click.command("index")
@store_location_option("Store directory, or its SPARQL server's URL.")
@model_option("Embedding model name or local path (default: all-MiniLM-L6-v2, bundled).")
@click.option(
    "--odata",
    multiple=True,
    type=click.Path(path_type=Path),
    help="The OData metadata the store was built from; chunked for --method chunkrag. Repeatable.",
)
@click.option(
    "--cache",
    "cache_dir",
    type=click.Path(path_type=Path),
    help="Embedding cache folder shared across builds (default: inside STORE/index/).",
)
def index_cmd(store: StoreLocation, model: str, odata: tuple[Path, ...], cache_dir: Path) -> None:
    """Build the retrieval index next to the store (STORE/index/); unchanged texts are not re-encoded."""

    report = build_index(
        store, model=model, odata=list(odata), cache_dir=cache_dir, progress=terminal_progress(lead="")
    )
    click.echo(report.summary())
