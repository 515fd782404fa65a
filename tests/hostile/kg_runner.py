"""Run ``kg`` the way a user does, but bounded: a wall-clock timeout and an address-space cap.

Used by tests/test_hostile.py and tests/test_properties.py. The command runs in its own session;
after the timeout that session (``kg`` and any child it started, e.g. ``kg query``'s worker) is
killed. The peak RSS comes from ``wait4``, so it is that of this one command.
"""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

KG = Path(sys.executable).with_name("kg")  # the console script installed next to this Python
MEMORY_CAP = 3 * 1024**3  # bytes of address space per command (RLIMIT_AS, soft)


@dataclass
class Run:
    code: int
    stdout: str
    stderr: str
    seconds: float
    max_rss: int  # bytes
    timed_out: bool


def _cap_memory() -> None:
    """Lower only the soft limit: ``kg query`` raises its own child's cap up to the hard limit."""
    _soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP, hard))


def run_kg(args: list[str], timeout: float, cwd: Path | None = None, scratch: Path | None = None) -> Run:
    """``kg ARGS`` in a new session, killed (with its children) after ``timeout`` seconds."""
    return run_capped([str(KG), *args], timeout, cwd, scratch)


def run_capped(command: list[str], timeout: float, cwd: Path | None = None, scratch: Path | None = None) -> Run:
    """``command`` under the memory cap, in a new session killed (with its children) after ``timeout`` s."""
    scratch = scratch or Path(os.environ.get("TMPDIR", "/tmp"))
    out_path, err_path = scratch / "kg.stdout", scratch / "kg.stderr"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PROCESSKG_DEBUG": "0", "COLUMNS": "200"}
    with out_path.open("wb") as out, err_path.open("wb") as err:
        start = time.monotonic()
        proc = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=err,
            cwd=cwd,
            env=env,
            preexec_fn=_cap_memory,
            start_new_session=True,
        )
        status, usage, timed_out = _wait(proc.pid, start + timeout)
        seconds = time.monotonic() - start
    proc.returncode = os.waitstatus_to_exitcode(status)  # reaped by wait4; keep Popen from waiting again
    return Run(
        proc.returncode,
        out_path.read_text(errors="replace"),
        err_path.read_text(errors="replace"),
        seconds,
        usage.ru_maxrss * 1024,
        timed_out,
    )


def _wait(pid: int, deadline: float):
    while True:
        done, status, usage = os.wait4(pid, os.WNOHANG)
        if done:
            return status, usage, False
        if time.monotonic() > deadline:
            os.killpg(pid, signal.SIGKILL)  # the session we started: kg and any child it made
            _done, status, usage = os.wait4(pid, 0)
            return status, usage, True
        time.sleep(0.02)


def assert_bounded(run: Run, codes: tuple[int, ...], timeout: float) -> str:
    """The properties every hostile run must have; returns the ``error:`` line of an exit 2 ("" otherwise).

    Finished in time, under the memory cap, no traceback and no crash (exit 3), an exit code of
    ``codes``; for exit 2 exactly one stderr line, starting with ``error: ``.
    """
    shown = f"exit {run.code} after {run.seconds:.1f} s, stderr: {run.stderr[-600:]!r}"
    assert not run.timed_out, f"still running after {timeout} s (killed); {shown}"
    assert run.max_rss < MEMORY_CAP, f"peak RSS {run.max_rss / 1024**2:.0f} MB; {shown}"
    assert "Traceback" not in run.stderr and "internal error" not in run.stderr, shown
    assert run.code in codes, shown
    if run.code != 2:
        assert "error:" not in run.stderr, shown
        return ""
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), f"not one 'error:' line; {shown}"
    return lines[0]
