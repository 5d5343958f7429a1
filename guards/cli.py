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


#: Said at the end of ``guards --help``: the two variables every user needs to know.
EPILOG = """\
environment:
  GUARDS_SESSION=ID   who you are: the session whose work is yours (guards session start
                      prints the line that sets it); without it you own nothing
  GUARDS_DISABLE=1    hand every git command to git untouched (the shim and guards run)
  GUARDS_<KEY>=VALUE  any setting (see guards config list)

shell completion: eval "$(guards completion bash)" (or zsh; fish: guards completion fish | source)
"""


class Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line on stderr (exit 2), never a usage dump,
    and a mistyped subcommand or action gets a "did you mean"."""

    def error(self, message: str) -> NoReturn:
        error(f"{_did_you_mean(message)} (see '{self.prog} --help')")
        raise SystemExit(ExitCode.USAGE)


def _did_you_mean(message: str) -> str:
    """argparse's "invalid choice: 'stauts' (choose from ...)" with the closest choice."""
    import re

    m = re.search(r"invalid choice: '(.*?)' \(choose from (.*)\)$", message)
    if m is None:
        return message
    import difflib

    # 'a', 'b' (Python <= 3.12.7) or a, b (later)
    choices = [c.strip().strip("'") for c in m.group(2).split(",")]
    close = difflib.get_close_matches(m.group(1), choices, n=1, cutoff=0.6)
    if not close:
        return message
    return f"{message[: m.start()]}invalid choice: {m.group(1)!r}; did you mean {close[0]!r}?"


def build_parser(only: str | None = None) -> Parser:
    """The parser; with ``only``, just that subcommand's module is imported (speed)."""
    parser = Parser(
        prog="guards",
        description="Keeps uncommitted work alive in git checkouts that several writers share.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
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
    """For install and uninstall: ``--claude`` / ``--codex`` / ``--gemini`` /
    ``--copilot`` / ``--qwen`` / ``--opencode`` / ``--droid`` with
    ``--project`` (default in a repository) or ``--user``."""
    parser.add_argument("--claude", action="store_true", help=f"{verb} Claude Code's settings.json")
    parser.add_argument("--codex", action="store_true", help=f"{verb} Codex CLI's hooks.json")
    parser.add_argument("--gemini", action="store_true", help=f"{verb} Gemini CLI's settings.json")
    parser.add_argument(
        "--copilot",
        action="store_true",
        help=f"{verb} GitHub Copilot CLI's .github/hooks/guards.json (a repository's only)",
    )
    parser.add_argument("--qwen", action="store_true", help=f"{verb} Qwen Code's settings.json")
    parser.add_argument(
        "--droid",
        action="store_true",
        help=f"{verb} Factory Droid's .factory/hooks.json (settings.json when its hooks are there)",
    )
    parser.add_argument(
        "--opencode",
        action="store_true",
        help=f"{verb} opencode's plugins/ (guards' own plugin file, plugins/guards.js)",
    )
    scope = parser.add_mutually_exclusive_group()
    scope.add_argument(
        "--project",
        dest="harness_scope",
        action="store_const",
        const="project",
        help="the repository's .claude/, .codex/, .gemini/, .qwen/, .opencode/ or .factory/ "
        "(default inside a repository)",
    )
    scope.add_argument(
        "--user",
        dest="harness_scope",
        action="store_const",
        const="user",
        help="the user's ~/.claude/, ~/.codex/, ~/.gemini/, ~/.qwen/, ~/.config/opencode/ or "
        "~/.factory/",
    )
