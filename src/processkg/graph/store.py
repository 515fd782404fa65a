"""The Oxigraph store: atomic writes, Turtle export, and SPARQL with bound values.

A store directory holds ``oxigraph/`` (the database) and ``build.json`` (what was
built from what). It is always written to a temporary sibling and renamed into
place, so a failed build leaves the previous store untouched.
"""

from __future__ import annotations

import gc
import json
import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from pyoxigraph import (
    DefaultGraph, Literal, NamedNode, Quad, QuerySolutions, RdfFormat, Store, Variable, parse, serialize,
)

from processkg.assets import internal_queries_dir, ontology_path, queries_dir
from processkg.errors import ProcessKGError, QueryError
from processkg.graph.sparql import check, syntax_message
from processkg.vocab import PREFIXES

DB = "oxigraph"
META = "build.json"
ONTOLOGY_GRAPH = NamedNode("https://w3id.org/processkg/ontology")


def canonical_ntriples(triples) -> bytes:
    """Distinct triples as sorted N-Triples lines: a fixed order, so builds are byte-identical.

    Serializing and sorting lines runs in native code, far faster than sorting term tuples.
    """
    lines = (serialize(triples, format=RdfFormat.N_TRIPLES) or b"").splitlines()
    return b"\n".join(sorted(set(lines))) + b"\n" if lines else b""


def to_turtle(ntriples: bytes, prefixes: dict[str, str] = PREFIXES) -> bytes:
    """Canonical N-Triples as Turtle with ``prefixes`` (pyoxigraph keeps the sorted order)."""
    triples = parse(ntriples, format=RdfFormat.N_TRIPLES)
    return serialize(triples, format=RdfFormat.TURTLE, prefixes=prefixes) or b""


def write_store(path: Path, ntriples: bytes, meta: dict) -> None:
    """Write the data (default graph) and the ontology (named graph) into a new store at ``path``."""
    store = Store(str(path / DB))
    store.bulk_load(ntriples, format=RdfFormat.N_TRIPLES, to_graph=DefaultGraph())
    store.bulk_load(path=str(ontology_path()), format=RdfFormat.TURTLE, to_graph=ONTOLOGY_GRAPH)
    store.flush()
    del store
    gc.collect()
    (path / META).write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n", encoding="utf-8")


def add_graph(path: Path, graph: NamedNode, make_triples) -> None:
    """Add ``make_triples(store)`` to the store at ``path`` as the named graph ``graph``."""
    store = Store(str(Path(path) / DB))
    triples = make_triples(store)
    store.bulk_extend(Quad(t.subject, t.predicate, t.object, graph) for t in triples)
    store.flush()
    del store
    gc.collect()


@contextmanager
def staged_dir(target: Path):
    """Yield a temporary sibling of ``target``; on success, swap it into place atomically."""
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.parent / f".{target.name}.tmp-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    try:
        yield tmp
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    _swap(tmp, target)


def _swap(tmp: Path, target: Path) -> None:
    old = target.parent / f".{target.name}.old-{os.getpid()}"
    if target.exists():
        os.replace(target, old)
    os.replace(tmp, target)
    shutil.rmtree(old, ignore_errors=True)


def write_atomic(path: Path, data: bytes) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.parent / f".{path.name}.tmp-{os.getpid()}"
    tmp.write_bytes(data)
    os.replace(tmp, path)


# ---------------------------------------------------------------- reading

class StoreNotFoundError(ProcessKGError):
    pass


def open_store(path: Path) -> Store:
    db = Path(path) / DB
    if not db.is_dir():
        raise StoreNotFoundError(f"{path}: no processkg store here (run `kg build --store {path}` first)")
    return Store.read_only(str(db))


def read_meta(path: Path) -> dict:
    meta = Path(path) / META
    return json.loads(meta.read_text(encoding="utf-8")) if meta.exists() else {}


def load_query(name: str) -> str:
    """A query of the library by name (``queries/NAME.rq``)."""
    for folder in (queries_dir(), internal_queries_dir()):
        path = folder / f"{name}.rq"
        if path.exists():
            return path.read_text(encoding="utf-8")
    raise ProcessKGError(f"no query named {name!r} in {queries_dir()}")


def term(value) -> object:
    """A Python value as an RDF term for binding: IRIs stay IRIs, the rest become literals."""
    if isinstance(value, (NamedNode, Literal)):
        return value
    text = str(value)
    if text.startswith(("http://", "https://", "urn:")):
        try:
            return NamedNode(text)
        except ValueError as exc:
            raise ProcessKGError(f"parameter value {text!r} is not a valid IRI: {exc}") from None
    return Literal(text)


def _variable(name: str) -> Variable:
    try:
        return Variable(name)
    except ValueError:
        raise ProcessKGError(f"{name!r} is not a SPARQL variable name") from None


def solutions(store: Store, query: str, bindings: dict | None = None) -> tuple[list, Iterator[list]]:
    """The column names of a SELECT and its rows, lazily (so callers can stop early).

    Values are bound by substitution (SEP-0007), never spliced into the text; it binds only
    variables the query projects, so library queries list their parameters in the SELECT
    clause. Every query is checked first (``processkg.graph.sparql.check``): one that could
    reach a network (SERVICE, FROM) or change data (an update) never runs.
    """
    check(query)
    subs = {_variable(k): term(v) for k, v in (bindings or {}).items()}
    try:
        result = store.query(query, prefixes=PREFIXES, substitutions=subs or None)
    except SyntaxError as exc:
        raise QueryError(syntax_message(query, exc)) from None
    except RuntimeError as exc:
        raise QueryError(f"cannot bind parameters: {exc} (library queries SELECT their parameters)") from None
    except OSError as exc:
        raise QueryError(f"query failed: {exc}") from None
    if not isinstance(result, QuerySolutions):
        raise QueryError("only SELECT queries return tables; this query is ASK or CONSTRUCT")
    names = [v.value for v in result.variables]
    return names, _rows(result, names)


def _rows(result: QuerySolutions, names: list) -> Iterator[list]:
    try:
        for row in result:
            yield [row[v] for v in names]
    except (RuntimeError, OSError) as exc:
        raise QueryError(f"query failed: {exc}") from None


def select(store: Store, query: str, bindings: dict | None = None) -> tuple[list, list]:
    """Run a SELECT with values bound by substitution: its column names and all its rows."""
    names, rows = solutions(store, query, bindings)
    return names, list(rows)


def plain(value) -> object:
    """An RDF term as a plain Python value for tables, CSV and JSON."""
    if value is None:
        return None
    if isinstance(value, Literal):
        dt = value.datatype.value
        if dt.endswith("#integer"):
            return int(value.value)
        if dt.endswith("#boolean"):
            return value.value == "true"
        return value.value
    return value.value


def records(store: Store, query: str, **bindings: object) -> list[dict]:
    """Rows of the library query named ``query`` as dicts of plain values, ``bindings`` bound."""
    names, rows = select(store, load_query(query), bindings)
    return [dict(zip(names, (plain(v) for v in row), strict=True)) for row in rows]
