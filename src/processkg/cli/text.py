"""Text that is safe to print on one terminal line."""

from __future__ import annotations

import unicodedata


def printable(text: str) -> str:
    """``text`` with control and line-separator characters escaped (``\\r``, ``\\x1b``, ``\\u2028``)."""
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() or ch == " " else _escape(ch) for ch in text)


def _escape(ch: str) -> str:
    return ch if unicodedata.category(ch) == "Zs" else ch.encode("unicode_escape").decode("ascii")
