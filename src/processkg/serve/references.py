"""Referential checks: a written entity may only point at records that exist in the server's data.

The metadata says what a payload may contain; only the data can say whether the sales order an
item belongs to, or the customer an order is sold to, exists. A reference is found in one of
three ways, the first that applies to a property winning:

1. **Referential constraint**: a to-one navigation property whose constraint names the local
   property (``to_SoldToParty``: ``SoldToParty`` -> ``A_Customer.Customer``);
2. **Parent by key** (the convention of :mod:`processkg.serve.data`): an entity set of the same
   service whose key properties are a proper part of this type's key, by name, is its parent
   (``A_SalesOrder`` keyed ``SalesOrder`` for ``A_SalesOrderItem`` keyed ``SalesOrder, SalesOrderItem``);
   the largest such key wins;
3. **SAP's master-data key convention**: a property named like the key of a master record, or by
   one of SAP's role names for it (:data:`MASTER_KEYS`: ``SoldToParty`` names a customer,
   ``Material`` a product), refers to the entity sets, in any service, keyed by that one property.

Not checked: a property with a code list (its codes decide: ``invalid-code``), a null or empty
value, references to entity sets the store does not serve, and references from a deep-insert
child to the parent created with it.
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
        found += [r for r in self._masters(table) if not covered & set(r.props)]
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
        own = table.keys
        parents = [
            t
            for (service, _name), t in sorted(self.data.tables.items())
            if service == table.service and 0 < len(t.keys) < len(own) and t.keys == own[: len(t.keys)]
        ]
        if not parents:
            return None
        size = max(len(t.keys) for t in parents)
        keys = tuple(own[:size])
        chosen = tuple((t, keys) for t in parents if len(t.keys) == size)
        return Reference(keys, chosen, "its parent, by SAP's key convention")

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
    table, keys = ref.targets[0]
    given = ", ".join(f"{p}={v!r}" for p, v in zip(ref.props, values, strict=True))
    where = " or ".join(f"{t.name} ({t.service})" for t, _k in ref.targets)
    sample = [", ".join(str(r.get(k)) for k in keys) for r in list(table.rows.values())[:SHOWN]]
    hint = f"; existing: {'; '.join(sample)}" if sample else ""
    return {
        "code": "unknown-reference",
        "target": f"{pointer}/{ref.props[-1]}",
        "message": f"{given} refers to no record of {where} ({ref.how}){hint}; "
        f"use one that exists (read {table.name} of {table.service}) or create it first",
    }
