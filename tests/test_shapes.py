"""Shapes: hand-written graph shapes on the real corpus, generated payload shapes, Edm JSON forms."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyoxigraph import Literal, NamedNode, Triple
from pyshacl import validate as shacl_validate

from processkg.build.pipeline import BuildOptions, build_store
from processkg.graph.handle import StoreLocation, open_store
from processkg.graph.store import canonical_ntriples, write_store
from processkg.services.model import Prop, TypeInfo, is_required, service_model, standard_codes, standard_list
from processkg.validate import literals
from processkg.validate.payload_shapes import check_graph, generate_shapes, model_shapes, shapes_turtle, stored_shapes
from processkg.validate.shacl import to_rdflib
from processkg.vocab import KGT, RDF_TYPE

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data" / "odata"
A2X = SHARED / "s4-a2x"
FIORI = SHARED / "s4-fiori"
DEMO = ROOT / "data" / "demo"
SH = "http://www.w3.org/ns/shacl#"
XSD = "http://www.w3.org/2001/XMLSchema#"
ID = "https://w3id.org/processkg/id/odata/"


def _build(tmp_path_factory, name: str, **options):
    store = tmp_path_factory.mktemp(name) / "store"
    build_store(BuildOptions(store=StoreLocation.parse(store), **options))
    return store


@pytest.fixture(scope="session")
def a2x_shapes(a2x_store):
    triples = generate_shapes(open_store(a2x_store))
    return {(t.subject.value, t.predicate.value, t.object.value) for t in triples}


# ---------------------------------------------------------------- shapes written by kg build


@pytest.mark.parametrize("fixture", ["tasks_store", "fiori", "operations_store"])
def test_the_shapes_kg_build_writes_service_by_service_are_the_shapes_of_the_whole_store(fixture, request):
    """kg build generates the payload shapes of each service from its own triples while it lifts
    (memory bounded by one service); together they are exactly the shapes of the finished store:
    A2X with bound code lists, Fiori services with annotation files and V4, V2/V4 operations."""
    built = request.getfixturevalue(fixture)
    store = open_store(getattr(built, "store_dir", built))
    stored = {str(t) for t in stored_shapes(store)}
    assert len(stored) > 1000
    assert stored == {str(t) for t in generate_shapes(store)}


# ---------------------------------------------------------------- graph shapes


def test_graph_shapes_hold_on_the_a2x_corpus(a2x_store):
    assert check_graph(open_store(a2x_store)) == []


def test_graph_shapes_hold_on_fiori_services_with_annotation_files(tmp_path_factory):
    dirs = [FIORI / s for s in ("MM_PUR_PO_MAINT_V2_SRV", "C_SALESORDERMANAGE_SD_V4", "SD_F1814_SO_FS_SRV")]
    assert check_graph(open_store(_build(tmp_path_factory, "fiori", odata=dirs))) == []


def test_graph_shapes_hold_on_the_demo_graph_with_bpmn_and_mapping(demo_store):
    assert check_graph(open_store(demo_store)) == []


def test_graph_shapes_name_a_broken_graph(tmp_path):
    """A type without key, a navigation without target, bpmn:next from a non-activity: all reported."""
    t, nav, ev = (
        NamedNode(ID + "X/type/X.T"),
        NamedNode(ID + "X/type/X.T/nav/to_Y"),
        NamedNode("https://w3id.org/processkg/id/bpmn/p.bpmn/Event_1"),
    )
    triples = [
        Triple(t, RDF_TYPE, KGT.EntityType),
        Triple(t, KGT.name, Literal("T")),
        Triple(t, KGT.qualifiedName, Literal("X.T")),
        Triple(t, KGT.navigationProperty, nav),
        Triple(nav, RDF_TYPE, KGT.NavigationProperty),
        Triple(nav, KGT.name, Literal("to_Y")),
        Triple(nav, KGT.cardinality, Literal("many")),
        Triple(ev, NamedNode("https://w3id.org/processkg/bpmn#next"), ev),
    ]
    (tmp_path / "s").mkdir()
    (tmp_path / "data.nt").write_bytes(canonical_ntriples(triples))
    write_store(tmp_path / "s", tmp_path / "data.nt", lambda _store: {})
    found = {
        (
            r["shape"],
            r["focus"].rsplit("/", 1)[-1],
            r["path"].rsplit("#", 1)[-1] if r["path"] else None,
            r["constraint"],
        )
        for r in check_graph(open_store(tmp_path / "s"))
    }
    assert ("EntityType", "X.T", "keyProperty", "MinCountConstraintComponent") in found
    assert ("NavigationProperty", "to_Y", "targetEntityType", "MinCountConstraintComponent") in found
    assert ("NavigationProperty", "to_Y", "cardinality", "InConstraintComponent") in found
    assert ("Next", "Event_1", None, "ClassConstraintComponent") in found


# ---------------------------------------------------------------- payload shapes

SO = ID + "API_SALES_ORDER_SRV/type/API_SALES_ORDER_SRV."


def test_node_shape_per_entity_type_is_closed_and_targets_the_type(a2x_shapes):
    shape = SO + "A_SalesOrderType/shape"
    assert (shape, RDF_TYPE.value, SH + "NodeShape") in a2x_shapes
    assert (shape, SH + "targetClass", SO + "A_SalesOrderType") in a2x_shapes
    assert (shape, SH + "closed", "true") in a2x_shapes
    allowed = {o for s, p, o in a2x_shapes if s.startswith(shape + "/allowed/") and p.endswith("#first")}
    assert SO + "A_SalesOrderType/prop/SalesOrderType" in allowed
    assert SO + "A_SalesOrderType/nav/to_Item" in allowed


def test_property_shapes_carry_datatype_length_codes_and_read_only(a2x_shapes):
    org = SO + "A_SalesOrderType/prop/SalesOrganization"
    assert {
        (org + "/shape", SH + "datatype", XSD + "string"),
        (org + "/shape", SH + "maxLength", "4"),
        (org + "/shape", SH + "maxCount", "1"),
        (org + "/shape", SH + "targetSubjectsOf", org),
    } <= a2x_shapes
    amount = SO + "A_SalesOrderType/prop/TotalNetAmount/shape"
    assert (amount, SH + "maxCount", "0") in a2x_shapes
    assert not any(s == amount and p == SH + "datatype" for s, p, _ in a2x_shapes)
    currency = SO + "A_SalesOrderType/prop/TransactionCurrency/shape"
    head = next(o for s, p, o in a2x_shapes if s == currency and p == SH + "in")
    assert head == "https://w3id.org/processkg/id/codes/iso/currency/0"
    assert (SO + "A_SalesOrderItemType/prop/RequestedQuantity/shape", SH + "datatype", XSD + "decimal") in a2x_shapes


def test_navigation_shapes_for_deep_insert(a2x_shapes):
    to_item = SO + "A_SalesOrderType/nav/to_Item/shape"
    assert (to_item, SH + "class", SO + "A_SalesOrderItemType") in a2x_shapes
    assert not any(s == to_item and p == SH + "maxCount" for s, p, _ in a2x_shapes)
    to_order = SO + "A_SalesOrderItemType/nav/to_SalesOrder/shape"
    assert (to_order, SH + "maxCount", "1") in a2x_shapes


def test_required_properties_get_min_count(a2x_shapes):
    text = ID + "API_OUTBOUND_DELIVERY_SRV/type/API_OUTBOUND_DELIVERY_SRV.A_OutbDeliveryHeaderTextType"
    required = text + "/prop/TextElementText/shape/required"
    assert (text + "/shape", SH + "property", required) in a2x_shapes
    assert (required, SH + "minCount", "1") in a2x_shapes


def test_shapes_are_deterministic_and_valid_shacl(demo_store):
    store = open_store(demo_store)
    first, second = generate_shapes(store), model_shapes(service_model(store))
    assert canonical_ntriples(first) == canonical_ntriples(second)
    assert shapes_turtle(first) == shapes_turtle(second)
    shapes = to_rdflib(first)
    conforms, _report, text = shacl_validate(shapes, shacl_graph=shapes, meta_shacl=True)
    assert conforms, text


# ---------------------------------------------------------------- what a create needs


def _prop(**kw) -> Prop:
    return Prop(**{"iri": "urn:p", "name": "P", "edm_type": "Edm.String", "nullable": False, **kw})


V2_TYPE = TypeInfo("urn:t", "NS.T", "EntityType", "S", "2.0", "NS")
RAP_TYPE = TypeInfo("urn:t", "NS.T", "EntityType", "S", "4.0", "com.sap.gateway.srvd_a2x.api_salesorder.v0001")


@pytest.mark.parametrize(
    "overrides,owner,required",
    [
        ({}, V2_TYPE, True),
        ({"nullable": True}, V2_TYPE, False),
        ({"key": True}, V2_TYPE, False),
        ({"read_only": True}, V2_TYPE, False),
        ({"default": "X"}, V2_TYPE, False),
        ({"edm_type": "Collection(Edm.String)"}, V2_TYPE, False),
        ({}, RAP_TYPE, False),
    ],
)
def test_is_required(overrides, owner, required):
    assert is_required(_prop(**overrides), owner) is required


@pytest.mark.parametrize(
    "semantics,value_help,expected",
    [
        ("currency-code", "", "currency"),
        (None, "I_Currency", "currency"),
        (None, "I_Country", "country"),
        (None, "C_TelephoneCountryVHTemp", None),
        (None, "I_Language", "language"),
        (None, "I_LanguageText", None),
        ("unit-of-measure", "I_UnitOfMeasure", None),
    ],
)
def test_standard_lists(semantics, value_help, expected):
    assert standard_list(semantics, value_help) == expected


def test_standard_codes_come_from_pycountry():
    assert {"EUR", "USD", "JPY"} <= set(standard_codes("currency"))
    assert {"DE", "US", "JP"} <= set(standard_codes("country"))
    assert {"EN", "DE", "JA"} <= set(standard_codes("language"))
    assert "EURO" not in standard_codes("currency")


# ---------------------------------------------------------------- OData JSON lexical forms


@pytest.mark.parametrize(
    "value,edm,v2,lexical,ok",
    [
        ("12.50", "Edm.Decimal", True, "12.50", True),
        (12.5, "Edm.Decimal", True, None, False),
        (12.5, "Edm.Decimal", False, "12.5", True),
        ("42", "Edm.Int64", True, "42", True),
        (42, "Edm.Int64", True, None, False),
        (2**31, "Edm.Int32", False, None, False),
        (True, "Edm.Int32", False, None, False),
        ("/Date(0)/", "Edm.DateTime", True, "1970-01-01T00:00:00.000Z", True),
        ("2025-01-31T10:00:00", "Edm.DateTimeOffset", False, None, False),
        ("2025-01-31T10:00:00Z", "Edm.DateTimeOffset", False, "2025-01-31T10:00:00+00:00", True),
        ("2025-02-30", "Edm.Date", False, None, False),
        ("PT13H20M00S", "Edm.Time", True, "PT13H20M00S", True),
        ("25:00:00", "Edm.TimeOfDay", False, None, False),
        ("AQID", "Edm.Binary", False, "AQID", True),
        ("yes", "Edm.Boolean", True, None, False),
        (3, "Edm.String", True, None, False),
    ],
)
def test_edm_json_forms(value, edm, v2, lexical, ok):
    text, datatype, problem = literals.literal(value, edm, v2)
    assert (problem is None) is ok
    if ok:
        assert text == lexical
    else:
        assert (
            datatype
            != literals.XSD_NS
            + {
                "Edm.Decimal": "decimal",
                "Edm.Int64": "long",
                "Edm.Int32": "int",
                "Edm.DateTime": "dateTime",
                "Edm.DateTimeOffset": "dateTime",
                "Edm.Date": "date",
                "Edm.TimeOfDay": "time",
                "Edm.Boolean": "boolean",
                "Edm.String": "string",
            }[edm]
        )
