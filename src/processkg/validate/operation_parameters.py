"""Calls of service operations: V2 function imports, V4 actions and functions.

How a call names an operation and where its parameters go:

* OData V2 function import: ``GET|POST /sap/opu/odata/sap/SERVICE/Name?Param='value'&Count=5``, the
  parameters in the query string as URI literals (OData V2 URI Conventions, 2.2.2 and 3.2.1), the
  method the one of ``m:HttpMethod``;
* OData V4 unbound: ``POST .../ActionImport`` with the parameters as a JSON object in the body;
  ``GET .../FunctionImport(P1='a',P2=@p)?@p=5`` with URI literals (parameter aliases allowed);
* OData V4 bound: the URL of the entity (or collection) followed by the qualified name,
  ``POST .../SalesOrder('1')/NS.Approve`` with a JSON body, ``GET .../SalesOrder('1')/NS.Total(Currency='EUR')``
  (OData V4.01 Part 2, URL Conventions, 4.5 "Addressing Operations").

:func:`resolve_operation` finds the operation a resolved call target names (``urls.resolve_service``
marks the segment), :func:`parameter_values` reads the parameters the call gives, checking what only
Python can check (the method, the URI literal syntax, where the parameters go); the values go on to the
payload shapes, which check the rest as they do for a create (unknown and missing parameters, Edm type,
MaxLength, codes). Problems are ``(kind, JSON pointer, message, value)`` like those of ``urls``.
"""

from __future__ import annotations

import re

from processkg.aliases import JSONObject, JSONValue
from processkg.services.model import Model, OperationInfo, Prop, TypeInfo
from processkg.validate.urls import NOT_PARAMETERS, CallTarget, Finding, did_you_mean, split_top

#: How a V2 URL writes a value of these types: ``datetime'...'`` (OData V2 URI Conventions, 2.2.2).
V2_PREFIXES = {
    "Edm.DateTime": "datetime",
    "Edm.DateTimeOffset": "datetimeoffset",
    "Edm.Guid": "guid",
    "Edm.Time": "time",
    "Edm.Binary": "binary",
}
#: How a V4 URL writes them (OData V4.01 ABNF): these quoted with their prefix, the rest of V2's bare.
V4_PREFIXES = {"Edm.Duration": "duration", "Edm.Binary": "binary"}
V4_BARE = frozenset({"Edm.Date", "Edm.DateTimeOffset", "Edm.TimeOfDay", "Edm.Guid"})
INTEGERS = frozenset({"Edm.Byte", "Edm.SByte", "Edm.Int16", "Edm.Int32"})
NUMBERS = INTEGERS | {"Edm.Int64", "Edm.Decimal", "Edm.Double", "Edm.Single"}
NUMBER = re.compile(r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?([MmLlDdFf])?$")
QUOTED = re.compile(r"^([A-Za-z][\w.]*)?'((?:[^']|'')*)'$")
#: An example of each type's URI literal, for the repair hint.
V2_EXAMPLES = {
    "Edm.String": "'text'",
    "Edm.DateTime": "datetime'2025-01-31T00:00:00'",
    "Edm.DateTimeOffset": "datetimeoffset'2025-01-31T10:00:00Z'",
    "Edm.Guid": "guid'6f0d3c9e-9a57-4c1e-9d61-3b2f3c8e0a11'",
    "Edm.Time": "time'PT13H20M'",
    "Edm.Decimal": "12.50M",
    "Edm.Int64": "42L",
    "Edm.Double": "1.5d",
    "Edm.Single": "1.5f",
    "Edm.Boolean": "true",
}
V4_EXAMPLES = {
    "Edm.String": "'text'",
    "Edm.Date": "2025-01-31",
    "Edm.DateTimeOffset": "2025-01-31T10:00:00Z",
    "Edm.TimeOfDay": "10:00:00",
    "Edm.Guid": "6f0d3c9e-9a57-4c1e-9d61-3b2f3c8e0a11",
    "Edm.Duration": "duration'P1D'",
    "Edm.Decimal": "12.50",
    "Edm.Double": "1.5",
    "Edm.Boolean": "true",
}


# ---------------------------------------------------------------- finding the operation


def resolve_operation(model: Model, target: CallTarget) -> tuple[OperationInfo | None, list[Finding]]:
    """The operation ``target`` calls (``target["operation"]`` names it) and the problems that keep
    it from being found: ``unknown-operation`` with the operations there are, ``wrong-method``."""
    svc = model.services[target["service"]]
    name, at = target["operation"], target.get("operation_at")
    if at is None:
        found = svc.root_operations(name)
        where = f"{svc.name} has no operation {name}"
        candidates = sorted(svc.root_operation_names())
    else:
        t = model.types.get(target["type"])
        many = addresses_many(model, target, at)
        bound = svc.bound_operations(name)
        found = [op for op in bound if op.collection == many and op.binding in _lineage(model, t)]
        if bound and not found:
            return None, [("unknown-operation", "", _wrong_binding(model, name, t, many, bound), name)]
        where = f"{_tn(t)} has no bound operation {name}"
        candidates = sorted({op.qname for op in svc.operations if op.bound and op.binding in _lineage(model, t)})
    if not found:
        return None, [("unknown-operation", "", where + did_you_mean(name, candidates), name)]
    op = _overload(found, _given_names(target, found[0]))
    return op, _check_method(op, target["method"])


def addresses_many(model: Model, target: CallTarget, at: int) -> bool:
    """Whether the URL segments before ``at`` address a collection (a set, or a to-many navigation,
    without a key) rather than one entity."""
    segments = target["segments"][:at]
    svc = model.services[target["service"]]
    t = model.types.get(svc.sets[segments[0][0]][0]) if segments[0][0] in svc.sets else None
    many = segments[0][1] is None
    for name, key in segments[1:]:
        nav = t.navs.get(name) if t is not None else None
        if nav is None:
            return many
        t, many = model.types.get(nav.target or ""), nav.to_many and key is None
    return many


def _lineage(model: Model, t: TypeInfo | None) -> set[str]:
    """``t`` and its base types, by IRI (an operation bound to a base type applies to derived ones)."""
    found: set[str] = set()
    while t is not None and t.iri not in found:
        found.add(t.iri)
        t = model.types.get(t.base) if t.base else None
    return found


def _wrong_binding(model: Model, name: str, t: TypeInfo | None, many: bool, bound: list[OperationInfo]) -> str:
    addressed = f"{'a collection of ' if many else 'one '}{_tn(t)}"
    bindings = sorted(
        f"{'a collection of ' if op.collection else 'one '}{_tn(model.types.get(op.binding or ''))}" for op in bound
    )
    return (
        f"{name} is not bound to {addressed}: it is bound to {' or '.join(bindings)}; "
        f"call it on {'an entity set URL' if bound[0].collection else 'the URL of one entity (with its key)'}"
    )


def _overload(found: list[OperationInfo], given: set[str]) -> OperationInfo:
    """Of several unbound overloads, the first that takes every parameter the call gives."""
    return next((op for op in found if given <= set(op.params)), found[0])


def _check_method(op: OperationInfo, method: str) -> list[Finding]:
    allowed = [op.method] if op.method else ["GET", "POST"]
    if method in allowed:
        return []
    why = {
        "V4Action": "an action takes POST",
        "V4Function": "a function takes GET",
    }.get(op.kind, f'm:HttpMethod="{op.method}"' if op.method else "a function import takes GET or POST")
    message = f"{op.qname or op.name} is called with {' or '.join(allowed)} ({why}), not {method}; send a {allowed[0]}"
    return [("wrong-method", "", message, method)]


def _tn(t: TypeInfo | None) -> str:
    return t.qname.rsplit(".", 1)[-1] if t is not None else "the entity"


# ---------------------------------------------------------------- the parameters a call gives


def parameter_values(op: OperationInfo, target: CallTarget, body: JSONValue) -> tuple[JSONObject, list[Finding]]:
    """``({parameter: JSON value}, problems)``: from the query string (V2), the URL (V4 function)
    or the JSON body (V4 action). URI literals become the JSON values the payload shapes check;
    one that is not a literal of its parameter's type is a ``datatype`` problem (its text still goes
    on, so a missing parameter is not reported for it)."""
    if op.kind == "V4Action":
        return _body_values(op, body)
    found: list[Finding] = []
    if op.kind == "V2FunctionImport":
        texts = {
            k: v for k, v in (target.get("query") or {}).items() if not k.startswith("$") and k not in NOT_PARAMETERS
        }
        if isinstance(body, dict) and body:
            found.append(("malformed", "", _body_hint(op), None))
    else:
        texts, found = _function_texts(op, target)
    values: JSONObject = {}
    for name, text in sorted(texts.items()):
        p = op.params.get(name)
        value, problem = uri_value(text, p.edm_type if p is not None else "", op.version.startswith(("1", "2", "3")))
        values[name] = value
        if p is not None and problem:
            found.append(("datatype", f"/{_esc(name)}", f"{name} is {p.edm_type}: {problem}", text))
    return values, found


def _body_values(op: OperationInfo, body: JSONValue) -> tuple[JSONObject, list[Finding]]:
    if body is None or body == "":
        return {}, []
    if not isinstance(body, dict):
        message = f"an action takes its parameters as one JSON object in the body, e.g. {_example_body(op)}"
        return {}, [("malformed", "", message, None)]
    return dict(body), []


def _example_body(op: OperationInfo) -> str:
    names = list(op.params)[:2]
    return "{" + ", ".join(f'"{n}": ...' for n in names) + "}"


def _body_hint(op: OperationInfo) -> str:
    names = list(op.params)[:2] or ["Param"]
    example = "&".join(f"{n}=..." for n in names)
    return (
        f"a V2 function import takes its parameters in the query string, not in a body: "
        f"{op.name}?{example} (strings quoted: {names[0]}='...')"
    )


def _function_texts(op: OperationInfo, target: CallTarget) -> tuple[dict[str, str], list[Finding]]:
    """``Name(P1=...,P2=@a)`` of a V4 function: the URI literal of each parameter, aliases resolved."""
    at = target.get("operation_at")
    segments = target["segments"]
    key = segments[at][1] if at is not None else segments[0][1]
    query = target.get("query") or {}
    texts: dict[str, str] = {}
    found: list[Finding] = []
    for part in split_top(key or "", ","):
        name, sep, value = part.partition("=")
        if not sep:
            found.append(("malformed", "", f"function parameter {part!r} is not Name=value", part))
            continue
        value = value.strip()
        if value.startswith("@"):
            if value not in query:
                found.append(
                    (
                        "missing-required",
                        f"/{_esc(name.strip())}",
                        f"parameter alias {value} has no value: add {value}=... to the query",
                        value,
                    )
                )
                continue
            value = query[value]
        texts[name.strip()] = value
    return texts, found


def uri_value(text: str, edm_type: str, v2: bool) -> tuple[JSONValue, str | None]:
    """A URI literal as the JSON value the payload shapes check (as a V2 or V4 JSON payload would
    carry it), with the problem when it is no literal of ``edm_type``."""
    text = text.strip()
    if text == "null":
        return None, None
    quoted = QUOTED.match(text)
    if quoted:
        prefix, inner = (quoted.group(1) or "").lower(), quoted.group(2).replace("''", "'")
        return inner, _quoted_problem(prefix, edm_type, v2)
    return _bare(text, edm_type, v2)


def _quoted_problem(prefix: str, edm_type: str, v2: bool) -> str | None:
    """What is wrong with a quoted literal (``'x'``, ``datetime'...'``) for ``edm_type``, if anything."""
    if not edm_type:
        return None  # an unknown parameter: reported as such
    if edm_type in NUMBERS or edm_type == "Edm.Boolean" or (not v2 and edm_type in V4_BARE):
        return _write(edm_type, v2)  # never quoted
    expected = (V2_PREFIXES if v2 else V4_PREFIXES).get(edm_type, "")
    if prefix == "x" and edm_type == "Edm.Binary":
        prefix = "binary"
    if prefix == expected or (not v2 and "." in prefix):  # V4 enumeration: Namespace.Type'Member'
        return None
    return _write(edm_type, v2)


def _bare(text: str, edm_type: str, v2: bool) -> tuple[JSONValue, str | None]:
    if text in ("true", "false") and edm_type in ("Edm.Boolean", ""):
        return text == "true", None
    number = NUMBER.match(text)
    if number and edm_type in NUMBERS:
        return _number(number.group(1) + (number.group(2) or ""), edm_type, v2), None
    if not v2 and edm_type in V4_BARE:
        return text, None
    if not edm_type:
        return text, None
    return text, _write(edm_type, v2)


def _number(text: str, edm_type: str, v2: bool) -> JSONValue:
    """A number in the JSON form of ``edm_type``: Int64 and Decimal as strings in V2, as V2 JSON has them."""
    if edm_type == "Edm.Decimal" or (v2 and edm_type == "Edm.Int64"):
        return text
    if edm_type in INTEGERS or edm_type == "Edm.Int64":
        return int(text) if re.fullmatch(r"[+-]?\d+", text) else float(text)
    return float(text)


def _write(edm_type: str, v2: bool) -> str:
    example = (V2_EXAMPLES if v2 else V4_EXAMPLES).get(edm_type)
    if example is None:
        example = "42" if edm_type in NUMBERS else "'...'"
    return f"write it as {example} in the URL ({'OData V2' if v2 else 'OData V4'} URI literal)"


def _given_names(target: CallTarget, op: OperationInfo) -> set[str]:
    if op.kind == "V2FunctionImport":
        return {k for k in (target.get("query") or {}) if not k.startswith("$") and k not in NOT_PARAMETERS}
    if op.kind == "V4Function":
        texts, _found = _function_texts(op, target)
        return set(texts)
    return set()


def _esc(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


# ---------------------------------------------------------------- messages


def message(kind: str, name: str, op: OperationInfo, item: Prop | None) -> str | None:
    """The repair hint of a payload-shape result on an operation's parameters (None: the usual one)."""
    label = op.qname or op.name
    if kind == "unknown-parameter":
        return f"{label} has no parameter {name}{did_you_mean(name, op.params)}; its parameters: {_names(op)}"
    if kind == "missing-required":
        return f"{name} is a parameter of {label} that is not nullable; give it {_where(op, name, item)}"
    return None


def _names(op: OperationInfo) -> str:
    return ", ".join(op.params) or "none"


def _where(op: OperationInfo, name: str, item: Prop | None) -> str:
    example = (V2_EXAMPLES if op.kind == "V2FunctionImport" else V4_EXAMPLES).get(
        item.edm_type if item is not None else "Edm.String", "..."
    )
    if op.kind == "V2FunctionImport":
        return f"in the query string: {op.name}?{name}={example}"
    if op.kind == "V4Function":
        return f"in the URL: {op.qname}({name}={example})"
    return f'in the JSON body: {{"{name}": ...}}'


__all__ = [
    "addresses_many",
    "message",
    "parameter_values",
    "resolve_operation",
    "uri_value",
]
