"""The store is never destroyed, half-replaced or unreadable: kg build replaces only a store it
wrote, publishes a build in one rename under a lock, and a damaged store is one clear line.

Builds that must be killed or raced run as subprocesses (``python -c`` calling the library's
``build``, which ``kg build`` wraps); everything else runs in process on the small demo inputs.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from pyoxigraph import DefaultGraph

from conftest import DEMO, INVALID, demo_options
from processkg.build.pipeline import BuildOptions, build_store
from processkg.cli import main
from processkg.errors import OutputRefusedError, StoreBusyError, StoreRefusedError
from processkg.graph import stats as stats_mod
from processkg.graph import store as store_mod
from processkg.graph.handle import StoreLocation, open_store
from processkg.graph.store import (
    SHAPES_GRAPH,
    canonical_ntriples,
    read_meta,
    write_atomic,
)

OLD = dict(odata=[DEMO / "odata"])  # a smaller graph than the full demo: the old build of the kill tests
NEW = demo_options()

_SCRIPT = """
import sys
from pathlib import Path
from processkg.build.pipeline import BuildOptions, build_store
from processkg.errors import ProcessKGError
from processkg.graph.handle import StoreLocation
try:
    build_store(BuildOptions(store=StoreLocation.parse(Path(sys.argv[1])), index=False, **{opts}))
except ProcessKGError as exc:
    print("error:", exc, file=sys.stderr)
    sys.exit(2)
"""


def _spawn(store: Path, options: dict) -> subprocess.Popen:
    """A build as its own process (so it can be killed at any moment)."""
    literal = "{" + ", ".join(f"{k!r}: {_literal(v)}" for k, v in options.items()) + "}"
    return subprocess.Popen(
        [sys.executable, "-c", _SCRIPT.format(opts=literal), str(store)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=os.environ | {"HF_HUB_OFFLINE": "1"},
    )


def _literal(value) -> str:
    if isinstance(value, list):
        return "[" + ", ".join(f"Path({str(v)!r})" for v in value) + "]"
    return f"Path({str(value)!r})"


def _stats(store: Path) -> dict:
    return stats_mod.store_stats(open_store(store))


def _stats_cli(store: Path) -> dict:
    """The stats as ``kg stats`` prints them, from its own process (which holds no version here)."""
    result = subprocess.run(
        [str(Path(sys.executable).parent / "kg"), "stats", "--store", str(store), "--format", "json"],
        capture_output=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr.decode()
    return json.loads(result.stdout)


def _leftovers(folder: Path) -> list[str]:
    """Names that are not part of a finished store or its inputs: temp dirs, unreferenced versions."""
    found = [p.name for p in folder.iterdir() if any(mark in p.name for mark in (".tmp-", ".old-", ".build-"))]
    store = folder / "store"
    current = os.readlink(store / "current")
    found += [p.name for p in store.iterdir() if p.name.startswith(("v-", ".current", ".legacy")) and p.name != current]
    return found


@pytest.fixture(scope="module")
def references(tmp_path_factory) -> dict:
    """The stats of the old and of the new build, each built once in process."""
    root = tmp_path_factory.mktemp("refs")
    build_store(BuildOptions(store=StoreLocation.parse(root / "old"), **OLD))
    build_store(BuildOptions(store=StoreLocation.parse(root / "new"), **NEW))
    return {"old": _stats(root / "old"), "new": _stats(root / "new"), "root": root}


# ---------------------------------------------------------------- what kg build may replace


def test_build_refuses_a_folder_of_other_files_and_a_plain_file(tmp_path):
    folder = tmp_path / "photos"
    folder.mkdir()
    (folder / "holiday.jpg").write_bytes(b"not a store")
    result = CliRunner().invoke(main, ["build", "--odata", str(DEMO / "odata"), "--store", str(folder), "--no-index"])
    assert result.exit_code == 2, result.output
    assert len(result.output.strip().splitlines()) == 1
    assert "is a folder that is not a processkg store" in result.output
    assert (folder / "holiday.jpg").read_bytes() == b"not a store" and sorted(os.listdir(folder)) == ["holiday.jpg"]
    plain = tmp_path / "notes.txt"
    plain.write_text("keep me")
    with pytest.raises(StoreRefusedError, match=r"notes\.txt: exists and is not a directory"):
        build_store(BuildOptions(store=StoreLocation.parse(plain), **OLD))
    assert plain.read_text() == "keep me"


def test_build_refuses_a_store_holding_the_current_directory_or_the_inputs(tmp_path, monkeypatch):
    inputs = tmp_path / "project" / "odata"
    shutil.copytree(DEMO / "odata", inputs)
    monkeypatch.chdir(tmp_path / "project")
    with pytest.raises(StoreRefusedError, match=r"--store \.: it contains the current directory"):
        build_store(BuildOptions(store=StoreLocation.parse(Path(".")), odata=[inputs]))
    with pytest.raises(StoreRefusedError, match=r"--store \.\.: it contains the current directory"):
        build_store(BuildOptions(store=StoreLocation.parse(Path("..")), odata=[inputs]))
    monkeypatch.chdir(tmp_path)
    with pytest.raises(StoreRefusedError, match=r"--store project: it contains the input .*odata"):
        build_store(BuildOptions(store=StoreLocation.parse(Path("project")), odata=[inputs]))
    assert sorted(os.listdir(tmp_path)) == ["project"]
    assert sorted(os.listdir(tmp_path / "project")) == ["odata"]


def test_build_refuses_a_store_inside_an_input_folder(tmp_path):
    """Read back as input, a store inside an input folder doubled the services at the next build
    (its versions keep each service's source document): refused, one line, exit 2, nothing written."""
    inputs = tmp_path / "odata"
    shutil.copytree(DEMO / "odata", inputs)
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    for store in (inputs / "sub", inputs / "deeper" / "store"):
        for _attempt in range(2):
            result = CliRunner().invoke(main, ["build", "--odata", str(inputs), "--store", str(store), "--no-index"])
            assert result.exit_code == 2, result.output
            assert result.output == (
                f"error: --store {store}: it is inside the input folder {inputs}, so the next build would "
                f"read the store's files as input; choose a store path outside it\n"
            )
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before
    with pytest.raises(StoreRefusedError, match="inside the input folder"):
        build_store(
            BuildOptions(
                store=StoreLocation.parse(tmp_path / "b" / "s"),
                odata=[inputs / "DEMO_SALES_ORDER_SRV.edmx"],
                bpmn=[tmp_path],
            )
        )


def test_a_store_of_the_previous_layout_is_replaced_and_an_empty_folder_accepted(tmp_path, references):
    legacy = tmp_path / "legacy"
    version = references["root"] / "old" / "current"
    shutil.copytree(version / "oxigraph", legacy / "oxigraph")
    shutil.copy(version / "build.json", legacy / "build.json")
    assert _stats(legacy) == references["old"]  # the previous layout is still readable
    build_store(BuildOptions(store=StoreLocation.parse(legacy), **NEW))
    assert _stats(legacy) == references["new"]
    assert not (legacy / "oxigraph").resolve().samefile(legacy)
    assert sorted(p.name for p in legacy.iterdir() if not p.name.startswith("v-")) == [
        ".lock",
        ".processkg-store",
        "build.json",
        "current",
        "index",
        "oxigraph",
    ]
    empty = tmp_path / "empty"
    empty.mkdir()
    build_store(BuildOptions(store=StoreLocation.parse(empty), **OLD))
    assert _stats(empty) == references["old"]


def test_a_failed_first_build_leaves_no_store_behind(tmp_path):
    with pytest.raises(Exception, match=r"unresolved|not declared"):
        build_store(
            BuildOptions(store=StoreLocation.parse(tmp_path / "store"), odata=[INVALID / "unresolved-association.edmx"])
        )
    assert os.listdir(tmp_path) == []


def test_a_build_leaves_only_its_store_beside_it(tmp_path):
    """The lifted triples and shapes are spooled to a hidden folder beside the store while it builds."""
    build_store(BuildOptions(store=StoreLocation.parse(tmp_path / "store"), **demo_options()))
    assert os.listdir(tmp_path) == ["store"]


def test_a_build_removes_the_spools_of_a_killed_build_of_its_store_and_nothing_else(tmp_path):
    """A killed build leaves its spool folder (.store.build-XXXX, marked) beside the store; the next
    build of that store, holding its writer lock, removes it; an unmarked look-alike is kept."""
    build_store(BuildOptions(store=StoreLocation.parse(tmp_path / "store"), **demo_options()))
    stale, alike = tmp_path / ".store.build-dead1234", tmp_path / ".store.build-mine"
    stale.mkdir()
    (stale / ".processkg-spool").touch()
    (stale / "data.nt").write_bytes(b"<a:b> <a:c> <a:d> .\n")
    alike.mkdir()
    (alike / "notes.txt").write_text("not a spool")
    build_store(BuildOptions(store=StoreLocation.parse(tmp_path / "store"), **demo_options()))
    assert sorted(os.listdir(tmp_path)) == [".store.build-mine", "store"]
    assert (alike / "notes.txt").read_text() == "not a spool"


def test_a_refused_out_file_leaves_the_old_store(tmp_path):
    """--out is written before the new build becomes current: refused, the store stays as it was."""
    store = tmp_path / "store"
    build_store(BuildOptions(store=StoreLocation.parse(store), **demo_options()))
    before = read_meta(store)
    (tmp_path / "folder.ttl").mkdir()
    with pytest.raises(OutputRefusedError, match=r"folder\.ttl: exists and is not a regular file"):
        build_store(BuildOptions(store=StoreLocation.parse(store), odata=[DEMO / "odata"], out=tmp_path / "folder.ttl"))
    assert read_meta(store) == before and before["mapping_edges"] > 0


def _graphs(store: Path) -> dict[str, bytes]:
    graph = open_store(store)
    return {
        name: canonical_ntriples(q.triple for q in graph.quads_for_pattern(None, None, None, g))
        for name, g in (("data", DefaultGraph()), ("shapes", SHAPES_GRAPH))  # the ontology has blank nodes
    }


def test_a_store_loaded_in_parts_holds_the_graph_of_one_load(demo_built, tmp_path, monkeypatch):
    """A large build is bulk-loaded LOAD_LINES N-Triples lines at a time (memory); 500 makes the demo
    load in parts: the same data and shapes graphs and the same counts in build.json."""
    monkeypatch.setattr(store_mod, "LOAD_LINES", 500)
    report = build_store(BuildOptions(store=StoreLocation.parse(tmp_path / "store"), **demo_options()))
    assert report.triples > 3 * 500
    assert _graphs(tmp_path / "store") == _graphs(demo_built.store_dir)
    assert read_meta(tmp_path / "store")["triples"] == read_meta(demo_built.store_dir)["triples"] == report.triples
    assert report.classes == demo_built.report.classes


# ---------------------------------------------------------------- damage


def _largest_sst(db: Path) -> Path:
    return max(db.glob("*.sst"), key=lambda p: p.stat().st_size)


DAMAGE = {
    "CURRENT removed": (lambda db: (db / "CURRENT").unlink(), r"oxigraph/CURRENT is missing"),
    "sst deleted": (lambda db: _largest_sst(db).unlink(), r"oxigraph/\d+\.sst is missing"),
    "sst truncated": (
        lambda db: os.truncate(_largest_sst(db), 100),
        r"oxigraph/\d+\.sst is truncated: 100 of \d+ bytes",
    ),
    "MANIFEST truncated": (
        lambda db: [os.truncate(m, 10) for m in db.glob("MANIFEST-*")],
        r"oxigraph/MANIFEST-\d+ is corrupt",
    ),
}


@pytest.mark.parametrize("damage", list(DAMAGE))
def test_a_damaged_store_is_one_line_naming_the_file_and_the_rebuild(damage, tmp_path, references):
    store = tmp_path / "store"
    shutil.copytree(references["root"] / "old", store, symlinks=True)
    harm, what = DAMAGE[damage]
    harm(store / "current" / "oxigraph")
    query = tmp_path / "q.rq"
    query.write_text("SELECT * WHERE { ?s ?p ?o } LIMIT 1")
    calls = tmp_path / "calls.jsonl"
    calls.write_text(json.dumps({"method": "GET", "url": "/sap/opu/odata/sap/X/Y"}) + "\n")
    commands = {
        "stats": ["stats", "--store", store],
        "query": ["query", "--store", store, query],
        "validate": ["validate", "--store", store, calls],
        "retrieve": ["retrieve", "--store", store, "orders"],
    }
    for name, args in commands.items():
        result = CliRunner().invoke(main, [str(a) for a in args])
        lines = result.output.strip().splitlines()
        assert result.exit_code == 2 and len(lines) == 1, (name, result.output)
        assert lines[0].startswith(f"error: {store}: the store is damaged ("), (name, lines[0])
        assert f"rebuild it with `kg build ... --store {store}`" in lines[0], (name, lines[0])
        assert __import__("re").search(what, lines[0]), (name, lines[0])


# ---------------------------------------------------------------- kill, race, read


def test_a_build_killed_at_any_moment_leaves_the_old_or_the_new_store(tmp_path, references):
    store = tmp_path / "store"
    shutil.copytree(references["root"] / "old", store, symlinks=True)
    start = time.monotonic()
    full = _spawn(store, NEW)
    assert full.wait(timeout=120) == 0, full.stderr.read()
    seconds = time.monotonic() - start
    shutil.rmtree(store)
    shutil.copytree(references["root"] / "old", store, symlinks=True)
    seen = []
    for delay in sorted(random.Random(7).uniform(0.2, seconds) for _ in range(5)):
        proc = _spawn(store, NEW if len(seen) % 2 == 0 else OLD)
        time.sleep(delay)
        proc.kill()
        proc.wait(timeout=30)
        stats = _stats_cli(store)
        assert stats in (references["old"], references["new"]), f"killed after {delay:.2f} s"
        seen.append(stats == references["new"])
    again = _spawn(store, NEW)
    assert again.wait(timeout=120) == 0, again.stderr.read()
    assert _leftovers(tmp_path) == []
    assert _stats(store) == references["new"] and read_meta(store)["triples"] > 0


def test_two_concurrent_builds_one_wins_the_other_is_refused(tmp_path, references):
    """While one build holds the store's lock, another build process is refused at once and the
    store is untouched; once the lock is free, the next build wins. The holder is this test (a
    real flock on STORE/.lock, as a running build takes it), so the overlap does not depend on
    how fast a build happens to be."""
    import fcntl

    store = tmp_path / "store"
    shutil.copytree(references["root"] / "old", store, symlinks=True)
    fd = os.open(store / ".lock", os.O_RDWR)
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        second = _spawn(store, NEW)
        assert second.wait(timeout=120) == 2
        assert f"another kg build is writing {store}" in second.stderr.read().decode()
        assert _stats(store) == references["old"], "the refused build changed nothing"
        with pytest.raises(StoreBusyError, match="another kg build is writing"):
            build_store(BuildOptions(store=StoreLocation.parse(store), **OLD))
    finally:
        os.close(fd)
    first = _spawn(store, NEW)
    assert first.wait(timeout=120) == 0, first.stderr.read()
    assert _stats(store) == references["new"]


def _locked(store: Path) -> bool:
    import fcntl

    try:
        fd = os.open(store / ".lock", os.O_RDWR)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return False
    except BlockingIOError:
        return True
    finally:
        os.close(fd)


def test_readers_keep_working_while_builds_replace_the_store(tmp_path, references):
    store = tmp_path / "store"
    shutil.copytree(references["root"] / "old", store, symlinks=True)
    proc = _spawn(store, NEW)
    answers = 0
    while proc.poll() is None:
        assert _stats_cli(store) in (references["old"], references["new"])
        answers += 1
    assert proc.returncode == 0 and answers >= 1
    assert _stats(store) == references["new"]


def test_stale_leftovers_of_the_previous_layout_are_removed_and_a_lost_store_restored(tmp_path, references):
    dead = _dead_pid()
    store = tmp_path / "store"
    lost = tmp_path / f".store.old-{dead}"
    shutil.copytree(references["root"] / "old" / "current" / "oxigraph", lost / "oxigraph")
    shutil.copy(references["root"] / "old" / "current" / "build.json", lost / "build.json")
    (tmp_path / f".store.tmp-{dead}").mkdir()
    build_store(BuildOptions(store=StoreLocation.parse(store), **NEW))
    assert sorted(os.listdir(tmp_path)) == ["store"]
    assert _stats(store) == references["new"]


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


# ---------------------------------------------------------------- write_atomic (--out)


def test_write_atomic_follows_a_symlink_and_refuses_what_is_not_a_file(tmp_path):
    real = tmp_path / "real.ttl"
    real.write_bytes(b"old")
    os.chmod(real, 0o640)
    link = tmp_path / "link.ttl"
    link.symlink_to(real)
    write_atomic(link, b"new")
    assert link.is_symlink() and real.read_bytes() == b"new"
    assert oct(real.stat().st_mode & 0o777) == "0o640"
    folder = tmp_path / "folder.ttl"
    folder.mkdir()
    with pytest.raises(OutputRefusedError, match=r"folder\.ttl: exists and is not a regular file"):
        write_atomic(folder, b"x")
    with pytest.raises(OutputRefusedError, match=r"/dev/null: exists and is not a regular file"):
        write_atomic(Path("/dev/null"), b"x")
    assert sorted(os.listdir(tmp_path)) == ["folder.ttl", "link.ttl", "real.ttl"]
