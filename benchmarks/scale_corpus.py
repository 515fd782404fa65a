"""Synthetic corpora with the shape of A2X at N times its size (``bench_scale.py``'s input).

``generate(out, factor)`` writes ``out/odata/``, ``out/bpmn/`` and ``out/mapping.yaml``: ``factor``
copies of the 45 real A2X services (``../shared/data/odata/s4-a2x``), of the 18 SAP processes
(``data/sap/processes``) and of their mapping edges (``data/sap/mapping.yaml``). Copy 0 is the real
corpus unchanged, so 1x is A2X + data/sap; every further copy renames each service (its file stem
and its schema namespaces), each BPMN file and each process id with a suffix drawn once per copy
from a seeded RNG, and points its mapping edges at its own services and processes. So services,
entity sets, properties per type, keys, navigations, activities and mapping edges all scale by
exactly ``factor`` with the real distribution, names are unique per copy, and the retrieval texts
differ per copy (they name the service), so the embedding cache cannot share them.

    python benchmarks/scale_corpus.py OUT --factor 10
"""

from __future__ import annotations

import argparse
import random
import re
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
A2X = ROOT.parent / "shared" / "data" / "odata" / "s4-a2x"
PROCESSES = ROOT / "data" / "sap" / "processes"
MAPPING = ROOT / "data" / "sap" / "mapping.yaml"
SEED = 14
NAMESPACE = re.compile(r'Namespace="([^"]+)"')
PROCESS_ID = re.compile(r"\bProcess_(\w+)")


def suffixes(factor: int, seed: int = SEED) -> list[str]:
    """One suffix per copy ("" for copy 0), distinct, the same for the same seed."""
    rng = random.Random(seed)
    letters = "ABCDEFGHJKLMNPQRSTUVWXYZ"
    out: list[str] = [""]
    while len(out) < factor:
        code = f"_Z{''.join(rng.choice(letters) for _ in range(2))}{len(out)}"
        out.append(code)
    return out


def rename_service(text: str, stem: str, suffix: str) -> str:
    """The metadata document with its service name and schema namespaces suffixed."""
    names = sorted({stem, *NAMESPACE.findall(text)}, key=len, reverse=True)
    pattern = re.compile("|".join(re.escape(n) for n in names))
    return pattern.sub(lambda m: m.group(0) + suffix, text)


def copy_odata(out: Path, suffix: str) -> int:
    count = 0
    for source in sorted(A2X.iterdir()):
        if source.suffix not in (".edmx", ".xml"):
            continue
        text = source.read_text(encoding="utf-8")
        target = out / f"{source.stem}{suffix}{source.suffix}"
        target.write_text(text if not suffix else rename_service(text, source.stem, suffix), encoding="utf-8")
        count += 1
    return count


def copy_bpmn(out: Path, suffix: str) -> None:
    for source in sorted(PROCESSES.glob("*.bpmn")):
        text = source.read_text(encoding="utf-8")
        text = PROCESS_ID.sub(lambda m: m.group(0) + suffix, text) if suffix else text
        (out / f"{source.stem}{suffix.lower().replace('_', '-')}.bpmn").write_text(text, encoding="utf-8")


def copy_edges(edges: list[dict[str, str]], suffix: str) -> list[dict[str, str]]:
    return [{**e, "process": e["process"] + suffix, "service": e["service"] + suffix} for e in edges]


def generate(out: Path, factor: int, seed: int = SEED) -> dict[str, int]:
    """Write the corpus of ``factor`` copies under ``out``; counts of what was written."""
    (out / "odata").mkdir(parents=True, exist_ok=True)
    (out / "bpmn").mkdir(parents=True, exist_ok=True)
    edges = yaml.safe_load(MAPPING.read_text(encoding="utf-8"))["mappings"]
    mappings: list[dict[str, str]] = []
    services = 0
    for suffix in suffixes(factor, seed):
        services += copy_odata(out / "odata", suffix)
        copy_bpmn(out / "bpmn", suffix)
        mappings += copy_edges(edges, suffix)
    (out / "mapping.yaml").write_text(yaml.safe_dump({"mappings": mappings}, sort_keys=False), encoding="utf-8")
    return {"services": services, "processes": factor * len(list(PROCESSES.glob("*.bpmn"))), "edges": len(mappings)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--factor", type=int, default=1)
    parser.add_argument("--seed", type=int, default=SEED)
    args = parser.parse_args()
    print(generate(args.out, args.factor, args.seed))


if __name__ == "__main__":
    main()
