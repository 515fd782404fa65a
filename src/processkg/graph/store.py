"""The Oxigraph store: atomic writes, Turtle export, and SPARQL with bound values.

A store directory is stable: it holds a marker, a writer's lock and versioned builds
(``v-N/``, each with ``oxigraph/`` the database and ``build.json`` what was built from what),
and ``current``, a symlink to the complete build readers use. A build writes a new version
and replaces ``current`` in one rename, so readers see the old or the new build, never a
mix, and a failed or killed build leaves the previous store untouched (see
docs/reliability.md, "Store").
"""

from __future__ import annotations

import ctypes
import fcntl
import gc
import itertools
import json
import os
import re
import shutil
import stat
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from glob import escape as glob_escape
from pathlib import Path
from typing import Protocol

from pyoxigraph import (
    BlankNode,
    DefaultGraph,
    Literal,
    NamedNode,
    Quad,
    QueryBoolean,
    QuerySolutions,
    QueryTriples,
    RdfFormat,
    Store,
    Triple,
    Variable,
    parse,
    serialize,
)

from processkg.aliases import JSONObject, PlainValue, QueryValue, Record, Row
from processkg.assets import internal_queries_dir, ontology_path, queries_dir
from processkg.errors import (
    OutputRefusedError,
    ProcessKGError,
    QueryError,
    StoreBusyError,
    StoreDamagedError,
    StoreNotFoundError,
    StoreRefusedError,
)
from processkg.graph.sparql import check, syntax_message
from processkg.vocab import PREFIXES

DB = "oxigraph"
META = "build.json"
ONTOLOGY_GRAPH = NamedNode("https://w3id.org/processkg/ontology")
SHAPES_GRAPH = NamedNode("https://w3id.org/processkg/shapes")  # the payload shapes kg build generates


class StoreGraph(Protocol):
    """What the stages read a store's graph through: the embedded pyoxigraph ``Store`` and
    :class:`processkg.graph.remote.RemoteStore` (a build on a SPARQL server) both implement it."""

    def query(
        self,
        query: str,
        /,
        *,
        prefixes: dict[str, str] | None = None,
        substitutions: dict[Variable, NamedNode | BlankNode | Literal | Triple] | None = None,
    ) -> QuerySolutions | QueryBoolean | QueryTriples: ...

    def quads_for_pattern(
        self,
        subject: NamedNode | BlankNode | Triple | None,
        predicate: NamedNode | None,
        object: NamedNode | BlankNode | Literal | Triple | None,
        graph_name: NamedNode | BlankNode | DefaultGraph | None = None,
        /,
    ) -> Iterator[Quad]: ...


def canonical_ntriples(triples: Iterable[Triple] | Iterable[Quad]) -> bytes:
    """Distinct triples as sorted N-Triples lines: a fixed order, so builds are byte-identical.

    Serializing and sorting lines runs in native code, far faster than sorting term tuples.
    """
    return canonical_lines(serialize(triples, format=RdfFormat.N_TRIPLES) or b"")


def canonical_lines(ntriples: bytes) -> bytes:
    """N-Triples lines, possibly repeated, as the canonical form of :func:`canonical_ntriples`."""
    lines = ntriples.splitlines()
    return b"\n".join(sorted(set(lines))) + b"\n" if lines else b""


class Spool:
    """N-Triples appended to a file batch by batch (one service, one BPMN file), so that a build
    holds one batch's triples in memory, not the corpus's; duplicates are removed by the store."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._file = path.open("wb")

    def add(self, triples: Iterable[Triple]) -> None:
        try:
            self._file.write(serialize(triples, format=RdfFormat.N_TRIPLES) or b"")
        except OSError as exc:
            raise named(exc, self.path) from exc

    def close(self) -> Path:
        try:
            self._file.close()
        except OSError as exc:
            raise named(exc, self.path) from exc
        return self.path


def named(exc: OSError, path: Path) -> OSError:
    """``exc`` naming ``path``: a write to an open file (a full disk, a size limit) names none."""
    return exc if exc.filename is not None else OSError(exc.errno, exc.strerror, str(path))


def to_turtle(ntriples: bytes, prefixes: dict[str, str] = PREFIXES) -> bytes:
    """Canonical N-Triples as Turtle with ``prefixes`` (pyoxigraph keeps the sorted order)."""
    triples = parse(ntriples, format=RdfFormat.N_TRIPLES)
    return serialize(triples, format=RdfFormat.TURTLE, prefixes=prefixes) or b""


# ---------------------------------------------------------------- store layout
#
# STORE/.processkg-store   marker: kg build replaces only a directory that carries it
# STORE/.lock              flock'd by the one writer (kg build, kg index)
# STORE/current -> v-N     symlink, replaced in one os.replace: readers see the old or the new build
# STORE/v-N/               one complete build: oxigraph/, build.json, index/, metadata/ (the
#                          services' source documents, for kg serve's $metadata), .readers
# STORE/oxigraph, build.json, index -> current/...   convenience links for tools that expect the
#                          previous layout (a store directory holding oxigraph/ and build.json)

MARKER = ".processkg-store"
LOCK = ".lock"
CURRENT = "current"
READERS = ".readers"
LINKS = (DB, META, "index")


def version_dir(path: Path) -> Path:
    """The directory holding the current build of the store at ``path``.

    ``STORE/current`` names it; a store of the previous layout (no ``current``), or a version
    directory itself (or the cache directory of a build on a SPARQL server), is its own version.
    """
    path = Path(path)
    link = path / CURRENT
    if not link.is_symlink():
        return path
    name = os.readlink(link)
    if "/" in name or not name.startswith("v-"):
        raise StoreDamagedError(
            f"{path}: the store is damaged ({CURRENT} points to {name!r}, not a version); {_rebuild(path)}"
        )
    return path / name


def is_store(path: Path) -> bool:
    """A directory kg build wrote: it carries the marker, or it is a store of the previous layout."""
    path = Path(path)
    return (path / MARKER).is_file() or ((path / DB).is_dir() and (path / META).is_file())


def _rebuild(store: Path) -> str:
    return f"rebuild it with `kg build ... --store {store}`"


def _fsync(path: Path, flags: int = os.O_RDONLY) -> None:
    fd = os.open(path, flags)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_tree(root: Path) -> None:
    """Flush every file and directory below ``root`` to disk before it is published."""
    for folder, _dirs, files in os.walk(root):
        for name in files:
            _fsync(Path(folder) / name)
        _fsync(Path(folder))


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _dead_leftovers(parent: Path, name: str, kinds: tuple[str, ...] = ("tmp", "old")) -> list[Path]:
    """``.NAME.KIND-PID`` siblings left by a process that no longer runs, oldest first."""
    found = []
    for kind in kinds:
        for entry in parent.glob(f".{glob_escape(name)}.{kind}-*"):
            pid = entry.name.rsplit("-", 1)[-1]
            if pid.isdigit() and not _pid_alive(int(pid)):
                found.append(entry)
    return sorted(found, key=lambda p: p.lstat().st_mtime)


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        with suppress(FileNotFoundError):
            path.unlink()


@contextmanager
def staged_dir(target: Path) -> Iterator[Path]:
    """Yield a temporary sibling of ``target``; on success, swap it into place atomically.

    The two directories are exchanged in one step where the system can (Linux renameat2);
    leftovers of a killed process (``.NAME.tmp-PID``, ``.NAME.old-PID``) are removed first.
    """
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    for stale in _dead_leftovers(target.parent, target.name):
        _remove(stale)
    tmp = target.parent / f".{target.name}.tmp-{os.getpid()}"
    _remove(tmp)
    tmp.mkdir()
    try:
        yield tmp
        _fsync_tree(tmp)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    _swap(tmp, target)


def _exchange(a: Path, b: Path) -> bool:
    """Swap two paths in one atomic step (Linux renameat2 RENAME_EXCHANGE); False where unsupported."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    at_fdcwd, rename_exchange = -100, 2
    done = renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange) == 0
    return done


def _swap(tmp: Path, target: Path) -> None:
    old = target.parent / f".{target.name}.old-{os.getpid()}"
    if target.exists() and _exchange(tmp, target):
        shutil.rmtree(tmp, ignore_errors=True)
        return
    if target.exists():
        os.replace(target, old)
    os.replace(tmp, target)
    shutil.rmtree(old, ignore_errors=True)


def write_atomic(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` so that it holds the old or the new bytes, never a mix.

    The bytes go to a sibling, are flushed to disk, and replace the file in one rename. A
    symlink is followed: its target is replaced and the link stays. A path that exists and is
    not a regular file (a directory, a device, a pipe) is refused.
    """
    path = Path(path)
    target = path.resolve() if path.is_symlink() else path
    if target.exists() and not target.is_file():
        raise OutputRefusedError(f"{path}: exists and is not a regular file; refusing to replace it")
    target.parent.mkdir(parents=True, exist_ok=True)
    for stale in _dead_leftovers(target.parent, target.name, ("tmp",)):
        _remove(stale)
    tmp = target.parent / f".{target.name}.tmp-{os.getpid()}"
    _remove(tmp)
    try:
        _write_synced(tmp, data, target)
        os.replace(tmp, target)
    except BaseException:
        _remove(tmp)
        raise
    _fsync(target.parent)


def _write_synced(tmp: Path, data: bytes, target: Path) -> None:
    mode = stat.S_IMODE(target.stat().st_mode) if target.exists() else 0o666
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    except OSError as exc:
        raise named(exc, target) from exc
    finally:
        os.close(fd)
    if target.exists():
        os.chmod(tmp, mode)


# ---------------------------------------------------------------- writing a store


def _contains(outer: Path, inner: Path) -> bool:
    return outer == inner or outer in inner.parents


def check_store_path(store: Path, inputs: Sequence[Path | str] | None = None) -> None:
    """Refuse a ``--store`` that kg build must not replace: one that is not a processkg store
    (a plain file, a folder of other files), one that holds the current directory or an input,
    or one inside an input folder (a build would read the store's files back as input)."""
    store = Path(store)
    real = Path(os.path.realpath(store))
    named = [("the current directory", Path.cwd())] + [(f"the input {p}", Path(p)) for p in inputs or [] if p]
    for what, path in named:
        if _contains(real, Path(os.path.realpath(path))):
            raise StoreRefusedError(f"--store {store}: it contains {what}; choose a store path outside it")
    for root in inputs or []:
        if root and Path(root).is_dir() and _contains(Path(os.path.realpath(root)), real):
            raise StoreRefusedError(
                f"--store {store}: it is inside the input folder {root}, so the next build would read the "
                f"store's files as input; choose a store path outside it"
            )
    if os.path.lexists(store) and not store.is_dir():
        raise StoreRefusedError(
            f"--store {store}: exists and is not a directory; kg build replaces only a "
            f"processkg store (choose another path, or remove it yourself)"
        )
    if store.is_dir() and not is_store(store) and any(e.name != LOCK for e in store.iterdir()):
        raise StoreRefusedError(
            f"--store {store}: is a folder that is not a processkg store (no {MARKER}); "
            f"kg build replaces only a store it wrote (choose another path, or remove it "
            f"yourself)"
        )


class StoreWriter:
    """The one writer of a store: holds ``STORE/.lock`` from start to end of a build.

    Entering checks the path, takes the lock (a second writer gets StoreBusyError at once) and
    removes what killed builds left; :meth:`version` yields a new version directory and
    publishes it by replacing ``STORE/current`` in one step.
    """

    def __init__(self, store: Path, inputs: Sequence[Path | str] | None = None) -> None:
        self.store = Path(store)
        self.inputs = list(inputs or [])
        self.created = False
        self.published = False
        self.fd: int | None = None

    def __enter__(self) -> StoreWriter:
        check_store_path(self.store, self.inputs)
        self._recover_previous_layout()
        self.created = not self.store.exists()
        self.store.mkdir(parents=True, exist_ok=True)
        self.fd = lock_store(self.store)
        try:
            check_store_path(self.store, self.inputs)  # another process may have filled it meanwhile
            if not (self.store / MARKER).is_file():
                write_atomic(self.store / MARKER, b'{"processkg-store": 2}\n')
            self._clean()
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        if self.created and not self.published and self.fd is not None:
            shutil.rmtree(self.store, ignore_errors=True)  # nothing was ever built here: leave no trace
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None

    def _recover_previous_layout(self) -> None:
        """A previous-layout build killed between its two renames left the only store as
        ``.NAME.old-PID``: put it back; then remove its other leftovers."""
        parent, name = self.store.parent, self.store.name
        stale = _dead_leftovers(parent, name) if parent.is_dir() else []
        olds = [p for p in stale if ".old-" in p.name and is_store(p)]
        if olds and not os.path.lexists(self.store):
            os.replace(olds[-1], self.store)
        for entry in stale:
            if os.path.lexists(entry):
                _remove(entry)

    def _clean(self) -> None:
        """Remove unreferenced versions nobody reads and half-made pointers (under the lock)."""
        try:
            current = version_dir(self.store).name if (self.store / CURRENT).is_symlink() else None
        except StoreDamagedError:
            current = None  # a pointer that names no version: the build replaces it
        for entry in self.store.iterdir():
            if entry.name.startswith(".current.tmp-") or entry.name.startswith(".legacy-"):
                _remove(entry)
            elif entry.name.startswith("v-") and entry.name != current:
                _remove_version(entry)
        if current:
            for name in LINKS:  # the previous layout's own entries, once a version replaced them
                entry = self.store / name
                if os.path.lexists(entry) and not entry.is_symlink():
                    _remove(entry)

    @contextmanager
    def version(self) -> Iterator[Path]:
        """Yield a new, empty version directory; on success flush it and make it current."""
        path = self.store / f"v-{self._next_number()}"
        path.mkdir()
        (path / READERS).touch()
        try:
            yield path
            _fsync_tree(path)
        except BaseException:
            shutil.rmtree(path, ignore_errors=True)
            raise
        self._publish(path)

    def _next_number(self) -> int:
        numbers = [int(p.name[2:]) for p in self.store.glob("v-*") if p.name[2:].isdigit()]
        return max(numbers, default=0) + 1

    def _publish(self, path: Path) -> None:
        _point(self.store, CURRENT, path.name)
        self.published = True
        for name in LINKS:
            link = self.store / name
            if os.path.lexists(link) and not link.is_symlink():  # a store of the previous layout
                os.replace(link, self.store / f".legacy-{name}-{os.getpid()}")
            if not link.is_symlink():
                _point(self.store, name, f"{CURRENT}/{name}")
        self._clean()


def _point(store: Path, name: str, target: str) -> None:
    """Make ``STORE/NAME`` a symlink to ``target`` in one rename."""
    tmp = store / f".current.tmp-{os.getpid()}"
    _remove(tmp)
    os.symlink(target, tmp)
    os.replace(tmp, store / name)
    _fsync(store)


def lock_store(store: Path) -> int:
    """Take ``STORE/.lock`` exclusively, without waiting; the fd holds it until closed."""
    fd = os.open(Path(store) / LOCK, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise StoreBusyError(f"{store}: another kg build is writing {store}; wait for it to finish") from None
    return fd


@contextmanager
def store_lock(store: Path) -> Iterator[None]:
    """Hold the writer's lock of a store of this layout (``kg index``); nothing for other directories."""
    if not (Path(store) / MARKER).is_file():
        yield
        return
    fd = lock_store(store)
    try:
        yield
    finally:
        os.close(fd)


def _remove_version(path: Path) -> None:
    """Delete an old version unless a reader holds its ``.readers`` lock (then a later build does)."""
    try:
        fd = os.open(path / READERS, os.O_RDONLY)
    except OSError:
        shutil.rmtree(path, ignore_errors=True)  # half made or half deleted
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        (path / READERS).unlink()  # a reader that gets the lock now sees it unlinked and looks again
        shutil.rmtree(path, ignore_errors=True)
    except (BlockingIOError, FileNotFoundError):
        pass
    finally:
        os.close(fd)


def hold(store: Path, version: Path) -> tuple[bool, int | None]:
    """Take a shared lock on ``version/.readers``, so no build deletes the version while it is read:
    (True, the fd holding it until closed), or (True, None) for a current version without the file
    (read unlocked), or (False, None) when the version is being deleted (look up ``current`` again).
    Each caller gets its own fd, so closing one reader's lock leaves the others held."""
    try:
        fd = os.open(version / READERS, os.O_RDONLY)
    except FileNotFoundError:  # being deleted, unless it is still current (then read it unlocked)
        return version.is_dir() and version_dir(store) == version, None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return False, None
    if not os.fstat(fd).st_nlink:
        os.close(fd)
        return False, None
    return True, fd


LOAD_LINES = 1_000_000  # N-Triples lines per bulk load: Oxigraph's loader holds a whole load in memory


def _load_lines(store: Store, data: Path, graph: DefaultGraph | NamedNode) -> None:
    """Bulk-load the N-Triples file ``data`` in parts of LOAD_LINES lines, so a build's peak memory
    is one part's (about 1.1 GB), not the corpus's. The price is disk: each part stores the strings
    it shares with earlier parts again (the 100x store, 17 parts, is 1.4x its linear size).
    A2X (165,000 lines) and s4-fiori (660,000) load in one part, as before."""
    with data.open("rb") as lines:
        while part := b"".join(itertools.islice(lines, LOAD_LINES)):
            store.bulk_load(part, format=RdfFormat.N_TRIPLES, to_graph=graph)


def write_store(path: Path, data: Path, meta: Callable[[Store], JSONObject], shapes: Path | None = None) -> None:
    """Load the N-Triples file ``data`` (default graph), the ontology and ``shapes`` (their named
    graphs) into a new store at ``path``; ``meta(store)`` is then written as its build.json."""
    store = Store(str(path / DB))
    _load_lines(store, data, DefaultGraph())
    store.bulk_load(path=str(ontology_path()), format=RdfFormat.TURTLE, to_graph=ONTOLOGY_GRAPH)
    if shapes is not None:
        _load_lines(store, shapes, SHAPES_GRAPH)
    store.flush()
    content = meta(store)
    del store
    gc.collect()
    (path / META).write_text(json.dumps(content, indent=2, sort_keys=True) + "\n", encoding="utf-8")


# ---------------------------------------------------------------- reading


def pin_version(path: Path) -> tuple[Path, Store, int | None]:
    """The current build of the local store at ``path``, opened read-only and pinned: its version
    directory, its database, and the fd of the version's reader lock (see :func:`hold`; None for a
    store of the previous layout), so a build that finishes meanwhile keeps it on disk. A database
    that cannot be opened is a StoreDamagedError naming the damaged file and the command that
    rebuilds the store."""
    for _attempt in range(200):
        version = version_dir(path)
        if version == path and not (path / DB).is_dir():
            raise StoreNotFoundError(f"{path}: no processkg store here (run `kg build --store {path}` first)")
        held, fd = hold(path, version) if version != path else (True, None)
        if not held:
            if not version.exists() and version_dir(path) == version:
                raise StoreDamagedError(
                    f"{path}: the store is damaged ({CURRENT} points to the missing {version.name}); {_rebuild(path)}"
                )
            time.sleep(0.01)  # a build replaced it meanwhile: look up current again
            continue
        try:
            return version, Store.read_only(str(version / DB)), fd
        except (OSError, RuntimeError) as exc:
            if fd is not None:
                os.close(fd)
            if version_dir(path) != version:
                continue
            if "file descriptors" in str(exc):  # this process's limit (ulimit -n), not damage: exit 2
                raise
            raise StoreDamagedError(f"{path}: the store is damaged ({_damage(exc, path)}); {_rebuild(path)}") from None
    raise StoreBusyError(f"{path}: the store kept changing while it was opened; try again")


def _damage(exc: Exception, store: Path) -> str:
    """What RocksDB's message says is wrong, as ``FILE is missing|truncated|corrupt``."""
    text = str(exc)
    where = lambda p: os.path.relpath(p, store) if os.path.isabs(p) else p  # noqa: E731
    found = re.search(r"size mismatch between expected (\d+) and file system (\d+) sstable: (\S+)", text)
    if found:
        return f"{where(found[3])} is truncated: {found[2]} of {found[1]} bytes"
    found = re.search(r"(/[^\s:]+): No such file or directory", text)
    if found:
        return f"{where(found[1])} is missing"
    found = re.search(r"The file (\S+) may be corrupted", text)
    if found:
        return f"{where(found[1])} is corrupt: {text.split('  ')[0].strip()[:160]}"
    return " ".join(text.split())[:200] or type(exc).__name__


def read_meta(path: Path) -> JSONObject:
    """``build.json`` of the current build (what was built from what); {} when there is none."""
    path = Path(path)
    meta = version_dir(path) / META
    try:
        data = json.loads(meta.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        raise StoreDamagedError(
            f"{path}: the store is damaged ({os.path.relpath(meta, path)} cannot be read: {exc}); {_rebuild(path)}"
        ) from None
    if not isinstance(data, dict):
        raise StoreDamagedError(f"{path}: the store is damaged ({META} is not a JSON object); {_rebuild(path)}")
    return data


def load_query(name: str) -> str:
    """A query of the library by name (``queries/NAME.rq``)."""
    for folder in (queries_dir(), internal_queries_dir()):
        path = folder / f"{name}.rq"
        if path.exists():
            return path.read_text(encoding="utf-8")
    raise ProcessKGError(f"no query named {name!r} in {queries_dir()}")


def term(value: QueryValue) -> NamedNode | Literal:
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


def solutions(
    store: StoreGraph, query: str, bindings: Mapping[str, QueryValue] | None = None
) -> tuple[list[str], Iterator[Row]]:
    """The column names of a SELECT and its rows, lazily (so callers can stop early).

    Values are bound by substitution (SEP-0007), never spliced into the text; it binds only
    variables the query projects, so library queries list their parameters in the SELECT
    clause. Every query is checked first (``processkg.graph.sparql.check``): one that could
    reach a network (SERVICE, FROM) or change data (an update) never runs.
    """
    check(query)
    return checked_solutions(store, query, bindings)


def checked_solutions(
    store: StoreGraph, query: str, bindings: Mapping[str, QueryValue] | None = None
) -> tuple[list[str], Iterator[Row]]:
    """:func:`solutions` of a query that ``check`` has passed already, in this process or in the one
    that sent it (``run_bounded``'s child: its parent checked the same text). The check parses the
    query with rdflib, which costs a new process 0.1 to 0.4 s."""
    subs: dict[Variable, NamedNode | BlankNode | Literal | Triple] = {
        _variable(k): term(v) for k, v in (bindings or {}).items()
    }
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
    return names, _rows(result)


def _rows(result: QuerySolutions) -> Iterator[Row]:
    """The values of each solution in the order of ``result.variables``, as a solution iterates them
    (looking each value up by its name cost a fifth of the time of a query of many rows)."""
    try:
        for row in result:
            yield list(row)
    except (RuntimeError, OSError) as exc:
        raise QueryError(f"query failed: {exc}") from None


def select(
    store: StoreGraph, query: str, bindings: Mapping[str, QueryValue] | None = None
) -> tuple[list[str], list[Row]]:
    """Run a SELECT with values bound by substitution: its column names and all its rows."""
    names, rows = solutions(store, query, bindings)
    return names, list(rows)


def plain(value: NamedNode | BlankNode | Literal | None) -> PlainValue:
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


def records(store: StoreGraph, query: str, **bindings: QueryValue) -> list[Record]:
    """Rows of the library query named ``query`` as dicts of plain values, ``bindings`` bound."""
    names, rows = select(store, load_query(query), bindings)
    return [dict(zip(names, (plain(v) for v in row), strict=True)) for row in rows]
