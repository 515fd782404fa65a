"""Document flow inferred from OData metadata alone: which entity set follows which.

A follow-on document carries the key of its predecessor in ordinary properties: a supplier
invoice item has ``PurchaseOrder`` and ``PurchaseOrderItem``, an outbound delivery item has
``ReferenceSDDocument`` and ``ReferenceSDDocumentItem``. Where no BPMN says in what order the
documents are made, these properties still do. :func:`infer` finds them over every service of a
build and :func:`lift` writes each as ``pred kg:inferredNext follow`` with a ``kg:InferredFlow``
node that names the evidence (which property carries which key property).

A property P of entity set S *carries* a key property K of entity set T when P is not part of S's
key and either

* P has K's name (``PurchaseOrder`` carries ``PurchaseOrder``), or
* P is a generic reference, ``Reference<X>`` or ``Preceding<X>``, and X is K's label with its
  spaces removed (``ReferenceSDDocument`` carries a key labelled "SD Document"); for T's item key
  the carrier is the header carrier's name followed by ``Item`` (``ReferenceSDDocumentItem``).

S follows T when properties of S carry *every* key property of T, with T a *document*: a header
with items (another set of T's service whose key is T's key and one ``...Item`` property) or such
an item set. Master data (a customer, a plant, a product) has no items and is never a
predecessor, so ``Plant`` on an order item is no flow. A set never follows itself, a set of its
own entity type, or a set whose key is part of its own (its header). Where several services have a
predecessor set of one name and key (one service copied per system or version), a follow-on set is
linked to the one in the service whose name is closest to its own (:func:`closest`). The relation
is weaker than ``bpmn:next``: it says a document *can* be made from another, not that a process makes it so.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeAlias

from pyoxigraph import NamedNode, Triple

from processkg.sources.odata.csdl import Property, ServiceDocument
from processkg.sources.odata.edm import all_properties, key_of
from processkg.triples import Triples, child
from processkg.vocab import KGT, RDF_TYPE

#: Prefixes of a generic reference property: ``ReferenceSDDocument``, ``PrecedingDocument``.
REFERENCE_PREFIXES = ("Reference", "Preceding")
#: The suffix that makes a key property an item number (``SalesOrderItem``).
ITEM_SUFFIX = "Item"

PropIri: TypeAlias = Callable[[str, str], NamedNode]
"""(type qname, property name) -> the property's IRI, as the OData lifter mints it."""


@dataclass(frozen=True)
class Field:
    """One property of an entity set's type, as the inference needs it."""

    name: str
    label: str  # sap:label, "" without one
    edm_type: str
    iri: NamedNode


@dataclass(frozen=True)
class KeyedSet:
    """An entity set with its key and its other properties."""

    service: str
    name: str
    iri: NamedNode
    entity_type: str
    key: tuple[Field, ...]
    others: tuple[Field, ...]  # the properties that are not part of the key


@dataclass(frozen=True)
class FlowEdge:
    """``follow`` carries the key of ``pred``: (carrier property, key property) per key part."""

    pred: KeyedSet
    follow: KeyedSet
    evidence: tuple[tuple[Field, Field], ...]


def keyed_sets(doc: ServiceDocument, service: str, set_iris: dict[str, NamedNode], prop_iri: PropIri) -> list[KeyedSet]:
    """The entity sets of one resolved service document (``set_iris``: the lifter's set IRIs)."""
    out = []
    for container in doc.containers:
        for es in container.entity_sets:
            st = doc.types.get(es.entity_type)
            if st is None or es.name not in set_iris or es.singleton:
                continue
            key = key_of(doc, st)
            props = {p.name: p for p in all_properties(doc, st)}
            fields = {n: _field(p, prop_iri(st.qname, n)) for n, p in props.items()}
            out.append(
                KeyedSet(
                    service,
                    es.name,
                    set_iris[es.name],
                    es.entity_type,
                    tuple(fields[n] for n in key if n in fields),
                    tuple(f for n, f in fields.items() if n not in key),
                )
            )
    return out


def _field(prop: Property, iri: NamedNode) -> Field:
    return Field(prop.name, prop.sap.get("label", ""), prop.type, iri)


def documents(sets: list[KeyedSet]) -> set[NamedNode]:
    """The IRIs of the sets that are documents: headers with an item set in their service, and the item sets."""
    by_key: dict[tuple[str, tuple[str, ...]], KeyedSet] = {(s.service, _names(s.key)): s for s in sets}
    out: set[NamedNode] = set()
    for s in sets:
        names = _names(s.key)
        if len(names) >= 2 and names[-1].endswith(ITEM_SUFFIX) and (s.service, names[:-1]) in by_key:
            out.add(s.iri)
            out.add(by_key[(s.service, names[:-1])].iri)
    return out


def _names(fields: tuple[Field, ...]) -> tuple[str, ...]:
    return tuple(f.name for f in fields)


def _squashed(label: str) -> str:
    return "".join(label.split()).lower()


def labels_of_keys(sets: list[KeyedSet], names: set[str]) -> dict[str, frozenset[str]]:
    """For each key property name in ``names``: every label (spaces removed, lower case) that a
    property of that name carries anywhere in the build (``SalesOrder`` is "SD Document" in some
    services), so that ``ReferenceSDDocument`` can be matched to it."""
    found: dict[str, set[str]] = {n: set() for n in names}
    for s in sets:
        for f in (*s.key, *s.others):
            if f.name in found and f.label:
                found[f.name].add(_squashed(f.label))
    return {n: frozenset(v) for n, v in found.items()}


def _carrier(
    key: Field, previous: tuple[Field, Field] | None, others: tuple[Field, ...], labels: dict[str, frozenset[str]]
) -> Field | None:
    """The property among ``others`` that carries ``key``, or None. ``previous`` is (carrier, key
    property) of the key part before it: an item key ``<K>Item`` after ``K`` is carried by the
    previous carrier's name followed by ``Item``."""
    for f in others:
        if f.edm_type != key.edm_type:
            continue
        if f.name == key.name:
            return f
        if previous is not None:
            carrier, header = previous
            if key.name == header.name + ITEM_SUFFIX and f.name == carrier.name + ITEM_SUFFIX:
                return f
        elif f.name.startswith(REFERENCE_PREFIXES):
            rest = f.name.removeprefix(REFERENCE_PREFIXES[0]).removeprefix(REFERENCE_PREFIXES[1])
            if rest.lower() in labels.get(key.name, frozenset()):
                return f
    return None


def carried(
    pred: KeyedSet, follow: KeyedSet, labels: dict[str, frozenset[str]] | None = None
) -> tuple[tuple[Field, Field], ...]:
    """(carrier, key property) for every key property of ``pred``, or () if one is not carried."""
    if not pred.key or pred.entity_type == follow.entity_type or pred.iri == follow.iri:
        return ()
    if set(_names(pred.key)) <= set(_names(follow.key)):  # pred is follow's header (or the same key)
        return ()
    pairs: list[tuple[Field, Field]] = []
    previous: tuple[Field, Field] | None = None
    for key in pred.key:
        found = _carrier(key, previous, follow.others, labels or {})
        if found is None:
            return ()
        previous = (found, key)
        pairs.append(previous)
    return tuple(pairs)


def distance(a: str, b: str) -> int:
    """How unlike two service names are: the characters of either that are not in their common
    prefix or common suffix (0 for a service with itself; ``API_X_SRV`` is closer to ``API_Y_SRV``
    than to ``API_Y_SRV_ZAB3``, and ``API_X_SRV_ZAB3`` closer to ``API_Y_SRV_ZAB3`` than to either)."""
    shared = _common(a, b) + _common(a[::-1], b[::-1])
    return len(a) + len(b) - 2 * min(shared, len(a), len(b))


def _common(a: str, b: str) -> int:
    """The length of the common prefix of two strings."""
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def closest(follow: KeyedSet, candidates: list[FlowEdge]) -> list[FlowEdge]:
    """Of the edges into ``follow`` from sets of one name and key in several services (one service
    copied per system or version), those from the services whose name is closest to ``follow``'s
    (:func:`distance`); ties keep all. A follow-on document is made from its predecessor in its own
    system, so without this bound N copies of a corpus would link every copy to every other, N^2 edges."""
    best = min(distance(follow.service, e.pred.service) for e in candidates)
    return [e for e in candidates if distance(follow.service, e.pred.service) == best]


def infer(sets: list[KeyedSet]) -> list[FlowEdge]:
    """Every flow edge between the sets of a build, in a fixed order (pred IRI, follow IRI). Each
    follow-on set is tried only against the predecessors whose first key property one of its
    properties can carry (by name or by label), not against every document of the build."""
    docs = documents(sets)
    preds = [s for s in sets if s.iri in docs]
    labels = labels_of_keys(sets, {f.name for s in preds for f in s.key})
    by_first: dict[str, list[KeyedSet]] = {}
    for pred in preds:
        if pred.key:
            by_first.setdefault(pred.key[0].name, []).append(pred)
    named: dict[str, set[str]] = {}  # squashed label -> the key property names that carry it
    for name, squashed in labels.items():
        for label in squashed:
            named.setdefault(label, set()).add(name)
    unique: dict[tuple[str, str], FlowEdge] = {}
    for follow in sets:
        kinds: dict[tuple[str, tuple[str, ...]], list[FlowEdge]] = {}
        for first in sorted(_carriable(follow, named)):
            for pred in by_first.get(first, ()):
                evidence = carried(pred, follow, labels)
                if evidence:
                    kinds.setdefault((pred.name, _names(pred.key)), []).append(FlowEdge(pred, follow, evidence))
        for candidates in kinds.values():
            for edge in closest(follow, candidates):
                unique.setdefault((edge.pred.iri.value, follow.iri.value), edge)
    return [unique[k] for k in sorted(unique)]


def _carriable(follow: KeyedSet, named: dict[str, set[str]]) -> set[str]:
    """The key property names that a property of ``follow`` could carry as a first key part: its own
    names, and for ``Reference<X>`` / ``Preceding<X>`` the key names labelled X (see :func:`_carrier`)."""
    out = {f.name for f in follow.others}
    for f in follow.others:
        if f.name.startswith(REFERENCE_PREFIXES):
            rest = f.name.removeprefix(REFERENCE_PREFIXES[0]).removeprefix(REFERENCE_PREFIXES[1])
            out |= named.get(rest.lower(), set())
    return out


def lift(edges: list[FlowEdge]) -> list[Triple]:
    """``pred kg:inferredNext follow`` and one ``kg:InferredFlow`` node per edge with its evidence."""
    t = Triples("")
    for e in edges:
        t.add(e.pred.iri, KGT.inferredNext, e.follow.iri)
        node = child(e.follow.iri, "inferredFrom", e.pred.service, e.pred.name)
        t.add(node, RDF_TYPE, KGT.InferredFlow)
        t.add(node, KGT.flowFrom, e.pred.iri)
        t.add(node, KGT.flowTo, e.follow.iri)
        for carrier, key in e.evidence:
            t.add(node, KGT.carrierProperty, carrier.iri)
            t.add(node, KGT.carriedKey, key.iri)
    return t.items
