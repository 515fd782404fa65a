"""What ``kg serve`` reads from a store besides the validation model: each service's source document
(for ``$metadata``), the entity sets whose entities carry an ETag, the referential constraints of
navigation properties, the key properties of every entity set (for the referential checks) and the
curated document flow (for the flow checks).

Nothing is read at start: a source document when its ``$metadata`` is asked for, the rest on the
first request that needs it, so a store of thousands of services starts in the time of one. Everything
is read from one store version: the documents ``kg build`` kept in ``v-N/metadata/`` (named in
``build.json``) and the graph of the same version, so ``$metadata`` always describes the model the
server validates against.
"""

from __future__ import annotations

import gc
import threading
from dataclasses import dataclass

from processkg.aliases import Record
from processkg.graph.handle import StoreHandle
from processkg.graph.store import records
from processkg.validate.calls import Validator


@dataclass(frozen=True)
class SetKeys:
    """An entity set of some service and the names of its key properties (sorted)."""

    service: str
    name: str
    keys: tuple[str, ...]
    creatable: bool


class StoreFacts:
    """The facts of one store version, each read on first use (an empty store's without ``handle``)."""

    def __init__(self, handle: StoreHandle | None = None) -> None:
        self.handle = handle
        self.lock = threading.Lock()
        self._documents: dict[str, bytes | None] = {}
        self._etag_sets: set[tuple[str, str]] | None = None
        self._constraints: dict[str, list[tuple[str, str]]] | None = None
        self._sets: list[SetKeys] | None = None
        self._document_flows: list[Record] | None = None

    def document(self, service: str) -> bytes | None:
        """``service``'s source document as ``kg build`` kept it; None when the store keeps none."""
        if self.handle is None:
            return None
        with self.lock:
            if service not in self._documents:
                relative = self.handle.meta.get("metadata", {}).get(service)
                path = self.handle.version / relative if relative else None
                self._documents[service] = path.read_bytes() if path is not None and path.is_file() else None
            return self._documents[service]

    @property
    def etag_sets(self) -> set[tuple[str, str]]:
        """(service, entity set) of the sets whose entities carry an ETag."""
        if self._etag_sets is not None:  # read once, then never changed: no lock to take on every request
            return self._etag_sets
        with self.lock:
            if self._etag_sets is None:
                self._etag_sets = {(r["service"], r["name"]) for r in self._records("serve-concurrency")}
            return self._etag_sets

    @property
    def constraints(self) -> dict[str, list[tuple[str, str]]]:
        """Navigation property IRI -> [(local property, referenced property)]."""
        with self.lock:
            if self._constraints is None:
                found: dict[str, list[tuple[str, str]]] = {}
                for r in sorted(self._records("serve-references"), key=lambda r: (r["nav"], r["local"])):
                    found.setdefault(r["nav"], []).append((r["local"], r["referenced"]))
                self._constraints = found
            return self._constraints

    @property
    def sets(self) -> list[SetKeys]:
        """Every entity set of every service with its key, by (service, name): where a reference may point
        in another service, found without reading that service's model."""
        with self.lock:
            if self._sets is None:
                keys: dict[str, set[str]] = {}
                for r in self._records("serve-key-properties"):
                    keys.setdefault(r["type"], set()).add(r["key"])
                bases = {r["type"]: r["base"] for r in self._records("serve-base-types")}
                found = []
                for r in self._records("serve-entity-sets"):
                    own = set().union(*(keys.get(t, set()) for t in _lineage(r["type"], bases)))
                    found.append(SetKeys(r["service"], r["name"], tuple(sorted(own)), r["creatable"] is not False))
                self._sets = sorted(found, key=lambda s: (s.service, s.name))
            return self._sets

    @property
    def document_flows(self) -> list[Record]:
        """The rows of ``serve-document-flow``: the curated document flow (``kg build --flow``)."""
        with self.lock:
            if self._document_flows is None:
                self._document_flows = self._records("serve-document-flow")
            return self._document_flows

    def _records(self, query: str) -> list[Record]:
        if self.handle is None:
            return []
        found = records(self.handle.graph, query)
        # pyoxigraph's query results may not be freed on another thread; the reference cycles the
        # SPARQL safety check leaves around them are collected here, on the thread that read them
        gc.collect()
        return found


def _lineage(type_iri: str, bases: dict[str, str]) -> list[str]:
    """``type_iri`` and its base types (cycles cut)."""
    chain: list[str] = []
    current: str | None = type_iri
    while current is not None and current not in chain:
        chain.append(current)
        current = bases.get(current)
    return chain


def load(handle: StoreHandle) -> tuple[Validator, StoreFacts]:
    """The validator and the facts of the build ``handle`` pinned (the facts read nothing yet)."""
    validator = Validator(handle)
    gc.collect()  # as in StoreFacts._records: the model index was read on this thread
    return validator, StoreFacts(handle)
