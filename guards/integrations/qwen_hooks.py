"""Qwen Code's hook events read as Claude Code's (``guards agent-hook qwen``).

Qwen Code (``@qwen-code/qwen-code``, 0.24.4 observed) reads hooks in Claude Code's
shape from ``.qwen/settings.json`` and sends Claude's payload (``session_id``,
``hook_event_name``, ``cwd``, ``tool_name``, ``tool_input``, ``tool_use_id``,
``tool_response``), with its own tools and three differences that matter here:

- its tools are ``run_shell_command`` (``command``, and an optional absolute
  ``directory`` where the line runs), ``write_file`` and ``edit`` (``file_path``);
- a failing tool gets ``PostToolUseFailure`` (with ``error``) instead of
  ``PostToolUse``: a shell line's files are still the session's, and a failed edit
  changed nothing (read as a ``PostToolUse`` whose response holds the error);
- ``UserPromptSubmit`` comes again after every tool round, with an empty ``prompt``:
  only a prompt with text is a new prompt (the frame comes once per prompt).

What it shows the model: a ``PreToolUse`` ``additionalContext`` is only logged, but a
``PostToolUse`` / ``PostToolUseFailure`` one is appended to the tool result (so a
rescue is told after the line ran, as for Codex and Gemini CLI); exit 2 with the
reason on stderr denies the call with the reason as its result. Its shell commands
carry ``QWEN_CODE_SESSION_ID``, the hooks' ``session_id``.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # see guards.values: typing stays out of the hot path
if TYPE_CHECKING:
    from typing import Any

#: Qwen's write tools by Claude's names (``write_file`` is known as Gemini's already).
QWEN_TOOLS = {"edit": "Edit"}
SHELL = "run_shell_command"
#: An event no handler answers: Qwen's empty after-tool-round prompt.
TOOL_ROUND = "QwenToolRound"


def from_qwen(event: dict[str, Any]) -> dict[str, Any]:
    """A Qwen Code payload as Claude's (see the module's docstring)."""
    out = dict(event)
    name = out.get("hook_event_name")
    tool = out.get("tool_name")
    if isinstance(tool, str) and tool in QWEN_TOOLS:
        out["tool_name"] = QWEN_TOOLS[tool]
    tool_input = out.get("tool_input")
    where = tool_input.get("directory") if isinstance(tool_input, dict) else None
    if tool == SHELL and isinstance(where, str) and where:
        cwd = out.get("cwd")
        base = cwd if isinstance(cwd, str) and os.path.isabs(cwd) else os.getcwd()
        out["cwd"] = os.path.join(base, where)  # where the line runs, as Codex's workdir
    if name == "PostToolUseFailure" and tool != SHELL:
        # A failed write changed nothing: its end, with the error (nothing is recorded).
        out["hook_event_name"] = "PostToolUse"
        out["tool_response"] = {"error": str(out.get("error") or "failed")}
    if name == "UserPromptSubmit":
        prompt = out.get("prompt")
        if not isinstance(prompt, str) or not prompt.strip():
            out["hook_event_name"] = TOOL_ROUND
    return out
