"""The tools themselves: what ``find_entity_sets``, ``describe``, ``next_steps``, ``validate_call`` and
``call`` answer, on one store and (for ``call``) one OData server.

Every answer is a JSON object; :meth:`Toolbox.run` dispatches a tool by name with the arguments an
agent sent and turns a mistake in them (an unknown entity set, a missing argument) into an
``{"error": ...}`` answer the agent can read and repair, never an exception.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections import Counter
from collections.abc import Callable
from urllib.parse import urlsplit, urlunsplit

from processkg.aliases import JSONObject, JSONValue, Record
from processkg.errors import ProcessKGError, ToolArgumentError
from processkg.graph.handle import StoreHandle
from processkg.graph.store import records
from processkg.retrieve.context import key_predicate, render_set, set_context
from processkg.retrieve.retriever import Result, RetrievalSettings, Retriever
from processkg.serve.app import service_root
from processkg.serve.data import Data
from processkg.serve.flow_checks import Flow, flows_of
from processkg.serve.references import MASTER_KEYS
from processkg.services.model import Model, TypeInfo
from processkg.tools.answers import trimmed
from processkg.tools.describe import all_codes, compact, says_more
from processkg.tools.flow_steps import follow_ons, made_from
from processkg.tools.odata_client import ODataClient
from processkg.tools.specs import METHODS, ToolSpec, tool_list
from processkg.tools.task_terms import named_in_task
from processkg.validate.calls import UPDATES, Validator
from processkg.validate.urls import CallTarget, did_you_mean, parse_call_url, resolve_service

MAX_K = 20
FOUND = 3  # find_entity_sets' results when k is not given
V2_ROOT = "/sap/opu/odata/sap/"  # SAP's root of V2 services: a find_entity_sets result leaves such a path out
V2_DATE_TYPES = frozenset({"Edm.DateTime", "Edm.DateTimeOffset"})
ISO_DAY = re.compile(r"^\d{4}-\d{2}-\d{2}$")
EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
MASTER_NAMES = frozenset(name for names in MASTER_KEYS.values() for name in names)


class Toolbox:
    """The typed tools on one store; ``client`` is the OData server ``call`` sends to (None: no server)."""

    def __init__(
        self,
        store: StoreHandle,
        client: ODataClient | None = None,
        allow_writes: bool = False,
        validate_before_send: bool = True,
        method: str = "hybrid",
    ) -> None:
        self.handle = store  # the graph and the retriever's index of one build
        self.graph = self.handle.graph
        self.validator = Validator(store)
        self.client = client
        self.allow_writes = allow_writes
        self.validate_before_send = validate_before_send
        self.settings = RetrievalSettings(method=method).check()
        self.sets = {(r["service"], r["name"]): r["set"] for r in records(self.graph, "retrieve-sets")}
        heads = self.validator.model.heads.values()
        self.roots = {s.name: service_root(s.name, s.version, s.namespaces) for s in heads}
        self.etag_sets = {(str(r["service"]), str(r["name"])) for r in records(self.graph, "serve-concurrency")}
        self._retriever: Retriever | None = None
        #: kg serve's data as it starts (each service's records made when describe first needs them)
        self.seed = Data(self.validator.model)
        self._labels: dict[str, str] | None = None
        self._code_labels: dict[tuple[str, str], str] | None = None
        self._flows: list[Flow] | None = None
        self._vocabulary: dict[str, int] | None = None
        self.handlers: dict[str, Callable[[JSONObject], JSONObject]] = {
            "find_entity_sets": lambda a: self.find_entity_sets(_text(a, "task"), _int(a, "k", FOUND)),
            "describe": lambda a: self.describe(
                self._service(a), _text(a, "entity_set"), _detail(a), _names_list(a, "codes")
            ),
            "next_steps": lambda a: self.next_steps(self._service(a), _text(a, "entity_set"), _record(a)),
            "validate_call": lambda a: self.validate_call(_text(a, "method"), _text(a, "url"), a.get("body")),
            "call": lambda a: self.call(
                _text(a, "method"),
                _text(a, "url"),
                a.get("body"),
                _optional_text(a, "if_match"),
                _names_list(a, "select"),
            ),
        }

    @property
    def specs(self) -> list[ToolSpec]:
        return tool_list(self.allow_writes)

    def _service(self, arguments: JSONObject) -> str:
        """The ``service`` argument; a whole ``find_entity_sets`` result line given as the service
        (``API_X_SRV/A_Set [Key] Label``, as a small model did) is read as its service."""
        service = _text(arguments, "service")
        head = service.split("/", 1)[0].strip()
        return head if service not in self.roots and head in self.roots else service

    @property
    def retriever(self) -> Retriever:
        """Opened on first use: it loads the embedding model, which the other tools do not need."""
        if self._retriever is None:
            self._retriever = Retriever(self.handle)
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
    def find_entity_sets(self, task: str, k: int = FOUND) -> JSONObject:
        """The entity sets ranked for ``task`` (hybrid retrieval), each with its process position and a brief context."""
        if not 1 <= k <= MAX_K:
            raise ToolArgumentError(f"k must be between 1 and {MAX_K}, not {k}")
        results = self.retriever.retrieve(task, k, self.settings)
        answer: JSONObject = {"results": [self._brief(r) for r in results]}
        model = self.validator.model
        found = [
            (r.service, r.entity_set, self.path(r.service, r.entity_set), model.types[info.sets[r.entity_set][0]])
            for r in results
            if (info := model.services.get(r.service)) is not None and r.entity_set in info.sets
        ]
        named = named_in_task(task, found, self.labels, self.code_labels)
        if named:
            answer["named_in_task"] = named
        return answer

    def describe(
        self, service: str, entity_set: str, detail: str = "compact", codes: list[str] | None = None
    ) -> JSONObject:
        """What an agent needs to read and write one entity set: compact (:mod:`processkg.tools.describe`),
        with ``detail="full"`` the whole typed context, or with ``codes`` the whole code list of each of
        those properties (``code=label``)."""
        if detail == "full":
            return self.describe_full(service, entity_set)
        iri = self.iri(service, entity_set)
        t = self.validator.model.types[self.validator.model.services[service].sets[entity_set][0]]
        if codes:
            return {"codes": self.code_list(entity_set, t, codes)}
        head = records(self.graph, "retrieve-context-set", set=iri)[0]
        keys = [{"name": p.name, "type": p.edm_type} for p in t.props.values() if p.key]
        label = head.get("typeLabel") or head.get("label") or ""
        base: JSONObject = {"label": label} if says_more(label, entity_set) else {}
        base.update(
            path=self.path(service, entity_set),
            key=[k["name"] for k in keys],
            one_record=key_predicate(entity_set, keys, head.get("version") or ""),
            allows=", ".join(_allows(head)),
        )
        etag = self.carries_etag(service, t.iri)
        answer = compact(self.seed, service, entity_set, base, self.labels, self.code_labels, etag, self.vocabulary)
        predecessors = made_from(self.flows, service, entity_set)
        if predecessors:
            answer["made_from"] = predecessors
        return answer

    def code_list(self, entity_set: str, t: TypeInfo, names: list[str]) -> JSONObject:
        """The whole code list of each named property of ``t`` (``code=label``); a property without one
        says so, an unknown name is an error naming the nearest."""
        out: JSONObject = {}
        for name in names:
            prop = t.props.get(name)
            if prop is None:
                raise ToolArgumentError(f"{entity_set} has no property {name!r}{did_you_mean(name, t.props)}")
            out[name] = all_codes(prop, self.code_labels) if prop.codes else "no code list"
        return out

    @property
    def vocabulary(self) -> dict[str, int]:
        """How many entity types of the store have a property of each name, counted once."""
        if self._vocabulary is None:
            self._vocabulary = dict(Counter(name for t in self.validator.model.types.values() for name in t.props))
        return self._vocabulary

    @property
    def flows(self) -> list[Flow]:
        """The curated document flow (``kg build --flow``), read once."""
        if self._flows is None:
            self._flows = flows_of(records(self.graph, "serve-document-flow"))
        return self._flows

    @property
    def labels(self) -> dict[str, str]:
        """The label of every property (IRI), read once."""
        if self._labels is None:
            self._labels = {r["property"]: r["label"] for r in records(self.graph, "tools-property-labels")}
        return self._labels

    @property
    def code_labels(self) -> dict[tuple[str, str], str]:
        """The label of every known code, by (property IRI, code), read once."""
        if self._code_labels is None:
            rows = records(self.graph, "tools-code-labels")
            self._code_labels = {(r["prop"], r["code"]): r["label"] for r in sorted(rows, key=_row_key, reverse=True)}
        return self._code_labels

    def describe_full(self, service: str, entity_set: str) -> JSONObject:
        """The typed context of one entity set, everything the graph says, each thing once (a read-only
        or required property by its flag in ``properties``; ``required_on_create`` names the latter)."""
        context = set_context(self.graph, self.iri(service, entity_set))
        head = context["head"]
        return {
            "service": service,
            "entity_set": entity_set,
            "label": head.get("typeLabel") or head.get("label") or "",
            "path": self.path(service, entity_set),
            "key": [p["name"] for p in context["properties"] if p["key"]],
            "one_record": key_predicate(entity_set, _keys(context), head.get("version") or ""),
            "allows": ", ".join(_allows(head)),
            "operations": [_compact(op) for op in context.get("operations", [])],
            "required_on_create": context["required"],
            "properties": [_property_line(p) for p in context["properties"]],
            "value_helps": _value_helps(context["value_helps"]),
            "navigation": [_navigation(n) for n in context["navigations"]],
            "process": [_step(s) for s in context["process"]],
            "document_flow": context["flow"],
        }

    def next_steps(self, service: str, entity_set: str, record: dict[str, str] | None = None) -> JSONObject:
        """The steps after each step that uses the entity set, with the entity sets they use; and the
        documents made from its records (the curated document flow), each with a payload template whose
        carrier fields hold ``record``'s keys (a record of the set, by its key properties)."""
        context = set_context(self.graph, self.iri(service, entity_set))
        steps = [
            {"after": step["name"], "step": name, "uses": uses}
            for step in context["process"]
            for name, uses in step["after"].items()
        ]
        answer: JSONObject = {"service": service, "entity_set": entity_set, "next_steps": steps}
        made = follow_ons(self.flows, self.seed, service, entity_set, record)
        if made:
            answer["follow_ons"] = made
        return answer

    def validate_call(self, method: str, url: str, body: JSONValue = None) -> JSONObject:
        """``kg validate`` of one call: violations with their repair hints. ISO 8601 dates in a V2
        service's ``/Date(...)/`` fields are read as ``call`` sends them (a note says so), and so is a URL
        with the rest of a ``named_in_task`` line after it."""
        method = _method(method)
        url, cut = _without_line_rest(url)
        target = self.target(method, url)
        body, notes = self.v2_dates(target, object_in_text(body))
        notes[:0] = cut
        answer = self._checked(method, url, body)
        if notes:
            answer["notes"] = notes + answer.get("notes", [])
        return answer

    def _checked(self, method: str, url: str, body: JSONValue) -> JSONObject:
        call: JSONObject = {"method": method, "url": self.full_url(url)}
        if body is not None:
            call["body"] = body
        result = self.validator.validate_call(call)
        answer: JSONObject = {"valid": result.valid, "violations": [_violation(v.as_dict()) for v in result.violations]}
        if result.notes:
            answer["notes"] = [n.message for n in result.notes]
        return answer

    def call(
        self,
        method: str,
        url: str,
        body: JSONValue = None,
        if_match: str | None = None,
        select: list[str] | None = None,
    ) -> JSONObject:
        """Send one request to the OData server (validated first, unless switched off); its answer, errors
        included, trimmed (:func:`processkg.tools.answers.trimmed`: only ``select`` if given, else keys,
        the fields the request names and a share of the others with a value, a note naming the rest). The protocol is
        handled here: ISO 8601 dates of V2 ``/Date(...)/`` fields are converted, and a change to an entity
        with an ETag sends ``If-Match``: ``if_match`` if given, else the ETag a GET of the entity returns."""
        method = _method(method)
        if self.client is None:
            raise ToolArgumentError("no OData server is configured for call (give --odata-url or serve the store)")
        if method != "GET" and not self.allow_writes:
            raise ToolArgumentError(f"{method} is a write and writes are not allowed here (--allow-writes); use GET")
        body = object_in_text(body)
        if body is not None and not isinstance(body, dict):
            raise ToolArgumentError(f"the body of a {method} must be a JSON object")
        url, cut = _without_line_rest(url)
        url, moved = self.at_root(url)
        target = self.target(method, url)
        body, notes = self.v2_dates(target, body if method != "GET" else None)
        notes[:0] = cut + moved
        if self.validate_before_send:
            checked = self._checked(method, url, body)
            if not checked["valid"]:
                return {"sent": False, "status": 400, "violations": checked["violations"], **_notes(notes)}
        headers, read = self.if_match(method, url, target, if_match)
        notes += read
        exchange = self.client.send(method, url, body, headers)
        shown = exchange.answer
        inserted = self.deep_inserted(method, target, body)
        children = [n for n in inserted if not _shows(shown, n)]
        if exchange.status == 201 and children and exchange.location:
            expand = ",".join(children)
            reread = self.client.send("GET", f"{exchange.location}?$expand={expand}")
            if reread.status == 200:
                shown = reread.answer
                notes.append(f"the created entity as read again with $expand={expand}, to show its children")
        keep = self.kept(target, inserted) if exchange.status < 300 and not select else None  # select: its own
        sent = body if method != "GET" else None  # a write's fields are shown where the server changed them
        answer, left_out = trimmed(shown, select, keep, self.ranks(target) if keep is not None else None, sent)
        notes += left_out
        if method == "GET" and exchange.status == 200 and _empty(answer):
            notes.append(_nothing_found(target))
        return {"sent": True, "status": exchange.status, "answer": answer, **_notes(notes)}

    def at_root(self, url: str) -> tuple[str, list[str]]:
        """A path that starts with a service's name instead of its root (``/API_SALES_ORDER_SRV/A_SalesOrder``,
        which no SAP system serves) moved under the root, with a note saying so; any other URL as it is."""
        parts = urlsplit(url)
        if parts.scheme or parts.netloc or not parts.path.startswith("/"):
            return url, []
        if any(parts.path.startswith(root) for root in self.roots.values()):
            return url, []
        name, _, rest = parts.path[1:].partition("/")
        root = self.roots.get(name)
        if root is None:
            return url, []
        moved = urlunsplit(parts._replace(path=root + rest))
        return moved, [f"{name} is served under {root}: sent to {moved}"]

    def kept(self, target: CallTarget, inserted: list[str] | None = None) -> frozenset[str] | None:
        """The fields an answer always shows: the keys of the addressed type and of the types its
        ``$expand`` or a deep insert (``inserted``) reaches and every name the query mentions (``$filter``,
        ``$orderby``, ``$expand``); None (every field) when the URL has ``$select``: the server returned
        only what was asked."""
        query = target.get("query") or {}
        if not isinstance(query, dict) or any(k in query for k in ("$select", "select")):
            return None
        types = self.validator.model.types
        named = {
            name
            for option in ("$filter", "$orderby", "$expand")
            for name in re.findall(r"[A-Za-z_][A-Za-z0-9_]*", str(query.get(option, "")))
        }
        keep = set(named)
        named |= set(inserted or [])
        t = types.get(str(target.get("type")))
        for current in [t, *(types.get(str(n.target)) for n in (t.navs.values() if t else []) if n.name in named)]:
            if current is not None:
                keep.update(p.name for p in current.props.values() if p.key)
        return frozenset(keep)

    def ranks(self, target: CallTarget) -> dict[str, int]:
        """Which fields of the addressed type (and of the types it navigates to) an answer shows first:
        0 references to master data (SAP's role names) and amounts or quantities (``Edm.Decimal``),
        1 fields with a code list; any other field comes after them."""
        types = self.validator.model.types
        t = types.get(str(target.get("type")))
        ranks: dict[str, int] = {}
        for current in [t, *(types.get(str(n.target)) for n in (t.navs.values() if t else []))]:
            for p in current.props.values() if current is not None else []:
                if p.name in MASTER_NAMES or p.edm_type == "Edm.Decimal":
                    ranks[p.name] = 0
                elif p.codes:
                    ranks.setdefault(p.name, 1)
        return ranks

    def deep_inserted(self, method: str, target: CallTarget, body: JSONValue) -> list[str]:
        """The navigation properties a create's body fills with children (a deep insert), in body order."""
        t = self.validator.model.types.get(str(target.get("type")))
        if method != "POST" or t is None or not isinstance(body, dict):
            return []
        return [k for k, v in body.items() if k in t.navs and isinstance(v, dict | list) and v]

    def target(self, method: str, url: str) -> CallTarget:
        """What the URL addresses (service, entity set, type, query options) as the validator reads it;
        its ``violations`` say what it could not resolve."""
        target = parse_call_url(self.full_url(url))
        target["method"], target["violations"] = method, []
        resolve_service(self.validator.model, target)
        return target

    def carries_etag(self, service: str, type_iri: str) -> bool:
        """Whether entities of type ``type_iri`` of ``service`` carry an ETag: the type of one of the
        service's entity sets that ``serve-concurrency`` names."""
        svc = self.validator.model.services.get(service)
        sets = svc.sets if svc is not None else {}
        return any(sets[name][0] == type_iri for s, name in self.etag_sets if s == service and name in sets)

    def if_match(
        self, method: str, url: str, target: CallTarget, given: str | None
    ) -> tuple[dict[str, str], list[str]]:
        """The ``If-Match`` header of a change (and a note on where it came from): ``given``, else, when
        the entity's type carries an ETag, the ETag a GET of the entity returns; none for other calls."""
        if method not in (*UPDATES, "DELETE") or self.client is None:
            return {}, []
        if given is not None:
            return {"If-Match": given}, []
        if not self.carries_etag(str(target.get("service")), str(target.get("type"))):
            return {}, []
        read = self.client.etag(url)
        if not read.etag:
            return {}, [f"no ETag: a GET of the entity answered {read.status}, so no If-Match was sent"]
        return {"If-Match": read.etag}, [f"If-Match: {read.etag} (the ETag a GET of the entity returned)"]

    def v2_dates(self, target: CallTarget, body: JSONValue) -> tuple[JSONValue, list[str]]:
        """``body`` with the ISO 8601 dates of its V2 ``Edm.DateTime``/``DateTimeOffset`` fields (deep
        insert included) written as ``/Date(ms)/``, and one note per converted value."""
        t = self.validator.model.types.get(str(target.get("type")))
        if t is None or not isinstance(body, dict) or not str(target.get("service_version", "")).startswith(("1", "2")):
            return body, []
        notes: list[str] = []
        return _dated(self.validator.model, t, body, "", notes), notes

    # ------------------------------------------------------------ helpers
    def iri(self, service: str, entity_set: str) -> str:
        iri = self.sets.get((service, entity_set))
        if iri is None:
            known = sorted(n for s, n in self.sets if s == service)
            if not known:
                raise ToolArgumentError(f"unknown service {service!r}; find_entity_sets names the services")
            raise ToolArgumentError(f"{service} has no entity set {entity_set!r}{_near(entity_set, known)}")
        return iri

    def context(self, service: str, entity_set: str) -> str:
        """The typed context of an entity set as Markdown (``kg retrieve --context``; an MCP resource)."""
        return render_set(self.graph, Result(service, entity_set, 1.0, iri=self.iri(service, entity_set)))

    def path(self, service: str, entity_set: str) -> str:
        return self.roots.get(service, "/") + entity_set

    def full_url(self, url: str) -> str:
        """The URL as the validator reads it: resolved against the OData server's base URL, if any (a URL
        outside that root is refused, as ``call`` would refuse it)."""
        return self.client.url(url) if self.client is not None else url

    def _brief(self, result: Result) -> str:
        """One result of ``find_entity_sets`` in one line: ``SERVICE/ENTITY_SET [key, ...]``, then its label
        where it says more than the set's name, ``via`` the process steps that led to it (after how, when it
        was no direct hit: ``expanded: A > B``) and its ``path`` where it is not :data:`V2_ROOT` + service +
        set. What a create requires is ``describe``'s, the steps after it ``next_steps``'."""
        context = set_context(self.graph, result.iri)
        label = context["head"].get("typeLabel") or ""
        keys = ", ".join(p["name"] for p in context["properties"] if p["key"])
        line = f"{result.service}/{result.entity_set} [{keys}]"
        if says_more(label, result.entity_set):
            line += f" {label}"
        if result.via:
            how = "" if result.source == "seed" else f"{result.source}: "
            line += f"; via {how}{result.path_text()}"
        path = self.path(result.service, result.entity_set)
        if path != f"{V2_ROOT}{result.service}/{result.entity_set}":
            line += f"; path {path}"
        return line

    def close(self) -> None:
        if self.client is not None:
            self.client.close()


#: where a path copied with the rest of its named_in_task line ends (``PATH; codes ...``)
_LINE_REST = re.compile(r"; (?:read|values|codes|create) ")


def object_in_text(body: JSONValue) -> JSONValue:
    """A value sent as a JSON string that holds an object (``"{\\"Plant\\": ...}"``, as a small model did) is
    that object; anything else is as sent (``call``'s body here; ``kg agent`` reads arguments and
    compares writes with it too)."""
    if isinstance(body, str) and body.lstrip().startswith("{"):
        try:
            value = json.loads(body)
        except ValueError:
            return body
        return value if isinstance(value, dict) else body
    return body


def _without_line_rest(url: str) -> tuple[str, list[str]]:
    """The URL without the rest of a ``named_in_task`` line copied after it, as a small model did."""
    match = _LINE_REST.search(url)
    if match is None:
        return url, []
    return url[: match.start()], [f"the text after the path ({url[match.start() + 2 :][:40]}...) was left out"]


def _shows(answer: JSONValue, nav: str) -> bool:
    """Whether a V2 or V4 answer of one entity holds the records of navigation ``nav`` (not a deferred link)."""
    entity = answer.get("d", answer) if isinstance(answer, dict) else None
    value = entity.get(nav) if isinstance(entity, dict) else None
    return isinstance(value, list) or (isinstance(value, dict) and "__deferred" not in value)


def _empty(answer: JSONValue) -> bool:
    """Whether an answer is an empty collection (V2 ``d.results`` or V4 ``value``)."""
    if not isinstance(answer, dict):
        return False
    inner = answer.get("d")
    rows = inner.get("results") if isinstance(inner, dict) else answer.get("value")
    return rows == []


def _nothing_found(target: CallTarget) -> str:
    """What an empty read searched: the resource path in its service and the query options."""
    segments = target.get("segments") or []
    path = "/".join(name + (f"({key})" if key is not None else "") for name, key in segments)
    query = target.get("query") or {}
    options = [f"{k}={v}" for k, v in query.items() if k in ("$filter", "$search", "search", "$skip")]
    searched = f" with {' and '.join(options)}" if options else ""
    return f"nothing found: {path} of {target.get('service')}{searched} has no records"


def _notes(notes: list[str]) -> JSONObject:
    return {"notes": notes} if notes else {}


def _dated(model: Model, t: TypeInfo, record: JSONObject, pointer: str, notes: list[str]) -> JSONObject:
    """A V2 payload with ISO 8601 dates converted to ``/Date(ms)/`` (``DateTimeOffset``: ``/Date(ms+0000)/``),
    into deep-inserted children too."""
    out: JSONObject = {}
    for name, value in record.items():
        prop, nav = t.props.get(name), t.navs.get(name)
        if prop is not None and prop.edm_type in V2_DATE_TYPES and isinstance(value, str):
            converted = v2_date(value, prop.edm_type == "Edm.DateTimeOffset")
            if converted is not None:
                notes.append(f"{pointer}/{name}: {value} sent as {converted} (OData V2 JSON date)")
                value = converted
        elif nav is not None and nav.target in model.types:
            value = _dated_children(model, model.types[str(nav.target)], value, f"{pointer}/{name}", notes)
        out[name] = value
    return out


def _dated_children(model: Model, t: TypeInfo, value: JSONValue, pointer: str, notes: list[str]) -> JSONValue:
    if isinstance(value, dict) and isinstance(value.get("results"), list):
        return dict(value, results=_dated_children(model, t, value["results"], pointer + "/results", notes))
    if isinstance(value, list):
        return [_dated_children(model, t, v, f"{pointer}/{i}", notes) for i, v in enumerate(value)]
    return _dated(model, t, value, pointer, notes) if isinstance(value, dict) else value


def v2_date(text: str, offset: bool) -> str | None:
    """``2026-05-01`` or ``2026-05-01T10:00:00+02:00`` as OData V2's ``/Date(ms)/`` (UTC; a time without
    a zone is read as UTC, as SAP's Edm.DateTime is); None for anything else (``/Date(...)/`` included)."""
    text = text.strip()
    candidate = text + "T00:00:00" if ISO_DAY.match(text) else text
    if "T" not in candidate:
        return None
    try:
        moment = dt.datetime.fromisoformat(candidate[:-1] + "+00:00" if candidate.endswith("Z") else candidate)
    except ValueError:
        return None
    moment = moment if moment.tzinfo else moment.replace(tzinfo=dt.UTC)
    ms = int((moment - EPOCH).total_seconds() * 1000)
    return f"/Date({ms}+0000)/" if offset else f"/Date({ms})/"


def _text(arguments: JSONObject, name: str) -> str:
    value = arguments.get(name)
    if not isinstance(value, str) or not value.strip():
        raise ToolArgumentError(f"argument {name!r} must be a non-empty string")
    return value.strip()


def _record(arguments: JSONObject) -> dict[str, str] | None:
    """``next_steps``'s optional ``record``: key property -> value (values as text)."""
    value = arguments.get("record")
    if value is None:
        return None
    if not isinstance(value, dict) or not all(isinstance(v, (str, int, float)) for v in value.values()):
        raise ToolArgumentError("argument 'record' must be an object of key property -> value")
    return {str(k): str(v) for k, v in value.items()}


def _row_key(row: Record) -> tuple[str, str, str]:
    """Rows in a fixed order, so that a code with two labels always shows the same (the first)."""
    return (str(row["prop"]), str(row["code"]), str(row["label"]))


def _detail(arguments: JSONObject) -> str:
    value = arguments.get("detail", "compact")
    if value not in ("compact", "full"):
        raise ToolArgumentError(f'argument \'detail\' must be "compact" or "full", not {value!r}')
    return str(value)


def _optional_text(arguments: JSONObject, name: str) -> str | None:
    if arguments.get(name) is None:
        return None
    return _text(arguments, name)


def _names_list(arguments: JSONObject, name: str) -> list[str] | None:
    """A list-of-names argument (``select``: ``to_Item/Material`` for an expanded navigation; ``codes``),
    as a list of strings or one comma-separated string."""
    value = arguments.get(name)
    if value is None:
        return None
    if isinstance(value, str):
        value = value.split(",")
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise ToolArgumentError(f"argument {name!r} must be a list of property names (or one comma-separated string)")
    return [str(v).strip() for v in value]


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
    """An operation of the typed context (function import, action, function) without empty or false
    members, its parameters likewise."""
    kept = {k: v for k, v in item.items() if v not in ("", [], None, False)}
    if isinstance(kept.get("parameters"), list):
        kept["parameters"] = [_compact(p) if isinstance(p, dict) else p for p in kept["parameters"]]
    return kept


def _property_line(p: JSONObject) -> str:
    flags = "".join(f", {f}" for f in p["flags"])
    label = f' "{p["label"]}"' if p["label"] else ""
    return f"{p['name']}: {p['type'].replace('Edm.', '')}{p['facets']}{flags}{label}"


def _value_helps(helps: list[JSONObject]) -> JSONObject:
    """Each property's value help as one string: ``code=label`` (the label where it says more than the
    code), and how many more codes there are (``describe``'s ``codes`` argument lists them)."""
    out: JSONObject = {}
    for vh in helps:
        shown = ", ".join(f"{c}={label}" if label and label != c else str(c) for c, label in vh["codes"]) or "unknown"
        text = shown + (f", +{vh['more']} more" if vh["more"] else "")
        out[vh["property"]] = f"{out[vh['property']]}; {text}" if vh["property"] in out else text
    return out


def _navigation(nav: JSONObject) -> str:
    """``to_Item: A_SalesOrderItem (many)``: name, target and cardinality (``many``, ``one`` or ``0..1``)."""
    cardinality = "many" if nav["many"] else ("0..1" if nav["optional"] else "one")
    return f"{nav['name']}: {nav['target']} ({cardinality})"


def _step(step: JSONObject) -> JSONObject:
    return {
        "step": step["name"],
        "process": step["process"],
        "mode": "/".join(step["modes"]),
        "before": [_neighbour(n, u) for n, u in step["before"].items()],
        "after": [_neighbour(n, u) for n, u in step["after"].items()],
    }


def _neighbour(name: str, uses: JSONValue) -> str:
    """A step before or after another: ``Create the outbound delivery (API_X/A_Set, ...)``."""
    sets = ", ".join(str(u) for u in uses) if isinstance(uses, list) else ""
    return f"{name} ({sets})" if sets else name


def _violation(v: JSONObject) -> JSONObject:
    return {"kind": v["kind"], "path": v["path"], "message": v["message"]}


def _near(name: str, known: list[str]) -> str:
    return did_you_mean(name, known) or f"; it has {len(known)} entity sets, find_entity_sets finds them"


__all__ = ["Toolbox", "object_in_text", "v2_date"]
