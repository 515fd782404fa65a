"""Size limits for every input a reader takes whole, and the one bounded way to read such a file.

A reader never trusts a path to be a small regular file: ``/dev/zero``, a FIFO or an endless
stream would otherwise grow memory without end. :func:`read_bytes` refuses anything that is not a
regular file and any file over its kind's limit, with one line naming the file and the limit.
The limits are generous for real data (the largest SAP metadata document in ``../shared/data`` is
under 3 MB, the largest SOCBench-D document under 1 MB) and are listed in docs/reliability.md.
"""

from __future__ import annotations

import csv
import io
import stat
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Protocol, TypeVar

import yaml

from processkg.errors import InputError

MB = 1024 * 1024
#: Largest file of each kind that is read at all.
MAX_BYTES = {
    "mapping": 16 * MB,
    "code list": 64 * MB,
    "code-binding file": 4 * MB,
    "required-fields file": 4 * MB,
    "document-flow file": 4 * MB,
    "OpenAPI document": 16 * MB,  # parsed with line numbers: ~1 s and ~15 MB of memory per MB
}
#: Most rows of one code-list file. Real value helps are far smaller (ISO countries: 249); every
#: code becomes graph nodes and a member of a SHACL ``sh:in`` list, so 50,000 codes build in about
#: 10 s and 0.7 GB, while 1,000,000 took 196 s and 9 GB (measured on the demo, see reliability.md).
MAX_CODE_ROWS = 50_000
#: Most ``bpmn:next`` pairs one BPMN file may derive. A gateway joining M branches and splitting
#: into N makes M x N pairs (1,000 x 1,000: 1.02 M triples, 54 s and 1 GB); the largest file in
#: ../shared/data/bpmn derives 45. Over the bound the file is refused, naming the gateway.
MAX_NEXT_PAIRS = 100_000
#: Deepest nesting of YAML sequences and maps (PyYAML's composer recurses once per level; a
#: mapping file needs 3).
MAX_YAML_DEPTH = 64


def read_bytes(path: Path | str, kind: str, display: str | None = None, error: type[InputError] = InputError) -> bytes:
    """The whole file, after checking that it is a regular file within ``MAX_BYTES[kind]``;
    problems raise ``error`` (the reader's own error class)."""
    name = display or str(path)
    limit = MAX_BYTES[kind]
    try:
        info = Path(path).stat()
    except OSError as exc:
        raise error(f"cannot read {kind}: {exc.strerror}", name) from None
    if not stat.S_ISREG(info.st_mode):
        raise error(f"not a regular file: a {kind} must be a file, not a device, pipe or folder", name)
    if info.st_size > limit:
        raise error(f"{kind} is {info.st_size / MB:.1f} MB, over the limit of {limit // MB} MB", name)
    with Path(path).open("rb") as fh:
        data = fh.read(limit + 1)
    if len(data) > limit:
        raise error(f"{kind} grew over the limit of {limit // MB} MB while it was read", name)
    return data


def read_text(path: Path | str, kind: str, display: str | None = None, error: type[InputError] = InputError) -> str:
    """:func:`read_bytes` decoded as UTF-8 (a BOM is dropped); bad bytes name the file and line."""
    data = read_bytes(path, kind, display, error)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise error(f"{kind} is not UTF-8 text (byte {exc.start})", display or str(path), line) from None


def compose_yaml(text: str, name: str, error: type[InputError] = InputError) -> yaml.Node | None:
    """The YAML node tree of ``text``, once a pass over its events (iterative) has found it at most
    :data:`MAX_YAML_DEPTH` deep and without aliases (``*a``: a few lines can make a billion nodes).
    Every problem raises ``error`` naming the file and line."""
    try:
        depth = 0
        for event in yaml.parse(text, Loader=yaml.SafeLoader):
            if isinstance(event, yaml.AliasEvent):
                raise error(f"YAML alias *{event.anchor} is not allowed here; write the value out", name, _line(event))
            if isinstance(event, (yaml.SequenceStartEvent, yaml.MappingStartEvent)):
                depth += 1
                if depth > MAX_YAML_DEPTH:
                    raise error(f"YAML nested deeper than {MAX_YAML_DEPTH} levels", name, _line(event))
            elif isinstance(event, (yaml.SequenceEndEvent, yaml.MappingEndEvent)):
                depth -= 1
        return yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise error(f"not valid YAML: {getattr(exc, 'problem', exc)}", name, mark.line + 1 if mark else None) from None


def _line(event: yaml.Event) -> int | None:
    return event.start_mark.line + 1 if event.start_mark else None


def csv_rows(
    path: Path, kind: str, columns: tuple[str, ...], header: str, error: type[InputError], lacks: str = ""
) -> Iterator[tuple[int, int, dict[str | None, str | list[str] | None]]]:
    """The rows of the CSV file ``path`` (a ``kind`` for messages: "code list") as (count, line, row),
    ``line`` the file line the row ended on. One ``error`` with ``path:line`` for a header without one of
    ``columns`` (message ``{lacks}lacks column(s) ...; expected {header}``), a row that is not CSV, or a
    field that spans lines (an unterminated quote swallowed what followed)."""
    text = read_text(path, kind, str(path), error)
    reader = csv.DictReader(io.StringIO(text, newline=""), strict=True)
    last = 0  # the line the last good row (or the header) ended on: a broken row starts after it
    try:
        missing = [c for c in columns if c not in (reader.fieldnames or [])]
        last = reader.line_num
        if missing:
            raise error(f"{lacks}lacks column(s) {', '.join(missing)}; expected {header}", str(path), 1)
        for count, row in enumerate(reader, start=1):
            last = reader.line_num
            if any("\n" in v or "\r" in v for v in row.values() if isinstance(v, str)):
                raise error("a field spans several lines (an unterminated quote before it?)", str(path), last)
            yield count, last, row
    except csv.Error as exc:
        raise error(f"not a well-formed CSV row: {exc} (an unterminated quote?)", str(path), last + 1) from None


def row_text(
    row: dict[str | None, str | list[str] | None],
    columns: tuple[str, ...],
    optional: tuple[str, ...],
    error: type[InputError],
    path: Path,
    line: int,
) -> dict[str, str]:
    """A curated CSV row's ``columns`` and ``optional`` columns as stripped text (an absent optional one
    is ""); one ``error`` with ``path:line`` for a row with more fields than the header or an empty
    one of ``columns``."""
    values = {c: row.get(c) for c in (*columns, *optional)}
    if None in row or any(not isinstance(v, str) and v is not None for v in values.values()):
        raise error("row has more fields than the header", str(path), line)
    text = {c: str(v or "").strip() for c, v in values.items()}
    empty = [c for c in columns if not text[c]]
    if empty:
        raise error(f"row has an empty {', '.join(empty)}", str(path), line)
    return text


class CuratedRow(Protocol):
    """A row of a curated CSV: where it is (``file`` display name, ``line``) and what may occur once."""

    @property
    def file(self) -> str: ...

    @property
    def line(self) -> int: ...

    @property
    def key(self) -> str: ...


R = TypeVar("R", bound=CuratedRow)


def csv_files(path: Path) -> list[tuple[Path, str]]:
    """The CSV file ``path``, or the ``*.csv`` of folder ``path`` sorted by name, with display names
    ``FOLDER/FILE``."""
    if path.is_dir():
        return [(f, f"{path.name}/{f.name}") for f in sorted(path.glob("*.csv"))]
    return [(path, f"{path.parent.name}/{path.name}")]


def unique_rows(path: Path, rows: Callable[[Path, str], Iterator[R]], error: type[InputError]) -> list[R]:
    """Every row of the CSV file or folder ``path`` (``rows(file, display)`` reads one file), in file
    order; a row whose ``key`` an earlier row had is refused with both lines."""
    if not path.exists():
        raise error("no such file or folder", str(path))
    found: list[R] = []
    seen: dict[str, R] = {}
    for file, display in csv_files(path):
        for row in rows(file, display):
            first = seen.setdefault(row.key, row)
            if first is not row:
                raise error(f"{row.key} repeats {first.file}:{first.line}", str(file), row.line)
            found.append(row)
    return found
