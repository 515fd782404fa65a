"""The SAP retrieval benchmark (data/sap/benchmark/queries.jsonl) is well-formed and its gold is real.

The file is read as JSON and with ``processkg.evaluate.metrics.read_queries``. Checks that need the real
SAP metadata (``../shared/data/odata/s4-a2x``) fail when it is absent. Those checks run on a graph
built from the metadata and the process layer (``data/sap/processes``, ``data/sap/mapping.yaml``: the
session's ``sap_store``), so the gold is checked independently of the lxml reader that
``data/sap/benchmark/tools/finalize.py`` uses to write the file; the lexical overlap and the
split are recomputed with finalize.py's own functions.
"""

from __future__ import annotations

import importlib.util
import json
from collections import Counter, defaultdict

import pytest

from conftest import ROOT, rows, shared
from processkg.evaluate.metrics import read_queries
from processkg.graph.handle import open_store
from processkg.graph.store import StoreGraph

BENCH = ROOT / "data" / "sap" / "benchmark"
QUERIES = BENCH / "queries.jsonl"
TYPES = ("single", "navigation", "process-chain", "workflow")


def _finalize():
    spec = importlib.util.spec_from_file_location("benchmark_finalize", BENCH / "tools" / "finalize.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def records() -> list:
    return [json.loads(line) for line in QUERIES.read_text(encoding="utf-8").splitlines() if line.strip()]


@pytest.fixture(scope="module")
def sap_graph(sap_store) -> StoreGraph:
    """The A2X services with the SAP process layer: the graph of the session's ``sap_store`` (conftest),
    built from the same inputs (A2X, data/sap/processes and mapping.yaml, failing on any error)."""
    return open_store(sap_store)


@pytest.fixture(scope="module")
def metadata():
    fin = _finalize()
    return fin, fin.Metadata(shared("odata", "s4-a2x"))


def _refs(item: dict) -> list:
    return [(item["service"], item["entity_set"])] + [(a["service"], a["entity_set"]) for a in item["alternatives"]]


# ------------------------------------------------------------------ shape (no real data needed)


def test_read_by_evaluate(records):
    queries = read_queries(QUERIES)
    assert len(queries) == len(records)
    assert all(q.gold and q.type in TYPES and q.split in ("train", "test") for q in queries)


def test_size_and_unique_ids(records):
    assert len(records) >= 280
    ids = [r["id"] for r in records]
    assert len(set(ids)) == len(ids)
    assert all(i.startswith("sap-") and i[4:].isdigit() for i in ids)
    assert len({r["query"].strip().lower() for r in records}) == len(records), "a query text is repeated"


def test_schema(records):
    keys = ["id", "query", "type", "split", "gold", "lexical_overlap", "process", "anchor"]
    for r in records:
        assert list(r) == keys, r["id"]
        assert r["type"] in TYPES
        for g in r["gold"]:
            assert set(g) == {"service", "entity_set", "alternatives"}, r["id"]
        if r["type"] in ("navigation", "process-chain"):
            assert r["anchor"] and set(r["anchor"]) == {"service", "entity_set"}, r["id"]
        if r["type"] in ("process-chain", "workflow"):
            assert r["process"] and r["process"].startswith("Process_"), r["id"]
        if r["type"] == "single":
            assert len(r["gold"]) == 1, r["id"]
        if r["type"] == "workflow":
            assert 2 <= len(r["gold"]) <= 4, r["id"]


def test_types_and_split(records):
    counts = Counter((r["type"], r["split"]) for r in records)
    for t in TYPES:
        train, test = counts[(t, "train")], counts[(t, "test")]
        assert train and test, f"{t} is missing from a split"
        assert 0.45 <= train / (train + test) <= 0.55, f"{t}: {train} train / {test} test"


def test_split_is_the_deterministic_one(records):
    fin = _finalize()
    copy = [dict(r) for r in records]
    fin.assign_splits(copy)
    assert [r["split"] for r in copy] == [r["split"] for r in records]


def test_process_chain_overlap_is_low(records):
    chain = [r for r in records if r["type"] == "process-chain"]
    assert all(r["lexical_overlap"] <= 0.34 for r in chain), [r["id"] for r in chain if r["lexical_overlap"] > 0.34]
    assert sum(1 for r in chain if r["lexical_overlap"] == 0) > len(chain) / 2


def test_process_chain_anchor_is_not_gold(records):
    for r in records:
        if r["type"] == "process-chain":
            anchor = (r["anchor"]["service"], r["anchor"]["entity_set"])
            assert all(anchor not in _refs(g) for g in r["gold"]), r["id"]


def test_tokens_and_overlap_definition():
    fin = _finalize()
    assert fin.tokens("A_BPCreditWorthiness") == ["a", "bp", "credit", "worthiness"]
    assert fin.tokens("Deliveries left the GLAccount") == ["delivery", "left", "the", "gl", "account"]
    assert fin.name_tokens("A_ProductionOrder_2", "Production Order") == {"production", "order"}
    label = {("S", "A_SalesOrder"): "Sales Order Header"}
    gold = [{"service": "S", "entity_set": "A_SalesOrder"}]
    assert fin.overlap("book the sales order", gold, lambda s, e: label[(s, e)]) == round(2 / 3, 3)
    assert fin.overlap("charge the customer", gold, lambda s, e: label[(s, e)]) == 0.0


# ------------------------------------------------------------------ against the real metadata


def test_file_is_finalized(records, metadata):
    """Alternatives, overlap and split are what finalize.py computes (the file is not stale)."""
    fin, meta = metadata
    raw = [{k: v for k, v in r.items() if k not in ("split", "lexical_overlap")} for r in records]
    for r in raw:
        r["gold"] = [{"service": g["service"], "entity_set": g["entity_set"]} for g in r["gold"]]
    assert fin.normalize(raw, meta) == records


def test_overlap_recomputed(records, metadata):
    fin, meta = metadata
    for r in records:
        assert fin.overlap(r["query"], r["gold"], meta.label) == r["lexical_overlap"], r["id"]


def test_every_reference_resolves(records, sap_graph):
    existing = set(
        rows(
            sap_graph,
            """SELECT ?svc ?set WHERE {
        ?s kg:serviceName ?svc ; kg:entityContainer/kg:entitySet/kg:name ?set }""",
        )
    )
    assert len({svc for svc, _ in existing}) == 45
    missing = []
    for r in records:
        refs = [ref for g in r["gold"] for ref in _refs(g)]
        if r["anchor"]:
            refs.append((r["anchor"]["service"], r["anchor"]["entity_set"]))
        missing += [(r["id"], *ref) for ref in refs if ref not in existing]
    assert not missing


def test_every_service_and_process_is_covered(records, sap_graph):
    services = {svc for (svc,) in rows(sap_graph, "SELECT DISTINCT ?svc WHERE { ?s kg:serviceName ?svc }")}
    in_gold = {ref[0] for r in records for g in r["gold"] for ref in _refs(g)}
    assert services <= in_gold, sorted(services - in_gold)
    processes = {p for (p,) in rows(sap_graph, "SELECT ?p WHERE { ?x a bpmn:Process ; bpmn:elementId ?p }")}
    named = {r["process"] for r in records if r["process"]}
    assert named == processes
    for p in processes:
        kinds = {r["type"] for r in records if r["process"] == p}
        assert kinds == {"process-chain", "workflow"}, p


def test_navigation_gold_is_reachable(records, sap_graph):
    """Every navigation gold set is one or two navigation properties away from the anchor."""
    step = defaultdict(set)
    for svc, src, dst in rows(
        sap_graph,
        """SELECT ?svc ?from ?to WHERE {
            ?s kg:serviceName ?svc ; kg:entityContainer/kg:entitySet ?a .
            ?a kg:name ?from ; kg:entityType/kg:baseType*/kg:navigationProperty/kg:targetEntitySet ?b .
            ?b kg:name ?to }""",
    ):
        step[(svc, src)].add(dst)
    for r in records:
        if r["type"] != "navigation":
            continue
        svc, anchor = r["anchor"]["service"], r["anchor"]["entity_set"]
        one = step[(svc, anchor)]
        two = one | {t for s in one for t in step[(svc, s)]}
        gold = [(g["service"], g["entity_set"]) for g in r["gold"]]
        targets = [ref for ref in gold if ref != (svc, anchor)]
        assert targets, r["id"]
        for gs, ge in targets:
            assert gs == svc and ge in two, f"{r['id']}: {ge} not reachable from {anchor}"


def test_process_chain_gold_is_downstream(records, sap_graph):
    """Each gold set (or an alternative) is used after (bpmn:next+) an activity using the anchor."""
    for r in records:
        if r["type"] != "process-chain":
            continue
        anchor = r["anchor"]
        for g in r["gold"]:
            values = " ".join(f'("{s}" "{e}")' for s, e in _refs(g))
            query = f"""ASK {{
                VALUES (?gs ?ge) {{ {values} }}
                ?as kg:serviceName "{anchor["service"]}" ; kg:entityContainer/kg:entitySet ?anchor .
                ?anchor kg:name "{anchor["entity_set"]}" .
                ?start a bpmn:Activity ; uses:entitySet ?anchor ;
                       bpmn:process/bpmn:elementId "{r["process"]}" ; bpmn:next+ ?act .
                ?act uses:entitySet ?target .
                ?target kg:name ?ge . ?ts kg:serviceName ?gs ; kg:entityContainer/kg:entitySet ?target .
            }}"""
            assert bool(sap_graph.query(query, prefixes=_prefixes())), f"{r['id']}: {g['entity_set']}"


def test_workflow_gold_is_in_the_process(records, sap_graph):
    used = defaultdict(set)
    for pid, svc, es in rows(
        sap_graph,
        """SELECT ?pid ?svc ?set WHERE {
            ?a a bpmn:Activity ; bpmn:process/bpmn:elementId ?pid ; uses:entitySet ?e .
            ?e kg:name ?set . ?s kg:serviceName ?svc ; kg:entityContainer/kg:entitySet ?e }""",
    ):
        used[pid].add((svc, es))
    for r in records:
        if r["type"] == "workflow":
            for g in r["gold"]:
                assert set(_refs(g)) & used[r["process"]], f"{r['id']}: {g['entity_set']}"


def _prefixes():
    from processkg.vocab import PREFIXES

    return PREFIXES
