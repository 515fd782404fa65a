"""The service model: what a store says about each service's types, entity sets and operations.

:func:`service_model` reads only an index (library query ``service-index``: each service, its
OData version, namespaces and the IRIs of its types); a service's part of the :class:`Model`
(types with their properties, navigations and codes, entity sets with their rules, operations,
what a create requires) is read from the store the first time that service is asked for, with
queries bound to that service (``service-*.rq``). A reader that touches one service reads one
service, at any size of the graph.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from functools import cache
from typing import TypeVar, cast

from processkg.aliases import Record
from processkg.graph.store import StoreGraph, records

RAP_NAMESPACE = re.compile(r"^com\.sap\.gateway\.srvd(_a2x)?\.")


# ---------------------------------------------------------------- the model


@dataclass
class Prop:
    iri: str
    name: str
    edm_type: str
    max_length: int | None = None
    nullable: bool = True
    key: bool = False
    read_only: bool = False
    default: str | None = None
    semantics: str | None = None
    required: bool = False
    codes: tuple[str, ...] | None = None  # known codes, sorted; None when unknown
    code_source: str = ""
    value_help: str = ""  # collection path (or "value help") of a value help, if any
    complex_type: str | None = None  # IRI of the complex type of the value
    computed: bool = False  # Core.Computed
    updatable: bool = True  # sap:updatable
    immutable: bool = False  # Core.Immutable: set on create, never changed
    field_control: str | None = None  # a constant Common.FieldControl: Mandatory, ReadOnly, Hidden, ...
    filterable: bool = True  # sap:filterable
    required_in_filter: bool = False  # sap:required-in-filter
    required_by: str = ""  # why a create needs it: "FieldControl", "InsertRestrictions" (SAP's), "curated", "rule"
    required_source: str = ""  # the document a "curated" requirement cites (kg build --required)
    precision: int | None = None  # Edm.Decimal: at most this many digits in all
    scale: int | None = None  # Edm.Decimal: at most this many after the point (None: unset, variable or floating)

    @property
    def collection(self) -> bool:
        return self.edm_type.startswith("Collection(")

    @property
    def item_type(self) -> str:
        return self.edm_type[11:-1] if self.collection else self.edm_type


@dataclass
class Nav:
    iri: str
    name: str
    cardinality: str
    target: str | None

    @property
    def to_many(self) -> bool:
        return self.cardinality == "*"


@dataclass
class TypeInfo:
    iri: str
    qname: str
    kind: str
    service: str
    version: str
    namespace: str
    base: str | None = None
    props: dict[str, Prop] = field(default_factory=dict)  # name -> Prop, inherited included
    navs: dict[str, Nav] = field(default_factory=dict)  # name -> Nav, inherited included


@dataclass
class SetRules:
    """What an entity set allows beyond its type, from sap: attributes and Capabilities annotations."""

    updatable: bool = True
    deletable: bool = True
    requires_filter: bool = False  # FilterRestrictions/RequiresFilter
    updatable_path: str | None = None  # the run-time condition of update (sap:updatable-path)
    deletable_path: str | None = None
    #: kg: relation -> member names: insertRequiredProperty, nonInsertableNavigation,
    #: nonUpdatableProperty, filterRequiredProperty, nonFilterableProperty
    members: dict[str, set[str]] = field(default_factory=dict)

    def named(self, relation: str) -> set[str]:
        return self.members.get(relation, set())


@dataclass
class OperationInfo:
    """A service operation as a call of it is checked (:mod:`processkg.validate.operation_parameters`): how a URL
    names it, the HTTP method it takes and its parameters, the binding parameter left out (the URL gives it)."""

    iri: str
    service: str
    version: str
    kind: str  # "V2FunctionImport", "V4Action", "V4Function"
    name: str
    qname: str = ""  # V4: Namespace.Name
    method: str | None = None  # None when the metadata names none (a V2 function import without m:HttpMethod)
    bound: bool = False
    binding: str | None = None  # IRI of the binding parameter's type (bound V4)
    collection: bool = False  # bound to a collection of that type
    action_for: str | None = None  # IRI of the entity type of sap:action-for (V2)
    return_type: str = ""
    return_set: str | None = None
    imports: list[str] = field(default_factory=list)  # names of the V4 imports that expose it
    params: dict[str, Prop] = field(default_factory=dict)  # name -> Prop, in declaration order

    def as_type(self) -> TypeInfo:
        """The parameters as the payload shapes see them: a closed node shape, ``kind`` "Operation"."""
        label = self.qname or self.name
        return TypeInfo(self.iri, label, "Operation", self.service, self.version, "", props=self.params)


@dataclass
class ServiceInfo:
    name: str
    version: str
    namespaces: set[str] = field(default_factory=set)
    sets: dict[str, tuple[str, bool]] = field(default_factory=dict)  # name -> (type IRI, creatable)
    rules: dict[str, SetRules] = field(default_factory=dict)  # set name -> SetRules
    operations: list[OperationInfo] = field(default_factory=list)  # sorted by IRI

    def root_operations(self, name: str) -> list[OperationInfo]:
        """The operations a URL calls by ``name`` at the service root: a V2 function import, or the
        unbound V4 action or function that an action or function import of that name exposes."""
        return [
            op
            for op in self.operations
            if (op.kind == "V2FunctionImport" and op.name == name) or (not op.bound and name in op.imports)
        ]

    def root_operation_names(self) -> set[str]:
        return {op.name for op in self.operations if op.kind == "V2FunctionImport"} | {
            name for op in self.operations for name in op.imports
        }

    def bound_operations(self, name: str) -> list[OperationInfo]:
        """Bound V4 operations named ``name``: qualified (``NS.Approve``) or, as V4.01 allows, simple."""
        return [op for op in self.operations if op.bound and name in (op.qname, op.name)]


@dataclass
class ServiceHead:
    """What the index knows of a service before it is loaded: enough to route a URL to it."""

    name: str
    version: str
    namespaces: set[str] = field(default_factory=set)
    types: list[str] = field(default_factory=list)  # IRIs of its entity and complex types, sorted


class Model:
    """The services of one store, each read on first use. ``services`` (name -> :class:`ServiceInfo`)
    and ``types`` (IRI -> :class:`TypeInfo`) are mappings over the index: asking for a service, or
    for a type of it, reads that service; iterating their keys reads nothing; their values read
    every service (only for a reader that needs them all)."""

    def __init__(self, store: StoreGraph, heads: dict[str, ServiceHead]) -> None:
        self.store = store
        self.heads = heads  # name -> ServiceHead, sorted by name
        self.type_service = {iri: head.name for head in heads.values() for iri in head.types}
        self.loaded: dict[str, ServiceInfo] = {}  # name -> ServiceInfo, in the order read
        self.services: Mapping[str, ServiceInfo] = _Services(self)
        self.types: Mapping[str, TypeInfo] = _Types(self)
        self.aliases: dict[str, str] = {}  # lower-case URL name -> service name (urls.py fills it)
        self._types: dict[str, TypeInfo] = {}
        self._lock = threading.Lock()

    def service(self, name: str) -> ServiceInfo:
        """The service ``name``, read from the store on its first use (KeyError if there is none)."""
        found = self.loaded.get(name)
        if found is not None:
            return found
        head = self.heads[name]
        with self._lock:
            if name not in self.loaded:
                info, types = _load_service(self.store, head)
                self._types.update(types)
                self.loaded[name] = info
        return self.loaded[name]

    def type(self, iri: str) -> TypeInfo:
        """The type ``iri``; reads its service on first use (KeyError if no service has it)."""
        self.service(self.type_service[iri])
        return self._types[iri]

    def types_of(self, name: str) -> list[TypeInfo]:
        """The entity and complex types of service ``name``, sorted by IRI."""
        self.service(name)
        return [self._types[iri] for iri in self.heads[name].types]


class _Services(Mapping[str, ServiceInfo]):
    def __init__(self, model: Model) -> None:
        self.model = model

    def __getitem__(self, name: str) -> ServiceInfo:
        return self.model.service(name)

    def __contains__(self, name: object) -> bool:
        return name in self.model.heads

    def __iter__(self) -> Iterator[str]:
        return iter(self.model.heads)

    def __len__(self) -> int:
        return len(self.model.heads)


class _Types(Mapping[str, TypeInfo]):
    def __init__(self, model: Model) -> None:
        self.model = model

    def __getitem__(self, iri: str) -> TypeInfo:
        return self.model.type(iri)

    def __contains__(self, iri: object) -> bool:
        return iri in self.model.type_service

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(self.model.type_service))

    def __len__(self) -> int:
        return len(self.model.type_service)


Part = TypeVar("Part", Prop, TypeInfo)
Made = TypeVar("Made")
#: (id of a type or property, the function) -> (that object, what the function made of it): held, so
#: that the object's id is not reused while its entry stands
_MADE: dict[tuple[int, Callable[..., object]], tuple[object, object]] = {}


def made_once(part: Part, make: Callable[[Part], Made]) -> Made:
    """``make(part)``, made once per type or property object: a model's types and properties do not
    change once read, and the hot paths of kg serve and kg validate ask the same of them per request."""
    key = (id(part), make)
    found = _MADE.get(key)
    if found is None or found[0] is not part:
        found = _MADE[key] = (part, make(part))
    return cast(Made, found[1])


def service_model(store: StoreGraph) -> Model:
    """The model of ``store``'s services: the index now (one query), each service on first use."""
    heads: dict[str, ServiceHead] = {}
    for r in records(store, "service-index"):
        head = heads.setdefault(r["service"], ServiceHead(r["service"], r["version"]))
        head.namespaces.add(r["namespace"])
        head.types.append(r["type"])
    for head in heads.values():
        head.types = sorted(set(head.types))
    return Model(store, dict(sorted(heads.items())))


def _load_service(store: StoreGraph, head: ServiceHead) -> tuple[ServiceInfo, dict[str, TypeInfo]]:
    """One service's entity sets, types with their properties, navigations and codes, and operations."""
    name = head.name
    svc = ServiceInfo(name, head.version, set(head.namespaces))
    types: dict[str, TypeInfo] = {}
    for r in records(store, "service-types", service=name):
        types[r["type"]] = TypeInfo(r["type"], r["qname"], r["kind"], name, r["version"], r["namespace"], r["baseType"])
    for r in records(store, "service-entity-sets", service=name):
        svc.sets[r["name"]] = (r["type"], r["creatable"] is not False)
        svc.rules[r["name"]] = _set_rules(r)
    for r in records(store, "service-set-members", service=name):
        rules = svc.rules.get(r["set"], SetRules())
        rules.members.setdefault(r["relation"], set()).add(r["name"])
    codes = _codes(store, name)
    declared = _declared_props(store, name, types, codes)
    navs = _declared_navs(store, name)
    for t in types.values():
        for owner in _lineage(types, t):
            t.props.update(declared.get(owner.iri, {}))
            t.navs.update(navs.get(owner.iri, {}))
    _insert_required(svc, types)
    _curated_required(store, svc, types)
    _load_operations(store, svc, types, codes)
    return svc, types


def _load_operations(
    store: StoreGraph, svc: ServiceInfo, types: dict[str, TypeInfo], codes: dict[str, dict[str, set[str]]]
) -> None:
    """Every operation of the service, its parameters as :class:`Prop` with their codes. A parameter
    is required when it is not nullable, unless Core.OptionalParameter lets a call leave it out."""
    ops: dict[str, OperationInfo] = {}
    rows = records(store, "service-operations", service=svc.name)
    for r in sorted(rows, key=lambda r: (r["operation"], r["import"] or "")):
        if r["operation"] not in ops:
            ops[r["operation"]] = _operation(r, svc)
            svc.operations.append(ops[r["operation"]])
        if r["import"]:
            ops[r["operation"]].imports.append(r["import"])
    by_qname = {t.qname: t.iri for t in types.values()}
    params = records(store, "service-operation-parameters", service=svc.name)
    for r in sorted(params, key=lambda r: (r["operation"], r["order"])):
        op = ops.get(r["operation"])
        if op is None or r["binding"] is True:
            continue
        p = Prop(r["param"], r["name"], r["edmType"], r["maxLength"], r["nullable"] is not False)
        p.precision, p.scale = _digits(r)
        p.required = not p.nullable and r["optional"] is not True
        p.complex_type = by_qname.get(p.item_type)
        _attach_codes(p, codes.get(p.iri))
        op.params.setdefault(p.name, p)


def _operation(r: Record, svc: ServiceInfo) -> OperationInfo:
    return OperationInfo(
        r["operation"],
        svc.name,
        svc.version,
        r["class"].rsplit("#", 1)[-1],
        r["name"],
        r["qname"] or "",
        r["method"],
        r["bound"] is True,
        r["bindingType"],
        r["collection"] is True,
        r["actionFor"],
        r["returnType"] or "",
        r["returnSet"],
    )


def _set_rules(r: Record) -> SetRules:
    return SetRules(
        r["updatable"] is not False,
        r["deletable"] is not False,
        r["requiresFilter"] is True,
        r["updatablePath"],
        r["deletablePath"],
    )


def _insert_required(svc: ServiceInfo, types: dict[str, TypeInfo]) -> None:
    """Capabilities.InsertRestrictions/RequiredProperties of a set make those properties of its
    entity type required (keys too), unless the client may not set them. A property the type
    inherits is copied first, so that the base type's shape is not changed."""
    for name, rules in sorted(svc.rules.items()):
        t = types.get(svc.sets[name][0])
        if t is None:
            continue
        for prop_name in sorted(rules.named("insertRequiredProperty")):
            p = t.props.get(prop_name)
            if p is not None and not p.read_only and p.required_by in ("", "rule"):
                t.props[prop_name] = replace(p, required=True, required_by="InsertRestrictions")


def _curated_required(store: StoreGraph, svc: ServiceInfo, types: dict[str, TypeInfo]) -> None:
    """The curated required-on-create fields of ``kg build --required`` make those properties of
    the set's entity type required (``required_by`` "curated", with the document they cite),
    unless SAP's own markers already do or the client may not set them; inherited ones are
    copied first, as in :func:`_insert_required`."""
    rows = records(store, "service-required-on-create", service=svc.name)
    for r in sorted(rows, key=lambda r: (r["set"], r["name"])):
        t = types.get(svc.sets[r["set"]][0]) if r["set"] in svc.sets else None
        p = t.props.get(r["name"]) if t is not None else None
        if t is not None and p is not None and not p.read_only and p.required_by in ("", "rule"):
            t.props[p.name] = replace(p, required=True, required_by="curated", required_source=r["source"])


def _lineage(types: dict[str, TypeInfo], t: TypeInfo | None) -> list[TypeInfo]:
    """``t``'s base types, root first, then ``t`` itself (cycles are cut)."""
    chain: list[TypeInfo] = []
    seen: set[str] = set()
    while t is not None and t.iri not in seen:
        seen.add(t.iri)
        chain.insert(0, t)
        t = types.get(t.base) if t.base else None
    return chain


#: The sort position of a property without one: after every property that has one.
UNPLACED = 1 << 30


def _declared_props(
    store: StoreGraph, service: str, types: dict[str, TypeInfo], codes: dict[str, dict[str, set[str]]]
) -> dict[str, dict[str, Prop]]:
    """Each type's own properties by name: its key first, in the order of its Key element
    (``kg:keyPosition``), then the others in the order the type declares them (``kg:propertyPosition``),
    so the order is the metadata's whichever order the store returns the rows in (by name where a store
    built before these positions has none)."""
    by_qname = {t.qname: t.iri for t in types.values()}
    found: dict[str, list[tuple[int, int, str, Prop]]] = {}  # type IRI -> (key position, position, name, Prop)
    for r in records(store, "service-properties", service=service):
        owner = types.get(r["type"])
        if owner is None:
            continue
        prop = _prop(r, owner)
        prop.complex_type = by_qname.get(prop.item_type)
        _attach_codes(prop, codes.get(prop.iri))
        key = r["keyPosition"] if prop.key and isinstance(r["keyPosition"], int) else UNPLACED
        position = r["position"] if isinstance(r["position"], int) else UNPLACED
        found.setdefault(owner.iri, []).append((key, position, prop.name, prop))
    return {iri: {p.name: p for *_place, p in sorted(props, key=lambda x: x[:3])} for iri, props in found.items()}


def _prop(r: Record, owner: TypeInfo) -> Prop:
    read_only = r["creatable"] is False or r["computed"] is True or r["fieldControl"] == "ReadOnly"
    p = Prop(
        r["prop"],
        r["name"],
        r["edmType"],
        r["maxLength"],
        r["nullable"] is not False,
        r["isKey"] is True,
        read_only,
        r["defaultValue"],
        r["semantics"],
        computed=r["computed"] is True,
        updatable=r["updatable"] is not False,
        immutable=r["immutable"] is True,
        field_control=r["fieldControl"],
        filterable=r["filterable"] is not False,
        required_in_filter=r["requiredInFilter"] is True,
    )
    p.precision, p.scale = _digits(r)
    p.required = is_required(p, owner)
    p.required_by = ("FieldControl" if p.field_control == "Mandatory" else "rule") if p.required else ""
    return p


def _digits(r: Record) -> tuple[int | None, int | None]:
    """A decimal's Precision and Scale; a Scale that is no number (V4's ``variable``, ``floating``) limits nothing."""
    precision, scale = r["precision"], r["scale"]
    number = int(scale) if isinstance(scale, (int, str)) and str(scale).isdigit() else None
    return (precision if isinstance(precision, int) else None), number


def is_required(p: Prop, owner: TypeInfo) -> bool:
    """What a create must contain (``sh:minCount 1``); see docs/validation.md, "Required".

    What SAP marks mandatory (Common.FieldControl Mandatory) and the client may set; nothing SAP
    marks otherwise (Optional, Inapplicable, Hidden); else a
    non-nullable property without a default that the client may set, except: keys (the
    server may assign them: number ranges, UUIDs; the metadata does not say which it
    does), collections (omitted = empty), and services generated from SAP RAP service
    definitions, whose ABAP fields are all non-nullable with an initial value as default.
    (InsertRestrictions/RequiredProperties, a marker of the entity set, is added by
    :func:`service_model`, per set.)
    """
    return required_on_create(
        p.key,
        p.nullable,
        p.read_only,
        p.collection,
        p.default is not None,
        owner.namespace,
        mandatory=sap_mandatory(p.field_control),
    )


def sap_mandatory(field_control: str | None) -> bool | None:
    """What a constant Common.FieldControl says about a create: Mandatory -> True, any other
    member (Optional, ReadOnly, Inapplicable, Hidden) -> False, no constant -> None (SAP says nothing)."""
    return None if field_control is None else field_control == "Mandatory"


def required_on_create(
    key: bool,
    nullable: bool,
    read_only: bool,
    collection: bool,
    has_default: bool,
    namespace: str,
    mandatory: bool | None = None,
) -> bool:
    """The one rule for "required on create", shared by the shapes and the typed context: SAP's own
    marker when it gives one (``mandatory`` True or False) and the client may set the property,
    else (``None``) the fallback rule."""
    if read_only:
        return False
    if mandatory is not None:
        return mandatory
    if nullable or key or collection or has_default:
        return False
    return not RAP_NAMESPACE.match(namespace or "")


def _declared_navs(store: StoreGraph, service: str) -> dict[str, dict[str, Nav]]:
    navs: dict[str, dict[str, Nav]] = {}  # type IRI -> name -> Nav
    for r in records(store, "service-navigations", service=service):
        navs.setdefault(r["type"], {})[r["name"]] = Nav(r["nav"], r["name"], r["cardinality"], r["target"])
    return navs


def _codes(store: StoreGraph, service: str) -> dict[str, dict[str, set[str]]]:
    """{property or parameter IRI: {"codes": set, "sources": set, "paths": set}} from its value helps."""
    found: dict[str, dict[str, set[str]]] = {}
    for r in records(store, "service-value-lists", service=service):
        entry = found.setdefault(r["prop"], {"codes": set(), "sources": set(), "paths": set()})
        entry["paths"].add(r["collectionPath"] or "value help")
        if r["code"] is not None:
            entry["codes"].add(r["code"])
            entry["sources"].add(r["codeSource"] or "metadata")
    return found


def _attach_codes(prop: Prop, vh: dict[str, set[str]] | None | None) -> None:
    """Known codes win; else a standard list if the property is a currency, country or language."""
    if vh:
        prop.value_help = sorted(vh["paths"])[0]
        if vh["codes"]:
            prop.codes, prop.code_source = tuple(sorted(vh["codes"])), ",".join(sorted(vh["sources"]))
            return
    standard = standard_list(prop.semantics, prop.value_help)
    if standard and prop.item_type == "Edm.String":
        prop.codes, prop.code_source = standard_codes(standard), f"iso:{standard}"


_CURRENCY = re.compile(r"currenc|waers", re.I)
_COUNTRY = re.compile(r"countr|land1", re.I)
_LANGUAGE = re.compile(r"languag|spras", re.I)


def standard_list(semantics: str | None, value_help: str) -> str | None:
    """ "currency", "country" or "language" when semantics or value help say so."""
    if semantics == "currency-code" or _CURRENCY.search(value_help):
        return "currency"
    if re.search(r"tele?phone|text", value_help, re.I):
        return None
    if _COUNTRY.search(value_help):
        return "country"
    if _LANGUAGE.search(value_help):
        return "language"
    return None


@cache
def standard_codes(kind: str) -> tuple[str, ...]:
    """ISO 4217 currencies, ISO 3166-1 alpha-2 countries, ISO 639-1 languages (upper case, as SAP)."""
    import pycountry

    if kind == "currency":
        return tuple(sorted(c.alpha_3 for c in pycountry.currencies))
    if kind == "country":
        return tuple(sorted(c.alpha_2 for c in pycountry.countries))
    return tuple(sorted(lang.alpha_2.upper() for lang in pycountry.languages if hasattr(lang, "alpha_2")))
