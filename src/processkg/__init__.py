"""processkg: process-aware knowledge graphs from OData CSDL and BPMN 2.0.

The library API is the same functions the ``kg`` command wires together::

    from processkg import BuildOptions, StoreLocation, build, open_store, select, load_query
    store = StoreLocation.parse("build/demo")  # what --store takes: a folder or a SPARQL server's URL
    report = build(BuildOptions(odata=["data/demo/odata"], bpmn=["data/demo/bpmn"],
                                mapping="data/demo/mapping.yaml", store=store))
    names, rows = select(open_store(store), load_query("stats-services"))

``open_store`` is the one-shot entry: the graph of the build the store holds now, pinned until the
process ends. A program that reads more than the graph (the index, build.json, the source
documents), or that must release the build, opens a :class:`StoreHandle` and hands it to the
stages (``Retriever``, ``Validator``, ``Toolbox``, ``open_server``, ...), as the CLI does.
"""

from processkg.build.pipeline import BuildOptions, BuildReport, build
from processkg.errors import ProcessKGError
from processkg.graph.handle import StoreHandle, StoreLocation, open_store
from processkg.graph.store import load_query, select

__all__ = [
    "BuildOptions",
    "BuildReport",
    "ProcessKGError",
    "StoreHandle",
    "StoreLocation",
    "build",
    "load_query",
    "open_store",
    "select",
]
__version__ = "0.1.0"
