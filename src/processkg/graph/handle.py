"""A store named once and opened once: ``--store`` parsed into a :class:`StoreLocation`, opened into
a :class:`StoreHandle` pinned to one build.

The walk of ``--store`` is a straight line: the CLI's click type (``cli/options.py``) parses the
text once (:meth:`StoreLocation.parse`, the only place that tells a URL from a folder); a reading
command gets it opened once into a handle and hands that to its stages; a writing command
(``kg build``, ``kg index``) hands the location to the build or the index, which pin what they write.

The handle carries everything a stage reads of that build (the graph, ``build.json``, the index
folder, the services' source documents), all from the one version directory it pinned, so reading
any of them never looks up ``current`` again: a build that finishes meanwhile cannot give a reader
the graph of one build and the index of another. A local version is held against deletion by a
shared lock on its ``.readers`` (released by :meth:`StoreHandle.close`, or when the process ends);
a build on a SPARQL server is pinned by its build id (its local cache directory).
"""

from __future__ import annotations

import os
import re
import weakref
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from types import TracebackType

from processkg.aliases import JSONObject
from processkg.errors import StoreDamagedError
from processkg.graph.remote import REMOTE, Layout, open_remote, resolve
from processkg.graph.store import StoreGraph, pin_version, read_meta

INDEX = "index"
DOCUMENTS = "metadata"
_URL = re.compile(r"^(https?):/+(.+)$", re.IGNORECASE)  # a Path folds the // of the scheme: one / or more


@dataclass(frozen=True)
class StoreLocation:
    """Where a store is: a local folder (``path``) or a SPARQL server (``url``, with its parameters)."""

    path: Path | None = None
    url: str | None = None

    @classmethod
    def parse(cls, text: str | Path) -> StoreLocation:
        """The location ``--store`` names: ``http(s)://...`` a SPARQL server (its parameters are checked
        here: RemoteStoreError), anything else a folder. The one place that tells the two apart."""
        found = _URL.match(str(text))
        if found is None:
            return cls(path=Path(text))
        url = f"{found[1].lower()}://{found[2].rstrip('/')}"
        Layout(url)
        return cls(url=url)

    def __str__(self) -> str:
        return self.url if self.url is not None else str(self.path)


class StoreHandle:
    """One build of a store, opened read-only and pinned until :meth:`close` (or the process ends)."""

    def __init__(self, location: StoreLocation) -> None:
        self.location = location
        self.version: Path
        self.graph: StoreGraph
        cache = resolve(location.url) if location.url is not None else location.path
        remote = open_remote(cache) if cache is not None else None  # a server's build, or its cache directory
        if remote is None and location.url is not None:
            raise StoreDamagedError(f"{cache}: the cache of {location.url} has no {REMOTE}; remove it")
        if remote is not None:
            self.version = Path(str(cache))
            self.graph = remote
            self.build_id = remote.build
            self._release = weakref.finalize(self, _close, None)
        else:
            assert location.path is not None
            self.version, self.graph, fd = pin_version(location.path)
            self.build_id = self.version.name
            self._release = weakref.finalize(self, _close, fd)

    @classmethod
    def open(cls, store: StoreLocation | str | Path) -> StoreHandle:
        """The handle of the build ``store`` (a location, or ``--store`` text, parsed here) names now."""
        return cls(store if isinstance(store, StoreLocation) else StoreLocation.parse(store))

    @cached_property
    def meta(self) -> JSONObject:
        """``build.json`` of the pinned build; {} when it has none."""
        return read_meta(self.version)

    @property
    def index_dir(self) -> Path:
        """The retrieval index of the pinned build (``kg index`` writes it into the version)."""
        return self.version / INDEX

    @property
    def documents_dir(self) -> Path:
        """The services' source documents ``kg build`` kept with the pinned build."""
        return self.version / DOCUMENTS

    def close(self) -> None:
        """Release the pinned build (a later build may then delete it)."""
        self._release()

    def __enter__(self) -> StoreHandle:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.close()

    def __str__(self) -> str:
        return str(self.location)


def _close(fd: int | None) -> None:
    if fd is not None:
        os.close(fd)


_KEPT: dict[tuple[str, str], StoreHandle] = {}  # (location, build) -> the handle open_store pinned for good


def open_store(store: StoreLocation | str | Path) -> StoreGraph:
    """The graph of the build ``store`` names now, pinned until the process ends: the library's
    one-shot read (``processkg.open_store``); the stages take a :class:`StoreHandle` instead. One
    handle per build: opening the same build again reuses it instead of holding another lock for good."""
    handle = StoreHandle.open(store)
    kept = _KEPT.setdefault((str(handle.location), handle.build_id), handle)
    if kept is not handle:
        handle.close()
    return kept.graph
