"""Code-list bindings: give a property a code list when its metadata names no value help.

SAP's A2X metadata carries almost no value-list annotations, so a code list keyed by a value
help's collection path (``--codes``) reaches few of its properties. A binding file
(``kg build --code-bindings FILE``, e.g. ``data/sap/codes/bindings.yaml``) names them instead::

    bindings:
      API_SALES_ORDER_SRV/A_SalesOrderType/SalesOrderType: SalesDocumentType
      "*/*/SalesOrganization": SalesOrganization

Without ``--code-bindings``, a ``bindings.yaml`` in a ``--codes`` folder is used (:data:`BINDINGS_FILE`).

Each key is ``SERVICE/EntityType/Property`` (the entity type's simple name, the property
it declares); each segment may use ``*`` and ``?`` wildcards (shell-style, case-sensitive).
Each value is a ``value_list`` name of a code-list CSV given with ``--codes``. When several
keys match one property, the one with the most segments free of wildcards wins, then the
earlier line. A repeated key is refused, as are non-string keys or values.
"""

from __future__ import annotations

import fnmatch
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import yaml

from processkg.errors import CodeListError
from processkg.sources.limits import compose_yaml, read_text
from processkg.sources.odata.csdl import StructuredType

#: The binding file ``kg build`` uses by default: the one in a ``--codes`` folder.
BINDINGS_FILE = "bindings.yaml"


@dataclass(frozen=True)
class Binding:
    pattern: str  # SERVICE/EntityType/Property, wildcards allowed
    value_list: str
    line: int

    @property
    def segments(self) -> tuple[str, ...]:
        return tuple(self.pattern.split("/"))

    @property
    def specificity(self) -> int:
        """Segments without a wildcard: an exact key beats ``*/*/Plant``."""
        return sum(1 for seg in self.segments if not any(c in seg for c in "*?["))

    def matches(self, service: str, entity_type: str, prop: str) -> bool:
        return all(fnmatch.fnmatchcase(name, seg) for name, seg in zip((service, entity_type, prop), self.segments))


def read_bindings(path: Path, display: str | None = None) -> list[Binding]:
    """The bindings of one file, in file order; every error names the file and line."""
    name = display or str(path)
    root = compose_yaml(read_text(path, "code-binding file", name, CodeListError), name, CodeListError)
    return _bindings(_bindings_node(root, name), name)


def _bindings_node(root: yaml.Node | None, name: str) -> yaml.MappingNode:
    if isinstance(root, yaml.MappingNode):
        for key, value in root.value:
            if key.value == "bindings" and isinstance(value, yaml.MappingNode):
                return value
    line = root.start_mark.line + 1 if root is not None else 1
    raise CodeListError("expected a top-level 'bindings:' map of SERVICE/EntityType/Property: value_list", name, line)


def _bindings(node: yaml.MappingNode, name: str) -> list[Binding]:
    seen: dict[str, int] = {}
    found = []
    for key, value in node.value:
        line = key.start_mark.line + 1
        if not isinstance(key, yaml.ScalarNode) or not isinstance(value, yaml.ScalarNode) or not value.value:
            raise CodeListError("a binding must be 'SERVICE/EntityType/Property: value_list'", name, line)
        if len(key.value.split("/")) != 3 or not all(key.value.split("/")):
            raise CodeListError(f"binding key {key.value!r} is not SERVICE/EntityType/Property", name, line)
        if key.value in seen:
            raise CodeListError(f"binding {key.value!r} repeats line {seen[key.value]}", name, line)
        seen[key.value] = line
        found.append(Binding(key.value, value.value, line))
    return found


def binding_for(bindings: list[Binding], service: str, entity_type: str, prop: str) -> Binding | None:
    """The binding that gives this property its code list, or None."""
    hits = [b for b in bindings if b.matches(service, entity_type, prop)]
    return min(hits, key=lambda b: (-b.specificity, b.line)) if hits else None


def bound_properties(
    bindings: list[Binding], service: str, types: Iterable[StructuredType]
) -> list[tuple[Binding, str, str]]:
    """``(binding, type qname, property name)`` for each property a binding reaches, sorted.

    ``types`` are the structured types of one service document (``doc.types.values()``);
    only the properties a type declares are matched (inherited ones belong to the base type).
    """
    found = []
    # Most keys name their property without a wildcard (``*/*/SalesOrderType``): only those of the
    # property's own name, and the keys with a wildcard in it, can match it; matching all of them
    # against each of the A2X corpus's 10,825 properties was 700,000 pattern matches a build.
    by_name: dict[str, list[Binding]] = defaultdict(list)
    wild: list[Binding] = []
    for b in bindings:
        (wild if any(c in b.segments[2] for c in "*?[") else by_name[b.segments[2]]).append(b)
    for st in sorted(types, key=lambda s: s.qname):
        for prop in st.properties:
            binding = binding_for(by_name.get(prop.name, []) + wild, service, st.name, prop.name)
            if binding is not None:
                found.append((binding, st.qname, prop.name))
    return found
