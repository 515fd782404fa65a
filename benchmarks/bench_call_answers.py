"""Replay the tool calls of manual-agent sessions against kg serve and count the characters of each
answer: what the tools' answers cost the driver, for the code imported (run it on the code before a
change and after it, with ``--label``, into one ``--out``).

    python benchmarks/bench_call_answers.py --store build/tasks \
        --run benchmarks/results/manual-agent/run-2 --run benchmarks/results/manual-agent/run-3 \
        --out benchmarks/results/call_answers.json --label after

Every ``tool`` event of each run's tools session (``RUN/tools/events.jsonl``: the tool, its arguments and
the characters the driver read) is sent again, in order, through a writing toolbox to an in-process
``kg serve`` of the store, reset (``POST /$reset``) at each task's start as the harness does. The answer's
characters are those ``kg mcp`` prints (the text of its tool result); the tool list's are counted as
``manual_agent.py tools`` prints it. Each run's total is set against what its raw session read
(``RUN/results.json``), the figure issue 22's goal halves. The store is the tasks' store (tests/conftest.py's ``tasks_store``; ``kg build --odata
../shared/data/odata/s4-a2x --bpmn data/sap/processes --mapping data/sap/mapping.yaml --codes data/sap/codes
--code-bindings data/sap/codes/bindings.yaml --required data/sap/required --index``), as in the run.
"""

from __future__ import annotations

import argparse
import json
import subprocess
from collections import Counter
from pathlib import Path

import processkg
from processkg.evaluate.agents import reset
from processkg.graph.handle import StoreHandle
from processkg.tools.local_server import LocalServer
from processkg.tools.mcp_server import _tool_result
from processkg.tools.odata_client import ODataClient
from processkg.tools.toolbox import Toolbox


def tool_list_chars(box: Toolbox) -> int:
    """The characters ``manual_agent.py tools`` prints for the tool list (description and input schema)."""
    parts = [
        f"## {spec.name}\n{spec.description}\narguments (JSON schema): {json.dumps(spec.input_schema)}\n"
        for spec in box.specs
    ]
    return len("\n".join(parts))


def replay(box: Toolbox, base_url: str, events: list[dict]) -> list[dict]:
    """Each tool event sent again: tool, task, the characters logged and those of the answer now."""
    out: list[dict] = []
    task = None
    for event in events:
        if event["command"] == "task" and event["task"] != task:
            task = event["task"]
            if not reset(base_url):
                raise SystemExit(f"kg serve could not be reset before {task}")
        if event["command"] != "tool":
            continue
        answer, is_error = box.run(event["tool"], event["arguments"])
        entry = {"task": task, "tool": event["tool"], "logged": event["chars"]}
        entry["chars"] = sum(len(getattr(c, "text", "")) for c in _tool_result(answer, is_error).content)
        if event["tool"] == "call":
            entry["status"] = answer.get("status")
            entry["select"] = "select" in event["arguments"]
        entry["is_error"] = is_error
        out.append(entry)
    return out


def listed_logged(events: list[dict]) -> int:
    """The characters of the tool list the session printed (its ``tools`` events)."""
    return sum(e["chars"] for e in events if e["command"] == "tools")


def commit() -> str:
    src = Path(processkg.__path__[0]).parent
    head = subprocess.run(["git", "-C", str(src), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    dirty = subprocess.run(["git", "-C", str(src), "status", "--porcelain", "--", "."], capture_output=True, text=True)
    return head.stdout.strip() + ("-dirty" if dirty.stdout.strip() else "")


def raw_read(run: Path) -> int:
    """The characters the run's raw session read (``results.json``)."""
    sessions = json.loads((run / "results.json").read_text(encoding="utf-8"))["sessions"]
    return next(int(s["totals"]["chars"]) for s in sessions if s["condition"] == "raw")


def measure(store: Path, run: Path) -> dict:
    """The replay of one run's tools session: characters by tool, the tool list, the total against raw."""
    events_path = run / "tools" / "events.jsonl"
    events = [json.loads(line) for line in events_path.read_text(encoding="utf-8").splitlines() if line.strip()]
    with LocalServer(StoreHandle.open(store), allow_reset=True) as server:
        box = Toolbox(StoreHandle.open(store), ODataClient(server.url), allow_writes=True)
        try:
            calls = replay(box, server.url, events)
            listed = tool_list_chars(box)
        finally:
            box.close()
    chars, logged, count = Counter(), Counter(), Counter()
    for entry in calls:
        chars[entry["tool"]] += entry["chars"]
        logged[entry["tool"]] += entry["logged"]
        count[entry["tool"]] += 1
    read, raw = sum(chars.values()) + listed, raw_read(run)  # read: as manual_agent.py report counts it
    return {
        "events": events_path.as_posix(),
        "by_tool": {t: {"calls": count[t], "chars": chars[t], "logged": logged[t]} for t in sorted(count)},
        "call_without_select": sum(e["chars"] for e in calls if e["tool"] == "call" and not e["select"]),
        "tool_list": listed,
        "read": read,
        "read_logged": sum(logged.values()) + listed_logged(events),
        "raw_read": raw,
        "share_of_raw": round(read / raw, 3),
        "calls": calls,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--store", type=Path, required=True)
    parser.add_argument("--run", type=Path, action="append", required=True, help="a manual-agent run's folder")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--label", default="after")
    parser.add_argument("--commit", help="the commit measured, when the code imported is no git checkout")
    args = parser.parse_args()
    report = {"commit": args.commit or commit(), "runs": {run.name: measure(args.store, run) for run in args.run}}
    runs = json.loads(args.out.read_text(encoding="utf-8")) if args.out.exists() else {}
    runs[args.label] = report
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(runs, indent=1) + "\n", encoding="utf-8")
    summary = {name: {k: v for k, v in run.items() if k != "calls"} for name, run in report["runs"].items()}
    print(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
