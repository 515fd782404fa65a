"""processkg: process-aware knowledge graphs from OData CSDL and BPMN 2.0.

The library API is the same functions the ``kg`` command wires together::

    from processkg import BuildOptions, build, open_store, select, load_query
    report = build(BuildOptions(odata=["data/demo/odata"], bpmn=["data/demo/bpmn"],
                                mapping="data/demo/mapping.yaml", store="build/demo"))
    names, rows = select(open_store("build/demo"), load_query("stats-services"))
"""

from processkg.build.pipeline import BuildOptions, BuildReport, build
from processkg.errors import ProcessKGError
from processkg.graph.handle import open_store
from processkg.graph.store import load_query, select

__all__ = ["BuildOptions", "BuildReport", "ProcessKGError", "build", "load_query", "open_store", "select"]
__version__ = "0.1.0"
