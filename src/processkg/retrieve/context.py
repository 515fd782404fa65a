"""Typed context for retrieved entity sets (``kg retrieve --context``): what an agent is given.

For each entity set: its service and URL path, key and key predicate, properties with Edm
types and max lengths, which are required on create (SAP's own markers first, else the rule
of docs/validation.md), which are read-only or create-only, which a read must or may not
filter on, navigation
properties with cardinality and target, value helps with their codes (or "codes unknown"),
and the process chain: the activities that use it, with the activities right before and
after them and the entity sets those use; and the curated document flow: the documents it is made
from, which of its properties carry their keys and what they must have done first. The data comes from ``queries/retrieve-context-*.rq``
and is rendered by the jinja2 template ``templates/context.md.j2``.
"""

from __future__ import annotations

from collections import defaultdict
from functools import lru_cache

from jinja2 import Environment, FileSystemLoader, StrictUndefined

from processkg.aliases import JSONObject, Record
from processkg.assets import templates_dir
from processkg.graph.store import StoreGraph, records
from processkg.retrieve.retriever import Result
from processkg.services.model import required_on_create, sap_mandatory

TEMPLATE = "context.md.j2"
MAX_CODES = 50  # codes shown per value help; the rest are counted
SAP_V2_ROOT = "/sap/opu/odata/sap"


@lru_cache(maxsize=1)
def _environment() -> Environment:

    folder = templates_dir()
    return Environment(
        loader=FileSystemLoader(str(folder)),
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        undefined=StrictUndefined,
        autoescape=False,
    )


# ---------------------------------------------------------------- data


def set_context(store: StoreGraph, iri: str) -> JSONObject:
    """Everything the template shows for one entity set (an IRI of the store)."""
    heads = records(store, "retrieve-context-set", set=iri)
    if not heads:  # an OpenAPI operation (or a set gone from the store): no OData facts to show
        return _bare_context(iri)
    head = heads[0]
    props = [_property(p) for p in records(store, "retrieve-context-properties", set=iri)]
    keys = [p for p in props if p["key"]]
    return {
        "head": head,
        "path": url_path(head.get("service") or "", head.get("version") or "", head["name"]),
        "key_predicate": key_predicate(head["name"], keys, head.get("version") or ""),
        "properties": props,
        "required": [p["name"] for p in props if "required" in p["flags"]],
        "read_only": [p["name"] for p in props if "read-only" in p["flags"]],
        "filter_required": [p["name"] for p in props if "filter-required" in p["flags"]],
        "navigations": _navigations(store, iri),
        "value_helps": _value_helps(store, iri),
        "operations": _operations(store, iri, head, key_predicate(head["name"], keys, head.get("version") or "")),
        "process": _process(store, iri),
        "flow": document_flow(store, iri),
    }


def document_flow(store: StoreGraph, iri: str) -> JSONObject:
    """The curated document flow around an entity set (``kg build --flow``): ``predecessors``, the sets
    its records are made from, and ``follow_ons``, the sets made from its records; each with its service,
    the carriers (``{follow-on property: predecessor key}``), whether a predecessor is required, the
    precondition and quantity rule as text, the process and the steps that write the other set."""
    grouped: dict[str, list[Record]] = {}
    for r in records(store, "retrieve-context-flow", set=iri):
        grouped.setdefault(r["flow"], []).append(r)
    found: JSONObject = {"predecessors": [], "follow_ons": []}
    for group in grouped.values():
        first = group[0]
        side = "predecessors" if first["direction"] == "predecessor" else "follow_ons"
        found[side].append(
            {
                "service": first["otherService"],
                "entity_set": first["other"],
                "carriers": {r["carrier"]: r["carried"] for r in group},
                "required": first["required"] is True,
                "process": first["process"],
                "precondition": _condition_text(group, "preProp", "preValue"),
                "applies_when": _condition_text(group, "appliesProp", "appliesValue"),
                "quantity": f"{first['qtyFollow']} <= {first['qtyPred']}" if first["qtyFollow"] else "",
                # in process order where the process orders them, else every writer
                "steps": _distinct(group, "stepName") or _distinct(group, "anyStep"),
                "source": first["source"],
            }
        )
    return found


def _distinct(group: list[Record], column: str) -> list[str]:
    """The values of ``column`` in ``group``, each once, in row order."""
    return list(dict.fromkeys(r[column] for r in group if r[column]))


def _condition_text(group: list[Record], prop: str, value: str) -> str:
    """``Property = V1 or V2`` of a flow's condition, "" without one."""
    rows = [r for r in group if r[value] is not None]
    return f"{rows[0][prop]} = {' or '.join(dict.fromkeys(r[value] for r in rows))}" if rows else ""


def _bare_context(iri: str) -> JSONObject:
    """The context of a result that is no OData entity set: its name only, no facts made up."""
    head = {
        "service": "",
        "version": "",
        "name": iri.rsplit("/", 1)[-1],
        "typeLabel": None,
        "creatable": None,
        "updatable": None,
        "deletable": None,
        "requiresFilter": None,
        "updatablePath": None,
        "deletablePath": None,
    }
    return {
        "head": head,
        "path": "(not an OData entity set)",
        "key_predicate": "",
        "properties": [],
        "required": [],
        "read_only": [],
        "filter_required": [],
        "navigations": [],
        "value_helps": [],
        "operations": [],
        "process": [],
        "flow": {"predecessors": [], "follow_ons": []},
    }


def url_path(service: str, version: str, entity_set: str) -> str:
    """The URL path of an entity set: SAP Gateway's for OData V2, relative to the root for V4."""
    if version.startswith(("1", "2", "3")):
        return f"{SAP_V2_ROOT}/{service}/{entity_set}"
    return f"<{service} service root>/{entity_set}"


def key_predicate(entity_set: str, keys: list[Record], version: str) -> str:
    """``A_SalesOrder('{SalesOrder}')`` or ``A_Item(SalesOrder='{SalesOrder}',Item='{Item}')``."""
    if not keys:
        return ""
    values = [_key_literal(k["name"], k["type"], version) for k in keys]
    if len(keys) == 1:
        return f"{entity_set}({values[0]})"
    return f"{entity_set}(" + ",".join(f"{k['name']}={v}" for k, v in zip(keys, values)) + ")"


def _key_literal(name: str, edm_type: str, version: str) -> str:
    v2 = not version.startswith("4")
    if edm_type in ("Edm.String", ""):
        return f"'{{{name}}}'"
    if v2 and edm_type == "Edm.Guid":
        return f"guid'{{{name}}}'"
    if v2 and edm_type == "Edm.DateTime":
        return f"datetime'{{{name}}}'"
    return f"{{{name}}}"


def _property(row: Record) -> JSONObject:
    return {
        "name": row["name"],
        "label": _label(row),
        "type": row["edmType"] or "",
        "facets": _facets(row),
        "key": bool(row["isKey"]),
        "flags": _flags(row),
    }


def _label(row: Record) -> str:
    """The label, unless it only repeats the name."""
    label = row["label"] or ""
    squashed = label.replace(" ", "").replace("-", "").lower()
    return "" if squashed == row["name"].lower() else label


def _facets(row: Record) -> str:
    if row["maxLength"] is not None:
        return f"({row['maxLength']})"
    if row["precision"] is not None and row["edmType"] == "Edm.Decimal":
        return f"({row['precision']},{row['scale']})" if row["scale"] is not None else f"({row['precision']})"
    return ""


def _flags(row: Record) -> list[str]:
    """key, required (on create), read-only, create-only, no-create; then what a read may filter
    on (filter-required, no-filter), and hidden or the field control decided per entity."""
    flags = ["key"] if row["isKey"] else []
    creatable, updatable = row["creatable"] is not False, row["updatable"] is not False
    if row["computed"] or row["fieldControl"] == "ReadOnly" or not (creatable or updatable):
        return flags + ["read-only"] + _read_flags(row)
    collection = (row["edmType"] or "").startswith("Collection(")
    if creatable and required_on_create(
        bool(row["isKey"]),
        row["nullable"] is not False,
        False,
        collection,
        row["defaultValue"] is not None,
        row["namespace"] or "",
        mandatory=True if row["insertRequired"] or row["curatedRequired"] else sap_mandatory(row["fieldControl"]),
    ):
        flags.append("required")
    if creatable and (not updatable or row["immutable"] or row["nonUpdatable"]) and not row["isKey"]:
        flags.append("create-only")
    if not creatable:
        flags.append("no-create")
    return flags + _read_flags(row)


def _read_flags(row: Record) -> list[str]:
    flags = []
    if row["requiredInFilter"] or row["filterRequired"]:
        flags.append("filter-required")
    if row["filterable"] is False or row["nonFilterable"]:
        flags.append("no-filter")
    if row["fieldControl"] in ("Hidden", "Inapplicable"):
        flags.append("hidden")
    if row["fieldControlPath"]:
        flags.append(f"field control by {row['fieldControlPath']}")
    return flags


def _navigations(store: StoreGraph, iri: str) -> list[JSONObject]:
    rows = records(store, "retrieve-context-navigations", set=iri)
    return [
        {
            "name": r["name"],
            "many": r["cardinality"] == "*",
            "optional": r["cardinality"] == "0..1",
            "target": r["targetSet"] or r["targetType"] or "?",
        }
        for r in rows
    ]


def _value_helps(store: StoreGraph, iri: str) -> list[JSONObject]:
    helps: dict[tuple[str, str], JSONObject] = {}  # (property, value list) -> value help
    for r in records(store, "retrieve-context-valuelists", set=iri):
        key = (r["property"], r["collection"] or r["reference"] or "")
        vh = helps.setdefault(key, {"property": r["property"], "source": key[1], "fixed": False, "codes": []})
        vh["fixed"] = vh["fixed"] or bool(r["fixed"])
        if r["code"] is not None and (r["code"], r["codeLabel"]) not in vh["codes"]:
            vh["codes"].append((r["code"], r["codeLabel"]))
    for vh in helps.values():
        vh["more"] = max(0, len(vh["codes"]) - MAX_CODES)
        vh["codes"] = vh["codes"][:MAX_CODES]
    return list(helps.values())


def _operations(store: StoreGraph, iri: str, head: Record, one: str) -> list[JSONObject]:
    """The operations an agent can call on this entity set (``retrieve-context-operations.rq`` says
    which and why), each with its HTTP method, the URL (and body) of a call and its parameters."""
    ops: dict[str, JSONObject] = {}
    for r in records(store, "retrieve-context-operations", set=iri):
        op = ops.setdefault(r["operation"], {"row": r, "how": [], "imports": []})
        if r["how"] not in op["how"]:
            op["how"].append(r["how"])
        if r["import"] and r["import"] not in op["imports"]:
            op["imports"].append(r["import"])
    return [_operation(store, operation, op, head, one) for operation, op in ops.items()]


def _operation(store: StoreGraph, iri: str, op: JSONObject, head: Record, one: str) -> JSONObject:
    r, version = op["row"], head.get("version") or ""
    params = [_parameter(p) for p in _parameter_rows(store, iri)]
    given = [p for p in params if not p["binding"]]
    kind = r["class"].rsplit("#", 1)[-1]
    label = r["label"] if r["label"] and r["label"] != r["name"] else ""
    description = r["description"] if r["description"] and r["description"] not in (r["name"], label) else ""
    return {
        "name": r["name"],
        "label": label,
        "description": description,
        "how": op["how"],
        "method": r["method"] or "GET or POST",
        "call": _call(kind, r, op["imports"], given, head, one),
        "body": "{" + ", ".join(f'"{p["name"]}": ...' for p in given) + "}" if kind == "V4Action" and given else "",
        "returns": _simple(r["returnType"] or ""),
        "parameters": [dict(p, literal=_key_literal(p["name"], p["type"], version)) for p in given],
    }


def _call(kind: str, r: Record, imports: list[str], params: list[JSONObject], head: Record, one: str) -> str:
    """The URL of a call: V2 ``/sap/.../SERVICE/Name?P='{P}'``; V4 bound ``<root>/Set('{K}')/NS.Name``
    (on the set URL when bound to a collection), ``(P=...)`` after a function; unbound through its import."""
    service, version, set_name = head.get("service") or "", head.get("version") or "", head["name"]
    literals = [f"{p['name']}={_key_literal(p['name'], p['type'], version)}" for p in params]
    if kind == "V2FunctionImport":
        return f"{SAP_V2_ROOT}/{service}/{r['name']}" + ("?" + "&".join(literals) if literals else "")
    arguments = "(" + ",".join(literals) + ")" if kind == "V4Function" else ""
    if r["qname"] and not imports:  # bound
        on_one = f"<{service} service root>/{one}"
        target = url_path(service, version, set_name) if r["collection"] or not one else on_one
        return f"{target}/{r['qname']}{arguments}"
    return f"<{service} service root>/{imports[0]}{arguments}" if imports else "(no import exposes it)"


def _parameter_rows(store: StoreGraph, iri: str) -> list[Record]:
    """One row per parameter, its value helps folded into ``codes`` and ``sources``."""
    params: dict[str, Record] = {}
    for r in records(store, "retrieve-context-operation-parameters", operation=iri):
        p = params.setdefault(r["param"], dict(r, codes=[], sources=[], fixedList=False))
        source = r["collection"] or r["reference"]
        if source and source not in p["sources"]:
            p["sources"].append(source)
        p["fixedList"] = p["fixedList"] or bool(r["fixed"])
        if r["code"] is not None and (r["code"], r["codeLabel"]) not in p["codes"]:
            p["codes"].append((r["code"], r["codeLabel"]))
    return sorted(params.values(), key=lambda p: p["order"])


def _parameter(row: Record) -> JSONObject:
    return {
        "name": row["name"],
        "label": _label(row),
        "type": _simple(row["edmType"] or ""),
        "facets": _facets(row),
        "required": row["nullable"] is False and not row["optional"] and not row["binding"],
        "binding": bool(row["binding"]),
        "help": _parameter_help(row),
    }


def _parameter_help(row: Record) -> str:
    """``values from I_X (fixed): 01 "Text", 02 ...`` for a parameter with a value help, else ``""``."""
    if not (row["sources"] or row["codes"] or row["fixedList"]):
        return ""
    where = f"values from {', '.join(row['sources'])}" if row["sources"] else "values"
    fixed = " (fixed)" if row["fixedList"] else ""
    shown = [f'{c} "{t}"' if t and t != c else c for c, t in row["codes"][:MAX_CODES]]
    more = f" and {len(row['codes']) - MAX_CODES} more" if len(row["codes"]) > MAX_CODES else ""
    return f"{where}{fixed}: " + (", ".join(shown) + more if shown else "codes unknown")


def _simple(edm_type: str) -> str:
    """``Collection(NS.Type)`` -> ``Collection(Type)``, ``NS.Type`` -> ``Type``; Edm types kept."""
    if edm_type.startswith("Collection("):
        return f"Collection({_simple(edm_type[11:-1])})"
    return edm_type if edm_type.startswith("Edm.") else edm_type.rpartition(".")[2]


def _process(store: StoreGraph, iri: str) -> list[JSONObject]:
    steps: dict[str, JSONObject] = {}  # activity -> step
    for r in records(store, "retrieve-context-process", set=iri):
        step = steps.setdefault(
            r["activity"],
            {
                "name": r["name"] or r["activity"].rsplit("/", 1)[-1],
                "modes": [],
                "lane": r["lane"],
                "process": r["process"],
                "before": defaultdict(list),
                "after": defaultdict(list),
            },
        )
        if r["mode"] not in step["modes"]:
            step["modes"].append(r["mode"])
        if r["direction"]:
            _neighbour(step[r["direction"]], r)
    return [dict(s, before=dict(s["before"]), after=dict(s["after"])) for s in steps.values()]


def _neighbour(side: JSONObject, row: Record) -> None:
    sets = side[row["otherName"] or row["other"].rsplit("/", 1)[-1]]
    if row["otherSet"] and f"{row['otherService']}/{row['otherSet']}" not in sets:
        sets.append(f"{row['otherService']}/{row['otherSet']}")


# ---------------------------------------------------------------- rendering


def render_set(store: StoreGraph, result: Result, number: int = 1) -> str:
    """The typed context of one retrieved entity set (a :class:`~processkg.retrieve.retriever.Result`)."""
    template = _environment().get_template(TEMPLATE)
    return template.render(n=number, r=result, c=set_context(store, result.iri))


def render_context(store: StoreGraph, results: list[Result]) -> str:
    """The typed context of every retrieved entity set, in result order."""
    return "".join(render_set(store, r, n) for n, r in enumerate(results, 1))
