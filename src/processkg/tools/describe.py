"""``describe``'s compact answer: what an agent needs to read and write one entity set, in a few
hundred characters, from the validator's model of the store (no per-call SPARQL but the head).

Key; what a create requires, a line per property with type, length and label; the names of the optional writable
properties without a code list in one string, grouped by type (``String`` first, unnamed); the code lists
inline as ``code=label``, each property with one named only there (a short list whole, a long one by its
first codes and how many more there are, which ``describe(..., codes=...)`` lists whole, an ISO standard
by its name, its size and a few examples, a list another property has already shown by that property's
name); the navigation properties a create can fill (deep insert) and how to write them; whether a
change needs an ETag; and one example create payload: the required fields, the keys of the parent the
set belongs to (kg serve's rule: a record it generates), valid codes from the value helps and values in
the form the service's OData version takes. Nothing empty, nothing the tool's description says once (what
``detail: "full"`` adds). An entity set still over :data:`BUDGET` characters loses the codes of optional
properties (their names join ``optional``), then the last of those names (counted), and ``cut`` says so.
"""

from __future__ import annotations

import re
from functools import cache
from typing import cast

from processkg.aliases import JSONObject, JSONValue
from processkg.serve.data import ROWS, Data, Table, generated
from processkg.serve.references import MASTER_KEYS
from processkg.serve.values import to_json
from processkg.services.model import Model, Nav, Prop, ServiceInfo, standard_codes
from processkg.tools.specs import answer_text

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
OPTIONAL_SHOWN = 20  # optional properties named (by :func:`ranked`); the rest are counted
TASK_TYPES = frozenset({"Edm.Decimal", "Edm.Date", "Edm.DateTime", "Edm.DateTimeOffset"})
TEXT_ENDINGS = ("Text", "Description", "Desc", "Name", "Unit")  # texts, names, units of measure
MASTER_NAMES = frozenset(name for names in MASTER_KEYS.values() for name in names)
NEW = ROWS  # the record number of a key the example gives: one past those kg serve starts with


def compact(
    seed: Data,
    service: str,
    entity_set: str,
    base: JSONObject,
    labels: dict[str, str],
    code_labels: dict[tuple[str, str], str],
    etag: bool,
    vocabulary: dict[str, int],
) -> JSONObject:
    """The compact ``describe`` of one entity set, from the model of ``seed`` (kg serve's data as it starts,
    which the example payload takes its parent keys from); ``base`` holds what the head of the typed context
    gives (label, path, key, one_record, allows); ``labels`` are the properties' labels by IRI,
    ``code_labels`` the codes' by (property IRI, code), ``vocabulary`` how many entity types of the store
    have a property of each name (:func:`ranked`)."""
    model = seed.model
    svc = model.services[service]
    t = model.types[svc.sets[entity_set][0]]
    v2 = svc.version.startswith(("1", "2", "3"))
    writable = sorted((p for p in t.props.values() if not (p.key or p.read_only or p.computed)), key=lambda p: p.name)
    required = [p for p in writable if p.required]
    optional = [p for p in writable if not p.required]
    answer: JSONObject = dict(base, etag=etag)
    if required:
        answer["required_on_create"] = [_line(p, labels.get(p.iri, "")) for p in required]
    codes = code_lists(writable, code_labels)
    optional = ranked(optional, vocabulary)
    listed = [p for p in optional if p.name not in codes]  # a property under codes is not named again
    if listed:
        answer["optional"] = shown(listed, OPTIONAL_SHOWN)
    if codes:
        answer["codes"] = codes
    navigation = _deep_insert(seed, svc, entity_set, v2)
    if navigation:
        answer["deep_insert"] = navigation
    if "create" in str(answer.get("allows", "")).split(", "):
        answer["example_create"] = example(seed, svc, entity_set, v2)
        inside = create_inside(seed, svc, entity_set)
        if inside:
            answer["create"] = inside
    return _fit(answer, required, optional, code_labels, len(listed))


def ranked(props: list[Prop], vocabulary: dict[str, int]) -> list[Prop]:
    """Optional properties in the order a task is likeliest to set them: first texts, descriptions and
    names, dates, amounts and quantities and their units, and references to master data (SAP's role
    names), then the names most entity types of the
    store share (organisational units, references, terms), then the names peculiar to this type; a
    numbered series stays together."""
    return sorted(
        props, key=lambda p: (not _task_field(p), -vocabulary.get(p.name, 0), p.name.rstrip("0123456789"), p.name)
    )


def _task_field(p: Prop) -> bool:
    return p.edm_type in TASK_TYPES or p.name.rstrip("0123456789").endswith(TEXT_ENDINGS) or p.name in MASTER_NAMES


def shown(props: list[Prop], limit: int) -> str:
    """The first ``limit`` of ``props`` by :func:`names`, and how many more there are (``+35 more``)."""
    more = len(props) - limit
    return names(props[:limit]) + (f"; +{more} more" if more > 0 else "")


def example(seed: Data, svc: ServiceInfo, entity_set: str, v2: bool) -> JSONObject:
    """One create payload: the parent's key (kg serve's parent of the set, :meth:`Data.parents`, and the
    key of the first record kg serve generates for it: ``PurchaseOrderItem`` ``00010``), the required
    fields, up to :data:`EXAMPLE_CODES` fields with a code list (their first code) and the references to
    master records by SAP's names (``SoldToParty``, ``Material``: the first record's key); the set's own
    key is left to the server's numbering, unless the client must give it: then a new number, or, where
    the key names another set's master record (``Customer`` and ``Material`` of ``A_CustomerMaterial``),
    that record's key."""
    t = seed.model.types[svc.sets[entity_set][0]]
    found = _parent(seed, svc.name, entity_set)
    parent = _first_keys(seed, *found) if found is not None else {}
    payload: JSONObject = {}
    coded = 0
    for p in sorted(t.props.values(), key=lambda p: (not p.key, p.name)):
        writable = not (p.key or p.read_only or p.computed)
        own_key = p.key and p.name not in parent
        parent_key = p.key and p.name in parent and not p.read_only
        new_key = p.key and p.required and not parent_key and not p.read_only  # a key the client must give
        master = _master_key(seed.model, p.name) if not (p.codes or p.read_only or (own_key and not new_key)) else None
        if master is not None and master.iri == p.iri:  # the set's own key of a master set stays new
            master = None
        with_code = writable and bool(p.codes) and coded < EXAMPLE_CODES
        if not (parent_key or new_key or (writable and p.required) or with_code or master is not None):
            continue
        if parent_key:
            payload[p.name] = to_json(parent[p.name], p.edm_type, v2)
            continue
        if p.complex_type is not None and writable and p.required:
            payload[p.name] = _complex_example(seed.model, p.complex_type, entity_set, v2)
            continue
        value = generated(master, p.name, 0) if master is not None else generated(p, entity_set, NEW if new_key else 0)
        if value is not None:
            payload[p.name] = to_json(value, p.edm_type, v2)
            coded += with_code
    return payload


def _complex_example(model: Model, type_iri: str, entity_set: str, v2: bool) -> JSONObject:
    """A required value of a complex type: its required members of a simple type, generated as any other
    (``{}`` when none is required: ``TimeSheetDataFields`` of the timesheet API, 21 optional members)."""
    t = model.types.get(type_iri)
    members = [m for m in t.props.values() if m.required and m.complex_type is None] if t is not None else []
    out: JSONObject = {}
    for m in sorted(members, key=lambda m: m.name):
        value = generated(m, entity_set, 0)
        if value is not None:
            out[m.name] = to_json(value, m.edm_type, v2)
    return out


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
    """The type without its namespace: ``String``, ``Collection(SAP__Message)``."""
    return re.sub(r"(?:\w+\.)+(\w+)", r"\1", p.edm_type)


def names(props: list[Prop]) -> str:
    """The properties' names in one string, grouped by type: the ``String`` ones first without a type, then
    each other type's after its name (``A, B; DateTime: C, D; Decimal: E``); a numbered series of one type
    as one name (``CustomerTaxClassification1-9``)."""
    by_type: dict[str, list[Prop]] = {}
    for p in props:
        by_type.setdefault(_type(p), []).append(p)
    groups = [_names_of(by_type.pop("String"))] if "String" in by_type else []
    groups += [f"{edm_type}: {_names_of(group)}" for edm_type, group in sorted(by_type.items())]
    return "; ".join(groups)


def _names_of(props: list[Prop]) -> str:
    """The names of properties of one type, sorted, a numbered series as one name."""
    series: dict[str, list[int]] = {}  # stem -> numbers; a name without one is its own
    single: list[str] = []
    for p in props:
        stem = p.name.rstrip("0123456789")
        number = p.name[len(stem) :]
        if number and not number.startswith("0"):
            series.setdefault(stem, []).append(int(number))
        else:
            single.append(p.name)
    return ", ".join(sorted(single + [_numbered(stem, sorted(numbers)) for stem, numbers in series.items()]))


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
    """``CR=Credit Memo Request, DR=Debit Memo Request`` for a short list (a label only where it says more
    than the code); the first :data:`CODES_SHOWN` of a longer one and how many more there are (``+16
    more``: ``describe(..., codes=...)`` lists them); an ISO standard by its name, count and examples."""
    codes = p.codes or ()
    standard = _standard(codes)
    if standard is not None:
        name, examples = STANDARDS[standard]
        examples_shown = [c for c in examples if c in codes] or list(codes[:CODES_SHOWN])
        return f"{name} ({len(codes)} codes), e.g. {', '.join(examples_shown)}"
    few = codes if len(codes) <= SHORT_LIST else codes[:CODES_SHOWN]
    shown = all_codes(p, code_labels, few)
    return shown if len(few) == len(codes) else f"{shown}, +{len(codes) - len(few)} more"


def all_codes(p: Prop, code_labels: dict[tuple[str, str], str], codes: tuple[str, ...] | None = None) -> str:
    """``codes`` (default: all of ``p``'s) as ``code=label``, the label only where it says more than the code."""
    labelled = [(c, code_labels.get((p.iri, c), "")) for c in (p.codes or () if codes is None else codes)]
    return ", ".join(f"{c}={label}" if label and c not in label.split() else c for c, label in labelled)


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
        "syntax": syntax,
    }


def _nav_text(nav: Nav, target: str) -> str:
    """``to_Item: A_SalesOrderItem``, ``to_Customer: A_Customer (one)``: the entity set left out where it
    is the navigation's name without ``to_`` or ``_`` (``to_MaintenanceOrderOperation``), with ``A_`` or not."""
    stem = nav.name.removeprefix("to_").removeprefix("_")
    shown = "" if target in (stem, f"A_{stem}") else f": {target}"
    return f"{nav.name}{shown}{'' if nav.to_many else ' (one)'}"


def _syntax(nav: Nav, v2: bool) -> str:
    return f'"{nav.name}": {{"results": [{{...}}]}}' if v2 else f'"{nav.name}": [{{...}}]'


def _fit(
    answer: JSONObject,
    required: list[Prop],
    optional: list[Prop],
    code_labels: dict[tuple[str, str], str],
    listed: int,
) -> JSONObject:
    """``answer`` cut to :data:`BUDGET` characters: first the codes of optional properties go (their names
    join ``optional``), then fewer optional names are shown (the rest counted); ``cut`` says what was
    left out. ``listed``: how many optional properties ``optional`` names now."""
    limit = min(OPTIONAL_SHOWN, listed)
    if _size(answer) > BUDGET and optional and any(p.codes for p in optional):
        answer.update(codes=code_lists(required, code_labels), optional=shown(optional, limit))
        answer["cut"] = "the optional properties' codes"
    while _size(answer) > BUDGET and limit > 0:
        limit = max(0, limit - 5)
        answer["optional"] = shown(optional, limit)
    for empty in ("codes", "optional"):
        if answer.get(empty) in ({}, ""):
            del answer[empty]
    return answer


def _size(answer: JSONValue) -> int:
    return len(answer_text(answer))


__all__ = ["BUDGET", "all_codes", "compact", "example"]
