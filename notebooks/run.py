"""Execute a notebook headless with nbclient and write it back with its outputs.

    .venv/bin/python notebooks/run.py                    # re-run notebooks/explore.ipynb in place
    .venv/bin/python notebooks/run.py IN.ipynb --out OUT.ipynb

The kernel is ``python3`` from the Python that runs this script (so run it with the venv's
Python), started in ``notebooks/``; the notebook finds the repository root itself. Timing
metadata is not recorded, so re-running on unchanged inputs changes as little as possible.
``tests/test_notebook.py`` uses :func:`execute` on a temporary copy.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
NOTEBOOK = HERE / "explore.ipynb"
TIMEOUT = 300  # seconds per cell


def _prefer_this_python() -> None:
    """Find the ``python3`` kernel spec of this interpreter first (ahead of any per-user one).

    That spec runs ``python -m ipykernel_launcher``, and jupyter_client replaces ``python``
    with the interpreter running this script: the kernel sees the same packages.
    """
    share = Path(sys.prefix) / "share" / "jupyter"
    if (share / "kernels" / "python3").is_dir():
        paths = [str(share)] + [p for p in os.environ.get("JUPYTER_PATH", "").split(os.pathsep) if p]
        os.environ["JUPYTER_PATH"] = os.pathsep.join(dict.fromkeys(paths))


def execute(path: Path, out: Path | None = None, cwd: Path = HERE, timeout: int = TIMEOUT):
    """Run every cell of ``path`` (stopping at the first error) and write the result to ``out``.

    Returns the executed notebook (an ``nbformat.NotebookNode``). Raises
    ``nbclient.exceptions.CellExecutionError`` when a cell fails; nothing is written then.
    """
    import nbformat
    from nbclient import NotebookClient

    _prefer_this_python()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # the kernel inherits it; the notebook sets it too
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    nb = nbformat.read(str(path), as_version=4)
    client = NotebookClient(nb, timeout=timeout, kernel_name="python3", allow_errors=False,
                            record_timing=False, resources={"metadata": {"path": str(cwd)}})
    client.execute()
    if out is not None:
        nbformat.write(nb, str(out))
    return nb


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("notebook", nargs="?", type=Path, default=NOTEBOOK)
    parser.add_argument("--out", type=Path, help="where to write the executed notebook (default: in place)")
    parser.add_argument("--timeout", type=int, default=TIMEOUT, help="seconds per cell (default %(default)s)")
    args = parser.parse_args(argv)
    try:
        execute(args.notebook, args.out or args.notebook, timeout=args.timeout)
    except ImportError as exc:
        print(f"run.py needs nbclient, nbformat and ipykernel: {exc}", file=sys.stderr)
        return 2
    except Exception as exc:  # a failing cell: say which, leave the notebook untouched
        print(f"{args.notebook}: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    print(f"executed {args.notebook} -> {args.out or args.notebook}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
