"""A store is named once (:class:`StoreLocation`) and opened once, into a :class:`StoreHandle` pinned to
one build: its graph, build.json and index all come from that build, whatever builds finish meanwhile."""

from __future__ import annotations

import gc
import threading
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from processkg.build.pipeline import BuildOptions, build_store
from processkg.cli import main
from processkg.cli.options import store_location_option, store_option
from processkg.errors import RemoteStoreError
from processkg.graph.handle import StoreHandle, StoreLocation, open_store
from processkg.graph.store import records
from processkg.retrieve.index import load_index

ODATA = Path(__file__).resolve().parent / "data" / "odata"
SOURCES = (ODATA / "HANDMADE_PURCHASING.xml", ODATA / "HANDMADE_SALES_SRV")  # one service each
BUILDS = 5  # builds the writer thread runs while readers open handles


def rebuild(store: Path, number: int) -> None:
    """Build ``store`` (with its index) from the source of build ``number``: the two alternate."""
    build_store(BuildOptions(odata=[SOURCES[number % 2]], store=StoreLocation.parse(store), index=True))


def services(handle: StoreHandle) -> dict[str, set[str]]:
    """The services the pinned build's graph, build.json and index each name."""
    return {
        "graph": {str(r["service"]) for r in records(handle.graph, "stats-services")},
        "build.json": set(handle.meta["services"]),
        "index": {str(item["service"]) for item in load_index(handle).items["set"]},
    }


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    store = tmp_path_factory.mktemp("handle") / "store"
    rebuild(store, 0)
    return store


def test_a_reader_opening_during_builds_reads_graph_meta_and_index_of_one_build(store: Path) -> None:
    failures: list[BaseException] = []

    def writer() -> None:
        try:
            for number in range(1, BUILDS + 1):
                rebuild(store, number)
        except BaseException as exc:  # reported by the main thread
            failures.append(exc)

    thread = threading.Thread(target=writer)
    # Each read ends with a full collection (below). gc.freeze() first moves every object that exists
    # now (the embedding model's, torch's) out of the collector's reach, so a collection scans only
    # what the reads and the writer made since: it frees the same query results on this thread, at a
    # twentieth of the CPU (a full collection over torch's objects took a quarter of a second), and the
    # reader opens many more handles per build, so it meets more build switches than before. Loading
    # the embedding model froze the objects of its time the same way (retrieve/index.py); they stay
    # frozen afterwards, as they do there.
    gc.freeze()
    thread.start()
    seen: list[tuple[str, frozenset[str]]] = []
    try:
        while thread.is_alive():
            with StoreHandle.open(store) as handle:
                found = services(handle)
                gc.collect()  # pyoxigraph's query results must be freed on this thread, not the writer's
                assert found["graph"] == found["build.json"] == found["index"], (handle.build_id, found)
                seen.append((handle.build_id, frozenset(found["graph"])))
    finally:
        thread.join()
    assert not failures, failures
    builds = {build_id for build_id, _names in seen}
    assert len(builds) > 2 and len({names for _id, names in seen}) == 2, seen  # readers met many builds


def test_a_handle_keeps_its_build_after_newer_builds_replaced_it(store: Path) -> None:
    with StoreHandle.open(store) as handle:
        before = services(handle)
        rebuild(store, 1)
        rebuild(store, 0)
        rebuild(store, 1)  # each build removes the versions nobody reads
        assert handle.version.is_dir() and (store / "current").resolve() != handle.version
        assert services(handle) == before
    rebuild(store, 0)  # closed: the next build removes it
    assert not handle.version.exists()


def test_a_store_url_with_its_parameters_is_parsed_once_and_round_trips() -> None:
    url = "http://127.0.0.1:8890/sparql?update=/sparql-auth&store=/sparql-graph-crud&timeout=5000"
    location = StoreLocation.parse(url)
    assert location.url == url and location.path is None and str(location) == url
    assert StoreLocation.parse(str(location)) == location
    assert StoreLocation.parse(Path(url)) == location  # a Path folds the // of the scheme


def test_a_store_url_with_an_unknown_parameter_is_refused_when_parsed() -> None:
    with pytest.raises(RemoteStoreError, match=r"takes only update=, store=, timeout= once each"):
        StoreLocation.parse("http://127.0.0.1:7878/sparql?updates=/u")


def test_a_local_store_is_a_path(tmp_path: Path) -> None:
    location = StoreLocation.parse(tmp_path / "store")
    assert location.path == tmp_path / "store" and location.url is None and str(location) == str(tmp_path / "store")


def test_kg_refuses_a_bad_store_url_when_it_parses_the_option() -> None:
    result = CliRunner().invoke(main, ["map", "tune", "--store", "http://127.0.0.1:9/sparql?bogus=1", "--gold", "g"])
    assert result.exit_code == 2
    assert result.output.startswith("error: http://127.0.0.1:9/sparql?bogus=1: the store URL takes only")
    assert result.output.count("\n") == 1


def test_open_store_pins_one_handle_per_build_however_often_it_is_called(tmp_path: Path) -> None:
    """open_store keeps its handle until the process ends; a second call for the same build reuses it
    (before, every call held another .readers lock and another read-only store for good)."""
    rebuild(tmp_path / "store", 0)
    first = open_store(tmp_path / "store")
    assert all(open_store(tmp_path / "store") is first for _ in range(3))
    rebuild(tmp_path / "store", 1)
    assert open_store(tmp_path / "store") is not first  # a newer build is a new handle


def test_the_store_option_gives_a_reading_command_one_handle_pinned_to_one_build(tmp_path: Path) -> None:
    """``--store`` of a reading command is parsed and opened once by its click type: the command gets
    a StoreHandle, which keeps its build while newer builds finish, and is released with the command."""
    path = tmp_path / "store"
    rebuild(path, 0)
    got: list[tuple[object, dict[str, set[str]], dict[str, set[str]]]] = []

    @click.command()
    @store_option()
    def probe(store: StoreHandle) -> None:
        before = services(store)
        rebuild(path, 1)
        rebuild(path, 0)  # two builds finish while the command reads
        got.append((store, before, services(store)))

    result = CliRunner().invoke(probe, ["--store", str(path)])
    assert result.exit_code == 0, result.output
    handle, before, after = got[0]
    assert isinstance(handle, StoreHandle) and handle.location == StoreLocation.parse(path)
    assert before == after == {name: {"HANDMADE_PURCHASING"} for name in after}, after
    assert handle.version.is_dir() and (path / "current").resolve() != handle.version
    rebuild(path, 1)  # the command has ended and released its build: this build removes it
    assert not handle.version.exists()


def test_a_writing_command_gets_the_location_not_a_handle(tmp_path: Path) -> None:
    got: list[object] = []

    @click.command()
    @store_location_option("where to write")
    def probe(store: StoreLocation) -> None:
        got.append(store)

    assert CliRunner().invoke(probe, ["--store", str(tmp_path / "new")]).exit_code == 0  # nothing there yet
    assert got == [StoreLocation(path=tmp_path / "new")]


@pytest.mark.parametrize(
    "args",
    [
        ["stats"],
        ["query", "stats-services"],
        ["audit"],
        ["retrieve", "sales orders"],
        ["validate", "calls.jsonl"],
        ["serve", "--port", "0"],
        ["map", "tune", "--gold", "gold.yaml"],
    ],
    ids=lambda args: args[0] if args[0] != "map" else "map tune",
)
def test_a_missing_or_damaged_store_is_one_line_exit_2_before_the_command_runs(tmp_path: Path, args) -> None:
    missing = tmp_path / "nothing"
    result = CliRunner().invoke(main, [*args, "--store", str(missing)])
    assert result.exit_code == 2, result.output
    assert result.output == f"error: {missing}: no processkg store here (run `kg build --store {missing}` first)\n"
    damaged = tmp_path / "damaged"
    (damaged / "v-1").mkdir(parents=True)
    (damaged / "current").symlink_to("v-9")
    result = CliRunner().invoke(main, [*args, "--store", str(damaged)])
    assert result.exit_code == 2, result.output
    assert result.output.count("\n") == 1 and result.output.startswith(f"error: {damaged}: the store is damaged")
