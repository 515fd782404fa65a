"""Options shared by several commands, defined once so that their names, types and help agree."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import click

from processkg.errors import ProcessKGError
from processkg.graph.handle import StoreLocation

F = TypeVar("F", bound=Callable[..., object])


class StoreParam(click.ParamType):
    """``--store`` text as a :class:`StoreLocation`: parsed here, once (a bad URL parameter is a usage error)."""

    name = "store"

    def convert(
        self, value: str | StoreLocation, param: click.Parameter | None, ctx: click.Context | None
    ) -> StoreLocation:
        if isinstance(value, StoreLocation):
            return value
        try:
            return StoreLocation.parse(str(value))
        except ProcessKGError as exc:
            self.fail(str(exc), param, ctx)


def store_option(help: str = "Store directory written by kg build, or its SPARQL server's URL.") -> Callable[[F], F]:
    """``--store DIR|URL`` of a command that reads a store: the command gets its :class:`StoreLocation`."""
    return click.option("--store", required=True, type=StoreParam(), help=help)


def format_option(*choices: str, help: str = "Output format.") -> Callable[[F], F]:
    """``--format`` with the command's choices; the first is the default."""
    return click.option(
        "--format", "fmt", type=click.Choice(list(choices)), default=choices[0], show_default=True, help=help
    )


def model_option(help: str = "Embedding model; the store's index must have been built with it.") -> Callable[[F], F]:
    """``--model NAME_OR_PATH`` of a command that embeds text."""
    return click.option("--model", default=None, help=help)
