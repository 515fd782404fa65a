"""Property-based tests: a real input, mutated, is read or refused with one located error.

Hypothesis mutates real documents (a CSDL service, a BPMN model, a SOCBench-D OpenAPI document,
the demo mapping, code list and recorded calls): byte flips, truncation, duplicated and removed
lines, inserted Unicode, and for XML removed elements and attributes. Whatever the mutation, the
library reader (and the lifter after it) must either succeed or raise a ProcessKGError whose
message begins with the file's name (and, for XML and JSON Lines, ``name:line``); any other
exception (KeyError, RecursionError, UnicodeDecodeError...) fails, as does an example slower than
the deadline. A few examples per input go through the real ``kg`` command under the memory cap.

Examples are derandomized, so a run in CI sees the same inputs as a run here.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lxml import etree

from processkg.build.pipeline import Builder, BuildOptions
from processkg.errors import ProcessKGError
from processkg.jsonl import read_records
from processkg.sources import openapi
from processkg.sources.bpmn.bpmn_xml import read_definitions
from processkg.sources.bpmn.lift_definitions import DefinitionsLifter
from processkg.sources.codes import read_code_lists
from processkg.sources.mapping import lift_mapping, read_mapping, resolve_entry
from processkg.sources.odata import edm
from processkg.sources.odata.csdl import read_document
from processkg.sources.odata.lift_service import ServiceLifter

sys.path.insert(0, str(Path(__file__).parent / "hostile"))
from kg_runner import assert_bounded, run_kg

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "data" / "demo"
SHARED = ROOT.parent / "shared" / "data"
OPENAPI_DOC = SHARED.joinpath(
    "socbench-d", "socbenchd_1", "01-energy", "02-Renewable Energy Production Data Service", "openapi.json"
)

IN_PROCESS = settings(
    max_examples=100,
    deadline=3000,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture],
)
THROUGH_KG = settings(IN_PROCESS, max_examples=3, deadline=None)


# ---------------------------------------------------------------- mutations


def flip(data: bytes, at: int, mask: int) -> bytes:
    i = at % len(data) if data else 0
    return data[:i] + bytes([data[i] ^ mask]) + data[i + 1 :] if data else data


def truncate(data: bytes, at: int, _mask: int) -> bytes:
    return data[: at % (len(data) + 1)]


def _lines(data: bytes) -> list[bytes]:
    return data.splitlines(keepends=True) or [b""]


def duplicate_line(data: bytes, at: int, _mask: int) -> bytes:
    lines = _lines(data)
    i = at % len(lines)
    return b"".join(lines[: i + 1] + lines[i:])


def remove_line(data: bytes, at: int, _mask: int) -> bytes:
    lines = _lines(data)
    i = at % len(lines)
    return b"".join(lines[:i] + lines[i + 1 :])


BYTE_MUTATIONS = [flip, truncate, duplicate_line, remove_line]


def remove_element(data: bytes, at: int, _mask: int) -> bytes:
    """Drop the ``at``-th element (document order, root excluded), comments kept."""
    root = etree.fromstring(data, etree.XMLParser(remove_comments=False, resolve_entities=False))
    elements = [e for e in root.iter() if isinstance(e.tag, str)][1:]
    victim = elements[at % len(elements)]
    victim.getparent().remove(victim)
    return etree.tostring(root, xml_declaration=True, encoding="utf-8")


def remove_attribute(data: bytes, at: int, _mask: int) -> bytes:
    """Drop the ``at``-th attribute of the document (ids, references, types, names...)."""
    root = etree.fromstring(data, etree.XMLParser(remove_comments=False, resolve_entities=False))
    owners = [(e, name) for e in root.iter() if isinstance(e.tag, str) for name in e.attrib]
    element, name = owners[at % len(owners)]
    del element.attrib[name]
    return etree.tostring(root, xml_declaration=True, encoding="utf-8")


XML_MUTATIONS = [remove_element, remove_attribute]

#: Values a JSON member may be replaced by: other types, extremes, references to nothing or to loops.
ODD_VALUES = [
    None,
    0,
    -1,
    1e308,
    "",
    "x" * 300,
    [],
    {},
    True,
    "\u2028",
    {"$ref": "#/nope"},
    {"$ref": "#"},
    {"$ref": "#/components/schemas"},
    [[[[[]]]]],
    {"type": "array"},
    {"allOf": [{"$ref": "#"}]},
]


def _members(value, found: list) -> list:
    """(container, key) of every member and item, in document order."""
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, child in items:
        found.append((value, key))
        _members(child, found)
    return found


def _edit_json(value, at: int, mask: int):
    members = _members(value, [])
    if not members:
        return value
    container, key = members[at % len(members)]
    if mask % 3 == 0 and isinstance(container, dict):
        del container[key]
    else:
        container[key] = ODD_VALUES[mask % len(ODD_VALUES)]
    return value


def edit_json(data: bytes, at: int, mask: int) -> bytes:
    """Delete a member of the document, or give it a value of another kind."""
    return json.dumps(_edit_json(json.loads(data), at, mask), indent=1).encode()


def edit_json_line(data: bytes, at: int, mask: int) -> bytes:
    """As :func:`edit_json`, on one line of a JSON Lines file (the others kept)."""
    lines = data.splitlines(keepends=True)
    i = at % len(lines)
    lines[i] = json.dumps(_edit_json(json.loads(lines[i]), at // len(lines), mask), ensure_ascii=False).encode() + b"\n"
    return b"".join(lines)


STRUCTURAL = {"xml": XML_MUTATIONS, "json": [edit_json], "jsonl": [edit_json_line]}

# Unicode a reader may trip on: line and paragraph separators, NEL, BOM, NUL, surrogates' neighbours,
# right-to-left marks, and characters that are not XML at all.
AWKWARD = "\u2028\u2029\u0085\ufeff\x00\x0b\x0c\r\u200f\ud7ff\ue000\uffff\U0001f600<>&\"'{}[],:#-\n"


@st.composite
def inserted_text(draw) -> Callable[[bytes], bytes]:
    text = draw(st.text(alphabet=st.sampled_from(AWKWARD) | st.characters(), min_size=1, max_size=8))
    at = draw(st.integers(min_value=0, max_value=1 << 20))

    def insert(data: bytes) -> bytes:
        i = at % (len(data) + 1)
        return data[:i] + text.encode("utf-8", "surrogatepass") + data[i:]

    insert.__name__ = f"insert {text!r} at {at}"
    return insert


@st.composite
def one_mutation(draw, kinds: list) -> Callable[[bytes], bytes]:
    if kinds is BYTE_MUTATIONS and draw(st.integers(0, len(kinds))) == len(kinds):
        return draw(inserted_text())
    kind = draw(st.sampled_from(kinds))
    at, mask = draw(st.integers(0, 1 << 20)), draw(st.integers(1, 255))

    def mutate(data: bytes) -> bytes:
        return kind(data, at, mask)

    mutate.__name__ = f"{kind.__name__}({at}, {mask})"
    return mutate


def mutations(structure: str = ""):
    """One to three byte-level mutations, or (``structure``: xml, json or jsonl) one to four structural
    ones, which keep the document parseable so that the model and the lifter see the damage."""
    if structure:
        return st.lists(one_mutation(STRUCTURAL[structure]), min_size=1, max_size=4)
    return st.lists(one_mutation(BYTE_MUTATIONS), min_size=1, max_size=3)


def apply(data: bytes, ms: list) -> bytes:
    for mutate in ms:
        data = mutate(data)
    return data


# ---------------------------------------------------------------- readers (read and lift, as kg build does)


def lift_csdl(path: Path) -> None:
    doc = read_document(path, path.name)
    if doc.is_service:
        ServiceLifter(edm.resolve(doc), doc.name).lift()


def lift_bpmn(path: Path) -> None:
    DefinitionsLifter(read_definitions(path, path.name), path.name).lift()


def lift_openapi(path: Path) -> None:
    openapi.lift_all([path])


def read_codes(path: Path) -> None:
    read_code_lists([(path, path.name)])


def read_calls(path: Path) -> None:
    """Every broken line comes back as a JsonLinesError value naming ``file:line``."""
    for number, value in read_records(path):
        if isinstance(value, ProcessKGError):
            assert str(value).startswith(f"{path.name}:{number}: ") or str(value).startswith(f"{path}:{number}: "), (
                f"the error does not name {path.name}:{number}: {value}"
            )


@dataclass(frozen=True)
class Input:
    id: str
    source: Path
    read: Callable[[Path], None]
    structure: str = ""  # xml, json or jsonl: also mutated structurally
    lines: bool = False  # errors name the line (XML, JSON Lines)
    kg: tuple[str, ...] = ()  # the kg command for the subprocess examples ({f} the file)


INPUTS = [
    Input(
        "csdl-v4",
        ROOT / "tests" / "data" / "odata" / "HANDMADE_PURCHASING.xml",
        lift_csdl,
        structure="xml",
        lines=True,
        kg=("build", "--odata", "{f}", "--out", "{out}"),
    ),
    Input(
        "csdl-v2",
        DEMO / "odata" / "DEMO_SALES_ORDER_SRV.edmx",
        lift_csdl,
        structure="xml",
        lines=True,
        kg=("build", "--odata", "{f}", "--out", "{out}"),
    ),
    Input(
        "bpmn",
        DEMO / "bpmn" / "order-to-cash.bpmn",
        lift_bpmn,
        structure="xml",
        lines=True,
        kg=("build", "--bpmn", "{f}", "--out", "{out}"),
    ),
    Input("openapi", OPENAPI_DOC, lift_openapi, structure="json", kg=("build", "--openapi", "{f}", "--out", "{out}")),
    Input(
        "codes", DEMO / "codes" / "sales-order-types.csv", read_codes, kg=("build", "--codes", "{f}", "--out", "{out}")
    ),
    Input(
        "calls",
        DEMO / "calls.jsonl",
        read_calls,
        structure="jsonl",
        lines=True,
        kg=("validate", "--store", "{store}", "{f}"),
    ),
]


def check(read: Callable[[Path], None], path: Path, lines: bool) -> None:
    """The property: success, or a ProcessKGError that begins with the file's name (and line)."""
    try:
        read(path)
    except ProcessKGError as exc:
        message = str(exc)
        names = (re.escape(path.name), re.escape(str(path)))
        where = rf"(?:{'|'.join(names)}):\d+" if lines else rf"(?:{'|'.join(names)})"
        if lines and "cannot read" in message:
            where = rf"(?:{'|'.join(names)})"
        assert re.match(where, message), (
            f"{type(exc).__name__} does not begin with {path.name}{':line' if lines else ''}: {message[:300]!r}"
        )


@pytest.fixture(scope="module")
def scratch(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("mutants")


def _source(item: Input) -> bytes:
    if not item.source.exists():
        pytest.fail(f"real input {item.source} is absent (../shared/data must lie beside the repository)")
    return item.source.read_bytes()


@pytest.mark.parametrize(
    ("item", "structure"),
    [(i, s) for i in INPUTS for s in dict.fromkeys(("", i.structure))],
    ids=[f"{i.id}-{s or 'bytes'}" for i in INPUTS for s in dict.fromkeys(("", i.structure))],
)
def test_mutated_input_is_read_or_refused_with_a_located_error(item: Input, structure: str, scratch: Path):
    original = _source(item)
    path = scratch / item.source.name

    @IN_PROCESS
    @given(ms=mutations(structure))
    def mutated(ms):
        path.write_bytes(apply(original, ms))
        check(item.read, path, item.lines)

    mutated()


# ---------------------------------------------------------------- the mapping, resolved against the demo


@pytest.fixture(scope="module")
def demo_parts():
    """Activities and entity sets of the demo, to resolve mutated mappings against."""
    builder = Builder(BuildOptions(odata=[DEMO / "odata"], bpmn=[DEMO / "bpmn"], codes=[DEMO / "codes"]))
    builder.run()
    return builder.activities, builder.entity_sets


def test_mutated_mapping_is_read_or_refused_with_a_located_error(demo_parts, scratch: Path):
    activities, entity_sets = demo_parts
    original = (DEMO / "mapping.yaml").read_bytes()
    path = scratch / "mapping.yaml"

    def read(p: Path) -> None:
        entries = read_mapping(p, p.name)
        for entry in entries:
            resolve_entry(entry, activities, entity_sets, p.name)
        lift_mapping(entries, activities, entity_sets, p.name)

    @IN_PROCESS
    @given(ms=mutations())
    def mutated(ms):
        path.write_bytes(apply(original, ms))
        check(read, path, lines=False)

    mutated()


# ---------------------------------------------------------------- a few examples through kg itself


@pytest.mark.parametrize("item", INPUTS, ids=[i.id for i in INPUTS])
def test_mutated_input_through_kg_exits_0_1_or_2_with_one_line(item: Input, demo_store: Path, tmp_path: Path):
    original = _source(item)
    folder = tmp_path / "in"
    folder.mkdir()
    path = folder / item.source.name

    @THROUGH_KG
    @given(ms=mutations(item.structure))
    def mutated(ms):
        path.write_bytes(apply(original, ms))
        args = [a.format(f=path, store=demo_store, out=tmp_path / "out.ttl") for a in item.kg]
        run = run_kg(args, timeout=30, scratch=tmp_path)
        line = assert_bounded(run, (0, 1, 2), 30)
        if line:
            assert path.name in line, line

    mutated()
