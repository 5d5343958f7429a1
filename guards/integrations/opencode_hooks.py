"""opencode's plugin events read as Claude Code's (``guards agent-hook opencode``).

opencode (``opencode-ai``, 1.18.33 observed) has no command hooks: guards' plugin
(``hooks/opencode-plugin.js``, installed into ``.opencode/plugins/``) runs this hook
with one JSON object per plugin event, holding the event's ``input`` fields as opencode
passes them plus ``event`` (the plugin hook's name) and ``directory`` (the opencode
instance's directory)::

    {"event": "tool.execute.before", "tool": "bash", "sessionID": "ses_...",
     "callID": "toolu_...", "args": {"command": "...", "workdir": "..."},
     "directory": "/repo"}

- ``tool.execute.before`` / ``tool.execute.after`` are PreToolUse / PostToolUse; the
  tools ``bash`` (``command``, an optional ``workdir`` where it runs), ``write`` and
  ``edit`` (``filePath``) are Claude's Bash, Write and Edit (``file_path``);
  ``apply_patch`` (``patchText``) is Codex's. The tool-call id is ``callID``. A tool
  that fails (an edit whose text is not found) throws inside opencode: no after event
  comes. A shell line that exits non-zero is not a failure (its exit is in
  ``metadata``).
- ``chat.message`` (a user prompt; ``prompt``: its text) is UserPromptSubmit,
  ``session.idle`` (the end of a turn) is Stop, ``session.end`` (the plugin's dispose
  when opencode exits, or the session deleted) is SessionEnd.

The plugin denies a call on exit 2 (the reason, stderr, is the tool result the model
reads) and appends a PostToolUse ``additionalContext`` to the tool's output; a rescue is
told after the tool ran, as for Codex. Its shell commands carry ``GUARDS_SESSION`` and
``OPENCODE_SESSION_ID`` (set by the plugin's ``shell.env`` hook).
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # see guards.values: typing stays out of the hot path
if TYPE_CHECKING:
    from typing import Any

#: opencode's plugin events as Claude's.
OPENCODE_EVENTS = {
    "tool.execute.before": "PreToolUse",
    "tool.execute.after": "PostToolUse",
    "chat.message": "UserPromptSubmit",
    "session.idle": "Stop",
    "session.end": "SessionEnd",
}
#: opencode's shell and write tools as Claude's (``apply_patch`` is Codex's name too).
OPENCODE_TOOLS = {"bash": "Bash", "write": "Write", "edit": "Edit", "multiedit": "MultiEdit"}


def from_opencode(event: dict[str, Any]) -> dict[str, Any]:
    """An event of guards' opencode plugin as Claude's (see the module's docstring)."""
    name = event.get("event")
    directory = event.get("directory")
    cwd = directory if isinstance(directory, str) and os.path.isabs(directory) else None
    out: dict[str, Any] = {
        "hook_event_name": OPENCODE_EVENTS.get(name, name) if isinstance(name, str) else name,
        "session_id": event.get("sessionID"),
        "cwd": cwd,
    }
    if isinstance(event.get("callID"), str):
        out["tool_use_id"] = event["callID"]
    if isinstance(event.get("prompt"), str):
        out["prompt"] = event["prompt"]
    tool = event.get("tool")
    if tool is None:
        return out
    args = event.get("args")
    out["tool_name"] = OPENCODE_TOOLS.get(tool, tool) if isinstance(tool, str) else tool
    if isinstance(args, dict):
        args = dict(args)
        if "filePath" in args:
            args["file_path"] = args["filePath"]
        if tool == "apply_patch" and "patchText" in args:
            args["input"] = args["patchText"]
        where = args.get("workdir")
        if tool == "bash" and isinstance(where, str) and where:
            base = cwd or os.getcwd()
            out["cwd"] = os.path.join(base, where)  # where the line runs, as Codex's workdir
    out["tool_input"] = args
    if "metadata" in event:
        out["tool_response"] = event["metadata"]
    return out
