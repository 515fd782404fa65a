"""``kg validate``: check recorded OData calls against the service metadata and value helps.

A POST payload (and the body of a PATCH, MERGE or PUT) becomes RDF (one node per JSON object, the graph's own property IRIs as
predicates, typed literals once the OData JSON lexical form is checked) and is validated
by pySHACL with the payload shapes of :mod:`processkg.validate.payload_shapes`; each ``sh:ValidationResult``
is mapped back to a violation kind and a JSON pointer. What SHACL cannot say (unknown
service or entity set, GET URLs, malformed lines) is checked in Python first; so are the rules
of an update that differ from a create (:class:`UpdateConverter`: what may change, partial or
full replace) and of a DELETE (:func:`~processkg.validate.urls.check_write_target`). A create whose
JSON conforms is passed by :mod:`processkg.validate.payload_json` with the same compiled shapes and
never becomes RDF; any other payload becomes RDF as above.

:class:`Validator` is the Python API: ``validate_call`` for one call (the mock server and
the agent use it), ``validate_calls`` for a batch in one pySHACL run per service.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import TypeAlias
from urllib.parse import quote, unquote

from rdflib import RDF, Graph, Literal, URIRef
from rdflib.term import Node

from processkg.aliases import JSONObject, JSONValue
from processkg.errors import JsonLinesError, MalformedCall
from processkg.graph.handle import StoreHandle
from processkg.jsonl import LIMITS, parse_line, read_records
from processkg.services.model import Model, Nav, OperationInfo, Prop, SetRules, TypeInfo, made_once, service_model
from processkg.validate import literals, operation_parameters
from processkg.validate.payload_json import (
    MAX_DEEP_INSERT,
    JsonChecks,
    control,
    decimal_problem,
    esc,
    is_link,
    payload_literal,
)
from processkg.validate.payload_shapes import model_shapes
from processkg.validate.shacl import ShaclEngine, merge_reports
from processkg.validate.urls import (
    CallTarget,
    Finding,
    check_get,
    check_write_target,
    did_you_mean,
    entity_key,
    parse_call_url,
    resolve_service,
    set_rules,
)
from processkg.vocab import RDF_JSON, XSD_STRING

NODE = "urn:processkg:call/"
NIL = RDF.nil
JSON_DT = URIRef(RDF_JSON)
MAX_CALL_VALUES = 10_000  # array items and object members in one call, all levels
TARGETS_KEPT = 4096  # resolved call URLs a Validator keeps (all dropped when full)
ENGINES_KEPT = 64  # SHACL engines (one per service) a Validator keeps; the least recently used goes first
KINDS = (
    "unknown-service",
    "unknown-entity-set",
    "unknown-property",
    "missing-required",
    "read-only",
    "invalid-code",
    "datatype",
    "max-length",
    "decimal-digits",
    "cardinality",
    "unknown-navigation",
    "not-filterable",
    "unknown-operation",
    "unknown-parameter",
    "wrong-method",
    "malformed",
)
UPDATES = ("PATCH", "MERGE", "PUT")  # PATCH (V4) and MERGE (V2) change some properties, PUT all
METHODS = ("GET", "POST", *UPDATES, "DELETE")
#: Why a create needs a property (``Prop.required_by``), as the message names it.
REQUIRED_BY = {
    "FieldControl": "Common.FieldControl Mandatory",
    "InsertRestrictions": "Capabilities.InsertRestrictions/RequiredProperties",
    "rule": "non-nullable and not computed",
}

PayloadKey: TypeAlias = tuple[Node | None, ...]
"""(node, predicate) or (node, predicate, object) of one emitted payload value."""


@dataclass
class Violation:
    kind: str
    path: str
    message: str
    value: JSONValue = None

    def as_dict(self) -> JSONObject:
        return {"kind": self.kind, "path": self.path, "message": self.message, "value": self.value}


@dataclass
class CallResult:
    id: str
    violations: list[Violation] = field(default_factory=list)
    notes: list[Violation] = field(default_factory=list)  # e.g. codes of a value help unknown: not checked
    line: int | None = None

    @property
    def valid(self) -> bool:
        return not self.violations

    def as_dict(self) -> JSONObject:
        out: JSONObject = {"id": self.id, "valid": self.valid, "violations": [v.as_dict() for v in self.violations]}
        if self.notes:
            out["notes"] = [n.as_dict() for n in self.notes]
        return out


# ---------------------------------------------------------------- reading calls


def read_calls(path: Path | str) -> list[tuple[int, JSONValue]]:
    """(line number, parsed JSON or :class:`MalformedCall`) for each non-blank line (``-``: standard input).

    A broken line becomes a ``malformed`` violation and the other lines are still validated; but
    a file in which no line is a JSON object (empty, or not JSON Lines at all, e.g. a README)
    raises: hundreds of ``malformed`` lines would hide the one real mistake, the wrong file.
    """
    calls = [
        (n, MalformedCall(v.message) if isinstance(v, JsonLinesError) else v)
        for n, v in read_records(path, what="recorded calls")
    ]
    if not any(isinstance(call, dict) for _n, call in calls):
        raise JsonLinesError(_no_calls(calls), "<stdin>" if str(path) == "-" else str(path))
    return calls


def _no_calls(calls: list[tuple[int, JSONValue]]) -> str:
    if not calls:
        return "no recorded calls: the file is empty (JSON Lines: one call object per line)"
    first_n, first = calls[0]
    why = str(first) if isinstance(first, MalformedCall) else "it is not a JSON object"
    return f"not JSON Lines of recorded calls: no line is a JSON object (line {first_n}: {why})"


# ---------------------------------------------------------------- the validator


class Validator:
    """Validates calls against one store's services. A service's SHACL engine (its payload shapes,
    parsed) is built when a call first needs it, and the :data:`ENGINES_KEPT` most recently used are
    kept: a server over thousands of services never parses or holds every shape at once."""

    def __init__(
        self, store: StoreHandle, model: Model | None = None, compiled: bool = True, json_checks: bool = True
    ) -> None:
        self.model = model or service_model(store.graph)
        self.compiled = compiled  # False: every payload is checked by pySHACL (see ShaclEngine)
        self.json_checks = json_checks and compiled  # False: every create's payload becomes triples
        self._checks: dict[str, JsonChecks] = {}  # service -> the JSON checks of its engine
        self._names: dict[str, dict[str, Prop | Nav]] = {}  # service -> IRI -> what a SHACL result names
        self._operations: dict[str, dict[str, OperationInfo]] = {}  # service -> IRI -> operation
        self._engines: OrderedDict[str, ShaclEngine] = OrderedDict()
        self._targets: dict[tuple[str, str, str | None], CallTarget] = {}  # see resolve
        self._gets: dict[tuple[str, str | None], list[Finding]] = {}  # see _checked_get
        self.last_payloads: Payloads | None = None  # the payloads the last validate_calls made triples of
        self._passed = False  # the last validate_calls passed a payload on its JSON
        self._report: Graph | None = None

    @property
    def last_report(self) -> Graph | None:
        """The SHACL report graph (pySHACL's) of the last validate_calls; None when it checked no payload.
        Made when first asked for: a server that only needs the violations never pays for it. A payload
        passed on its JSON is not in its data graph: it gave no result (a conforming report, if alone)."""
        if self._report is None and self.last_payloads is not None:
            data, shapes = self.last_payloads.graph, self.last_payloads.shapes
            self._report = merge_reports(
                [self.engine(name).run(data, shapes) for name in sorted(self.last_payloads.services)]
            )
        elif self._report is None and self._passed:
            self._report = merge_reports([])
        return self._report

    def engine(self, service: str) -> ShaclEngine:
        """The SHACL engine with the payload shapes of ``service`` (its name), built on first use."""
        found = self._engines.pop(service, None)
        if found is None:
            found = ShaclEngine(model_shapes(self.model, {service}), compiled=self.compiled)
        self._engines[service] = found
        while len(self._engines) > ENGINES_KEPT:
            self._engines.popitem(last=False)
        return found

    def checks(self, service: str) -> JsonChecks | None:
        """The JSON checks of ``service``'s compiled shapes (:mod:`processkg.validate.payload_json`), made
        with its engine; None when payloads become triples (``json_checks`` or ``compiled`` off)."""
        if not self.json_checks:
            return None
        engine = self.engine(service)
        found = self._checks.get(service)
        if found is None or found.engine is not engine:
            self._checks = {s: c for s, c in self._checks.items() if self._engines.get(s) is c.engine}
            found = self._checks[service] = JsonChecks(self.model, service, engine)
        return found

    def names(self, service: str) -> dict[str, Prop | Nav]:
        """The properties, navigations and operation parameters of ``service`` by IRI."""
        found = self._names.get(service)
        if found is None:
            found = {p.iri: p for t in self.model.types_of(service) for p in t.props.values()}
            found.update({n.iri: n for t in self.model.types_of(service) for n in t.navs.values()})
            found.update({p.iri: p for op in self.operations(service).values() for p in op.params.values()})
            self._names[service] = found
        return found

    def operations(self, service: str) -> dict[str, OperationInfo]:
        """The operations of ``service`` by IRI."""
        found = self._operations.get(service)
        if found is None:
            found = self._operations[service] = {op.iri: op for op in self.model.services[service].operations}
        return found

    def validate_call(self, call: JSONValue, line: int | None = None) -> CallResult:
        """Validate one recorded call (a dict as in the JSONL file)."""
        return self.validate_calls([(line, call)])[0]

    def validate_calls(self, calls: Sequence[tuple[int | None, JSONValue] | JSONValue]) -> list[CallResult]:
        """Validate ``[(line, call)]`` (or bare calls); the payloads of each service in one pySHACL run."""
        pairs = [c if isinstance(c, tuple) else (None, c) for c in calls]
        results, pending = [], Payloads()
        self.last_payloads, self._report, self._passed = None, None, False
        for i, (line, call) in enumerate(pairs):
            results.append(self._precheck(i, line, call, pending))
        if pending.triples:
            self._shacl(pending, results)
        for r in results:
            r.violations = _dedupe(r.violations)
        return results

    def report_graph(self, calls: Sequence[tuple[int | None, JSONValue] | JSONValue] | None = None) -> Graph:
        """The SHACL validation report graph (``--format ttl``) of ``calls``, or of the last batch."""
        if calls is not None:
            self.validate_calls(calls)
        return self.last_report or merge_reports([])

    # ------------------------------------------------------------ before SHACL
    def _precheck(self, i: int, line: int | None, call: JSONValue, pending: Payloads) -> CallResult:
        result = CallResult(_call_id(call, line, i), line=line)
        try:
            target = self._target(call)
        except MalformedCall as exc:
            result.violations.append(Violation("malformed", "", _where(line, str(exc)), None))
            return result
        result.violations.extend(Violation(*v) for v in target.pop("violations"))
        if result.violations:
            return result
        if "operation" in target:
            self._operation(i, target, call, result, pending)
            return result
        if target["method"] == "GET":
            result.violations.extend(Violation(*v) for v in self._checked_get(call, target))
            return result
        if target["method"] != "POST":
            result.violations.extend(Violation(*v) for v in check_write_target(self.model, target))
        if target["method"] in UPDATES and not result.violations:
            self._update(i, target, result, pending)
        elif target["method"] == "POST":
            self._post(i, target, result, pending)
        return result

    def _target(self, call: JSONValue) -> CallTarget:
        if not isinstance(call, dict):
            raise call if isinstance(call, MalformedCall) else MalformedCall("a call must be a JSON object")
        _check_size(call)
        method = call.get("method")
        if not isinstance(method, str) or not method.strip():
            raise MalformedCall(f"the call lacks a method ({', '.join(METHODS)})")
        method = method.strip().upper()
        if method not in METHODS:
            raise MalformedCall(f"method {method} is not validated (only {', '.join(METHODS)})")
        if isinstance(call.get("url"), str):
            hint = call.get("service")
            target = self.resolve(method, call["url"], hint if isinstance(hint, str) else None)
        elif isinstance(call.get("service"), str) and isinstance(call.get("entity_set"), str):
            target = {"service": call["service"], "segments": [(call["entity_set"], None)], "query": {}}
            target["method"] = method
            target["violations"] = []
            resolve_service(self.model, target)
        else:
            raise MalformedCall("the call lacks a target: give url, or service and entity_set")
        unknown = any(v[0] == "unknown-operation" for v in target["violations"])
        if (method == "POST" or method in UPDATES) and "operation" not in target and not unknown:
            target["payload"] = _payload(call, method)
        return target

    def resolve(self, method: str, url: str, service: str | None = None) -> CallTarget:
        """The target of ``method url`` (``service`` names the service of a URL relative to its root):
        :func:`~processkg.validate.urls.parse_call_url`, then
        :func:`~processkg.validate.urls.resolve_service`, with the violations found. Each caller gets its
        own copy of the target and of its violations; the parts nothing changes after resolving (segments,
        query) are shared with the :data:`TARGETS_KEPT` resolutions kept, so a server that validates the
        same URLs again and again parses and resolves each once."""
        key = (method, url, service)
        found = self._targets.get(key)
        if found is None:
            found = parse_call_url(url, service)
            found["method"], found["violations"] = method, []
            resolve_service(self.model, found)
            if len(self._targets) >= TARGETS_KEPT:
                self._targets.clear()
            self._targets[key] = found
        return {**found, "violations": list(found["violations"])}

    def _checked_get(self, call: JSONObject, target: CallTarget) -> list[Finding]:
        """:func:`~processkg.validate.urls.check_get` of a GET's target, kept per URL as :meth:`resolve` keeps
        the target (the same URL, the same target, the same findings; the list is only read)."""
        url, hint = call.get("url"), call.get("service")
        if not isinstance(url, str):
            return check_get(self.model, target)
        key = (url, hint if isinstance(hint, str) else None)
        found = self._gets.get(key)
        if found is None:
            found = check_get(self.model, target)
            if len(self._gets) >= TARGETS_KEPT:
                self._gets.clear()
            self._gets[key] = found
        return found

    def _operation(self, i: int, target: CallTarget, call: JSONObject, result: CallResult, pending: Payloads) -> None:
        """A call of a function import, action or function (:mod:`processkg.validate.operation_parameters`): the
        method and the URI literals in Python, the parameters by the operation's payload shape."""
        op, found = operation_parameters.resolve_operation(self.model, target)
        result.violations.extend(Violation(*v) for v in found)
        if op is None:
            return
        body = call.get("payload", call.get("body"))
        values, found = operation_parameters.parameter_values(op, target, _json_text(body))
        result.violations.extend(Violation(*v) for v in found)
        if any(kind == "malformed" for kind, *_rest in found):
            return  # no parameters could be read: none is reported missing
        conv = Converter(self.model, pending, i, target["service_version"])
        conv.root(op.as_type(), values)
        result.violations.extend(conv.violations)
        result.notes.extend(conv.notes)

    def _post(self, i: int, target: CallTarget, result: CallResult, pending: Payloads) -> None:
        t = self.model.types.get(target["type"])
        if t is None:  # an entity type declared in another document (CSDL 3.3 Include)
            result.violations.append(
                Violation(
                    "unknown-entity-set", "", f"the entity type of {target['set']} is not in this graph", target["set"]
                )
            )
            return
        if not target.get("creatable", True):
            result.violations.append(
                Violation("read-only", "", f'entity set {target["set"]} does not allow create (sap:creatable="false")')
            )
            return
        result.violations.extend(_deep_inserts(t, set_rules(self.model, target), target["payload"], target["set"]))
        checks = self.checks(t.service)
        v2 = target["service_version"].startswith("2")
        notes = checks.conforms(t, target["payload"], v2) if checks is not None else None
        if notes is not None:  # conforms: what the triples would give, without them
            result.notes.extend(Violation(*n) for n in notes)
            self._passed = True
            return
        conv = Converter(self.model, pending, i, target["service_version"])
        conv.root(t, target["payload"])
        result.violations.extend(conv.violations)
        result.notes.extend(conv.notes)

    def _update(self, i: int, target: CallTarget, result: CallResult, pending: Payloads) -> None:
        """PATCH / MERGE (partial) and PUT (full replace) of the one entity the URL names."""
        t = self.model.types.get(target["type"])
        if t is None:
            what = f"the entity type of {target['set']} is not in this graph"
            result.violations.append(Violation("unknown-entity-set", "", what, target["set"]))
            return
        conv = UpdateConverter(self.model, pending, i, target["service_version"])
        conv.change(t, target, set_rules(self.model, target))
        result.violations.extend(conv.violations)
        result.notes.extend(conv.notes)

    # ------------------------------------------------------------ SHACL
    def _shacl(self, pending: Payloads, results: list[CallResult]) -> None:
        self.last_payloads = pending
        found = [
            r for name in sorted(pending.services) for r in self.engine(name).check(pending.triples, pending.shapes)
        ]
        for focus, path, comp, value, shape in found:
            i, pointer = _node_pointer(focus)
            if i is None:
                continue
            results[i].violations.append(self._violation(pending, focus, pointer, path, comp, value, shape))

    def _violation(
        self,
        pending: Payloads,
        focus: Node | None,
        pointer: str,
        path: Node | None,
        comp: Node | None,
        value: Node | None,
        shape: Node | None,
    ) -> Violation:
        key = (focus, path)
        found = (self.names(service).get(str(path)) for service in sorted(pending.services))
        item = next((i for i in found if i is not None), None) if path is not None else None
        name = item.name if item is not None else unquote(str(path).rsplit("/", 1)[-1])
        where = pending.pointers.get((focus, path, value)) or pending.pointers.get(key) or f"{pointer}/{esc(name)}"
        raw = pending.values.get((focus, path, value), pending.values.get(key))
        kind = _kind(comp, path, item, shape)
        owner = pending.types.get(focus) if focus is not None else None
        op = self.operations(owner.service).get(owner.iri) if owner is not None else None
        kind = "unknown-parameter" if op is not None and kind == "unknown-property" else kind
        given = op is not None and operation_parameters.message(
            kind, name, op, item if isinstance(item, Prop) else None
        )
        message = given or self._message(kind, name, owner, item, raw, pending.messages.get(key))
        return Violation(kind, where, message, raw)

    def _message(
        self, kind: str, name: str, owner: TypeInfo | None, item: Prop | Nav | None, raw: JSONValue, hint: str | None
    ) -> str:
        tname = owner.qname.rsplit(".", 1)[-1] if owner else "the entity"
        if kind in ("unknown-property", "unknown-navigation"):
            return _unknown(kind, name, owner)
        if kind == "missing-required":
            return f"{name} is required to create {tname} ({_required_why(item)}); add it"
        if kind == "read-only":
            return f"{name} is read-only in {tname} (not creatable or computed); remove it"
        if kind == "invalid-code" and isinstance(item, Prop):
            return _invalid_code(name, item, raw)
        if kind == "max-length" and isinstance(item, Prop):
            return f"{name} is at most {item.max_length} characters; got {len(str(raw))}"
        if kind == "cardinality":
            return hint or f"{name} is a to-one navigation: give one JSON object"
        return hint or f"{name}: value does not match {getattr(item, 'edm_type', 'its type')}"


# ---------------------------------------------------------------- payload -> RDF


class Payloads:
    """The data graph of a batch plus what maps it back to JSON: pointers, values, messages."""

    def __init__(self) -> None:
        self.triples: list[tuple[URIRef, URIRef, Node]] = []
        self.shapes: set[str] = set()  # IRIs of the shapes this batch needs
        self.services: set[str] = set()  # names of the services whose shapes those are
        self.pointers: dict[PayloadKey, str] = {}  # (node, predicate[, object]) -> JSON pointer
        self.values: dict[PayloadKey, JSONValue] = {}
        self.messages: dict[PayloadKey, str] = {}
        self.types: dict[Node, TypeInfo] = {}  # node -> TypeInfo

    def add(self, s: URIRef, p: URIRef, o: Node) -> None:
        self.triples.append((s, p, o))

    @property
    def graph(self) -> Graph:
        """The data graph, made once all payloads are in (one bulk add)."""
        graph = Graph()
        graph.addN((s, p, o, graph) for s, p, o in self.triples)
        return graph


class Converter:
    """Turns one payload into triples of ``pending.graph``; structural problems become violations."""

    def __init__(self, model: Model, pending: Payloads, index: int, version: str) -> None:
        self.model, self.p, self.index = model, pending, index
        self.v2 = version.startswith("2")
        self.violations: list[Violation] = []
        self.notes: list[Violation] = []
        self.level = 0  # entities nested above the current one

    def root(self, t: TypeInfo, payload: JSONObject) -> None:
        node = self.node("")
        self.p.add(node, RDF.type, _iri(t.iri))
        self.p.shapes.add(t.iri + "/shape")
        self.entity(node, t, payload, "")

    def node(self, pointer: str) -> URIRef:
        return URIRef(f"{NODE}{self.index}{quote(pointer, safe='/~')}")

    def entity(self, node: URIRef, t: TypeInfo, obj: JSONObject, pointer: str) -> None:
        if self.level >= MAX_DEEP_INSERT:
            self.violations.append(
                Violation(
                    "malformed",
                    pointer,
                    f"entities nested deeper than the limit of {MAX_DEEP_INSERT} levels of deep insert",
                )
            )
            return
        self.p.types[node] = t
        self.p.services.add(t.service)
        self.level += 1
        for key in sorted(obj):
            self.member(node, t, key, obj[key], f"{pointer}/{esc(key)}")
        self.level -= 1

    def member(self, node: URIRef, t: TypeInfo, key: str, value: JSONValue, pointer: str) -> None:
        found = t.props.get(key)
        if found is not None:  # a property by its plain name (what the checks below come to for it)
            self.prop(node, found, value, pointer)
            return
        if control(key, t) or (key.endswith("@odata.bind") and key[:-11] in t.navs):
            return
        name = key.split("@", 1)[0]
        if "@" in key and name in t.props:
            return  # instance annotation of a property
        if name in t.props:
            self.prop(node, t.props[name], value, pointer)
        elif name in t.navs:
            self.nav(node, t.navs[name], value, pointer)
        else:
            kind = "nav" if "@" in key or _objects(value) else "prop"
            self.emit(node, URIRef(f"{t.iri}/{kind}/{quote(name, safe='')}"), _json_literal(value), pointer, value)

    def emit(
        self,
        node: URIRef,
        pred: URIRef,
        obj: Node,
        pointer: str,
        raw: JSONValue,
        item: bool = False,
        shape: str | None = None,
    ) -> None:
        """Add ``node pred obj`` with what maps it back to the payload; ``shape``: the IRI of the property
        shape of ``pred`` when the caller has it (else ``pred`` + ``/shape``)."""
        self.p.add(node, pred, obj)
        self.p.shapes.add(shape or str(pred) + "/shape")
        self.p.pointers[(node, pred, obj) if item else (node, pred)] = pointer
        self.p.values[(node, pred, obj) if item else (node, pred)] = raw

    def prop(self, node: URIRef, p: Prop, value: JSONValue, pointer: str) -> None:
        pred, shape, item_type, collection = _plan(p)
        if value is None:
            if not p.nullable and not p.read_only:
                self.emit(node, pred, NIL, pointer, None)
                self.p.messages[(node, pred)] = f"{p.name} is not nullable: null is not allowed"
            return
        if p.codes is None and p.value_help and isinstance(value, str):
            self.notes.append(
                Violation(
                    "codes-unknown",
                    pointer,
                    f"{p.name}: the codes of value help {p.value_help} are unknown, so {value!r} was not checked",
                    value,
                )
            )
        if collection:
            self.collection(node, p, value, pointer)
        elif p.complex_type:
            self.emit(node, pred, self.value(node, p, value, pointer), pointer, value, shape=shape)
        else:
            self.emit(node, pred, self.simple(node, p, item_type, value, pointer), pointer, value, shape=shape)

    def collection(self, node: URIRef, p: Prop, value: JSONValue, pointer: str) -> None:
        items = value.get("results") if isinstance(value, dict) and self.v2 else value
        if not isinstance(items, list):
            self.emit(node, _iri(p.iri), _json_literal(value), pointer, value)
            self.p.messages[(node, _iri(p.iri))] = f"{p.name} is a collection: give a JSON array"
            return
        for k, item in enumerate(items):
            obj = self.value(node, p, item, f"{pointer}/{k}")
            self.emit(node, _iri(p.iri), obj, f"{pointer}/{k}", item, item=True)

    def value(self, node: URIRef, p: Prop, value: JSONValue, pointer: str) -> Node:
        if p.complex_type and isinstance(value, dict):
            child = self.node(pointer)
            self.entity(child, self.model.types[p.complex_type], value, pointer)
            return child
        if p.complex_type:
            self.p.messages[(node, _iri(p.iri))] = f"{p.name} is of complex type {p.item_type}: give a JSON object"
            return _json_literal(value)
        return self.simple(node, p, p.item_type, value, pointer)

    def simple(self, node: URIRef, p: Prop, item_type: str, value: JSONValue, pointer: str) -> Node:
        """The literal of ``value`` for ``p``, whose type ``item_type`` is a primitive one."""
        lexical, xsd, problem = literals.literal(value, item_type, self.v2)
        if problem:
            self.p.messages[(node, _iri(p.iri))] = f"{p.name}: {problem}"
        elif item_type == "Edm.Decimal" and (digits := decimal_problem(lexical, p.precision, p.scale)):
            self.violations.append(Violation("decimal-digits", pointer, f"{p.name} {digits}", value))
        return payload_literal(lexical, None if xsd == XSD_STRING else xsd)

    def nav(self, node: URIRef, n: Nav, value: JSONValue, pointer: str) -> None:
        if value is None or (isinstance(value, dict) and ("__deferred" in value or is_link(value))):
            return
        items = value.get("results") if isinstance(value, dict) and "results" in value else value
        if n.to_many and not isinstance(items, list):
            self._cardinality(pointer, n, value, f"{n.name} is a to-many navigation: give a JSON array of objects")
            items = [value]
        elif not n.to_many and isinstance(items, list):
            self._cardinality(pointer, n, value, f"{n.name} is a to-one navigation: give one JSON object, not an array")
        for k, item in enumerate(items if isinstance(items, list) else [items]):
            self.nav_item(node, n, item, f"{pointer}/{k}" if isinstance(items, list) else pointer)

    def nav_item(self, node: URIRef, n: Nav, item: JSONValue, pointer: str) -> None:
        pred = _iri(n.iri)
        if not isinstance(item, dict) or n.target is None or n.target not in self.model.types:
            self.emit(node, pred, _json_literal(item), pointer, item, item=True)
            self.p.messages[(node, pred)] = f"{n.name}: a deep-insert entity must be a JSON object"
            return
        child = self.node(pointer)
        self.emit(node, pred, child, pointer, None, item=True)
        self.p.add(child, RDF.type, _iri(n.target))
        self.p.shapes.add(n.target + "/shape")
        self.entity(child, self.model.types[n.target], item, pointer)

    def _cardinality(self, pointer: str, n: Nav, value: JSONValue, message: str) -> None:
        self.violations.append(Violation("cardinality", pointer, message, _short(value)))


class UpdateConverter(Converter):
    """The body of a PATCH or MERGE (partial: what it names changes, nothing is required) or of a
    PUT (a full replace: every property a create requires except the keys, which the URL gives).

    Checked here, in Python, because an update differs from a create: a property may be changed
    unless it is a key (a key value equal to the URL's is accepted), computed, immutable, not
    updatable, Common.FieldControl ReadOnly or in the set's UpdateRestrictions/NonUpdatableProperties;
    navigation properties carry links or an empty collection only (no deep update). The values themselves (Edm type,
    MaxLength, codes, complex values) are checked by the payload shapes as in a create.
    """

    def change(self, t: TypeInfo, target: CallTarget, rules: SetRules) -> None:
        self.method, self.rules = target["method"], rules
        self.keys = entity_key(self.model, target)
        node = self.node("")
        self.p.types[node] = t
        self.p.services.add(t.service)
        payload = target["payload"]
        for key in sorted(payload):
            self.change_member(node, t, key, payload[key], f"/{esc(key)}")
        if self.method == "PUT":
            self.missing(t, {key.split("@", 1)[0] for key in payload})

    def change_member(self, node: URIRef, t: TypeInfo, key: str, value: JSONValue, pointer: str) -> None:
        name = key.split("@", 1)[0]
        if control(key, t) or ("@" in key and (name in t.props or name in t.navs)):
            return  # control information, an instance annotation or a Nav@odata.bind link
        if name in t.props:
            self.change_prop(node, t, t.props[name], value, pointer)
        elif name in t.navs:
            if value is not None and not _no_entity(value):
                self.violations.append(
                    Violation(
                        "read-only",
                        pointer,
                        f"a {self.method} changes the entity's own properties only (no deep update); "
                        f"change the {name} entities at their own URL",
                        _short(value),
                    )
                )
        else:
            kind = "unknown-navigation" if _objects(value) else "unknown-property"
            self.violations.append(Violation(kind, pointer, _unknown(kind, name, t), _short(value)))

    def change_prop(self, node: URIRef, t: TypeInfo, p: Prop, value: JSONValue, pointer: str) -> None:
        why = self.frozen(p, value)
        if why:
            tname = t.qname.rsplit(".", 1)[-1]
            message = f"{p.name} cannot be changed in {tname} ({why}); remove it from the {self.method} body"
            self.violations.append(Violation("read-only", pointer, message, value))
        elif p.key:
            return  # the key the URL names, repeated
        elif p.read_only and p.complex_type is None:  # not creatable, but updatable: no value shape
            _lexical, _xsd, problem = literals.literal(value, p.item_type, self.v2)
            if problem and value is not None:
                self.violations.append(Violation("datatype", pointer, f"{p.name}: {problem}", value))
        else:
            self.prop(node, p, value, pointer)

    def frozen(self, p: Prop, value: JSONValue) -> str:
        """Why ``p`` may not be changed ("" if it may)."""
        if p.key:
            given = self.keys.get(p.name)
            same = given is None or given == ("" if value is None else str(value))
            return "" if same else f"a key: the URL names the entity with {p.name}={given}, and a key cannot change"
        if p.computed:
            return "Core.Computed: the service computes it"
        if p.field_control == "ReadOnly":
            return "Common.FieldControl ReadOnly"
        if p.immutable:
            return "Core.Immutable: it is set on create only"
        if not p.updatable:
            return 'sap:updatable="false"'
        if p.name in self.rules.named("nonUpdatableProperty"):
            return "Capabilities.UpdateRestrictions/NonUpdatableProperties"
        return ""

    def missing(self, t: TypeInfo, given: set[str]) -> None:
        tname = t.qname.rsplit(".", 1)[-1]
        for name, p in sorted(t.props.items()):
            if p.required and not p.key and name not in given:
                why = _required_why(p)
                message = (
                    f"{name} is required in {tname} ({why}) and a PUT replaces the whole entity; "
                    "add it, or send a PATCH to change only some properties"
                )
                self.violations.append(Violation("missing-required", f"/{esc(name)}", message))


def _deep_inserts(t: TypeInfo, rules: SetRules, payload: JSONObject, set_name: str) -> list[Violation]:
    """Capabilities.InsertRestrictions/NonInsertableNavigationProperties: no deep insert along these."""
    found = []
    for name in sorted(rules.named("nonInsertableNavigation") & set(payload)):
        value = payload[name]
        if value is None or (isinstance(value, dict) and is_link(value)) or name not in t.navs:
            continue
        message = (
            f"{set_name} does not take new {name} entities in its create "
            "(Capabilities.InsertRestrictions/NonInsertableNavigationProperties); "
            f"remove {name} and create them at their own URL afterwards"
        )
        found.append(Violation("read-only", f"/{esc(name)}", message, _short(value)))
    return found


# ---------------------------------------------------------------- helpers


def _payload(call: JSONObject, method: str = "POST") -> JSONObject:
    payload = call.get("payload", call.get("body"))
    if isinstance(payload, str):
        try:
            payload = parse_line(payload)
        except JsonLinesError as exc:
            raise MalformedCall(f"the {method} body is not JSON: {exc.message}") from None
        _check_size(payload)
    if not isinstance(payload, dict):
        raise MalformedCall(f"a {method} call needs a JSON object as payload (or body)")
    return payload.get("d", payload) if isinstance(payload.get("d"), dict) and len(payload) == 1 else payload


def _json_text(body: JSONValue) -> JSONValue:
    """A body given as JSON text (as a recording keeps it) parsed; a body that is no JSON stays text."""
    if not isinstance(body, str) or not body.strip():
        return body
    try:
        return parse_line(body)
    except JsonLinesError:
        return body


def _check_size(call: JSONValue) -> None:
    """Bound what one call may cost, whether it came from the JSON Lines reader or from the Python API.

    Deeper than the reader's depth limit, values would overflow the stack when serialized
    (``json.dumps`` recurses); each value can become a SHACL result (about 0.3 ms each in pySHACL),
    so :data:`MAX_CALL_VALUES` keeps one call to seconds.
    """
    level: list[JSONValue] = [call]
    depth, count = 0, 0
    while level:
        depth += 1
        if depth > LIMITS.depth:
            raise MalformedCall(f"arrays and objects nested deeper than the limit of {LIMITS.depth} levels")
        level = [v for c in level for v in (c.values() if isinstance(c, dict) else c)]
        count += len(level)
        if count > MAX_CALL_VALUES:
            raise MalformedCall(
                f"more than the limit of {MAX_CALL_VALUES:,} values (array items and object members) in one call"
            )
        level = [v for v in level if isinstance(v, (dict, list))]


def _call_id(call: JSONValue, line: int | None, i: int) -> str:
    if isinstance(call, dict) and call.get("id") is not None:
        return str(call["id"])
    return f"line {line}" if line is not None else f"call {i + 1}"


def _where(line: int | None, message: str) -> str:
    return message if line is None or message.startswith(f"line {line}") else f"line {line}: {message}"


def _node_pointer(focus: Node | None) -> tuple[int | None, str]:
    text = str(focus)
    if not text.startswith(NODE):
        return None, ""
    index, _, rest = text[len(NODE) :].partition("/")
    return int(index), unquote(f"/{rest}" if rest else "")


def _objects(value: JSONValue) -> bool:
    """A JSON object or an array of objects (an empty array too): what deep insert sends."""
    return isinstance(value, dict) or (isinstance(value, list) and all(isinstance(v, dict) for v in value))


def _no_entity(value: JSONValue) -> bool:
    """A navigation value in an update body that carries no entity: a deferred link, a link, or an
    empty collection (``[]``, V2 ``{"results": []}``), which the SAP Cloud SDK sends for every
    to-many navigation of an entity read without ``$expand``."""
    if isinstance(value, list):
        return not value
    if isinstance(value, dict):
        return "__deferred" in value or is_link(value) or value == {"results": []}
    return False


def _json_literal(value: JSONValue) -> Literal | URIRef:
    if value is None:
        return NIL
    return Literal(json.dumps(value, sort_keys=True, ensure_ascii=False), datatype=JSON_DT)


@lru_cache(maxsize=65536)
def _iri(iri: str) -> URIRef:
    """The node of a property, navigation or type IRI (kept: rdflib checks an IRI each time it makes one)."""
    return URIRef(iri)


def _plan(p: Prop) -> tuple[URIRef, str, str, bool]:
    """What a payload value of ``p`` needs of it: its node, the IRI of its property shape, its item type
    and whether it is a collection (made once per property: :func:`~processkg.services.model.made_once`)."""
    return made_once(p, _make_plan)


def _make_plan(p: Prop) -> tuple[URIRef, str, str, bool]:
    pred = _iri(p.iri)
    return pred, str(pred) + "/shape", p.item_type, p.collection


def _short(value: JSONValue) -> JSONValue:
    text = json.dumps(value, ensure_ascii=False)
    return value if len(text) <= 80 else text[:77] + "..."


def _kind(comp: Node | None, path: Node | None, item: Prop | Nav | None, shape: Node | None) -> str:
    name = str(comp).rsplit("#", 1)[-1]
    if name == "ClosedConstraintComponent":
        return "unknown-navigation" if "/nav/" in str(path) else "unknown-property"
    if name == "MaxCountConstraintComponent":
        return "read-only" if getattr(item, "read_only", False) else "cardinality"
    return {
        "MinCountConstraintComponent": "missing-required",
        "MaxLengthConstraintComponent": "max-length",
        "InConstraintComponent": "invalid-code",
    }.get(name, "datatype")


def _required_why(item: Prop | Nav | None) -> str:
    """Why a create needs a property, as a message names it: SAP's marker, or the document a
    curated row cites (``kg build --required``), or the fallback rule."""
    if not isinstance(item, Prop):
        return REQUIRED_BY["rule"]
    if item.required_by == "curated":
        return f"curated from {item.required_source or 'an unnamed source'}"
    return REQUIRED_BY.get(item.required_by, REQUIRED_BY["rule"])


def _unknown(kind: str, name: str, owner: TypeInfo | None) -> str:
    what = "navigation property" if kind == "unknown-navigation" else "property"
    if owner is None:
        return f"unknown {what} {name}"
    hint = did_you_mean(name, owner.navs if kind == "unknown-navigation" else owner.props)
    tname = owner.qname.rsplit(".", 1)[-1]
    return f"{tname} has no {what} {name}{hint}"


def _invalid_code(name: str, item: Prop, raw: JSONValue) -> str:
    codes = list(item.codes or ())
    shown = ", ".join(codes[:12]) + (f", ... ({len(codes)} codes)" if len(codes) > 12 else "")
    hint = did_you_mean(str(raw), codes)
    return f"{raw!r} is not a known code of {name} ({item.code_source}: {shown}){hint}"


def _dedupe(violations: list[Violation]) -> list[Violation]:
    """One violation per kind and place; a wrong datatype hides code and length checks of that value."""
    seen, out = set(), []
    mistyped = {v.path for v in violations if v.kind == "datatype"}
    for v in violations:
        if v.kind in ("invalid-code", "max-length") and v.path in mistyped:
            continue
        key = (v.kind, v.path, json.dumps(v.value, sort_keys=True) if v.path.startswith("/$") else None)
        if key not in seen:
            seen.add(key)
            out.append(v)
    return sorted(out, key=lambda v: (v.path, v.kind, str(v.value)))


__all__ = ["KINDS", "METHODS", "CallResult", "MalformedCall", "UpdateConverter", "Validator", "Violation", "read_calls"]
