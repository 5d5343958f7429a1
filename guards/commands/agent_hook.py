"""guards agent-hook claude|codex|gemini|qwen|opencode|droid|copilot: the harness hook entry
point (JSON on stdin).

Installed hooks call :func:`fast_main` (no argparse on the way); the events are handled
in :mod:`guards.integrations.agent_hooks`, which loads after a prompt's git calls have
started (guards.integrations.hook_start). GitHub Copilot CLI's payloads name no event,
so its hooks name it: ``guards agent-hook copilot preToolUse``.
"""

from __future__ import annotations

import sys

from guards.integrations import hook_start
from guards.integrations.hook_start import HARNESSES

TYPE_CHECKING = False  # see guards.values: these imports cost start-up time
if TYPE_CHECKING:
    import argparse
    from typing import Any

#: And ``main``, ``session_for``, ``MAX_ID_LENGTH``, loaded when asked for (__getattr__)...
__all__ = ["HARNESSES", "fast_main"]

HELP = (
    "entry point for Claude Code / Codex / Gemini CLI / GitHub Copilot CLI / Qwen Code / "
    "opencode / Factory Droid hooks (hook JSON on stdin)"
)


def usage() -> str:
    from guards.integrations.copilot_hooks import COPILOT_EVENTS

    return (
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
    """``python -m guards.commands.agent_hook claude``: the fast way in (no argparse).

    The event is read once. A write tool's end, the most frequent event after a shell
    line, is answered by guards.integrations.write_hooks, and a prompt by
    guards.integrations.prompt_hooks, without the other events' handlers; a prompt's git
    calls start before its modules load (``claude --handed-status GIT``: its shell
    started the status already: guards.integrations.hook_start.HANDED)."""
    handed = None
    if len(argv) == 3 and argv[1] == hook_start.HANDED:  # (a prompt's: see hook_start)
        handed, argv = argv[2], argv[:1]
    copilot = len(argv) == 2 and argv[0] == "copilot" and _copilot_event(argv[1])
    other = len(argv) == 1 and argv[0] in HARNESSES and argv[0] != "copilot"
    if not (copilot or other):
        sys.stderr.write(usage() + "\n")
        return 2
    raw = sys.stdin.buffer.read()
    event = hook_start.read_event(argv[0], raw)
    if event is not None:
        from guards.integrations.hook_answers import is_write_end

        if is_write_end(event):
            from guards.integrations.write_hooks import answer_end

            return answer_end(argv[0], event)
    started = hook_start.start(event, handed)  # a prompt's git runs while the rest loads
    try:
        if started is not None:
            from guards.integrations.prompt_hooks import answer_prompt

            return answer_prompt(argv[0], started)
        from guards.integrations.agent_hooks import main

        return main(argv[0], raw, argv[1] if copilot else None, started, event)
    finally:
        if started is not None:
            started.finish()


def _copilot_event(name: str) -> bool:
    from guards.integrations.copilot_hooks import COPILOT_EVENTS

    return name in COPILOT_EVENTS


def __getattr__(name: str) -> Any:
    """The handler and the session naming, loaded when asked for (not before a prompt's
    git calls start)."""
    if name == "main":
        from guards.integrations.agent_hooks import main

        return main
    if name in ("MAX_ID_LENGTH", "session_for"):
        from guards.state import identity

        return getattr(identity, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


if __name__ == "__main__":
    raise SystemExit(fast_main(sys.argv[1:]))
