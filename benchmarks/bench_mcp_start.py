"""Benchmark ``kg mcp``'s start-up over stdio (issue 22): how long a client waits for each first answer.

Usage: ``python benchmarks/bench_mcp_start.py [--store DIR] [--runs N] [--out FILE]``

Starts ``kg mcp --store STORE`` (its ``call`` served by the in-process ``kg serve``, as a client such
as Claude Desktop starts it) with the official ``mcp`` SDK's stdio client, ``--runs`` times, and
measures in each run, one request right after the other as an impatient client sends them:

* ``initialize``: from starting the process to the answer of ``initialize`` (what the MCP
  inspector's 15 s connection timeout bounds);
* ``tools_list``: the answer of ``tools/list`` after that;
* ``first_find_entity_sets``: the first ``find_entity_sets`` (needs the embedding model), sent at once;
* ``first_validate_call``: the first ``validate_call`` (needs the validator), sent after it;
* ``ready``: from starting the process to the answer of the first ``validate_call``.

A second scenario sends ``validate_call`` before ``find_entity_sets`` (``validate_first``). Also
``parts``: where the time goes, each part timed once in a fresh process in the order the old
start-up ran them (importing the MCP SDK, the in-process kg serve, the toolbox with its validator,
importing sentence-transformers and loading the model, opening the retriever). The store
(``--store``, else the agent tasks' store of ``data/sap`` over ``../shared/data/odata/s4-a2x``
built into a temporary folder) is the one ``kg eval agent`` uses. Writes JSON with the medians to
``benchmarks/results/mcp_start.json``; the machine's load average is recorded with them, since
other processes on its two cores slow every figure.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
A2X = ROOT.parent / "shared" / "data" / "odata" / "s4-a2x"
SAP = ROOT / "data" / "sap"
KG = str(Path(sys.executable).parent / "kg")
ENV = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
TASK = "create a sales order for a customer"
BAD_ORDER = {
    "method": "POST",
    "url": "/sap/opu/odata/sap/API_SALES_ORDER_SRV/A_SalesOrder",
    "body": {"SalesOrderType": "OR", "Colour": "red"},
}
PARTS = """
import sys, time, json
from contextlib import ExitStack
from pathlib import Path
store = Path(sys.argv[1]); took = {}
def part(name, start):
    took[name] = round(time.monotonic() - start, 3)
start = time.monotonic()
from processkg.tools.mcp_server import MCPFace
from processkg.tools.local_server import LocalServer
from processkg.tools.odata_client import remote_client
from processkg.tools.toolbox import Toolbox
from processkg.graph.handle import StoreHandle
part("import_mcp_sdk_and_tools", start)
start = time.monotonic(); handle = StoreHandle.open(store); part("open_store", start)
with ExitStack() as stack:
    start = time.monotonic(); client = remote_client(stack, stack.enter_context(LocalServer(handle)).url, None); part("in_process_kg_serve", start)
    start = time.monotonic(); toolbox = Toolbox(handle, client); part("toolbox_with_validator", start)
    start = time.monotonic(); import sentence_transformers; part("import_sentence_transformers", start)
    from processkg.retrieve.index import load_encoder_model, load_index
    start = time.monotonic(); load_encoder_model(load_index(handle).model); part("load_embedding_model", start)
    start = time.monotonic(); toolbox.retriever; part("open_retriever", start)
    start = time.monotonic(); toolbox.find_entity_sets(sys.argv[2]); part("find_entity_sets_warm", start)
print(json.dumps(took))
"""


async def one_run(store: Path, validate_first: bool) -> dict[str, float]:
    """The seconds each first answer took in one fresh ``kg mcp`` process."""
    params = StdioServerParameters(command=KG, args=["mcp", "--store", str(store)], env=ENV)
    took: dict[str, float] = {}
    start = time.monotonic()
    async with Client(params, read_timeout_seconds=300) as client:
        took["initialize"] = time.monotonic() - start
        mark = time.monotonic()
        tools = await client.list_tools()
        took["tools_list"] = time.monotonic() - mark
        assert len(tools.tools) == 5, tools
        order = ["validate", "find"] if validate_first else ["find", "validate"]
        for step in order:
            mark = time.monotonic()
            if step == "find":
                found = await client.call_tool("find_entity_sets", {"task": TASK, "k": 5})
                assert not found.is_error, found.content
                assert found.structured_content["results"][0]["entity_set"] == "A_SalesOrder", found.structured_content
                took["first_find_entity_sets"] = time.monotonic() - mark
            else:
                checked = await client.call_tool("validate_call", BAD_ORDER)
                assert not checked.is_error, checked.content
                assert checked.structured_content["valid"] is False, checked.structured_content
                took["first_validate_call"] = time.monotonic() - mark
        took["ready"] = time.monotonic() - start
    return took


def medians(runs: list[dict[str, float]]) -> dict[str, float]:
    return {name: round(statistics.median(run[name] for run in runs), 3) for name in runs[0]}


def parts(store: Path) -> dict[str, float]:
    """Each part of the start-up timed once, in order, in a fresh process (cold imports)."""
    done = subprocess.run(
        [sys.executable, "-c", PARTS, str(store), TASK], env=ENV, capture_output=True, text=True, check=True
    )
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def build_store(folder: Path) -> Path:
    from processkg.build.pipeline import BuildOptions, build_store
    from processkg.graph.handle import StoreLocation

    store = folder / "store"
    build_store(
        BuildOptions(
            odata=[A2X],
            bpmn=[SAP / "processes"],
            mapping=SAP / "mapping.yaml",
            codes=[SAP / "codes"],
            required=SAP / "required",
            store=StoreLocation.parse(store),
            index=True,
        )
    )
    return store


def measure(store: Path, runs: int) -> dict[str, object]:
    load_before = os.getloadavg()[0]
    find_first = [anyio.run(one_run, store, False) for _ in range(runs)]
    validate_first = [anyio.run(one_run, store, True) for _ in range(runs)]
    return {
        "store": "data/sap tasks store (45 A2X services, SAP processes, codes, index)",
        "runs": runs,
        "find_first": medians(find_first),
        "validate_first": medians(validate_first),
        "parts": parts(store),
        "cpus": os.cpu_count(),
        "load_average": [round(load_before, 2), round(os.getloadavg()[0], 2)],
        "python": platform.python_version(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", type=Path, default=None, help="a built store (default: build the tasks store)")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--out", type=Path, default=HERE / "results" / "mcp_start.json")
    args = parser.parse_args()
    if args.store is not None:
        result = measure(args.store, args.runs)
    else:
        with tempfile.TemporaryDirectory() as tmp:
            result = measure(build_store(Path(tmp)), args.runs)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    print(json.dumps(result, indent=2, sort_keys=True))


if __name__ == "__main__":
    main()
