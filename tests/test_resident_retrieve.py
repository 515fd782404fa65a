"""The resident retriever of kg serve (GET /$processkg/retrieve) and ``kg retrieve --server URL``."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner

from processkg.cli import main
from processkg.graph.handle import StoreHandle
from processkg.tools.local_server import LocalServer, free_port

QUERY = "create a sales order for a customer"


@pytest.fixture(scope="module")
def server(demo_indexed_store: Path) -> Iterator[LocalServer]:
    with LocalServer(StoreHandle.open(demo_indexed_store), csrf=False) as running:
        yield running


def _json(args: list[str]) -> dict[str, object]:
    out = CliRunner().invoke(main, ["retrieve", *args])
    assert out.exit_code == 0, out.output
    return json.loads(out.output)


@pytest.mark.parametrize("method", ["hybrid", "dense", "tokens"])
def test_server_answers_as_kg_retrieve_does(server: LocalServer, demo_indexed_store: Path, method: str) -> None:
    common = [QUERY, "--json", "--context", "-k", "3", "--method", method]
    local = _json(["--store", str(demo_indexed_store), *common])
    remote = _json(["--server", server.url, *common])
    assert remote == local
    assert local["results"] and local["context"]


def test_second_call_does_not_reload_the_model(server: LocalServer) -> None:
    url = server.url + "$processkg/retrieve"
    first = httpx.get(url, params={"q": QUERY}, timeout=120)
    second = httpx.get(url, params={"q": "post a goods movement", "k": "2"}, timeout=120)
    assert first.status_code == second.status_code == 200
    assert len(second.json()["results"]) == 2
    assert server.server is not None and server.server.retrieval is not None
    assert server.server.retrieval.loads == 1


def test_bad_parameters_are_a_400_with_the_reason(server: LocalServer) -> None:
    url = server.url + "$processkg/retrieve"
    assert httpx.get(url, params={"q": " "}, timeout=30).json()["error"].startswith("the query is empty")
    bad = httpx.get(url, params={"q": QUERY, "method": "nope"}, timeout=30)
    assert bad.status_code == 400 and "unknown method 'nope'" in bad.json()["error"]
    typo = httpx.get(url, params={"q": QUERY, "methdo": "tokens"}, timeout=30)  # once silently ignored
    assert typo.status_code == 400 and typo.json()["error"].startswith("unknown parameter 'methdo'; known: q, k,")


def test_table_output_through_the_server(server: LocalServer, demo_indexed_store: Path) -> None:
    local = CliRunner().invoke(main, ["retrieve", "--store", str(demo_indexed_store), QUERY])
    remote = CliRunner().invoke(main, ["retrieve", "--server", server.url, QUERY])
    assert remote.exit_code == 0 and remote.output == local.output


def test_bad_server_url_is_one_line() -> None:
    out = CliRunner().invoke(main, ["retrieve", "--server", f"http://127.0.0.1:{free_port()}", QUERY])
    assert out.exit_code == 2
    assert out.stderr.count("\n") == 1 and out.stderr.startswith("error: kg serve at http://127.0.0.1:")


def test_store_and_server_together_are_refused(demo_indexed_store: Path) -> None:
    out = CliRunner().invoke(main, ["retrieve", "--store", str(demo_indexed_store), "--server", "http://x", QUERY])
    assert out.exit_code == 2 and "not both" in out.output
