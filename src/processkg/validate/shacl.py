"""Running pySHACL: the one place where pyoxigraph terms become rdflib terms.

pySHACL validates rdflib graphs (it accepts a pyoxigraph store too, but term-by-term
lookups across the binding make that ~100x slower), so shapes and graph data are
converted here, once. :class:`ShaclEngine` keeps the parsed shapes between runs, so
validating one call costs only the shapes that the call's data graph can reach.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator, Sequence
from functools import lru_cache

from pyoxigraph import BlankNode, Literal, NamedNode, Quad, Triple
from pyshacl import Validator as _PyShacl
from pyshacl import shape as pyshacl_shape
from pyshacl.constraints import ALL_CONSTRAINT_PARAMETERS, CONSTRAINT_PARAMETERS_MAP
from pyshacl.constraints.constraint_component import ConstraintComponent
from pyshacl.graph_abstraction import DataGraph
from pyshacl.shape import Shape
from pyshacl.shapes_graph import ShapesGraph
from rdflib import RDF, BNode, Graph, Namespace, URIRef
from rdflib import Literal as RLiteral
from rdflib.term import Node

from processkg.aliases import Term
from processkg.validate.shacl_core import CompiledShapes, Result
from processkg.vocab import SH_NS, XSD_STRING

_SH = Namespace(SH_NS)
_QUIET = logging.getLogger("processkg.shacl")
_QUIET.addHandler(logging.NullHandler())
_QUIET.propagate = False


def to_rdflib_term(term: Term) -> URIRef | BNode | RLiteral:
    """A pyoxigraph term as the equal rdflib term; xsd:string literals become simple literals.

    rdflib tells ``"a"`` from ``"a"^^xsd:string`` (RDF 1.1 does not), so strings are always
    simple literals: in shapes, in Turtle shapes files and in payload graphs alike.
    """
    if isinstance(term, NamedNode):
        return URIRef(term.value)
    if isinstance(term, BlankNode):
        return BNode(term.value)
    if isinstance(term, Literal):
        if term.language:
            return RLiteral(term.value, lang=term.language)
        if term.datatype.value == XSD_STRING:
            return RLiteral(term.value)
        return RLiteral(term.value, datatype=URIRef(term.datatype.value))
    raise TypeError(f"not an RDF term: {term!r}")


def to_rdflib(triples: Iterable[Triple] | Iterable[Quad], graph: Graph | None = None) -> Graph:
    """pyoxigraph triples (or quads) into an rdflib graph."""
    graph = Graph() if graph is None else graph
    memo: dict[Term, URIRef | BNode | RLiteral] = {}

    def conv(term: Term) -> URIRef | BNode | RLiteral:
        found = memo.get(term)
        if found is None:
            found = memo[term] = to_rdflib_term(term)
        return found

    graph.addN((conv(t.subject), conv(t.predicate), conv(t.object), graph) for t in triples)
    return graph


def _built_once(component: type[ConstraintComponent]) -> type[ConstraintComponent]:
    """``component`` built once per shape and reused by every later run (same meaning, same results).

    pySHACL builds each constraint of a shape again whenever it validates. What a constructor reads
    comes from the shapes graph only: for a closed shape the RDF list of every property the entity
    type has (over a hundred for SAP's sales order), for ``sh:in`` every code of a code list; that
    was over half the time of validating one call (``benchmarks/bench_serve.py``,
    ``benchmarks/bench_sap_clients.py``). No core constraint component of pySHACL changes its
    instance after the constructor, so the attributes the first construction set are kept beside
    the shapes graph and given to every later instance of that shape's constraint.
    """

    def __init__(self: ConstraintComponent, shape: Shape) -> None:
        kept: dict[tuple[Node, type], tuple[Shape, dict[str, object]]] = shape.sg.__dict__.setdefault(
            "_processkg_constraints", {}
        )
        seen = kept.get((shape.node, component))
        if seen is not None and seen[0] is shape:
            self.shape = shape  # a slot of ConstraintComponent; the rest is in __dict__ (no core class has slots)
            self.__dict__.update(seen[1])
            return
        component.__init__(self, shape)
        kept[(shape.node, component)] = (shape, dict(self.__dict__))

    return type(component.__name__, (component,), {"__init__": __init__, "__doc__": component.__doc__})


class _Parameters(list[URIRef]):
    """pySHACL's list of constraint parameters, asked ``p in parameters`` for every predicate of a
    shape on every run: a set answers that without comparing ``p`` with each of the 33 in turn."""

    def __init__(self, items: list[URIRef]) -> None:
        super().__init__(items)
        self._set = frozenset(items)

    def __contains__(self, item: object) -> bool:
        return item in self._set


def _build_constraints_once() -> None:
    """Make pySHACL build its core constraints with :func:`_built_once` and look parameters up in a set."""
    built: dict[type, type] = {}
    mapping = {}
    for parameter, component in CONSTRAINT_PARAMETERS_MAP.items():
        core = component.__module__.startswith("pyshacl.constraints.core.")
        if core and component not in built:  # one subclass per component, shared by its parameters
            built[component] = _built_once(component)
        mapping[parameter] = built[component] if core else component
    pyshacl_shape.CONSTRAINT_PARAMS = (_Parameters(ALL_CONSTRAINT_PARAMETERS), mapping)  # type: ignore[attr-defined]


_build_constraints_once()


class ShaclEngine:
    """A shapes graph parsed once; :meth:`run` validates a data graph with the shapes it names
    (pySHACL, with its report graph), :meth:`check` gives the same results without the report, from
    the shapes compiled by :mod:`processkg.validate.shacl_core` where it covers them.

    ``compiled=False``: every :meth:`check` runs pySHACL (what the compiled checks are compared with)."""

    def __init__(self, shape_triples: Iterable[Triple], graph: Graph | None = None, compiled: bool = True) -> None:
        self.graph = graph if graph is not None else to_rdflib(shape_triples)
        self.shapes = ShapesGraph(self.graph, logger=_QUIET)
        harvested = self.shapes.shapes  # every shape now, not on each run
        self.known = {str(s.node) for s in harvested}
        self.compiled = (
            CompiledShapes(self.graph, [s.node for s in harvested], {s.node for s in harvested if s.is_property_shape})
            if compiled
            else None
        )

    def check(self, triples: Sequence[tuple[Node, Node, Node]], use_shapes: set[str] | None = None) -> list[Result]:
        """The leaf results (as :meth:`results` reads them from pySHACL's report) of validating the data
        graph ``triples`` with ``use_shapes`` (IRIs; ``None``: all shapes)."""
        chosen = self.known if use_shapes is None else use_shapes & self.known
        nodes = [_shape_iri(s) for s in sorted(chosen)]
        if self.compiled is not None and self.compiled.covers(nodes):
            return self.compiled.check(triples, nodes)
        graph = Graph()
        graph.addN((s, p, o, graph) for s, p, o in triples)
        return list(self.results(self.run(graph, use_shapes)[1]))

    def run(self, data: Graph, use_shapes: set[str] | None = None) -> tuple[bool, Graph]:
        """Validate ``data`` with ``use_shapes`` (IRIs; ``None``: all shapes with targets)."""
        options = {"inplace": True, "logger": _QUIET}
        if use_shapes is not None:
            options["use_shapes"] = sorted(s for s in use_shapes if s in self.known)
            if not options["use_shapes"]:
                return True, _PyShacl.create_validation_report(self.shapes, True, [])[0]
        validator = _PyShacl(DataGraph.from_rdflib(data), shacl_graph=self.graph, options=options)
        validator.shacl_graph = self.shapes
        conforms, report, _text = validator.run()
        return conforms, report

    @staticmethod
    def results(report: Graph) -> Iterator[Result]:
        """Each leaf ``sh:ValidationResult`` as (focus, path, component, value, shape); ``sh:detail`` unfolded."""
        sh = {
            n: URIRef(SH_NS + n)
            for n in (
                "result",
                "detail",
                "focusNode",
                "resultPath",
                "value",
                "sourceConstraintComponent",
                "sourceShape",
            )
        }
        stack = list(report.objects(None, sh["result"]))
        while stack:
            r = stack.pop()
            details = list(report.objects(r, sh["detail"]))
            if details:
                stack.extend(details)
                continue
            yield (
                report.value(r, sh["focusNode"]),
                report.value(r, sh["resultPath"]),
                report.value(r, sh["sourceConstraintComponent"]),
                report.value(r, sh["value"]),
                report.value(r, sh["sourceShape"]),
            )


def merge_reports(runs: list[tuple[bool, Graph]]) -> Graph:
    """One ``sh:ValidationReport`` of several runs (each with one service's shapes, so no result is
    in two of them): conforms if every run does, with every run's results. No run: a conforming report."""
    if len(runs) == 1:
        return runs[0][1]
    if not runs:
        return ShaclEngine([]).run(Graph(), set())[1]
    merged, report = Graph(), BNode()
    for prefix, namespace in runs[0][1].namespaces():
        merged.bind(prefix, namespace)
    merged.add((report, RDF.type, _SH["ValidationReport"]))
    merged.add((report, _SH["conforms"], RLiteral(all(conforms for conforms, _ in runs))))
    for _conforms, graph in runs:
        root = graph.value(predicate=RDF.type, object=_SH["ValidationReport"])
        for s, p, o in graph:
            if s != root:
                merged.add((s, p, o))
            elif p == _SH["result"]:
                merged.add((report, p, o))
    return merged


__all__ = ["ShaclEngine", "merge_reports", "to_rdflib", "to_rdflib_term"]


@lru_cache(maxsize=65536)
def _shape_iri(iri: str) -> URIRef:
    """The node of a shape named by ``iri`` (kept: a payload names the same shapes call after call, and
    rdflib checks an IRI each time it makes one)."""
    return URIRef(iri)
