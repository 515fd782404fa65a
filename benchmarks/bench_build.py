"""Benchmark ``kg build`` on the real SAP corpora (not a timed test).

Builds the 45 A2X services and all s4-fiori services (with their annotation files),
each run in a fresh process so peak memory is that corpus's own, and prints the
median over runs of: seconds (excluding interpreter start-up), files/s, triples/s,
peak RSS. Writes ``benchmarks/results/build.json``.

    .venv/bin/python benchmarks/bench_build.py [--runs 3]

Targets (2-core machine): A2X lifted and loaded in under 3 s, s4-fiori under 10 s. The
generation of SHACL payload shapes into the store (a later stage) is timed separately.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import platform
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data" / "odata"
CORPORA = {"s4-a2x": (SHARED / "s4-a2x", 3.0), "s4-fiori": (SHARED / "s4-fiori", 10.0)}


def _one_run(corpus: str, queue) -> None:
    """One build into a store (no Turtle export) with the generated SHACL shapes; the target covers
    lifting and loading only, so the shape generation is subtracted and reported beside it."""
    from processkg.build.pipeline import BuildOptions, build_store
    from processkg.graph.handle import StoreLocation

    path = CORPORA[corpus][0]
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        report = build_store(BuildOptions(odata=[path], store=StoreLocation.parse(Path(tmp) / "store")))
        seconds = time.perf_counter() - start
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    queue.put(
        {
            "seconds": seconds - report.shapes_seconds,
            "with_shapes": seconds,
            "files": len(report.files),
            "triples": report.triples,
            "properties": report.classes.get("Property", 0),
            "peak_mb": peak_mb,
        }
    )


def measure(corpus: str, runs: int) -> dict:
    ctx = mp.get_context("spawn")
    results = []
    for _ in range(runs):
        queue = ctx.Queue()
        proc = ctx.Process(target=_one_run, args=(corpus, queue))
        proc.start()
        results.append(queue.get())
        proc.join()
    seconds = statistics.median(r["seconds"] for r in results)
    first = results[0]
    return {
        "corpus": corpus,
        "runs": runs,
        "median_seconds": round(seconds, 3),
        "all_seconds": [round(r["seconds"], 3) for r in results],
        "median_seconds_with_shapes": round(statistics.median(r["with_shapes"] for r in results), 3),
        "files": first["files"],
        "triples": first["triples"],
        "properties": first["properties"],
        "files_per_s": round(first["files"] / seconds, 1),
        "triples_per_s": round(first["triples"] / seconds),
        "peak_rss_mb": round(max(r["peak_mb"] for r in results), 1),
        "target_seconds": CORPORA[corpus][1],
        "meets_target": seconds < CORPORA[corpus][1],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "build.json")
    args = parser.parse_args()
    if not SHARED.is_dir():
        print(f"skipped: {SHARED} not present", file=sys.stderr)
        return 0
    rows = [measure(corpus, args.runs) for corpus in CORPORA]
    for r in rows:
        print(
            f"{r['corpus']:9s} {r['files']:4d} files {r['properties']:6d} properties  "
            f"median {r['median_seconds']:6.2f} s (target < {r['target_seconds']:.0f} s: "
            f"{'met' if r['meets_target'] else 'MISSED'})  {r['files_per_s']:7.1f} files/s  "
            f"{r['triples_per_s']:9,d} triples/s  peak {r['peak_rss_mb']:.0f} MB  "
            f"(with SHACL shapes generated into the store: {r['median_seconds_with_shapes']:.2f} s)"
        )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    env = {"python": platform.python_version(), "machine": platform.machine(), "cpus": mp.cpu_count()}
    args.out.write_text(json.dumps({"environment": env, "results": rows}, indent=2) + "\n")
    print(f"wrote {args.out.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
