"""One module per ``guards`` subcommand: each has HELP, configure(parser) and run(args).

This registry is all that importing the package costs: the entry point (guards.main)
and the parser (guards.cli) share it."""

from __future__ import annotations

TYPE_CHECKING = False  # see guards.values: these imports cost start-up time
if TYPE_CHECKING:
    from types import ModuleType

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
    "land": "land",
    "log": "log",
    "undo": "undo",
    "explain": "explain",
    "completion": "completion",
}


def command_module(name: str) -> ModuleType:
    """The module under guards.commands for subcommand ``name`` (imported on demand)."""
    module: ModuleType = __import__(f"guards.commands.{COMMANDS[name]}", fromlist=["run"])
    return module
