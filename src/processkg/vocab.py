"""The processkg vocabulary as pyoxigraph terms.

Every class and predicate the lifter writes is named here, and declared with
labels, comments, domains and ranges in ``ontology/processkg.ttl``; a test checks
that the two agree, so the ontology cannot drift from what the graph contains.

Three namespaces:

* ``kg:``   OData CSDL structure and provenance
  (OData CSDL XML 4.01, https://docs.oasis-open.org/odata/odata-csdl-xml/v4.01/);
* ``bpmn:`` BPMN 2.0 process structure (https://www.omg.org/spec/BPMN/2.0.2/);
* ``uses:`` the activity-to-entity-set mapping that links the two.
"""

from __future__ import annotations

from collections.abc import Iterator

from pyoxigraph import NamedNode

KG = "https://w3id.org/processkg/ontology#"
BPMN = "https://w3id.org/processkg/bpmn#"
USES = "https://w3id.org/processkg/uses#"
ID = "https://w3id.org/processkg/id/"
RDF_NS = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"
RDFS_NS = "http://www.w3.org/2000/01/rdf-schema#"
XSD_NS = "http://www.w3.org/2001/XMLSchema#"
OWL_NS = "http://www.w3.org/2002/07/owl#"
SH_NS = "http://www.w3.org/ns/shacl#"

PREFIXES = {
    "kg": KG,
    "bpmn": BPMN,
    "uses": USES,
    "id": ID,
    "rdf": RDF_NS,
    "rdfs": RDFS_NS,
    "xsd": XSD_NS,
    "owl": OWL_NS,
}

RDF_TYPE = NamedNode(RDF_NS + "type")
RDFS_LABEL = NamedNode(RDFS_NS + "label")
RDFS_COMMENT = NamedNode(RDFS_NS + "comment")
XSD_BOOLEAN = NamedNode(XSD_NS + "boolean")
XSD_INTEGER = NamedNode(XSD_NS + "integer")
XSD_STRING = XSD_NS + "string"
RDF_JSON = RDF_NS + "JSON"


class _Namespace:
    """Attribute access to the terms of one namespace: ``KGT.EntitySet``."""

    def __init__(self, base: str, names: str) -> None:
        self._base = base
        self._names = frozenset(names.split())
        for name in self._names:
            setattr(self, name, NamedNode(base + name))

    def __iter__(self) -> Iterator[NamedNode]:
        return (NamedNode(self._base + n) for n in sorted(self._names))

    def __getattr__(self, name: str) -> NamedNode:  # only for unknown names
        raise AttributeError(f"{name!r} is not a term of {self._base}; add it to vocab.py and the ontology")


# OData CSDL: classes, then object properties, then datatype properties.
KGT = _Namespace(
    KG,
    """
    Service Schema EntityContainer EntitySet Singleton EntityType ComplexType EnumType EnumMember
    Property NavigationProperty ReferentialConstraint ValueList ValueListParameter Code
    sourceFile sourceLine name namespace qualifiedName label description
    odataVersion edmxVersion dataServiceVersion serviceName
    schema entityContainer entitySet singleton entityType complexType enumType member
    property propertyPosition navigationProperty keyProperty keyPosition baseType
    isKey edmType isCollection nullable maxLength precision scale defaultValue
    creatable updatable deletable filterable sortable addressable computed immutable
    fieldControl fieldControlPath requiredInFilter requiresFilter updatablePath deletablePath
    filterRequiredProperty nonFilterableProperty insertRequiredProperty nonInsertableNavigation nonUpdatableProperty
    concurrencyToken optimisticConcurrency
    RequiredOnCreate requiredOnCreate requiredProperty requirementSource requirementNote
    semantics unitProperty textProperty
    targetEntityType targetEntitySet cardinality partner containsTarget relationship
    fromRole toRole referentialConstraint localProperty referencedProperty
    valueList valueListProperty sapValueList collectionPath valueListEntitySet parameter
    parameterKind localDataProperty valueListPropertyName parameterOrder constant
    fixedValues valueListReference annotationTerm qualifier searchSupported
    code codeValue codeSource memberValue
    ServiceOperation V2FunctionImport V4Action V4Function OperationImport V4ActionImport V4FunctionImport
    OperationParameter serviceOperation operationImport importedOperation serviceOperationParameter
    actionFor bindingType returnEntitySet isBound boundToCollection isBindingParameter returnType
    entitySetPath applicablePath optionalParameter
    InferredFlow inferredNext flowFrom flowTo carrierProperty carriedKey
    MinedFlow minedNext minedFrom minedTo followCount caseCount
    DocumentFlow FlowKey documentNext flowPredecessor flowFollowOn flowKey keyCarrier keyCarried
    predecessorRequired appliesWhenProperty appliesWhenValue preconditionProperty preconditionValue
    quantityProperty quantityLimit flowProcess flowProcessId predecessorStep followOnStep flowSource flowNote
    Operation operation operationParameter httpMethod path operationId parameterLocation required
    schemaFormat openapiVersion serverUrl tag mediaType
    """,
)

# BPMN 2.0: classes, then predicates.
BPMNT = _Namespace(
    BPMN,
    """
    Definitions Collaboration Participant Lane Process FlowElement Activity Event Gateway
    SequenceFlow MessageFlow EventDefinition
    definitions process participant lane laneOf flowElement subProcessOf calledElement
    elementId kind eventKind gatewayKind eventDefinition documentation conditionExpression
    sourceRef targetRef isDefault next attachedTo exporter isExecutable messageFlow
    """,
)

# The mapping that links process to data.
USEST = _Namespace(
    USES,
    """
    Usage entitySet reads writes mode activity usage
    """,
)
