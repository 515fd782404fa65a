"""``describe``'s compact answer: what an agent needs to read and write one entity set, in a few
hundred characters, from the validator's model of the store (no per-call SPARQL but the head).

Key; what a create requires; the writable properties with type, length and label; their code lists
inline (the first codes and how many there are); the navigation properties a create can fill (deep
insert) and how to write them; whether a change needs an ETag; and one example create payload:
the required fields, the key of a record of the parent the set belongs to (kg serve's rule), valid codes
from the value helps and values in the form the service's OData version takes. A large entity set
is cut to :data:`BUDGET` characters step by step (labels of optional properties, then their types,
then the optional properties themselves, each step saying so); ``detail: "full"`` gives the rest.
"""

from __future__ import annotations

import json
from typing import cast

from processkg.aliases import JSONObject, JSONValue
from processkg.serve.data import ROWS, Data, Table, generated
from processkg.serve.references import MASTER_KEYS
from processkg.serve.values import to_json
from processkg.services.model import Model, Nav, Prop, ServiceInfo, TypeInfo

BUDGET = 3_800  # characters of a compact answer (JSON), the goal being at most 4,000
CODES_SHOWN = 6  # codes of a code list shown inline; the rest are counted
EXAMPLE_CODES = 6  # fields with a code list filled in the example payload
NEW = ROWS  # the record number of a key the example gives: one past those kg serve starts with
FULL = 'describe with detail "full" for '


def compact(
    seed: Data,
    service: str,
    entity_set: str,
    base: JSONObject,
    labels: dict[str, str],
    code_labels: dict[tuple[str, str], str],
    etag: bool,
) -> JSONObject:
    """The compact ``describe`` of one entity set, from the model of ``seed`` (kg serve's data as it starts,
    which the example payload takes its parent keys from); ``base`` holds what the head of the typed context
    gives (service, entity_set, label, path, key, one_record, allows); ``labels`` are the properties'
    labels by IRI, ``code_labels`` the codes' by (property IRI, code)."""
    model = seed.model
    svc = model.services[service]
    t = model.types[svc.sets[entity_set][0]]
    v2 = svc.version.startswith(("1", "2", "3"))
    writable = sorted((p for p in t.props.values() if not (p.key or p.read_only or p.computed)), key=lambda p: p.name)
    required = [p.name for p in writable if p.required]
    answer: JSONObject = dict(base, etag=etag, required_on_create=required)
    answer["properties"] = [_line(p, labels.get(p.iri, "")) for p in writable]
    codes = {p.name: _codes(p, code_labels) for p in writable if p.codes}
    if codes:
        answer["codes"] = codes
    navigation = _deep_insert(model, svc, t, v2)
    if navigation:
        answer["deep_insert"] = navigation
    if "create" in answer.get("allows", []):
        answer["example_create"] = example(seed, svc, entity_set, v2)
        inside = create_inside(seed, svc, entity_set)
        if inside:
            answer["create"] = inside
    answer["more"] = FULL + "every property with its flags, code labels, operations and process steps"
    return _fit(answer, writable, labels)


def example(seed: Data, svc: ServiceInfo, entity_set: str, v2: bool) -> JSONObject:
    """One create payload: the parent's key (kg serve's parent of the set, :meth:`Data.parents`, and the
    key of the first record kg serve generates for it: ``PurchaseOrderItem`` ``00010``), the required
    fields, up to :data:`EXAMPLE_CODES` fields with a code list (their first code) and the references to
    master records by SAP's names (``SoldToParty``, ``Material``: the first record's key); the set's own
    key is left to the server's numbering."""
    t = seed.model.types[svc.sets[entity_set][0]]
    found = _parent(seed, svc.name, entity_set)
    parent = found[1] if found is not None else {}
    payload: JSONObject = {}
    coded = 0
    for p in sorted(t.props.values(), key=lambda p: (not p.key, p.name)):
        writable = not (p.key or p.read_only or p.computed)
        own_key = p.key and p.name not in parent
        master = _master_key(seed.model, p.name) if not (p.codes or p.read_only or own_key) else None
        with_code = writable and bool(p.codes) and coded < EXAMPLE_CODES
        parent_key = p.key and p.name in parent and not p.read_only
        new_key = p.key and p.required and not parent_key and not p.read_only  # a key the client must give
        if not (parent_key or new_key or (writable and p.required) or with_code or master is not None):
            continue
        if parent_key:
            payload[p.name] = to_json(parent[p.name], p.edm_type, v2)
            continue
        value = generated(master, p.name, 0) if master is not None else generated(p, entity_set, NEW if new_key else 0)
        if value is not None:
            payload[p.name] = to_json(value, p.edm_type, v2)
            coded += with_code
    return payload


def _master_key(model: Model, name: str) -> Prop | None:
    """The key property of the master records a property of this name refers to (SAP's role names:
    ``SoldToParty`` a customer), the first entity set keyed by it alone; None for any other name."""
    for master, names in MASTER_KEYS.items():
        if name in names:
            for svc in sorted(model.services.values(), key=lambda s: s.name):
                for type_iri, _c in sorted(svc.sets.values()):
                    t = model.types.get(type_iri)
                    keys = [p for p in t.props.values() if p.key] if t is not None else []
                    if [k.name for k in keys] == [master]:
                        return keys[0]
    return None


def _parent(seed: Data, service: str, entity_set: str) -> tuple[Table, dict[str, JSONValue]] | None:
    """kg serve's parent of the set (:meth:`Data.parents`: keyed by the longest proper prefix of its key;
    of two, the one with a navigation to this type: an item partner's parent is the item) and the values
    of that prefix in the first record kg serve generates for the parent (before its references are
    linked, which never changes a parent's key: the generated children keep theirs)."""
    table = seed.table(service, entity_set)
    parents, shared = seed.parents(table) if table is not None else ([], ())
    if table is None or not parents:
        return None
    parent = next((p for p in parents if any(n.target == table.type.iri for n in p.type.navs.values())), parents[0])
    first = next(iter(seed.filled(service)[parent.name].values()), {})
    return parent, {k: cast(JSONValue, first.get(k)) for k in shared}


def create_inside(seed: Data, svc: ServiceInfo, entity_set: str) -> str:
    """How to create an entity whose parent key a client may not set (read-only): inside its parent,
    by the parent's navigation to it; ``""`` when it can be created on its own."""
    t = seed.model.types[svc.sets[entity_set][0]]
    found = _parent(seed, svc.name, entity_set)
    if found is None or not any(t.props[k].read_only for k in found[1] if k in t.props):
        return ""
    parent, keys = found
    name = parent.name
    nav = next((n.name for n in sorted(parent.type.navs.values(), key=lambda n: n.name) if n.target == t.iri), "")
    given = f"{', '.join(sorted(keys))} {'comes' if len(keys) == 1 else 'come'} from the parent"
    if not nav:
        return f"create it with its parent {name}: its {given}"
    return (
        f"inside its parent: POST {name}(<key>)/{nav} with the example, or deep insert in the POST of "
        f'{name} as "{nav}"; its {given}'
    )


def _line(p: Prop, label: str) -> str:
    """``Name: String(4) "Label"``, with ``required`` when a create needs it."""
    facets = f"({p.max_length})" if p.max_length else ""
    flag = ", required" if p.required else ""
    shown = f' "{label}"' if label and label.replace(" ", "").lower() != p.name.lower() else ""
    return f"{p.name}: {p.edm_type.replace('Edm.', '')}{facets}{flag}{shown}"


def _codes(p: Prop, code_labels: dict[tuple[str, str], str]) -> str:
    """``CR "Credit Memo Request", DR "Debit Memo Request", ...`` (a label only where it is not the code)."""
    codes = p.codes or ()
    labelled = [(c, code_labels.get((p.iri, c), "")) for c in codes[:CODES_SHOWN]]
    shown = ", ".join(f'{c} "{label}"' if label and label != c else c for c, label in labelled)
    if len(codes) <= CODES_SHOWN:
        return shown
    return f"{shown}, ... ({len(codes)} codes; {FULL}more)"


def _deep_insert(model: Model, svc: ServiceInfo, t: TypeInfo, v2: bool) -> JSONObject:
    """The navigation properties that lead to an entity set of the service, and the syntax of a deep insert."""
    targets = {type_iri: name for name, (type_iri, _c) in sorted(svc.sets.items())}
    navs = [n for n in sorted(t.navs.values(), key=lambda n: n.name) if n.target in targets]
    if not navs:
        return {}
    many = next((n for n in navs if n.to_many), None)
    syntax = _syntax(many, v2) if many is not None else f'"{navs[0].name}": {{...}}'
    return {
        "navigation": [f"{n.name}: {targets[str(n.target)]} ({'many' if n.to_many else 'one'})" for n in navs],
        "syntax": f"create children inside the parent's POST: {syntax}",
    }


def _syntax(nav: Nav, v2: bool) -> str:
    return f'"{nav.name}": {{"results": [{{...}}, ...]}}' if v2 else f'"{nav.name}": [{{...}}, ...]'


def _fit(answer: JSONObject, writable: list[Prop], labels: dict[str, str]) -> JSONObject:
    """``answer`` cut to :data:`BUDGET` characters: first the labels of optional properties go, then
    their types, then the optional properties themselves; a note says what was left out."""
    if _size(answer) <= BUDGET:
        return answer
    required = [p for p in writable if p.required]
    optional = [p for p in writable if not p.required]
    steps: list[tuple[list[str], str]] = [
        ([_line(p, "") for p in optional], "labels of optional properties"),
        ([p.name for p in optional], "types and labels of optional properties"),
        ([], f"{len(optional)} optional properties"),
    ]
    for lines, left_out in steps:
        answer["properties"] = [_line(p, labels.get(p.iri, "")) for p in required] + lines
        answer["left_out"] = f"{left_out}: {FULL}them"
        if lines == [] and "codes" in answer:
            answer["codes"] = {k: v for k, v in answer["codes"].items() if k in {p.name for p in required}}
        if _size(answer) <= BUDGET:
            break
    return answer


def _size(answer: JSONValue) -> int:
    return len(json.dumps(answer, ensure_ascii=False))


__all__ = ["BUDGET", "compact", "example"]
