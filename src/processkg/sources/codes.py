"""Code-list files: CSV with a header ``value_list,code,description`` (optional ``service``).

``value_list`` is the value help's CollectionPath (the value-help entity set), e.g.
``VL_SalesOrderType``. The codes are attached to every value list with that path
(in ``service`` only, when the column is given) with ``kg:codeSource "codelist"``.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, TypeAlias

from processkg.errors import CodeListError
from processkg.sources.limits import MAX_CODE_ROWS, csv_rows

REQUIRED = ("value_list", "code")

CodeRow: TypeAlias = tuple[str, str, str, int]
"""One code of a value help: (code, description, file, line)."""
CodeLists: TypeAlias = dict[str, dict[str, dict[str, tuple[str, str, int]]]]
"""{service or '': {collection path: {code: (description, file, line)}}}."""


def read_code_lists(paths: Sequence[Path | tuple[Path, str]]) -> CodeLists:
    """{service or '': {collection path: {code: (description, file, line)}}}; first row wins.

    ``paths`` holds Paths, or (Path, display name) pairs as ``build.discover`` returns them.
    """
    codes: dict[str, dict[str, dict[str, tuple[str, str, int]]]] = defaultdict(lambda: defaultdict(dict))
    for item in paths:
        path, display = item if isinstance(item, tuple) else (Path(item), str(item))
        for service, value_list, code, description, line in _rows(Path(path)):
            codes[service][value_list].setdefault(code, (description, display, line))
    return {svc: dict(by_vl) for svc, by_vl in codes.items()}


def codes_for(codes: CodeLists, service: str) -> dict[str, list[CodeRow]]:
    """{collection path: [(code, description, file, line)]} for one service, sorted by code:
    the rows without a service plus the service's own rows (which win for a code in both)."""
    merged: dict[str, dict[str, tuple[str, str, int]]] = defaultdict(dict)
    for scope in ("", service):
        for value_list, rows in codes.get(scope, {}).items():
            merged[value_list].update(rows)
    return {vl: [(code, *rows[code]) for code in sorted(rows)] for vl, rows in merged.items()}


def _rows(path: Path) -> Iterator[tuple[str, str, str, str, int]]:
    header = "value_list,code,description[,service]"
    for count, line, row in csv_rows(path, "code list", REQUIRED, header, CodeListError, lacks="code list "):
        yield _row(path, row, line, count)


def _row(path: Path, row: dict[str | Any, str | Any], line: int, count: int) -> tuple[str, str, str, str, int]:
    if count > MAX_CODE_ROWS:
        raise CodeListError(f"more than {MAX_CODE_ROWS:,} codes in one file", str(path), line)
    value_list, code = (row.get("value_list") or "").strip(), (row.get("code") or "").strip()
    if not value_list or not code:
        raise CodeListError("row has an empty value_list or code", str(path), line)
    return (row.get("service") or "").strip(), value_list, code, (row.get("description") or "").strip(), line
