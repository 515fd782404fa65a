"""Lift a resolved OData :class:`~processkg.sources.odata.edm.Service` into RDF triples (``kg:`` vocabulary).

IRIs are derived from names (``id/odata/{service}/set/{EntitySet}``), so the same
input always yields the same graph. A table (:data:`ANNOTATION_TERMS`) maps each
annotation term the graph understands to the function that lifts it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeAlias

from pyoxigraph import NamedNode, Triple

from processkg.aliases import JSONObject, JSONValue
from processkg.sources.codes import CodeRow
from processkg.sources.odata.csdl import (
    CAPABILITIES,
    COMMON,
    CORE,
    MEASURES,
    VALIDATION,
    Annotation,
    EntityContainer,
    EntitySet,
    EnumType,
    NavigationProperty,
    Operation,
    OperationImport,
    Parameter,
    Property,
    ReferentialConstraint,
    StructuredType,
)
from processkg.sources.odata.edm import Service, key_of, operation_target, operations_of, qualify
from processkg.triples import Triples, child, mint
from processkg.vocab import KGT, RDF_TYPE

VALUE_LIST = f"{COMMON}.ValueList"
FIXED_VALUES = f"{COMMON}.ValueListWithFixedValues"
VALUE_LIST_REFERENCES = f"{COMMON}.ValueListReferences"
ALLOWED_VALUES = f"{VALIDATION}.AllowedValues"

TermHandler: TypeAlias = Callable[["ServiceLifter", StructuredType, NamedNode, Annotation], None]
"""Lifts one semantic annotation of a property (``_SEMANTIC_TERMS``)."""


class ServiceLifter:
    """Lifts one service; ``iri_key`` is its unique IRI segment (the name, disambiguated)."""

    def __init__(self, service: Service, iri_key: str, codes: dict[str, list[CodeRow]] | None = None) -> None:
        self.svc = service
        self.doc = service.doc
        self.t = Triples(service.file)
        self.base = mint("odata", iri_key)
        self.codes = codes or {}
        self.codelist_codes = 0  # codes of --codes lists given to a property (by value help or binding)
        self.value_lists: dict[tuple[str, str], dict[str, Any]] = {}
        self.value_list_terms: dict[tuple[str, str], int] = {}
        self.set_iris: dict[str, NamedNode] = {}
        self.warnings: list[str] = []

    # ---------------------------------------------------------------- IRIs
    def type_iri(self, qname: str) -> NamedNode:
        st = self.doc.types.get(qname)
        kind = "complex" if st is not None and st.kind == "ComplexType" else "type"
        return child(self.base, kind, qname)

    def prop_iri(self, type_qname: str, name: str) -> NamedNode:
        return child(self.type_iri(type_qname), "prop", name)

    def nav_iri(self, type_qname: str, name: str) -> NamedNode:
        return child(self.type_iri(type_qname), "nav", name)

    def inherited_prop_iri(self, type_qname: str, name: str) -> NamedNode:
        """The IRI of a property of a type, declared there or in a base type."""
        return self.prop_iri(self.declaring_type(self.doc.types.get(type_qname), name) or type_qname, name)

    def declaring_type(self, st: StructuredType | None, prop_name: str) -> str:
        """The (base) type that declares ``prop_name``, for inherited keys."""
        seen = set()
        while st is not None and st.qname not in seen:
            seen.add(st.qname)
            if any(p.name == prop_name for p in st.properties):
                return st.qname
            st = self.doc.types.get(st.base_type)
        return ""

    # ---------------------------------------------------------------- lift
    def lift(self) -> list[Triple]:
        self._service()
        for st in sorted(self.doc.types.values(), key=lambda s: s.qname):
            self._structured_type(st)
        for enum in sorted(self.doc.enums.values(), key=lambda e: e.qname):
            self._enum(enum)
        for container in self.doc.containers:
            self._container(container)
        for st in sorted(self.doc.types.values(), key=lambda s: s.qname):
            self._navigations(st)
        self._operations()
        self._value_list_targets()
        return self.t.items

    def _service(self) -> None:
        t, d = self.t, self.doc
        t.node(self.base, KGT.Service, d.line, self.svc.name)
        t.text(self.base, KGT.serviceName, self.svc.name)
        t.text(self.base, KGT.name, self.svc.name)
        t.text(self.base, KGT.odataVersion, d.version)
        t.text(self.base, KGT.edmxVersion, d.edmx_version)
        t.text(self.base, KGT.dataServiceVersion, d.data_service_version)
        for extra in self.svc.annotation_docs:
            t.text(self.base, KGT.sourceFile, extra.file)
        for schema in d.schemas:
            s = t.node(child(self.base, "schema", schema.namespace), KGT.Schema, schema.line, schema.namespace)
            t.text(s, KGT.namespace, schema.namespace)
            t.add(self.base, KGT.schema, s)

    def _schema_iri(self, namespace: str) -> NamedNode:
        return child(self.base, "schema", namespace)

    def _structured_type(self, st: StructuredType) -> None:
        t = self.t
        s = self.type_iri(st.qname)
        cls = KGT.ComplexType if st.kind == "ComplexType" else KGT.EntityType
        labels = self.svc.annotations_for(st.qname)
        t.node(s, cls, st.line, _label(st.sap, labels) or st.name)
        t.text(s, KGT.name, st.name)
        t.text(s, KGT.namespace, st.namespace)
        t.text(s, KGT.qualifiedName, st.qname)
        t.text(s, KGT.label, _label(st.sap, labels))
        t.text(s, KGT.description, _description(st.sap, labels))
        t.add(self._schema_iri(st.namespace), KGT.complexType if st.kind == "ComplexType" else KGT.entityType, s)
        if st.base_type:
            t.add(s, KGT.baseType, self.type_iri(st.base_type))
        for position, prop in enumerate(st.properties, 1):
            self._property(st, prop, s)
            t.integer(self.prop_iri(st.qname, prop.name), KGT.propertyPosition, position)
        for position, key in enumerate(key_of(self.doc, st) if st.kind == "EntityType" else (), 1):
            name = key.split("/", 1)[0]
            owner = self.declaring_type(st, name)
            if owner:
                t.add(s, KGT.keyProperty, self.prop_iri(owner, name))
                t.integer(self.prop_iri(owner, name), KGT.keyPosition, position)

    def _property(self, st: StructuredType, prop: Property, type_node: NamedNode) -> None:
        t = self.t
        s = self.prop_iri(st.qname, prop.name)
        target = f"{st.qname}/{prop.name}"
        anns = self.svc.annotations_for(target)
        label = _label(prop.sap, anns)
        t.node(s, KGT.Property, prop.line, label or prop.name)
        t.add(type_node, KGT.property, s)
        t.text(s, KGT.name, prop.name)
        t.text(s, KGT.label, label)
        t.text(s, KGT.description, _description(prop.sap, anns))
        t.text(s, KGT.edmType, prop.type)
        t.boolean(s, KGT.isKey, prop.is_key)
        if prop.is_collection:
            t.boolean(s, KGT.isCollection, True)
        t.boolean(s, KGT.nullable, prop.nullable)
        t.integer(s, KGT.maxLength, prop.max_length)
        t.integer(s, KGT.precision, prop.precision)
        t.text(s, KGT.scale, prop.scale)
        t.text(s, KGT.defaultValue, prop.default)
        if prop.concurrency_fixed:
            t.boolean(s, KGT.concurrencyToken, True)
        self._sap_flags(s, prop.sap)
        self._core_flags(s, anns)
        self._field_control(s, prop.sap, anns)
        self._semantics(st, s, prop, anns)
        self._value_list(st, prop, s, anns)

    def _sap_flags(self, s: NamedNode, sap: dict[str, str]) -> None:
        for attr, pred in (
            ("creatable", KGT.creatable),
            ("updatable", KGT.updatable),
            ("filterable", KGT.filterable),
            ("sortable", KGT.sortable),
            ("required-in-filter", KGT.requiredInFilter),
        ):
            if attr in sap:
                self.t.boolean(s, pred, sap[attr].lower() == "true")

    def _core_flags(self, s: NamedNode, anns: list[Annotation]) -> None:
        for ann in anns:
            if _term(ann) == f"{CORE}.Computed" and _truthy(ann.value):
                self.t.boolean(s, KGT.computed, True)
            elif _term(ann) == f"{CORE}.Immutable" and _truthy(ann.value):
                self.t.boolean(s, KGT.immutable, True)

    def _field_control(self, s: NamedNode, sap: dict[str, str], anns: list[Annotation]) -> None:
        """sap:field-control (a path) and Common.FieldControl: a constant member, or a path."""
        self.t.text(s, KGT.fieldControlPath, sap.get("field-control"))
        for ann in anns:
            if _term(ann) == f"{COMMON}.FieldControl" and isinstance(ann.value, str):
                member = field_control_member(ann.value)
                self.t.text(s, KGT.fieldControl if member else KGT.fieldControlPath, member or ann.value)

    def _semantics(self, st: StructuredType, s: NamedNode, prop: Property, anns: list[Annotation]) -> None:
        t = self.t
        t.text(s, KGT.semantics, prop.sap.get("semantics"))
        for attr, pred in (("unit", KGT.unitProperty), ("text", KGT.textProperty)):
            ref = prop.sap.get(attr)
            if ref and "/" not in ref and self.declaring_type(st, ref):
                t.add(s, pred, self.prop_iri(self.declaring_type(st, ref), ref))
        for ann in anns:
            handler = _SEMANTIC_TERMS.get(ann.term)
            if handler:
                handler(self, st, s, ann)

    def _path_property(self, st: StructuredType | None, path: JSONValue) -> NamedNode | None:
        if not isinstance(path, str) or "/" in path:
            return None
        owner = self.declaring_type(st, path)
        return self.prop_iri(owner, path) if owner else None

    # ---------------------------------------------------------------- value lists
    def _value_list_node(self, prop_iri: NamedNode, qualifier: str, line: int | None) -> NamedNode:
        key = (prop_iri.value, qualifier)
        if key not in self.value_lists:
            vl = child(prop_iri, "valuelist", *[seg for seg in qualifier.split("#") if seg])
            self.t.node(vl, KGT.ValueList, line)
            self.t.add(prop_iri, KGT.valueList, vl)
            self.t.add(vl, KGT.valueListProperty, prop_iri)
            self.t.text(vl, KGT.qualifier, qualifier.split("#", 1)[0])
            self.value_lists[key] = {"iri": vl, "collection": "", "codes": {}}
        return self.value_lists[key]["iri"]

    def _value_list(
        self, st: StructuredType | None, prop: Property | Parameter, s: NamedNode, anns: list[Annotation]
    ) -> None:
        kind = prop.sap.get("value-list")
        if kind:
            self.t.text(s, KGT.sapValueList, kind)
            vl = self._value_list_node(s, "", prop.line)
            if kind == "fixed-values":
                self.t.boolean(vl, KGT.fixedValues, True)
        for ann in anns:
            handler = ANNOTATION_TERMS.get(ann.term)
            if handler:
                handler(self, st, s, ann)
        enum = self.doc.enums.get(prop.item_type)
        if enum is not None:
            vl = self._value_list_node(s, "", prop.line)
            self.t.boolean(vl, KGT.fixedValues, True)
            for name, _value, line in enum.members:
                self._code(vl, s, "", name, name, "metadata", line)

    def _code(
        self,
        vl: NamedNode,
        prop_iri: NamedNode,
        qualifier: str,
        value: str,
        label: str,
        source: str,
        line: int | None = None,
        file: str | None = None,
    ) -> None:
        entry = self.value_lists[(prop_iri.value, qualifier)]
        if source == "codelist":
            self.codelist_codes += 1
        if value in entry["codes"]:
            return
        code = child(vl, "code", value)
        entry["codes"][value] = code
        self.t.node(code, KGT.Code, line, label or value, file=file)
        self.t.text(code, KGT.codeValue, value)
        self.t.text(code, KGT.codeSource, source)
        self.t.add(vl, KGT.code, code)

    def _lift_value_list(self, st: StructuredType | None, s: NamedNode, ann: Annotation) -> None:
        t = self.t
        qualifier = self._fresh_qualifier(s, ann)
        vl = self._value_list_node(s, qualifier, ann.line)
        t.text(vl, KGT.annotationTerm, ann.term)
        t.text(vl, KGT.sourceFile, ann.file)
        record = ann.value if isinstance(ann.value, dict) else {}
        path = record.get("CollectionPath")
        if isinstance(path, str):
            t.text(vl, KGT.collectionPath, path)
            self.value_lists[(s.value, qualifier)]["collection"] = path
        t.text(vl, KGT.label, label if isinstance(label := record.get("Label"), str) else None)
        if isinstance(search := record.get("SearchSupported"), str):
            t.boolean(vl, KGT.searchSupported, search.lower() == "true")
        params = record.get("Parameters")
        for i, param in enumerate(params if isinstance(params, list) else []):
            if isinstance(param, dict):
                self._parameter(st, vl, i, param)

    def _fresh_qualifier(self, s: NamedNode, ann: Annotation) -> str:
        """The qualifier of this Common.ValueList's node; a repeated one gets ``#2``, ``#3``, ...

        CSDL allows one annotation per term and qualifier on a target, but SAP services carry
        two unqualified value lists on some properties (CDS view and DDIC search help): both
        are kept as separate nodes, and the build warns.
        """
        seen = self.value_list_terms.setdefault((s.value, ann.qualifier), 0)
        self.value_list_terms[(s.value, ann.qualifier)] = seen + 1
        if not seen:
            return ann.qualifier
        self.warnings.append(
            f"{ann.file}:{ann.line}: a second {ann.term} with qualifier {ann.qualifier!r} on the same "
            f"property; kept as value list #{seen + 1}"
        )
        return f"{ann.qualifier}#{seen + 1}"

    def _parameter(self, st: StructuredType | None, vl: NamedNode, i: int, param: JSONObject) -> None:
        t = self.t
        p = child(vl, "param", str(i))
        t.node(p, KGT.ValueListParameter, param.get("$line"))
        t.add(vl, KGT.parameter, p)
        kind = param.get("$Type", "").rpartition(".")[2].replace("ValueListParameter", "")
        t.text(p, KGT.parameterKind, kind)
        t.integer(p, KGT.parameterOrder, i)
        local = self._path_property(st, param.get("LocalDataProperty"))
        if local is not None:
            t.add(p, KGT.localDataProperty, local)
        name = param.get("ValueListProperty")
        t.text(p, KGT.valueListPropertyName, name if isinstance(name, str) else None)
        t.text(p, KGT.constant, param.get("Constant") if isinstance(param.get("Constant"), str) else None)

    def _lift_fixed_values(self, st: StructuredType | None, s: NamedNode, ann: Annotation) -> None:
        vl = self._value_list_node(s, ann.qualifier, ann.line)
        self.t.text(vl, KGT.annotationTerm, ann.term)
        self.t.text(vl, KGT.sourceFile, ann.file)
        self.t.boolean(vl, KGT.fixedValues, _truthy(ann.value))

    def _lift_references(self, st: StructuredType | None, s: NamedNode, ann: Annotation) -> None:
        vl = self._value_list_node(s, ann.qualifier, ann.line)
        self.t.text(vl, KGT.annotationTerm, ann.term)
        self.t.text(vl, KGT.sourceFile, ann.file)
        for url in ann.value if isinstance(ann.value, list) else [ann.value]:
            if isinstance(url, str):
                self.t.text(vl, KGT.valueListReference, url)

    def _lift_allowed_values(self, st: StructuredType | None, s: NamedNode, ann: Annotation) -> None:
        vl = self._value_list_node(s, ann.qualifier, ann.line)
        self.t.text(vl, KGT.annotationTerm, ann.term)
        self.t.text(vl, KGT.sourceFile, ann.file)
        self.t.boolean(vl, KGT.fixedValues, True)
        for rec in ann.value if isinstance(ann.value, list) else []:
            value = rec.get("Value") if isinstance(rec, dict) else rec
            if isinstance(value, str):
                label = rec.get(f"{COMMON}.Label") if isinstance(rec, dict) else None
                line = rec.get("$line", ann.line) if isinstance(rec, dict) else ann.line
                self._code(
                    vl,
                    s,
                    ann.qualifier,
                    value,
                    label if isinstance(label, str) else value,
                    "metadata",
                    line if isinstance(line, int) else None,  # a record's $line: an int, or None
                    ann.file,
                )

    def _value_list_targets(self) -> None:
        """Resolve collection paths to entity sets of this service and attach code-list codes."""
        for (prop_value, qualifier), entry in sorted(self.value_lists.items()):
            path = entry["collection"]
            if path in self.set_iris:
                self.t.add(entry["iri"], KGT.valueListEntitySet, self.set_iris[path])
            for value, label, file, line in self.codes.get(path, ()) if path else ():
                self._code(entry["iri"], NamedNode(prop_value), qualifier, value, label, "codelist", line, file)

    def bind_codes(self, type_qname: str, prop_name: str, rows: list[CodeRow], line: int | None) -> list[Triple]:
        """Give a property the codes of a code list a binding file names (``kg build --code-bindings``):
        they join its unqualified value list (made if missing), lifted as any ``"codelist"`` code;
        returns the new triples. ``rows`` are ``(code, description, file, line)`` as ``codes_for`` gives."""
        start = len(self.t.items)
        s = self.prop_iri(type_qname, prop_name)
        vl = self._value_list_node(s, "", line)
        for value, label, file, row in rows:
            self._code(vl, s, "", value, label, "codelist", row, file)
        return self.t.items[start:]

    def require(self, set_name: str, prop_name: str, source: str, note: str, file: str, line: int) -> list[Triple]:
        """A curated required-on-create field (``kg build --required``): the entity set gets a
        ``kg:RequiredOnCreate`` node naming the property, its source document and the CSV row;
        returns the new triples, or [] (and nothing is added) when the set or property is not in
        this service."""
        es = next((e for c in self.doc.containers for e in c.entity_sets if e.name == set_name), None)
        if es is None or set_name not in self.set_iris:
            return []
        owner = self.declaring_type(self.doc.types.get(es.entity_type), prop_name)
        if not owner:
            return []
        start = len(self.t.items)
        s = child(self.set_iris[set_name], "required", prop_name)
        self.t.node(s, KGT.RequiredOnCreate, line, f"{set_name}/{prop_name} required on create", file=file)
        self.t.text(s, KGT.name, prop_name)
        self.t.add(s, KGT.requiredProperty, self.prop_iri(owner, prop_name))
        self.t.text(s, KGT.requirementSource, source)
        self.t.text(s, KGT.requirementNote, note)
        self.t.add(self.set_iris[set_name], KGT.requiredOnCreate, s)
        return self.t.items[start:]

    # ---------------------------------------------------------------- enums, sets, navs
    def _enum(self, enum: EnumType) -> None:
        t = self.t
        s = child(self.base, "enum", enum.qname)
        t.node(s, KGT.EnumType, enum.line, enum.name)
        t.text(s, KGT.name, enum.name)
        t.text(s, KGT.qualifiedName, enum.qname)
        t.add(self._schema_iri(enum.namespace), KGT.enumType, s)
        for name, value, line in enum.members:
            m = child(s, "member", name)
            t.node(m, KGT.EnumMember, line, name)
            t.text(m, KGT.name, name)
            t.text(m, KGT.memberValue, value)
            t.add(s, KGT.member, m)

    def _container(self, container: EntityContainer) -> None:
        t = self.t
        c = child(self.base, "container", container.name)
        t.node(c, KGT.EntityContainer, container.line, container.name)
        t.text(c, KGT.name, container.name)
        t.add(self.base, KGT.entityContainer, c)
        for es in container.entity_sets:
            self._entity_set(container, c, es)

    def _entity_set(self, container: EntityContainer, c: NamedNode, es: EntitySet) -> None:
        t = self.t
        s = child(self.base, "singleton" if es.singleton else "set", es.name)
        self.set_iris[es.name] = s
        anns = self.svc.annotations_for(f"{container.qname}/{es.name}")
        label = _label(es.sap, anns)
        t.node(s, KGT.Singleton if es.singleton else KGT.EntitySet, es.line, label or es.name)
        t.add(c, KGT.singleton if es.singleton else KGT.entitySet, s)
        t.text(s, KGT.name, es.name)
        t.text(s, KGT.label, label)
        t.text(s, KGT.description, _description(es.sap, anns))
        t.add(s, KGT.entityType, self.type_iri(es.entity_type))
        flags = {pred: es.sap[attr].lower() == "true" for attr, pred in _SET_FLAGS if attr in es.sap}
        for ann in anns:
            if _term(ann) in _RESTRICTIONS and isinstance(ann.value, dict):
                self._restrictions(s, self.doc.types.get(es.entity_type), _term(ann), ann.value, flags)
        for pred, value in flags.items():
            t.boolean(s, pred, value)
        t.text(s, KGT.updatablePath, es.sap.get("updatable-path"))
        t.text(s, KGT.deletablePath, es.sap.get("deletable-path"))
        if _optimistic_concurrency(es, anns):
            t.boolean(s, KGT.optimisticConcurrency, True)

    def _restrictions(
        self, s: NamedNode, st: StructuredType | None, term: str, record: JSONObject, flags: dict[NamedNode, bool]
    ) -> None:
        """One Capabilities.*Restrictions record of an entity set: a false Insertable / Updatable /
        Deletable lowers the set's flag (false wins over sap:creatable...), a path value is kept as
        the run-time condition, and the property lists become links to the properties they name."""
        for name, value in record.items():
            pred = _RESTRICTIONS[term].get(name)
            path = _RUN_TIME_PATHS.get(pred) if pred is not None else None
            if pred in _RUN_TIME_PATHS and value in ("true", "false"):
                flags[pred] = flags.get(pred, True) and value == "true"
            elif path is not None and isinstance(value, str):
                self.t.text(s, path, value)
            elif pred == KGT.requiresFilter and value in ("true", "false"):
                flags[pred] = flags.get(pred, False) or value == "true"  # with sap:requires-filter
            elif pred is not None and isinstance(value, list):
                for path in value:
                    target = self._member_iri(st, path, nav=pred == KGT.nonInsertableNavigation)
                    if target is not None:
                        self.t.add(s, pred, target)

    def _member_iri(self, st: StructuredType | None, path: JSONValue, nav: bool) -> NamedNode | None:
        """The IRI of the property (or navigation property) a one-segment path names, if declared."""
        if not nav:
            return self._path_property(st, path)
        seen: set[str] = set()
        while st is not None and st.qname not in seen and isinstance(path, str):
            seen.add(st.qname)
            if any(n.name == path for n in st.navigations):
                return self.nav_iri(st.qname, path)
            st = self.doc.types.get(st.base_type)
        return None

    def _navigations(self, st: StructuredType) -> None:
        for nav in st.navigations:
            self._navigation(st, nav)

    def _navigation(self, st: StructuredType, nav: NavigationProperty) -> None:
        t = self.t
        s = self.nav_iri(st.qname, nav.name)
        t.node(s, KGT.NavigationProperty, nav.line, nav.name)
        t.add(self.type_iri(st.qname), KGT.navigationProperty, s)
        t.text(s, KGT.name, nav.name)
        t.text(s, KGT.cardinality, nav.cardinality)
        t.text(
            s,
            KGT.edmType,
            nav.type or (f"Collection({nav.target_type})" if nav.cardinality == "*" else nav.target_type),
        )
        if nav.target_type in self.doc.types:
            t.add(s, KGT.targetEntityType, self.type_iri(nav.target_type))
            if nav.partner:
                t.add(s, KGT.partner, self.nav_iri(nav.target_type, nav.partner))
        for name in nav.target_sets:
            if name in self.set_iris:
                t.add(s, KGT.targetEntitySet, self.set_iris[name])
        t.boolean(s, KGT.containsTarget, nav.contains_target or None)
        t.text(s, KGT.relationship, nav.relationship)
        t.text(s, KGT.fromRole, nav.from_role)
        t.text(s, KGT.toRole, nav.to_role)
        for i, rc in enumerate(nav.constraints):
            self._constraint(st, nav, s, i, rc)

    def _constraint(
        self, st: StructuredType, nav: NavigationProperty, s: NamedNode, i: int, rc: ReferentialConstraint
    ) -> None:
        t = self.t
        r = child(s, "constraint", str(i))
        t.node(r, KGT.ReferentialConstraint, rc.line)
        t.add(s, KGT.referentialConstraint, r)
        local = self._path_property(st, rc.property)
        if local is not None:
            t.add(r, KGT.localProperty, local)
        target = self.doc.types.get(nav.target_type)
        remote = self._path_property(target, rc.referenced) if target is not None else None
        if remote is not None:
            t.add(r, KGT.referencedProperty, remote)

    # ---------------------------------------------------------------- operations
    def _operations(self) -> None:
        """V2 function imports, V4 actions and functions (one node per overload), V4 imports."""
        used: set[str] = set()
        unbound: dict[str, list[NamedNode]] = {}
        for op in operations_of(self.doc):
            s = self._operation_iri(op, used)
            self._operation(op, s)
            if not op.bound:
                unbound.setdefault(op.qname, []).append(s)
        for container in self.doc.containers:
            for imp in container.operation_imports:
                self._operation_import(container, imp, unbound.get(imp.operation, []))

    def _operation_iri(self, op: Operation, used: set[str]) -> NamedNode:
        """``operation/{name}`` (V2), ``operation/{qname}[/{binding type}]`` (V4, the binding type's simple
        name, e.g. ``Collection(BillingDocument_Type)``); a further overload of the same binding gets ``/2``..."""
        segments = [op.name if op.kind == "FunctionImport" else op.qname]
        if op.binding is not None:
            many = op.binding.type.startswith("Collection(")
            simple = op.binding.item_type.rpartition(".")[2]
            segments.append(f"Collection({simple})" if many else simple)
        iri, n = child(self.base, "operation", *segments), 2
        while iri.value in used:
            iri, n = child(self.base, "operation", *segments, str(n)), n + 1
        used.add(iri.value)
        return iri

    def _operation_annotations(self, op: Operation, member: str = "") -> list[Annotation]:
        """Annotations of an operation (or of its parameter ``member``): those of every overload, then
        those that target this overload only."""
        suffix = f"/{member}" if member else ""
        targets = dict.fromkeys([op.qname + suffix, operation_target(op) + suffix])
        return [a for target in targets for a in self.svc.annotations_for(target)]

    def _operation(self, op: Operation, s: NamedNode) -> None:
        t = self.t
        anns = self._operation_annotations(op)
        label = _label(op.sap, anns)
        t.node(s, _OPERATION_CLASSES[op.kind], op.line, label or op.name)
        t.add(s, RDF_TYPE, KGT.ServiceOperation)
        t.add(self.base, KGT.serviceOperation, s)
        t.text(s, KGT.name, op.name)
        t.text(s, KGT.label, label)
        t.text(s, KGT.description, _description(op.sap, anns))
        t.text(s, KGT.httpMethod, op.http_method or _OPERATION_METHODS.get(op.kind))
        t.text(s, KGT.returnType, op.return_type)
        if op.kind == "FunctionImport":
            self._v2_operation(op, s)
        else:
            self._v4_operation(op, s)
        for i, param in enumerate(op.parameters):
            self._operation_parameter(op, s, i, param)

    def _parameter_iri(self, op: Operation, s: NamedNode, i: int, param: Parameter) -> NamedNode:
        """``{operation}/param/{name}``; a second parameter of the same name (CSDL names them uniquely,
        12.8) is kept as ``{name}/{position}``, with a warning."""
        if all(other.name != param.name for other in op.parameters[:i]):
            return child(s, "param", param.name)
        self.warnings.append(
            f"{self.doc.file}:{param.line}: a second parameter {param.name!r} of {op.name}; "
            f"kept as parameter {param.name}/{i} (parameter names are unique within an operation)"
        )
        return child(s, "param", param.name, str(i))

    def _v2_operation(self, op: Operation, s: NamedNode) -> None:
        """A V2 function import: the set it returns, and SAP's sap:action-for and sap:applicable-path."""
        if op.entity_set in self.set_iris:
            self.t.add(s, KGT.returnEntitySet, self.set_iris[op.entity_set])
        acted_on = qualify(self.doc, op.sap.get("action-for", ""))
        if acted_on in self.doc.types:
            self.t.add(s, KGT.actionFor, self.type_iri(acted_on))
        self.t.text(s, KGT.applicablePath, op.sap.get("applicable-path"))

    def _v4_operation(self, op: Operation, s: NamedNode) -> None:
        t = self.t
        t.text(s, KGT.qualifiedName, op.qname)
        t.text(s, KGT.namespace, op.namespace)
        t.boolean(s, KGT.isBound, op.bound)
        t.text(s, KGT.entitySetPath, op.entity_set_path)
        if op.binding is not None:
            many = op.binding.type.startswith("Collection(")
            t.boolean(s, KGT.boundToCollection, many)
            item = op.binding.type[11:-1] if many else op.binding.type
            if item in self.doc.types:
                t.add(s, KGT.bindingType, self.type_iri(item))

    def _operation_parameter(self, op: Operation, s: NamedNode, i: int, param: Parameter) -> None:
        t = self.t
        p = self._parameter_iri(op, s, i, param)
        anns = self._operation_annotations(op, param.name)
        label = _label(param.sap, anns)
        t.node(p, KGT.OperationParameter, param.line, label or param.name)
        t.add(s, KGT.serviceOperationParameter, p)
        t.text(p, KGT.name, param.name)
        t.text(p, KGT.label, label)
        t.text(p, KGT.description, _description(param.sap, anns))
        t.text(p, KGT.edmType, param.type)
        t.integer(p, KGT.parameterOrder, i)
        if param.type.startswith("Collection("):
            t.boolean(p, KGT.isCollection, True)
        t.boolean(p, KGT.nullable, param.nullable)
        t.integer(p, KGT.maxLength, param.max_length)
        t.integer(p, KGT.precision, param.precision)
        t.text(p, KGT.scale, param.scale)
        if op.bound and i == 0:
            t.boolean(p, KGT.isBindingParameter, True)
        if any(_term(a) == f"{CORE}.OptionalParameter" for a in anns):
            t.boolean(p, KGT.optionalParameter, True)
        self._value_list(None, param, p, anns)

    def _operation_import(self, container: EntityContainer, imp: OperationImport, ops: list[NamedNode]) -> None:
        t = self.t
        c = child(self.base, "container", container.name)
        s = child(c, "import", imp.name)
        label = _label({}, self.svc.annotations_for(f"{container.qname}/{imp.name}"))
        t.node(
            s, KGT.V4ActionImport if imp.kind == "ActionImport" else KGT.V4FunctionImport, imp.line, label or imp.name
        )
        t.add(s, RDF_TYPE, KGT.OperationImport)
        t.add(c, KGT.operationImport, s)
        t.text(s, KGT.name, imp.name)
        t.text(s, KGT.label, label)
        for op in ops:
            t.add(s, KGT.importedOperation, op)
        entity_set = imp.entity_set.rsplit("/", 1)[-1]
        if entity_set in self.set_iris:
            t.add(s, KGT.returnEntitySet, self.set_iris[entity_set])


# ---------------------------------------------------------------- annotation helpers

#: Reader kind of an operation -> its class (besides kg:ServiceOperation).
_OPERATION_CLASSES = {"FunctionImport": KGT.V2FunctionImport, "Action": KGT.V4Action, "Function": KGT.V4Function}
#: The HTTP method of a V4 operation (OData V4 Protocol 11.5.4 / 11.5.3); a V2 function import states its own.
_OPERATION_METHODS = {"Action": "POST", "Function": "GET"}


def _optimistic_concurrency(es: EntitySet, anns: list[Annotation]) -> bool:
    """Core.OptimisticConcurrency on the set (an empty collection too: ETags without saying how), or
    sap:etag. Matched by the term's name: SAP's V2 documents use the alias SAP__core undeclared."""
    named = any(a.term.rpartition(".")[2] == "OptimisticConcurrency" for a in anns)
    return named or es.sap.get("etag", "false").lower() != "false"


#: SAP's own aliases of the standard vocabularies, and the usual ``Core``, used in some SAP V2
#: documents without an edmx:Include that declares them (``SAP__core.Immutable`` in six A2X
#: services, ``Core.Immutable`` in one).
SAP_ALIASES = {"Core": CORE, "SAP__core": CORE, "SAP__common": COMMON, "SAP__capabilities": CAPABILITIES}

#: Common.FieldControlType: member names, and the Int values that stand for them.
FIELD_CONTROL_TYPES = {"7": "Mandatory", "3": "Optional", "1": "ReadOnly", "0": "Inapplicable"}

#: sap: attribute of an entity set -> predicate.
_SET_FLAGS = (
    ("creatable", KGT.creatable),
    ("updatable", KGT.updatable),
    ("deletable", KGT.deletable),
    ("addressable", KGT.addressable),
    ("searchable", KGT.searchSupported),
    ("requires-filter", KGT.requiresFilter),
)

#: Set flag -> the predicate of its run-time path (a Path value instead of a Bool; none for insert).
_RUN_TIME_PATHS: dict[NamedNode, NamedNode | None] = {
    KGT.creatable: None,
    KGT.updatable: KGT.updatablePath,
    KGT.deletable: KGT.deletablePath,
}

#: Capabilities term on an entity set -> {record field: predicate it is lifted to}.
_RESTRICTIONS = {
    f"{CAPABILITIES}.InsertRestrictions": {
        "Insertable": KGT.creatable,
        "RequiredProperties": KGT.insertRequiredProperty,
        "NonInsertableNavigationProperties": KGT.nonInsertableNavigation,
    },
    f"{CAPABILITIES}.UpdateRestrictions": {
        "Updatable": KGT.updatable,
        "NonUpdatableProperties": KGT.nonUpdatableProperty,
    },
    f"{CAPABILITIES}.DeleteRestrictions": {"Deletable": KGT.deletable},
    f"{CAPABILITIES}.FilterRestrictions": {
        "RequiresFilter": KGT.requiresFilter,
        "RequiredProperties": KGT.filterRequiredProperty,
        "NonFilterableProperties": KGT.nonFilterableProperty,
    },
}


def _term(ann: Annotation) -> str:
    """The annotation's term with SAP's undeclared aliases (:data:`SAP_ALIASES`) replaced."""
    prefix, _, name = ann.term.rpartition(".")
    return f"{SAP_ALIASES[prefix]}.{name}" if prefix in SAP_ALIASES else ann.term


def field_control_member(value: str) -> str | None:
    """``Common.FieldControlType/Mandatory`` (any alias) or ``7`` -> ``Mandatory``; None for a path."""
    if value.strip() in FIELD_CONTROL_TYPES:
        return FIELD_CONTROL_TYPES[value.strip()]
    head, sep, member = value.strip().rpartition("/")
    return member if sep and head.endswith("FieldControlType") else None


def _truthy(value: JSONValue) -> bool:
    return value is True or (isinstance(value, str) and value.lower() != "false")


def _label(sap: dict[str, str], anns: list[Annotation]) -> str | None:
    if sap.get("label"):
        return sap["label"]
    for ann in anns:
        if _term(ann) == f"{COMMON}.Label" and isinstance(ann.value, str):
            return ann.value
    return None


def _description(sap: dict[str, str], anns: list[Annotation]) -> str | None:
    """``Core.Description`` or ``Common.QuickInfo`` (SAP's undeclared aliases too: the A2X services annotate
    their function imports with ``Core.Description`` and include no Core vocabulary), else ``sap:quickinfo``."""
    for ann in anns:
        if _term(ann) in (f"{CORE}.Description", f"{COMMON}.QuickInfo") and isinstance(ann.value, str):
            return ann.value
    return sap.get("quickinfo")


def _text_property(lifter: ServiceLifter, st: StructuredType, s: NamedNode, ann: Annotation) -> None:
    target = lifter._path_property(st, ann.value)
    if target is not None:
        lifter.t.add(s, KGT.textProperty, target)


def _unit_property(semantics: str) -> TermHandler:
    def handler(lifter: ServiceLifter, st: StructuredType, s: NamedNode, ann: Annotation) -> None:
        target = lifter._path_property(st, ann.value)
        if target is not None:
            lifter.t.add(s, KGT.unitProperty, target)
            lifter.t.text(target, KGT.semantics, semantics)

    return handler


def _flag_semantics(semantics: str) -> TermHandler:
    def handler(lifter: ServiceLifter, st: StructuredType, s: NamedNode, ann: Annotation) -> None:
        if _truthy(ann.value):
            lifter.t.text(s, KGT.semantics, semantics)

    return handler


_SEMANTIC_TERMS = {
    f"{COMMON}.Text": _text_property,
    f"{MEASURES}.ISOCurrency": _unit_property("currency-code"),
    f"{MEASURES}.Unit": _unit_property("unit-of-measure"),
    f"{COMMON}.IsCurrency": _flag_semantics("currency-code"),
    f"{COMMON}.IsUnit": _flag_semantics("unit-of-measure"),
}

#: Annotation term -> lifter of the value help it describes.
ANNOTATION_TERMS = {
    VALUE_LIST: ServiceLifter._lift_value_list,
    FIXED_VALUES: ServiceLifter._lift_fixed_values,
    VALUE_LIST_REFERENCES: ServiceLifter._lift_references,
    ALLOWED_VALUES: ServiceLifter._lift_allowed_values,
}

__all__ = ["ANNOTATION_TERMS", "ServiceLifter"]
