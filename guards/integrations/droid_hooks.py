"""Factory Droid CLI's hook events read as Claude Code's (``guards agent-hook droid``).

Droid (``@factory/cli``, 0.225 observed; its binary from ``@factory/cli-linux-x64``)
reads hooks in Claude Code's shape from ``.factory/hooks.json`` / ``~/.factory/hooks.json``
(event names at the top level, no ``"hooks"`` wrapper), else from the ``hooks`` key of
the matching ``settings.json``. Its payloads are Claude's (``session_id``, ``cwd``,
``hook_event_name``, ``tool_name``, ``tool_input``, ``tool_response``) with these
differences that matter here:

- its tools are ``Execute`` (``command``), ``Create`` (``file_path``, ``content``),
  ``Edit`` (``file_path``, ``old_str``, ``new_str``) and ``ApplyPatch`` (``input``: a
  patch in Codex's ``*** Begin Patch`` grammar, paths absolute or relative to ``cwd``;
  offered instead of Create and Edit to GPT-family models, or to a custom model whose
  ``fileEditToolProfile`` is ``apply-patch``), read as Bash, Write, Edit and Codex's
  ``apply_patch``; ``tool_response`` of a write is JSON text (``{"success": true,
  ...}``);
- no ``tool_use_id``: a shell line's start marker is keyed as Gemini's (its digest);
- a failing ``Execute`` gets no ``PostToolUse`` at all (there is no PostToolUseFailure),
  nor does a failed ``Create`` / ``Edit`` / ``ApplyPatch``: its announcement in the write barrier is
  taken back at the turn's end (``Stop``), else it would hold destructive commands back
  until it expires;
- ``droid exec`` sends no ``UserPromptSubmit`` (not with ``--input-format stream-json``
  either), so the frame comes with ``SessionStart``, whose context reaches the first
  request; a later ``UserPromptSubmit`` of the same session (the interactive UI sends
  one) skips the first prompt, which the start already framed.

What it shows the model: a ``PreToolUse`` context is dropped, a ``PostToolUse`` one
arrives as a user message after the tool result (so a rescue is told after the line
ran, as for Codex); exit 2 with the reason on stderr denies the call with ``Error:
<reason>`` as its result. Its shell commands carry no session id of their own, but it
sources ``CLAUDE_ENV_FILE`` (set for SessionStart) into them: ``GUARDS_SESSION``.
"""

from __future__ import annotations

import os

from guards import jsontext
from guards.state.observation import OBSERVE_DIR

TYPE_CHECKING = False  # see guards.values: typing stays out of the hot path
if TYPE_CHECKING:
    from typing import Any

#: Droid's shell and write tools as Claude's (ApplyPatch as Codex's apply_patch).
DROID_TOOLS = {"Execute": "Bash", "Create": "Write", "Edit": "Edit", "ApplyPatch": "apply_patch"}
#: An event no handler answers: a prompt the session's start already framed.
FRAMED = "DroidFramedPrompt"
FLAG_SUFFIX = ".framed"


def from_droid(event: dict[str, Any]) -> dict[str, Any]:
    """A Droid payload as Claude's (see the module's docstring)."""
    out = dict(event)
    tool = out.get("tool_name")
    if isinstance(tool, str) and tool in DROID_TOOLS:
        out["tool_name"] = DROID_TOOLS[tool]
        response = out.get("tool_response")
        if tool != "Execute" and isinstance(response, str):
            out["tool_response"] = _write_response(response)
    name = out.get("hook_event_name")
    if name == "UserPromptSubmit" and _take_flag(out):
        out["hook_event_name"] = FRAMED
    if name in ("Stop", "SessionEnd"):
        _withdraw_writes(out)
    return out


def _withdraw_writes(event: dict[str, Any]) -> None:
    """A Create, Edit or ApplyPatch that failed got no PostToolUse: its announcement in the barrier
    would hold destructive commands back until it expires. At the turn's end no tool of
    the session runs any more: every write it announced is taken back."""
    from guards.state.barrier import locate, withdraw_writes_of
    from guards.state.identity import session_for

    raw, cwd = event.get("session_id"), event.get("cwd")
    if not isinstance(raw, str) or not raw.strip():
        return
    found = locate(cwd if isinstance(cwd, str) and os.path.isabs(cwd) else os.getcwd())
    if found is not None:
        withdraw_writes_of(found[1], session_for("droid", raw))


def _write_response(text: str) -> object:
    """A write's JSON text as an object; a write that did not succeed as an error."""
    try:
        doc = jsontext.loads(text)
    except (ValueError, RecursionError):
        doc = None
    if isinstance(doc, dict):
        if doc.get("success") is False and not doc.get("error"):
            doc["error"] = "failed"
        return doc
    return {"error": text} if text.lstrip().lower().startswith("error") else text


def _flag_path(event: dict[str, Any]) -> str | None:
    """``<ledger>/observe/<session>.framed`` (beside the shell lines' start markers, swept
    with them)."""
    from guards.state.barrier import locate
    from guards.state.identity import session_for

    raw, cwd = event.get("session_id"), event.get("cwd")
    if not isinstance(raw, str) or not raw.strip():
        return None
    found = locate(cwd if isinstance(cwd, str) and os.path.isabs(cwd) else os.getcwd())
    if found is None:
        return None
    name = "".join(c if c not in "/\0" else "_" for c in session_for("droid", raw))
    return os.path.join(found[1], OBSERVE_DIR, name + FLAG_SUFFIX)


def mark_framed(event: dict[str, Any]) -> None:
    """The session's start carried the frame: its first prompt needs none."""
    path = _flag_path(event)
    if path is None:
        return
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8"):
            pass
    except OSError:
        pass  # at worst the first prompt is framed twice


def _take_flag(event: dict[str, Any]) -> bool:
    path = _flag_path(event)
    if path is None:
        return False
    try:
        os.unlink(path)
    except OSError:
        return False
    return True


def drop_flag(event: dict[str, Any]) -> None:
    """At the session's end (``droid exec`` never sends the prompt that takes it)."""
    _take_flag(event)
