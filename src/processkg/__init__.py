"""processkg: process-aware knowledge graphs from OData CSDL and BPMN 2.0.

The library API is the same functions the ``kg`` command wires together::

    from processkg import BuildOptions, StoreLocation, build_store, open_store, select, load_query
    store = StoreLocation.parse("build/demo")  # what --store takes: a folder or a SPARQL server's URL
    report = build_store(BuildOptions(odata=["data/demo/odata"], bpmn=["data/demo/bpmn"],
                                mapping="data/demo/mapping.yaml", store=store))
    names, rows = select(open_store(store), load_query("stats-services"))

``open_store`` is the one-shot entry: the graph of the build the store holds now, pinned until the
process ends. A program that reads more than the graph (the index, build.json, the source
documents), or that must release the build, opens a :class:`StoreHandle` and hands it to the
stages (``Retriever``, ``Validator``, ``Toolbox``, ``open_server``, ...), as the CLI does.

The names are imported on first use (PEP 562), so that importing one subpackage, as ``kg mcp``
does, does not import the whole pipeline. (The build is ``build_store``: ``processkg.build`` is the
subpackage.)
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from processkg.build.pipeline import BuildOptions, BuildReport, build_store
    from processkg.errors import ProcessKGError
    from processkg.graph.handle import StoreHandle, StoreLocation, open_store
    from processkg.graph.store import load_query, select

#: Each public name and the module that defines it.
API = {
    "BuildOptions": "processkg.build.pipeline",
    "BuildReport": "processkg.build.pipeline",
    "build_store": "processkg.build.pipeline",
    "ProcessKGError": "processkg.errors",
    "StoreHandle": "processkg.graph.handle",
    "StoreLocation": "processkg.graph.handle",
    "open_store": "processkg.graph.handle",
    "load_query": "processkg.graph.store",
    "select": "processkg.graph.store",
}

__all__ = [
    "BuildOptions",
    "BuildReport",
    "ProcessKGError",
    "StoreHandle",
    "StoreLocation",
    "build_store",
    "load_query",
    "open_store",
    "select",
]
__version__ = "0.1.0"


def __getattr__(name: str) -> object:
    if name not in API:
        raise AttributeError(f"module 'processkg' has no attribute {name!r}")
    value = getattr(importlib.import_module(API[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *API})
