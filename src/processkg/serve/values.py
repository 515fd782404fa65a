"""Values of Edm primitive types: a canonical lexical form inside the server, JSON per OData version.

The server keeps every value as the XSD lexical form that ``validate.literals`` checks payloads
against, so a stored record compares and sorts the same whatever version wrote it, and renders
as V2 JSON (``/Date(ms)/``, 64-bit integers and decimals as strings) or V4 JSON (ISO dates,
numbers) on the way out.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal, InvalidOperation
from functools import lru_cache

from processkg.aliases import JSONValue
from processkg.validate import literals

NUMERIC = {"Edm.Byte", "Edm.SByte", "Edm.Int16", "Edm.Int32", "Edm.Int64", "Edm.Decimal", "Edm.Double", "Edm.Single"}
V2_STRING_NUMBERS = {"Edm.Int64", "Edm.Decimal"}
DATE_TIMES = {"Edm.DateTime", "Edm.DateTimeOffset"}
EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


def canonical(value: JSONValue, edm_type: str, v2: bool) -> object:
    """The stored form of a JSON value, or the value itself when it does not parse (validation said why).
    A date-time has one form whichever JSON form it came in (``/Date(1767225600000)/``,
    ``2026-01-01T00:00:00Z`` and, read as UTC as V2 JSON reads it, ``2026-01-01T00:00:00`` are all
    ``2026-01-01T00:00:00+00:00``), so keys and references compare equal."""
    if value is None:
        return None
    if type(value) is str:
        return _canonical_text(value, edm_type, v2)
    return _canonical(value, edm_type, v2)


@lru_cache(maxsize=4096)
def _canonical_text(value: str, edm_type: str, v2: bool) -> object:
    """:func:`canonical` of a JSON string, kept (the same text gives the same stored form)."""
    return _canonical(value, edm_type, v2)


def _canonical(value: JSONValue, edm_type: str, v2: bool) -> object:
    lexical, _datatype, problem = literals.literal(value, edm_type, v2)
    if problem:
        return value
    moment = _moment(lexical) if edm_type in DATE_TIMES else None
    return moment.isoformat() if moment is not None else lexical


def comparable(value: JSONValue, edm_type: str) -> object:
    """A Python value that orders as OData orders values of ``edm_type``."""
    if value is None:
        return None
    if edm_type in NUMERIC:
        try:
            return Decimal(str(value))
        except InvalidOperation:
            return str(value)
    if edm_type == "Edm.Boolean":
        return value in (True, "true")
    if edm_type in ("Edm.DateTime", "Edm.DateTimeOffset"):
        return _moment(str(value)) or str(value)
    return str(value)


def _moment(text: str) -> dt.datetime | None:
    try:
        moment = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=dt.UTC)


def to_json(value: JSONValue, edm_type: str, v2: bool) -> object:
    """The JSON value of a stored value in the format of the service's OData version."""
    if value is None or not isinstance(value, str):
        return value
    if edm_type == "Edm.Boolean":
        return value == "true"
    if edm_type in NUMERIC:
        return value if v2 and edm_type in V2_STRING_NUMBERS else _number(value)
    if v2 and edm_type == "Edm.DateTime":
        return _v2_date(value)
    if v2 and edm_type == "Edm.DateTimeOffset":
        return _v2_offset(value)
    return value


def changes_json(edm_type: str, v2: bool) -> bool:
    """Whether :func:`to_json` may give a stored value of ``edm_type`` in another form than as stored."""
    if edm_type in NUMERIC or edm_type == "Edm.Boolean":
        return True
    return v2 and edm_type in DATE_TIMES


def _number(text: str) -> int | float | str:
    try:
        number = Decimal(text)
    except InvalidOperation:
        return text
    return (
        int(number)
        if number == number.to_integral_value() and "." not in text and "E" not in text.upper()
        else float(number)
    )


@lru_cache(maxsize=4096)
def _v2_date(text: str) -> str:
    """A stored date-time as V2 JSON (``/Date(ms)/``); kept (the same text gives the same form)."""
    moment = _moment(text)
    return f"/Date({int((moment - EPOCH).total_seconds() * 1000)})/" if moment else text


@lru_cache(maxsize=4096)
def _v2_offset(text: str) -> str:
    """A stored ``Edm.DateTimeOffset`` as V2 JSON: SAP Gateway writes the offset, ``/Date(ms+0000)/``."""
    return _v2_date(text).replace(")/", "+0000)/") if _moment(text) else text
