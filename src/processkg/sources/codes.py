"""Code-list files: CSV with a header ``value_list,code,description`` (optional ``service``).

``value_list`` is the value help's CollectionPath (the value-help entity set), e.g.
``VL_SalesOrderType``. The codes are attached to every value list with that path
(in ``service`` only, when the column is given) with ``kg:codeSource "codelist"``.
"""

from __future__ import annotations

import csv
from collections import defaultdict
from pathlib import Path

from processkg.errors import CodeListError

REQUIRED = ("value_list", "code")


def read_code_lists(paths: list) -> dict:
    """{service or '': {collection path: {code: (description, file, line)}}}; first row wins.

    ``paths`` holds Paths, or (Path, display name) pairs as ``build.discover`` returns them.
    """
    codes: dict = defaultdict(lambda: defaultdict(dict))
    for item in paths:
        path, display = item if isinstance(item, tuple) else (Path(item), str(item))
        for service, value_list, code, description, line in _rows(Path(path)):
            codes[service][value_list].setdefault(code, (description, display, line))
    return {svc: dict(by_vl) for svc, by_vl in codes.items()}


def codes_for(codes: dict, service: str) -> dict:
    """{collection path: [(code, description, file, line)]} for one service, sorted by code:
    the rows without a service plus the service's own rows (which win for a code in both)."""
    merged: dict = defaultdict(dict)
    for scope in ("", service):
        for value_list, rows in codes.get(scope, {}).items():
            merged[value_list].update(rows)
    return {vl: [(code, *rows[code]) for code in sorted(rows)] for vl, rows in merged.items()}


def _rows(path: Path):
    try:
        with path.open(newline="", encoding="utf-8-sig") as fh:
            reader = csv.DictReader(fh)
            missing = [c for c in REQUIRED if c not in (reader.fieldnames or [])]
            if missing:
                raise CodeListError(f"code list lacks column(s) {', '.join(missing)}; expected "
                                    "value_list,code,description[,service]", str(path), 1)
            for row in reader:
                line = reader.line_num
                value_list, code = (row.get("value_list") or "").strip(), (row.get("code") or "").strip()
                if not value_list or not code:
                    raise CodeListError("row has an empty value_list or code", str(path), line)
                yield (row.get("service") or "").strip(), value_list, code, (row.get("description") or "").strip(), line
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise CodeListError(f"cannot read code list: {exc}", str(path)) from None
