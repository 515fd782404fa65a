"""How far the blind query set (data/sap/blind) lies inside our own process layer, and the chance
level of the activity-overlap measure (evaluate/overlap.py) on queries never written about SAP.

* coverage: the share of the blind set's gold entity sets (any listed alternative counts) that
  are among the entity sets data/sap/mapping.yaml uses, per query type; the share of its gold
  items that are also gold of the benchmark's train split; the share of its process and workflow
  queries whose source names a scope item that a process of data/sap/processes-src also names.
* chance: the overlap of a fixed sample (seed 0) of 200 SOCBench-D queries (other industries'
  OpenAPI services) with the store's activity names.

    python benchmarks/blind_audit.py --store build/sap --socbench ../shared/data/socbench-d \
        --out benchmarks/results/blind-audit.json
"""

from __future__ import annotations

import argparse
import json
import random
import re
from pathlib import Path
from statistics import mean, median

import yaml

from processkg.evaluate.overlap import nearest
from processkg.evaluate.socbench_protocol import find_domains
from processkg.graph.handle import StoreHandle
from processkg.retrieve.index import load_index

ROOT = Path(__file__).resolve().parents[1]
SAP = ROOT / "data" / "sap"
SAMPLE = 200
SCOPE = re.compile(r"\(([0-9A-Z]{2,4})\)")  # "Sell from Stock (BD9)" -> BD9

Item = tuple[str, str]


def gold_items(query: dict) -> list[set[Item]]:
    """Each gold entry as the set of its acceptable (service, entity set) pairs."""
    return [
        {(g["service"], g["entity_set"])} | {(a["service"], a["entity_set"]) for a in g.get("alternatives", [])}
        for g in query["gold"]
    ]


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def coverage() -> dict:
    mapped = {(m["service"], m["entity_set"]) for m in yaml.safe_load((SAP / "mapping.yaml").read_text())["mappings"]}
    blind = read_jsonl(SAP / "blind" / "queries.jsonl")
    train = [q for q in read_jsonl(SAP / "benchmark" / "queries.jsonl") if q["split"] == "train"]
    train_gold = {item for q in train for entry in gold_items(q) for item in entry}
    layer_scopes = {
        s
        for p in (SAP / "processes-src").glob("*.yaml")
        for s in SCOPE.findall(str(yaml.safe_load(p.read_text())["scope"]))
    }
    by_type: dict[str, dict] = {}
    for kind in sorted({q["type"] for q in blind}):
        entries = [e for q in blind if q["type"] == kind for e in gold_items(q)]
        by_type[kind] = {
            "queries": sum(q["type"] == kind for q in blind),
            "gold_items": len(entries),
            "share_in_mapped_sets": round(sum(bool(e & mapped) for e in entries) / len(entries), 3),
            "share_gold_in_train": round(sum(bool(e & train_gold) for e in entries) / len(entries), 3),
        }
    entries = [e for q in blind for e in gold_items(q)]
    flows = [q for q in blind if q["type"] in ("process", "workflow")]
    same_scope = [q for q in flows if set(SCOPE.findall(q.get("source", ""))) & layer_scopes]
    return {
        "mapped_entity_sets": len(mapped),
        "by_type": by_type,
        "share_gold_in_train_all": round(sum(bool(e & train_gold) for e in entries) / len(entries), 3),
        "process_and_workflow_queries": len(flows),
        "from_a_scope_item_of_the_layer": len(same_scope),
        "layer_scope_items": sorted(layer_scopes),
    }


def chance(store: Path, socbench: Path) -> dict:
    names = sorted({a["name"] for a in load_index(StoreHandle.open(store)).items["activity"] if a["name"]})
    texts = [q.text for d in find_domains(socbench) for q in d.queries]
    values = [nearest(text, names)[0] for text in random.Random(0).sample(texts, SAMPLE)]
    return {
        "store_activity_names": len(names),
        "queries_available": len(texts),
        "sample": SAMPLE,
        "seed": 0,
        "mean": round(mean(values), 3),
        "median": round(median(values), 3),
        "share_at_least_0.5": round(sum(v >= 0.5 for v in values) / len(values), 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--store", type=Path, required=True, help="the SAP store (data/sap) with its index")
    parser.add_argument("--socbench", type=Path, required=True, help="the SOCBench-D folder")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    report = {"coverage": coverage(), "overlap_chance_socbench": chance(args.store, args.socbench)}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
