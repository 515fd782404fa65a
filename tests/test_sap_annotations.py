"""SAP's own constraint annotations (issue 11): lifted as they are, counted against independent
XPath on the real corpora, and used by the payload shapes, the validator (create, update, delete,
read) and the typed context.

The counts of required markers that docs/validation.md gives ("Required") are computed here;
``python tests/test_sap_annotations.py`` prints the table from both corpora.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest
from lxml import etree
from pyoxigraph import RdfFormat, Store

from conftest import FIORI_SERVICES, ROOT, SHARED, Built, shared
from processkg.build.pipeline import BuildOptions, build_store
from processkg.graph.handle import StoreHandle, StoreLocation, open_store
from processkg.retrieve.context import set_context
from processkg.services.model import Model, required_on_create, service_model
from processkg.validate.calls import KINDS, Validator
from processkg.validate.payload_shapes import model_shapes
from processkg.vocab import SH_NS

CONFORMANCE = ROOT / "tests" / "conformance"
VALIDATION_DOC = ROOT / "docs" / "validation.md"
SAP = "http://www.sap.com/Protocols/SAPData"
ID = "https://w3id.org/processkg/id/odata/"

BANK = "/sap/opu/odata4/sap/api_bank_3/srvd_a2x/sap/bank/0003/Bank"
BANK_KEY = BANK + "(BankCountry='DE',BankInternalID='10020030')"
SO_V4 = "/sap/opu/odata4/sap/api_salesorder/srvd_a2x/sap/salesorder/0001/SalesOrder"
SO_V2 = "/sap/opu/odata/sap/API_SALES_ORDER_SRV/"
FLOC = "/sap/opu/odata/sap/API_FUNCTIONALLOCATION/FunctionalLocation"
STOCK = "/sap/opu/odata/sap/UI_RETURNSINITIATION/C_FldLogsStock"


def kinds(result) -> list[tuple[str, str]]:
    return sorted((v.kind, v.path) for v in result.violations)


# ---------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def a2x_validator(a2x_store: Path) -> Validator:
    return Validator(StoreHandle.open(a2x_store))


@pytest.fixture(scope="module")
def returns(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """UI_RETURNSINITIATION (Fiori V2): sap:required-in-filter, sap:requires-filter and FilterRestrictions."""
    store = tmp_path_factory.mktemp("returns") / "store"
    build_store(
        BuildOptions(odata=[shared("odata", "s4-fiori", "UI_RETURNSINITIATION")], store=StoreLocation.parse(store))
    )
    return store


@pytest.fixture(scope="module")
def conformance(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The hand-made conformance inputs of this issue: FieldControl ReadOnly and Hidden,
    NonInsertableNavigationProperties, and a NonFilterableProperty that sap:filterable does not also
    mark, occur in no real document of the corpora."""
    store = tmp_path_factory.mktemp("sap-conformance") / "store"
    folders = ("odata-v4-field-control", "odata-v4-capabilities-insert-update-delete", "odata-v4-capabilities-filter")
    build_store(BuildOptions(odata=[CONFORMANCE / f for f in folders], store=StoreLocation.parse(store)))
    return store


# ---------------------------------------------------------------- independent counts

#: Markers counted twice: by plain XPath over the documents (local names, term suffixes, no
#: alias resolution and nothing of processkg) and by SPARQL over the graph.
GRAPH_QUERIES = {
    "FieldControl Mandatory": "SELECT (COUNT(?p) AS ?n) WHERE { ?p kg:fieldControl 'Mandatory' }",
    "field control path": "SELECT (COUNT(?p) AS ?n) WHERE { ?p kg:fieldControlPath ?x }",
    "sap:required-in-filter": "SELECT (COUNT(?p) AS ?n) WHERE { ?p kg:requiredInFilter true }",
    "InsertRestrictions/RequiredProperties": "SELECT (COUNT(*) AS ?n) WHERE { ?s kg:insertRequiredProperty ?p }",
    "FilterRestrictions/RequiredProperties": "SELECT (COUNT(*) AS ?n) WHERE { ?s kg:filterRequiredProperty ?p }",
    "sets not deletable": "SELECT (COUNT(?s) AS ?n) WHERE { ?s a kg:EntitySet ; kg:deletable false }",
}


def _on_property(ann: etree._Element) -> bool:
    parent = ann.getparent()
    target = parent.get("Target") or ""
    if etree.QName(parent).localname == "Property":
        return True
    return target.count("/") == 1 and "(" not in target


def _count_file(path: Path) -> Counter:
    root = etree.parse(str(path), etree.XMLParser(resolve_entities=False, no_network=True)).getroot()
    found: Counter = Counter()
    found["field control path"] += len(
        root.xpath("//*[local-name()='Property'][@sap:field-control]", namespaces={"sap": SAP})
    )
    found["sap:required-in-filter"] += len(
        root.xpath("//*[local-name()='Property'][@sap:required-in-filter='true']", namespaces={"sap": SAP})
    )
    not_deletable = {
        f"{es.getparent().get('Name')}/{es.get('Name')}"
        for es in root.xpath("//*[local-name()='EntitySet'][@sap:deletable='false']", namespaces={"sap": SAP})
    }
    declared = {f"{es.getparent().get('Name')}/{es.get('Name')}" for es in root.xpath("//*[local-name()='EntitySet']")}
    for ann in root.xpath("//*[local-name()='Annotation']"):
        term = ann.get("Term", "")
        if term.endswith(".FieldControl") and _on_property(ann):
            member = ann.get("EnumMember") or "".join(ann.xpath("*[local-name()='EnumMember']/text()"))
            if member.endswith("/Mandatory") or ann.get("Int") == "7":
                found["FieldControl Mandatory"] += 1
            elif ann.get("Path"):
                found["field control path"] += 1
        for name in ("InsertRestrictions", "FilterRestrictions"):
            if term.endswith(f".{name}"):
                found[f"{name}/RequiredProperties"] += len(
                    ann.xpath("*/*[@Property='RequiredProperties']/*[local-name()='Collection']/*")
                )
        if term.endswith(".DeleteRestrictions") and ann.xpath("*/*[@Property='Deletable'][@Bool='false']"):
            first, _, rest = (ann.getparent().get("Target") or "").partition("/")
            not_deletable.add(f"{first.rpartition('.')[2]}/{rest}")
    found["sets not deletable"] += len(not_deletable & declared)
    return found


def xpath_counts(files: list[Path]) -> Counter:
    total: Counter = Counter()
    for path in files:
        total.update(_count_file(path))
    return total


def corpus_files(name: str) -> list[Path]:
    if name == "a2x":
        return sorted(shared("odata", "s4-a2x").glob("*.edmx"))
    return sorted(p for s in FIORI_SERVICES for p in shared("odata", "s4-fiori", s).glob("*.xml"))


@pytest.mark.parametrize("corpus", ["a2x", "fiori"])
def test_graph_holds_every_marker_the_documents_have(corpus: str, request: pytest.FixtureRequest):
    built: Built = request.getfixturevalue(corpus)
    expected = xpath_counts(corpus_files(corpus))
    got = {marker: built.rows(query)[0][0] for marker, query in GRAPH_QUERIES.items()}
    assert got == {marker: expected[marker] for marker in GRAPH_QUERIES}


def test_the_corpora_have_the_markers_the_counts_are_about():
    a2x, fiori = xpath_counts(corpus_files("a2x")), xpath_counts(corpus_files("fiori"))
    assert a2x["FieldControl Mandatory"] == 78 and a2x["InsertRestrictions/RequiredProperties"] == 23
    assert a2x["field control path"] == 76 and a2x["sets not deletable"] == 210
    assert fiori["field control path"] == 703 and fiori["FieldControl Mandatory"] > 0


# ---------------------------------------------------------------- required markers (docs/validation.md)

COLUMNS = ("FieldControl", "InsertRestrictions", "also by the rule", "rule", "not creatable")


def required_markers(model: Model) -> Counter:
    """Properties a create needs, by where the marker comes from: SAP's Common.FieldControl Mandatory,
    SAP's InsertRestrictions/RequiredProperties (of these, how many the fallback rule also requires),
    the fallback rule alone; and SAP-mandatory properties the client may not set."""
    found: dict[str, tuple[str, bool, bool]] = {}
    for t in model.types.values():
        for p in t.props.values():
            rule = required_on_create(p.key, p.nullable, p.read_only, p.collection, p.default is not None, t.namespace)
            blocked = p.field_control == "Mandatory" and p.read_only
            if p.required_by or blocked:
                found[p.iri] = max(found.get(p.iri, ("", False, False)), (p.required_by, rule, blocked))
    counts = Counter({c: 0 for c in COLUMNS})
    for by, rule, blocked in found.values():
        counts[by] += bool(by)
        counts["also by the rule"] += by in ("FieldControl", "InsertRestrictions") and rule
        counts["not creatable"] += blocked
    return counts


def markers_table(models: dict[str, Model]) -> str:
    head = (
        "| corpus | required on create | Common.FieldControl Mandatory | InsertRestrictions/RequiredProperties "
        "| of these, also by the rule | fallback rule only | SAP-mandatory, not creatable |\n"
        "|---|---:|---:|---:|---:|---:|---:|\n"
    )
    rows = []
    for name, model in models.items():
        c = required_markers(model)
        total = c["FieldControl"] + c["InsertRestrictions"] + c["rule"]
        cells = [
            total,
            c["FieldControl"],
            c["InsertRestrictions"],
            c["also by the rule"],
            c["rule"],
            c["not creatable"],
        ]
        rows.append(f"| `{name}` | " + " | ".join(str(n) for n in cells) + " |\n")
    return head + "".join(rows)


def fiori_corpus_model() -> Model:
    """All 63 Fiori services, lifted in memory (no store, no shapes): what the validator would load."""
    report = build_store(BuildOptions(odata=[shared("odata", "s4-fiori")], on_error="warn", shapes=False))
    store = Store()
    store.bulk_load(report.turtle, format=RdfFormat.TURTLE)
    return service_model(store)


@pytest.fixture(scope="module")
def corpus_models(a2x_store: Path, fiori_all: Path) -> dict[str, Model]:
    """The session's stores of both corpora (tests/test_audit.py audits the same Fiori build): lifting
    the 63 Fiori services again here cost half a minute of CPU for the same model."""
    return {"s4-a2x": service_model(open_store(a2x_store)), "s4-fiori": service_model(open_store(fiori_all))}


def test_validation_doc_gives_the_required_marker_counts(corpus_models: dict[str, Model]):
    table = markers_table(corpus_models)
    assert table in VALIDATION_DOC.read_text(encoding="utf-8"), "docs/validation.md should have:\n" + table


def test_every_type_of_the_index_is_read_with_its_service(corpus_models: dict[str, Model]):
    """The index lists a service's types without reading their names; each one must come back, with
    its qualified name, when the service is read (A2X and the 63 Fiori services). A test of the service
    model (tests/test_services.py), here because this module reads both corpora in full anyway."""
    for model in corpus_models.values():
        for name, head in model.heads.items():
            types = model.types_of(name)
            assert [t.iri for t in types] == head.types and all(t.qname and t.service == name for t in types)


def test_every_fiori_type_and_operation_gets_its_payload_shapes(corpus_models: dict[str, Model]):
    """The payload shapes of the 63 Fiori services, made from the model read here in full: a closed
    node shape per entity type, complex type and operation, a shape with its path per property and
    parameter. The session's Fiori store is built without shapes (conftest.fiori_all), so this is where
    their making meets every Fiori service; tests/test_shapes.py shows that the shapes kg build writes
    service by service are these, the shapes of the whole store (A2X's are in the session's A2X store)."""
    model = corpus_models["s4-fiori"]
    shapes = model_shapes(model)
    closed = {t.subject.value for t in shapes if t.predicate.value == SH_NS + "closed"}
    paths = {t.subject.value for t in shapes if t.predicate.value == SH_NS + "path"}
    types = list(model.types.values())
    operations = [op.as_type() for service in model.services.values() for op in service.operations]
    assert len(types) > 3000 and len(operations) > 700
    assert closed == {t.iri + "/shape" for t in types + operations}
    assert {p.iri + "/shape" for owner in types + operations for p in owner.props.values()} <= paths


def test_sap_markers_decide_what_a2x_requires(corpus_models: dict[str, Model]):
    c = required_markers(corpus_models["s4-a2x"])
    assert (c["FieldControl"], c["InsertRestrictions"]) == (77, 23)  # 78 Mandatory, one of them not creatable
    assert c["not creatable"] == 1


# ---------------------------------------------------------------- create


def test_a_create_without_a_sap_mandatory_field_is_missing_required(a2x_validator: Validator):
    result = a2x_validator.validate_call({"method": "POST", "url": BANK, "body": {"SWIFTCode": "DEUTDEFF"}})
    by_path = {v.path: v for v in result.violations}
    assert kinds(result) == [
        ("missing-required", "/BankCountry"),
        ("missing-required", "/BankInternalID"),
        ("missing-required", "/LongBankName"),
    ]
    # keys the client must send: SAP says so (InsertRestrictions), where the fallback rule would not
    assert "Capabilities.InsertRestrictions/RequiredProperties" in by_path["/BankCountry"].message
    assert "(Common.FieldControl Mandatory); add it" in by_path["/LongBankName"].message
    v2 = a2x_validator.validate_call({"method": "POST", "url": FLOC, "body": {"FunctionalLocationCategory": "M"}})
    assert kinds(v2) == [("missing-required", "/FuncLocationStructure")]


def test_a_field_sap_does_not_mark_and_that_is_nullable_is_not_required(a2x_validator: Validator):
    body = {"BankCountry": "DE", "BankInternalID": "10020030", "LongBankName": "Deutsche Bank"}
    assert a2x_validator.validate_call({"method": "POST", "url": BANK, "body": body}).valid  # SWIFTCode left out
    complete = {"FunctionalLocationCategory": "M", "FuncLocationStructure": "ZFL"}
    assert a2x_validator.validate_call({"method": "POST", "url": FLOC, "body": complete}).valid
    assert a2x_validator.validate_call({"method": "POST", "url": SO_V2 + "A_SalesOrder", "body": {}}).valid


def test_no_deep_insert_along_a_non_insertable_navigation(conformance: Path):
    validator = Validator(StoreHandle.open(conformance))
    body = {"BankCountry": "DE", "BankInternalID": "1", "BankName": "B", "IsLocked": False, "Region": "HE"}
    body["_Address"] = [{"AddressID": "1"}]
    result = validator.validate_call({"method": "POST", "service": "CONF_CAPS", "entity_set": "Bank", "payload": body})
    assert kinds(result) == [("read-only", "/_Address")]
    assert "NonInsertableNavigationProperties" in result.violations[0].message


def test_field_control_decides_where_sap_gives_one(conformance: Path):
    """All properties of CONF_FC's Order are non-nullable; the fallback rule would require the non-keys."""
    validator = Validator(StoreHandle.open(conformance))
    post = {"method": "POST", "service": "CONF_FC", "entity_set": "Order"}
    given = {"OrderID": "1", "Customer": "C", "Priority": 1, "Note": "n", "__FieldControl": {"Note": 3}}
    created = validator.validate_call({**post, "payload": given})
    assert created.valid, created.as_dict()  # Status (ReadOnly), Internal (Hidden), Comment (Optional) absent
    status = validator.validate_call({**post, "payload": {**given, "Status": "A"}})
    assert kinds(status) == [("read-only", "/Status")]
    missing = validator.validate_call(
        {**post, "payload": {"Customer": "C", "Note": "n", "__FieldControl": {"Note": 3}}}
    )
    assert kinds(missing) == [("missing-required", "/OrderID"), ("missing-required", "/Priority")]  # a Mandatory key
    path_only = validator.validate_call({**post, "payload": {k: v for k, v in given.items() if k != "Note"}})
    assert kinds(path_only) == [("missing-required", "/Note")]  # decided at run time: the fallback rule stays
    patch = validator.validate_call(
        {"method": "PATCH", "service": "CONF_FC", "url": "Order('1')", "body": {"Status": "B"}}
    )
    assert kinds(patch) == [("read-only", "/Status")]
    assert "Common.FieldControl ReadOnly" in patch.violations[0].message


# ---------------------------------------------------------------- update and delete


def test_update_of_a_field_that_cannot_change(a2x_validator: Validator):
    immutable = a2x_validator.validate_call({"method": "PATCH", "url": BANK_KEY, "body": {"BankCategory": "1"}})
    assert kinds(immutable) == [("read-only", "/BankCategory")]
    assert "Core.Immutable" in immutable.violations[0].message and "remove it" in immutable.violations[0].message
    computed = a2x_validator.validate_call({"method": "PATCH", "url": SO_V4 + "('1')", "body": {"TotalNetAmount": 5}})
    assert kinds(computed) == [("read-only", "/TotalNetAmount")] and "Core.Computed" in computed.violations[0].message
    v2 = a2x_validator.validate_call(
        {"method": "MERGE", "url": SO_V2 + "A_SalesOrder('1')", "body": {"TotalNetAmount": "5"}}
    )
    assert kinds(v2) == [("read-only", "/TotalNetAmount")] and 'sap:updatable="false"' in v2.violations[0].message
    key = a2x_validator.validate_call({"method": "PATCH", "url": BANK_KEY, "body": {"BankInternalID": "999"}})
    assert kinds(key) == [("read-only", "/BankInternalID")] and "key cannot change" in key.violations[0].message
    same = a2x_validator.validate_call({"method": "PATCH", "url": BANK_KEY, "body": {"BankInternalID": "10020030"}})
    assert same.valid


def test_patch_is_partial_and_put_replaces_the_whole_entity(a2x_validator: Validator):
    assert a2x_validator.validate_call({"method": "PATCH", "url": BANK_KEY, "body": {"SWIFTCode": "DEUTDEFF"}}).valid
    put = a2x_validator.validate_call({"method": "PUT", "url": BANK_KEY, "body": {"SWIFTCode": "DEUTDEFF"}})
    assert kinds(put) == [("missing-required", "/LongBankName")]  # keys come from the URL
    assert "a PUT replaces the whole entity" in put.violations[0].message
    full = a2x_validator.validate_call({"method": "PUT", "url": BANK_KEY, "body": {"LongBankName": "Deutsche Bank"}})
    assert full.valid
    typo = a2x_validator.validate_call(
        {"method": "PATCH", "url": BANK_KEY, "body": {"SWIFTCod": "X", "LongBankName": 7}}
    )
    assert kinds(typo) == [("datatype", "/LongBankName"), ("unknown-property", "/SWIFTCod")]
    collection = a2x_validator.validate_call({"method": "PATCH", "url": BANK, "body": {"SWIFTCode": "X"}})
    assert kinds(collection) == [("missing-required", "/key")]


def test_delete_on_a_set_that_does_not_allow_it(a2x_validator: Validator):
    bank = a2x_validator.validate_call({"method": "DELETE", "url": BANK_KEY})
    assert kinds(bank) == [("read-only", "")]
    assert "does not allow delete" in bank.violations[0].message
    line = SO_V2 + "A_SalesOrderScheduleLine(SalesOrder='1',SalesOrderItem='10',ScheduleLine='1')"
    assert kinds(a2x_validator.validate_call({"method": "DELETE", "url": line})) == [("read-only", "")]
    assert kinds(a2x_validator.validate_call({"method": "PATCH", "url": line, "body": {}})) == [("read-only", "")]
    assert a2x_validator.validate_call({"method": "DELETE", "url": SO_V2 + "A_SalesOrder('1')"}).valid


# ---------------------------------------------------------------- read


def test_a_read_must_filter_on_what_sap_requires(returns: Path):
    validator = Validator(StoreHandle.open(returns))
    bare = validator.validate_call({"method": "GET", "url": STOCK})
    assert kinds(bare) == [("missing-required", "/$filter")]
    assert bare.violations[0].value == "FldLogsRemotePlant"
    assert "add FldLogsRemotePlant eq '...' to $filter" in bare.violations[0].message
    other = validator.validate_call({"method": "GET", "url": STOCK + "?$filter=Material eq 'M1'"})
    assert kinds(other) == [("missing-required", "/$filter")]
    assert validator.validate_call({"method": "GET", "url": STOCK + "?$filter=FldLogsRemotePlant eq '1010'"}).valid
    count = validator.validate_call({"method": "GET", "url": STOCK + "/$count"})
    assert kinds(count) == [("missing-required", "/$filter")]


def test_a_filter_on_a_property_that_is_not_filterable(returns: Path, a2x_validator: Validator):
    validator = Validator(StoreHandle.open(returns))
    url = STOCK + "?$filter=FldLogsRemotePlant eq '1010' and Update_mc eq true"
    result = validator.validate_call({"method": "GET", "url": url})
    assert kinds(result) == [("not-filterable", "/$filter")]  # also in its NonFilterableProperties
    assert "remove it from $filter, read Update_mc with $select" in result.violations[0].message
    v2 = "/sap/opu/odata/sap/API_INBOUND_DELIVERY_SRV/A_InbDeliveryHeader?$filter=SoldToParty eq '1'"
    attr = a2x_validator.validate_call({"method": "GET", "url": v2})
    assert kinds(attr) == [("not-filterable", "/$filter")] and 'sap:filterable="false"' in attr.violations[0].message


def test_filter_restrictions_of_a_v4_set(conformance: Path):
    validator = Validator(StoreHandle.open(conformance))
    get = {"method": "GET", "service": "CONF_FILTER"}
    assert kinds(validator.validate_call({**get, "url": "StockChange"})) == [("missing-required", "/$filter")]
    assert validator.validate_call({**get, "url": "StockChange?$filter=Plant eq '1010'"}).valid
    text = validator.validate_call({**get, "url": "StockChange?$filter=Plant eq '1010' and LongText eq 'x'"})
    assert kinds(text) == [("not-filterable", "/$filter")]
    assert "FilterRestrictions/NonFilterableProperties" in text.violations[0].message
    assert validator.validate_call({**get, "url": "StockChange('1')"}).valid  # one entity: no filter needed


# ---------------------------------------------------------------- the typed context and the docs


def test_context_names_what_sap_requires(a2x_store: Path, returns: Path):
    bank = set_context(open_store(a2x_store), ID + "CE_BANK_0003/set/Bank")
    assert bank["required"] == ["BankCountry", "BankInternalID", "LongBankName"]
    flags = {p["name"]: p["flags"] for p in bank["properties"]}
    assert flags["BankCategory"] == ["create-only"]  # Core.Immutable
    stock = set_context(open_store(returns), ID + "UI_RETURNSINITIATION/set/C_FldLogsStock")
    assert stock["filter_required"] == ["FldLogsRemotePlant"]
    assert stock["head"]["requiresFilter"] is True and stock["head"]["deletablePath"] == "Delete_mc"
    flags = {p["name"]: p["flags"] for p in stock["properties"]}
    assert "no-filter" in flags["Update_mc"]


def test_every_violation_kind_is_documented():
    text = VALIDATION_DOC.read_text(encoding="utf-8")
    documented = re.findall(r"^\| `([a-z-]+)` \|", text, re.M)
    assert set(KINDS) <= set(documented), set(KINDS) - set(documented)


if __name__ == "__main__":  # print the table of required markers for docs/validation.md
    a2x_report = build_store(BuildOptions(odata=[SHARED / "odata" / "s4-a2x"], shapes=False))
    a2x = Store()
    a2x.bulk_load(a2x_report.turtle, format=RdfFormat.TURTLE)
    print(markers_table({"s4-a2x": service_model(a2x), "s4-fiori": fiori_corpus_model()}), end="")
