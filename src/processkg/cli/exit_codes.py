"""The exit codes of every ``kg`` command, by name (``kg --help`` lists them)."""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    """What the end of a command means to the script that ran it."""

    OK = 0  #: success
    PROBLEMS = 1  #: the command ran and found problems (invalid calls, counts that differ, stale pages)
    INPUT = 2  #: bad input or usage, or a problem of the environment: one line "error: ..."
    BUG = 3  #: internal error: one line "internal error: ..."
    INTERRUPTED = 130  #: Ctrl-C
