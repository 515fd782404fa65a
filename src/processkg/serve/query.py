"""System query options on the server's records: ``$filter``, ``$orderby``, ``$top``, ``$skip``.

``$filter`` is parsed into a small expression tree and evaluated per record: comparisons
(``eq ne gt ge lt le``), ``and``, ``or``, ``not``, parentheses, and the string functions
``substringof`` (V2), ``contains``, ``startswith``, ``endswith``, ``tolower``, ``toupper``.
Anything else is refused with :class:`~processkg.errors.UnsupportedQueryError` (the server answers 501), never
guessed.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeAlias

from processkg.aliases import JSONObject, JSONValue
from processkg.errors import ServeQueryError, UnsupportedQueryError
from processkg.serve.values import comparable
from processkg.services.model import TypeInfo

TOKEN = re.compile(
    r"""
    (?P<string>'(?:[^']|'')*')
  | (?P<typed>(?:datetime|datetimeoffset|guid|time|binary|X)'(?:[^']|'')*')
  | (?P<number>-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?[mMdDfFlL]?)
  | (?P<name>[A-Za-z_][\w.]*(?:/[A-Za-z_][\w.]*)*)
  | (?P<symbol>[(),])
  | (?P<space>\s+)
""",
    re.VERBOSE,
)
COMPARE: dict[str, Callable[[object, object], bool]] = {
    "eq": lambda a, b: a == b,
    "ne": lambda a, b: a != b,
    "gt": lambda a, b: a is not None and b is not None and a > b,  # type: ignore[operator]
    "ge": lambda a, b: a is not None and b is not None and a >= b,  # type: ignore[operator]
    "lt": lambda a, b: a is not None and b is not None and a < b,  # type: ignore[operator]
    "le": lambda a, b: a is not None and b is not None and a <= b,  # type: ignore[operator]
}
FUNCTIONS: dict[str, Callable[..., object]] = {
    "substringof": lambda needle, hay: _text(needle) in _text(hay),
    "contains": lambda hay, needle: _text(needle) in _text(hay),
    "startswith": lambda hay, prefix: _text(hay).startswith(_text(prefix)),
    "endswith": lambda hay, suffix: _text(hay).endswith(_text(suffix)),
    "tolower": lambda s: _text(s).lower(),
    "toupper": lambda s: _text(s).upper(),
}
MAX_FILTER = 4_000
MAX_DEPTH = 100  # nested parentheses, function calls and ``not`` in one $filter
MAX_COUNT_DIGITS = 18  # $top and $skip: any number a collection could reach

Expr: TypeAlias = Callable[[JSONObject], object]
"""A ``$filter`` (sub)expression: its value on one stored record (compared, or taken as true or false)."""


def _text(value: JSONValue) -> str:
    return "" if value is None else str(value)


@dataclass
class Parser:
    tokens: list[tuple[str, str]]
    type: TypeInfo
    pos: int = 0
    depth: int = 0

    def enter(self) -> None:
        """One level deeper; past :data:`MAX_DEPTH` the filter is refused before the parser recurses further."""
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise ServeQueryError(f"$filter nests deeper than {MAX_DEPTH} levels (parentheses, functions, not)")

    def peek(self) -> tuple[str, str]:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else ("end", "")

    def take(self, value: str | None = None) -> tuple[str, str]:
        kind, text = self.peek()
        if value is not None and text != value:
            raise ServeQueryError(f"$filter: expected {value!r} but found {text or 'the end'!r}")
        self.pos += 1
        return kind, text

    def expression(self) -> Expr:
        left = self.conjunction()
        while self.peek()[1] == "or":
            self.take()
            left = _either(left, self.conjunction())
        return left

    def conjunction(self) -> Expr:
        left = self.negation()
        while self.peek()[1] == "and":
            self.take()
            left = _both(left, self.negation())
        return left

    def negation(self) -> Expr:
        if self.peek()[1] == "not":
            self.take()
            self.enter()
            inner = self.negation()
            self.depth -= 1
            return lambda r: not inner(r)
        return self.comparison()

    def comparison(self) -> Expr:
        left, left_type = self.operand()
        op = self.peek()[1]
        if op not in COMPARE:
            return left
        self.take()
        right, right_type = self.operand()
        edm = left_type or right_type or "Edm.String"
        test = COMPARE[op]
        return lambda r: test(comparable(left(r), edm), comparable(right(r), edm))

    def operand(self) -> tuple[Expr, str | None]:
        kind, text = self.take()
        if text == "(":
            self.enter()
            inner = self.expression()
            self.take(")")
            self.depth -= 1
            return inner, None
        if kind == "name" and self.peek()[1] == "(":
            return self.call(text), None
        if kind == "name":
            return self.member(text)
        return _literal(kind, text), None

    def call(self, name: str) -> Expr:
        if name not in FUNCTIONS:
            raise UnsupportedQueryError(f"$filter function {name} is not supported")
        self.take("(")
        self.enter()
        args = [self.operand()[0]]
        while self.peek()[1] == ",":
            self.take()
            args.append(self.operand()[0])
        self.take(")")
        self.depth -= 1
        fn = FUNCTIONS[name]
        return lambda r: fn(*(a(r) for a in args))

    def member(self, name: str) -> tuple[Expr, str | None]:
        if name in ("true", "false"):
            return (lambda r: name == "true"), "Edm.Boolean"
        if name == "null":
            return (lambda r: None), None
        if "/" in name:
            raise UnsupportedQueryError(f"$filter on a navigation path ({name}) is not supported")
        prop = self.type.props.get(name)
        if prop is None:
            raise ServeQueryError(f"$filter: {self.type.qname} has no property {name}")
        return (lambda r: r.get(name)), prop.edm_type


def _either(a: Expr, b: Expr) -> Expr:
    return lambda r: bool(a(r)) or bool(b(r))


def _both(a: Expr, b: Expr) -> Expr:
    return lambda r: bool(a(r)) and bool(b(r))


def _literal(kind: str, text: str) -> Expr:
    if kind == "string":
        value: object = text[1:-1].replace("''", "'")
    elif kind == "typed":
        value = text[text.index("'") + 1 : -1]
    elif kind == "number":
        value = text.rstrip("mMdDfFlL")
    else:
        raise ServeQueryError(f"$filter: unexpected {text!r}")
    return lambda r: value


def tokens(text: str) -> list[tuple[str, str]]:
    out, pos = [], 0
    while pos < len(text):
        m = TOKEN.match(text, pos)
        if m is None:
            raise ServeQueryError(f"$filter: cannot read {text[pos : pos + 20]!r}")
        if m.lastgroup != "space":
            out.append((m.lastgroup or "", m.group()))
        pos = m.end()
    return out


def compile_filter(text: str, type_: TypeInfo) -> Expr:
    """A predicate on stored records for the ``$filter`` expression ``text``."""
    if len(text) > MAX_FILTER:
        raise ServeQueryError(f"$filter is longer than {MAX_FILTER} characters")
    parser = Parser(tokens(text), type_)
    test = parser.expression()
    if parser.pos != len(parser.tokens):
        raise ServeQueryError(f"$filter: unexpected {parser.peek()[1]!r}")
    return test


def order(records: list[JSONObject], text: str, type_: TypeInfo) -> list[JSONObject]:
    """``$orderby``: stable sort by each ``Property [asc|desc]``, the last one first."""
    for item in reversed([i.strip() for i in text.split(",") if i.strip()]):
        name, _, direction = item.partition(" ")
        prop = type_.props.get(name)
        if prop is None:
            raise ServeQueryError(f"$orderby: {type_.qname} has no property {name}")
        key = _sort_key(prop.edm_type, name)
        records = sorted(records, key=key, reverse=direction.strip().lower() == "desc")
    return records


def _sort_key(edm: str, name: str) -> Callable[[JSONObject], tuple[bool, object]]:
    def key(r: JSONObject) -> tuple[bool, object]:
        value = comparable(r.get(name), edm)
        return (value is not None, value if value is not None else 0)

    return key


def count_option(text: str | None, name: str) -> int | None:
    """``$top``/``$skip`` as a non-negative integer (ASCII digits, at most 18), None when absent."""
    if text is None:
        return None
    if not (text.isascii() and text.isdigit()) or len(text) > MAX_COUNT_DIGITS:
        raise ServeQueryError(
            f"{name} must be a non-negative integer of at most {MAX_COUNT_DIGITS} digits, not {text[:40]!r}"
        )
    return int(text)
