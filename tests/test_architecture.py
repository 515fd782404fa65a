"""The package's shape: one subpackage per stage, imports only downward, no cycles.

Every import in src/processkg (also those inside functions) is read with ``ast``; a module may
import only from a lower layer or from its own subpackage, and the module graph has no cycle.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from processkg.retrieve.retriever import METHODS

SRC = Path(__file__).resolve().parents[1] / "src" / "processkg"

# Lowest first. A module may import from its own part (acyclically) or from any lower layer.
LAYERS = [
    ("errors",),
    ("vocab", "assets", "jsonl", "aliases"),
    ("triples", "openai_chat"),  # openai_chat: the one chat client, of proposals/ and agent/
    ("sources",),
    ("graph",),
    ("services",),
    ("validate",),
    ("retrieve",),
    ("proposals", "serve"),
    ("tools",),
    ("agent",),
    ("evaluate",),  # above agent/: the agent evaluation runs the agent
    ("build",),
    ("docgen",),
    ("cli",),
    ("__init__",),
]
RANK = {part: rank for rank, parts in enumerate(LAYERS) for part in parts}


def module_name(path: Path) -> str:
    parts = ("processkg",) + path.relative_to(SRC).with_suffix("").parts
    return ".".join(parts).removesuffix(".__init__")


def part_of(module: str) -> str:
    """The layer part of ``processkg.X.Y``: X (``__init__`` for the package itself)."""
    rest = module.split(".")[1:]
    return rest[0] if rest else "__init__"


def imports_of(path: Path) -> list[tuple[int, str]]:
    """(line, imported processkg module) for every import in the file, nested ones too."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level:
            raise AssertionError(f"{path}:{node.lineno}: relative import; use processkg.<stage>")
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("processkg"):
            found += [(node.lineno, target(node.module, a.name)) for a in node.names]
        elif isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names if a.name.startswith("processkg")]
    return found


def target(module: str, name: str) -> str:
    """``from processkg.sources import openapi`` imports the module processkg.sources.openapi."""
    candidate = SRC.joinpath(*module.split(".")[1:], name)
    return f"{module}.{name}" if candidate.with_suffix(".py").exists() or candidate.is_dir() else module


MODULES = {module_name(p): p for p in sorted(SRC.rglob("*.py"))}
GRAPH = {m: sorted({t for _, t in imports_of(p) if t != m}) for m, p in MODULES.items()}


@pytest.mark.parametrize("module", sorted(MODULES))
def test_imports_go_only_downward(module):
    own = part_of(module)
    for line, imported in imports_of(MODULES[module]):
        other = part_of(imported)
        assert other in RANK, f"{imported} is in no layer; add it to LAYERS"
        assert other == own or RANK[other] < RANK[own], (
            f"{MODULES[module].relative_to(SRC.parent)}:{line}: {module} ({own}) imports {imported} "
            f"({other}), which is not below it"
        )


def test_module_graph_has_no_cycle():
    state: dict[str, int] = {}

    def visit(module: str, path: list[str]) -> None:
        state[module] = 1
        for nxt in GRAPH.get(module, []):
            nxt = nxt if nxt in MODULES else nxt.rsplit(".", 1)[0]
            if state.get(nxt) == 1:
                raise AssertionError("import cycle: " + " -> ".join(path + [module, nxt]))
            if nxt in MODULES and not state.get(nxt):
                visit(nxt, path + [module])
        state[module] = 2

    for module in sorted(MODULES):
        if not state.get(module):
            visit(module, [])


def test_every_layer_part_exists():
    parts = {part_of(m) for m in MODULES}
    assert parts == set(RANK), f"layers without modules or modules without layer: {parts ^ set(RANK)}"


# A parameter says what it takes: not missing, and not a bare container, ``object`` or ``Any``
# (``list[str]``, ``JSONValue`` from processkg.aliases, a Protocol or a TypeVar say more).
# ``*exc: object`` of ``__exit__`` and ``key: object`` of a mapping's ``__contains__`` are the
# standard signatures and stay.
VAGUE = {"list", "dict", "set", "tuple", "frozenset", "object", "Any", "Callable", "Iterable", "Sequence", "Mapping"}


def vague_parameters(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) or node.name in ("__exit__", "__contains__"):
            continue
        a = node.args
        params = a.posonlyargs + a.args + a.kwonlyargs + [p for p in (a.vararg, a.kwarg) if p]
        for arg in params:
            if arg.arg in ("self", "cls"):
                continue
            text = "" if arg.annotation is None else ast.unparse(arg.annotation).strip("'\"")
            if not text or any(part.strip() in VAGUE for part in text.split("|")):
                found.append(f"{path.relative_to(SRC.parent)}:{arg.lineno}: {node.name}({arg.arg}: {text or '?'})")
    return found


@pytest.mark.parametrize("module", sorted(MODULES))
def test_parameters_are_typed_precisely(module):
    vague = vague_parameters(MODULES[module])
    assert not vague, "parameters without a precise type:\n" + "\n".join(vague)


def test_vague_parameters_are_found(tmp_path):
    source = tmp_path / "m.py"
    source.write_text("def f(a, b: dict, c: list[str], d: object | None, *e: object) -> None: ...\n")
    found = [line.rsplit(": ", 2)[-2].split("(")[-1] for line in _relative(vague_parameters, source)]
    assert found == ["a", "b", "d", "e"]


def _relative(check, source: Path) -> list[str]:
    global SRC
    saved, SRC = SRC, source.parent.parent
    try:
        return check(source)
    finally:
        SRC = saved


# ---------------------------------------------------------------- names (issue 24 §4)


def shared_file_names(paths: list[Path]) -> dict[str, list[str]]:
    """File names (``__init__.py`` aside) that more than one module has, with the modules' paths."""
    by_name: dict[str, list[str]] = {}
    for path in paths:
        if path.name != "__init__.py":
            by_name.setdefault(path.name, []).append(str(path.relative_to(SRC)))
    return {name: found for name, found in sorted(by_name.items()) if len(found) > 1}


def test_no_two_modules_share_a_file_name():
    shared = shared_file_names(list(MODULES.values()))
    assert not shared, f"one file name, several modules (name each after what it holds): {shared}"


def module_aliases(path: Path) -> list[str]:
    """Every processkg module imported under another name (``from processkg.x import y as z``,
    ``import processkg.x as z``): a module is called by its own name wherever it is used."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("processkg"):
            modules = [(a, target(node.module or "", a.name)) for a in node.names]
            found += [f"{node.lineno}: {m} as {a.asname}" for a, m in modules if a.asname and m != node.module]
        elif isinstance(node, ast.Import):
            found += [
                f"{node.lineno}: {a.name} as {a.asname}"
                for a in node.names
                if a.asname and a.name.startswith("processkg")
            ]
    return found


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_module_is_imported_under_another_name(module):
    aliases = module_aliases(MODULES[module])
    where = MODULES[module].relative_to(SRC.parent)
    assert not aliases, "module import aliases:\n" + "\n".join(f"{where}:{line}" for line in aliases)


def test_module_aliases_are_found(tmp_path):
    source = tmp_path / "m.py"
    source.write_text(
        "import processkg.jsonl as lines\n"
        "from processkg.graph import stats as counts\n"
        "from processkg.retrieve.retriever import METHODS as RETRIEVAL_METHODS\n"
        "from processkg.graph import stats\n"
    )
    found = [line.split(": ", 1)[1] for line in module_aliases(source)]
    assert found == ["processkg.jsonl as lines", "processkg.graph.stats as counts"]


_SPARQL_START = re.compile(
    r"\s*(?:PREFIX\s|BASE\s|SELECT\s|CONSTRUCT\s|DESCRIBE\s|ASK\s*\{|INSERT\s|DELETE\s|WITH\s*<)"
)


def inline_sparql(path: Path) -> list[str]:
    """String literals (f-strings too, by their literal parts) that are SPARQL: a query or update
    keyword first and a group in them. SPARQL lives in ``.rq`` files (assets/queries), never in code."""
    found, tree = [], ast.parse(path.read_text(encoding="utf-8"))
    parts = {id(v) for n in ast.walk(tree) if isinstance(n, ast.JoinedStr) for v in n.values}
    for node in ast.walk(tree):
        if id(node) in parts:
            continue
        if isinstance(node, ast.JoinedStr):
            text = "".join(v.value for v in node.values if isinstance(v, ast.Constant) and isinstance(v.value, str))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = node.value
        else:
            continue
        if _SPARQL_START.match(text) and "{" in text:
            found.append(f"{node.lineno}: {text[:60]!r}")
    return found


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_sparql_in_code(module):
    found = inline_sparql(MODULES[module])
    where = MODULES[module].relative_to(SRC.parent)
    assert not found, "SPARQL in code (move it to an .rq file):\n" + "\n".join(f"{where}:{line}" for line in found)


def test_inline_sparql_is_found(tmp_path):
    source = tmp_path / "m.py"
    source.write_text(
        'A = "SELECT ?s WHERE { ?s ?p ?o }"\n'
        'B = f"INSERT DATA {{ GRAPH <{g}> {{ <a> <b> <c> }} }}"\n'
        'C = "\\n  ASK { ?s ?p ?o }"\n'
        'D = f"PREFIX {p}: <{ns}>\\n"\n'
        'E = "Select the entity sets {of} a process"\n'
        'F = "DELETE the record"\n'
    )
    assert [line.split(":")[0] for line in inline_sparql(source)] == ["1", "2", "3"]


@pytest.mark.parametrize("package", sorted(m for m, p in MODULES.items() if p.name == "__init__.py"))
def test_every_package_docstring_is_a_sentence(package):
    """A package's docstring says what the stage is, not only its name (``\"\"\"graph.\"\"\"``)."""
    doc = ast.get_docstring(ast.parse(MODULES[package].read_text(encoding="utf-8"))) or ""
    assert len(doc.split()) > 1, f"{MODULES[package].relative_to(SRC.parent)}: docstring {doc!r} is one word at most"


def test_each_retrieval_method_runs_the_function_of_its_name():
    """``--method hybrid-v1`` runs ``hybrid_v1()``: one name for one method in the registry and the code."""
    assert {name: m.run.__name__ for name, m in METHODS.items()} == {name: name.replace("-", "_") for name in METHODS}


def test_the_library_api_names_resolve_to_their_objects_after_every_subpackage_is_imported():
    """processkg's names are imported on first use (PEP 562); none may be shadowed by a subpackage of
    the same name (``processkg.build`` is the subpackage, the build is ``build_store``)."""
    import importlib

    import processkg

    for module in sorted(MODULES):
        importlib.import_module(module)
    for name in processkg.__all__:
        value = getattr(processkg, name)
        assert value is getattr(importlib.import_module(processkg.API[name]), name), name
        assert not isinstance(value, type(processkg)), f"processkg.{name} is a module"
