"""Changes to one entity: PATCH and MERGE merge the payload into the record, PUT replaces it, DELETE
removes it with the entities it is composed of.

Key properties never change (the URL names the entity; a payload that gives another key value is
refused). An entity's composition is found by SAP's key convention, as navigation finds it
(:mod:`processkg.serve.data`): the records of a to-many navigation whose key repeats the whole key
of the deleted record (a sales order's items, their schedule lines, ...) go with it.
"""

from __future__ import annotations

from processkg.aliases import JSONObject
from processkg.errors import ServeHTTPError
from processkg.serve import odata_json
from processkg.serve.data import Data, Table
from processkg.serve.values import canonical


def changed(table: Table, record: JSONObject, payload: JSONObject, replace: bool) -> dict[str, object]:
    """The record after a PATCH/MERGE (``replace=False``) or a PUT (``replace=True``)."""
    v2 = odata_json.is_v2(table.type)
    keys = set(table.keys)
    out = {k: record[k] for k in table.keys} if replace else dict(record)
    for name, value in payload.items():
        prop = table.type.props.get(name)
        if prop is None or prop.collection or prop.complex_type is not None:
            continue
        stored = canonical(value, prop.edm_type, v2)
        if name in keys and str(stored) != str(record.get(name)):
            raise ServeHTTPError(
                400, "key-change", f"{name} is a key property: the URL names the entity, its key cannot change"
            )
        out[name] = stored
    return out


def delete(data: Data, table: Table, record: JSONObject) -> int:
    """Remove ``record`` and the records it is composed of (:meth:`Data.composed`); the number removed."""
    found = list(data.composed(table, record))
    for t, r in found:
        t.remove(t.key_of(r))
    return len(found)
