"""What a SPARQL query may do before it runs, and running one within bounds.

pyoxigraph executes ``SERVICE`` clauses over HTTP and has no switch to turn that off, nor a
query timeout. So every query is decided on *parsed* text before it reaches the store:

* rdflib's SPARQL parser (with processkg's prefixes declared) finds ``SERVICE`` patterns,
  ``FROM`` / ``FROM NAMED`` dataset clauses and updates wherever they sit, whatever the comments,
  newlines, prefixed names or variables around them;
* a token scanner (comments, strings, IRIs, prefixed names and variables skipped, as SPARQL
  lexes them) backs it up: a query rdflib cannot parse still runs only if no ``SERVICE``,
  ``FROM`` or update keyword appears in it as a keyword.

:mod:`processkg.graph.bounded` runs a checked query in a child process that is killed at its
timeout, with a row limit and an address-space cap.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from functools import lru_cache
from typing import Any, TypeAlias

from processkg.errors import QueryRefusedError
from processkg.vocab import PREFIXES

ParseTree: TypeAlias = Any
"""A node of rdflib's SPARQL parse tree: a CompValue, a ParseResults list, a term or a string."""

FEDERATED = "federated SERVICE queries are not supported: processkg never reaches a network"
DATASET = (
    "FROM and FROM NAMED are not supported: a query reads the store it is run on, "
    "never a graph named by IRI (nothing is fetched from a network)"
)
UPDATE = "SPARQL Update is not allowed: queries only read the store (INSERT, DELETE, LOAD, ... never run)"

#: Keywords that occur in SPARQL only as what they say (a variable, string or prefixed name is another token).
_NETWORK_WORDS = {"SERVICE": FEDERATED, "FROM": DATASET}
_UPDATE_WORDS = {"INSERT", "DELETE", "LOAD", "CLEAR", "DROP", "CREATE", "ADD", "MOVE", "COPY", "WITH", "USING"}

_TOKEN = re.compile(
    r"""
    (?P<space>\s+)
  | (?P<comment>\#[^\r\n]*)
  | (?P<string>'''(?:'{0,2}(?:[^'\\]|\\.))*'''|\"\"\"(?:"{0,2}(?:[^"\\]|\\.))*\"\"\"
              |'(?:[^'\\\r\n]|\\.)*'|"(?:[^"\\\r\n]|\\.)*")
  | (?P<iri><[^<>"{}|^`\\\x00-\x20]*>)
  | (?P<var>[?$][\w\u00B7\u0300-\u036F\u203F-\u2040]+)
  | (?P<lang>@[A-Za-z]+(?:-[A-Za-z0-9]+)*)
  | (?P<pname>(?:[^\W\d][\w.-]*)?:(?:[\w\-.:%]|\\.)*)
  | (?P<word>[^\W\d]\w*)
  | (?P<other>.)
""",
    re.VERBOSE | re.DOTALL,
)


def keywords(query: str) -> set[str]:
    """The bare words of ``query`` in upper case: keywords and function names, nothing quoted."""
    return {m.group().upper() for m in _TOKEN.finditer(query) if m.lastgroup == "word"}


def group_start(query: str) -> int:
    """The offset of the ``{`` that opens the outer group of a SELECT or ASK (comments, strings and IRIs skipped)."""
    for m in _TOKEN.finditer(query):
        if m.lastgroup == "word" and m.group().upper() in ("CONSTRUCT", "DESCRIBE"):
            break
        if m.lastgroup == "other" and m.group() == "{":
            return m.start()
    raise QueryRefusedError("values are bound only in SELECT and ASK queries")


_PROLOGUE = "".join(f"PREFIX {prefix}: <{ns}>\n" for prefix, ns in PREFIXES.items())
_PARSE_LOCK = threading.Lock()


def _parsed(query: str) -> tuple[str | None, ParseTree]:
    """``("query" | "update", parse tree)``, or ``(None, None)`` when rdflib cannot parse it."""
    from rdflib.plugins.sparql import parser

    with _PARSE_LOCK:
        for kind, parse in (("query", parser.parseQuery), ("update", parser.parseUpdate)):
            try:
                return kind, parse(_PROLOGUE + query)
            except Exception:  # any parser failure means "not this kind"
                continue
    return None, None


def _nodes(tree: ParseTree) -> Iterator[ParseTree]:
    """Every node of an rdflib parse tree (CompValues, lists, terms), depth first."""
    todo = [tree]
    while todo:
        node = todo.pop()
        yield node
        if isinstance(node, dict):
            todo.extend(node.values())
        elif isinstance(node, (list, tuple)) or type(node).__name__ == "ParseResults":
            todo.extend(node)


def _names(tree: ParseTree) -> set[str]:
    return {name for n in _nodes(tree) if isinstance(name := getattr(n, "name", None), str)}


@lru_cache(maxsize=512)
def check(query: str) -> None:
    """Raise QueryRefusedError for a query that could reach a network or change data.

    Decided on the parse tree where rdflib can parse the query, and on keyword tokens always,
    so that neither parser's blind spot lets a ``SERVICE`` through.
    """
    kind, tree = _parsed(query)
    words = keywords(query)
    if kind == "update" or (kind is None and words & _UPDATE_WORDS):
        raise QueryRefusedError(UPDATE)
    names = _names(tree) if tree is not None else set()
    if "ServiceGraphPattern" in names or "SERVICE" in words:
        raise QueryRefusedError(FEDERATED)
    if "DatasetClause" in names or "FROM" in words:
        raise QueryRefusedError(DATASET)


# ---------------------------------------------------------------- one-line messages

_AT = re.compile(r"error at (\d+):(\d+)")


def syntax_message(query: str, exc: Exception) -> str:
    """One line for a syntax error pyoxigraph reports (its own lists every Unicode range it expected)."""
    text = str(exc)
    where = _AT.search(text)
    line, column = (int(where.group(1)), int(where.group(2))) if where else (None, None)
    if "Prefix not found" in text:
        return _undeclared(query, line, column)
    found = _near(query, line, column)
    expected = re.search(r"expected (.*)", text.splitlines()[0])
    what = f"expected {expected.group(1)[:60]}" if expected and "one of" not in expected.group(1) else "unexpected text"
    place = f" at line {line}, column {column}" if line else ""
    return f"SPARQL syntax error{place}: {what}" + (f" near {found!r}" if found else "")


def _near(query: str, line: int | None, column: int | None) -> str:
    if not line:
        return ""
    lines = query.splitlines()
    if line > len(lines):
        return ""
    return lines[line - 1][max((column or 1) - 1, 0) :][:30].strip()


def _prefixes(tree: ParseTree, node: str) -> set[str]:
    return {str(n.get("prefix") or "") for n in _nodes(tree) if getattr(n, "name", "") == node}


def _undeclared(query: str, line: int | None, column: int | None) -> str:
    _kind, tree = _parsed(query)
    used = []
    if tree is not None:
        declared = set(PREFIXES) | _prefixes(tree, "PrefixDecl")
        used = sorted(_prefixes(tree, "pname") - declared)
    if not used:  # rdflib did not parse it: the prefixed name just before the error position
        before = query.splitlines()[line - 1][:column] if line else query
        found = re.findall(r"([^\W\d][\w.-]*)?:", before)
        used = [found[-1]] if found else []
    name = ", ".join(f"{p}:" for p in used) or "a prefix"
    place = f" at line {line}, column {column}" if line else ""
    return (
        f"undeclared prefix {name}{place}: declare it with PREFIX, "
        f"or use one of {', '.join(p + ':' for p in sorted(PREFIXES))}"
    )
