"""How many inferred document-flow edges a store holds, and how many rows retrieval's lift of them
gives (``retrieve-flow.rq``), with the query of this checkout and optionally of a base revision.

Usage: ``python benchmarks/count_flow.py NAME=STORE [NAME=STORE ...] [--before REV] [--out FILE]``

Writes ``benchmarks/results/flow_counts.json``: per store, ``edges`` (``kg:inferredNext`` triples),
``rows`` (the lift of this checkout) and, with ``--before``, ``rows_before`` (the lift as ``REV``'s
``retrieve-flow.rq`` wrote it, on the same store).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import time
from pathlib import Path

from processkg.graph.handle import StoreHandle
from processkg.graph.store import load_query, select

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
QUERY = "src/processkg/assets/queries/internal/retrieve-flow.rq"
EDGES = "SELECT (COUNT(*) AS ?n) WHERE { ?pred kg:inferredNext ?follow }"


def rows(store: StoreHandle, query: str) -> int:
    return len(select(store.graph, query)[1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("stores", nargs="+", help="NAME=STORE")
    parser.add_argument("--before", help="a revision whose retrieve-flow.rq is also counted")
    parser.add_argument("--out", type=Path, default=HERE / "results" / "flow_counts.json")
    args = parser.parse_args()
    before = None
    if args.before:
        before = subprocess.run(
            ["git", "-C", str(ROOT), "show", f"{args.before}:{QUERY}"], check=True, capture_output=True, text=True
        ).stdout
    out: dict[str, object] = {"before": args.before, "measured": time.strftime("%Y-%m-%d"), "stores": {}}
    for item in args.stores:
        name, path = item.split("=", 1)
        with StoreHandle.open(path) as store:
            found = {
                "edges": int(select(store.graph, EDGES)[1][0][0].value),
                "rows": rows(store, load_query("retrieve-flow")),
            }
            if before is not None:
                found["rows_before"] = rows(store, before)
        out["stores"][name] = found  # type: ignore[index]
        print(name, found, flush=True)
    args.out.write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
