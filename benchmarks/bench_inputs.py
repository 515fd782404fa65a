"""Benchmark ``kg build`` on large and hostile inputs near the readers' bounds (not a timed test).

Each input is written by ``tests/hostile/make_corpus.py`` (or built here from its generators) and
built by the real ``kg`` in its own process, under the hostile tests' 3 GB address-space cap; the
wall-clock seconds, peak RSS (``wait4``), exit code and the first output line are printed and
written to ``benchmarks/results/inputs.json``. The figures in docs/reliability.md come from here.

    .venv/bin/python benchmarks/bench_inputs.py
"""

from __future__ import annotations

import json
import platform
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "hostile"))
import make_corpus as corpus  # noqa: E402
from kg_runner import run_kg  # noqa: E402

OUT = ROOT / "benchmarks" / "results" / "inputs.json"


def _bpmn(ways: int) -> corpus.Generator:
    return corpus.text(corpus._fan_in_out(ways))


#: name -> (file name, generator, kg build option)
INPUTS: dict[str, tuple[str, corpus.Generator, str]] = {
    "bpmn fan-in+fan-out 316 ways (99,856 bpmn:next pairs, under the bound)": ("fan-316.bpmn", _bpmn(316), "--bpmn"),
    "bpmn fan-in+fan-out 3,000 ways (refused)": ("fan-3000.bpmn", _bpmn(3000), "--bpmn"),
    "openapi 15 MB, valid, few operations": ("big-15.json", corpus.big_openapi(15), "--openapi"),
    "openapi 50 MB (refused by size)": ("big-50.json", corpus.big_openapi(50), "--openapi"),
    "openapi 12 MB of operations (refused: over 50,000 graph nodes)": (
        "ops-12.json",
        corpus.many_operations(12),
        "--openapi",
    ),
    "openapi 2.9 MB of operations (2,500 path items, 50,000 graph nodes: at the bound)": (
        "ops-2.9.json",
        corpus.many_operations(2.865),
        "--openapi",
    ),
}


def measure(folder: Path, name: str, generator: corpus.Generator, option: str) -> dict[str, object]:
    path = folder / name
    generator(path, corpus.Context())
    run = run_kg(["build", option, str(path), "--out", str(folder / "out.ttl")], timeout=600, scratch=folder)
    first = (run.stderr.strip() or run.stdout.strip()).splitlines()[:1]
    return {
        "megabytes": round(path.stat().st_size / corpus.MB, 1),
        "exit": run.code,
        "seconds": round(run.seconds, 1),
        "peak_rss_mb": round(run.max_rss / corpus.MB),
        "output": first[0][:200] if first else "",
    }


def main() -> int:
    results: dict[str, object] = {"machine": f"{platform.machine()} {platform.python_version()}"}
    with tempfile.TemporaryDirectory() as tmp:
        for label, (name, generator, option) in INPUTS.items():
            results[label] = row = measure(Path(tmp), name, generator, option)
            print(f"{label}: {row}", flush=True)
    OUT.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {OUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
