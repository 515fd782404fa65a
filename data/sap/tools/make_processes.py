#!/usr/bin/env python3
"""Write the SAP process layer: ``data/sap/processes/*.bpmn`` and ``data/sap/mapping.yaml``.

The processes are modelled on SAP Best Practices scope items (see ``docs/sap-process-layer.md``)
and linked to the entity sets of the 45 A2X OData services in ``../shared/data/odata/s4-a2x``.
Each process is one declarative YAML file in ``data/sap/processes-src/`` (format:
``process_data.py``), and each activity carries its hand-chosen ``uses`` edges (service, entity
set, read/write, and a note naming the properties or function imports the step touches). The
code lays the diagrams out (``layout.py``), checks them (``check.py``), and writes BPMN 2.0 XML
with diagram interchange and the mapping file from the same data (``writer.py``), so the two
cannot drift apart. Output is deterministic: the same data writes the same bytes.

Usage (from the repository root)::

    python data/sap/tools/make_processes.py                 # (re)write processes and mapping
    python data/sap/tools/make_processes.py --check         # exit 1 if the files on disk differ
    python data/sap/tools/make_processes.py --metadata ../shared/data/odata/s4-a2x
                                                             # also check every edge against the metadata
    python data/sap/tools/make_processes.py --verify-store /tmp/sap
                                                             # SPARQL checks on a store built by `kg build`

Every run also checks the diagrams: no two shapes overlap, every shape lies inside its lane,
and no sequence or message flow passes through a shape it does not connect.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from check import check_layout, check_metadata, check_model, read_metadata, verify_store
from layout import Layout
from model import DEFAULT_METADATA, MAPPING_FILE, PROCESS_DIR, REPO
from process_data import load_all
from writer import Writer, write_mapping


# --------------------------------------------------------------------------- driver
def render(procs: list) -> dict:
    files = {}
    problems = []
    for p in procs:
        problems += [f"{p.file}: {x}" for x in check_model(p)]
        lay = Layout(p)
        lay.run()
        problems += [f"{p.file}: {x}" for x in check_layout(p, lay)]
        files[PROCESS_DIR / p.file] = Writer(p, lay).write()
    files[MAPPING_FILE] = write_mapping(procs)
    return files, problems


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true", help="only compare with the files on disk")
    ap.add_argument(
        "--metadata",
        type=Path,
        nargs="?",
        const=DEFAULT_METADATA,
        help="check every edge against the OData metadata in this folder",
    )
    ap.add_argument("--verify-store", type=Path, help="run the SPARQL checks on a built store")
    ap.add_argument("--summary", action="store_true", help="print activity and edge counts")
    ap.add_argument("--preview", type=Path, help="write the BPMN files here even if checks fail")
    args = ap.parse_args(argv)
    procs = load_all()
    ids = [p.id for p in procs]
    if len(set(ids)) != len(ids):
        print("duplicate process ids", file=sys.stderr)
        return 1
    files, problems = render(procs)
    if args.metadata:
        problems += check_metadata(procs, read_metadata(args.metadata))
    for x in problems:
        print("problem:", x, file=sys.stderr)
    if args.preview:
        args.preview.mkdir(parents=True, exist_ok=True)
        for path, text in files.items():
            (args.preview / path.name).write_text(text, encoding="utf-8")
    if problems:
        return 1
    if args.check:
        stale = [
            str(path.relative_to(REPO))
            for path, text in files.items()
            if not path.exists() or path.read_text(encoding="utf-8") != text
        ]
        extra = sorted(str(f.relative_to(REPO)) for f in PROCESS_DIR.glob("*.bpmn") if f not in files)
        for s in stale:
            print("out of date:", s, file=sys.stderr)
        for s in extra:
            print("not written by this script:", s, file=sys.stderr)
        return 1 if stale or extra else 0
    if not args.verify_store:
        PROCESS_DIR.mkdir(parents=True, exist_ok=True)
        for path, text in files.items():
            path.write_text(text, encoding="utf-8")
        print(f"wrote {len(procs)} processes and {MAPPING_FILE.relative_to(REPO)}")
    if args.summary or not args.verify_store:
        total_a = total_e = 0
        for p in procs:
            acts = [n for n in p.nodes.values() if n.is_activity]
            edges = sum(len(n.uses) for n in acts)
            total_a += len(acts)
            total_e += edges
            print(f"  {p.file:40} {p.id:42} {len(acts):3} activities {edges:3} edges")
        print(f"  total: {len(procs)} processes, {total_a} activities, {total_e} mapping edges")
    if args.verify_store:
        return 1 if verify_store(args.verify_store, procs) else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
