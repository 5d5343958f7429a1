"""The whole command surface of ``guards``, one subcommand module each."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from types import ModuleType
from typing import NoReturn

from guards import __version__
from guards.errors import ExitCode, GuardsError
from guards.output import error

#: subcommand name -> module under guards.commands (each has HELP, configure(), run()).
COMMANDS: dict[str, str] = {
    "session": "session",
    "record": "record",
    "status": "status",
    "config": "config",
    "run": "run",
    "install": "install",
    "uninstall": "uninstall",
    "demo": "demo",
    "doctor": "doctor",
    "frame": "frame",
    "hook": "hook",
    "rescue": "rescue",
    "checkpoint": "checkpoint",
    "agent-hook": "agent_hook",
    "worktree": "worktree",
    "reap": "reap",
}


class Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line on stderr (exit 2), never a usage dump."""

    def error(self, message: str) -> NoReturn:
        error(f"{message} (see '{self.prog} --help')")
        raise SystemExit(ExitCode.USAGE)


def _module(name: str) -> ModuleType:
    return importlib.import_module(f"guards.commands.{COMMANDS[name]}")


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
        module = _module(name)
        p = sub.add_parser(name, help=module.HELP, description=module.HELP)
        module.configure(p)
        p.set_defaults(handler=module.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    try:
        if args_list[:1] == ["run"]:
            # The hot path: no argparse (git's argv must stay exact), no other imports.
            from guards.commands.run import main as guarded_git

            return guarded_git(args_list[1:])
        first = args_list[0] if args_list else None
        parser = build_parser(first if first in COMMANDS else None)
        args = parser.parse_args(args_list)
        handler = getattr(args, "handler", None)
        if handler is None:
            parser.print_help()
            return ExitCode.OK if not args_list else ExitCode.USAGE
        return int(handler(args))
    except GuardsError as e:
        error(str(e))
        return int(e.exit_code)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return ExitCode.OK
    except Exception as e:  # a bug: one line for the user, the traceback in a log
        return _internal_error(e)


def _internal_error(exc: Exception) -> int:
    from guards.errors import report_internal_error

    return report_internal_error(exc)
