"""What the agent is given, per condition of the paper's evaluation (§5):

* ``typed``: the typed tools of :mod:`processkg.tools` (find, describe, next steps, validate, call;
  ``call`` validates before it sends);
* ``chunkrag``: raw ``$metadata`` chunks nearest to a query (the ChunkRAG baseline: no process, no
  code lists, no typed context) and ``call``, which sends as it is (the server still judges);
* ``chunkrag-vh``: the same chunks plus, as text, the value-help code lists of the entity sets they
  describe.

The chunks are the retrieval index's (``kg index --odata`` / ``kg build --chunks``); their text is
read again from the metadata files the store was built from (``--odata``), since the index keeps
only where each chunk lies.
"""

from __future__ import annotations

from pathlib import Path

from processkg.aliases import JSONObject, JSONValue
from processkg.errors import ProcessKGError, ToolArgumentError
from processkg.retrieve.retriever import Retriever
from processkg.retrieve.texts import chunk_items
from processkg.sources.discover import ODATA_SUFFIXES, discover
from processkg.tools.odata_client import Exchange
from processkg.tools.specs import ToolSpec
from processkg.tools.toolbox import Toolbox

CONDITIONS = ("typed", "chunkrag", "chunkrag-vh")
MAX_CODES = 30  # codes per value help in chunkrag-vh's text

SEARCH = ToolSpec(
    "search_metadata",
    "Search the raw OData $metadata documents: the chunks of XML nearest to a query.",
    {
        "type": "object",
        "properties": {"query": {"type": "string"}, "k": {"type": "integer", "minimum": 1, "maximum": 10}},
        "required": ["query"],
        "additionalProperties": False,
    },
    {"type": "object", "properties": {"chunks": {"type": "array", "items": {"type": "object"}}}},
)

PROMPTS = {
    "typed": (
        "You complete business tasks on SAP OData services by calling tools. Each reply is exactly one tool "
        "call, or, when the task is done, the answer. Never describe a call in words: make it.\n"
        "1. find_entity_sets with the task word for word (a run may start with its answer given). Its "
        "named_in_task gives the read (GET path) of the record the task names, and the values and codes "
        "the task's words name.\n"
        "2. To read, call with method GET and that path; then answer with the values asked for, copied "
        "from the call's answer.\n"
        "3. To create or change, describe the entity set (path, key, required fields, codes, an example), "
        "then call with the method, the path and a JSON body of its fields.\n"
        'Example: named_in_task says "API_X_SRV/A_Thing: read GET /sap/opu/odata/sap/API_X_SRV/A_Thing?'
        '$filter=Thing eq \'0000000042\'"; you reply {{"name": "call", "arguments": {{"method": "GET", '
        '"url": "/sap/opu/odata/sap/API_X_SRV/A_Thing?$filter=Thing eq \'0000000042\'"}}}}; its answer holds '
        '"Colour": "RED"; you answer: Thing 0000000042 has colour RED.\n'
        "Use only entity sets, properties and codes the tools show."
    ),
    "chunkrag": (
        "You complete business tasks on SAP OData services by calling tools. search_metadata finds "
        "parts of the services' $metadata documents; call sends OData requests. Services are served "
        "under these roots:\n{roots}\nWhen the task is done, reply without a tool call and give the "
        "result (keys or values asked for) in one or two sentences."
    ),
}
PROMPTS["chunkrag-vh"] = PROMPTS["chunkrag"]


class Tools:
    """The tools of one condition, on one toolbox (whose client holds the HTTP exchanges)."""

    def __init__(self, condition: str, toolbox: Toolbox, chunks: ChunkSearch | None = None) -> None:
        if condition not in CONDITIONS:
            raise ProcessKGError(f"unknown condition {condition!r}; choose one of {', '.join(CONDITIONS)}")
        if condition != "typed" and chunks is None:
            raise ProcessKGError(f"the {condition} condition needs the metadata chunks (--odata)")
        self.condition, self.toolbox, self.chunks = condition, toolbox, chunks
        toolbox.validate_before_send = condition == "typed"

    @property
    def specs(self) -> list[ToolSpec]:
        if self.condition == "typed":
            return self.toolbox.specs
        return [SEARCH, next(s for s in self.toolbox.specs if s.name == "call")]

    def system_prompt(self) -> str:
        roots = "\n".join(f"- {name}: {root}" for name, root in sorted(self.toolbox.roots.items()))
        return PROMPTS[self.condition].format(roots=roots)

    def first_call(self, task: str) -> tuple[str, JSONObject]:
        """The retrieval call a run may start with (``--retrieve-first``): the task, word for word."""
        if self.condition == "typed":
            return "find_entity_sets", {"task": task}
        return SEARCH.name, {"query": task}

    def run(self, name: str, arguments: JSONValue) -> tuple[JSONObject, bool]:
        if name == SEARCH.name and self.chunks is not None:
            if not isinstance(arguments, dict):
                return {"error": "the arguments must be a JSON object"}, True
            try:
                return self.chunks.search(arguments), False
            except ProcessKGError as exc:
                return {"error": str(exc)}, True
        if name not in {s.name for s in self.specs}:
            return {"error": f"unknown tool {name!r}; the tools are {', '.join(s.name for s in self.specs)}"}, True
        return self.toolbox.run(name, arguments)

    @property
    def exchanges(self) -> list[Exchange]:
        return self.toolbox.client.exchanges if self.toolbox.client is not None else []


class ChunkSearch:
    """Nearest raw-metadata chunks (the index's chunk vectors), with their text; optionally the
    value-help code lists of the entity sets they describe, as text."""

    def __init__(self, retriever: Retriever, odata: list[Path], toolbox: Toolbox, value_helps: bool) -> None:
        indexed = retriever.index.items["chunk"]
        if not indexed:
            raise ProcessKGError(
                f"the index of {retriever.handle} has no metadata chunks: rebuild it with "
                "`kg index --store DIR --odata METADATA_DIR`"
            )
        texts = {
            (c.file, c.start, c.end): c.text for c in chunk_items(retriever.store, discover(odata, ODATA_SUFFIXES))
        }
        missing = [c for c in indexed if (c["file"], c["start"], c["end"]) not in texts]
        if missing:
            raise ProcessKGError(
                f"{len(missing)} of the index's {len(indexed)} metadata chunks are not in the files given "
                f"with --odata (first: {missing[0]['file']}); give the metadata the store was built from"
            )
        self.retriever, self.toolbox, self.value_helps = retriever, toolbox, value_helps
        self.texts = [texts[(c["file"], c["start"], c["end"])] for c in indexed]
        self.set_names = {s["iri"]: (s["service"], s["name"]) for s in retriever.sets}

    def search(self, arguments: JSONObject) -> JSONObject:
        query = arguments.get("query")
        k = arguments.get("k", 5)
        if not isinstance(query, str) or not query.strip():
            raise ToolArgumentError("argument 'query' must be a non-empty string")
        if not isinstance(k, int) or not 1 <= k <= 10:
            raise ToolArgumentError("argument 'k' must be an integer from 1 to 10")
        vector = self.retriever.embed([query])[0]
        ids, _sims = self.retriever.index.hnsw["chunk"].search(vector, k)
        chunk_ids = [int(i) for i in ids.tolist()]
        answer: JSONObject = {"chunks": [self.texts[i] for i in chunk_ids]}
        if self.value_helps:
            sets = dict.fromkeys(iri for i in chunk_ids for iri in self.retriever.index.items["chunk"][i]["sets"])
            answer["value_helps"] = [line for iri in sets for line in self.code_lines(iri)]
        return answer

    def code_lines(self, iri: str) -> list[str]:
        """``SERVICE/Set.Property: A, B, C`` for each property of the set whose codes are known."""
        if iri not in self.set_names:
            return []
        service, name = self.set_names[iri]
        model = self.toolbox.validator.model
        info = model.services.get(service)
        if info is None or name not in info.sets:
            return []
        props = model.types[info.sets[name][0]].props
        return [
            f"{service}/{name}.{p.name}: {', '.join(p.codes[:MAX_CODES])}{' ...' if len(p.codes) > MAX_CODES else ''}"
            for p in sorted(props.values(), key=lambda p: p.name)
            if p.codes
        ]


def condition_tools(condition: str, toolbox: Toolbox, odata: list[Path]) -> Tools:
    """The tools of ``condition`` on ``toolbox``; the chunk conditions read ``odata`` (metadata files)."""
    if condition == "typed":
        return Tools(condition, toolbox)
    chunks = ChunkSearch(toolbox.retriever, odata, toolbox, value_helps=condition == "chunkrag-vh")
    return Tools(condition, toolbox, chunks)


__all__ = ["CONDITIONS", "ChunkSearch", "Tools", "condition_tools"]
