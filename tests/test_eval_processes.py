"""Leave processes out (``kg eval processes``): a fold's store is built without its held-out processes,
so that neither the graph, the mapping edges, the texts nor the index know them (issue 23)."""

from __future__ import annotations

import json
import re

import pytest
from click.testing import CliRunner

from conftest import DEMO, index_store, rows
from processkg.build.pipeline import BuildOptions, build_store
from processkg.cli import main
from processkg.errors import ProcessKGError
from processkg.evaluate.metrics import Query
from processkg.evaluate.processes import (
    SCORED_SCOPES,
    Scored,
    automatic_mapping,
    kept_mapping,
    mapping_rows,
    processes_in,
    reached,
    without_processes,
    write_mapping,
)
from processkg.graph.handle import StoreHandle, StoreLocation, open_store
from processkg.proposals.propose import Signals, read_proposals
from processkg.retrieve.index import load_index
from processkg.sources.mapping import read_mapping

HELD_OUT = "Process_CustomerReturns"
ACTIVITIES = """SELECT ?a ?name WHERE {
  ?p a bpmn:Process ; bpmn:elementId "%s" . ?a a bpmn:Activity ; bpmn:process ?p ; kg:name ?name }"""
PROCESS_IDS = "SELECT ?id WHERE { ?p a bpmn:Process ; bpmn:elementId ?id }"
USES = """SELECT ?a WHERE { ?p a bpmn:Process ; bpmn:elementId "%s" . ?a bpmn:process ?p ; uses:entitySet ?s }"""


def held_out_activities() -> set[str]:
    """The names of the held-out process's activities, read from its BPMN file."""
    text = (DEMO / "bpmn" / "customer-returns.bpmn").read_text(encoding="utf-8")
    return set(re.findall(r'<bpmn:(?:task|userTask|serviceTask|sendTask|receiveTask)\b[^>]*\bname="([^"]+)"', text))


def test_processes_in_reads_the_process_ids_of_a_file():
    assert processes_in(DEMO / "bpmn" / "order-to-cash.bpmn") == ["Process_OrderToCash"]


def test_without_processes_drops_the_file_and_the_mapping_entries(tmp_path):
    kept, mapping = without_processes([DEMO / "bpmn"], DEMO / "mapping.yaml", [HELD_OUT], tmp_path)
    assert sorted(p.name for p in kept) == ["order-to-cash.bpmn", "procure-to-pay.bpmn"]
    assert mapping is not None
    before = read_mapping(DEMO / "mapping.yaml")
    after = read_mapping(mapping)
    assert {e.process for e in after} == {e.process for e in before} - {HELD_OUT}
    assert len(after) == len([e for e in before if e.process != HELD_OUT]) > 0
    assert [(e.activity, e.entity_set, e.mode) for e in after] == [
        (e.activity, e.entity_set, e.mode) for e in before if e.process != HELD_OUT
    ]


def test_a_file_with_a_held_out_and_a_kept_process_is_refused(tmp_path):
    both = tmp_path / "both.bpmn"
    both.write_text(
        '<definitions xmlns="http://www.omg.org/spec/BPMN/20100524/MODEL" id="d">'
        '<process id="Process_A"/><process id="Process_B"/></definitions>',
        encoding="utf-8",
    )
    with pytest.raises(ProcessKGError, match=r"both\.bpmn: holds held-out processes \(Process_A\) beside kept ones"):
        without_processes([both], None, ["Process_A"], tmp_path / "out")


def test_a_held_out_process_that_no_file_holds_is_refused(tmp_path):
    with pytest.raises(ProcessKGError, match="no BPMN file holds the held-out processes Process_Nowhere"):
        without_processes([DEMO / "bpmn"], None, ["Process_Nowhere"], tmp_path)


def test_the_fold_store_knows_nothing_of_the_held_out_process(tmp_path, tmp_path_factory):
    """Built from without_processes' inputs, with its index: no process node, no activity, no
    mapping edge and no index text of the held-out process; the kept processes are all there."""
    kept, mapping = without_processes([DEMO / "bpmn"], DEMO / "mapping.yaml", [HELD_OUT], tmp_path)
    store_dir = tmp_path / "store"
    build_store(
        BuildOptions(odata=[DEMO / "odata"], bpmn=list(kept), mapping=mapping, store=StoreLocation.parse(store_dir))
    )
    index_store(tmp_path_factory, store_dir, progress=None)

    store = open_store(store_dir)
    ids = {r[0] for r in rows(store, PROCESS_IDS)}
    assert ids == {"Process_OrderToCash", "Process_ProcureToPay"}
    assert not rows(store, ACTIVITIES % HELD_OUT)
    assert rows(store, ACTIVITIES % "Process_OrderToCash")
    assert rows(store, USES % "Process_OrderToCash")

    names = held_out_activities()
    kept_names = {str(r[1]) for p in ids for r in rows(store, ACTIVITIES % p)}
    only_held_out = names - kept_names
    assert only_held_out, "the demo's returns process has activities of its own"
    index = load_index(StoreHandle.open(store_dir))
    activity_names = {a["name"] for a in index.items["activity"]}
    assert not activity_names & names - kept_names
    texts = json.dumps([s["text"] for s in index.items["set"]])
    assert not [n for n in only_held_out if n in texts], "an entity set's text still names a held-out activity"


def test_eval_processes_without_odata_refuses_bpmn(tmp_path, demo_store):
    """Refused before any fold is built (the store itself is opened by --store's click type first)."""
    queries = tmp_path / "q.jsonl"
    queries.write_text("", encoding="utf-8")
    result = CliRunner().invoke(
        main,
        [
            "eval",
            "processes",
            "--store",
            str(demo_store),
            "--queries",
            str(queries),
            "--bpmn",
            str(DEMO / "bpmn"),
        ],
    )
    assert result.exit_code == 2
    assert "--bpmn needs the --odata the store was built from" in result.output


def edges(entries) -> list[tuple[str, str, str, str, str]]:
    return [(e.process, e.activity, e.service, e.entity_set, e.mode) for e in entries]


@pytest.fixture(scope="module")
def kept_signals(tmp_path_factory) -> Signals:
    """Proposal signals of the demo store built with every BPMN file and the mapping of the kept
    processes only: what the automatic protocol proposes from."""
    folder = tmp_path_factory.mktemp("automatic")
    mapping = kept_mapping(DEMO / "mapping.yaml", [HELD_OUT], folder / "kept.yaml")
    store_dir = folder / "base"
    build_store(
        BuildOptions(
            odata=[DEMO / "odata"], bpmn=[DEMO / "bpmn"], mapping=mapping, store=StoreLocation.parse(store_dir)
        )
    )
    index_store(tmp_path_factory, store_dir, progress=None)
    return Signals(StoreHandle.open(store_dir))


def test_the_automatic_mapping_keeps_the_gold_and_proposes_the_held_out_edges(tmp_path, kept_signals):
    quality = automatic_mapping(kept_signals, DEMO / "mapping.yaml", [HELD_OUT], tmp_path)
    gold = read_mapping(DEMO / "mapping.yaml")
    written = edges(read_mapping(tmp_path / "mapping.yaml"))
    proposed = edges(read_proposals(tmp_path / "proposals.yaml"))
    assert proposed and {p[0] for p in proposed} == {HELD_OUT}
    assert written == [e for e in edges(gold) if e[0] != HELD_OUT] + proposed
    assert edges(read_mapping(tmp_path / "gold.yaml")) == [e for e in edges(gold) if e[0] == HELD_OUT]
    truth = {e[:4] for e in edges(gold) if e[0] == HELD_OUT}
    found = {p[:4] for p in proposed}
    measured = quality["held_out"]["edges"]
    assert (measured["tp"], measured["proposed"], measured["gold"]) == (len(found & truth), len(found), len(truth))


@pytest.mark.parametrize(("context", "scorer"), [(False, "learned"), (False, "weights"), (True, "weights")])
def test_the_automatic_mapping_never_sees_the_held_out_gold(tmp_path, kept_signals, context, scorer):
    """Tuned on the kept processes' gold only: without the held-out entries in the gold file the same
    settings and the same proposals come out; only their measured quality changes."""
    full = automatic_mapping(kept_signals, DEMO / "mapping.yaml", [HELD_OUT], tmp_path / "full", context, scorer)
    blind_gold = kept_mapping(DEMO / "mapping.yaml", [HELD_OUT], tmp_path / "blind.yaml")
    blind = automatic_mapping(kept_signals, blind_gold, [HELD_OUT], tmp_path / "blind", context, scorer)
    assert blind["settings"] == full["settings"] and blind["tuning_f1"] == full["tuning_f1"]
    assert (tmp_path / "blind" / "mapping.yaml").read_bytes() == (tmp_path / "full" / "mapping.yaml").read_bytes()
    assert full["held_out"]["edges"]["gold"] > 0 and blind["held_out"]["edges"]["gold"] == 0
    assert full["settings"].get("scorer", "weights") == scorer


def test_the_context_weights_go_with_the_weights_scorer(tmp_path, kept_signals):
    with pytest.raises(ProcessKGError, match="context weights go with the weights scorer"):
        automatic_mapping(kept_signals, DEMO / "mapping.yaml", [HELD_OUT], tmp_path, True, "learned")
    with pytest.raises(ProcessKGError, match="unknown proposal scorer 'nonsense'"):
        automatic_mapping(kept_signals, DEMO / "mapping.yaml", [HELD_OUT], tmp_path, False, "nonsense")


def test_eval_processes_automatic_needs_the_mapping(tmp_path, demo_store):
    queries = tmp_path / "q.jsonl"
    queries.write_text("", encoding="utf-8")
    args = ["eval", "processes", "--store", str(demo_store), "--queries", str(queries), "--protocol", "automatic"]
    result = CliRunner().invoke(main, [*args, "--odata", str(DEMO / "odata"), "--bpmn", str(DEMO / "bpmn")])
    assert result.exit_code == 2
    assert "--protocol automatic needs --mapping" in result.output


def test_the_documented_automatic_layer_figures_are_the_committed_run():
    """docs/results.md's automatic columns are the Recall@3 of docs/results/processes-automatic (proposals by
    the learned scorer); the weighted mean's row is that of docs/results/processes-automatic-weights."""
    root = DEMO.parents[1]
    report = json.loads(
        (root / "docs" / "results" / "processes-automatic" / "results.json").read_text(encoding="utf-8")
    )
    summary = report["automatic"]["summary"]
    lines = (root / "docs" / "results.md").read_text(encoding="utf-8").splitlines()
    for method in ("dense", "tokens", "hybrid-paper", "hybrid-v1"):
        row = next(line for line in lines if line.startswith(f"| {method} | ") and line.count("|") == 11)
        cells = [c.strip().strip("*") for c in row.strip("|").split("|")]
        assert cells[4:7] == [f"{summary[method][g]['recall@3']:.3f}" for g in ("all", "process-chain", "workflow")]
    row = next(line for line in lines if line.startswith("| **hybrid** (fold's own model)"))
    cells = [c.strip().strip("*") for c in row.strip("|").split("|")]
    assert cells[4:7] == [f"{summary['hybrid'][g]['recall@3']:.3f}" for g in ("all", "process-chain", "workflow")]
    folds = json.loads((root / "docs" / "results" / "mapping-folds" / "folds-learned.json").read_text(encoding="utf-8"))
    assert [f["mapping"]["held_out"] for f in report["folds"]] == [f["mapping"]["held_out"] for f in folds], (
        "the automatic layer's proposals are those of kg map tune --folds (the learned scorer)"
    )
    # the earlier run, with the weighted mean's proposals: the row below, and kg map tune --folds --scorer weights
    weights = json.loads(
        (root / "docs" / "results" / "processes-automatic-weights" / "results.json").read_text(encoding="utf-8")
    )
    row = next(line for line in lines if line.startswith("| hybrid, proposals by the weighted mean"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[4:7] == [
        f"{weights['automatic']['summary']['hybrid'][g]['recall@3']:.3f}" for g in ("all", "process-chain", "workflow")
    ]
    folds = json.loads((root / "docs" / "results" / "mapping-folds" / "folds.json").read_text(encoding="utf-8"))
    assert [f["mapping"]["held_out"] for f in weights["folds"]] == [f["mapping"]["held_out"] for f in folds]


def test_the_documented_mined_flow_row_is_the_committed_run_with_events():
    """docs/results.md's mined-flow row is the Recall@3 of docs/results/processes-automatic-mined, a run
    with --events; its dense and tokens are those of the run without (the mined flow is no input of theirs)."""
    root = DEMO.parents[1]
    results = root / "docs" / "results"
    mined = json.loads((results / "processes-automatic-mined" / "results.json").read_text(encoding="utf-8"))
    without = json.loads((results / "processes-automatic" / "results.json").read_text(encoding="utf-8"))
    summary = mined["automatic"]["summary"]
    assert "--events" in (results / "processes-automatic-mined" / "report.md").read_text(encoding="utf-8")
    lines = (root / "docs" / "results.md").read_text(encoding="utf-8").splitlines()
    row = next(line for line in lines if line.startswith("| hybrid + mined flow"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[4:7] == [f"{summary['hybrid'][g]['recall@3']:.3f}" for g in ("all", "process-chain", "workflow")]
    for method in ("dense", "tokens"):
        assert summary[method] == without["automatic"]["summary"][method]


def test_eval_processes_events_need_the_folds_builds(tmp_path, demo_store):
    queries = tmp_path / "q.jsonl"
    queries.write_text("", encoding="utf-8")
    args = ["eval", "processes", "--store", str(demo_store), "--queries", str(queries)]
    result = CliRunner().invoke(main, [*args, "--events", str(DEMO)])
    assert result.exit_code == 2
    assert "--events needs --bpmn" in result.output


def test_eval_processes_proposal_context_goes_with_the_weights_scorer(tmp_path, demo_store):
    queries = tmp_path / "q.jsonl"
    queries.write_text("", encoding="utf-8")
    args = ["eval", "processes", "--store", str(demo_store), "--queries", str(queries), "--protocol", "automatic"]
    inputs = ["--odata", str(DEMO / "odata"), "--bpmn", str(DEMO / "bpmn"), "--mapping", str(DEMO / "mapping.yaml")]
    result = CliRunner().invoke(main, [*args, *inputs, "--proposal-context", "--proposal-scorer", "learned"])
    assert result.exit_code == 2
    assert "--proposal-context goes with --proposal-scorer weights" in result.output


def test_the_tuning_processes_proposals_are_drawn_out_of_fold(tmp_path, kept_signals):
    """--tuning-edges proposed / train: every kept process gets proposals from a scorer fitted without its
    own gold (and without the held-out gold): garbling one kept process's gold, or dropping the held-out
    gold, leaves that process's proposals as they were; ``proposed`` puts them in the store's mapping
    in place of the kept gold, ``train`` in a training mapping beside the unchanged store mapping."""
    gold = read_mapping(DEMO / "mapping.yaml")
    kept_processes = sorted({e.process for e in gold} - {HELD_OUT})
    quality = automatic_mapping(
        kept_signals, DEMO / "mapping.yaml", [HELD_OUT], tmp_path / "full", scorer="weights", tuning="proposed"
    )
    drawn = edges(read_proposals(tmp_path / "full" / "tuning-proposals.yaml"))
    held = edges(read_proposals(tmp_path / "full" / "proposals.yaml"))
    assert {e[0] for e in drawn} == set(kept_processes) and {e[0] for e in held} == {HELD_OUT}
    assert edges(read_mapping(tmp_path / "full" / "mapping.yaml")) == drawn + held
    assert drawn != [e for e in edges(gold) if e[0] != HELD_OUT], "the kept gold is replaced"
    measured = quality["tuning_edges"]["edges"]
    truth = {e[:4] for e in edges(gold) if e[0] != HELD_OUT}
    assert (measured["tp"], measured["proposed"]) == (len({e[:4] for e in drawn} & truth), len({e[:4] for e in drawn}))
    assert [g["processes"] for g in quality["tuning_edges"]["groups"]] == [[p] for p in kept_processes]

    victim = kept_processes[0]
    garbled = [
        {**row, "entity_set": "Nothing"} if row["process"] in (victim, HELD_OUT) else row for row in mapping_rows(gold)
    ]
    write_mapping(tmp_path / "garbled.yaml", garbled)
    automatic_mapping(
        kept_signals, tmp_path / "garbled.yaml", [HELD_OUT], tmp_path / "garbled", scorer="weights", tuning="train"
    )
    again = edges(read_proposals(tmp_path / "garbled" / "tuning-proposals.yaml"))
    assert [e for e in again if e[0] == victim] == [e for e in drawn if e[0] == victim] != []
    held_again = edges(read_proposals(tmp_path / "garbled" / "proposals.yaml"))
    assert edges(read_mapping(tmp_path / "garbled" / "training.yaml")) == again + held_again
    # the store it ranks over keeps the kept processes' (here garbled) gold: only training sees proposals
    kept_gold = [e for e in edges(read_mapping(tmp_path / "garbled.yaml")) if e[0] != HELD_OUT]
    assert edges(read_mapping(tmp_path / "garbled" / "mapping.yaml")) == kept_gold + held_again


def _scored(folder) -> set[tuple[str, str, str, str]]:
    return {p.edge() for p in read_proposals(folder / "scored.yaml")}


def test_the_scored_scopes_keep_the_candidates_they_name(tmp_path, kept_signals):
    """``--scored-scope``: ``empty`` keeps the candidates of the activities the cut left without an edge;
    ``parts`` those that are a header or an item of a set the cut proposed for the same activity,
    ``flow`` those that follow or precede one in the inferred flow; neither keeps a cut edge."""
    automatic_mapping(kept_signals, DEMO / "mapping.yaml", [HELD_OUT], tmp_path / "all", scored=Scored(8))
    every = _scored(tmp_path / "all")
    cut = {p.edge() for p in read_proposals(tmp_path / "all" / "proposals.yaml")}
    assert every and cut
    col = {(t.service, t.name): j for j, t in enumerate(kept_signals.sets)}
    documents = {(j, h) for j, headers in enumerate(kept_signals.documents) for h in headers}
    follows = {(j, f) for j, before in enumerate(kept_signals.follows) for f in before}

    def related(edge, pairs) -> bool:
        j = col[edge[2:]]
        return any(c[:2] == edge[:2] and ((j, col[c[2:]]) in pairs or (col[c[2:]], j) in pairs) for c in cut)

    expected = {
        "empty": {e for e in every if not any(c[:2] == e[:2] for c in cut)},
        "parts": {e for e in every if e not in cut and related(e, documents)},
        "flow": {e for e in every if e not in cut and related(e, follows)},
    }
    assert expected["empty"] and expected["parts"] and expected["flow"], "the demo has candidates of each scope"
    for scope in SCORED_SCOPES[1:]:
        automatic_mapping(
            kept_signals, DEMO / "mapping.yaml", [HELD_OUT], tmp_path / scope, scored=Scored(8, scope=scope)
        )
        assert _scored(tmp_path / scope) == expected[scope], scope
        kept = json.loads((tmp_path / scope / "scored.json").read_text(encoding="utf-8"))
        assert len(kept) == len(expected[scope])
    with pytest.raises(ProcessKGError, match="unknown scored scope 'nonsense'"):
        automatic_mapping(
            kept_signals, DEMO / "mapping.yaml", [HELD_OUT], tmp_path / "x", scored=Scored(8, scope="nonsense")
        )


@pytest.mark.parametrize("scope", SCORED_SCOPES)
def test_the_scored_candidates_never_see_the_held_out_gold(tmp_path, kept_signals, scope):
    """Garbled (here: removed) held-out gold, the same scored candidates of each scope."""
    blind_gold = kept_mapping(DEMO / "mapping.yaml", [HELD_OUT], tmp_path / "blind.yaml")
    for name, gold in (("full", DEMO / "mapping.yaml"), ("blind", blind_gold)):
        automatic_mapping(kept_signals, gold, [HELD_OUT], tmp_path / name, scored=Scored(8, scope=scope))
    assert (tmp_path / "blind" / "scored.json").read_bytes() == (tmp_path / "full" / "scored.json").read_bytes()


def test_unknown_tuning_edges_are_refused(tmp_path, kept_signals):
    with pytest.raises(ProcessKGError, match="unknown tuning edges 'nonsense'"):
        automatic_mapping(kept_signals, DEMO / "mapping.yaml", [HELD_OUT], tmp_path, tuning="nonsense")


def test_reached_counts_the_gold_items_a_proposed_edge_of_their_process_reaches():
    """An item is reached when one of its alternatives is proposed for the query's own process (not
    another's); found when in the top 3."""
    queries = [
        Query("q1", "a", [[("S", "A")], [("S", "B"), ("T", "B2")]], "workflow", extra={"process": "P"}),
        Query("q2", "b", [[("S", "C")]], "process-chain", extra={"process": "Q"}),
    ]
    results = {"q1": [("S", "X"), ("T", "B2"), ("S", "Y"), ("S", "A")], "q2": [("S", "C")]}
    proposed = [("P", "S", "A"), ("P", "S", "B"), ("P", "S", "C")]
    assert reached(queries, results, proposed) == {"items": 3, "reached": 2, "reached_found": 1, "other_found": 1}


VARIANTS = {
    "--tuning-edges proposed": "tuning-proposed",
    "--tuning-edges train": "tuning-train",
    "--tuning-edges both": "tuning-both",
    "--scored-candidates 3`": "scored",
    "--scored-weight relative": "scored-relative",
    "--scored-only": "scored-only",
    "--scored-candidates 1 --scored-weight one": "scored-top1",
    "--scored-candidates 2 --scored-scope empty": "scope-empty",
    "--scored-candidates 10 --scored-scope parts": "scope-parts",
    "--scored-candidates 10 --scored-scope flow": "scope-flow",
}


def test_the_documented_variants_are_the_committed_runs():
    """docs/results.md's table of how retrieval uses the automatic layer: each row's R@3 (all, process-chain,
    workflow) and R@5 are those of its run in docs/results/processes-automatic-variants/, whose command
    names the row's option; the reach figures above it are those of the plain run's report."""
    root = DEMO.parents[1]
    results = root / "docs" / "results"
    lines = (root / "docs" / "results.md").read_text(encoding="utf-8").splitlines()
    for option, folder in VARIANTS.items():
        run = results / "processes-automatic-variants" / folder
        command = (run / "report.md").read_text(encoding="utf-8").split("```")[1]
        assert option.strip("`") in command and "--protocol automatic" in command
        summary = json.loads((run / "results.json").read_text(encoding="utf-8"))["automatic"]["summary"]["hybrid"]
        row = next(line for line in lines if line.startswith("| ") and f"(`{option.strip('`')}`)" in line)
        cells = [c.strip() for c in row.strip("|").split("|")]
        expected = [f"{summary[g]['recall@3']:.3f}" for g in ("all", "process-chain", "workflow")]
        assert cells[1:5] == [*expected, f"{summary['all']['recall@5']:.3f}"], folder
    text = " ".join(lines)
    # the variants' plain run (proposals of the scorer before its metadata features), then today's
    before = json.loads((results / "processes-automatic-scorer-0556" / "results.json").read_text(encoding="utf-8"))
    reach = {k: sum(f["reached"][k] for f in before["folds"]) for k in before["folds"][0]["reached"]}
    assert f"metadata features {reach['reached']} (57%;" in text and reach["items"] == 314
    assert f"of which the routed hybrid had {reach['reached_found']} in its top 3 (0.728" in text
    assert f"and {reach['other_found']} of the other {reach['items'] - reach['reached']} (0.022)" in text
    plain = json.loads((results / "processes-automatic" / "results.json").read_text(encoding="utf-8"))
    reach = {k: sum(f["reached"][k] for f in plain["folds"]) for k in plain["folds"][0]["reached"]}
    assert f"The better proposals reach {reach['reached']} (62%;" in text and reach["items"] == 314
    assert f"still has {reach['reached_found']} of them in its top 3 (0.668) and" in text
    assert f"{reach['other_found']} of the other {reach['items'] - reach['reached']} (0.017)" in text


def test_the_documented_diagnosis_is_the_committed_one():
    """docs/results.md's per-item diagnosis of the automatic layer is benchmarks/results/automatic_layer_misses.json,
    whose fold models ranked the committed run's held-out queries as the run did (Recall@3 query by query)."""
    root = DEMO.parents[1]
    misses = json.loads((root / "benchmarks" / "results" / "automatic_layer_misses.json").read_text(encoding="utf-8"))
    plain = json.loads((root / "docs" / "results" / "processes-automatic" / "results.json").read_text(encoding="utf-8"))
    assert all(f["mismatched_queries"] == [] for f in misses["folds"])
    assert misses["recall3"]["fold_model_fold_store"] == round(
        plain["automatic"]["summary"]["hybrid"]["all"]["recall@3"], 4
    )
    table = misses["summary"]["items_by_reach_and_top3"]
    both = "found with the hand-built layer"
    reached_hand = table[f"reached, found, {both}"] + table[f"reached, missed, {both}"]
    missed_both = table["reached, missed, missed with the hand-built layer"]
    unreached_found = table[f"not reached, found, {both}"] + table.get(
        "not reached, found, missed with the hand-built layer", 0
    )
    unreached_hand = table[f"not reached, found, {both}"] + table[f"not reached, missed, {both}"]
    text = " ".join((root / "docs" / "results.md").read_text(encoding="utf-8").split())
    assert f"top 3 over the proposals, and {reached_hand} over the hand-built layer." in text
    assert f"Of the {misses['summary']['missed_reached_items']} it misses, {missed_both} are missed over" in text
    assert f"reaches, it finds {unreached_found}; the hand-built layer {unreached_hand}." in text
    bounds = misses["summary"]["recall3_bounds"]
    assert f"Recall@3 would be {bounds['reached_as_hand_built']:.3f} if the hybrid also found the" in text
    assert f"{bounds['reached_found']:.3f} if every reached item were in the top 3" in text
    assert f"{bounds['unreached_as_hand_built']:.3f} if every item that the hand-built layer finds" in text
    assert f"the *withheld* protocol's model ranks {misses['recall3']['withheld_model_fold_store']:.3f} over" in text
