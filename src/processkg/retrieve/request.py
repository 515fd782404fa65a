"""The retrieval request, encoded and decoded in one place.

``kg retrieve --server URL`` encodes it and ``kg serve``'s ``GET /$processkg/retrieve`` decodes it,
as URL query parameters: ``q`` (the question), ``k``, ``method``, ``hops``, ``mapping_edges``,
``sequence_edges``, ``verify_seeds`` and ``context`` (``true``/``false``; ``context`` adds the typed
context to the answer). A parameter left out takes ``kg retrieve``'s default; an unknown one, or a
value of the wrong kind, is refused with one line naming it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from processkg.errors import RetrievalRequestError
from processkg.retrieve.retriever import DEFAULT_HOPS, RetrievalSettings, check_query

#: Every parameter of the request, in the order they are encoded.
PARAMETERS = ("q", "k", "method", "hops", "mapping_edges", "sequence_edges", "verify_seeds", "context")
DEFAULT_K = 5
_TRUE, _FALSE = ("true", "1"), ("false", "0")


@dataclass(frozen=True)
class RetrievalRequest:
    """One question to retrieve for, how many entity sets, how, and whether to add the context."""

    query: str
    k: int = DEFAULT_K
    settings: RetrievalSettings = field(default_factory=RetrievalSettings)
    context: bool = False

    def check(self) -> RetrievalRequest:
        """The request itself, if it can be answered; else an error naming what is wrong."""
        check_query(self.query)
        if self.k < 1:
            raise RetrievalRequestError(f"k must be at least 1, not {self.k}")
        self.settings.check()
        return self

    def to_params(self) -> dict[str, str]:
        """The URL query parameters of the request (every one, so the server's defaults do not matter)."""
        s = self.settings
        flags = {"mapping_edges": s.mapping_edges, "sequence_edges": s.sequence_edges}
        flags |= {"verify_seeds": s.verify_seeds, "context": self.context}
        named = {"q": self.query, "k": str(self.k), "method": s.method, "hops": str(s.hops)}
        return named | {name: "true" if value else "false" for name, value in flags.items()}

    @classmethod
    def from_params(cls, params: Mapping[str, str]) -> RetrievalRequest:
        """The checked request that ``params`` encode; RetrievalRequestError (or the query's or
        settings' own error) names the first parameter that is wrong."""
        unknown = sorted(set(params) - set(PARAMETERS))
        if unknown:
            raise RetrievalRequestError(f"unknown parameter {unknown[0]!r}; known: {', '.join(PARAMETERS)}")
        settings = RetrievalSettings(
            params.get("method", RetrievalSettings.method),
            _int(params, "hops", DEFAULT_HOPS),
            _flag(params, "mapping_edges", True),
            _flag(params, "sequence_edges", True),
            _flag(params, "verify_seeds", False),
        )
        request = cls(params.get("q", ""), _int(params, "k", DEFAULT_K), settings, _flag(params, "context", False))
        return request.check()


def _int(params: Mapping[str, str], name: str, default: int) -> int:
    value = params.get(name)
    if value is None:
        return default
    try:
        return int(value)
    except ValueError:
        raise RetrievalRequestError(f"{name} must be an integer, not {value!r}") from None


def _flag(params: Mapping[str, str], name: str, default: bool) -> bool:
    value = params.get(name)
    if value is None:
        return default
    if value.lower() not in _TRUE + _FALSE:
        raise RetrievalRequestError(f"{name} must be true or false, not {value!r}")
    return value.lower() in _TRUE
