"""``kg eval socbench``: the benchmark protocol on one real domain (socbenchd_1/01-energy) with the
real model (all-MiniLM-L6-v2, offline), the recall rule, the report, and bad benchmark input.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from conftest import shared
from processkg.cli import main
from processkg.cli.socbench import build_openapi_store
from processkg.errors import (
    ProcessKGError,
    SOCBenchError,
)
from processkg.evaluate import socbench_protocol
from processkg.evaluate.socbench_protocol import KS, METHODS, protocol_recall
from processkg.graph.handle import StoreHandle
from processkg.retrieve import retriever

INSTANCE, DOMAIN = "socbenchd_1", "01-energy"


@pytest.fixture(scope="session")
def socbench_cache(tmp_path_factory) -> Path:
    """Embeddings of the domain's endpoints and queries, encoded once per test session."""
    return tmp_path_factory.mktemp("socbench-cache")


@pytest.fixture(scope="module")
def stores(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("socbench-stores")


@pytest.fixture(scope="module")
def energy(socbench_cache, stores):
    root = shared("socbench-d")
    result = socbench_protocol.run(
        root,
        instances=[INSTANCE],
        domains=[DOMAIN],
        cache_dir=socbench_cache,
        build_store=build_openapi_store,
        stores_dir=stores,
    )
    return root, result, socbench_protocol.tests(result.results)


def test_socbench_ranks_through_kg_retrieve(energy, stores):
    """One engine: the domain's store answers ``kg retrieve`` with exactly the rankings the
    benchmark scored, for every method it runs."""
    from processkg.cli.retrieve import retrieve_cmd

    _root, result, _tests = energy
    store = stores / INSTANCE / DOMAIN
    first = result.results[0]
    for method in socbench_protocol.METHODS:
        out = CliRunner().invoke(
            retrieve_cmd, ["--store", str(store), first.query.text, "-k", "20", "--json", "--method", method]
        )
        assert out.exit_code == 0, out.output
        ranked = [f"{r['service']}: {r['entity_set']}" for r in json.loads(out.output)["results"]]
        assert ranked == first.ranked[method]


def test_context_of_an_operation_makes_up_no_odata_facts(energy, stores):
    from processkg.cli.retrieve import retrieve_cmd

    out = CliRunner().invoke(
        retrieve_cmd, ["--store", str(stores / INSTANCE / DOMAIN), "energy consumption", "-k", "1", "--context"]
    )
    assert out.exit_code == 0, out.output
    assert "path: (not an OData entity set)" in out.output and "one record:" not in out.output


def test_methods_come_from_one_registry():
    from processkg.cli.eval import DEFAULT_METHODS
    from processkg.cli.retrieve import retrieve_cmd

    without_chunks = tuple(m for m in retriever.METHODS if not retriever.METHODS[m].chunks)
    assert without_chunks == socbench_protocol.METHODS
    assert set(socbench_protocol.METHODS) == {"dense", "tokens", "hybrid-paper", "hybrid-v1", "hybrid"}
    choices = next(p for p in retrieve_cmd.params if p.name == "method").type.choices
    assert list(choices) == list(retriever.METHODS) and DEFAULT_METHODS.split(",") == list(retriever.METHODS)
    docs = (Path(__file__).resolve().parents[1] / "docs" / "retrieval.md").read_text(encoding="utf-8")
    for name, method in retriever.METHODS.items():
        assert f"| `{name}` | {method.description} |" in docs


def test_operations_are_the_retrieval_units_of_an_openapi_store(energy, stores):
    from processkg.retrieve.index import load_index

    items = load_index(StoreHandle.open(stores / INSTANCE / DOMAIN)).items["set"]
    assert len(items) == 50 and all(i["operation"] for i in items)
    assert all(socbench_protocol._ENDPOINT.match(i["name"]) for i in items)


def test_one_domain_has_fifty_endpoints_and_ten_queries(energy):
    _root, result, _tests = energy
    assert (result.services, result.endpoints, len(result.results)) == (5, 50, 10)
    assert result.truncated == 0 and result.missing_gold == []
    for r in result.results:
        assert tuple(r.ranked) == METHODS
        assert all(len(r.ranked[m]) == max(KS) for m in ("dense", "hybrid", "hybrid-paper"))
        assert all(0.0 <= r.recall[m][k] <= 1.0 for m in METHODS for k in KS)


def test_expansion_finds_no_process_edges_so_hybrid_paper_is_dense(energy):
    _root, result, tests = energy
    assert result.process_edges == {"nextEdges": 0, "usesEdges": 0}
    assert result.expansion_rows == 0 and result.seeds_expanded > 0
    assert all(r.ranked["hybrid-paper"] == r.ranked["dense"] for r in result.results)
    paper = [t for t in tests if t["a"] == "hybrid-paper"]
    assert [(t["k"], t["nonzero"], t["wilcoxon_p"]) for t in paper] == [(5, 0, 1.0), (10, 0, 1.0), (20, 0, 1.0)]
    assert socbench_protocol.verdict(result, tests).startswith("Confirmed:")


def test_hybrid_without_a_process_layer_loses_nothing_to_bm25(energy):
    """No process layer: ``hybrid`` is the length-weighted fusion of BM25 and dense, not the
    expansion of ``hybrid-v1``; on this domain's long queries its recall is at least BM25's at
    every k (``hybrid-v1`` here: 0.574 / 0.782 / 0.938 against BM25's 0.745 / 0.855 / 0.988)."""
    _root, result, _tests = energy
    for k in KS:
        hybrid, tokens = (socbench_protocol.mean_recall(result.results, m, k) for m in ("hybrid", "tokens"))
        assert hybrid >= tokens > socbench_protocol.mean_recall(result.results, "hybrid-v1", k), k
    assert any(r.ranked["hybrid"] != r.ranked["hybrid-v1"] for r in result.results)


def test_recall_follows_the_benchmark_protocol():
    gold = ["GET /a", "POST /b", "GET /c", "GET /c"]  # listed twice: recall can reach 3/4 only
    assert protocol_recall(["GET /a", "GET /c", "PUT /x"], gold, 2) == 0.5
    assert protocol_recall(["GET /a", "GET /c", "POST /b"], gold, 3) == 0.75
    # the same METHOD /path from two services: found once, by either
    assert protocol_recall(["GET /a", "GET /a"], ["GET /a", "POST /b"], 2) == 0.5


def test_report_has_published_figures_and_is_deterministic(energy, tmp_path):
    _root, result, tests = energy
    data = socbench_protocol.as_json(result, tests)
    first = socbench_protocol.write_outputs(
        data, tmp_path / "a", "kg eval socbench X", socbench_protocol.query_records(result)
    )
    again = socbench_protocol.write_outputs(
        socbench_protocol.as_json(result, tests),
        tmp_path / "b",
        "kg eval socbench X",
        socbench_protocol.query_records(result),
    )
    assert [p.read_bytes() for p in first] == [p.read_bytes() for p in again]
    report = first[0].read_text(encoding="utf-8")
    assert "| bge-small-en-v1.5, one chunk per endpoint (published) | 0.502 | 0.653 | 0.835 |" in report
    assert "Confirmed:" in report
    records = [json.loads(line) for line in first[2].read_text(encoding="utf-8").splitlines()]
    assert [r["id"] for r in records] == [f"{INSTANCE}/{DOMAIN}/{i}" for i in range(10)]
    assert records[0]["ranked"]["dense"][0].count(": ") == 1  # qualified: "service: METHOD /path"


def test_cli_writes_the_report(energy, socbench_cache, tmp_path):
    root, result, _tests = energy
    out = tmp_path / "out"
    args = [str(root), "--out", str(out), "--instance", INSTANCE, "--domain", DOMAIN, "--cache", str(socbench_cache)]
    res = CliRunner().invoke(main, ["eval", "socbench", *args])
    assert res.output.count("error") == 0
    assert res.exit_code == 0, res.output
    assert "SOCBench-D: 10 queries over 1 domains (50 endpoints)" in res.output
    data = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert data["recall"]["dense"]["5"] == pytest.approx(socbench_protocol.mean_recall(result.results, "dense", 5))


# ---------------------------------------------------------------- bad input


def _layout(tmp_path: Path, queries: str) -> Path:
    domain = tmp_path / "socbenchd_1" / "01-x"
    domain.mkdir(parents=True)
    (domain / "queries.json").write_text(queries, encoding="utf-8")
    return tmp_path


@pytest.mark.parametrize(
    "queries, message",
    [
        (
            '{"queries": [{"query": "a", "endpoints": ["GET /a"]},\n {"query": "", "endpoints": ["GET /b"]}]}',
            'socbenchd_1/01-x/queries.json:2: at #/queries/1: a query needs a non-empty "query" string',
        ),
        (
            '{"queries": [{"query": "a", "endpoints": ["fetch a"]}]}',
            'queries.json:1: at #/queries/0/endpoints: expected a non-empty array of "METHOD /path" strings',
        ),
        ('{"items": []}', "at #/queries: expected an array of queries"),
        ('{"queries": [', "not well-formed JSON"),
    ],
)
def test_bad_queries_name_file_line_and_pointer(tmp_path, queries, message):
    with pytest.raises(ProcessKGError) as err:
        socbench_protocol.find_domains(_layout(tmp_path, queries))
    assert message in str(err.value)


def test_cli_reports_bad_input_in_one_line(tmp_path):
    res = CliRunner().invoke(main, ["eval", "socbench", str(tmp_path / "absent"), "--out", str(tmp_path / "o")])
    assert res.exit_code == 2 and res.output.startswith("error: ") and "Traceback" not in res.output
    res = CliRunner().invoke(main, ["eval", "socbench", str(tmp_path), "--out", str(tmp_path / "o")])
    assert res.exit_code == 2 and "no SOCBench-D domain found" in res.output


def test_errors_are_typed():
    assert issubclass(SOCBenchError, ProcessKGError)
