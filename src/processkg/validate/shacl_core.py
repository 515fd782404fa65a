"""The SHACL Core subset of the payload shapes, checked in Python with pySHACL's results.

pySHACL spends most of a call's validation on its own machinery (finding each shape's focus and
value nodes through rdflib lookups, a report graph with a text per result), not on the checks: a
deep insert of an order with two items took 1.5 ms of pySHACL against 0.1 ms here. This module reads
the shapes graph (the same rdflib graph pySHACL reads) and checks a data graph given as its triples,
returning the leaf results :meth:`processkg.validate.shacl.ShaclEngine.results` reads from pySHACL's
report: (focus, path, constraint component, value, source shape).

It covers what :mod:`processkg.validate.payload_shapes` writes and nothing more. A shape with any
other predicate (another constraint, a severity, ``sh:deactivated``, another target, a shape that is
also a class), with a parameter pySHACL takes once given twice, or nested deeper than the payload
shapes nest (a property shape with ``sh:node`` reached through ``sh:property``) is not compiled, and
a run that needs such a shape is left to pySHACL. What each constraint does follows pySHACL 0.40
(``pyshacl/constraints/core``), including where it reads SHACL loosely: a ``sh:datatype`` check
accepts a well-formed literal of a datatype pySHACL does not parse, ``sh:pattern`` matches the
string form of a typed literal, and ``sh:class`` and ``sh:targetClass`` follow ``rdfs:subClassOf``
in the data graph. ``tests/test_validate_compiled.py`` compares both on every kind of invalid write
and on every generated record.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import date, datetime, time
from decimal import Decimal
from typing import TypeAlias

from rdflib import RDF, RDFS, XSD, BNode, Graph, Literal, Namespace, URIRef
from rdflib.term import Node

SH = Namespace("http://www.w3.org/ns/shacl#")

Result = tuple[Node | None, Node | None, Node | None, Node | None, Node | None]
"""(focus, path, sourceConstraintComponent, value, sourceShape) of one leaf result."""

Key: TypeAlias = str | Node
"""A term as the data graph's index holds it (:func:`_key`): an IRI as its plain string."""

_NODE_PREDICATES = frozenset({RDF.type, RDFS.label, SH.targetClass, SH.closed, SH.ignoredProperties, SH.property})
_PROPERTY_PREDICATES = frozenset(
    {
        RDF.type,
        RDFS.label,
        SH.targetSubjectsOf,
        SH.path,
        SH.minCount,
        SH.maxCount,
        SH.datatype,
        SH.pattern,
        SH.maxLength,
        SH["in"],
        SH.nodeKind,
        SH.node,
        SH["class"],
    }
)
_ONCE = (SH.path, SH.closed, SH.minCount, SH.maxCount, SH.datatype, SH.pattern, SH.maxLength, SH["in"], SH.nodeKind)
_SHAPE_TYPES = frozenset({SH.NodeShape, SH.PropertyShape})
_NODE_KINDS: dict[Node, tuple[bool, bool, bool]] = {  # sh:nodeKind -> (matches a blank node, an IRI, a literal)
    SH.BlankNode: (True, False, False),
    SH.IRI: (False, True, False),
    SH.Literal: (False, False, True),
    SH.BlankNodeOrIRI: (True, True, False),
    SH.BlankNodeOrLiteral: (True, False, True),
    SH.IRIOrLiteral: (False, True, True),
}
_ALWAYS_IGNORED = (RDF.type, RDFS.Resource)  # pySHACL's closed check passes this pair whatever the shape
_TYPE, _SUBCLASS = str(RDF.type), str(RDFS.subClassOf)  # as _key makes them
_CLOSED, _MIN_COUNT, _MAX_COUNT = (
    SH.ClosedConstraintComponent,
    SH.MinCountConstraintComponent,
    SH.MaxCountConstraintComponent,
)
_DATATYPE, _PATTERN, _MAX_LENGTH = (
    SH.DatatypeConstraintComponent,
    SH.PatternConstraintComponent,
    SH.MaxLengthConstraintComponent,
)
_IN, _NODE_KIND, _CLASS = SH.InConstraintComponent, SH.NodeKindConstraintComponent, SH.ClassConstraintComponent
_RDFS_LITERAL, _RDFS_DATATYPE, _XSD_STRING, _LANG_STRING = RDFS.Literal, RDFS.Datatype, XSD.string, RDF.langString
_RDFS_LITERAL_KEY, _RDFS_DATATYPE_KEY, _XSD_STRING_KEY, _LANG_STRING_KEY = (
    str(_RDFS_LITERAL),
    str(_RDFS_DATATYPE),
    str(_XSD_STRING),
    str(_LANG_STRING),
)
_PLAIN = (None, _LANG_STRING, _XSD_STRING)  # datatypes whose literals' string form is their value


@dataclass
class _Keys:
    """The :func:`_key` of a shape's IRIs, for the data graph's index."""

    path: Key | None = None
    target_classes: list[Key] = field(default_factory=list)
    target_subjects_of: list[Key] = field(default_factory=list)
    allowed: frozenset[Key] = frozenset()
    classes: list[Key] = field(default_factory=list)


@dataclass
class Shape:
    """One compiled shape: a node shape (``path`` None) or a property shape, with its constraints."""

    node: URIRef | BNode
    path: Node | None = None  # a property shape's sh:path (an IRI); None for a node shape
    target_classes: list[Node] = field(default_factory=list)
    target_subjects_of: list[Node] = field(default_factory=list)
    closed: bool = False
    allowed: frozenset[Node] = frozenset()  # sh:ignoredProperties and the paths of sh:property shapes
    properties: list[Shape] = field(default_factory=list)
    min_count: int | None = None
    max_count: int | None = None
    datatype: Node | None = None
    pattern: re.Pattern[str] | None = None
    max_length: int | None = None
    codes: frozenset[Node] | None = None
    node_kind: tuple[bool, bool, bool] | None = None
    nodes: list[Shape] = field(default_factory=list)
    classes: list[Node] = field(default_factory=list)
    keys: _Keys = field(default_factory=_Keys)
    #: literal id -> (the literal, the components it fails): a literal's own constraints, checked once
    checked: dict[int, tuple[Literal, tuple[Node, ...]]] = field(default_factory=dict)


class _Unsupported(Exception):
    """A shape outside the compiled subset: its runs go to pySHACL."""


class CompiledShapes:
    """The shapes of one shapes graph that this module checks, by IRI; the others are named in
    :attr:`unsupported` (a run that uses one of them is pySHACL's)."""

    def __init__(self, graph: Graph, shape_nodes: Iterable[URIRef | BNode], property_shapes: set[Node]) -> None:
        self.graph = graph
        self._property = property_shapes  # what pySHACL took for a property shape
        self.shapes: dict[Node, Shape] = {}
        self.unsupported: set[Node] = set()
        for node in shape_nodes:
            try:
                self.shapes[node] = self._compile(node)
            except _Unsupported:
                self.unsupported.add(node)
        changed = True
        while changed:  # a shape naming an unsupported one (or nesting deeper) is unsupported too
            changed = False
            for dropped in [n for n in self.shapes if not self._resolvable(n)]:
                del self.shapes[dropped]
                self.unsupported.add(dropped)
                changed = True
        for shape in self.shapes.values():
            self._resolve(shape)
        self.named = {_key(n): s for n, s in self.shapes.items() if type(n) is URIRef}  # by the IRI's plain string

    def covers(self, shapes: Iterable[Node]) -> bool:
        return not any(s in self.unsupported for s in shapes)

    # ------------------------------------------------------------ compiling
    def _compile(self, node: URIRef | BNode) -> Shape:
        g = self.graph
        predicates = {p: list(g.objects(node, p)) for p in set(g.predicates(node, None))}
        is_property = node in self._property
        allowed = _PROPERTY_PREDICATES if is_property else _NODE_PREDICATES
        if not set(predicates) <= allowed or any(len(predicates.get(p, ())) > 1 for p in _ONCE):
            raise _Unsupported(node)
        if not set(predicates.get(RDF.type, ())) <= _SHAPE_TYPES:
            raise _Unsupported(node)  # rdfs:Class and the like: implicit class targets
        shape = Shape(node)
        shape.target_classes = predicates.get(SH.targetClass, [])
        shape.target_subjects_of = predicates.get(SH.targetSubjectsOf, [])
        if is_property:
            (path,) = predicates[SH.path]
            if not isinstance(path, URIRef):
                raise _Unsupported(node)  # a path expression
            shape.path = path
        if SH.closed in predicates:
            shape.closed = _literal(predicates[SH.closed][0], bool)
        elif SH.ignoredProperties in predicates:
            raise _Unsupported(node)  # pySHACL refuses sh:ignoredProperties without sh:closed
        shape.min_count = _count(predicates, SH.minCount)
        shape.max_count = _count(predicates, SH.maxCount)
        shape.max_length = _count(predicates, SH.maxLength)
        if SH.datatype in predicates:
            shape.datatype = predicates[SH.datatype][0]
        if SH.pattern in predicates:
            pattern = predicates[SH.pattern][0]
            if not isinstance(pattern, Literal):
                raise _Unsupported(node)
            text = pattern.value
            shape.pattern = re.compile(str(text) if text is not None and len(text) > 1 else str(pattern))
        if SH["in"] in predicates:
            shape.codes = frozenset(g.items(predicates[SH["in"]][0]))
        if SH.nodeKind in predicates:
            kind = _NODE_KINDS.get(predicates[SH.nodeKind][0])
            if kind is None:
                raise _Unsupported(node)
            shape.node_kind = kind
        shape.classes = predicates.get(SH["class"], [])
        return shape

    def _resolvable(self, node: Node) -> bool:
        """Whether the shapes ``node`` names are compiled and nest no deeper than the payload shapes:
        sh:property names property shapes without sh:node, sh:node names node shapes (which have no
        sh:node of their own), so a check never goes beyond property shape -> node shape -> property shape."""
        g = self.graph
        for ref in g.objects(node, SH.property):
            found = self.shapes.get(ref)
            if found is None or found.path is None or next(g.objects(ref, SH.node), None) is not None:
                return False
        for ref in g.objects(node, SH.node):
            found = self.shapes.get(ref)
            if found is None or found.path is not None:
                return False
        return True

    def _resolve(self, shape: Shape) -> None:
        g = self.graph
        shape.properties = [self.shapes[ref] for ref in g.objects(shape.node, SH.property)]
        shape.nodes = [self.shapes[ref] for ref in g.objects(shape.node, SH.node)]
        ignored = {item for lst in g.objects(shape.node, SH.ignoredProperties) for item in g.items(lst)}
        shape.allowed = frozenset(ignored | {p.path for p in shape.properties if p.path is not None})
        shape.keys = _Keys(
            _key(shape.path) if shape.path is not None else None,
            [_key(c) for c in shape.target_classes],
            [_key(p) for p in shape.target_subjects_of],
            frozenset(_key(p) for p in shape.allowed),
            [_key(c) for c in shape.classes],
        )

    # ------------------------------------------------------------ checking
    def check(self, triples: Iterable[tuple[Node, Node, Node]], use_shapes: Iterable[Node]) -> list[Result]:
        """The leaf results of validating the data graph ``triples`` with ``use_shapes`` (each by its
        own targets), as pySHACL reports them; every shape must be compiled (:meth:`covers`)."""
        data = _DataGraph(triples)
        out: list[Result] = []
        for node in use_shapes:
            shape = self.named.get(_key(node)) or self.shapes[node]
            for focus in _ordered(data.focus_nodes(shape)):
                self._validate(shape, focus, data, out)
        return out

    def _validate(self, shape: Shape, focus: Node, data: _DataGraph, out: list[Result]) -> None:
        if shape.path is None:  # a node shape: its one value node is the focus node
            self._node_constraints(shape, focus, data, out)
        else:
            path = shape.keys.path
            assert path is not None  # a property shape's
            self._value_constraints(shape, focus, data.objects(focus, path), data, out)

    def _node_constraints(self, shape: Shape, focus: Node, data: _DataGraph, out: list[Result]) -> None:
        if shape.closed:
            allowed = shape.keys.allowed
            for p, objects in data.out.get(_key(focus), {}).items():
                if p not in allowed:
                    path = data.predicates[p]
                    for o in _ordered(objects):
                        if (path, o) != _ALWAYS_IGNORED:
                            out.append((focus, path, _CLOSED, o, shape.node))
        for prop in shape.properties:
            self._validate(prop, focus, data, out)

    def _value_constraints(
        self, shape: Shape, focus: Node, values: set[Node], data: _DataGraph, out: list[Result]
    ) -> None:
        node, path = shape.node, shape.path
        if shape.min_count and len(values) < shape.min_count:
            out.append((focus, path, _MIN_COUNT, None, node))
        if shape.max_count is not None and len(values) > shape.max_count:
            out.append((focus, path, _MAX_COUNT, None, node))
        own_only = not shape.keys.classes and not shape.nodes  # a literal's outcome is then its own
        for v in _ordered(values):
            if own_only and type(v) is Literal:
                kept = shape.checked.get(id(v))
                if kept is None or kept[0] is not v:
                    if len(shape.checked) >= LITERALS_KEPT:
                        shape.checked.clear()
                    kept = shape.checked[id(v)] = (v, failures(shape, v))
                out.extend((focus, path, comp, v, node) for comp in kept[1])
                continue
            out.extend((focus, path, comp, v, node) for comp in failures(shape, v))
            for c in shape.keys.classes:
                if isinstance(v, Literal) or not data.instance_of(v, c):
                    out.append((focus, path, _CLASS, v, node))
            for nested in shape.nodes:  # pySHACL nests these under one sh:detail result: its leaves
                self._node_constraints(nested, v, data, out)


LITERALS_KEPT = 1024  # literals whose outcome a property shape keeps (all dropped when full)


def failures(shape: Shape, v: Node) -> tuple[Node, ...]:
    """The constraint components of ``shape`` that the value node ``v`` fails by itself (datatype,
    pattern, length, codes, node kind), in pySHACL's order. A literal is immutable and these look at
    nothing else, so a property shape keeps the outcome for each literal it has checked."""
    failed = []
    if shape.datatype is not None and not _has_datatype(v, shape.datatype):
        failed.append(_DATATYPE)
    if shape.pattern is not None and not _matches(v, shape.pattern):
        failed.append(_PATTERN)
    if shape.max_length is not None and (isinstance(v, BNode) or len(_string(v)) > shape.max_length):
        failed.append(_MAX_LENGTH)
    if shape.codes is not None and v not in shape.codes:
        failed.append(_IN)
    if shape.node_kind is not None and not _of_kind(v, shape.node_kind):
        failed.append(_NODE_KIND)
    return tuple(failed)


def _key(term: Node) -> Key:
    """A dict key for ``term``, equal to another's exactly when the terms are equal: an IRI as its plain
    string (compared in C; rdflib's ``__eq__`` is Python), any other term as itself (rdflib never takes a
    literal or a blank node for equal to a plain string)."""
    return str.__str__(term) if type(term) is URIRef else term


def _ordered(nodes: set[Node]) -> Iterable[Node]:
    """``nodes`` in a fixed order (the results' order then does not depend on hashing)."""
    return sorted(nodes, key=str) if len(nodes) > 1 else nodes


class _DataGraph:
    """A data graph's triples, indexed for the lookups of the checks (a set of triples, as rdflib's),
    by :func:`_key` of subject, predicate and class."""

    def __init__(self, triples: Iterable[tuple[Node, Node, Node]]) -> None:
        self.out: dict[Key, dict[Key, set[Node]]] = {}
        self.predicates: dict[Key, Node] = {}  # key -> the predicate
        self.subjects_of: dict[Key, set[Node]] = {}
        self.instances: dict[Key, set[Node]] = {}
        self.superclasses: dict[Key, set[Key]] = {}
        self.subclasses: dict[Key, set[Key]] = {}
        for s, p, o in triples:  # _key of each, inline (this runs for every triple of every call)
            sk = str.__str__(s) if type(s) is URIRef else s
            pk = str.__str__(p) if type(p) is URIRef else p
            self.predicates.setdefault(pk, p)
            self.out.setdefault(sk, {}).setdefault(pk, set()).add(o)
            self.subjects_of.setdefault(pk, set()).add(s)
            if pk == _TYPE:
                self.instances.setdefault(_key(o), set()).add(s)
            elif pk == _SUBCLASS:
                self.superclasses.setdefault(sk, set()).add(_key(o))
                self.subclasses.setdefault(_key(o), set()).add(sk)

    def objects(self, s: Node, p: Key) -> set[Node]:
        return self.out.get(_key(s), {}).get(p, set())

    def focus_nodes(self, shape: Shape) -> set[Node]:
        found: set[Node] = set()
        for c in shape.keys.target_classes:
            for cls in _closure(c, self.subclasses):
                found |= self.instances.get(cls, set())
        for p in shape.keys.target_subjects_of:
            found |= self.subjects_of.get(p, set())
        return found

    def instance_of(self, v: Node, c: Key) -> bool:
        return any(c in _closure(_key(t), self.superclasses) for t in self.objects(v, _TYPE))


def _closure(start: Key, edges: dict[Key, set[Key]]) -> set[Key]:
    """``start`` and every node reached from it along ``edges`` (rdflib's transitive_objects/subjects)."""
    seen, stack = {start}, [start]
    while stack:
        for nxt in edges.get(stack.pop(), ()):
            if nxt not in seen:
                seen.add(nxt)
                stack.append(nxt)
    return seen


def _literal(node: Node, kind: type) -> bool:
    if not isinstance(node, Literal) or not isinstance(node.value, kind):
        raise _Unsupported(node)
    return bool(node.value)


def _count(predicates: dict[Node, list[Node]], p: URIRef) -> int | None:
    values = predicates.get(p)
    if not values:
        return None
    v = values[0]
    if not isinstance(v, Literal) or v.datatype != XSD.integer or not isinstance(v.value, int) or v.value < 0:
        raise _Unsupported(v)
    return int(v.value)


def _has_datatype(v: Node, rule: Node) -> bool:
    """pySHACL's DatatypeConstraintComponent for one value node. IRIs are compared as their plain
    strings (:func:`_key`): the same outcome as rdflib's ``==``, without its Python ``__eq__``."""
    if not isinstance(v, Literal):
        return False
    if type(rule) is not URIRef:
        return _has_datatype_term(v, rule)
    datatype, iri = v.datatype, str.__str__(rule)  # _key of an IRI
    if type(datatype) is URIRef and _key(datatype) == iri:
        return getattr(v, "ill_typed", None) is not True and _actual_key(v, iri)
    if iri == _RDFS_LITERAL_KEY:
        return True
    if iri == _RDFS_DATATYPE_KEY and datatype:
        return True
    if datatype is None and v.language is None and iri == _XSD_STRING_KEY:
        return _actual_key(v, iri)
    return iri == _LANG_STRING_KEY and bool(v.language) and _actual_key(v, iri)


def _has_datatype_term(v: Literal, rule: Node) -> bool:
    """:func:`_has_datatype` for a rule that is no IRI (rdflib's comparisons)."""
    if v.datatype == rule:
        return getattr(v, "ill_typed", None) is not True and _actual(v, rule)
    return rule == _RDFS_DATATYPE and bool(v.datatype)


_ACTUAL: dict[Node, type | tuple[type, ...]] = {
    XSD.string: (str, bytes),
    RDF.langString: (str, bytes),
    XSD.integer: int,
    XSD.float: float,
    XSD.decimal: Decimal,
    XSD.boolean: bool,
    XSD.date: date,
    XSD.time: time,
    XSD.dateTime: datetime,
}


_ACTUAL_BY_KEY = {_key(k): kind for k, kind in _ACTUAL.items()}


def _actual(v: Literal, rule: Node) -> bool:
    kind = _ACTUAL.get(rule)
    return True if kind is None else isinstance(v.value, kind)


def _actual_key(v: Literal, iri: str) -> bool:
    """:func:`_actual` for a datatype given as its IRI's plain string (:func:`_key`)."""
    kind = _ACTUAL_BY_KEY.get(iri)
    return True if kind is None else isinstance(v.value, kind)


def _string(v: Node) -> str:
    """pySHACL's string form of a value node for the string-based constraints."""
    if isinstance(v, Literal) and v.value is not None and v.datatype in _PLAIN:
        return str(v.value)
    return str(v)


def _matches(v: Node, pattern: re.Pattern[str]) -> bool:
    if isinstance(v, BNode):
        return False
    text = _string(v)
    return bool(pattern.match(text) or pattern.search(text))


def _of_kind(v: Node, kind: tuple[bool, bool, bool]) -> bool:
    if isinstance(v, BNode):
        return kind[0]
    if isinstance(v, Literal):
        return kind[2]
    return kind[1]


__all__ = ["SH", "CompiledShapes", "Result", "Shape", "failures"]
