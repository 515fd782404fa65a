"""Safe XML parsing shared by the CSDL and BPMN readers.

Entity resolution, DTD loading and network access are off. A document that
declares a DTD with entities (a "billion laughs" bomb, or an external entity as in
XXE) is rejected before anything is expanded.
"""

from __future__ import annotations

from pathlib import Path

from lxml import etree

from .errors import MalformedXMLError

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
    try:
        tree = etree.ElementTree(etree.fromstring(data, _parser()))
    except etree.XMLSyntaxError as exc:
        line, column = exc.position if exc.position else (None, None)
        raise MalformedXMLError(f"malformed XML: {exc.msg}", name, line, column) from None
    _reject_dtd_entities(tree, name)
    return tree


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
        raise MalformedXMLError(
            "document refers to an external DTD; external resources are not loaded", name, 1
        )


def local(tag: object) -> str:
    """Local name of an element tag ('' for comments and processing instructions)."""
    if not isinstance(tag, str):
        return ""
    return tag.rsplit("}", 1)[-1]


def namespace(tag: object) -> str:
    if not isinstance(tag, str) or not tag.startswith("{"):
        return ""
    return tag[1:].split("}", 1)[0]
