"""Hostile inputs for ``tests/test_hostile.py``, written at test time (nothing big is committed).

Each entry of :data:`GENERATORS` writes one input (a file or a folder) at the path it is given.
Names carry the suffix the ``kg`` command expects, so the reader under test is the one a user
would reach. Large inputs (a 25 MB JSON line, a 50 MB OpenAPI document) are made only when a
case asks for them.

Run as a script to look at the corpus: ``python tests/hostile/make_corpus.py DIR [NAME...]``
(a damaged store needs a built store: ``--store DIR``).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "data" / "demo"
INVALID = ROOT / "tests" / "invalid"
MB = 1024 * 1024


@dataclass(frozen=True)
class Context:
    """What some inputs need from the test: a built store to damage, a loopback port to point at."""

    store: Path | None = None
    port: int = 9


Generator = Callable[[Path, Context], None]

# ---------------------------------------------------------------- XML

V4_SERVICE = """<edmx:Edmx Version="4.0" xmlns:edmx="http://docs.oasis-open.org/odata/ns/edmx">
  <edmx:DataServices>
    <Schema Namespace="Hostile" xmlns="http://docs.oasis-open.org/odata/ns/edm">
{types}
      <EntityContainer Name="Container">
        <EntitySet Name="Things" EntityType="Hostile.Thing"/>
      </EntityContainer>
    </Schema>
  </edmx:DataServices>
</edmx:Edmx>
"""

THING = """      <EntityType Name="Thing">
        <Key><PropertyRef Name="Id"/></Key>
        <Property Name="Id" Type="Edm.String" Nullable="false"/>
      </EntityType>"""

BPMN_HEAD = (
    '<definitions xmlns="http://www.omg.org/spec/BPMN/20100524/MODEL" id="Defs" '
    'targetNamespace="http://example.com/hostile">\n'
)

BOMB_DTD = """<!DOCTYPE root [
  <!ENTITY lol "lol">
  <!ENTITY lol1 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
  <!ENTITY lol2 "&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;">
  <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
]>
"""


def _prolog(items: int = 30) -> str:
    """An XML declaration, then ``items`` comments and processing instructions, alternating."""
    parts = ['<?xml version="1.0" encoding="utf-8"?>\n']
    for i in range(items):
        parts.append(f"<!-- comment {i}: <!DOCTYPE x> <?not-a-pi?> -->\n" if i % 2 else f"<?hostile pi-{i} ?>\n")
    return "".join(parts)


def _process(body: str, pid: str = "P") -> str:
    return f'{BPMN_HEAD}  <process id="{pid}">\n{body}  </process>\n</definitions>\n'


def _linear(*extra: str) -> str:
    """start -> task -> end, plus ``extra`` lines inside the process."""
    return _process(
        '    <startEvent id="S"/>\n    <task id="T" name="Work"/>\n    <endEvent id="E"/>\n'
        '    <sequenceFlow id="F1" sourceRef="S" targetRef="T"/>\n'
        '    <sequenceFlow id="F2" sourceRef="T" targetRef="E"/>\n' + "".join(extra)
    )


def _fan_out(ways: int) -> str:
    """A start event, an exclusive gateway with ``ways`` outgoing flows, each to its own task and end."""
    lines = [
        '    <startEvent id="S"/>\n    <exclusiveGateway id="G"/>\n    <endEvent id="E"/>\n',
        '    <sequenceFlow id="F0" sourceRef="S" targetRef="G"/>\n',
    ]
    for i in range(ways):
        lines.append(
            f'    <task id="T{i}" name="Task {i}"/>\n'
            f'    <sequenceFlow id="A{i}" sourceRef="G" targetRef="T{i}"/>\n'
            f'    <sequenceFlow id="B{i}" sourceRef="T{i}" targetRef="E"/>\n'
        )
    return _process("".join(lines))


def _fan_in_out(ways: int) -> str:
    """``ways`` tasks all flowing into one exclusive gateway that splits into ``ways`` other tasks:
    every task before it is followed by every task after it (``ways ** 2`` ``bpmn:next`` pairs)."""
    lines = ['    <exclusiveGateway id="G"/>\n']
    for i in range(ways):
        lines.append(
            f'    <task id="I{i}" name="In {i}"/>\n    <task id="O{i}" name="Out {i}"/>\n'
            f'    <sequenceFlow id="A{i}" sourceRef="I{i}" targetRef="G"/>\n'
            f'    <sequenceFlow id="B{i}" sourceRef="G" targetRef="O{i}"/>\n'
        )
    return _process("".join(lines))


def text(content: str) -> Generator:
    def write(path: Path, ctx: Context) -> None:
        path.write_text(content, encoding="utf-8", newline="")

    return write


def raw(content: bytes) -> Generator:
    def write(path: Path, ctx: Context) -> None:
        path.write_bytes(content)

    return write


def copy_of(source: Path, port_placeholder: bool = False) -> Generator:
    """A file of tests/invalid or data/demo (``PORT`` replaced by the context's loopback port)."""

    def write(path: Path, ctx: Context) -> None:
        content = source.read_text(encoding="utf-8")
        path.write_text(content.replace("PORT", str(ctx.port)) if port_placeholder else content, encoding="utf-8")

    return write


# ---------------------------------------------------------------- OpenAPI


def _openapi(schemas: dict, root: str, extra: dict | None = None) -> dict:
    body = {"content": {"application/json": {"schema": {"$ref": f"#/components/schemas/{root}"}}}}
    operation = {"operationId": "create", "requestBody": body, "responses": {"201": {"description": "created"}}}
    doc = {
        "openapi": "3.0.3",
        "info": {"title": "Hostile", "version": "1"},
        "paths": {"/things": {"post": operation}},
        "components": {"schemas": schemas},
    }
    doc.update(extra or {})
    return doc


def _ref_chain(length: int) -> dict:
    schemas = {f"S{i}": {"$ref": f"#/components/schemas/S{i + 1}"} for i in range(length)}
    schemas[f"S{length}"] = {"type": "object", "properties": {"id": {"type": "string"}}}
    return _openapi(schemas, "S0")


def _all_of_bomb(levels: int, fan: int) -> dict:
    """L0 = allOf of ``fan`` times L1, ..., each a reference: ``fan ** levels`` leaves if expanded."""
    schemas = {f"L{i}": {"allOf": [{"$ref": f"#/components/schemas/L{i + 1}"}] * fan} for i in range(levels)}
    schemas[f"L{levels}"] = {"type": "object", "properties": {"id": {"type": "string"}}}
    return _openapi(schemas, "L0")


def json_doc(make: Callable[[], dict]) -> Generator:
    def write(path: Path, ctx: Context) -> None:
        path.write_text(json.dumps(make(), indent=1), encoding="utf-8")

    return write


def big_openapi(megabytes: int) -> Generator:
    """A valid OpenAPI document padded to ``megabytes`` with many small objects (an extension field)."""

    def write(path: Path, ctx: Context) -> None:
        head = json.dumps(_openapi({"S": {"type": "object"}}, "S"))[:-1]
        item = '{"a": 1, "b": [true, null]},\n'
        count = megabytes * MB // len(item)
        with path.open("w", encoding="utf-8") as fh:
            fh.write(head + ', "x-filler": [\n')
            for _ in range(count // 1000):
                fh.write(item * 1000)
            fh.write('{"a": 0}]}\n')

    return write


def many_operations(megabytes: float) -> Generator:
    """A valid OpenAPI document of ``megabytes`` made of path items, each a GET and a POST whose
    body has 5 properties with an enum (20 graph nodes and about 200 triples per path item)."""

    def write(path: Path, ctx: Context) -> None:
        props = {f"p{k}": {"type": "string", "description": "x" * 20, "enum": ["A", "B"]} for k in range(5)}
        item = {
            "parameters": [{"name": "id", "in": "path", "required": True, "schema": {"type": "string"}}],
            "get": {"parameters": [{"name": "q", "in": "query", "schema": {"type": "integer"}}], "responses": {}},
            "post": {"requestBody": {"content": {"application/json": {"schema": {"properties": props}}}}},
        }
        body = json.dumps(item, indent=1)
        head = '{"openapi": "3.0.3", "info": {"title": "Many", "version": "1"}, "paths": {\n'
        with path.open("w", encoding="utf-8") as fh:
            fh.write(head)
            for i in range(int(megabytes * MB) // (len(body) + 20)):
                fh.write(f'"/things{i}/{{id}}": {body},\n')
            fh.write(f'"/last": {body}\n}}}}\n')

    return write


# ---------------------------------------------------------------- JSON Lines (recorded calls)

GET = {"method": "GET", "url": "/sap/opu/odata/sap/DEMO_SALES_ORDER_SRV/A_SalesOrder?$select=SalesOrder"}


def _line(call: dict) -> str:
    return json.dumps(call, ensure_ascii=False) + "\n"


def _deep_insert(levels: int) -> dict:
    payload: dict = {"SalesOrder": "1"}
    for i in range(levels):
        payload = {"SalesOrder": "1", "to_Item": [{"SalesOrderItem": str(i), "to_SalesOrder": payload}]}
    return {
        "id": "deep",
        "method": "POST",
        "service": "DEMO_SALES_ORDER_SRV",
        "entity_set": "A_SalesOrder",
        "payload": payload,
    }


def _nested_expand(levels: int) -> dict:
    nav = ["to_Item", "to_SalesOrder"]
    expand = "to_Item"
    for i in range(levels):
        expand = f"{nav[i % 2]}($expand={expand})"
    return {
        "id": "expand",
        "method": "GET",
        "url": f"/sap/opu/odata/sap/DEMO_SALES_ORDER_SRV/A_SalesOrder?$expand={expand}",
    }


def long_line(megabytes: int) -> Generator:
    def write(path: Path, ctx: Context) -> None:
        with path.open("w", encoding="utf-8") as fh:
            fh.write('{"id": "long", "method": "GET", "url": "/')
            for _ in range(megabytes):
                fh.write("a" * MB)
            fh.write('"}\n')

    return write


# ---------------------------------------------------------------- folders and stores


def precious_folder(path: Path, ctx: Context) -> None:
    """A user's folder that is not a store: it must survive every command pointed at it."""
    path.mkdir()
    (path / "thesis.txt").write_text("four years of work\n", encoding="utf-8")
    (path / "data").mkdir()
    (path / "data" / "results.csv").write_text("a,b\n1,2\n", encoding="utf-8")


def damaged_store(damage: Callable[[Path], None]) -> Generator:
    """A copy of the context's store, then ``damage`` applied to its RocksDB folder."""

    def write(path: Path, ctx: Context) -> None:
        if ctx.store is None:
            raise ValueError("a damaged store needs a built store (--store)")
        shutil.copytree(ctx.store, path, symlinks=True)  # a store may link to its current version
        damage((path / "oxigraph").resolve())

    return write


def _no_current(db: Path) -> None:
    (db / "CURRENT").unlink()


def _truncated_sst(db: Path) -> None:
    """Every table file cut to half, so whichever one a command reads is damaged."""
    for sst in db.glob("*.sst"):
        data = sst.read_bytes()
        sst.write_bytes(data[: len(data) // 2])


# ---------------------------------------------------------------- the corpus

DUPLICATE_KEYS = """mappings:
  - process: Process_OrderToCash
    activity: Task_CreateSalesOrder
    service: DEMO_SALES_ORDER_SRV
    entity_set: A_SalesOrder
    entity_set: A_SalesOrderItem
    mode: write
"""


def _deep_yaml(key: str, levels: int) -> str:
    """``key:`` holding a flow sequence nested ``levels`` deep (YAML's composer recurses per level)."""
    return f"{key}: " + "[" * levels + "]" * levels + "\n"


def _yaml_alias_bomb(key: str, levels: int, fan: int) -> str:
    """``key:`` holding an alias bomb: each anchor lists the one before ``fan`` times (``fan ** levels`` nodes)."""
    lines = ["a0: &a0 [x]"]
    for i in range(1, levels + 1):
        lines.append(f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * fan)}]")
    return "\n".join(lines) + f"\n{key}: [*a{levels}]\n"


GENERATORS: dict[str, Generator] = {
    # XML prolog and DTDs
    "prolog.xml": text(_prolog() + V4_SERVICE.format(types=THING)),
    "prolog.bpmn": text(_prolog() + _linear()),
    "prolog-bomb.xml": text(_prolog() + BOMB_DTD + V4_SERVICE.format(types=THING)),
    "prolog-bomb.bpmn": text(_prolog() + BOMB_DTD + _linear()),
    "billion-laughs.xml": copy_of(INVALID / "billion-laughs.xml"),
    "xxe-file.xml": copy_of(INVALID / "xxe-file.xml"),
    "xxe-http.bpmn": copy_of(INVALID / "xxe-http.bpmn", port_placeholder=True),
    "external-dtd.bpmn": copy_of(INVALID / "external-dtd.bpmn", port_placeholder=True),
    # BPMN structure
    "duplicate-ids.bpmn": text(_linear('    <task id="T" name="Same id again"/>\n')),
    "task-without-id.bpmn": text(_linear('    <task name="No id"/>\n')),
    "flow-without-id.bpmn": text(_linear('    <sequenceFlow sourceRef="S" targetRef="E"/>\n')),
    "fan-out.bpmn": text(_fan_out(3000)),
    "fan-in-out.bpmn": text(_fan_in_out(3000)),
    "dangling-default.bpmn": text(_linear('    <exclusiveGateway id="G" default="NoSuchFlow"/>\n')),
    "dangling-lane.bpmn": text(
        _linear('    <laneSet id="LS"><lane id="L"><flowNodeRef>NoSuchTask</flowNodeRef></lane></laneSet>\n')
    ),
    "dangling-attached.bpmn": text(_linear('    <boundaryEvent id="B" attachedToRef="NoSuchTask"/>\n')),
    # OData structure
    "duplicate-types.xml": text(V4_SERVICE.format(types=THING + "\n" + THING)),
    # code lists and mapping
    "unterminated.csv": text('value_list,code,description\nVL_A,"A1,first\nVL_A,A2,second\n'),
    "duplicate-keys.mapping.yaml": text(DUPLICATE_KEYS),
    "deep.mapping.yaml": text(_deep_yaml("mappings", 20_000)),
    "alias-bomb.mapping.yaml": text(_yaml_alias_bomb("mappings", 9, 9)),
    "deep.bindings.yaml": text(_deep_yaml("bindings", 20_000)),
    "deep.proposals.yaml": text(_deep_yaml("mappings", 20_000)),
    # OpenAPI
    "ref-chain.json": json_doc(lambda: _ref_chain(4000)),
    "allof-bomb.json": json_doc(lambda: _all_of_bomb(10, 9)),
    "big.json": big_openapi(50),
    "big-15.json": big_openapi(15),
    "many-operations.json": many_operations(12),
    # recorded calls (JSON Lines)
    "long-line.jsonl": long_line(25),
    "deep-nesting.jsonl": text("[" * 100_000 + "]" * 100_000 + "\n"),
    "deep-insert.jsonl": text(_line(_deep_insert(250))),
    "nested-expand.jsonl": text(_line(_nested_expand(300))),
    "README.md": copy_of(DEMO / "README.md"),
    "u2028.jsonl": text(_line({"id": "line\u2028separator", **GET}) + _line({"id": "second", **GET})),
    "bom.jsonl": raw(b"\xef\xbb\xbf" + _line({"id": "bom", **GET}).encode()),
    "nan.jsonl": text(
        '{"id": "nan", "method": "POST", "service": "DEMO_SALES_ORDER_SRV", '
        '"entity_set": "A_SalesOrder", "payload": {"SalesOrderType": NaN}}\n'
    ),
    # SPARQL
    "cartesian.rq": text("SELECT (COUNT(*) AS ?n) WHERE { ?a ?b ?c . ?d ?e ?f . ?g ?h ?i }\n"),  # no row until done
    "service-comment.rq": text(
        "SELECT * WHERE { SERVICE # endpoint:\n <http://127.0.0.1:PORT/sparql> { ?s ?p ?o } }\n"
    ),
    "service-prefixed.rq": text(
        "PREFIX ep: <http://127.0.0.1:PORT/>\nSELECT * WHERE { SERVICE ep:sparql { ?s ?p ?o } }\n"
    ),
    "service-variable.rq": text(
        "SELECT * WHERE { VALUES ?e { <http://127.0.0.1:PORT/sparql> } SERVICE ?e { ?s ?p ?o } }\n"
    ),
    "from.rq": text("SELECT * FROM <http://127.0.0.1:PORT/> WHERE { ?s ?p ?o }\n"),
    # folders and stores
    "precious": precious_folder,
    "store-no-current": damaged_store(_no_current),
    "store-truncated-sst": damaged_store(_truncated_sst),
}

#: Inputs that name a loopback URL: ``PORT`` is replaced by the context's port.
WITH_PORT = {"service-comment.rq", "service-prefixed.rq", "service-variable.rq", "from.rq"}


def make(name: str, folder: Path, ctx: Context = Context()) -> Path:
    """Write the input ``name`` into ``folder`` (once) and return its path."""
    path = folder / name
    if not path.exists():
        GENERATORS[name](path, ctx)
        if name in WITH_PORT:
            path.write_text(path.read_text(encoding="utf-8").replace("PORT", str(ctx.port)), encoding="utf-8")
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("names", nargs="*", help="inputs to write (default: all but the damaged stores)")
    parser.add_argument("--store", type=Path, help="a built store, copied for the damaged-store inputs")
    args = parser.parse_args(argv)
    args.folder.mkdir(parents=True, exist_ok=True)
    names = args.names or [n for n in GENERATORS if not n.startswith("store-") or args.store]
    for name in names:
        print(make(name, args.folder, Context(store=args.store)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
