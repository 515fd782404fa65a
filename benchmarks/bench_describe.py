"""Characters of ``describe``'s JSON answer on every entity set of a store, compact (the default) and
``detail: "full"``: the figures of docs/mcp.md's describe table.

    python benchmarks/bench_describe.py --store build/tasks --out benchmarks/results/describe.json

The store is the A2X services with the SAP process layer and code lists, as tests/conftest.py's
``tasks_store`` builds it (``kg build --odata ../shared/data/odata/s4-a2x --bpmn data/sap/processes
--mapping data/sap/mapping.yaml --codes data/sap/codes --required data/sap/required``). No OData server is needed: describe reads
the graph only.
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

from processkg.graph.handle import StoreHandle
from processkg.tools.toolbox import Toolbox

LIMIT = 4000  # issue 22: no compact answer over this


def sizes(box: Toolbox, detail: str) -> dict[str, int]:
    """{"SERVICE/EntitySet": characters of the JSON answer} for every entity set of the store."""
    out = {}
    for service, name in sorted(box.sets):
        arguments = {"service": service, "entity_set": name, "detail": detail}
        answer, is_error = box.run("describe", arguments)
        if is_error:
            raise SystemExit(f"describe {service}/{name} failed: {answer}")
        out[f"{service}/{name}"] = len(json.dumps(answer, ensure_ascii=False))
    return out


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
    args = parser.parse_args()
    box = Toolbox(StoreHandle.open(args.store))
    try:
        report = {detail: summary(sizes(box, detail)) for detail in ("compact", "full")}
    finally:
        box.close()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
