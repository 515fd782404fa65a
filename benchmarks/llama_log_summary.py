"""The model's own timings of a run of chat completions, from a llama.cpp server's log.

llama-cpp-python's server prints, for every completion, ``llama_perf_context_print`` lines: the
prompt tokens it evaluated (those not already in its cache from the previous prompt) and their
milliseconds, the tokens it generated and theirs, and the total. Those of the completions numbered
FIRST to LAST (from 1, in the order of the log) are summarised: medians and sums, seconds per
completion. The wall clock of a run that was paused (SIGSTOP) is not the model's time; these are
what the model itself spent, except for a pause in the middle of a completion, which the medians
are robust to.

    python benchmarks/llama_log_summary.py LOG FIRST LAST OUT.json
"""

from __future__ import annotations

import json
import re
import statistics
import sys
from pathlib import Path

PERF = re.compile(r"llama_perf_context_print:\s+(prompt eval|eval|total) time =\s+([\d.]+) ms /\s+(\d+) (tokens|runs)")


def completions(text: str) -> list[dict[str, float]]:
    """Per completion in the log: prompt tokens evaluated and ms, generated tokens and ms, total ms."""
    out: list[dict[str, float]] = []
    current: dict[str, float] = {}
    for match in PERF.finditer(text):
        what, ms, count = match.group(1), float(match.group(2)), int(match.group(3))
        if what == "prompt eval":
            current = {"prompt_tokens": count, "prompt_ms": ms}
        elif what == "eval":
            current.update(generated_tokens=count, generated_ms=ms)
        else:
            current["total_ms"] = ms
            out.append(current)
            current = {}
    return out


def summary(calls: list[dict[str, float]]) -> dict[str, float | int]:
    out: dict[str, float | int] = {"completions": len(calls)}
    for key in ("prompt_tokens", "generated_tokens", "total_ms"):
        values = [c.get(key, 0.0) for c in calls]
        out[f"{key}_median"] = round(statistics.median(values), 1) if values else 0.0
        out[f"{key}_sum"] = round(sum(values), 1)
    generated = sum(c.get("generated_ms", 0.0) for c in calls)
    out["generated_tokens_per_second"] = (
        round(out["generated_tokens_sum"] / (generated / 1000), 2) if generated else 0.0
    )
    out["seconds_per_completion_median"] = round(float(out["total_ms_median"]) / 1000, 2)
    out["model_seconds_sum"] = round(float(out["total_ms_sum"]) / 1000, 1)
    return out


def main(log: str, first: str, last: str, out: str) -> None:
    calls = completions(Path(log).read_text(encoding="utf-8", errors="replace"))[int(first) - 1 : int(last)]
    result = {"first": int(first), "last": int(last), **summary(calls)}
    Path(out).write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(result))


if __name__ == "__main__":
    main(*sys.argv[1:5])
