"""A write tool's call (Write, Edit, NotebookEdit, apply_patch and the other harnesses'
equivalents) at its start and its end.

Before it runs: the call enters the write barrier of each checkout its files are in
(guards.integrations.write_barrier), and another writer's uncommitted content of those
files is rescued first. After it ran: its files are recorded for the session, a rescue
its start made is told to the model (the harnesses that show no context before a tool),
and the barrier is left. A write's end is answered without the other events' handlers
(guards.commands.agent_hook sends it here first).
"""

from __future__ import annotations

import os

from guards import jsontext
from guards.fsutil import nearest_directory
from guards.integrations.hook_answers import (
    CONTEXT_BEFORE,
    EDIT_TOOLS,
    HOOK_ERROR,
    NOTEBOOK_TOOLS,
    PATCH_TOOLS,
    answer_event,
    deny,
    emit,
    identify,
    ledger_dir,
    rescue_context,
    say,
    tool_command,
)
from guards.integrations.hook_start import event_cwd
from guards.state.observation import OBSERVE_DIR

TYPE_CHECKING = False  # see guards.values: these imports cost start-up time
if TYPE_CHECKING:
    from typing import Any


def _write_targets(event: dict[str, Any]) -> list[str] | None:
    """The absolute paths a write tool's call edits (None: its input names none)."""
    tool = str(event.get("tool_name"))
    tool_input = event.get("tool_input")
    cwd = event_cwd(event)
    if tool in PATCH_TOOLS:
        body = tool_command(event)
        if body is None and isinstance(tool_input, dict):
            body = tool_input.get("input") if isinstance(tool_input.get("input"), str) else None
        if body is None:
            return None
        from guards.predict.shell import patch_paths

        return [os.path.join(cwd, p) for p in patch_paths(body)]
    key = EDIT_TOOLS.get(tool) or NOTEBOOK_TOOLS.get(tool, "file_path")
    target = tool_input.get(key) if isinstance(tool_input, dict) else None
    if not isinstance(target, str) or not target:
        return None
    return [os.path.join(cwd, target)]


def pre_write(harness: str, event: dict[str, Any]) -> int:
    """Before a write tool runs: another writer's uncommitted content of its files is
    rescued first (policy block: the write is refused with the reason)."""
    if os.environ.get("GUARDS_DISABLE") == "1":
        return 0
    files = _write_targets(event)
    if files is None:
        return 0  # the tool itself will fail on input that names no file
    sid = identify(harness, event)
    from guards.integrations.write_barrier import enter_writes, leave_writes, write_wait

    running = enter_writes(event, sid, files)
    if running:
        return deny(
            harness,
            "guards: a destructive git command is running in this checkout "
            f"({'; '.join(running[:2])}) and did not finish within "
            f"{write_wait():g} s; the write would race it: retry when it has finished",
        )
    from guards.protect.guard import guard_write

    verdict = guard_write(files, str(event.get("tool_name")))
    if verdict.deny:
        leave_writes(event, sid, files)
        return deny(harness, verdict.deny)
    if verdict.rescued and harness in CONTEXT_BEFORE:
        return emit(harness, "PreToolUse", additionalContext=rescue_context(verdict.rescued))
    for line in verdict.rescued:
        say(line)
    if verdict.rescued:
        _keep_write_notice(event, sid, files, verdict.rescued)
    return 0


def _write_notice_path(event: dict[str, Any], sid: str | None, files: list[str]) -> str | None:
    """Where a write's rescue notice waits for the write's end (beside the shell lines'
    start markers, swept with them when the end never comes)."""
    ledger = ledger_dir(event_cwd(event))
    if ledger is None:
        return None
    from guards.integrations.write_barrier import write_key

    name = f"{sid or 'unidentified'}.{write_key(event, files)}.notice.json"
    return os.path.join(ledger, OBSERVE_DIR, "".join(c if c not in "/\0" else "_" for c in name))


def _keep_write_notice(
    event: dict[str, Any], sid: str | None, files: list[str], rescued: list[str]
) -> None:
    """Gemini CLI, Qwen Code and Droid show the model no context from before a tool:
    the rescue is told when the write has run (:func:`_write_notice`)."""
    path = _write_notice_path(event, sid, files)
    if path is None:
        return
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write(jsontext.dumps({"rescued": rescued}))
    except OSError as e:
        say(f"guards agent-hook: cannot keep the rescue notice for the model ({e.strerror})")


def _write_notice(harness: str, event: dict[str, Any], sid: str | None, files: list[str]) -> int:
    """After a write: the notice its start kept, as the tool's context (exit 0)."""
    path = _write_notice_path(event, sid, files)
    if path is None:
        return 0
    try:
        with open(path, encoding="utf-8") as f:
            kept = jsontext.loads(f.read())
        os.unlink(path)
    except (OSError, ValueError):
        return 0  # nothing rescued before this write
    rescued = kept.get("rescued") if isinstance(kept, dict) else None
    if not isinstance(rescued, list) or not rescued:
        return 0
    context = rescue_context([str(r) for r in rescued])
    return emit(harness, str(event.get("hook_event_name")), additionalContext=context)


def answer_end(harness: str, event: dict[str, Any]) -> int:
    """The answer to a write tool's end (:func:`guards.integrations.hook_answers.is_write_end`,
    read as Claude Code's); never raises."""
    name = str(event.get("hook_event_name"))
    return answer_event(harness, name, event, lambda: end(harness, event))


def end(harness: str, event: dict[str, Any]) -> int:
    """A write tool's end: its files recorded (unless it failed: they are as they were,
    their owners stay; Gemini sends AfterTool for a failed edit too), the rescue its
    start made told, the barrier left."""
    files = _write_targets(event)
    if files is None:
        if event.get("tool_name") in PATCH_TOOLS:
            return 0
        tool = str(event.get("tool_name"))
        key = EDIT_TOOLS.get(tool) or NOTEBOOK_TOOLS.get(tool, "file_path")
        say(f"guards agent-hook: {tool} input names no {key}; nothing recorded")
        return HOOK_ERROR
    sid = identify(harness, event)
    try:
        if not _failed(event) and sid is not None:
            record_files(sid, files)
        return _write_notice(harness, event, sid, files)
    finally:
        from guards.integrations.write_barrier import leave_writes

        leave_writes(event, sid, files)


def _failed(event: dict[str, Any]) -> bool:
    response = event.get("tool_response")
    return isinstance(response, dict) and (
        bool(response.get("error")) or response.get("resultType") in ("failure", "denied")
    )


def record_files(sid: str, files: list[str]) -> list[str]:
    """Record each absolute path for ``sid`` in its own repository; returns what was."""
    from guards.git.repo import Discovery

    # The first file's git answers while the ledger's modules are imported.
    first = os.path.dirname(os.path.abspath(files[0])) if files else None
    started = Discovery(nearest_directory(first)) if first is not None else None
    from guards.state.workspace import record_files as record

    done, problems = record(sid, files, started)
    for problem in problems:
        say(f"guards agent-hook: {problem}")
    return done
