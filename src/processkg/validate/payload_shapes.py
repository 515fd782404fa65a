"""Payload shapes: SHACL generated from the graph, one node shape per entity type.

:func:`generate_shapes` turns the service model (:mod:`processkg.services.model`) into SHACL as
pyoxigraph triples, one service's shapes at a time.

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

from collections.abc import Callable, Collection

from pyoxigraph import BlankNode, DefaultGraph, Literal, NamedNode, Quad, Store, Triple
from pyshacl import validate
from rdflib import Graph, URIRef

from processkg.assets import graph_shapes_path
from processkg.graph.store import SHAPES_GRAPH, StoreGraph, canonical_ntriples, to_turtle
from processkg.services.model import Model, Nav, Prop, TypeInfo, service_model
from processkg.validate.shacl import ShaclEngine, to_rdflib
from processkg.vocab import ID, PREFIXES, RDF_NS, RDF_TYPE, RDFS_LABEL, SH_NS, XSD_BOOLEAN, XSD_INTEGER, XSD_NS

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


def shape_iri(iri: str) -> NamedNode:
    return NamedNode(iri + "/shape")


def stored_shapes(store: StoreGraph) -> list[Triple]:
    """The payload shapes ``kg build`` wrote into the store (named graph ``SHAPES_GRAPH``); [] if none."""
    return [Triple(q.subject, q.predicate, q.object) for q in store.quads_for_pattern(None, None, None, SHAPES_GRAPH)]


def generate_shapes(store: StoreGraph) -> list[Triple]:
    """The payload shapes of every entity and complex type in ``store`` (pyoxigraph triples)."""
    return model_shapes(service_model(store))


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
    chosen = sorted(model.services if services is None else set(services) & set(model.services))
    for t in sorted((t for service in chosen for t in model.types_of(service)), key=lambda t: t.iri):
        w.node_shape(t)
        for name in sorted(t.props):
            w.once(t.props[name].iri, w.property_shape, t.props[name])
        for name in sorted(t.navs):
            w.once(t.navs[name].iri, w.nav_shape, t.navs[name])
    for service in chosen:
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
    "batch_shapes",
    "generate_shapes",
    "model_shapes",
    "stored_shapes",
]


# ---------------------------------------------------------------- output and graph checks


def shapes_turtle(triples: list[Triple]) -> bytes:
    """The shapes as Turtle, in canonical (sorted) order so the same graph gives the same file."""
    prefixes = {k: v for k, v in PREFIXES.items() if k != "id"}  # id:a\/b\/c reads worse than <...>
    return to_turtle(canonical_ntriples(triples), {**prefixes, "sh": SH_NS})


def check_graph(store: StoreGraph) -> list[dict[str, str | None]]:
    """Run ``shapes/graph.ttl`` on a store's graph (``kg build --check`` on the version it writes).

    Returns one dict per violation, sorted: ``focus`` (the node), ``path`` (the predicate, or
    None), ``constraint`` (e.g. ``MinCountConstraintComponent``), ``value`` and ``shape`` (the
    graph shape, e.g. ``EntityType``, or a blank node id for a nested property shape); [] when
    the graph conforms.
    """
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
