"""Running a SPARQL query within bounds: a child process killed at its timeout, a row limit, a memory cap.

A cartesian product in pyoxigraph's native code cannot be interrupted from Python, so
``kg query`` runs its query (checked by :func:`processkg.graph.sparql.check` first) in a child
Python process that is killed when the time is up, answers with at most ``limit`` rows, and
runs under an address-space cap. The child also ends when its parent does, however the parent
ends (SIGKILL and SIGTERM run no cleanup in the parent): it watches a pipe only the parent can
write to, which reads end-of-file once the parent is gone.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Mapping
from pathlib import Path

from processkg.aliases import PlainValue, QueryValue
from processkg.errors import ProcessKGError, QueryError, QueryLimitError
from processkg.graph.handle import StoreHandle, StoreLocation
from processkg.graph.sparql import check
from processkg.graph.store import checked_solutions, plain

#: What a query child may allocate: a cartesian product behind ORDER BY grows without end.
MEMORY_LIMIT = 4 * 1024**3


def run_bounded(
    store: StoreHandle,
    query: str,
    bindings: Mapping[str, QueryValue],
    timeout: float,
    limit: int,
    memory: int = MEMORY_LIMIT,
) -> tuple[list[str], list[list[PlainValue]]]:
    """``(names, rows of plain values)`` of a SELECT on the build ``store`` pinned (the child opens
    that version directory, never ``current`` again), run in a child process killed after ``timeout``
    seconds; more than ``limit`` rows, or more than ``memory`` bytes of address space, is an error
    (0: no bound on time or rows)."""
    check(query)
    job = {"store": str(store.version), "query": query, "bindings": bindings, "limit": limit, "memory": memory}
    lifeline, held = os.pipe()  # the child watches lifeline; it reads end-of-file when held closes
    try:
        return _run(job, lifeline, timeout, memory)
    finally:
        os.close(held)


def _run(
    job: dict[str, object], lifeline: int, timeout: float, memory: int
) -> tuple[list[str], list[list[PlainValue]]]:
    try:
        proc = subprocess.Popen(
            [sys.executable, "-c", f"from processkg.graph.bounded import serve; serve({lifeline})"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=_child_env(),
            pass_fds=(lifeline,),
        )
    finally:
        os.close(lifeline)
    try:
        out, err = proc.communicate(json.dumps(job).encode("utf-8"), timeout=timeout or None)
    except subprocess.TimeoutExpired:
        raise QueryLimitError(
            f"query did not finish within {timeout:g} s and was stopped; "
            f"narrow it, or give --timeout SECONDS (0: no limit)"
        ) from None
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return _answer(proc.returncode, out, err, memory)


def _child_env() -> dict[str, str]:
    """The parent's environment, with this processkg first on the child's path."""
    env = dict(os.environ)
    root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [root, env.get("PYTHONPATH")]))
    return env


def _answer(code: int, out: bytes, err: bytes, memory: int) -> tuple[list[str], list[list[PlainValue]]]:
    try:
        answer = json.loads(out) if out else None
    except ValueError:
        answer = None
    if isinstance(answer, dict) and "error" in answer:
        raise (QueryLimitError if answer.get("limit") else QueryError)(answer["error"])
    if isinstance(answer, dict) and "oserror" in answer:  # raised again here, for the CLI to classify
        number, text, filename = answer["oserror"]
        raise OSError(text) if number is None else OSError(number, text, filename)
    if code == 0 and isinstance(answer, dict):
        return answer["names"], answer["rows"]
    text = err.decode("utf-8", "replace")
    if code == -signal.SIGABRT or any(sign in text for sign in ("memory allocation", "MemoryError", "bad_alloc")):
        # under the address-space cap, an abort is an allocation (or a thread) that did not fit
        raise QueryLimitError(f"query stopped: it needed more than {memory / 1024**3:g} GiB of memory; narrow it")
    if code < 0:
        raise QueryLimitError(f"query stopped: its process was killed by signal {-code}")
    last = (text.strip().splitlines() or [f"exit status {code}"])[-1]
    raise RuntimeError(f"query process failed: {last}")


def serve(lifeline: int) -> None:
    """The child's side of run_bounded: one job on stdin, one JSON answer on stdout; it exits
    as soon as ``lifeline`` reads end-of-file (the parent is gone)."""
    _exit_with_parent(lifeline)
    job = json.loads(sys.stdin.buffer.read())
    _cap_memory(job["memory"])
    limit = job["limit"]
    try:
        with StoreHandle(StoreLocation(path=Path(job["store"]))) as pinned:  # the version the parent pinned
            names, rows = checked_solutions(pinned.graph, job["query"], job["bindings"])  # run_bounded checked it
            table: list[list[object]] = []
            for row in rows:
                if limit and len(table) == limit:
                    raise QueryLimitError(
                        f"query returned more than {limit:,} rows; narrow it (LIMIT), or give --limit N (0: no limit)"
                    )
                table.append([plain(v) for v in row])
    except QueryLimitError as exc:
        answer = {"error": str(exc), "limit": True}
    except ProcessKGError as exc:
        answer = {"error": str(exc)}
    except OSError as exc:  # the environment, e.g. too few file descriptors for Oxigraph
        answer = {"oserror": [exc.errno, str(exc) if exc.errno is None else exc.strerror, _filename(exc)]}
    else:
        answer = {"names": names, "rows": table}
    sys.stdout.write(json.dumps(answer))
    sys.stdout.flush()


def _filename(exc: OSError) -> str | None:
    return None if exc.filename is None else os.fsdecode(exc.filename)


def _exit_with_parent(lifeline: int) -> None:
    """Exit at once when ``lifeline``, a pipe the parent holds open and never writes to, reads
    end-of-file. pyoxigraph releases the GIL while it evaluates, so this thread runs even during
    a cartesian product behind ORDER BY or COUNT."""

    def watch() -> None:
        while os.read(lifeline, 1):
            pass
        os._exit(1)  # nobody is left to read an answer

    threading.Thread(target=watch, name="lifeline", daemon=True).start()


def _cap_memory(limit: int) -> None:
    try:
        import resource
    except ImportError:  # pragma: no cover - not on POSIX: the timeout still bounds the query
        return
    _soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    cap = limit if hard == resource.RLIM_INFINITY else min(limit, hard)
    resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
