"""The compiled payload checks (validate/shacl_core.py, validate/payload_json.py) give exactly pySHACL's results.

The shapes stay the specification: kg serve and kg validate check payloads with the compiled subset of
SHACL Core, and these tests run pySHACL beside it on the A2X services with SAP's code lists, the
curated required fields and the document flow (``tasks_store``): generated calls with one injected
violation of each kind, the invalid writes of the side-by-side benchmark, the operation calls of
tests/invalid, and a write of every record kg serve generates. Each time the violations must be
equal, and so must the SHACL results themselves (focus, path, component, value, shape, as a multiset).
Three validators take part: the one kg serve uses (a create's JSON checked on the compiled shapes
where it conforms, else its triples), the compiled checks on the triples of every payload, and
pySHACL alone; and the JSON checks' own verdict on each create is compared with the triples'.
"""

from __future__ import annotations

import importlib.util
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import TypeAlias, cast

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rdflib import Graph, Literal, URIRef
from rdflib.compare import isomorphic
from rdflib.term import Node

from conftest import INVALID, ROOT
from processkg.aliases import JSONValue
from processkg.graph.handle import StoreHandle
from processkg.serve import odata_json
from processkg.serve.app import open_server
from processkg.serve.data import Table
from processkg.serve.values import to_json
from processkg.services.model import Model
from processkg.validate.calls import CallResult, Validator, read_calls
from processkg.validate.payload_json import JsonChecks
from processkg.validate.payload_shapes import model_shapes
from processkg.validate.shacl import ShaclEngine
from processkg.validate.shacl_core import SH, Result
from processkg.validate.urls import resolve_service, set_rules


def _module(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class _Kept:
    """A service's pySHACL engine that keeps the results of every check it makes (for :class:`_PyShacl`)."""

    def __init__(self, engine: ShaclEngine, kept: list[Result]) -> None:
        self.engine, self.kept = engine, kept

    def check(self, triples: Sequence[tuple[Node, Node, Node]], use_shapes: set[str] | None = None) -> list[Result]:
        found = self.engine.check(triples, use_shapes)
        self.kept.extend(found)
        return found


class _PyShacl(Validator):
    """The validator with every payload checked by pySHACL (``compiled=False``), keeping the SHACL results
    each service's engine gave in the last batch (``found``): the tests compare the compiled checks with
    the results of that one pySHACL run, not of a second run of pySHACL on the same payloads."""

    def __init__(self, store: StoreHandle, model: Model) -> None:
        super().__init__(store, model=model, compiled=False)
        self.found: dict[str, list[Result]] = {}

    def validate_calls(self, calls: Sequence[tuple[int | None, JSONValue] | JSONValue]) -> list[CallResult]:
        self.found = {}
        return super().validate_calls(calls)

    def engine(self, service: str) -> ShaclEngine:
        engine = super().engine(service)
        return cast(ShaclEngine, _Kept(engine, self.found.setdefault(service, [])))


Validators: TypeAlias = tuple[Validator, Validator, _PyShacl]


@pytest.fixture(scope="module")
def validators(tasks_store: Path) -> Validators:
    """(JSON checks then compiled triples, compiled triples only, pySHACL only) on one model."""
    walking = Validator(StoreHandle.open(tasks_store))
    compiled = Validator(StoreHandle.open(tasks_store), model=walking.model, json_checks=False)
    return walking, compiled, _PyShacl(StoreHandle.open(tasks_store), walking.model)


def _walked(validator: Validator, calls: list[JSONValue], results: list[dict]) -> int:
    """How many creates of ``calls`` the JSON checks pass, asked directly; each must be valid by the triple
    path (``results``: its verdicts), with the same notes. Creates the validator refuses before their
    payload is checked (a set that takes no creates or no deep insert along a navigation) are left out."""
    passed = 0
    for call, result in zip(calls, results, strict=True):
        if not isinstance(call, dict) or call.get("method") != "POST" or not isinstance(call.get("payload"), dict):
            continue
        if "url" in call:
            target = validator.resolve("POST", call["url"])
        else:  # service and entity_set, as Validator._target reads them
            target = {"service": call["service"], "segments": [(call["entity_set"], None)], "query": {}}
            target |= {"method": "POST", "violations": []}
            resolve_service(validator.model, target)
        if target["violations"] or "operation" in target or target["type"] not in validator.model.types:
            continue
        refused = set_rules(validator.model, target).named("nonInsertableNavigation") & set(call["payload"])
        if not target.get("creatable", True) or refused:
            continue
        t = validator.model.types[target["type"]]
        checks = validator.checks(t.service)
        assert checks is not None
        notes = checks.conforms(t, call["payload"], target["service_version"].startswith("2"))
        if notes is not None:
            passed += 1
            assert result["valid"], (call, result)
            assert [list(n) for n in notes] == [list(v.values()) for v in result.get("notes", [])]
    return passed


def _agree(validators: Validators, calls: list[JSONValue]) -> tuple[list[dict], int]:
    """Validate ``calls`` in one batch with the three; the violations and the SHACL results must be equal.
    Also: how many creates the JSON checks pass (:func:`_walked`)."""
    walking, compiled, pyshacl = validators
    ours = [r.as_dict() for r in walking.validate_calls(calls)]
    triples = [r.as_dict() for r in compiled.validate_calls(calls)]
    theirs = [r.as_dict() for r in pyshacl.validate_calls(calls)]
    assert ours == triples
    assert triples == theirs
    walked = _walked(walking, calls, triples)
    payloads, checked = compiled.last_payloads, pyshacl.last_payloads
    assert payloads is not None and payloads.triples
    assert checked is not None and (checked.triples, checked.shapes) == (payloads.triples, payloads.shapes)
    assert set(pyshacl.found) == payloads.services
    for service in sorted(payloads.services):
        fast = compiled.engine(service)
        assert fast.compiled is not None and not fast.compiled.unsupported  # the compiled checks ran
        assert fast.compiled.covers(URIRef(s) for s in payloads.shapes)
        found = Counter(fast.check(payloads.triples, payloads.shapes))
        assert found == Counter(pyshacl.found[service])
    return ours, walked


def _valid_creates(calls: list[JSONValue], results: list[dict]) -> int:
    return sum(
        r["valid"] for c, r in zip(calls, results, strict=True) if isinstance(c, dict) and c.get("method") == "POST"
    )


def test_generated_calls_with_every_kind_of_violation(validators):
    bench = _module("bench_validate")
    pairs = bench.generate_calls(validators[0].model, 1200, seed=3)
    results, walked = _agree(validators, [c for c, _ in pairs])
    assert walked == _valid_creates([c for c, _ in pairs], results) > 500  # each valid create, on its JSON
    kinds = {v["kind"] for r in results for v in r["violations"]}
    assert set(bench.INJECTED) <= kinds
    assert 300 < sum(not r["valid"] for r in results) < 1000


def test_the_invalid_writes_of_the_side_by_side_benchmark(validators):
    bench = _module("bench_sap_clients")
    calls = [{"method": m, "url": bench.SERVICE + path, "payload": body} for _k, m, path, body in bench.INVALID_WRITES]
    calls.append({"method": "POST", "url": bench.SERVICE + "A_SalesOrder", "payload": bench.DEEP_ORDER})
    results, walked = _agree(validators, calls)
    assert walked == _valid_creates(calls, results) == 5  # the deep insert and the four kg serve refuses
    assert results[-1]["valid"]
    assert {"unknown-property", "unknown-navigation", "datatype", "max-length", "invalid-code", "read-only"} <= {
        v["kind"] for r in results for v in r["violations"]
    }


def test_operation_calls(validators):
    results, _walked_creates = _agree(validators, [call for _n, call in read_calls(INVALID / "operation-calls.jsonl")])
    assert any(r["valid"] for r in results) and not all(r["valid"] for r in results)


def _json(table: Table, record: dict[str, object]) -> dict[str, object]:
    v2 = odata_json.is_v2(table.type)
    return {k: to_json(v, table.type.props[k].edm_type, v2) for k, v in record.items() if v is not None}


#: Generated records written per entity set. Every set's shapes are reached by its first records; the
#: values differ per record only by number (tests/test_serve_seed.py sends every record to kg serve).
#: All of them (over 12,000 writes, each checked by pySHACL too) made this the longest test of make test.
PER_SET = 2


def test_a_write_of_generated_records_of_every_set(tasks_store, validators):
    """The first :data:`PER_SET` records of every creatable set, each as a PUT of itself and as a POST of
    what a client may write (as tests/test_serve_seed.py walks them), and each with its strings one
    character too long (max-length, codes and patterns)."""
    server = open_server(StoreHandle.open(tasks_store), csrf=False)
    roots = {service: root for root, service in server.roots.items()}
    calls: list[JSONValue] = []
    for t in server.data.all_tables():
        if not t.creatable or not t.keys:
            continue
        for record in list(t.rows.values())[:PER_SET]:
            url = roots[t.service] + t.name
            calls.append(
                {"method": "PUT", "url": url + odata_json.key_predicate(t.type, record), "payload": _json(t, record)}
            )
            writable = {k: v for k, v in record.items() if not (t.type.props[k].read_only or t.type.props[k].computed)}
            calls.append({"method": "POST", "url": url, "payload": _json(t, writable)})
            longer = {k: v + "X" if isinstance(v, str) else v for k, v in _json(t, writable).items()}
            calls.append({"method": "POST", "url": url, "payload": longer})
    assert len(calls) > 1300
    results, walked = _agree(validators, calls)
    assert walked == _valid_creates(calls, results) > 400
    assert sum(r["valid"] for r in results) > 400
    assert {"max-length", "invalid-code", "datatype"} <= {v["kind"] for r in results for v in r["violations"]}


def test_a_shape_outside_the_compiled_subset_is_left_to_pyshacl(validators):
    """A shape with a constraint the compiled checks do not know (sh:minLength here) is pySHACL's: the
    engine says so, a run that needs it gives pySHACL's results, and the JSON checks do not answer for
    a payload of that type (which then becomes triples), while they do with the shapes as generated."""
    compiled = validators[0]
    service = "API_SALES_ORDER_SRV"
    graph = ShaclEngine(model_shapes(compiled.model, {service})).graph
    t = next(t for t in compiled.model.types_of(service) if t.qname.endswith(".A_SalesOrderType"))
    prop = t.props["PurchaseOrderByCustomer"]
    graph.add((URIRef(prop.iri + "/shape"), SH.minLength, Literal(3)))
    engine = ShaclEngine([], graph=graph)
    shape = prop.iri + "/shape"
    assert engine.compiled is not None and URIRef(shape) in engine.compiled.unsupported
    focus, path = URIRef("urn:processkg:call/0"), URIRef(prop.iri)
    found = engine.check([(focus, path, Literal("AB"))], {shape})
    assert [(r[2], r[3]) for r in found] == [(SH.MinLengthConstraintComponent, Literal("AB"))]
    assert engine.check([(focus, path, Literal("ABC"))], {shape}) == []
    assert isinstance(engine.run(Graph(), {shape})[1], Graph)
    payload = {**_module("bench_sap_clients").DEEP_ORDER, "PurchaseOrderByCustomer": "ABC"}
    assert JsonChecks(compiled.model, service, engine).conforms(t, payload, True) is None
    generated = ShaclEngine(model_shapes(compiled.model, {service}))
    assert JsonChecks(compiled.model, service, generated).conforms(t, payload, True) == []


def test_the_report_graph_is_the_same_when_valid_creates_are_checked_on_their_json(validators):
    """``kg validate --format ttl``: the JSON checks leave a valid create out of the report's data graph,
    where it gave no result; the report is the same (isomorphic), with invalid calls beside it or not."""
    walking, compiled, _ = validators
    bench = _module("bench_sap_clients")
    valid = {"method": "POST", "url": bench.SERVICE + "A_SalesOrder", "payload": bench.DEEP_ORDER}
    _kind, method, path, body = bench.INVALID_WRITES[0]
    invalid = {"method": method, "url": bench.SERVICE + path, "payload": body}
    for calls in ([valid], [valid, invalid, valid]):
        ours, theirs = walking.report_graph(calls), compiled.report_graph(calls)
        assert walking.last_payloads is None or len(walking.last_payloads.triples) < len(compiled.last_payloads.triples)
        assert isomorphic(ours, theirs)
    assert len(ours) > 10  # the invalid call's results


_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**12), 10**12),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=45),
    st.from_regex(r"\A[0-9]{1,12}\Z"),  # keys, codes and quantities as SAP writes them
    st.from_regex(r"\A-?[0-9]{1,15}(\.[0-9]{1,5})?\Z"),  # decimals as V2 strings
    st.from_regex(r"\A/Date\(-?[0-9]{1,13}([+-][0-9]{4})?\)/\Z"),  # V2 dates
    st.from_regex(r"\APT[0-9]{1,2}H[0-9]{1,2}M[0-9]{1,2}S\Z"),  # V2 times
    st.sampled_from(["1010", "10", "00", "OR", "TA", "EUR", "USD", "PC", "X", "", "0000000001", "0000000002"]),
    st.sampled_from(["1.234", "1.23456", "-1", "1e3", "12345678901234.5", "0.5", "2"]),  # scales and precisions
)
_VALUES = st.one_of(
    _SCALARS, st.lists(_SCALARS, max_size=2), st.dictionaries(st.text(max_size=8), _SCALARS, max_size=2)
)


def _mutated(draw: st.DrawFn, entity: dict[str, object], names: list[str]) -> dict[str, object]:
    """``entity`` with a few members dropped, set to another value, or added (mostly names of its type)."""
    out = dict(entity)
    for _ in range(draw(st.integers(0, 4))):
        name = draw(st.one_of(st.sampled_from(names), st.sampled_from(sorted(out)), st.text(min_size=1, max_size=12)))
        change = draw(st.sampled_from(["drop", "set", "extend"]))
        if name in out and change == "drop":
            del out[name]
        elif isinstance(out.get(name), str) and change == "extend":
            out[name] = str(out[name]) + draw(st.sampled_from(["0", "1", "X", ".5", "0001", " ", "\u00e9"]))
        else:
            out[name] = draw(_VALUES)
    return out


@st.composite
def _deep_orders(
    draw: st.DrawFn, deep_order: dict[str, object], order_names: list[str], item_names: list[str]
) -> dict[str, object]:
    order = _mutated(draw, {k: v for k, v in deep_order.items() if k != "to_Item"}, order_names)
    items = [_mutated(draw, item, item_names) for item in deep_order["to_Item"]]
    shape = draw(st.sampled_from(["items", "no items", "one item", "not a list"]))
    if shape == "items":
        order["to_Item"] = items
    elif shape == "one item":
        order["to_Item"] = items[:1]
    elif shape == "not a list":
        order["to_Item"] = items[0]
    return order


def test_whatever_the_json_checks_pass_the_triples_pass_with_the_same_notes(validators):
    """Property: for deep inserts of a sales order mutated at random (members dropped, retyped, added; items
    present, absent or not a list), a payload the JSON checks pass is valid by the compiled triples too,
    with the same notes; and the checks pass some and leave some to the triples (both sides are reached)."""
    walking, compiled, _ = validators
    bench = _module("bench_sap_clients")
    url = bench.SERVICE + "A_SalesOrder"
    t = walking.model.types[walking.resolve("POST", url)["type"]]
    item = t.navs["to_Item"].target
    assert item is not None
    checks = walking.checks(t.service)
    assert checks is not None
    seen = Counter()

    @settings(max_examples=300, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
    @given(_deep_orders(bench.DEEP_ORDER, sorted(t.props), sorted(walking.model.types[item].props)))
    def check(payload: dict[str, object]) -> None:
        notes = checks.conforms(t, payload, True)
        seen[notes is not None] += 1
        if notes is None:
            return
        [result] = [r.as_dict() for r in compiled.validate_calls([{"method": "POST", "url": url, "payload": payload}])]
        assert result["valid"], (payload, result)
        assert [list(n) for n in notes] == [list(v.values()) for v in result.get("notes", [])]

    check()
    assert seen[True] > 20 and seen[False] > 20, seen
