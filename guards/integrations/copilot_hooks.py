"""GitHub Copilot CLI's hook events read as Claude Code's (``guards agent-hook copilot
EVENT``).

Copilot CLI (``@github/copilot``, 1.0.102 observed) reads ``.github/hooks/*.json``; its
payloads name no event (each installed command names its own, by Copilot's name), carry
no tool-call id, name the tool ``toolName`` with its arguments in ``toolArgs`` (documented
as JSON text, sent as an object) and the result in ``toolResult``. Its tools ``bash``,
``create`` and ``edit`` (``path``) are read as Claude's Bash, Write and Edit
(``file_path``).
"""

from __future__ import annotations

from guards import jsontext

TYPE_CHECKING = False  # see guards.values: typing stays out of the hot path
if TYPE_CHECKING:
    from typing import Any

#: GitHub Copilot CLI's events (named by the installed command) as Claude's.
COPILOT_EVENTS = {
    "preToolUse": "PreToolUse",
    "postToolUse": "PostToolUse",
    "sessionStart": "SessionStart",
    "userPromptSubmitted": "UserPromptSubmit",
    "agentStop": "Stop",
    "sessionEnd": "SessionEnd",
}
#: Copilot's shell and write tools as Claude's (their ``path`` read as ``file_path``).
COPILOT_TOOLS = {"bash": "Bash", "create": "Write", "edit": "Edit"}


def from_copilot(event: dict[str, Any], name: str) -> dict[str, Any]:
    """A Copilot CLI payload as Claude's: the event named by the command line, its tools
    and their ``path`` by Claude's names, ``toolResult`` as ``tool_response``."""
    args = event.get("toolArgs")
    if isinstance(args, str):  # documented as JSON text; 1.0.102 sends an object
        import contextlib

        with contextlib.suppress(ValueError, RecursionError):
            args = jsontext.loads(args)
    tool = event.get("toolName")
    if isinstance(args, dict) and tool in ("create", "edit") and "path" in args:
        args = {**args, "file_path": args["path"]}
    out = {
        "hook_event_name": COPILOT_EVENTS.get(name, name),
        "session_id": event.get("sessionId"),
        "cwd": event.get("cwd"),
    }
    if tool is not None:
        out["tool_name"] = COPILOT_TOOLS.get(tool, tool) if isinstance(tool, str) else tool
        out["tool_input"] = args
    if "toolResult" in event:
        out["tool_response"] = event["toolResult"]
    return out
