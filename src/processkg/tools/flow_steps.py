"""The curated document flow in the tools: ``describe``'s ``made_from`` (one short line per predecessor:
which fields carry its key, whether it is required, what it must have done first) and ``next_steps``'s
``follow_ons`` (the sets made from a record of this set or of its items, with a payload template whose
carrier fields hold the given record's keys). The flows are kg serve's (:mod:`processkg.serve.flow_checks`),
read once per toolbox from the store.
"""

from __future__ import annotations

from processkg.aliases import JSONObject
from processkg.serve.data import Data
from processkg.serve.flow_checks import Condition, Flow
from processkg.tools.describe import create_inside


def made_from(flows: list[Flow], service: str, entity_set: str) -> list[str]:
    """``A_SalesOrderItem (API_SALES_ORDER_SRV), required: ReferenceSDDocument=SalesOrder, ...`` per predecessor."""
    lines = []
    for f in flows:
        if f.follow != (service, entity_set):
            continue
        carried = ", ".join(f"{c}={k}" for c, k in f.carriers)
        need = "required" if f.required else "optional"
        when = f" when {_condition(f.applies)}" if f.applies else ""
        ready = f"; it must have {_condition(f.precondition)}" if f.precondition else ""
        qty = f"; {f.quantity[0]} summed <= its {f.quantity[1]}" if f.quantity else ""
        lines.append(f"{f.pred[1]} ({f.pred[0]}), {need}{when}: {carried}{ready}{qty}")
    return lines


def follow_ons(
    flows: list[Flow], seed: Data, service: str, entity_set: str, record: dict[str, str] | None
) -> list[JSONObject]:
    """The flows out of ``entity_set`` and out of its item sets (by SAP's key convention), each with a
    payload template: a carrier holds the ``record``'s value of the key it carries, else ``<Key>``."""
    table = seed.table(service, entity_set)
    if table is None:
        return []
    items = [t for _n, t in sorted(seed.tables_of(service).items()) if table in seed.parents(t)[0]]
    names = {(service, entity_set)} | {(t.service, t.name) for t in items}
    found = []
    for f in flows:
        if f.pred not in names:
            continue
        template = {c: (record or {}).get(k, f"<{k}>") for c, k in f.carriers}
        entry: JSONObject = {
            "service": f.follow[0],
            "entity_set": f.follow[1],
            "from": f.pred[1],
            "process": f.process,
            "required": f.required,
            "payload": template,
        }
        if f.applies:
            entry["when"] = _condition(f.applies)
        if f.precondition:
            entry["first"] = f"the {f.pred[1]} must have {_condition(f.precondition)}"
        how = _how(seed, f)
        if how:
            entry["create"] = how
        found.append(entry)
    return found


def _condition(condition: Condition) -> str:
    """``OverallSDProcessStatus=A|B``: the property and the values it must have."""
    return f"{condition.prop}={'|'.join(condition.values)}"


def _how(seed: Data, flow: Flow) -> str:
    """How a follow-on record is made when it is not by a POST of its own: inside its parent, or (neither
    it nor its parent takes a POST) by the service from its predecessor."""
    table = seed.table(*flow.follow)
    if table is None:
        return ""
    parents = seed.parents(table)[0]
    if not table.creatable and not any(p.creatable for p in parents):
        return f"no POST: {flow.follow[0]} makes it from the {flow.pred[1]} by an operation (describe detail full)"
    return create_inside(seed, seed.model.services[flow.follow[0]], flow.follow[1])
