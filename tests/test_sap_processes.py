"""The SAP process layer is generated from its YAML data: the committed BPMN files and mapping
cannot drift from data/sap/processes-src/, and a store built from them passes the SPARQL checks."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from conftest import ROOT, shared
from processkg.build.pipeline import BuildOptions, build

TOOLS = ROOT / "data" / "sap" / "tools"
sys.path.insert(0, str(TOOLS))

import check  # noqa: E402
import make_processes  # noqa: E402
import process_data  # noqa: E402


def test_committed_bpmn_files_and_mapping_are_what_the_data_gives():
    done = subprocess.run(
        [sys.executable, str(TOOLS / "make_processes.py"), "--check"], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr


def test_every_process_file_is_in_its_canonical_form():
    """Reading a YAML file and writing it back gives the same text: the files are the data, nothing hidden."""
    procs = process_data.load_all()
    assert len(procs) == 18
    for path in sorted(process_data.SOURCE_DIR.glob("*.yaml")):
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        assert process_data.dump(process_data.load(data)) == {k: v for k, v in data.items() if k != "order"}


def test_a_change_in_the_data_shows_as_a_stale_bpmn_file(tmp_path):
    folder = tmp_path / "src"
    shutil.copytree(process_data.SOURCE_DIR, folder)
    path = folder / "order-to-cash.yaml"
    path.write_text(
        path.read_text(encoding="utf-8").replace("Create the sales order", "Enter the order"), encoding="utf-8"
    )
    files, problems = make_processes.render(process_data.load_all(folder))
    assert problems == []
    stale = [p.name for p, text in files.items() if p.read_text(encoding="utf-8") != text]
    assert stale == ["order-to-cash.bpmn"], "the mapping names activities by id, so only the diagram changes"


@pytest.fixture(scope="module")
def sap_store(tmp_path_factory) -> Path:
    store = tmp_path_factory.mktemp("sap-layer") / "store"
    build(
        BuildOptions(
            odata=[shared("odata", "s4-a2x")],
            bpmn=[ROOT / "data" / "sap" / "processes"],
            mapping=ROOT / "data" / "sap" / "mapping.yaml",
            store=store,
            shapes=False,
        )
    )
    return store


def test_the_store_checks_pass_with_library_queries_and_bound_values(sap_store, capsys):
    assert check.verify_store(sap_store, process_data.load_all()) == 0
    out = capsys.readouterr().out
    assert out.count("ok  Process_") == 18 and "FAIL" not in out and "MISSING" not in out
    assert "SELECT" not in (TOOLS / "check.py").read_text(encoding="utf-8"), "SPARQL lives in queries/*.rq only"


def test_a_process_file_with_a_duplicate_id_or_an_unknown_lane_is_refused():
    data = yaml.safe_load((process_data.SOURCE_DIR / "order-to-cash.yaml").read_text(encoding="utf-8"))
    twice = {**data, "nodes": data["nodes"] + [data["nodes"][0]]}
    with pytest.raises(ValueError, match=r"Process_OrderToCash: duplicate id StartEvent_"):
        process_data.load(twice)
    stray = {**data, "nodes": [{**data["nodes"][0], "lane": "Nowhere"}]}
    with pytest.raises(ValueError, match=r"in unknown lane Nowhere"):
        process_data.load(stray)
