"""Each lifting feature on its smallest document: tests/conformance/<case>/ gives inputs and expected.ttl."""

from __future__ import annotations

from pathlib import Path

import pytest

from processkg.build.pipeline import BuildOptions, build_store

HERE = Path(__file__).resolve().parent / "conformance"
CASES = sorted(p for p in HERE.iterdir() if p.is_dir())


def inputs(case: Path, *suffixes: str) -> list[Path]:
    return sorted(p for p in case.iterdir() if p.suffix in suffixes)


def lift(case: Path) -> bytes:
    """The Turtle ``kg build`` writes for the case's inputs (in memory, no store)."""
    mapping = case / "mapping.yaml"
    options = BuildOptions(
        odata=inputs(case, ".edmx", ".xml"),
        bpmn=inputs(case, ".bpmn"),
        codes=inputs(case, ".csv"),
        mapping=mapping if mapping.exists() else None,
        shapes=False,
    )
    return build_store(options).turtle


def test_there_are_cases_for_odata_bpmn_mapping_and_codes():
    names = [c.name for c in CASES]
    assert {n.split("-")[0] for n in names} == {"odata", "bpmn", "mapping"}
    assert all((c / "expected.ttl").is_file() for c in CASES), "every case has its expected.ttl"


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_case_lifts_to_its_expected_turtle(case):
    assert lift(case).decode() == (case / "expected.ttl").read_text(encoding="utf-8")
