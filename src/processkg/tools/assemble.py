"""What ``kg mcp`` loads after it has answered ``initialize``: the OData client ``call`` sends to (a
server's URL, or an in-process ``kg serve`` of the store), the toolbox, and the embedding model."""

from __future__ import annotations

from contextlib import ExitStack
from pathlib import Path

from processkg.graph.handle import StoreHandle
from processkg.retrieve.index import load_encoder_model, load_index
from processkg.tools.local_server import LocalServer
from processkg.tools.odata_client import ODataClient, remote_client
from processkg.tools.toolbox import Toolbox


def toolbox(
    stack: ExitStack, store: StoreHandle, client: ODataClient | None, record: Path | None, allow_writes: bool
) -> Toolbox:
    """The tools of ``store``; ``call`` sends through ``client``, or through an in-process kg serve of
    the store (recording into ``record``) that ``stack`` keeps open."""
    if client is None:
        served = stack.enter_context(LocalServer(store, record=record))
        client = remote_client(stack, served.url, None)
    return Toolbox(store, client, allow_writes=allow_writes)


def load_model(store: StoreHandle) -> None:
    """Import sentence-transformers and load the embedding model of the store's index (once per process)."""
    load_encoder_model(load_index(store).model)
