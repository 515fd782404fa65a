"""``kg mcp``: the tools of :mod:`processkg.tools.toolbox` as a Model Context Protocol server.

Built on the official ``mcp`` SDK's low-level server, so that the tool list is exactly
:func:`processkg.tools.specs.tool_list` (the same JSON schemas ``kg agent`` gives a chat model),
with each tool's output schema and its read-only / destructive annotations. Each answer is
returned twice, as MCP asks: as structured content (checked by clients against the output
schema) and as its JSON text. The typed context of every entity set is also a resource,
``processkg://SERVICE/ENTITYSET`` (Markdown, as ``kg retrieve --context`` renders it).

Transports: stdio (:func:`run_stdio`) and streamable HTTP (:func:`http_app`, served by uvicorn on
loopback). Over stdio, a line the SDK cannot read as a JSON-RPC message (not JSON, a number of more
than 4,300 digits, arrays or objects nested about 200 deep, not a JSON-RPC envelope) would be dropped
without an answer; it gets a JSON-RPC error instead (parse error -32700 or invalid request -32600),
with the request's id when the line shows one, else id null, and the next line is served.
Over HTTP the SDK answers such a body itself (400, parse error, id null).
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
import re
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING, TypeVar
from urllib.parse import unquote, urlsplit

import anyio
import mcp_types as types
from anyio.streams.memory import MemoryObjectSendStream
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.shared._stream_protocols import ReadStream, WriteStream
from mcp.shared.exceptions import MCPError
from mcp.shared.message import SessionMessage
from mcp_types.jsonrpc import INTERNAL_ERROR, INVALID_PARAMS, INVALID_REQUEST, PARSE_ERROR
from pydantic import ValidationError
from starlette.applications import Starlette

from processkg.aliases import JSONObject
from processkg.errors import ProcessKGError
from processkg.tools.specs import ToolSpec, answer_text

if TYPE_CHECKING:  # the toolbox is made on the loading thread, after initialize has been answered
    from processkg.tools.toolbox import Toolbox

T = TypeVar("T")
SCHEME = "processkg"
JSON_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[{}\[\]]')  # the strings and brackets of a JSON text
ID_VALUE = re.compile(r'\s*:\s*(-?\d{1,18}(?![\d.eE])|"(?:[^"\\]|\\.){0,256}")')
INSTRUCTIONS = (
    "Tools over a process-aware knowledge graph of OData services. Discover progressively: "
    "find_entity_sets for a business task, describe the entity set you need, validate_call before call."
)


def mcp_tool(spec: ToolSpec) -> types.Tool:
    """One tool of the list as MCP describes tools."""
    return types.Tool(
        name=spec.name,
        description=spec.description,
        input_schema=spec.input_schema,
        output_schema=spec.output_schema,
        annotations=types.ToolAnnotations(
            read_only_hint=spec.read_only,
            destructive_hint=spec.destructive,
            idempotent_hint=spec.read_only,
            open_world_hint=spec.name == "call",
        ),
    )


def resource_uri(service: str, entity_set: str) -> str:
    return f"{SCHEME}://{service}/{entity_set}"


class MCPFace:
    """The MCP server of one toolbox. Tools run one at a time in one worker thread of their own: the
    store's query results (pyoxigraph) must be used and dropped on the thread that made them.

    Nothing heavy happens before the server answers ``initialize``: once it has (:meth:`start`), the
    toolbox (``make_toolbox``: the store, the validators, the OData server ``call`` sends to) is made
    on the worker thread in the background, and ``load_model`` (importing sentence-transformers and
    loading the embedding model) runs at the same time on a thread of its own. ``tools/list`` and
    ``resources/templates/list`` answer at once; a tool call or resource read waits for what it
    needs. ``say`` gets a line when each part is ready (``kg mcp`` writes them to stderr)."""

    def __init__(
        self,
        make_toolbox: Callable[[], Toolbox],
        specs: list[ToolSpec],
        load_model: Callable[[], None] | None = None,
        say: Callable[[str], None] | None = None,
        name: str = "processkg",
    ) -> None:
        self.specs = specs
        self.say = say or _silent
        self.make_toolbox = make_toolbox
        self.load_model = load_model
        self.started = time.monotonic()
        self.starting = threading.Lock()
        self.worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="processkg-tools")
        self.loader = ThreadPoolExecutor(max_workers=1, thread_name_prefix="processkg-model")
        self.loading: Future[Toolbox] | None = None
        self.model: Future[None] | None = None
        self.server: Server = Server(
            name,
            instructions=INSTRUCTIONS,
            on_list_tools=self.list_tools,
            on_call_tool=self.call_tool,
            on_list_resources=self.list_resources,
            on_list_resource_templates=self.list_templates,
            on_read_resource=self.read_resource,
        )

    # ------------------------------------------------------------ loading in the background
    def start(self) -> tuple[Future[Toolbox], Future[None]]:
        """Start loading the toolbox and the model in the background (once); their futures.

        Over stdio this happens on the first message after ``initialize``, so that the answer to
        ``initialize`` does not share the interpreter with the loading threads; a tool call or a
        resource read starts it too, whichever comes first."""
        with self.starting:
            if self.loading is None or self.model is None:
                gc.collect()  # what the caller left behind is collected here, not later on the worker
                # Automatic collection stays off while the two threads load: it would run on whichever
                # thread allocates (mostly the model's imports) and could drop the worker's query results
                # there. The worker collects after each job itself, and turns it back on once both are loaded.
                gc.disable()
                self.loading = self.worker.submit(_collected, lambda: self._load(self.make_toolbox))
                self.worker.submit(_collected, self._open_retriever)
                self.model = self.loader.submit(self._load_model, self.load_model)
            return self.loading, self.model

    def _load(self, make_toolbox: Callable[[], Toolbox]) -> Toolbox:
        try:
            toolbox = make_toolbox()
        except Exception as exc:
            self.say(f"kg mcp: the tools could not be loaded: {_reason(exc)}")
            raise
        self.say(f"kg mcp: tools ready ({time.monotonic() - self.started:.1f} s)")
        return toolbox

    def _open_retriever(self) -> None:
        """Open the retriever (the store's index) on the worker, after the toolbox; without an index
        ``find_entity_sets`` says so when it is called."""
        loading, _ = self.start()
        if loading.exception() is None:
            with contextlib.suppress(ProcessKGError):
                loading.result().retriever  # noqa: B018 -- the property opens it

    def _load_model(self, load_model: Callable[[], None] | None) -> None:
        try:
            if load_model is not None:
                load_model()
                self.say(f"kg mcp: embedding model ready ({time.monotonic() - self.started:.1f} s)")
        except ProcessKGError as exc:  # find_entity_sets loads it again and answers the error
            self.say(f"kg mcp: the embedding model is not loaded: {exc}")
        finally:
            self.worker.submit(_collected, gc.enable)

    async def toolbox(self) -> Toolbox:
        """The toolbox, once made; MCPError (internal error) naming why if it could not be made."""
        try:
            return await asyncio.wrap_future(self.start()[0])
        except Exception as exc:
            raise MCPError(code=INTERNAL_ERROR, message=f"the tools could not be loaded: {_reason(exc)}") from None

    def close(self) -> None:
        """Wait for the loading threads (a client that leaves at once does not cut a load short)."""
        self.loader.shutdown(wait=True)
        self.worker.shutdown(wait=True)

    # ------------------------------------------------------------ the MCP requests
    async def list_tools(
        self, ctx: ServerRequestContext, params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[mcp_tool(spec) for spec in self.specs])

    async def call_tool(self, ctx: ServerRequestContext, params: types.CallToolRequestParams) -> types.CallToolResult:
        if params.name == "find_entity_sets":
            with contextlib.suppress(Exception):  # a model that did not load: the tool answers why
                await asyncio.wrap_future(self.start()[1])
        try:
            toolbox = await self.toolbox()
        except MCPError as exc:
            return _tool_result({"error": exc.error.message}, is_error=True)
        answer, is_error = await self.in_worker(lambda: toolbox.run(params.name, params.arguments or {}))
        return _tool_result(answer, is_error)

    async def in_worker(self, work: Callable[[], T]) -> T:
        return await asyncio.wrap_future(self.worker.submit(_collected, work))

    async def list_resources(
        self, ctx: ServerRequestContext, params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        resources = [
            types.Resource(
                uri=resource_uri(service, name),
                name=f"{service}/{name}",
                description=f"typed context of {name} in {service}",
                mime_type="text/markdown",
            )
            for service, name in sorted((await self.toolbox()).sets)
        ]
        return types.ListResourcesResult(resources=resources)

    async def list_templates(
        self, ctx: ServerRequestContext, params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        template = types.ResourceTemplate(
            uri_template=f"{SCHEME}://{{service}}/{{entity_set}}",
            name="typed-context",
            description="The typed context of an entity set: keys, required fields, value helps, navigation, process",
            mime_type="text/markdown",
        )
        return types.ListResourceTemplatesResult(resource_templates=[template])

    async def read_resource(
        self, ctx: ServerRequestContext, params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        uri = str(params.uri)
        toolbox = await self.toolbox()
        try:
            text = await self.in_worker(lambda: toolbox.context(*parse_resource_uri(uri)))
        except ProcessKGError as exc:
            raise MCPError(code=INVALID_PARAMS, message=str(exc), data={"uri": uri}) from None
        return types.ReadResourceResult(
            contents=[types.TextResourceContents(uri=uri, text=text, mime_type="text/markdown")]
        )

    async def run_stdio(self) -> None:
        """Serve over stdio; every line the SDK cannot read is answered by :func:`answer_unreadable`."""
        async with stdio_server() as (read_stream, write_stream):
            readable, messages = anyio.create_memory_object_stream[SessionMessage](0)
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(answer_unreadable, read_stream, readable, write_stream, self.start)
                await self.server.run(messages, write_stream, self.server.create_initialization_options())

    def http_app(self, host: str = "127.0.0.1") -> Starlette:
        """The streamable-HTTP application (endpoint ``/mcp``); DNS-rebinding protection on loopback."""
        self.start()
        return self.server.streamable_http_app(host=host)


async def answer_unreadable(
    incoming: ReadStream[SessionMessage | Exception],
    readable: MemoryObjectSendStream[SessionMessage],
    outgoing: WriteStream[SessionMessage],
    after_initialize: Callable[[], object] = lambda: None,
) -> None:
    """Pass the messages the SDK's stdio reader read on to the server; answer each line it could not
    read (which it hands on as an exception, and the server drops) with a JSON-RPC error. The first
    message that is not ``initialize`` calls ``after_initialize`` before it is passed on."""
    initialized = False
    async with readable:
        async for item in incoming:
            if isinstance(item, SessionMessage):
                if not initialized and getattr(item.message, "method", None) != "initialize":
                    initialized = True
                    after_initialize()
                await readable.send(item)
                continue
            error = unreadable_error(item)
            if error is not None:
                await outgoing.send(SessionMessage(error))


def unreadable_error(exc: Exception) -> types.JSONRPCError | None:
    """The JSON-RPC error answering a line that failed to parse (``exc``); None for a blank line."""
    problems = exc.errors() if isinstance(exc, ValidationError) else []
    invalid_json = next((p for p in problems if p["type"] == "json_invalid"), None)
    if invalid_json is not None:
        line = invalid_json["input"] if isinstance(invalid_json["input"], str) else ""
        if not line.strip():
            return None
        message = str(invalid_json["msg"]).replace("Invalid JSON", "Parse error", 1)
        return _error(request_id(line), PARSE_ERROR, message)
    envelope = next((p["input"] for p in problems if isinstance(p["input"], dict) and "jsonrpc" in p["input"]), {})
    found = envelope.get("id")
    known = found if isinstance(found, str) or (isinstance(found, int) and not isinstance(found, bool)) else None
    return _error(known, INVALID_REQUEST, "Invalid request: not a JSON-RPC 2.0 request, notification or response")


def request_id(line: str) -> str | int | None:
    """The ``id`` member of the top-level object of a JSON text that cannot be parsed as a whole (a
    number too long, nesting too deep), found by scanning its strings and brackets; None if there is none."""
    depth = 0
    for token in JSON_TOKEN.finditer(line):
        text = token.group()
        if text in ("{", "["):
            depth += 1
        elif text in ("}", "]"):
            depth -= 1
        elif depth == 1 and text == '"id"':
            value = ID_VALUE.match(line, token.end())
            if value is not None:
                found = json.loads(value.group(1))
                return found if isinstance(found, str | int) else None
    return None


def _tool_result(answer: JSONObject, is_error: bool) -> types.CallToolResult:
    """A tool's answer as structured content and as its JSON text (only the text for an error)."""
    text = answer_text(answer)
    content: list[types.ContentBlock] = [types.TextContent(type="text", text=text)]
    if is_error:
        return types.CallToolResult(content=content, is_error=True)
    return types.CallToolResult(content=content, structured_content=answer)


def _reason(exc: Exception) -> str:
    """One line saying why: the message of a ProcessKGError, else also the exception's type (a bug)."""
    return str(exc) if isinstance(exc, ProcessKGError) else f"{type(exc).__name__}: {exc}"


def _silent(line: str) -> None:
    return None


def _error(request: str | int | None, code: int, message: str) -> types.JSONRPCError:
    return types.JSONRPCError(jsonrpc="2.0", id=request, error=types.ErrorData(code=code, message=message))


def _collected(work: Callable[[], T]) -> T:
    """Run ``work``, then collect the garbage cycles it left on this thread. The SPARQL check's parser
    (pyparsing, through rdflib) keeps the frames that called it in reference cycles, and a query
    result held by such a frame must not be collected on another thread (pyoxigraph refuses)."""
    try:
        return work()
    finally:
        gc.collect()


def parse_resource_uri(uri: str) -> tuple[str, str]:
    """``processkg://SERVICE/ENTITYSET`` -> (service, entity set)."""
    parts = urlsplit(uri)
    name = unquote(parts.path.strip("/"))
    if parts.scheme != SCHEME or not parts.netloc or not name or "/" in name:
        raise ProcessKGError(f"not a typed-context resource: {uri!r} (expected {SCHEME}://SERVICE/ENTITYSET)")
    return unquote(parts.netloc), name


__all__ = ["MCPFace", "mcp_tool", "parse_resource_uri", "request_id", "resource_uri", "unreadable_error"]
