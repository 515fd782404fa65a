"""``kg mcp``: the store's tools as a Model Context Protocol server (stdio, or streamable HTTP)."""

from __future__ import annotations

from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING

import click

from processkg.cli.options import odata_options, store_option
from processkg.graph.handle import StoreHandle
from processkg.tools.odata_client import remote_client
from processkg.tools.specs import tool_list

if TYPE_CHECKING:
    from processkg.tools.toolbox import Toolbox


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
        remote = None if odata_url is None else remote_client(served, odata_url, record)  # a bad URL: exit 2 now

        # The stages the tools need are imported on the loading threads, after initialize is answered.
        def make_toolbox() -> Toolbox:
            from processkg.tools import assemble

            return assemble.toolbox(served, store, remote, record, allow_writes)

        def load_model() -> None:
            from processkg.tools import assemble

            assemble.load_model(store)

        say(f"kg mcp: serving {store}; loading its tools and the embedding model in the background")
        face = MCPFace(make_toolbox, tool_list(allow_writes), load_model, say)
        stack.callback(face.close)
        if http_port is None:
            anyio.run(face.run_stdio)
            return
        import uvicorn

        say(f"MCP (streamable HTTP) for {store} on http://{host}:{http_port}/mcp")
        uvicorn.run(face.http_app(host), host=host, port=http_port, log_level="warning")


def say(line: str) -> None:
    click.echo(line, err=True)
