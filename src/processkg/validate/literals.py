"""OData JSON values of Edm primitive types: check the lexical form, give the XSD_NS literal.

OData V2 JSON (https://www.odata.org/documentation/odata-version-2-0/json-format/):
Edm.Decimal and Edm.Int64 are strings, Edm.DateTime is ``/Date(ms)/`` (ISO 8601 accepted),
Edm.Time is an ISO 8601 duration. OData V4 JSON (OData JSON Format 4.01, section 7.1):
numbers are JSON numbers (Int64 and Decimal may also be strings, IEEE754Compatible),
dates and times ISO 8601, DateTimeOffset with a time zone.

:func:`literal` returns ``(lexical, xsd IRI, problem)``: for a good value the canonical XSD_NS
lexical form and the type's datatype; for a bad one the JSON text, the datatype of what
the JSON *is* (never the expected one, so ``sh:datatype`` fails) and a message.
:func:`decimal_digits` checks a good decimal against its property's ``Precision`` and ``Scale``.
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import json
import re
from collections.abc import Callable
from decimal import Decimal
from typing import TypeAlias

from processkg.aliases import JSONValue
from processkg.vocab import RDF_JSON, XSD_NS

Checked: TypeAlias = tuple[str, str | None, str | None]
"""A JSON value read as an Edm literal: (lexical form, XSD datatype IRI, problem or None)."""

INT_RANGE = {
    "Edm.Byte": (0, 255, "unsignedByte"),
    "Edm.SByte": (-128, 127, "byte"),
    "Edm.Int16": (-(2**15), 2**15 - 1, "short"),
    "Edm.Int32": (-(2**31), 2**31 - 1, "int"),
    "Edm.Int64": (-(2**63), 2**63 - 1, "long"),
}
V2_DATE = re.compile(r"^/Date\((-?\d+)([+-]\d{4})?\)/$")
ISO_DURATION = re.compile(r"^-?P(?!$)(\d+Y)?(\d+M)?(\d+D)?(T(?=\d)(\d+H)?(\d+M)?(\d+(\.\d+)?S)?)?$")
DECIMAL_TEXT = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)$")
INT_TEXT = re.compile(r"^[+-]?\d+$")
TIME_OF_DAY = re.compile(r"^([01]\d|2[0-3]):[0-5]\d(:[0-5]\d(\.\d{1,12})?)?$")


def literal(value: JSONValue, edm_type: str, v2: bool) -> Checked:
    check = _CHECKS.get(edm_type)
    if check is None:  # Edm.String, Edm.Guid (a pattern in the shape), enums, unknown types
        if isinstance(value, str):
            return value, XSD_NS + "string", None
        return _bad(value, f"expects {edm_type} as a JSON string")
    return check(value, edm_type, v2)


def _bad(value: JSONValue, problem: str, got: str | None = None) -> tuple[str, str, str]:
    return json.dumps(value, ensure_ascii=False), got or _json_datatype(value), f"{problem}; got {_show(value)}"


def _json_datatype(value: JSONValue) -> str:
    if isinstance(value, bool):
        return XSD_NS + "boolean"
    if isinstance(value, int):
        return XSD_NS + "integer"
    if isinstance(value, float):
        return XSD_NS + "double"
    if isinstance(value, str):
        return XSD_NS + "string"
    return RDF_JSON


def _show(value: JSONValue) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 40 else text[:37] + "..."


def _boolean(value: JSONValue, edm_type: str, v2: bool) -> Checked:
    if isinstance(value, bool):
        return ("true" if value else "false"), XSD_NS + "boolean", None
    return _bad(value, "expects Edm.Boolean as JSON true or false")


def _integer(value: JSONValue, edm_type: str, v2: bool) -> Checked:
    lo, hi, xsd = INT_RANGE[edm_type]
    as_string = edm_type == "Edm.Int64"
    if v2 and as_string and not isinstance(value, str):
        return _bad(value, 'expects Edm.Int64 as a JSON string in OData V2, e.g. "42"')
    if isinstance(value, str) and (as_string or not v2) and INT_TEXT.match(value.strip()):
        number = int(value)
    elif isinstance(value, int) and not isinstance(value, bool) and not (v2 and as_string):
        number = value
    else:
        return _bad(value, f"expects {edm_type} as a JSON {'string' if v2 and as_string else 'integer'}")
    if not lo <= number <= hi:
        return _bad(value, f"{edm_type} ranges from {lo} to {hi}", XSD_NS + "integer")
    return str(number), XSD_NS + xsd, None


def _decimal(value: JSONValue, edm_type: str, v2: bool) -> Checked:
    if v2 and not isinstance(value, str):
        return _bad(value, 'expects Edm.Decimal as a JSON string in OData V2, e.g. "12.50"')
    if isinstance(value, str) and DECIMAL_TEXT.match(value.strip()):
        number = Decimal(value.strip())
    elif isinstance(value, (int, float)) and not isinstance(value, bool) and not v2:
        number = Decimal(repr(value)) if isinstance(value, float) else Decimal(value)
    else:
        return _bad(value, "expects Edm.Decimal as a " + ("JSON string" if v2 else "JSON number"))
    if not number.is_finite():
        return _bad(value, "Edm.Decimal must be finite")
    return format(number, "f"), XSD_NS + "decimal", None


def decimal_digits(lexical: str, precision: int | None, scale: int | None) -> str | None:
    """What is wrong with a decimal's digits (its canonical ``lexical`` form, as :func:`literal` gives it)
    against the property's ``Precision`` and ``Scale``, or None. Trailing zeros after the point do not
    count (``12.50`` has the scale 1 it needs); without a Scale only the digits in all are limited."""
    number = Decimal(lexical)
    if not number.is_finite():
        return None
    _sign, digits, exponent = number.normalize().as_tuple()
    assert isinstance(exponent, int)
    after = max(0, -exponent)
    before = max(0, len(digits) + exponent) if number else 0
    if scale is not None and after > scale:
        return f"allows {scale} decimal place{'s' if scale != 1 else ''} (Scale={scale}); got {after}: round it"
    if precision is not None and scale is not None and before > precision - scale:
        room = precision - scale
        return f"allows {room} digit{'s' if room != 1 else ''} before the point (Precision={precision}, Scale={scale}); got {before}"
    if precision is not None and before + after > precision:
        return f"allows {precision} digits in all (Precision={precision}); got {before + after}"
    return None


def _floating(value: JSONValue, edm_type: str, v2: bool) -> Checked:
    xsd = XSD_NS + ("float" if edm_type == "Edm.Single" else "double")
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return repr(float(value)).replace("inf", "INF"), xsd, None
    if isinstance(value, str):
        special = {"NaN": "NaN", "INF": "INF", "-INF": "-INF", "Infinity": "INF", "-Infinity": "-INF"}
        if value in special:
            return special[value], xsd, None
        try:
            return repr(float(value)), xsd, None
        except ValueError:
            pass
    return _bad(value, f"expects {edm_type} as a JSON number")


def _datetime(value: JSONValue, edm_type: str, v2: bool) -> Checked:
    if not isinstance(value, str):
        return _bad(value, f"expects {edm_type} as a JSON string")
    m = V2_DATE.match(value)
    if m and v2:
        moment = dt.datetime(1970, 1, 1, tzinfo=dt.UTC) + dt.timedelta(milliseconds=int(m.group(1)))
        return moment.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z", XSD_NS + "dateTime", None
    iso = _iso_datetime(value)
    if iso is None:
        form = "/Date(ms)/ or ISO 8601" if v2 else "ISO 8601, e.g. 2025-01-31T10:00:00Z"
        return _bad(value, f"expects {edm_type} as {form}")
    if edm_type == "Edm.DateTimeOffset" and not v2 and iso.tzinfo is None:
        return _bad(value, "expects Edm.DateTimeOffset with a time zone (Z or +hh:mm)")
    return iso.isoformat(), XSD_NS + "dateTime", None


def _iso_datetime(text: str) -> dt.datetime | None:
    candidate = text[:-1] + "+00:00" if text.endswith("Z") else text
    if "T" not in candidate:
        return None
    try:
        return dt.datetime.fromisoformat(candidate)
    except ValueError:
        return None


def _date(value: JSONValue, edm_type: str, v2: bool) -> Checked:
    if isinstance(value, str) and re.match(r"^\d{4}-\d{2}-\d{2}$", value):
        try:
            return dt.date.fromisoformat(value).isoformat(), XSD_NS + "date", None
        except ValueError:
            pass
    return _bad(value, "expects Edm.Date as a JSON string YYYY-MM-DD")


def _time_of_day(value: JSONValue, edm_type: str, v2: bool) -> Checked:
    if isinstance(value, str) and TIME_OF_DAY.match(value):
        return value if value.count(":") == 2 else value + ":00", XSD_NS + "time", None
    return _bad(value, "expects Edm.TimeOfDay as a JSON string hh:mm:ss")


def _duration(value: JSONValue, edm_type: str, v2: bool) -> Checked:
    if isinstance(value, str) and ISO_DURATION.match(value):
        return value, XSD_NS + "duration", None
    return _bad(value, f"expects {edm_type} as an ISO 8601 duration, e.g. PT13H20M00S")


def _binary(value: JSONValue, edm_type: str, v2: bool) -> Checked:
    if isinstance(value, str):
        text = value.replace("-", "+").replace("_", "/")
        try:
            raw = base64.b64decode(text + "=" * (-len(text) % 4), validate=True)
            return base64.b64encode(raw).decode("ascii"), XSD_NS + "base64Binary", None
        except (binascii.Error, ValueError):
            pass
    return _bad(value, "expects Edm.Binary as a base64 JSON string")


_CHECKS: dict[str, Callable[[JSONValue, str, bool], Checked]] = {
    "Edm.Boolean": _boolean,
    "Edm.Decimal": _decimal,
    "Edm.Double": _floating,
    "Edm.Single": _floating,
    "Edm.DateTime": _datetime,
    "Edm.DateTimeOffset": _datetime,
    "Edm.Date": _date,
    "Edm.TimeOfDay": _time_of_day,
    "Edm.Time": _duration,
    "Edm.Duration": _duration,
    "Edm.Binary": _binary,
    **{name: _integer for name in INT_RANGE},
}

__all__ = ["INT_RANGE", "literal"]
