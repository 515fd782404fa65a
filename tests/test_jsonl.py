"""processkg.jsonl, the one JSON Lines reader: records split on \\n only, BOM and CRLF, files it
refuses (device, FIFO, directory, too large), and the bounds checked before json.loads recurses."""

from __future__ import annotations

import json
import os
import time

import pytest

from processkg.errors import JsonLinesError
from processkg.jsonl import LIMITS, Limits, parse_line, read_records, read_strict


def write(tmp_path, data: bytes, name: str = "x.jsonl"):
    path = tmp_path / name
    path.write_bytes(data)
    return path


def test_a_raw_line_separator_inside_a_string_neither_splits_nor_shifts_line_numbers(tmp_path):
    path = write(tmp_path, '{"q": "a\u2028b\u0085c\u2029d"}\n\n{"q": "next"}\n'.encode())
    assert list(read_records(path)) == [(1, {"q": "a\u2028b\u0085c\u2029d"}), (3, {"q": "next"})]


def test_bom_and_crlf_are_stripped(tmp_path):
    path = write(tmp_path, b'\xef\xbb\xbf{"a": 1}\r\n{"b": 2}\r\n')
    assert list(read_strict(path)) == [(1, {"a": 1}), (2, {"b": 2})]


def test_a_malformed_line_is_file_line_reason_and_the_next_line_is_read(tmp_path):
    path = write(tmp_path, b'{"a": 1}\n{"a" 2}\n\xff\xfe\n{"c": 3}\n', "calls.jsonl")
    records = list(read_records(path))
    assert [n for n, _ in records] == [1, 2, 3, 4] and records[3][1] == {"c": 3}
    assert str(records[1][1]) == f"{path}:2: not valid JSON: Expecting ':' delimiter (column 6)"
    assert str(records[2][1]) == f"{path}:3: not UTF-8 (byte 1 of the line)"
    with pytest.raises(JsonLinesError, match=r"calls\.jsonl:2: not valid JSON"):
        list(read_strict(path))


@pytest.mark.parametrize(
    "text, reason",
    [
        ('{"a": NaN}', "NaN is not a JSON number"),
        ("[-Infinity]", "-Infinity is not a JSON number"),
        ('{"a": 1e999}', "the number 1e999 is too large for a 64-bit float"),
        ("[" + "9" * 5000 + "]", "Exceeds the limit"),
    ],
)
def test_what_python_accepts_but_json_does_not_is_malformed(text, reason):
    with pytest.raises(JsonLinesError, match=rf"^q\.jsonl:7: not valid JSON: .*{reason}"):
        parse_line(text, "q.jsonl", 7)


def test_depth_is_bounded_before_the_parser_recurses():
    assert parse_line("[" * LIMITS.depth + "]" * LIMITS.depth) == json.loads("[" * 64 + "]" * 64)
    quoted = '["' + "[" * 200 + '"]'  # brackets inside a string do not count
    assert parse_line(quoted) == ["[" * 200]
    for deep in ("[" * 65 + "]" * 65, '{"a":' * 100_000 + "1" + "}" * 100_000, "[" * 100_000):
        with pytest.raises(JsonLinesError, match="nested deeper than the limit of 64 levels"):
            parse_line(deep)


def test_keys_per_object_and_values_per_record_are_bounded():
    keys = "{" + ",".join(f'"k{i}": 1' for i in range(LIMITS.keys + 1)) + "}"
    with pytest.raises(JsonLinesError, match="an object has 10,001 keys, more than the limit of 10,000"):
        parse_line(keys)
    values = "[" + ",".join(["[0]"] * (LIMITS.values + 1)) + "]"
    with pytest.raises(JsonLinesError, match="more than the limit of 100,000 values"):
        parse_line(values)


def test_escaped_quotes_outside_strings_do_not_make_the_scan_quadratic():
    started = time.monotonic()
    with pytest.raises(JsonLinesError, match="not valid JSON"):
        parse_line("[" + '\\"' * 2_000_000 + "]" + "," * 100)
    assert time.monotonic() - started < 5


def test_a_line_over_the_limit_names_it_and_the_next_line_is_read(tmp_path):
    """The 25 MB line of 1.7 M keys from the issue: refused while reading, not parsed."""
    huge = "{" + ",".join(f'"k{i}":{i}' for i in range(1_700_000)) + "}"
    assert len(huge) > 2 * LIMITS.line_bytes
    path = write(tmp_path, (huge + '\n{"after": true}\n').encode())
    started = time.monotonic()
    records = list(read_records(path))
    assert time.monotonic() - started < 5
    assert [n for n, _ in records] == [1, 2] and records[1][1] == {"after": True}
    assert str(records[0][1]) == f"{path}:1: line longer than the limit of 10 MB"


def test_a_small_line_limit_counts_bytes_and_the_line_end_is_not_part_of_it(tmp_path):
    path = write(tmp_path, b'"12345678"\n"123456789"\n"1"')
    records = list(read_records(path, Limits(line_bytes=10)))
    assert records[0] == (1, "12345678") and records[2] == (3, "1")
    assert "2: line longer than the limit of 10 bytes" in str(records[1][1])


def test_a_file_over_the_limit_is_refused(tmp_path):
    path = write(tmp_path, b'{"a": 1}\n' * 20)
    with pytest.raises(
        JsonLinesError,
        match=r"x\.jsonl: cannot read queries: the file has 180 bytes, more than "
        r"the limit of 100 bytes",
    ):
        list(read_records(path, Limits(file_bytes=100), what="queries"))


def test_devices_fifos_directories_and_missing_files_are_refused(tmp_path):
    fifo = tmp_path / "calls.fifo"
    os.mkfifo(fifo)  # opening it for reading would block until a writer comes
    cases = [
        (fifo, "not a regular file"),
        ("/dev/zero", "not a regular file"),
        (tmp_path, "it is a directory"),
        (tmp_path / "none.jsonl", "No such file or directory"),
    ]
    for path, reason in cases:
        with pytest.raises(JsonLinesError, match=f"^{path}: cannot read recorded calls: {reason}"):
            list(read_records(path, what="recorded calls"))
