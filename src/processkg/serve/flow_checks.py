"""Document flow checks: a follow-on document refers to a predecessor that exists and is ready for it.

The curated document flow (``kg build --flow``, ``kg:DocumentFlow``, data/sap/flow) says which
properties of a follow-on document carry the key of its predecessor (``ReferenceSDDocument`` and
``ReferenceSDDocumentItem`` of an outbound delivery item carry a sales order item's key). On every
create (POST, POST on a navigation property, each deep-insert child, each create of a ``$batch``)
``kg serve`` checks each flow into the created entity set:

* ``missing-predecessor``: the flow is required and the carriers are empty (a delivery item that
  names no sales order item);
* ``unknown-predecessor``: the carriers name no record of the predecessor set;
* ``predecessor-not-ready``: the predecessor fails the flow's precondition (a delivery whose goods
  issue is not posted is billed);
* ``predecessor-fully-referenced``: with this record, the follow-ons of the predecessor would add up
  to more than its quantity, or it has none left (a second full goods receipt for a fully received
  order item, a delivery of more than an order item's open quantity, billing a fully billed delivery).

Flows into one set with the same carriers from different predecessors are alternatives
(:meth:`DocumentFlows.alternatives`): an order item's reference names a quotation item or a contract
item, and is unknown only when it names neither.

A flow with an ``applies_when`` condition is checked only for records that meet it (a goods receipt
for a purchase order, not a transfer posting). An action that makes follow-ons from references
given as parameters (``CreateFromSDDocument`` of billing: ``_Reference`` items with ``SDDocument``)
is checked against the flows into the item sets of the set it is bound to whose one carrier is
``ReferenceSDDocument`` (:data:`REFERENCE_PARAMETERS`), and against the item flows with a quantity: a
referenced document whose items are all referenced in full already (a delivery billed in full) is
``predecessor-fully-referenced``; one with quantity left is made into follow-on items of what is left.

An update (PATCH, MERGE, PUT) that sets a flow's carriers, its applies-when property or its quantity
is checked the same way, on the record as it will be (:meth:`DocumentFlows.check_change`).

A change of a predecessor is checked against its follow-ons: ``follow-ons-exist`` when an update sets its
quantity below what they reference already (:meth:`DocumentFlows.check_lowered`), or a delete would remove
a record that a follow-on names (:meth:`DocumentFlows.check_delete`).

The generated records are made consistent with the flow (:meth:`DocumentFlows.prepare`, when the
records are filled: a predecessor set with a precondition has every record ready; and
:meth:`DocumentFlows.link`, when they are linked: a follow-on's carriers name an existing, ready
predecessor with quantity left, keeping the document it named where that document has such a record).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from decimal import ROUND_FLOOR, Decimal, InvalidOperation

from processkg.aliases import JSONObject, Record
from processkg.errors import ServeHTTPError
from processkg.serve import odata_json, org_units
from processkg.serve.data import Data, Rows, Table, next_key
from processkg.serve.facts import StoreFacts
from processkg.serve.operations import EFFECTS
from processkg.serve.values import canonical
from processkg.services.model import OperationInfo

SHOWN = 5  # existing predecessors quoted in a repair hint
#: Every ``PARTIAL``-th generated follow-on item of a flow with a quantity rule covers at most half of its
#: predecessor item's quantity (a partial delivery, goods receipt, invoice or billing), so the generated
#: system has documents left to go on with, as a real one has (SAP's status B, partly processed).
PARTIAL = 4
#: Operation parameter member -> the follow-on property it fills: an action's collection parameter
#: whose items have this member makes follow-ons carrying it (billing's ``_Reference/SDDocument``).
REFERENCE_PARAMETERS = {"SDDocument": "ReferenceSDDocument"}

RowsAt = Callable[[str, str], Rows | None]
#: What a follow-on item (generated, or made by an action) takes from the predecessor item it names, where
#: both types have it.
CARRIED = ("Material", "Plant", "StorageLocation", "Batch")
#: Follow-on property -> the predecessor item's property it takes, where the names differ: a billing item's
#: ``Product`` is the delivery item's ``Material``, and its ``SalesDocument``/``SalesDocumentItem`` (the
#: sales order item billed) are what the delivery item names as its reference (the order item it ships).
CARRIED_AS = {
    "Product": "Material",
    "SalesDocument": "ReferenceSDDocument",
    "SalesDocumentItem": "ReferenceSDDocumentItem",
}
#: Follow-on quantity -> the predecessor item's quantity it stays within in generated records of a flow
#: without a quantity rule: a return item's ``RequestedQuantity`` within the billed quantity of the billing
#: item it names (SAP does not refuse more, data/sap/flow/README.md; a generated system returns no more).
WITHIN = {"RequestedQuantity": "BillingQuantity"}


@dataclass(frozen=True)
class Condition:
    prop: str
    values: tuple[str, ...]

    def holds(self, record: dict[str, object]) -> bool:
        return str(record.get(self.prop) or "") in self.values


@dataclass(frozen=True)
class Flow:
    """One curated flow as kg serve checks it."""

    pred: tuple[str, str]  # (service, entity set)
    follow: tuple[str, str]
    carriers: tuple[tuple[str, str], ...]  # (follow-on property, predecessor key property)
    required: bool
    process: str
    applies: Condition | None
    precondition: Condition | None
    quantity: tuple[str, str] | None  # (follow-on quantity, predecessor quantity)
    steps: tuple[str, ...] = ()  # the process steps that write the predecessor (the steps to do first)

    @property
    def props(self) -> tuple[str, ...]:
        return tuple(c for c, _k in self.carriers)


def flows_of(rows: list[Record]) -> list[Flow]:
    """The rows of ``serve-document-flow`` grouped into flows, sorted by (follow-on, predecessor)."""
    grouped: dict[str, list[Record]] = {}
    for r in rows:
        grouped.setdefault(str(r["flow"]), []).append(r)
    found = []
    for group in grouped.values():
        first = group[0]
        carriers = tuple(sorted({(str(r["carrier"]), str(r["carried"])) for r in group}))
        found.append(
            Flow(
                (str(first["predService"]), str(first["pred"])),
                (str(first["followService"]), str(first["follow"])),
                carriers,
                first["required"] is True,
                str(first["process"]),
                _condition(group, "appliesProp", "appliesValue"),
                _condition(group, "preProp", "preValue"),
                (str(first["qtyFollow"]), str(first["qtyPred"])) if first.get("qtyFollow") else None,
                _steps(group),
            )
        )
    return sorted(found, key=lambda f: (f.follow, f.pred))


def _steps(group: list[Record]) -> tuple[str, ...]:
    """The steps that write the predecessor and come before one that writes the follow-on; without
    such a step (the follow-on is written by no step of the process), every step that writes it."""
    before = sorted({str(r["predStep"]) for r in group if r.get("predStep")})
    return tuple(before or sorted({str(r["anyStep"]) for r in group if r.get("anyStep")}))


def _condition(group: list[Record], prop: str, value: str) -> Condition | None:
    values = sorted({str(r[value]) for r in group if r.get(prop) is not None and r.get(value) is not None})
    return Condition(str(group[0][prop]), tuple(values)) if values else None


class DocumentFlows:
    """The flows of a store and the checks and seed adjustments made with them."""

    def __init__(self, data: Data, facts: StoreFacts) -> None:
        self.data, self.facts = data, facts
        self._flows: list[Flow] | None = None
        self._at: dict[tuple[str, str, str], list[Flow]] = {}  # (end, service, entity set) -> its flows

    @property
    def flows(self) -> list[Flow]:
        if self._flows is None:
            self._flows = flows_of(self.facts.document_flows)
        return self._flows

    def into(self, table: Table) -> list[Flow]:
        """The flows into ``table``'s set."""
        return self._flows_at("follow", table)

    def out_of(self, table: Table) -> list[Flow]:
        """The flows out of ``table``'s set (the set is their predecessor)."""
        return self._flows_at("pred", table)

    def _flows_at(self, end: str, table: Table) -> list[Flow]:
        """The flows whose ``end`` (``follow`` or ``pred``) is ``table``'s set, found once per set and end:
        the flows never change once read."""
        at = (end, table.service, table.name)
        found = self._at.get(at)
        if found is None:
            found = self._at[at] = [f for f in self.flows if getattr(f, end) == at[1:]]
        return found

    def alternatives(self, flow: Flow) -> list[Flow]:
        """The flows into ``flow``'s follow-on set with the same carriers from another predecessor, ``flow``
        included, in order: the carriers name a record of any one of them (an order item's
        ``ReferenceSDDocument``/``ReferenceSDDocumentItem`` name a quotation item or a contract item)."""
        return [f for f in self.flows if f.follow == flow.follow and set(f.props) == set(flow.props)]

    # ------------------------------------------------------------ checking
    def check(self, table: Table, payload: JSONObject, pointer: str = "") -> list[dict[str, str]]:
        """One error detail per flow into ``payload``'s set (deep-insert children included) that fails."""
        return list(self._check(table, payload, pointer, {}))

    def check_change(self, table: Table, record: JSONObject, changed: frozenset[str]) -> list[dict[str, str]]:
        """On an update: the flows whose carriers, applies-when or quantity property the client sets,
        checked on ``record`` as it will be (a flow it does not touch is not checked again: a billed
        delivery whose goods issue was reversed does not block a change of the billing item's text)."""
        stored = self._stored(table, record)
        details = []
        for flow in self.into(table):
            touched = set(flow.props) | {
                flow.applies.prop if flow.applies else "",
                flow.quantity[0] if flow.quantity else "",
            }
            if touched & changed:
                detail = self._check_flow(flow, table, stored, "", {})
                if detail is not None:
                    details.append(detail)
        return details

    def check_lowered(self, table: Table, record: dict[str, object], changed: frozenset[str]) -> list[dict[str, str]]:
        """On an update of a predecessor: ``follow-ons-exist`` for each flow out of ``table`` whose quantity
        the client sets below what the follow-ons naming ``record`` already reference (an order item's
        ``RequestedQuantity`` of 2 when 5 are delivered)."""
        details = []
        key = table.key_of(record)
        for flow in self.out_of(table):
            if flow.quantity is None or flow.quantity[1] not in changed:
                continue
            follow, limit = self.data.table(*flow.follow), _number(record, flow.quantity[1])
            if follow is None or limit is None:
                continue
            used = self.referenced(flow, follow.rows, key)
            if limit < used:
                message = (
                    f"{table.name} {', '.join(key)}: {flow.quantity[1]} {limit} is less than the {used} that its "
                    f"{follow.name} records reference already{self._naming(flow, follow, key)} ({flow.process}); "
                    f"set at least {used}"
                )
                details.append({"code": "follow-ons-exist", "target": f"/{flow.quantity[1]}", "message": message})
        return details

    def check_delete(self, table: Table, record: dict[str, object]) -> list[dict[str, str]]:
        """On a delete: ``follow-ons-exist`` for each record it would remove (``record`` and the records it is
        composed of, :meth:`Data.composed`, as ``changes.delete`` removes them) that a follow-on names through a flow with no
        alternative predecessor (SAP deletes no document with subsequent documents; where another set's
        records have the same keys, as a quotation's and a contract's may, the name is ambiguous and not
        held against the delete)."""
        details = []
        for source, found in self.data.composed(table, record):
            key = source.key_of(found)
            for flow in self.out_of(source):
                follow = self.data.table(*flow.follow)
                if follow is None or len(self.alternatives(flow)) > 1:
                    continue
                naming = self._naming(flow, follow, key)
                if naming:
                    message = (
                        f"{source.name} {', '.join(key)} is named by {follow.name} records{naming} "
                        f"({flow.process}): delete them first, or keep it"
                    )
                    details.append({"code": "follow-ons-exist", "target": "", "message": message})
        return details

    def _naming(self, flow: Flow, follow: Table, key: tuple[str, ...]) -> str:
        """`` (KEY, KEY, ...)``: up to :data:`SHOWN` keys of the ``follow`` records whose carriers name ``key``."""
        names = ["/".join(k) for k, _r in self._naming_rows(flow, follow.rows, key)]
        return f" ({', '.join(names[:SHOWN])}{', ...' if len(names) > SHOWN else ''})" if names else ""

    def _check(
        self, table: Table, payload: JSONObject, pointer: str, pending: dict[tuple[Flow, tuple[str, ...]], Decimal]
    ) -> Iterator[dict[str, str]]:
        flows = self.into(table)
        record = self._stored(table, payload) if flows else {}
        for flow in flows:
            detail = self._check_flow(flow, table, record, pointer, pending)
            if detail is not None:
                yield detail
        for name, value in sorted(payload.items()):
            nav = table.type.navs.get(name)
            target = self.data.target(table, nav) if nav is not None else None
            if target is not None:
                for i, child in odata_json.children(value):
                    yield from self._check(target, child, f"{pointer}/{name}{i}", pending)

    def _stored(self, table: Table, payload: JSONObject) -> dict[str, object]:
        """The payload's own values as the server stores them (canonical), for comparing with records."""
        v2 = odata_json.is_v2(table.type)
        out: dict[str, object] = {}
        for name, value in payload.items():
            prop = table.type.props.get(name)
            if prop is not None and not prop.collection and prop.complex_type is None and value not in (None, ""):
                out[name] = canonical(value, prop.edm_type, v2)
        return out

    def _check_flow(
        self,
        flow: Flow,
        table: Table,
        record: dict[str, object],
        pointer: str,
        pending: dict[tuple[Flow, tuple[str, ...]], Decimal],
    ) -> dict[str, str] | None:
        if flow.applies is not None and not flow.applies.holds(record):
            return None
        pred = self.data.table(*flow.pred)
        if pred is None:
            return None
        given = [c for c in flow.props if record.get(c) not in (None, "")]
        if len(given) < len(flow.props):
            if not flow.required:
                return None
            return self._detail("missing-predecessor", flow, pointer, self._missing(flow, table, pred, given))
        key = self._key(flow, pred, record)
        found = pred.rows.get(key)
        if found is None:
            alternatives = self.alternatives(flow)
            if alternatives[0] is not flow or any(self._names(f, record) for f in alternatives[1:]):
                return None  # another predecessor set holds it (checked by its flow), or reported by the first
            return self._unknown(alternatives, record, pointer)
        if flow.precondition is not None and not flow.precondition.holds(found):
            return self._detail("predecessor-not-ready", flow, pointer, self._not_ready(flow, pred, key, found))
        if flow.quantity is not None:
            return self._over(flow, table, pred, key, found, record, pointer, pending)
        return None

    def _names(self, flow: Flow, record: dict[str, object]) -> bool:
        """Whether ``record``'s carriers name an existing record of ``flow``'s predecessor set."""
        pred = self.data.table(*flow.pred)
        return pred is not None and self._key(flow, pred, record) in pred.rows

    def _unknown(self, alternatives: list[Flow], record: dict[str, object], pointer: str) -> dict[str, str]:
        """``unknown-predecessor``: the carriers name no record of any of the ``alternatives``' sets."""
        flow = alternatives[0]
        named = ", ".join(f"{c}={record.get(c)!r}" for c in flow.props)
        parts = []
        for f in alternatives:
            pred = self.data.table(*f.pred)
            if pred is not None:
                parts.append(f"names no {pred.name} ({pred.service}){self._existing(f, pred)}; {self._give(f, pred)}")
        return self._detail("unknown-predecessor", flow, pointer, f"{named} " + "; or: it ".join(parts))

    def _key(self, flow: Flow, pred: Table, record: dict[str, object]) -> tuple[str, ...]:
        by_key = {k: str(record.get(c)) for c, k in flow.carriers}
        return tuple(by_key.get(k, "") for k in pred.keys)

    def _over(
        self,
        flow: Flow,
        table: Table,
        pred: Table,
        key: tuple[str, ...],
        found: dict[str, object],
        record: dict[str, object],
        pointer: str,
        pending: dict[tuple[Flow, tuple[str, ...]], Decimal],
    ) -> dict[str, str] | None:
        assert flow.quantity is not None
        own, limit = _number(record, flow.quantity[0]), _number(found, flow.quantity[1])
        if limit is None:
            return None
        own_key = table.key_of(record) if all(record.get(k) not in (None, "") for k in table.keys) else None
        used = self.referenced(flow, table.rows, key, own_key) + pending.get((flow, key), Decimal(0))
        if _within(used, own or Decimal(0), limit):
            pending[(flow, key)] = pending.get((flow, key), Decimal(0)) + (own or Decimal(0))
            return None
        left = max(limit - used, Decimal(0))
        asked = f"{flow.quantity[0]} {own} is more than the {left} left" if own else "nothing is left"
        message = (
            f"{pred.name} {', '.join(key)} has {flow.quantity[1]} {limit}, of which {used} is referenced already "
            f"by {table.name} records; {asked}"
        )
        repair = (
            f"reference at most {left}" if left > 0 else f"it is fully referenced: choose another {pred.name}"
        ) + self._existing(flow, pred)
        return self._detail("predecessor-fully-referenced", flow, pointer, f"{message}; {repair}")

    def referenced(
        self, flow: Flow, rows: Rows, key: tuple[str, ...], own_key: tuple[str, ...] | None = None
    ) -> Decimal:
        """The summed quantity of the follow-on ``rows`` that name the predecessor ``key``, but for the
        record keyed ``own_key`` (the one being checked, when it is stored already)."""
        assert flow.quantity is not None
        total = Decimal(0)
        for row_key, r in self._naming_rows(flow, rows, key):
            if row_key != own_key:
                total += _number(r, flow.quantity[0]) or Decimal(0)
        return total

    def _naming_rows(
        self, flow: Flow, rows: Rows, key: tuple[str, ...]
    ) -> Iterator[tuple[tuple[str, ...], dict[str, object]]]:
        """The follow-on ``rows`` (key, record) to which ``flow`` applies whose carriers name the
        predecessor ``key``."""
        pred = self.data.table(*flow.pred)
        if pred is None:
            return
        for row_key, r in rows.items():
            if (flow.applies is None or flow.applies.holds(r)) and self._key(flow, pred, r) == key:
                yield row_key, r

    def _existing(self, flow: Flow, pred: Table) -> str:
        """Some records of the predecessor that a follow-on could name, for a hint: ready ones, and where the
        flow has a quantity, ones with quantity left."""
        left = self._left(flow, pred) if flow.quantity is not None else {}
        ready = [
            r
            for key, r in pred.rows.items()
            if (flow.precondition is None or flow.precondition.holds(r)) and left.get(key, Decimal(1)) > 0
        ][:SHOWN]
        sample = ["/".join(str(r.get(k)) for _c, k in flow.carriers) for r in ready]
        what = "ready " if flow.precondition is not None else ""
        rest = f" with {flow.quantity[1]} left" if flow.quantity is not None else ""
        if not sample:
            return f"; {pred.name} has no {what}record{rest}"
        return f"; {what}{pred.name} records{rest}: {', '.join(sample)}"

    def _left(self, flow: Flow, pred: Table) -> dict[tuple[str, ...], Decimal]:
        """Per predecessor record with a quantity: what its follow-ons leave of it (one pass over them)."""
        assert flow.quantity is not None
        follow = self.data.table(*flow.follow)
        used: dict[tuple[str, ...], Decimal] = {}
        for r in follow.rows.values() if follow is not None else []:
            if flow.applies is None or flow.applies.holds(r):
                key = self._key(flow, pred, r)
                used[key] = used.get(key, Decimal(0)) + (_number(r, flow.quantity[0]) or Decimal(0))
        left = {}
        for key, r in pred.rows.items():
            limit = _number(r, flow.quantity[1])
            if limit is not None:
                left[key] = limit - used.get(key, Decimal(0))
        return left

    def _give(self, flow: Flow, pred: Table) -> str:
        pairs = ", ".join(f"{c} = its {k}" for c, k in flow.carriers)
        step = f" (the step {' or '.join(repr(s) for s in flow.steps)})" if flow.steps else ""
        return f"give the key of an existing {pred.name} ({pairs}), or create the {pred.name} first{step}"

    def _missing(self, flow: Flow, table: Table, pred: Table, given: list[str]) -> str:
        lacking = [c for c in flow.props if c not in given]
        return (
            f"{table.name} lacks {', '.join(lacking)}: in {flow.process} its records are made from {pred.name} "
            f"records"
            f"{self._existing(flow, pred)}; {self._give(flow, pred)}"
        )

    def _not_ready(self, flow: Flow, pred: Table, key: tuple[str, ...], found: dict[str, object]) -> str:
        assert flow.precondition is not None
        cond = flow.precondition
        has = found.get(cond.prop)
        own = (
            {op.name for op in self.data.model.services[pred.service].operations}
            if pred.service in self.data.model.services
            else set()
        )
        steps = sorted(
            name
            for name, effects in EFFECTS.items()
            if name in own and any(p == cond.prop and v in cond.values for p, v in effects)
        )
        first = f"call {' or '.join(steps)} on it first" if steps else f"bring {cond.prop} to {'/'.join(cond.values)}"
        return (
            f"{pred.name} {', '.join(key)} has {cond.prop} {'empty' if has in (None, '') else repr(has)}; "
            f"{flow.follow[1]} records are made only from a {pred.name} with {cond.prop} "
            f"{' or '.join(cond.values)} ({flow.process}): {first}, or use a ready one"
            f"{self._existing(flow, pred)}"
        )

    def _detail(self, code: str, flow: Flow, pointer: str, message: str) -> dict[str, str]:
        return {"code": code, "target": f"{pointer}/{flow.props[-1]}", "message": message}

    # ------------------------------------------------------------ operations
    def check_operation(self, op: OperationInfo, values: JSONObject) -> list[dict[str, str]]:
        """An action bound to a collection that makes follow-ons from references given as parameters
        (``CreateFromSDDocument``): each reference checked as a follow-on item carrying it would be."""
        if not op.collection or op.binding is None:
            return []
        tables = self.data.tables_of(op.service)
        bound = next((t for _n, t in sorted(tables.items()) if t.type.iri == op.binding), None)
        if bound is None:
            return []
        items = [t for _n, t in sorted(tables.items()) if bound in self.data.parents(t)[0]]
        details = []
        pending: dict[tuple[Flow, tuple[str, ...]], Decimal] = {}
        for name, value in sorted(values.items()):
            for i, ref in odata_json.children(value):
                for member, carrier in REFERENCE_PARAMETERS.items():
                    if ref.get(member) in (None, ""):
                        continue
                    for item in items:
                        found = None
                        for flow in self.into(item):
                            if flow.props == (carrier,):
                                found = self._check_flow(flow, item, {carrier: ref[member]}, f"/{name}{i}", {})
                            elif carrier in flow.props and flow.quantity is not None:
                                found = self._fully_referenced(flow, item, carrier, str(ref[member]), pending)
                            if found is not None:
                                found["target"] = f"/{name}{i}/{member}"
                                details.append(found)
                                break
        return details

    def _open_items(
        self,
        flow: Flow,
        table: Table,
        carrier: str,
        document: str,
        pending: dict[tuple[Flow, tuple[str, ...]], Decimal] | None = None,
    ) -> list[tuple[dict[str, object], Decimal | None]]:
        """The predecessor items of ``document`` (the items of the delivery a billing reference names), each
        with the quantity its follow-ons in ``table`` (and ``pending``) leave of it; None without a quantity."""
        pred = self.data.table(*flow.pred)
        head_key = dict(flow.carriers)[carrier]
        found: list[tuple[dict[str, object], Decimal | None]] = []
        for source in [r for r in (pred.rows.values() if pred is not None else []) if str(r.get(head_key)) == document]:
            assert pred is not None
            limit = _number(source, flow.quantity[1]) if flow.quantity is not None else None
            if limit is None:
                found.append((source, None))
                continue
            key = pred.key_of(source)
            used = self.referenced(flow, table.rows, key) + (pending or {}).get((flow, key), Decimal(0))
            found.append((source, limit - used))
        return found

    def _fully_referenced(
        self,
        flow: Flow,
        table: Table,
        carrier: str,
        document: str,
        pending: dict[tuple[Flow, tuple[str, ...]], Decimal],
    ) -> dict[str, str] | None:
        """For an action's reference to ``document``: ``predecessor-fully-referenced`` when every item of it
        is referenced in full by ``table``'s records (a delivery billed in full), else None, counting what
        the action will make of it in ``pending`` (a second reference to it in the same call)."""
        assert flow.quantity is not None
        pred = self.data.table(*flow.pred)
        open_items = self._open_items(flow, table, carrier, document, pending)
        if pred is None or not open_items or any(left is None or left > 0 for _s, left in open_items):
            for source, left in open_items:
                if pred is not None and left is not None and left > 0:
                    key = pred.key_of(source)
                    pending[(flow, key)] = pending.get((flow, key), Decimal(0)) + left
            return None
        items = ", ".join(
            f"{'/'.join(pred.key_of(s))} ({flow.quantity[1]} {_number(s, flow.quantity[1])})" for s, _l in open_items
        )
        header = next((f for f in self.into(table) if f.props == (carrier,)), None)
        others = self._with_left(flow, carrier, header, document)
        head_key = dict(flow.carriers)[carrier]
        return self._detail(
            "predecessor-fully-referenced",
            flow,
            "",
            f"{head_key} {document} is referenced in full already: its {pred.name} records {items} are covered "
            f"by {table.name} records that add up to their {flow.quantity[1]} ({flow.process}), so nothing is left "
            f"to make a {table.name} of; choose another {head_key}{others}",
        )

    def _with_left(self, flow: Flow, carrier: str, header: Flow | None, document: str) -> str:
        """Some documents with quantity left on an item (ready ones, by ``header``'s precondition), for a hint."""
        pred = self.data.table(*flow.pred)
        head = self.data.table(*header.pred) if header is not None else None
        assert pred is not None and flow.quantity is not None
        head_key = dict(flow.carriers)[carrier]
        left = self._left(flow, pred)
        shown: list[str] = []
        for key, r in pred.rows.items():
            number = str(r.get(head_key))
            if left.get(key, Decimal(0)) <= 0 or number in shown or number == document:
                continue
            found = head.rows.get((number,)) if head is not None and len(head.keys) == 1 else None
            ready = header is None or header.precondition is None or (found and header.precondition.holds(found))
            if ready:
                shown.append(number)
            if len(shown) == SHOWN:
                break
        what = (
            f" (with {header.precondition.prop} {'/'.join(header.precondition.values)})"
            if (header is not None and header.precondition is not None)
            else ""
        )
        if not shown:
            return f"; no {head_key}{what} has {flow.quantity[1]} left: create one first"
        return f"; {head_key}s{what} with {flow.quantity[1]} left: {', '.join(shown)}"

    def make(self, op: OperationInfo, values: JSONObject) -> list[tuple[Table, dict[str, object]]]:
        """The follow-on documents an action that makes them from references creates (billing's
        ``CreateFromSDDocument``, checked by :meth:`check_operation` first): per reference, a header in the
        set the action is bound to, where the action returns a collection of that type, and one item per
        item of the referenced predecessor (a billing item per delivery item, naming it and carrying its
        :data:`CARRIED` content). The header takes the predecessor header's values of the same names
        (``SoldToParty``), then the ``_Control`` defaults (``DefaultBillingDocumentType`` as
        ``BillingDocumentType``), then the reference's own values (``BillingDocumentType``,
        ``SalesOrganization``). Returns the created headers; none when the action makes nothing."""
        if not op.collection or op.binding is None:
            return []
        tables = self.data.tables_of(op.service)
        bound = next((t for _n, t in sorted(tables.items()) if t.type.iri == op.binding), None)
        if bound is None or op.return_type != f"Collection({bound.type.qname})":
            return []
        items = [t for _n, t in sorted(tables.items()) if bound in self.data.parents(t)[0]]
        control = next(
            (v for v in values.values() if isinstance(v, dict) and any(k.startswith("Default") for k in v)), {}
        )
        defaults = {k.removeprefix("Default"): v for k, v in control.items() if k.startswith("Default")}
        made = []
        for _name, value in sorted(values.items()):
            for _i, ref in odata_json.children(value):
                for member, carrier in REFERENCE_PARAMETERS.items():
                    if ref.get(member) not in (None, ""):
                        made.append(self._make_one(bound, items, carrier, str(ref[member]), {**defaults, **ref}))
        return made

    def _make_one(
        self, bound: Table, items: list[Table], carrier: str, document: str, given: JSONObject
    ) -> tuple[Table, dict[str, object]]:
        """One follow-on header of ``bound`` made from the predecessor ``document``, with its items; stored."""
        v2 = odata_json.is_v2(bound.type)
        header: dict[str, object] = {}
        for _t, flow in [(t, f) for t in items for f in self.into(t) if f.props == (carrier,)][:1]:
            pred = self.data.table(*flow.pred)
            found = pred.rows.get((document,)) if pred is not None else None
            for name, prop in bound.type.props.items():
                if found is not None and found.get(name) not in (None, "") and not prop.key:
                    header[name] = found[name]
        for name, value in given.items():
            own = bound.type.props.get(name)
            if name.startswith("SDDocument"):
                continue  # the referenced document's number and category, not this document's
            if own is not None and not own.key and isinstance(value, str | int | float | bool):
                header[name] = canonical(value, own.edm_type, v2)
        for key in bound.keys:
            header[key] = next_key(bound, key, header)
        bound.rows[bound.key_of(header)] = header
        for table, flow in [(t, f) for t in items for f in self.into(t) if carrier in f.props and len(f.props) > 1][:1]:
            source_set = self.data.table(*flow.pred)
            if source_set is None:
                continue  # the predecessor set is not served: nothing to make items of
            for source, left in self._open_items(flow, table, carrier, document):
                if left is not None and left <= 0:
                    continue  # referenced in full already (a delivery item billed before): nothing to make of it
                item: dict[str, object] = {k: header[k] for k in table.keys if k in header}
                item.update({c: source.get(k) for c, k in flow.carriers})
                item.update(_content(table, source_set, flow, source))
                if left is not None and flow.quantity is not None:
                    item[flow.quantity[0]] = canonical(str(left), table.type.props[flow.quantity[0]].edm_type, v2)
                for key in table.keys:
                    if item.get(key) in (None, ""):
                        item[key] = next_key(table, key, item)
                table.rows[table.key_of(item)] = item
        return bound, header

    def fill(self, table: Table, record: dict[str, object]) -> None:
        """A follow-on item being created takes what the client left out of the predecessor item it names,
        as SAP copies it (a delivery item its sales order item's ``Material`` and ``Plant``): the
        properties of :data:`CARRIED` and :data:`CARRIED_AS`, never over a value the client gave."""
        for flow in self.into(table):
            pred = self.data.table(*flow.pred)
            if pred is None or len(flow.carriers) < 2 or (flow.applies is not None and not flow.applies.holds(record)):
                continue
            source = pred.rows.get(self._key(flow, pred, record))
            if source is None:
                continue
            for name, value in _content(table, pred, flow, source).items():
                if record.get(name) in (None, ""):
                    record[name] = value

    # ------------------------------------------------------------ generated records
    def prepare(self, table: Table, rows: Rows) -> None:
        """Generated records of a predecessor set are ready for their follow-ons: the precondition
        property holds its first allowed value (a generated delivery has its goods issue posted)."""
        for flow in self.flows:
            if flow.pred == (table.service, table.name) and flow.precondition is not None:
                cond = flow.precondition
                if cond.prop in table.type.props:
                    for record in rows.values():
                        record[cond.prop] = cond.values[0]

    def link(self, table: Table, rows: Rows, rows_at: RowsAt) -> Rows:
        """``rows`` with the carriers of every flow naming an existing, ready predecessor with quantity left:
        a record that names one keeps it; else, where possible, one of the document it names (an item
        of sales order 3 for a delivery item that names sales order 3); else the ``i``-th ready one."""
        flows = sorted(self.into(table), key=lambda f: -len(f.carriers))
        if not flows:
            return rows
        used: dict[tuple[Flow, tuple[str, ...]], Decimal] = {}
        for i, record in enumerate(rows.values()):
            for flow in flows:
                self._link_record(flow, flows, record, i, rows_at, used)
        return rows

    def _link_record(
        self,
        flow: Flow,
        flows: list[Flow],
        record: dict[str, object],
        i: int,
        rows_at: RowsAt,
        used: dict[tuple[Flow, tuple[str, ...]], Decimal],
    ) -> None:
        pred = self.data.table(*flow.pred)
        candidates = rows_at(*flow.pred)
        if pred is None or not candidates or (flow.applies is not None and not flow.applies.holds(record)):
            return
        if not flow.required and any(record.get(c) in (None, "") for c in flow.props):
            return
        alternatives = self.alternatives(flow)
        if any(f is not flow and self._linked_ok(f, record, rows_at) for f in alternatives):
            return  # its carriers name a ready record of another predecessor set (an order item's contract item)
        others = [f for f in flows if f not in alternatives and set(f.props) & set(flow.props)]

        def fits(candidate: dict[str, object], quantity: bool = True) -> bool:
            trial = {**record, **{c: candidate.get(k) for c, k in flow.carriers}}
            if flow.precondition is not None and not flow.precondition.holds(candidate):
                return False
            if quantity and flow.quantity is not None and not self._fits(flow, pred, trial, candidate, used):
                return False
            return all(self._linked_ok(f, trial, rows_at) for f in others)

        current = candidates.get(self._key(flow, pred, record))
        chosen: dict[str, object] | None
        if current is not None and fits(current):
            chosen = current
        else:
            ordered = list(candidates.values())
            ordered = ordered[i % len(ordered) :] + ordered[: i % len(ordered)]

            def matching(c: dict[str, object]) -> int:
                return sum(str(c.get(k)) == str(record.get(p)) for p, k in flow.carriers)

            near = sorted((c for c in ordered if matching(c)), key=lambda c: -matching(c))
            chosen = None
            for group in (near, ordered):  # the document it names, with what is left of it, before any other
                chosen = next((c for c in group if fits(c)), None)
                if chosen is None and flow.quantity is not None:
                    chosen = self._most_left(flow, pred, record, [c for c in group if fits(c, quantity=False)], used)
                if chosen is not None:
                    break
        if chosen is None:
            return
        for c, k in flow.carriers:
            record[c] = chosen.get(k)
        self._carry(flow, pred, record, chosen, i)
        if flow.quantity is not None:
            key = self._key(flow, pred, record)
            used[(flow, key)] = used.get((flow, key), Decimal(0)) + (_number(record, flow.quantity[0]) or Decimal(0))

    def _carry(self, flow: Flow, pred: Table, record: dict[str, object], chosen: dict[str, object], i: int) -> None:
        """A generated follow-on item takes the content of the predecessor item it names (a goods receipt
        the material and plant of its order item, a delivery item its order item's): the properties of
        :data:`CARRIED` both types have and those of :data:`CARRIED_AS` (a billing item's sales order item
        is the one its delivery item ships), a plant under the predecessor's role name for it (a sales order
        item's ``ProductionPlant`` is the delivery item's ``Plant``), the flow's quantity within what the
        predecessor has (every :data:`PARTIAL`-th within half of it), a flow without a quantity rule the
        quantities of :data:`WITHIN`; then the org units are made consistent again (``org_units.derive``)."""
        follow = self.data.table(*flow.follow)
        if follow is None or not self.data.parents(pred)[0]:
            return  # a header predecessor (a purchase order for a goods receipt item) has no item content
        props = follow.type.props
        record.update(_content(follow, pred, flow, chosen))
        if flow.quantity is not None:
            follow_qty, pred_qty = flow.quantity
            own, limit = _number(record, follow_qty), _number(chosen, pred_qty)
            if own is not None and limit is not None and own > limit:
                record[follow_qty] = chosen[pred_qty]
            own = _number(record, follow_qty)
            if own is not None and limit is not None and i % PARTIAL == PARTIAL - 1:
                half = (limit / 2).to_integral_value(rounding=ROUND_FLOOR)
                if 0 < half < own:
                    v2 = odata_json.is_v2(follow.type)
                    record[follow_qty] = canonical(str(half), props[follow_qty].edm_type, v2)
        else:
            for own_qty, pred_qty in WITHIN.items():
                own, limit = _number(record, own_qty), _number(chosen, pred_qty)
                if own_qty in props and own is not None and limit is not None and own > limit:
                    record[own_qty] = chosen[pred_qty]
        org_units.derive(follow.type, follow.keys, record, i)

    def _most_left(
        self,
        flow: Flow,
        pred: Table,
        record: dict[str, object],
        candidates: list[dict[str, object]],
        used: dict[tuple[Flow, tuple[str, ...]], Decimal],
    ) -> dict[str, object] | None:
        """Of ``candidates``, the one with the most quantity left; ``record``'s quantity becomes what is
        left (None when no candidate has any)."""
        assert flow.quantity is not None
        follow_qty, pred_qty = flow.quantity

        def left(c: dict[str, object]) -> Decimal:
            key = self._key(flow, pred, {p: c.get(k) for p, k in flow.carriers})
            return (_number(c, pred_qty) or Decimal(0)) - used.get((flow, key), Decimal(0))

        best = max(candidates, key=left, default=None)
        if best is None or left(best) <= 0:
            return None
        record[follow_qty] = str(left(best))
        return best

    def _fits(
        self,
        flow: Flow,
        pred: Table,
        trial: dict[str, object],
        candidate: dict[str, object],
        used: dict[tuple[Flow, tuple[str, ...]], Decimal],
    ) -> bool:
        assert flow.quantity is not None
        limit = _number(candidate, flow.quantity[1])
        own = _number(trial, flow.quantity[0]) or Decimal(0)
        if limit is None:
            return True
        return _within(used.get((flow, self._key(flow, pred, trial)), Decimal(0)), own, limit)

    def _linked_ok(self, flow: Flow, record: dict[str, object], rows_at: RowsAt) -> bool:
        """Whether ``record`` meets ``flow`` (exists, ready) with the predecessors ``rows_at`` gives."""
        if flow.applies is not None and not flow.applies.holds(record):
            return True
        pred = self.data.table(*flow.pred)
        rows = rows_at(*flow.pred)
        if pred is None or not rows:
            return True
        found = rows.get(self._key(flow, pred, record))
        return found is not None and (flow.precondition is None or flow.precondition.holds(found))


def refuse(details: list[dict[str, str]]) -> None:
    """Raise the 400 for failed flow checks (one detail each); nothing when there are none."""
    if details:
        first = details[0]
        at = f" at {first['target']}" if first["target"] else ""
        summary = f"{len(details)} document flow violation(s); first{at}: {first['message']}"
        raise ServeHTTPError(400, first["code"], summary, details)


def _number(record: dict[str, object], prop: str) -> Decimal | None:
    """``record``'s ``prop`` as a number (None when empty or not a number)."""
    value = record.get(prop)
    if value in (None, ""):
        return None
    try:
        return Decimal(str(value))
    except InvalidOperation:
        return None


def _within(used: Decimal, own: Decimal, limit: Decimal) -> bool:
    """Whether a follow-on of quantity ``own`` fits a predecessor of quantity ``limit`` of which ``used`` is
    referenced: the sum stays within it, and something is left for it (a follow-on without a quantity of a
    fully referenced predecessor is refused too: SAP makes none of an item with no open quantity)."""
    return used + own <= limit and used < limit


def _content(table: Table, pred: Table, flow: Flow, source: dict[str, object]) -> dict[str, object]:
    """What a follow-on item of ``table`` takes from the predecessor item ``source`` of ``pred``: :data:`CARRIED`
    and :data:`CARRIED_AS` where ``table``'s type has the property and ``source`` a value (never a carrier),
    and a plant under the predecessor's role name for it where ``pred`` has no ``Plant`` (a sales order
    item's ``ProductionPlant`` is the delivery item's ``Plant``)."""
    props, carriers = table.type.props, set(flow.props)
    taken = {n: source[n] for n in CARRIED if n in props and source.get(n) not in (None, "")}
    for name, origin in CARRIED_AS.items():
        if name in props and name not in carriers and source.get(origin) not in (None, ""):
            taken[name] = source[origin]
    plant = next((source[p] for p in org_units.PLANT_PROPS if source.get(p) not in (None, "")), None)
    if plant is not None and "Plant" in props and "Plant" not in pred.type.props:
        taken["Plant"] = plant
    return {n: v for n, v in taken.items() if n not in carriers}
