"""``kg mcp``: the store's tools as a Model Context Protocol server (stdio, or streamable HTTP)."""

from __future__ import annotations

from contextlib import ExitStack
from pathlib import Path

import click

from processkg.cli.options import odata_options, store_option
from processkg.graph.handle import StoreHandle
from processkg.retrieve.index import load_encoder_model, load_index
from processkg.tools.local_server import LocalServer
from processkg.tools.odata_client import ODataClient
from processkg.tools.specs import tool_list
from processkg.tools.toolbox import Toolbox


def odata_client(
    stack: ExitStack, store: StoreHandle, odata_url: str | None, record: Path | None, timeout: float = 30.0
) -> ODataClient:
    """The client of ``odata_url``, or of an in-process kg serve of ``store`` that ``stack`` keeps open."""
    if odata_url is None:
        served = stack.enter_context(LocalServer(store, record=record))
        client = ODataClient(served.url, timeout=timeout)
    else:
        client = ODataClient(odata_url, timeout=timeout, record=record)
    stack.callback(client.close)
    return client


@click.command("mcp")
@store_option()
@odata_options()
@click.option(
    "--http",
    "http_port",
    type=click.IntRange(0, 65535),
    default=None,
    help="Serve streamable HTTP on this port (endpoint /mcp) instead of stdio.",
)
@click.option("--host", default="127.0.0.1", show_default=True, help="Address of --http (loopback by default).")
def mcp_cmd(
    store: StoreHandle, odata_url: str | None, allow_writes: bool, record: Path | None, http_port: int | None, host: str
) -> None:
    """Serve the store's tools over the Model Context Protocol (see docs/mcp.md).

    Five tools whatever the size of the store: find_entity_sets, describe, next_steps,
    validate_call and call; the typed context of each entity set is also a resource
    processkg://SERVICE/ENTITYSET. stdio by default (for Claude Desktop and similar clients)."""
    import anyio  # the MCP SDK's event loop

    from processkg.tools.mcp_server import MCPFace  # heavy: the MCP SDK

    with ExitStack() as stack:
        served = stack.enter_context(ExitStack())  # closed after the face has finished loading
        remote = None if odata_url is None else odata_client(served, store, odata_url, record)

        def make_toolbox() -> Toolbox:
            client = remote if remote is not None else odata_client(served, store, None, record)
            return Toolbox(store, client, allow_writes=allow_writes)

        say(f"kg mcp: serving {store}; loading its tools and the embedding model in the background")
        face = MCPFace(make_toolbox, tool_list(allow_writes), lambda: load_model(store), say)
        stack.callback(face.close)
        if http_port is None:
            anyio.run(face.run_stdio)
            return
        import uvicorn

        say(f"MCP (streamable HTTP) for {store} on http://{host}:{http_port}/mcp")
        uvicorn.run(face.http_app(host), host=host, port=http_port, log_level="warning")


def load_model(store: StoreHandle) -> None:
    """Import sentence-transformers and load the embedding model of the store's index (once per process)."""
    load_encoder_model(load_index(store).model)


def say(line: str) -> None:
    click.echo(line, err=True)
