"""Read OpenAPI 3 documents (JSON) and lift them into the graph (``kg:`` vocabulary).

One document is one ``kg:Service``, named after its file (``billing.json`` is ``billing``) or,
for a file called ``openapi.json``/``swagger.json``, after its folder (SOCBench-D's
``01-Energy Consumption Analysis Service/openapi.json``). Each operation (HTTP method + path)
is a ``kg:Operation``; each parameter and each top-level property of the request body is a
``kg:Property`` linked by ``kg:operationParameter``, with its location (``kg:parameterLocation``:
path, query, header, cookie or body), its JSON Schema type (``kg:edmType``, ``kg:schemaFormat``,
``kg:isCollection`` for arrays), ``kg:required``, ``kg:nullable`` and, for an ``enum``, a fixed
value list with its codes. Responses are not lifted, and there is no process layer: OpenAPI
says nothing about the order of calls.

``$ref`` is resolved within the document in two passes: the first checks every reference
(an unresolved, external or circular one is an :class:`OpenAPIReferenceError` naming the file,
the line and the JSON pointer of the ``$ref``), the second lifts with references followed.
The JSON reader records the line of every object's opening brace, so ``kg:sourceLine`` is the
line of the operation, parameter or property object (for a referenced component, its line).
"""

from __future__ import annotations

import json
import json.decoder
import json.scanner
import re
from bisect import bisect_right
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeAlias

from pyoxigraph import NamedNode, Triple

from processkg.aliases import JSONValue, OnFailure, ProgressCallback
from processkg.errors import (
    MalformedJSONError,
    NotOpenAPIError,
    OpenAPIReferenceError,
    OpenAPIStructureError,
    ProcessKGError,
    UnsupportedOpenAPIError,
)
from processkg.sources.discover import OPENAPI_SUFFIXES, discover_marked
from processkg.sources.limits import read_bytes
from processkg.triples import Triples, child, mint
from processkg.vocab import KGT

SUFFIXES = OPENAPI_SUFFIXES
HTTP_METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")
LOCATIONS = ("path", "query", "header", "cookie")
#: File names that say nothing about the service: the folder names it instead.
GENERIC_NAMES = frozenset({"openapi", "swagger"})
#: Keys whose values are literal data, not OpenAPI structure: never searched for ``$ref``.
_LITERAL_KEYS = frozenset({"example", "default", "enum", "const"})
#: Most references one ``$ref`` chain may follow before it reaches a schema.
MAX_REF_CHAIN = 64
#: Most schema nodes one request body may expand to (``allOf``/``oneOf``/``anyOf`` multiply them).
MAX_SCHEMA_NODES = 10_000
#: Most graph nodes (operations, parameters, enum values) one document may lift to; each is about
#: ten triples. A 12 MB document of 160,000 such nodes made 1.6 M triples and took 48 s and 1.7 GB
#: to build; the largest SOCBench-D document has under 50 (see docs/reliability.md).
MAX_GRAPH_NODES = 50_000
_NEWLINE = re.compile(r"\n")

Pointer: TypeAlias = tuple[str | int, ...]
"""A path of object keys and array indexes into a JSON document (a JSON pointer's tokens)."""


# ---------------------------------------------------------------- JSON with line numbers


class JSONObject(dict[str, JSONValue]):
    """A JSON object that remembers the line of its opening brace."""

    __slots__ = ("line",)


class JSONArray(list[JSONValue]):
    """A JSON array that remembers the line of its opening bracket."""

    __slots__ = ("line",)
    line: int | None


def _line_decoder(text: str) -> json.JSONDecoder:
    """A decoder whose objects and arrays carry ``line`` (:class:`JSONObject`, :class:`JSONArray`;
    the pure-Python scanner, which calls these parsers back)."""
    newlines = [m.start() for m in _NEWLINE.finditer(text)]
    decoder = json.JSONDecoder(object_pairs_hook=JSONObject)

    def parse_object(s_and_end: tuple[str, int], *args: JSONValue, **kwargs: JSONValue) -> tuple[JSONObject, int]:
        obj, end = json.decoder.JSONObject(s_and_end, *args, **kwargs)  # type: ignore[attr-defined]
        obj.line = bisect_right(newlines, s_and_end[1] - 1) + 1
        return obj, end

    def parse_array(
        s_and_end: tuple[str, int], scan_once: Callable[[str, int], tuple[JSONValue, int]], *args: JSONValue
    ) -> tuple[JSONArray, int]:
        items, end = json.decoder.JSONArray(s_and_end, scan_once, *args)  # type: ignore[attr-defined]
        array = JSONArray(items)
        array.line = bisect_right(newlines, s_and_end[1] - 1) + 1
        return array, end

    # json's pure-Python scanner takes these hooks; they are not part of its typed interface
    decoder.parse_object = parse_object  # type: ignore[attr-defined]
    decoder.parse_array = parse_array  # type: ignore[attr-defined]
    decoder.scan_once = json.scanner.py_make_scanner(decoder)  # type: ignore[attr-defined]
    return decoder


def read_json(path: Path, display: str) -> JSONValue:
    """Parse a JSON file; objects carry their line. Bad input raises MalformedJSONError."""
    try:
        text = read_bytes(path, "OpenAPI document", display, MalformedJSONError).decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise MalformedJSONError(f"not UTF-8 text (byte {exc.start})", display) from None
    try:
        return _line_decoder(text).decode(text)
    except json.JSONDecodeError as exc:
        raise MalformedJSONError(f"not well-formed JSON: {exc.msg}", display, exc.lineno, exc.colno) from None
    except RecursionError:
        raise MalformedJSONError("JSON nested too deeply", display) from None


def line_of(node: JSONValue) -> int | None:
    """The line of a parsed JSON object or array (None for other values)."""
    return getattr(node, "line", None)


# ---------------------------------------------------------------- JSON pointers and $ref


def pointer(parts: Pointer) -> str:
    """A JSON pointer (URI fragment form) for a path of keys and indexes: ``#/paths/~1x/get``."""
    return "#" + "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in parts)


class References:
    """Follows local ``$ref`` pointers of one document; every failure names file, line and pointer."""

    def __init__(self, root: JSONValue, file: str) -> None:
        self.root = root
        self.file = file
        self.resolved: dict[str, tuple[JSONValue, Pointer]] = {}  # $ref -> (target, its pointer path)

    def target(self, ref: str, where: Pointer, line: int | None) -> JSONValue:
        """The node a ``$ref`` string points at."""
        if not ref.startswith("#"):
            raise OpenAPIReferenceError(
                f"at {pointer(where)}: $ref {ref!r} points outside the document; only local references "
                f"(#/...) are resolved",
                self.file,
                line,
            )
        node = self.root
        for token in _ref_path(ref):
            if isinstance(node, dict) and token in node:
                node = node[token]
            elif isinstance(node, list) and token.isdigit() and int(token) < len(node):
                node = node[int(token)]
            else:
                raise OpenAPIReferenceError(
                    f"at {pointer(where)}: $ref {ref!r} points at nothing in the document", self.file, line
                )
        return node

    def follow(self, node: JSONValue, where: Pointer) -> tuple[JSONValue, Pointer]:
        """``node`` with ``$ref`` chains followed: (target, its pointer path or ``where``).

        A chain is at most :data:`MAX_REF_CHAIN` references long; a reference followed once is
        remembered, so a document full of chains is read in linear time."""
        seen: list[str] = []
        start = node.get("$ref") if isinstance(node, dict) else None
        while isinstance(node, dict) and isinstance(node.get("$ref"), str):
            ref = node["$ref"]
            if ref in self.resolved:
                node, where = self.resolved[ref]
                break
            if ref in seen:
                chain = " -> ".join(seen + [ref])
                raise OpenAPIReferenceError(f"at {pointer(where)}: circular $ref {chain}", self.file, line_of(node))
            if len(seen) == MAX_REF_CHAIN:
                raise OpenAPIReferenceError(
                    f"at {pointer(where)}: a $ref chain longer than {MAX_REF_CHAIN} references (from {start})",
                    self.file,
                    line_of(node),
                )
            seen.append(ref)
            node = self.target(ref, where, line_of(node))
            where = _ref_path(ref)
        for ref in seen:
            self.resolved[ref] = (node, where)
        return node, where

    def check_all(self, node: JSONValue = None, where: Pointer = ()) -> None:
        """Pass 1: every ``$ref`` of the document resolves (literal values are not searched)."""
        node = self.root if node is None and not where else node
        if isinstance(node, dict):
            if isinstance(node.get("$ref"), str):
                self.follow(node, where)
            names = where[-1:] == ("properties",)  # keys are property names, values schemas
            for key, value in node.items():
                if names or (key not in _LITERAL_KEYS and not str(key).startswith("x-")):
                    self.check_all(value, where + (key,))
        elif isinstance(node, list):
            for i, value in enumerate(node):
                self.check_all(value, where + (i,))


def _ref_path(ref: str) -> tuple[str, ...]:
    return tuple(t.replace("~1", "/").replace("~0", "~") for t in ref[1:].split("/")[1:])


# ---------------------------------------------------------------- the document model


@dataclass
class Parameter:
    """A parameter or a top-level request-body property."""

    name: str
    location: str  # path, query, header, cookie or body
    required: bool
    type: str = ""
    format: str = ""
    is_collection: bool = False
    nullable: bool | None = None
    description: str = ""
    default: str | None = None
    enum: list[str] = field(default_factory=list)
    line: int | None = None


@dataclass
class Operation:
    method: str  # upper case
    path: str
    operation_id: str = ""
    summary: str = ""
    description: str = ""
    tags: list[str] = field(default_factory=list)
    media_types: list[str] = field(default_factory=list)
    parameters: list[Parameter] = field(default_factory=list)
    line: int | None = None

    @property
    def endpoint(self) -> str:
        return f"{self.method} {self.path}"


@dataclass
class Spec:
    file: str  # display path
    name: str
    openapi: str
    title: str = ""
    description: str = ""
    servers: list[str] = field(default_factory=list)
    operations: list[Operation] = field(default_factory=list)
    line: int | None = None


def service_name(path: Path) -> str:
    """The file's stem, or its folder's name for a generic file name (``openapi.json``)."""
    path = Path(path)
    return path.parent.name if path.stem.lower() in GENERIC_NAMES and path.parent.name else path.stem


# ---------------------------------------------------------------- reading


def read_spec(path: Path, display: str | None = None, name: str | None = None) -> Spec:
    """Read one OpenAPI 3 JSON document: check every $ref (pass 1), then read operations (pass 2)."""
    display = display or Path(path).name
    root = read_json(path, display)
    version = _version(root, display)
    refs = References(root, display)
    refs.check_all()
    reader = _Reader(refs, display)
    info = reader.obj(root.get("info", {}), ("info",))
    spec = Spec(
        display,
        name or service_name(Path(path)),
        version,
        _text(info.get("title")),
        _text(info.get("description")),
        line=line_of(root),
    )
    servers = reader.arr(root.get("servers", []), ("servers",))
    spec.servers = [s["url"] for s in servers if isinstance(s, dict) and isinstance(s.get("url"), str)]
    paths = reader.obj(root.get("paths", {}), ("paths",))
    nodes = 0
    for path_key in paths:
        if not path_key.startswith("x-"):  # specification extensions are no paths
            operations = reader.path_item(path_key, paths[path_key])
            nodes += sum(_graph_nodes(op) for op in operations)
            if nodes > MAX_GRAPH_NODES:
                raise OpenAPIStructureError(
                    f"at {pointer(('paths', path_key))}: the document describes more than {MAX_GRAPH_NODES:,} "
                    f"operations, parameters and enum values; split it into several documents",
                    display,
                    line_of(paths[path_key]),
                )
            spec.operations.extend(operations)
    return spec


def _graph_nodes(op: Operation) -> int:
    """The graph nodes ``op`` lifts to: itself, each parameter and each distinct enum value."""
    return 1 + sum(1 + len(set(p.enum)) for p in op.parameters)


def _version(root: JSONValue, display: str) -> str:
    if not isinstance(root, dict):
        raise NotOpenAPIError("not an OpenAPI document: the JSON root is not an object", display, line_of(root))
    if "swagger" in root and "openapi" not in root:
        raise UnsupportedOpenAPIError(
            f"Swagger/OpenAPI {root.get('swagger')} is not supported: convert it to OpenAPI 3 "
            f"(https://spec.openapis.org/oas/v3.0.3)",
            display,
            line_of(root),
        )
    version = root.get("openapi")
    if version is None:
        raise NotOpenAPIError('not an OpenAPI document: no top-level "openapi" field', display, line_of(root))
    if not isinstance(version, str) or not version.startswith("3."):
        raise UnsupportedOpenAPIError(
            f"OpenAPI version {version!r} is not supported (3.0 and 3.1 are)", display, line_of(root)
        )
    return version


def _text(value: JSONValue) -> str:
    return value.strip() if isinstance(value, str) else ""


class _Reader:
    """Pass 2: operations, parameters and request bodies, with references followed."""

    def __init__(self, refs: References, file: str) -> None:
        self.refs = refs
        self.file = file

    def _wrong(self, where: Pointer, node: JSONValue, expected: str) -> OpenAPIStructureError:
        return OpenAPIStructureError(
            f"at {pointer(where)}: expected {expected}, found {_kind(node)}", self.file, line_of(node)
        )

    def obj(self, node: JSONValue, where: Pointer) -> dict[str, JSONValue]:
        return self.followed(node, where)[0]

    def followed(self, node: JSONValue, where: Pointer) -> tuple[dict[str, JSONValue], Pointer]:
        """An object with its ``$ref`` chain followed, and the pointer path of what was reached."""
        node, where = self.refs.follow(node, where)
        if not isinstance(node, dict):
            raise self._wrong(where, node, "an object")
        return node, where

    def arr(self, node: JSONValue, where: Pointer) -> list[JSONValue]:
        if not isinstance(node, list):
            raise self._wrong(where, node, "an array")
        return node

    def path_item(self, path: str, node: JSONValue) -> list[Operation]:
        where = ("paths", path)
        item = self.obj(node, where)
        shared = self._parameters(item.get("parameters", []), where + ("parameters",))
        return [
            self._operation(path, method, item[method], where + (method,), shared)
            for method in item
            if method in HTTP_METHODS
        ]

    def _operation(self, path: str, method: str, node: JSONValue, where: Pointer, shared: list[Parameter]) -> Operation:
        op_node = self.obj(node, where)
        op = Operation(
            method.upper(),
            path,
            _text(op_node.get("operationId")),
            _text(op_node.get("summary")),
            _text(op_node.get("description")),
            line=line_of(op_node),
        )
        tags = op_node.get("tags")
        op.tags = [t for t in tags if isinstance(t, str)] if isinstance(tags, list) else []
        own = self._parameters(op_node.get("parameters", []), where + ("parameters",))
        keys = {(p.location, p.name) for p in own}
        op.parameters = [p for p in shared if (p.location, p.name) not in keys] + own
        if "requestBody" in op_node:
            self._body(op, op_node["requestBody"], where + ("requestBody",))
        return op

    def _parameters(self, node: JSONValue, where: Pointer) -> list[Parameter]:
        out, seen = [], set()
        for i, raw in enumerate(self.arr(node, where)):
            param = self._parameter(raw, where + (i,))
            if (param.location, param.name) not in seen:
                seen.add((param.location, param.name))
                out.append(param)
        return out

    def _parameter(self, raw: JSONValue, where: Pointer) -> Parameter:
        node = self.obj(raw, where)
        name, location = node.get("name"), node.get("in")
        if not isinstance(name, str) or not name:
            raise OpenAPIStructureError(f'at {pointer(where)}: a parameter needs a "name"', self.file, line_of(node))
        if location not in LOCATIONS:
            raise OpenAPIStructureError(
                f'at {pointer(where)}: parameter {name!r} has "in": {location!r}; '
                f"expected one of {', '.join(LOCATIONS)}",
                self.file,
                line_of(node),
            )
        required = location == "path" or node.get("required") is True
        param = Parameter(name, location, required, description=_text(node.get("description")), line=line_of(node))
        schema = node.get("schema")
        if schema is None and isinstance(node.get("content"), dict) and node["content"]:
            media = next(iter(node["content"]))
            schema = self.obj(node["content"][media], where + ("content", media)).get("schema")
        if schema is not None:
            self._typed(param, self.obj(schema, where + ("schema",)), where + ("schema",))
        return param

    def _typed(self, param: Parameter, schema: dict[str, JSONValue], where: Pointer) -> None:
        """Type, format, collection, nullable, default and enum of a (followed) schema."""
        kind, nullable = _schema_type(schema)
        if kind == "array" and "items" in schema:
            param.is_collection = True
            schema = self.obj(schema["items"], where + ("items",))
            kind, _ = _schema_type(schema)
        param.type = kind
        param.format = _text(schema.get("format"))
        param.nullable = nullable
        param.description = param.description or _text(schema.get("description"))
        if "default" in schema and schema["default"] is not None:
            param.default = _literal(schema["default"])
        if isinstance(schema.get("enum"), list):
            param.enum = [_literal(v) for v in schema["enum"] if v is not None]

    def _body(self, op: Operation, node: JSONValue, where: Pointer) -> None:
        body = self.obj(node, where)
        content = self.obj(body.get("content", {}), where + ("content",))
        op.media_types = list(content)
        if not content:
            return
        media = _preferred_media(list(content))
        media_node = self.obj(content[media], where + ("content", media))
        if "schema" not in media_node:
            return
        taken = {(p.location, p.name) for p in op.parameters}
        for param in self._fields(
            media_node["schema"], where + ("content", media, "schema"), body.get("required") is True, set()
        ):
            if ("body", param.name) not in taken:
                taken.add(("body", param.name))
                op.parameters.append(param)

    def _fields(
        self, node: JSONValue, where: Pointer, required: bool, seen: set[int], budget: list[int] | None = None
    ) -> list[Parameter]:
        """The top-level properties of a request-body schema (allOf merged, oneOf/anyOf united);
        at most :data:`MAX_SCHEMA_NODES` schema nodes are expanded (``budget`` counts them down)."""
        budget = budget if budget is not None else [MAX_SCHEMA_NODES]
        budget[0] -= 1
        if budget[0] < 0:
            raise OpenAPIStructureError(
                f"at {pointer(where)}: the request body expands to more than "
                f"{MAX_SCHEMA_NODES:,} schema nodes (allOf/oneOf/anyOf nested too "
                f"widely)",
                self.file,
                line_of(node),
            )
        schema, where = self.followed(node, where)
        if id(schema) in seen:
            return []
        seen = seen | {id(schema)}
        out: list[Parameter] = []
        for key, all_required in (("allOf", required), ("oneOf", False), ("anyOf", False)):
            for i, member in enumerate(self.arr(schema.get(key, []), where + (key,))):
                out.extend(self._fields(member, where + (key, i), all_required, seen, budget))
        kind, _ = _schema_type(schema)
        if kind == "array" and "items" in schema:
            return out + self._fields(schema["items"], where + ("items",), required, seen, budget)
        props = self.obj(schema.get("properties", {}), where + ("properties",))
        needed = set(schema.get("required", [])) if isinstance(schema.get("required"), list) else set()
        for name in props:
            param = Parameter(name, "body", required and name in needed)
            prop = self.obj(props[name], where + ("properties", name))
            param.line = line_of(prop)
            self._typed(param, prop, where + ("properties", name))
            out.append(param)
        if not out and not props and kind and kind != "object":
            param = Parameter("body", "body", required, line=line_of(schema))
            self._typed(param, schema, where)
            out.append(param)
        return out


def _kind(node: JSONValue) -> str:
    for cls, name in ((dict, "an object"), (list, "an array"), (str, "a string"), (bool, "a boolean")):
        if isinstance(node, cls):
            return name
    return "null" if node is None else "a number"


def _schema_type(schema: dict[str, JSONValue]) -> tuple[str, bool | None]:
    """(JSON Schema type, nullable): 3.0 ``nullable: true`` or 3.1 ``type: [..., "null"]``."""
    kind = schema.get("type")
    nullable = schema.get("nullable") if isinstance(schema.get("nullable"), bool) else None
    if isinstance(kind, list):
        names = [k for k in kind if isinstance(k, str)]
        if "null" in names:
            nullable = True
        kind = "|".join(k for k in names if k != "null")
    if not isinstance(kind, str):
        kind = "object" if "properties" in schema else ""
    return kind, nullable


def _literal(value: JSONValue) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)


def _preferred_media(media_types: list[str]) -> str:
    for media in media_types:
        if media.split(";")[0].strip() == "application/json":
            return media
    return next((m for m in media_types if m.split(";")[0].strip().endswith("+json")), media_types[0])


# ---------------------------------------------------------------- lifting


class SpecLifter:
    """Lifts one :class:`Spec`; ``key`` is its unique IRI segment (the name, disambiguated)."""

    def __init__(self, spec: Spec, key: str) -> None:
        self.spec = spec
        self.t = Triples(spec.file)
        self.base = mint("openapi", key)

    def operation_iri(self, op: Operation) -> NamedNode:
        return child(self.base, "op", op.method, op.path)

    def lift(self) -> list[Triple]:
        t, s = self.t, self.spec
        t.node(self.base, KGT.Service, s.line, s.name)
        t.text(self.base, KGT.serviceName, s.name)
        t.text(self.base, KGT.name, s.name)
        t.text(self.base, KGT.label, s.title)
        t.text(self.base, KGT.description, s.description)
        t.text(self.base, KGT.openapiVersion, s.openapi)
        for url in s.servers:
            t.text(self.base, KGT.serverUrl, url)
        for op in s.operations:
            self._operation(op)
        return t.items

    def _operation(self, op: Operation) -> None:
        t = self.t
        iri = self.operation_iri(op)
        t.node(iri, KGT.Operation, op.line, op.endpoint)
        t.add(self.base, KGT.operation, iri)
        t.text(iri, KGT.name, op.endpoint)
        t.text(iri, KGT.httpMethod, op.method)
        t.text(iri, KGT.path, op.path)
        t.text(iri, KGT.operationId, op.operation_id)
        t.text(iri, KGT.label, op.summary)
        t.text(iri, KGT.description, op.description)
        for tag in op.tags:
            t.text(iri, KGT.tag, tag)
        for media in op.media_types:
            t.text(iri, KGT.mediaType, media)
        for param in op.parameters:
            self._parameter(iri, param)

    def _parameter(self, op_iri: NamedNode, p: Parameter) -> None:
        t = self.t
        iri = child(op_iri, "param", p.location, p.name)
        t.node(iri, KGT.Property, p.line, p.name)
        t.add(op_iri, KGT.operationParameter, iri)
        t.text(iri, KGT.name, p.name)
        t.text(iri, KGT.parameterLocation, p.location)
        t.boolean(iri, KGT.required, p.required)
        t.text(iri, KGT.edmType, p.type)
        t.text(iri, KGT.schemaFormat, p.format)
        if p.is_collection:
            t.boolean(iri, KGT.isCollection, True)
        t.boolean(iri, KGT.nullable, p.nullable)
        t.text(iri, KGT.description, p.description)
        t.text(iri, KGT.defaultValue, p.default)
        if p.enum:
            self._enum(iri, p)

    def _enum(self, prop_iri: NamedNode, p: Parameter) -> None:
        t = self.t
        vl = child(prop_iri, "valuelist")
        t.node(vl, KGT.ValueList, p.line)
        t.add(prop_iri, KGT.valueList, vl)
        t.add(vl, KGT.valueListProperty, prop_iri)
        t.boolean(vl, KGT.fixedValues, True)
        for value in dict.fromkeys(p.enum):
            code = child(vl, "code", value)
            t.node(code, KGT.Code, p.line, value)
            t.text(code, KGT.codeValue, value)
            t.text(code, KGT.codeSource, "metadata")
            t.add(vl, KGT.code, code)


# ---------------------------------------------------------------- many documents


@dataclass
class OpenAPIBuild:
    """What :func:`lift_all` produced, for the build report."""

    triples: list[Triple] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    services: dict[str, int] = field(default_factory=dict)  # IRI key -> number of operations
    ignored: list[str] = field(default_factory=list)  # JSON files in folders that are no OpenAPI documents
    warnings: list[str] = field(default_factory=list)


def discover(roots: Sequence[Path | str]) -> list[tuple[Path, str, bool]]:
    """``(path, display, explicit)`` for each root file and each ``*.json`` below each root folder."""
    return discover_marked(roots, SUFFIXES)


def read_specs(
    roots: Sequence[Path | str], failed: OnFailure | None = None, progress: ProgressCallback | None = None
) -> tuple[list[Spec], list[str]]:
    """Every OpenAPI document under ``roots``, and the JSON files found in folders that are none.

    ``failed(display, error)`` decides what a bad document does (the build's ``--on-error``);
    without it the error is raised.
    """
    specs, ignored = [], []
    for path, display, explicit in discover(roots):
        if progress:
            progress(display)
        try:
            specs.append(read_spec(path, display))
        except NotOpenAPIError as exc:
            if explicit:
                _fail(failed, display, exc)
            else:
                ignored.append(display)
        except ProcessKGError as exc:
            _fail(failed, display, exc)
    return specs, ignored


def _fail(failed: OnFailure | None, display: str, exc: ProcessKGError) -> None:
    if failed is None:
        raise exc
    failed(display, exc)


def service_keys(specs: list[Spec]) -> list[str]:
    """IRI keys: the service name, or the file path without suffix where two documents share it."""
    counts: dict[str, int] = {}
    for spec in specs:
        counts[spec.name] = counts.get(spec.name, 0) + 1
    return [spec.file.rsplit(".", 1)[0] if counts[spec.name] > 1 else spec.name for spec in specs]


def lift_all(
    roots: Sequence[Path | str], failed: OnFailure | None = None, progress: ProgressCallback | None = None
) -> OpenAPIBuild:
    """Read and lift every OpenAPI document under ``roots`` (the build's ``--openapi``)."""
    specs, ignored = read_specs(roots, failed, progress)
    out = OpenAPIBuild(ignored=ignored)
    for spec, key in zip(specs, service_keys(specs)):
        out.triples.extend(SpecLifter(spec, key).lift())
        out.files.append(spec.file)
        out.services[key] = len(spec.operations)
    if ignored:
        out.warnings.append(
            f"ignored {len(ignored)} JSON file(s) that are not OpenAPI documents "
            f'(no "openapi" field), e.g. {ignored[0]}'
        )
    return out
