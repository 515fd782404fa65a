"""``kg eval agent``: the agent evaluation of the paper (§5), every task under every condition.

Each (condition, task, run) is one ReAct run (:class:`processkg.agent.loop.Agent`) with the
condition's tools, against one OData server for the whole evaluation: the in-process ``kg serve``
of the store, or ``--odata-url``. The server is reset (``POST /$reset``) before every run, so each
run starts from the same records; writes are allowed only for tasks that write. After the run the
task's goal is checked against the server and the answer (the ``check`` given, ``check_goal`` of
:mod:`processkg.evaluate.tasks`), before the next reset.

``OUT/runs/CONDITION/TASK/run-N/`` holds ``trace.jsonl``, ``calls.jsonl`` (the calls the client
sent, in ``kg validate``'s input format) and ``result.json`` (the run's verdict and metrics), written
last: a run with a ``result.json`` is finished and a rerun skips it (real models take hours); a run
that ended in an endpoint error is run again. ``OUT/results.json``, ``OUT/report.md`` and
``OUT/plot.png`` aggregate the runs of the invocation.

Invalid calls are counted the same way under every condition: each ``call`` the agent made (read
from the trace, whether ``call`` sent it or refused it, as under ``typed``) is validated by
``kg validate``'s engine, and so is the recording of what was sent. Violations are sorted into the
four kinds of invention of the paper with :data:`INVENTED` (keys: a key predicate ``kg validate``
rejects, or a valid call for a key the server does not find, 404).
"""

from __future__ import annotations

import json
import os
import re
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from itertools import combinations
from pathlib import Path
from statistics import mean
from typing import Protocol, TypeVar
from urllib.parse import urljoin, urlsplit

import httpx

from processkg.agent.conditions import CONDITIONS, Tools, condition_tools
from processkg.agent.loop import Agent, RunResult, Trace
from processkg.aliases import JSONObject, JSONValue
from processkg.errors import AgentEvalError, ProcessKGError
from processkg.graph.handle import StoreHandle
from processkg.openai_chat import ChatClient, ChatSettings
from processkg.tools.local_server import LocalServer
from processkg.tools.odata_client import ODataClient
from processkg.tools.toolbox import Toolbox
from processkg.validate.calls import CallResult, Validator, read_calls

TRACE, RECORDING, RESULT, SETTINGS = "trace.jsonl", "calls.jsonl", "result.json", "settings.json"
#: Violation kinds of ``kg validate`` per kind of invention; a violation at ``/key`` is a key.
INVENTED = {
    "entity_sets": ("unknown-service", "unknown-entity-set", "unknown-operation"),
    "properties": ("unknown-property", "unknown-navigation", "unknown-parameter"),
    "keys": (),
    "codes": ("invalid-code",),
}
#: The paper's figures (qwen3-coder:30b), printed beside ours.
PAPER = {"typed": 0.387, "chunkrag": 0.103, "invalid_runs_typed": "3 of 101"}
SAME_SETTINGS = ("model", "max_steps", "temperature", "retrieve_first")  # an OUT folder holds runs of one setting
#: How a goal is judged, for the report; the task file's own README says how its goals were made.
GOLD = (
    "Each task's goal is checked by `processkg.evaluate.tasks.check_goal` after the run and before the next "
    "reset: a read task's expected values must occur in the final answer (whole tokens, numbers by value), "
    "a write task's records must exist on the server (the OData query is filtered again on the client). "
    "The goals come from the task file, not from this run; for the bundled tasks, "
    "`data/sap/tasks/README.md` says how they were made (expected values taken from the reference calls' "
    "answers on `kg serve`'s generated records) and where they are weak (generated master data; related "
    "documents share a number, so an agent that guesses the number finds the record)."
)
SAFE_ID = re.compile(r"[A-Za-z0-9._-]{1,100}")  # a task id is a folder name
GIVE_UP = 5  # consecutive endpoint errors after which the evaluation stops (1 before any run worked)


class EvalTask(Protocol):
    """What the evaluation reads of a task (:class:`processkg.evaluate.tasks.Task`)."""

    @property
    def id(self) -> str: ...
    @property
    def kind(self) -> str: ...
    @property
    def task(self) -> str: ...
    @property
    def writes(self) -> bool: ...


class Verdict(Protocol):
    """A goal check's answer (:class:`processkg.evaluate.tasks.GoalResult`)."""

    @property
    def met(self) -> bool: ...
    @property
    def reason(self) -> str: ...


T = TypeVar("T", bound=EvalTask)


@dataclass(frozen=True)
class EvalSettings:
    store: StoreHandle
    chat: ChatSettings
    out: Path
    conditions: tuple[str, ...] = CONDITIONS
    runs: int = 1
    max_steps: int = 15
    odata_url: str | None = None  # None: the in-process kg serve of the store
    odata: tuple[Path, ...] = ()  # metadata files, for the chunk conditions
    command: str = ""
    retrieve_first: bool = False  # step 0 of every run: the condition's retrieval tool on the task

    def described(self) -> JSONObject:
        return {
            "model": self.chat.model,
            "llm_url": self.chat.url,
            "temperature": self.chat.temperature,
            "max_steps": self.max_steps,
            "retrieve_first": self.retrieve_first,
            "conditions": list(self.conditions),
            "runs": self.runs,
            "store": str(self.store),
            "odata_url": self.odata_url or "in-process kg serve",
            "command": self.command,
        }


@dataclass(frozen=True)
class Failed:
    """The verdict of a goal check that could not run."""

    met: bool
    reason: str


def run_folder(out: Path, condition: str, task_id: str, run: int) -> Path:
    if not SAFE_ID.fullmatch(task_id) or set(task_id) == {"."}:
        raise AgentEvalError(f"task id {task_id!r} cannot name a folder (letters, digits, '.', '_', '-' only)")
    return Path(out) / "runs" / condition / task_id / f"run-{run}"


def finished(folder: Path) -> JSONObject | None:
    """The run's result, if it finished (an endpoint error is not finished: it runs again)."""
    path = folder / RESULT
    if not path.is_file():
        return None
    result: JSONObject = json.loads(path.read_text(encoding="utf-8"))
    return None if result.get("status") == "llm-error" else result


def evaluate_agent(
    tasks: list[T],
    check: Callable[[T, ODataClient, str], Verdict],
    settings: EvalSettings,
    progress: Callable[[str], None] | None = None,
    warn: Callable[[str], None] | None = None,
) -> JSONObject:
    """Run every (condition, task, run) not finished yet in ``settings.out``; the aggregated results.
    ``progress`` is called after each run, ``warn`` when the server cannot be reset between runs."""
    plan = [(c, t, n) for c in settings.conditions for t in tasks for n in range(1, settings.runs + 1)]
    runs: list[JSONObject] = []
    todo = [(c, t, n) for c, t, n in plan if finished(run_folder(settings.out, c, t.id, n)) is None]
    with ExitStack() as stack:
        runner = stack.enter_context(Runner.opened(settings)) if todo else None
        check_settings(settings)
        if runner is not None and not runner.resets and warn is not None:
            warn(
                f"{runner.base_url} does not answer POST /$reset: the writes of one run stay for the next, "
                "and the results depend on the order of the runs"
            )
        failures, worked = 0, False
        for condition, task, n in plan:
            folder = run_folder(settings.out, condition, task.id, n)
            result = finished(folder)
            if result is None and runner is not None:
                result = runner.run(condition, task, n, check)
                failures = failures + 1 if result["status"] == "llm-error" else 0
                worked = worked or failures == 0
                if failures >= (GIVE_UP if worked else 1):
                    raise AgentEvalError(
                        f"the chat endpoint {settings.chat.url} failed ({result['error']}); the finished runs stay "
                        f"in {settings.out}, and the same command resumes"
                    )
            if result is not None:
                runs.append(result)
            if progress is not None:
                progress(f"{condition}/{task.id}/run-{n}")
    return aggregate(runs, settings)


def check_settings(settings: EvalSettings) -> None:
    """OUT holds runs of one model and setting; it is made here, with the settings of its runs."""
    out = Path(settings.out)
    path = out / SETTINGS
    wanted = settings.described()
    if path.is_file():
        kept = json.loads(path.read_text(encoding="utf-8"))
        kept.setdefault("retrieve_first", False)  # folders written before the option kept no such setting
        differ = [k for k in SAME_SETTINGS if kept.get(k) != wanted[k]]
        if differ:
            raise AgentEvalError(
                f"{out} holds runs with another {', '.join(differ)} ({', '.join(str(kept.get(k)) for k in differ)}); "
                "give another --out"
            )
        return
    out.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({k: wanted[k] for k in SAME_SETTINGS}, indent=2) + "\n", encoding="utf-8")


class Runner:
    """The evaluation's server, toolbox, chat client and the tools of each condition."""

    def __init__(self, settings: EvalSettings, base_url: str, toolbox: Toolbox, chat: ChatClient) -> None:
        self.settings, self.base_url, self.toolbox, self.chat = settings, base_url, toolbox, chat
        # built once: the chunk conditions load the index and the metadata texts (a missing --odata fails here)
        self.tools = {c: condition_tools(c, toolbox, list(settings.odata)) for c in settings.conditions}
        toolbox.retriever.embed(["warm up"])  # the embedding model loads now, not in the first run's seconds
        self.resets = reset(base_url)

    @classmethod
    @contextmanager
    def opened(cls, settings: EvalSettings) -> Iterator[Runner]:
        with ExitStack() as stack:
            toolbox = Toolbox(settings.store)
            stack.callback(toolbox.close)
            if settings.odata_url is None:
                base_url = stack.enter_context(LocalServer(settings.store, allow_reset=True)).url
            else:
                base_url = settings.odata_url
            chat = ChatClient(settings.chat)
            stack.callback(chat.close)
            yield cls(settings, base_url, toolbox, chat)

    def run(self, condition: str, task: T, n: int, check: Callable[[T, ODataClient, str], Verdict]) -> JSONObject:
        """One run from a reset server: trace, recording, goal check, metrics in ``result.json``."""
        folder = run_folder(self.settings.out, condition, task.id, n)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / RECORDING).unlink(missing_ok=True)
        if self.resets:
            reset(self.base_url)
        client = ODataClient(self.base_url, timeout=self.settings.chat.timeout, record=folder / RECORDING)
        self.toolbox.client, self.toolbox.allow_writes = client, task.writes
        tools = Tools(condition, self.toolbox, self.tools[condition].chunks)  # sets validate-before-send
        try:
            with Trace(folder / TRACE) as trace:
                agent = Agent(self.chat, tools, trace, self.settings.max_steps, self.settings.retrieve_first)
                outcome = agent.run(task.task, condition)
        finally:
            client.close()
            self.toolbox.client = None
        verdict = self.goal(task, outcome, check)
        result = {
            "condition": condition,
            "task": task.id,
            "kind": task.kind,
            "run": n,
            "writes": task.writes,
            "met": verdict.met,
            "reason": verdict.reason,
            **outcome.as_dict(),
            **call_metrics(folder, self.toolbox.validator, self.base_url),
        }
        write_json(folder / RESULT, result)
        return result

    def goal(self, task: T, outcome: RunResult, check: Callable[[T, ODataClient, str], Verdict]) -> Verdict:
        if outcome.status == "llm-error":
            return Failed(False, f"the chat endpoint failed: {outcome.error}")
        client = ODataClient(self.base_url, timeout=self.settings.chat.timeout)
        try:
            return check(task, client, outcome.answer)
        except ProcessKGError as exc:
            return Failed(False, f"the goal check failed: {exc}")
        finally:
            client.close()


def reset(base_url: str) -> bool:
    """``POST /$reset`` at the server's root, with the CSRF token a GET of ``base_url`` gives (kg serve
    treats it as any other change); False when the server does not answer it with success."""
    parts = urlsplit(base_url)
    try:
        token = httpx.get(base_url, headers={"x-csrf-token": "Fetch"}, timeout=30).headers.get("x-csrf-token")
        headers = {"x-csrf-token": token} if token else {}
        answer = httpx.post(f"{parts.scheme}://{parts.netloc}/$reset", headers=headers, timeout=30)
    except httpx.HTTPError:
        return False
    return answer.status_code < 300


def write_json(path: Path, value: JSONValue) -> None:
    """Written whole or not at all (a killed evaluation leaves no half ``result.json``)."""
    part = path.with_name(path.name + ".part")
    part.write_text(json.dumps(value, indent=2, ensure_ascii=False, default=str) + "\n", encoding="utf-8")
    os.replace(part, path)


# ---------------------------------------------------------------- one run's calls


def attempted_calls(trace: Path, base_url: str) -> list[tuple[JSONObject, int | None]]:
    """Every ``call`` the agent made, as ``kg validate`` reads it, with the status it got (None: not sent)."""
    out: list[tuple[JSONObject, int | None]] = []
    for line in trace.read_text(encoding="utf-8").splitlines():
        event = json.loads(line)
        if event.get("event") != "tool" or event.get("name") != "call":
            continue
        arguments = event.get("arguments")
        arguments = arguments if isinstance(arguments, dict) else {}
        answer = event.get("answer") if isinstance(event.get("answer"), dict) else {}
        out.append((as_call(arguments, base_url), answer.get("status") if answer.get("sent") else None))
    return out


def as_call(arguments: JSONObject, base_url: str) -> JSONObject:
    method, url = arguments.get("method"), arguments.get("url")
    call: JSONObject = {
        "method": method.strip().upper() if isinstance(method, str) else method,
        "url": urljoin(base_url, url) if isinstance(url, str) else url,
    }
    if arguments.get("body") is not None and call["method"] != "GET":
        call["body"] = arguments["body"]
    return call


def call_metrics(folder: Path, validator: Validator, base_url: str) -> JSONObject:
    """Calls made, invalid (with their violation kinds and inventions), sent and recorded, of one run."""
    made = attempted_calls(folder / TRACE, base_url)
    verdicts = validator.validate_calls([call for call, _status in made]) if made else []
    kinds = Counter(v.kind for r in verdicts for v in r.violations)
    invented = inventions(verdicts)
    invented["keys"] += sum(1 for r, (_c, status) in zip(verdicts, made) if r.valid and status == 404)
    recorded = recorded_verdicts(folder / RECORDING, validator)
    return {
        "calls": len(made),
        "sent": sum(1 for _c, status in made if status is not None),
        "invalid_calls": sum(1 for r in verdicts if not r.valid),
        "violations": dict(sorted(kinds.items())),
        "invented": invented,
        "recorded_calls": len(recorded),
        "recorded_invalid": sum(1 for r in recorded if not r.valid),
    }


def inventions(verdicts: list[CallResult]) -> dict[str, int]:
    counts = dict.fromkeys(INVENTED, 0)
    for verdict in verdicts:
        for v in verdict.violations:
            name = "keys" if v.path.startswith("/key") else next((k for k, ks in INVENTED.items() if v.kind in ks), "")
            if name:
                counts[name] += 1
    return counts


def recorded_verdicts(path: Path, validator: Validator) -> list[CallResult]:
    """``kg validate`` of the run's recording (none when nothing was sent)."""
    if not path.is_file() or not path.read_text(encoding="utf-8").strip():
        return []
    return validator.validate_calls(list(read_calls(path)))


# ---------------------------------------------------------------- aggregation


def aggregate(runs: list[JSONObject], settings: EvalSettings) -> JSONObject:
    """Per condition, per task kind, and the paired tests between conditions."""
    scored = [r for r in runs if r["status"] != "llm-error"]
    conditions = [c for c in settings.conditions if any(r["condition"] == c for r in runs)]
    return {
        "settings": settings.described(),
        "tasks": len({r["task"] for r in runs}),
        "conditions": {c: condition_summary([r for r in runs if r["condition"] == c]) for c in conditions},
        "kinds": kind_summary(scored, conditions),
        "mcnemar": [mcnemar(scored, a, b) for a, b in combinations(conditions, 2)],
        "paper": PAPER,
        "runs": runs,
    }


def condition_summary(runs: list[JSONObject]) -> JSONObject:
    scored = [r for r in runs if r["status"] != "llm-error"]
    calls = sum(r["calls"] for r in scored)
    invalid = sum(r["invalid_calls"] for r in scored)
    return {
        "runs": len(scored),
        "completed": sum(1 for r in scored if r["met"]),
        "completion_rate": _rate(sum(1 for r in scored if r["met"]), len(scored)),
        "statuses": dict(sorted(Counter(r["status"] for r in runs).items())),
        "calls": calls,
        "invalid_calls": invalid,
        "invalid_call_rate": _rate(invalid, calls),
        "runs_with_invalid": sum(1 for r in scored if r["invalid_calls"]),
        "invented": {k: sum(r["invented"][k] for r in scored) for k in INVENTED},
        "runs_inventing": {k: sum(1 for r in scored if r["invented"][k]) for k in INVENTED},
        "recorded_calls": sum(r["recorded_calls"] for r in scored),
        "recorded_invalid": sum(r["recorded_invalid"] for r in scored),
        "per_task": {
            "calls": _mean(scored, "calls"),
            "steps": _mean(scored, "steps"),
            "prompt_tokens": _mean(scored, "prompt_tokens"),
            "completion_tokens": _mean(scored, "completion_tokens"),
            "seconds": _mean(scored, "seconds"),
        },
    }


def kind_summary(runs: list[JSONObject], conditions: list[str]) -> JSONObject:
    kinds = list(dict.fromkeys(r["kind"] for r in runs))
    out: JSONObject = {}
    for kind in kinds:
        out[kind] = {}
        for c in conditions:
            group = [r for r in runs if r["kind"] == kind and r["condition"] == c]
            calls, invalid = sum(r["calls"] for r in group), sum(r["invalid_calls"] for r in group)
            met = sum(1 for r in group if r["met"])
            out[kind][c] = {"runs": len(group), "completed": met, "completion_rate": _rate(met, len(group))}
            out[kind][c]["invalid_call_rate"] = _rate(invalid, calls)
    return out


def mcnemar(runs: list[JSONObject], a: str, b: str) -> JSONObject:
    """Exact McNemar test of completion, paired by (task, run): a binomial test on the discordant pairs."""
    from scipy.stats import binomtest

    met = {(r["condition"], r["task"], r["run"]): bool(r["met"]) for r in runs}
    pairs = [(met[(a, t, n)], met[(b, t, n)]) for (c, t, n) in met if c == a and (b, t, n) in met]
    a_only = sum(1 for x, y in pairs if x and not y)
    b_only = sum(1 for x, y in pairs if y and not x)
    p = 1.0 if a_only + b_only == 0 else float(binomtest(a_only, a_only + b_only, 0.5).pvalue)
    return {
        "a": a,
        "b": b,
        "pairs": len(pairs),
        "both": sum(1 for x, y in pairs if x and y),
        "a_only": a_only,
        "b_only": b_only,
        "neither": sum(1 for x, y in pairs if not x and not y),
        "p": round(p, 6),
    }


def _rate(count: int, total: int) -> float:
    return round(count / total, 4) if total else 0.0


def _mean(runs: list[JSONObject], key: str) -> float:
    return round(mean(r[key] for r in runs), 3) if runs else 0.0


# ---------------------------------------------------------------- outputs


def render_report(results: JSONObject, gold: str = "") -> str:
    """report.md: the settings, a table per condition and per task kind, the paired tests, the gold."""
    s = results["settings"]
    lines = [
        "# Agent evaluation",
        "",
        f"Model `{s['model']}` at {s['llm_url']}, temperature {s['temperature']}, at most {s['max_steps']} steps; "
        f"{results['tasks']} tasks, {s['runs']} run(s) each, OData server: {s['odata_url']}.",
    ]
    if s["command"]:
        lines += ["", f"    {s['command']}"]
    conditions = results["conditions"]
    lines += ["", "## Per condition", "", *condition_table(conditions)]
    lines += [
        "",
        "## Invented (kg validate's violations in the calls made; keys also: a key the server does not find)",
        "",
        *invented_table(conditions),
    ]
    lines += ["", "## Per task (means)", "", *cost_table(conditions)]
    lines += ["", "## Per task kind (completion rate, invalid-call rate)", "", *kind_table(results)]
    lines += ["", "## Paired McNemar tests of completion", "", *mcnemar_table(results["mcnemar"])]
    lines += ["", "## The paper's figures", "", paper_line(results["paper"])]
    if gold:
        lines += ["", "## How the gold was made", "", gold]
    return "\n".join(lines) + "\n"


def condition_table(conditions: JSONObject) -> list[str]:
    lines = [
        "| condition | runs | completed | completion rate | invalid calls | invalid-call rate | runs with an invalid "
        "call | sent calls invalid (recording) | endpoint errors |",
        "|---" * 9 + "|",
    ]
    for name, c in conditions.items():
        lines.append(
            f"| {name} | {c['runs']} | {c['completed']} | {c['completion_rate']:.3f} | {c['invalid_calls']} of "
            f"{c['calls']} | {c['invalid_call_rate']:.3f} | {c['runs_with_invalid']} | {c['recorded_invalid']} of "
            f"{c['recorded_calls']} | {c['statuses'].get('llm-error', 0)} |"
        )
    return lines


def invented_table(conditions: JSONObject) -> list[str]:
    lines = ["| condition | " + " | ".join(k.replace("_", " ") for k in INVENTED) + " |", "|---" * 5 + "|"]
    for name, c in conditions.items():
        cells = [f"{c['invented'][k]} ({c['runs_inventing'][k]} runs)" for k in INVENTED]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return lines


def cost_table(conditions: JSONObject) -> list[str]:
    lines = ["| condition | calls | steps | prompt tokens | completion tokens | seconds |", "|---" * 6 + "|"]
    for name, c in conditions.items():
        per = c["per_task"]
        lines.append(
            f"| {name} | {per['calls']:.1f} | {per['steps']:.1f} | {per['prompt_tokens']:.0f} | "
            f"{per['completion_tokens']:.0f} | {per['seconds']:.1f} |"
        )
    return lines


def kind_table(results: JSONObject) -> list[str]:
    conditions = list(results["conditions"])
    lines = ["| kind | runs | " + " | ".join(conditions) + " |", "|---" * (len(conditions) + 2) + "|"]
    for kind, by_condition in results["kinds"].items():
        n = max((c["runs"] for c in by_condition.values()), default=0)
        cells = [f"{c['completion_rate']:.3f}, {c['invalid_call_rate']:.3f}" for c in by_condition.values()]
        lines.append(f"| {kind} | {n} | " + " | ".join(cells) + " |")
    return lines


def mcnemar_table(tests: list[JSONObject]) -> list[str]:
    if not tests:
        return ["(one condition: nothing to compare)"]
    lines = ["| A | B | pairs | both | A only | B only | neither | exact p |", "|---" * 8 + "|"]
    for t in tests:
        lines.append(
            f"| {t['a']} | {t['b']} | {t['pairs']} | {t['both']} | {t['a_only']} | {t['b_only']} | "
            f"{t['neither']} | {t['p']:.4g} |"
        )
    return lines


def paper_line(paper: JSONObject) -> str:
    return (
        f"The paper (qwen3-coder:30b): task completion {paper['typed']} with typed context vs {paper['chunkrag']} "
        f"with chunk RAG; invalid calls in {paper['invalid_runs_typed']} runs with typed context; invented codes "
        "gone once the code lists are given (chunkrag-vh)."
    )


def plot(results: JSONObject, path: Path) -> Path | None:
    """plot.png: completion and invalid-call rate per condition; None when matplotlib is not installed."""
    try:
        import matplotlib
    except ImportError:
        return None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(results["conditions"])
    series = [("completion", "completion_rate"), ("invalid-call rate", "invalid_call_rate")]
    fig, ax = plt.subplots(figsize=(6, 4), dpi=100)
    width = 0.38
    for i, (label, key) in enumerate(series):
        xs = [j + (i - 0.5) * width for j in range(len(names))]
        ax.bar(xs, [results["conditions"][n][key] for n in names], width, label=label)
    ax.set_xticks(range(len(names)), names)
    ax.set(ylim=(0, 1.02), ylabel="rate", title=f"{results['settings']['model']}: {results['tasks']} tasks")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3, axis="y")
    fig.tight_layout()
    fig.savefig(path, metadata={"Software": None})
    plt.close(fig)
    return path


def write_outputs(results: JSONObject, out: Path, gold: str = GOLD) -> list[Path]:
    """results.json, report.md and (with matplotlib) plot.png in ``out``."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    write_json(out / "results.json", results)
    (out / "report.md").write_text(render_report(results, gold), encoding="utf-8")
    drawn = plot(results, out / "plot.png")
    return [out / "results.json", out / "report.md", *([drawn] if drawn else [])]


__all__ = [
    "INVENTED",
    "PAPER",
    "EvalSettings",
    "EvalTask",
    "Verdict",
    "aggregate",
    "evaluate_agent",
    "render_report",
    "run_folder",
    "write_outputs",
]
