"""Type aliases every stage shares, so a signature says what kind of value it takes.

A value decoded from JSON or YAML is dynamic by nature; these names say so once instead of a
bare ``dict`` or ``object`` in every signature.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeAlias

from pyoxigraph import BlankNode, Literal, NamedNode, Triple

from processkg.errors import ProcessKGError

JSONValue: TypeAlias = Any
"""A value decoded from JSON or YAML: a dict, list, str, int, float, bool or None."""

JSONObject: TypeAlias = dict[str, Any]
"""A JSON or YAML object: member name -> JSON value."""

Record: TypeAlias = dict[str, Any]
"""One row of a library query (``graph.store.records``): variable name -> plain Python value
(str, int, float, bool or None)."""

Term: TypeAlias = NamedNode | BlankNode | Literal | Triple
"""An RDF term as pyoxigraph gives it (the object of a triple, a query solution's value)."""

OnFailure: TypeAlias = Callable[[str, ProcessKGError], None]
"""What a bad input document does: called with its display path and the error (``--on-error``)."""

ProgressCallback: TypeAlias = Callable[[str], None]
"""Called with the display path of each input before it is read."""

QueryValue: TypeAlias = str | int | float | bool | NamedNode | Literal
"""A value bound to a query parameter (``graph.store.term``): IRIs stay IRIs, the rest are literals."""

PlainValue: TypeAlias = str | int | float | bool | None
"""An RDF term as a plain Python value (``graph.store.plain``)."""

Row: TypeAlias = list[Any]
"""One row of a SELECT (``graph.store.select``): a pyoxigraph term per column, or None if unbound."""
