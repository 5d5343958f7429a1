"""The agent harnesses' hook events (``guards agent-hook claude|codex|gemini|qwen|droid``, and
``guards agent-hook copilot <event>``; JSON on stdin).

One handler for every hook event the harness sends (Gemini CLI's names in brackets:
``BeforeTool``, ``AfterTool``, ``BeforeAgent``; its tools ``run_shell_command``,
``write_file``, ``replace``):

- ``PreToolUse`` / shell tool: every git invocation in the line that could destroy work,
  and every command that destroys files without git (``rm``, ``find -delete``, ``>
  file``, ...: guards.protect.file_guard), is guarded before the line runs (rescue then
  let it run, saying what was rescued; or deny with the reason). A line that could run
  git but cannot be read is treated as destructive. The line's start time is kept for
  observed attribution, and a receipt of each rescue for the line's own ``guards run``
  (the shim), which then does not rescue the same work again (guards.protect.receipts).
- ``PostToolUse`` / Write, Edit, MultiEdit, NotebookEdit (Claude), ``apply_patch``
  (Codex): the edited files are recorded for the session (exact attribution). The
  write tools' start and end are handled in guards.integrations.write_hooks, which the
  installed hook sends a write's end to without loading this module.
- ``PostToolUse`` / shell tool, and Claude's ``PostToolUseFailure`` (sent instead of
  PostToolUse when the line exits non-zero): files that changed while the line ran are
  attributed to the session (observed attribution).
- ``SessionStart``: the session is registered, and its later shell commands get
  ``GUARDS_SESSION`` through ``CLAUDE_ENV_FILE``.
- ``UserPromptSubmit``: the frame as additional context, once per prompt. (Not at
  SessionStart as well: both contexts reach the first request, and a frame taken at
  start-up may be long stale when the first prompt comes.)
- ``Stop`` (Claude, Codex) / ``AfterAgent`` (Gemini), the end of a turn: with
  ``persist.on_stop`` set, the session's own dirty work is persisted as at its end
  (never blocks: a Stop hook's exit 2 would keep the agent going).
- ``SessionEnd``: the session's own work is persisted, then the session is marked
  ended. Any other event: exit 0, no output.

Gemini CLI differs: its hook payloads carry no ``tool_use_id``, so a shell line's start
marker is keyed by the session, a digest of the command and its directory, and the
time it started; the line's end takes the oldest marker of that key (a queue per
identical command: the earliest start is the safe threshold). It shows the model no
context from BeforeTool, so a rescue is told after the line ran (AfterTool). It puts no
session id in its shell commands' environment: its SessionStart registers the gemini
process, and a command below it is the session (guards.state.identity; Linux), else
unidentified. The hook leaves its receipt under a key of the line's own, which the shim
inside the line finds either way. Codex shows a PreToolUse context between the tool
call and its output.

GitHub Copilot CLI's payloads name no event (the installed command does: ``preToolUse``,
``postToolUse``, ``sessionStart``, ``userPromptSubmitted``, ``agentStop``,
``sessionEnd``) and carry ``sessionId``, ``toolName``, ``toolArgs`` and ``toolResult``
but no tool-call id: they are read as Claude's (:func:`from_copilot`; its tools ``bash``,
``create``, ``edit`` as Bash, Write, Edit), shell lines' markers keyed as Gemini's. It
answers with flat JSON (``additionalContext``; ``permissionDecision: deny`` with the
reason), shows the model a preToolUse context after the tool result, and puts
``COPILOT_AGENT_SESSION_ID`` in its shell commands' environment (so a line's receipt is
left under a key of the line's own, and the shim inside it finds it).

Qwen Code's and Factory Droid's payloads are read as Claude's by
guards.integrations.qwen_hooks and droid_hooks, and opencode's plugin events by
guards.integrations.opencode_hooks; all show the model a context only after the tool
ran, as Gemini.

The hot path (a shell line that neither mentions git nor names a command destroying
files, nor holds a ``>``) is answered by the installed command's shell gate without
Python when the event is plain enough (guards.integrations.shell_gate; its marker is
read here at the line's end); else it imports neither ``json`` (guards.jsontext reads
and writes the events) nor more of guards than guards.predict.shell_files and the
barrier's ``locate``, and runs no git. The installed hooks call
guards.commands.agent_hook directly, without the command-line parser.
"""

from __future__ import annotations

import os

from guards import jsontext
from guards.errors import first_line
from guards.fsutil import nearest_directory
from guards.git import process as git
from guards.integrations.hook_answers import (
    BLOCK,
    CONTEXT_BEFORE,
    EDIT_TOOLS,
    HOOK_ERROR,
    NOTEBOOK_TOOLS,
    PATCH_TOOLS,
    SHELL_ENDS,
    SHELL_TOOLS,
    TOOL_STARTS,
    TURN_ENDS,
    answer_event,
    deny,
    emit,
    guarded_text,
    identify,
    is_write_end,
    ledger_dir,
    rescue_context,
    say,
    session_of,
    tool_command,
)
from guards.integrations.hook_start import PROMPTS, event_cwd
from guards.integrations.prompt_hooks import frame_event, touch
from guards.state.observation import OBSERVE_DIR

#: ``typing`` stays out of the hot path (mypy reads this name as True).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from guards.integrations.hook_start import Started
    from guards.protect.rescue import RescueResult
    from guards.state.workspace import Workspace

#: Markers of lines whose PostToolUse never came are removed after this long.
OBSERVE_MAX_AGE = 24 * 3600


def main(
    harness: str,
    raw: bytes,
    event_name: str | None = None,
    started: Started | None = None,
    read: dict[str, Any] | None = None,
) -> int:
    """Answer one hook event; never raises, never prints a traceback. ``event_name``:
    the event, for a harness whose payload names none (Copilot); ``started``: a prompt
    whose git calls run (guards.integrations.hook_start); ``read``: ``raw`` read already
    (hook_start.read_event)."""
    if read is not None:
        event: Any = read
    elif started is not None:
        event = started.event
    else:
        try:
            event = jsontext.loads(raw)
        except (ValueError, UnicodeDecodeError, RecursionError) as e:
            return _malformed(raw, f"hook input is not JSON ({e.__class__.__name__})", event_name)
    if not isinstance(event, dict):
        return _malformed(raw, "hook input is not a JSON object", event_name)
    event = as_claude(harness, event, event_name)
    name = event.get("hook_event_name")
    if not isinstance(name, str):
        return _malformed(raw, "hook input has no hook_event_name")

    return answer_event(harness, name, event, lambda: _dispatch(harness, name, event, started))


def as_claude(harness: str, event: dict[str, Any], event_name: str | None = None) -> dict[str, Any]:
    """A harness's payload read as Claude Code's (the shape every handler reads)."""
    if harness == "copilot":
        from guards.integrations.copilot_hooks import from_copilot

        return from_copilot(event, event_name or "")
    if harness == "qwen":
        from guards.integrations.qwen_hooks import from_qwen

        return from_qwen(event)
    if harness == "opencode":
        from guards.integrations.opencode_hooks import from_opencode

        return from_opencode(event)
    if harness == "droid":
        from guards.integrations.droid_hooks import from_droid

        return from_droid(event)
    return event


def _dispatch(
    harness: str, name: str, event: dict[str, Any], started: Started | None = None
) -> int:
    tool = event.get("tool_name")
    if name in TOOL_STARTS and tool in SHELL_TOOLS:
        return _pre_shell(harness, event)
    if name in SHELL_ENDS and tool in SHELL_TOOLS:
        return _post_shell(harness, event)
    if name in TOOL_STARTS and (
        tool in EDIT_TOOLS or tool in NOTEBOOK_TOOLS or tool in PATCH_TOOLS
    ):
        from guards.integrations.write_hooks import pre_write

        return pre_write(harness, event)
    if is_write_end(event):  # (the installed hooks send Claude-shaped ones there first)
        from guards.integrations import write_hooks

        return write_hooks.end(harness, event)
    if name == "SessionStart":
        return _session_start(harness, event)
    if name in PROMPTS:
        return frame_event(harness, event, name, started)
    if name == "SessionEnd":
        return _session_end(harness, event)
    if name in TURN_ENDS:
        return _turn_end(harness, event)
    return 0


# -- answers -------------------------------------------------------------------------


def _malformed(raw: bytes, problem: str, event_name: str | None = None) -> int:
    """Fail closed for what could be a shell line running git; else one line, go on."""
    text = raw.decode("utf-8", "replace")
    could_run_git = "git" in text.lower() and (
        "PreToolUse" in text
        or "BeforeTool" in text
        or "tool.execute.before" in text
        or event_name == "preToolUse"
        or ("hook_event_name" not in text and event_name is None)
    )
    if could_run_git:
        reason = f"guards: {problem}; refusing a command that could run git unchecked"
        if event_name is not None:  # Copilot: its deny answer carries the reason
            return deny("copilot", reason)
        say(reason)
        return BLOCK
    say(f"guards agent-hook: {problem}")
    return HOOK_ERROR


# -- shell lines -----------------------------------------------------------------------


def _pre_shell(harness: str, event: dict[str, Any]) -> int:
    command = tool_command(event)
    if command is None:
        if "git" in jsontext.dumps(event.get("tool_input")).lower():
            return deny(harness, "guards: the shell command in the hook input is unreadable")
        return 0
    if os.environ.get("GUARDS_DISABLE") == "1":
        return 0
    cwd = _shell_cwd(event)
    sid = identify(harness, event)
    rescued: list[str] = []
    dirs = [cwd]
    receipts: list[str] = []
    if guarded_text(command):
        _ask_ahead(command, cwd)
        from guards.protect.guard import guard_line

        try:
            verdict = guard_line(command, cwd)
        finally:
            git.finish_ahead()
        if verdict.deny:
            return deny(harness, verdict.deny)
        rescued, dirs = verdict.rescued, verdict.dirs
        if verdict.rescues:
            receipts = _leave_receipts(harness, event, sid, verdict.rescues)
    _mark_start(event, sid, dirs, rescued, receipts)
    if rescued and harness in CONTEXT_BEFORE:
        return emit(harness, "PreToolUse", additionalContext=rescue_context(rescued))
    for line in rescued:
        say(line)
    return 0


def _ask_ahead(command: str, cwd: str) -> None:
    """A line that starts with a git command that may destroy work, in the event's
    directory: the guard's first query starts now, and git answers it while the shell
    parser and the guard are imported (anything else asks as it goes)."""
    from guards.predict import DESTRUCTIVE_SUBCOMMANDS

    words = command.split(None, 2)
    if len(words) > 1 and words[0] == "git" and words[1] in DESTRUCTIVE_SUBCOMMANDS:
        git.ahead(git.CONTEXT_QUERY, cwd=cwd)


def _shell_cwd(event: dict[str, Any]) -> str:
    """Where the shell line runs: the event's directory, or Gemini's ``dir_path`` in it."""
    cwd = event_cwd(event)
    tool_input = event.get("tool_input")
    where = tool_input.get("dir_path") if isinstance(tool_input, dict) else None
    return os.path.join(cwd, where) if isinstance(where, str) and where else cwd


def _marker_key(event: dict[str, Any]) -> tuple[str, bool] | None:
    """(key, exact): the harness's id of the tool call, else (Gemini: no id) a digest of
    the command and where it runs, which identical commands share (a queue)."""
    use_id = event.get("tool_use_id")
    if isinstance(use_id, str) and use_id:
        return "".join(c if c.isalnum() or c in "-_" else "_" for c in use_id)[:100], True
    command = tool_command(event)
    if command is None:
        return None
    import hashlib

    text = f"{command}\0{os.path.abspath(_shell_cwd(event))}".encode("utf-8", "surrogateescape")
    return f"cmd-{hashlib.sha256(text).hexdigest()[:24]}", False


def _marker_path(event: dict[str, Any], sid: str | None, *, new: bool = False) -> str | None:
    """The start marker of this shell line: ``<sid>.<tool_use_id>.json``; without an id,
    ``<sid>.<digest>.<start ns>-<pid>.json``, and the line's end (``new`` False) takes
    the oldest one of its digest."""
    key = _marker_key(event)
    if sid is None or key is None:
        return None
    ledger = ledger_dir(event_cwd(event))
    if ledger is None:
        return None
    folder = os.path.join(ledger, OBSERVE_DIR)
    name, exact = key
    if exact:
        return os.path.join(folder, f"{sid}.{name}.json")
    if new:
        import time

        return os.path.join(folder, f"{sid}.{name}.{time.time_ns():020d}-{os.getpid()}.json")
    prefix = f"{sid}.{name}."
    try:
        queued = sorted(f for f in os.listdir(folder) if f.startswith(prefix))
    except OSError:
        return None
    return os.path.join(folder, queued[0]) if queued else None


def _leave_receipts(
    harness: str, event: dict[str, Any], sid: str | None, rescues: list[tuple[str, RescueResult]]
) -> list[str]:
    """What was rescued for this line, for the line's own ``guards run`` (the shim) to
    find (guards.protect.receipts); only for a line whose end the hook will see."""
    use_id = event.get("tool_use_id")
    key = use_id if isinstance(use_id, str) and use_id else None
    marker = _marker_key(event)
    if key is None and harness in ("copilot", "droid", "gemini") and marker is not None:
        # No id: a key of this line's own. Copilot's and Droid's shell commands show the
        # session, Gemini's are known by its process (else unidentified, which takes any
        # receipt).
        import time

        key = f"{marker[0]}.{time.time_ns()}-{os.getpid()}"
    if sid is None or key is None or ledger_dir(event_cwd(event)) is None:
        return []
    from guards.errors import GuardsError
    from guards.protect import receipts

    try:
        return receipts.write(sid, key, rescues)
    except (GuardsError, OSError) as e:  # without a receipt the shim rescues again: no loss
        say(f"guards agent-hook: cannot leave the rescue receipt ({first_line(e)})")
        return []


def _mark_start(
    event: dict[str, Any],
    sid: str | None,
    dirs: list[str],
    rescued: list[str],
    receipts: list[str],
) -> None:
    """Remember when the line started: files changed after it are the session's doing.

    The marker's own change time is the threshold, so files and marker are stamped by the
    same clock on the same file system (no skew between ``time.time()`` and the disk).
    """
    path = _marker_path(event, sid, new=True)
    if path is None:
        return
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write(jsontext.dumps({"dirs": dirs, "rescued": rescued, "receipts": receipts}))
    except OSError as e:
        say(f"guards agent-hook: cannot keep the start of the command ({e.strerror})")


def _post_shell(harness: str, event: dict[str, Any]) -> int:
    sid = identify(harness, event)
    if sid is None:
        return 0
    start = _line_start(harness, event, sid)
    if start is None:
        return 0  # no start recorded (or the hook was installed mid-command)
    path, threshold, marker = start
    from guards import fsutil

    fsutil.remove(path)
    _sweep(os.path.dirname(path))
    receipts = marker.get("receipts") if isinstance(marker, dict) else None
    if isinstance(receipts, list) and receipts:
        from guards.protect.receipts import discard

        discard([str(r) for r in receipts])
    dirs = marker.get("dirs") if isinstance(marker, dict) else None
    for directory in dirs if isinstance(dirs, list) else []:
        if isinstance(directory, str):
            _observe(directory, sid, threshold)
    rescued = marker.get("rescued") if isinstance(marker, dict) else None
    if harness not in CONTEXT_BEFORE and isinstance(rescued, list) and rescued:
        # Gemini, Qwen and Droid show the model no context from before the command.
        context = rescue_context([str(r) for r in rescued])
        return emit(harness, str(event.get("hook_event_name")), additionalContext=context)
    return 0


def _line_start(harness: str, event: dict[str, Any], sid: str) -> tuple[str, int, object] | None:
    """(marker path, the line's start in ns, what the marker holds) of this shell line:
    the marker the hook wrote at its start, else the one the shell gate wrote (the raw
    event: guards.integrations.shell_gate), oldest first; None when neither is there."""
    path = _marker_path(event, sid)
    if path is not None:
        try:
            threshold = os.stat(path).st_ctime_ns
            with open(path, encoding="utf-8") as f:
                return path, threshold, jsontext.loads(f.read())
        except (OSError, ValueError):
            pass
    ledger = ledger_dir(event_cwd(event))
    key = _marker_key(event)
    if ledger is None or key is None:
        return None
    from guards.integrations.shell_gate import pending

    for changed, gated_path, raw in pending(os.path.join(ledger, OBSERVE_DIR)):
        try:
            started = jsontext.loads(raw)
        except (ValueError, UnicodeDecodeError, RecursionError):
            continue
        if not isinstance(started, dict):
            continue
        started = as_claude(harness, started)
        if session_of(harness, started) == sid and _marker_key(started) == key:
            return gated_path, changed, {"dirs": [_shell_cwd(started)]}
    return None


def _sweep(directory: str) -> None:
    import time

    limit = time.time() - OBSERVE_MAX_AGE
    try:
        with os.scandir(directory) as entries:
            for entry in entries:
                try:
                    if entry.stat().st_mtime < limit:
                        os.unlink(entry.path)
                except OSError:
                    pass
    except OSError:
        pass


def _observe(directory: str, sid: str, threshold_ns: int) -> None:
    from guards.errors import GuardsError
    from guards.state.workspace import Workspace

    try:
        ws = Workspace.open(cwd=nearest_directory(directory))
        if ws.repo.toplevel_text is None:  # (toplevel, a Path, would import pathlib)
            return
        from guards.state.observation import observe

        observe(ws, sid, threshold_ns)
    except GuardsError as e:
        if "not a git repository" not in str(e).lower():
            say(f"guards agent-hook: cannot observe {directory}: {first_line(e)}")


# -- session events --------------------------------------------------------------------


def _session_start(harness: str, event: dict[str, Any]) -> int:
    sid = identify(harness, event)
    _export_identity(sid)
    if harness == "droid":  # droid exec sends no UserPromptSubmit: the frame comes now
        return frame_event(harness, event, "SessionStart")
    from guards.errors import GuardsError

    try:
        touch(event_cwd(event), sid, label=f"{harness} session")
    except GuardsError as e:  # never blocks the session
        say(f"guards agent-hook: session start: {first_line(e)}")
    if harness == "gemini":  # no session id in its shell commands: known by its process
        _register_process(event_cwd(event), sid)
    return 0


def _export_identity(sid: str | None) -> None:
    """Later shell commands of the session run as the session (shim, git hooks agree)."""
    env_file = os.environ.get("CLAUDE_ENV_FILE")
    if sid is None or not env_file:
        return
    import shlex

    try:
        with open(env_file, "a", encoding="utf-8") as f:
            f.write(f"export GUARDS_SESSION={shlex.quote(sid)}\n")
    except OSError as e:
        say(f"guards agent-hook: cannot write {env_file}: {e.strerror}")


def _register_process(cwd: str, sid: str | None, end: bool = False) -> None:
    """Gemini CLI's process speaks for its session in the commands it runs (see
    guards.state.identity); at the session's end, no longer."""
    from guards.state import identity

    ledger = ledger_dir(cwd)
    if sid is None or ledger is None:
        return
    try:
        if end:
            identity.unregister_harness_process(ledger, sid)
        else:
            identity.register_harness_process(ledger, sid)
    except OSError as e:  # its commands stay unidentified: they own nothing, the safe side
        say(f"guards agent-hook: cannot register the {sid} process: {e.strerror}")


def _persist(ws: Workspace, sid: str) -> None:
    """Commit early, push often: the ending session's own work goes to its WIP ref (and
    to ``rescue.remote`` when set) before the session is marked ended; a persist that
    fails is one line, never a failed end."""
    from guards.protect.persist import persist_session

    result = persist_session(ws, sid)
    if result.failed:
        say(f"guards agent-hook: {result.line()}")


def _turn_end(harness: str, event: dict[str, Any]) -> int:
    """``persist.on_stop``: commit early, push often, at every turn's end. Always exit 0:
    a Stop hook that fails (exit 2) would keep the agent going."""
    from guards.errors import GuardsError
    from guards.git.repo import NotARepositoryError
    from guards.state.workspace import Workspace

    sid = identify(harness, event)
    if sid is None:
        return 0
    try:
        ws = Workspace.open(cwd=event_cwd(event))
        if ws.config.get("persist.on_stop"):
            _persist(ws, sid)
    except NotARepositoryError:
        pass
    except GuardsError as e:
        say(f"guards agent-hook: cannot persist session {sid}: {first_line(e)}")
    return 0


def _session_end(harness: str, event: dict[str, Any]) -> int:
    import time

    from guards.errors import GuardsError
    from guards.git.repo import NotARepositoryError
    from guards.state.workspace import Workspace

    sid = identify(harness, event)
    if sid is None:
        return 0
    if harness == "droid":
        from guards.integrations.droid_hooks import drop_flag

        drop_flag(event)
    if harness == "gemini":
        _register_process(event_cwd(event), sid, end=True)
    try:
        from guards.state.ledger import op_end

        ws = Workspace.open(cwd=event_cwd(event))
        _persist(ws, sid)
        # ends a session that has a record
        ws.ledger.append([op_end(sid, time.time())], durable=False)
    except NotARepositoryError:
        return 0
    except GuardsError as e:
        say(f"guards agent-hook: cannot end session {sid}: {first_line(e)}")
        return HOOK_ERROR
    return 0
