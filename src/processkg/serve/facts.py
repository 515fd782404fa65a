"""What ``kg serve`` reads from a store besides the validation model: each service's source document
(for ``$metadata``), the entity sets whose entities carry an ETag, and the referential constraints
of navigation properties (for the referential checks).

Everything is read from one store version: the documents ``kg build`` kept in ``v-N/metadata/``
(named in ``build.json``) and the graph of the same version, so ``$metadata`` always describes the
model the server validates against.
"""

from __future__ import annotations

import gc
from dataclasses import dataclass, field

from processkg.graph.handle import StoreHandle
from processkg.graph.store import records
from processkg.validate.calls import Validator


@dataclass
class StoreFacts:
    documents: dict[str, bytes] = field(default_factory=dict)  # service name -> its source document
    etag_sets: set[tuple[str, str]] = field(default_factory=set)  # (service, entity set) with ETags
    constraints: dict[str, list[tuple[str, str]]] = field(default_factory=dict)  # nav IRI -> [(local, referenced)]


def load(handle: StoreHandle) -> tuple[Validator, StoreFacts]:
    """The validator and the facts of the build ``handle`` pinned."""
    validator = Validator(handle)
    facts = _facts(handle)
    # pyoxigraph's query results may not be freed on another thread; the reference cycles
    # the SPARQL safety check leaves around them are collected here, on the loading thread
    gc.collect()
    return validator, facts


def _facts(handle: StoreHandle) -> StoreFacts:
    facts = StoreFacts()
    for name, relative in sorted(handle.meta.get("metadata", {}).items()):
        path = handle.version / relative
        if path.is_file():
            facts.documents[name] = path.read_bytes()
    facts.etag_sets = {(r["service"], r["name"]) for r in records(handle.graph, "serve-concurrency")}
    for r in sorted(records(handle.graph, "serve-references"), key=lambda r: (r["nav"], r["local"])):
        facts.constraints.setdefault(r["nav"], []).append((r["local"], r["referenced"]))
    return facts
