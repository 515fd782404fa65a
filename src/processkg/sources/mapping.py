"""Read the activity-to-entity-set mapping (YAML) and lift it to ``uses:`` edges.

Format (``data/demo/mapping.yaml``)::

    mappings:
      - process: Process_OrderToCash      # BPMN process id
        activity: Task_CreateSalesOrder   # activity id, or its name
        service: API_SALES_ORDER_SRV      # service name (file stem, or folder of metadata.xml)
        entity_set: A_SalesOrder          # EntitySet name as in the metadata
        mode: write                       # read | write
        file: order-to-cash.bpmn          # optional: BPMN file, when a process id is in several

Every entry must resolve; one that does not raises :class:`MappingError` naming the
mapping file and the entry's line.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TypeAlias

import yaml
from pyoxigraph import NamedNode, Triple

from processkg.errors import MappingError
from processkg.sources.limits import compose_yaml, read_text
from processkg.triples import Triples, child
from processkg.vocab import USEST

EntitySetIRIs: TypeAlias = dict[str, dict[str, list[NamedNode]]]
"""service name -> {entity set name: [its IRIs]} (several when two documents share a name)."""

MODES = ("read", "write")
_REQUIRED = ("process", "activity", "service", "entity_set", "mode")


@dataclass(frozen=True)
class ActivityRef:
    file: str  # display path of the BPMN file
    process: str
    id: str
    name: str
    iri: NamedNode


@dataclass
class MappingEntry:
    process: str
    activity: str
    service: str
    entity_set: str
    mode: str
    line: int
    file: str = ""


def read_mapping(path: Path, display: str | None = None) -> list[MappingEntry]:
    name = display or str(path)
    root = compose_yaml(read_text(path, "mapping", name, MappingError), name, MappingError)
    _refuse_duplicate_keys(root, name)
    items = _mappings_node(root, name)
    return [_entry(node, name) for node in items]


def _refuse_duplicate_keys(root: yaml.Node | None, name: str) -> None:
    """YAML keeps the last of two equal keys silently; a mapping file may not have them (YAML 1.2 §3.2.1.1)."""
    todo = [root]
    while todo:
        node = todo.pop()
        if isinstance(node, yaml.MappingNode):
            seen: dict[str, int] = {}  # key -> its line
            for key, value in node.value:
                if isinstance(key, yaml.ScalarNode) and key.value in seen:
                    raise MappingError(
                        f"duplicate key {key.value!r} (first at line {seen[key.value]}); "
                        "YAML would keep only the last one",
                        name,
                        key.start_mark.line + 1,
                    )
                if isinstance(key, yaml.ScalarNode):
                    seen[key.value] = key.start_mark.line + 1
                todo.append(value)
        elif isinstance(node, yaml.SequenceNode):
            todo.extend(node.value)


def _mappings_node(root: yaml.Node | None, name: str) -> list[yaml.Node]:
    if root is None:
        return []
    if isinstance(root, yaml.MappingNode):
        for key, value in root.value:
            if key.value == "mappings" and isinstance(value, yaml.SequenceNode):
                return value.value
    raise MappingError("expected a top-level 'mappings:' list", name, root.start_mark.line + 1)


def _entry(node: yaml.Node, name: str) -> MappingEntry:
    line = node.start_mark.line + 1
    if not isinstance(node, yaml.MappingNode):
        raise MappingError("a mapping entry must be a key: value map", name, line)
    scalars = {k.value: v for k, v in node.value if isinstance(v, yaml.ScalarNode)}
    values = {k: v.value for k, v in scalars.items()}
    missing = [k for k in _REQUIRED if not str(values.get(k, "")).strip()]
    if missing:
        raise MappingError(f"mapping entry lacks {', '.join(missing)}", name, line)
    mode = str(values["mode"]).strip().lower()
    if mode not in MODES:
        raise MappingError(
            f"mode must be read or write, not {values['mode']!r}", name, scalars["mode"].start_mark.line + 1
        )
    return MappingEntry(
        str(values["process"]),
        str(values["activity"]),
        str(values["service"]),
        str(values["entity_set"]),
        mode,
        line,
        str(values.get("file", "")),
    )


def resolve_entry(
    entry: MappingEntry, activities: list[ActivityRef], entity_sets: EntitySetIRIs, name: str
) -> tuple[list[ActivityRef], list[NamedNode]]:
    """Return ([activity refs], [entity set IRIs]) for one entry, or raise MappingError."""
    in_process = [
        a for a in activities if a.process == entry.process and (not entry.file or a.file.endswith(entry.file))
    ]
    if not in_process:
        raise MappingError(f"process {entry.process!r} is not in any BPMN file of this build", name, entry.line)
    acts = [a for a in in_process if a.id == entry.activity] or [a for a in in_process if a.name == entry.activity]
    if not acts:
        raise MappingError(
            f"process {entry.process!r} has no activity with id or name {entry.activity!r}", name, entry.line
        )
    sets = entity_sets.get(entry.service)
    if sets is None:
        raise MappingError(f"service {entry.service!r} is not in this build", name, entry.line)
    targets = sets.get(entry.entity_set)
    if not targets:
        raise MappingError(f"service {entry.service!r} has no EntitySet {entry.entity_set!r}", name, entry.line)
    return acts, targets


def lift_mapping(
    entries: list[MappingEntry], activities: list[ActivityRef], entity_sets: EntitySetIRIs, name: str
) -> list[Triple]:
    """``uses:entitySet`` / ``uses:reads`` / ``uses:writes`` edges plus a ``uses:Usage`` per edge."""
    t = Triples(name)
    for entry in entries:
        acts, targets = resolve_entry(entry, activities, entity_sets, name)
        for act in acts:
            for target in targets:
                _edge(t, act.iri, target, entry)
    return t.items


def _edge(t: Triples, act: NamedNode, target: NamedNode, entry: MappingEntry) -> None:
    t.add(act, USEST.entitySet, target)
    t.add(act, USEST.writes if entry.mode == "write" else USEST.reads, target)
    usage = child(act, "uses", entry.service, entry.entity_set, entry.mode)
    t.node(usage, USEST.Usage, entry.line)
    t.add(act, USEST.usage, usage)
    t.add(usage, USEST.activity, act)
    t.add(usage, USEST.entitySet, target)
    t.text(usage, USEST.mode, entry.mode)
