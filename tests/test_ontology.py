"""The ontology (ontology/processkg.ttl) declares exactly the terms of processkg.vocab.

Every class and predicate the lifter can write is named in ``processkg.vocab``; these
tests check that the TTL declares each of them with the right OWL kind, a label, a
comment, and (for properties) a range whose classes are themselves declared, and
that the TTL declares nothing in the three namespaces that vocab.py does not name.
The checks are plain functions so that ``test_checks_detect_*`` can run them on a
deliberately broken copy of the graph and prove they fail when they should.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
import rdflib
from rdflib import OWL, RDF, RDFS, BNode, Literal, URIRef
from rdflib.collection import Collection

ROOT = Path(__file__).resolve().parents[1]
TTL = ROOT / "ontology" / "processkg.ttl"
DOCS = ROOT / "docs" / "ontology.md"

try:
    from processkg import vocab
except ImportError:  # package not installed: use the source tree
    sys.path.insert(0, str(ROOT / "src"))
    from processkg import vocab

NAMESPACES = (vocab.KG, vocab.BPMN, vocab.USES)
KINDS = (OWL.Class, OWL.ObjectProperty, OWL.DatatypeProperty)

# Properties that apply to nodes of (almost) any class and so have no rdfs:domain.
UNIVERSAL = {
    vocab.KG + "sourceFile",
    vocab.KG + "sourceLine",
    vocab.KG + "name",
    vocab.KG + "namespace",
    vocab.KG + "qualifiedName",
    vocab.KG + "label",
    vocab.KG + "description",
    vocab.BPMN + "documentation",
    vocab.BPMN + "elementId",
}

# Terms about provenance have no specification section to cite.
NO_SPEC = {vocab.KG + "sourceFile", vocab.KG + "sourceLine"}


def vocab_terms() -> list[str]:
    """Every term of the three namespaces, as IRI strings, from pyoxigraph NamedNodes."""
    return [node.value for ns in (vocab.KGT, vocab.BPMNT, vocab.USEST) for node in ns]


def in_namespaces(iri: str) -> bool:
    return any(iri.startswith(ns) for ns in NAMESPACES)


def expected_kind(iri: str) -> str:
    """Class names are capitalised in vocab.py, predicates are not."""
    local = re.split(r"[#/]", iri)[-1]
    return "class" if local[:1].isupper() else "property"


@pytest.fixture(scope="module")
def graph() -> rdflib.Graph:
    return rdflib.Graph().parse(TTL, format="turtle")


# ---------------------------------------------------------------- checks


def kinds_of(g: rdflib.Graph, iri: str) -> set:
    return {k for k in KINDS if (URIRef(iri), RDF.type, k) in g}


def declaration_problems(g: rdflib.Graph, terms: list[str]) -> list[str]:
    """Terms not declared as exactly one OWL kind matching their spelling, or missing text."""
    problems = []
    for iri in terms:
        kinds = kinds_of(g, iri)
        if len(kinds) != 1:
            problems.append(f"{iri}: declared as {sorted(map(str, kinds)) or 'nothing'}")
            continue
        kind = kinds.pop()
        if (kind == OWL.Class) != (expected_kind(iri) == "class"):
            problems.append(f"{iri}: declared {kind}, but the name says {expected_kind(iri)}")
        for pred in (RDFS.label, RDFS.comment):
            values = [o for o in g.objects(URIRef(iri), pred) if isinstance(o, Literal) and str(o).strip()]
            if not values:
                problems.append(f"{iri}: no {pred}")
    return problems


def class_members(g: rdflib.Graph, node) -> list | None:
    """The named classes a domain/range stands for: itself, or the members of an owl:unionOf."""
    if isinstance(node, URIRef):
        return [node]
    union = g.value(node, OWL.unionOf)
    if isinstance(node, BNode) and union is not None:
        return list(Collection(g, union))
    return None


def property_problems(g: rdflib.Graph, terms: list[str]) -> list[str]:
    """Properties without a proper range, or with a domain/range naming undeclared classes."""
    problems = []
    for iri in terms:
        s = URIRef(iri)
        kinds = kinds_of(g, iri)
        if OWL.Class in kinds or not kinds:
            continue
        ranges = list(g.objects(s, RDFS.range))
        if len(ranges) != 1:
            problems.append(f"{iri}: {len(ranges)} rdfs:range values, expected 1")
            continue
        rng = ranges[0]
        if OWL.DatatypeProperty in kinds:
            if not (isinstance(rng, URIRef) and (str(rng).startswith(vocab.XSD_NS) or rng == RDFS.Literal)):
                problems.append(f"{iri}: datatype property with non-datatype range {rng}")
        else:
            members = class_members(g, rng)
            if not members:
                problems.append(f"{iri}: object property range {rng} is not a class or union of classes")
            for cls in members or ():
                if (cls, RDF.type, OWL.Class) not in g:
                    problems.append(f"{iri}: range class {cls} is not declared")
        domains = list(g.objects(s, RDFS.domain))
        if not domains and iri not in UNIVERSAL:
            problems.append(f"{iri}: no rdfs:domain (add one, or list it in UNIVERSAL)")
        for dom in domains:
            members = class_members(g, dom)
            if not members:
                problems.append(f"{iri}: domain {dom} is not a class or union of classes")
            for cls in members or ():
                if cls != OWL.Thing and (cls, RDF.type, OWL.Class) not in g:
                    problems.append(f"{iri}: domain class {cls} is not declared")
    return problems


def stale_terms(g: rdflib.Graph, terms: list[str]) -> list[str]:
    """IRIs of the three namespaces used anywhere in the TTL but not named in vocab.py."""
    known = set(terms)
    used = {str(t) for triple in g for t in triple if isinstance(t, URIRef) and in_namespaces(str(t))}
    return sorted(used - known)


# ---------------------------------------------------------------- tests


def test_ttl_has_ontology_header(graph):
    onts = list(graph.subjects(RDF.type, OWL.Ontology))
    assert len(onts) == 1, onts
    for pred in (RDFS.label, RDFS.comment, OWL.versionInfo):
        assert graph.value(onts[0], pred) is not None, f"ontology header lacks {pred}"


def test_vocab_is_not_empty():
    terms = vocab_terms()
    assert len(terms) > 100
    assert all(in_namespaces(t) for t in terms)


@pytest.mark.parametrize("iri", vocab_terms())
def test_term_declared_with_label_and_comment(graph, iri):
    assert declaration_problems(graph, [iri]) == []


def test_every_property_has_range_and_declared_domain(graph):
    assert property_problems(graph, vocab_terms()) == []


def test_no_stale_declarations(graph):
    assert stale_terms(graph, vocab_terms()) == []


def test_comments_cite_a_specification(graph):
    missing = []
    for iri in vocab_terms():
        if iri in NO_SPEC or iri.startswith(vocab.USES):
            continue
        comment = " ".join(str(c) for c in graph.objects(URIRef(iri), RDFS.comment))
        if "https://" not in comment:
            missing.append(iri)
    assert missing == []


def test_reads_and_writes_are_subproperties_of_entity_set(graph):
    entity_set = URIRef(vocab.USES + "entitySet")
    for name in ("reads", "writes"):
        assert (URIRef(vocab.USES + name), RDFS.subPropertyOf, entity_set) in graph, name
    assert (entity_set, RDFS.range, URIRef(vocab.KG + "EntitySet")) in graph


def test_flow_node_classes_are_flow_elements(graph):
    flow_element = URIRef(vocab.BPMN + "FlowElement")
    for name in ("Activity", "Event", "Gateway"):
        assert (URIRef(vocab.BPMN + name), RDFS.subClassOf, flow_element) in graph, name
    assert (URIRef(vocab.KG + "Singleton"), RDFS.subClassOf, URIRef(vocab.KG + "EntitySet")) in graph


def test_next_links_activities_and_is_not_transitive(graph):
    nxt = URIRef(vocab.BPMN + "next")
    activity = URIRef(vocab.BPMN + "Activity")
    assert (nxt, RDF.type, OWL.ObjectProperty) in graph
    assert (nxt, RDFS.domain, activity) in graph
    assert (nxt, RDFS.range, activity) in graph
    assert (nxt, RDF.type, OWL.TransitiveProperty) not in graph


def test_docs_mention_every_term():
    text = DOCS.read_text(encoding="utf-8")
    prefix = {vocab.KG: "kg:", vocab.BPMN: "bpmn:", vocab.USES: "uses:"}
    missing = []
    for iri in vocab_terms():
        ns = next(n for n in NAMESPACES if iri.startswith(n))
        curie = prefix[ns] + iri[len(ns) :]
        if not re.search(re.escape(curie) + r"(?![A-Za-z0-9_])", text):
            missing.append(curie)
    assert missing == []


def test_docs_examples_parse_and_queries_answer(graph):
    """The worked Turtle example only uses declared terms, and both SPARQL examples return rows."""
    text = DOCS.read_text(encoding="utf-8")
    turtle = re.findall(r"```turtle\n(.*?)```", text, re.S)
    sparql = re.findall(r"```sparql\n(.*?)```", text, re.S)
    assert turtle and len(sparql) >= 2
    data = rdflib.Graph()
    for block in turtle:
        data.parse(data=block, format="turtle")
    assert stale_terms(data, vocab_terms()) == []
    for query in sparql:
        assert len(list(data.query(query))) > 0, query


# ---------------------------------------------------------------- the checks can fail


def _copy(g: rdflib.Graph) -> rdflib.Graph:
    out = rdflib.Graph()
    for triple in g:
        out.add(triple)
    return out


def test_checks_detect_a_missing_declaration(graph):
    broken = _copy(graph)
    iri = vocab.KG + "EntitySet"
    broken.remove((URIRef(iri), None, None))
    assert declaration_problems(broken, [iri])


def test_checks_detect_missing_label_wrong_kind_and_range(graph):
    broken = _copy(graph)
    label, next_, key = (URIRef(vocab.KG + "label"), URIRef(vocab.BPMN + "next"), URIRef(vocab.KG + "isKey"))
    broken.remove((label, RDFS.comment, None))
    broken.remove((next_, RDF.type, OWL.ObjectProperty))
    broken.add((next_, RDF.type, OWL.Class))
    broken.remove((key, RDFS.range, None))
    assert declaration_problems(broken, [str(label)])
    assert declaration_problems(broken, [str(next_)])
    assert property_problems(broken, [str(key)])


def test_checks_detect_a_stale_term(graph):
    broken = _copy(graph)
    broken.add((URIRef(vocab.KG + "noSuchTerm"), RDF.type, OWL.DatatypeProperty))
    assert stale_terms(broken, vocab_terms()) == [vocab.KG + "noSuchTerm"]
