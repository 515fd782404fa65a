"""SAP code lists (data/sap/codes) and their bindings to A2X properties (kg build --code-bindings).

The A2X corpus is built once per session with every list and the binding file; the tests then
check that each binding reached a property, that the codes are in the graph with their CSV and
row, and that kg validate now refuses an invented code where the metadata alone knew none.
"""

from __future__ import annotations

import csv
import importlib.util
from pathlib import Path

import pytest
from click.testing import CliRunner

from processkg.build.pipeline import BuildOptions, build_store
from processkg.cli import main
from processkg.errors import CodeListError
from processkg.graph.handle import StoreHandle, StoreLocation, open_store
from processkg.sources.code_bindings import binding_for, bound_properties, read_bindings
from processkg.sources.codes import read_code_lists
from processkg.sources.odata.csdl import read_document
from processkg.validate.calls import Validator

ROOT = Path(__file__).resolve().parents[1]
CODES = ROOT / "data" / "sap" / "codes"
BINDINGS = CODES / "bindings.yaml"
A2X = ROOT.parent / "shared" / "data" / "odata" / "s4-a2x"
SO = "API_SALES_ORDER_SRV"
KG = "https://w3id.org/processkg/ontology#"


@pytest.fixture(scope="module")
def built(tasks_built):
    """The session's tasks store: A2X with every list and the binding file (and the process layer and
    index, which the codes do not touch); a build of its own here cost a second A2X build."""
    return tasks_built


@pytest.fixture(scope="module")
def validator(built):
    return Validator(StoreHandle.open(built[1]))


def post(entity_set, payload, service=SO):
    return {"id": "t", "method": "POST", "service": service, "entity_set": entity_set, "payload": payload}


# ---------------------------------------------------------------- the files
def test_every_csv_parses_with_codes_and_unique_rows():
    files = sorted(CODES.glob("*.csv"))
    assert len(files) >= 10
    for path in files:
        lists = read_code_lists([path])[""]
        assert lists and all(lists.values()), path.name
        with path.open(encoding="utf-8", newline="") as fh:
            rows = [(r["value_list"], r["code"]) for r in csv.DictReader(fh)]
        assert len(rows) == len(set(rows)), f"{path.name} repeats a code"


def test_every_binding_names_a_value_list_of_the_csvs():
    known = set(read_code_lists(sorted(CODES.glob("*.csv")))[""])
    missing = [(b.line, b.value_list) for b in read_bindings(BINDINGS) if b.value_list not in known]
    assert missing == []


def test_iso_lists_are_what_the_tool_generates_from_pycountry():
    spec = importlib.util.spec_from_file_location("iso_lists", CODES / "tools" / "iso_lists.py")
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    for name, rows in tool.lists().items():
        with (CODES / name).open(encoding="utf-8", newline="") as fh:
            assert [tuple(r) for r in csv.reader(fh)][1:] == [tuple(r) for r in rows], name
    from importlib.metadata import version

    assert (CODES / "iso-version.txt").read_text().strip() == f"pycountry {version('pycountry')}"


# ---------------------------------------------------------------- the build
def test_every_binding_reaches_an_a2x_property(built):
    report, _store = built
    unused = [w for w in report.warnings if "matches no property" in w]
    assert unused == []
    assert "bindings.yaml" in report.files


def test_sales_order_type_gets_the_codes_with_csv_and_row(built):
    store = open_store(built[1])
    rows = list(
        store.query(f"""PREFIX kg: <{KG}>
        SELECT ?code ?file ?line WHERE {{
          ?svc kg:serviceName "{SO}" ; kg:entityContainer/kg:entitySet ?set .
          ?set kg:name "A_SalesOrder" ; kg:entityType/kg:property ?p .
          ?p kg:name "SalesOrderType" ; kg:valueList/kg:code ?c .
          ?c kg:codeValue ?code ; kg:codeSource "codelist" ; kg:sourceFile ?file ; kg:sourceLine ?line }}""")
    )
    found = {r["code"].value: (r["file"].value, int(r["line"].value)) for r in rows}
    assert found["OR"] == ("codes/sales-document-types.csv", _row("sales-document-types.csv", "OR"))
    assert len(found) == _count("sales-document-types.csv")


def _row(name: str, code: str) -> int:
    lines = (CODES / name).read_text(encoding="utf-8").splitlines()
    return next(i for i, line in enumerate(lines, 1) if line.split(",")[1] == code)


def _count(name: str) -> int:
    return len((CODES / name).read_text(encoding="utf-8").splitlines()) - 1


# ---------------------------------------------------------------- kg validate
#: The rest of a sales order create: the fields data/sap/required makes required (with codes of data/sap/codes).
ORDER_REST = {
    "SalesOrganization": "1710",
    "DistributionChannel": "10",
    "OrganizationDivision": "00",
    "SoldToParty": "1",
}


def test_invented_sales_order_type_is_an_invalid_code_and_or_is_accepted(validator):
    bad = validator.validate_call(post("A_SalesOrder", dict(ORDER_REST, SalesOrderType="ZZOR")))
    assert sorted({(v.kind, v.path) for v in bad.violations}) == [("invalid-code", "/SalesOrderType")]
    good = validator.validate_call(post("A_SalesOrder", dict(ORDER_REST, SalesOrderType="OR")))
    assert not [v for v in good.violations if v.path == "/SalesOrderType"], good.as_dict()


@pytest.mark.parametrize(
    "prop, bad, good",
    [
        ("SalesOrganization", "9999", "1710"),
        ("DistributionChannel", "99", "10"),
        ("OrganizationDivision", "99", "00"),
        ("IncotermsClassification", "XYZ", "FOB"),
    ],
)
def test_org_units_and_incoterms_on_the_sales_order(validator, prop, bad, good):
    assert [
        (v.kind, v.path)
        for v in validator.validate_call(post("A_SalesOrder", {prop: bad})).violations
        if v.path == f"/{prop}"
    ] == [("invalid-code", f"/{prop}")]
    assert not [
        v for v in validator.validate_call(post("A_SalesOrder", {prop: good})).violations if v.path == f"/{prop}"
    ]


def test_sap_documented_sales_order_payload_stays_valid(validator):
    payload = {
        "SalesOrderType": "OR",
        "SalesOrganization": "1710",
        "DistributionChannel": "10",
        "OrganizationDivision": "00",
        "SoldToParty": "17100001",
        "PurchaseOrderByCustomer": "TEST",
        "TransactionCurrency": "USD",
        "to_Partner": [{"PartnerFunction": "SH", "Customer": "17100001"}],
        "to_Item": [
            {
                "Material": "TG11",
                "RequestedQuantity": "1",
                "RequestedQuantityUnit": "PC",
                "to_PricingElement": [{"ConditionType": "PPR0", "ConditionRateValue": "100"}],
            }
        ],
    }
    result = validator.validate_call(post("A_SalesOrder", payload))
    assert result.valid, result.as_dict()


def test_goods_movement_type_in_a_material_document_deep_insert(validator):
    def call(movement):
        return post(
            "A_MaterialDocumentHeader",
            {"to_MaterialDocumentItem": [{"GoodsMovementType": movement}]},
            "API_MATERIAL_DOCUMENT_SRV",
        )

    path = "/to_MaterialDocumentItem/0/GoodsMovementType"
    assert ("invalid-code", path) in {(v.kind, v.path) for v in validator.validate_call(call("999")).violations}
    assert not [v for v in validator.validate_call(call("101")).violations if v.path == path]


# ---------------------------------------------------------------- the binding file reader
def test_duplicate_key_is_refused_with_file_and_line(tmp_path):
    path = tmp_path / "b.yaml"
    path.write_text('bindings:\n  "*/*/Plant": Plant\n  "*/*/Plant": CompanyCode\n', encoding="utf-8")
    with pytest.raises(CodeListError, match=r"b\.yaml:3: binding '\*/\*/Plant' repeats line 2"):
        read_bindings(path, "b.yaml")


@pytest.mark.parametrize(
    "text, message",
    [
        ("bindings:\n  Plant: Plant\n", r"b\.yaml:2: binding key 'Plant' is not SERVICE/EntityType/Property"),
        ("bindings:\n  A/B/C: [x]\n", r"b\.yaml:2: a binding must be"),
        ("- a\n", r"b\.yaml:1: expected a top-level 'bindings:' map"),
        ("bindings: {a: [\n", r"b\.yaml:\d+: not valid YAML"),
    ],
)
def test_malformed_binding_files_name_file_and_line(tmp_path, text, message):
    path = tmp_path / "b.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(CodeListError, match=message):
        read_bindings(path, "b.yaml")


def test_the_most_specific_binding_wins(tmp_path):
    path = tmp_path / "b.yaml"
    path.write_text(
        "bindings:\n  '*/*/Plant': Plant\n  'API_X/*/Plant': Other\n  'API_X/T/Plant': Exact\n", encoding="utf-8"
    )
    bindings = read_bindings(path)
    assert binding_for(bindings, "API_X", "T", "Plant").value_list == "Exact"
    assert binding_for(bindings, "API_X", "U", "Plant").value_list == "Other"
    assert binding_for(bindings, "API_Y", "T", "Plant").value_list == "Plant"
    assert binding_for(bindings, "API_Y", "T", "Plants") is None


def test_the_bound_properties_of_a_service_are_its_properties_binding_for_binds(tmp_path):
    """bound_properties looks at the keys of a property's own name and those with a wildcard in the
    property segment only: it finds what binding_for finds for every property of the service."""
    path = tmp_path / "b.yaml"
    path.write_text(
        "bindings:\n  '*/*/SalesOrderType': A\n  '*/*/Condition*Type': B\n  'API_SALES_ORDER_SRV/*/Production?lant': C\n"
        "  '*/A_SalesOrderItemType/ShippingType': D\n  'API_OTHER/*/Material': E\n  '*/*/[MN]aterial': F\n",
        encoding="utf-8",
    )
    bindings = read_bindings(path)
    doc = read_document(A2X / f"{SO}.edmx", f"{SO}.edmx")
    found = bound_properties(bindings, SO, doc.types.values())
    every = [
        (binding_for(bindings, SO, t.name, p.name), t.qname, p.name)
        for t in sorted(doc.types.values(), key=lambda t: t.qname)
        for p in t.properties
    ]
    assert found == [hit for hit in every if hit[0] is not None]
    assert {b.value_list for b, _t, _p in found} == {"A", "B", "C", "D", "F"}


def test_cli_refuses_a_binding_to_an_unknown_value_list(tmp_path):
    path = tmp_path / "b.yaml"
    path.write_text("bindings:\n  '*/*/SalesOrderType': NoSuchList\n", encoding="utf-8")
    result = CliRunner().invoke(
        main,
        [
            "build",
            "--odata",
            str(A2X / f"{SO}.edmx"),
            "--codes",
            str(CODES),
            "--code-bindings",
            str(path),
            "--out",
            str(tmp_path / "g.ttl"),
        ],
    )
    assert result.exit_code == 2
    assert "b.yaml:2: value list 'NoSuchList' is in no --codes CSV" in result.output
    assert not (tmp_path / "g.ttl").exists()


def test_cli_warns_about_a_binding_that_matches_nothing(tmp_path):
    path = tmp_path / "b.yaml"
    path.write_text(
        "bindings:\n  '*/*/SalesOrderType': SalesDocumentType\n  '*/*/NoSuchProperty': Plant\n", encoding="utf-8"
    )
    result = CliRunner().invoke(
        main,
        [
            "build",
            "--odata",
            str(A2X / f"{SO}.edmx"),
            "--codes",
            str(CODES),
            "--code-bindings",
            str(path),
            "--out",
            str(tmp_path / "g.ttl"),
        ],
    )
    assert result.exit_code == 0, result.output
    assert "b.yaml:3: binding '*/*/NoSuchProperty' matches no property in this build" in result.output
    assert "sales-document-types.csv" in (tmp_path / "g.ttl").read_text(encoding="utf-8")


# ---------------------------------------------------------------- the default binding file (issue 21)

SO_FILE = A2X / f"{SO}.edmx"


def bound_codes(store: Path) -> set[tuple[str, str]]:
    """(property IRI, code) of every code from a code-list CSV in the store."""
    query = f"""PREFIX kg: <{KG}>
    SELECT ?p ?v WHERE {{ ?p kg:valueList/kg:code ?c . ?c kg:codeValue ?v ; kg:codeSource "codelist" }}"""
    return {(row["p"].value, row["v"].value) for row in open_store(store).query(query)}


def test_a_codes_folder_with_bindings_yaml_binds_without_code_bindings(tmp_path):
    """kg build --codes data/sap/codes, without --code-bindings, binds what the explicit file binds."""
    default = build_store(BuildOptions(odata=[SO_FILE], codes=[CODES], store=StoreLocation.parse(tmp_path / "default")))
    explicit = build_store(
        BuildOptions(
            odata=[SO_FILE], codes=[CODES], code_bindings=BINDINGS, store=StoreLocation.parse(tmp_path / "explicit")
        )
    )
    assert "codes/bindings.yaml" in default.files
    assert bound_codes(tmp_path / "default") == bound_codes(tmp_path / "explicit")
    assert len(bound_codes(tmp_path / "default")) > 20
    assert not [w for w in default.warnings if "reached no property" in w]
    assert len(default.warnings) == len(explicit.warnings)


def test_code_lists_that_reach_no_property_are_a_warning(tmp_path):
    """The SAP lists without their binding file reach no A2X property: say so instead of nothing."""
    folder = tmp_path / "codes"
    folder.mkdir()
    for csv_file in CODES.glob("*.csv"):
        (folder / csv_file.name).write_bytes(csv_file.read_bytes())
    report = build_store(BuildOptions(odata=[SO_FILE], codes=[folder], store=StoreLocation.parse(tmp_path / "store")))
    assert not bound_codes(tmp_path / "store")
    assert [w for w in report.warnings if "the --codes lists reached no property" in w]


def test_two_codes_folders_with_a_binding_file_each_are_refused(tmp_path):
    other = tmp_path / "other"
    other.mkdir()
    (other / "bindings.yaml").write_text("bindings: {}\n", encoding="utf-8")
    (other / "x.csv").write_text("value_list,code,description\nX,1,one\n", encoding="utf-8")
    result = CliRunner().invoke(
        main,
        [
            "build",
            "--odata",
            str(SO_FILE),
            "--codes",
            str(CODES),
            "--codes",
            str(other),
            "--store",
            str(tmp_path / "s"),
        ],
    )
    assert result.exit_code == 2
    assert "several --codes folders hold a bindings.yaml" in result.output
    assert "name one with --code-bindings" in result.output
