"""Leave processes out (``kg eval processes``): a fold's store is built without its held-out processes,
so that neither the graph, the mapping edges, the texts nor the index know them (issue 23)."""

from __future__ import annotations

import json
import re

import pytest
from click.testing import CliRunner

from conftest import DEMO, index_store, rows
from processkg.build.pipeline import BuildOptions, build_store
from processkg.cli import main
from processkg.errors import ProcessKGError
from processkg.evaluate.processes import processes_in, without_processes
from processkg.graph.handle import StoreHandle, StoreLocation, open_store
from processkg.retrieve.index import load_index
from processkg.sources.mapping import read_mapping

HELD_OUT = "Process_CustomerReturns"
ACTIVITIES = """SELECT ?a ?name WHERE {
  ?p a bpmn:Process ; bpmn:elementId "%s" . ?a a bpmn:Activity ; bpmn:process ?p ; kg:name ?name }"""
PROCESS_IDS = "SELECT ?id WHERE { ?p a bpmn:Process ; bpmn:elementId ?id }"
USES = """SELECT ?a WHERE { ?p a bpmn:Process ; bpmn:elementId "%s" . ?a bpmn:process ?p ; uses:entitySet ?s }"""


def held_out_activities() -> set[str]:
    """The names of the held-out process's activities, read from its BPMN file."""
    text = (DEMO / "bpmn" / "customer-returns.bpmn").read_text(encoding="utf-8")
    return set(re.findall(r'<bpmn:(?:task|userTask|serviceTask|sendTask|receiveTask)\b[^>]*\bname="([^"]+)"', text))


def test_processes_in_reads_the_process_ids_of_a_file():
    assert processes_in(DEMO / "bpmn" / "order-to-cash.bpmn") == ["Process_OrderToCash"]


def test_without_processes_drops_the_file_and_the_mapping_entries(tmp_path):
    kept, mapping = without_processes([DEMO / "bpmn"], DEMO / "mapping.yaml", [HELD_OUT], tmp_path)
    assert sorted(p.name for p in kept) == ["order-to-cash.bpmn", "procure-to-pay.bpmn"]
    assert mapping is not None
    before = read_mapping(DEMO / "mapping.yaml")
    after = read_mapping(mapping)
    assert {e.process for e in after} == {e.process for e in before} - {HELD_OUT}
    assert len(after) == len([e for e in before if e.process != HELD_OUT]) > 0
    assert [(e.activity, e.entity_set, e.mode) for e in after] == [
        (e.activity, e.entity_set, e.mode) for e in before if e.process != HELD_OUT
    ]


def test_a_file_with_a_held_out_and_a_kept_process_is_refused(tmp_path):
    both = tmp_path / "both.bpmn"
    both.write_text(
        '<definitions xmlns="http://www.omg.org/spec/BPMN/20100524/MODEL" id="d">'
        '<process id="Process_A"/><process id="Process_B"/></definitions>',
        encoding="utf-8",
    )
    with pytest.raises(ProcessKGError, match=r"both\.bpmn: holds held-out processes \(Process_A\) beside kept ones"):
        without_processes([both], None, ["Process_A"], tmp_path / "out")


def test_a_held_out_process_that_no_file_holds_is_refused(tmp_path):
    with pytest.raises(ProcessKGError, match="no BPMN file holds the held-out processes Process_Nowhere"):
        without_processes([DEMO / "bpmn"], None, ["Process_Nowhere"], tmp_path)


def test_the_fold_store_knows_nothing_of_the_held_out_process(tmp_path, tmp_path_factory):
    """Built from without_processes' inputs, with its index: no process node, no activity, no
    mapping edge and no index text of the held-out process; the kept processes are all there."""
    kept, mapping = without_processes([DEMO / "bpmn"], DEMO / "mapping.yaml", [HELD_OUT], tmp_path)
    store_dir = tmp_path / "store"
    build_store(
        BuildOptions(odata=[DEMO / "odata"], bpmn=list(kept), mapping=mapping, store=StoreLocation.parse(store_dir))
    )
    index_store(tmp_path_factory, store_dir, progress=None)

    store = open_store(store_dir)
    ids = {r[0] for r in rows(store, PROCESS_IDS)}
    assert ids == {"Process_OrderToCash", "Process_ProcureToPay"}
    assert not rows(store, ACTIVITIES % HELD_OUT)
    assert rows(store, ACTIVITIES % "Process_OrderToCash")
    assert rows(store, USES % "Process_OrderToCash")

    names = held_out_activities()
    kept_names = {str(r[1]) for p in ids for r in rows(store, ACTIVITIES % p)}
    only_held_out = names - kept_names
    assert only_held_out, "the demo's returns process has activities of its own"
    index = load_index(StoreHandle.open(store_dir))
    activity_names = {a["name"] for a in index.items["activity"]}
    assert not activity_names & names - kept_names
    texts = json.dumps([s["text"] for s in index.items["set"]])
    assert not [n for n in only_held_out if n in texts], "an entity set's text still names a held-out activity"


def test_eval_processes_without_odata_refuses_bpmn(tmp_path, demo_store):
    """Refused before any fold is built (the store itself is opened by --store's click type first)."""
    queries = tmp_path / "q.jsonl"
    queries.write_text("", encoding="utf-8")
    result = CliRunner().invoke(
        main,
        [
            "eval",
            "processes",
            "--store",
            str(demo_store),
            "--queries",
            str(queries),
            "--bpmn",
            str(DEMO / "bpmn"),
        ],
    )
    assert result.exit_code == 2
    assert "--bpmn needs the --odata the store was built from" in result.output
