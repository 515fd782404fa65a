"""OData JSON of the service's version: V2 (``d``, ``results``, ``__metadata``) and V4 (``@odata.context``, ``value``)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from urllib.parse import quote

from processkg.aliases import JSONObject, JSONValue
from processkg.serve.values import changes_json, to_json
from processkg.services.model import Prop, TypeInfo, made_once


def is_v2(t: TypeInfo) -> bool:
    return not t.version.startswith("4")


@dataclass(frozen=True)
class _Form:
    """How the records of one type are written, worked out once per type object (a store's types do
    not change once read): its version, key properties, and each property with its Edm type where
    :func:`to_json` changes a stored value of it (None where it returns the value as it is: a string,
    a GUID, a V4 date...), so the properties of a record are mostly copied without a call."""

    v2: bool
    keys: list[Prop]
    rendered: list[tuple[str, str | None]]
    positions: dict[str, int]  # property name -> where it is in ``rendered``
    navs: list[str]  # the names of the navigation properties, sorted


def _form(t: TypeInfo) -> _Form:
    return made_once(t, _make_form)


def _make_form(t: TypeInfo) -> _Form:
    v2 = is_v2(t)
    rendered = [(n, p.edm_type if changes_json(p.edm_type, v2) else None) for n, p in t.props.items()]
    keys = [p for p in t.props.values() if p.key]
    positions = {name: i for i, (name, _edm) in enumerate(rendered)}
    return _Form(v2, keys, rendered, positions, sorted(t.navs))


def key_props(t: TypeInfo) -> list[Prop]:
    """The key properties of ``t`` in its order (made once per type)."""
    return _form(t).keys


def key_predicate(t: TypeInfo, record: dict[str, object]) -> str:
    """``('1')`` or ``(SalesOrder='1',SalesOrderItem='10')``, quoting strings as OData does."""
    return _predicate(_form(t), record)


def _predicate(form: _Form, record: dict[str, object]) -> str:
    keys, v2 = form.keys, form.v2
    parts = [_key_literal(p.edm_type, _text(record.get(p.name)), v2) for p in keys]
    if len(parts) == 1:
        return f"({parts[0]})"
    return "(" + ",".join(f"{p.name}={v}" for p, v in zip(keys, parts, strict=True)) + ")"


def _text(value: JSONValue) -> str:
    return "" if value is None else str(value)


@lru_cache(maxsize=4096)
def _key_literal(edm: str, text: str, v2: bool) -> str:
    """A key value (its text) in a key predicate; kept (the same text gives the same literal)."""
    if edm in ("Edm.String",):
        return "'" + quote(text.replace("'", "''"), safe="") + "'"
    if edm == "Edm.Guid" and v2:
        return f"guid'{text}'"
    if edm in ("Edm.DateTime",) and v2:
        return f"datetime'{text.rstrip('Z')}'"
    return text


def entity(
    t: TypeInfo, record: dict[str, object], base: str, set_name: str, select: list[str] | None = None
) -> dict[str, object]:
    """One record as a JSON object; ``base`` is the service root URL."""
    form = _form(t)
    v2 = form.v2
    out: dict[str, object] = {}
    if v2:
        uri = f"{base}{set_name}{_predicate(form, record)}"
        out["__metadata"] = {"id": uri, "uri": uri, "type": t.qname}
    if select is None:
        plan = form.rendered
        if len(record) * 4 < len(plan):  # a record with a few of many properties (a create): by its own names
            at = form.positions
            plan = [plan[i] for i in sorted([at[name] for name in record if name in at])]
        for name, edm_type in plan:
            if name in record:
                value = record[name]
                out[name] = value if edm_type is None or value is None else to_json(value, edm_type, v2)
    else:
        for name, prop in t.props.items():
            if name in select:  # a selected property without a value is null
                out[name] = to_json(record.get(name), prop.edm_type, v2)
    if v2:  # a navigation property not expanded is a deferred link (an expansion replaces it)
        for nav in form.navs:
            if select is None or nav in select:
                out[nav] = {"__deferred": {"uri": f"{uri}/{nav}"}}
    return out


def collection(t: TypeInfo, items: list[dict[str, object]], set_name: str, count: int | None) -> dict[str, object]:
    if is_v2(t):
        body: dict[str, object] = {"results": items}
        if count is not None:
            body["__count"] = str(count)
        return {"d": body}
    out: dict[str, object] = {"@odata.context": f"$metadata#{set_name}"}
    if count is not None:
        out["@odata.count"] = count
    out["value"] = items
    return out


def single(t: TypeInfo, item: dict[str, object], set_name: str) -> dict[str, object]:
    if is_v2(t):
        return {"d": item}
    return {"@odata.context": f"$metadata#{set_name}/$entity", **item}


def service_document(version: str, sets: list[str]) -> dict[str, object]:
    if not version.startswith("4"):
        return {"d": {"EntitySets": sets}}
    return {"@odata.context": "$metadata", "value": [{"name": s, "url": s, "kind": "EntitySet"} for s in sets]}


def error(version: str, code: str, message: str, details: list[dict[str, str]] | None = None) -> dict[str, object]:
    """An OData error body; ``details`` are ``{code, message, target}`` entries, one per violation."""
    details = details or []
    if not version.startswith("4"):
        inner = {"errordetails": [{**d, "severity": "error"} for d in details]}
        return {"error": {"code": code, "message": {"lang": "en", "value": message}, "innererror": inner}}
    return {"error": {"code": code, "message": message, "details": details}}


def children(value: JSONValue) -> list[tuple[str, JSONObject]]:
    """The entities of a navigation property's value in a write (V2's ``{"results": [...]}``, a list, or
    one object), each with its JSON pointer step (``/0``, ``/1``; ``""`` for a single one)."""
    items = value.get("results") if isinstance(value, dict) and "results" in value else value
    if isinstance(items, list):
        return [(f"/{i}", c) for i, c in enumerate(items) if isinstance(c, dict)]
    return [("", items)] if isinstance(items, dict) else []
