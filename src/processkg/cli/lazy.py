"""Subcommands imported when they are used, so that ``kg mcp`` does not import the whole pipeline.

Click's documented pattern for large command lines: a group class names some of its subcommands by
``"module:attribute"``; :meth:`LazyGroup.get_command` imports the module the first time the
command is resolved (to run it, or for ``--help``), and :meth:`LazyGroup.list_commands` lists them
without importing anything. ``kg mcp`` answers ``initialize`` before the stages it does not need
for that are imported (issue 24: under 1 s).
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import ClassVar

import click


class LazyGroup(click.Group):
    """A click group whose commands ``lazy`` names ({name: "module:attribute"}) are imported on use;
    a subclass sets ``lazy``."""

    lazy: ClassVar[Mapping[str, str]] = {}

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self.lazy})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self.lazy and cmd_name not in self.commands:
            self.add_command(load_command(self.lazy[cmd_name]), cmd_name)
        return super().get_command(ctx, cmd_name)


def load_command(target: str) -> click.Command:
    """The click command ``"module:attribute"`` names (imported now)."""
    module, _, attribute = target.partition(":")
    command = getattr(importlib.import_module(module), attribute)
    if not isinstance(command, click.Command):
        raise TypeError(f"{target} is not a click command")
    return command
