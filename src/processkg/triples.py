"""A small triple collector with IRI minting; everything stays pyoxigraph terms."""

from __future__ import annotations

from functools import lru_cache
from urllib.parse import quote

from pyoxigraph import BlankNode, Literal, NamedNode, Triple

from processkg.vocab import ID, KGT, RDF_TYPE, RDFS_LABEL, XSD_BOOLEAN, XSD_INTEGER

_SAFE = "-._~()!$'*+,;=:@"


@lru_cache(maxsize=65536)
def _segment(text: str) -> str:
    return quote(text, safe=_SAFE)


@lru_cache(maxsize=262144)
def _literal(value: str) -> Literal:
    return Literal(value)


@lru_cache(maxsize=4096)
def _typed(value: str, datatype: NamedNode) -> Literal:
    return Literal(value, datatype=datatype)


def mint(*segments: str) -> NamedNode:
    """An instance IRI from readable name segments: ``id/odata/API_X/set/A_SalesOrder``."""
    return NamedNode(ID + "/".join(_segment(str(s)) for s in segments))


def child(parent: NamedNode, *segments: str) -> NamedNode:
    return NamedNode(parent.value + "/" + "/".join(_segment(str(s)) for s in segments))


class Triples:
    """Collects triples for one source document, with provenance helpers."""

    def __init__(self, source_file: str) -> None:
        self.items: list[Triple] = []
        self._file = Literal(source_file)

    def add(self, s: NamedNode, p: NamedNode, o: NamedNode | BlankNode | Literal) -> None:
        self.items.append(Triple(s, p, o))

    def text(self, s: NamedNode, p: NamedNode, value: str | None) -> None:
        if value is not None and value != "":
            self.items.append(Triple(s, p, _literal(str(value))))

    def boolean(self, s: NamedNode, p: NamedNode, value: bool | None) -> None:
        if value is not None:
            self.items.append(Triple(s, p, _typed("true" if value else "false", XSD_BOOLEAN)))

    def integer(self, s: NamedNode, p: NamedNode, value: int | None) -> None:
        if value is not None:
            self.items.append(Triple(s, p, _typed(str(int(value)), XSD_INTEGER)))

    def node(
        self, s: NamedNode, cls: NamedNode, line: int | None, label: str | None = None, file: str | None = None
    ) -> NamedNode:
        """Declare a node: its class, its label and where it came from (this document, or ``file``)."""
        self.add(s, RDF_TYPE, cls)
        self.items.append(Triple(s, KGT.sourceFile, _literal(file) if file else self._file))
        self.integer(s, KGT.sourceLine, line)
        self.text(s, RDFS_LABEL, label)
        return s
