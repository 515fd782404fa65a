"""The OData CSDL reader (csdl.py, edm.py) and its lifting, checked on real $metadata.

Values asserted here were looked up in the XML files themselves (line numbers in comments
are those of the files in ../shared/data). Graph checks query the built graph with SPARQL,
selecting nodes by their names rather than by IRI, so they test what a user would ask.
"""

from __future__ import annotations

import csv
from collections import Counter
from pathlib import Path

import pytest
from lxml import etree

from conftest import DATA, FIORI_SERVICES, INVALID, SHARED, shared
from processkg.errors import (
    MalformedXMLError,
    NotODataError,
    UnresolvedReferenceError,
)
from processkg.sources.odata import csdl, edm

COMMON = "com.sap.vocabularies.Common.v1"


def type_of(service: str, type_name: str, var: str = "?t") -> str:
    """A SPARQL pattern binding ``var`` to the entity/complex type named so in the service."""
    return (
        f'?svc_{var[1:]} kg:serviceName "{service}" ; kg:schema ?schema_{var[1:]} . '
        f"{{ ?schema_{var[1:]} kg:entityType {var} }} UNION {{ ?schema_{var[1:]} kg:complexType {var} }} "
        f'{var} kg:name "{type_name}" . '
    )


def prop_of(service: str, type_name: str, prop: str) -> str:
    """Pattern binding ?p to a property of a type of a service."""
    return type_of(service, type_name) + f'?t kg:property ?p . ?p kg:name "{prop}" . '


def nav_of(service: str, type_name: str, nav: str) -> str:
    return type_of(service, type_name) + f'?t kg:navigationProperty ?n . ?n kg:name "{nav}" . '


def one(built, query: str):
    found = built.rows(query)
    assert len(found) == 1, f"expected one row, got {found}"
    return found[0] if len(found[0]) > 1 else found[0][0]


# ---------------------------------------------------------------- service names and versions


@pytest.mark.parametrize(
    "path, name",
    [
        ("s4-a2x/API_SALES_ORDER_SRV.edmx", "API_SALES_ORDER_SRV"),
        ("x/BILLOFMATERIALV2_SRV/metadata.xml", "BILLOFMATERIALV2_SRV"),
        ("x/SERVICE/$metadata", "SERVICE"),
        ("samples/oasis/TripPin.xml", "TripPin"),
    ],
)
def test_service_name_is_file_stem_or_folder_of_metadata_xml(path, name):
    assert csdl.service_name(Path(path)) == name


@pytest.mark.parametrize(
    "rel, version, edmx, dsv",
    [
        # EDMX 1.0 with DataServiceVersion 1.0, 2.0 and 3.0 (OData V2/V3 family)
        ("samples/SAP__python-pyodata/metadata_odata_org_northwind_v2.xml", "2.0", "1.0", "1.0"),
        ("s4-a2x/API_SALES_ORDER_SRV.edmx", "2.0", "1.0", "2.0"),
        ("samples/oasis-tcs__odata-openapi/odata-rw-v3.xml", "3.0", "1.0", "3.0"),
        # EDMX 4.0 / 4.01
        ("samples/OData__ODataSamples/TripPin.xml", "4.0", "4.0", ""),
        ("s4-a2x/CE_SALESORDER_0001.edmx", "4.01", "4.01", ""),
        # SAP Cloud SDK's "v4" test service: Version="4.0" in the EDMX 1.0 namespace, V4 content
        ("samples/SAP__cloud-sdk-js/v4/API_TEST_SRV.edmx", "4.0", "4.0", "2.0"),
    ],
)
def test_versions_are_read_from_edmx_and_data_service_version(rel, version, edmx, dsv):
    doc = csdl.read_document(shared("odata", *rel.split("/")))
    assert (doc.version, doc.edmx_version, doc.data_service_version) == (version, edmx, dsv)


def test_v2_document_reads_includes_declared_in_the_v4_edmx_namespace():
    # SAP V2 documents declare edmx:Reference/edmx:Include with xmlns:edmx of OData V4 inside an
    # EDMX 1.0 root (API_SALES_ORDER_SRV.edmx lines 6-9); their aliases must still resolve.
    doc = csdl.read_document(shared("odata", "s4-a2x", "API_SALES_ORDER_SRV.edmx"))
    assert doc.aliases["Common"] == COMMON
    assert doc.includes["Org.OData.Measures.V1"] == "Measures"


# ---------------------------------------------------------------- counts against an independent script


def _stats(source: str) -> dict:
    path = SHARED / "stats" / "odata_stats.tsv"
    with path.open(encoding="utf-8") as fh:
        return {r["file"]: r for r in csv.DictReader(fh, delimiter="\t") if r["source"] == source}


def test_a2x_counts_per_service_match_the_independent_count(a2x):
    """Entity sets, entity types, their properties and to-one / to-many navigation per file."""
    stats = _stats("s4-a2x")
    got = {
        r[0]: r[1:]
        for r in a2x.rows("""
        SELECT ?file (COUNT(DISTINCT ?set) AS ?sets) (COUNT(DISTINCT ?type) AS ?types)
               (COUNT(DISTINCT ?prop) AS ?props)
        WHERE { ?svc a kg:Service ; kg:sourceFile ?file ; kg:schema/kg:entityType ?type .
                OPTIONAL { ?type kg:property ?prop }
                OPTIONAL { ?svc kg:entityContainer/kg:entitySet ?set } }
        GROUP BY ?file""")
    }
    navs = Counter()
    for file, card in a2x.rows("""
        SELECT ?file ?card WHERE { ?svc a kg:Service ; kg:sourceFile ?file ;
              kg:schema/kg:entityType/kg:navigationProperty ?n . ?n kg:cardinality ?card }"""):
        navs[(file, "nav_to_many" if card == "*" else "nav_to_one")] += 1
    assert len(got) == len(stats) == 45
    for file, row in stats.items():
        key = f"s4-a2x/{file}"
        assert got[key] == (int(row["entity_sets"]), int(row["entity_types"]), int(row["properties"])), file
        for kind in ("nav_to_one", "nav_to_many"):
            assert navs[(key, kind)] == int(row[kind]), (file, kind)


def _operation_parameter_annotations(path: Path, term: str) -> int:
    """Annotations of ``term`` whose target is an action/function parameter (``Op(...)/Param``).

    The independent count includes them; the graph has no operations, so it cannot hold them.
    """
    tree = etree.parse(str(path))
    return int(
        tree.xpath(
            "count(//*[local-name()='Annotations'][contains(@Target, '(')]"
            f"/*[local-name()='Annotation'][substring-after(@Term, '.') = '{term}'])"
        )
    )


def test_fiori_value_help_counts_match_the_independent_count(fiori):
    """sap:value-list properties and Common.ValueList / ValueListWithFixedValues /
    ValueListReferences annotations per service, including its separate annotation files."""
    stats = _stats("s4-fiori")
    terms = {
        "anno_ValueList": "ValueList",
        "anno_ValueListWithFixedValues": "ValueListWithFixedValues",
        "anno_ValueListReferences": "ValueListReferences",
    }
    expected = Counter()
    for file, row in stats.items():
        service = file.split("/")[0]
        for column in ("sap_value_list_props", *terms):
            expected[(service, column)] += int(row[column] or 0)
        for column, term in terms.items():
            if service in FIORI_SERVICES:
                expected[(service, column)] -= _operation_parameter_annotations(
                    SHARED / "odata" / "s4-fiori" / file, term
                )
    got = Counter()
    for service, count in fiori.rows("""
        SELECT ?service (COUNT(DISTINCT ?p) AS ?n) WHERE {
          ?svc kg:serviceName ?service ; kg:schema/kg:entityType/kg:property ?p . ?p kg:sapValueList ?kind }
        GROUP BY ?service"""):
        got[(service, "sap_value_list_props")] = count
    for column, term in terms.items():
        for service, count in fiori.rows(f"""
            SELECT ?service (COUNT(DISTINCT ?vl) AS ?n) WHERE {{
              ?svc kg:serviceName ?service ; kg:schema/(kg:entityType|kg:complexType)/kg:property ?p .
              ?p kg:valueList ?vl . ?vl kg:annotationTerm "{COMMON}.{term}" }}
            GROUP BY ?service"""):
            got[(service, column)] = count
    for service in FIORI_SERVICES:
        for column in ("sap_value_list_props", *terms):
            assert got[(service, column)] == expected[(service, column)], (service, column)
    assert expected[("MD_BUSINESSPARTNER_SRV", "anno_ValueList")] == 172  # the test is not vacuous
    assert expected[("C_SALESORDERMANAGE_SD_V4", "anno_ValueListReferences")] == 82 - 12


# ---------------------------------------------------------------- V2: structure and sap: attributes


def test_v2_entity_set_key_and_property_facets(a2x):
    # API_SALES_ORDER_SRV.edmx line 45-49: A_SalesOrderType, key SalesOrder, MaxLength 10
    svc = "API_SALES_ORDER_SRV"
    key = one(
        a2x,
        f"""SELECT ?name WHERE {{ ?svc kg:serviceName "{svc}" ;
        kg:entityContainer/kg:entitySet ?set . ?set kg:name "A_SalesOrder" ; kg:entityType ?t .
        ?t kg:keyProperty/kg:name ?name }}""",
    )
    assert key == "SalesOrder"
    assert (
        one(a2x, f"""SELECT ?label WHERE {{ {type_of(svc, "A_SalesOrderType")} ?t kg:label ?label }}""")
        == "Sales Order Header"
    )
    facets = one(
        a2x,
        f"""SELECT ?type ?len ?nullable ?isKey ?label WHERE {{
        {prop_of(svc, "A_SalesOrderType", "SalesOrder")}
        ?p kg:edmType ?type ; kg:maxLength ?len ; kg:nullable ?nullable ; kg:isKey ?isKey ; kg:label ?label }}""",
    )
    assert facets == ("Edm.String", 10, False, True, "Sales Order")
    assert (
        one(
            a2x,
            f"""SELECT ?line WHERE {{ {prop_of(svc, "A_SalesOrderType", "SalesOrder")}
        ?p kg:sourceLine ?line }}""",
        )
        == 49
    )


def test_v2_sap_attributes_unit_semantics_flags_and_quickinfo(a2x):
    # API_SALES_ORDER_SRV.edmx line 69: TotalNetAmount sap:unit="TransactionCurrency" sap:creatable="false" ...
    svc = "API_SALES_ORDER_SRV"
    row = one(
        a2x,
        f"""SELECT ?prec ?scale ?label ?desc ?creatable ?updatable ?unit WHERE {{
        {prop_of(svc, "A_SalesOrderType", "TotalNetAmount")}
        ?p kg:precision ?prec ; kg:scale ?scale ; kg:label ?label ; kg:description ?desc ;
           kg:creatable ?creatable ; kg:updatable ?updatable ; kg:unitProperty/kg:name ?unit }}""",
    )
    assert row == (
        16,
        "3",
        "Net Value",
        "Net Value of the Sales Order in Document Currency",
        False,
        False,
        "TransactionCurrency",
    )
    assert (
        one(
            a2x,
            f"""SELECT ?sem WHERE {{ {prop_of(svc, "A_SalesOrderType", "TransactionCurrency")}
        ?p kg:semantics ?sem }}""",
        )
        == "currency-code"
    )
    # line 548-549: A_SalesOrder has no sap:creatable, A_SalesOrderHeaderPartner is not creatable
    assert a2x.values(f"""SELECT ?c WHERE {{ ?svc kg:serviceName "{svc}" ; kg:entityContainer/kg:entitySet ?s .
        ?s kg:name "A_SalesOrderHeaderPartner" ; kg:creatable ?c }}""") == [False]
    assert (
        a2x.values(f"""SELECT ?c WHERE {{ ?svc kg:serviceName "{svc}" ; kg:entityContainer/kg:entitySet ?s .
        ?s kg:name "A_SalesOrder" ; kg:creatable ?c }}""")
        == []
    )


def test_v2_sap_text_filterable_and_value_list_kind(samples):
    # SAP__python-pyodata/metadata.xml lines 17-25: Key sap:value-list="standard",
    # Data sap:filterable="false" sap:text="DataName"
    svc = "SAP__python-pyodata"  # metadata.xml: the service is named after its folder
    assert one(
        samples,
        f"""SELECT ?f ?text WHERE {{ {prop_of(svc, "MasterEntity", "Data")}
        ?p kg:filterable ?f ; kg:textProperty/kg:name ?text }}""",
    ) == (False, "DataName")
    assert (
        one(
            samples,
            f"""SELECT ?kind WHERE {{ {prop_of(svc, "MasterEntity", "Key")}
        ?p kg:sapValueList ?kind }}""",
        )
        == "standard"
    )


def test_v2_navigation_cardinality_target_set_and_association(a2x):
    # API_SALES_ORDER_SRV.edmx line 125 (to_Item) and lines 491-494 (End Multiplicity="*")
    svc = "API_SALES_ORDER_SRV"
    row = one(
        a2x,
        f"""SELECT ?card ?type ?set ?rel ?to WHERE {{ {nav_of(svc, "A_SalesOrderType", "to_Item")}
        ?n kg:cardinality ?card ; kg:targetEntityType/kg:name ?type ; kg:targetEntitySet/kg:name ?set ;
           kg:relationship ?rel ; kg:toRole ?to }}""",
    )
    assert row == (
        "*",
        "A_SalesOrderItemType",
        "A_SalesOrderItem",
        "API_SALES_ORDER_SRV.assoc_42CCE6159E335C5B7697EE6BC8D37107",
        "ToRole_assoc_42CCE6159E335C5B7697EE6BC8D37107",
    )
    # every End multiplicity of V2 appears among the A2X navigation properties
    assert set(a2x.values("SELECT DISTINCT ?c WHERE { ?n a kg:NavigationProperty ; kg:cardinality ?c }")) == {
        "1",
        "0..1",
        "*",
    }


def test_v2_partner_and_referential_constraint_seen_from_both_ends(samples):
    # metadata_odata_org_northwind_v2.xml lines 13, 118 and 365-376 (FK_Products_Categories:
    # Categories 0..1, Products *, principal Categories.CategoryID, dependent Products.CategoryID)
    svc = "metadata_odata_org_northwind_v2"
    products = one(
        samples,
        f"""SELECT ?card ?partner ?local ?remote WHERE {{
        {nav_of(svc, "Category", "Products")}
        ?n kg:cardinality ?card ; kg:partner/kg:name ?partner ;
           kg:referentialConstraint ?rc . ?rc kg:localProperty ?l ; kg:referencedProperty ?r .
        ?t kg:property ?l . ?l kg:name ?local . ?r kg:name ?remote .
        ?n kg:targetEntityType ?target . ?target kg:property ?r }}""",
    )
    assert products == ("*", "Category", "CategoryID", "CategoryID")
    category = one(
        samples,
        f"""SELECT ?card ?partner ?target WHERE {{ {nav_of(svc, "Product", "Category")}
        ?n kg:cardinality ?card ; kg:partner/kg:name ?partner ; kg:targetEntityType/kg:name ?target }}""",
    )
    assert category == ("0..1", "Products", "Category")


def test_v2_association_end_of_undeclared_type_resolves_through_association_set(samples):
    # SAP__cloud-sdk-js/v2/API_TEST_SRV.edmx lines 213-215 name End types ...LinkParent/...LinkChild
    # that are not declared (the types are ...Type); the AssociationSet (lines 284-286) binds the
    # roles to entity sets of declared types, as SAP's own clients resolve it.
    row = one(
        samples,
        """SELECT ?card ?target WHERE {
        ?svc kg:serviceName "API_TEST_SRV" ; kg:odataVersion "2.0" ;
             kg:schema/kg:entityType ?t . ?t kg:name "A_TestEntityCircularLinkParentType" ;
             kg:navigationProperty ?n . ?n kg:name "to_Child" ; kg:cardinality ?card ;
             kg:targetEntityType/kg:name ?target }""",
    )
    assert row == ("*", "A_TestEntityCircularLinkChildType")


# ---------------------------------------------------------------- V4


def test_v4_collection_navigation_partner_binding_and_constraints(a2x):
    # CE_SALESORDER_0001.edmx: SalesOrder_Type/_Item is Collection(...) with Partner="_SalesOrder"
    # (line 705-707) and bound to SalesOrderItem (line 843); SalesOrderItemText_Type/_Item is
    # Nullable="false" with Partner="_ItemText" and two ReferentialConstraints (lines 87-92).
    svc = "CE_SALESORDER_0001"
    assert one(
        a2x,
        f"""SELECT ?card ?partner ?set WHERE {{ {nav_of(svc, "SalesOrder_Type", "_Item")}
        ?n kg:cardinality ?card ; kg:partner/kg:name ?partner ; kg:targetEntitySet/kg:name ?set }}""",
    ) == ("*", "_SalesOrder", "SalesOrderItem")
    assert one(
        a2x,
        f"""SELECT ?card ?partner ?type WHERE {{ {nav_of(svc, "SalesOrderItemText_Type", "_Item")}
        ?n kg:cardinality ?card ; kg:partner/kg:name ?partner ; kg:edmType ?type }}""",
    ) == ("1", "_ItemText", "com.sap.gateway.srvd_a2x.api_salesorder.v0001.SalesOrderItem_Type")
    pairs = a2x.rows(f"""SELECT ?local ?remote WHERE {{ {nav_of(svc, "SalesOrderItemText_Type", "_Item")}
        ?n kg:referentialConstraint ?rc . ?rc kg:localProperty/kg:name ?local ;
        kg:referencedProperty/kg:name ?remote }} ORDER BY ?local""")
    assert pairs == [("SalesOrder", "SalesOrder"), ("SalesOrderItem", "SalesOrderItem")]


def test_v4_annotations_through_sap_self_and_sap_common_aliases(a2x):
    # CE_SALESORDER_0001.edmx lines 921-925: Target="SAP__self.SalesOrderItemText_Type/SalesOrder"
    # with SAP__core.Computed and SAP__common.Label "Sales Order"; lines 3093-3099: SalesOrderType
    # SAP__core.Immutable, SAP__common.Label "Language key", SAP__common.QuickInfo.
    svc = "CE_SALESORDER_0001"
    assert one(
        a2x,
        f"""SELECT ?label ?computed ?nullable WHERE {{
        {prop_of(svc, "SalesOrderItemText_Type", "SalesOrder")}
        ?p kg:label ?label ; kg:computed ?computed ; kg:nullable ?nullable }}""",
    ) == ("Sales Order", True, False)
    assert one(
        a2x,
        f"""SELECT ?label ?desc ?immutable WHERE {{ {prop_of(svc, "SalesOrder_Type", "SalesOrderType")}
        ?p kg:label ?label ; kg:description ?desc ; kg:immutable ?immutable }}""",
    ) == ("Language key", "Language key for sales document type", True)


def test_v4_contains_target_and_nullable_to_one(samples):
    # oasis-tcs__odata-openapi/containment.xml lines 112 and 120
    rows = samples.rows("""SELECT ?nav ?card ?contains ?partner WHERE {
        ?svc kg:serviceName "containment" ; kg:schema/kg:entityType ?t . ?t kg:navigationProperty ?n .
        ?n kg:name ?nav ; kg:cardinality ?card . FILTER(?nav IN ("items", "header"))
        OPTIONAL { ?n kg:containsTarget ?contains } OPTIONAL { ?n kg:partner/kg:name ?partner } }
        ORDER BY ?nav""")
    assert rows == [("header", "0..1", None, "items"), ("items", "*", True, "header")]


def test_v4_enum_type_becomes_members_and_fixed_value_codes(samples):
    # OData__ODataSamples/TripPin.xml lines 5-9 and 54: Person/Gender has type PersonGender
    members = samples.rows("""SELECT ?name ?value WHERE {
        ?e a kg:EnumType ; kg:name "PersonGender" ; kg:sourceFile "samples/OData__ODataSamples/TripPin.xml" ;
           kg:member ?m . ?m kg:name ?name ; kg:memberValue ?value } ORDER BY ?value""")
    assert members == [("Male", "0"), ("Female", "1"), ("Unknown", "2")]
    codes = samples.rows("""SELECT ?code ?fixed ?source WHERE {
        ?svc kg:serviceName "TripPin" ; kg:sourceFile "samples/OData__ODataSamples/TripPin.xml" ;
             kg:schema/kg:entityType ?t . ?t kg:name "Person" ; kg:property ?p . ?p kg:name "Gender" ;
             kg:valueList ?vl . ?vl kg:fixedValues ?fixed ; kg:code ?c . ?c kg:codeValue ?code ; kg:codeSource ?source }
        ORDER BY ?code""")
    assert codes == [("Female", True, "metadata"), ("Male", True, "metadata"), ("Unknown", True, "metadata")]


def test_v4_validation_allowed_values_inline_and_through_schema_alias(samples):
    # oasis-tcs__odata-openapi/annotations.xml lines 33-47 (inline) and 360-372 (Target "self.SinglePartKey/...")
    for prop in ("AllowedValues", "AllowedValuesExt"):
        codes = samples.values(f"""SELECT ?code WHERE {{ {prop_of("annotations", "SinglePartKey", prop)}
            ?p kg:valueList/kg:code/kg:codeValue ?code }}""")
        assert codes == ["blue", "green", "red"], prop


def test_v4_core_description(samples):
    # oasis-tcs__odata-openapi/descriptions.xml: Property "id" with Core.Description
    assert samples.values("""SELECT ?d WHERE { ?p a kg:Property ; kg:name "id" ; kg:description ?d ;
        kg:sourceFile "samples/oasis-tcs__odata-openapi/descriptions.xml" }""") == ["Property - Description"]


# ---------------------------------------------------------------- value lists


def test_common_value_list_with_parameters_and_collection_path(samples):
    # SAP__python-pyodata/metadata.xml lines 242-268
    svc = "SAP__python-pyodata"
    vl = one(
        samples,
        f"""SELECT ?path ?label ?search ?set WHERE {{ {prop_of(svc, "MasterEntity", "Data")}
        ?p kg:valueList ?vl . ?vl kg:collectionPath ?path ; kg:label ?label ; kg:searchSupported ?search ;
        kg:valueListEntitySet/kg:name ?set }}""",
    )
    assert vl == ("DataValueHelp", "Data", True, "DataValueHelp")
    params = samples.rows(f"""SELECT ?order ?kind ?vlp ?local WHERE {{ {prop_of(svc, "MasterEntity", "Data")}
        ?p kg:valueList/kg:parameter ?x . ?x kg:parameterOrder ?order ; kg:parameterKind ?kind ;
        kg:valueListPropertyName ?vlp . OPTIONAL {{ ?x kg:localDataProperty/kg:name ?local }} }} ORDER BY ?order""")
    assert params == [
        (0, "In", "Type", "DataType"),
        (1, "Out", "Value", "Data"),
        (2, "InOut", "Name", "DataName"),
        (3, "DisplayOnly", "Description", None),
    ]


def test_qualified_value_lists_stay_apart(samples):
    # SAP__python-pyodata/metadata.xml lines 270-309: Building/City has an unqualified value list
    # and one with Qualifier="2ND_BUILDING_CITY_IGNORED" (on the Annotations element)
    # (Building is a ComplexType)
    quals = samples.rows(f"""SELECT ?q ?path WHERE {{ {prop_of("SAP__python-pyodata", "Building", "City")}
        ?p kg:valueList ?vl . ?vl kg:collectionPath ?path . OPTIONAL {{ ?vl kg:qualifier ?q }} }} ORDER BY ?q""")
    assert quals == [(None, "Cities"), ("2ND_BUILDING_CITY_IGNORED", "Cities")]


def test_v2_value_list_annotations_in_v4_namespace_resolve_common_alias(fiori):
    # BILLOFMATERIALV2_SRV/metadata.xml: <Annotations Target="BILLOFMATERIALV2_SRV.C_MaterialBOMType/Material">
    # with Term="Common.ValueList", where "Common" is an alias from an edmx:Include in the V4 namespace
    svc = "BILLOFMATERIALV2_SRV"
    assert one(
        fiori,
        f"""SELECT ?path ?label ?kind ?local WHERE {{ {prop_of(svc, "C_MaterialBOMType", "Material")}
        ?p kg:valueList ?vl . ?vl kg:collectionPath ?path ; kg:label ?label ;
        kg:parameter ?x . ?x kg:parameterOrder 0 ; kg:parameterKind ?kind ; kg:localDataProperty/kg:name ?local }}""",
    ) == ("C_BOMMaterialVH", "Value help view for BOM application", "InOut", "Material")
    # ... followed by <Annotation Term="Common.ValueListWithFixedValues"/> (a tagging term: true)
    assert (
        one(
            fiori,
            f"""SELECT ?fixed WHERE {{ {prop_of(svc, "I_ChangeMasterType", "ChangeNumberStatus")}
        ?p kg:valueList/kg:fixedValues ?fixed }}""",
        )
        is True
    )


def test_v4_value_list_references_and_fixed_values(fiori):
    # C_SALESORDERMANAGE_SD_V4/metadata.xml lines 1793-1801
    svc = "C_SALESORDERMANAGE_SD_V4"
    refs = fiori.values(f"""SELECT ?ref WHERE {{ {prop_of(svc, "SalesOrderItemType", "SalesOrderItemCategory")}
        ?p kg:valueList/kg:valueListReference ?ref }}""")
    assert len(refs) == 1 and refs[0].startswith("../../../../srvd_f4/sap/i_salesdocumentitemcategory/0001;")
    assert one(
        fiori,
        f"""SELECT ?label ?computed WHERE {{ {prop_of(svc, "SalesOrderItemType", "HigherLevelItem")}
        ?p kg:label ?label ; kg:computed ?computed }}""",
    ) == ("Higher-Level Item", True)


def test_annotation_file_is_merged_into_its_service(fiori):
    # MD_BUSINESSPARTNER_SRV/serviceAnnotations.annotation.xml annotates the service in metadata.xml
    files = fiori.values("""SELECT ?f WHERE { ?svc kg:serviceName "MD_BUSINESSPARTNER_SRV" ; kg:sourceFile ?f }""")
    assert files == ["MD_BUSINESSPARTNER_SRV/metadata.xml", "MD_BUSINESSPARTNER_SRV/serviceAnnotations.annotation.xml"]
    assert "MD_BUSINESSPARTNER_SRV/serviceAnnotations.annotation.xml" in fiori.report.files
    assert not [w for w in fiori.report.warnings if "targets no service" in w]
    assert len(fiori.values("SELECT ?s WHERE { ?s a kg:Service }")) == 5


def test_value_list_only_in_annotation_file_shows_on_the_service_property(handmade):
    # tests/data/odata/HANDMADE_SALES_SRV: OrderType's value list and label are only in the
    # annotation file, which reaches the service through its include alias "SAP"
    svc = "HANDMADE_SALES_SRV"
    row = one(
        handmade,
        f"""SELECT ?label ?path ?set ?line WHERE {{ {prop_of(svc, "OrderType", "OrderType")}
        ?p kg:label ?label ; kg:valueList ?vl . ?vl kg:collectionPath ?path ;
        kg:valueListEntitySet/kg:name ?set ; kg:sourceLine ?line }}""",
    )
    assert row == ("Sales Order Type", "VL_OrderType", "VL_OrderType", 19)  # line 19 of the annotation file
    assert "odata/HANDMADE_SALES_SRV/HANDMADE_SALES_ANNO_MDL.annotation.xml" in handmade.values(
        f"""SELECT ?f WHERE {{ {prop_of(svc, "OrderType", "OrderType")} ?p kg:valueList/kg:sourceFile ?f }}"""
    )
    assert one(
        handmade,
        f"""SELECT ?kind ?local WHERE {{ {prop_of(svc, "OrderType", "OrderType")}
        ?p kg:valueList/kg:parameter ?x . ?x kg:parameterOrder 0 ; kg:parameterKind ?kind ;
        kg:localDataProperty ?l . ?l kg:name ?local . ?t kg:property ?l }}""",
    ) == ("InOut", "OrderType")
    # Status: sap:value-list="fixed-values" in metadata.xml and ValueListWithFixedValues in the annotation file
    assert one(
        handmade,
        f"""SELECT ?kind ?fixed WHERE {{ {prop_of(svc, "OrderType", "Status")}
        ?p kg:sapValueList ?kind ; kg:valueList/kg:fixedValues ?fixed }}""",
    ) == ("fixed-values", True)


def test_handmade_v4_features(handmade):
    svc = "HANDMADE_PURCHASING"
    assert one(
        handmade,
        f"""SELECT ?label ?desc ?computed WHERE {{ {prop_of(svc, "PurchaseOrder_Type", "PurchaseOrder")}
        ?p kg:label ?label ; kg:description ?desc ; kg:computed ?computed }}""",
    ) == ("Purchase Order", "Number of the purchase order", True)
    assert handmade.rows(f"""SELECT ?code ?label WHERE {{ {prop_of(svc, "PurchaseOrder_Type", "Priority")}
        ?p kg:valueList/kg:code ?c . ?c kg:codeValue ?code ; rdfs:label ?label }} ORDER BY ?code""") == [
        ("1", "High"),
        ("2", "Normal"),
    ]
    assert one(
        handmade,
        f"""SELECT ?q ?path ?text WHERE {{ {prop_of(svc, "PurchaseOrder_Type", "Supplier")}
        ?p kg:valueList ?vl ; kg:textProperty/kg:name ?text . ?vl kg:qualifier ?q ; kg:collectionPath ?path }}""",
    ) == ("ByName", "Supplier", "SupplierName")
    assert handmade.rows(f"""SELECT ?kind ?vlp ?local ?const WHERE {{ {prop_of(svc, "PurchaseOrder_Type", "Supplier")}
        ?p kg:valueList/kg:parameter ?x . ?x kg:parameterOrder ?o ; kg:parameterKind ?kind ;
        kg:valueListPropertyName ?vlp . OPTIONAL {{ ?x kg:localDataProperty/kg:name ?local }}
        OPTIONAL {{ ?x kg:constant ?const }} }} ORDER BY ?o""") == [
        ("In", "SupplierName", "SupplierName", None),
        ("Out", "Supplier", "Supplier", None),
        ("Constant", "Language", None, "EN"),
    ]
    assert one(
        handmade,
        f"""SELECT ?c ?et WHERE {{ {prop_of(svc, "PurchaseOrder_Type", "Notes")}
        ?p kg:isCollection ?c ; kg:edmType ?et }}""",
    ) == (True, "Collection(Edm.String)")
    navs = handmade.rows(f"""SELECT ?nav ?card ?contains ?set WHERE {{ {type_of(svc, "PurchaseOrder_Type")}
        ?t kg:navigationProperty ?n . ?n kg:name ?nav ; kg:cardinality ?card .
        OPTIONAL {{ ?n kg:containsTarget ?contains }} OPTIONAL {{ ?n kg:targetEntitySet/kg:name ?set }} }}
        ORDER BY ?nav""")
    assert navs == [("_Items", "*", True, None), ("_Supplier", "0..1", None, "Supplier")]
    assert (
        one(
            handmade,
            f"""SELECT ?label WHERE {{ ?svc kg:serviceName "{svc}" ;
        kg:entityContainer/kg:entitySet ?s . ?s kg:name "PurchaseOrder" ; kg:label ?label }}""",
        )
        == "Purchase Orders"
    )
    assert handmade.values(f"""SELECT ?name WHERE {{ ?svc kg:serviceName "{svc}" ;
        kg:entityContainer/kg:singleton/kg:name ?name }}""") == ["Settings"]


# ---------------------------------------------------------------- errors


def test_malformed_xml_reports_file_line_and_column():
    with pytest.raises(MalformedXMLError, match=r"malformed\.xml:8:\d+: malformed XML") as info:
        csdl.read_document(INVALID / "malformed.xml", "malformed.xml")
    assert (info.value.file, info.value.line) == ("malformed.xml", 8)
    assert info.value.column is not None


@pytest.mark.parametrize("name", ["AdventureWorksModel.edmx", "NorthwindModel.edmx"])
def test_entity_framework_designer_file_is_rejected_in_one_sentence(name):
    path = shared("odata", "not-service-metadata", name)
    with pytest.raises(NotODataError, match=r"Entity Framework designer file") as info:
        csdl.read_document(path, name)
    message = str(info.value)
    assert message.startswith(f"{name}:2: ") and "not an OData service metadata document" in message
    assert "\n" not in message


def test_bpmn_given_as_odata_is_not_odata():
    with pytest.raises(NotODataError, match=r"order-flow\.bpmn:\d+: root element is .*definitions"):
        csdl.read_document(DATA / "bpmn" / "order-flow.bpmn", "order-flow.bpmn")


def test_edmx_without_data_services_is_not_odata():
    with pytest.raises(NotODataError, match=r"no-dataservices\.xml:3: .*no edmx:DataServices"):
        csdl.read_document(INVALID / "no-dataservices.xml", "no-dataservices.xml")


@pytest.mark.parametrize(
    "name, line, tag, element, ref",
    [
        ("unresolved-entitytype.xml", 11, "EntitySet", "Orders", "Shop.OrderType"),
        (
            "unresolved-association.edmx",
            11,
            "NavigationProperty",
            "SHOP_SRV.Order/to_Items",
            "SHOP_SRV.assoc_OrderItems",
        ),
        ("unresolved-association-end.edmx", 17, "Association", "SHOP_SRV.assoc_OrderItems", "SHOP_SRV.Item"),
        ("unresolved-nav-target.xml", 10, "NavigationProperty", "Shop.Order/Items", "Shop.Item"),
        ("unresolved-property-type.xml", 9, "Property", "Shop.Customer/Address", "Shop.Address"),
    ],
)
def test_unresolved_references_name_file_line_tag_and_id(name, line, tag, element, ref):
    doc = csdl.read_document(INVALID / name, name)
    with pytest.raises(UnresolvedReferenceError, match=rf"^{name.replace('.', '[.]')}:{line}: {tag} ") as info:
        edm.resolve(doc)
    err = info.value
    assert (err.file, err.line, err.tag, err.element_id, err.ref) == (name, line, tag, element, ref)
    assert f"{element!r} refers to {ref!r}" in str(err)


def test_a_duplicate_entity_type_is_an_error_or_with_warn_a_warning():
    from processkg.errors import DuplicateDeclarationError

    name = "duplicate-entitytype.xml"
    with pytest.raises(
        DuplicateDeclarationError, match=rf"^{name}:12: EntityType 'DUP\.Order' is already declared on line 8"
    ):
        csdl.read_document(INVALID / name, name)
    doc = csdl.read_document(INVALID / name, name, strict=False)
    assert [p.name for p in doc.types["DUP.Order"].properties] == ["Id"]  # the first is kept
    assert doc.warnings == [
        f"{name}:12: EntityType 'DUP.Order' is already declared on line 8; a qualified "
        f"name is declared once (see {csdl.SPEC_V4}#sec_Schema); the second EntityType is left out"
    ]
