"""Where the first hybrid retrieval request of a fresh process goes (issue 24: < 10 s at 100x).

Usage: ``python benchmarks/profile_first_request.py STORE [--out FILE]``

Opens ``STORE`` with its index, loads the embedding model, then runs the first dev query
(``retrieve-dev-queries.jsonl``) with ``method="hybrid"`` under cProfile and writes the seconds
of the model load and of the query, and the 25 functions with the most cumulative time.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_retrieve_resident import queries  # noqa: E402

from processkg.graph.handle import StoreHandle  # noqa: E402
from processkg.retrieve.index import load_encoder_model  # noqa: E402
from processkg.retrieve.retriever import Retriever  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("store", type=Path)
    parser.add_argument("--out", type=Path, help="write here (default: standard output)")
    args = parser.parse_args()
    retriever = Retriever(StoreHandle.open(args.store))
    start = time.perf_counter()
    load_encoder_model(retriever.index.model)
    model = time.perf_counter() - start
    profile = cProfile.Profile()
    start = time.perf_counter()
    profile.enable()
    retriever.retrieve(queries()[0], method="hybrid")
    profile.disable()
    first = time.perf_counter() - start
    text = io.StringIO()
    pstats.Stats(profile, stream=text).sort_stats("cumulative").print_stats(25)
    root = str(Path(__file__).resolve().parents[1]) + "/"
    report = f"model load {model:.1f} s; first hybrid query {first:.1f} s\n" + text.getvalue()
    report = report.replace(root, "").replace(sys.prefix + "/", "")
    if args.out is None:
        print(report)
    else:
        args.out.write_text(report, encoding="utf-8")


if __name__ == "__main__":
    main()
