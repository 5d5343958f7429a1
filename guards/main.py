"""The entry point of ``guards``: one subcommand module each under guards.commands.

It imports almost nothing itself: ``guards run`` (every guarded git command),
``guards frame`` (every agent turn) and ``guards agent-hook`` (every tool call) are
dispatched before argparse (guards.cli) loads."""

from __future__ import annotations

import sys

from guards.commands import COMMANDS, command_module
from guards.errors import ExitCode, boundary

TYPE_CHECKING = False  # see guards.values: these imports cost start-up time
if TYPE_CHECKING:
    from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    return boundary(lambda: _dispatch(args_list))


def _dispatch(args_list: list[str]) -> int:
    if args_list[:1] == ["run"]:
        # The hot path: no argparse (git's argv must stay exact), no other imports.
        from guards.commands.run import main as guarded_git

        return guarded_git(args_list[1:])
    if args_list[:1] == ["agent-hook"] and len(args_list) in (2, 3):
        # Every tool call of an agent: the harness name (Copilot: and the event) only.
        from guards.commands import agent_hook

        if args_list[1] in agent_hook.HARNESSES:
            return agent_hook.fast_main(args_list[1:])
    if args_list[:1] == ["frame"]:
        # Before every agent turn: its few options are read without argparse.
        from guards.commands.frame import fast_main

        status = fast_main(args_list[1:])
        if status is not None:
            return status
    if args_list[:1] == ["record"]:
        # Every agent edit: one journal append, read without argparse.
        from guards.commands.record import fast_main as record

        status = record(args_list[1:])
        if status is not None:
            return status
    first = args_list[0] if args_list else None
    if first in COMMANDS:
        status = _flags_only(first, args_list[1:])
        if status is not None:
            return status
    from guards.cli import build_parser

    parser = build_parser(first if first in COMMANDS else None)
    args = parser.parse_args(args_list)
    handler = getattr(args, "handler", None)
    if handler is None:
        parser.print_help()
        return ExitCode.OK if not args_list else ExitCode.USAGE
    return int(handler(args))


def _flags_only(name: str, argv: list[str]) -> int | None:
    """Run a command whose options are all on/off ``FLAGS`` without argparse (about 8 ms
    of start-up) when it is given nothing else; None when argparse must read argv."""
    module = command_module(name)
    flags: dict[str, str] | None = getattr(module, "FLAGS", None)
    if flags is None or not set(argv) <= flags.keys():
        return None
    from types import SimpleNamespace

    args = SimpleNamespace(**{flag[2:].replace("-", "_"): flag in argv for flag in flags})
    return int(module.run(args))
