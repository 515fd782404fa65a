"""Referential checks: a written entity may only point at records that exist in the server's data.

The metadata says what a payload may contain; only the data can say whether the sales order an
item belongs to, or the customer an order is sold to, exists. A reference is found in one of
four ways, the first that applies to a property winning:

1. **Referential constraint**: a to-one navigation property whose constraint names the local
   property (``to_SoldToParty``: ``SoldToParty`` -> ``A_Customer.Customer``). A V2 association's
   constraint is lifted on both of its navigations; the one seen from the principal's end (its
   referenced properties are not the target's key, which a V2 principal's are: ``to_SerialDeliveryItem``
   of an outbound delivery item, whose serial number list refers to the item) is no reference;
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

A created child without its parent's key is ``missing-parent-key``; a storage location that is not one
of the plant's it is sent with is ``storage-location-not-in-plant`` (:mod:`processkg.serve.org_units`). :meth:`References.link` makes
the generated records hold existing keys in every reference found this way.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from processkg.aliases import JSONObject
from processkg.serve import odata_json, org_units
from processkg.serve.data import Data, Rows, Table
from processkg.serve.facts import SetKeys, StoreFacts
from processkg.serve.values import canonical

#: Master record key -> the property names that hold it: the key itself and SAP's role names
#: (data elements with the key's domain: KUNAG/KUNWE/KUNRE/KUNRG are customers, MATNR a product).
MASTER_KEYS = {
    "Customer": ("Customer", "SoldToParty", "ShipToParty", "BillToParty", "PayerParty"),
    "Supplier": ("Supplier", "InvoicingParty"),
    "Product": ("Product", "Material"),
    "Plant": org_units.PLANT_PROPS,
    "BusinessPartner": ("BusinessPartner",),
}
SHOWN = 5  # existing keys quoted in a repair hint
PARENT = "its parent, by SAP's key convention"


@dataclass(frozen=True)
class Target:
    """An entity set a reference may point at, named (its table is made when its records are needed)."""

    service: str
    name: str
    creatable: bool


@dataclass(frozen=True)
class Reference:
    """``props`` of a type hold the ``keys`` of a record in one of ``targets``."""

    props: tuple[str, ...]
    targets: tuple[tuple[Target, tuple[str, ...]], ...]
    how: str  # why this is a reference, for the message


class References:
    """The references of every type, found once per (service, type) and kept. The sets of other services
    come from the store's index of entity sets and their keys (``StoreFacts.sets``), so finding them reads
    no other service's model except, for a set of several keys, its key order (``_ordered_keys``); the
    same references are found whichever services were read before."""

    def __init__(self, data: Data, facts: StoreFacts) -> None:
        self.data, self.facts = data, facts
        self.cache: dict[tuple[str, str], list[Reference]] = {}
        self.orders: dict[tuple[str, str, tuple[str, ...]], tuple[int, ...] | None] = {}  # see _key_order

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
            pairs = self.facts.constraints.get(nav.iri, [])
            target = self.data.target(table, nav)
            if nav.to_many or not pairs or target is None or not all(p in table.type.props for p, _ in pairs):
                continue
            props, keys = tuple(p for p, _ in pairs), tuple(r for _, r in pairs)
            if odata_json.is_v2(table.type) and sorted(keys) != sorted(target.keys):
                continue  # seen from the principal's end: the target refers to this record
            found.append(Reference(props, ((_target(target), keys),), f"referential constraint of {nav.name}"))
        return found

    def _parent(self, table: Table) -> Reference | None:
        """The sets of the service keyed by the longest proper prefix of this type's key."""
        parents, keys = self.data.parents(table)
        if not parents:
            return None
        return Reference(keys, tuple((_target(t), keys) for t in parents), PARENT)

    # ------------------------------------------------------------ generated records
    def link(self, table: Table, rows: Rows, rows_at: Callable[[str, str], Rows | None]) -> Rows:
        """``rows`` (generated records of ``table``) with every reference holding the key of an existing
        record: the ``i``-th record refers to the ``i``-th record of the first target that has records
        (cycling), ``rows_at(service, set)`` giving the records a target holds at this point of the
        generation (``Data.generate``). The records are re-keyed where a key property changed."""
        records = list(rows.values())
        for i, record in enumerate(records):
            self._link_record(table, record, i, rows_at)
        linked: Rows = {}
        for record in records:
            linked.setdefault(table.key_of(record), record)
        return linked

    def _link_record(
        self, table: Table, record: dict[str, object], i: int, rows_at: Callable[[str, str], Rows | None]
    ) -> None:
        for ref in self.of(table):
            if ref.how == PARENT:
                continue
            if all(record.get(p) in (None, "") for p in ref.props):
                continue  # left empty on purpose (serve/movement_types.py: a goods issue names no purchase order)
            values = tuple(str(record.get(p)) for p in ref.props)
            if any(self._exists(t, rows_at(t.service, t.name), keys, values) for t, keys in ref.targets):
                continue
            chosen_rows, keys = next(
                ((found, k) for t, k in ref.targets if (found := rows_at(t.service, t.name))), (None, ())
            )
            if not chosen_rows:
                continue
            rows = list(chosen_rows.values())
            chosen = rows[i % len(rows)]
            for prop, k in zip(ref.props, keys, strict=True):
                record[prop] = chosen.get(k)

    def _exists(self, target: Target, rows: Rows | None, keys: tuple[str, ...], values: tuple[str, ...]) -> bool:
        """Whether ``rows`` (the records of ``target``) hold one whose ``keys`` have ``values``."""
        if not rows:
            return False
        order = self._key_order(target, keys)
        if order is not None:
            return tuple(values[i] for i in order) in rows
        return any(tuple(str(r.get(k)) for k in keys) == values for r in rows.values())

    def _key_order(self, target: Target, keys: tuple[str, ...]) -> tuple[int, ...] | None:
        """Where each key property of ``target``'s table is in ``keys`` when ``keys`` are exactly its key
        properties (a record is then found by its key tuple), else None; worked out once per reference."""
        at = (target.service, target.name, keys)
        if at not in self.orders:
            table = self.data.table(target.service, target.name)
            own = table.keys if table is not None else []
            same = sorted(keys) == sorted(own) and len(set(keys)) == len(keys)
            self.orders[at] = tuple(keys.index(k) for k in own) if same else None
        return self.orders[at]

    def _ordered_keys(self, s: SetKeys) -> tuple[str, ...]:
        """The key of ``s`` in its model's order (reads that service's model, makes no records)."""
        table = self.data.table(s.service, s.name)
        return tuple(table.keys) if table is not None else ()

    def _masters(self, table: Table) -> list[Reference]:
        found = []
        for key, names in sorted(MASTER_KEYS.items()):
            if table.keys == [key]:
                continue  # the master itself
            masters = [s for s in self.facts.sets if s.keys == (key,)]
            exact = [s for s in masters if s.name.rpartition("_")[2] == key]  # A_Product, not A_ProductSales
            masters = exact or masters
            same = [s for s in masters if s.service == table.service]
            targets = tuple((_target(s), (key,)) for s in (same or masters))
            for name in names:
                if name in table.type.props and targets:
                    found.append(Reference((name,), targets, f"SAP's key convention: {name} names a {key}"))
        return found

    def _documents(self, table: Table) -> list[Reference]:
        """SAP's key names across services: a type that holds all key properties of a set named after its
        last key (``PurchaseOrder``, ``PurchaseOrderItem`` of ``A_PurchaseOrderItem``) refers to it, unless
        they are all part of its own key (itself, its parent: see ``_parent``); the longest such key first,
        the same service's sets before other services'. The key order is the model's (the Key element's),
        so a set of several keys reads its service's model."""
        groups: dict[tuple[str, ...], list[SetKeys]] = {}
        for s in self.facts.sets:
            named = s.name.rpartition("_")[2] in s.keys
            if named and all(k in table.type.props for k in s.keys) and not set(s.keys) <= set(table.keys):
                keys = s.keys if len(s.keys) == 1 else self._ordered_keys(s)
                if keys and s.name.rpartition("_")[2] == keys[-1]:
                    groups.setdefault(keys, []).append(s)
        found = []
        for keys, sets in sorted(groups.items(), key=lambda kv: (-len(kv[0]), kv[0])):
            same = [s for s in sets if s.service == table.service]
            targets = tuple((_target(s), keys) for s in (same or sets))
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
            if not inherited.isdisjoint(ref.props) or (changed is not None and changed.isdisjoint(ref.props)):
                continue
            if not all(payload.get(p) not in (None, "") for p in ref.props):
                if ref.how == PARENT and changed is None:
                    details.append(self._missing_parent(table, ref, payload, pointer))
                continue
            values = tuple(str(canonical(payload[p], table.type.props[p].edm_type, v2)) for p in ref.props)
            if not any(self._exists(t, self._rows(t), keys, values) for t, keys in ref.targets):
                details.append(_detail(ref, values, pointer, self._existing(ref)))
        pairs = org_units.check_pairs(table.type, payload, pointer)
        details += [d for d in pairs if changed is None or _pair_changed(d, changed)]
        navs = table.type.navs
        for name in sorted(payload):
            nav = navs.get(name)
            target = self.data.target(table, nav) if nav is not None else None
            if target is not None:
                shared = frozenset(k for k in target.keys if k in table.type.props)
                for i, child in odata_json.children(payload[name]):
                    details += self.check(target, child, f"{pointer}/{name}{i}", shared)
        return details

    def _rows(self, target: Target) -> Rows | None:
        """The records ``target`` holds now (its service generated if it was not yet)."""
        table = self.data.table(target.service, target.name)
        return table.rows if table is not None else None

    def _existing(self, ref: Reference) -> str:
        """Some keys of the first target, for a message."""
        target, keys = ref.targets[0]
        rows = list((self._rows(target) or {}).values())[:SHOWN]
        sample = [", ".join(str(r.get(k)) for k in keys) for r in rows]
        return f"; existing: {'; '.join(sample)}" if sample else ""

    def _missing_parent(self, table: Table, ref: Reference, payload: JSONObject, pointer: str) -> dict[str, str]:
        """A child created on its own without the key of the parent it belongs to: never numbered."""
        missing = [p for p in ref.props if payload.get(p) in (None, "")]
        parent = self.data.table(ref.targets[0][0].service, ref.targets[0][0].name)
        assert parent is not None  # a parent is a set of the table's own service
        navs = sorted(n.name for n in parent.type.navs.values() if n.to_many and n.target == table.type.iri)
        through = (
            f"create it through POST {parent.name}(key)/{navs[0]}" if navs else f"in a deep insert of {parent.name}"
        )
        writable = not any(table.type.props[p].read_only for p in missing)
        give = f"give the key of an existing {parent.name}, or " if writable else ""
        return {
            "code": "missing-parent-key",
            "target": f"{pointer}/{missing[0]}",
            "message": f"{table.name} lacks {', '.join(missing)}, the key of the {parent.name} it belongs to"
            f"{self._existing(ref)}; {give}{through}",
        }


def _pair_changed(detail: dict[str, str], changed: frozenset[str]) -> bool:
    """Whether an update sets either property of the (plant, storage location) pair ``detail`` is about."""
    location = detail["target"].rsplit("/", 1)[1]
    return any(location == loc and {plant, loc} & changed for plant, loc in org_units.PAIRS)


def _target(s: Table | SetKeys) -> Target:
    return Target(s.service, s.name, s.creatable)


def _detail(ref: Reference, values: tuple[str, ...], pointer: str, existing: str) -> dict[str, str]:
    given = ", ".join(f"{p}={v!r}" for p, v in zip(ref.props, values, strict=True))
    where = " or ".join(f"{t.name} ({t.service})" for t, _k in ref.targets)
    return {
        "code": "unknown-reference",
        "target": f"{pointer}/{ref.props[-1]}",
        "message": f"{given} refers to no record of {where} ({ref.how}){existing}; {_repair(ref)}",
    }


def _repair(ref: Reference) -> str:
    """Read an existing record; suggest creating one only where a target set is creatable."""
    table, _keys = ref.targets[0]
    read = f"use one that exists (read {table.name} of {table.service})"
    creatable = [t for t, _k in ref.targets if t.creatable]
    if not creatable:
        return f"{read}; {table.name} is read-only here, so no new one can be created"
    return f"{read} or create it first in {creatable[0].name}"
