"""``kg serve``: the validating OData server of a store."""

from __future__ import annotations

from pathlib import Path

import click

from processkg.cli.options import store_option
from processkg.graph.remote import shown
from processkg.serve.app import create_app, open_server


@click.command("serve")
@store_option()
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on (loopback by default).")
@click.option("--port", default=8080, show_default=True, type=click.IntRange(0, 65535), help="Port to listen on.")
@click.option(
    "--record",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Append every call, with the status it got, to this JSON Lines file (kg validate reads it).",
)
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
    store: Path, host: str, port: int, record: Path | None, data: Path | None, csrf: bool, etags: bool
) -> None:
    """Serve every OData service of the store; validate each call before it touches the data.

    Besides the services: POST /$reset restores the records the server started with, GET /$dump
    returns every record as JSON (see docs/serve.md)."""
    import uvicorn  # heavy: only this command needs the ASGI server

    server = open_server(store, record=record, data=data, csrf=csrf, use_etags=etags)
    click.echo(f"serving {len(server.roots)} services of {shown(store)} on http://{host}:{port}", err=True)
    for root in sorted(server.roots):
        click.echo(f"  http://{host}:{port}{root}", err=True)
    uvicorn.run(create_app(server), host=host, port=port, log_level="warning")
