"""Code-list files: CSV with a header ``value_list,code,description`` (optional ``service``).

``value_list`` is the value help's CollectionPath (the value-help entity set), e.g.
``VL_SalesOrderType``. The codes are attached to every value list with that path
(in ``service`` only, when the column is given) with ``kg:codeSource "codelist"``.
"""

from __future__ import annotations

import csv
from collections import defaultdict
from pathlib import Path

from .errors import CodeListError

REQUIRED = ("value_list", "code")


def read_code_lists(paths: list[Path]) -> dict:
    """{service or '': {collection path: [(code, description)]}}, sorted and de-duplicated."""
    codes: dict = defaultdict(lambda: defaultdict(dict))
    for path in paths:
        for service, value_list, code, description in _rows(Path(path)):
            codes[service][value_list].setdefault(code, description)
    return {svc: {vl: sorted(c.items()) for vl, c in by_vl.items()} for svc, by_vl in codes.items()}


def codes_for(codes: dict, service: str) -> dict:
    """{collection path: [(code, description)]} for one service: the rows without a service
    plus the service's own rows (whose description wins for a code in both)."""
    merged: dict = defaultdict(dict)
    for scope in ("", service):
        for value_list, rows in codes.get(scope, {}).items():
            merged[value_list].update(rows)
    return {vl: sorted(rows.items()) for vl, rows in merged.items()}


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
                yield (row.get("service") or "").strip(), value_list, code, (row.get("description") or "").strip()
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise CodeListError(f"cannot read code list: {exc}", str(path)) from None
