"""The argparse surface of ``guards``: one parser, each subcommand's module configures
its own part. (guards.main decides whether argparse is needed at all: the hot paths
skip it.)"""

from __future__ import annotations

import argparse

from guards import __version__
from guards.commands import COMMANDS, command_module
from guards.errors import ExitCode
from guards.output import error

TYPE_CHECKING = False  # see guards.values: these imports cost start-up time
if TYPE_CHECKING:
    from typing import NoReturn


class Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line on stderr (exit 2), never a usage dump."""

    def error(self, message: str) -> NoReturn:
        error(f"{message} (see '{self.prog} --help')")
        raise SystemExit(ExitCode.USAGE)


def build_parser(only: str | None = None) -> Parser:
    """The parser; with ``only``, just that subcommand's module is imported (speed)."""
    parser = Parser(
        prog="guards",
        description="Keeps uncommitted work alive in git checkouts that several writers share.",
    )
    parser.add_argument("--version", action="version", version=f"guards {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    for name in COMMANDS:
        if only is not None and name != only:
            sub.add_parser(name)  # never parsed: the command line names `only`
            continue
        module = command_module(name)
        p = sub.add_parser(name, help=module.HELP, description=module.HELP)
        module.configure(p)
        p.set_defaults(handler=module.run)
    return parser


def add_harness_arguments(parser: argparse.ArgumentParser, verb: str) -> None:
    """For install and uninstall: ``--claude`` / ``--codex`` / ``--gemini`` with
    ``--project`` (default in a repository) or ``--user``."""
    parser.add_argument("--claude", action="store_true", help=f"{verb} Claude Code's settings.json")
    parser.add_argument("--codex", action="store_true", help=f"{verb} Codex CLI's hooks.json")
    parser.add_argument("--gemini", action="store_true", help=f"{verb} Gemini CLI's settings.json")
    scope = parser.add_mutually_exclusive_group()
    scope.add_argument(
        "--project",
        dest="harness_scope",
        action="store_const",
        const="project",
        help="the repository's .claude/, .codex/ or .gemini/ (default inside a repository)",
    )
    scope.add_argument(
        "--user",
        dest="harness_scope",
        action="store_const",
        const="user",
        help="the user's ~/.claude/, ~/.codex/ or ~/.gemini/",
    )
