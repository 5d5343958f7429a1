"""guards agent-hook claude|codex|gemini: the harness hook entry point (JSON on stdin).

Installed hooks run ``python -m guards.commands.agent_hook <harness>`` (no argparse on
the way); the events are handled in :mod:`guards.integrations.agent_hooks`.
"""

from __future__ import annotations

import sys

from guards.integrations.agent_hooks import HARNESSES, main
from guards.state.identity import MAX_ID_LENGTH, session_for

TYPE_CHECKING = False  # see guards.values: these imports cost start-up time
if TYPE_CHECKING:
    import argparse

__all__ = ["HARNESSES", "MAX_ID_LENGTH", "main", "session_for"]

HELP = "entry point for Claude Code / Codex / Gemini CLI hooks (hook JSON on stdin)"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("harness", choices=HARNESSES, help="which harness sends the events")


def run(args: argparse.Namespace) -> int:
    return main(args.harness, sys.stdin.buffer.read())


def _cli(argv: list[str]) -> int:
    """``python -m guards.commands.agent_hook claude``: the fast way in (no argparse)."""
    if len(argv) != 1 or argv[0] not in HARNESSES:
        sys.stderr.write(f"usage: guards agent-hook {{{','.join(HARNESSES)}}} < hook.json\n")
        return 2
    return main(argv[0], sys.stdin.buffer.read())


if __name__ == "__main__":
    raise SystemExit(_cli(sys.argv[1:]))
