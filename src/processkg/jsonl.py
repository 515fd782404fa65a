"""The one reader of JSON Lines files: recorded calls (``kg validate``), benchmark and batch queries.

Why one reader: each stage used to carry its own copy, and each copy had its own gaps. This one

* splits records on ``\\n`` only (``str.splitlines`` also splits on U+2028, U+0085, FF...: a raw
  U+2028 inside a JSON string would cut a record in two and shift every later line number);
* strips a UTF-8 byte-order mark and a CR before the ``\\n`` (files saved on Windows);
* reads standard input for ``-``, and refuses a device, FIFO or directory (reading one could hang);
* bounds what one file can cost: :data:`LIMITS` caps the bytes per line and per file, the nesting
  depth (checked on the raw text *before* ``json.loads`` recurses, so a 100,000-level line cannot
  overflow the stack), the keys per object and the values per record;
* rejects what is not JSON (RFC 8259) although Python's ``json`` accepts it: ``NaN``,
  ``Infinity`` and numbers too large for a double, which would come back out as bare ``NaN``.

A broken line is reported as ``file:line: reason``. :func:`read_records` yields it as a
:class:`JsonLinesError` *value* so a caller can report it and go on with the other lines
(``kg validate``); :func:`read_strict` raises it (benchmark and query files).
"""

from __future__ import annotations

import json
import math
import os
import re
import stat
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from itertools import accumulate
from pathlib import Path
from typing import Any, BinaryIO, NoReturn

from processkg.errors import JsonLinesError, JsonValueLimitError

MB = 1024 * 1024
STDIN = "-"


@dataclass(frozen=True)
class Limits:
    """What one JSON Lines file may cost; each bound is documented in docs/reliability.md."""

    line_bytes: int = 10 * MB  # one record
    file_bytes: int = 256 * MB  # the whole file (or standard input)
    depth: int = 64  # nesting of arrays and objects in one record
    keys: int = 10_000  # members of one object
    values: int = 100_000  # array items plus object members in one record


LIMITS = Limits()
BOM = b"\xef\xbb\xbf"
# A JSON string, or an unterminated one up to the end (so the scan never restarts inside it: linear).
STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"?', re.S)
NOT_STRUCTURE = re.compile(r"[^\[\]{},]+")
DEPTH_STEP = {"[": 1, "{": 1, "]": -1, "}": -1, ",": 0}


def read_records(source: Path | str, limits: Limits = LIMITS, what: str = "JSON lines") -> Iterator[tuple[int, object]]:
    """``(line number, value)`` per non-blank line; a broken line gives ``(line, JsonLinesError)``.

    A file that cannot be read at all raises :class:`JsonLinesError` naming ``what`` it should hold.
    """
    name = "<stdin>" if str(source) == STDIN else str(source)
    with _open(source, name, limits, what) as fh:
        yield from _records(fh, name, limits)


def read_strict(source: Path | str, limits: Limits = LIMITS, what: str = "JSON lines") -> Iterator[tuple[int, object]]:
    """As :func:`read_records`, but the first broken line raises its :class:`JsonLinesError`."""
    for number, value in read_records(source, limits, what):
        if isinstance(value, JsonLinesError):
            raise value
        yield number, value


def parse_line(text: str, name: str = "<line>", number: int = 1, limits: Limits = LIMITS) -> object:
    """One record from its text; raises :class:`JsonLinesError` naming ``name:number`` and the reason."""
    problem = _structure_problem(text, limits)
    if problem:
        raise JsonLinesError(problem, name, number)
    try:
        return json.loads(
            text, parse_constant=reject_constant, parse_float=finite_float, object_pairs_hook=_object(limits.keys)
        )
    except json.JSONDecodeError as exc:
        raise JsonLinesError(f"not valid JSON: {exc.msg} (column {exc.colno})", name, number) from None
    except JsonValueLimitError as exc:
        raise JsonLinesError(str(exc), name, number) from None
    except ValueError as exc:  # our hooks, or int() beyond sys.get_int_max_str_digits()
        raise JsonLinesError(f"not valid JSON: {exc}", name, number) from None


# ---------------------------------------------------------------- the file


def _open(source: Path | str, name: str, limits: Limits, what: str) -> _Bounded:
    if str(source) == STDIN:
        return _Bounded(sys.stdin.buffer, name, limits)
    try:
        info = os.stat(source)
        if stat.S_ISDIR(info.st_mode):
            raise JsonLinesError(f"cannot read {what}: it is a directory", name)
        if not stat.S_ISREG(info.st_mode):
            raise JsonLinesError(f"cannot read {what}: not a regular file (a device, FIFO or socket)", name)
        if info.st_size > limits.file_bytes:
            raise JsonLinesError(
                f"cannot read {what}: the file has {_size(info.st_size)}, more than the "
                f"limit of {_size(limits.file_bytes)}",
                name,
            )
        return _Bounded(open(source, "rb"), name, limits)  # closed by the with in read_records
    except OSError as exc:
        raise JsonLinesError(f"cannot read {what}: {exc.strerror or exc}", name) from None


class _Bounded:
    """A binary stream that stops with an error once more than ``limits.file_bytes`` were read."""

    def __init__(self, fh: BinaryIO, name: str, limits: Limits) -> None:
        self.fh, self.name, self.limits, self.read = fh, name, limits, 0

    def __enter__(self) -> _Bounded:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.fh is not sys.stdin.buffer:
            self.fh.close()

    def readline(self, size: int) -> bytes:
        try:
            chunk = self.fh.readline(size)
        except OSError as exc:
            raise JsonLinesError(f"cannot read: {exc.strerror or exc}", self.name) from None
        self.read += len(chunk)
        if self.read > self.limits.file_bytes:
            raise JsonLinesError(f"more than the limit of {_size(self.limits.file_bytes)} per file", self.name)
        return chunk


def _records(fh: _Bounded, name: str, limits: Limits) -> Iterator[tuple[int, object]]:
    number = 0
    while True:
        raw, complete = _line(fh, limits.line_bytes)
        if not raw and complete is None:
            return
        number += 1
        if number == 1 and raw.startswith(BOM):
            raw = raw[len(BOM) :]
        if not complete:
            yield number, JsonLinesError(f"line longer than the limit of {_size(limits.line_bytes)}", name, number)
        elif raw.strip():
            yield number, _value(raw, name, number, limits)


def _line(fh: _Bounded, limit: int) -> tuple[bytes, bool | None]:
    """(line without its end, True) or (head, False) for a line over ``limit`` (the rest is skipped);
    (b"", None) at the end of the file."""
    raw = fh.readline(limit + 1)
    if not raw:
        return b"", None
    if raw.endswith(b"\n") or len(raw) <= limit:
        return raw.rstrip(b"\n").removesuffix(b"\r"), True
    while raw and not raw.endswith(b"\n"):
        raw = fh.readline(MB)
    return b"", False


def _value(raw: bytes, name: str, number: int, limits: Limits) -> object:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return JsonLinesError(f"not UTF-8 (byte {exc.start + 1} of the line)", name, number)
    try:
        return parse_line(text, name, number, limits)
    except JsonLinesError as exc:
        return exc


# ---------------------------------------------------------------- bounds checked before parsing


def _structure_problem(text: str, limits: Limits) -> str:
    """Why ``text`` is too deep or has too many values, found without recursion; "" if it is not."""
    if text.count("[") + text.count("{") <= limits.depth and text.count(",") < limits.values:
        return ""
    structure = NOT_STRUCTURE.sub("", STRING.sub("", text))
    if structure.count(",") >= limits.values:
        return f"more than the limit of {limits.values:,} values (array items and object members) in one record"
    depth = max(accumulate(map(DEPTH_STEP.__getitem__, structure)), default=0)
    if depth > limits.depth:
        return f"arrays and objects nested deeper than the limit of {limits.depth} levels"
    return ""


def _object(max_keys: int) -> Callable[[list[tuple[str, Any]]], dict[str, Any]]:
    def make(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        if len(pairs) > max_keys:
            raise JsonValueLimitError(f"an object has {len(pairs):,} keys, more than the limit of {max_keys:,}")
        return dict(pairs)

    return make


def reject_constant(name: str) -> NoReturn:
    """``json.loads``'s ``parse_constant``: NaN and Infinity are not JSON (RFC 8259)."""
    raise ValueError(f"{name} is not a JSON number (RFC 8259); write it as a string")


def finite_float(text: str) -> float:
    """``json.loads``'s ``parse_float``: a number beyond a 64-bit float is refused, not read as inf."""
    number = float(text)
    if not math.isfinite(number):
        shown = text if len(text) <= 40 else text[:37] + "..."
        raise ValueError(f"the number {shown} is too large for a 64-bit float; write it as a string")
    return number


def _size(n: int) -> str:
    return f"{n / MB:g} MB" if n >= MB else f"{n:,} bytes"


__all__ = ["LIMITS", "Limits", "finite_float", "parse_line", "read_records", "read_strict", "reject_constant"]
