"""Pass 2 of CSDL reading: resolve references and merge annotation documents.

A :class:`Service` is one service document plus any annotations-only documents
that target its namespaces (SAP's ``*_ANNO_MDL.annotation.xml`` files next to
``metadata.xml``). Terms and targets are resolved through aliases (CSDL 3.3
``edmx:Include/@Alias``, ``Schema/@Alias``), so ``SAP__common.ValueList`` and
``com.sap.vocabularies.Common.v1.ValueList`` are the same term.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field

from processkg.aliases import JSONValue
from processkg.errors import UnresolvedReferenceError
from processkg.sources.odata.csdl import (
    SPEC_V2,
    SPEC_V4,
    Annotation,
    Association,
    NavigationProperty,
    Operation,
    Property,
    ReferentialConstraint,
    ServiceDocument,
    StructuredType,
)

#: The schema namespace of an SAP RAP service (``com.sap.gateway.srvd_a2x.api_salesorder.v0001``): its
#: group is the short name that the service's URL carries (``.../srvd_a2x/sap/api_salesorder/0001/``).
RAP_SERVICE = re.compile(r"^com\.sap\.gateway\.srvd(?:_a2x)?\.([a-z0-9_]+)\.v\d+$", re.I)
_V2_MULTIPLICITY = {"1": "1", "0..1": "0..1", "*": "*"}


@dataclass
class Service:
    name: str
    doc: ServiceDocument
    annotation_docs: list[ServiceDocument] = field(default_factory=list)
    #: normalized target ("Namespace.Type/Property") -> [Annotation] with full term names
    annotations: dict[str, list[Annotation]] = field(default_factory=lambda: defaultdict(list))

    @property
    def file(self) -> str:
        return self.doc.file

    def annotations_for(self, target: str) -> list[Annotation]:
        return self.annotations.get(target, [])

    def term(self, target: str, term: str) -> list[Annotation]:
        return [a for a in self.annotations.get(target, ()) if a.term == term]


def qualify(doc: ServiceDocument, name: str) -> str:
    """Replace an alias prefix by its namespace: ``SAP__self.Foo`` -> ``NS.Foo``."""
    if name.startswith("Collection(") and name.endswith(")"):
        return f"Collection({qualify(doc, name[11:-1])})"
    head, _, tail = name.rpartition(".")
    if head in doc.aliases:
        return f"{doc.aliases[head]}.{tail}"
    return name


def normalize_target(doc: ServiceDocument, target: str) -> str:
    """``SAP__self.Type/Prop`` -> ``Namespace.Type/Prop``; strips V4 ``(...)`` overload parts."""
    first, sep, rest = target.partition("/")
    first = first.split("(", 1)[0]
    return qualify(doc, first) + sep + rest


def resolve(doc: ServiceDocument, annotation_docs: list[ServiceDocument] | None = None) -> Service:
    """Resolve all references of one service document; raise on the first that fails."""
    _qualify_names(doc)
    _resolve_entity_sets(doc)
    _resolve_types(doc)
    _resolve_navigation(doc)
    service = Service(doc.name, doc, list(annotation_docs or []))
    _index_annotations(service)
    return service


def _qualify_names(doc: ServiceDocument) -> None:
    for st in doc.types.values():
        st.base_type = qualify(doc, st.base_type) if st.base_type else ""
        for prop in st.properties:
            prop.type = qualify(doc, prop.type)
        for nav in st.navigations:
            nav.type = qualify(doc, nav.type) if nav.type else ""
            rel = qualify(doc, nav.relationship) if nav.relationship else ""
            nav.relationship = _in_schema(doc, rel, st.namespace) if rel not in doc.associations else rel
    for container in doc.containers:
        for es in container.entity_sets:
            es.entity_type = qualify(doc, es.entity_type)
        container.association_sets = [(qualify(doc, a), ends) for a, ends in container.association_sets]
    for assoc in doc.associations.values():
        for end in assoc.ends.values():
            end.type = _in_schema(doc, qualify(doc, end.type), assoc.qname.rpartition(".")[0])
    for op in operations_of(doc):
        op.return_type = qualify(doc, op.return_type) if op.return_type else ""
        for param in op.parameters:
            param.type = qualify(doc, param.type)
    for container in doc.containers:
        for imp in container.operation_imports:
            imp.operation = qualify(doc, imp.operation)


def operations_of(doc: ServiceDocument) -> list[Operation]:
    """Every operation of a document: V2 function imports of its containers, V4 actions and functions."""
    return [op for c in doc.containers for op in c.function_imports] + doc.operations


def operation_target(op: Operation) -> str:
    """The annotation target of one operation (overload): ``NS.Container/FunctionImport`` (V2),
    ``NS.Action(NS.BindingType)`` / ``NS.Function(NS.T1,NS.T2)`` (V4, CSDL 14.2.1)."""
    return op.qname if op.kind == "FunctionImport" else f"{op.qname}({op.signature})"


def _in_schema(doc: ServiceDocument, name: str, namespace: str) -> str:
    """Unqualified names (tolerated by SAP's own pyodata) resolve in the enclosing schema."""
    if name in doc.types or name in doc.enums or not name or "." in name:
        return name
    return f"{namespace}.{name}"


def is_external(doc: ServiceDocument, qname: str) -> bool:
    """A type in a namespace that the document includes from another document (CSDL 3.3)."""
    return qname.rpartition(".")[0] in doc.includes


def _resolve_entity_sets(doc: ServiceDocument) -> None:
    for container in doc.containers:
        for es in container.entity_sets:
            es.entity_type = _in_schema(doc, es.entity_type, container.namespace)
            st = doc.types.get(es.entity_type)
            if st is None or st.kind != "EntityType":
                tag = "Singleton" if es.singleton else "EntitySet"
                raise UnresolvedReferenceError(
                    doc.file, es.line, tag, es.name, es.entity_type, f"{SPEC_V4}#sec_EntitySet"
                )


def _resolve_types(doc: ServiceDocument) -> None:
    for st in doc.types.values():
        if st.base_type and st.base_type not in doc.types:
            raise UnresolvedReferenceError(doc.file, st.line, st.kind, st.qname, st.base_type)
        for prop in st.properties:
            prop.type = _in_schema(doc, prop.type, st.namespace)
            item = prop.item_type
            known = item.startswith("Edm.") or item in doc.types or item in doc.enums
            if not known and not is_external(doc, item):
                raise UnresolvedReferenceError(
                    doc.file,
                    prop.line,
                    "Property",
                    f"{st.qname}/{prop.name}",
                    item,
                    f"{SPEC_V4}#sec_Type",
                )
        names = {p.name for p in all_properties(doc, st)}
        for key in st.key:
            if key.split("/", 1)[0] not in names:
                raise UnresolvedReferenceError(
                    doc.file, st.line, "PropertyRef", f"{st.qname}/Key", key, f"{SPEC_V4}#sec_Key"
                )


def all_properties(doc: ServiceDocument, st: StructuredType | None) -> list[Property]:
    """Properties of ``st`` including those inherited through ``BaseType``."""
    seen: set[str] = set()
    props: list[Property] = []
    while st is not None and st.qname not in seen:
        seen.add(st.qname)
        props = st.properties + props
        st = doc.types.get(st.base_type)
    return props


def key_of(doc: ServiceDocument, st: StructuredType | None) -> list[str]:
    """Key property names; an entity type without its own Key inherits its base type's."""
    seen = set()
    while st is not None and not st.key and st.qname not in seen:
        seen.add(st.qname)
        st = doc.types.get(st.base_type)
    return list(st.key) if st is not None else []


def _resolve_navigation(doc: ServiceDocument) -> None:
    for st in doc.types.values():
        for nav in st.navigations:
            if nav.relationship:
                _resolve_v2_navigation(doc, st, nav)
            else:
                _resolve_v4_navigation(doc, st, nav)


def _resolve_v2_navigation(doc: ServiceDocument, st: StructuredType, nav: NavigationProperty) -> None:
    assoc = doc.associations.get(nav.relationship)
    where = f"{st.qname}/{nav.name}"
    if assoc is None:
        raise UnresolvedReferenceError(doc.file, nav.line, "NavigationProperty", where, nav.relationship, SPEC_V2)
    end = assoc.ends.get(nav.to_role)
    if end is None or nav.from_role not in assoc.ends:
        missing = nav.to_role if end is None else nav.from_role
        raise UnresolvedReferenceError(
            doc.file, nav.line, "NavigationProperty", where, f"{nav.relationship} role {missing}", SPEC_V2
        )
    target = end.type if end.type in doc.types else _v2_type_from_sets(doc, nav)
    if not target:
        raise UnresolvedReferenceError(doc.file, assoc.line, "Association", assoc.qname, end.type, SPEC_V2)
    nav.target_type = target
    nav.cardinality = _V2_MULTIPLICITY.get(end.multiplicity, end.multiplicity)
    nav.partner = nav.partner or _v2_partner(doc, nav)
    nav.constraints = nav.constraints or _v2_constraints(assoc, nav)
    nav.target_sets = sorted(_v2_target_sets(doc, nav))


def _v2_type_from_sets(doc: ServiceDocument, nav: NavigationProperty) -> str:
    """The entity type of the set that an AssociationSet binds to the target role, if unique.

    Some documents (SAP Cloud SDK's API_TEST_SRV) name an End ``Type`` that is not declared
    while the AssociationSet maps the role to an entity set of a declared type; SAP's own
    clients resolve navigation through the AssociationSet, and so does this reader then.
    """
    types = {
        es.entity_type
        for container in doc.containers
        for es in container.entity_sets
        if es.name in _v2_target_sets(doc, nav) and es.entity_type in doc.types
    }
    return types.pop() if len(types) == 1 else ""


def _v2_partner(doc: ServiceDocument, nav: NavigationProperty) -> str:
    target = doc.types[nav.target_type]
    for other in target.navigations:
        if other.relationship == nav.relationship and other.from_role == nav.to_role and other is not nav:
            return other.name
    return ""


def _v2_constraints(assoc: Association, nav: NavigationProperty) -> list[ReferentialConstraint]:
    """Constraint pairs seen from the navigation's source: (local property, target property)."""
    if not assoc.constraint:
        return []
    p_role, p_props, d_role, d_props = assoc.constraint
    if nav.from_role == d_role:
        pairs = zip(d_props, p_props)
    elif nav.from_role == p_role:
        pairs = zip(p_props, d_props)
    else:
        return []
    return [ReferentialConstraint(a, b, assoc.line) for a, b in pairs]


def _v2_target_sets(doc: ServiceDocument, nav: NavigationProperty) -> set[str]:
    sets = set()
    for container in doc.containers:
        for assoc_name, ends in container.association_sets:
            if assoc_name == nav.relationship and ends.get(nav.to_role):
                sets.add(ends[nav.to_role])
    return sets


def _resolve_v4_navigation(doc: ServiceDocument, st: StructuredType, nav: NavigationProperty) -> None:
    collection = nav.type.startswith("Collection(")
    target = _in_schema(doc, nav.type[11:-1] if collection else nav.type, st.namespace)
    if target not in doc.types and not is_external(doc, target):
        raise UnresolvedReferenceError(
            doc.file,
            nav.line,
            "NavigationProperty",
            f"{st.qname}/{nav.name}",
            target,
            f"{SPEC_V4}#sec_NavigationProperty",
        )
    nav.target_type = target
    nav.cardinality = "*" if collection else ("0..1" if nav.nullable else "1")
    nav.target_sets = sorted(_v4_target_sets(doc, st, nav))


def _v4_target_sets(doc: ServiceDocument, st: StructuredType, nav: NavigationProperty) -> set[str]:
    sets = set()
    for container in doc.containers:
        for es in container.entity_sets:
            if es.entity_type != st.qname:
                continue
            for path, target in es.bindings.items():
                if path.rsplit("/", 1)[-1] == nav.name:
                    sets.add(target.rsplit("/", 1)[-1].rsplit(".", 1)[-1])
    return sets


# ------------------------------------------------------------------ annotations


def _index_annotations(service: Service) -> None:
    doc = service.doc
    for st in doc.types.values():
        _add(service, doc, st.qname, st.annotations)
        for prop in st.properties:
            _add(service, doc, f"{st.qname}/{prop.name}", prop.annotations)
        for nav in st.navigations:
            _add(service, doc, f"{st.qname}/{nav.name}", nav.annotations)
    for enum in doc.enums.values():
        _add(service, doc, enum.qname, enum.annotations)
    for container in doc.containers:
        for es in container.entity_sets:
            _add(service, doc, f"{container.qname}/{es.name}", es.annotations)
    for op in operations_of(doc):
        _add(service, doc, operation_target(op), op.annotations)
        for param in op.parameters:
            _add(service, doc, f"{operation_target(op)}/{param.name}", param.annotations)
    for source in [doc, *service.annotation_docs]:
        for target, ann in source.annotations:
            _add(service, source, _container_target(service, _overload_target(source, target)), [ann])


def _overload_target(doc: ServiceDocument, target: str) -> str:
    """:func:`normalize_target`, except that an operation overload (``SAP__self.Act(SAP__self.T)/P``)
    keeps its signature, qualified: ``NS.Act(NS.T)/P`` (an annotation of one overload only)."""
    first, sep, rest = target.partition("/")
    name, paren, args = first.partition("(")
    if not paren:
        return normalize_target(doc, target)
    signature = ",".join(qualify(doc, a.strip()) for a in args.removesuffix(")").split(",") if a.strip())
    return f"{qualify(doc, name)}({signature}){sep}{rest}"


def _add(service: Service, source: ServiceDocument, target: str, annotations: list[Annotation]) -> None:
    for ann in annotations:
        ann.term = qualify(source, ann.term)
        ann.value = qualify_record_terms(source, ann.value)
        service.annotations[target].append(ann)


def qualify_record_terms(doc: ServiceDocument, value: JSONValue) -> JSONValue:
    """Annotations inside records (``@SAP__common.Label``) keyed by full term name instead."""
    if isinstance(value, list):
        return [qualify_record_terms(doc, v) for v in value]
    if isinstance(value, dict):
        return {
            (qualify(doc, k[1:]) if k.startswith("@") else k): qualify_record_terms(doc, v) for k, v in value.items()
        }
    return value


def _container_target(service: Service, target: str) -> str:
    """``Container/Set/Prop`` targets are stored as ``Type/Prop`` so they meet their property."""
    parts = target.split("/")
    if len(parts) != 3:
        return target
    for container in service.doc.containers:
        if container.qname == parts[0]:
            for es in container.entity_sets:
                if es.name == parts[1]:
                    return f"{es.entity_type}/{parts[2]}"
    return target


def attach_annotation_docs(
    services: list[ServiceDocument], annotation_docs: list[ServiceDocument]
) -> tuple[dict[str, list[ServiceDocument]], list[ServiceDocument]]:
    """Pair each annotations-only document with the service whose namespace it includes.

    A service in the same folder is preferred. Returns ({service file: [docs]}, unmatched).
    """
    by_ns: dict[str, list[ServiceDocument]] = defaultdict(list)
    for doc in services:
        for ns in doc.namespaces:
            by_ns[ns].append(doc)
    attached: dict[str, list[ServiceDocument]] = defaultdict(list)
    unmatched: list[ServiceDocument] = []
    for ann in annotation_docs:
        owner = _owner(ann, by_ns)
        if owner is None:
            unmatched.append(ann)
        else:
            attached[owner.file].append(ann)
    return attached, unmatched


def _owner(ann: ServiceDocument, by_ns: dict[str, list[ServiceDocument]]) -> ServiceDocument | None:
    targeted = {normalize_target(ann, t).split("/", 1)[0].rpartition(".")[0] for t, _ in ann.annotations}
    candidates = [doc for ns in sorted(set(ann.includes) | targeted) for doc in by_ns.get(ns, ())]
    same_folder = [d for d in candidates if d.path.parent == ann.path.parent]
    pool = same_folder or candidates
    return sorted(pool, key=lambda d: d.file)[0] if pool else None


__all__ = [
    "Annotation",
    "Service",
    "all_properties",
    "attach_annotation_docs",
    "key_of",
    "normalize_target",
    "operation_target",
    "operations_of",
    "qualify",
    "resolve",
]
