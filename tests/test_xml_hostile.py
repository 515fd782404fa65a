"""Hostile XML for both readers: a prolog full of comments and processing instructions, a
gateway with thousands of branches. Each must be read in well under the time a user waits."""

from __future__ import annotations

import time

import pytest

from conftest import DATA, INVALID
from processkg.errors import MalformedXMLError
from processkg.sources.bpmn import bpmn_xml
from processkg.sources.bpmn.lift_definitions import DefinitionsLifter
from processkg.sources.odata import csdl

PROLOG = "<!-- c -->\n<?pi x?>\n" * 1000  # 2,000 comments and processing instructions


def _with_prolog(source, tmp_path, prolog: str):
    text = source.read_text(encoding="utf-8")
    declaration, rest = text.split("?>", 1)
    path = tmp_path / source.name
    path.write_text(declaration + "?>\n" + prolog + rest, encoding="utf-8")
    return path


@pytest.mark.parametrize(
    "source, read",
    [
        (DATA / "odata" / "HANDMADE_PURCHASING.xml", csdl.read_document),
        (DATA / "bpmn" / "order-flow.bpmn", bpmn_xml.read_definitions),
    ],
)
def test_thousands_of_comments_before_the_root_read_in_well_under_a_second(source, read, tmp_path):
    path = _with_prolog(source, tmp_path, PROLOG)
    start = time.perf_counter()
    read(path, source.name)
    assert time.perf_counter() - start < 1.0


def test_a_dtd_after_thousands_of_comments_is_still_refused(tmp_path):
    path = _with_prolog(INVALID / "billion-laughs.xml", tmp_path, PROLOG)
    start = time.perf_counter()
    with pytest.raises(MalformedXMLError, match=r"^billion-laughs\.xml:2005: document declares DTD entities"):
        csdl.read_document(path, "billion-laughs.xml")
    assert time.perf_counter() - start < 1.0


def _fan(branches: int) -> str:
    """Task A -> split -> ``branches`` tasks -> join -> ``branches`` events -> join -> task Z."""
    parts = [
        '<definitions xmlns="http://www.omg.org/spec/BPMN/20100524/MODEL" id="D" targetNamespace="urn:t">',
        '<process id="P"><task id="A"/><parallelGateway id="Split"/><parallelGateway id="Join"/>',
        '<exclusiveGateway id="Merge"/><task id="Z"/>',
        '<sequenceFlow id="FA" sourceRef="A" targetRef="Split"/><sequenceFlow id="FZ" sourceRef="Merge" targetRef="Z"/>',
    ]
    for i in range(branches):
        parts.append(
            f'<task id="T{i}"/><sequenceFlow id="S{i}" sourceRef="Split" targetRef="T{i}"/>'
            f'<sequenceFlow id="J{i}" sourceRef="T{i}" targetRef="Join"/>'
            f'<intermediateThrowEvent id="E{i}"/><sequenceFlow id="F{i}" sourceRef="Join" targetRef="E{i}"/>'
            f'<sequenceFlow id="M{i}" sourceRef="E{i}" targetRef="Merge"/>'
        )
    return "\n".join(parts + ["</process></definitions>"])


def test_a_gateway_with_thousands_of_branches_reads_and_lifts_in_seconds(tmp_path):
    path = tmp_path / "fan.bpmn"
    path.write_text(_fan(4000), encoding="utf-8")
    start = time.perf_counter()
    defs = bpmn_xml.read_definitions(path, "fan.bpmn")
    DefinitionsLifter(defs, "fan.bpmn").lift()
    assert time.perf_counter() - start < 5.0
    pairs = bpmn_xml.next_activities(defs)
    assert len(pairs) == 8000
    assert ("A", "T0") in pairs and ("T3999", "Z") in pairs and ("A", "Z") not in pairs
