"""``notebooks/explore.ipynb`` runs headless on the demo data and shows what it promises.

The notebook is executed with nbclient (``notebooks/run.py``) from a temporary copy, with its
store in a temporary folder (``PROCESSKG_NOTEBOOK_STORE``), so the committed notebook and
``build/`` are left alone. A second test checks that the committed notebook carries the
outputs of such a run (``.venv/bin/python notebooks/run.py`` regenerates them).
"""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
NOTEBOOK = NOTEBOOKS / "explore.ipynb"
TIMEOUT = 300  # seconds per cell

pytestmark = pytest.mark.slow


def _runner():
    spec = importlib.util.spec_from_file_location("notebook_run", NOTEBOOKS / "run.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _texts(cell) -> list[str]:
    """Every text an output of ``cell`` carries: streams, text/plain, text/html, error tracebacks."""
    out = []
    for o in cell.get("outputs", []):
        if o["output_type"] == "stream":
            out.append("".join(o["text"]) if isinstance(o["text"], list) else o["text"])
        elif o["output_type"] == "error":
            out.append("\n".join(o.get("traceback", [])))
        for mime in ("text/plain", "text/html", "text/markdown"):
            value = o.get("data", {}).get(mime)
            if value is not None:
                out.append("".join(value) if isinstance(value, list) else value)
    return out


def _all_text(nb) -> str:
    return "\n".join(t for c in nb["cells"] if c["cell_type"] == "code" for t in _texts(c))


def _errors(nb) -> list[str]:
    return [
        f"cell {i}: {o.get('ename')}: {o.get('evalue')}"
        for i, c in enumerate(nb["cells"])
        if c["cell_type"] == "code"
        for o in c.get("outputs", [])
        if o["output_type"] == "error"
    ]


def _has_png(nb) -> bool:
    return any(
        "image/png" in o.get("data", {}) for c in nb["cells"] if c["cell_type"] == "code" for o in c.get("outputs", [])
    )


@pytest.fixture(scope="module")
def executed(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("notebook")
    copy = tmp / "explore.ipynb"
    shutil.copy(NOTEBOOK, copy)
    mp = pytest.MonkeyPatch()
    mp.setenv("PROCESSKG_NOTEBOOK_STORE", str(tmp / "store"))  # the kernel inherits the environment
    try:
        # started in notebooks/ like `notebooks/run.py`: the notebook walks up to pyproject.toml
        nb = _runner().execute(copy, out=tmp / "executed.ipynb", cwd=NOTEBOOKS, timeout=TIMEOUT)
    finally:
        mp.undo()
    return json.loads(json.dumps(nb))  # plain dicts and lists, like the committed file


def test_every_cell_runs(executed):
    code = [c for c in executed["cells"] if c["cell_type"] == "code"]
    assert code and all(c["execution_count"] for c in code)
    assert _errors(executed) == []
    # nothing on stderr either (warnings, progress bars): the committed outputs stay clean
    assert not [o for c in code for o in c["outputs"] if o["output_type"] == "stream" and o["name"] == "stderr"]


def test_build_and_query_tables(executed):
    text = _all_text(executed)
    assert "built 6,069 triples from 15 files" in text
    html = [t for c in executed["cells"] for t in _texts(c) if t.startswith("<table")]
    assert any("<td style='text-align:left'>A_SalesOrder</td>" in t for t in html)  # process-entity-sets
    for name in (
        "process-entity-sets",
        "process-chain-after",
        "required-keys",
        "navigation-paths",
        "value-helps",
        "unmapped-activities",
        "unknown-code-value-helps",
        "services-by-writes",
    ):
        assert f"{name}(" in text, name
    assert "SubProcess_InvoiceVerification" in text  # the one unmapped activity


def test_process_picture(executed):
    assert _has_png(executed)


def test_retrieval_expansion_and_context(executed):
    text = _all_text(executed)
    assert "hybrid-paper" in text and "expanded" in text and "seed" in text
    assert "Pick and post goods issue > Create billing document" in text  # a via chain
    assert "expand(seed=A_GoodsMovement)" in text
    assert "## 1. DEMO_DELIVERY_BILLING_SRV/A_GoodsMovement" in text  # typed context
    assert "path: /sap/opu/odata/sap/DEMO_DELIVERY_BILLING_SRV/A_GoodsMovement" in text


def test_validation(executed):
    text = _all_text(executed)
    assert "c3: POST DEMO_SALES_ORDER_SRV/A_SalesOrder: VALID" in text
    assert "c12: POST DEMO_SALES_ORDER_SRV/A_SalesOrder: INVALID" in text
    assert "unknown-property" in text and "/to_Item/1/DiscountPercent" in text
    assert "invalid-code" in text  # from the batch table


def test_committed_notebook_has_outputs():
    """The committed notebook was executed (``notebooks/run.py``) and no cell failed."""
    nb = json.loads(NOTEBOOK.read_text(encoding="utf-8"))
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    assert code and [c["execution_count"] for c in code] == list(range(1, len(code) + 1)), (
        "re-run the notebook: .venv/bin/python notebooks/run.py"
    )
    assert _errors(nb) == []
    assert _has_png(nb)
    text = _all_text(nb)
    assert "A_SalesOrder" in text and "expanded" in text and "unknown-property" in text
    assert str(ROOT) not in text, "outputs should not show machine-specific paths"
