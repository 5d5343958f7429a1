"""What every agent-hook event shares: the harnesses' tools and events (each payload is
read as Claude Code's), the event's session, and the answers a hook gives (a context for
the model, a denial, one line on stderr).

Light on purpose: a write tool's end is answered with this module and
guards.integrations.write_hooks alone, without the other events' handlers
(guards.integrations.agent_hooks) loading on every edit.
"""

from __future__ import annotations

import os
import sys

from guards import jsontext
from guards.errors import boundary
from guards.state.identity import session_for

TYPE_CHECKING = False  # see guards.values: these imports cost start-up time
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from guards.git.repo import Repo

#: Harnesses that show the model a PreToolUse context (the others: after the command).
#: Codex 0.171 puts it in the conversation between the tool call and its output.
CONTEXT_BEFORE = frozenset({"claude", "copilot", "codex"})
#: Harnesses that take a PreToolUse deny as JSON with its reason (the others: exit 2 and
#: the reason on stderr).
DENY_AS_JSON = frozenset({"claude", "copilot"})
#: Tools whose input is a shell line.
SHELL_TOOLS = frozenset(
    {"Bash", "shell", "local_shell", "exec_command", "unified_exec", "run_shell_command"}
)
#: Claude and Gemini tools that name the one file they edit.
EDIT_TOOLS = {
    "Write": "file_path",
    "Edit": "file_path",
    "MultiEdit": "file_path",
    "write_file": "file_path",
    "replace": "file_path",
}
NOTEBOOK_TOOLS = {"NotebookEdit": "notebook_path"}
PATCH_TOOLS = frozenset({"apply_patch"})
#: The events that end a shell line: Claude sends PostToolUseFailure instead of
#: PostToolUse when the line exits non-zero (its files are the session's all the same).
SHELL_ENDS = frozenset({"PostToolUse", "PostToolUseFailure", "AfterTool"})
#: Before a tool runs (Claude, Codex; Gemini), after it ran, a prompt's turn begins.
TOOL_STARTS = frozenset({"PreToolUse", "BeforeTool"})
TOOL_ENDS = frozenset({"PostToolUse", "AfterTool"})
#: The end of an agent turn.
TURN_ENDS = frozenset({"Stop", "AfterAgent"})
#: A hook that failed without deciding anything: the harness shows stderr and goes on.
HOOK_ERROR = 1
#: The harnesses' "block this" exit status (stderr is the reason given to the agent).
BLOCK = 2


def is_write_end(event: dict[str, Any]) -> bool:
    """Whether ``event`` (read as Claude Code's) is a write tool's end: its files are
    recorded (guards.integrations.write_hooks)."""
    tool = event.get("tool_name")
    return event.get("hook_event_name") in TOOL_ENDS and (
        tool in EDIT_TOOLS or tool in NOTEBOOK_TOOLS or tool in PATCH_TOOLS
    )


def answer_event(harness: str, name: str, event: dict[str, Any], handle: Callable[[], int]) -> int:
    """``handle``'s answer to ``event`` (named ``name``); never raises. An error fails
    closed (the tool call denied) only for a tool call that could run git unchecked,
    else it is one line and exit 1, and the harness goes on."""

    def could_run_unchecked() -> bool:  # asked only when an error came
        return name in TOOL_STARTS and guarded_text(jsontext.dumps(event.get("tool_input")))

    def answer(fail_open: bool, line: str) -> int:  # a hook must answer, whatever happened
        if not fail_open:
            return deny(harness, f"guards could not check this command ({line})")
        say(f"guards agent-hook: {name}: {line}")
        return HOOK_ERROR

    return boundary(handle, fail_open=lambda: not could_run_unchecked(), answer=answer)


def guarded_text(text: str) -> bool:
    """Whether a shell line could run git or destroy files: only then is it parsed."""
    from guards.predict.shell_files import could_destroy_files

    return "git" in text.lower() or could_destroy_files(text)


# -- answers ---------------------------------------------------------------------------


def say(line: str) -> None:
    sys.stderr.write(line.rstrip("\n") + "\n")
    sys.stderr.flush()


def emit(harness: str, name: str, **fields: str) -> int:
    answer: dict[str, Any] = dict(fields)
    if harness != "copilot":  # Copilot reads the fields at the top level
        answer = {"hookSpecificOutput": {"hookEventName": name, **fields}}
    sys.stdout.write(jsontext.dumps(answer))
    sys.stdout.write("\n")
    sys.stdout.flush()
    return 0


def deny(harness: str, reason: str) -> int:
    reason = reason if reason.startswith("guards") else f"guards: {reason}"
    if harness in DENY_AS_JSON:  # Copilot: exit 2 would tell only "exited with code 2"
        return emit(
            harness, "PreToolUse", permissionDecision="deny", permissionDecisionReason=reason
        )
    say(reason)
    return BLOCK


# -- the event --------------------------------------------------------------------------


def session_of(harness: str, event: dict[str, Any]) -> str | None:
    """``claude-<session_id>`` / ``codex-<session_id>``; None without a session id."""
    raw = event.get("session_id")
    if not isinstance(raw, str) or not raw.strip():
        return None
    return session_for(harness, raw)


def identify(harness: str, event: dict[str, Any]) -> str | None:
    """Act as the harness session: our git queries and the policy see its identity."""
    sid = session_of(harness, event)
    if sid is not None:
        os.environ["GUARDS_SESSION"] = sid
    else:
        os.environ.pop("GUARDS_SESSION", None)
    return sid


def tool_command(event: dict[str, Any]) -> str | None:
    tool_input = event.get("tool_input")
    if not isinstance(tool_input, dict):
        return None
    command = tool_input.get("command")
    if isinstance(command, list) and all(isinstance(c, str) for c in command):
        import shlex

        return shlex.join(command)
    return command if isinstance(command, str) else None


def rescue_context(lines: list[str]) -> str:
    return (
        "guards rescued uncommitted work of other writers before this command ran:\n"
        + "\n".join(lines)
    )


def ledger_dir(start: str, repo: Repo | None = None) -> str | None:
    """``<git common dir>/guards`` found by walking up (no git call), or None. ``repo``:
    the repository found by walking up from ``start`` (no ``GIT_DIR``) already: where that
    walk ended at a ``.git`` that is the common git dir, this one would end there too."""
    if repo is not None and "GIT_DIR" not in os.environ:
        dotgit = os.path.join(repo.toplevel_text, ".git") if repo.toplevel_text else None
        if repo.common_dir_text == dotgit:
            return repo.ledger_dir_text  # (and the barrier's modules need not load)
    from guards.state.barrier import locate

    found = locate(start)
    return None if found is None else found[1]
