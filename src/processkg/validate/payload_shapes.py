"""Payload shapes: SHACL generated from the graph, one node shape per entity type.

:func:`load_validation_model` reads what validation needs from the store (library queries
``shapes-*.rq``); :func:`generate_shapes` turns it into SHACL as pyoxigraph triples.

Shape layout (standard SHACL Core; see ``docs/validation.md``):

* a ``sh:NodeShape`` per entity or complex type, ``{type}/shape``: ``sh:targetClass`` the
  type (entity types only: complex values are reached by ``sh:node``), ``sh:closed true``
  with every property and navigation property of the type (inherited ones included) in
  ``sh:ignoredProperties``, and a ``sh:minCount 1`` property shape per required property;
* a ``sh:PropertyShape`` per Property, ``{property}/shape``, targeted at the nodes that use
  the property (``sh:targetSubjectsOf``): ``sh:datatype`` from the Edm type, ``sh:maxLength``,
  ``sh:maxCount 1`` (or ``0`` when the property is read-only), ``sh:in`` with the known codes,
  ``sh:node`` the complex type's shape;
* a ``sh:PropertyShape`` per NavigationProperty, ``{nav}/shape``: ``sh:class`` the target
  entity type and ``sh:maxCount 1`` for a to-one navigation. A nested (deep-insert) entity
  is typed with the navigation's target type, so the target's node shape applies to it as
  to a top-level entity, at any depth.

A property shape per Property attached to the node shape with ``sh:property`` would mean the
same, but would cost every shape for every entity whether it uses the property or not; the
targeted form costs only what a payload contains (10x faster under pySHACL). Likewise
``sh:node`` from a navigation to the target's shape would mean the same as typing the
nested entity, but pySHACL re-reads the whole node shape for every nested entity, while a
class target validates all entities of a type in one pass.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection
from dataclasses import dataclass, field, replace
from functools import cache
from pathlib import Path

from pyoxigraph import BlankNode, DefaultGraph, Literal, NamedNode, Quad, Store, Triple
from pyshacl import validate
from rdflib import Graph, URIRef

from processkg.aliases import Record
from processkg.assets import graph_shapes_path
from processkg.graph.handle import open_store
from processkg.graph.store import SHAPES_GRAPH, StoreGraph, canonical_ntriples, records, to_turtle
from processkg.validate.shacl import ShaclEngine, to_rdflib
from processkg.vocab import ID, PREFIXES, RDF_NS, RDF_TYPE, RDFS_LABEL, SH_NS, XSD_BOOLEAN, XSD_INTEGER, XSD_NS

RAP_NAMESPACE = re.compile(r"^com\.sap\.gateway\.srvd(_a2x)?\.")

#: Edm primitive type -> XSD datatype of its literals in the payload graph.
EDM_XSD = {
    "Edm.String": "string",
    "Edm.Guid": "string",
    "Edm.Boolean": "boolean",
    "Edm.Byte": "unsignedByte",
    "Edm.SByte": "byte",
    "Edm.Int16": "short",
    "Edm.Int32": "int",
    "Edm.Int64": "long",
    "Edm.Decimal": "decimal",
    "Edm.Double": "double",
    "Edm.Single": "float",
    "Edm.DateTime": "dateTime",
    "Edm.DateTimeOffset": "dateTime",
    "Edm.Date": "date",
    "Edm.TimeOfDay": "time",
    "Edm.Time": "duration",
    "Edm.Duration": "duration",
    "Edm.Binary": "base64Binary",
}
GUID_PATTERN = "^[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}$"


def sh(name: str) -> NamedNode:
    return NamedNode(SH_NS + name)


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
    required_by: str = ""  # why a create needs it: "FieldControl", "InsertRestrictions" (SAP's), "rule"

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
    """A service operation as a call of it is checked (:mod:`processkg.validate.operations`): how a URL
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
class Model:
    services: dict[str, ServiceInfo] = field(default_factory=dict)  # name -> ServiceInfo
    types: dict[str, TypeInfo] = field(default_factory=dict)  # IRI -> TypeInfo
    # lower-case URL name -> ServiceInfo (urls.py fills it)
    aliases: dict[str, ServiceInfo] = field(default_factory=dict)


def load_validation_model(store: StoreGraph) -> Model:
    """Services, entity sets and types with their properties, navigations and codes."""
    model = Model()
    for r in records(store, "shapes-types"):
        svc = model.services.setdefault(r["service"], ServiceInfo(r["service"], r["version"]))
        svc.namespaces.add(r["namespace"])
        model.types[r["type"]] = TypeInfo(
            r["type"], r["qname"], r["kind"], r["service"], r["version"], r["namespace"], r["baseType"]
        )
    for r in records(store, "shapes-entity-sets"):
        if r["service"] in model.services:
            model.services[r["service"]].sets[r["name"]] = (r["type"], r["creatable"] is not False)
            model.services[r["service"]].rules[r["name"]] = _set_rules(r)
    for r in records(store, "shapes-set-members"):
        rules = model.services[r["service"]].rules[r["set"]] if r["service"] in model.services else SetRules()
        rules.members.setdefault(r["relation"], set()).add(r["name"])
    declared = _declared_props(store, model)
    navs = _declared_navs(store)
    for t in model.types.values():
        for owner in _lineage(model, t):
            t.props.update(declared.get(owner.iri, {}))
            t.navs.update(navs.get(owner.iri, {}))
    _insert_required(model)
    _load_operations(store, model)
    return model


def _load_operations(store: StoreGraph, model: Model) -> None:
    """Every operation of every service, its parameters as :class:`Prop` with their codes. A parameter
    is required when it is not nullable, unless Core.OptionalParameter lets a call leave it out."""
    ops: dict[str, OperationInfo] = {}
    for r in sorted(records(store, "shapes-operations"), key=lambda r: (r["operation"], r["import"] or "")):
        svc = model.services.get(r["service"])
        if svc is not None and r["operation"] not in ops:
            ops[r["operation"]] = _operation(r, svc)
            svc.operations.append(ops[r["operation"]])
        if r["operation"] in ops and r["import"]:
            ops[r["operation"]].imports.append(r["import"])
    codes = _codes(store)
    by_qname = {(t.service, t.qname): t.iri for t in model.types.values()}
    for r in sorted(records(store, "shapes-operation-parameters"), key=lambda r: (r["operation"], r["order"])):
        op = ops.get(r["operation"])
        if op is None or r["binding"] is True:
            continue
        p = Prop(r["param"], r["name"], r["edmType"], r["maxLength"], r["nullable"] is not False)
        p.required = not p.nullable and r["optional"] is not True
        p.complex_type = by_qname.get((op.service, p.item_type))
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


def _insert_required(model: Model) -> None:
    """Capabilities.InsertRestrictions/RequiredProperties of a set make those properties of its
    entity type required (keys too), unless the client may not set them. A property the type
    inherits is copied first, so that the base type's shape is not changed."""
    for svc in model.services.values():
        for name, rules in sorted(svc.rules.items()):
            t = model.types.get(svc.sets[name][0])
            if t is None:
                continue
            for prop_name in sorted(rules.named("insertRequiredProperty")):
                p = t.props.get(prop_name)
                if p is not None and not p.read_only and p.required_by in ("", "rule"):
                    t.props[prop_name] = replace(p, required=True, required_by="InsertRestrictions")


def _lineage(model: Model, t: TypeInfo | None) -> list[TypeInfo]:
    """``t``'s base types, root first, then ``t`` itself (cycles are cut)."""
    chain: list[TypeInfo] = []
    seen: set[str] = set()
    while t is not None and t.iri not in seen:
        seen.add(t.iri)
        chain.insert(0, t)
        t = model.types.get(t.base) if t.base else None
    return chain


def _declared_props(store: StoreGraph, model: Model) -> dict[str, dict[str, Prop]]:
    codes = _codes(store)
    by_qname = {(t.service, t.qname): t.iri for t in model.types.values()}
    declared: dict[str, dict[str, Prop]] = {}  # type IRI -> name -> Prop
    for r in records(store, "shapes-properties"):
        owner = model.types.get(r["type"])
        if owner is None:
            continue
        prop = _prop(r, owner)
        prop.complex_type = by_qname.get((owner.service, prop.item_type))
        _attach_codes(prop, codes.get(prop.iri))
        declared.setdefault(owner.iri, {})[prop.name] = prop
    return declared


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
    p.required = is_required(p, owner)
    p.required_by = ("FieldControl" if p.field_control == "Mandatory" else "rule") if p.required else ""
    return p


def is_required(p: Prop, owner: TypeInfo) -> bool:
    """What a create must contain (``sh:minCount 1``); see docs/validation.md, "Required".

    What SAP marks mandatory (Common.FieldControl Mandatory) and the client may set; nothing SAP
    marks otherwise (Optional, Inapplicable, Hidden); else a
    non-nullable property without a default that the client may set, except: keys (the
    server may assign them: number ranges, UUIDs; the metadata does not say which it
    does), collections (omitted = empty), and services generated from SAP RAP service
    definitions, whose ABAP fields are all non-nullable with an initial value as default.
    (InsertRestrictions/RequiredProperties, a marker of the entity set, is added by
    :func:`load_validation_model`.)
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


def _declared_navs(store: StoreGraph) -> dict[str, dict[str, Nav]]:
    navs: dict[str, dict[str, Nav]] = {}  # type IRI -> name -> Nav
    for r in records(store, "shapes-navigations"):
        navs.setdefault(r["type"], {})[r["name"]] = Nav(r["nav"], r["name"], r["cardinality"], r["target"])
    return navs


def _codes(store: StoreGraph) -> dict[str, dict[str, set[str]]]:
    """{property IRI: {"codes": set, "sources": set, "paths": set}} from its value helps."""
    found: dict[str, dict[str, set[str]]] = {}
    for r in records(store, "shapes-value-lists"):
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


# ---------------------------------------------------------------- shapes


def shape_iri(iri: str) -> NamedNode:
    return NamedNode(iri + "/shape")


def stored_shapes(store: StoreGraph) -> list[Triple]:
    """The payload shapes ``kg build`` wrote into the store (named graph ``SHAPES_GRAPH``); [] if none."""
    return [Triple(q.subject, q.predicate, q.object) for q in store.quads_for_pattern(None, None, None, SHAPES_GRAPH)]


def generate_shapes(store: StoreGraph) -> list[Triple]:
    """The payload shapes of every entity and complex type in ``store`` (pyoxigraph triples)."""
    return model_shapes(load_validation_model(store))


def batch_shapes(triples: list[Triple]) -> list[Triple]:
    """The payload shapes of the services in ``triples`` alone (one service's lifted triples):
    shapes are per service, so the batches' shapes together equal :func:`generate_shapes` of the
    whole store, while a build holds one service at a time."""
    store = Store()
    store.bulk_extend(Quad(t.subject, t.predicate, t.object, DefaultGraph()) for t in triples)
    return generate_shapes(store)


def model_shapes(model: Model, services: Collection[str] | None = None) -> list[Triple]:
    """The payload shapes of ``services`` (names; ``None``: every service of ``model``). A type's
    shapes name only its own service's types, so one service's shapes validate its payloads alone."""
    w = _Writer()
    for iri in sorted(model.types):
        t = model.types[iri]
        if services is not None and t.service not in services:
            continue
        w.node_shape(t)
        for name in sorted(t.props):
            w.once(t.props[name].iri, w.property_shape, t.props[name])
        for name in sorted(t.navs):
            w.once(t.navs[name].iri, w.nav_shape, t.navs[name])
    for service in sorted(model.services if services is None else set(services) & set(model.services)):
        for op in model.services[service].operations:
            w.node_shape(op.as_type())
            for name in sorted(op.params):
                w.once(op.params[name].iri, w.property_shape, op.params[name])
    return w.out


class _Writer:
    """Collects shape triples; shared parts (a property of a base type, an ISO list) once."""

    def __init__(self) -> None:
        self.out: list[Triple] = []
        self.done: set[str] = set()

    def add(self, s: NamedNode, p: NamedNode, o: NamedNode | BlankNode | Literal) -> None:
        self.out.append(Triple(s, p, o))

    def once(self, key: str, fn: Callable[..., object], *args: Prop | Nav) -> object:
        if key not in self.done:
            self.done.add(key)
            return fn(*args)
        return None

    def node_shape(self, t: TypeInfo) -> None:
        s = shape_iri(t.iri)
        self.add(s, RDF_TYPE, sh("NodeShape"))
        self.add(s, RDFS_LABEL, Literal(f"Payload shape of {t.qname}"))
        if t.kind in ("EntityType", "Operation"):
            self.add(s, sh("targetClass"), NamedNode(t.iri))
        self.add(s, sh("closed"), Literal("true", datatype=XSD_BOOLEAN))
        allowed = [RDF_TYPE] + [NamedNode(t.props[n].iri) for n in sorted(t.props)]
        allowed += [NamedNode(t.navs[n].iri) for n in sorted(t.navs)]
        self.add(s, sh("ignoredProperties"), self.rdf_list(allowed, s.value + "/allowed"))
        for name in sorted(t.props):
            if t.props[name].required:
                self.add(s, sh("property"), self.required_shape(t.props[name]))

    def required_shape(self, p: Prop) -> NamedNode:
        r = NamedNode(p.iri + "/shape/required")
        if self.once(r.value, lambda: True):
            self.add(r, RDF_TYPE, sh("PropertyShape"))
            self.add(r, sh("path"), NamedNode(p.iri))
            self.add(r, sh("minCount"), _int(1))
        return r

    def property_shape(self, p: Prop) -> None:
        s, path = shape_iri(p.iri), NamedNode(p.iri)
        for pred, obj in (
            (RDF_TYPE, sh("PropertyShape")),
            (sh("targetSubjectsOf"), path),
            (sh("path"), path),
            (RDFS_LABEL, Literal(p.name)),
        ):
            self.add(s, pred, obj)
        if p.read_only:
            self.add(s, sh("maxCount"), _int(0))
            return
        if not p.collection:
            self.add(s, sh("maxCount"), _int(1))
        for pred, obj in self.value_constraints(p):
            self.add(s, pred, obj)

    def value_constraints(self, p: Prop) -> list[tuple[NamedNode, NamedNode | Literal]]:
        if p.complex_type:
            return [(sh("nodeKind"), sh("BlankNodeOrIRI")), (sh("node"), shape_iri(p.complex_type))]
        found: list[tuple[NamedNode, NamedNode | Literal]] = []
        xsd = EDM_XSD.get(p.item_type, "string" if p.codes else None)
        if xsd:
            found.append((sh("datatype"), NamedNode(XSD_NS + xsd)))
        if p.item_type == "Edm.Guid":
            found.append((sh("pattern"), Literal(GUID_PATTERN)))
        if p.max_length and p.item_type == "Edm.String":
            found.append((sh("maxLength"), _int(p.max_length)))
        if p.codes and xsd == "string":
            found.append((sh("in"), self.code_list(p)))
        return found

    def code_list(self, p: Prop) -> NamedNode:
        codes = p.codes or ()
        if p.code_source.startswith("iso:"):
            base = f"{ID}codes/iso/{p.code_source[4:]}"
            if base in self.done:
                return NamedNode(base + "/0")
            self.done.add(base)
            return self.rdf_list([Literal(c) for c in codes], base)
        return self.rdf_list([Literal(c) for c in codes], p.iri + "/shape/in")

    def nav_shape(self, n: Nav) -> None:
        s, path = shape_iri(n.iri), NamedNode(n.iri)
        for pred, obj in (
            (RDF_TYPE, sh("PropertyShape")),
            (sh("targetSubjectsOf"), path),
            (sh("path"), path),
            (RDFS_LABEL, Literal(n.name)),
            (sh("nodeKind"), sh("BlankNodeOrIRI")),
        ):
            self.add(s, pred, obj)
        if not n.to_many:
            self.add(s, sh("maxCount"), _int(1))
        if n.target:
            self.add(s, sh("class"), NamedNode(n.target))

    def rdf_list(self, items: list[Literal] | list[NamedNode], base: str) -> NamedNode:
        """An RDF list with IRIs ``{base}/0``, ``{base}/1``... (deterministic, unlike blank nodes)."""
        head = NamedNode(RDF_NS + "nil")
        for i in range(len(items) - 1, -1, -1):
            cell = NamedNode(f"{base}/{i}")
            self.add(cell, NamedNode(RDF_NS + "first"), items[i])
            self.add(cell, NamedNode(RDF_NS + "rest"), head)
            head = cell
        return head


def _int(value: int) -> Literal:
    return Literal(str(value), datatype=XSD_INTEGER)


__all__ = [
    "EDM_XSD",
    "SHAPES_GRAPH",
    "Model",
    "Nav",
    "OperationInfo",
    "Prop",
    "ServiceInfo",
    "SetRules",
    "TypeInfo",
    "batch_shapes",
    "generate_shapes",
    "is_required",
    "load_validation_model",
    "model_shapes",
    "sap_mandatory",
    "standard_codes",
    "standard_list",
    "stored_shapes",
]


# ---------------------------------------------------------------- output and graph checks


def shapes_turtle(triples: list[Triple]) -> bytes:
    """The shapes as Turtle, in canonical (sorted) order so the same graph gives the same file."""
    prefixes = {k: v for k, v in PREFIXES.items() if k != "id"}  # id:a\/b\/c reads worse than <...>
    return to_turtle(canonical_ntriples(triples), {**prefixes, "sh": SH_NS})


def check_graph(store_dir: Path | str) -> list[dict[str, str | None]]:
    """Run ``shapes/graph.ttl`` on a store's graph (``kg build --check``).

    Returns one dict per violation, sorted: ``focus`` (the node), ``path`` (the predicate, or
    None), ``constraint`` (e.g. ``MinCountConstraintComponent``), ``value`` and ``shape`` (the
    graph shape, e.g. ``EntityType``, or a blank node id for a nested property shape); [] when
    the graph conforms.
    """
    store = open_store(Path(store_dir))
    data = to_rdflib(store.quads_for_pattern(None, None, None, DefaultGraph()))
    shapes = Graph().parse(graph_shapes_path(), format="turtle")
    _conforms, report, _text = validate(data, shacl_graph=shapes, inference="none", allow_warnings=True)
    rows = []
    for focus, path, comp, value, shape in ShaclEngine.results(report):
        owner = shapes.value(None, URIRef(SH_NS + "property"), shape) or shape  # a nested property shape
        rows.append(
            {
                "focus": str(focus),
                "path": str(path) if path is not None else None,
                "constraint": str(comp).rsplit("#", 1)[-1],
                "value": None if value is None else str(value),
                "shape": str(owner).rsplit("#", 1)[-1],
            }
        )
    return sorted(rows, key=lambda r: (r["focus"], r["path"] or "", r["constraint"]))
