"""Every whole-file reader is bounded: regular files only, a size limit per kind, row and
expansion limits, each refused with one line naming the file (and line, where there is one)."""

from __future__ import annotations

import json
import os

import pytest

from processkg.errors import CodeListError, MappingError, OpenAPIReferenceError, OpenAPIStructureError
from processkg.sources import limits
from processkg.sources.codes import read_code_lists
from processkg.sources.mapping import read_mapping
from processkg.sources.openapi import MAX_GRAPH_NODES, MAX_REF_CHAIN, read_spec


def test_a_fifo_and_a_folder_are_refused_before_any_read(tmp_path):
    fifo = tmp_path / "codes.csv"
    os.mkfifo(fifo)
    with pytest.raises(CodeListError, match=r"codes\.csv: not a regular file"):
        read_code_lists([fifo])
    with pytest.raises(MappingError, match=r"not a regular file"):
        read_mapping(tmp_path)


def test_a_file_over_its_kinds_limit_is_refused(tmp_path, monkeypatch):
    monkeypatch.setitem(limits.MAX_BYTES, "mapping", 100)
    big = tmp_path / "big.yaml"
    big.write_text("mappings: []\n" + "#" * 200, encoding="utf-8")
    with pytest.raises(MappingError, match=r"big\.yaml: mapping is 0\.0 MB, over the limit of 0 MB"):
        read_mapping(big)


def test_unterminated_quote_in_a_code_list_names_the_row_where_it_starts(tmp_path):
    path = tmp_path / "codes.csv"
    path.write_text('value_list,code,description\nVL,A,Apple\nVL,B,"Bee\nVL,C,Cherry\n', encoding="utf-8")
    with pytest.raises(CodeListError, match=r"codes\.csv:3: not a well-formed CSV row: .*unterminated quote"):
        read_code_lists([path])


def test_a_quoted_field_over_several_lines_is_refused(tmp_path):
    path = tmp_path / "codes.csv"
    path.write_text('value_list,code,description\nVL,A,"two\nlines"\nVL,B,Bee\n', encoding="utf-8")
    with pytest.raises(CodeListError, match=r"codes\.csv:3: a field spans several lines"):
        read_code_lists([path])


def test_more_rows_than_the_limit_are_refused(tmp_path, monkeypatch):
    monkeypatch.setattr("processkg.sources.codes.MAX_CODE_ROWS", 3)
    path = tmp_path / "codes.csv"
    path.write_text("value_list,code\n" + "".join(f"VL,{i}\n" for i in range(5)), encoding="utf-8")
    with pytest.raises(CodeListError, match=r"codes\.csv:5: more than 3 codes in one file"):
        read_code_lists([path])


def test_duplicate_keys_in_a_mapping_are_refused_with_both_lines(tmp_path):
    path = tmp_path / "mapping.yaml"
    path.write_text(
        "mappings:\n  - process: P\n    activity: A\n    service: S\n    entity_set: X\n"
        "    entity_set: Y\n    mode: read\n",
        encoding="utf-8",
    )
    with pytest.raises(MappingError, match=r"mapping\.yaml:6: duplicate key 'entity_set' \(first at line 5\)"):
        read_mapping(path)


def test_a_mapping_that_is_not_utf8_names_the_line(tmp_path):
    path = tmp_path / "mapping.yaml"
    path.write_bytes(b"mappings:\n  - process: \xff\n")
    with pytest.raises(MappingError, match=r"mapping\.yaml:2: mapping is not UTF-8 text"):
        read_mapping(path)


def openapi(tmp_path, schemas: dict, body_ref: str) -> object:
    doc = {
        "openapi": "3.0.0",
        "info": {"title": "t", "version": "1"},
        "paths": {
            "/x": {
                "post": {
                    "requestBody": {"content": {"application/json": {"schema": {"$ref": body_ref}}}},
                    "responses": {"200": {"description": "ok"}},
                }
            }
        },
        "components": {"schemas": schemas},
    }
    path = tmp_path / "openapi.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def test_a_ref_chain_longer_than_the_limit_is_refused(tmp_path):
    n = MAX_REF_CHAIN + 5
    schemas = {f"S{i}": {"$ref": f"#/components/schemas/S{i + 1}"} for i in range(n)}
    schemas[f"S{n}"] = {"type": "object"}
    path = openapi(tmp_path, schemas, "#/components/schemas/S0")
    with pytest.raises(
        OpenAPIReferenceError, match=rf"openapi\.json:\d+: at .*: a \$ref chain longer than {MAX_REF_CHAIN}"
    ):
        read_spec(path)


def test_a_long_chain_within_the_limit_is_read_in_linear_time(tmp_path):
    n = MAX_REF_CHAIN - 1
    schemas = {f"S{i}": {"$ref": f"#/components/schemas/S{i + 1}"} for i in range(n)}
    schemas[f"S{n}"] = {"type": "object", "properties": {"a": {"type": "string"}}}
    spec = read_spec(openapi(tmp_path, schemas, "#/components/schemas/S0"))
    assert [p.name for p in spec.operations[0].parameters] == ["a"]


def test_an_allof_bomb_is_refused_by_the_expansion_budget(tmp_path):
    schemas = {f"L{i}": {"allOf": [{"$ref": f"#/components/schemas/L{i + 1}"}] * 9} for i in range(10)}
    schemas["L10"] = {"type": "object", "properties": {"a": {"type": "string"}}}
    path = openapi(tmp_path, schemas, "#/components/schemas/L0")
    with pytest.raises(OpenAPIStructureError, match=r"openapi\.json:\d+: at .*more than 10,000 schema nodes \(allOf"):
        read_spec(path)


def _operations(paths: int) -> dict:
    """``paths`` path items of 20 graph nodes each: a GET (itself, a path and a query parameter)
    and a POST (itself, the path parameter, 5 body properties with 2 enum values each)."""
    props = {f"p{k}": {"type": "string", "enum": ["A", "B"]} for k in range(5)}
    body = {"content": {"application/json": {"schema": {"type": "object", "properties": props}}}}
    item = {
        "parameters": [{"name": "id", "in": "path", "required": True, "schema": {"type": "string"}}],
        "get": {"parameters": [{"name": "q", "in": "query", "schema": {"type": "integer"}}], "responses": {}},
        "post": {"requestBody": body, "responses": {}},
    }
    return {"openapi": "3.0.3", "info": {"title": "Big"}, "paths": {f"/t{i}/{{id}}": item for i in range(paths)}}


def test_a_document_lifting_to_more_graph_nodes_than_the_limit_is_refused(tmp_path):
    path = tmp_path / "big.json"
    path.write_text(json.dumps(_operations(MAX_GRAPH_NODES // 20), indent=1), encoding="utf-8")
    assert len(read_spec(path, "big.json").operations) == MAX_GRAPH_NODES // 10
    path.write_text(json.dumps(_operations(MAX_GRAPH_NODES // 20 + 1), indent=1), encoding="utf-8")
    line = path.read_text(encoding="utf-8").splitlines().index(' "paths": {') + 2 + 73 * (MAX_GRAPH_NODES // 20)
    with pytest.raises(OpenAPIStructureError) as caught:
        read_spec(path, "big.json")
    assert str(caught.value) == (
        f"big.json:{line}: at #/paths/~1t2500~1{{id}}: the document describes more than 50,000 "
        f"operations, parameters and enum values; split it into several documents"
    )
