"""``kg serve``: the validating OData server of a store."""

from __future__ import annotations

import errno
import socket
from pathlib import Path

import click

from processkg.cli.options import record_option, store_option
from processkg.errors import ServeBindError
from processkg.graph.handle import StoreHandle
from processkg.serve.app import create_app, open_server


@click.command("serve")
@store_option()
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on (loopback by default).")
@click.option("--port", default=8080, show_default=True, type=click.IntRange(0, 65535), help="Port to listen on.")
@click.option(
    "--allowed-host",
    "allowed_hosts",
    multiple=True,
    metavar="NAME[:PORT]",
    help="Also answer requests whose Host header is NAME (at any port, or at PORT); repeatable. "
    "By default only the address listened on is accepted (and loopback names on loopback).",
)
@click.option(
    "--allow-reset",
    is_flag=True,
    help="Answer POST /$reset (drops every change; needs the CSRF token unless --no-csrf).",
)
@record_option("Append every call, with the status it got, to this JSON Lines file (kg validate reads it).")
@click.option(
    "--data",
    type=click.Path(file_okay=False, exists=True, path_type=Path),
    help="Records to serve instead of generated ones: DATA/SERVICE/EntitySet.json.",
)
@click.option(
    "--csrf/--no-csrf",
    default=True,
    show_default=True,
    help="Require SAP's CSRF token on modifying requests (--no-csrf for simple clients).",
)
@click.option(
    "--etags/--no-etags",
    default=True,
    show_default=True,
    help="Require If-Match on changes to entity sets whose metadata declares ETags (--no-etags for simple clients).",
)
def serve_cmd(
    store: StoreHandle,
    host: str,
    port: int,
    allowed_hosts: tuple[str, ...],
    allow_reset: bool,
    record: Path | None,
    data: Path | None,
    csrf: bool,
    etags: bool,
) -> None:
    """Serve every OData service of the store; validate each call before it touches the data.

    Besides the services: POST /$reset restores the records the server started with (with
    --allow-reset), GET /$dump returns every record as JSON (see docs/serve.md)."""
    import uvicorn  # heavy: only this command needs the ASGI server

    listening = bind(host, port)  # before the store's data is made: a busy port is told at once
    port = int(listening.getsockname()[1])
    server = open_server(
        store,
        record=record,
        data=data,
        csrf=csrf,
        use_etags=etags,
        allow_reset=allow_reset,
        allowed_hosts=frozenset(allowed_hosts),
    )
    click.echo(f"serving {len(server.roots)} services of {store} on http://{host}:{port}", err=True)
    for root in sorted(server.roots):
        click.echo(f"  http://{host}:{port}{root}", err=True)
    from processkg.serve.http_protocol import HeadWithBodyProtocol  # imports uvicorn's protocol

    # the response head written with its body (serve/http_protocol.py); no access log at warning level
    config = uvicorn.Config(create_app(server), http=HeadWithBodyProtocol, log_level="warning", access_log=False)
    uvicorn.Server(config).run(sockets=[listening])


def bind(host: str, port: int) -> socket.socket:
    """A socket bound to ``host:port``; a busy port or an address this machine lacks is a ServeBindError."""
    try:
        family, kind, proto, _name, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    except socket.gaierror as exc:
        raise ServeBindError(f"cannot listen on {host}: {exc.strerror}") from None
    listening = socket.socket(family, kind, proto)
    listening.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listening.bind(address)
    except OSError as exc:
        listening.close()
        if exc.errno == errno.EADDRINUSE:
            raise ServeBindError(f"port {port} on {host} is in use") from None
        raise ServeBindError(f"cannot listen on port {port} of {host}: {exc.strerror}") from None
    return listening
