"""The tool list: names, descriptions, input and output JSON schemas and annotations, written once.

Both faces read it: ``kg mcp`` lists these tools over the Model Context Protocol and ``kg agent``
offers them to a chat model in the OpenAI ``tools`` format (:func:`openai_tools`). Discovery is
progressive: five tools whatever the size of the store (find, describe, next steps, validate,
call), never one tool per entity set, so the list costs the same few hundred tokens for the demo
and for the 45 services of the A2X corpus (``benchmarks/bench_tools.py`` measures it).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from processkg.aliases import JSONObject, JSONValue

METHODS = ["GET", "POST", "PATCH", "MERGE", "PUT", "DELETE"]


@dataclass(frozen=True)
class ToolSpec:
    """One tool: what it is called and takes, what it answers, and whether it changes anything."""

    name: str
    description: str
    input_schema: JSONObject
    output_schema: JSONObject
    read_only: bool = True
    destructive: bool = False

    def openai(self) -> JSONObject:
        """The tool in the OpenAI chat-completions ``tools`` format."""
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": self.input_schema},
        }


def _obj(properties: JSONObject, required: list[str]) -> JSONObject:
    """An input schema: these arguments and no others."""
    return {"type": "object", "properties": properties, "required": required, "additionalProperties": False}


def _out(properties: JSONObject, required: list[str]) -> JSONObject:
    """An output schema: these members at least (an answer may carry more, e.g. notes)."""
    return {"type": "object", "properties": properties, "required": required}


_STR = {"type": "string"}
_LIST = {"type": "array", "items": {"type": "object"}}
_VIOLATIONS = {"type": "array", "items": {"type": "object"}, "description": "kind, path, message with a repair hint"}
_CALL_ARGS = {
    "method": {"type": "string", "enum": METHODS},
    "url": {"type": "string", "description": "path from describe, key, query options"},
    "body": {"type": "object"},
}
_SELECT = {
    "type": "array",
    "items": {"type": "string"},
    "description": "only these fields of each record (to_Item/Material in expanded ones)",
}
_IF_MATCH = {"type": "string", "description": "ETag for If-Match (default: read it)"}

FIND = ToolSpec(
    "find_entity_sets",
    "Entity sets for a business task, best first: SERVICE/ENTITY_SET [key] label; via the steps that led "
    "there; path if not /sap/opu/odata/sap/SERVICE/ENTITY_SET. named_in_task: the read of the record the "
    "task names, the codes its words name. Start here.",
    _obj(
        {
            "task": {"type": "string", "description": "the user's request, word for word"},
            "k": {"type": "integer", "minimum": 1, "maximum": 20, "default": 3},
        },
        ["task"],
    ),
    _out({"results": {"type": "array", "items": _STR}, "named_in_task": {"type": "array", "items": _STR}}, ["results"]),
)
DESCRIBE = ToolSpec(
    "describe",
    "How to read and write an entity set: path, key, etag (a change needs If-Match; call sends it), "
    "required_on_create, optional (by type), codes (code=label; codes=[property] lists all), deep_insert "
    "(children in the parent's POST), example_create, made_from (predecessors, fields carrying their keys). "
    'detail "full": all types, labels, codes, operations, process steps.',
    _obj(
        {
            "service": _STR,
            "entity_set": _STR,
            "detail": {"type": "string", "enum": ["compact", "full"]},
            "codes": {"type": "array", "items": _STR, "description": "properties to list all codes of"},
        },
        ["service", "entity_set"],
    ),
    _out(
        {
            "label": _STR,
            "path": _STR,
            "key": {"type": "array", "items": _STR},
            "one_record": _STR,
            "allows": _STR,
            "etag": {"type": "boolean"},
            "required_on_create": {"type": "array", "items": _STR},
            "optional": _STR,
            "properties": {"type": "array", "items": _STR},
            "codes": {"type": "object"},
            "deep_insert": {"type": "object"},
            "example_create": {"type": "object"},
            "create": _STR,
            "made_from": {"type": "array", "items": _STR},
            "cut": _STR,
            "value_helps": {"type": "object"},
            "navigation": {"type": "array", "items": _STR},
            "operations": _LIST,
            "process": _LIST,
        },
        [],
    ),
)
NEXT = ToolSpec(
    "next_steps",
    "Process steps after those using an entity set, their entity sets, and the documents made from its "
    "records with a payload template (record: its keys filled in).",
    _obj(
        {
            "service": _STR,
            "entity_set": _STR,
            "record": {"type": "object", "description": 'key of one record, e.g. {"SalesOrder": "1"}'},
        },
        ["service", "entity_set"],
    ),
    _out({"service": _STR, "entity_set": _STR, "next_steps": _LIST, "follow_ons": _LIST}, ["next_steps"]),
)
VALIDATE = ToolSpec(
    "validate_call",
    "Check an OData call against the metadata and code lists; nothing is sent.",
    _obj(_CALL_ARGS, ["method", "url"]),
    _out({"valid": {"type": "boolean"}, "violations": _VIOLATIONS}, ["valid", "violations"]),
)


def call_spec(allow_writes: bool) -> ToolSpec:
    """``call``: read-only (GET only) unless writes are allowed, then possibly destructive."""
    methods = METHODS if allow_writes else ["GET"]
    what = "Send an OData request" if allow_writes else "Send a GET request (writes are off)"
    arguments = dict(_CALL_ARGS, method={"type": "string", "enum": methods}, select=_SELECT)
    if allow_writes:
        arguments["if_match"] = _IF_MATCH
    return ToolSpec(
        "call",
        f"{what}, validated first; CSRF, ETags, ISO dates handled. Without select the answer shows keys, "
        "fields the request names (a write's only if changed) and some others with a value; notes name the rest.",
        _obj(arguments, ["method", "url"]),
        _out(
            {
                "sent": {"type": "boolean"},
                "status": {"type": "integer"},
                "answer": {},
                "violations": _VIOLATIONS,
                "notes": {"type": "array", "items": _STR},
            },
            ["sent", "status"],
        ),
        read_only=not allow_writes,
        destructive=allow_writes,
    )


def tool_list(allow_writes: bool = False) -> list[ToolSpec]:
    """The typed tools, in the order an agent uses them."""
    return [FIND, DESCRIBE, NEXT, VALIDATE, call_spec(allow_writes)]


def answer_text(answer: JSONValue) -> str:
    """A tool's answer as the text a client reads: its JSON, without the spaces after ``,`` and ``:``."""
    return json.dumps(answer, ensure_ascii=False, separators=(",", ":"))


def openai_tools(specs: list[ToolSpec]) -> list[JSONObject]:
    return [spec.openai() for spec in specs]


__all__ = ["METHODS", "ToolSpec", "answer_text", "call_spec", "openai_tools", "tool_list"]
