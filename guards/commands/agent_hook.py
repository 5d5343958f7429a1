"""guards agent-hook claude|codex|gemini|qwen|opencode|droid|copilot: the harness hook entry
point (JSON on stdin).

Installed hooks run ``python -m guards.commands.agent_hook <harness>`` (no argparse on
the way); the events are handled in :mod:`guards.integrations.agent_hooks`. GitHub
Copilot CLI's payloads name no event, so its hooks name it:
``guards agent-hook copilot preToolUse``.
"""

from __future__ import annotations

import sys

from guards.integrations.agent_hooks import COPILOT_EVENTS, HARNESSES, main
from guards.state.identity import MAX_ID_LENGTH, session_for

TYPE_CHECKING = False  # see guards.values: these imports cost start-up time
if TYPE_CHECKING:
    import argparse

__all__ = ["HARNESSES", "MAX_ID_LENGTH", "fast_main", "main", "session_for"]

HELP = (
    "entry point for Claude Code / Codex / Gemini CLI / GitHub Copilot CLI / Qwen Code / "
    "opencode / Factory Droid hooks (hook JSON on stdin)"
)
USAGE = (
    f"usage: guards agent-hook {{{','.join(h for h in HARNESSES if h != 'copilot')}}} "
    f"< hook.json, or guards agent-hook copilot {{{','.join(COPILOT_EVENTS)}}} < hook.json"
)


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("harness", choices=HARNESSES, help="which harness sends the events")
    parser.add_argument(
        "event",
        nargs="?",
        help="copilot only: the event this hook is installed for (its payload names none)",
    )


def run(args: argparse.Namespace) -> int:
    return fast_main([args.harness] + ([args.event] if args.event is not None else []))


def fast_main(argv: list[str]) -> int:
    """``python -m guards.commands.agent_hook claude``: the fast way in (no argparse)."""
    copilot = len(argv) == 2 and argv[0] == "copilot" and argv[1] in COPILOT_EVENTS
    other = len(argv) == 1 and argv[0] in HARNESSES and argv[0] != "copilot"
    if not (copilot or other):
        sys.stderr.write(USAGE + "\n")
        return 2
    return main(argv[0], sys.stdin.buffer.read(), argv[1] if copilot else None)


if __name__ == "__main__":
    raise SystemExit(fast_main(sys.argv[1:]))
