"""Metrics, paired tests and report outputs of ``processkg.evaluate.metrics`` on hand-computed cases."""

from __future__ import annotations

import json
import math

import pytest

from processkg.evaluate.metrics import (
    BenchmarkError,
    Query,
    evaluate_methods,
    gold_ranks,
    ndcg_at,
    paired_test,
    per_query_scores,
    read_queries,
    recall_at,
    reciprocal_rank,
    write_outputs,
)

SO = ("API_SALES_ORDER_SRV", "A_SalesOrder")
SO_V4 = ("CE_SALESORDER_0001", "SalesOrder")
BILL = ("API_BILLING_DOCUMENT_SRV", "A_BillingDocument")
DLV = ("API_OUTBOUND_DELIVERY_SRV;v=0002", "A_OutbDeliveryHeader")


def test_gold_item_found_through_an_alternative():
    gold = [[SO, SO_V4], [BILL]]
    assert gold_ranks([DLV, SO_V4, BILL], gold) == [2, 3]
    assert gold_ranks([DLV], gold) == [None, None]


def test_gold_without_service_matches_any_service():
    assert gold_ranks([DLV, ("OTHER", "A_SalesOrder")], [[("", "A_SalesOrder")]]) == [2]


def test_recall_mrr_ndcg_by_hand():
    ranks = [1, 4, None]
    assert recall_at(ranks, 1) == pytest.approx(1 / 3)
    assert recall_at(ranks, 5) == pytest.approx(2 / 3)
    assert reciprocal_rank(ranks) == 1.0
    assert reciprocal_rank([3, None]) == pytest.approx(1 / 3)
    ideal = 1 + 1 / math.log2(3) + 1 / math.log2(4)
    assert ndcg_at(ranks, 5) == pytest.approx((1 + 1 / math.log2(5)) / ideal)
    assert ndcg_at([1, 2], 5) == pytest.approx(1.0)


def test_per_query_scores_and_summary_by_type():
    queries = [Query("a", "x", [[SO]], "single"), Query("b", "y", [[BILL]], "process-chain")]
    results = {"m": {"a": [SO], "b": [DLV, DLV, DLV, BILL]}}
    ev = evaluate_methods(results, queries, ks=(1, 3, 5))
    assert ev["summary"]["m"]["single"]["recall@1"] == 1.0
    assert ev["summary"]["m"]["process-chain"]["recall@3"] == 0.0
    assert ev["summary"]["m"]["process-chain"]["recall@5"] == 1.0
    assert ev["summary"]["m"]["all"]["n"] == 2
    assert ev["summary"]["m"]["all"]["mrr"] == pytest.approx((1 + 0.25) / 2)


def test_paired_test_detects_a_consistent_gain_and_not_noise():
    better = [1.0] * 20
    worse = [0.0] * 15 + [1.0] * 5
    gain = paired_test(better, worse)
    assert gain["n"] == 20 and gain["mean_diff"] == pytest.approx(0.75)
    assert gain["wilcoxon_p"] < 0.001 and gain["permutation_p"] < 0.001
    same = paired_test(better, better)
    assert same["wilcoxon_p"] == 1.0 and same["permutation_p"] == 1.0
    mixed = paired_test([1, 0, 1, 0, 1, 0], [0, 1, 0, 1, 0, 1])
    assert mixed["wilcoxon_p"] > 0.5


def test_read_queries_formats_and_errors(tmp_path):
    good = tmp_path / "q.jsonl"
    good.write_text(
        json.dumps(
            {
                "id": "q1",
                "query": "bill it",
                "type": "process-chain",
                "split": "test",
                "gold": [
                    {"service": BILL[0], "entity_set": BILL[1], "alternatives": [{"entity_set": "BillingDocument"}]}
                ],
                "lexical_overlap": 0.1,
            }
        )
        + "\n\n"
    )
    [q] = read_queries(good)
    assert q.gold == [[BILL, ("", "BillingDocument")]] and q.extra == {"lexical_overlap": 0.1}
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "q1", "query": "x"}\n{not json\n')
    with pytest.raises(BenchmarkError, match=r"bad\.jsonl:2: not valid JSON"):
        read_queries(bad)
    bad.write_text('{"id": "q1"}\n')
    with pytest.raises(BenchmarkError, match=r"bad\.jsonl:1: a query needs 'id' and 'query'"):
        read_queries(bad)


def test_write_outputs_report_json_and_plots(tmp_path):
    queries = [Query(f"q{i}", "x", [[SO]], "single" if i % 2 else "process-chain") for i in range(12)]
    results = {
        "hybrid": {q.id: [SO] for q in queries},
        "dense": {q.id: ([SO] if i % 3 else [DLV]) for i, q in enumerate(queries)},
    }
    ev = evaluate_methods(results, queries, ks=(1, 3))
    files = write_outputs(ev, tmp_path, command="kg eval retrieval ...")
    names = sorted(p.name for p in files)
    assert names == ["recall-all.png", "recall-process-chain.png", "recall-single.png", "report.md", "results.json"]
    assert (tmp_path / "recall-all.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    report = (tmp_path / "report.md").read_text()
    assert "| hybrid | dense | all | 12 |" in report and "kg eval retrieval ..." in report
    assert json.loads((tmp_path / "results.json").read_text())["summary"]["hybrid"]["all"]["recall@1"] == 1.0
    assert per_query_scores(results["dense"], queries, (1,))["q0"]["recall@1"] == 0.0
