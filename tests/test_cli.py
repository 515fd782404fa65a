"""The ``kg`` command line through click's CliRunner: build, stats, query, and its errors."""

from __future__ import annotations

import csv
import errno
import io
import json
import os
import re
from collections.abc import Iterator
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

import processkg.cli
from conftest import DATA, INVALID
from processkg.cli import main
from processkg.cli.exit_codes import ExitCode
from processkg.cli.options import SharedOption

QUERY = """SELECT ?name ?label WHERE { ?s a kg:EntitySet ; kg:name ?name . OPTIONAL { ?s kg:label ?label } }
ORDER BY ?name"""
SETS = ["Customers", "Items", "Orders", "PurchaseOrder", "Supplier", "VL_OrderType"]


def run(*args, input=None):
    return CliRunner().invoke(main, [str(a) for a in args], input=input)


def assert_one_line_error(result, pattern: str) -> str:
    """Exit code 2, one line ``error: ...`` on stderr, nothing on stdout, no traceback."""
    assert result.exit_code == 2, result.output
    assert isinstance(result.exception, SystemExit), repr(result.exception)
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    assert "Traceback" not in result.output
    assert re.search(pattern, lines[0]), lines[0]
    return lines[0]


def handmade_args(tmp_path):
    return [
        "build",
        "--odata",
        DATA / "odata",
        "--bpmn",
        DATA / "bpmn",
        "--mapping",
        DATA / "mapping.yaml",
        "--codes",
        DATA / "codes",
        "--store",
        tmp_path / "store",
        "--out",
        tmp_path / "graph.ttl",
    ]


# ---------------------------------------------------------------- kg build


def test_build_prints_the_summary(tmp_path, handmade):
    result = run(*handmade_args(tmp_path))
    assert result.exit_code == 0, result.output
    c = handmade.report.classes
    out = result.stdout
    # 6 OData, BPMN and mapping files and the 2 code lists of tests/data/codes
    assert out.startswith(f"built {handmade.report.triples:,} triples from 8 files in ")
    assert f"{c['Service']} Service, {c['EntitySet']} EntitySet" in out
    assert f"{c['Process']} Process, {c['Activity']} Activity, {c['Gateway']} Gateway" in out
    assert "3 mapping edges (uses:entitySet)" in out
    assert f"store: {tmp_path / 'store'}" in out and f"turtle: {tmp_path / 'graph.ttl'}" in out
    assert (tmp_path / "graph.ttl").read_bytes() == handmade.ttl.read_bytes()


def test_build_on_error_warn_lists_skipped_files(tmp_path):
    result = run(
        "build",
        "--odata",
        DATA / "odata",
        "--odata",
        INVALID / "unresolved-entitytype.xml",
        "--odata",
        INVALID / "malformed.xml",
        "--out",
        tmp_path / "g.ttl",
        "--on-error",
        "warn",
    )
    assert result.exit_code == 0, result.output
    assert "skipped 2 file(s):" in result.stdout
    assert "  unresolved-entitytype.xml:11: EntitySet 'Orders' refers to 'Shop.OrderType'" in result.stdout
    assert "  malformed.xml:8:" in result.stdout
    assert (tmp_path / "g.ttl").exists()


def test_build_on_error_skip_goes_on_quietly(tmp_path):
    result = run(
        "build",
        "--odata",
        DATA / "odata",
        "--odata",
        INVALID / "unresolved-entitytype.xml",
        "--out",
        tmp_path / "g.ttl",
        "--on-error",
        "skip",
    )
    assert result.exit_code == 0, result.output
    assert "skipped" not in result.output and "unresolved-entitytype" not in result.output
    assert "2 Service" in result.stdout


def test_build_on_error_fail_exits_2_with_the_message(tmp_path):
    result = run(
        "build",
        "--odata",
        DATA / "odata",
        "--odata",
        INVALID / "unresolved-entitytype.xml",
        "--out",
        tmp_path / "g.ttl",
    )  # fail is the default
    assert_one_line_error(
        result,
        r"^error: unresolved-entitytype\.xml:11: EntitySet 'Orders' refers to "
        r"'Shop\.OrderType', which is not declared",
    )
    assert not (tmp_path / "g.ttl").exists()


@pytest.mark.parametrize(
    "name, pattern",
    [
        ("billion-laughs.xml", r"billion-laughs\.xml:4: document declares DTD entities"),
        ("xxe-file.xml", r"xxe-file\.xml:4: document declares DTD entities"),
    ],
)
def test_build_refuses_entity_documents_in_one_line(tmp_path, name, pattern):
    assert_one_line_error(run("build", "--odata", INVALID / name, "--out", tmp_path / "g.ttl"), pattern)


def test_build_needs_an_output():
    result = run("build", "--odata", DATA / "odata")
    assert result.exit_code == 2 and "give --store DIR and/or --out FILE.ttl" in result.output


def test_build_bad_mapping_names_file_and_line(tmp_path):
    args = handmade_args(tmp_path)
    args[args.index("--mapping") + 1] = INVALID / "unresolved-process.mapping.yaml"
    assert_one_line_error(run(*args), r"^error: unresolved-process\.mapping\.yaml:4: process 'Process_Shipping'")


# ---------------------------------------------------------------- kg stats


def test_stats_table_has_class_service_and_process_counts(handmade):
    result = run("stats", "--store", handmade.store_dir)
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "classes (" in out and "services (2)" in out and "processes (2)" in out
    lines = {line.split()[0]: line.split()[1:] for line in out.splitlines() if line.strip()}
    assert lines["kg:Service"] == ["2"]
    assert lines["bpmn:Process"] == ["2"]
    assert lines["uses:Usage"] == ["3"]
    assert lines["HANDMADE_SALES_SRV"] == ["2.0", "4", "4", "12", "3"]
    assert lines["HANDMADE_PURCHASING"] == ["4.0", "2", "4", "13", "3"]
    assert lines["bpmn/order-flow.bpmn"] == ["Process_Order", "Order", "handling", "15", "3", "12", "23", "3"]


def test_stats_json_matches_the_build(handmade):
    result = run("stats", "--store", handmade.store_dir, "--format", "json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    classes = {row["class"].split(":", 1)[1]: row["count"] for row in data["classes"]}
    assert classes == handmade.report.classes
    services = {row["service"]: row for row in data["services"]}
    assert services["HANDMADE_SALES_SRV"]["entitySets"] == 4
    assert services["HANDMADE_PURCHASING"]["navigationProperties"] == 3
    processes = {row["process"]: row for row in data["processes"]}
    assert (processes["Process_AllKinds"]["activities"], processes["Process_AllKinds"]["gateways"]) == (16, 5)
    assert processes["Process_Order"]["mappedActivities"] == 3


def test_stats_without_store_is_an_error(tmp_path):
    assert_one_line_error(run("stats", "--store", tmp_path / "none"), r"no processkg store here")


# ---------------------------------------------------------------- kg query


@pytest.fixture
def query_file(tmp_path):
    path = tmp_path / "sets.rq"
    path.write_text(QUERY, encoding="utf-8")
    return path


def test_query_file_as_table(handmade, query_file):
    result = run("query", "--store", handmade.store_dir, query_file)
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["name", "label"]
    assert [line.split()[0] for line in lines[2:-1]] == SETS
    assert lines[-1] == f"({len(SETS)} rows)"
    assert "Purchase Orders" in result.stdout


def test_query_stdin_as_csv(handmade):
    result = run("query", "--store", handmade.store_dir, "-", "--format", "csv", input=QUERY)
    assert result.exit_code == 0, result.output
    table = list(csv.reader(io.StringIO(result.stdout)))
    assert table[0] == ["name", "label"]
    assert [r[0] for r in table[1:]] == SETS
    assert ["PurchaseOrder", "Purchase Orders"] in table and ["Items", ""] in table


def test_query_as_json_with_typed_values(handmade, query_file):
    query_file.write_text(
        """SELECT ?name ?len ?key WHERE { ?p a kg:Property ; kg:name ?name ;
        kg:maxLength ?len ; kg:isKey ?key ; kg:sourceFile "odata/HANDMADE_SALES_SRV/metadata.xml" .
        FILTER(?name IN ("Item", "Material")) } ORDER BY ?name""",
        encoding="utf-8",
    )
    result = run("query", "--store", handmade.store_dir, query_file, "--format", "json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == [
        {"name": "Item", "len": 6, "key": True},
        {"name": "Material", "len": 40, "key": False},
    ]


def test_query_param_binds_a_value(handmade):
    query = "SELECT ?s ?name WHERE { ?s a kg:EntitySet ; kg:name ?name }"
    result = run("query", "--store", handmade.store_dir, "-", "--param", "name=Orders", "--format", "json", input=query)
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    assert [r["name"] for r in rows] == ["Orders"]
    assert rows[0]["s"].endswith("/odata/HANDMADE_SALES_SRV/set/Orders")


@pytest.mark.parametrize(
    "value",
    [
        'Orders" } UNION { ?s ?p ?name } #',
        "Orders' } UNION { ?s ?p ?name } #",
        "} ?s ?p ?o {",
        'x") || true || ("',
    ],
)
def test_query_param_cannot_inject_sparql(handmade, value):
    query = "SELECT ?s ?name WHERE { ?s a kg:EntitySet ; kg:name ?name }"
    result = run(
        "query", "--store", handmade.store_dir, "-", "--param", f"name={value}", "--format", "json", input=query
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == []


def test_query_param_must_be_projected_and_says_so(handmade):
    query = "SELECT ?s WHERE { ?s a kg:EntitySet ; kg:name ?name }"
    result = run("query", "--store", handmade.store_dir, "-", "--param", "name=Orders", "--format", "json", input=query)
    assert_one_line_error(result, r"^error: cannot bind parameters: .*\?name.*SELECT")


def test_query_param_binds_a_projected_variable(handmade):
    query = "SELECT ?s ?name WHERE { ?s a kg:EntitySet ; kg:name ?name }"
    result = run("query", "--store", handmade.store_dir, "-", "--param", "name=Orders", "--format", "json", input=query)
    assert result.exit_code == 0, result.output
    assert len(json.loads(result.stdout)) == 1


def test_query_refuses_federated_service(handmade):
    query = "SELECT ?s WHERE { SERVICE <http://127.0.0.1:9/sparql> { ?s ?p ?o } }"
    assert_one_line_error(
        run("query", "--store", handmade.store_dir, "-", input=query),
        r"^error: federated SERVICE queries are not supported",
    )


def test_query_param_iri_with_bad_characters_is_one_error_line(handmade):
    result = run(
        "query",
        "--store",
        handmade.store_dir,
        "-",
        "--param",
        "s=http://x> } ?s ?p ?o {",
        input="SELECT ?s WHERE { ?s ?p ?o }",
    )
    assert_one_line_error(result, r"^error: ")


@pytest.mark.parametrize(
    "args, stdin, pattern",
    [
        (["-"], "SELEC ?x WHERE { ?x ?y ?z }", r"^error: SPARQL syntax error"),
        (["-"], "ASK { ?x ?y ?z }", r"^error: only SELECT queries return tables"),
        (["missing.rq"], None, r"^error: missing\.rq: no such query file"),
        (["no-such-library-query"], None, r"^error: no query named 'no-such-library-query'"),
    ],
)
def test_query_errors_are_one_line(handmade, args, stdin, pattern):
    assert_one_line_error(run("query", "--store", handmade.store_dir, *args, input=stdin), pattern)


def test_query_without_store_is_an_error(tmp_path, query_file):
    assert_one_line_error(run("query", "--store", tmp_path / "none", query_file), r"no processkg store here")


def test_library_query_by_name(handmade):
    result = run("query", "--store", handmade.store_dir, "stats-services", "--format", "json")
    assert result.exit_code == 0, result.output
    assert sorted(r["service"] for r in json.loads(result.stdout)) == ["HANDMADE_PURCHASING", "HANDMADE_SALES_SRV"]


# ---------------------------------------------------------------- exit codes of the group


def test_main_help_documents_the_exit_codes():
    result = run("--help")
    assert result.exit_code == 0
    for code, meaning in (
        ("0", "success"),
        ("1", "the command ran and found problems"),
        ("2", "bad input"),
        ("3", "internal error"),
        ("130", "interrupted"),
    ):
        assert re.search(rf"^\s+{code}\s+{meaning}", result.stdout, re.MULTILINE), code


def _group_with(exc: BaseException):
    """A group of the real ``kg`` class with one command that raises ``exc``."""
    from processkg.cli import _Group

    group = _Group(name="kg")

    @group.command("boom")
    def boom():
        raise exc

    return group


def test_a_crash_is_one_line_and_exit_3(monkeypatch):
    monkeypatch.delenv("PROCESSKG_DEBUG", raising=False)
    result = CliRunner().invoke(_group_with(ZeroDivisionError("division by zero")), ["boom"])
    assert result.exit_code == 3, result.output
    assert result.stderr.splitlines() == [
        "internal error: ZeroDivisionError: division by zero; please report (PROCESSKG_DEBUG=1 shows the traceback)"
    ]
    assert "Traceback" not in result.output


def test_a_crash_shows_its_traceback_with_processkg_debug(monkeypatch):
    monkeypatch.setenv("PROCESSKG_DEBUG", "1")
    result = CliRunner().invoke(_group_with(KeyError("x")), ["boom"])
    assert result.exit_code == 3
    assert "Traceback" in result.stderr and result.stderr.splitlines()[-1].startswith("internal error: KeyError")


@pytest.mark.parametrize(
    "exc, line",
    [
        (PermissionError(errno.EACCES, "Permission denied", "/srv/out.ttl"), "error: /srv/out.ttl: Permission denied"),
        (
            OSError(errno.EXDEV, "Invalid cross-device link", "/a", None, "/b"),
            "error: /a -> /b: Invalid cross-device link",
        ),
        (OSError(errno.ENOSPC, "No space left on device"), "error: No space left on device"),
        (
            OSError(errno.EROFS, "Read-only file system", "/x\nerror: forged"),
            r"error: /x\nerror: forged: Read-only file system",
        ),
        (
            OSError("IO error: No space left on device: While appending to file: /s/1.sst"),
            "error: IO error: No space left on device: While appending to file: /s/1.sst",
        ),
    ],
    ids=["path", "rename", "no-path", "control-characters", "oxigraph"],
)
def test_an_environment_error_is_one_line_and_exit_2(monkeypatch, exc, line):
    monkeypatch.delenv("PROCESSKG_DEBUG", raising=False)
    result = CliRunner().invoke(_group_with(exc), ["boom"])
    assert result.exit_code == 2, result.output
    assert result.stderr.splitlines() == [line]


@pytest.mark.parametrize("number", [errno.EBADF, errno.EINVAL, errno.ESPIPE])
def test_an_os_error_of_a_bug_stays_exit_3(monkeypatch, number):
    monkeypatch.delenv("PROCESSKG_DEBUG", raising=False)
    result = CliRunner().invoke(_group_with(OSError(number, os.strerror(number))), ["boom"])
    assert result.exit_code == 3, result.output
    assert result.stderr.startswith("internal error: OSError: ")


def test_ctrl_c_is_exit_130_with_one_line():
    result = CliRunner().invoke(_group_with(KeyboardInterrupt()), ["boom"])
    assert result.exit_code == 130 and result.stderr == "interrupted\n"


def test_usage_errors_stay_exit_2_from_click(handmade):
    result = run("query", "--store", handmade.store_dir)
    assert result.exit_code == 2 and "Missing argument" in result.stderr and "internal error" not in result.stderr
    result = run("query", "--store", handmade.store_dir, "-", "--timeout", "-1", input=QUERY)
    assert result.exit_code == 2 and "--timeout" in result.stderr


def test_query_help_names_its_bounds():
    out = " ".join(run("query", "--help").stdout.split())
    assert "--timeout SECONDS" in out and "--limit N" in out and "SERVICE, FROM and updates are refused" in out


#: Options that mean the same in every command, so they are declared once in cli/options.py.
SHARED_FLAGS = {
    "--store",
    "--out",
    "--format",
    "--model",
    "--llm-url",
    "--llm-model",
    "--llm-candidates",
    "--llm-timeout",
    "--max-steps",
    "--max-tokens",
    "--temperature",
    "--api-key-env",
    "--odata-url",
    "--allow-writes",
    "--record",
}


def _commands(group: click.Group, path: str = "kg") -> Iterator[tuple[str, click.Command]]:
    ctx = click.Context(group)
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        assert command is not None, f"{path} {name} is listed but cannot be loaded"
        yield f"{path} {name}", command
        if isinstance(command, click.Group):
            yield from _commands(command, f"{path} {name}")


def test_every_shared_option_comes_from_cli_options():
    hand_made = [
        f"{name} {flag}"
        for name, command in _commands(main)
        for param in command.params
        for flag in param.opts
        if flag in SHARED_FLAGS and not isinstance(param, SharedOption)
    ]
    assert hand_made == []
    used = {flag for _, command in _commands(main) for p in command.params for flag in p.opts} & SHARED_FLAGS
    assert used == SHARED_FLAGS  # the list above names no option that no command has


def test_out_says_file_or_folder_and_format_lists_its_choices():
    metavars = {
        name: param.metavar for name, command in _commands(main) for param in command.params if "--out" in param.opts
    }
    assert metavars["kg build"] == "FILE" and metavars["kg docs"] == "DIR" and metavars["kg eval socbench"] == "DIR"
    assert set(metavars.values()) == {"FILE", "DIR"}
    formats = [p for _, command in _commands(main) for p in command.params if "--format" in p.opts]
    assert len(formats) == 4 and all(
        isinstance(p.type, click.Choice) and p.default == p.type.choices[0] for p in formats
    )


def test_help_lists_every_exit_code():
    text = run("--help").stdout
    for code in ExitCode:
        assert re.search(rf"^\s+{code.value}\s+\S", text, re.MULTILINE), code


def test_no_command_ends_itself_with_a_literal_code_or_its_own_error_line():
    """Exit 2 has one route, the group's handler; commands exit with named codes only."""
    cli = Path(processkg.cli.__file__).parent
    for source in sorted(cli.glob("*.py")):
        text = source.read_text()
        assert not re.search(r"sys\.exit\(\d", text), source.name
        if source.name != "__init__.py":
            assert 'click.echo(f"error:' not in text, source.name
