"""Write the ISO code lists (currencies, countries, languages) from pycountry.

Run from the repository root: ``.venv/bin/python data/sap/codes/tools/iso_lists.py``.
The pycountry version is written into ``iso-version.txt`` next to the lists, so a rerun
with another version shows up as a diff. Languages are ISO 639-1 two-letter codes in upper
case, as SAP's OData APIs send the language key (``EN``, ``DE``).
"""

from __future__ import annotations

import csv
import io
import os
import tempfile
from importlib.metadata import version
from pathlib import Path

import pycountry

HERE = Path(__file__).resolve().parent.parent


def lists() -> dict:
    """{file name: [(value_list, code, description)]}, sorted by code."""
    return {
        "iso-currencies.csv": sorted(("Currency", c.alpha_3, c.name) for c in pycountry.currencies),
        "iso-countries.csv": sorted(("Country", c.alpha_2, c.name) for c in pycountry.countries),
        "iso-languages.csv": sorted(
            ("Language", lang.alpha_2.upper(), lang.name) for lang in pycountry.languages if hasattr(lang, "alpha_2")
        ),
    }


def write_atomic(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
        fh.write(text)
    os.replace(tmp, path)


def main() -> None:
    for name, rows in lists().items():
        buf = io.StringIO()
        writer = csv.writer(buf, lineterminator="\n")
        writer.writerow(("value_list", "code", "description"))
        writer.writerows(rows)
        write_atomic(HERE / name, buf.getvalue())
    write_atomic(HERE / "iso-version.txt", f"pycountry {version('pycountry')}\n")


if __name__ == "__main__":
    main()
