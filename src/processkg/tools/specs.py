"""The tool list: names, descriptions, input and output JSON schemas and annotations, written once.

Both faces read it: ``kg mcp`` lists these tools over the Model Context Protocol and ``kg agent``
offers them to a chat model in the OpenAI ``tools`` format (:func:`openai_tools`). Discovery is
progressive: five tools whatever the size of the store (find, describe, next steps, validate,
call), never one tool per entity set, so the list costs the same few hundred tokens for the demo
and for the 45 services of the A2X corpus (``benchmarks/bench_tools.py`` measures it).
"""

from __future__ import annotations

from dataclasses import dataclass

from processkg.aliases import JSONObject

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
    "url": {"type": "string", "description": "path from describe, with key and query options"},
    "body": {"type": "object", "description": "JSON payload of a write"},
}
_SELECT = {
    "type": "array",
    "items": {"type": "string"},
    "description": "show only these fields of each record (to_Item/Material for expanded ones)",
}
_IF_MATCH = {"type": "string", "description": "ETag for If-Match (default: read from the entity)"}

FIND = ToolSpec(
    "find_entity_sets",
    "Entity sets for a business task: key, next process steps, path unless /sap/opu/odata/sap/SERVICE/ENTITY_SET. "
    "Start here.",
    _obj({"task": {"type": "string"}, "k": {"type": "integer", "minimum": 1, "maximum": 20, "default": 3}}, ["task"]),
    _out({"results": _LIST}, ["results"]),
)
DESCRIBE = ToolSpec(
    "describe",
    "How to read and write an entity set: path, key, required and optional fields, codes, deep insert, ETag, "
    'an example create payload. detail "full": all properties, codes, operations, process steps.',
    _obj(
        {
            "service": _STR,
            "entity_set": _STR,
            "detail": {"type": "string", "enum": ["compact", "full"], "default": "compact"},
        },
        ["service", "entity_set"],
    ),
    _out(
        {
            "service": _STR,
            "entity_set": _STR,
            "path": _STR,
            "key": {"type": "array", "items": _STR},
            "required_on_create": {"type": "array", "items": _STR},
            "optional": _STR,
            "properties": {"type": "array", "items": _STR},
            "codes": {"type": "object"},
            "deep_insert": {"type": "object"},
            "etag": {"type": "boolean"},
            "example_create": {"type": "object"},
            "made_from": {"type": "array", "items": _STR},
            "value_helps": _LIST,
            "navigation": {"type": "array", "items": _STR},
            "allows": {"type": "array", "items": _STR},
            "operations": _LIST,
            "process": _LIST,
        },
        ["service", "entity_set", "path"],
    ),
)
NEXT = ToolSpec(
    "next_steps",
    "The process steps after those using an entity set, and their entity sets; and the documents made "
    "from its records, with a payload template (the record's keys filled in when given).",
    _obj(
        {
            "service": _STR,
            "entity_set": _STR,
            "record": {"type": "object", "description": 'key of one record of the set, e.g. {"SalesOrder": "1"}'},
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
        f"{what}, validated first (not sent if invalid); CSRF, ETags, ISO dates handled. Without select the "
        "answer shows keys, fields the request names and some others with a value; notes name the rest.",
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


def openai_tools(specs: list[ToolSpec]) -> list[JSONObject]:
    return [spec.openai() for spec in specs]


__all__ = ["METHODS", "ToolSpec", "call_spec", "openai_tools", "tool_list"]
