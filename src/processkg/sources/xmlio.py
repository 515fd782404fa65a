"""Safe XML parsing shared by the CSDL and BPMN readers.

Entity resolution, DTD loading and network access are off. A document that
declares a DTD with entities (a "billion laughs" bomb, or an external entity as in
XXE) or refers to an external DTD is rejected before it is parsed, so nothing is
expanded or fetched; OData and BPMN documents never need a DTD. The same check runs
again on the parsed tree, for a DTD that the quick look at the prolog could not see.
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Callable
from pathlib import Path
from typing import TypeAlias

from lxml import etree

from processkg.errors import MalformedXMLError

Tag: TypeAlias = str | Callable[..., object]
"""An lxml element's ``tag``: a Clark-notation name, or a factory such as ``etree.Comment``."""

_PARSER_OPTIONS = dict(
    resolve_entities=False,
    no_network=True,
    load_dtd=False,
    dtd_validation=False,
    huge_tree=False,
    remove_comments=True,
    remove_pis=True,
)


def _parser() -> etree.XMLParser:
    return etree.XMLParser(**_PARSER_OPTIONS)


def parse_xml(path: Path, display: str | None = None) -> etree._ElementTree:
    """Parse ``path`` safely; errors carry file, line and column."""
    name = display or str(path)
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise MalformedXMLError(f"cannot read file: {exc.strerror}", name) from None
    return parse_bytes(data, name)


def parse_bytes(data: bytes, name: str) -> etree._ElementTree:
    _reject_doctype(data, name)
    try:
        tree = etree.ElementTree(etree.fromstring(data, _parser()))
    except etree.XMLSyntaxError as exc:
        line, column = exc.position if exc.position else (None, None)
        raise MalformedXMLError(f"malformed XML: {exc.msg}", name, line, column) from None
    _reject_dtd_entities(tree, name)
    return tree


_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)
_PROLOG_BYTES = 1 << 16


def _prolog(data: bytes) -> str:
    """The first bytes of the document as text (enough to see a DOCTYPE, which precedes the root)."""
    head = data[:_PROLOG_BYTES]
    for bom, encoding in _BOMS:
        if head.startswith(bom):
            return head[len(bom) :].decode(encoding, "ignore")
    if head.startswith(b"\x00<\x00"):
        return head.decode("utf-16-be", "ignore")
    if head.startswith(b"<\x00"):
        return head.decode("utf-16-le", "ignore")
    return head.decode("latin-1")


def _doctype_start(text: str) -> int:
    """Index just after ``<!DOCTYPE`` in the prolog, or -1 when the root comes first.

    A scan over the prolog (XML declaration, comments, processing instructions, blanks) that
    visits each character once: a regular expression with nested repetition here was
    exponential in the number of comments before the root.
    """
    pos, size = 0, len(text)
    while pos < size:
        if text[pos].isspace():
            pos += 1
        elif text.startswith("<?", pos):
            pos = _after(text, "?>", pos + 2)
        elif text.startswith("<!--", pos):
            pos = _after(text, "-->", pos + 4)
        elif text.startswith("<!DOCTYPE", pos) and (pos + 9 >= size or not _name_char(text[pos + 9])):
            return pos + 9
        else:
            return -1
    return -1


def _after(text: str, end: str, start: int) -> int:
    """Index after the next ``end``; the text's length when it is not closed (the parser says so)."""
    found = text.find(end, start)
    return len(text) if found < 0 else found + len(end)


def _name_char(ch: str) -> bool:
    return ch.isalnum() or ch in "-_.:"


def _reject_doctype(data: bytes, name: str) -> None:
    """Refuse a DTD that declares entities or names an external DTD, before any parsing."""
    text = _prolog(data)
    start = _doctype_start(text)
    if start < 0:
        return
    line = text.count("\n", 0, start) + 1
    decl_end = min((i for i in (text.find("[", start), text.find(">", start)) if i >= 0), default=len(text))
    decl = text[start:decl_end]
    end = text.find("]>", decl_end)
    subset = text[decl_end : end if end >= 0 else len(text)]
    if "<!ENTITY" in subset:
        raise MalformedXMLError(
            "document declares DTD entities; entity expansion is disabled for safety "
            "(possible entity bomb or external entity), so it is not parsed",
            name,
            line,
        )
    if re.search(r"\b(?:SYSTEM|PUBLIC)\b", decl):
        raise MalformedXMLError("document refers to an external DTD; external resources are not loaded", name, line)


def _reject_dtd_entities(tree: etree._ElementTree, name: str) -> None:
    """Refuse documents whose DTD declares entities (bombs, XXE); expansion never happens."""
    docinfo = tree.docinfo
    dtd = docinfo.internalDTD
    if dtd is not None and any(True for _ in dtd.iterentities()):
        raise MalformedXMLError(
            "document declares DTD entities; entity expansion is disabled for safety "
            "(possible entity bomb or external entity)",
            name,
            1,
        )
    if docinfo.system_url or docinfo.public_id:
        raise MalformedXMLError("document refers to an external DTD; external resources are not loaded", name, 1)


def local(tag: Tag) -> str:
    """Local name of an element tag ('' for comments and processing instructions)."""
    if not isinstance(tag, str):
        return ""
    return tag.rsplit("}", 1)[-1]


def namespace(tag: Tag) -> str:
    if not isinstance(tag, str) or not tag.startswith("{"):
        return ""
    return tag[1:].split("}", 1)[0]
