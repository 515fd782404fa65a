"""ETags and ``If-Match`` for the entity sets whose metadata declares optimistic concurrency.

The ETag of an entity is a hash of its stored record (weak, ``W/"..."``), so any change to the
record, by any client, gives it a new ETag; clients treat it as opaque, as OData says. A change
(PATCH, MERGE, PUT, DELETE) to such an entity needs ``If-Match`` with its current ETag or ``*``:
without it the answer is 428, with another ETag 412 (OData V4 Protocol 8.2.4 and 11.4.1.1;
SAP Gateway answers V2 services the same way).
"""

from __future__ import annotations

import hashlib
import json
from decimal import Decimal

from processkg.aliases import JSONObject
from processkg.errors import ServeHTTPError

#: ETags kept (all dropped when full): id of the record -> (the record, a copy of it, its ETag)
_KEPT: dict[int, tuple[JSONObject, JSONObject, str]] = {}
KEPT = 4096
#: The types of values a copy of a record compares by: a record holding only these equals its copy
#: exactly while none of its values was changed, replaced, added or removed
_PLAIN = frozenset({str, int, float, bool, Decimal, type(None)})


def etag(record: JSONObject) -> str:
    """The ETag of a stored record: the same record, the same ETag.

    A record read again and again (a GET by key; the read before an update) is hashed once: its ETag
    is kept with a copy of the record, and given again while the record is the same object and still
    equals that copy (a change in place gives a new hash, as a new record does)."""
    kept = _KEPT.get(id(record))
    if kept is not None and kept[0] is record and kept[1] == record:
        return kept[2]
    text = json.dumps(record, sort_keys=True, ensure_ascii=False, default=str)
    tag = f'W/"{hashlib.sha256(text.encode()).hexdigest()[:20]}"'
    if all(type(v) in _PLAIN for v in record.values()):  # a nested value could change unseen by the copy
        if len(_KEPT) >= KEPT:
            _KEPT.clear()
        _KEPT[id(record)] = (record, dict(record), tag)
    return tag


def check_if_match(record: JSONObject, if_match: str | None) -> None:
    """Raise 428 when ``If-Match`` is missing, 412 when it names none of the record's ETags."""
    if if_match is None or not if_match.strip():
        raise ServeHTTPError(
            428,
            "precondition-required",
            "this entity set uses optimistic concurrency: send If-Match with the ETag a GET returned "
            "(the ETag header, or __metadata.etag / @odata.etag), or If-Match: *",
        )
    wanted = [t.strip() for t in if_match.split(",")]
    current = etag(record)
    if "*" not in wanted and current not in wanted and current.removeprefix("W/") not in wanted:
        raise ServeHTTPError(
            412,
            "precondition-failed",
            f"the entity was changed since the ETag {wanted[0]} was read; its ETag is now {current}: "
            "read it again and repeat the change",
        )
