"""OData request URLs: find service, entity set and keys; check GET query options and the target
of an update or delete.

Understands SAP service roots (``/sap/opu/odata/sap/API_X_SRV/...`` for V2 and
``/sap/opu/odata4/sap/api_x/srvd_a2x/sap/x/0001/...`` for V4 RAP services), key
predicates (``('1')``, ``(SalesOrder='1',SalesOrderItem='10')``) and the system query
options ``$filter``, ``$select``, ``$orderby`` and ``$expand`` (V2 paths and V4 nested
options), and the rules SAP's annotations set for them: properties a read must filter on
(``sap:required-in-filter``, ``FilterRestrictions``), properties it may not filter on
(``sap:filterable="false"``), and sets that do not allow update or delete. Problems are
returned as ``(kind, path, message, value)`` tuples; ``path`` is a JSON pointer into
``{"key": ..., "$select": [...], ...}``.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable
from typing import TypeAlias
from urllib.parse import unquote, urlsplit

from processkg.aliases import JSONValue
from processkg.services.model import Model, Prop, ServiceHead, ServiceInfo, SetRules, TypeInfo
from processkg.sources.odata.edm import RAP_SERVICE

CallTarget: TypeAlias = dict[str, JSONValue]
"""A call's parsed target: service, segments, query, method, then type, set, ... once resolved."""
Segment: TypeAlias = tuple[str, str | None]
"""A URL path segment: (name, key predicate text or None)."""
Finding: TypeAlias = tuple[str, str, str, JSONValue]
"""A violation before it becomes a ``calls.Violation``: (kind, JSON pointer, message, value)."""

KEYWORDS = frozenset(
    [
        "eq",
        "ne",
        "gt",
        "ge",
        "lt",
        "le",
        "and",
        "or",
        "not",
        "has",
        "in",
        "add",
        "sub",
        "mul",
        "div",
        "divby",
        "mod",
        "null",
        "true",
        "false",
        "asc",
        "desc",
    ]
)
TOKEN = re.compile(
    r"""
    (?P<string>'(?:[^']|'')*')
  | (?P<typed>[A-Za-z][\w.]*'(?:[^']|'')*')
  | (?P<number>-?\d[\w.:+-]*)
  | (?P<path>[A-Za-z_$][\w.]*(?:/[A-Za-z_$][\w.]*)*)
  | (?P<symbol>[(),:;*/@])
  | (?P<space>\s+)
""",
    re.VERBOSE,
)
METADATA = "$metadata"  # the service's metadata document: a resource, not an entity set
#: Query options of a call that are not parameters of a V2 function import (SAP's client and language).
NOT_PARAMETERS = frozenset({"sap-client", "sap-language", "search"})
MAX_EXPAND_DEPTH = 16  # levels of $expand nested in $expand (V4 nested options)


def did_you_mean(word: str, candidates: Iterable[str]) -> str:
    """``"; did you mean A, B?"`` with up to three close names, or ``""``.

    Only names of about the same length are compared: a typo rarely changes the length
    much, and difflib over hundreds of property names would dominate a batch's run time.
    """
    slack = max(3, len(word) // 3)
    pool = sorted(c for c in candidates if abs(len(c) - len(word)) <= slack)
    close = difflib.get_close_matches(word, pool, n=3)
    return f"; did you mean {', '.join(close)}?" if close else ""


# ---------------------------------------------------------------- parsing


def parse_call_url(url: str, service: str | None = None) -> CallTarget:
    """Split a request URL into path segments ``[(name, key text or None)]`` and query options."""
    parts = urlsplit(url.strip())
    path, query = parts.path, parts.query
    segments = [_segment(unquote(s)) for s in split_top(path, "/") if s]
    return {"service": service, "url_segments": segments, "segments": None, "query": parse_query(query)}


def _segment(text: str) -> Segment:
    if text.endswith(")") and "(" in text:
        name, _, rest = text.partition("(")
        return name, rest[:-1]
    return text, None


def parse_query(query: str) -> dict[str, str]:
    options: dict[str, str] = {}
    for item in split_top(query, "&"):
        name, _, value = item.partition("=")
        if name:
            options[unquote(name)] = unquote(value)
    return options


def split_top(text: str, sep: str) -> list[str]:
    """Split on ``sep`` outside quotes and parentheses (a quote toggles quoting wherever it stands;
    parentheses inside quotes do not count); the parts stripped, empty ones dropped. Only the quotes,
    parentheses and separators are visited: this runs on every URL a server or validator reads."""
    if "'" not in text and "(" not in text and ")" not in text:
        parts = text.split(sep)
    else:
        parts, start, depth, quoted = [], 0, 0, False
        for m in _SPECIAL[sep].finditer(text):
            ch = m.group()
            if ch == "'":
                quoted = not quoted
            elif quoted:
                continue
            elif ch == "(":
                depth += 1
            elif ch == ")":
                depth -= 1
            elif depth == 0:
                parts.append(text[start : m.start()])
                start = m.end()
        parts.append(text[start:])
    return [s.strip() for s in parts if s.strip()]


_SPECIAL = {sep: re.compile("['()" + re.escape(sep) + "]") for sep in "/&,;"}


# ---------------------------------------------------------------- service and resource


def service_aliases(svc: ServiceHead | ServiceInfo) -> set[str]:
    """Lower-case names that identify ``svc`` in a URL: its name, and a RAP service's short name."""
    names = {svc.name.lower()}
    for ns in svc.namespaces:
        m = RAP_SERVICE.match(ns)
        if m:
            names.add(m.group(1).lower())
    return names


def resolve_service(model: Model, target: CallTarget) -> None:
    """Set ``service``, ``segments``, ``type``, ``set``... on ``target``; append violations."""
    bad = target["violations"]
    svc, segments = _find_service(model, target)
    if svc is None:
        bad.append(_unknown_service(model, target.get("service") or _guess_service(target["url_segments"])))
        return
    target["service"], target["service_version"] = svc.name, svc.version
    target["segments"] = segments
    if not segments and target["method"] == "GET":
        target["service_document"] = True  # GET of the service root: the list of entity sets
        return
    if [name for name, _key in segments] == [METADATA] and target["method"] == "GET":
        target["metadata_document"] = True  # GET of $metadata (its query options ignored, as servers do)
        return
    if not segments:
        bad.append(("malformed", "", f"the URL names service {svc.name} but no entity set", None))
        return
    set_name, _key = segments[0]
    if set_name not in svc.sets and svc.root_operations(set_name):
        target["operation"] = (
            set_name  # a function import, action or function import: see validate.operation_parameters
        )
        return
    if set_name not in svc.sets:
        bad.append(_unknown_resource(svc, set_name, target))
        return
    target["set"] = set_name
    target["type"], target["creatable"] = svc.sets[set_name]
    _walk(model, target, bad)


def _unknown_resource(svc: ServiceInfo, name: str, target: CallTarget) -> Finding:
    """No entity set and no operation of that name: an ``unknown-operation`` when only operation names
    are close, or when the call passes parameters in the query string; else ``unknown-entity-set``."""
    operations = svc.root_operation_names()
    near_sets, near_ops = did_you_mean(name, svc.sets), did_you_mean(name, operations)
    params = any(not k.startswith("$") and k not in NOT_PARAMETERS for k in target.get("query") or {})
    if operations and not near_sets and (near_ops or params):
        return ("unknown-operation", "", f"{svc.name} has no operation {name}{near_ops}", name)
    return ("unknown-entity-set", "", f"{svc.name} has no entity set {name}{near_sets}", name)


def _find_service(model: Model, target: CallTarget) -> tuple[ServiceInfo | None, list[Segment]]:
    if target.get("url_segments") is None:
        svc = _service_named(model, target.get("service") or "")
        return svc, target["segments"]
    segs = target["url_segments"]
    hint = (target.get("service") or "").lower()
    for i, (name, key) in enumerate(segs):
        svc = _service_named(model, name) if key is None else None
        if svc is not None and (not hint or hint in service_aliases(svc)):
            return svc, _after_service_root(svc, segs[i + 1 :])
    svc = _service_named(model, hint) if hint else None
    return (svc, segs) if svc is not None else (None, [])  # a URL relative to the service root


def _after_service_root(svc: ServiceInfo, rest: list[Segment]) -> list[Segment]:
    """A RAP V4 root goes on after the short name: ``.../srvd_a2x/sap/salesorder/0001/``."""
    version_at = next((j for j, (n, _) in enumerate(rest) if re.fullmatch(r"\d{4}", n)), None)
    return rest[version_at + 1 :] if version_at is not None and svc.version != "2.0" else rest


def _guess_service(segs: list[Segment]) -> str:
    """The segment that names the service in an SAP URL (after ``odata/sap/``), else the first one."""
    names = [n for n, _ in segs]
    for i in range(len(names) - 2):
        if names[i].lower() in ("odata", "odata4") and names[i + 1].lower() == "sap":
            return names[i + 2]
    return names[0] if names else ""


def _service_named(model: Model, name: str) -> ServiceInfo | None:
    if not model.aliases:
        for svc_name, head in model.heads.items():
            for alias in service_aliases(head):
                model.aliases.setdefault(alias, svc_name)
    found = model.aliases.get(name.lower().split(";", 1)[0])
    return model.services[found] if found is not None else None


def _unknown_service(model: Model, name: str) -> Finding:
    hint = did_you_mean(name, model.services)
    return ("unknown-service", "", f"no service {name or '(none given)'} in this graph{hint}", name or None)


def _walk(model: Model, target: CallTarget, bad: list[Finding]) -> None:
    """Follow navigation segments after the entity set; the last entity type is the target."""
    t = model.types.get(target["type"])
    for i, (name, _key) in enumerate(target["segments"][1:], start=1):
        if name.startswith("$") or t is None:
            break
        if name not in t.navs and name not in t.props and ("." in name or _bound(model, target, name)):
            target["operation"], target["operation_at"] = name, i  # NS.Action after an entity or a collection
            return
        if name in t.navs and t.navs[name].target in model.types:
            t = model.types[t.navs[name].target or ""]
            target["type"] = t.iri
            target["creatable"] = True
        elif name in t.props and i == len(target["segments"]) - 1 and target["method"] == "GET":
            break
        else:
            bad.append(_unknown_member(t, name, f"/segments/{i}", nav=True))
            return


def _bound(model: Model, target: CallTarget, name: str) -> bool:
    return bool(model.services[target["service"]].bound_operations(name))


# ---------------------------------------------------------------- GET checks


def check_get(model: Model, target: CallTarget) -> list[Finding]:
    if target.get("service_document") or target.get("metadata_document"):
        return []
    svc = model.services[target["service"]]
    t = model.types.get(svc.sets[target["set"]][0])
    out = []
    out.extend(_check_key(t, target["segments"][0][1], "/key"))
    last = model.types.get(target["type"]) or t
    q = target.get("query") or {}
    if "$filter" in q:
        out.extend(check_filter(model, last, q["$filter"], "/$filter"))
        out.extend(_not_filterable(last, set_rules(model, target), q["$filter"], target["set"]))
    if _reads_the_set(target["segments"]) and last is not None:
        out.extend(_required_filters(last, set_rules(model, target), q.get("$filter", ""), target["set"]))
    for i, item in enumerate(split_top(q.get("$select", ""), ",")):
        out.extend(_check_path(model, last, item, f"/$select/{i}", select=True))
    for i, item in enumerate(split_top(q.get("$orderby", ""), ",")):
        out.extend(_check_path(model, last, re.sub(r"\s+(asc|desc)$", "", item), f"/$orderby/{i}"))
    for i, item in enumerate(split_top(q.get("$expand", ""), ",")):
        out.extend(check_expand(model, last, item, f"/$expand/{i}"))
    return out


def set_rules(model: Model, target: CallTarget) -> SetRules:
    """The rules of the entity set a URL addresses directly; none (all allowed) along a navigation."""
    segments = [name for name, _key in target.get("segments") or [] if not name.startswith("$")]
    svc = model.services.get(target.get("service") or "")
    if svc is None or len(segments) != 1:
        return SetRules()
    return svc.rules.get(target.get("set") or "", SetRules())


def _reads_the_set(segments: list[Segment]) -> bool:
    """A GET of the entity set's collection (``A_X``, ``A_X/$count``), not of one entity or a navigation."""
    return bool(segments) and segments[0][1] is None and all(n.startswith("$") for n, _k in segments[1:])


def filter_paths(text: str) -> set[str]:
    """The first segment of every property path a ``$filter`` names (lambda variables and functions left out)."""
    tokens = [(m.lastgroup, m.group()) for m in TOKEN.finditer(text) if m.lastgroup != "space"]
    found = set()
    for i, (kind, value) in enumerate(tokens):
        nxt = tokens[i + 1][1] if i + 1 < len(tokens) else ""
        if kind == "path" and value.lower() not in KEYWORDS and nxt not in ("(", ":"):
            found.add(value.split("/", 1)[0])
    return found


def _required_filters(t: TypeInfo, rules: SetRules, text: str, set_name: str) -> list[Finding]:
    """sap:required-in-filter, FilterRestrictions/RequiredProperties and RequiresFilter of a read of the set."""
    needed = {n for n, p in t.props.items() if p.required_in_filter} | rules.named("filterRequiredProperty")
    used = filter_paths(text)
    out: list[Finding] = []
    for name in sorted(needed - used):
        p = t.props.get(name)
        by_attribute = p is not None and p.required_in_filter
        why = "sap:required-in-filter" if by_attribute else "FilterRestrictions/RequiredProperties"
        example = f"{name} eq '...'" if p is None or p.item_type == "Edm.String" else f"{name} eq ..."
        out.append(
            (
                "missing-required",
                "/$filter",
                f"{set_name} can only be read with a $filter on {name} ({why}); add {example} to $filter",
                name,
            )
        )
    if rules.requires_filter and not text.strip() and not needed:
        message = f"{set_name} can only be read with a $filter (FilterRestrictions/RequiresFilter); add one"
        out.append(("missing-required", "/$filter", message, None))
    return out


def _not_filterable(t: TypeInfo | None, rules: SetRules, text: str, set_name: str) -> list[Finding]:
    """Properties of the read entities that a $filter may not use (sap:filterable, NonFilterableProperties)."""
    if t is None:
        return []
    out: list[Finding] = []
    for name in sorted(filter_paths(text)):
        p = t.props.get(name)
        if p is None or (p.filterable and name not in rules.named("nonFilterableProperty")):
            continue
        why = 'sap:filterable="false"' if not p.filterable else "FilterRestrictions/NonFilterableProperties"
        message = (
            f"{name} cannot be used in $filter of {set_name} ({why}); "
            f"remove it from $filter, read {name} with $select and compare it after reading"
        )
        out.append(("not-filterable", "/$filter", message, name))
    return out


# ---------------------------------------------------------------- update and delete


def check_write_target(model: Model, target: CallTarget) -> list[Finding]:
    """PATCH, MERGE, PUT and DELETE address one entity (its key, or a to-one navigation) of a
    set that allows the method (``sap:updatable``/``sap:deletable``, Update/DeleteRestrictions)."""
    method, segments = target["method"], target["segments"]
    if any(name.startswith("$") for name, _key in segments):
        return []  # $value, $links, $ref: not an entity's properties
    svc = model.services[target["service"]]
    t = model.types.get(svc.sets[target["set"]][0])
    out = list(_check_key(t, segments[0][1], "/key"))
    if not _one_entity(model, t, segments):
        example = f"{target['set']}('...')" if len(segments) == 1 else "the key of its last segment"
        message = f"a {method} addresses one entity: name it by its key in the URL, e.g. {example}"
        out.append(("missing-required", "/key", message, None))
    rules = set_rules(model, target)
    allowed = rules.deletable if method == "DELETE" else rules.updatable
    if not allowed:
        out.append(("read-only", "", _denied(method, target["set"]), target["set"]))
    return out


def _one_entity(model: Model, t: TypeInfo | None, segments: list[Segment]) -> bool:
    """The URL's last segment is one entity: it has a key predicate, or is a to-one navigation."""
    if segments[-1][1] is not None:
        return True
    if len(segments) == 1:
        return False
    for name, _key in segments[1:-1]:
        t = model.types.get(t.navs[name].target or "") if t is not None and name in t.navs else None
    nav = t.navs.get(segments[-1][0]) if t is not None else None
    return nav is not None and not nav.to_many


def _denied(method: str, set_name: str) -> str:
    what, attr, term = (
        ("delete", "sap:deletable", "DeleteRestrictions/Deletable")
        if method == "DELETE"
        else ("update", "sap:updatable", "UpdateRestrictions/Updatable")
    )
    return (
        f'entity set {set_name} does not allow {what} ({attr}="false" or Capabilities.{term} false); '
        f"do not {what} it through this entity set: look for an operation of the service that does what you need "
        "(e.g. a cancel, reject or change function)"
    )


def entity_key(model: Model, target: CallTarget) -> dict[str, str]:
    """{key property: value as text} from the key predicate of the URL's last segment (quotes and
    ``guid'...'``-style prefixes removed); {} when the last segment has none."""
    segments = target.get("segments") or []
    t = model.types.get(target.get("type") or "")
    text = segments[-1][1] if segments else None
    if t is None or text is None:
        return {}
    keys = sorted(p.name for p in t.props.values() if p.key)
    parts = split_top(text, ",")
    if len(parts) == 1 and "=" not in parts[0].split("'")[0] and len(keys) == 1:
        return {keys[0]: _key_text(parts[0])}
    pairs = [part.partition("=") for part in parts]
    return {name.strip(): _key_text(value) for name, sep, value in pairs if sep}


def _key_text(literal: str) -> str:
    value = literal.strip()
    quote = value.find("'")
    if quote >= 0 and value.endswith("'"):
        return value[quote + 1 : -1].replace("''", "'")
    return value


def _check_key(t: TypeInfo | None, text: str | None, pointer: str) -> list[Finding]:
    if text is None or t is None:
        return []
    keys = [p for p in t.props.values() if p.key]
    names = sorted(p.name for p in keys)
    parts = split_top(text, ",")
    if len(parts) == 1 and "=" not in parts[0].split("'")[0]:
        if len(keys) == 1:
            return _check_key_value(keys[0], parts[0], pointer)
        return [
            (
                "missing-required",
                pointer,
                f"{_tn(t)} has a key of {len(keys)} properties "
                f"({', '.join(names)}): name each one, e.g. ({names[0]}='...',...)",
                text,
            )
        ]
    return _check_named_key(t, keys, parts, pointer)


def _check_named_key(t: TypeInfo, keys: list[Prop], parts: list[str], pointer: str) -> list[Finding]:
    out: list[Finding] = []
    given: dict[str, str] = {}
    for part in parts:
        name, sep, value = part.partition("=")
        name = name.strip()
        if not sep:
            return [("malformed", pointer, f"key predicate part {part!r} is not Name=value", part)]
        given[name] = value.strip()
    by_name = {p.name: p for p in keys}
    for name, value in given.items():
        if name not in by_name:
            what = "a property" if name not in t.props else "a key property"
            out.append(
                (
                    "unknown-property",
                    f"{pointer}/{name}",
                    f"{name} is not {what} of {_tn(t)}; key: {', '.join(sorted(by_name))}",
                    name,
                )
            )
        else:
            out.extend(_check_key_value(by_name[name], value, f"{pointer}/{name}"))
    for name in sorted(set(by_name) - set(given)):
        out.append(("missing-required", f"{pointer}/{name}", f"key property {name} of {_tn(t)} is missing", None))
    return out


def _check_key_value(p: Prop, value: str, pointer: str) -> list[Finding]:
    quoted = len(value) >= 2 and value[0] == "'" and value[-1] == "'"
    if p.item_type == "Edm.String" and not quoted:
        return [("datatype", pointer, f"{p.name} is Edm.String: quote the key value, e.g. '{value}'", value)]
    if p.item_type == "Edm.String" and p.max_length and len(value[1:-1].replace("''", "'")) > p.max_length:
        return [("max-length", pointer, f"{p.name} is at most {p.max_length} characters", value)]
    numeric = p.item_type in ("Edm.Int16", "Edm.Int32", "Edm.Int64", "Edm.Byte", "Edm.SByte", "Edm.Decimal")
    if numeric and quoted:
        return [("datatype", pointer, f"{p.name} is {p.item_type}: do not quote the key value", value)]
    return []


def check_filter(model: Model, t: TypeInfo | None, text: str, pointer: str) -> list[Finding]:
    """Every property path in a ``$filter`` expression, lambda variables (``d:d/Material``) included."""
    tokens = [(m.lastgroup, m.group()) for m in TOKEN.finditer(text) if m.lastgroup != "space"]
    out: list[Finding] = []
    scope: dict[str, TypeInfo | None] = {}
    for i, (kind, value) in enumerate(tokens):
        nxt = tokens[i + 1][1] if i + 1 < len(tokens) else ""
        if kind != "path" or value.lower() in KEYWORDS or (nxt == "(" and "/" not in value):
            continue  # literals, operators, function names
        if nxt == ":":
            scope[value] = scope.get("$lambda")  # the variable of the lambda just opened
            continue
        base, path = _in_scope(scope, t, value)
        if nxt == "(" and path.rsplit("/", 1)[-1] in ("any", "all"):
            path = path.rpartition("/")[0]
            scope["$lambda"] = _resolve(model, base, path) if path else base
        if path:
            out.extend(_check_path(model, base, path, pointer))
    return out


def _in_scope(scope: dict[str, TypeInfo | None], t: TypeInfo | None, value: str) -> tuple[TypeInfo | None, str]:
    """(type, path): a path starting with a lambda variable is resolved on the variable's type."""
    head, _, rest = value.partition("/")
    return (scope[head], rest) if head in scope and rest else (t, value)


def _resolve(model: Model, t: TypeInfo | None, path: str) -> TypeInfo | None:
    for seg in path.split("/"):
        if t is None:
            return None
        if seg in t.navs:
            t = model.types.get(t.navs[seg].target or "")
        elif seg in t.props and t.props[seg].complex_type:
            t = model.types.get(t.props[seg].complex_type or "")
        else:
            return None
    return t


def _check_path(model: Model, t: TypeInfo | None, path: str, pointer: str, select: bool = False) -> list[Finding]:
    segs = [s for s in path.strip().split("/") if s]
    for k, seg in enumerate(segs):
        if t is None or (select and seg == "*") or seg.startswith(("$", "@")) or "." in seg:
            return []
        last = k == len(segs) - 1
        if seg in t.navs:
            t = model.types.get(t.navs[seg].target or "")
        elif seg in t.props:
            p = t.props[seg]
            t = model.types.get(p.complex_type) if p.complex_type else None
        else:
            return [_unknown_member(t, seg, pointer, nav=not last)]
    return []


def check_expand(model: Model, t: TypeInfo | None, item: str, pointer: str, level: int = 1) -> list[Finding]:
    """Paths of one ``$expand`` item and of its nested options, at most :data:`MAX_EXPAND_DEPTH` deep."""
    if level > MAX_EXPAND_DEPTH:
        return [("malformed", pointer, f"$expand nested deeper than the limit of {MAX_EXPAND_DEPTH} levels", None)]
    path, _, nested = item.partition("(")
    out: list[Finding] = []
    cur = t
    for seg in [s for s in path.strip().split("/") if s]:
        if cur is None or seg == "*" or seg.startswith("$"):
            return out
        if seg not in cur.navs:
            return out + [_unknown_member(cur, seg, pointer, nav=True)]
        cur = model.types.get(cur.navs[seg].target or "")
    for option in split_top(nested[:-1] if nested.endswith(")") else nested, ";"):
        name, _, value = option.partition("=")
        if name == "$select":
            for i, sel in enumerate(split_top(value, ",")):
                out.extend(_check_path(model, cur, sel, f"{pointer}/$select/{i}", select=True))
        elif name == "$expand":
            for i, sub in enumerate(split_top(value, ",")):
                out.extend(check_expand(model, cur, sub, f"{pointer}/$expand/{i}", level + 1))
        elif name == "$filter":
            out.extend(check_filter(model, cur, value, f"{pointer}/$filter"))
    return out


def _unknown_member(t: TypeInfo, name: str, pointer: str, nav: bool) -> Finding:
    hint = did_you_mean(name, t.navs if nav else set(t.props) | set(t.navs))
    if nav:
        return ("unknown-navigation", pointer, f"{_tn(t)} has no navigation property {name}{hint}", name)
    return ("unknown-property", pointer, f"{_tn(t)} has no property {name}{hint}", name)


def _tn(t: TypeInfo) -> str:
    return t.qname.rsplit(".", 1)[-1]


__all__ = [
    "check_expand",
    "check_filter",
    "check_get",
    "check_write_target",
    "did_you_mean",
    "entity_key",
    "filter_paths",
    "parse_call_url",
    "parse_query",
    "resolve_service",
    "service_aliases",
    "set_rules",
    "split_top",
]
