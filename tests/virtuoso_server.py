"""OpenLink Virtuoso (Debian package ``virtuoso-opensource``) on loopback with a fresh database: the
second SPARQL server of tests/test_remote_store.py (``conftest.virtuoso``) and of
``benchmarks/bench_scale.py --steps virtuoso``. A plain module, so that both can start it the same way."""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path

import httpx

from processkg.tools.local_server import free_port

INI = """[Database]
DatabaseFile = {db}/virtuoso.db
ErrorLogFile = {db}/virtuoso.log
LockFile = {db}/virtuoso.lck
TransactionFile = {db}/virtuoso.trx
xa_persistent_file = {db}/virtuoso.pxa
[TempDatabase]
DatabaseFile = {db}/virtuoso-temp.db
TransactionFile = {db}/virtuoso-temp.trx
[Parameters]
ServerPort = 127.0.0.1:{sql}
DisableUnixSocket = 1
NumberOfBuffers = {buffers}
MaxDirtyBuffers = {dirty}
DirsAllowed = .
[HTTPServer]
ServerPort = 127.0.0.1:{http}
ServerThreads = 4
[SPARQL]
ResultSetMaxRows = 100000000
MaxQueryExecutionTime = 0
MaxQueryCostEstimationTime = 0
"""
#: the anonymous SPARQL user may update (SPARQL Update on /sparql) and write graphs (/sparql-graph-crud)
GRANTS = "GRANT SPARQL_UPDATE TO \"SPARQL\"; DB.DBA.RDF_DEFAULT_USER_PERMS_SET ('nobody', 7);"
BUFFERS = 10_000  # 8 KB pages: about 80 MB, enough for the demo and A2X


def start(folder: Path, buffers: int = BUFFERS, seconds: float = 60) -> tuple[subprocess.Popen[bytes], str]:
    """Start Virtuoso with its database in ``folder``; the process and the ``--store`` URL of its query
    endpoint and Graph Store Protocol service. RuntimeError when it is not installed or does not answer."""
    binary, isql = shutil.which("virtuoso-t"), shutil.which("isql-vt")
    if not binary or not isql:
        raise RuntimeError("Virtuoso is not installed (apt-get install virtuoso-opensource; .ci/run does it)")
    sql, http = free_port(), free_port()
    ini = INI.format(db=folder, sql=sql, http=http, buffers=buffers, dirty=buffers * 3 // 5)
    (folder / "virtuoso.ini").write_text(ini, encoding="utf-8")
    process = subprocess.Popen(
        [binary, "+foreground", "+configfile", str(folder / "virtuoso.ini")],
        cwd=folder,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        _wait_for(f"http://127.0.0.1:{http}/sparql?query=ASK%7B%7D", process, seconds)
        subprocess.run(
            [isql, f"127.0.0.1:{sql}", "dba", "dba", f"exec={GRANTS}"], check=True, capture_output=True, timeout=60
        )
    except BaseException:
        stop(process)
        raise
    return process, f"http://127.0.0.1:{http}/sparql?store=/sparql-graph-crud"


def stop(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=10)


def _wait_for(url: str, process: subprocess.Popen[bytes], seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and process.poll() is None:
        try:
            if httpx.get(url, timeout=2, trust_env=False).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"Virtuoso did not answer at {url} within {seconds:g} s (exit status {process.poll()})")
