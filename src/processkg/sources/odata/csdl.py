"""Read OData CSDL service metadata (V2 EDMX 1.0 and V4 EDMX 4.0) into a typed model.

Spec: OData CSDL XML 4.01 (https://docs.oasis-open.org/odata/odata-csdl-xml/v4.01/odata-csdl-xml-v4.01.html)
and OData V2 (https://www.odata.org/documentation/odata-version-2-0/overview/), with SAP's
``sap:`` attributes (https://sap.github.io/odata-vocabularies/docs/v2-annotations.html).

Reading is two passes: :func:`read_document` collects declarations by qualified
name; :func:`resolve` resolves entity types, associations and navigation targets,
raising :class:`~processkg.errors.UnresolvedReferenceError` with file, line, tag and name.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeAlias, TypeVar

from lxml import etree

from processkg.errors import DuplicateDeclarationError, NotODataError
from processkg.sources.xmlio import local, namespace, parse_xml

EDMX_V1 = "http://schemas.microsoft.com/ado/2007/06/edmx"
EDMX_V4 = "http://docs.oasis-open.org/odata/ns/edmx"
#: Entity Framework designer files: EDMX 2.0 / 3.0 with storage and mapping models.
EDMX_EF = {
    "http://schemas.microsoft.com/ado/2008/10/edmx": "2.0",
    "http://schemas.microsoft.com/ado/2009/11/edmx": "3.0",
}
#: CSDL schema namespaces accepted inside ``edmx:DataServices``.
EDM_NAMESPACES = frozenset(
    {
        "http://schemas.microsoft.com/ado/2006/04/edm",
        "http://schemas.microsoft.com/ado/2007/05/edm",
        "http://schemas.microsoft.com/ado/2008/01/edm",
        "http://schemas.microsoft.com/ado/2008/09/edm",
        "http://schemas.microsoft.com/ado/2009/11/edm",
        "http://docs.oasis-open.org/odata/ns/edm",
    }
)
METADATA_NS = "http://schemas.microsoft.com/ado/2007/08/dataservices/metadata"
SAP_NS = "http://www.sap.com/Protocols/SAPData"
SPEC_V4 = "https://docs.oasis-open.org/odata/odata-csdl-xml/v4.01/odata-csdl-xml-v4.01.html"
SPEC_V2 = "https://www.odata.org/documentation/odata-version-2-0/overview/"

CAPABILITIES = "Org.OData.Capabilities.V1"
COMMON = "com.sap.vocabularies.Common.v1"
CORE = "Org.OData.Core.V1"
MEASURES = "Org.OData.Measures.V1"
VALIDATION = "Org.OData.Validation.V1"

#: Annotation expression attributes (CSDL 14.4 constant and path expressions).
_EXPR_ATTRS = (
    "String",
    "Bool",
    "Int",
    "Decimal",
    "Float",
    "Date",
    "DateTimeOffset",
    "Guid",
    "EnumMember",
    "Path",
    "PropertyPath",
    "NavigationPropertyPath",
    "AnnotationPath",
)

AnnotationValue: TypeAlias = "str | int | bool | list[AnnotationValue] | dict[str, AnnotationValue] | None"
"""An annotation value (CSDL 14.4): a constant as str, ``True`` for a tagging term, a Record as a dict
(its ``$line`` an int), a Collection as a list."""


@dataclass
class Annotation:
    """One ``<Annotation Term=...>`` with its term resolved through aliases (CSDL 14.3)."""

    term: str
    qualifier: str
    value: AnnotationValue
    line: int
    file: str


@dataclass
class Property:
    name: str
    type: str
    line: int
    nullable: bool = True
    max_length: int | None = None
    precision: int | None = None
    scale: str | None = None
    default: str | None = None
    sap: dict[str, str] = field(default_factory=dict)
    annotations: list[Annotation] = field(default_factory=list)
    is_key: bool = False
    concurrency_fixed: bool = False  # V2 ConcurrencyMode="Fixed": part of the entity's ETag

    @property
    def is_collection(self) -> bool:
        return self.type.startswith("Collection(")

    @property
    def item_type(self) -> str:
        return self.type[len("Collection(") : -1] if self.is_collection else self.type


@dataclass
class ReferentialConstraint:
    property: str  # on the declaring (dependent) side
    referenced: str  # on the principal side
    line: int


@dataclass
class NavigationProperty:
    name: str
    line: int
    type: str = ""  # V4: target type, possibly Collection(...)
    relationship: str = ""  # V2: qualified association name
    from_role: str = ""
    to_role: str = ""
    partner: str = ""
    nullable: bool = True
    contains_target: bool = False
    constraints: list[ReferentialConstraint] = field(default_factory=list)
    annotations: list[Annotation] = field(default_factory=list)
    # filled by resolve()
    target_type: str = ""
    cardinality: str = ""
    target_sets: list[str] = field(default_factory=list)


@dataclass
class StructuredType:
    """An ``EntityType`` or ``ComplexType`` (CSDL 6, 9)."""

    kind: str
    namespace: str
    name: str
    line: int
    key: list[str] = field(default_factory=list)
    properties: list[Property] = field(default_factory=list)
    navigations: list[NavigationProperty] = field(default_factory=list)
    base_type: str = ""
    sap: dict[str, str] = field(default_factory=dict)
    annotations: list[Annotation] = field(default_factory=list)

    @property
    def qname(self) -> str:
        return f"{self.namespace}.{self.name}"


@dataclass
class EnumType:
    namespace: str
    name: str
    line: int
    members: list[tuple[str, str, int | None]] = field(default_factory=list)  # (name, value, line)
    annotations: list[Annotation] = field(default_factory=list)

    @property
    def qname(self) -> str:
        return f"{self.namespace}.{self.name}"


@dataclass
class AssociationEnd:
    role: str
    type: str
    multiplicity: str


@dataclass
class Association:
    """OData V2 ``Association`` (CSDL 1.0-3.0)."""

    qname: str
    line: int
    ends: dict[str, AssociationEnd] = field(default_factory=dict)  # role -> AssociationEnd
    # (principal role, [props], dependent role, [props])
    constraint: tuple[str, list[str], str, list[str]] | None = None


@dataclass
class EntitySet:
    name: str
    entity_type: str
    line: int
    singleton: bool = False
    sap: dict[str, str] = field(default_factory=dict)
    bindings: dict[str, str] = field(default_factory=dict)  # V4 NavigationPropertyBinding Path -> Target
    annotations: list[Annotation] = field(default_factory=list)


@dataclass
class Parameter:
    """A ``Parameter`` of a V2 FunctionImport or a V4 Action / Function (CSDL 12.8, V2 FunctionImport)."""

    name: str
    type: str
    line: int
    nullable: bool = True
    max_length: int | None = None
    precision: int | None = None
    scale: str | None = None
    mode: str = ""  # V2 Mode: In, Out, InOut
    sap: dict[str, str] = field(default_factory=dict)
    annotations: list[Annotation] = field(default_factory=list)

    @property
    def item_type(self) -> str:
        return self.type[len("Collection(") : -1] if self.type.startswith("Collection(") else self.type


@dataclass
class Operation:
    """An operation beyond CRUD: a V2 ``FunctionImport`` (declared in the entity container, with
    ``m:HttpMethod``, ``sap:action-for``) or a V4 ``Action`` / ``Function`` (declared in the schema,
    bound when ``IsBound`` is true: its first parameter is the binding parameter)."""

    kind: str  # "FunctionImport" (V2), "Action", "Function" (V4)
    namespace: str  # the schema namespace (V4), the container's qualified name (V2)
    name: str
    line: int
    parameters: list[Parameter] = field(default_factory=list)
    return_type: str = ""
    bound: bool = False
    composable: bool = False
    entity_set: str = ""  # V2 EntitySet of the result
    entity_set_path: str = ""  # V4 EntitySetPath
    http_method: str = ""  # V2 m:HttpMethod
    sap: dict[str, str] = field(default_factory=dict)
    annotations: list[Annotation] = field(default_factory=list)

    @property
    def qname(self) -> str:
        """``Namespace.Action`` (V4); ``Namespace.Container/FunctionImport`` (V2), as annotations target them."""
        return f"{self.namespace}/{self.name}" if self.kind == "FunctionImport" else f"{self.namespace}.{self.name}"

    @property
    def binding(self) -> Parameter | None:
        return self.parameters[0] if self.bound and self.parameters else None

    @property
    def signature(self) -> str:
        """The overload part of an annotation target (CSDL 14.2.1): the binding parameter's type
        for an action (empty when unbound), every parameter's type for a function."""
        if self.kind == "Action":
            return self.binding.type if self.binding is not None else ""
        return ",".join(p.type for p in self.parameters)


@dataclass
class OperationImport:
    """A V4 ``ActionImport`` or ``FunctionImport``: an unbound action or function exposed at the service root."""

    kind: str  # "ActionImport", "FunctionImport"
    name: str
    operation: str  # qualified name of the action or function
    line: int
    entity_set: str = ""
    annotations: list[Annotation] = field(default_factory=list)


@dataclass
class EntityContainer:
    name: str
    namespace: str
    line: int
    entity_sets: list[EntitySet] = field(default_factory=list)
    association_sets: list[tuple[str, dict[str, str]]] = field(default_factory=list)  # (association qname, {role: set})
    function_imports: list[Operation] = field(default_factory=list)  # V2 FunctionImport: an operation in itself
    operation_imports: list[OperationImport] = field(default_factory=list)  # V4 ActionImport / FunctionImport

    @property
    def qname(self) -> str:
        return f"{self.namespace}.{self.name}"


@dataclass
class Schema:
    namespace: str
    alias: str
    line: int


@dataclass
class ServiceDocument:
    """One CSDL document: a service, or an annotations-only document that targets one."""

    file: str
    path: Path
    version: str  # "2.0" / "3.0" (EDMX 1.0) or "4.0" / "4.01"
    edmx_version: str
    data_service_version: str
    line: int
    schemas: list[Schema] = field(default_factory=list)
    aliases: dict[str, str] = field(default_factory=dict)  # alias -> namespace
    includes: dict[str, str] = field(default_factory=dict)  # namespace -> alias, from edmx:Reference
    types: dict[str, StructuredType] = field(default_factory=dict)  # qname -> StructuredType
    enums: dict[str, EnumType] = field(default_factory=dict)
    associations: dict[str, Association] = field(default_factory=dict)
    containers: list[EntityContainer] = field(default_factory=list)
    operations: list[Operation] = field(default_factory=list)  # V4 Action / Function of every schema
    annotations: list[tuple[str, Annotation]] = field(default_factory=list)  # (target, Annotation) from <Annotations>
    name: str = ""
    strict: bool = True  # a duplicate declaration raises; else it is left out with a warning
    warnings: list[str] = field(default_factory=list)

    @property
    def is_service(self) -> bool:
        return bool(self.containers or self.types)

    @property
    def namespaces(self) -> set[str]:
        return {s.namespace for s in self.schemas}


# ---------------------------------------------------------------- pass 1: collect


def service_name(path: Path) -> str:
    """``API_X.edmx`` -> ``API_X``; ``.../API_X/metadata.xml`` -> ``API_X``."""
    if path.name.lower() in ("metadata.xml", "$metadata", "$metadata.xml"):
        return path.parent.name
    return path.stem


def read_document(path: Path, display: str | None = None, strict: bool = True) -> ServiceDocument:
    """Parse one CSDL document and collect its declarations (pass 1).

    Two declarations of one qualified name (entity or complex type, enum type, association)
    raise :class:`DuplicateDeclarationError`; with ``strict=False`` (``kg build --on-error warn``)
    the later one is left out with a warning naming file and line.
    """
    name = display or str(path)
    root = parse_xml(path, name).getroot()
    version, edmx_version, dsv = _detect_version(root, name)
    doc = ServiceDocument(name, Path(path), version, edmx_version, dsv, root.sourceline or 1, strict=strict)
    doc.name = service_name(Path(path))
    _collect_references(root, doc)
    for schema_el in _schemas(root, name):
        _collect_schema(schema_el, doc)
    return doc


def _detect_version(root: etree._Element, name: str) -> tuple[str, str, str]:
    ns, tag = namespace(root.tag), local(root.tag)
    if tag == "Edmx" and ns in EDMX_EF:
        raise NotODataError(
            f"this is an Entity Framework designer file (EDMX {EDMX_EF[ns]} with storage and mapping "
            f"models), not an OData service metadata document; expected edmx:Edmx in namespace "
            f"{EDMX_V1} (OData V2) or {EDMX_V4} (OData V4) with edmx:DataServices",
            name,
            root.sourceline,
        )
    if tag != "Edmx" or ns not in (EDMX_V1, EDMX_V4):
        raise NotODataError(
            f"root element is {{{ns}}}{tag}, so this is not an OData CSDL document; expected "
            f"edmx:Edmx in namespace {EDMX_V1} (OData V2) or {EDMX_V4} (OData V4)",
            name,
            root.sourceline,
        )
    ds = root.find(f"{{{ns}}}DataServices")
    if ds is None:
        raise NotODataError(
            "edmx:Edmx has no edmx:DataServices element, so it describes no OData service "
            f"(see {SPEC_V4}#sec_DataServices)",
            name,
            root.sourceline,
        )
    edmx_version = root.get("Version", "")
    if ns == EDMX_V1 and not edmx_version.startswith("4"):
        dsv = ds.get(f"{{{METADATA_NS}}}DataServiceVersion", "1.0")
        return ("3.0" if dsv.startswith("3") else "2.0"), edmx_version, dsv
    # EDMX 4.0 proper; or Version="4.0" in the EDMX 1.0 namespace with V4 content (SAP Cloud
    # SDK's v4 test service), whose DataServiceVersion is kept as written.
    return (edmx_version or "4.0"), edmx_version, ds.get(f"{{{METADATA_NS}}}DataServiceVersion", "")


def _schemas(root: etree._Element, name: str) -> list[etree._Element]:
    ds = root.find(f"{{{namespace(root.tag)}}}DataServices")
    schemas = [el for el in ds if local(el.tag) == "Schema"]
    bad = [el for el in schemas if namespace(el.tag) not in EDM_NAMESPACES]
    if bad:
        raise NotODataError(
            f"Schema in unknown CSDL namespace {namespace(bad[0].tag)!r}; expected one of "
            f"{', '.join(sorted(EDM_NAMESPACES))}",
            name,
            bad[0].sourceline,
        )
    return schemas


def _collect_references(root: etree._Element, doc: ServiceDocument) -> None:
    # SAP's V2 documents declare edmx:Reference/edmx:Include in the V4 EDMX namespace inside an
    # EDMX 1.0 root, so includes are looked up in both namespaces.
    for inc in root.iter(f"{{{EDMX_V1}}}Include", f"{{{EDMX_V4}}}Include"):
        ns, alias = inc.get("Namespace", ""), inc.get("Alias", "")
        doc.includes[ns] = alias
        if alias:
            doc.aliases[alias] = ns


def _collect_schema(el: etree._Element, doc: ServiceDocument) -> None:
    ns, alias = el.get("Namespace", ""), el.get("Alias", "")
    doc.schemas.append(Schema(ns, alias, el.sourceline))
    if alias:
        doc.aliases[alias] = ns
    for child in el:
        handler = _SCHEMA_CHILDREN.get(local(child.tag))
        if handler:
            handler(child, ns, doc)


def _bool(value: str | None, default: bool) -> bool:
    if value is None:
        return default
    return value.strip().lower() == "true"


def _int(value: str | None) -> int | None:
    if value is None or not value.strip().lstrip("-").isdigit():
        return None
    return int(value)


def _sap_attrs(el: etree._Element) -> dict[str, str]:
    prefix = f"{{{SAP_NS}}}"
    return {k[len(prefix) :]: v for k, v in el.attrib.items() if k.startswith(prefix)}


def _inline_annotations(el: etree._Element, doc: ServiceDocument) -> list[Annotation]:
    return [_annotation(a, doc) for a in el if local(a.tag) == "Annotation"]


def _property(el: etree._Element, doc: ServiceDocument) -> Property:
    return Property(
        name=el.get("Name", ""),
        type=el.get("Type", ""),
        line=el.sourceline,
        nullable=_bool(el.get("Nullable"), True),
        max_length=_int(el.get("MaxLength")),
        precision=_int(el.get("Precision")),
        scale=el.get("Scale"),
        default=el.get("DefaultValue"),
        sap=_sap_attrs(el),
        annotations=_inline_annotations(el, doc),
        concurrency_fixed=el.get("ConcurrencyMode") == "Fixed",
    )


def _navigation(el: etree._Element, doc: ServiceDocument) -> NavigationProperty:
    nav = NavigationProperty(
        name=el.get("Name", ""),
        line=el.sourceline,
        type=el.get("Type", ""),
        relationship=el.get("Relationship", ""),
        from_role=el.get("FromRole", ""),
        to_role=el.get("ToRole", ""),
        partner=el.get("Partner", ""),
        nullable=_bool(el.get("Nullable"), True),
        contains_target=_bool(el.get("ContainsTarget"), False),
        annotations=_inline_annotations(el, doc),
    )
    for rc in el:
        if local(rc.tag) == "ReferentialConstraint":
            nav.constraints.append(
                ReferentialConstraint(rc.get("Property", ""), rc.get("ReferencedProperty", ""), rc.sourceline)
            )
    return nav


def _structured(el: etree._Element, ns: str, doc: ServiceDocument) -> None:
    st = StructuredType(
        kind=local(el.tag),
        namespace=ns,
        name=el.get("Name", ""),
        line=el.sourceline,
        base_type=el.get("BaseType", ""),
        sap=_sap_attrs(el),
    )
    for child in el:
        tag = local(child.tag)
        if tag == "Key":
            st.key = [ref.get("Name", "") for ref in child if local(ref.tag) == "PropertyRef"]
        elif tag == "Property":
            st.properties.append(_property(child, doc))
        elif tag == "NavigationProperty":
            st.navigations.append(_navigation(child, doc))
        elif tag == "Annotation":
            st.annotations.append(_annotation(child, doc))
    for prop in st.properties:
        prop.is_key = prop.name in st.key
    _declare(doc, doc.types, st.qname, st, st.kind)


_D = TypeVar("_D", "StructuredType", "EnumType", "Association")


def _declare(doc: ServiceDocument, table: dict[str, _D], qname: str, item: _D, kind: str) -> None:
    """Add ``item`` under ``qname`` unless the name is taken: CSDL names are unique within a
    schema (CSDL 4.01 §5.1), and a second declaration would silently replace the first."""
    first = table.get(qname)
    if first is None:
        table[qname] = item
        return
    error = DuplicateDeclarationError(
        f"{kind} {qname!r} is already declared on line {first.line}; a qualified name is declared once "
        f"(see {SPEC_V4}#sec_Schema)",
        doc.file,
        item.line,
    )
    if doc.strict:
        raise error
    doc.warnings.append(f"{error}; the second {kind} is left out")


def _enum(el: etree._Element, ns: str, doc: ServiceDocument) -> None:
    enum = EnumType(ns, el.get("Name", ""), el.sourceline, annotations=_inline_annotations(el, doc))
    for i, member in enumerate(m for m in el if local(m.tag) == "Member"):
        enum.members.append((member.get("Name", ""), member.get("Value", str(i)), member.sourceline))
    _declare(doc, doc.enums, enum.qname, enum, "EnumType")


def _association(el: etree._Element, ns: str, doc: ServiceDocument) -> None:
    assoc = Association(f"{ns}.{el.get('Name', '')}", el.sourceline)
    for child in el:
        tag = local(child.tag)
        if tag == "End":
            end = AssociationEnd(child.get("Role", ""), child.get("Type", ""), child.get("Multiplicity", ""))
            assoc.ends[end.role] = end
        elif tag == "ReferentialConstraint":
            assoc.constraint = _association_constraint(child)
    _declare(doc, doc.associations, assoc.qname, assoc, "Association")


def _association_constraint(el: etree._Element) -> tuple[str, list[str], str, list[str]]:
    parts = {}
    for side in el:
        if local(side.tag) in ("Principal", "Dependent"):
            props = [r.get("Name", "") for r in side if local(r.tag) == "PropertyRef"]
            parts[local(side.tag)] = (side.get("Role", ""), props)
    principal = parts.get("Principal", ("", []))
    dependent = parts.get("Dependent", ("", []))
    return principal[0], principal[1], dependent[0], dependent[1]


def _container(el: etree._Element, ns: str, doc: ServiceDocument) -> None:
    container = EntityContainer(el.get("Name", ""), ns, el.sourceline)
    for child in el:
        tag = local(child.tag)
        if tag in ("EntitySet", "Singleton"):
            container.entity_sets.append(_entity_set(child, doc))
        elif tag == "AssociationSet":
            ends = {e.get("Role", ""): e.get("EntitySet", "") for e in child if local(e.tag) == "End"}
            container.association_sets.append((child.get("Association", ""), ends))
        elif tag == "FunctionImport" and not doc.version.startswith("4"):
            container.function_imports.append(_operation(child, container.qname, doc))
        elif tag in ("FunctionImport", "ActionImport"):
            container.operation_imports.append(_operation_import(child, doc))
    doc.containers.append(container)


def _parameter(el: etree._Element, doc: ServiceDocument) -> Parameter:
    return Parameter(
        name=el.get("Name", ""),
        type=el.get("Type", ""),
        line=el.sourceline,
        nullable=_bool(el.get("Nullable"), True),
        max_length=_int(el.get("MaxLength")),
        precision=_int(el.get("Precision")),
        scale=el.get("Scale"),
        mode=el.get("Mode", ""),
        sap=_sap_attrs(el),
        annotations=_inline_annotations(el, doc),
    )


def _operation(el: etree._Element, namespace: str, doc: ServiceDocument) -> Operation:
    """A V2 FunctionImport (``namespace`` is its container's) or a V4 Action / Function."""
    kind = local(el.tag)
    returns = [r for r in el if local(r.tag) == "ReturnType"]
    return Operation(
        kind=kind,
        namespace=namespace,
        name=el.get("Name", ""),
        line=el.sourceline,
        parameters=[_parameter(p, doc) for p in el if local(p.tag) == "Parameter"],
        return_type=returns[0].get("Type", "") if returns else el.get("ReturnType", ""),
        bound=_bool(el.get("IsBound"), False),
        composable=_bool(el.get("IsComposable"), False),
        entity_set=el.get("EntitySet", "") if kind == "FunctionImport" else "",
        entity_set_path=el.get("EntitySetPath", ""),
        http_method=el.get(f"{{{METADATA_NS}}}HttpMethod", "").upper(),
        sap=_sap_attrs(el),
        annotations=_inline_annotations(el, doc),
    )


def _schema_operation(el: etree._Element, ns: str, doc: ServiceDocument) -> None:
    doc.operations.append(_operation(el, ns, doc))


def _operation_import(el: etree._Element, doc: ServiceDocument) -> OperationImport:
    kind = local(el.tag)
    return OperationImport(
        kind=kind,
        name=el.get("Name", ""),
        operation=el.get("Action" if kind == "ActionImport" else "Function", ""),
        line=el.sourceline,
        entity_set=el.get("EntitySet", ""),
        annotations=_inline_annotations(el, doc),
    )


def _entity_set(el: etree._Element, doc: ServiceDocument) -> EntitySet:
    singleton = local(el.tag) == "Singleton"
    es = EntitySet(
        name=el.get("Name", ""),
        entity_type=el.get("Type" if singleton else "EntityType", ""),
        line=el.sourceline,
        singleton=singleton,
        sap=_sap_attrs(el),
        annotations=_inline_annotations(el, doc),
    )
    for b in el:
        if local(b.tag) == "NavigationPropertyBinding":
            es.bindings[b.get("Path", "")] = b.get("Target", "")
    return es


def _annotations_block(el: etree._Element, ns: str, doc: ServiceDocument) -> None:
    target = el.get("Target", "")
    qualifier = el.get("Qualifier", "")
    for a in el:
        if local(a.tag) == "Annotation":
            ann = _annotation(a, doc)
            ann.qualifier = ann.qualifier or qualifier
            doc.annotations.append((target, ann))


def _annotation(el: etree._Element, doc: ServiceDocument) -> Annotation:
    return Annotation(
        term=el.get("Term", ""),  # resolved against aliases in resolve(): aliases may come later
        qualifier=el.get("Qualifier", ""),
        value=_expression(el),
        line=el.sourceline,
        file=doc.file,
    )


def _expression(el: etree._Element) -> AnnotationValue:
    """An annotation value: constants as str, Record as dict, Collection as list (CSDL 14.4)."""
    for attr in _EXPR_ATTRS:
        if attr in el.attrib:
            return el.get(attr)
    for child in el:
        tag = local(child.tag)
        if tag == "Record":
            return _record(child)
        if tag == "Collection":
            return [_expression_item(c) for c in child if local(c.tag) != "Annotation"]
        if tag in _EXPR_ATTRS:
            return (child.text or "").strip()
    return True  # a tagging term such as Core.Computed without a value means true


def _expression_item(el: etree._Element) -> AnnotationValue:
    tag = local(el.tag)
    if tag == "Record":
        return _record(el)
    if tag == "Collection":
        return [_expression_item(c) for c in el]
    return (el.text or "").strip()


def _record(el: etree._Element) -> dict[str, AnnotationValue]:
    """A Record as a dict: property values by name; annotations of the record (CSDL 14.4.12,
    e.g. a label on a ``Validation.AllowedValues`` value) by ``@`` + term as written, which
    pass 2 replaces by the term's full name (:func:`processkg.sources.odata.edm.qualify_record_terms`)."""
    record: dict[str, AnnotationValue] = {"$Type": el.get("Type", ""), "$line": el.sourceline}
    for pv in el:
        tag = local(pv.tag)
        if tag == "PropertyValue":
            record[pv.get("Property", "")] = _expression(pv)
        elif tag == "Annotation":
            record["@" + pv.get("Term", "")] = _expression(pv)
    return record


_SCHEMA_CHILDREN = {
    "EntityType": _structured,
    "ComplexType": _structured,
    "EnumType": _enum,
    "Association": _association,
    "EntityContainer": _container,
    "Action": _schema_operation,
    "Function": _schema_operation,
    "Annotations": _annotations_block,
}
