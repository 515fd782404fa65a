"""``describe``'s compact answer: what an agent needs to read and write one entity set, in a few
hundred characters, from the validator's model of the store (no per-call SPARQL but the head).

Key; what a create requires, a line per property with type, length and label; the names of the optional writable
properties without a code list in one string (a type only where it is not ``String``); the code lists
inline, each property with one named only there (a short
list whole, a long one by its first codes and how many there are, an ISO standard by its name, its
size and a few examples, a list another property has already shown by that property's name); the
navigation properties a create can fill (deep insert) and how to write them; whether a change needs
an ETag; and one example create payload: the required fields, the keys of the parent the set belongs
to (kg serve's rule: a record it generates), valid codes from the value helps and values in the form the service's
OData version takes. One ``more`` sentence says what ``detail: "full"`` adds. An entity set still
over :data:`BUDGET` characters loses the optional properties' types, then the codes of optional
properties (their names join ``optional``), then the last of those names (counted), each step saying so
in ``more``.
"""

from __future__ import annotations

import json
from functools import cache
from typing import cast

from processkg.aliases import JSONObject, JSONValue
from processkg.serve.data import ROWS, Data, Table, generated
from processkg.serve.references import MASTER_KEYS
from processkg.serve.values import to_json
from processkg.services.model import Model, Nav, Prop, ServiceInfo, standard_codes

BUDGET = 3_800  # characters of a compact answer (JSON), the goal being at most 4,000
SHORT_LIST = 6  # a code list this long is shown whole
CODES_SHOWN = 3  # codes shown of a longer list; the rest are counted
#: ISO code lists by the name model.standard_codes knows them, with their name and a few examples.
STANDARDS = {
    "currency": ("ISO 4217 currency code", ("EUR", "USD", "JPY")),
    "country": ("ISO 3166-1 country code", ("DE", "US", "CN")),
    "language": ("ISO 639-1 language code", ("EN", "DE", "FR")),
}
EXAMPLE_CODES = 6  # fields with a code list filled in the example payload
NEW = ROWS  # the record number of a key the example gives: one past those kg serve starts with
MORE = 'detail "full": all types, labels, codes, flags, operations, process steps'


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
    required = [p for p in writable if p.required]
    optional = [p for p in writable if not p.required]
    answer: JSONObject = dict(base, etag=etag, required_on_create=[_line(p, labels.get(p.iri, "")) for p in required])
    codes = code_lists(writable, code_labels)
    listed = [p for p in optional if p.name not in codes]  # a property under codes is not named again
    if listed:
        answer["optional"] = names(listed, typed=True)
    if codes:
        answer["codes"] = codes
    navigation = _deep_insert(seed, svc, entity_set, v2)
    if navigation:
        answer["deep_insert"] = navigation
    if "create" in answer.get("allows", []):
        answer["example_create"] = example(seed, svc, entity_set, v2)
        inside = create_inside(seed, svc, entity_set)
        if inside:
            answer["create"] = inside
    answer["more"] = MORE
    return _fit(answer, required, optional, listed, code_labels)


def example(seed: Data, svc: ServiceInfo, entity_set: str, v2: bool) -> JSONObject:
    """One create payload: the parent's key (kg serve's parent of the set, :meth:`Data.parents`, and the
    key of the first record kg serve generates for it: ``PurchaseOrderItem`` ``00010``), the required
    fields, up to :data:`EXAMPLE_CODES` fields with a code list (their first code) and the references to
    master records by SAP's names (``SoldToParty``, ``Material``: the first record's key); the set's own
    key is left to the server's numbering."""
    t = seed.model.types[svc.sets[entity_set][0]]
    found = _parent(seed, svc.name, entity_set)
    parent = _first_keys(seed, *found) if found is not None else {}
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


def _parent(seed: Data, service: str, entity_set: str) -> tuple[Table, tuple[str, ...]] | None:
    """kg serve's parent of the set (:meth:`Data.parents`: keyed by the longest proper prefix of its key;
    of two, the one with a navigation to this type: an item partner's parent is the item) and that
    prefix. Makes no records."""
    table = seed.table(service, entity_set)
    if table is None:
        return None
    parents, shared = seed.parents(table)
    if not parents:
        return None
    parent = next((p for p in parents if any(n.target == table.type.iri for n in p.type.navs.values())), parents[0])
    return parent, shared


def _first_keys(seed: Data, parent: Table, shared: tuple[str, ...]) -> dict[str, JSONValue]:
    """The values of ``shared`` in the first record kg serve generates for ``parent`` (before its
    references are linked, which never changes a parent's key: the generated children keep theirs)."""
    first = next(iter(seed.filled(parent.service)[parent.name].values()), {})
    return {k: cast(JSONValue, first.get(k)) for k in shared}


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
    """``Name: String(4) "Label"`` (the label only where it says more than the name)."""
    facets = f"({p.max_length})" if p.max_length else ""
    shown = f' "{label}"' if says_more(label, p.name) else ""
    return f"{p.name}: {_type(p)}{facets}{shown}"


def says_more(label: str, name: str) -> bool:
    """Whether ``label`` says more than the ``name`` it labels: not only the name's words spaced out
    (``Sales Order`` says nothing more of ``SalesOrder``, nor of the A2X set ``A_SalesOrder``)."""
    return bool(label) and label.replace(" ", "").lower() != name.removeprefix("A_").lower()


def _type(p: Prop) -> str:
    return p.edm_type.replace("Edm.", "")


def names(props: list[Prop], typed: bool) -> str:
    """The properties' names in one string, a numbered series of one type as one name
    (``CustomerTaxClassification1-9``), with the type where it is not ``String`` if ``typed``."""
    series: dict[tuple[str, str], list[int]] = {}  # (stem, type) -> numbers; a name without one is its own
    single: list[tuple[str, str]] = []
    for p in props:
        stem = p.name.rstrip("0123456789")
        number = p.name[len(stem) :]
        if number and not number.startswith("0"):
            series.setdefault((stem, p.edm_type), []).append(int(number))
        else:
            single.append((p.name, p.edm_type))
    named = [(_numbered(stem, sorted(numbers)), edm_type) for (stem, edm_type), numbers in series.items()]
    out = [n if not typed or t == "Edm.String" else f"{n} {t.replace('Edm.', '')}" for n, t in sorted(single + named)]
    return ", ".join(out)


def _numbered(stem: str, numbers: list[int]) -> str:
    """``Stem1-5`` for a run 1..5, ``Stem1, Stem3`` otherwise; runs of two or more are joined."""
    runs: list[list[int]] = []
    for n in numbers:
        if runs and n == runs[-1][-1] + 1:
            runs[-1].append(n)
        else:
            runs.append([n])
    return ", ".join(f"{stem}{r[0]}-{r[-1]}" if len(r) > 2 else ", ".join(f"{stem}{n}" for n in r) for r in runs)


def code_lists(props: list[Prop], code_labels: dict[tuple[str, str], str]) -> JSONObject:
    """The code list of each property that has one, as one string; a list already shown for an earlier
    property is named by it (``"as DocumentCurrency"``)."""
    out: JSONObject = {}
    seen: dict[tuple[str, ...], str] = {}
    for p in props:
        if not p.codes:
            continue
        if p.codes in seen:
            out[p.name] = f"as {seen[p.codes]}"
            continue
        seen[p.codes] = p.name
        out[p.name] = _codes(p, code_labels)
    return out


def _codes(p: Prop, code_labels: dict[tuple[str, str], str]) -> str:
    """``CR "Credit Memo Request", DR "Debit Memo Request"`` for a short list (a label only where it says
    more than the code); the first :data:`CODES_SHOWN` and the count of a longer one; an ISO standard
    by its name, count and examples."""
    codes = p.codes or ()
    standard = _standard(codes)
    if standard is not None:
        name, examples = STANDARDS[standard]
        examples_shown = [c for c in examples if c in codes] or list(codes[:CODES_SHOWN])
        return f"{name} ({len(codes)} codes), e.g. {', '.join(examples_shown)}"
    few = codes if len(codes) <= SHORT_LIST else codes[:CODES_SHOWN]
    labelled = [(c, code_labels.get((p.iri, c), "")) for c in few]
    shown = ", ".join(f'{c} "{label}"' if label and c not in label.split() else c for c, label in labelled)
    return shown if len(few) == len(codes) else f"{shown}, ... ({len(codes)} codes)"


def _standard(codes: tuple[str, ...]) -> str | None:
    """The ISO list (``"currency"``, ...) these codes are, when they are at least 9 in 10 of its codes
    and all of them belong to it."""
    for kind in STANDARDS:
        known = _standard_set(kind)
        if len(codes) >= 0.9 * len(known) and known.issuperset(codes):
            return kind
    return None


@cache
def _standard_set(kind: str) -> frozenset[str]:
    return frozenset(standard_codes(kind))


def _deep_insert(seed: Data, svc: ServiceInfo, entity_set: str, v2: bool) -> JSONObject:
    """The navigation properties that lead to an entity set of the service (not back to the set's parent),
    and the syntax of a deep insert."""
    t = seed.model.types[svc.sets[entity_set][0]]
    targets = {type_iri: name for name, (type_iri, _c) in sorted(svc.sets.items())}
    parent = _parent(seed, svc.name, entity_set)
    up = parent[0].type.iri if parent is not None else None
    navs = [n for n in sorted(t.navs.values(), key=lambda n: n.name) if n.target in targets and n.target != up]
    if not navs:
        return {}
    many = next((n for n in navs if n.to_many), None)
    syntax = _syntax(many, v2) if many is not None else f'"{navs[0].name}": {{...}}'
    return {
        "navigation": ", ".join(_nav_text(n, targets[str(n.target)]) for n in navs),
        "syntax": f"create children inside the parent's POST: {syntax}",
    }


def _nav_text(nav: Nav, target: str) -> str:
    """``to_Item: A_SalesOrderItem``, ``to_Customer: A_Customer (one)``: the entity set left out where it
    is the navigation's name without ``to_`` or ``_`` (``to_MaintenanceOrderOperation``), with ``A_`` or not."""
    stem = nav.name.removeprefix("to_").removeprefix("_")
    shown = "" if target in (stem, f"A_{stem}") else f": {target}"
    return f"{nav.name}{shown}{'' if nav.to_many else ' (one)'}"


def _syntax(nav: Nav, v2: bool) -> str:
    return f'"{nav.name}": {{"results": [{{...}}, ...]}}' if v2 else f'"{nav.name}": [{{...}}, ...]'


def _fit(
    answer: JSONObject,
    required: list[Prop],
    optional: list[Prop],
    listed: list[Prop],
    code_labels: dict[tuple[str, str], str],
) -> JSONObject:
    """``answer`` cut to :data:`BUDGET` characters: first the types of optional properties go, then their
    codes (their names join ``optional``), then the last of their names (counted); ``more`` says what was
    left out. ``listed``: the optional properties named in ``optional`` (those without a code list)."""
    steps = [
        (lambda: answer.update(optional=names(listed, typed=False)), "the optional properties' types"),
        (
            lambda: answer.update(codes=code_lists(required, code_labels), optional=names(optional, typed=False)),
            "the optional properties' codes",
        ),
        (lambda: answer.update(optional=_shortened(answer, str(answer["optional"]))), "some of their names"),
    ]
    left_out: list[str] = []
    for step, what in steps:
        if _size(answer) <= BUDGET or not optional:
            break
        step()
        left_out.append(what)
        answer["more"] = f"left out here: {', '.join(left_out)}; {MORE}"
    for empty in ("codes", "optional"):
        if answer.get(empty) in ({}, ""):
            del answer[empty]
    return answer


def _shortened(answer: JSONObject, text: str) -> str:
    """``text`` (comma-separated names) cut so that ``answer`` fits :data:`BUDGET`, ending with how many
    properties were cut (``Name1-9`` counts 9)."""
    parts = text.split(", ")
    over = _size(answer) - BUDGET + len(", ... (+000 more)") + len('"left out here: some of their names; "')
    kept = parts
    while kept and over > 0:
        over -= len(kept[-1]) + 2
        kept = kept[:-1]
    return f"{', '.join(kept)}, ... (+{sum(_count(part) for part in parts[len(kept) :])} more)"


def _count(part: str) -> int:
    """How many properties one name of :func:`names` stands for: ``Name1-9`` for 9."""
    first, _, last = part.split(" ")[0].partition("-")
    return int(last) - int(first[len(first.rstrip("0123456789")) :]) + 1 if last else 1


def _size(answer: JSONValue) -> int:
    return len(json.dumps(answer, ensure_ascii=False))


__all__ = ["BUDGET", "compact", "example"]
