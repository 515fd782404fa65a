"""``kg serve``: calls of function imports, actions and functions.

A call is validated like every other, with the ``kg validate`` engine (the operation exists, the
HTTP method is the one it takes, the parameters fit its shape: docs/validation.md, "Operation
calls"); a rejected call gets 400 with one detail per violation. An accepted call then acts on the
entity it names, and changes it where the effect of the operation is known (:data:`EFFECTS`);
otherwise it is an accepted no-op. Either way the call is recorded (``--record``) and the answer's
``sap-message`` header (SAP Gateway's header for messages of a successful call) says what happened.

The entity a call acts on: for a bound V4 operation the one its URL addresses (none when it is
bound to a collection); for a V2 function import one of its ``sap:action-for`` type whose key the
parameters give by name; for an operation bound to nothing, the entity set whose key its parameters
give by name (SAP's ``releaseApprovalRequest(SalesOrder)``), as the typed context lists it. An entity
named but not in the data is a 404.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Protocol, TypeAlias

from starlette.responses import JSONResponse, Response

from processkg.aliases import JSONObject, JSONValue
from processkg.errors import ServeHTTPError
from processkg.serve import odata_json
from processkg.serve.data import Data, Table
from processkg.serve.values import canonical
from processkg.services.model import Model, OperationInfo
from processkg.validate.operation_parameters import parameter_values, resolve_operation
from processkg.validate.urls import CallTarget, parse_call_url, resolve_service

Segments: TypeAlias = list[tuple[str, str | None]]
"""URL path segments after the service root: (name, key predicate text or None)."""
Walked: TypeAlias = tuple[Table, list[dict[str, object]], bool]
"""What a walk along URL segments reaches: the last table, its records, and whether one entity is meant."""
Walk: TypeAlias = Callable[[Segments], Walked]

#: What an operation does to the entity it acts on, where SAP's meaning is plain and the entity type
#: has the property: operation name -> (property, value). A flag named after the step is True or False
#: (stored as "true"/"false" for Edm.Boolean, as ABAP's "X"/"" for a one-character Edm.String); the
#: SD processing statuses are codes (domain STATV: A not yet, B partly, C completely processed).
EFFECTS: dict[str, tuple[tuple[str, bool | str | None], ...]] = {
    # API_PRODUCTION_ORDER_2_SRV (sap:action-for A_ProductionOrder_2Type)
    "ReleaseOrder": (("OrderIsReleased", True),),
    "TechlyCmpltOrder": (("OrderIsTechnicallyCompleted", True),),
    "CloseOrder": (("OrderIsClosed", True),),
    "DeletionFlagOrder": (("OrderIsMarkedForDeletion", True),),
    "DeliveryCompletedOrder": (("OrderIsDelivered", True),),
    # API_BILLING_DOCUMENT_SRV: a cancelled billing document
    "Cancel": (("BillingDocumentIsCancelled", True),),
    # CE_BILLINGDOCUMENT_0001: AccountingPostingStatus (VBRK-RFBSK) C, posting document created
    "PostToAccounting": (("AccountingPostingStatus", "C"),),
    # API_OUTBOUND_DELIVERY_SRV, API_INBOUND_DELIVERY_SRV: header statuses
    "PostGoodsIssue": (("OverallGoodsMovementStatus", "C"),),
    "ReverseGoodsIssue": (("OverallGoodsMovementStatus", "A"),),
    "PostGoodsReceipt": (("OverallGoodsMovementStatus", "C"),),
    "ReverseGoodsReceipt": (("OverallGoodsMovementStatus", "A"),),
    "PickAllItems": (("OverallPickingStatus", "C"),),
    "ConfirmPickingAllItems": (("OverallPickingConfStatus", "C"),),
    "PutawayAllItems": (("OverallWarehouseActivityStatus", "C"),),
    # API_SUPPLIERINVOICE_PROCESS: releasing a blocked invoice lifts its payment block
    "Release": (("PaymentBlockingReason", None),),
    # API_EQUIPMENT, API_FUNCTIONALLOCATION
    "SetEquipToMarkedForDeletion": (("EquipmentIsMarkedForDeletion", True),),
    "RsetEquipFromMarkedForDeletion": (("EquipmentIsMarkedForDeletion", False),),
    "SetEquipmentToInactive": (("EquipmentIsInactive", True),),
    "ResetEquipmentFromInactive": (("EquipmentIsInactive", False),),
    "SetFuncLocToMarkedForDeletion": (("FuncnlLocIsMarkedForDeletion", True),),
    "RsetFuncLocFromMrkdForDeletion": (("FuncnlLocIsMarkedForDeletion", False),),
    "SetFuncnlLocationToInactive": (("FuncnlLocIsDeactivated", True),),
    "RsetFuncnlLocationFromInactive": (("FuncnlLocIsDeactivated", False),),
}


class OperationServer(Protocol):
    """What this module needs of ``processkg.serve.app.Server``."""

    model: Model
    data: Data

    def check_call(self, call: JSONObject) -> None: ...

    def check_flow(self, op: OperationInfo, values: JSONObject) -> None: ...

    def make_follow_ons(self, op: OperationInfo, values: JSONObject) -> list[tuple[Table, dict[str, object]]]: ...

    def entity(
        self, table: Table, record: JSONObject, base: str, select: list[str] | None = None
    ) -> dict[str, object]: ...


def target_of(model: Model, method: str, url: str) -> CallTarget:
    """The call target ``kg validate`` resolves for a request (service, segments, operation...)."""
    target = parse_call_url(url)
    target["method"], target["violations"] = method, []
    resolve_service(model, target)
    return target


def names_operation(target: CallTarget) -> bool:
    """Whether a request (its :func:`target_of`) calls an operation, or a name that is no entity set but
    close to an operation's."""
    if any(name.startswith("$") for name, _key in (target.get("segments") or [])[:1]):
        return False  # $metadata, $batch, $count...: never an operation
    return "operation" in target or any(v[0] == "unknown-operation" for v in target["violations"])


def invoke(server: OperationServer, method: str, url: str, body: JSONValue, root: str, walk: Walk) -> Response:
    """Validate the call (400 with the violations), find the entity it acts on (404 when named but
    absent), apply the known effect, and answer in the service's JSON format."""
    server.check_call({"method": method, "url": url, **({"payload": body} if body is not None else {})})
    target = target_of(server.model, method, url)
    op, _problems = resolve_operation(server.model, target)
    if op is None:  # check_call refused this call already; unreachable unless the model changed
        raise ServeHTTPError(404, "unknown-operation", f"no operation {target.get('operation')}")
    values, _problems = parameter_values(op, target, body)
    with server.data.lock:
        server.check_flow(op, values)  # an action making follow-ons from references (serve/flow_checks.py)
        made = server.make_follow_ons(op, values)
        if made:
            return _made(server, op, made, root)
        acted = _acted_on(server.data, op, target, values, walk)
        changed = _apply(op, acted)
        return _answer(server, op, acted, changed, root)


def _acted_on(
    data: Data, op: OperationInfo, target: CallTarget, values: JSONObject, walk: Walk
) -> tuple[Table, dict[str, object]] | None:
    at = target.get("operation_at")
    if at is not None:
        if op.collection:
            return None
        table, records, _single = walk(target["segments"][:at])
        if len(records) != 1:
            raise ServeHTTPError(404, "not-found", f"no {table.name} at the URL that {op.qname or op.name} is bound to")
        return table, records[0]
    keyed = _table_for(data, op, values)
    if keyed is None:
        return None
    key = tuple(str(canonical(values[k], keyed.type.props[k].edm_type, _v2(op))) for k in keyed.keys)
    record = keyed.rows.get(key)
    if record is None:
        given = ", ".join(f"{k}={values[k]!r}" for k in keyed.keys)
        raise ServeHTTPError(404, "not-found", f"{op.name} acts on {keyed.name}, which has no entity {given}")
    return keyed, record


def _table_for(data: Data, op: OperationInfo, values: JSONObject) -> Table | None:
    """The table of the entity a root-level call acts on: of its ``sap:action-for`` type, else (bound
    to nothing) the one whose key the parameters give by name, the most key properties first."""
    tables = [t for _name, t in sorted(data.tables_of(op.service).items())]
    keyed = [t for t in tables if t.keys and set(t.keys) <= set(values)]
    if op.action_for is not None:
        return next((t for t in keyed if t.type.iri == op.action_for), None)
    return max(keyed, key=lambda t: len(t.keys), default=None)


def _apply(op: OperationInfo, acted: tuple[Table, dict[str, object]] | None) -> dict[str, str | None]:
    """Set the properties :data:`EFFECTS` names for the operation on the entity; what changed."""
    if acted is None:
        return {}
    table, record = acted
    props = table.type.props
    changes = {name: _stored(value, props[name].edm_type) for name, value in EFFECTS.get(op.name, ()) if name in props}
    record.update(changes)
    return changes


def _stored(value: bool | str | None, edm_type: str) -> str | None:
    """A flag as the property's type stores it: ``true``/``false``, or ABAP's ``X``/empty in a string."""
    if not isinstance(value, bool):
        return value
    if edm_type == "Edm.Boolean":
        return "true" if value else "false"
    return "X" if value else ""


def _answer(
    server: OperationServer,
    op: OperationInfo,
    acted: tuple[Table, dict[str, object]] | None,
    changed: dict[str, str | None],
    root: str,
) -> Response:
    headers = {"sap-message": json.dumps(_message(op, acted, changed), ensure_ascii=False)}
    v2 = _v2(op)
    if acted is not None and op.return_type == acted[0].type.qname:
        table, record = acted
        item = server.entity(table, record, root)
        return JSONResponse(odata_json.single(table.type, item, table.name), headers=headers)
    if not op.return_type:
        return Response(status_code=204, headers=headers)
    return JSONResponse(_empty_result(op, v2), headers=headers)


def _made(
    server: OperationServer, op: OperationInfo, made: list[tuple[Table, dict[str, object]]], root: str
) -> Response:
    """The answer of an action that created documents: the created headers, as the collection it returns."""
    names = ", ".join(f"{t.name}{odata_json.key_predicate(t.type, r)}" for t, r in made)
    message = {"code": "KG/OPERATION", "message": f"{op.qname or op.name}: created {names}", "severity": "info"}
    entities = [server.entity(t, r, root) for t, r in made]
    return JSONResponse(
        {"@odata.context": f"$metadata#{made[0][0].name}", "value": entities},
        headers={"sap-message": json.dumps(message, ensure_ascii=False)},
    )


def _message(
    op: OperationInfo, acted: tuple[Table, dict[str, object]] | None, changed: dict[str, str | None]
) -> dict[str, str]:
    name = op.qname or op.name
    if acted is None:
        text = f"{name}: accepted; it acts on no entity this server holds, so nothing changed (recorded)"
    elif changed:
        table, record = acted
        where = f"{table.name}{odata_json.key_predicate(table.type, record)}"
        text = f"{name}: set " + ", ".join(f"{k} to {v if v is not None else 'null'}" for k, v in changed.items())
        text += f" on {where}"
    else:
        text = f"{name}: accepted; its effect on the data is not known to this server, so nothing changed (recorded)"
    return {"code": "KG/OPERATION", "message": text, "severity": "info"}


def _empty_result(op: OperationInfo, v2: bool) -> dict[str, object]:
    """The declared result, without content the server cannot know: an empty collection, or an
    instance of the complex (or primitive) type without values."""
    many = op.return_type.startswith("Collection(")
    item = op.return_type[11:-1] if many else op.return_type
    if v2:
        if many:
            return {"d": {"results": []}}
        return {"d": {op.name: None if item.startswith("Edm.") else {"__metadata": {"type": item}}}}
    context = f"$metadata#{op.return_type}"
    if many or item.startswith("Edm."):
        return {"@odata.context": context, "value": [] if many else None}
    return {"@odata.context": context}


def _v2(op: OperationInfo) -> bool:
    return not op.version.startswith("4")


__all__ = ["EFFECTS", "OperationServer", "invoke", "names_operation", "target_of"]
