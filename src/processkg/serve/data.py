"""The server's data: one table per entity set, filled deterministically from the metadata.

Every entity set gets ``ROWS`` generated records (values derived from the property's Edm type,
facets and value-help codes, so they are valid against the payload shapes), or the records of
``--data DIR`` (``DIR/SERVICE/EntitySet.json``, a JSON list of objects in either OData JSON
format). Related records are found by SAP's key convention: an item's key repeats its header's
key properties by name (``SalesOrder`` in ``A_SalesOrderItem``), so navigation and deep insert
match on the properties the two types share with the target's key. A child set's generated records
belong ``ITEMS`` to a parent record, numbered per document (``000010``, ``000020``); the server then
points every other reference at an existing record (``References.link``).
"""

from __future__ import annotations

import copy
import datetime as dt
import json
import threading
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeAlias

from processkg.aliases import JSONObject
from processkg.errors import ServeDataError
from processkg.serve.values import canonical
from processkg.services.model import Model, Nav, Prop, TypeInfo

Rows: TypeAlias = dict[tuple[str, ...], dict[str, object]]
"""A table's records by key (the key property values in key order)."""

ROWS = 20
ITEMS = 2  # generated items per generated document
ITEM_WIDTH = 6  # SAP's item numbers: POSNR, NUMC 6
START = dt.date(2026, 1, 1)
GUIDS = uuid.UUID("6f0d3c9e-9a57-4c1e-9d61-3b2f3c8e0a11")


@dataclass
class Table:
    """The records of one entity set, by key tuple, in insertion order."""

    service: str
    name: str
    type: TypeInfo
    creatable: bool = True
    rows: Rows = field(default_factory=dict)

    @property
    def keys(self) -> list[str]:
        return [p.name for p in self.type.props.values() if p.key]

    def key_of(self, record: dict[str, object]) -> tuple[str, ...]:
        return tuple(str(record.get(k)) for k in self.keys)


class Data:
    """All tables of a model; ``reset`` returns to the state the server started with."""

    def __init__(self, model: Model, rows: int = ROWS, folder: Path | None = None) -> None:
        self.model = model
        self.lock = threading.RLock()
        self.tables = {
            (s.name, name): Table(s.name, name, model.types[t], creatable)
            for s in model.services.values()
            for name, (t, creatable) in sorted(s.sets.items())
            if t in model.types
        }
        for table in sorted(self.tables.values(), key=lambda t: (len(t.keys), t.service, t.name)):
            parents, shared = self.parents(table)
            _fill(table, rows, parents[0] if parents else None, shared)
        self.generated = set(self.tables)  # the tables whose records were generated, not loaded
        if folder is not None:
            self.load(folder)
        self._initial = self.snapshot()

    def snapshot(self) -> dict[tuple[str, str], Rows]:
        return copy.deepcopy({k: t.rows for k, t in self.tables.items()})

    def settle(self) -> None:
        """Make the records as they are now the state ``reset`` returns to (after ``references.link``)."""
        self._initial = self.snapshot()

    def parents(self, table: Table) -> tuple[list[Table], tuple[str, ...]]:
        """The sets of the service keyed by the longest proper prefix of this set's key (SAP's key
        convention: ``A_SalesOrder`` keyed ``SalesOrder`` for ``A_SalesOrderItem`` keyed ``SalesOrder,
        SalesOrderItem``), and that prefix; none for a set without a parent."""
        own = table.keys
        found = [
            t
            for (service, _name), t in sorted(self.tables.items())
            if service == table.service and 0 < len(t.keys) < len(own) and t.keys == own[: len(t.keys)]
        ]
        if not found:
            return [], ()
        size = max(len(t.keys) for t in found)
        return [t for t in found if len(t.keys) == size], tuple(own[:size])

    def table(self, service: str, name: str) -> Table | None:
        return self.tables.get((service, name))

    def reset(self) -> None:
        with self.lock:
            for key, rows in copy.deepcopy(self._initial).items():
                self.tables[key].rows = rows

    def restore(self, saved: dict[tuple[str, str], Rows]) -> None:
        """Put back the rows a change set copied before it started (``batch.copy_tables``)."""
        for key, rows in saved.items():
            self.tables[key].rows = rows

    def dump(self) -> dict[str, dict[str, list[dict[str, object]]]]:
        """``{service: {entity set: [records]}}`` in the stored (canonical) form."""
        out: dict[str, dict[str, list[dict[str, object]]]] = {}
        for (service, name), table in sorted(self.tables.items()):
            out.setdefault(service, {})[name] = list(table.rows.values())
        return out

    def load(self, folder: Path) -> None:
        """Replace generated records with ``folder/SERVICE/EntitySet.json`` where such a file exists."""
        for path in sorted(Path(folder).glob("*/*.json")):
            table = self.table(path.parent.name, path.stem)
            if table is None:
                raise ServeDataError(f"{path}: no entity set {path.stem} in service {path.parent.name}")
            table.rows = {}
            self.generated.discard((table.service, table.name))
            for i, record in enumerate(_json_list(path)):
                row = _canonical_record(table, record, i, path)
                table.rows[table.key_of(row)] = row

    def target(self, table: Table, nav: Nav) -> Table | None:
        """The table a navigation property leads to: an entity set of its target type in the same service."""
        return next(
            (t for (svc, _), t in sorted(self.tables.items()) if svc == table.service and t.type.iri == nav.target),
            None,
        )

    def related(
        self, table: Table, record: dict[str, object], nav: Nav
    ) -> tuple[Table | None, list[dict[str, object]]]:
        target = self.target(table, nav)
        if target is None:
            return None, []
        shared = [k for k in target.keys if k in table.type.props]
        if not shared:
            return target, []
        return target, [r for r in target.rows.values() if all(str(r.get(k)) == str(record.get(k)) for k in shared)]


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


def _fill(table: Table, rows: int, parent: Table | None, shared: tuple[str, ...]) -> None:
    """``rows`` records; a child set's records belong ``ITEMS`` to each of the first ``rows`` parent records, numbered per parent
    (``000010``, ``000020``, ... where the item key is a short numeric text)."""
    v2 = table.type.version.startswith(("1", "2"))
    heads = list(parent.rows.values()) if parent is not None else []
    for i in range(min(len(heads), rows) * ITEMS if heads else rows):
        record: dict[str, object] = {}
        for p in table.type.props.values():
            value = generated(p, table.name, i)
            if heads and p.name in shared:
                value = str(heads[(i // ITEMS) % len(heads)][p.name])
            elif heads and p.key and is_item_number(p):
                value = _item_number(p, i)
            if value is not None:
                record[p.name] = canonical(value, p.edm_type, v2)
        table.rows.setdefault(table.key_of(record), record)


def is_item_number(prop: Prop) -> bool:
    """An item's own key that SAP numbers in steps of ten: a numeric text of up to six digits."""
    return prop.edm_type == "Edm.String" and not prop.codes and 0 < (prop.max_length or 0) <= ITEM_WIDTH


def _item_number(prop: Prop, i: int) -> str:
    width = prop.max_length or ITEM_WIDTH
    return str((i % ITEMS + 1) * 10).zfill(width)[-width:]


def generated(prop: Prop, set_name: str, i: int) -> str | None:
    """A deterministic, valid value for the ``i``-th record (None where no safe value exists)."""
    if prop.collection or prop.complex_type is not None:
        return None
    if prop.codes:
        return prop.codes[i % len(prop.codes)]
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
    "Edm.Decimal": lambda p, s, i: f"{(i + 1) * 10}.00",
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
