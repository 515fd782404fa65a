"""A create's payload checked with the compiled payload shapes on its JSON, without making triples.

:class:`~processkg.validate.calls.Converter` turns a payload into RDF (a node per JSON object, the
graph's property IRIs as predicates, typed literals) for :mod:`processkg.validate.shacl_core`, which
indexes the triples again and walks the shapes, and each result is then mapped back to a JSON
pointer. Most calls a server sees conform, and for them all of that finds nothing. :class:`JsonChecks`
walks the JSON of a create once, member by member, with the compiled shapes of one service laid out
as :mod:`processkg.validate.payload_shapes` writes them (``{type}/shape`` targets its class, is closed
and names a ``sh:minCount`` shape per required property; ``{property}/shape`` targets the subjects of
its property), and says whether those triples would conform: each value becomes the literal the
Converter makes and is checked with :func:`~processkg.validate.shacl_core.failures`, each entity's
members against its closed shape, its required properties counted, each deep-insert child by its
navigation's shape (class, count) and then by its own type's, as the triple path checks them.

It answers only what it is sure of. Anything else (a value that fails, a null where none is allowed, a
collection or complex value, an unknown or annotated navigation member, a type of another service, a
shape laid out otherwise or left to pySHACL, too deep a nesting) makes :meth:`JsonChecks.conforms`
answer None, and the call takes the triple path, which finds and words the violations. A payload it
passes gets what the triple path gives it: no violation and the same notes (``codes-unknown``).
``tests/test_validate_compiled.py`` compares the three (this, the triples, pySHACL) on every call.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import TypeAlias

from rdflib import RDF, Literal, URIRef

from processkg.aliases import JSONObject, JSONValue
from processkg.services.model import Model, Nav, Prop, TypeInfo
from processkg.validate import literals
from processkg.validate.shacl import ShaclEngine
from processkg.validate.shacl_core import Shape, failures
from processkg.vocab import XSD_STRING

MAX_DEEP_INSERT = 16  # levels of entities nested in one POST payload (SAP deep inserts use 2 or 3)
OUTCOMES_KEPT = 1024  # string values whose outcome a property keeps (all dropped when full)

Note: TypeAlias = tuple[str, str, str, JSONValue]
"""(kind, pointer, message, value) of a note, as :class:`~processkg.validate.calls.Violation` takes them."""

_TYPE = str(RDF.type)


@dataclass
class _Value:
    """A property of a type as its JSON values are checked: by its property shape, when the service has one."""

    prop: Prop
    shape: Shape | None
    simple: bool  # one value of a primitive type (a collection or a complex value goes to the triples)
    note: bool  # a value help whose codes are unknown: a string value gets a codes-unknown note
    outcomes: dict[str, bool] = field(default_factory=dict)  # a string value -> it conforms


@dataclass
class _Link:
    """A navigation property of a type; ``target`` the IRI of the type its children are checked with,
    None when they cannot be checked here (no target, one of another service, a shape that looks at
    the child's node IRI)."""

    nav: Nav
    shape: Shape | None
    target: str | None


@dataclass
class _Entity:
    """What an entity of a type is checked with: its members by JSON name (the properties and
    navigation properties its closed shape allows) and the properties it must give."""

    type: TypeInfo
    members: dict[str, _Value | _Link]
    required: tuple[str, ...]


class JsonChecks:
    """The compiled shapes of ``service``'s :class:`~processkg.validate.shacl.ShaclEngine`, applied to
    JSON payloads of its types. What each type and property is checked with is worked out on first use."""

    def __init__(self, model: Model, service: str, engine: ShaclEngine) -> None:
        self.model, self.service, self.engine = model, service, engine
        self._plans: tuple[dict[str, _Entity | None], dict[str, _Entity | None]] = ({}, {})  # V4, V2

    def conforms(self, t: TypeInfo, payload: JSONObject, v2: bool) -> list[Note] | None:
        """The notes of creating ``payload`` as a ``t`` when it conforms to the payload shapes, as the
        triple path would find; None when it does not, or when this cannot tell."""
        notes: list[Note] = []
        return notes if self._entity(t.iri, payload, v2, "", 0, notes) else None

    # ------------------------------------------------------------ walking
    def _entity(self, iri: str, obj: JSONObject, v2: bool, pointer: str, level: int, notes: list[Note]) -> bool:
        plan = self._plans[v2].get(iri)
        if plan is None:
            if iri in self._plans[v2]:
                return False
            plan = self._plans[v2][iri] = self._plan(iri)
            if plan is None:
                return False
        if level >= MAX_DEEP_INSERT:
            return False
        t, members = plan.type, plan.members
        for key in sorted(obj):  # the Converter's order, so the notes come in its order
            member = members.get(key)
            value = obj[key]
            if member is None:
                if _skipped(key, t):
                    continue
                return False
            if isinstance(member, _Value):
                if value is None:
                    if not member.prop.nullable and not member.prop.read_only:
                        return False
                    continue
                if member.note and isinstance(value, str):
                    notes.append(_note(member.prop, value, f"{pointer}/{esc(key)}"))
                if not member.simple or not _conforms(member, value, v2):
                    return False
            elif not self._link(member, key, value, v2, pointer, level, notes):
                return False
        return all(obj.get(name) is not None for name in plan.required)

    def _link(
        self, link: _Link, key: str, value: JSONValue, v2: bool, pointer: str, level: int, notes: list[Note]
    ) -> bool:
        """The deep-insert children of one navigation member (:meth:`Converter.nav`)."""
        if value is None or (isinstance(value, dict) and ("__deferred" in value or is_link(value))):
            return True
        items = value.get("results") if isinstance(value, dict) and "results" in value else value
        many = isinstance(items, list)
        if link.nav.to_many != many or link.target is None:
            return False  # a cardinality violation, or children this cannot check
        children = items if many else [items]
        if not children:
            return True
        shape = link.shape
        if shape is not None and not _counted(shape, len(children)):
            return False
        at = f"{pointer}/{esc(key)}"
        for k, child in enumerate(children):
            if not isinstance(child, dict):
                return False
            if not self._entity(link.target, child, v2, f"{at}/{k}" if many else at, level + 1, notes):
                return False
        return True

    # ------------------------------------------------------------ planning
    def _plan(self, iri: str) -> _Entity | None:
        """What an entity of type ``iri`` is checked with; None when its shapes are not laid out as the
        payload shapes lay them out, or the type is not one of this engine's service."""
        t = self.model.types.get(iri)
        if t is None or t.service != self.service:
            return None
        members: dict[str, _Value | _Link] = {}
        iris = [p.iri for p in t.props.values()] + [n.iri for n in t.navs.values()]
        if len(set(iris)) != len(iris):
            return None  # two members, one predicate: counts would add up
        shape, required = self._shape(t.iri), tuple[str, ...]()
        if shape is None:
            if t.iri + "/shape" in self.engine.known:
                return None  # left to pySHACL
            allowed = None
        else:
            if shape.path is not None or shape.keys.target_classes != [t.iri] or shape.keys.target_subjects_of:
                return None
            if shape.nodes or any(not _required_only(p) for p in shape.properties):
                return None
            allowed = shape.keys.allowed if shape.closed else None
            if allowed is not None and _TYPE not in allowed:
                return None  # the node's rdf:type would be refused
            by_iri = {p.iri: name for name, p in t.props.items()}
            wanted = [(by_iri.get(str(p.keys.path)), p.min_count) for p in shape.properties if p.min_count]
            if any(name is None for name, _count in wanted):
                return None
            required = tuple(str(name) for name, _count in wanted)
            if any(count > 1 for _name, count in wanted):
                return None  # a single value never gives more than one
        for name, p in t.props.items():
            if allowed is None or p.iri in allowed:
                value = self._value(p)
                if value is None:
                    return None
                members[name] = value
        for name, n in t.navs.items():
            if name in t.props or control(name, t) or (allowed is not None and n.iri not in allowed):
                continue
            link = self._link_plan(n)
            if link is None:
                return None
            members[name] = link
        return _Entity(t, members, required)

    def _value(self, p: Prop) -> _Value | None:
        note = p.codes is None and bool(p.value_help)
        if p.collection or p.complex_type:
            return _Value(p, None, False, note)  # a value goes to the triples; a null is checked here
        shape = self._shape(p.iri)
        if shape is None and p.iri + "/shape" in self.engine.known:
            return None
        if shape is not None and not (_targets_its_subjects(shape, p.iri) and not shape.classes and not shape.nodes):
            return None
        return _Value(p, shape, True, note)

    def _link_plan(self, n: Nav) -> _Link | None:
        shape = self._shape(n.iri)
        if shape is None and n.iri + "/shape" in self.engine.known:
            return None
        target = n.target if n.target in self.model.type_service else None
        if target is not None and self.model.type_service[target] != self.service:
            target = None
        if shape is not None:
            if not _targets_its_subjects(shape, n.iri) or shape.nodes:
                return None
            if any(c != target for c in shape.keys.classes):
                target = None  # a child typed otherwise fails sh:class
            if shape.datatype is not None or shape.pattern is not None or shape.max_length is not None:
                target = None  # looks at the child's node (its IRI): the triples' affair
            if shape.codes is not None or (shape.node_kind is not None and not shape.node_kind[1]):
                target = None
        return _Link(n, shape, target)

    def _shape(self, iri: str) -> Shape | None:
        """The compiled shape ``{iri}/shape`` of this engine's service, or None."""
        compiled = self.engine.compiled
        return compiled.named.get(iri + "/shape") if compiled is not None else None


def _skipped(key: str, t: TypeInfo) -> bool:
    """A member the Converter passes over: control information, a ``Nav@odata.bind`` link, an instance
    annotation of a property. (A navigation member with an annotation is not: it goes to the triples.)"""
    if control(key, t) or (key.endswith("@odata.bind") and key[:-11] in t.navs):
        return True
    return "@" in key and key.split("@", 1)[0] in t.props


def _conforms(member: _Value, value: JSONValue, v2: bool) -> bool:
    """Whether one value of a simple property makes a literal its property shape accepts; a string's
    outcome is kept (it depends on nothing else)."""
    if type(value) is not str:
        return _literal_conforms(member, value, v2)
    found = member.outcomes.get(value)
    if found is None:
        if len(member.outcomes) >= OUTCOMES_KEPT:
            member.outcomes.clear()
        found = member.outcomes[value] = _literal_conforms(member, value, v2)
    return found


def _literal_conforms(member: _Value, value: JSONValue, v2: bool) -> bool:
    """:meth:`Converter.simple` and the checks of the property shape on the literal it makes."""
    p = member.prop
    lexical, xsd, problem = literals.literal(value, p.item_type, v2)
    if problem is not None or (p.item_type == "Edm.Decimal" and decimal_problem(lexical, p.precision, p.scale)):
        return False
    shape = member.shape
    if shape is None:
        return True
    return _counted(shape, 1) and not failures(shape, payload_literal(lexical, None if xsd == XSD_STRING else xsd))


def _counted(shape: Shape, count: int) -> bool:
    return not (shape.min_count and count < shape.min_count) and not (
        shape.max_count is not None and count > shape.max_count
    )


def _targets_its_subjects(shape: Shape, iri: str) -> bool:
    """The property shape of ``iri`` as the payload shapes write it: its path, the subjects of its path."""
    keys = shape.keys
    return keys.path == iri and keys.target_subjects_of == [iri] and not keys.target_classes


def _required_only(shape: Shape) -> bool:
    """A ``sh:property`` shape of a node shape that only counts its path (``{property}/shape/required``)."""
    return (
        shape.path is not None
        and type(shape.keys.path) is str
        and not shape.keys.target_classes
        and not shape.keys.target_subjects_of
        and shape.max_count is None
        and shape.datatype is None
        and shape.pattern is None
        and shape.max_length is None
        and shape.codes is None
        and shape.node_kind is None
        and not shape.classes
        and not shape.nodes
    )


def _note(p: Prop, value: str, pointer: str) -> Note:
    message = f"{p.name}: the codes of value help {p.value_help} are unknown, so {value!r} was not checked"
    return ("codes-unknown", pointer, message, value)


# ---------------------------------------------------------------- shared with the triple path


def esc(key: str) -> str:
    """A JSON member name as a JSON pointer's token."""
    return key.replace("~", "~0").replace("/", "~1")


def control(key: str, t: TypeInfo) -> bool:
    """Control information (``@odata.*``, V2 ``__metadata``), unless the type has a property of
    that name (SAP RAP's ``__FieldControl``, ``__OperationControl``)."""
    return key.startswith("@") or (key.startswith("__") and key not in t.props)


def is_link(value: JSONObject) -> bool:
    """A V2 link to an existing entity (``{"__metadata": {"uri": ...}}``)."""
    meta = value.get("__metadata")
    return len(value) == 1 and isinstance(meta, dict) and "uri" in meta


@lru_cache(maxsize=4096)
def decimal_problem(lexical: str, precision: int | None, scale: int | None) -> str | None:
    """:func:`processkg.validate.literals.decimal_digits`, kept (the same digits give the same answer)."""
    return literals.decimal_digits(lexical, precision, scale)


@lru_cache(maxsize=4096)
def payload_literal(lexical: str, xsd: str | None) -> Literal:
    """The literal of a payload value: a simple literal for a string (as shacl.to_rdflib_term makes
    them), else typed. Kept: rdflib parses the lexical form of a typed literal when it is made, the
    same way each time (a literal is immutable)."""
    return Literal(lexical) if xsd is None else Literal(lexical, datatype=URIRef(xsd))


__all__ = ["MAX_DEEP_INSERT", "JsonChecks", "Note", "control", "decimal_problem", "esc", "is_link", "payload_literal"]
