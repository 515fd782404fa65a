"""Write expected.ttl of every conformance case from the current code (review the diff!)."""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from test_conformance import CASES, lift  # noqa: E402

if __name__ == "__main__":
    for case in CASES:
        (case / "expected.ttl").write_bytes(lift(case))
        print(f"wrote {case.name}/expected.ttl")
