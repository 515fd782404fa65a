"""Characters of ``describe``'s JSON answer on every entity set of a store, compact (the default) and
``detail: "full"``, and of ``find_entity_sets``'s answer (k=5, and without k: the tool's default) on every request of a query list: the
figures of docs/mcp.md's describe and find_entity_sets tables.

    python benchmarks/bench_describe.py --store build/tasks --out benchmarks/results/describe.json \
        --label after

Each run is kept in ``--out`` under its ``--label`` with the commit it measured (the code imported),
so running it once on the code before a change and once after gives both in one file.

The store is the A2X services with the SAP process layer and code lists, as tests/conftest.py's
``tasks_store`` builds it (``kg build --odata ../shared/data/odata/s4-a2x --bpmn data/sap/processes
--mapping data/sap/mapping.yaml --codes data/sap/codes --required data/sap/required --flow data/sap/flow``). No OData server is needed: describe reads
the graph only.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
from pathlib import Path

import processkg
from processkg.graph.handle import StoreHandle
from processkg.tools.mcp_server import _tool_result
from processkg.tools.toolbox import Toolbox

LIMIT = 4000  # issue 22: no compact answer over this
QUERIES = Path(__file__).resolve().parents[1] / "data" / "sap" / "goals" / "queries.jsonl"


def printed(answer: dict) -> int:
    """The characters of an answer as ``kg mcp`` prints it (the text of its tool result)."""
    return sum(len(getattr(c, "text", "")) for c in _tool_result(answer, False).content)


def sizes(box: Toolbox, detail: str) -> dict[str, int]:
    """{"SERVICE/EntitySet": characters of the answer as kg mcp prints it} for every entity set of the store."""
    out = {}
    for service, name in sorted(box.sets):
        arguments = {"service": service, "entity_set": name, "detail": detail}
        answer, is_error = box.run("describe", arguments)
        if is_error:
            raise SystemExit(f"describe {service}/{name} failed: {answer}")
        out[f"{service}/{name}"] = printed(answer)
    return out


def find_sizes(box: Toolbox, queries: Path, k: int | None) -> dict[str, int]:
    """{query id: characters of find_entity_sets' JSON answer} for every request of the query list, with
    ``k`` results (None: the tool's default)."""
    out = {}
    for line in queries.read_text(encoding="utf-8").splitlines():
        if line.strip():
            query = json.loads(line)
            arguments = {"task": query["query"]} if k is None else {"task": query["query"], "k": k}
            answer, is_error = box.run("find_entity_sets", arguments)
            if is_error:
                raise SystemExit(f"find_entity_sets {query['id']} failed: {answer}")
            out[query["id"]] = printed(answer)
    return out


def commit() -> str:
    """The commit of the code measured, with ``-dirty`` when src has uncommitted changes."""
    src = Path(processkg.__path__[0]).parent
    head = subprocess.run(["git", "-C", str(src), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    dirty = subprocess.run(["git", "-C", str(src), "status", "--porcelain", "--", "."], capture_output=True, text=True)
    return head.stdout.strip() + ("-dirty" if dirty.stdout.strip() else "")


def summary(by_set: dict[str, int]) -> dict[str, object]:
    values = sorted(by_set.values())
    largest = max(by_set, key=lambda k: (by_set[k], k))
    return {
        "sets": len(values),
        "median": statistics.median(values),
        "p90": values[int(0.9 * (len(values) - 1))],
        "largest": by_set[largest],
        "largest_set": largest,
        f"over_{LIMIT}": sum(v > LIMIT for v in values),
        "total": sum(values),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--store", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--label", default="after", help="the run's name in --out (e.g. before, after)")
    parser.add_argument("--queries", type=Path, default=QUERIES, help="JSONL with id and query per line")
    parser.add_argument("--commit", help="the commit measured, when the code imported is no git checkout")
    args = parser.parse_args()
    box = Toolbox(StoreHandle.open(args.store))
    try:
        report: dict[str, object] = {"commit": args.commit or commit(), "queries": args.queries.name}
        report.update({detail: summary(sizes(box, detail)) for detail in ("compact", "full")})
        names = {"sets": "queries", "largest_set": "largest_query"}
        for label, k in (("find_entity_sets", 5), ("find_entity_sets_default_k", None)):
            found = summary(find_sizes(box, args.queries, k))
            report[label] = {names.get(key, key): v for key, v in found.items()}
    finally:
        box.close()
    runs = json.loads(args.out.read_text(encoding="utf-8")) if args.out.exists() else {}
    runs = runs if "commit" in next(iter(runs.values()), {"commit": ""}) else {}  # an older layout is replaced
    runs[args.label] = report
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(runs, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
