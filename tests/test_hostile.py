"""Hostile inputs through the real ``kg`` command: never a crash, a hang, a leak or lost user data.

Each :class:`Case` is one line of the table :data:`CASES`: the input (written at test time by
``tests/hostile/make_corpus.py``), the ``kg`` arguments, and what must come out. Every case runs
in its own process with a wall-clock timeout and an address-space cap, and must

* end with the expected exit code (2 for bad input: not 0, not 1, not 3 = a crash, not a signal);
* for exit 2, print exactly one line on stderr, ``error: ...``, naming the file (and the line where
  the format has lines) and matching the case's pattern; never a traceback;
* finish within its timeout and within the memory cap (peak RSS measured by ``wait4``);
* leave every folder it was given unchanged, and send no request to the loopback HTTP server
  that the SPARQL and XXE inputs point at.

Adding a case is adding one line to :data:`CASES` (and, for a new input, one entry to
``GENERATORS`` in make_corpus.py).
"""

from __future__ import annotations

import hashlib
import re
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent / "hostile"))
import make_corpus as corpus
from kg_runner import MEMORY_CAP, assert_bounded, run_capped, run_kg

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "data" / "demo"


# ---------------------------------------------------------------- the cases

ODATA = ("build", "--odata", "{f}", "--out", "{out}")
BPMN = ("build", "--bpmn", "{f}", "--out", "{out}")
OPENAPI = ("build", "--openapi", "{f}", "--out", "{out}")
CODES = ("build", "--codes", "{f}", "--out", "{out}")
MAPPING = ("build", "--odata", "{demo}/odata", "--bpmn", "{demo}/bpmn", "--mapping", "{f}", "--out", "{out}")
BINDINGS = ("build", "--codes", "{demo}/codes", "--code-bindings", "{f}", "--out", "{out}")
PROPOSALS = ("eval", "mapping", "--proposals", "{f}", "--gold", "{demo}/mapping.yaml")
CALLS = ("validate", "--store", "{store}", "{f}")
QUERY = ("query", "--store", "{store}", "{f}")
STORE_BUILD = ("build", "--bpmn", "{demo}/bpmn", "--no-index", "--store")

XML_AT = r"{name}:\d+(:\d+)?: "  # file:line[:column]: for XML inputs
JSONL_AT = r"{name}: .*line 1\b"  # the only record of a file, named by the file-level error
ENTITIES = XML_AT + r".*(?i:entit)"
ZERO = r"/dev/zero\b"


def duplicate(name: str) -> str:
    """file:line, the duplicated name, and a word that says it is declared twice (in any order)."""
    return XML_AT + rf"(?=.*\b{name}\b)(?=.*(?i:duplicate|more than once|already|twice))"


@dataclass(frozen=True)
class Case:
    """One hostile input: ``input`` (a make_corpus name, or "" when ``args`` name it), the ``kg``
    arguments ({f} input, {store} demo store, {out} a Turtle file, {demo} data/demo), and the expected
    outcome: exit codes, a pattern for the one stderr line ({name}: the input's file name) or for stdout."""

    id: str
    input: str
    args: tuple[str, ...]
    error: str = ""
    codes: tuple[int, ...] = (2,)
    stdout: str = ""
    timeout: float = 20
    cwd_is_input: bool = False


CASES = [
    # XML prolog: 30 comments and processing instructions before the root; entity bombs; XXE
    Case("odata-prolog-30", "prolog.xml", ODATA, codes=(0,), timeout=10),
    Case("bpmn-prolog-30", "prolog.bpmn", BPMN, codes=(0,), timeout=10),
    Case("odata-prolog-30-then-bomb", "prolog-bomb.xml", ODATA, ENTITIES, timeout=10),
    Case("bpmn-prolog-30-then-bomb", "prolog-bomb.bpmn", BPMN, ENTITIES, timeout=10),
    Case("odata-billion-laughs", "billion-laughs.xml", ODATA, ENTITIES, timeout=10),
    Case("odata-xxe-file", "xxe-file.xml", ODATA, ENTITIES, timeout=10),
    Case("bpmn-xxe-http", "xxe-http.bpmn", BPMN, ENTITIES, timeout=10),
    Case("bpmn-external-dtd", "external-dtd.bpmn", BPMN, XML_AT + r".*external DTD", timeout=10),
    # BPMN structure
    Case("bpmn-duplicate-ids", "duplicate-ids.bpmn", BPMN, duplicate("T")),
    Case("bpmn-task-without-id", "task-without-id.bpmn", BPMN, XML_AT + r".*(?i:task).*\bid\b"),
    Case("bpmn-flow-without-id", "flow-without-id.bpmn", BPMN, XML_AT + r".*(?i:sequenceFlow).*\bid\b"),
    Case("bpmn-fan-out-3000", "fan-out.bpmn", BPMN, codes=(0,), timeout=15),
    Case("bpmn-fan-in-out-3000", "fan-in-out.bpmn", BPMN, XML_AT + r"exclusiveGateway 'G'.*bpmn:next", timeout=15),
    # a dangling reference drops only the element that holds it, with a warning naming file:line and id
    Case(
        "bpmn-dangling-default",
        "dangling-default.bpmn",
        BPMN,
        codes=(0,),
        stdout=r"warning: dangling-default\.bpmn:\d+: .*NoSuchFlow.*left out",
    ),
    Case(
        "bpmn-dangling-lane-node",
        "dangling-lane.bpmn",
        BPMN,
        codes=(0,),
        stdout=r"warning: dangling-lane\.bpmn:\d+: .*NoSuchTask.*left out",
    ),
    Case(
        "bpmn-dangling-attached-to",
        "dangling-attached.bpmn",
        BPMN,
        codes=(0,),
        stdout=r"warning: dangling-attached\.bpmn:\d+: .*NoSuchTask.*left out",
    ),
    # OData, code lists, mapping
    Case("odata-duplicate-entity-types", "duplicate-types.xml", ODATA, duplicate("Thing")),
    Case("codes-unterminated-quote", "unterminated.csv", CODES, r"{name}:\d+: .*(?i:quot)"),
    Case("mapping-duplicate-keys", "duplicate-keys.mapping.yaml", MAPPING, r"{name}:\d+: .*(?i:duplicate).*entity_set"),
    # YAML nested 20,000 deep (the composer recurses per level) and an alias bomb, in each YAML reader
    Case("mapping-nested-20000", "deep.mapping.yaml", MAPPING, r"{name}:1: YAML nested deeper than 64 levels"),
    Case("mapping-alias-bomb", "alias-bomb.mapping.yaml", MAPPING, r"{name}:2: .*(?i:alias)"),
    Case("bindings-nested-20000", "deep.bindings.yaml", BINDINGS, r"{name}:1: YAML nested deeper than 64 levels"),
    Case("proposals-nested-20000", "deep.proposals.yaml", PROPOSALS, r"{name}:1: YAML nested deeper than 64 levels"),
    # /dev/zero where a file is expected: never read to the end (it has none)
    Case(
        "dev-zero-mapping",
        "",
        ("build", "--odata", "{demo}/odata", "--bpmn", "{demo}/bpmn", "--mapping", "/dev/zero", "--out", "{out}"),
        r"\bzero\b",
    ),
    Case("dev-zero-codes", "", ("build", "--codes", "/dev/zero", "--out", "{out}"), ZERO),
    Case("dev-zero-code-bindings", "", tuple(a.replace("{f}", "/dev/zero") for a in BINDINGS), r"\bzero\b"),
    Case("dev-zero-openapi", "", ("build", "--openapi", "/dev/zero", "--out", "{out}"), ZERO),
    Case("dev-zero-calls", "", ("validate", "--store", "{store}", "/dev/zero"), ZERO),
    Case("dev-zero-query", "", ("query", "--store", "{store}", "/dev/zero"), ZERO),
    Case("dev-zero-retrieve-queries", "", ("retrieve", "--store", "{store}", "--queries", "/dev/zero"), ZERO),
    # OpenAPI: a long $ref chain, an allOf bomb (9**10 leaves if expanded), 15 MB read, 50 MB refused,
    # 12 MB of operations (1.6 M triples if lifted) refused
    Case("openapi-ref-chain-4000", "ref-chain.json", OPENAPI, r"{name}(:\d+)?: .*\$ref", codes=(0, 2), timeout=15),
    Case("openapi-allof-bomb", "allof-bomb.json", OPENAPI, r"{name}(:\d+)?: .*(?i:allOf)", codes=(0, 2), timeout=15),
    Case("openapi-15-mb", "big-15.json", OPENAPI, codes=(0,), stdout=r"built \d+ triples", timeout=40),
    Case("openapi-50-mb", "big.json", OPENAPI, r"{name}: OpenAPI document is 50\.0 MB, over the limit of 16 MB"),
    Case(
        "openapi-12-mb-of-operations",
        "many-operations.json",
        OPENAPI,
        r"{name}:\d+: at #/paths/\S+: the document describes more than 50,000 operations",
        timeout=60,
    ),
    # recorded calls (JSON Lines)
    Case("calls-25-mb-line", "long-line.jsonl", CALLS, JSONL_AT + r".*limit"),
    Case("calls-100k-nesting", "deep-nesting.jsonl", CALLS, JSONL_AT + r".*nested deeper"),
    Case("calls-deep-insert-250", "deep-insert.jsonl", CALLS, JSONL_AT + r".*nested deeper"),
    Case("calls-expand-300", "nested-expand.jsonl", CALLS, codes=(1,), stdout=r"expand \(line 1\): INVALID"),
    Case("calls-readme", "README.md", CALLS, r"{name}: not JSON Lines"),
    Case("calls-u2028-in-string", "u2028.jsonl", CALLS, codes=(0,), stdout=r"(?m)^second \(line 2\): valid$"),
    Case("calls-bom", "bom.jsonl", CALLS, codes=(0,), stdout=r"(?m)^bom \(line 1\): valid$"),
    Case("calls-nan", "nan.jsonl", CALLS, JSONL_AT + r".*NaN"),
    # SPARQL: bounded, and never a network (the server must see no request)
    Case(
        "query-cartesian",
        "cartesian.rq",
        ("query", "--store", "{store}", "--timeout", "3", "{f}"),
        r"(?i)time",
        timeout=25,
    ),
    Case("query-service-comment", "service-comment.rq", QUERY, r"SERVICE"),
    Case("query-service-prefixed", "service-prefixed.rq", QUERY, r"SERVICE"),
    Case("query-service-variable", "service-variable.rq", QUERY, r"SERVICE"),
    Case("query-from-loopback", "from.rq", QUERY, r"FROM"),
    Case("retrieve-empty-query", "", ("retrieve", "--store", "{store}", ""), r"(?i)empty"),
    # a store that is not one: refused, and the user's files survive
    Case("store-unrelated-folder", "precious", (*STORE_BUILD, "{f}"), r"precious"),
    Case("store-dot", "precious", (*STORE_BUILD, "."), r"(?i)store", cwd_is_input=True),
    # a damaged store: one line, and the damaged files left as they are
    Case("stats-store-without-current", "store-no-current", ("stats", "--store", "{f}"), r"store-no-current"),
    Case(
        "query-store-without-current",
        "store-no-current",
        ("query", "--store", "{f}", "unused-entity-sets"),
        r"store-no-current",
    ),
    Case("stats-store-truncated-sst", "store-truncated-sst", ("stats", "--store", "{f}"), r"store-truncated-sst"),
    Case(
        "query-store-truncated-sst",
        "store-truncated-sst",
        ("query", "--store", "{f}", "unused-entity-sets"),
        r"store-truncated-sst",
    ),
]


# ---------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def server(recording_server):
    """The loopback server that must see no request: the SPARQL and XXE inputs point at it."""
    return recording_server


@pytest.fixture(scope="module")
def inputs(tmp_path_factory, demo_store, server):
    """The folder the hostile inputs are written into, each when a case first needs it."""
    folder = tmp_path_factory.mktemp("hostile")
    ctx = corpus.Context(store=demo_store, port=server.server_port)
    return lambda name: corpus.make(name, folder, ctx)


def digest(path: Path) -> dict:
    """{relative path: sha256} of every file below a folder (or of the file itself)."""
    files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
    return {
        p.relative_to(path).as_posix() if path.is_dir() else p.name: hashlib.sha256(p.read_bytes()).hexdigest()
        for p in files
    }


# ---------------------------------------------------------------- the test


def expand(args: tuple[str, ...], **values: str) -> list[str]:
    return [a.format(**values) for a in args]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_hostile_input(case: Case, inputs, demo_store, server, tmp_path):
    path = inputs(case.input) if case.input else Path("/dev/zero")
    before = digest(path) if case.input else {}
    seen = len(server.requests)
    args = expand(case.args, f=str(path), store=str(demo_store), out=str(tmp_path / "out.ttl"), demo=str(DEMO))
    run = run_kg(args, case.timeout, cwd=path if case.cwd_is_input else None, scratch=tmp_path)
    line = assert_bounded(run, case.codes, case.timeout)
    if run.code == 2:
        pattern = case.error.replace("{name}", re.escape(path.name))
        assert re.search(pattern, line), f"{pattern!r} not in {line!r}"
    else:
        assert re.search(case.stdout, run.stdout), f"{case.stdout!r} not in stdout {run.stdout[-600:]!r}"
    assert server.requests[seen:] == [], f"the loopback server was contacted: {server.requests[seen:]}"
    if case.input:
        assert digest(path) == before, "the input was changed"


def test_runner_reports_a_hang_and_the_memory_cap(tmp_path):
    """Control: the runner would notice a hang (kill) and a process over the cap (it cannot grow past it)."""
    script = tmp_path / "hog.py"
    script.write_text(
        "import sys, time\ntry:\n    b = bytearray(4 * 1024**3)\nexcept MemoryError:\n"
        "    print('capped')\nsys.stdout.flush()\ntime.sleep(60)\n"
    )
    run = run_capped([sys.executable, str(script)], timeout=2, scratch=tmp_path)
    assert run.timed_out and 1.9 < run.seconds < 10
    assert run.stdout.strip() == "capped" and run.max_rss < MEMORY_CAP
