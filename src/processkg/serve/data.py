"""The server's data: one table per entity set, filled deterministically from the metadata.

Every entity set gets ``ROWS`` generated records (values derived from the property's Edm type,
facets and value-help codes, so they are valid against the payload shapes), or the records of
``--data DIR`` (``DIR/SERVICE/EntitySet.json``, a JSON list of objects in either OData JSON
format). Related records are found by SAP's key convention: an item's key repeats its header's
key properties by name (``SalesOrder`` in ``A_SalesOrderItem``), so navigation and deep insert
match on the properties the two types share with the target's key. A child set's generated records
belong ``ITEMS`` to a parent record, numbered per document (``000010``, ``000020``), and their short
reference fields carry the document's number as the document's own do (an item of delivery 3 refers to
sales order 3); the server then points every other reference at an existing record (``References.link``). A service's records are
made on its first use (:meth:`Data.generate`), not at start: a store of thousands of services starts
without generating any.
"""

from __future__ import annotations

import copy
import datetime as dt
import json
import threading
import uuid
from collections.abc import Callable, Iterator
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import TypeAlias

from processkg.aliases import JSONObject
from processkg.errors import ServeDataError
from processkg.serve import movement_types, org_units
from processkg.serve.values import canonical
from processkg.services.model import Model, Nav, Prop, TypeInfo

Rows: TypeAlias = dict[tuple[str, ...], dict[str, object]]
"""A table's records by key (the key property values in key order)."""

ROWS = 20
#: Header amount -> the item amount it is the sum of (a sales document's net value, a supplier invoice's
#: gross amount): generated headers hold the sum of their generated items' amounts.
TOTALS = {"TotalNetAmount": "NetAmount", "InvoiceGrossAmount": "SupplierInvoiceItemAmount"}
ITEMS = 2  # generated items per generated document
#: The keys of a party's master records: customer 3 and supplier 3 are business partner 3 (SAP's business
#: partner with the customer and supplier roles under the same number).
PARTY_KEYS = ("BusinessPartner", "Customer", "Supplier")
#: The name properties of a party's master records: the generated ones hold one name per party
#: (:func:`party_name`), not ``CustomerName 3`` in A_Customer and ``SupplierName 3`` in A_Supplier.
PARTY_NAMES = frozenset(
    {
        "BusinessPartnerFullName",
        "BusinessPartnerName",
        "OrganizationBPName1",
        "CustomerName",
        "CustomerFullName",
        "BPCustomerName",
        "BPCustomerFullName",
        "SupplierName",
        "SupplierFullName",
    }
)
ITEM_WIDTH = 6  # SAP's item numbers: POSNR, NUMC 6
START = dt.date(2026, 1, 1)
GUIDS = uuid.UUID("6f0d3c9e-9a57-4c1e-9d61-3b2f3c8e0a11")


Saved: TypeAlias = dict[str, dict[str, Rows]]
"""The records of services by service and entity set (``Data.save``)."""

Linker: TypeAlias = Callable[["Table", Rows, Callable[[str, str], Rows | None]], Rows]
"""Makes the references of a table's generated records hold existing keys (``References.link``): the
table, its rows, and the rows any (service, entity set) held at that point of the generation."""


class Table:
    """The records of one entity set, by key tuple, in insertion order. ``rows`` are generated (or
    loaded) with the rest of the service on their first use (:meth:`Data.generate`)."""

    def __init__(self, data: Data, service: str, name: str, type_: TypeInfo, creatable: bool = True) -> None:
        self.data, self.service, self.name, self.type, self.creatable = data, service, name, type_, creatable
        self.keys: list[str] = [p.name for p in type_.props.values() if p.key]
        self._rows: Rows | None = None
        # (key position, per document) -> {the key parts before it: the highest number there}, for
        # the rows as they were when ``_indexed`` rows were stored (see :meth:`highest`)
        self._highest: dict[tuple[int, bool], dict[tuple[str, ...], int]] = {}
        # key positions -> {those parts of a key: the keys that have them, in the rows' order}
        self._groups: dict[tuple[int, ...], dict[tuple[str, ...], list[tuple[str, ...]]]] = {}
        self._indexed = -1

    @property
    def rows(self) -> Rows:
        found = self._rows
        if found is None:
            self.data.generate(self.service)
            found = self._rows
        assert found is not None
        return found

    @rows.setter
    def rows(self, rows: Rows) -> None:
        self._rows = rows
        self._forget()

    def _forget(self) -> None:
        self._highest, self._groups, self._indexed = {}, {}, -1

    def _current(self, rows: Rows) -> None:
        """Drop the indexes when the rows changed other than through :meth:`store` (their count differs)."""
        if self._indexed != len(rows):
            self._forget()
            self._indexed = len(rows)

    def key_of(self, record: dict[str, object]) -> tuple[str, ...]:
        return tuple(str(record.get(k)) for k in self.keys)

    def store(self, record: dict[str, object]) -> None:
        """Put ``record`` in the rows under its key (a new key is counted in :meth:`highest`)."""
        rows, key = self.rows, self.key_of(record)
        new = key not in rows
        rows[key] = record
        if new and self._indexed == len(rows) - 1:
            for (at, per_document), found in self._highest.items():
                if key[at].isdigit():
                    head = key[:at] if per_document else ()
                    found[head] = max(found.get(head, 0), int(key[at]))
            for positions, groups in self._groups.items():
                groups.setdefault(tuple(key[i] for i in positions), []).append(key)
            self._indexed = len(rows)

    def remove(self, key: tuple[str, ...]) -> None:
        self.rows.pop(key, None)
        self._forget()

    def having(self, positions: tuple[int, ...], parts: tuple[str, ...]) -> list[dict[str, object]]:
        """The records whose key has ``parts`` at ``positions``, in the rows' order (one scan of the keys
        for each set of positions, kept up to date by :meth:`store`)."""
        rows = self.rows
        self._current(rows)
        groups = self._groups.get(positions)
        if groups is None:
            groups = self._groups[positions] = {}
            for key in rows:
                groups.setdefault(tuple(key[i] for i in positions), []).append(key)
        return [rows[key] for key in groups.get(parts, ())]

    def highest(self, at: int, head: tuple[str, ...] | None) -> int:
        """The highest number (a key part of digits only) at key position ``at`` of the rows whose keys
        begin with ``head`` (``None``: of all rows); 0 when there is none. One scan of the keys, kept up to
        date by :meth:`store` after it; rows changed any other way (their count differs) are scanned again."""
        rows = self.rows
        self._current(rows)
        found = self._highest.get((at, head is not None))
        if found is None:
            found = self._highest[(at, head is not None)] = {}
            for key in rows:
                if key[at].isdigit():
                    part = key[:at] if head is not None else ()
                    found[part] = max(found.get(part, 0), int(key[at]))
        return found.get(head if head is not None else (), 0)


class Data:
    """The tables of a model, each service's generated on its first use; ``reset`` returns every generated
    service to the records it was generated with.

    A service's records are the same whichever service was asked for first: they are made as if every
    service were generated at once, in (service, entity set) order: filled, then ``--data`` files put in,
    then linked table by table, where a reference into a set that comes earlier in that order sees that
    set's linked records (that service is generated first) and one into a later set its records before
    linking (:meth:`filled`: the service is filled, not generated)."""

    def __init__(self, model: Model, rows: int = ROWS, folder: Path | None = None) -> None:
        self.model, self.rows = model, rows
        self.lock = threading.RLock()
        self.linker: Linker | None = None  # set by the server (References.link); None: records stay as filled
        self.preparer: Callable[[Table, Rows], None] | None = None  # set by the server (DocumentFlows.prepare)
        self._tables: dict[str, dict[str, Table]] = {}  # service -> entity set -> table, made on first use
        self._loaded: dict[str, dict[str, Rows]] = {}  # service -> entity set -> the records of --data
        self._filled: dict[str, dict[str, Rows]] = {}  # service -> entity set -> records before linking
        self._initial: dict[str, dict[str, Rows]] = {}  # service -> entity set -> records as generated
        self._targets: dict[tuple[str, str | None], Table | None] = {}  # (service, type IRI) -> its table
        if folder is not None:
            self.load(folder)

    # ------------------------------------------------------------ tables
    def tables_of(self, service: str) -> dict[str, Table]:
        """The tables of ``service`` by entity set name (its model is read on first use; no records made)."""
        found = self._tables.get(service)
        if found is None:
            with self.lock:
                found = self._tables.get(service)
                if found is None:
                    info = self.model.services[service]
                    found = {
                        name: Table(self, service, name, self.model.types[t], creatable)
                        for name, (t, creatable) in sorted(info.sets.items())
                        if t in self.model.types
                    }
                    self._tables[service] = found
        return found

    def table(self, service: str, name: str) -> Table | None:
        return self.tables_of(service).get(name) if service in self.model.heads else None

    def all_tables(self) -> list[Table]:
        """Every table of every service, by (service, entity set): reads every service's model."""
        return [t for service in self.model.heads for _name, t in sorted(self.tables_of(service).items())]

    @property
    def services(self) -> list[str]:
        """The services whose records were generated, sorted."""
        return sorted(self._initial)

    def parents(self, table: Table) -> tuple[list[Table], tuple[str, ...]]:
        """The sets of the service keyed by the longest proper prefix of this set's key (SAP's key
        convention: ``A_SalesOrder`` keyed ``SalesOrder`` for ``A_SalesOrderItem`` keyed ``SalesOrder,
        SalesOrderItem``), and that prefix; none for a set without a parent."""
        own = table.keys
        found = [
            t
            for _name, t in sorted(self.tables_of(table.service).items())
            if 0 < len(t.keys) < len(own) and t.keys == own[: len(t.keys)]
        ]
        if not found:
            return [], ()
        size = max(len(t.keys) for t in found)
        return [t for t in found if len(t.keys) == size], tuple(own[:size])

    # ------------------------------------------------------------ generation
    def filled(self, service: str) -> dict[str, Rows]:
        """The records of ``service`` before linking: generated (parents first), or from ``--data``."""
        with self.lock:
            found = self._filled.get(service)
            if found is None:
                tables = self.tables_of(service)
                found = {name: {} for name in tables}
                documents: dict[str, list[int]] = {}  # entity set -> the document number of each record
                for table in sorted(tables.values(), key=lambda t: (len(t.keys), t.name)):
                    parents, shared = self.parents(table)
                    parent = (found[parents[0].name], documents[parents[0].name]) if parents else None
                    documents[table.name] = _fill(table, found[table.name], self.rows, parent, shared)
                    if self.preparer is not None:
                        self.preparer(table, found[table.name])
                _total(self, tables, found)  # headers hold the sum of their items' amounts
                found.update(copy.deepcopy(self._loaded.get(service, {})))
                self._filled[service] = found
            return found

    def generate(self, service: str) -> None:
        """Make the records of ``service`` (once; thread-safe): filled, then each generated table linked."""
        with self.lock:
            if service in self._initial:
                return
            tables = self.tables_of(service)
            work = copy.deepcopy(self.filled(service))
            linker = self.linker
            if linker is not None:
                for name in sorted(set(tables) - set(self._loaded.get(service, {}))):
                    work[name] = linker(tables[name], work[name], lambda s, n: self._rows_at(service, work, s, n))
            self._initial[service] = copy.deepcopy(work)
            for name, table in tables.items():
                table.rows = work[name]

    def _rows_at(self, service: str, work: dict[str, Rows], other: str, name: str) -> Rows | None:
        """The records of ``other``'s set ``name`` as they are while ``service`` is linked (see the class)."""
        if other == service:
            return work.get(name)
        if other not in self.model.heads:
            return None
        if other < service:
            self.generate(other)
            return self._initial[other].get(name)
        return self.filled(other).get(name)

    def reset(self) -> None:
        """Every generated service back to the records it was generated with (the others stay ungenerated).
        A table whose records equal those it was generated with keeps them (and its indexes): comparing is
        some twenty times cheaper than copying, and a reset between tasks finds most tables unchanged."""
        with self.lock:
            for service in self.services:
                initial = self._initial[service]
                for name, table in self.tables_of(service).items():
                    if table.rows != initial[name]:
                        table.rows = copy.deepcopy(initial[name])

    def _put(self, service: str, rows: dict[str, Rows]) -> None:
        for name, table in self.tables_of(service).items():
            table.rows = rows[name]

    def save(self) -> Saved:
        """A copy of the records of every generated service (a change set's, to :meth:`restore`)."""
        with self.lock:
            return {s: copy.deepcopy({n: t.rows for n, t in self.tables_of(s).items()}) for s in self.services}

    def restore(self, saved: Saved) -> None:
        """Put back what :meth:`save` copied; a service generated since goes back to its generated records."""
        with self.lock:
            for service in self.services:
                self._put(service, saved[service] if service in saved else copy.deepcopy(self._initial[service]))

    def dump(self) -> dict[str, dict[str, list[dict[str, object]]]]:
        """``{service: {entity set: [records]}}`` in the stored (canonical) form, every service's (generated
        now where it was not yet)."""
        out: dict[str, dict[str, list[dict[str, object]]]] = {}
        for table in self.all_tables():
            out.setdefault(table.service, {})[table.name] = list(table.rows.values())
        return out

    def load(self, folder: Path) -> None:
        """Read ``folder/SERVICE/EntitySet.json`` where such a file exists: those sets hold these records
        instead of generated ones (read now, so a bad file stops the start)."""
        for path in sorted(Path(folder).glob("*/*.json")):
            table = self.table(path.parent.name, path.stem)
            if table is None:
                raise ServeDataError(f"{path}: no entity set {path.stem} in service {path.parent.name}")
            rows: Rows = {}
            for i, record in enumerate(_json_list(path)):
                row = _canonical_record(table, record, i, path)
                rows[table.key_of(row)] = row
            self._loaded.setdefault(table.service, {})[table.name] = rows

    # ------------------------------------------------------------ navigation
    def target(self, table: Table, nav: Nav) -> Table | None:
        """The table a navigation property leads to: an entity set of its target type in the same service
        (the first by name; found once, as a service's tables never change once made)."""
        key = (table.service, nav.target)
        if key not in self._targets:
            self._targets[key] = next(
                (t for _name, t in sorted(self.tables_of(table.service).items()) if t.type.iri == nav.target),
                None,
            )
        return self._targets[key]

    def related(
        self, table: Table, record: dict[str, object], nav: Nav
    ) -> tuple[Table | None, list[dict[str, object]]]:
        target = self.target(table, nav)
        if target is None:
            return None, []
        keys = target.keys
        shared = [i for i, k in enumerate(keys) if k in table.type.props]
        if not shared:
            return target, []
        # found by the key tuples the rows are stored under (each part is str(value))
        return target, target.having(tuple(shared), tuple(str(record.get(keys[i])) for i in shared))

    def composed(self, table: Table, record: dict[str, object]) -> Iterator[tuple[Table, dict[str, object]]]:
        """``record`` and, recursively, the records it is composed of, each once: those of a to-many
        navigation whose key repeats the whole key of its parent (a sales order's items, their schedule
        lines), what a DELETE removes with it (``serve/changes.py``)."""
        seen: set[tuple[str, str, tuple[str, ...]]] = set()
        work = [(table, record)]
        while work:
            t, r = work.pop()
            at = (t.service, t.name, t.key_of(r))
            if at in seen:
                continue
            seen.add(at)
            yield t, r
            for nav in sorted(t.type.navs.values(), key=lambda n: n.name, reverse=True):
                target, children = self.related(t, r, nav)
                if target is not None and nav.to_many and set(t.keys) <= set(target.keys) and target is not t:
                    work.extend((target, child) for child in reversed(children))


def _total(data: Data, tables: dict[str, Table], found: dict[str, Rows]) -> None:
    """Each generated header amount of :data:`TOTALS` becomes the sum of its items' amounts (over every
    child set that has the item amount), written with two places as generated amounts are (fewer where
    the header property's Scale allows fewer)."""
    sums: dict[tuple[str, str], dict[tuple[str, ...], Decimal]] = {}  # (header set, amount) -> header -> sum
    for table in tables.values():
        parents, shared = data.parents(table)
        for parent in parents:
            for head_prop, item_prop in TOTALS.items():
                if head_prop in parent.type.props and item_prop in table.type.props:
                    by_head = sums.setdefault((parent.name, head_prop), {})
                    for item in found[table.name].values():
                        amount = _decimal_of(item, item_prop)
                        if amount is not None:
                            owner = tuple(str(item.get(k)) for k in shared)
                            by_head[owner] = by_head.get(owner, Decimal(0)) + amount
    for (name, head_prop), by_head in sorted(sums.items()):
        prop = tables[name].type.props[head_prop]
        v2 = tables[name].type.version.startswith(("1", "2"))
        for head_key, head in found[name].items():
            if head_key in by_head:
                total = by_head[head_key]
                places = 2 if prop.scale is None else min(prop.scale, 2)  # as the generated amounts are written
                total = total.quantize(Decimal(1).scaleb(-places))
                head[head_prop] = canonical(str(total), prop.edm_type, v2)


def _decimal_of(record: dict[str, object], prop: str) -> Decimal | None:
    """``record``'s ``prop`` as a number (None when empty or not a number)."""
    value = record.get(prop)
    try:
        return None if value in (None, "") else Decimal(str(value))
    except InvalidOperation:
        return None


def next_key(table: Table, key: str, record: dict[str, object]) -> str:
    """The next free number; an item's number is the next step of ten within its document (``000030``
    after ``000020``), as SAP numbers items; a year (``MaterialDocumentYear``) is that of the record's
    posting or document date, else this year (:func:`year_of`)."""
    prop, at = table.type.props[key], table.keys.index(key)
    if is_year(prop):
        return year_of(table, record)
    item = at > 0 and is_item_number(prop)
    # read from the key tuples the rows are stored under (each part is str(value)), not from the rows
    highest = table.highest(at, tuple(str(record.get(k)) for k in table.keys[:at]) if item else None)
    value = str((highest // 10 + 1) * 10 if item else highest + 1)
    width = prop.max_length or 0
    return value.zfill(min(width, 10)) if prop.edm_type == "Edm.String" and width else value


#: The dates a document's fiscal year follows, the first that the record holds.
YEAR_DATES = ("PostingDate", "DocumentDate", "DocumentDateTime", "CreationDate")


def year_of(table: Table, record: dict[str, object]) -> str:
    """The year of the record's posting (or document, or creation) date, else the current UTC year."""
    for name in YEAR_DATES:
        text = str(record.get(name) or "")
        if name in table.type.props and text[:4].isdigit():
            return text[:4]
    return str(dt.datetime.now(dt.UTC).year)


def _json_list(path: Path) -> list[JSONObject]:
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ServeDataError(f"{path}: not a JSON file: {exc}") from None
    value = value.get("d", value) if isinstance(value, dict) else value
    value = value.get("results", value.get("value")) if isinstance(value, dict) else value
    if not isinstance(value, list) or not all(isinstance(r, dict) for r in value):
        raise ServeDataError(f"{path}: expected a JSON list of records")
    return value


def _canonical_record(table: Table, record: JSONObject, i: int, path: Path) -> dict[str, object]:
    v2 = table.type.version.startswith("2") or table.type.version.startswith("1")
    row = {}
    for name, value in record.items():
        prop = table.type.props.get(name)
        if prop is not None and not prop.collection and prop.complex_type is None:
            row[name] = canonical(value, prop.edm_type, v2)
    missing = [k for k in table.keys if row.get(k) is None]
    if missing:
        raise ServeDataError(f"{path}: record {i + 1} lacks its key {', '.join(missing)}")
    return row


def _fill(
    table: Table, out: Rows, rows: int, parent: tuple[Rows, list[int]] | None, shared: tuple[str, ...]
) -> list[int]:
    """``rows`` records into ``out``; a child set's records belong ``ITEMS`` to each of the first ``rows``
    records of its parent (``parent``: its records and their document numbers), numbered per parent
    (``000010``, ``000020``, ... where the item key is a short numeric text). Returns the document number
    of each record: a root record's is its own (``i``), a child's its parent's, which its short reference
    fields take (:func:`is_reference_number`), so an item of delivery 3 refers to sales order 3 as the
    delivery does, and never to a number past the ``rows`` records of the set it refers to; a reference to
    an item takes the item's own number (:func:`_is_item_reference`)."""
    v2 = table.type.version.startswith(("1", "2"))
    heads, numbers = (list(parent[0].values()), parent[1]) if parent is not None else ([], [])
    documents: list[int] = []
    for i in range(min(len(heads), rows) * ITEMS if heads else rows):
        document = numbers[(i // ITEMS) % len(heads)] if heads else i
        record: dict[str, object] = {}
        for p in table.type.props.values():
            follows = is_reference_number(p) or (heads and not p.key and p.name in org_units.ORG_UNIT_PROPS)
            value = generated(p, table.name, document if follows else i)
            if heads and p.name in shared:
                value = str(heads[(i // ITEMS) % len(heads)][p.name])
            elif heads and is_item_number(p) and (p.key or _is_item_reference(p)):
                value = _item_number(p, i)
            if value is not None:
                record[p.name] = canonical(value, p.edm_type, v2)
        org_units.derive(table.type, table.keys, record, i)
        movement_types.derive(table.type, table.keys, record)
        _name_party(table, record)
        if out.setdefault(table.key_of(record), record) is record:
            documents.append(document)
    return documents


#: Words of the generated party names (:func:`party_name`).
NAME_WORDS = (
    ("Alpine", "Baltic", "Coastal", "Delta", "Eastern", "Falcon", "Granite", "Harbor", "Inland", "Juniper"),
    ("Tools", "Foods", "Motors", "Textiles", "Logistics", "Chemicals", "Metals", "Electronics", "Paper", "Energy"),
)


def party_name(number: int) -> str:
    """The generated name of party ``number`` (``Alpine Foods`` for 10): made of words, not of the number, so
    a name cannot be told from the party's number (a task asking for it must be answered by reading it);
    distinct for numbers below 100, with the number appended from 100 on."""
    first, second = NAME_WORDS
    name = f"{first[number % 10]} {second[(number // 10) % 10]}"
    return name if number < 100 else f"{name} {number}"


def _name_party(table: Table, record: dict[str, object]) -> None:
    """A party's master record (keyed by one of :data:`PARTY_KEYS`) has the party's one name in each of its
    :data:`PARTY_NAMES`: customer 3, supplier 3 and business partner 3 have the same name."""
    if len(table.keys) != 1 or table.keys[0] not in PARTY_KEYS:
        return
    number = str(record.get(table.keys[0]) or "")
    if not number.isdigit():
        return
    name = party_name(int(number))
    for prop in table.type.props.values():
        if prop.name in PARTY_NAMES and prop.edm_type == "Edm.String" and (prop.max_length or 80) >= len(name):
            record[prop.name] = name


def is_reference_number(prop: Prop) -> bool:
    """A field that holds the number of another record (``ReferenceSDDocument``, ``SoldToParty``): a short
    text without a code list that is not part of the key (:func:`_string` numbers it like a key)."""
    return not prop.key and prop.edm_type == "Edm.String" and not prop.codes and 0 < (prop.max_length or 0) <= 10


def _is_item_reference(prop: Prop) -> bool:
    """A reference to another document's item (``ReferenceSDDocumentItem``, ``PurchaseOrderItem``): in a
    generated item it is the item's own number, so item 000020 of delivery 3 refers to item 000020 of sales
    order 3 (the document's number would name no item, or the wrong one: ``000020`` in delivery 20)."""
    return is_reference_number(prop) and prop.name.endswith("Item")


def is_item_number(prop: Prop) -> bool:
    """An item's own key that SAP numbers in steps of ten: a numeric text of up to six digits."""
    return prop.edm_type == "Edm.String" and not prop.codes and 0 < (prop.max_length or 0) <= ITEM_WIDTH


def _item_number(prop: Prop, i: int) -> str:
    width = prop.max_length or ITEM_WIDTH
    return str((i % ITEMS + 1) * 10).zfill(width)[-width:]


def is_year(prop: Prop) -> bool:
    """A year as SAP writes it (``FiscalYear``, ``MaterialDocumentYear``): a four-character text named
    ...Year, without a code list."""
    return prop.edm_type == "Edm.String" and prop.max_length == 4 and not prop.codes and prop.name.endswith("Year")


def generated(prop: Prop, set_name: str, i: int) -> str | None:
    """A deterministic, valid value for the ``i``-th record (None where no safe value exists). A year is
    the year of the generated dates (:data:`START`), as a fiscal year follows the posting date."""
    if prop.collection or prop.complex_type is not None:
        return None
    if prop.codes:
        return prop.codes[i % len(prop.codes)]
    if is_year(prop):
        return str(START.year)
    make = _MAKERS.get(prop.edm_type)
    return make(prop, set_name, i) if make else None


def _string(prop: Prop, set_name: str, i: int) -> str:
    """Short fields (keys, and references such as SoldToParty or Plant) get numbers that match the
    generated keys of the entity sets they refer to; longer ones a readable text."""
    width = prop.max_length or 40
    if prop.key or width <= 10:
        return str(i + 1).zfill(min(width, 10))[-width:]
    number = str(i + 1)
    return f"{prop.name[: width - len(number) - 1]} {number}"


def _decimal(prop: Prop, set_name: str, i: int) -> str:
    """``10.00``, ``20.00``, ... within the property's Precision and Scale: fewer places after the point
    where its Scale allows fewer, and small numbers where its Precision leaves few digits before it."""
    places = 2 if prop.scale is None else min(prop.scale, 2)
    room = None if prop.precision is None else max(0, prop.precision - (prop.scale or 0))
    number = (i + 1) * 10
    if room is not None and number >= 10**room:
        number = i % (10**room - 1) + 1 if room > 0 else 0
    fraction = "5".ljust(places, "0") if room == 0 and places else "0" * places
    return f"{number}.{fraction}" if places else str(number)


def _day(i: int) -> dt.date:
    return START + dt.timedelta(days=i)


_MAKERS = {
    "Edm.String": _string,
    "Edm.Boolean": lambda p, s, i: "true" if i % 2 == 0 else "false",
    "Edm.Byte": lambda p, s, i: str((i + 1) % 256),
    "Edm.SByte": lambda p, s, i: str((i + 1) % 128),
    "Edm.Int16": lambda p, s, i: str(i + 1),
    "Edm.Int32": lambda p, s, i: str(i + 1),
    "Edm.Int64": lambda p, s, i: str(i + 1),
    "Edm.Decimal": _decimal,
    "Edm.Double": lambda p, s, i: f"{(i + 1) * 10}.0",
    "Edm.Single": lambda p, s, i: f"{(i + 1) * 10}.0",
    "Edm.DateTime": lambda p, s, i: f"{_day(i).isoformat()}T00:00:00Z",
    "Edm.DateTimeOffset": lambda p, s, i: f"{_day(i).isoformat()}T00:00:00Z",
    "Edm.Date": lambda p, s, i: _day(i).isoformat(),
    "Edm.TimeOfDay": lambda p, s, i: "12:00:00",
    "Edm.Time": lambda p, s, i: "PT12H00M00S",
    # by property name only: sets that share a GUID key (a project and its 1:1 extensions) match
    "Edm.Guid": lambda p, s, i: str(uuid.uuid5(GUIDS, f"{p.name}/{i}")),
}
