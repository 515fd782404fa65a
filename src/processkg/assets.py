"""The files shipped inside the package (``processkg/assets/``): ontology, graph shapes, queries, templates.

The package folder is the single source; the top-level ``ontology/``, ``shapes/`` and ``queries/``
of the repository are symbolic links to it, so a wheel and a source checkout read the same files.
A missing asset is an installation defect and raises :class:`AssetMissingError`, never a silent
fallback.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from processkg.errors import AssetMissingError


def asset(*parts: str) -> Path:
    """The path of a shipped asset; raises when the installation lacks it."""
    path = Path(str(resources.files("processkg").joinpath("assets", *parts)))
    if not path.exists():
        raise AssetMissingError(f"{path}: packaged asset missing; reinstall processkg")
    return path


def ontology_path() -> Path:
    return asset("ontology", "processkg.ttl")


def graph_shapes_path() -> Path:
    return asset("shapes", "graph.ttl")


def queries_dir() -> Path:
    """The user-facing query library (``kg query NAME``)."""
    return asset("queries")


def internal_queries_dir() -> Path:
    """The queries the stages run themselves (stats, audit, retrieval, shapes)."""
    return asset("queries", "internal")


def remote_queries_dir() -> Path:
    """The control queries of a store on a SPARQL server (its builds, pointer and files: graph/remote.py)."""
    return asset("queries", "remote")


def templates_dir(*parts: str) -> Path:
    return asset("templates", *parts)
