"""``kg serve``: a local OData server built from the graph, validating every call before it touches data.

One ASGI application serves every service of a store under its SAP path
(``/sap/opu/odata/sap/SERVICE/`` for V2, the RAP path for V4). Reads answer in the JSON format
of the service's version; a POST is validated with the ``kg validate`` engine first and, when
rejected, answered with status 400 and one error detail per violation (kind, JSON pointer,
message with the repair hint), so an agent can repair and retry. Every call, accepted or not,
is appended to the recording in ``kg validate``'s input format with the status it got.
"""

from __future__ import annotations

import ipaddress
import json
import logging
import secrets
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote, urlsplit

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.types import Receive, Scope, Send

from processkg.aliases import JSONObject, JSONValue
from processkg.errors import ProcessKGError, ServeHTTPError, ServeQueryError, UnsupportedQueryError
from processkg.graph.handle import StoreHandle
from processkg.jsonl import finite_float, reject_constant
from processkg.serve import catalog, changes, etags, facts, flow_checks, odata_batch, odata_json, operations
from processkg.serve.data import Data, Rows, Table, next_key
from processkg.serve.flow_checks import DocumentFlows
from processkg.serve.query import compile_filter, count_option, order
from processkg.serve.recorder import Recorder
from processkg.serve.references import SHOWN, References
from processkg.serve.retrieval import PATH as RETRIEVE_PATH
from processkg.serve.retrieval import ResidentRetriever
from processkg.serve.values import canonical, comparable
from processkg.services.model import Model, Nav, OperationInfo, Prop, TypeInfo
from processkg.sources.odata.edm import RAP_SERVICE
from processkg.validate.calls import CallResult, Validator
from processkg.validate.urls import split_top

MAX_BODY = 1_000_000
MAX_ENTITIES = 10_000  # entities in one answer, $expand included (a $batch shares one budget)
LOOPBACK_NAMES = frozenset({"127.0.0.1", "localhost", "::1"})
READ_OPTIONS = {
    "$filter",
    "$select",
    "$expand",
    "$orderby",
    "$top",
    "$skip",
    "$count",
    "$inlinecount",
    "$format",
    "sap-client",
    "sap-language",
}
METHODS = ["GET", "POST", "PATCH", "PUT", "MERGE", "DELETE"]
CHANGES = ("PATCH", "MERGE", "PUT", "DELETE")  # on one entity, by key
TUNNELED = {"MERGE", "PATCH", "PUT", "DELETE"}  # what a POST may carry in X-HTTP-Method (V2 clients)
ADMIN = {"/$reset": "POST", "/$dump": "GET"}  # server state, at the server root (not OData, not recorded)
log = logging.getLogger(__name__)


def service_root(name: str, version: str, namespaces: set[str]) -> str:
    """The URL path a service is served under (as SAP Gateway exposes it)."""
    if version.startswith("4"):
        short = next((m.group(1).lower() for ns in sorted(namespaces) if (m := RAP_SERVICE.match(ns))), None)
        if short:
            return f"/sap/opu/odata4/sap/{short}/srvd_a2x/sap/{short}/0001/"
        return f"/sap/opu/odata4/sap/{name.lower()}/"
    return f"/sap/opu/odata/sap/{name}/"


class Budget:
    """How many more entities one answer may hold; taking past the end stops the work with a 400."""

    def __init__(self, limit: int = MAX_ENTITIES) -> None:
        self.limit, self.left = limit, limit

    def take(self, n: int = 1) -> None:
        self.left -= n
        if self.left < 0:
            raise ServeHTTPError(
                400,
                "answer-too-large",
                f"the answer would hold more than {self.limit} entities: "
                "narrow it with $top, $filter or a shallower $expand",
            )


@dataclass
class Resource:
    """What a request URL names: a service, and within it an entity set, a key and navigation steps."""

    service: str
    root: str
    rest: list[tuple[str, str | None]] = field(default_factory=list)


class Server:
    """The state behind the application: model, data, validator and recording."""

    def __init__(
        self,
        model: Model,
        validator: Validator,
        data: Data,
        recorder: Recorder | None = None,
        csrf: bool = True,
        store_facts: facts.StoreFacts | None = None,
        use_etags: bool = True,
        retrieval: ResidentRetriever | None = None,
        allow_reset: bool = False,
        allowed_hosts: frozenset[str] = frozenset(),
    ):
        self.allow_reset = allow_reset  # POST /$reset (off unless asked for: it drops every change)
        self.allowed_hosts = frozenset(h.lower() for h in allowed_hosts)  # besides the bound address
        self.model, self.validator, self.data, self.recorder = model, validator, data, recorder
        self.retrieval = retrieval  # GET /$processkg/retrieve (serve/retrieval.py)
        self.roots = {service_root(s.name, s.version, s.namespaces): s.name for s in model.heads.values()}
        self.validate_lock = threading.Lock()
        self.csrf = csrf
        self.csrf_token = secrets.token_urlsafe(24)
        self.facts = store_facts or facts.StoreFacts()
        self.references = References(data, self.facts)
        self.flow = DocumentFlows(data, self.facts)  # serve/flow_checks.py: follow-ons name ready predecessors
        data.linker = self.link  # generated references hold existing keys, across services
        data.preparer = self.flow.prepare
        self.etags = use_etags

    def link(self, table: Table, rows: Rows, rows_at: Callable[[str, str], Rows | None]) -> Rows:
        """Generated records linked: references to existing keys, then document flow to ready predecessors
        (a follow-on item takes its predecessor item's material and plant), then references once more: a
        value taken from a predecessor of a service not linked yet is made an existing key."""
        linked = self.flow.link(table, self.references.link(table, rows, rows_at), rows_at)
        return self.references.link(table, linked, rows_at)

    def check_flow(self, op: OperationInfo, values: JSONObject) -> None:
        """An operation that makes follow-ons from references (serve/flow_checks.py): 400 when one fails."""
        flow_checks.refuse(self.flow.check_operation(op, values))

    def make_follow_ons(self, op: OperationInfo, values: JSONObject) -> list[tuple[Table, dict[str, object]]]:
        """The documents an action makes from references (billing's ``CreateFromSDDocument``:
        serve/flow_checks.py), stored; none for any other operation."""
        return self.flow.make(op, values)

    def uses_etags(self, table: Table) -> bool:
        return self.etags and (table.service, table.name) in self.facts.etag_sets

    def check_csrf(self, method: str, headers: dict[str, str]) -> None:
        """SAP's protocol: a modifying request carries the token a GET with ``x-csrf-token: Fetch`` got."""
        if self.csrf and method not in ("GET", "HEAD") and headers.get("x-csrf-token") != self.csrf_token:
            raise ServeHTTPError(
                403,
                "csrf-token-required",
                "CSRF token validation failed: fetch one with a GET and the header x-csrf-token: Fetch",
            )

    def check_host(self, host: str | None, bound: tuple[str, int] | None) -> None:
        """Refuse a ``Host`` that is not the address the server listens on (DNS rebinding: a page on
        another name reaching the loopback server through the browser). Loopback names are one address
        when the server listens on loopback; ``allowed_hosts`` adds names (any port) or ``name:port``."""
        if not host_allowed(host or "", bound, self.allowed_hosts):
            where = f"{bound[0]}:{bound[1]}" if bound else "this server"
            raise ServeHTTPError(
                421,
                "host-not-allowed",
                f"Host {host!r} is not the address of {where}; start kg serve with --allowed-host to accept it",
            )

    # ------------------------------------------------------------ routing
    def resource(self, path: str) -> Resource:
        root = self.root_of(path)
        if root is None:
            raise ServeHTTPError(
                404, "not-found", f"no service at {path}; GET / lists the paths of the {len(self.roots)} services"
            )
        rest = [_segment(unquote(s)) for s in split_top(path[len(root) :], "/") if s]
        return Resource(self.roots[root], root, rest)

    def root_of(self, path: str) -> str | None:
        """The root of the service ``path`` is under: ``path`` itself with a slash, else the longest root
        that begins it (a root may begin another). Each prefix of ``path`` that ends in a slash is looked
        up, instead of testing every root: a store serves dozens of services."""
        if path + "/" in self.roots:
            return path + "/"
        end = len(path)
        while (slash := path.rfind("/", 0, end)) >= 0:
            if path[: slash + 1] in self.roots:
                return path[: slash + 1]
            end = slash
        return None

    def version(self, service: str) -> str:
        """The OData version of ``service``, from the model's index (its model is not read)."""
        return self.model.heads[service].version

    def table(self, res: Resource) -> Table:
        name = res.rest[0][0]
        table = self.data.table(res.service, name)
        if table is None:
            raise ServeHTTPError(404, "unknown-entity-set", f"{res.service} has no entity set {name}")
        return table

    # ------------------------------------------------------------ GET
    def get(self, res: Resource, query: dict[str, str], url: str, budget: Budget) -> Response:
        version = self.version(res.service)
        if not res.rest:
            sets = sorted(self.model.services[res.service].sets)
            return JSONResponse(odata_json.service_document(version, sets))
        if res.rest[0][0] == "$metadata":
            return self.metadata(res.service)
        self.check_get(url)
        unknown = sorted(k for k in query if k.startswith("$") and k not in READ_OPTIONS)
        if unknown:
            raise ServeHTTPError(501, "not-implemented", f"system query option {unknown[0]} is not supported")
        table, records, single = self.walk(res)
        base = res.root
        if single:
            if not records:
                raise ServeHTTPError(404, "not-found", f"no {table.name} with this key")
            tag = etags.etag(records[0]) if self.uses_etags(table) else None
            item = self.shape(table, records[0], base, query, budget, tag)
            headers = {"ETag": tag} if tag is not None else None
            return JSONResponse(odata_json.single(table.type, item, table.name), headers=headers)
        if res.rest[-1][0] == "$count":
            return PlainTextResponse(str(len(self.filtered(table, records, query))))
        selected = self.filtered(table, records, query)
        total = len(selected)
        selected = self.paged(table, selected, query)
        count = total if query.get("$count") == "true" or query.get("$inlinecount") == "allpages" else None
        items = [self.shape(table, r, base, query, budget) for r in selected]
        return JSONResponse(odata_json.collection(table.type, items, table.name, count))

    def metadata(self, service: str) -> Response:
        """The service's source document, byte for byte, as ``kg build`` kept it in the store."""
        document = self.facts.document(service)
        if document is None:
            raise ServeHTTPError(
                404,
                "no-metadata-document",
                f"the store keeps no source document of {service}: rebuild it with this version of kg build",
            )
        return Response(document, media_type="application/xml")

    def check_get(self, url: str) -> None:
        self.check_call({"method": "GET", "url": url})

    def check_call(self, call: JSONObject) -> None:
        """Validate ``call`` as ``kg validate`` reads it from a recording; a rejection is a 400."""
        with self.validate_lock:
            result = self.validator.validate_call(call)
        if not result.valid:
            raise _rejected(result)

    def check_change(self, call: JSONObject, res: Resource) -> None:
        """Validate a change like :meth:`check_call`, except that a read-only property the body repeats with
        the value the entity has is no violation: a client that writes back what it read (the Cloud SDK's
        PUT) changes nothing read-only. A changed read-only value is still rejected."""
        with self.validate_lock:
            result = self.validator.validate_call(call)
        if result.valid:
            return
        payload = call.get("payload")
        unchanged = self.unchanged(res, payload) if isinstance(payload, dict) else set()
        result.violations = [
            v for v in result.violations if not (v.kind == "read-only" and v.path.lstrip("/") in unchanged)
        ]
        if not result.valid:
            raise _rejected(result)

    def unchanged(self, res: Resource, payload: JSONObject) -> set[str]:
        """The properties of ``payload`` whose values equal those of the entity ``res`` addresses (none
        when it addresses no single stored entity)."""
        with self.data.lock:
            try:
                table, records, single = self.walk(res)
            except ServeHTTPError:
                return set()
            if not single or len(records) != 1:
                return set()
            record, v2 = records[0], odata_json.is_v2(table.type)
            return {
                name
                for name, value in payload.items()
                if (prop := table.type.props.get(name)) is not None
                and prop.complex_type is None
                and not prop.collection
                and _same(value, record.get(name), prop, v2)
            }

    def entity(
        self, table: Table, record: JSONObject, base: str, select: list[str] | None = None, tag: str | None = None
    ) -> dict[str, object]:
        """One record as JSON, with its ETag where the entity set uses them (``tag``: that ETag, computed)."""
        item = odata_json.entity(table.type, record, base, table.name, select)
        if self.uses_etags(table):
            tag = tag or etags.etag(record)
            meta = item.get("__metadata")
            if isinstance(meta, dict):
                meta["etag"] = tag
            else:
                item = {"@odata.etag": tag, **item}
        return item

    def walk(self, res: Resource) -> tuple[Table, list[JSONObject], bool]:
        """Follow entity set, key and navigation segments; the last table, its records, single or not."""
        table = self.table(res)
        _name, key = res.rest[0]
        records = list(table.rows.values())
        single = key is not None
        if key is not None:
            records = [r for r in [table.rows.get(parse_key(table.type, key))] if r is not None]
        for nav_name, nav_key in [s for s in res.rest[1:] if not s[0].startswith("$")]:
            nav = table.type.navs.get(nav_name)
            if nav is None or len(records) != 1:
                raise ServeHTTPError(404, "not-found", f"{table.type.qname} has no navigation property {nav_name}")
            target, records = self.data.related(table, records[0], nav)
            if target is None:
                raise ServeHTTPError(404, "not-found", f"no entity set for the target of {nav_name}")
            table, single = target, not nav.to_many or nav_key is not None
            if nav_key is not None:
                wanted = parse_key(table.type, nav_key)
                records = [r for r in records if table.key_of(r) == wanted]
        return table, records, single

    def filtered(self, table: Table, records: list[JSONObject], query: dict[str, str]) -> list[JSONObject]:
        if "$filter" in query:
            test = compile_filter(query["$filter"], table.type)
            records = [r for r in records if test(r)]
        if "$orderby" in query:
            records = order(records, query["$orderby"], table.type)
        return records

    def paged(self, table: Table, records: list[JSONObject], query: dict[str, str]) -> list[JSONObject]:
        skip = count_option(query.get("$skip"), "$skip") or 0
        top = count_option(query.get("$top"), "$top")
        return records[skip:] if top is None else records[skip : skip + top]

    def shape(
        self,
        table: Table,
        record: JSONObject,
        base: str,
        query: dict[str, str],
        budget: Budget,
        tag: str | None = None,
    ) -> dict[str, object]:
        select = [s.strip() for s in split_top(query["$select"], ",")] if "$select" in query else None
        budget.take()
        item = self.entity(table, record, base, _own(select), tag)
        for path in [e.strip() for e in split_top(query.get("$expand", ""), ",") if e.strip()]:
            self.expand(table, record, item, path, base, budget, select)
        return item

    def expand(
        self,
        table: Table,
        record: JSONObject,
        item: JSONObject,
        path: str,
        base: str,
        budget: Budget,
        select: list[str] | None = None,
    ) -> None:
        """Put the records ``path`` leads to into ``item``, taking each from ``budget`` before it is made.
        ``select`` is the ``$select`` of the entity ``item`` is: its ``path/Property`` entries (V2) or the
        ``$select`` of the expansion (V4, ``to_Item($select=Material)``) restrict the children."""
        name, _, rest = path.partition("/")
        name, options = _v4_options(name)
        nav = table.type.navs.get(name)
        if nav is None:
            raise ServeHTTPError(400, "unknown-navigation", f"$expand: {table.type.qname} has no navigation {name}")
        target, related = self.data.related(table, record, nav)
        if target is None:
            item[name] = [] if nav.to_many else None
            return
        rest = rest or options.get("$expand", "")
        inner = _beneath(select, name, options.get("$select"))
        budget.take(len(related))
        children = []
        for r in related:
            child = self.entity(target, r, base, _own(inner))
            for sub in [s for s in split_top(rest, ",") if s]:
                self.expand(target, r, child, sub, base, budget, inner)
            children.append(child)
        item[name] = _nav_value(target.type, nav, children)

    # ------------------------------------------------------------ POST
    def post(self, res: Resource, body: JSONValue, url: str) -> Response:
        """Create an entity in an entity set, or a child of an existing entity through a to-many navigation
        property (``A_SalesOrder('1')/to_Item``, SAP's way to add an item: the parent's key comes from the
        URL). The 201 holds the created entity with the children a deep insert created."""
        child_of = _child_post(res)
        if child_of is None and (len(res.rest) != 1 or res.rest[0][1] is not None):
            raise ServeHTTPError(
                405,
                "method-not-allowed",
                "POST creates entities in an entity set, or through a navigation property of one entity",
            )
        table = self.table(res)
        self.check_call({"method": "POST", "url": url, "payload": body})
        payload = _payload(body)
        with self.data.lock:
            inherited: dict[str, object] = {}
            if child_of is not None:
                table, inherited = self.parent_of_child(table, res, child_of)
            _check_references(self.references.check(table, {**payload, **inherited}))
            flow_checks.refuse(self.flow.check(table, {**payload, **inherited}))
            record = self.insert(table, payload, inherited)
            tag = etags.etag(record) if self.uses_etags(table) else None
            item = self.entity(table, record, res.root, tag=tag)
            for path in _inserted_paths(self.model.types, table.type, payload):
                self.expand(table, record, item, path, res.root, Budget())
        headers = {"Location": f"{res.root}{table.name}{odata_json.key_predicate(table.type, record)}"}
        if tag is not None:
            headers["ETag"] = tag
        return JSONResponse(odata_json.single(table.type, item, table.name), status_code=201, headers=headers)

    def parent_of_child(self, table: Table, res: Resource, nav_name: str) -> tuple[Table, dict[str, object]]:
        """For ``POST Set(key)/nav``: the table the child goes to and the parent's key properties it repeats;
        a missing parent is a 404, a navigation that is not to-many a 405."""
        parent = table.rows.get(parse_key(table.type, res.rest[0][1] or ""))
        if parent is None:
            raise ServeHTTPError(404, "not-found", f"no {table.name} with the key {res.rest[0][1]}{_no_parent(table)}")
        nav = table.type.navs.get(nav_name)
        if nav is None:
            raise ServeHTTPError(404, "not-found", f"{table.type.qname} has no navigation property {nav_name}")
        target = self.data.target(table, nav)
        if target is None or not nav.to_many:
            raise ServeHTTPError(405, "method-not-allowed", f"POST through {nav_name} needs a to-many navigation")
        return target, {k: parent[k] for k in target.keys if k in parent}

    # ------------------------------------------------------------ PATCH, MERGE, PUT, DELETE
    def change(self, res: Resource, method: str, body: JSONValue, url: str, headers: dict[str, str]) -> Response:
        """Validate, find the entity (404), check ``If-Match`` (428/412) and references, then apply: 204.

        The entity is named by its key or by a to-one navigation from one (``A_SalesOrderItem(...)/to_SalesOrder``)."""
        if method == "MERGE" and not self.version(res.service).startswith(("1", "2", "3")):
            raise ServeHTTPError(405, "method-not-allowed", "MERGE is OData V2; a V4 service takes PATCH")
        if not res.rest:
            raise ServeHTTPError(405, "method-not-allowed", f"{method} changes one entity: address it by key")
        self.check_change({"method": method, "url": url, **({} if method == "DELETE" else {"payload": body})}, res)
        with self.data.lock:
            table, records, single = self.walk(res)
            if not single or res.rest[-1][0].startswith("$"):
                raise ServeHTTPError(405, "method-not-allowed", f"{method} changes one entity: address it by key")
            if not records:
                raise ServeHTTPError(404, "not-found", f"no {table.name} with this key")
            record = records[0]
            key = table.key_of(record)
            if self.uses_etags(table):
                etags.check_if_match(record, headers.get("if-match"))
            if method == "DELETE":
                flow_checks.refuse(self.flow.check_delete(table, record))
                changes.delete(self.data, table, record)
                return Response(status_code=204)
            payload = _payload(body)
            new = changes.changed(table, record, payload, replace=method == "PUT")
            _check_references(self.references.check(table, new, changed=frozenset(payload)))
            flow_checks.refuse(self.flow.check_change(table, new, frozenset(payload)))
            flow_checks.refuse(self.flow.check_lowered(table, new, frozenset(payload)))
            table.rows[key] = new
        return Response(status_code=204, headers={"ETag": etags.etag(new)} if self.uses_etags(table) else None)

    def insert(self, table: Table, payload: JSONObject, inherited: dict[str, object]) -> dict[str, object]:
        """Store ``payload`` (deep insert along navigation properties); keys the client left out are assigned."""
        v2 = odata_json.is_v2(table.type)
        record = {k: v for k, v in inherited.items() if k in table.type.props}
        for name, value in payload.items():
            prop = table.type.props.get(name)
            if prop is not None and not prop.collection and prop.complex_type is None:
                record[name] = canonical(value, prop.edm_type, v2)
        self.flow.fill(table, record)
        for key in table.keys:
            if record.get(key) in (None, ""):
                record[key] = next_key(table, key, record)
        if table.key_of(record) in table.rows:
            raise ServeHTTPError(
                409, "duplicate-key", f"{table.name}{odata_json.key_predicate(table.type, record)} exists"
            )
        table.store(record)
        for name, value in payload.items():
            nav = table.type.navs.get(name)
            if nav is not None:
                self.insert_children(table, record, nav, value)
        return record

    def insert_children(self, table: Table, record: JSONObject, nav: Nav, value: JSONValue) -> None:
        target = self.data.target(table, nav)
        items = value.get("results", []) if isinstance(value, dict) and "results" in value else value
        items = items if isinstance(items, list) else [items]
        if target is None:
            return
        shared = {k: record[k] for k in target.keys if k in record}
        for child in items:
            if isinstance(child, dict) and not _is_link(child):
                self.insert(target, child, shared)


def _same(value: JSONValue, stored: JSONValue, prop: Prop, v2: bool) -> bool:
    """Whether a value from a body is the stored one (a date read as ``/Date(ms)/`` is the stored day)."""
    given = canonical(value, prop.edm_type, v2)
    if given is None or stored is None:
        return given is stored
    return comparable(str(given), prop.edm_type) == comparable(str(stored), prop.edm_type)


def _own(select: list[str] | None) -> list[str] | None:
    """The properties of the entity itself a ``$select`` names (``to_Item/Material`` is a child's);
    None (all) when there is no ``$select``, it has ``*``, or it names only children."""
    if select is None or "*" in select:
        return None
    own = [s for s in select if "/" not in s]
    return own or None


def _beneath(select: list[str] | None, nav: str, v4_select: str | None) -> list[str] | None:
    """The ``$select`` of the children reached by ``nav``: V4's ``nav($select=...)``, else the V2 entries
    ``nav/...`` without their prefix; None (all) when nothing restricts them or ``nav`` itself is selected."""
    if v4_select is not None:
        return [s.strip() for s in split_top(v4_select, ",")]
    if select is None or nav in select:
        return None
    inner = [s.split("/", 1)[1] for s in select if s.startswith(nav + "/")]
    return inner or None


def _no_parent(table: Table) -> str:
    """The repair hint of a child posted under a parent that does not exist: some existing keys, and
    creating the parent first only where its set takes creates."""
    keys = [", ".join(key) for key in list(table.rows)[:SHOWN]]
    read = f"{'; existing: ' + '; '.join(keys) if keys else ''}; use one that exists (read {table.name})"
    if table.creatable:
        return f"{read} or create it first"
    return f"{read}; {table.name} is read-only here, so no new one can be created"


def _child_post(res: Resource) -> str | None:
    """The navigation property of ``POST Set(key)/nav`` (one entity, then one navigation without key)."""
    if len(res.rest) == 2 and res.rest[0][1] is not None and res.rest[1][1] is None:
        name = res.rest[1][0]
        return None if name.startswith("$") else name
    return None


def _inserted_paths(types: Mapping[str, TypeInfo], t: TypeInfo, payload: JSONObject) -> list[str]:
    """The ``$expand`` paths of what a deep insert created (``to_Item``, ``to_Item/to_ScheduleLine``)."""
    paths: list[str] = []
    for name, value in payload.items():
        if name not in t.navs:
            continue
        items = value.get("results", []) if isinstance(value, dict) and "results" in value else value
        children = [c for c in (items if isinstance(items, list) else [items]) if isinstance(c, dict)]
        if not children or all(_is_link(c) for c in children):
            continue
        target = types.get(t.navs[name].target or "")
        deeper = sorted({p for c in children for p in _inserted_paths(types, target, c)}) if target else []
        paths.extend([f"{name}/{p}" for p in deeper] or [name])
    return paths


def _nav_value(t: TypeInfo, nav: Nav, children: list[JSONObject]) -> JSONValue:
    if nav.to_many:
        return {"results": children} if odata_json.is_v2(t) else children
    return children[0] if children else None


def _v4_options(text: str) -> tuple[str, dict[str, str]]:
    """``to_Item($expand=to_X)`` as ``("to_Item", {"$expand": "to_X"})``."""
    if not text.endswith(")") or "(" not in text:
        return text, {}
    name, _, inner = text[:-1].partition("(")
    options = {}
    for part in split_top(inner, ";"):
        key, _, value = part.partition("=")
        options[key.strip()] = value.strip()
    return name, options


def _is_link(value: JSONValue) -> bool:
    return set(value) <= {"__metadata", "__deferred", "@odata.id"} or "__deferred" in value


def _segment(text: str) -> tuple[str, str | None]:
    if text.endswith(")") and "(" in text:
        name, _, rest = text.partition("(")
        return name, rest[:-1]
    return text, None


def parse_key(t: TypeInfo, text: str) -> tuple[str, ...]:
    """A key predicate's text (``'1'`` or ``A='1',B='10'``) as the stored key tuple of ``t``."""
    keys = odata_json.key_props(t)
    parts = split_top(text, ",")
    if len(parts) == 1 and "=" not in parts[0].split("'")[0]:
        values = {keys[0].name: parts[0]} if keys else {}
    else:
        values = dict(p.split("=", 1) for p in parts if "=" in p)
    v2 = odata_json.is_v2(t)
    return tuple(str(canonical(_unquote_literal(values.get(p.name, "").strip()), p.edm_type, v2)) for p in keys)


def _unquote_literal(text: str) -> str:
    if "'" in text and text.endswith("'"):
        return text[text.index("'") + 1 : -1].replace("''", "'")
    return text


def _payload(body: JSONValue) -> JSONObject:
    """The entity a write carries (V2's ``{"d": {...}}`` unwrapped)."""
    payload = body["d"] if isinstance(body, dict) and isinstance(body.get("d"), dict) and len(body) == 1 else body
    if not isinstance(payload, dict):
        raise ServeHTTPError(400, "malformed", "the request body must be a JSON object")
    return payload


def _check_references(details: list[dict[str, str]]) -> None:
    if details:
        first = details[0]
        what = "unknown" if all(d["code"] == "unknown-reference" for d in details) else "unknown or missing"
        summary = f"{len(details)} {what} reference(s); first at {first['target']}: {first['message']}"
        raise ServeHTTPError(400, first["code"], summary, details)


def _rejected(result: CallResult) -> ServeHTTPError:
    details = [{"code": v.kind, "message": v.message, "target": v.path} for v in result.violations]
    first = result.violations[0]
    summary = f"{len(details)} violation(s); first: {first.kind} at {first.path or '/'}: {first.message}"
    return ServeHTTPError(400, "invalid-call", summary, details)


def host_allowed(host: str, bound: tuple[str, int] | None, allowed: frozenset[str]) -> bool:
    """Whether a request's ``Host`` names the address the server listens on (``bound``), a loopback
    name while it listens on loopback, or one of ``allowed`` (``name`` at any port, or ``name:port``)."""
    name, port = split_host(host.strip().lower())
    if not name:
        return False
    if name in allowed or f"{name}:{port}" in allowed or f"[{name}]:{port}" in allowed:
        return True
    if bound is None:  # no socket address (not a TCP server): loopback names only
        return name in LOOPBACK_NAMES
    bound_host, bound_port = bound[0].lower(), bound[1]
    if port != bound_port:
        return False
    return name == bound_host or (is_loopback(bound_host) and name in LOOPBACK_NAMES)


def split_host(host: str) -> tuple[str, int | None]:
    """``name:port``, ``[v6]:port`` or a bare name as (name, port); port 80 when none is given, None when
    it is not a number."""
    if host.startswith("["):
        name, _, rest = host[1:].partition("]")
        port_text = rest[1:] if rest.startswith(":") else ""
    elif host.count(":") == 1:
        name, _, port_text = host.partition(":")
    else:
        name, port_text = host, ""
    if not port_text:
        return name, 80
    return name, int(port_text) if port_text.isascii() and port_text.isdigit() and len(port_text) <= 5 else None


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


async def read_body(request: Request, length: str | None) -> bytes:
    """The request body, read no further than :data:`MAX_BODY` bytes: a longer one (announced by
    ``Content-Length``, ``length``, or found while streaming) is a 413 before the rest is read."""
    if length is not None:
        if not (length.isascii() and length.isdigit()):
            raise ServeHTTPError(400, "malformed", f"Content-Length {length[:40]!r} is not a number")
        if _length_refused(length):
            raise ServeHTTPError(413, "body-too-large", f"the request body is over {MAX_BODY} bytes")
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_BODY:
            raise ServeHTTPError(413, "body-too-large", f"the request body is over {MAX_BODY} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


def _length_refused(length: str) -> bool:
    """Whether a ``Content-Length`` is refused before the body is read: not a number, or over :data:`MAX_BODY`."""
    return not (length.isascii() and length.isdigit()) or len(length) > 12 or int(length) > MAX_BODY


def _path_and_query(scope: Scope) -> tuple[str, str]:
    """The request's path and query string as Starlette's ``request.url`` gives them (``?``, ``#`` and
    ``\\`` of the decoded path escaped, tab, CR and LF dropped as ``urlsplit`` drops them), without
    building the whole URL (its host and port are not needed here)."""
    path = scope["path"].replace("?", "%3F").replace("#", "%23").replace("\\", "%5C")
    query = scope.get("query_string", b"").decode()
    if any(c in path or c in query for c in "\t\r\n"):
        path, query = (text.replace("\t", "").replace("\r", "").replace("\n", "") for text in (path, query))
    return path, query


#: ``str(request.base_url).rstrip("/")`` by what Starlette makes it of: scheme, Host, server address, root path
_ORIGINS: dict[tuple[object, ...], str] = {}
ORIGINS_KEPT = 256


def _origin(scope: Scope) -> str:
    """The request's base URL without its final slash (``http://127.0.0.1:8080``), as Starlette's
    ``request.base_url`` gives it: made by Starlette once for each scheme, first ``Host`` header, server
    address and root path, then kept (a create's absolute ``Location`` needs it on every call)."""
    host = next((value for name, value in scope["headers"] if name == b"host"), None)
    root = scope.get("app_root_path", scope.get("root_path", ""))
    key = (scope.get("scheme", "http"), host, scope.get("server"), root)
    found = _ORIGINS.get(key)
    if found is None:
        if len(_ORIGINS) >= ORIGINS_KEPT:
            _ORIGINS.clear()
        found = _ORIGINS[key] = str(Request(scope).base_url).rstrip("/")
    return found


def _bound(scope: Scope) -> tuple[str, int] | None:
    server = scope.get("server")
    return (str(server[0]), int(server[1])) if server and server[1] is not None else None


def create_app(server: Server) -> Application:
    """The ASGI application of ``server`` (:class:`Application`)."""
    return Application(server)


class Application:
    """The ASGI application of a :class:`Server`: ``GET /$processkg/retrieve`` and every other path to the
    OData services (GET, HEAD, POST, PATCH, PUT, MERGE, DELETE; another method is a 405).

    A plain ASGI callable rather than a Starlette application: a request is read through Starlette's
    ``Request`` and answered with its ``Response`` as before, but without its router and middleware
    stack, which cost a tenth of a GET by key's CPU time (``benchmarks/bench_sap_clients.py``).

    Besides ASGI, :meth:`direct` answers an OData call whole in the HTTP protocol's own callback
    (``serve/http_protocol.py``), without an ASGI task, Starlette's ``Request`` or the ASGI messages:
    the same :func:`answer` and the same response, on the path a deep insert's client waits on."""

    def __init__(self, server: Server) -> None:
        self.server = server

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await _lifespan(receive, send)
            return
        if scope["type"] != "http":
            return  # a websocket: not served (the connection is closed unanswered)
        request, method = Request(scope, receive), scope["method"]
        try:
            if scope["path"] == RETRIEVE_PATH and method in ("GET", "HEAD"):
                response = await self.retrieve(request)
            elif method in METHODS or method == "HEAD":
                response = await self.handle(request)
            else:
                allowed = ", ".join([*METHODS, "HEAD"])
                response = PlainTextResponse("Method Not Allowed", status_code=405, headers={"Allow": allowed})
        except Exception:  # a bug outside answer(), which answers its own: logged, and a 500
            log.exception("kg serve: %s %s failed", method, scope.get("path"))
            response = PlainTextResponse("Internal Server Error", status_code=500)
        await response(scope, receive, send)

    async def handle(self, request: Request) -> Response:
        server, scope = self.server, request.scope
        path, query = _path_and_query(scope)
        url = path + (f"?{query}" if query else "")
        headers = _headers(scope)
        try:
            server.check_host(headers.get("host"), _bound(scope))
            raw = await read_body(request, headers.get("content-length"))
        except ServeHTTPError as exc:  # refused before the body was read (whole)
            refused = _error_response(server, url, exc)
            refused.headers["connection"] = "close"  # the rest of the body is not read: uvicorn drops the socket
            if server.recorder is not None and path not in ADMIN and request.method != "HEAD":
                server.recorder.record(request.method, url, None, refused.status_code, exc.code)
            return refused
        if path in ADMIN:
            return await run_in_threadpool(admin, server, request.method, path, headers)
        if path == "/" or catalog.is_catalog(path):
            origin = _origin(scope)
            response = discovery(server, request.method, path, query, origin)
            if headers.get("x-csrf-token", "").lower() == "fetch":  # as any GET: kg eval agent fetches it at /
                response.headers["x-csrf-token"] = server.csrf_token
            return response
        # On the event loop, not on a worker thread: the GIL and the validation lock run one call at a
        # time anyway, and the hand-off to a thread and back was a quarter of a GET by key's CPU time
        # (benchmarks/bench_sap_clients.py, py-spy).
        return _served(server, request.method, url, headers, raw, scope)

    async def retrieve(self, request: Request) -> Response:
        try:
            self.server.check_host(request.headers.get("host"), _bound(request.scope))
        except ServeHTTPError as exc:
            return _error_response(self.server, RETRIEVE_PATH, exc)
        return await run_in_threadpool(resident_retrieve, self.server, dict(request.query_params))

    def direct(self, scope: Scope) -> Callable[[bytes], Response] | None:
        """For the HTTP protocol (``serve/http_protocol.py``), once a request's head is read: how to answer
        it from its whole body without ASGI, or None where :meth:`__call__` answers it as before.

        Taken: an OData call (a method of :data:`METHODS` on a service path) whose ``Host`` is allowed and
        whose body is announced by a ``Content-Length`` within :data:`MAX_BODY` (or absent). Left to ASGI,
        answered there as before: ``HEAD``, other methods, discovery, ``/$reset`` and ``/$dump`` (on a
        worker thread), retrieval, a refused ``Host`` or length (refused before the body is read), and a
        chunked body. The answer is :meth:`handle`'s: the same checks, :func:`answer` and response."""
        server, method = self.server, scope["method"]
        path = scope["path"]
        if method not in METHODS or path == RETRIEVE_PATH or path in ADMIN or path == "/" or catalog.is_catalog(path):
            return None
        headers = _headers(scope)
        length = headers.get("content-length")
        if "transfer-encoding" in headers or (length is not None and _length_refused(length)):
            return None
        if not host_allowed(headers.get("host") or "", _bound(scope), server.allowed_hosts):
            return None
        path, query = _path_and_query(scope)
        url = path + (f"?{query}" if query else "")

        def finish(raw: bytes) -> Response:
            try:
                if len(raw) > MAX_BODY:  # more than Content-Length announced cannot arrive: never here
                    raise ServeHTTPError(413, "body-too-large", f"the request body is over {MAX_BODY} bytes")
                return _served(server, method, url, headers, raw, scope)
            except Exception:  # a bug outside answer(), which answers its own: logged, and a 500
                log.exception("kg serve: %s %s failed", method, scope.get("path"))
                return PlainTextResponse("Internal Server Error", status_code=500)

        return finish


def _served(server: Server, method: str, url: str, headers: dict[str, str], raw: bytes, scope: Scope) -> Response:
    """An OData call answered (:func:`answer`), with a create's ``Location`` made absolute."""
    response = answer(server, method, url, headers, raw)
    location = response.headers.get("location")
    if location and location.startswith("/"):  # absolute, as SAP Gateway answers a create
        response.headers["location"] = _origin(scope) + location
    return response


def _headers(scope: Scope) -> dict[str, str]:
    """A request's headers by lower-case name (the last of a repeated one)."""
    return {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}


async def _lifespan(receive: Receive, send: Send) -> None:
    """The ASGI lifespan protocol: nothing to start or stop."""
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return


def discovery(server: Server, method: str, path: str, query: str, origin: str) -> Response:
    """``GET /`` (every service and its path) and SAP's V2 and V4 catalog services (``serve/catalog.py``);
    not OData calls of a store service, so not validated and not recorded."""
    services = {root: (name, server.version(name)) for root, name in server.roots.items()}
    version = catalog.version_of(path)
    header = {"OData-Version": "4.0"} if version == "4.0" else {"DataServiceVersion": "2.0"}
    try:
        if method not in ("GET", "HEAD"):
            raise ServeHTTPError(405, "method-not-allowed", f"{path} is read with GET")
        if path == "/":
            return JSONResponse(catalog.root_page(services, origin))
        kind, body = catalog.answer(path, query, services, origin)
    except ServeHTTPError as exc:
        return JSONResponse(odata_json.error(version, exc.code, exc.message), status_code=exc.status, headers=header)
    if kind == "xml":
        return Response(str(body), media_type="application/xml", headers=header)
    return JSONResponse(body, headers=header)


def resident_retrieve(server: Server, params: dict[str, str]) -> Response:
    """``GET /$processkg/retrieve``: ``kg retrieve --json``'s answer from the retriever the server keeps."""
    if server.retrieval is None:
        return JSONResponse({"error": "this server was started without a store to retrieve from"}, status_code=404)
    try:
        return JSONResponse(server.retrieval.answer(params))
    except ProcessKGError as exc:
        return JSONResponse({"error": str(exc)}, status_code=400)


def admin(server: Server, method: str, path: str, headers: dict[str, str]) -> Response:
    """``POST /$reset``: back to the records the server started with (204), when the server allows it and
    with the CSRF token like any other change; ``GET /$dump``: all records (and a token on request): every
    service's, so it generates those no request used yet."""
    try:
        if method != ADMIN[path]:
            raise ServeHTTPError(405, "method-not-allowed", f"{path} takes {ADMIN[path]}")
        if path == "/$reset":
            if not server.allow_reset:
                raise ServeHTTPError(403, "reset-not-allowed", "POST /$reset is off: start kg serve with --allow-reset")
            server.check_csrf(method, headers)
            server.data.reset()
            return Response(status_code=204)
    except ServeHTTPError as exc:
        response = JSONResponse(odata_json.error("4.0", exc.code, exc.message), status_code=exc.status)
        if exc.code == "csrf-token-required":
            response.headers["x-csrf-token"] = "Required"
        return response
    with server.data.lock:
        response = JSONResponse(server.data.dump())
    if headers.get("x-csrf-token", "").lower() == "fetch":
        response.headers["x-csrf-token"] = server.csrf_token
    return response


def answer(
    server: Server, method: str, url: str, headers: dict[str, str], raw: bytes, budget: Budget | None = None
) -> Response:
    """One request, answered and recorded; errors become OData error bodies, never a traceback.

    An exception no check foresaw is a bug: it is logged with its traceback, answered with a 500 OData
    error and recorded like any other call. ``budget`` is shared by the requests of one ``$batch``."""
    in_batch, budget = budget is not None, budget or Budget()
    url = plus_as_space(url)
    body: object = None
    error: str | None = None  # the error code of a failed call, recorded beside its status
    tunneled = headers.get("x-http-method", "").upper()
    method = tunneled if method == "POST" and tunneled in TUNNELED else method
    head, method = method == "HEAD", "GET" if method == "HEAD" else method  # HEAD: a GET without body
    path = urlsplit(url).path
    try:
        if len(raw) > MAX_BODY:
            raise ServeHTTPError(413, "body-too-large", f"the request body is over {MAX_BODY} bytes")
        is_batch = path.rstrip("/").endswith("/$batch") and method == "POST"
        body = None if is_batch else _json_body(method, raw)
        server.check_csrf(method, headers)
        if is_batch and in_batch:
            raise ServeHTTPError(400, "malformed", "$batch: a request of a batch cannot be a $batch")
        if is_batch:
            return versioned(server, path, batch(server, url, headers, raw, budget))
        check_accept(url, headers.get("accept"))
        response = dispatch(server, method, url, body, headers, budget)
    except ServeHTTPError as exc:
        response, error = _error_response(server, url, exc), exc.code
    except (ServeQueryError, UnsupportedQueryError) as exc:
        status = 501 if isinstance(exc, UnsupportedQueryError) else 400
        response, error = _error_response(server, url, ServeHTTPError(status, "bad-query", str(exc))), "bad-query"
    except Exception as exc:  # a bug: visible in the log and as a 500, and still recorded
        log.exception("kg serve: %s %s failed", method, url)
        bug = ServeHTTPError(500, "internal-error", f"kg serve failed on this request ({type(exc).__name__}): a bug")
        response, error = _error_response(server, url, bug), bug.code
    if method == "GET" and headers.get("x-csrf-token", "").lower() == "fetch":
        response.headers["x-csrf-token"] = server.csrf_token
    elif response.status_code == 403:
        response.headers["x-csrf-token"] = "Required"
    if server.recorder is not None and not head:
        server.recorder.record(method, url, body if body is not None else _text(raw), response.status_code, error)
    return versioned(server, path, response)


def versioned(server: Server, path: str, response: Response) -> Response:
    """``response`` with the protocol version header of the service whose root ``path`` is under, as SAP
    answers: ``DataServiceVersion: 2.0`` (V2) or ``OData-Version: 4.0`` (V4)."""
    root = server.root_of(path)
    if root is None:
        return response
    if server.version(server.roots[root]).startswith("4"):
        response.headers["OData-Version"] = "4.0"
    else:
        response.headers["DataServiceVersion"] = "2.0"
    return response


def check_accept(url: str, accept: str | None) -> None:
    """A 406 when ``Accept`` rules out what the answer would be: JSON, or XML for ``$metadata``
    (``$format=json`` overrides ``Accept``, as in SAP Gateway; ``$count`` is text whatever was asked)."""
    path = urlsplit(url).path.rstrip("/")
    if not accept or path.endswith("/$count") or "$format=json" in urlsplit(url).query:
        return
    media = "application/xml" if path.endswith("/$metadata") else "application/json"
    kind = media.split("/")[0]
    for item in accept.split(","):
        name, *params = [p.strip().lower() for p in item.split(";")]
        if name in (media, f"{kind}/*", "*/*", "*") and not any(p.replace(" ", "") in ("q=0", "q=0.0") for p in params):
            return
        if media == "application/xml" and name == "text/xml":
            return
    raise ServeHTTPError(406, "not-acceptable", f"this answer is {media}; the request accepts only {accept[:200]}")


def batch(server: Server, url: str, headers: dict[str, str], raw: bytes, budget: Budget) -> Response:
    """``$batch``: every request answered (and recorded) on its own; change sets all or nothing."""
    root = server.resource(urlsplit(url).path).root
    content_type = headers.get("content-type", "")
    try:
        items = (
            odata_batch.parse_json(raw)
            if content_type.startswith("application/json")
            else odata_batch.parse_multipart(content_type, raw)
        )
    except (ValueError, RecursionError) as exc:
        raise ServeHTTPError(400, "malformed", f"$batch: {exc}") from None

    def handle(part: odata_batch.Part) -> odata_batch.Answer:
        target = part.url if part.url.startswith("/") else root + part.url
        part_headers = {**part.headers, "x-csrf-token": server.csrf_token}
        response = answer(server, part.method, target, part_headers, part.body, budget)
        return odata_batch.Answer(
            response.status_code,
            {"content-type": response.headers.get("content-type", "")},
            bytes(response.body),
            part.content_id,
        )

    with server.data.lock:
        answers = odata_batch.run(items, handle, server.data.save, server.data.restore)
    if content_type.startswith("application/json"):
        return Response(odata_batch.render_json(answers), media_type="application/json")
    media, body = odata_batch.render_multipart(answers)
    return Response(
        body,
        status_code=202 if server.version(server.resource(urlsplit(url).path).service).startswith("2") else 200,
        media_type=media,
    )


def dispatch(
    server: Server,
    method: str,
    url: str,
    body: JSONValue,
    headers: dict[str, str] | None = None,
    budget: Budget | None = None,
) -> Response:
    res = server.resource(urlsplit(url).path)
    target = server.validator.resolve(method, url)  # what operations.target_of resolves, kept
    query = target["query"]
    if res.rest and operations.names_operation(target):  # serve/operations.py
        return operations.invoke(
            server, method, url, body, res.root, lambda rest: server.walk(Resource(res.service, res.root, rest))
        )
    if method == "GET":
        return server.get(res, query, url, budget or Budget())
    if method == "POST":
        return server.post(res, body, url)
    if method in CHANGES:
        return server.change(res, method, body, url, headers or {})
    raise ServeHTTPError(405, "method-not-allowed", f"{method} is not supported by this version of kg serve")


def plus_as_space(url: str) -> str:
    """``url`` with every ``+`` of its query string written ``%20``: in a query string ``+`` is a space
    (form encoding, what pyodata and other clients built on ``requests`` send), and a literal plus
    arrives as ``%2B``. The path keeps its ``+``."""
    path, sep, query = url.partition("?")
    return f"{path}{sep}{query.replace('+', '%20')}" if sep else url


def _json_body(method: str, raw: bytes) -> object:
    """The JSON of a request body: strict JSON only (no NaN or Infinity, no number beyond a double, no
    integer of more than Python's 4300 digits, no lone surrogate), or a 400 that says why."""
    if method in ("GET", "DELETE") or not raw:
        return None
    try:
        value = _DECODER.decode(raw.decode(json.detect_encoding(raw), "surrogatepass"))  # json.loads, kept
        if b"\\u" in raw or b"\0" in raw or not raw.isascii():  # else UTF-8 with no escape: no surrogate
            json.dumps(value, ensure_ascii=False).encode("utf-8")  # a lone surrogate (\\ud800) cannot be stored
    except (ValueError, RecursionError) as exc:  # JSONDecodeError and UnicodeError are ValueErrors
        raise ServeHTTPError(400, "malformed", f"the request body is not JSON: {_one_line(exc)}") from None
    return value


#: ``json.loads(raw, parse_constant=reject_constant, parse_float=finite_float)`` makes this decoder on
#: every call; the same decoder, made once (:func:`_json_body` decodes bytes as ``json.loads`` does)
_DECODER = json.JSONDecoder(parse_constant=reject_constant, parse_float=finite_float)


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:300]


def _text(raw: bytes) -> str | None:
    return raw.decode("utf-8", "replace") if raw else None


def _error_response(server: Server, url: str, exc: ServeHTTPError) -> JSONResponse:
    root = server.root_of(urlsplit(url).path)
    version = "4.0" if root is None else server.version(server.roots[root])
    return JSONResponse(odata_json.error(version, exc.code, exc.message, exc.details), status_code=exc.status)


def open_server(
    handle: StoreHandle,
    record: Path | None = None,
    data: Path | None = None,
    csrf: bool = True,
    use_etags: bool = True,
    allow_reset: bool = False,
    allowed_hosts: frozenset[str] = frozenset(),
) -> Server:
    """A server for the build ``handle`` pinned: its validation model, generated (or loaded) data, a
    recorder, and what else the store says (source documents, ETag sets, referential constraints);
    validation, $metadata and retrieval all read this one build."""
    validator, store_facts = facts.load(handle)
    return Server(
        validator.model,
        validator,
        Data(validator.model, folder=data),
        Recorder(record) if record else None,
        csrf=csrf,
        store_facts=store_facts,
        use_etags=use_etags,
        retrieval=ResidentRetriever(handle),
        allow_reset=allow_reset,
        allowed_hosts=allowed_hosts,
    )
