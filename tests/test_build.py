"""``build_store()``: discovery and naming, mapping, code lists, bad input, atomic writes, determinism."""

from __future__ import annotations

import http.server
import os
import re
import signal
import subprocess
import sys
import threading
import uuid
from pathlib import Path
from typing import ClassVar

import pytest

from conftest import DATA, INVALID, demo_options, handmade_options, run_build, shared, tree_digest
from processkg.build.pipeline import BuildOptions, build_store
from processkg.errors import (
    CodeListError,
    MalformedXMLError,
    MappingError,
    NotBPMNError,
    NotODataError,
    ProcessKGError,
    UnresolvedReferenceError,
)
from processkg.graph.handle import StoreLocation
from processkg.sources.discover import BPMN_SUFFIXES, ODATA_SUFFIXES, discover
from processkg.sources.odata import csdl

# ---------------------------------------------------------------- discovery and naming


def test_directories_are_searched_recursively_with_display_paths():
    found = [display for _path, display in discover([shared("odata", "samples")], ODATA_SUFFIXES)]
    assert "samples/SAP__cloud-sdk-js/v2/API_TEST_SRV.edmx" in found
    assert "samples/SAP__cloud-sdk-js/businessOne/B1API.edmx" in found
    assert len(found) == 28
    assert [d for _p, d in discover([DATA / "bpmn"], BPMN_SUFFIXES)] == ["bpmn/all-kinds.bpmn", "bpmn/order-flow.bpmn"]


def test_missing_input_path_is_an_error(tmp_path):
    with pytest.raises(ProcessKGError, match=r"nothing-here: no such file or directory"):
        build_store(BuildOptions(odata=[tmp_path / "nothing-here"], out=tmp_path / "g.ttl"))


def test_same_service_name_in_two_files_gets_two_iris(samples):
    # SAP__cloud-sdk-js/v2/API_TEST_SRV.edmx and .../v4/API_TEST_SRV.edmx: same name, two services
    rows = samples.rows("""SELECT ?svc ?file (COUNT(DISTINCT ?set) AS ?sets) WHERE {
        ?svc kg:serviceName "API_TEST_SRV" ; kg:sourceFile ?file ; kg:entityContainer/kg:entitySet ?set }
        GROUP BY ?svc ?file ORDER BY ?file""")
    assert [(file, sets) for _svc, file, sets in rows] == [
        ("samples/SAP__cloud-sdk-js/v2/API_TEST_SRV.edmx", 14),
        ("samples/SAP__cloud-sdk-js/v4/API_TEST_SRV.edmx", 15),
    ]
    assert rows[0][0] != rows[1][0]
    assert {"samples/SAP__cloud-sdk-js/v2/API_TEST_SRV", "samples/SAP__cloud-sdk-js/v4/API_TEST_SRV"} <= set(
        samples.report.services
    )


def test_metadata_xml_service_is_named_after_its_folder(samples):
    names = samples.values("SELECT ?n WHERE { ?s a kg:Service ; kg:serviceName ?n }")
    assert "SAP__python-pyodata" in names and "metadata" not in names
    assert "metadata_odata_org_northwind_v2" in names  # a .xml file that is not metadata.xml: its stem


def test_annotations_only_document_is_attached_not_a_service(samples):
    # oasis-tcs__odata-openapi/csdl-16.2.xml only annotates csdl-16.1.xml's namespace
    assert "samples/oasis-tcs__odata-openapi/csdl-16.2.xml" in samples.report.files
    assert not [w for w in samples.report.warnings if "csdl-16.2" in w]
    assert "csdl-16.2" not in samples.values("SELECT ?n WHERE { ?s a kg:Service ; kg:serviceName ?n }")


def test_miwg_same_ids_in_files_of_several_tools_do_not_collide(miwg):
    # process id "WFP-6-" is used by the reference models A.1.0, A.2.0, A.3.0 and by the
    # round-trips of four tools (16 files); each file gets its own process node
    per_file = miwg.rows("""SELECT ?file ?p WHERE { ?p a bpmn:Process ; bpmn:elementId "WFP-6-" ;
        kg:sourceFile ?file }""")
    assert len(per_file) == len({p for _f, p in per_file}) == len({f for f, _p in per_file}) == 16
    a10 = sorted(f for f, _p in per_file if "A.1.0" in f)
    assert a10 == [
        "miwg/aris-10.2025.07/A.1.0-roundtrip.bpmn",
        "miwg/bpmn-io-18.6.1/A.1.0-roundtrip.bpmn",
        "miwg/camunda-eclipse-plugin-3.0.0/A.1.0-roundtrip.bpmn",
        "miwg/reference/A.1.0.bpmn",
        "miwg/sap-signavio-19.9.0/A.1.0-roundtrip.bpmn",
    ]
    # and no element belongs to two files: each IRI has one source file
    assert not miwg.rows(
        """SELECT ?x WHERE { ?x bpmn:elementId ?id ; kg:sourceFile ?a , ?b . FILTER(?a < ?b) } LIMIT 1"""
    )


def test_miwg_build_keeps_the_broken_exports_without_their_dangling_flows(miwg):
    assert miwg.report.skipped == []
    assert len(miwg.report.files) == len(list(shared("bpmn", "miwg").rglob("*.bpmn"))) == 178
    dropped = sorted((file, line) for file, _tag, _id, line in miwg.report.dropped)
    assert dropped == [("miwg/sap-signavio-19.9.0/B.1.0-export.bpmn", n) for n in (429, 434)] + [
        ("miwg/sap-signavio-19.9.0/B.2.0-export.bpmn", n) for n in (1247, 1252, 1257, 1262, 1267, 1272)
    ] + [("miwg/sap-signavio-19.9.0/C.9.0-export.bpmn", 493)]
    flows = [w for w in miwg.report.warnings if "sequenceFlow" in w]
    assert len(flows) == 9 and all(w.endswith("; the sequenceFlow is left out") for w in flows)
    assert miwg.ask("""ASK { ?t bpmn:elementId ?id ; kg:sourceFile "miwg/sap-signavio-19.9.0/C.9.0-export.bpmn" }""")


# ---------------------------------------------------------------- mapping


def test_mapping_lifts_usage_edges(handmade):
    edges = handmade.rows("""SELECT ?act ?set ?mode WHERE { ?a uses:usage ?u . ?u a uses:Usage ;
        uses:activity ?a ; uses:entitySet ?s ; uses:mode ?mode . ?a bpmn:elementId ?act . ?s kg:name ?set }
        ORDER BY ?act""")
    assert edges == [
        ("CheckOrder", "Orders", "read"),
        ("InvoiceCall", "PurchaseOrder", "read"),
        ("ReserveStock", "Items", "write"),
    ]  # "Reserve stock" was named, not id'd
    assert handmade.rows("""SELECT ?set WHERE { ?a bpmn:elementId "ReserveStock" ; uses:writes/kg:name ?set ;
        uses:entitySet/kg:name ?set }""") == [("Items",)]
    assert handmade.rows("""SELECT ?set WHERE { ?a bpmn:elementId "CheckOrder" ; uses:reads/kg:name ?set }""") == [
        ("Orders",)
    ]
    assert not handmade.ask("""ASK { ?a bpmn:elementId "CheckOrder" ; uses:writes ?s }""")
    assert handmade.report.mapping_edges == 3


@pytest.mark.parametrize(
    "name, line, message",
    [
        ("unresolved-process.mapping.yaml", 4, r"process 'Process_Shipping' is not in any BPMN file"),
        (
            "unresolved-activity.mapping.yaml",
            9,
            r"process 'Process_Order' has no activity with id or name 'Ship parcel'",
        ),
        ("unresolved-service.mapping.yaml", 4, r"service 'API_SALES_ORDER_SRV' is not in this build"),
        ("unresolved-entityset.mapping.yaml", 4, r"service 'HANDMADE_SALES_SRV' has no EntitySet 'Order'"),
        ("malformed.mapping.yaml", 6, r"not valid YAML"),
        ("bad-mode.mapping.yaml", 7, r"mode must be read or write, not 'update'"),
        ("missing-field.mapping.yaml", 3, r"mapping entry lacks entity_set"),
    ],
)
def test_bad_mapping_entry_names_the_mapping_file_and_line(tmp_path, name, line, message):
    options = handmade_options() | {"mapping": INVALID / name}
    with pytest.raises(MappingError, match=r"mapping\.yaml:\d+") as info:
        build_store(BuildOptions(out=tmp_path / "g.ttl", **options))
    assert str(info.value).startswith(f"{name}:{line}: ")
    assert info.value.line == line
    assert re.search(message, str(info.value))
    assert not (tmp_path / "g.ttl").exists()


def test_unresolved_mapping_entry_is_skipped_with_warn(tmp_path):
    options = handmade_options() | {"mapping": INVALID / "unresolved-activity.mapping.yaml"}
    report = build_store(BuildOptions(out=tmp_path / "g.ttl", on_error="warn", **options))
    assert report.mapping_edges == 1
    assert [file for file, _msg in report.skipped] == ["unresolved-activity.mapping.yaml:9"]


# ---------------------------------------------------------------- code lists


def test_codes_attach_to_value_lists_by_collection_path(handmade):
    codes = handmade.rows("""SELECT ?code ?label WHERE { ?p kg:name "OrderType" ; kg:valueList ?vl .
        ?vl kg:collectionPath "VL_OrderType" ; kg:code ?c . ?c kg:codeValue ?code ; rdfs:label ?label ;
        kg:codeSource "codelist" } ORDER BY ?code""")
    # ST, EX: rows without service; RE: a row for HANDMADE_SALES_SRV; XX belongs to OTHER_SRV
    assert codes == [("EX", "Express order"), ("RE", "Returns order"), ("ST", "Standard order")]


def test_codes_attach_to_a_real_value_list(tmp_path):
    # SAP__python-pyodata/metadata.xml: MasterEntity/Data has CollectionPath "DataValueHelp"
    built = run_build(
        tmp_path, odata=[shared("odata", "samples", "SAP__python-pyodata")], codes=[DATA / "codes" / "order-types.csv"]
    )
    assert built.rows("""SELECT ?prop ?code WHERE { ?p kg:name ?prop ; kg:valueList/kg:code ?c .
        ?c kg:codeValue ?code ; kg:codeSource "codelist" }""") == [("Data", "D1")]


@pytest.mark.parametrize(
    "folder, line, message",
    [
        ("codes-missing-column", 1, r"code list lacks column\(s\) code"),
        ("codes-empty-code", 3, r"row has an empty value_list or code"),
    ],
)
def test_bad_code_list_names_file_and_line(tmp_path, folder, line, message):
    with pytest.raises(CodeListError, match=rf"{folder}/codes\.csv:{line}: {message}"):
        build_store(BuildOptions(odata=[DATA / "odata"], codes=[INVALID / folder], out=tmp_path / "g.ttl"))


# ---------------------------------------------------------------- bad input


def test_malformed_xml_stops_the_build_with_file_line_and_column(tmp_path):
    with pytest.raises(MalformedXMLError, match=r"^malformed\.xml:8:\d+: malformed XML"):
        build_store(BuildOptions(odata=[INVALID / "malformed.xml"], out=tmp_path / "g.ttl"))


def test_entity_framework_file_in_a_build(tmp_path):
    folder = shared("odata", "not-service-metadata")
    with pytest.raises(NotODataError, match=r"Entity Framework designer file"):
        build_store(BuildOptions(odata=[folder], out=tmp_path / "g.ttl"))
    report = build_store(BuildOptions(odata=[folder, DATA / "odata"], out=tmp_path / "g.ttl", on_error="warn"))
    assert sorted(f for f, _m in report.skipped) == [
        "not-service-metadata/AdventureWorksModel.edmx",
        "not-service-metadata/NorthwindModel.edmx",
    ]
    assert set(report.services) == {"HANDMADE_SALES_SRV", "HANDMADE_PURCHASING"}


def test_files_of_the_wrong_kind(tmp_path):
    with pytest.raises(NotODataError):
        build_store(BuildOptions(odata=[DATA / "bpmn" / "order-flow.bpmn"], out=tmp_path / "g.ttl"))
    with pytest.raises(NotBPMNError):
        build_store(BuildOptions(bpmn=[DATA / "odata" / "HANDMADE_PURCHASING.xml"], out=tmp_path / "g.ttl"))


def test_unresolved_reference_stops_the_build(tmp_path):
    with pytest.raises(UnresolvedReferenceError, match=r"^unresolved-nav-target\.xml:10: NavigationProperty "):
        build_store(BuildOptions(odata=[INVALID / "unresolved-nav-target.xml"], out=tmp_path / "g.ttl"))


def test_billion_laughs_is_refused_without_expansion(tmp_path):
    with pytest.raises(MalformedXMLError, match=r"billion-laughs\.xml:4: document declares DTD entities"):
        build_store(BuildOptions(odata=[INVALID / "billion-laughs.xml"], out=tmp_path / "g.ttl"))
    # the reader stops before the parser: no entity is expanded even as far as libxml2's own limit
    with pytest.raises(MalformedXMLError, match=r"not parsed"):
        csdl.read_document(INVALID / "billion-laughs.xml")


def _xxe_with_secret(tmp_path: Path, encoding: str = "utf-8") -> tuple[Path, str]:
    secret = f"SECRET-{uuid.uuid4()}"
    (tmp_path / "secret.txt").write_text(secret, encoding="utf-8")
    text = (INVALID / "xxe-file.xml").read_text(encoding="utf-8")
    text = text.replace("file:///etc/hostname", (tmp_path / "secret.txt").as_uri())
    doc = tmp_path / f"xxe-{encoding}.xml"
    doc.write_bytes(text.replace('encoding="utf-8"', f'encoding="{encoding}"').encode(encoding))
    return doc, secret


@pytest.mark.parametrize("encoding", ["utf-8", "utf-16"])
def test_xxe_to_a_local_file_is_refused_and_the_file_never_read(tmp_path, encoding):
    doc, secret = _xxe_with_secret(tmp_path, encoding)
    with pytest.raises(MalformedXMLError, match=r"document declares DTD entities") as info:
        build_store(BuildOptions(odata=[doc], out=tmp_path / "g.ttl"))
    assert secret not in str(info.value)
    report = build_store(BuildOptions(odata=[doc, DATA / "odata"], out=tmp_path / "g.ttl", on_error="warn"))
    assert [f for f, _m in report.skipped] == [doc.name]
    assert secret not in repr(report.as_meta()) and secret.encode() not in (tmp_path / "g.ttl").read_bytes()


def test_xxe_to_etc_hostname_is_refused(tmp_path):
    with pytest.raises(MalformedXMLError, match=r"^xxe-file\.xml:4: document declares DTD entities") as info:
        build_store(BuildOptions(odata=[INVALID / "xxe-file.xml"], out=tmp_path / "g.ttl"))
    hostname = Path("/etc/hostname").read_text().strip() if Path("/etc/hostname").exists() else ""
    if len(hostname) >= 4:
        assert hostname not in str(info.value)


class _Recorder(http.server.BaseHTTPRequestHandler):
    requests: ClassVar[list] = []

    def do_GET(self):
        _Recorder.requests.append(self.path)
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b'<!ENTITY leaked "LEAKED">')

    def log_message(self, *args):
        pass


@pytest.fixture
def http_port():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    _Recorder.requests = []
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


@pytest.mark.parametrize("name", ["xxe-http.bpmn", "external-dtd.bpmn"])
def test_xxe_and_external_dtd_over_http_are_refused_without_network(tmp_path, http_port, name):
    doc = tmp_path / name
    doc.write_text((INVALID / name).read_text(encoding="utf-8").replace("PORT", str(http_port)), encoding="utf-8")
    with pytest.raises(
        MalformedXMLError,
        match=rf"^{name.replace('.', '[.]')}:\d+: document (declares DTD entities|refers to an external DTD)",
    ) as info:
        build_store(BuildOptions(bpmn=[doc], out=tmp_path / "g.ttl"))
    assert "LEAKED" not in str(info.value)
    assert _Recorder.requests == []


# ---------------------------------------------------------------- on_error and atomic writes


def test_on_error_warn_and_skip_go_on_and_fail_stops(tmp_path):
    inputs = dict(odata=[DATA / "odata", INVALID / "unresolved-entitytype.xml"], bpmn=[DATA / "bpmn"])
    for mode in ("warn", "skip"):
        report = build_store(BuildOptions(out=tmp_path / f"{mode}.ttl", on_error=mode, **inputs))
        assert [f for f, _m in report.skipped] == ["unresolved-entitytype.xml"]
        assert set(report.services) == {"HANDMADE_SALES_SRV", "HANDMADE_PURCHASING"}
    assert (tmp_path / "warn.ttl").read_bytes() == (tmp_path / "skip.ttl").read_bytes()
    with pytest.raises(UnresolvedReferenceError, match=r"^unresolved-entitytype\.xml:11: EntitySet 'Orders'"):
        build_store(BuildOptions(out=tmp_path / "fail.ttl", on_error="fail", **inputs))
    assert not (tmp_path / "fail.ttl").exists()
    with pytest.raises(ProcessKGError, match=r"--on-error must be one of fail, warn, skip"):
        build_store(BuildOptions(out=tmp_path / "x.ttl", on_error="ignore", **inputs))


def test_failed_build_leaves_previous_store_and_turtle_untouched(tmp_path):
    out_dir = tmp_path / "out"
    store, ttl = out_dir / "store", out_dir / "graph.ttl"
    build_store(BuildOptions(store=StoreLocation.parse(store), out=ttl, **handmade_options()))
    before_store, before_ttl = tree_digest(store), ttl.read_bytes()
    before_listing = sorted(p.name for p in out_dir.iterdir())
    assert before_store and before_ttl
    bad = handmade_options() | {"odata": [DATA / "odata", INVALID / "unresolved-association.edmx"]}
    with pytest.raises(UnresolvedReferenceError):
        build_store(BuildOptions(store=StoreLocation.parse(store), out=ttl, on_error="fail", **bad))
    bad_mapping = handmade_options() | {"mapping": INVALID / "unresolved-service.mapping.yaml"}
    with pytest.raises(MappingError):
        build_store(BuildOptions(store=StoreLocation.parse(store), out=ttl, on_error="fail", **bad_mapping))
    assert tree_digest(store) == before_store
    assert ttl.read_bytes() == before_ttl
    assert sorted(p.name for p in out_dir.iterdir()) == before_listing == ["graph.ttl", "store"]


def test_rebuild_replaces_the_store_and_leaves_no_temporary_files(tmp_path):
    store, ttl = tmp_path / "store", tmp_path / "graph.ttl"
    first = build_store(BuildOptions(store=StoreLocation.parse(store), out=ttl, odata=[DATA / "odata"]))
    second = build_store(BuildOptions(store=StoreLocation.parse(store), out=ttl, **handmade_options()))
    assert second.triples > first.triples
    assert ttl.read_bytes() == second.turtle
    assert sorted(os.listdir(tmp_path)) == ["graph.ttl", "store"]


# ---------------------------------------------------------------- determinism


def test_two_builds_of_the_demo_are_byte_identical(demo_built, tmp_path):
    again = build_store(BuildOptions(out=tmp_path / "again.ttl", **demo_options()))
    assert again.turtle == demo_built.ttl.read_bytes()
    assert len(again.turtle) > 10_000


def test_two_builds_of_a2x_are_byte_identical(a2x, tmp_path):
    again = build_store(BuildOptions(out=tmp_path / "again.ttl", odata=[shared("odata", "s4-a2x")]))
    assert (tmp_path / "again.ttl").read_bytes() == a2x.ttl.read_bytes()
    assert again.triples == a2x.report.triples > 100_000


# ---------------------------------------------------------------- kg build --check

_EXTERNAL_NAV = """<?xml version="1.0" encoding="utf-8"?>
<edmx:Edmx Version="4.0" xmlns:edmx="http://docs.oasis-open.org/odata/ns/edmx">
  <edmx:Reference Uri="products.xml"><edmx:Include Namespace="ProductService"/></edmx:Reference>
  <edmx:DataServices>
    <Schema Namespace="PeopleService" xmlns="http://docs.oasis-open.org/odata/ns/edm">
      <EntityType Name="Supplier">
        <Key><PropertyRef Name="ID"/></Key>
        <Property Name="ID" Type="Edm.Int32" Nullable="false"/>
        <!-- the target type lives in another document: the graph gets no kg:targetEntityType -->
        <NavigationProperty Name="Products" Type="Collection(ProductService.Product)"/>
      </EntityType>
      <EntityContainer Name="Container"><EntitySet Name="Suppliers" EntityType="PeopleService.Supplier"/></EntityContainer>
    </Schema>
  </edmx:DataServices>
</edmx:Edmx>
"""


def test_check_passes_on_the_demo_and_keeps_the_old_store_when_it_fails(tmp_path):
    from click.testing import CliRunner

    from processkg.cli import main

    store = tmp_path / "store"
    ok = CliRunner().invoke(
        main, ["build", "--odata", str(demo_options()["odata"][0]), "--store", str(store), "--no-index", "--check"]
    )
    assert ok.exit_code == 0, ok.output
    before = tree_digest(store)
    people = tmp_path / "People.xml"
    people.write_text(_EXTERNAL_NAV)
    bad = CliRunner().invoke(main, ["build", "--odata", str(people), "--store", str(store), "--no-index", "--check"])
    assert bad.exit_code == 2
    assert re.search(
        r"violates shapes/graph\.ttl \(1 violations\).*nav/Products .*targetEntityType MinCount", bad.output, re.S
    )
    assert tree_digest(store) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["People.xml", "store"]


# ---------------------------------------------------------------- the temporary folder

_HOLD_TMP = """
import time
from processkg.build.pipeline import owned_tmp

with owned_tmp() as folder:
    (folder / "data.nt").write_bytes(b"x" * 100_000)
    print(folder, flush=True)
    time.sleep(600)
"""


def _holding_tmp(env: dict[str, str]) -> tuple[subprocess.Popen[str], Path]:
    """A process inside a build's temporary folder (as a build is while it lifts), and the folder."""
    process = subprocess.Popen([sys.executable, "-c", _HOLD_TMP], stdout=subprocess.PIPE, text=True, env=env)
    assert process.stdout is not None
    return process, Path(process.stdout.readline().strip())


def test_the_next_build_removes_a_killed_builds_temporary_folder_and_keeps_a_live_ones(tmp_path):
    """A build without a folder store spools (and a remote build stores) in the system's temporary
    folder; SIGKILLed, it left the folder there for good. The next build removes it; a folder whose
    build still runs stays."""
    private = tmp_path / "tmpdir"
    private.mkdir()
    env = os.environ | {"TMPDIR": str(private)}
    killed, dead = _holding_tmp(env)
    live, alive = _holding_tmp(env)
    try:
        killed.send_signal(signal.SIGKILL)
        killed.wait(timeout=30)
        assert dead.is_dir() and alive.is_dir() and dead.parent == private
        kg = [str(Path(sys.executable).parent / "kg"), "build", "--odata", str(DATA / "odata")]
        result = subprocess.run([*kg, "--out", str(tmp_path / "g.ttl")], env=env, capture_output=True, timeout=300)
        assert result.returncode == 0, result.stderr
        assert list(private.iterdir()) == [alive]
    finally:
        live.kill()
        live.wait(timeout=30)
