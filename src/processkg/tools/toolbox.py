"""The tools themselves: what ``find_entity_sets``, ``describe``, ``next_steps``, ``validate_call`` and
``call`` answer, on one store and (for ``call``) one OData server.

Every answer is a JSON object; :meth:`Toolbox.run` dispatches a tool by name with the arguments an
agent sent and turns a mistake in them (an unknown entity set, a missing argument) into an
``{"error": ...}`` answer the agent can read and repair, never an exception.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from processkg.aliases import JSONObject, JSONValue
from processkg.errors import ProcessKGError, ToolArgumentError
from processkg.graph.store import open_store, records
from processkg.retrieve.context import key_predicate, set_context
from processkg.retrieve.retriever import Result, RetrievalSettings, Retriever
from processkg.serve.app import service_root
from processkg.tools.odata_client import ODataClient
from processkg.tools.specs import METHODS, ToolSpec, tool_list
from processkg.validate.calls import Validator
from processkg.validate.urls import did_you_mean

MAX_ROWS = 20  # records of a collection shown to the agent; the rest are counted
MAX_K = 20


class Toolbox:
    """The typed tools on one store; ``client`` is the OData server ``call`` sends to (None: no server)."""

    def __init__(
        self,
        store: Path,
        client: ODataClient | None = None,
        allow_writes: bool = False,
        validate_before_send: bool = True,
        method: str = "hybrid",
    ) -> None:
        self.store_dir = Path(store)
        self.graph = open_store(self.store_dir)
        self.validator = Validator(self.graph)
        self.client = client
        self.allow_writes = allow_writes
        self.validate_before_send = validate_before_send
        self.settings = RetrievalSettings(method=method).check()
        self.sets = {(r["service"], r["name"]): r["set"] for r in records(self.graph, "retrieve-sets")}
        services = self.validator.model.services.values()
        self.roots = {s.name: service_root(s.name, s.version, s.namespaces) for s in services}
        self._retriever: Retriever | None = None
        self.handlers: dict[str, Callable[[JSONObject], JSONObject]] = {
            "find_entity_sets": lambda a: self.find_entity_sets(_text(a, "task"), _int(a, "k", 5)),
            "describe": lambda a: self.describe(_text(a, "service"), _text(a, "entity_set")),
            "next_steps": lambda a: self.next_steps(_text(a, "service"), _text(a, "entity_set")),
            "validate_call": lambda a: self.validate_call(_text(a, "method"), _text(a, "url"), a.get("body")),
            "call": lambda a: self.call(_text(a, "method"), _text(a, "url"), a.get("body")),
        }

    @property
    def specs(self) -> list[ToolSpec]:
        return tool_list(self.allow_writes)

    @property
    def retriever(self) -> Retriever:
        """Opened on first use: it loads the embedding model, which the other tools do not need."""
        if self._retriever is None:
            self._retriever = Retriever(self.store_dir)
        return self._retriever

    def run(self, name: str, arguments: JSONValue) -> tuple[JSONObject, bool]:
        """(answer, is_error) of one tool call; bad arguments are an error answer, not an exception."""
        handler = self.handlers.get(name)
        if handler is None:
            return {"error": f"unknown tool {name!r}; the tools are {', '.join(self.handlers)}"}, True
        if not isinstance(arguments, dict):
            return {"error": f"the arguments of {name} must be a JSON object"}, True
        try:
            return handler(arguments), False
        except ProcessKGError as exc:
            return {"error": str(exc)}, True

    # ------------------------------------------------------------ the tools
    def find_entity_sets(self, task: str, k: int = 5) -> JSONObject:
        """The entity sets ranked for ``task`` (hybrid retrieval), each with its process position and a brief context."""
        if not 1 <= k <= MAX_K:
            raise ToolArgumentError(f"k must be between 1 and {MAX_K}, not {k}")
        results = self.retriever.retrieve(task, k, self.settings)
        return {"results": [self._brief(r) for r in results]}

    def describe(self, service: str, entity_set: str) -> JSONObject:
        """The typed context of one entity set."""
        context = set_context(self.graph, self.iri(service, entity_set))
        head = context["head"]
        return {
            "service": service,
            "entity_set": entity_set,
            "label": head.get("typeLabel") or head.get("label") or "",
            "path": self.path(service, entity_set),
            "key": [p["name"] for p in context["properties"] if p["key"]],
            "one_record": key_predicate(entity_set, _keys(context), head.get("version") or ""),
            "allows": _allows(head),
            "operations": [_compact(op) for op in context.get("operations", [])],
            "required_on_create": context["required"],
            "read_only": context["read_only"],
            "properties": [_property_line(p) for p in context["properties"]],
            "value_helps": [_value_help(v) for v in context["value_helps"]],
            "navigation": [_navigation(n) for n in context["navigations"]],
            "process": [_step(s) for s in context["process"]],
        }

    def next_steps(self, service: str, entity_set: str) -> JSONObject:
        """The steps after each step that uses the entity set, with the entity sets they use."""
        context = set_context(self.graph, self.iri(service, entity_set))
        steps = [
            {"after": step["name"], "step": name, "uses": uses}
            for step in context["process"]
            for name, uses in step["after"].items()
        ]
        return {"service": service, "entity_set": entity_set, "next_steps": steps}

    def validate_call(self, method: str, url: str, body: JSONValue = None) -> JSONObject:
        """``kg validate`` of one call: violations with their repair hints."""
        call: JSONObject = {"method": _method(method), "url": self.full_url(url)}
        if body is not None:
            call["body"] = body
        result = self.validator.validate_call(call)
        answer: JSONObject = {"valid": result.valid, "violations": [_violation(v.as_dict()) for v in result.violations]}
        if result.notes:
            answer["notes"] = [n.message for n in result.notes]
        return answer

    def call(self, method: str, url: str, body: JSONValue = None) -> JSONObject:
        """Send one request to the OData server (validated first, unless switched off); its answer, errors included."""
        method = _method(method)
        if self.client is None:
            raise ToolArgumentError("no OData server is configured for call (give --odata-url or serve the store)")
        if method != "GET" and not self.allow_writes:
            raise ToolArgumentError(f"{method} is a write and writes are not allowed here (--allow-writes); use GET")
        if body is not None and not isinstance(body, dict):
            raise ToolArgumentError(f"the body of a {method} must be a JSON object")
        if self.validate_before_send:
            checked = self.validate_call(method, url, body)
            if not checked["valid"]:
                return {"sent": False, "status": 400, "violations": checked["violations"]}
        exchange = self.client.send(method, url, body if method != "GET" else None)
        return {"sent": True, "status": exchange.status, "answer": trimmed(exchange.answer)}

    # ------------------------------------------------------------ helpers
    def iri(self, service: str, entity_set: str) -> str:
        iri = self.sets.get((service, entity_set))
        if iri is None:
            known = sorted(n for s, n in self.sets if s == service)
            if not known:
                raise ToolArgumentError(f"unknown service {service!r}; find_entity_sets names the services")
            raise ToolArgumentError(f"{service} has no entity set {entity_set!r}{_near(entity_set, known)}")
        return iri

    def path(self, service: str, entity_set: str) -> str:
        return self.roots.get(service, "/") + entity_set

    def full_url(self, url: str) -> str:
        """The URL as the validator reads it: resolved against the OData server's base URL, if any (a URL
        outside that root is refused, as ``call`` would refuse it)."""
        return self.client.url(url) if self.client is not None else url

    def _brief(self, result: Result) -> JSONObject:
        context = set_context(self.graph, result.iri)
        after = sorted({name for step in context["process"] for name in step["after"]})
        return {
            "service": result.service,
            "entity_set": result.entity_set,
            "label": context["head"].get("typeLabel") or "",
            "source": result.source,
            "via": list(result.via),
            "path": self.path(result.service, result.entity_set),
            "key": [p["name"] for p in context["properties"] if p["key"]],
            "required_on_create": context["required"],
            "next_steps": after,
        }

    def close(self) -> None:
        if self.client is not None:
            self.client.close()


def trimmed(answer: JSONValue) -> JSONValue:
    """An OData answer with at most :data:`MAX_ROWS` records per collection (V2 ``d.results``, V4 ``value``)."""
    if not isinstance(answer, dict):
        return answer
    inner = answer.get("d")
    holder, key = (
        (inner, "results") if isinstance(inner, dict) and isinstance(inner.get("results"), list) else (answer, "value")
    )
    rows = holder.get(key)
    if not isinstance(rows, list) or len(rows) <= MAX_ROWS:
        return answer
    cut = dict(holder, **{key: rows[:MAX_ROWS]}, processkg_truncated=f"{len(rows) - MAX_ROWS} more records not shown")
    return {"d": cut} if holder is inner else cut


def _text(arguments: JSONObject, name: str) -> str:
    value = arguments.get(name)
    if not isinstance(value, str) or not value.strip():
        raise ToolArgumentError(f"argument {name!r} must be a non-empty string")
    return value.strip()


def _int(arguments: JSONObject, name: str, default: int) -> int:
    value = arguments.get(name, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or int(value) != value:
        raise ToolArgumentError(f"argument {name!r} must be an integer")
    return int(value)


def _method(method: str) -> str:
    upper = method.strip().upper()
    if upper not in METHODS:
        raise ToolArgumentError(f"method must be one of {', '.join(METHODS)}, not {method!r}")
    return upper


def _keys(context: JSONObject) -> list[JSONObject]:
    return [{"name": p["name"], "type": p["type"]} for p in context["properties"] if p["key"]]


def _allows(head: JSONObject) -> list[str]:
    """What the entity set allows: read, and create/update/delete unless its metadata says no."""
    allowed = ["read"]
    for name, flag in (("create", "creatable"), ("update", "updatable"), ("delete", "deletable")):
        if head.get(flag) is not False:
            allowed.append(name)
    if head.get("requiresFilter"):
        allowed[0] = "read (needs $filter)"
    return allowed


def _compact(item: JSONObject) -> JSONObject:
    """An operation of the typed context (function import, action, function) without empty members,
    its parameters likewise."""
    kept = {k: v for k, v in item.items() if v not in ("", [], None)}
    if isinstance(kept.get("parameters"), list):
        kept["parameters"] = [_compact(p) if isinstance(p, dict) else p for p in kept["parameters"]]
    return kept


def _property_line(p: JSONObject) -> str:
    flags = "".join(f", {f}" for f in p["flags"])
    label = f' "{p["label"]}"' if p["label"] else ""
    return f"{p['name']}: {p['type'].replace('Edm.', '')}{p['facets']}{flags}{label}"


def _value_help(vh: JSONObject) -> JSONObject:
    out: JSONObject = {"property": vh["property"], "codes": [code for code, _label in vh["codes"]] or "unknown"}
    labels = {code: label for code, label in vh["codes"] if label and label != code}
    if labels:
        out["labels"] = labels
    if vh["more"]:
        out["more"] = vh["more"]
    return out


def _navigation(nav: JSONObject) -> JSONObject:
    cardinality = "many" if nav["many"] else ("0..1" if nav["optional"] else "one")
    return {"name": nav["name"], "target": nav["target"], "cardinality": cardinality}


def _step(step: JSONObject) -> JSONObject:
    return {
        "step": step["name"],
        "process": step["process"],
        "mode": "/".join(step["modes"]),
        "before": [{"step": n, "uses": u} for n, u in step["before"].items()],
        "after": [{"step": n, "uses": u} for n, u in step["after"].items()],
    }


def _violation(v: JSONObject) -> JSONObject:
    return {"kind": v["kind"], "path": v["path"], "message": v["message"]}


def _near(name: str, known: list[str]) -> str:
    return did_you_mean(name, known) or f"; it has {len(known)} entity sets, find_entity_sets finds them"


__all__ = ["Toolbox", "trimmed"]
