"""``kg docs``: regenerate the reference pages (ontology, commands, queries) from their sources."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from processkg.cli.exit_codes import ExitCode
from processkg.cli.options import out_option
from processkg.docgen import stale_docs, write_docs


@click.command("docs")
@out_option("folder", "Folder to write the generated pages into.", default=Path("docs"))
@click.option("--check", is_flag=True, help="Write nothing; exit 1 and name the pages that are missing or out of date.")
def docs_cmd(out: Path, check: bool) -> None:
    """Generate docs/ontology-reference.md, docs/cli.md and docs/queries.md from their sources.

    The ontology reference is generated from ontology/processkg.ttl, the CLI reference from
    the kg commands themselves and the query reference from the headers of queries/*.rq.
    """
    group = click.get_current_context().find_root().command
    if not isinstance(group, click.Group):
        raise click.UsageError("kg docs documents the command group it is registered on")
    if check:
        stale = stale_docs(out, group)
        for name in stale:
            click.echo(f"out of date: {Path(out) / name} (run `kg docs --out {out}`)", err=True)
        sys.exit(ExitCode.PROBLEMS if stale else ExitCode.OK)
    for path in write_docs(out, group):
        click.echo(f"wrote {path}")
