"""Referential checks: a written entity may only point at records that exist in the server's data.

The metadata says what a payload may contain; only the data can say whether the sales order an
item belongs to, or the customer an order is sold to, exists. A reference is found in one of
four ways, the first that applies to a property winning:

1. **Referential constraint**: a to-one navigation property whose constraint names the local
   property (``to_SoldToParty``: ``SoldToParty`` -> ``A_Customer.Customer``);
2. **Parent by key** (the convention of :mod:`processkg.serve.data`): an entity set of the same
   service whose key properties are a proper part of this type's key, by name, is its parent
   (``A_SalesOrder`` keyed ``SalesOrder`` for ``A_SalesOrderItem`` keyed ``SalesOrder, SalesOrderItem``);
   the largest such key wins;
3. **SAP's master-data key convention**: a property named like the key of a master record, or by
   one of SAP's role names for it (:data:`MASTER_KEYS`: ``SoldToParty`` names a customer,
   ``Material`` a product), refers to the entity sets, in any service, keyed by that one property;
4. **SAP's key names across services** (:meth:`References._documents`): a type holding all key
   properties of a set named after its last key refers to it (``PurchaseOrder`` -> ``A_PurchaseOrder``).

Not checked: a property with a code list (its codes decide: ``invalid-code``), a null or empty
value, references to entity sets the store does not serve, and references from a deep-insert
child to the parent created with it.

A created child without its parent's key is ``missing-parent-key``. :meth:`References.link` makes
the generated records hold existing keys in every reference found this way.
"""

from __future__ import annotations

from dataclasses import dataclass

from processkg.aliases import JSONObject, JSONValue
from processkg.serve import odata_json
from processkg.serve.data import Data, Table
from processkg.serve.values import canonical

#: Master record key -> the property names that hold it: the key itself and SAP's role names
#: (data elements with the key's domain: KUNAG/KUNWE/KUNRE/KUNRG are customers, MATNR a product).
MASTER_KEYS = {
    "Customer": ("Customer", "SoldToParty", "ShipToParty", "BillToParty", "PayerParty"),
    "Supplier": ("Supplier", "InvoicingParty"),
    "Product": ("Product", "Material"),
    "Plant": ("Plant", "ProductionPlant", "SupplyingPlant"),
    "BusinessPartner": ("BusinessPartner",),
}
SHOWN = 5  # existing keys quoted in a repair hint
PARENT = "its parent, by SAP's key convention"


@dataclass(frozen=True)
class Reference:
    """``props`` of a type hold the ``keys`` of a record in one of ``targets``."""

    props: tuple[str, ...]
    targets: tuple[tuple[Table, tuple[str, ...]], ...]
    how: str  # why this is a reference, for the message


class References:
    """The references of every type, found once per (service, type) and kept."""

    def __init__(self, data: Data, constraints: dict[str, list[tuple[str, str]]]) -> None:
        self.data, self.constraints = data, constraints
        self.cache: dict[tuple[str, str], list[Reference]] = {}

    def of(self, table: Table) -> list[Reference]:
        key = (table.service, table.name)
        if key not in self.cache:
            self.cache[key] = self._find(table)
        return self.cache[key]

    def _find(self, table: Table) -> list[Reference]:
        found = self._constrained(table)
        covered = {p for r in found for p in r.props}
        parent = self._parent(table)
        if parent is not None and not covered & set(parent.props):
            found.append(parent)
            covered |= set(parent.props)
        for ref in self._masters(table) + self._documents(table):
            if not covered & set(ref.props):
                found.append(ref)
                covered |= set(ref.props)
        return [r for r in found if not any(table.type.props[p].codes for p in r.props)]

    def _constrained(self, table: Table) -> list[Reference]:
        found = []
        for nav in sorted(table.type.navs.values(), key=lambda n: n.name):
            pairs = self.constraints.get(nav.iri, [])
            target = self.data.target(table, nav)
            if nav.to_many or not pairs or target is None or not all(p in table.type.props for p, _ in pairs):
                continue
            props, keys = tuple(p for p, _ in pairs), tuple(r for _, r in pairs)
            found.append(Reference(props, ((target, keys),), f"referential constraint of {nav.name}"))
        return found

    def _parent(self, table: Table) -> Reference | None:
        """The sets of the service keyed by the longest proper prefix of this type's key."""
        parents, keys = self.data.parents(table)
        if not parents:
            return None
        return Reference(keys, tuple((t, keys) for t in parents), PARENT)

    # ------------------------------------------------------------ generated records
    def link(self) -> int:
        """Make every reference of a generated record hold the key of an existing record: the ``i``-th
        record refers to the ``i``-th record of the first target (cycling). Returns the number of
        values changed; the records are re-keyed where a key property changed."""
        changed = 0
        for key in sorted(self.data.generated):
            table = self.data.tables[key]
            rows = list(table.rows.values())
            for i, record in enumerate(rows):
                changed += self._link_record(table, record, i)
            table.rows = {}
            for record in rows:
                table.rows.setdefault(table.key_of(record), record)
        return changed

    def _link_record(self, table: Table, record: dict[str, object], i: int) -> int:
        changed = 0
        for ref in self.of(table):
            values = tuple(str(record.get(p)) for p in ref.props)
            if ref.how == PARENT or any(_exists(t, keys, values) for t, keys in ref.targets):
                continue
            target, keys = next(((t, k) for t, k in ref.targets if t.rows), (None, ()))
            if target is None:
                continue
            rows = list(target.rows.values())
            chosen = rows[i % len(rows)]
            for prop, k in zip(ref.props, keys, strict=True):
                record[prop] = chosen.get(k)
            changed += 1
        return changed

    def _masters(self, table: Table) -> list[Reference]:
        found = []
        for key, names in sorted(MASTER_KEYS.items()):
            if table.keys == [key]:
                continue  # the master itself
            masters = [t for _k, t in sorted(self.data.tables.items()) if t.keys == [key]]
            exact = [t for t in masters if t.name.rpartition("_")[2] == key]  # A_Product, not A_ProductSales
            masters = exact or masters
            same = [t for t in masters if t.service == table.service]
            targets = tuple((t, (key,)) for t in (same or masters))
            for name in names:
                if name in table.type.props and targets:
                    found.append(Reference((name,), targets, f"SAP's key convention: {name} names a {key}"))
        return found

    def _documents(self, table: Table) -> list[Reference]:
        """SAP's key names across services: a type that holds all key properties of a set named after
        its last key (``PurchaseOrder``, ``PurchaseOrderItem`` of ``A_PurchaseOrderItem``) refers to it,
        unless they are all part of its own key (itself, its parent: see ``_parent``); the longest such key first, the same service's
        sets before other services'."""
        groups: dict[tuple[str, ...], list[Table]] = {}
        for (_service, name), t in sorted(self.data.tables.items()):
            keys = tuple(t.keys)
            named = bool(keys) and name.rpartition("_")[2] == keys[-1]
            if named and all(k in table.type.props for k in keys) and not set(keys) <= set(table.keys):
                groups.setdefault(keys, []).append(t)
        found = []
        for keys, sets in sorted(groups.items(), key=lambda kv: (-len(kv[0]), kv[0])):
            same = [t for t in sets if t.service == table.service]
            targets = tuple((t, keys) for t in (same or sets))
            found.append(Reference(keys, targets, f"SAP's key names: {', '.join(keys)} name a {sets[0].name}"))
        return found

    # ------------------------------------------------------------ checking
    def check(
        self,
        table: Table,
        payload: JSONObject,
        pointer: str = "",
        inherited: frozenset[str] = frozenset(),
        changed: frozenset[str] | None = None,
    ) -> list[dict[str, str]]:
        """One error detail per reference in ``payload`` (deep insert included) that finds no record.

        ``inherited``: properties a deep-insert child takes from the parent created with it (not
        checked); ``changed``: on an update, the properties the client sets (only references that
        include one are checked, against ``payload``, the record as it will be)."""
        details = []
        v2 = odata_json.is_v2(table.type)
        for ref in self.of(table):
            if set(ref.props) & inherited or (changed is not None and not set(ref.props) & changed):
                continue
            if not all(payload.get(p) not in (None, "") for p in ref.props):
                if ref.how == PARENT and changed is None:
                    details.append(_missing_parent(table, ref, payload, pointer))
                continue
            values = tuple(str(canonical(payload[p], table.type.props[p].edm_type, v2)) for p in ref.props)
            if not any(_exists(t, keys, values) for t, keys in ref.targets):
                details.append(_detail(ref, values, pointer))
        for name, value in sorted(payload.items()):
            nav = table.type.navs.get(name)
            target = self.data.target(table, nav) if nav is not None else None
            if target is not None:
                shared = frozenset(k for k in target.keys if k in table.type.props)
                for i, child in _children(value):
                    details += self.check(target, child, f"{pointer}/{name}{i}", shared)
        return details


def _children(value: JSONValue) -> list[tuple[str, JSONObject]]:
    items = value.get("results") if isinstance(value, dict) and "results" in value else value
    if isinstance(items, list):
        return [(f"/{i}", c) for i, c in enumerate(items) if isinstance(c, dict)]
    return [("", items)] if isinstance(items, dict) else []


def _exists(table: Table, keys: tuple[str, ...], values: tuple[str, ...]) -> bool:
    if list(keys) == table.keys:
        return values in table.rows
    return any(tuple(str(r.get(k)) for k in keys) == values for r in table.rows.values())


def _detail(ref: Reference, values: tuple[str, ...], pointer: str) -> dict[str, str]:
    given = ", ".join(f"{p}={v!r}" for p, v in zip(ref.props, values, strict=True))
    where = " or ".join(f"{t.name} ({t.service})" for t, _k in ref.targets)
    return {
        "code": "unknown-reference",
        "target": f"{pointer}/{ref.props[-1]}",
        "message": f"{given} refers to no record of {where} ({ref.how}){_existing(ref)}; {_repair(ref)}",
    }


def _missing_parent(table: Table, ref: Reference, payload: JSONObject, pointer: str) -> dict[str, str]:
    """A child created on its own without the key of the parent it belongs to: never numbered."""
    missing = [p for p in ref.props if payload.get(p) in (None, "")]
    parent = ref.targets[0][0]
    navs = sorted(n.name for n in parent.type.navs.values() if n.to_many and n.target == table.type.iri)
    through = f"create it through POST {parent.name}(key)/{navs[0]}" if navs else f"in a deep insert of {parent.name}"
    writable = not any(table.type.props[p].read_only for p in missing)
    give = f"give the key of an existing {parent.name}, or " if writable else ""
    return {
        "code": "missing-parent-key",
        "target": f"{pointer}/{missing[0]}",
        "message": f"{table.name} lacks {', '.join(missing)}, the key of the {parent.name} it belongs to"
        f"{_existing(ref)}; {give}{through}",
    }


def _existing(ref: Reference) -> str:
    table, keys = ref.targets[0]
    sample = [", ".join(str(r.get(k)) for k in keys) for r in list(table.rows.values())[:SHOWN]]
    return f"; existing: {'; '.join(sample)}" if sample else ""


def _repair(ref: Reference) -> str:
    """Read an existing record; suggest creating one only where a target set is creatable."""
    table, _keys = ref.targets[0]
    read = f"use one that exists (read {table.name} of {table.service})"
    creatable = [t for t, _k in ref.targets if t.creatable]
    if not creatable:
        return f"{read}; {table.name} is read-only here, so no new one can be created"
    return f"{read} or create it first in {creatable[0].name}"
