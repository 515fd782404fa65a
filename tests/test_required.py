"""Curated required-on-create fields (kg build --required, data/sap/required; issue 22).

A hand-made CSV (tests/data/required) makes two properties of HANDMADE_SALES_SRV's Orders required;
the tests check the reader's errors, the lift, a POST that kg serve refuses with the field and its
source, describe's list, and that the SAP list's rows all reach A2X properties and leave every
reference call of the tasks accepted (tests/test_tasks.py sends them); a row citing SAP metadata is checked
against the cited file (the Mandatory marker, the create action's parameter, or the quoted insert description
and the words of it naming the property), so a wrong citation fails.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from lxml import etree

from conftest import shared
from processkg.build.pipeline import BuildOptions, BuildReport, build_store
from processkg.errors import RequiredFieldsError
from processkg.graph.handle import StoreHandle, StoreLocation, open_store
from processkg.sources.required import read_required
from processkg.tools.local_server import LocalServer
from processkg.tools.odata_client import ODataClient
from processkg.tools.toolbox import Toolbox

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"
INVALID = ROOT / "tests" / "invalid"
SAP_REQUIRED = ROOT / "data" / "sap" / "required"
SALES = DATA / "odata" / "HANDMADE_SALES_SRV"
KG = "https://w3id.org/processkg/ontology#"
SOURCE = "Handmade Sales API guide, section 2 'Create an order'"


@pytest.fixture(scope="module")
def handmade(tmp_path_factory) -> tuple[BuildReport, Path]:
    store = tmp_path_factory.mktemp("required") / "store"
    report = build_store(
        BuildOptions(odata=[SALES], required=DATA / "required", store=StoreLocation(path=store), index=False)
    )
    return report, store


@pytest.fixture(scope="module")
def box(handmade) -> Iterator[Toolbox]:
    with LocalServer(StoreHandle.open(handmade[1])) as server:
        toolbox = Toolbox(StoreHandle.open(handmade[1]), ODataClient(server.url), allow_writes=True)
        yield toolbox
        toolbox.close()


# ---------------------------------------------------------------- the reader
def test_the_handmade_file_reads_in_file_order_with_file_and_line():
    rows = read_required(DATA / "required")
    assert [(r.key, r.file, r.line) for r in rows] == [
        ("HANDMADE_SALES_SRV/Orders/OrderType", "required/required.csv", 2),
        ("HANDMADE_SALES_SRV/Orders/Currency", "required/required.csv", 3),
    ]
    assert rows[0].source == SOURCE and rows[0].note == "test data: every order has a type"


def test_an_empty_property_names_file_and_line(tmp_path):
    with pytest.raises(
        RequiredFieldsError, match=r"required-empty-property/required\.csv:3: row has an empty property"
    ):
        build_store(BuildOptions(odata=[SALES], required=INVALID / "required-empty-property", out=tmp_path / "g.ttl"))


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("service,entity_set,property\nS,E,P\n", r"r\.csv:1: lacks column\(s\) source"),
        ("service,entity_set,property,source,note\nS,E,P,doc,\nS,E,P,doc2,\n", r"r\.csv:3: S/E/P repeats r/r\.csv:2"),
        (
            "service,entity_set,property,source,note\nS,E,P,doc,,extra\n",
            r"r\.csv:2: row has more fields than the header",
        ),
    ],
)
def test_malformed_rows_name_file_and_line(tmp_path, text, message):
    folder = tmp_path / "r"
    folder.mkdir()
    (folder / "r.csv").write_text(text, encoding="utf-8")
    with pytest.raises(RequiredFieldsError, match=message):
        read_required(folder)


def test_a_row_naming_no_property_of_the_build_is_a_warning(tmp_path):
    path = tmp_path / "r.csv"
    path.write_text(
        "service,entity_set,property,source,note\nHANDMADE_SALES_SRV,Orders,NoSuchField,doc,\n"
        "HANDMADE_SALES_SRV,Orders,Currency,doc,\n",
        encoding="utf-8",
    )
    report = build_store(BuildOptions(odata=[SALES], required=path, out=tmp_path / "g.ttl"))
    assert [w for w in report.warnings if "required field" in w] == [
        f"{tmp_path.name}/r.csv:2: required field HANDMADE_SALES_SRV/Orders/NoSuchField names no entity set or "
        "property of this build"
    ]


# ---------------------------------------------------------------- the lift
def test_each_row_is_lifted_on_its_entity_set_with_source_file_and_line(handmade):
    report, store = handmade
    assert not [w for w in report.warnings if "required field" in w]
    rows = open_store(store).query(f"""PREFIX kg: <{KG}>
        SELECT ?set ?prop ?source ?file ?line WHERE {{
          ?s kg:name ?set ; kg:requiredOnCreate ?r .
          ?r a kg:RequiredOnCreate ; kg:requiredProperty/kg:name ?prop ; kg:requirementSource ?source ;
             kg:sourceFile ?file ; kg:sourceLine ?line }} ORDER BY ?line""")
    assert [tuple(str(v.value) for v in row) for row in rows] == [
        ("Orders", "OrderType", SOURCE, "required/required.csv", "2"),
        ("Orders", "Currency", SOURCE, "required/required.csv", "3"),
    ]


# ---------------------------------------------------------------- kg serve and describe
def test_kg_serve_refuses_a_create_without_a_curated_field_naming_it_and_its_source(box):
    described, is_error = box.run("describe", {"service": "HANDMADE_SALES_SRV", "entity_set": "Orders"})
    assert not is_error, described
    answer, _ = box.run("call", {"method": "POST", "url": described["path"], "body": {"OrderType": "ST"}})
    assert answer["status"] == 400, answer
    violations = [(v["kind"], v["path"], v["message"]) for v in answer["violations"]]
    assert (
        "missing-required",
        "/Currency",
        f"Currency is required to create OrderType (curated from {SOURCE}); add it",
    ) in (violations), violations


def test_describe_lists_the_curated_fields_and_its_example_fills_them(box):
    described, _ = box.run("describe", {"service": "HANDMADE_SALES_SRV", "entity_set": "Orders"})
    assert {"OrderType", "Currency"} <= {line.split(":")[0] for line in described["required_on_create"]}, described
    assert {"OrderType", "Currency"} <= set(described["example_create"]), described
    full, _ = box.run("describe", {"service": "HANDMADE_SALES_SRV", "entity_set": "Orders", "detail": "full"})
    assert {"OrderType", "Currency"} <= set(full["required_on_create"]), full["required_on_create"]
    created, _ = box.run("call", {"method": "POST", "url": described["path"], "body": described["example_create"]})
    assert created["status"] == 201, created


# ---------------------------------------------------------------- the SAP list
def test_every_sap_row_reaches_an_a2x_property_of_the_tasks_store(tasks_built):
    report, _store = tasks_built
    rows = read_required(SAP_REQUIRED)
    assert len(rows) >= 40 and all(r.source for r in rows)
    assert not [w for w in report.warnings if "required field" in w]


def test_an_sap_row_without_a_document_says_unsourced():
    for row in read_required(SAP_REQUIRED):
        assert (row.file == "required/unsourced.csv") == row.source.startswith("unsourced: "), row


# ---------------------------------------------------------------- the SAP list's sources
#: One file per kind of source (data/sap/required/README.md): what each row's source must say of itself.
KINDS = {
    "required/sap-metadata.csv": "../shared/data/odata/",
    "required/sap-documentation.csv": ".sap.com",
    "required/third-party.csv": "not ",
    "required/unsourced.csv": "unsourced: ",
}
CITED_FILE = re.compile(r"\.\./shared/data/odata/(\S+?\.(?:xml|edmx))")
MANDATORY = re.compile(r"(\w+)/(\w+): Common\.FieldControl #Mandatory")
ACTION = re.compile(r"bound action (\w+)")
#: SAP's prose on a create, in the A2X service itself: the set's InsertRestrictions LongDescription, quoted
#: whole, and the words of it that name the property.
PROSE = re.compile(
    r"entity set (\w+): Capabilities\.InsertRestrictions LongDescription '(.+?)' \(names the property as '(.+?)'\)"
)


def test_each_sap_row_is_in_the_file_of_its_kind_of_source():
    rows = read_required(SAP_REQUIRED)
    assert {r.file for r in rows} == set(KINDS)
    for row in rows:
        assert KINDS[row.file] in row.source, row
    # a third-party row says it is not SAP's: "not an SAP document" or "not SAP documentation"
    assert all(re.search(r"not (an )?SAP doc", r.source) for r in rows if r.file == "required/third-party.csv")


def _mandatory_targets(tree: etree._ElementTree) -> set[str]:
    """Every annotation target (namespace stripped) that Common.FieldControl marks Mandatory."""
    found = set()
    for block in tree.iter("{*}Annotations"):
        for annotation in block.iter("{*}Annotation"):
            term, member = annotation.get("Term") or "", annotation.get("EnumMember") or ""
            if term.endswith("FieldControl") and member.endswith("/Mandatory"):
                found.add(block.get("Target", "").split(".", 1)[-1].split("(")[0])
    return found


def _insert_descriptions(tree: etree._ElementTree) -> dict[str, str]:
    """Entity set name -> the LongDescription of its Capabilities.InsertRestrictions."""
    found = {}
    for block in tree.iter("{*}Annotations"):
        for annotation in block.iter("{*}Annotation"):
            if (annotation.get("Term") or "").endswith("InsertRestrictions"):
                for value in annotation.iter("{*}PropertyValue"):
                    if value.get("Property") == "LongDescription":
                        found[block.get("Target", "").rsplit("/", 1)[-1]] = value.get("String") or ""
    return found


def test_a_row_citing_sap_metadata_holds_in_the_cited_file():
    parser = etree.XMLParser(resolve_entities=False, no_network=True, huge_tree=True)
    checked = 0
    for row in read_required(SAP_REQUIRED):
        if row.file != "required/sap-metadata.csv":
            continue
        tree = etree.parse(str(shared("odata", CITED_FILE.findall(row.source)[0])), parser)
        action, prose = ACTION.search(row.source), PROSE.search(row.source)
        if prose:  # the quoted statement is the cited set's insert description, and names the property
            entity_set, quoted, words = prose.groups()
            assert _insert_descriptions(tree).get(entity_set) == quoted, row
            assert words.lower() in quoted.lower(), row
        elif action:  # the property is a non-nullable parameter of the cited create action
            params = {
                p.get("Name"): p.get("Nullable")
                for a in tree.iter("{*}Action")
                if a.get("Name") == action[1]
                for p in a.iter("{*}Parameter")
            }
            assert params.get(row.prop) == "false", (row, params)
        else:  # the first cited Type/Property is marked Mandatory in the first cited file, for this property
            entity_type, prop = MANDATORY.findall(row.source)[0]
            assert prop == row.prop and f"{entity_type}/{prop}" in _mandatory_targets(tree), row
        checked += 1
    assert checked >= 21


def test_the_build_report_names_every_code_and_required_file_it_read(tasks_built):
    """build.json's ``files`` list every input the build read, the code lists and curated required fields
    too (before, only the OData, BPMN, bindings, mapping and flow files)."""
    report, store = tasks_built
    files = json.loads((store / "build.json").read_text(encoding="utf-8"))["files"]
    assert files == report.files
    sap = ROOT / "data" / "sap"
    for kind in ("codes", "required"):
        read = sorted(f"{kind}/{p.name}" for p in (sap / kind).glob("*.csv"))
        assert read and set(read) <= set(files), (kind, read)
    assert "flow/flow.csv" in files and "mapping.yaml" in files
