"""``kg build``: read every input, lift it, and write the store and Turtle atomically.

The same function is the library API: :func:`build` takes :class:`BuildOptions` and
returns a :class:`BuildReport`; the CLI only wires options and prints the report.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import stat
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from glob import escape as glob_escape
from pathlib import Path

from pyoxigraph import NamedNode, RdfFormat, Store, Triple

from processkg.aliases import JSONObject, ProgressCallback
from processkg.errors import CodeListError, GraphCheckError, ProcessKGError
from processkg.graph import remote
from processkg.graph.handle import StoreLocation
from processkg.graph.store import (
    DB,
    Spool,
    StoreWriter,
    canonical_lines,
    records,
    to_turtle,
    version_dir,
    write_atomic,
    write_store,
)
from processkg.retrieve.index import IndexReport, build_index
from processkg.sources import events, openapi
from processkg.sources.bpmn import bpmn_xml
from processkg.sources.bpmn.lift_definitions import DefinitionsLifter, element_iri
from processkg.sources.code_bindings import BINDINGS_FILE, bound_properties, read_bindings
from processkg.sources.codes import CodeLists, codes_for, read_code_lists
from processkg.sources.discover import BPMN_SUFFIXES, CODES_SUFFIXES, ODATA_SUFFIXES, discover
from processkg.sources.document_flow import Use, read_flows
from processkg.sources.document_flow import lift as lift_document_flow
from processkg.sources.mapping import ActivityRef, lift_mapping, read_mapping, resolve_entry
from processkg.sources.odata import csdl, edm, flow
from processkg.sources.odata.lift_service import ServiceLifter
from processkg.sources.required import RequiredField, read_required
from processkg.validate.payload_shapes import batch_shapes, check_graph

ON_ERROR = ("fail", "warn", "skip")
METADATA = "metadata"  # folder of a store version holding the services' source documents
SPOOL = ".build-"  # a build's spools: a hidden folder .STORE.build-XXXX beside the store
SPOOL_MARKER = ".processkg-spool"
TMP = "processkg-build-"  # a build's folder in the system's temporary folder: processkg-build-PID-XXXX
TMP_LOCK = ".processkg-owner"  # flock'd by the build that owns the folder, for as long as it runs


@dataclass
class BuildOptions:
    odata: list[Path | str] = field(default_factory=list)
    bpmn: list[Path | str] = field(default_factory=list)
    store: StoreLocation | None = None  # a folder, or a SPARQL server (StoreLocation.parse of --store)
    out: Path | None = None
    mapping: Path | None = None
    codes: list[Path | str] = field(default_factory=list)
    on_error: str = "fail"
    shapes: bool = True  # write the generated SHACL payload shapes into the store
    index: bool = False  # also write the retrieval index (STORE/index/), see retrieve.index.build_index
    model: str | None = None  # embedding model for the index (default all-MiniLM-L6-v2)
    chunks: bool = False  # also index raw metadata chunks, for --method chunkrag (slow)
    openapi: list[Path | str] = field(default_factory=list)  # OpenAPI 3 documents (services without a process layer)
    check: bool = False  # run shapes/graph.ttl on the new graph; fail before replacing the old one
    code_bindings: Path | None = None  # YAML: SERVICE/EntityType/Property -> value_list of a --codes CSV
    required: Path | None = None  # CSV file or folder: curated required-on-create fields (sources/required.py)
    flow: Path | None = None  # CSV file or folder: curated document flow (sources/document_flow.py)
    events: list[Path | str] = field(default_factory=list)  # recordings and event logs: mined flow (sources/events.py)


@dataclass
class BuildReport:
    files: list[str] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (file, message)
    warnings: list[str] = field(default_factory=list)
    dropped: list[list[str | int | None]] = field(default_factory=list)  # [file, tag, id, line]: left out, warned
    classes: dict[str, int] = field(default_factory=dict)
    services: dict[str, int] = field(default_factory=dict)  # name -> entity sets
    processes: dict[str, int] = field(default_factory=dict)  # "file#id" -> activities
    mapping_edges: int = 0
    mined: dict[str, int] = field(default_factory=dict)  # --events: cases, writes used and left out, edges
    triples: int = 0
    seconds: float = 0.0
    shapes_seconds: float = 0.0
    index: IndexReport | None = None  # when the index was built
    turtle: bytes = b""
    metadata: dict[str, str] = field(default_factory=dict)  # service name -> its kept source document

    def as_meta(self) -> JSONObject:
        return {
            "files": self.files,
            "skipped": [list(s) for s in self.skipped],
            "warnings": self.warnings,
            "dropped": self.dropped,
            "classes": self.classes,
            "services": self.services,
            "processes": self.processes,
            "mapping_edges": self.mapping_edges,
            "triples": self.triples,
            "metadata": self.metadata,
        }


class Builder:
    def __init__(self, options: BuildOptions, progress: ProgressCallback | None = None) -> None:
        if options.on_error not in ON_ERROR:
            raise ProcessKGError(f"--on-error must be one of {', '.join(ON_ERROR)}")
        if options.store is not None and options.store.path is None:
            raise ProcessKGError(
                f"{options.store}: a build on a SPARQL server is published by build_store(), not by Builder"
            )
        self.opt = options
        self.store = options.store.path if options.store is not None else None  # the local store written
        self.report = BuildReport()
        self.progress = progress or (lambda item: None)
        self.entity_sets: dict[str, dict[str, list[NamedNode]]] = {}  # service name -> {set name: [IRI]}
        self.activities: list[ActivityRef] = []
        self.documents: dict[str, Path] = {}  # service name -> source document, kept in the store

    def _failed(self, display: str, exc: ProcessKGError) -> None:
        if self.opt.on_error == "fail":
            raise exc
        self.report.skipped.append((display, str(exc)))

    def run(self) -> BuildReport:
        if self.store is None:
            return self._run()
        with StoreWriter(self.store, self._inputs()) as self.writer:  # the store's one writer
            return self._run()

    def _inputs(self) -> list[Path | str]:
        """Every input path: the store must not contain one of them (it would replace them)."""
        extra = [p for p in (self.opt.mapping, self.opt.required, self.opt.flow) if p]
        return [*self.opt.odata, *self.opt.bpmn, *self.opt.codes, *self.opt.openapi, *self.opt.events, *extra]

    def _run(self) -> BuildReport:
        start = time.perf_counter()
        with self._spools() as (self.data, self.shapes):
            self._lift()
            self._write(self.data.close(), self.shapes.close())
        self.report.seconds = time.perf_counter() - start
        return self.report

    def _lift(self) -> None:
        code_files = discover(self.opt.codes, CODES_SUFFIXES)
        codes = read_code_lists(code_files)
        self.report.files.extend(display for _path, display in code_files)
        self._read_bindings(codes)
        self.required_rows = read_required(Path(self.opt.required)) if self.opt.required else []
        self.report.files.extend(sorted({r.file for r in self.required_rows}))
        self.required_used: set[RequiredField] = set()
        self.flow_rows = read_flows(Path(self.opt.flow)) if self.opt.flow else []
        self.events = events.read_events(self.opt.events) if self.opt.events else None
        self.catalog = events.Catalog()
        self.uses: list[Use] = []
        self._odata(discover(self.opt.odata, ODATA_SUFFIXES), codes)
        self._unused_bindings()
        self._unused_required()
        self._codes_reached_nothing(codes)
        self._openapi()
        self._bpmn(discover(self.opt.bpmn, BPMN_SUFFIXES))
        if self.opt.mapping:
            self._mapping(Path(self.opt.mapping))
        self._document_flow()
        self._mined_flow()

    @contextmanager
    def _spools(self) -> Iterator[tuple[Spool, Spool]]:
        """The lifted triples and their payload shapes go to two N-Triples files as each batch is
        lifted, beside the store (the system's temporary folder without one); gone afterwards."""
        store = self.store
        if not store:
            with owned_tmp() as tmp:
                yield Spool(tmp / "data.nt"), Spool(tmp / "shapes.nt")
            return
        _remove_stale_spools(store)
        with tempfile.TemporaryDirectory(dir=store.parent, prefix=f".{store.name}{SPOOL}") as spool:
            (Path(spool) / SPOOL_MARKER).touch()
            yield Spool(Path(spool) / "data.nt"), Spool(Path(spool) / "shapes.nt")

    def _add(self, triples: list[Triple], shapes: bool = False) -> None:
        """One batch: its triples to the data spool and, for services, their payload shapes."""
        self.data.add(triples)
        if shapes and self.opt.shapes:
            start = time.perf_counter()
            self.shapes.add(batch_shapes(triples))
            self.report.shapes_seconds += time.perf_counter() - start

    # ---------------------------------------------------------------- OData
    def _odata(self, files: list[tuple[Path, str]], codes: CodeLists) -> None:
        docs = []
        for path, display in files:
            self.progress(display)
            try:
                docs.append(csdl.read_document(path, display, strict=self.opt.on_error != "warn"))
                self.report.warnings.extend(docs[-1].warnings)
            except ProcessKGError as exc:
                self._failed(display, exc)
        services = [d for d in docs if d.is_service]
        attached, unmatched = edm.attach_annotation_docs(services, [d for d in docs if not d.is_service])
        for doc in unmatched:
            self.report.warnings.append(f"{doc.file}: annotations-only document targets no service in this build")
        names = Counter(d.name for d in services)
        self.keyed_sets: list[flow.KeyedSet] = []
        for doc in services:
            self._service(doc, attached.get(doc.file, []), names[doc.name] > 1, codes)
        self._add(flow.lift(flow.infer(self.keyed_sets)))

    def _service(
        self, doc: csdl.ServiceDocument, annotation_docs: list[csdl.ServiceDocument], ambiguous: bool, codes: CodeLists
    ) -> None:
        try:
            service = edm.resolve(doc, annotation_docs)
        except ProcessKGError as exc:
            self._failed(doc.file, exc)
            return
        key = doc.file.rsplit(".", 1)[0] if ambiguous else doc.name
        lifter = ServiceLifter(service, key, codes_for(codes, doc.name))
        self._add(lifter.lift() + self._bind_codes(lifter, doc, codes) + self._require(lifter, doc), shapes=True)
        self.keyed_sets += flow.keyed_sets(doc, key, lifter.set_iris, lifter.inherited_prop_iri)
        self.catalog.add(doc, key, lifter.set_iris)
        self.codes_reached += lifter.codelist_codes
        self.report.warnings.extend(lifter.warnings)
        self.report.files.extend([doc.file] + [a.file for a in annotation_docs])
        sets = self.entity_sets.setdefault(doc.name, {})
        for name, iri in lifter.set_iris.items():
            sets.setdefault(name, []).append(iri)
        self.report.services[key] = len(lifter.set_iris)
        if not ambiguous:
            self.documents[doc.name] = doc.path
            self.report.metadata[doc.name] = f"{METADATA}/{doc.name}.xml"

    def _read_bindings(self, codes: CodeLists) -> None:
        """Read the binding file (:meth:`_bindings_file`); a binding naming a value list that no --codes CSV
        has is an error."""
        self.bindings, self.bindings_used, self.codes_reached = [], set[int](), 0
        found = self._bindings_file()
        self.bindings_name = found[1] if found else ""
        if found is None:
            return
        path, name = found
        self.bindings = read_bindings(path, name)
        known = {vl for by_vl in codes.values() for vl in by_vl}
        for b in self.bindings:
            if b.value_list not in known:
                raise CodeListError(f"value list {b.value_list!r} is in no --codes CSV", name, b.line)
        self.report.files.append(name)

    def _bindings_file(self) -> tuple[Path, str] | None:
        """``--code-bindings``, or else the ``bindings.yaml`` of the ``--codes`` folder that has one (as
        ``data/sap/codes`` does), with its display name; None when there is neither."""
        if self.opt.code_bindings:
            return Path(self.opt.code_bindings), Path(self.opt.code_bindings).name
        found = [Path(r) / BINDINGS_FILE for r in self.opt.codes if (Path(r) / BINDINGS_FILE).is_file()]
        if len(found) > 1:
            names = ", ".join(str(f) for f in found)
            raise ProcessKGError(
                f"several --codes folders hold a {BINDINGS_FILE} ({names}); name one with --code-bindings"
            )
        return (found[0], f"{found[0].parent.name}/{BINDINGS_FILE}") if found else None

    def _codes_reached_nothing(self, codes: CodeLists) -> None:
        """Warn when code lists were read but not one of their codes reached a property of the build."""
        if any(codes.values()) and self.opt.odata and not self.codes_reached:
            self.report.warnings.append(
                "the --codes lists reached no property: no value help of the metadata names their value "
                f"lists and no binding file binds them (--code-bindings, or a {BINDINGS_FILE} in the codes folder)"
            )

    def _bind_codes(self, lifter: ServiceLifter, doc: csdl.ServiceDocument, codes: CodeLists) -> list[Triple]:
        rows, bound = codes_for(codes, doc.name), []
        for binding, type_qname, prop in bound_properties(self.bindings, doc.name, doc.types.values()):
            if binding.value_list in rows:
                bound.extend(lifter.bind_codes(type_qname, prop, rows[binding.value_list], binding.line))
                self.bindings_used.add(binding.line)
        return bound

    def _require(self, lifter: ServiceLifter, doc: csdl.ServiceDocument) -> list[Triple]:
        """The curated required-on-create fields (``--required``) of this service's entity sets."""
        found: list[Triple] = []
        for row in (r for r in self.required_rows if r.service == doc.name):
            triples = lifter.require(row.entity_set, row.prop, row.source, row.note, row.file, row.line)
            if triples:
                self.required_used.add(row)
                found.extend(triples)
        return found

    def _unused_required(self) -> None:
        """A curated row whose service, entity set or property is not in this build is a warning,
        as a binding that matches nothing is."""
        self.report.warnings.extend(
            f"{r.file}:{r.line}: required field {r.key} names no entity set or property of this build"
            for r in self.required_rows
            if r not in self.required_used
        )

    def _unused_bindings(self) -> None:
        name = self.bindings_name
        self.report.warnings.extend(
            f"{name}:{b.line}: binding {b.pattern!r} matches no property in this build"
            for b in self.bindings
            if b.line not in self.bindings_used
        )

    def _openapi(self) -> None:
        if not self.opt.openapi:
            return

        result = openapi.lift_all(self.opt.openapi, self._failed, self.progress)
        self._add(result.triples)  # OpenAPI operations get no payload shapes (validation reads OData)
        self.report.files.extend(result.files)
        self.report.services.update(result.services)
        self.report.warnings.extend(result.warnings)

    # ---------------------------------------------------------------- BPMN
    def _bpmn(self, files: list[tuple[Path, str]]) -> None:
        for path, display in files:
            self.progress(display)
            try:
                defs = bpmn_xml.read_definitions(path, display, strict=self.opt.on_error != "warn")
                triples = DefinitionsLifter(defs, display).lift()  # may refuse a quadratic bpmn:next
            except ProcessKGError as exc:
                self._failed(display, exc)
                continue
            self.report.warnings.extend(defs.warnings)
            self.report.dropped.extend([display, tag, element_id, line] for tag, element_id, line in defs.dropped)
            self._add(triples)
            self.report.files.append(display)
            self._index_activities(defs, display)

    def _index_activities(self, defs: bpmn_xml.Definitions, slug: str) -> None:
        for node in defs.nodes.values():
            if node.category == "activity":
                self.activities.append(ActivityRef(slug, node.process, node.id, node.name, element_iri(slug, node.id)))
        for pid in defs.processes:
            count = sum(1 for n in defs.nodes.values() if n.process == pid and n.category == "activity")
            self.report.processes[f"{slug}#{pid}"] = count

    # ---------------------------------------------------------------- mapping
    def _mapping(self, path: Path) -> None:
        display = path.name
        entries = read_mapping(path, display)
        good = []
        for entry in entries:
            try:
                acts, _targets = resolve_entry(entry, self.activities, self.entity_sets, display)
            except ProcessKGError as exc:
                self._failed(f"{display}:{entry.line}", exc)
                continue
            good.append(entry)
            self.uses += [Use(a, entry.mode, entry.service, entry.entity_set) for a in acts]
        self._add(lift_mapping(good, self.activities, self.entity_sets, display))
        self.report.mapping_edges = len(good)
        self.report.files.append(display)

    def _document_flow(self) -> None:
        """The curated document flow (``--flow``), linked to the entity sets and the mapped process steps."""
        if not self.opt.flow:
            return
        triples, warnings = lift_document_flow(self.flow_rows, self.keyed_sets, self.uses)
        self._add(triples)
        self.report.warnings.extend(warnings)
        self.report.files.extend(sorted({r.file for r in self.flow_rows}))

    def _mined_flow(self) -> None:
        """The flow mined from recordings and event logs (``--events``): directly-follows of their writes."""
        if self.events is None:
            return
        edges, stats = events.mine(self.events, self.catalog)
        self._add(events.lift(edges))
        self.report.files.extend(self.events.files)
        self.report.mined = {**stats, "edges": len(edges)}

    # ---------------------------------------------------------------- output
    def _check(self, tmp: Path) -> None:
        if self.opt.check:
            violations = check_graph(Store.read_only(str(tmp / DB)))  # the version being written
            if violations:
                raise GraphCheckError(violations)

    def _index(self, tmp: Path) -> None:
        if not self.opt.index:
            return

        store = self.store or tmp
        cache = store.parent / f".{store.name}.embeddings"  # shared by the store's versions
        odata = [Path(p) for p in self.opt.odata] if self.opt.chunks else []
        self.report.index = build_index(StoreLocation(path=tmp), model=self.opt.model, odata=odata, cache_dir=cache)

    def _keep_documents(self, tmp: Path) -> None:
        """Copy each service's source document into the version, byte for byte (``kg serve``'s ``$metadata``)."""
        for name, source in sorted(self.documents.items()):
            target = tmp / self.report.metadata[name]
            target.parent.mkdir(exist_ok=True)
            shutil.copyfile(source, target)

    def _write(self, data: Path, shapes: Path) -> None:
        """The store from the spools (the Turtle, when asked for, sorted from the data spool)."""
        if self.opt.out or self.store is None:
            self.report.turtle = to_turtle(canonical_lines(data.read_bytes()))
        if self.store is None:
            self._counts(_memory_store(data))
            self._write_turtle()
            return
        with self.writer.version() as tmp:  # a failure before its end leaves the old store
            write_store(tmp, data, self._meta, shapes if self.opt.shapes else None)
            self._keep_documents(tmp)
            self._check(tmp)
            self._index(tmp)
            self._write_turtle()

    def _write_turtle(self) -> None:
        if self.opt.out:
            write_atomic(Path(self.opt.out), self.report.turtle)

    def _meta(self, store: Store) -> JSONObject:
        self._counts(store)
        return self.report.as_meta()

    def _counts(self, store: Store) -> None:
        """Triples and instances per class (by local name) of the data graph, counted by the store."""
        self.report.triples = int(records(store, "build-triples")[0]["triples"])
        counts = Counter[str]()
        for r in records(store, "build-classes"):
            counts[str(r["class"]).rsplit("#", 1)[-1]] += int(r["instances"])
        self.report.classes = dict(sorted(counts.items()))


def _remove_stale_spools(store: Path) -> None:
    """The spools of earlier builds of ``store`` that were killed: the caller holds the store's one
    writer lock, so no other build is using them; only folders carrying the marker are removed."""
    for folder in store.parent.glob(f".{glob_escape(store.name)}{SPOOL}*"):
        if (folder / SPOOL_MARKER).is_file():
            shutil.rmtree(folder, ignore_errors=True)


@contextmanager
def owned_tmp() -> Iterator[Path]:
    """A folder of this build in the system's temporary folder, removed when the build ends.

    The build holds a lock on a file in it for as long as it runs; a build that was killed
    (SIGKILL, a crash) leaves the folder with its lock free, and the next build removes it.
    """
    _remove_dead_tmps(Path(tempfile.gettempdir()))
    folder = Path(tempfile.mkdtemp(prefix=f"{TMP}{os.getpid()}-"))
    fd = os.open(folder / f"{TMP_LOCK}.new", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        os.rename(folder / f"{TMP_LOCK}.new", folder / TMP_LOCK)  # seen by others only once it is locked
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)
        os.close(fd)


def _remove_dead_tmps(root: Path) -> None:
    """Folders of killed builds in ``root``: only those carrying the lock file, and only while
    their lock is free (its owner is gone); a running build holds it, so its folder stays."""
    for folder in root.glob(f"{TMP}*"):
        try:
            mine = stat.S_ISDIR(os.lstat(folder).st_mode) and os.lstat(folder).st_uid == os.getuid()
            fd = os.open(folder / TMP_LOCK, os.O_RDONLY) if mine else -1
        except OSError:  # no lock file (not a build's, or just being made), or gone meanwhile: leave it
            continue
        if fd < 0:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            shutil.rmtree(folder, ignore_errors=True)
        except BlockingIOError:
            pass
        finally:
            os.close(fd)


def _memory_store(data: Path) -> Store:
    store = Store()
    store.bulk_load(path=str(data), format=RdfFormat.N_TRIPLES)
    return store


def build_store(options: BuildOptions, progress: ProgressCallback | None = None) -> BuildReport:
    """Build the graph described by ``options``; the library entry point of ``kg build``."""
    if options.store is not None and options.store.url is not None:
        return _build_remote(options.store.url, options, progress)
    return Builder(options, progress).run()


def _build_remote(url: str, options: BuildOptions, progress: ProgressCallback | None) -> BuildReport:
    """Build into a local store in a temporary folder, then load it onto the SPARQL server at
    ``url`` and switch its pointer (graph/remote.py); the server must answer before the build starts."""
    expected = remote.start(url)
    with owned_tmp() as tmp:
        report = Builder(replace(options, store=StoreLocation(path=tmp / "store")), progress).run()
        version = version_dir(tmp / "store")
        remote.publish(url, expected, version, version / DB)
    return report


__all__ = ["BuildOptions", "BuildReport", "build_store"]
