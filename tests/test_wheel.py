"""A normal install works: the wheel carries every asset, and `kg` runs from any folder.

The wheel is built from this checkout and installed, without its dependencies, into a fresh
virtual environment that borrows the test environment's dependencies through a path file (so
nothing is downloaded); the editable install of the checkout is not visible there. Then
`kg build`, `kg query` and `kg validate` run on the demo from an unrelated folder.
"""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import venv
import zipfile
from pathlib import Path

import pytest

from conftest import DEMO, ROOT

pytestmark = pytest.mark.slow


#: The environment without PYTHONPATH: with the checkout's src on it (as in a run against a worktree),
#: pip found the processkg.egg-info the wheel build leaves in src, called it installed and skipped the
#: wheel, and the fresh venv had no processkg.
WITHOUT_CHECKOUT = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}


def run(*args: str | Path, cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([str(a) for a in args], cwd=cwd, env=env, capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    done = run(sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-w", out, ROOT, cwd=out)
    assert done.returncode == 0, done.stderr
    return next(out.glob("processkg-*.whl"))


@pytest.fixture(scope="module")
def installed(wheel, tmp_path_factory) -> Path:
    """The bin folder of a fresh venv holding the wheel and no checkout."""
    env_dir = tmp_path_factory.mktemp("venv")
    venv.EnvBuilder(with_pip=False).create(env_dir)
    site = next((env_dir / "lib").glob("python3*/site-packages"))
    (site / "borrowed-deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n", encoding="utf-8")
    done = run(
        sys.executable,
        "-m",
        "pip",
        "--python",
        env_dir / "bin" / "python",
        "install",
        "--no-deps",
        "--no-index",
        wheel,
        cwd=env_dir,
        env=WITHOUT_CHECKOUT,
    )
    assert done.returncode == 0, done.stderr
    return env_dir / "bin"


def test_the_wheel_carries_every_asset(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    shipped = {n.removeprefix("processkg/assets/") for n in names if n.startswith("processkg/assets/")}
    source = ROOT / "src" / "processkg" / "assets"
    expected = {p.relative_to(source).as_posix() for p in source.rglob("*") if p.is_file()}
    assert expected and shipped == expected
    assert "processkg/assets/queries/internal/service-types.rq" in names


def test_installed_kg_builds_queries_and_validates_from_another_folder(installed, tmp_path):
    env = WITHOUT_CHECKOUT
    kg = installed / "kg"
    where = run(installed / "python", "-c", "import processkg; print(processkg.__file__)", cwd=tmp_path, env=env)
    assert str(installed.parent) in where.stdout, where.stdout + where.stderr
    store = tmp_path / "store"
    built = run(
        kg,
        "build",
        "--odata",
        DEMO / "odata",
        "--bpmn",
        DEMO / "bpmn",
        "--mapping",
        DEMO / "mapping.yaml",
        "--codes",
        DEMO / "codes",
        "--store",
        store,
        "--no-index",
        cwd=tmp_path,
        env=env,
    )
    assert built.returncode == 0, built.stderr
    assert "23 EntitySet" in built.stdout
    queried = run(
        kg,
        "query",
        "--store",
        store,
        "process-chain-after",
        "--format",
        "csv",
        "--param",
        "entitySet=A_SalesOrder",
        cwd=tmp_path,
        env=env,
    )
    assert queried.returncode == 0, queried.stderr
    assert "Create outbound delivery" in queried.stdout
    validated = run(kg, "validate", "--store", store, DEMO / "calls.jsonl", cwd=tmp_path, env=env)
    assert validated.returncode == 1, validated.stderr
    assert "12 calls: 6 valid, 6 invalid" in validated.stdout
