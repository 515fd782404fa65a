"""``kg map propose`` and ``kg eval mapping``: mapping proposals and their evaluation.

Real stores (the demo data, and the 45 A2X services with the 18 SAP processes when
``../shared/data`` is there), built WITHOUT the mapping they are compared with; the real
embedding model, BM25 and Oxigraph; no mocks. The local LLM is too slow for ``make test`` (its
measured runs are in benchmarks/results/mapping-llm/, checked against the doc below), so the LLM
path is tested against a real local HTTP server written below (``FakeLLM``: 127.0.0.1, an
ephemeral port, in a thread) that plays an OpenAI-compatible ``/v1/chat/completions`` endpoint
with deterministic answers; nothing else is reached over a network.
"""

from __future__ import annotations

import json
import os
import re
import threading
from collections import Counter
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
import pytest
import yaml
from click.testing import CliRunner

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from conftest import index_store
from processkg.assets import asset
from processkg.build.pipeline import BuildOptions, build_store
from processkg.cli import main
from processkg.cli.map import map_group, mapping_cmd
from processkg.errors import LLMError, ProcessKGError, ProposalError
from processkg.evaluate.processes import proposal_folds
from processkg.graph.handle import StoreHandle, StoreLocation
from processkg.openai_chat import ChatSettings
from processkg.proposals.learned import (
    BASE,
    CANDIDATES,
    FEATURES,
    REGULARISATION,
    SHIPPED,
    candidates,
    features,
    fit_scorer,
    scorer_from_json,
    shipped_scorer,
)
from processkg.proposals.llm_choice import LLMChoiceSettings, build_messages, parse_choices
from processkg.proposals.propose import (
    WEIGHT_GRID,
    ActivityFacts,
    EntitySetFacts,
    Proposal,
    ProposalWeights,
    Signals,
    _duplicates,
    chosen,
    evaluate_mapping,
    propose,
    ranked,
    read_proposals,
    render_proposals,
    split_processes,
    tune,
    verb_mode,
    write_proposals,
)
from processkg.sources.mapping import MappingEntry, read_mapping

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "data" / "demo"
SAP = ROOT / "data" / "sap"
A2X = ROOT.parent / "shared" / "data" / "odata" / "s4-a2x"
DOC = ROOT / "docs" / "mapping-proposals.md"


# ---------------------------------------------------------------- stores


@pytest.fixture(scope="module")
def demo_store(tmp_path_factory) -> Path:
    """The demo data without its mapping: the proposals must not see the edges they are scored on."""
    store = tmp_path_factory.mktemp("propose") / "demo"
    build_store(BuildOptions(odata=[DEMO / "odata"], bpmn=[DEMO / "bpmn"], store=StoreLocation.parse(store)))
    index_store(tmp_path_factory, store)
    return store


@pytest.fixture(scope="module")
def demo_signals(demo_store) -> Signals:
    return Signals(StoreHandle.open(demo_store))


@pytest.fixture(scope="module")
def demo_gold() -> list[MappingEntry]:
    return read_mapping(DEMO / "mapping.yaml")


# ---------------------------------------------------------------- the fake LLM


class FakeLLM:
    """A real HTTP server on 127.0.0.1 playing ``/v1/chat/completions``: ``answer(payload)``
    gives (status, body text); every request's JSON payload and headers are kept."""

    def __init__(self, answer) -> None:
        self.answer = answer
        self.requests: list[dict] = []
        self.headers: list[dict] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                length = int(self.headers.get("Content-Length", 0))
                payload = json.loads(self.rfile.read(length))
                fake.requests.append(payload)
                fake.headers.append(dict(self.headers))
                status, body = fake.answer(payload) if self.path == "/v1/chat/completions" else (404, "no")
                data = body.encode("utf-8")
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def __enter__(self) -> FakeLLM:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)


def completion(content: str) -> str:
    return json.dumps(
        {
            "id": "x",
            "object": "chat.completion",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}}],
        }
    )


def first_two(payload: dict) -> tuple[int, str]:
    """The deterministic choice: candidates 1 (write) and 2 (read), in a fenced JSON block."""
    answer = {"edges": [{"candidate": 1, "mode": "write"}, {"candidate": 2, "mode": "read"}]}
    return 200, completion("Here you are:\n```json\n" + json.dumps(answer) + "\n```")


# ---------------------------------------------------------------- small parts


def test_verb_cues_decide_the_mode():
    def act(name):
        return ActivityFacts("iri", "Task_X", name, "", "", "P", "", "p.bpmn")

    assert verb_mode(act("Create the sales order")) == ("write", "create")
    assert verb_mode(act("Post the goods issue")) == ("write", "post")
    assert verb_mode(act("Technically complete the order")) == ("write", "complete")
    assert verb_mode(act("Check that the customer may order")) == ("read", "check")
    assert verb_mode(act("Display the open items")) == ("read", "display")
    assert verb_mode(act("Something unusual")) == ("read", "")


def test_processes_split_alternately_after_sorting():
    assert split_processes(["P_c", "P_a", "P_d", "P_b", "P_a"]) == (["P_a", "P_c"], ["P_b", "P_d"])


def test_settings_are_checked():
    with pytest.raises(ProcessKGError, match="top-n"):
        ProposalWeights(top_n=0).check()
    with pytest.raises(ProcessKGError, match="ratio"):
        ProposalWeights(ratio=1.5).check()
    with pytest.raises(ProcessKGError, match="weight"):
        ProposalWeights(dense=0, dense_name=0, lexical=0, lexical_short=0, header=0).check()


def test_llm_endpoint_from_base_url():
    assert ChatSettings("http://h:1", "m").endpoint() == "http://h:1/v1/chat/completions"
    assert ChatSettings("http://h:1/v1/", "m").endpoint() == "http://h:1/v1/chat/completions"
    assert ChatSettings("http://h:1/x/chat/completions", "m").endpoint() == "http://h:1/x/chat/completions"
    assert "secret" not in repr(ChatSettings("http://h", "m", api_key="secret"))
    with pytest.raises(ProcessKGError, match="http"):
        ChatSettings("file:///etc/passwd", "m").endpoint()


def _set(service, name, version=2.0, writable=True):
    return EntitySetFacts(f"iri:{service}/{name}", service, name, version, writable, 1, name, name)


def test_copies_of_a_set_count_once_as_the_preferred_copy():
    sets = [
        _set("API_SALES_ORDER_SRV", "A_SalesOrder"),
        _set("CE_SALESORDER_0001", "SalesOrder", 4.0),
        _set("API_JOURNALENTRYITEMBASIC_SRV", "A_CostCenter"),
        _set("API_COSTCENTER_SRV", "A_CostCenter"),
        _set("OP_API_BUSINESS_PARTNER_SRV", "A_Customer"),
        _set("API_BUSINESS_PARTNER", "A_Customer"),
        _set("API_BUSINESS_PARTNER", "A_Supplier"),
        _set("API_SALES_ORDER_SRV", "A_SalesOrderItem"),
        _set("API_BILLING_DOCUMENT_SRV", "A_BillingDocument", writable=False),
        _set("sap-s4-CE_BILLINGDOCUMENT_0001-v1", "BillingDocument", 4.0),
    ]
    # V2 first; the service named after the set; the fuller service; for a write, a writable copy
    assert list(_duplicates(sets)) == [0, 0, 3, 3, 5, 5, 6, 7, 8, 8]
    assert list(_duplicates(sets, writable_first=True)) == [0, 0, 3, 3, 5, 5, 6, 7, 9, 9]


def test_parse_choices_accepts_the_usual_shapes_and_rejects_nonsense():
    cands = [_set("S1", "A_One"), _set("S2", "A_Two"), _set("S3", "A_Three")]
    assert parse_choices('{"edges": [{"candidate": 2, "mode": "Write"}]}', cands) == [(1, "write")]
    assert parse_choices("```json\n[1, 3]\n```", cands) == [(0, ""), (2, "")]
    assert parse_choices('Sure! {"choices": ["S2/A_Two", "A_Three", "A_Three"]} done', cands) == [(1, ""), (2, "")]
    assert parse_choices('{"edges": [{"service": "S1", "entity_set": "A_One", "mode": "read"}]}', cands) == [
        (0, "read")
    ]
    assert parse_choices('{"edges": [{"index": "3", "mode": "sometimes"}]}', cands) == [(2, "")]
    assert parse_choices('{"edges": []}', cands) == []  # "none fits" is an answer
    for bad in ("candidate one, I think", '{"edges": [{"candidate": 9}]}', '{"answer": 1}', '"A_One"'):
        with pytest.raises(LLMError):
            parse_choices(bad, cands)


def test_evaluate_mapping_by_hand():
    def gold(p, a, s, m):
        return MappingEntry(p, a, "SVC", s, m, 1)

    golds = [
        gold("P_a", "T1", "X", "write"),
        gold("P_a", "T1", "Y", "write"),
        gold("P_a", "T2", "Z", "read"),
        gold("P_b", "T3", "X", "read"),
    ]
    props = [
        Proposal("P_a", "T1", "SVC", "X", "write", 0.9),
        Proposal("P_a", "T2", "SVC", "Z", "write", 0.8),
        Proposal("P_a", "T2", "SVC", "Q", "read", 0.7),
        Proposal("P_b", "T3", "SVC", "X", "read", 0.9),
        Proposal("P_other", "T9", "SVC", "X", "read", 0.9),
    ]  # not in the gold: not counted
    result = evaluate_mapping(props, golds)
    assert result["split"]["train"] == ["P_a"] and result["split"]["test"] == ["P_b"]
    edges = result["edges"]["all"]
    assert (edges["tp"], edges["fp"], edges["fn"]) == (3, 1, 1)
    assert edges["precision"] == 0.75 and edges["recall"] == 0.75 and edges["f1"] == 0.75
    assert result["edges_with_mode"]["all"]["tp"] == 2
    assert result["edges"]["train"]["recall"] == round(2 / 3, 4) and result["edges"]["test"]["f1"] == 1.0
    assert result["by_mode"]["write"]["tp"] == 1 and result["by_mode"]["write"]["gold"] == 2
    assert result["by_mode"]["read"]["precision"] == 0.5
    assert result["by_process"]["P_b"]["split"] == "test"
    assert result["mode_accuracy"] == round(2 / 3, 4)


# ---------------------------------------------------------------- proposals on the demo


def test_proposals_follow_the_settings_and_are_deterministic(demo_store, demo_signals):
    settings = ProposalWeights()
    proposals = propose(None, settings, signals=demo_signals)
    assert proposals == propose(None, settings, signals=Signals(StoreHandle.open(demo_store)))
    ids = {(a.process, a.id) for a in demo_signals.activities}
    per_activity: dict = {}
    for p in proposals:
        assert (p.process, p.activity) in ids and p.mode in ("read", "write")
        assert p.score >= settings.threshold and "dense" in p.reason and "lexical" in p.reason
        per_activity.setdefault((p.process, p.activity), []).append(p.score)
    assert all(len(s) <= settings.top_n and s == sorted(s, reverse=True) for s in per_activity.values())
    fewer = propose(None, replace(settings, top_n=1, threshold=0.0), signals=demo_signals)
    assert len(fewer) == len(demo_signals.activities)


def test_known_draws_on_the_edges_of_other_processes_only(demo_signals, demo_gold):
    """An activity gets, for a set, the name similarity of the most similar mapped activity of another
    process that uses that set; nothing from its own process's edges."""
    mapped = [e for e in demo_gold if e.process == "Process_OrderToCash"]
    try:
        demo_signals.know(mapped)
        known = demo_signals.matrix["known"]
    finally:
        demo_signals.know([])
    acts, sets = demo_signals.activities, demo_signals.sets
    row = {(a.process, a.id): i for i, a in enumerate(acts)}
    col = {(s.service, s.name): j for j, s in enumerate(sets)}
    expected = np.zeros_like(known)
    for e in mapped:
        b, j = row[(e.process, e.activity)], col[(e.service, e.entity_set)]
        for i, a in enumerate(acts):
            if a.process != "Process_OrderToCash":
                similarity = float(np.clip(demo_signals.names[i] @ demo_signals.names[b], 0.0, 1.0))
                expected[i, j] = max(expected[i, j], similarity)
    assert known == pytest.approx(expected, abs=1e-6)
    assert known.max() > 0.5 and not known[[row[k] for k in row if k[0] == "Process_OrderToCash"]].any()


def test_item_gives_a_part_the_score_of_its_document(demo_signals):
    """The demo's outbound delivery items are a part of the delivery header (a to-many navigation in
    one service): with ``item`` alone, an item's context is its header's score, and the header (a
    part of nothing) gets none."""
    names = [s.name for s in demo_signals.sets]
    header, item = names.index("A_OutbDeliveryHeader"), names.index("A_OutbDeliveryItem")
    assert header in demo_signals.documents[item] and item not in demo_signals.documents[header]
    base = demo_signals.scores(ProposalWeights(dedupe=False))
    context = demo_signals.context(base, ProposalWeights(item=1.0))
    parents = demo_signals.documents[item]
    assert context[:, item] == pytest.approx(np.maximum(base[:, parents].max(axis=1), 0.0))
    assert not demo_signals.documents[header] and not context[:, header].any()


@pytest.mark.parametrize("scorer", ["learned", "weights"])
def test_proposal_folds_never_see_the_held_out_gold(demo_signals, demo_gold, scorer):
    """Each fold's scorer and cut come from the other processes' gold: garbling one fold's gold leaves
    that fold's choice and proposals as they were, and only its measured quality drops."""
    garbled = [replace(e, entity_set="Nothing") if e.process == "Process_CustomerReturns" else e for e in demo_gold]
    try:
        real = proposal_folds(demo_signals, demo_gold, scorer=scorer)
        blind = proposal_folds(demo_signals, garbled, scorer=scorer)
    finally:
        demo_signals.know([])
    fold = next(k for k, f in enumerate(real) if f["held_out"] == ["Process_CustomerReturns"])
    assert real[fold]["mapping"]["settings"] == blind[fold]["mapping"]["settings"]
    assert (
        real[fold]["mapping"]["held_out"]["edges"]["proposed"]
        == blind[fold]["mapping"]["held_out"]["edges"]["proposed"]
    )
    assert real[fold]["mapping"]["held_out"]["edges"]["tp"] > 0 == blind[fold]["mapping"]["held_out"]["edges"]["tp"]
    assert real[fold]["mapping"]["tuning_f1"] == blind[fold]["mapping"]["tuning_f1"]


def test_a_learned_scorer_never_reads_the_gold_of_other_processes(demo_signals, demo_gold):
    """Fitted on two processes' gold, the model, its cut and its scores on the third process are the
    same whatever that process's gold says (here: garbled), and the same when fitted again."""
    kept = [e for e in demo_gold if e.process != "Process_CustomerReturns"]
    try:
        fitted = fit_scorer(demo_signals, kept)
        again = fit_scorer(demo_signals, kept)
        scores = fitted.scores(demo_signals)
    finally:
        demo_signals.know([])
    assert fitted.cut == again.cut and fitted.regularisation == again.regularisation
    assert np.array_equal(scores, again.scores(demo_signals))
    assert fitted.regularisation in REGULARISATION and 0 < fitted.tuning_f1 <= 1
    finite = np.isfinite(scores)
    assert (finite.sum(axis=1) == min(CANDIDATES, len(demo_signals.sets))).all()
    assert ((scores[finite] > 0) & (scores[finite] < 1)).all()
    # the third process's gold edges rank high under the model although it never saw them
    row = {(a.process, a.id): i for i, a in enumerate(demo_signals.activities)}
    col = {(s.service, s.name): j for j, s in enumerate(demo_signals.sets)}
    held = [e for e in demo_gold if e.process == "Process_CustomerReturns"]
    firsts = [ranked(scores, row[(e.process, e.activity)], 3) for e in held]
    found = sum(col[(e.service, e.entity_set)] in top for e, top in zip(held, firsts))
    assert found >= len(held) / 2, f"{found} of {len(held)} held-out gold edges in their activity's best 3"


def test_a_learned_scorer_uses_only_the_features_it_is_given(demo_signals, demo_gold):
    kept = [e for e in demo_gold if e.process != "Process_CustomerReturns"]
    try:
        fitted = fit_scorer(demo_signals, kept, used=["dense", "lexical", "known"])
        assert fitted.used == ("dense", "lexical", "known") and fitted.model.coef.shape == (3,)
        assert set(fitted.describe()["largest_standardised_weights"].replace(",", "").split()[::2]) <= {
            "dense",
            "lexical",
            "known",
        }
        with pytest.raises(ProposalError, match="no such proposal features: nonsense"):
            fit_scorer(demo_signals, kept, used=["dense", "nonsense"])
        with pytest.raises(ProposalError, match="at least 2 processes, not 1"):
            fit_scorer(demo_signals, [e for e in kept if e.process == "Process_OrderToCash"])
    finally:
        demo_signals.know([])


def test_features_of_a_candidate_by_hand(demo_signals):
    """A few features of one (activity, set) pair, computed here from the signals."""
    base = demo_signals.scores(BASE)
    i = next(k for k, (mode, _cue) in enumerate(demo_signals.modes) if mode == "write")
    j = ranked(base, i, 1)[0]
    row = dict(zip(FEATURES, features(demo_signals, base, [(i, j)])[0], strict=True))
    assert row["dense"] == pytest.approx(float(demo_signals.matrix["dense"][i, j]))
    assert row["base"] == pytest.approx(float(base[i, j])) and row["base_margin"] == pytest.approx(0.0)
    assert row["rank_base"] == 1.0
    writable = bool(demo_signals.writable[j])
    assert (row["write_writable"], row["write_unwritable"]) == ((1.0, 0.0) if writable else (0.0, 1.0))
    assert row["read_writable"] == row["read_unwritable"] == 0.0
    assert row["is_item"] == (1.0 if demo_signals.documents[j] else 0.0)


def test_demo_proposals_find_most_of_the_demo_mapping(demo_store, demo_signals, demo_gold):
    result = evaluate_mapping(propose(None, signals=demo_signals), demo_gold)
    assert result["edges"]["all"]["precision"] >= 0.5 and result["edges"]["all"]["recall"] >= 0.4


def test_proposals_file_is_a_mapping_with_score_and_reason(tmp_path, demo_store, demo_signals):
    proposals = propose(None, signals=demo_signals)
    path = tmp_path / "proposals.yaml"
    write_proposals(path, proposals, "build/demo")
    text = path.read_text(encoding="utf-8")
    assert text.startswith("# PROPOSED") and "NOT reviewed" in text and "review" in text.splitlines()[0]
    assert text == render_proposals(proposals, "build/demo")
    raw = yaml.safe_load(text)["mappings"]
    assert all({"score", "reason", "mode", "entity_set"} <= set(item) for item in raw)
    back = read_proposals(path)
    assert [(p.edge(), p.mode, p.score, p.reason) for p in back] == [
        (p.edge(), p.mode, p.score, p.reason) for p in proposals
    ]
    # as a mapping, the file builds (score and reason are ignored)
    store = tmp_path / "store"
    report = build_store(
        BuildOptions(odata=[DEMO / "odata"], bpmn=[DEMO / "bpmn"], mapping=path, store=StoreLocation.parse(store))
    )
    assert report.mapping_edges == len(proposals)


# ---------------------------------------------------------------- the LLM path


def test_llm_choices_become_the_proposals(demo_store, demo_signals, monkeypatch):
    """Against FakeLLM (a local HTTP server, not a real LLM): it always picks candidates 1 and 2."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-secret")
    warnings: list = []
    with FakeLLM(first_two) as server:
        llm = ChatSettings(server.url, "fake-model", timeout=10, api_key=os.environ["OPENAI_API_KEY"])
        choice = LLMChoiceSettings(candidates=4)
        proposals = propose(None, llm=llm, warn=warnings.append, signals=demo_signals, llm_choice=choice)
    activities = demo_signals.activities
    assert not warnings and len(server.requests) == len(activities)
    scores = demo_signals.scores(ProposalWeights())
    for i, (payload, headers) in enumerate(zip(server.requests, server.headers)):
        assert payload["model"] == "fake-model" and payload["temperature"] == 0 and payload["max_tokens"] > 0
        user = payload["messages"][-1]["content"]
        assert activities[i].name in user
        for j in ranked(scores, i, 4):
            assert f"{demo_signals.sets[j].service} / {demo_signals.sets[j].name}" in user
        assert headers["Authorization"] == "Bearer sk-test-secret"
    expected = []
    for i, a in enumerate(activities):
        for rank, j in enumerate(ranked(scores, i, 2)):
            s = demo_signals.sets[j]
            mode = "write" if rank == 0 and s.writable else "read"
            expected.append((a.process, a.id, s.service, s.name, mode))
    assert [p.edge() + (p.mode,) for p in proposals] == expected
    assert all(p.reason.startswith("llm fake-model: candidate") for p in proposals)


def test_llm_http_errors_fall_back_to_the_embedding_proposals(demo_store, demo_signals):
    """FakeLLM answers 500 (a local HTTP server): after three failures in a row the LLM is given up."""
    warnings: list = []
    plain = propose(None, signals=demo_signals)
    with FakeLLM(lambda payload: (500, "boom")) as server:
        llm = ChatSettings(server.url, "fake-model", timeout=10, api_key="sk-never-shown")
        choice = LLMChoiceSettings(max_failures=3)
        proposals = propose(None, llm=llm, warn=warnings.append, signals=demo_signals, llm_choice=choice)
    assert proposals == plain
    assert len(server.requests) == 3
    assert sum("HTTP 500" in w for w in warnings) == 3 and "failed 3 times in a row" in warnings[-1]
    assert not any("sk-never-shown" in w for w in warnings)


@pytest.mark.parametrize(
    "answer, per_activity",
    [
        (lambda payload: (200, completion("I would choose the first one.")), True),  # no JSON in the answer
        (lambda payload: (200, completion('{"edges": [{"candidate": 99}]}')), True),  # no such candidate
        (lambda payload: (200, "<html>not an API</html>"), False),  # not a chat completion: the endpoint fails
    ],
)
def test_unusable_llm_answers_fall_back(demo_store, demo_signals, answer, per_activity):
    """FakeLLM (a local HTTP server) answers something unusable for every activity: a bad answer
    costs that activity its LLM choice; a response that is no chat completion counts as a failure
    of the endpoint, which is given up after three in a row."""
    warnings: list = []
    with FakeLLM(answer) as server:
        llm = ChatSettings(server.url, "fake-model", timeout=10)
        proposals = propose(None, llm=llm, warn=warnings.append, signals=demo_signals)
    assert proposals == propose(None, signals=demo_signals)
    activities = len(demo_signals.activities)
    assert len(server.requests) == (activities if per_activity else 3)
    assert len(warnings) == (activities if per_activity else 4)
    assert all("using the embedding proposals" in w for w in warnings[:3])
    assert "Authorization" not in server.headers[0]


def test_messages_name_the_step_and_the_candidates():
    act = ActivityFacts("iri", "Task_Post", "Post the invoice", "Book it.", "Billing", "P", "Order to cash", "p.bpmn")
    messages = build_messages(act, [_set("S1", "A_One"), _set("S2", "A_Two", writable=False)])
    user = messages[1]["content"]
    assert "Step: Post the invoice" in user and "Order to cash" in user and "Book it." in user
    assert "1. S1 / A_One:" in user and "2. S2 / A_Two [read-only]:" in user
    assert "JSON" in messages[0]["content"]


def test_proposals_for_named_processes_only(demo_signals):
    """``processes`` restricts the proposals (and the LLM's work) to those processes; the scores are the
    whole store's, so their proposals are exactly those of a run over every process."""
    everything = propose(None, signals=demo_signals)
    only = propose(None, signals=demo_signals, processes=["Process_CustomerReturns"])
    assert only and only == [p for p in everything if p.process == "Process_CustomerReturns"]
    with pytest.raises(ProposalError, match="no process Process_Nowhere in the store"):
        propose(None, signals=demo_signals, processes=["Process_CustomerReturns", "Process_Nowhere"])


def counted(content: str, prompt_tokens: int = 250, completion_tokens: int = 3) -> str:
    """A chat completion of ``content`` with the usage a server reports."""
    body = json.loads(completion(content))
    body["usage"] = {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens}
    return json.dumps(body)


def test_short_prompt_asks_for_numbers_and_keeps_two(demo_signals):
    """The short prompt (FakeLLM, a local HTTP server, answers three numbers, best first): the worked
    example comes before the step, candidates are named without summaries, the first two numbers of the
    answer are kept, their modes come from the verbs, and every exchange is recorded with its tokens."""
    records: list = []
    process = "Process_OrderToCash"
    with FakeLLM(lambda payload: (200, counted("[3, 1, 2]"))) as server:
        llm = ChatSettings(server.url, "fake-model", timeout=10)
        choice = LLMChoiceSettings(candidates=4, prompt="short", record=records.append)
        proposals = propose(None, llm=llm, signals=demo_signals, llm_choice=choice, processes=[process])
    rows = [i for i, a in enumerate(demo_signals.activities) if a.process == process]
    assert len(server.requests) == len(rows) == len(records)
    scores = demo_signals.scores(ProposalWeights())
    first = server.requests[0]["messages"]
    assert [m["role"] for m in first] == ["system", "user", "assistant", "user"]
    assert "Library membership" in first[1]["content"] and first[2]["content"] == "[2]"
    assert "JSON list of candidate numbers" in first[0]["content"]
    best = demo_signals.sets[ranked(scores, rows[0], 1)[0]]
    assert f"1. {best.name.removeprefix('A_')}" in first[3]["content"]
    assert best.summary[:200] not in first[3]["content"]  # names and labels, not the summary
    expected = []
    for i in rows:
        candidates = ranked(scores, i, 4)
        for j in (candidates[0], candidates[2]):  # the answer's first two, in candidate order
            s = demo_signals.sets[j]
            mode = demo_signals.modes[i][0] if s.writable else "read"
            expected.append((process, demo_signals.activities[i].id, s.service, s.name, mode))
    assert [p.edge() + (p.mode,) for p in proposals] == expected
    record = records[0]
    assert record["process"] == process and record["activity"] == demo_signals.activities[rows[0]].id
    assert record["answer"] == "[3, 1, 2]" and record["picks"] == [[1, ""], [3, ""]] and record["problem"] == ""
    assert record["prompt_tokens"] == 250 and record["completion_tokens"] == 3 and record["seconds"] >= 0
    assert len(record["candidates"]) == 4 and record["prompt"] == first[3]["content"]


def test_an_empty_answer_proposes_nothing_and_bad_ones_are_recorded(demo_signals):
    """FakeLLM (a local HTTP server) answers [] for the first activity (none fits: no proposal) and
    chatter for the rest (unusable: the embedding proposals stay, the record names the problem)."""
    records: list = []
    process = "Process_CustomerReturns"
    answers = iter(["[]"] + ["no idea"] * 100)
    with FakeLLM(lambda payload: (200, counted(next(answers)))) as server:
        llm = ChatSettings(server.url, "fake-model", timeout=10)
        choice = LLMChoiceSettings(prompt="short", record=records.append)
        proposals = propose(None, llm=llm, signals=demo_signals, llm_choice=choice, processes=[process])
    plain = propose(None, signals=demo_signals, processes=[process])
    first = demo_signals.activities[next(i for i, a in enumerate(demo_signals.activities) if a.process == process)]
    assert len(server.requests) == len(records) > 1
    assert [p for p in plain if p.activity != first.id] == proposals
    assert records[0]["picks"] == [] and records[0]["problem"] == ""
    assert all(r["problem"].startswith("unusable: no JSON") and r["picks"] == [] for r in records[1:])


# ---------------------------------------------------------------- command line


def test_cli_propose_and_eval_mapping(tmp_path, demo_store):
    runner = CliRunner()
    out = tmp_path / "proposals.yaml"
    result = runner.invoke(map_group, ["propose", "--store", str(demo_store), "--out", str(out), "--top-n", "1"])
    assert result.exit_code == 0, result.output
    assert "to review" in result.output and out.exists()
    report = tmp_path / "report"
    result = runner.invoke(
        mapping_cmd, ["--proposals", str(out), "--gold", str(DEMO / "mapping.yaml"), "--out", str(report)]
    )
    assert result.exit_code == 0, result.output
    assert "ignoring mode" in result.output and "with mode" in result.output
    data = json.loads((report / "results.json").read_text())
    assert set(data) >= {"edges", "edges_with_mode", "by_mode", "by_process", "split", "mode_accuracy"}
    assert "## Per process" in (report / "report.md").read_text()


def test_cli_propose_with_an_llm_reads_the_key_from_the_environment(tmp_path, demo_store):
    """`kg map propose --llm-url` against FakeLLM (a local HTTP server, not a real LLM)."""
    out = tmp_path / "llm.yaml"
    with FakeLLM(first_two) as server:
        result = CliRunner().invoke(
            map_group,
            [
                "propose",
                "--store",
                str(demo_store),
                "--out",
                str(out),
                "--llm-url",
                server.url,
                "--llm-model",
                "fake-model",
                "--llm-candidates",
                "3",
                "--llm-timeout",
                "10",
            ],
            env={"OPENAI_API_KEY": "sk-cli-secret"},
        )
    assert result.exit_code == 0, result.output
    assert server.headers and all(h["Authorization"] == "Bearer sk-cli-secret" for h in server.headers)
    assert "sk-cli-secret" not in result.output and "sk-cli-secret" not in out.read_text()
    assert all(p.reason.startswith("llm fake-model: candidate") for p in read_proposals(out))


def test_cli_llm_options_go_together(tmp_path, demo_store):
    result = CliRunner().invoke(
        map_group,
        ["propose", "--store", str(demo_store), "--out", str(tmp_path / "p.yaml"), "--llm-url", "http://127.0.0.1:9"],
    )
    assert result.exit_code != 0 and "go together" in result.output


def test_cli_llm_log_and_process(tmp_path, demo_store):
    """`kg map propose --process --llm-prompt short --llm-log` against FakeLLM (a local HTTP server):
    one JSON line per exchange, proposals for that process only; an unknown process is one clear line."""
    out, log = tmp_path / "p.yaml", tmp_path / "llm.jsonl"
    args = ["propose", "--store", str(demo_store), "--out", str(out), "--process", "Process_ProcureToPay"]
    with FakeLLM(lambda payload: (200, counted("[1]"))) as server:
        llm = ["--llm-url", server.url, "--llm-model", "fake-model", "--llm-prompt", "short", "--llm-log", str(log)]
        result = CliRunner().invoke(map_group, args + llm)
    assert result.exit_code == 0, result.output
    lines = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    assert len(lines) == len(server.requests) > 0
    assert {line["process"] for line in lines} == {"Process_ProcureToPay"}
    assert all(line["picks"] == [[1, ""]] and line["prompt_tokens"] == 250 for line in lines)
    assert {p.process for p in read_proposals(out)} == {"Process_ProcureToPay"}
    result = CliRunner().invoke(main, ["map", *args[:-1], "Process_Nowhere"])
    assert result.exit_code == 2 and "error: no process Process_Nowhere in the store" in result.output
    assert "Traceback" not in result.output and len(result.output.strip().splitlines()) == 1
    result = CliRunner().invoke(map_group, args + ["--llm-log", str(log)])
    assert result.exit_code != 0 and "--llm-log goes with --llm-url" in result.output


# ---------------------------------------------------------------- the real evaluation


@pytest.fixture(scope="module")
def sap_signals(tmp_path_factory) -> Signals:
    store = tmp_path_factory.mktemp("propose") / "sap-nomap"
    build_store(BuildOptions(odata=[A2X], bpmn=[SAP / "processes"], store=StoreLocation.parse(store)))  # no --mapping
    index_store(tmp_path_factory, store)
    return Signals(StoreHandle.open(store))


def documented(label: str) -> tuple[float, float, float]:
    """(P, R, F1) of a row of the results table in docs/mapping-proposals.md."""
    for line in DOC.read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if cells and cells[0] == label:
            return tuple(float(c) for c in cells[-3:])
    raise AssertionError(f"no row {label!r} in {DOC}")


@pytest.mark.slow
def test_sap_proposals_reproduce_the_documented_numbers(sap_signals):
    gold = read_mapping(SAP / "mapping.yaml")
    result = evaluate_mapping(propose(None, signals=sap_signals), gold)
    for label, key, group in (
        ("ignoring mode, test half", "edges", "test"),
        ("ignoring mode, all", "edges", "all"),
        ("with mode, test half", "edges_with_mode", "test"),
        ("with mode, all", "edges_with_mode", "all"),
    ):
        m = result[key][group]
        assert (m["precision"], m["recall"], m["f1"]) == pytest.approx(documented(label), abs=0.011), label


def test_the_defaults_are_the_ones_tuned_on_the_train_half(sap_signals):
    """`kg map tune --weights`: weights, top-n, threshold and ratio chosen by F1 on train only."""
    result = tune(sap_signals, read_mapping(SAP / "mapping.yaml"), weights=WEIGHT_GRID)
    assert result["settings"] == ProposalWeights()
    assert (
        f"--top-n {ProposalWeights().top_n} --threshold {ProposalWeights().threshold} --ratio {ProposalWeights().ratio}"
        in DOC.read_text(encoding="utf-8")
    )
    assert result["train_f1"] == result["evaluation"]["edges"]["train"]["f1"]


def test_every_sap_activity_but_the_containers_is_considered(sap_signals):
    assert len(sap_signals.activities) == 164 and len(sap_signals.sets) == 411
    scores = sap_signals.scores(ProposalWeights())
    assert all(
        chosen(scores, i, replace(ProposalWeights(), threshold=-1.0)) for i in range(len(sap_signals.activities))
    )


def test_the_documented_leave_out_figures_are_the_committed_reports():
    """docs/mapping-proposals.md's leave-processes-out rows are the totals of the committed
    `kg map tune --folds` reports."""
    folder = ROOT / "docs" / "results" / "mapping-folds"
    for label, name in (
        ("weights and cut per fold", "folds.json"),
        ("+ context weights per fold", "folds-context.json"),
        ("learned scorer per fold", "folds-learned.json"),
        ("learned scorer with `dense_tuned` per fold (tried, not kept)", "folds-tuned.json"),
        ("the same, its best 20 sets added to the candidates (tried, not kept)", "folds-tuned-candidates.json"),
    ):
        folds = json.loads((folder / name).read_text(encoding="utf-8"))
        tp, proposed, gold = (
            sum(f["mapping"]["held_out"]["edges"][k] for f in folds) for k in ("tp", "proposed", "gold")
        )
        p, r = tp / proposed, tp / gold
        row = next(line for line in DOC.read_text(encoding="utf-8").splitlines() if line.startswith(f"| {label} |"))
        cells = [c.strip().strip("*") for c in row.strip("|").split("|")]
        assert cells[1:6] == [str(proposed), str(tp), f"{p:.3f}", f"{r:.3f}", f"{2 * p * r / (p + r):.3f}"]


@pytest.mark.slow
def test_the_learned_folds_reproduce_the_committed_report(sap_signals):
    """`kg map tune --folds` (the learned scorer) on the SAP store gives the committed folds-learned.json."""
    committed = json.loads((ROOT / "docs" / "results" / "mapping-folds" / "folds-learned.json").read_text("utf-8"))
    try:
        result = proposal_folds(sap_signals, read_mapping(SAP / "mapping.yaml"))
    finally:
        sap_signals.know([])
    assert json.loads(json.dumps(result)) == committed


def test_the_learned_scorers_candidates_hold_the_documented_share_of_the_gold(sap_signals):
    """docs/mapping-proposals.md: 178 of the 200 gold edges are among an activity's 20 candidates,
    each with 32 features."""
    gold = {(e.process, e.activity, e.service, e.entity_set) for e in read_mapping(SAP / "mapping.yaml")}
    base = sap_signals.scores(BASE)
    pairs = candidates(base, CANDIDATES)
    found = {
        (a.process, a.id, s.service, s.name)
        for a, s in ((sap_signals.activities[i], sap_signals.sets[j]) for i, j in pairs)
    } & gold
    text = DOC.read_text(encoding="utf-8")
    assert (len(found), len(gold), CANDIDATES, len(FEATURES)) == (178, 200, 20, 32)
    per_activity = Counter(Counter(g[:2] for g in gold).values())
    assert per_activity == {1: 128, 2: 36} and "(128 one, 36 two)" in text
    assert "178 of the 200 gold edges are among an\nactivity's 20 candidates" in text
    assert "gets 32 features" in text


def at(signals: Signals, process: str, activity: str, service: str, entity_set: str) -> tuple[int, int]:
    """(activity row, set row) of an activity and an entity set of the store."""
    i = next(k for k, a in enumerate(signals.activities) if (a.process, a.id) == (process, activity))
    j = next(k for k, s in enumerate(signals.sets) if (s.service, s.name) == (service, entity_set))
    return i, j


def feature_row(signals: Signals, i: int, j: int) -> dict[str, float]:
    return dict(zip(FEATURES, features(signals, signals.scores(BASE), [(i, j)])[0], strict=True))


def test_operation_features_on_the_goods_issue_of_an_outbound_delivery(sap_signals):
    """Order to cash's "Post the goods issue" and the function import PostGoodsIssue, which A2X's
    outbound delivery service declares for its header (sap:action-for): the step's verb begins the
    operation's name and every word of that name is the step's. The items have no operation of that
    verb; the inbound delivery header's PostGoodsReceipt shares the verb and two of its three words."""
    edmx = (A2X / "API_OUTBOUND_DELIVERY_SRV.edmx").read_text(encoding="utf-8")
    assert re.search(
        r'<FunctionImport Name="PostGoodsIssue"[^>]*sap:action-for="API_OUTBOUND_DELIVERY_SRV.A_OutbDeliveryHeaderType"',
        edmx,
    )
    step = ("Process_OrderToCash", "Task_PostGoodsIssue")
    header = feature_row(sap_signals, *at(sap_signals, *step, "API_OUTBOUND_DELIVERY_SRV", "A_OutbDeliveryHeader"))
    item = feature_row(sap_signals, *at(sap_signals, *step, "API_OUTBOUND_DELIVERY_SRV", "A_OutbDeliveryItem"))
    inbound = feature_row(sap_signals, *at(sap_signals, *step, "API_INBOUND_DELIVERY_SRV", "A_InbDeliveryHeader"))
    assert (header["operation_verb"], header["operation_words"]) == (1.0, 1.0)
    assert (item["operation_verb"], item["operation_words"]) == (0.0, 0.0)
    assert inbound["operation_verb"] == 1.0 and inbound["operation_words"] == pytest.approx(2 / 3)


def test_fields_lexical_finds_the_reference_property_of_the_sales_order(sap_signals):
    """Order to cash's "Create the sales order" is documented as "Enter the order with the customer's
    purchase order number ...": A_SalesOrder's PurchaseOrderByCustomer (sap:label "Customer Reference")
    makes its properties the step's best match, ahead of the purchase order whose name the text says."""
    edmx = (A2X / "API_SALES_ORDER_SRV.edmx").read_text(encoding="utf-8")
    assert (
        '<Property Name="PurchaseOrderByCustomer" Type="Edm.String" MaxLength="35" sap:label="Customer Reference"/>'
        in edmx
    )
    i, order = at(sap_signals, "Process_OrderToCash", "Task_CreateSalesOrder", "API_SALES_ORDER_SRV", "A_SalesOrder")
    _, purchase = at(
        sap_signals, "Process_OrderToCash", "Task_CreateSalesOrder", "API_PURCHASEORDER_PROCESS_SRV", "A_PurchaseOrder"
    )
    assert "purchase order by customer (customer reference)" in sap_signals.sets[order].fields
    base = sap_signals.scores(BASE)
    assert base[i, purchase] > base[i, order]  # the names and summaries prefer the purchase order
    fields = sap_signals.metadata["fields_lexical"]
    assert ranked(np.where(np.isfinite(base), fields, -np.inf), i, 1) == [order]
    assert feature_row(sap_signals, i, order)["fields_lexical"] == pytest.approx(float(fields[i, order]))
    assert fields[i, purchase] < fields[i, order] <= 1.0


def test_follows_named_is_the_best_score_of_a_set_the_candidate_follows(sap_signals):
    """Sales quotation's "Create the sales order from the quotation": the sales order follows the sales
    quotation in the document flow inferred from A2X's reference properties, so its ``follows_named``
    is at least the quotation's base score for the step, and is the best base score among the sets
    it follows."""
    i, order = at(
        sap_signals,
        "Process_SalesQuotation",
        "Task_CreateSalesOrderFromQuotation",
        "API_SALES_ORDER_SRV",
        "A_SalesOrder",
    )
    _, quotation = at(
        sap_signals,
        "Process_SalesQuotation",
        "Task_CreateSalesOrderFromQuotation",
        "API_SALES_QUOTATION_SRV",
        "A_SalesQuotation",
    )
    assert quotation in sap_signals.follows[order] and order in sap_signals.followed_by[quotation]
    base = sap_signals.scores(BASE)
    finite = np.where(np.isfinite(base), base, -1.0)
    row = feature_row(sap_signals, i, order)
    assert row["follows_named"] == pytest.approx(max(0.0, max(finite[i, k] for k in sap_signals.follows[order])))
    assert row["follows_named"] >= finite[i, quotation] > 0.5
    assert row["followed_by_named"] == pytest.approx(
        max(0.0, max(finite[i, k] for k in sap_signals.followed_by[order]))
    )


def test_cli_tune_scorer_options(tmp_path, demo_store):
    runner = CliRunner()
    args = ["tune", "--store", str(demo_store), "--gold", str(DEMO / "mapping.yaml")]
    result = runner.invoke(map_group, [*args, "--folds", "--context", "--scorer", "learned"])
    assert result.exit_code == 2 and "--context goes with --scorer weights" in result.output
    result = runner.invoke(map_group, [*args, "--context"])
    assert result.exit_code == 2 and "--context goes with --folds" in result.output
    result = runner.invoke(map_group, [*args, "--scorer", "learned", "--weights"])
    assert result.exit_code == 2 and "--weights goes with the weighted mean" in result.output
    out = tmp_path / "folds.json"
    result = runner.invoke(map_group, [*args, "--folds", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "scorer learned" in result.output
    assert [f["mapping"]["settings"]["scorer"] for f in json.loads(out.read_text())] == ["learned"] * 3


def test_the_documented_ablation_is_the_committed_run():
    """docs/mapping-proposals.md's table of the learned scorer's ablations is benchmarks/results/proposal-ablation.json."""
    committed = json.loads((ROOT / "benchmarks" / "results" / "proposal-ablation.json").read_text(encoding="utf-8"))
    lines = DOC.read_text(encoding="utf-8").splitlines()
    for label, r in committed.items():
        row = next(line for line in lines if line.startswith(f"| {label} |"))
        cells = [c.strip() for c in row.strip("|").split("|")]
        assert cells[1:] == [str(r["proposed"]), str(r["tp"])] + [f"{r[k]:.3f}" for k in ("precision", "recall", "f1")]
    folds = learned_folds()
    tp = sum(f["mapping"]["held_out"]["edges"]["tp"] for f in folds)
    proposed, gold = (sum(f["mapping"]["held_out"]["edges"][k] for f in folds) for k in ("proposed", "gold"))
    assert committed["all features"]["f1"] == round(2 * tp / (proposed + gold), 4), (
        "the same runs as kg map tune --folds"
    )


def llm_row(label: str, candidates: str | None = None) -> list[str]:
    """The cells after the label (and the candidates, if given) of a row of the LLM tables in the doc."""
    for line in DOC.read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if cells[0] == label and (candidates is None or cells[1] == candidates):
            return cells[1:] if candidates is None else cells[2:]
    raise AssertionError(f"no row {label!r} in {DOC}")


def cells(m: dict, *with_mode: dict) -> list[str]:
    return (
        [str(m["proposed"]), str(m["tp"])]
        + [f"{m[k]:.3f}" for k in ("precision", "recall", "f1")]
        + [f"{w['f1']:.3f}" for w in with_mode]
    )


def moved(exchanges: Path, gold: list[MappingEntry]) -> tuple[int, int, int, int]:
    """(exchanges, those whose picks are not just the first candidate, of them those that found a gold
    edge where the first candidate is none, and those that dropped a first candidate that is one)."""
    edges: dict[tuple[str, str], set[str]] = {}
    for e in gold:
        edges.setdefault((e.process, e.activity), set()).add(f"{e.service}/{e.entity_set}")
    total = other = gained = lost = 0
    for line in exchanges.read_text(encoding="utf-8").splitlines():
        x = json.loads(line)
        right = edges.get((x["process"], x["activity"]), set())
        picks = {x["candidates"][k - 1] for k, _mode in x["picks"]}
        first = x["candidates"][0]
        total += 1
        if picks != {first}:
            other += 1
            gained += first not in right and bool(picks & right)
            lost += first in right and first not in picks
    return total, other, gained, lost


def test_the_documented_llm_figures_are_the_committed_runs():
    """docs/mapping-proposals.md#with-the-local-model is benchmarks/results/mapping-llm/: every row of
    its two tables, the count of changed first choices and the model's timings."""
    runs = ROOT / "benchmarks" / "results" / "mapping-llm"
    gold = read_mapping(SAP / "mapping.yaml")

    def evaluation(folder: str) -> dict:
        return json.loads((runs / folder / "results.json").read_text(encoding="utf-8"))

    one = evaluation("train-one-process-full")["by_process"]["Process_CustomerReturns"]["edges"]
    assert llm_row("train, 1 process, full prompt", "10") == cells(one)
    per_process = llm_row("Process_CustomerReturns")  # the per-process table without an LLM
    assert llm_row("train, 1 process, no LLM", "") == [per_process[1], per_process[3], *per_process[4:7]]
    for label, folder, n in (
        ("train, short prompt", "s3-train", "3"),
        ("train, short prompt", "s5-train", "5"),
        ("train, short prompt with summaries", "sum5-train", "5"),
        ("train, short prompt (chosen)", "s10-train", "10"),
    ):
        result = evaluation(f"train-tuning/{folder}")
        assert result["edges"]["test"]["proposed"] == 0
        assert llm_row(label, n) == cells(result["edges"]["train"])
    no_llm_train = llm_row("train, no LLM", "")
    assert [float(c) for c in no_llm_train[2:]] == list(documented("ignoring mode, train half (tuned here)"))
    test_half = evaluation("test-half-short")
    assert test_half["edges"]["train"]["proposed"] == 0
    row = llm_row("test half, weighted mean's 10 candidates, short prompt")
    assert [c.strip("*") for c in row] == cells(test_half["edges"]["test"], test_half["edges_with_mode"]["test"])
    full = evaluation("test-half-full")
    assert [c.strip("*") for c in llm_row("test half, weighted mean's 10 candidates, full prompt (as shipped)")] == (
        cells(full["edges"]["test"], full["edges_with_mode"]["test"])
    )
    no_llm_test = [c.strip("*") for c in llm_row("test half, weighted mean, no LLM")]
    assert [float(c) for c in no_llm_test[2:5]] == list(documented("ignoring mode, test half"))
    folds = evaluation("folds-learned-short")
    assert [c.strip("*") for c in llm_row("per fold, learned scorer, no LLM")][:5] == cells(folds["no_llm"])
    assert [c.strip("*") for c in llm_row("per fold, learned scorer's 10 candidates, short prompt")] == cells(
        folds["llm"], folds["llm_with_mode"]
    )
    text = " ".join(DOC.read_text(encoding="utf-8").split())
    per_fold = " / ".join(f"{f['llm']['f1']:.3f}" for f in folds["folds"])
    per_fold_plain = " / ".join(f"{f['no_llm']['f1']:.3f}" for f in folds["folds"])
    assert f"Per fold F1 with the LLM {per_fold} against {per_fold_plain} without." in text
    total, other, gained, lost = moved(runs / "test-half-short" / "exchanges.jsonl", gold)
    assert (total, other) == (84, 14) and f"for {other} of the {total} activities: {gained} times" in text
    assert f"{lost} times it dropped a right first candidate" in text
    total, other, gained, lost = moved(runs / "folds-learned-short" / "exchanges.jsonl", gold)
    assert f"Per fold, {other} of {total}: {gained} and {lost}." in text
    timing = json.loads((runs / "test-half-short" / "model-timing.json").read_text(encoding="utf-8"))
    assert timing["completions"] == 84
    assert f"median {timing['seconds_per_completion_median']:.1f} s on the test half" in text
    assert f"{timing['model_seconds_sum']:.0f} s in all; {timing['prompt_tokens_median']:.0f} prompt tokens" in text
    assert f"{timing['generated_tokens_per_second']:.1f} generated tokens per second" in text
    timing = json.loads((runs / "folds-learned-short" / "model-timing.json").read_text(encoding="utf-8"))
    assert f"{timing['seconds_per_completion_median']:.1f} s per fold ({timing['completions']} requests" in text
    assert f"{timing['model_seconds_sum']:.0f} s, about" in text
    timing = json.loads((runs / "train-one-process-full" / "model-timing.json").read_text(encoding="utf-8"))
    assert f"median {timing['seconds_per_completion_median']:.0f} s per activity on the train process" in text
    timing = json.loads((runs / "test-half-full" / "model-timing.json").read_text(encoding="utf-8"))
    assert (
        f"and {timing['seconds_per_completion_median']:.0f} s on the test half ({timing['completions']} requests"
        in text
    )
    assert f"{timing['model_seconds_sum']:.0f} s of model time" in text


def learned_folds() -> list[dict]:
    return json.loads((ROOT / "docs" / "results" / "mapping-folds" / "folds-learned.json").read_text(encoding="utf-8"))


@pytest.mark.slow
def test_the_shipped_learned_scorer_is_the_one_fitted_on_the_train_half(sap_signals):
    """assets/ranking/proposals.json is `kg map tune --scorer learned --out` on the SAP store: fitted on
    the train half only."""
    shipped = json.loads(asset(*SHIPPED).read_text(encoding="utf-8"))
    gold = read_mapping(SAP / "mapping.yaml")
    train = split_processes({e.process for e in gold})[0]
    try:
        fitted = fit_scorer(sap_signals, [e for e in gold if e.process in set(train)]).to_json(train)
    finally:
        sap_signals.know([])
    assert shipped["trained_on"] == train and fitted["features"] == shipped["features"] == list(FEATURES)
    assert (fitted["cut"], fitted["C"]) == (shipped["cut"], shipped["C"])
    for key in ("mean", "scale", "coef", "intercept", "tuning_f1"):
        assert fitted[key] == pytest.approx(shipped[key], rel=1e-6, abs=1e-9), key


@pytest.mark.slow
def test_learned_proposals_reproduce_the_committed_report_and_the_documented_row(sap_signals):
    """`kg map propose --scorer learned` on a store without mapping edges, scored by `kg eval mapping`:
    docs/results/mapping-learned/results.json, and its test-half row in docs/mapping-proposals.md."""
    scorer = shipped_scorer()
    sap_signals.know([])  # the store's own edges: none
    result = evaluate_mapping(
        propose(None, scorer.cut, signals=sap_signals, scores=scorer.scores(sap_signals)),
        read_mapping(SAP / "mapping.yaml"),
    )
    committed = json.loads((ROOT / "docs" / "results" / "mapping-learned" / "results.json").read_text("utf-8"))
    assert json.loads(json.dumps(result)) == committed
    m = result["edges"]["test"]
    assert (m["precision"], m["recall"], m["f1"]) == pytest.approx(
        documented("learned scorer (`--scorer learned`), test half"), abs=0.0005
    )


def test_cli_propose_with_the_shipped_learned_scorer(tmp_path, demo_store):
    out = tmp_path / "proposals.yaml"
    result = CliRunner().invoke(
        map_group, ["propose", "--store", str(demo_store), "--out", str(out), "--scorer", "learned"]
    )
    assert result.exit_code == 0, result.output
    proposals = read_proposals(out)
    cut = shipped_scorer().cut
    assert proposals and all(0 < p.score < 1 for p in proposals)
    per_activity: dict = {}
    for p in proposals:
        per_activity.setdefault((p.process, p.activity), []).append(p.score)
    assert all(len(s) <= cut.top_n and s[0] >= cut.threshold for s in per_activity.values())


def test_a_learned_scorer_file_is_checked():
    good = json.loads(asset(*SHIPPED).read_text(encoding="utf-8"))
    assert scorer_from_json(good).used == FEATURES and scorer_from_json(good).known is None
    with pytest.raises(ProposalError, match="not a learned proposal scorer: 'coef'"):
        scorer_from_json({k: v for k, v in good.items() if k != "coef"})
    with pytest.raises(ProposalError, match="its features do not match its numbers"):
        scorer_from_json({**good, "features": good["features"][:-1]})
    with pytest.raises(ProposalError, match="--top-n must be at least 1"):
        scorer_from_json({**good, "cut": {**good["cut"], "top_n": 0}})


def test_the_documented_tuned_embedding_figures_are_the_committed_run():
    """docs/mapping-proposals.md's figures of the embedding model tuned on the training gold (tried at
    6e99f03, not kept) are those of benchmarks/results/proposal-tuned.json and folds-tuned.json."""
    run = json.loads((ROOT / "benchmarks" / "results" / "proposal-tuned.json").read_text(encoding="utf-8"))
    folds = json.loads((ROOT / "docs" / "results" / "mapping-folds" / "folds-tuned.json").read_text(encoding="utf-8"))
    text = DOC.read_text(encoding="utf-8")
    lines = text.splitlines()
    for label, key in (
        ("`dense` (untuned model) alone", "dense"),
        ("`dense_tuned` alone", "dense_tuned"),
        ("`BASE`, the untuned mix that picks the candidates", "base"),
        ("the learned scorer with `dense_tuned`", "learned"),
    ):
        row = next(line for line in lines if line.startswith(f"| {label} |"))
        cells = [c.strip() for c in row.strip("|").split("|")]
        assert cells[1:] == [str(sum(f[key][k] for f in run["folds"])) for k in ("first", "best_5", "best_20")]
    per_fold = " / ".join(f"{f['mapping']['held_out']['edges']['f1']:.3f}" for f in folds)
    assert f"Per fold F1 with it {per_fold}, without 0.567 / 0.591 / 0.614" in text
    together = sum(f["in_base_20_or_tuned_20"] for f in run["folds"])
    assert f"hold {together} of the 200 gold edges instead of\n178" in text and together - 178 == 6
    seconds = [f"{f['fit_seconds']:.0f}" for f in run["folds"]]
    assert f"took {seconds[0]}, {seconds[1]} and {seconds[2]} s (31 minutes" in text
    assert sum(f["fit_seconds"] for f in run["folds"]) // 60 == 31
    final = [f["final_tuning"] for f in run["folds"]]
    assert f"{final[0]['seconds']:.0f}, {final[1]['seconds']:.0f} and {final[2]['seconds']:.0f} s for" in text
    assert f"{final[0]['pairs']}, {final[1]['pairs']} and {final[2]['pairs']} pairs" in text
    assert f"peaked at\n{run['peak_memory_mb'] / 1000:.1f} GB" in text
    assert run["settings"]["epochs"] == 2 and run["settings"]["negatives"] == 2 and run["settings"]["tokens"] == 128
    # the same with the tuned similarity's best 20 sets among the candidates (c96e258)
    mix = json.loads((ROOT / "benchmarks" / "results" / "proposal-tuned-candidates.json").read_text(encoding="utf-8"))
    mix_folds = json.loads(
        (ROOT / "docs" / "results" / "mapping-folds" / "folds-tuned-candidates.json").read_text(encoding="utf-8")
    )
    assert [f["dense_tuned"] for f in mix["folds"]] == [f["dense_tuned"] for f in run["folds"]]  # the same models
    learned = {k: sum(f["learned"][k] for f in mix["folds"]) for k in ("first", "best_20")}
    assert f"\n{learned['best_20']} held-out gold edges among its best 20 and ranks {learned['first']} first" in text
    per_fold = " / ".join(f"{f['mapping']['held_out']['edges']['f1']:.3f}" for f in mix_folds)
    assert f"**F1 0.594** (per fold {per_fold})" in text
    seconds = [f"{f['fit_seconds']:.0f}" for f in mix["folds"]]
    assert f"took {seconds[0]}, {seconds[1]} and {seconds[2]} s." in text
