"""One agent run from end to end: the OData server (``--odata-url``, or ``kg serve`` of the store
in-process), the tools of the condition, the chat model, the trace and the recording.

``OUT/trace.jsonl`` is the trace (:mod:`processkg.agent.loop`); ``OUT/calls.jsonl`` the recording in
``kg validate``'s input format: written by the in-process ``kg serve`` (every call it answered), or,
with ``--odata-url``, by the client (every call it sent and the status it got).
"""

from __future__ import annotations

from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path

from processkg.agent.conditions import condition_tools
from processkg.agent.loop import Agent, RunResult, Trace
from processkg.graph.handle import StoreHandle
from processkg.openai_chat import ChatClient, ChatSettings
from processkg.tools.local_server import LocalServer
from processkg.tools.odata_client import ODataClient
from processkg.tools.toolbox import Toolbox

TRACE, RECORDING = "trace.jsonl", "calls.jsonl"


@dataclass
class RunSettings:
    store: StoreHandle
    chat: ChatSettings
    condition: str = "typed"
    max_steps: int = 15
    out: Path = Path("agent-run")
    odata_url: str | None = None
    allow_writes: bool = False
    odata: list[Path] = field(default_factory=list)  # metadata files, for the chunk conditions
    retrieve_first: bool = False  # step 0: the retrieval tool on the task (Agent)


def run_task(task: str, settings: RunSettings) -> RunResult:
    """Run the agent on ``task``; the trace and the recording land in ``settings.out``."""
    out = Path(settings.out)
    record = out / RECORDING
    with ExitStack() as stack:
        toolbox = Toolbox(settings.store, allow_writes=settings.allow_writes)  # the store is read before OUT is made
        stack.callback(toolbox.close)
        out.mkdir(parents=True, exist_ok=True)
        record.unlink(missing_ok=True)
        if settings.odata_url is None:
            served = stack.enter_context(LocalServer(settings.store, record=record))
            toolbox.client = ODataClient(served.url, timeout=settings.chat.timeout)
        else:
            toolbox.client = ODataClient(settings.odata_url, timeout=settings.chat.timeout, record=record)
        tools = condition_tools(settings.condition, toolbox, settings.odata)
        chat = ChatClient(settings.chat)
        stack.callback(chat.close)
        trace = stack.enter_context(Trace(out / TRACE))
        return Agent(chat, tools, trace, settings.max_steps, settings.retrieve_first).run(task, settings.condition)


__all__ = ["RECORDING", "TRACE", "RunSettings", "run_task"]
