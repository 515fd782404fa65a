"""Curated required-on-create fields: what a create needs where SAP's V2 metadata does not say.

``kg build --required PATH`` reads a CSV file, or every ``*.csv`` of a folder (e.g.
``data/sap/required``), with the header ``service,entity_set,property,source,note``: one row
per property a POST to the entity set must carry, and the document that says so in ``source``.
A row naming a service, entity set or property that the build does not have is a warning (as an
unused code binding is); a row that cannot be read stops the build with ``FILE:LINE: ...``.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from processkg.errors import RequiredFieldsError
from processkg.sources.limits import MAX_CODE_ROWS, csv_rows, row_text, unique_rows

COLUMNS = ("service", "entity_set", "property", "source")


@dataclass(frozen=True)
class RequiredField:
    service: str
    entity_set: str
    prop: str  # the CSV's property column
    source: str
    note: str
    file: str  # display name of the CSV, e.g. required/required.csv
    line: int

    @property
    def key(self) -> str:
        return f"{self.service}/{self.entity_set}/{self.prop}"


def read_required(path: Path) -> list[RequiredField]:
    """Every row of the CSV file or folder ``path``, in file order; a row repeating an earlier
    service/entity_set/property is refused with both lines."""
    return unique_rows(path, _rows, RequiredFieldsError)


def _rows(path: Path, display: str) -> Iterator[RequiredField]:
    header = "service,entity_set,property,source,note"
    for count, line, row in csv_rows(path, "required-fields file", COLUMNS, header, RequiredFieldsError):
        if count > MAX_CODE_ROWS:
            raise RequiredFieldsError(f"more than {MAX_CODE_ROWS:,} rows in one file", str(path), line)
        yield _row(path, display, row, line)


def _row(path: Path, display: str, row: dict[str | None, str | list[str] | None], line: int) -> RequiredField:
    text = row_text(row, COLUMNS, ("note",), RequiredFieldsError, path, line)
    return RequiredField(
        text["service"], text["entity_set"], text["property"], text["source"], text["note"], display, line
    )
