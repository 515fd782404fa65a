"""``kg audit``: how faithfully the graph holds the structure of its source documents.

For each structural class (entity sets, entity types, properties, keys, navigation
properties by cardinality, value-list annotations, SAP's constraint annotations, operations and their parameters; processes,
participants, lanes,
activities, gateways, events, sequence and message flows) the audit counts items
twice and compares:

* **source**: plain lxml XPath over the XML files, sharing no code with the readers
  (``csdl``, ``edm``, ``bpmn`` are not imported here);
* **graph**: SPARQL over the store (``queries/audit-odata.rq``, ``queries/audit-bpmn.rq``),
  per ``kg:sourceFile``.

The unit of comparison is a *service* (its metadata document plus the annotations-only
documents the graph merged into it: their items carry the service's ``kg:sourceFile``)
or a BPMN file. Per class, **coverage** is the share of source items present in the
graph, ``sum(min(graph, source)) / sum(source)`` over units (1.0 when the source has
none), and **exactness** the share of units whose two counts agree, among units where
either count is non-zero (1.0 when there are none). Files the build skipped, and files
no graph node names as its ``kg:sourceFile``, are reported as skipped with the reason;
their items are counted apart (``skipped``), never as mismatches. Elements a reader left
out of a file it read, with a warning (a BPMN flow whose reference dangles; ``build.json``
lists them as ``dropped``), are counted apart too (``dropped``): the graph is compared with
the source count less those.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TypeAlias

from lxml import etree

from processkg.aliases import JSONObject
from processkg.graph.handle import StoreHandle
from processkg.graph.stats import table
from processkg.graph.store import StoreGraph, records
from processkg.sources.discover import BPMN_SUFFIXES, ODATA_SUFFIXES, discover

Counts: TypeAlias = dict[str, int]
"""Class name -> number of instances, in one file or one unit."""

# ---------------------------------------------------------------- the classes audited

ODATA_CLASSES = (
    "EntitySet",
    "Singleton",
    "EntityType",
    "Property",
    "Key",
    "NavigationProperty to-one",
    "NavigationProperty to-many",
    "sap:value-list",
    "Common.ValueList",
    "Common.ValueListWithFixedValues",
    "Common.FieldControl",
    "field control path",
    "Core.Computed",
    "Core.Immutable",
    "sap:required-in-filter",
    "InsertRestrictions.RequiredProperties",
    "InsertRestrictions.NonInsertableNavigationProperties",
    "UpdateRestrictions.NonUpdatableProperties",
    "FilterRestrictions.RequiredProperties",
    "FilterRestrictions.NonFilterableProperties",
    "EntitySet not insertable",
    "EntitySet not updatable",
    "EntitySet not deletable",
    "V2 FunctionImport",
    "Action",
    "Function",
    "ActionImport",
    "V4 FunctionImport",
    "Parameter",
    "sap:value-list (parameter)",
)
#: Parameters of operations: of V2 function imports (no Function attribute), V4 actions and functions.
OPERATION_PARAMETERS = (
    "e:EntityContainer/e:FunctionImport[not(@Function)]/e:Parameter | e:Action/e:Parameter | e:Function/e:Parameter"
)
TASKS = ("task", "userTask", "serviceTask", "sendTask", "receiveTask", "manualTask", "businessRuleTask", "scriptTask")
SUBPROCESSES = ("subProcess", "adHocSubProcess", "transaction")
BPMN_CLASSES = (
    "Process",
    "Participant",
    "Lane",
    "Activity",
    "Task",
    "SubProcess",
    "CallActivity",
    "Gateway",
    "Event",
    "SequenceFlow",
    "MessageFlow",
)
CLASSES = ODATA_CLASSES + BPMN_CLASSES


# ---------------------------------------------------------------- namespaces (own copies)

#: CSDL schema namespaces: V1-V3 (``schemas.microsoft.com``) and V4 (OASIS). The Entity
#: Framework storage model (``.../edm/ssdl``) is deliberately not among them.
CSDL_NS = (
    "http://schemas.microsoft.com/ado/2006/04/edm",
    "http://schemas.microsoft.com/ado/2007/05/edm",
    "http://schemas.microsoft.com/ado/2008/01/edm",
    "http://schemas.microsoft.com/ado/2008/09/edm",
    "http://schemas.microsoft.com/ado/2009/11/edm",
    "http://docs.oasis-open.org/odata/ns/edm",
)
EDMX_NS = (
    "http://schemas.microsoft.com/ado/2007/06/edmx",
    "http://docs.oasis-open.org/odata/ns/edmx",
)
SAP_NS = "http://www.sap.com/Protocols/SAPData"
COMMON_VOCAB = "com.sap.vocabularies.Common.v1"
CORE_VOCAB = "Org.OData.Core.V1"
CAPABILITIES_VOCAB = "Org.OData.Capabilities.V1"
#: SAP's own aliases of the standard vocabularies, and the usual ``Core``; seven A2X V2 documents
#: use ``SAP__core`` or ``Core`` without declaring it, so these count unless the document declares
#: the alias otherwise.
SAP_ALIASES = {
    "Core": CORE_VOCAB,
    "SAP__core": CORE_VOCAB,
    "SAP__common": COMMON_VOCAB,
    "SAP__capabilities": CAPABILITIES_VOCAB,
}
BPMN_MODEL = "http://www.omg.org/spec/BPMN/20100524/MODEL"

_ANNOTATION_TERMS = {"ValueList": "Common.ValueList", "ValueListWithFixedValues": "Common.ValueListWithFixedValues"}


def _parser() -> etree.XMLParser:
    return etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False)


def _root(path: Path) -> etree._Element:
    return etree.parse(str(path), _parser()).getroot()


def _count(node: etree._Element, xpath: str, ns: dict[str, str]) -> int:
    return int(node.xpath(f"count({xpath})", namespaces=ns))


# ---------------------------------------------------------------- source counts: OData


def odata_source_counts(path: Path) -> Counts:
    """Counts of the OData classes in one CSDL document, by XPath only."""
    root = _root(path)
    counts = Counter({name: 0 for name in ODATA_CLASSES})
    multiplicity = _association_ends(root)
    for uri in CSDL_NS:
        ns = {"e": uri, "sap": SAP_NS}
        for schema in root.xpath("//e:Schema", namespaces=ns):
            _count_schema(schema, ns, multiplicity, counts)
    _count_annotations(root, counts)
    _count_sap_markers(root, counts)
    return dict(counts)


def _count_schema(
    schema: etree._Element, ns: dict[str, str], multiplicity: dict[tuple[str, str], str], counts: Counter[str]
) -> None:
    counts["EntitySet"] += _count(schema, "e:EntityContainer/e:EntitySet", ns)
    counts["Singleton"] += _count(schema, "e:EntityContainer/e:Singleton", ns)
    counts["EntityType"] += _count(schema, "e:EntityType", ns)
    counts["Property"] += _count(schema, "e:EntityType/e:Property", ns)
    counts["Key"] += _count(schema, "e:EntityType/e:Key/e:PropertyRef", ns)
    counts["sap:value-list"] += _count(schema, "e:EntityType/e:Property[@sap:value-list]", ns)
    _count_operations(schema, ns, counts)
    for nav in schema.xpath("e:EntityType/e:NavigationProperty", namespaces=ns):
        many = _nav_is_many(nav, multiplicity)
        if many is not None:
            counts["NavigationProperty to-many" if many else "NavigationProperty to-one"] += 1


def _count_operations(schema: etree._Element, ns: dict[str, str], counts: Counter[str]) -> None:
    """V2 FunctionImports (no ``Function`` attribute), V4 actions, functions and their imports, the
    parameters of every operation and those with ``sap:value-list``."""
    counts["V2 FunctionImport"] += _count(schema, "e:EntityContainer/e:FunctionImport[not(@Function)]", ns)
    counts["V4 FunctionImport"] += _count(schema, "e:EntityContainer/e:FunctionImport[@Function]", ns)
    counts["ActionImport"] += _count(schema, "e:EntityContainer/e:ActionImport", ns)
    counts["Action"] += _count(schema, "e:Action", ns)
    counts["Function"] += _count(schema, "e:Function", ns)
    params = schema.xpath(OPERATION_PARAMETERS, namespaces=ns)
    counts["Parameter"] += len(params)
    counts["sap:value-list (parameter)"] += sum(1 for p in params if p.get(f"{{{SAP_NS}}}value-list") is not None)


def _association_ends(root: etree._Element) -> dict[tuple[str, str], str]:
    """``{(association name, role): multiplicity}``, the name both namespace- and alias-qualified."""
    ends = {}
    for uri in CSDL_NS:
        ns = {"e": uri}
        for schema in root.xpath("//e:Schema", namespaces=ns):
            prefixes = [p for p in (schema.get("Namespace"), schema.get("Alias")) if p]
            for end in schema.xpath("e:Association/e:End", namespaces=ns):
                name = end.getparent().get("Name", "")
                for prefix in prefixes:
                    ends[(f"{prefix}.{name}", end.get("Role", ""))] = end.get("Multiplicity", "")
    return ends


def _nav_is_many(nav: etree._Element, multiplicity: dict[tuple[str, str], str]) -> bool | None:
    """V4: ``Type="Collection(...)"``; V2: the ``Multiplicity`` of the association end ``ToRole``."""
    if nav.get("Relationship") is None:
        return nav.get("Type", "").startswith("Collection(")
    found = multiplicity.get((nav.get("Relationship"), nav.get("ToRole", "")))
    return None if found is None else found == "*"


def _vocabulary_aliases(root: etree._Element) -> dict[str, str]:
    """Term prefix -> namespace, from ``edmx:Include`` and ``Schema`` aliases."""
    aliases = {}
    for uri in EDMX_NS:
        for inc in root.xpath("//x:Include[@Alias]", namespaces={"x": uri}):
            aliases[inc.get("Alias")] = inc.get("Namespace", "")
    for uri in CSDL_NS:
        for schema in root.xpath("//e:Schema[@Alias]", namespaces={"e": uri}):
            aliases[schema.get("Alias")] = schema.get("Namespace", "")
    return aliases


def _count_annotations(root: etree._Element, counts: Counter[str]) -> None:
    """``Annotation`` elements (inline or in ``Annotations`` blocks) whose term is a value-list term."""
    aliases = _vocabulary_aliases(root)
    for uri in CSDL_NS:
        for ann in root.xpath("//e:Annotation[@Term]", namespaces={"e": uri}):
            prefix, _, name = ann.get("Term").rpartition(".")
            if name in _ANNOTATION_TERMS and aliases.get(prefix, prefix) == COMMON_VOCAB:
                counts[_ANNOTATION_TERMS[name]] += 1


# ---------------------------------------------------------------- source counts: SAP's markers

#: Capabilities term -> {list field: audit class}: the paths a restriction of an entity set names.
_RESTRICTION_LISTS = {
    "InsertRestrictions": {
        "RequiredProperties": "InsertRestrictions.RequiredProperties",
        "NonInsertableNavigationProperties": "InsertRestrictions.NonInsertableNavigationProperties",
    },
    "UpdateRestrictions": {"NonUpdatableProperties": "UpdateRestrictions.NonUpdatableProperties"},
    "FilterRestrictions": {
        "RequiredProperties": "FilterRestrictions.RequiredProperties",
        "NonFilterableProperties": "FilterRestrictions.NonFilterableProperties",
    },
}
#: Capabilities term -> (Bool field, sap: attribute of EntitySet, audit class) of a denied set.
_DENIALS = {
    "InsertRestrictions": ("Insertable", "creatable", "EntitySet not insertable"),
    "UpdateRestrictions": ("Updatable", "updatable", "EntitySet not updatable"),
    "DeleteRestrictions": ("Deletable", "deletable", "EntitySet not deletable"),
}


def _count_sap_markers(root: etree._Element, counts: Counter[str]) -> None:
    """SAP's constraint annotations: on properties (FieldControl, Computed, Immutable, the
    sap:field-control and sap:required-in-filter attributes) and on entity sets (the paths that
    Capabilities restrictions name, and sets that do not allow insert, update or delete)."""
    aliases = {**SAP_ALIASES, **_vocabulary_aliases(root)}
    denied: dict[str, set[str]] = {cls: set() for _f, _a, cls in _DENIALS.values()}
    listed: dict[tuple[str, str], list[str]] = defaultdict(list)  # (class, Container/Set) -> paths
    declared: set[str] = set()
    for uri in CSDL_NS:
        ns = {"e": uri, "sap": SAP_NS}
        counts["field control path"] += _count(root, "//e:Property[@sap:field-control]", ns)
        counts["sap:required-in-filter"] += _count(root, "//e:Property[@sap:required-in-filter='true']", ns)
        for ann in root.xpath("//e:Annotation[@Term]", namespaces=ns):
            prefix, _, name = ann.get("Term").rpartition(".")
            vocabulary = aliases.get(prefix, prefix)
            if vocabulary in (CORE_VOCAB, COMMON_VOCAB) and _on_property(ann):
                _count_property_marker(ann, f"{vocabulary}.{name}", ns, counts)
            elif vocabulary == CAPABILITIES_VOCAB and name in _RESTRICTION_LISTS | _DENIALS:
                _count_restriction(ann, name, ns, listed, denied)
        declared |= _denied_by_attribute(root, ns, denied)
    members = _set_members(root)
    for (cls, target), paths in listed.items():
        counts[cls] += sum(1 for path in paths if path in members.get(target, ()))
    for cls, sets in denied.items():
        counts[cls] += len(sets & declared)  # EntitySets declared in this file, singletons left out


def _on_property(ann: etree._Element) -> bool:
    """Inline in a Property, or in an Annotations element whose Target is Type/Property (one '/',
    no parenthesis: ``Action(BindingType)/Parameter`` is an operation's parameter)."""
    parent = ann.getparent()
    if etree.QName(parent).localname == "Property":
        return True
    target = parent.get("Target", "")
    return etree.QName(parent).localname == "Annotations" and target.count("/") == 1 and "(" not in target


def _count_property_marker(ann: etree._Element, term: str, ns: dict[str, str], counts: Counter[str]) -> None:
    if term in (f"{CORE_VOCAB}.Computed", f"{CORE_VOCAB}.Immutable") and ann.get("Bool") != "false":
        counts["Core." + term.rpartition(".")[2]] += 1
    elif term == f"{COMMON_VOCAB}.FieldControl":
        path = ann.get("Path") is not None or bool(ann.xpath("e:Path", namespaces=ns))
        counts["field control path" if path else "Common.FieldControl"] += 1


def _count_restriction(
    ann: etree._Element,
    term: str,
    ns: dict[str, str],
    listed: dict[tuple[str, str], list[str]],
    denied: dict[str, set[str]],
) -> None:
    for field, cls in _RESTRICTION_LISTS.get(term, {}).items():
        paths = ann.xpath(f"e:Record/e:PropertyValue[@Property='{field}']/e:Collection/*", namespaces=ns)
        listed[(cls, _set_target(ann))].extend((path.text or "").strip() for path in paths)
    if term in _DENIALS:
        field, _attr, cls = _DENIALS[term]
        if _count(ann, f"e:Record/e:PropertyValue[@Property='{field}'][@Bool='false']", ns):
            denied[cls].add(_set_target(ann))


def _set_target(ann: etree._Element) -> str:
    """``Container/Set`` of the entity set an annotation is on (inline, or by Target without its prefix)."""
    parent = ann.getparent()
    if etree.QName(parent).localname == "Annotations":
        first, _, rest = parent.get("Target", "").partition("/")
        return f"{first.rpartition('.')[2]}/{rest}"
    return f"{parent.getparent().get('Name', '')}/{parent.get('Name', '')}"


def _set_members(root: etree._Element) -> dict[str, set[str]]:
    """``{Container/Set: names of the properties and navigation properties its entity type declares}``
    for the entity sets and singletons of the document (types matched by their unqualified name)."""
    declared: dict[str, set[str]] = defaultdict(set)
    for uri in CSDL_NS:
        ns = {"e": uri}
        for et in root.xpath("//e:EntityType", namespaces=ns):
            names = et.xpath("e:Property/@Name|e:NavigationProperty/@Name", namespaces=ns)
            declared[et.get("Name", "")] |= {str(name) for name in names}
    members = {}
    for uri in CSDL_NS:
        for es in root.xpath("//e:EntityContainer/e:EntitySet|//e:EntityContainer/e:Singleton", namespaces={"e": uri}):
            type_name = (es.get("EntityType") or es.get("Type") or "").rpartition(".")[2]
            members[f"{es.getparent().get('Name', '')}/{es.get('Name', '')}"] = declared.get(type_name, set())
    return members


def _denied_by_attribute(root: etree._Element, ns: dict[str, str], denied: dict[str, set[str]]) -> set[str]:
    """Add the sets a sap:creatable / updatable / deletable="false" denies; return every declared set."""
    declared = set()
    for es in root.xpath("//e:EntityContainer/e:EntitySet", namespaces=ns):
        name = f"{es.getparent().get('Name', '')}/{es.get('Name', '')}"
        declared.add(name)
        for _field, attr, cls in _DENIALS.values():
            if es.get(f"{{{SAP_NS}}}{attr}") == "false":
                denied[cls].add(name)
    return declared


# ---------------------------------------------------------------- source counts: BPMN


def bpmn_source_counts(path: Path) -> Counts:
    """Counts of the BPMN classes in one file: elements of the BPMN 2.0 model namespace only."""
    root = _root(path)
    ns = {"b": BPMN_MODEL}

    def tags(names: Iterable[str]) -> int:
        return sum(_count(root, f"//b:{name}", ns) for name in names)

    counts = {
        "Process": tags(["process"]),
        "Participant": tags(["participant"]),
        "Lane": tags(["lane"]),
        "Task": tags(TASKS),
        "SubProcess": tags(SUBPROCESSES),
        "CallActivity": tags(["callActivity"]),
        "Gateway": _count(root, "//b:*[substring(local-name(), string-length(local-name()) - 6) = 'Gateway']", ns),
        "Event": _count(root, "//b:*[substring(local-name(), string-length(local-name()) - 4) = 'Event']", ns),
        "SequenceFlow": tags(["sequenceFlow"]),
        "MessageFlow": tags(["messageFlow"]),
    }
    counts["Activity"] = counts["Task"] + counts["SubProcess"] + counts["CallActivity"]
    return counts


# ---------------------------------------------------------------- inputs


def _source_counts(files: list[tuple[Path, str]], counter: Callable[[Path], dict[str, int]]) -> dict[str, Counts | str]:
    """{display: counts or an error message (str) when the XML is unreadable}."""
    out: dict[str, Counts | str] = {}
    for path, display in files:
        try:
            out[display] = counter(path)
        except (OSError, etree.XMLSyntaxError) as exc:
            out[display] = f"unreadable XML: {exc}"
    return out


# ---------------------------------------------------------------- graph counts


def graph_counts(store: StoreGraph) -> dict[str, Counter[str]]:
    """{source file: {class: count}} from the audit queries."""
    counts: dict[str, Counter[str]] = defaultdict(Counter)
    for name in ("audit-odata", "audit-bpmn"):
        for r in records(store, name):
            counts[r["file"]][r["class"]] += r["count"]
    for per_file in counts.values():
        per_file["Activity"] = per_file["Task"] + per_file["SubProcess"] + per_file["CallActivity"]
    return counts


def graph_units(store: StoreGraph) -> dict[str, str]:
    """{source file: unit}: a BPMN file is its own unit; an OData file belongs to its service's file."""
    return {r["file"]: r["unit"] for r in records(store, "audit-files")}


# ---------------------------------------------------------------- the audit


def _open(store: StoreHandle | StoreGraph) -> tuple[StoreGraph, JSONObject]:
    if isinstance(store, StoreHandle):
        return store.graph, store.meta
    return store, {}


def audit(
    store: StoreHandle | StoreGraph, odata_paths: list[Path] | None = None, bpmn_paths: list[Path] | None = None
) -> JSONObject:
    """Audit the graph in ``store`` against the OData and BPMN files it was built from.

    ``store`` is a store's handle (then its build's ``build.json`` gives the reason each skipped
    file was skipped) or a graph alone (then a file is skipped when no graph node has it
    as ``kg:sourceFile``). Returns ``{"classes": [...], "files": [...], "graph_only": [...],
    "dropped": [[file, tag, id, line], ...]}``.
    """
    graph, meta = _open(store)
    odata = discover(odata_paths or [], ODATA_SUFFIXES)
    bpmn = discover(bpmn_paths or [], BPMN_SUFFIXES)
    source = {**_source_counts(odata, odata_source_counts), **_source_counts(bpmn, bpmn_source_counts)}
    skipped = {file: reason for file, reason in meta.get("skipped", [])}
    dropped: dict[str, Counter[str]] = defaultdict(Counter)
    for file, tag, _id, _line in meta.get("dropped", []):
        for cls in _bpmn_classes(tag):
            dropped[file][cls] += 1
    units = graph_units(graph)
    files = _file_rows(source, skipped, units, graph_counts(graph), dropped)
    audited = {f for row in files for f in row.get("members", [row["file"]])}
    return {
        "classes": _class_rows(files),
        "files": files,
        "graph_only": sorted(set(units) - audited),
        "dropped": sorted(
            (list(d) for d in meta.get("dropped", []) if d[0] in audited), key=lambda d: (d[0], d[3] or 0, d[2])
        ),
    }


def _bpmn_classes(tag: str) -> list[str]:
    """The audit classes a BPMN element of this tag counts in (own copy, no reader imported)."""
    kind = (
        "Task"
        if tag in TASKS
        else "SubProcess"
        if tag in SUBPROCESSES
        else "CallActivity"
        if tag == "callActivity"
        else ""
    )
    if kind:
        return [kind, "Activity"]
    if tag.endswith("Gateway"):
        return ["Gateway"]
    if tag.endswith("Event"):
        return ["Event"]
    return [
        {
            "sequenceFlow": "SequenceFlow",
            "messageFlow": "MessageFlow",
            "process": "Process",
            "participant": "Participant",
            "lane": "Lane",
        }.get(tag, tag)
    ]


def _file_rows(
    source: dict[str, Counts | str],
    skipped: dict[str, str],
    units: dict[str, str],
    graph: Mapping[str, Counts],
    dropped: Mapping[str, Counts],
) -> list[JSONObject]:
    """One row per unit compared, and one per file skipped; sorted by file."""
    rows, members = [], defaultdict(list)
    for file, counts in sorted(source.items()):
        if isinstance(counts, str) or file in skipped or file not in units:
            rows.append(_skipped_row(file, counts, skipped))
        else:
            members[units[file]].append(file)
    for unit, files in sorted(members.items()):
        src: Counter[str] = Counter()
        for f in files:
            src.update(source[f])
        gone: Counter[str] = Counter()
        for f in files:
            gone.update(dropped.get(f, {}))
        rows.append(_unit_row(unit, files, src, graph.get(unit, {}), gone))
    return sorted(rows, key=lambda r: r["file"])


def _skipped_row(file: str, counts: Counts | str, skipped: dict[str, str]) -> JSONObject:
    if isinstance(counts, str):
        reason, counts = counts, {}
    else:
        reason = skipped.get(file) or "not in the graph: no node has this kg:sourceFile"
    return {"file": file, "status": "skipped", "reason": reason, "source": dict(counts), "graph": {}}


def _unit_row(unit: str, files: list[str], src: Counter[str], graph: Counts, gone: Counter[str]) -> JSONObject:
    classes = [c for c in CLASSES if c in src]
    source = {c: src[c] for c in classes}
    got = {c: graph.get(c, 0) for c in classes}
    dropped = {c: gone[c] for c in classes if gone[c]}
    return {
        "file": unit,
        "status": "ok",
        "members": files,
        "source": source,
        "graph": got,
        "dropped": dropped,
        "mismatches": [c for c in classes if source[c] - dropped.get(c, 0) != got[c]],
    }


def _class_rows(files: list[JSONObject]) -> list[JSONObject]:
    ok = [r for r in files if r["status"] == "ok"]
    rows = []
    for cls in CLASSES:
        if not any(cls in r["source"] for r in files):
            continue  # no file of this class's kind (OData or BPMN) was audited
        present = [r for r in ok if cls in r["source"]]
        skipped = sum(r["source"].get(cls, 0) for r in files if r["status"] == "skipped")
        expected = {r["file"]: r["source"][cls] - r["dropped"].get(cls, 0) for r in present}
        source = sum(r["source"][cls] for r in present)
        found = sum(min(expected[r["file"]], r["graph"][cls]) for r in present)
        relevant = [r for r in present if expected[r["file"]] or r["graph"][cls]]
        agree = sum(1 for r in relevant if expected[r["file"]] == r["graph"][cls])
        rows.append(
            {
                "class": cls,
                "source": source,
                "graph": sum(r["graph"][cls] for r in present),
                "coverage": found / sum(expected.values()) if sum(expected.values()) else 1.0,
                "exact": agree / len(relevant) if relevant else 1.0,
                "units": len(relevant),
                "skipped": skipped,
                "dropped": sum(r["dropped"].get(cls, 0) for r in present),
            }
        )
    return rows


# ---------------------------------------------------------------- rendering


def render_audit(result: JSONObject) -> str:
    """The class table, then the skipped files and the units whose counts differ."""
    show_skipped = any(r["skipped"] for r in result["classes"])
    show_dropped = any(r.get("dropped") for r in result["classes"])
    names = (
        ["class", "source", "graph", "coverage", "exactness"]
        + (["in skipped files"] if show_skipped else [])
        + (["left out by reader"] if show_dropped else [])
    )
    rows = [
        [r["class"], r["source"], r["graph"], f"{r['coverage']:.3f}", f"{r['exact']:.3f}"]
        + ([r["skipped"]] if show_skipped else [])
        + ([r.get("dropped", 0)] if show_dropped else [])
        for r in result["classes"]
    ]
    parts = [table(names, rows)]
    compared = [r for r in result["files"] if r["status"] == "ok"]
    parts.append(f"{len(compared)} unit(s) compared ({sum(len(r['members']) for r in compared)} file(s))")
    skipped = [r for r in result["files"] if r["status"] == "skipped"]
    if skipped:
        parts.append(f"skipped {len(skipped)} file(s), not counted above:")
        parts.extend(f"  {_located(r['file'], r['reason'])}" for r in skipped)
    if result.get("dropped"):
        parts.append(f"left out by the reader with a warning ({len(result['dropped'])}), not counted above:")
        parts.extend(f"  {file}:{line}: {tag} {element_id!r}" for file, tag, element_id, line in result["dropped"])
    for r in compared:
        for cls in r["mismatches"]:
            parts.append(f"differs: {r['file']}: {cls}: source {r['source'][cls]}, graph {r['graph'][cls]}")
    if result.get("graph_only"):
        parts.append(
            f"{len(result['graph_only'])} file(s) in the graph were not audited (give their paths with --odata/--bpmn)"
        )
    return "\n".join(parts)


def _located(file: str, reason: str) -> str:
    """The reason prefixed with its file, unless the reason already begins with it (``file:line: ...``)."""
    return reason if reason.startswith(f"{file}:") else f"{file}: {reason}"


__all__ = ["CLASSES", "audit", "bpmn_source_counts", "graph_counts", "odata_source_counts", "render_audit"]
