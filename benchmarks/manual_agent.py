"""A harness for a model that drives the agent tools by hand (issue 22, "Measured").

A driver (an LLM session given only an instruction sheet, ``benchmarks/manual_agent/tools.md`` or
``raw.md``) works through the tasks of ``benchmarks/manual_agent_tasks.txt`` with this command, in
one of two conditions:

* ``tools``: the five tools of ``kg mcp`` (``tool NAME 'JSON'``, ``tools`` to list them), through the
  official MCP SDK's client over streamable HTTP to one persistent ``kg mcp --allow-writes``, whose
  ``call`` sends to the session's ``kg serve``;
* ``raw``: HTTP to the same ``kg serve`` (``http METHOD PATH``, ``services`` for the root page) and
  its ``$metadata``; CSRF tokens and ETags are the driver's business.

The driver sees exactly what this script prints, and every character printed by ``tool``, ``tools``,
``http`` and ``services`` is counted (``events.jsonl`` of the session). ``task ID`` resets the server
and prints only the task's instruction; ``answer``/``give-up`` end it. The goal is checked at once
(``check_goal`` of :mod:`processkg.evaluate.tasks`) and kept in the session folder, never printed.
``kg serve`` records every call that reaches it with its status, so ``report`` counts per task the
calls that reached the server, those it rejected (status >= 400), and those ``kg validate`` finds
invalid, from the recording lines written between the task's start and its end.

Sub-commands (state in ``--session DIR`` or ``$MANUAL_AGENT_SESSION``):

  start --condition tools|raw --store STORE [--tasks FILE] [--select FILE] [--port P] [--mcp-port P2]
  stop
  task ID | answer 'TEXT' | give-up 'WHY'
  tools | tool NAME 'JSON-ARGS'                        (condition tools)
  services | http METHOD PATH [--body JSON] [--header 'K: V']... [--grep RE] [--lines A-B]
      [--pretty] [--max-chars N] [--all-headers]       (condition raw)
  report --out DIR [SESSION ...]                        (one session, or two side by side)
  select [--tasks FILE]                                 (prints the task selection by its rule)
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
TASKS = ROOT / "data" / "sap" / "tasks" / "tasks.jsonl"
SELECTION = HERE / "manual_agent_tasks.txt"
KINDS = ("lookup", "process-read", "single-write", "deep-write")
PER_KIND = 6
BUDGET = 15  # tool or HTTP calls per task
SHOWN_HEADERS = ("content-type", "etag", "x-csrf-token", "location")
CONDITIONS = ("tools", "raw")
ENV = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
KG = [sys.executable, "-c", "from processkg.cli import main; main()"]
READ = ("tool", "tools", "http", "services")  # the commands whose output is the driver's reading


class Refused(Exception):
    """A command the harness does not run; its one-line message is printed (and counted when read)."""


# ---------------------------------------------------------------- session files


class Session:
    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.config_path = folder / "session.json"
        self.state_path = folder / "state.json"
        self.events_path = folder / "events.jsonl"
        self.verdicts_path = folder / "verdicts.jsonl"
        self.recording = folder / "calls.jsonl"

    @property
    def config(self) -> dict[str, Any]:
        if not self.config_path.is_file():
            raise Refused(f"no session in {self.folder}: run start first")
        return json.loads(self.config_path.read_text(encoding="utf-8"))

    @property
    def state(self) -> dict[str, Any]:
        if not self.state_path.is_file():
            return {"current": None, "done": []}
        return json.loads(self.state_path.read_text(encoding="utf-8"))

    def save_state(self, state: dict[str, Any]) -> None:
        part = self.state_path.with_name("state.json.part")
        part.write_text(json.dumps(state, indent=1) + "\n", encoding="utf-8")
        os.replace(part, self.state_path)

    def append(self, path: Path, record: dict[str, Any]) -> None:
        with path.open("a", encoding="utf-8") as out:
            out.write(json.dumps(record, ensure_ascii=False) + "\n")

    def events(self) -> list[dict[str, Any]]:
        return _lines(self.events_path)

    def verdicts(self) -> list[dict[str, Any]]:
        return _lines(self.verdicts_path)

    def recorded(self) -> int:
        """Lines of the server's recording so far (each line is one call that reached kg serve)."""
        if not self.recording.is_file():
            return 0
        with self.recording.open("rb") as f:
            return sum(1 for line in f if line.strip())

    def emit(self, command: str, text: str, **fields: Any) -> None:
        """Print ``text`` to the driver and log how many characters it was (with the command's details)."""
        if not text.endswith("\n"):
            text += "\n"
        sys.stdout.write(text)
        sys.stdout.flush()
        state = self.state if self.state_path.is_file() else {"current": None}
        self.append(
            self.events_path,
            {
                "t": round(time.time(), 3),
                "task": state.get("current"),
                "command": command,
                "chars": len(text),
                **fields,
            },
        )


def _lines(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


# ---------------------------------------------------------------- tasks


def load_selection(path: Path) -> list[str]:
    ids = []
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            ids.append(line)
    return ids


def select_tasks(tasks_path: Path, batch: int = 1) -> list[str]:
    """The rule of ``manual_agent_tasks.txt``: per kind the PER_KIND ids whose SHA-256 sorts first, round-robin;
    batch 2 takes the next PER_KIND of each kind (``manual_agent_tasks-2.txt``), and so on."""
    by_kind: dict[str, list[str]] = {k: [] for k in KINDS}
    for line in tasks_path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            record = json.loads(line)
            by_kind[record["kind"]].append(record["id"])
    chosen = {
        k: sorted(ids, key=lambda i: hashlib.sha256(i.encode()).hexdigest())[(batch - 1) * PER_KIND : batch * PER_KIND]
        for k, ids in by_kind.items()
    }
    return [chosen[k][r] for r in range(PER_KIND) for k in KINDS if r < len(chosen[k])]


def task_of(config: dict[str, Any], task_id: str) -> Any:
    from processkg.evaluate.tasks import load_tasks

    for task in load_tasks(Path(config["tasks"])):
        if task.id == task_id:
            return task
    raise Refused(f"no task {task_id}")


# ---------------------------------------------------------------- start / stop


def start(session: Session, args: argparse.Namespace) -> None:
    if session.config_path.is_file() and any(_alive(p) for p in session.config.get("pids", {}).values()):
        raise Refused(f"a session runs in {session.folder}: stop it first")
    session.folder.mkdir(parents=True, exist_ok=True)
    began = time.monotonic()
    store = Path(args.store).resolve()
    selection = load_selection(Path(args.select))
    config: dict[str, Any] = {
        "condition": args.condition,
        "store": str(store),
        "tasks": str(Path(args.tasks).resolve()),
        "select": selection,
        "port": args.port,
        "base_url": f"http://127.0.0.1:{args.port}/",
        "pids": {},
    }
    serve = _spawn(
        [
            *KG,
            "serve",
            "--store",
            str(store),
            "--port",
            str(args.port),
            "--allow-reset",
            "--record",
            str(session.recording),
        ],
        session.folder / "serve.log",
    )
    config["pids"]["serve"] = serve.pid
    session.config_path.write_text(json.dumps(config, indent=1) + "\n", encoding="utf-8")
    _wait_http(config["base_url"], serve, session.folder / "serve.log")
    if args.condition == "tools":
        mcp = _spawn(
            [*KG, "mcp", "--store", str(store), "--odata-url", config["base_url"], "--allow-writes"]
            + ["--http", str(args.mcp_port)],
            session.folder / "mcp.log",
        )
        config["pids"]["mcp"] = mcp.pid
        config["mcp_url"] = f"http://127.0.0.1:{args.mcp_port}/mcp"
        session.config_path.write_text(json.dumps(config, indent=1) + "\n", encoding="utf-8")
        _wait_port(args.mcp_port, mcp, session.folder / "mcp.log")
        if not args.no_warm_up:  # the embedding model loads once, before the first task, not in it
            _mcp(config["mcp_url"], "find_entity_sets", {"task": "create a sales order", "k": 1})
    config["start_seconds"] = round(time.monotonic() - began, 1)
    session.config_path.write_text(json.dumps(config, indent=1) + "\n", encoding="utf-8")
    if not session.state_path.is_file():
        session.save_state({"current": None, "done": []})
    print(f"started {args.condition} in {config['start_seconds']} s: kg serve on {config['base_url']}", file=sys.stderr)


def _spawn(argv: list[str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("ab") as out:
        return subprocess.Popen(argv, stdout=out, stderr=out, stdin=subprocess.DEVNULL, env=ENV, start_new_session=True)


def _wait_http(url: str, process: subprocess.Popen[bytes], log: Path, seconds: float = 600) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise Refused(f"kg serve ended with {process.returncode}: see {log}")
        try:
            if httpx.get(url, timeout=5).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    raise Refused(f"kg serve did not answer {url} within {seconds} s: see {log}")


def _wait_port(port: int, process: subprocess.Popen[bytes], log: Path, seconds: float = 600) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise Refused(f"kg mcp ended with {process.returncode}: see {log}")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.3)
    raise Refused(f"kg mcp did not listen on port {port} within {seconds} s: see {log}")


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie, ended but not reaped by its new parent, does not)."""
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    try:
        return stat.read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


def stop(session: Session) -> None:
    config = session.config
    for name, pid in config.get("pids", {}).items():
        if _alive(pid):
            os.killpg(pid, signal.SIGTERM)  # its own process group (start_new_session): it and its children
            deadline = time.monotonic() + 15
            while _alive(pid) and time.monotonic() < deadline:
                time.sleep(0.2)
            if _alive(pid):
                os.killpg(pid, signal.SIGKILL)
            print(f"stopped {name} ({pid})", file=sys.stderr)


# ---------------------------------------------------------------- task / answer / give-up


def begin_task(session: Session, task_id: str) -> None:
    config, state = session.config, session.state
    if state["current"]:
        raise Refused(f"task {state['current']} is not finished: answer or give-up first")
    if task_id not in config["select"]:
        raise Refused(f"{task_id} is not one of this session's tasks")
    if task_id in state["done"]:
        raise Refused(f"{task_id} is already finished")
    task = task_of(config, task_id)
    from processkg.evaluate.agents import reset

    if not reset(config["base_url"]):
        raise Refused("the server could not be reset: tell whoever started you")
    state.update(current=task_id, started=time.time(), record_from=session.recorded())
    session.save_state(state)
    writes = "Writes are allowed for this task." if task.writes else "This task only reads."
    text = f"Task {task_id}: {task.task}\n{writes}\n"
    sys.stdout.write(text)
    session.append(
        session.events_path, {"t": round(time.time(), 3), "task": task_id, "command": "task", "chars": len(text)}
    )


def end_task(session: Session, answer: str | None, why: str = "") -> None:
    """Ends the current task: its verdict (check_goal, or not completed for give-up) is kept, not printed."""
    config, state = session.config, session.state
    task_id = state["current"]
    if not task_id:
        raise Refused("no task is running: start one with task ID")
    record_to, ended = session.recorded(), time.time()
    verdict: dict[str, Any] = {"task": task_id, "record_from": state["record_from"], "record_to": record_to}
    verdict["seconds"] = round(ended - state["started"], 1)
    if answer is None:
        verdict.update(ended="give-up", answer=why, met=False, reason=f"gave up: {why}")
    else:
        met, reason = _check(config, task_of(config, task_id), answer)
        verdict.update(ended="answer", answer=answer, met=met, reason=reason)
    session.append(session.verdicts_path, verdict)
    state["done"].append(task_id)
    state["current"] = None
    session.save_state(state)
    print(f"{task_id} finished.")


def _check(config: dict[str, Any], task: Any, answer: str) -> tuple[bool, str]:
    from processkg.errors import ProcessKGError
    from processkg.evaluate.tasks import check_goal
    from processkg.tools.odata_client import ODataClient

    client = ODataClient(config["base_url"], timeout=60)
    try:
        result = check_goal(task, client, answer)
    except ProcessKGError as exc:
        return False, f"the goal check failed: {exc}"
    finally:
        client.close()
    return result.met, result.reason


def _budget(session: Session) -> str:
    """The running task, when it may still make a call."""
    task_id = session.state["current"]
    if not task_id:
        raise Refused("no task is running: start one with task ID")
    used = sum(1 for e in session.events() if e["task"] == task_id and e["command"] in READ and e.get("call"))
    if used >= BUDGET:
        raise Refused(f"the budget of {BUDGET} calls for {task_id} is used: answer or give-up")
    return str(task_id)


# ---------------------------------------------------------------- tools condition


def _mcp(url: str, name: str | None, arguments: dict[str, Any] | None = None) -> Any:
    import anyio
    from mcp import Client

    async def run() -> Any:
        async with Client(url, read_timeout_seconds=600) as client:
            if name is None:
                return await client.list_tools()
            return await client.call_tool(name, arguments or {}, read_timeout_seconds=600)

    try:
        return anyio.run(run)
    except Exception as exc:  # the MCP server unreachable or a protocol failure: one line for the driver
        raise Refused(f"the tool server failed: {type(exc).__name__}: {exc}") from None


def list_tools(session: Session) -> None:
    config = _condition(session, "tools")
    listed = _mcp(config["mcp_url"], None)
    parts = []
    for tool in listed.tools:
        parts.append(f"## {tool.name}\n{tool.description}\narguments (JSON schema): {json.dumps(tool.input_schema)}\n")
    session.emit("tools", "\n".join(parts))


def call_tool(session: Session, name: str, raw_arguments: str) -> None:
    config = _condition(session, "tools")
    _budget(session)
    try:
        arguments = json.loads(raw_arguments)
    except json.JSONDecodeError as exc:
        raise Refused(f"the arguments are not JSON: {exc}") from None
    if not isinstance(arguments, dict):
        raise Refused("the arguments must be one JSON object")
    result = _mcp(config["mcp_url"], name, arguments)
    text = "\n".join(getattr(c, "text", "") for c in result.content)
    found: dict[str, Any] = {"call": True, "tool": name, "arguments": arguments, "is_error": bool(result.is_error)}
    structured = result.structured_content
    if name == "call" and isinstance(structured, dict):
        found.update(sent=structured.get("sent"), status=structured.get("status"))
    session.emit("tool", text, **found)


# ---------------------------------------------------------------- raw condition


def services(session: Session) -> None:
    config = _condition(session, "raw")
    _budget(session)
    response = httpx.get(config["base_url"], timeout=60)
    session.emit("services", _shown(response, response.text, all_headers=False), call=True, method="GET", path="/")


def http_call(session: Session, args: argparse.Namespace) -> None:
    config = _condition(session, "raw")
    _budget(session)
    path = _path(args.path)
    headers = {}
    for header in args.header:
        name, sep, value = header.partition(":")
        if not sep or not name.strip():
            raise Refused(f"a header is 'Name: value', not {header!r}")
        headers[name.strip()] = value.strip()
    content = None
    if args.body is not None:
        content = args.body.encode("utf-8")
        if not any(k.lower() == "content-type" for k in headers):
            headers["Content-Type"] = "application/json"
    url = config["base_url"].rstrip("/") + path
    try:
        response = httpx.request(args.method.upper(), url, content=content, headers=headers, timeout=120)
    except httpx.HTTPError as exc:
        raise Refused(f"the request failed: {exc}") from None
    body = _body(response.text, args)
    logged = {"call": True, "method": args.method.upper(), "path": path, "status": response.status_code}
    session.emit("http", _shown(response, body, args.all_headers), **logged)


def _path(path: str) -> str:
    """A path relative to the server root; another origin, or the server's own admin paths, are refused."""
    parts = urlsplit(path)
    if parts.scheme or parts.netloc or not path.startswith("/") or path.startswith("//"):
        raise Refused(f"give a path under the server root, starting with one /, not {path!r}")
    if parts.path.lstrip("/").startswith("$"):
        raise Refused(f"{parts.path} is not part of the OData system")
    return path


def _body(text: str, args: argparse.Namespace) -> str:
    if args.pretty:
        text = _pretty(text)
    lines = text.splitlines()
    notes = []
    if args.grep:
        try:
            pattern = re.compile(args.grep)
        except re.error as exc:
            raise Refused(f"--grep is not a regular expression: {exc}") from None
        hits = [f"{n}: {line}" for n, line in enumerate(lines, 1) if pattern.search(line)]
        notes.append(f"[{len(hits)} of {len(lines)} lines match]")
        lines = hits
    elif args.lines:
        match = re.fullmatch(r"(\d+)-(\d+)", args.lines)
        if not match:
            raise Refused(f"--lines is A-B, not {args.lines!r}")
        a, b = int(match[1]), int(match[2])
        notes.append(f"[lines {a}-{min(b, len(lines))} of {len(lines)}]")
        lines = lines[a - 1 : b]
    out = "\n".join(lines)
    if args.max_chars is not None and len(out) > args.max_chars:
        notes.append(f"[cut at {args.max_chars} of {len(out)} characters]")
        out = out[: args.max_chars]
    return "\n".join([out, *notes]) if notes else out


def _pretty(text: str) -> str:
    """A JSON body indented by one space; an XML body one element per line (so --grep and --lines work)."""
    if text.lstrip().startswith("<"):
        return re.sub(r">\s*<", ">\n<", text)
    try:
        return json.dumps(json.loads(text), indent=1, ensure_ascii=False)
    except json.JSONDecodeError:
        return text


def _shown(response: httpx.Response, body: str, all_headers: bool) -> str:
    head = [f"HTTP {response.status_code} {response.reason_phrase}"]
    for name, value in response.headers.items():
        if all_headers or name.lower() in SHOWN_HEADERS:
            head.append(f"{name.lower()}: {value}")
    return "\n".join(head) + "\n\n" + body


def _condition(session: Session, condition: str) -> dict[str, Any]:
    config = session.config
    if config["condition"] != condition:
        raise Refused(f"this session's condition is {config['condition']}: that command is not available")
    return config


# ---------------------------------------------------------------- report


def report(folders: list[Path], out: Path) -> None:
    from processkg.evaluate.agents import GOLD, mcnemar, write_json

    for folder in folders:  # a report while a driver may still run would show it the verdicts
        if any(_alive(pid) for pid in Session(folder).config.get("pids", {}).values()):
            raise Refused(f"the session in {folder} still runs: stop it first")
    sessions = [summarise(Session(f)) for f in folders]
    conditions = [s["condition"] for s in sessions]
    if len(set(conditions)) != len(conditions):
        raise Refused(f"the sessions must be of different conditions, not {conditions}")
    runs = [
        {"condition": s["condition"], "task": t["task"], "run": 1, "met": t["met"]}
        for s in sessions
        for t in s["tasks"]
        if t["status"] in ("completed", "not completed", "gave up")
    ]
    tests = [mcnemar(runs, "tools", "raw")] if set(conditions) == {"tools", "raw"} else []
    results = {"sessions": sessions, "mcnemar": tests}
    out.mkdir(parents=True, exist_ok=True)
    write_json(out / "results.json", results)
    (out / "report.md").write_text(render(sessions, tests, GOLD), encoding="utf-8")
    print(f"wrote {out / 'report.md'} and {out / 'results.json'}", file=sys.stderr)


def summarise(session: Session) -> dict[str, Any]:
    """Per task and in total: verdict, calls, what reached the server and how it was judged, characters, seconds."""
    from processkg.graph.handle import StoreHandle
    from processkg.validate.calls import Validator

    config, events, state = session.config, session.events(), session.state
    verdicts = {v["task"]: v for v in session.verdicts()}
    recording = _lines(session.recording)
    validator = Validator(StoreHandle.open(Path(config["store"])))
    from processkg.evaluate.tasks import load_tasks

    kinds = {t.id: t.kind for t in load_tasks(Path(config["tasks"]))}
    tasks = []
    for task_id in config["select"]:
        mine = [e for e in events if e["task"] == task_id and e["command"] in ("tool", "http", "services")]
        verdict = verdicts.get(task_id)
        row: dict[str, Any] = {"task": task_id, "kind": kinds[task_id], "met": bool(verdict and verdict["met"])}
        row["status"] = _status(task_id, verdict, state)
        row["calls"] = sum(1 for e in mine if e.get("call"))
        row["by_tool"] = dict(sorted(Counter(e["tool"] for e in mine if e.get("tool")).items()))
        row["refused_before_sent"] = sum(1 for e in mine if e.get("tool") == "call" and e.get("sent") is False)
        row["chars"] = sum(e["chars"] for e in mine)
        window = recording[verdict["record_from"] : verdict["record_to"]] if verdict else []
        judged = validator.validate_calls(window) if window else []
        row["reached"] = len(window)
        row["rejected"] = sum(1 for r in window if int(r.get("status", 0)) >= 400)
        row["rejections"] = [
            f"{r['status']} {r.get('error', '')}".strip() for r in window if int(r.get("status", 0)) >= 400
        ]
        row["invalid_reached"] = sum(1 for j in judged if not j.valid)
        row["seconds"] = verdict["seconds"] if verdict else None
        row["reason"] = verdict["reason"] if verdict else ""
        tasks.append(row)
    listing = sum(e["chars"] for e in events if e["command"] == "tools")
    ended = [t for t in tasks if t["status"] != "not attempted" and t["status"] != "running"]
    totals = {
        "tasks": len(tasks),
        "ended": len(ended),
        "completed": sum(1 for t in tasks if t["met"]),
        "calls": sum(t["calls"] for t in tasks),
        "refused_before_sent": sum(t["refused_before_sent"] for t in tasks),
        "reached": sum(t["reached"] for t in tasks),
        "rejected": sum(t["rejected"] for t in tasks),
        "invalid_reached": sum(t["invalid_reached"] for t in tasks),
        "chars_tasks": sum(t["chars"] for t in tasks),
        "chars_tool_list": listing,
        "chars": sum(t["chars"] for t in tasks) + listing,
        "seconds": round(sum(t["seconds"] or 0 for t in tasks), 1),
    }
    return {
        "condition": config["condition"],
        "start_seconds": config.get("start_seconds"),
        "totals": totals,
        "tasks": tasks,
    }


def _status(task_id: str, verdict: dict[str, Any] | None, state: dict[str, Any]) -> str:
    if verdict:
        return "gave up" if verdict["ended"] == "give-up" else ("completed" if verdict["met"] else "not completed")
    return "running" if state.get("current") == task_id else "not attempted"


def render(sessions: list[dict[str, Any]], tests: list[dict[str, Any]], gold: str) -> str:
    names = [s["condition"] for s in sessions]
    lines = ["# By hand through the tools: " + " vs ".join(names), ""]
    lines += [
        "| condition | tasks ended | completed | calls | refused before sending | OData calls reaching the server "
        "| rejected by the server | invalid reaching the server (kg validate) | characters read (tasks + tool list) | seconds |"
    ]
    lines += ["|---|---|---|---|---|---|---|---|---|---|"]
    for s in sessions:
        t = s["totals"]
        lines.append(
            f"| {s['condition']} | {t['ended']} of {t['tasks']} | {t['completed']} | {t['calls']} | {t['refused_before_sent']} "
            f"| {t['reached']} | {t['rejected']} | {t['invalid_reached']} | {t['chars']:,} ({t['chars_tasks']:,} + "
            f"{t['chars_tool_list']:,}) | {t['seconds']} |"
        )
    for test in tests:
        lines += [
            "",
            f"Paired McNemar on completion ({test['pairs']} tasks ended in both): both {test['both']}, "
            f"{test['a']} only {test['a_only']}, {test['b']} only {test['b_only']}, neither {test['neither']}, "
            f"exact two-sided p = {test['p']}.",
        ]
    lines += ["", "## Per task", ""]
    cells = " | ".join(f"{n}: result | calls | reached | rejected | invalid | chars | s" for n in names)
    lines.append(f"| task | kind | {cells} |")
    lines.append("|---|---|" + "---|" * (7 * len(sessions)))
    for row in sessions[0]["tasks"]:
        parts = []
        for s in sessions:
            t = next((x for x in s["tasks"] if x["task"] == row["task"]), None)
            if t is None:
                parts.append(" | | | | | | ")
                continue
            parts.append(
                f"{t['status']} | {t['calls']} | {t['reached']} | {t['rejected']} | {t['invalid_reached']} "
                f"| {t['chars']:,} | {t['seconds'] if t['seconds'] is not None else ''}"
            )
        lines.append(f"| {row['task']} | {row['kind']} | " + " | ".join(parts) + " |")
    lines += [
        "",
        "Calls: `tool` calls (tools) or `http`/`services` requests (raw) the driver made. Reaching the server: "
        "lines of `kg serve`'s recording between the task's start and its answer (with the tools, `call`'s own "
        "ETag reads and CSRF fetches are among them; `GET /` and the catalog are not recorded). Rejected: "
        "status >= 400 there. Characters: everything `tool`, `tools`, `http` and `services` printed.",
        "",
        "How the gold was made: " + gold,
        "",
    ]
    return "\n".join(lines)


# ---------------------------------------------------------------- command line


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="manual_agent.py", description=__doc__.split("\n\n")[0])
    p.add_argument("--session", type=Path, default=os.environ.get("MANUAL_AGENT_SESSION"), help="the session folder")
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("start", help="start kg serve (and kg mcp for tools) in the background")
    s.add_argument("--condition", choices=CONDITIONS, required=True)
    s.add_argument("--store", required=True)
    s.add_argument("--tasks", default=str(TASKS))
    s.add_argument("--select", default=str(SELECTION))
    s.add_argument("--port", type=int, default=8470)
    s.add_argument("--mcp-port", type=int, default=8471)
    s.add_argument("--no-warm-up", action="store_true", help="do not load the embedding model before the first task")
    sub.add_parser("stop", help="end the session's servers")
    sub.add_parser("task", help="start a task: prints its instruction").add_argument("id")
    sub.add_parser("answer", help="end the task with an answer").add_argument("text")
    sub.add_parser("give-up", help="end the task as not completed").add_argument("why")
    sub.add_parser("tools", help="list the tools (condition tools)")
    t = sub.add_parser("tool", help="call one tool (condition tools)")
    t.add_argument("name")
    t.add_argument("arguments", nargs="?", default="{}")
    sub.add_parser("services", help="GET / of the server (condition raw)")
    h = sub.add_parser("http", help="one HTTP request to the server (condition raw)")
    h.add_argument("method")
    h.add_argument("path")
    h.add_argument("--body")
    h.add_argument("--header", action="append", default=[])
    h.add_argument("--grep")
    h.add_argument("--lines")
    h.add_argument("--pretty", action="store_true", help="a JSON body indented, an XML body one element per line")
    h.add_argument("--max-chars", type=int)
    h.add_argument("--all-headers", action="store_true")
    r = sub.add_parser("report", help="per-task and total figures of one or two sessions")
    r.add_argument("--out", type=Path, required=True)
    r.add_argument("sessions", nargs="*", type=Path)
    s = sub.add_parser("select", help="print the task ids the selection rule gives")
    s.add_argument("--tasks", default=str(TASKS))
    s.add_argument("--batch", type=int, default=1, help="1: the first PER_KIND ids of each kind, 2: the next, ...")
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if args.command == "select":
        print("\n".join(select_tasks(Path(args.tasks), args.batch)))
        return 0
    if args.command == "report":
        folders = args.sessions or ([args.session] if args.session else [])
        if not folders:
            print("error: give --session or the session folders", file=sys.stderr)
            return 2
        try:
            report(folders, args.out)
        except Refused as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        return 0
    if args.session is None:
        print("error: give --session DIR (or set MANUAL_AGENT_SESSION)", file=sys.stderr)
        return 2
    session = Session(Path(args.session))
    try:
        return run(session, args)
    except Refused as exc:
        if args.command in READ and session.config_path.is_file():
            session.emit(args.command, f"error: {exc}")  # the driver reads it: counted, not a call
        else:
            print(f"error: {exc}")
        return 1


def stdin_for_dash(args: argparse.Namespace) -> None:
    """An argument given as ``-`` is read from standard input (JSON or text holding both ' and $)."""
    for name in ("text", "why", "arguments", "body"):
        if getattr(args, name, None) == "-":
            setattr(args, name, sys.stdin.read().strip())


def run(session: Session, args: argparse.Namespace) -> int:
    stdin_for_dash(args)
    if args.command == "start":
        start(session, args)
    elif args.command == "stop":
        stop(session)
    elif args.command == "task":
        begin_task(session, args.id)
    elif args.command == "answer":
        end_task(session, args.text)
    elif args.command == "give-up":
        end_task(session, None, args.why)
    elif args.command == "tools":
        list_tools(session)
    elif args.command == "tool":
        call_tool(session, args.name, args.arguments)
    elif args.command == "services":
        services(session)
    elif args.command == "http":
        http_call(session, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
