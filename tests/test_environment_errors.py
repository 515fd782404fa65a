"""A problem of the environment, not of processkg: exit 2 and one line naming the path and the cause.

Each case runs the real ``kg`` command in a subprocess, for each command that writes a file,
with its output where it cannot be written:

* under a regular file (ENOTDIR, or EEXIST from the folder that cannot be made);
* on a read-only file system (EROFS) or a full one (ENOSPC): a tmpfs mounted in a private mount
  namespace (``unshare --mount``), so nothing is left mounted whatever happens to the test;
* in a folder without write permission (EACCES): as root, the child drops CAP_DAC_OVERRIDE from
  its capability bounding set before it executes ``kg``, so the folder's mode bits apply to it;
* past the file size limit (EFBIG: RLIMIT_FSIZE as ``ulimit -f`` sets it, SIGXFSZ at its default
  action: Python ignores SIGXFSZ from startup, so the write fails instead of the signal killing
  kg) and with a name longer than the file system allows (ENAMETOOLONG);
* standard output on a full disk (``/dev/full``), and too few file descriptors for Oxigraph.
"""

from __future__ import annotations

import ctypes
import os
import re
import resource
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import IO

import pytest

from conftest import DATA, ROOT

KG = str(Path(sys.executable).with_name("kg"))
DEMO_CALLS = ROOT / "data" / "demo" / "calls.jsonl"
PR_CAPBSET_DROP, CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH = 24, 1, 2
MOUNT_TMPFS = 'mount -t tmpfs -o "$1" tmpfs "$0" && {fill} exec "${{@:2}}"'


def writers(folder: Path, store: Path) -> dict[str, list[str]]:
    """Each command that writes a file, with its output in ``folder``."""
    return {
        "build --out": ["build", "--odata", str(DATA / "odata"), "--out", str(folder / "graph.ttl")],
        "build --store": ["build", "--odata", str(DATA / "odata"), "--store", str(folder / "store"), "--no-index"],
        "validate --out": [
            *("validate", "--store", str(store), str(DEMO_CALLS)),
            *("--format", "ttl", "--out", str(folder / "report.ttl")),
        ],
        "shapes --out": ["shapes", "--store", str(store), "--out", str(folder / "shapes.ttl")],
        "docs --out": ["docs", "--out", str(folder / "docs")],
        "serve --record": ["serve", "--store", str(store), "--port", "0", "--record", str(folder / "calls.jsonl")],
    }


# serve --record only opens its file when it starts (a full disk or a size limit would show at a call,
# inside the server: not tested here)
WRITE_AT_START = ["build --out", "build --store", "validate --out", "shapes --out", "docs --out", "serve --record"]
WRITE_DATA = WRITE_AT_START[:-1]


def kg(
    args: list[str],
    prefix: list[str] | None = None,
    preexec: Callable[[], None] | None = None,
    env: dict[str, str] | None = None,
    stdout: IO[str] | int = subprocess.PIPE,
) -> subprocess.CompletedProcess:
    """``kg args`` in a subprocess (without PROCESSKG_DEBUG, which adds the traceback)."""
    env = {k: v for k, v in (env or os.environ).items() if k != "PROCESSKG_DEBUG"}
    return subprocess.run(
        [*(prefix or []), KG, *args],
        stdout=stdout,
        stderr=subprocess.PIPE,
        text=True,
        timeout=120,
        preexec_fn=preexec,
        cwd=ROOT,
        env=env,
    )


def one_error_line(result: subprocess.CompletedProcess, path: str, cause: str) -> str:
    """Exit 2; one line ``error: ...`` naming ``path`` (or a path inside it) and the cause."""
    assert result.returncode == 2, (result.returncode, result.stderr)
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr
    assert path in lines[0], lines[0]
    assert re.search(cause, lines[0]), lines[0]
    return lines[0]


# ---------------------------------------------------------------- a file where a folder should be


@pytest.mark.parametrize("command", WRITE_AT_START)
@pytest.mark.parametrize("below", ["", "sub"], ids=["in-file", "under-file"])
def test_output_under_a_regular_file(tmp_path, demo_store, command, below):
    (tmp_path / "notes.txt").write_text("a file, not a folder\n", encoding="utf-8")
    folder = tmp_path / "notes.txt" / below if below else tmp_path / "notes.txt"
    result = kg(writers(folder, demo_store)[command])
    one_error_line(result, str(tmp_path / "notes.txt"), r"[Nn]ot a directory")
    assert (tmp_path / "notes.txt").read_text(encoding="utf-8") == "a file, not a folder\n"


# ---------------------------------------------------------------- read-only and full file systems


@pytest.fixture(scope="module")
def tmpfs(tmp_path_factory) -> Callable[[Path, str, bool], list[str]]:
    """A command prefix that runs kg with a private tmpfs (options ``opts``) on ``folder``; ``fill``
    fills it first. Needs root (or CAP_SYS_ADMIN) and mount namespaces: the skip says so."""
    probe = tmp_path_factory.mktemp("probe")
    try:
        check = subprocess.run(
            ["unshare", "--mount", "--propagation", "private", "mount", "-t", "tmpfs", "tmpfs", str(probe)],
            capture_output=True,
            text=True,
        )
        problem = check.stderr.strip() if check.returncode else ""
    except OSError as exc:  # no unshare (util-linux) here
        problem = str(exc)
    if problem:
        pytest.skip(f"cannot mount a tmpfs in a mount namespace here: {problem}")

    def prefix(folder: Path, opts: str, fill: bool) -> list[str]:
        folder.mkdir(parents=True, exist_ok=True)
        script = MOUNT_TMPFS.format(fill='{ cat /dev/zero > "$0/.fill" 2>/dev/null; true; } &&' if fill else "")
        return ["unshare", "--mount", "--propagation", "private", "bash", "-c", script, str(folder), opts]

    return prefix


@pytest.mark.parametrize("command", WRITE_AT_START)
def test_output_on_a_read_only_file_system(tmp_path, demo_store, tmpfs, command):
    folder = tmp_path / "ro"
    result = kg(writers(folder, demo_store)[command], prefix=tmpfs(folder, "size=64k,ro", False))
    one_error_line(result, str(folder), r"Read-only file system")


@pytest.mark.parametrize("command", WRITE_DATA)
def test_output_on_a_full_file_system(tmp_path, demo_store, tmpfs, command):
    folder = tmp_path / "full"
    result = kg(writers(folder, demo_store)[command], prefix=tmpfs(folder, "size=64k", True))
    one_error_line(result, str(folder), r"No space left on device")


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full (a Linux device) here")
def test_standard_output_on_a_full_disk(demo_store):
    with open("/dev/full", "w") as full:
        for args in (["query", "--store", str(demo_store), "stats-services"], ["stats", "--store", str(demo_store)]):
            result = kg(args, stdout=full)
            one_error_line(result, "standard output", r"No space left on device")


# ---------------------------------------------------------------- permission, size and name limits


def _without_dac_override() -> None:
    """As root, give up the capability to ignore file modes (in the child, before it executes kg)."""
    if os.geteuid() != 0:
        return
    libc = ctypes.CDLL(None, use_errno=True)
    for cap in (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH):
        if libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")


@pytest.mark.parametrize("command", WRITE_AT_START)
def test_output_in_a_folder_without_write_permission(tmp_path, demo_store, command):
    folder = tmp_path / "locked"
    folder.mkdir()
    folder.chmod(0o555)
    try:
        result = kg(writers(folder, demo_store)[command], preexec=_without_dac_override)
    finally:
        folder.chmod(0o755)
    one_error_line(result, str(folder), r"Permission denied")
    assert list(folder.iterdir()) == []


def _file_size_limit() -> None:
    """As ``ulimit -f``: SIGXFSZ keeps its default action (kill); kg's Python ignores it."""
    signal.signal(signal.SIGXFSZ, signal.SIG_DFL)
    resource.setrlimit(resource.RLIMIT_FSIZE, (1000, 1000))


@pytest.mark.parametrize("command", WRITE_DATA)
def test_output_past_the_file_size_limit(tmp_path, demo_store, command):
    folder = tmp_path / "out"
    folder.mkdir()
    env = {**os.environ, "TMPDIR": str(folder)}  # kg build --out spools there first
    result = kg(writers(folder, demo_store)[command], preexec=_file_size_limit, env=env)
    one_error_line(result, str(folder), r"File too large")


@pytest.mark.parametrize("command", WRITE_AT_START)
def test_output_name_too_long(tmp_path, demo_store, command):
    folder = tmp_path / ("x" * 300)
    one_error_line(kg(writers(folder, demo_store)[command]), str(folder), r"File name too long")


@pytest.mark.parametrize("command", ["stats", "query"])
def test_too_few_file_descriptors_for_oxigraph(demo_store, command):
    """kg query opens the store in its query child, which reports the error back."""

    def few() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))

    args = {"stats": ["stats"], "query": ["query", "stats-services"]}[command]
    result = kg([*args, "--store", str(demo_store)], preexec=few)
    line = one_error_line(result, "", r"Oxigraph needs at least \d+ file descriptors.*ulimit -n")
    assert "damaged" not in line and "rebuild" not in line, "a limit of the process is not a damaged store"
