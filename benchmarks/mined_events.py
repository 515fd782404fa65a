"""Recordings of the manual agent runs, cut into one case per task, for ``kg build --events``.

``kg serve`` records one file per run (``benchmarks/results/manual-agent/run-N/CONDITION/recording.jsonl``):
24 tasks one after the other, so the directly-follows relation of its writes links the last write of
one task to the first of the next. The driver's event log of the same run (``events.jsonl``) names
the task of each call it sent (``tool`` ``call`` with the tools, ``http`` without them); this writes
those calls as a recording whose lines carry ``"case": "run-N/CONDITION/TASK"`` (sources/events.py
reads one case per value), keeping the calls that reached the server (``sent``, or an ``http``
call) with their status.

    python benchmarks/mined_events.py benchmarks/results/manual-agent OUT.jsonl
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def calls(events: Path, case_prefix: str) -> list[dict[str, object]]:
    out: list[dict[str, object]] = []
    for line in events.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        e = json.loads(line)
        if e.get("command") == "tool" and e.get("tool") == "call" and e.get("sent"):
            method, url = e["arguments"]["method"], e["arguments"]["url"]
        elif e.get("command") == "http" and e.get("call"):
            method, url = e["method"], e["path"]
        else:
            continue
        out.append(
            {
                "id": f"c{len(out) + 1}",
                "method": method,
                "url": url,
                "status": e.get("status"),
                "case": f"{case_prefix}/{e['task']}",
            }
        )
    return out


def main(root: Path, out: Path) -> None:
    lines = []
    for events in sorted(root.glob("run-*/*/events.jsonl")):
        prefix = f"{events.parent.parent.name}/{events.parent.name}"
        lines += [json.dumps(c, ensure_ascii=False) for c in calls(events, prefix)]
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"wrote {len(lines)} calls to {out}")


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
