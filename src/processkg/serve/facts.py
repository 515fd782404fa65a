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
from pathlib import Path

from processkg.errors import StoreBusyError
from processkg.graph.store import open_store, read_meta, records, version_dir
from processkg.validate.calls import Validator

ATTEMPTS = 3  # a build that replaces the store while the server starts: read again


@dataclass
class StoreFacts:
    documents: dict[str, bytes] = field(default_factory=dict)  # service name -> its source document
    etag_sets: set[tuple[str, str]] = field(default_factory=set)  # (service, entity set) with ETags
    constraints: dict[str, list[tuple[str, str]]] = field(default_factory=dict)  # nav IRI -> [(local, referenced)]


def load(store: Path) -> tuple[Validator, StoreFacts]:
    """The validator and the facts of the store's current version, both from the same version."""
    for _attempt in range(ATTEMPTS):
        version = version_dir(store)
        validator = Validator(store)
        facts = _facts(store, version)
        if version_dir(store) == version:
            # pyoxigraph's query results may not be freed on another thread; the reference cycles
            # the SPARQL safety check leaves around them are collected here, on the loading thread
            gc.collect()
            return validator, facts
    raise StoreBusyError(f"{store}: the store kept changing while kg serve read it; try again")


def _facts(store: Path, version: Path) -> StoreFacts:
    graph = open_store(store)
    facts = StoreFacts()
    for name, relative in sorted(read_meta(version).get("metadata", {}).items()):
        path = version / relative
        if path.is_file():
            facts.documents[name] = path.read_bytes()
    facts.etag_sets = {(r["service"], r["name"]) for r in records(graph, "serve-concurrency")}
    for r in sorted(records(graph, "serve-references"), key=lambda r: (r["nav"], r["local"])):
        facts.constraints.setdefault(r["nav"], []).append((r["local"], r["referenced"]))
    return facts
