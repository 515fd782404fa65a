"""The OpenAPI 3 reader and lifter: real SOCBench-D documents (one domain, and the files that use
$ref and allOf), hand-made documents for each feature, and one test per kind of bad input.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from pyoxigraph import RdfFormat, Store

from conftest import rows, shared
from processkg.errors import ProcessKGError
from processkg.graph.store import canonical_ntriples, load_query, plain, select
from processkg.sources import openapi
from processkg.sources.openapi import (
    MalformedJSONError,
    NotOpenAPIError,
    OpenAPIReferenceError,
    OpenAPIStructureError,
    UnsupportedOpenAPIError,
    lift_all,
    read_spec,
)

ENERGY = ("socbench-d", "socbenchd_1", "01-energy")
PERSONAL_CARE = (
    "socbench-d",
    "socbenchd_4",
    "05-consumer staples",
    "03-Personal Care Products Recommendation API",
    "openapi.json",
)
MACHINE = ("socbench-d", "socbenchd_1", "03-industrials", "01-Machine Condition Monitoring Service", "openapi.json")


def store_of(triples: list) -> Store:
    store = Store()
    store.bulk_load(canonical_ntriples(triples), format=RdfFormat.N_TRIPLES)
    return store


def write(tmp_path: Path, doc, name: str = "api.json") -> Path:
    path = tmp_path / name
    path.write_text(doc if isinstance(doc, str) else json.dumps(doc, indent=2), encoding="utf-8")
    return path


def minimal(**paths) -> dict:
    return {"openapi": "3.0.3", "info": {"title": "T", "version": "1"}, "paths": paths}


# ---------------------------------------------------------------- real documents


@pytest.fixture(scope="module")
def energy():
    folder = shared(*ENERGY)
    built = lift_all([folder])
    return folder, built, store_of(built.triples)


def test_energy_domain_lifts_five_services_of_ten_operations(energy):
    _folder, built, store = energy
    assert sorted(built.services.values()) == [10] * 5
    assert built.warnings == [
        'ignored 1 JSON file(s) that are not OpenAPI documents (no "openapi" field), e.g. 01-energy/queries.json'
    ]
    names, found = select(store, load_query("openapi-endpoints"))
    assert len(found) == 50
    services = {plain(r[names.index("service")]) for r in found}
    assert "01-Energy Consumption Analysis Service" in services and len(services) == 5


def test_every_operation_matches_the_json_and_its_line(energy):
    """Method, path and the line of the operation object agree with an independent text scan."""
    folder, _built, store = energy
    got = rows(
        store,
        """SELECT ?file ?method ?path ?line WHERE {
        ?op a kg:Operation ; kg:httpMethod ?method ; kg:path ?path ; kg:sourceFile ?file ; kg:sourceLine ?line }""",
    )
    assert len(got) == 50
    for file, method, path, line in got:
        text = (folder.parent / file).read_text(encoding="utf-8").splitlines()
        assert re.match(rf'\s*"{method.lower()}": \{{', text[line - 1]), (file, method, path, line)
        doc = json.loads("\n".join(text))
        assert method.lower() in doc["paths"][path]


def test_parameters_keep_location_type_and_required(energy):
    _folder, _built, store = energy
    got = rows(
        store,
        """SELECT ?name ?location ?type ?required ?collection WHERE {
        ?svc kg:serviceName "01-Energy Consumption Analysis Service" ; kg:operation ?op .
        ?op kg:name "POST /optimize-usage" ; kg:operationParameter ?p .
        ?p kg:name ?name ; kg:parameterLocation ?location ; kg:edmType ?type ; kg:required ?required .
        OPTIONAL { ?p kg:isCollection ?collection } } ORDER BY ?name""",
    )
    assert got == [("parameters", "body", "object", True, None), ("usagePatterns", "body", "number", True, True)]


def test_ref_and_all_of_are_followed():
    spec = read_spec(shared(*PERSONAL_CARE))
    ops = {op.endpoint: op for op in spec.operations}
    prefs = ops["POST /user/preferences"]
    assert [(p.name, p.location, p.is_collection) for p in prefs.parameters] == [
        ("skinType", "body", False),
        ("allergies", "body", True),
        ("features", "body", True),
    ]
    assert prefs.parameters[0].line > prefs.line  # the component's line, further down the file
    assert read_spec(shared(*MACHINE)).operations  # the other allOf document reads too


def test_lifting_is_deterministic(energy):
    folder, built, _store = energy
    assert canonical_ntriples(lift_all([folder]).triples) == canonical_ntriples(built.triples)


def test_all_socbench_documents_read():
    root = shared("socbench-d")
    specs, ignored = openapi.read_specs([root])
    assert len(specs) == 220 and len(ignored) == 44
    assert all(len(s.operations) == 10 for s in specs)


# ---------------------------------------------------------------- hand-made documents


def test_path_item_parameters_merge_and_refs_resolve(tmp_path):
    doc = minimal(
        **{
            "/orders/{id}": {
                "parameters": [{"$ref": "#/components/parameters/Id"}, {"name": "lang", "in": "header"}],
                "get": {
                    "summary": "Read",
                    "operationId": "getOrder",
                    "tags": ["orders"],
                    "parameters": [{"name": "lang", "in": "header", "required": True, "schema": {"type": "string"}}],
                },
                "patch": {"requestBody": {"$ref": "#/components/requestBodies/Patch"}},
            }
        }
    )
    doc["components"] = {
        "parameters": {"Id": {"name": "id", "in": "path", "schema": {"type": "integer", "format": "int64"}}},
        "requestBodies": {
            "Patch": {
                "required": True,
                "content": {
                    "application/merge-patch+json": {
                        "schema": {
                            "oneOf": [
                                {"$ref": "#/components/schemas/A"},
                                {"type": "object", "properties": {"b": {"type": "string"}}},
                            ]
                        }
                    }
                },
            }
        },
        "schemas": {"A": {"type": "object", "required": ["a"], "properties": {"a": {"type": "boolean"}}}},
    }
    spec = read_spec(write(tmp_path, doc))
    get, patch = spec.operations
    assert (get.endpoint, get.operation_id, get.tags) == ("GET /orders/{id}", "getOrder", ["orders"])
    assert [(p.name, p.location, p.required, p.type, p.format) for p in get.parameters] == [
        ("id", "path", True, "integer", "int64"),
        ("lang", "header", True, "string", ""),
    ]
    assert patch.media_types == ["application/merge-patch+json"]
    assert [(p.name, p.location, p.required) for p in patch.parameters] == [
        ("id", "path", True),
        ("lang", "header", False),
        ("a", "body", False),
        ("b", "body", False),
    ]


def test_bodies_of_arrays_and_primitives_and_31_nullability(tmp_path):
    doc = minimal(
        **{
            "/bulk": {
                "post": {
                    "requestBody": {
                        "required": True,
                        "content": {
                            "application/json": {
                                "schema": {
                                    "type": "array",
                                    "items": {
                                        "type": "object",
                                        "required": ["sku"],
                                        "properties": {
                                            "sku": {"type": ["string", "null"]},
                                            "qty": {"type": "integer", "default": 1},
                                        },
                                    },
                                }
                            }
                        },
                    }
                }
            },
            "/note": {"put": {"requestBody": {"content": {"text/plain": {"schema": {"type": "string"}}}}}},
        }
    )
    doc["openapi"] = "3.1.0"
    bulk, note = read_spec(write(tmp_path, doc)).operations
    assert [(p.name, p.required, p.type, p.nullable, p.default) for p in bulk.parameters] == [
        ("sku", True, "string", True, None),
        ("qty", False, "integer", None, "1"),
    ]
    assert [(p.name, p.location, p.type) for p in note.parameters] == [("body", "body", "string")]


def test_extensions_are_skipped_but_property_names_are_not(tmp_path):
    doc = minimal(
        **{
            "x-internal": {"note": 1},
            "/p": {
                "post": {
                    "requestBody": {
                        "content": {
                            "application/json": {
                                "schema": {"properties": {"example": {"$ref": "#/components/schemas/Nope"}}}
                            }
                        }
                    }
                }
            },
        }
    )
    with pytest.raises(OpenAPIReferenceError, match=r"at #/paths/~1p/post/.*/properties/example: "):
        read_spec(write(tmp_path, doc))


def test_enum_becomes_a_fixed_value_list(tmp_path):
    doc = minimal(
        **{
            "/x": {
                "get": {
                    "parameters": [
                        {
                            "name": "status",
                            "in": "query",
                            "schema": {"type": "string", "enum": ["open", "closed", "open"]},
                        }
                    ]
                }
            }
        }
    )
    store = store_of(lift_all([write(tmp_path, doc, "shop.json")]).triples)
    got = rows(
        store,
        """SELECT ?service ?code ?fixed WHERE {
        ?svc kg:serviceName ?service ; kg:operation/kg:operationParameter ?p .
        ?p kg:valueList ?vl . ?vl kg:fixedValues ?fixed ; kg:code/kg:codeValue ?code } ORDER BY ?code""",
    )
    assert got == [("shop", "closed", True), ("shop", "open", True)]


def test_service_named_after_folder_for_openapi_json(tmp_path):
    folder = tmp_path / "Billing Service"
    folder.mkdir()
    write(folder, minimal(), "openapi.json")
    assert read_spec(folder / "openapi.json").name == "Billing Service"
    a, b = tmp_path / "a" / "Same", tmp_path / "b" / "Same"
    for f in (a, b):
        f.mkdir(parents=True)
        write(f, minimal(), "openapi.json")
    assert sorted(lift_all([tmp_path / "a", tmp_path / "b"]).services) == ["a/Same/openapi", "b/Same/openapi"]


# ---------------------------------------------------------------- bad input


def test_malformed_json_names_line_and_column(tmp_path):
    path = write(tmp_path, '{\n  "openapi": "3.0.0",\n  "paths": {,}\n}')
    with pytest.raises(MalformedJSONError) as err:
        read_spec(path)
    assert str(err.value).startswith("api.json:3:")


def test_not_openapi_explicit_fails_but_is_ignored_in_a_folder(tmp_path):
    write(tmp_path, {"queries": []}, "queries.json")
    with pytest.raises(NotOpenAPIError, match='no top-level "openapi" field'):
        lift_all([tmp_path / "queries.json"])
    assert lift_all([tmp_path]).ignored == [f"{tmp_path.name}/queries.json"]


def test_swagger_2_is_refused_with_advice(tmp_path):
    with pytest.raises(UnsupportedOpenAPIError, match="convert it to OpenAPI 3"):
        read_spec(write(tmp_path, {"swagger": "2.0", "paths": {}}))


@pytest.mark.parametrize(
    "ref, message",
    [
        ("#/components/schemas/Missing", "points at nothing"),
        ("other.json#/components/schemas/A", "points outside the document"),
        ("#/components/schemas/Loop", "circular \\$ref"),
    ],
)
def test_bad_refs_name_file_line_and_pointer(tmp_path, ref, message):
    doc = minimal(**{"/a~b/c": {"post": {"requestBody": {"content": {"application/json": {"schema": {"$ref": ref}}}}}}})
    doc["components"] = {
        "schemas": {"Loop": {"$ref": "#/components/schemas/Loop2"}, "Loop2": {"$ref": "#/components/schemas/Loop"}}
    }
    path = write(tmp_path, doc)
    with pytest.raises(OpenAPIReferenceError, match=message) as err:
        read_spec(path)
    text = str(err.value)
    if "circular" not in text:
        assert "at #/paths/~1a~0b~1c/post/requestBody/content/application~1json/schema:" in text
    line = int(text.split(":")[1])  # the line of the object holding the $ref: "{", then "$ref" next
    lines = path.read_text().splitlines()
    assert lines[line - 1].endswith("{") and '"$ref"' in lines[line]


def test_unused_broken_ref_is_found_by_the_first_pass(tmp_path):
    doc = minimal()
    doc["components"] = {"schemas": {"A": {"properties": {"b": {"$ref": "#/components/schemas/Nope"}}}}}
    with pytest.raises(OpenAPIReferenceError, match="at #/components/schemas/A/properties/b: "):
        read_spec(write(tmp_path, doc))


@pytest.mark.parametrize(
    "paths, message",
    [
        ({"/x": {"get": {"parameters": [{"in": "query"}]}}}, 'a parameter needs a "name"'),
        ({"/x": {"get": {"parameters": [{"name": "q", "in": "body"}]}}}, "has \"in\": 'body'"),
        ({"/x": {"get": {"parameters": {"name": "q"}}}}, "expected an array, found an object"),
        ({"/x": ["get"]}, "at #/paths/~1x: expected an object, found an array"),
    ],
)
def test_structure_errors_name_the_pointer(tmp_path, paths, message):
    with pytest.raises(OpenAPIStructureError, match=re.escape(message)) as err:
        read_spec(write(tmp_path, minimal(**paths)))
    assert str(err.value).startswith("api.json:")


def test_errors_are_processkg_errors(tmp_path):
    for exc in (
        MalformedJSONError,
        NotOpenAPIError,
        UnsupportedOpenAPIError,
        OpenAPIReferenceError,
        OpenAPIStructureError,
    ):
        assert issubclass(exc, ProcessKGError)
    with pytest.raises(ProcessKGError, match="no such file or directory"):
        lift_all([tmp_path / "absent"])


def test_kg_build_openapi_option_lifts_operations_into_the_store(tmp_path):
    from click.testing import CliRunner

    from processkg.cli import main

    doc = {
        "openapi": "3.0.0",
        "info": {"title": "Shop", "version": "1"},
        "paths": {
            "/orders": {
                "post": {
                    "summary": "Create an order",
                    "requestBody": {
                        "content": {
                            "application/json": {
                                "schema": {
                                    "type": "object",
                                    "required": ["sku"],
                                    "properties": {"sku": {"type": "string"}},
                                }
                            }
                        }
                    },
                }
            }
        },
    }
    folder = tmp_path / "apis" / "Shop Service"
    folder.mkdir(parents=True)
    (folder / "openapi.json").write_text(json.dumps(doc))
    (tmp_path / "apis" / "queries.json").write_text('{"queries": []}')
    store = tmp_path / "store"  # outside the input folder, which kg build refuses
    result = CliRunner().invoke(
        main, ["build", "--openapi", str(tmp_path / "apis"), "--store", str(store), "--no-index"]
    )
    assert result.exit_code == 0, result.output
    assert "1 Operation" in result.output
    assert "ignored 1 JSON file(s) that are not OpenAPI documents" in result.output
    out = CliRunner().invoke(
        main,
        ["query", "--store", str(store), "--format", "json", "-"],
        input="SELECT ?name WHERE { ?o a kg:Operation ; kg:name ?name }",
    )
    assert json.loads(out.output) == [{"name": "POST /orders"}]
