"""The offline smoke-test model's assembly (kg agent local-model): slices joined in order into one
GGUF file, written beside its name and renamed, never left half-written, kept when already whole."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from processkg.agent import local_model
from processkg.cli import main
from processkg.errors import ModelNotInstalledError


def slices(folder: Path, *chunks: bytes) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    paths = [folder / f"part{n:02d}.bin" for n in range(1, len(chunks) + 1)]
    for path, chunk in zip(paths, chunks, strict=True):
        path.write_bytes(chunk)
    return paths


def test_slices_are_joined_in_order(tmp_path):
    parts = slices(tmp_path / "parts", b"GGUF\x03\x00", b"tensor-a", b"tensor-b")
    model = local_model.assemble(tmp_path / "m" / "model.gguf", parts)
    assert model.read_bytes() == b"GGUF\x03\x00tensor-atensor-b"
    assert sorted(p.name for p in model.parent.iterdir()) == ["model.gguf"]


def test_a_whole_file_is_kept_and_a_short_one_replaced(tmp_path):
    parts = slices(tmp_path / "parts", b"GGUF", b"1234")
    target = tmp_path / "model.gguf"
    local_model.assemble(target, parts)
    stamp = target.stat().st_mtime_ns
    assert local_model.assemble(target, parts).stat().st_mtime_ns == stamp
    target.write_bytes(b"GGUF12")  # an older, shorter file
    assert local_model.assemble(target, parts).read_bytes() == b"GGUF1234"


def test_slices_that_are_not_gguf_leave_nothing_behind(tmp_path):
    parts = slices(tmp_path / "parts", b"<html>", b"not a model")
    target = tmp_path / "out" / "model.gguf"
    with pytest.raises(ModelNotInstalledError, match=r"model\.gguf.*not a GGUF file"):
        local_model.assemble(target, parts)
    assert list(target.parent.iterdir()) == []


def test_the_server_listens_on_loopback_with_the_models_own_template(tmp_path):
    pytest.importorskip("llama_cpp", reason="optional extra: pip install '.[llm]'")
    command = local_model.server_command(tmp_path / "m.gguf", 8765, threads=2)
    assert command[1:3] == ["-m", "llama_cpp.server"]
    pairs = dict(zip(command[3::2], command[4::2], strict=True))
    assert pairs["--host"] == "127.0.0.1" and pairs["--port"] == "8765"
    assert "--chat_format" not in pairs and pairs["--n_threads"] == "2"


def test_the_command_is_documented_and_refuses_a_directory(tmp_path):
    result = CliRunner().invoke(main, ["agent", "local-model", "--model-file", str(tmp_path), "--assemble-only"])
    assert result.exit_code == 2 and "is a directory" in result.output
