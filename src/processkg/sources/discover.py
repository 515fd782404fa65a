"""Input files: the one place that turns ``--odata``/``--bpmn``/``--openapi``/``--codes`` roots into files.

A root may be a file (taken as given) or a directory (searched recursively for the stage's
suffixes, hidden files skipped, sorted so builds are deterministic). Each file gets a display
path, ``ROOT.name/relative/path``, that names it in the graph and in every error.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from processkg.errors import ProcessKGError

ODATA_SUFFIXES = (".xml", ".edmx")
BPMN_SUFFIXES = (".bpmn", ".bpmn2", ".xml")
OPENAPI_SUFFIXES = (".json",)
CODES_SUFFIXES = (".csv",)


def discover_marked(roots: Sequence[Path | str], suffixes: tuple[str, ...]) -> list[tuple[Path, str, bool]]:
    """``(path, display, explicit)``: explicit when the root itself is the file."""
    found: list[tuple[Path, str, bool]] = []
    for root in map(Path, roots):
        if root.is_file():
            found.append((root, root.name, True))
        elif root.is_dir():
            found.extend(
                (p, f"{root.name}/{p.relative_to(root).as_posix()}", False)
                for p in sorted(root.rglob("*"))
                if _wanted(p, suffixes)
            )
        elif root.exists():
            raise ProcessKGError(f"{root}: not a regular file or folder (a device, pipe or socket is not read)")
        else:
            raise ProcessKGError(f"{root}: no such file or directory")
    return found


def discover(roots: Sequence[Path | str], suffixes: tuple[str, ...]) -> list[tuple[Path, str]]:
    """``(path, display)`` for every input file under ``roots``."""
    return [(path, display) for path, display, _ in discover_marked(roots, suffixes)]


def _wanted(path: Path, suffixes: tuple[str, ...]) -> bool:
    return path.is_file() and path.suffix.lower() in suffixes and not path.name.startswith(".")
