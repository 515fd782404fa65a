"""The ``kg`` command line: wires the pipeline stages; all work is done by library functions."""

from __future__ import annotations

import errno
import os
import sys
import traceback
from typing import NoReturn

import click

from processkg.cli.exit_codes import ExitCode
from processkg.cli.lazy import LazyGroup
from processkg.cli.text import printable
from processkg.errors import ProcessKGError

#: OSError numbers that are a problem of the machine (disk, permissions, limits, network), not a
#: bug: exit 2 with the path and the cause. Any other number (EBADF, EINVAL, ...) is exit 3.
ENVIRONMENT_ERRNOS = frozenset(
    {
        errno.EACCES,
        errno.EPERM,
        errno.EROFS,
        errno.ENOSPC,
        errno.EDQUOT,
        errno.EFBIG,
        errno.EIO,
        errno.ENOTDIR,
        errno.EISDIR,
        errno.ENOENT,
        errno.EEXIST,
        errno.ENOTEMPTY,
        errno.ENAMETOOLONG,
        errno.ELOOP,
        errno.EXDEV,
        errno.EBUSY,
        errno.ETXTBSY,
        errno.ENXIO,
        errno.ENODEV,
        errno.EMFILE,
        errno.ENFILE,
        errno.ENOMEM,
        errno.EAGAIN,
        errno.EADDRINUSE,
        errno.EADDRNOTAVAIL,
        errno.ECONNREFUSED,
        errno.ECONNRESET,
        errno.ETIMEDOUT,
        errno.EHOSTUNREACH,
        errno.ENETUNREACH,
    }
)


#: The commands of ``kg``, imported when used (:class:`LazyGroup`): ``kg mcp`` imports neither the
#: build nor retrieval before it answers ``initialize``.
COMMANDS = {
    "build": "processkg.cli.build:build_cmd",
    "stats": "processkg.cli.graph:stats_cmd",
    "query": "processkg.cli.graph:query_cmd",
    "audit": "processkg.cli.graph:audit_cmd",
    "index": "processkg.cli.retrieve:index_cmd",
    "retrieve": "processkg.cli.retrieve:retrieve_cmd",
    "validate": "processkg.cli.validate:validate_cmd",
    "shapes": "processkg.cli.validate:shapes_cmd",
    "eval": "processkg.cli.eval:eval_group",
    "map": "processkg.cli.map:map_group",
    "serve": "processkg.cli.serve:serve_cmd",
    "mcp": "processkg.cli.mcp:mcp_cmd",
    "agent": "processkg.cli.agent:agent_group",
    "docs": "processkg.cli.docs:docs_cmd",
}


class _Group(LazyGroup):
    """One line on stderr and a distinct exit code for whatever ends a command, never a traceback.

    This is the only place that turns an error into exit 2: commands raise ProcessKGError
    (or click's usage errors) and never print an error and exit themselves.

    An input error is exit 2, and so is a problem of the environment (a full or read-only disk,
    no permission, a file where a folder should be, a limit reached): an OSError numbered in
    :data:`ENVIRONMENT_ERRNOS`, or one of Oxigraph's storage errors (they carry no number, and
    their message names the file). A crash (a bug) is exit 3, so that it is never mistaken for
    exit 1, which commands such as ``kg validate`` use for "some calls invalid";
    PROCESSKG_DEBUG=1 shows its traceback. Ctrl-C is exit 130.
    """

    lazy = COMMANDS

    def invoke(self, ctx: click.Context) -> object:
        try:
            return super().invoke(ctx)
        except ProcessKGError as exc:
            click.echo(f"error: {exc}", err=True)
            sys.exit(ExitCode.INPUT)
        except KeyboardInterrupt:
            click.echo("interrupted", err=True)
            sys.exit(ExitCode.INTERRUPTED)
        except (click.exceptions.ClickException, click.exceptions.Exit, click.exceptions.Abort):
            raise
        except OSError as exc:
            if exc.errno == errno.EPIPE:  # the reader of our output went away: click handles it
                raise
            if exc.errno is not None and exc.errno not in ENVIRONMENT_ERRNOS:
                _internal_error(exc)
            _traceback_if_debug(exc)
            click.echo(f"error: {environment_message(exc)}", err=True)
            sys.exit(ExitCode.INPUT)
        except Exception as exc:
            _internal_error(exc)


def environment_message(exc: OSError) -> str:
    """``PATH: cause`` (``SOURCE -> TARGET: cause`` for a rename) on one line.

    An error with no file names the stream click.echo failed to write, if that is where it
    came from; an error with no number (Oxigraph's storage errors) is its own message.
    """
    if exc.errno is None:
        return " ".join(str(exc).split())
    cause = exc.strerror or os.strerror(exc.errno)
    if exc.errno == errno.EEXIST and exc.filename is not None and not os.path.isdir(exc.filename):
        cause += " and is not a directory"  # Path.mkdir(parents=True) of a path that is a file
    names = [printable(os.fsdecode(name)) for name in (exc.filename, exc.filename2) if name is not None]
    where = " -> ".join(names) or _echo_stream(exc)
    return f"{where}: {cause}" if where else cause


def _echo_stream(exc: BaseException) -> str:
    """The stream click.echo failed to write when it raised ``exc`` ("standard output" or "error"), or ""."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    if tb is None or tb.tb_frame.f_globals.get("__name__") != "click.utils" or tb.tb_frame.f_code.co_name != "echo":
        return ""
    return "standard error" if tb.tb_frame.f_locals.get("err") else "standard output"


def _traceback_if_debug(exc: BaseException) -> None:
    if os.environ.get("PROCESSKG_DEBUG", "") not in ("", "0"):
        traceback.print_exception(exc, file=sys.stderr)


def _internal_error(exc: BaseException) -> NoReturn:
    _traceback_if_debug(exc)
    detail = " ".join(f"{type(exc).__name__}: {exc}".split())
    click.echo(f"internal error: {detail}; please report (PROCESSKG_DEBUG=1 shows the traceback)", err=True)
    sys.exit(ExitCode.BUG)


@click.group(cls=_Group)
@click.version_option(package_name="processkg")
def main() -> None:
    """processkg: process-aware knowledge graphs from OData $metadata and BPMN 2.0.

    \b
    Exit codes:
      0    success
      1    the command ran and found problems (kg validate: some calls invalid;
           kg audit: counts differ; kg docs --check: pages out of date)
      2    bad input or usage, or a problem of the environment (disk full or
           read-only, no permission, a limit reached): one line "error: ..."
           on stderr
      3    internal error (a bug): one line "internal error: ..."; please report it,
           PROCESSKG_DEBUG=1 shows the traceback
      130  interrupted (Ctrl-C)
    """


if __name__ == "__main__":  # pragma: no cover
    main()
