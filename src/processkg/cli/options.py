"""Options shared by several commands, defined once so that their names, types and help agree.

Every option made here is a :class:`SharedOption`, so that a test can check that no command
declares ``--store``, ``--out``, ``--format``, ``--model`` or the LLM and OData options by hand.

``--store`` is walked in a straight line: its text is parsed once into a :class:`StoreLocation`
(a folder, or a SPARQL server's URL); a reading command gets it opened once into a
:class:`StoreHandle` pinned to one build (:func:`store_option`), a writing command (``kg build``,
``kg index``) gets the location (:func:`store_location_option`), and the stages take what the
command got. Nothing below the CLI parses ``--store`` text again.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Literal, TypeVar

import click

from processkg.graph.handle import StoreHandle, StoreLocation

F = TypeVar("F", bound=Callable[..., object])

#: ``--out`` names a file, or a folder that is created if missing.
OutKind = Literal["file", "folder"]


class SharedOption(click.Option):
    """An option declared by a decorator of this module (and nowhere else)."""


def _stacked(options: list[Callable[[F], F]]) -> Callable[[F], F]:
    """One decorator applying ``options`` in the order listed (first shown first in --help)."""

    def decorate(command: F) -> F:
        for option in reversed(options):
            command = option(command)
        return command

    return decorate


class StoreLocationParam(click.ParamType):
    """``--store`` of a command that writes a build (``kg build``, ``kg index``): the text parsed once
    into a :class:`StoreLocation`. A writer creates or replaces the build, so there is nothing to pin
    yet; a bad URL parameter is one error line, exit 2."""

    name = "store"

    def convert(
        self, value: str | Path | StoreLocation, param: click.Parameter | None, ctx: click.Context | None
    ) -> StoreLocation:
        return value if isinstance(value, StoreLocation) else StoreLocation.parse(value)


class StoreHandleParam(click.ParamType):
    """``--store`` of a command that reads a build (every other command): the text parsed once into a
    :class:`StoreLocation` and opened once into a :class:`StoreHandle` pinned to the build it names
    now, which the command hands to its stages. A bad URL parameter, or a missing or damaged store, is
    raised here as a ProcessKGError: the group's one error line, exit 2, before the command runs. The
    handle is released when the command's context closes."""

    name = "store"

    def convert(
        self, value: str | Path | StoreHandle, param: click.Parameter | None, ctx: click.Context | None
    ) -> StoreHandle:
        if isinstance(value, StoreHandle):
            return value
        handle = StoreHandle.open(StoreLocation.parse(value))
        if ctx is not None:
            ctx.call_on_close(handle.close)
        return handle


def store_option(help: str = "Store directory written by kg build, or its SPARQL server's URL.") -> Callable[[F], F]:
    """``--store DIR|URL`` of a command that reads a store: the command gets a :class:`StoreHandle`."""
    return click.option("--store", required=True, type=StoreHandleParam(), help=help, cls=SharedOption)


def optional_store_option(help: str) -> Callable[[F], F]:
    """``--store DIR|URL`` of a command that can read elsewhere (``kg retrieve --server``): a
    :class:`StoreHandle`, or None."""
    return click.option("--store", type=StoreHandleParam(), help=help, cls=SharedOption)


def store_location_option(help: str, required: bool = True) -> Callable[[F], F]:
    """``--store DIR|URL`` of a command that writes a build (``kg build``, which can do without one
    given ``--out``; ``kg index``): the command gets a :class:`StoreLocation`."""
    return click.option("--store", required=required, type=StoreLocationParam(), help=help, cls=SharedOption)


def out_option(kind: OutKind, help: str, *, required: bool = False, default: Path | None = None) -> Callable[[F], F]:
    """``--out FILE`` or ``--out DIR``: where a command writes; the same path type for both kinds
    (a missing or unwritable path is the command's one-line error, not click's)."""
    return click.option(
        "--out",
        type=click.Path(path_type=Path),
        metavar="FILE" if kind == "file" else "DIR",
        required=required,
        default=default,
        show_default=default is not None,
        help=help,
        cls=SharedOption,
    )


def format_option(*choices: str, help: str = "Output format.") -> Callable[[F], F]:
    """``--format`` with the command's choices; the first is the default."""
    return click.option(
        "--format",
        "fmt",
        type=click.Choice(list(choices)),
        default=choices[0],
        show_default=True,
        help=help,
        cls=SharedOption,
    )


def model_option(help: str = "Embedding model; the store's index must have been built with it.") -> Callable[[F], F]:
    """``--model NAME_OR_PATH`` of a command that embeds text."""
    return click.option("--model", default=None, help=help, cls=SharedOption)


def llm_options() -> Callable[[F], F]:
    """The chat endpoint and the loop's settings, shared by ``kg agent run`` and ``kg eval agent``:
    ``--llm-url``, ``--model``, ``--max-steps``, ``--temperature``, ``--timeout``, ``--max-tokens``,
    ``--retrieve-first``, ``--stop``, ``--api-key-env``."""
    return _stacked(
        [
            click.option(
                "--llm-url",
                required=True,
                help="Base URL of an OpenAI-compatible chat endpoint (.../v1).",
                cls=SharedOption,
            ),
            click.option("--model", required=True, help="Model name the endpoint serves.", cls=SharedOption),
            click.option(
                "--max-steps",
                type=click.IntRange(1, 200),
                default=15,
                show_default=True,
                help="Model turns at most.",
                cls=SharedOption,
            ),
            click.option(
                "--temperature", type=click.FloatRange(0, 2), default=0.0, show_default=True, cls=SharedOption
            ),
            click.option(
                "--timeout",
                type=click.FloatRange(1),
                default=120.0,
                show_default=True,
                help="Seconds per request.",
                cls=SharedOption,
            ),
            click.option(
                "--max-tokens",
                type=click.IntRange(1),
                default=None,
                help="Tokens one answer may have at most (default: the endpoint's limit). A small model that "
                "repeats itself otherwise writes until its context is full.",
                cls=SharedOption,
            ),
            click.option(
                "--retrieve-first",
                is_flag=True,
                help="Start each run with the condition's retrieval tool called on the task word for word "
                "(find_entity_sets, or search_metadata for the chunk conditions), as the paper's agent gets its "
                "retrieval results; a small model otherwise shortens the task to a few words of its own.",
                cls=SharedOption,
            ),
            click.option(
                "--stop",
                multiple=True,
                help="A stop sequence sent with every completion (\\n for a newline; repeatable). A small "
                "model that writes more fenced calls than the one a turn runs stops after the first with "
                "--stop '```\\n\\n```' --stop '```\\n```'.",
                cls=SharedOption,
            ),
            click.option(
                "--api-key-env",
                default="OPENAI_API_KEY",
                show_default=True,
                help="Environment variable holding the endpoint's API key (none needed for a local server).",
                cls=SharedOption,
            ),
        ]
    )


def proposal_llm_options() -> Callable[[F], F]:
    """The optional LLM that re-ranks ``kg map propose``'s candidates: ``--llm-url``, ``--llm-model``,
    ``--llm-candidates``, ``--llm-timeout`` (``kg agent``'s chat endpoint is :func:`llm_options`)."""
    return _stacked(
        [
            click.option(
                "--llm-url",
                help="OpenAI-compatible endpoint (base URL, .../v1 or .../v1/chat/completions).",
                cls=SharedOption,
            ),
            click.option("--llm-model", help="Model name sent to the endpoint; needs --llm-url.", cls=SharedOption),
            click.option(
                "--llm-candidates",
                default=10,
                show_default=True,
                help="Candidate sets sent per activity.",
                cls=SharedOption,
            ),
            click.option(
                "--llm-timeout", default=60.0, show_default=True, help="Seconds per LLM request.", cls=SharedOption
            ),
        ]
    )


def odata_url_option(
    help: str = "Base URL of the OData server `call` sends to (credentials from PROCESSKG_ODATA_USER and "
    "PROCESSKG_ODATA_PASSWORD, or PROCESSKG_ODATA_TOKEN). Default: kg serve of the store, "
    "started in-process on a free loopback port.",
) -> Callable[[F], F]:
    """``--odata-url URL``: the OData server a command's calls go to (default: an in-process kg serve)."""
    return click.option("--odata-url", default=None, help=help, cls=SharedOption)


def record_option(
    help: str = "Append every call to this JSON Lines file (kg validate reads it): the in-process kg serve's "
    "recording, or the calls sent to --odata-url.",
) -> Callable[[F], F]:
    """``--record FILE``: the JSON Lines file of OData calls that ``kg validate`` reads."""
    return click.option(
        "--record", type=click.Path(dir_okay=False, path_type=Path), default=None, help=help, cls=SharedOption
    )


def odata_options(record: bool = True) -> Callable[[F], F]:
    """``--odata-url`` and ``--allow-writes`` (where ``call`` sends, and what it may do), and ``--record``."""
    options = [
        odata_url_option(),
        click.option(
            "--allow-writes",
            is_flag=True,
            help="Let `call` send POST, PATCH, MERGE, PUT and DELETE (default: GET only).",
            cls=SharedOption,
        ),
    ]
    if record:
        options.append(record_option())
    return _stacked(options)
