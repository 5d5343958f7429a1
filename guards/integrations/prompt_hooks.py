"""A turn's start: the session touched and the frame (what the turn inherits) given as
the turn's context. The installed hook sends a prompt here without loading the other
events' handlers (guards.commands.agent_hook); a prompt's git status runs while this
loads (guards.integrations.hook_start)."""

from __future__ import annotations

import os

from guards.errors import first_line
from guards.integrations.hook_answers import answer_event, emit, identify, ledger_dir, say
from guards.integrations.hook_start import event_cwd, frame_text
from guards.state.observation import OBSERVE_DIR

TYPE_CHECKING = False  # see guards.values: these imports cost start-up time
if TYPE_CHECKING:
    from typing import Any

    from guards.git.repo import Discovery, Repo
    from guards.integrations.hook_start import Started


def answer_prompt(harness: str, started: Started) -> int:
    """The answer to a prompt read as Claude Code's, its git calls running; never raises."""
    event = started.event
    name = str(event.get("hook_event_name"))
    return answer_event(harness, name, event, lambda: frame_event(harness, event, name, started))


def frame_event(
    harness: str, event: dict[str, Any], name: str, started: Started | None = None
) -> int:
    """The frame as the turn's context; ``started``: its git calls, running already."""
    sid = identify(harness, event)
    cwd = event_cwd(event)
    from guards.errors import GuardsError
    from guards.integrations.hook_start import start_calls

    try:  # (git runs while the session is touched and the frame's modules load)
        started = started or start_calls(event)
        repo = touch(cwd, sid, label=f"{harness} session", discovery=started.discovery)
        text = frame_text(cwd, sid, repo, started)
    except GuardsError as e:  # the frame never blocks the turn it frames
        say(f"guards agent-hook: frame: {first_line(e)}")
        return 0
    finally:  # waited for, whatever happened (again: the same answers)
        if started is not None:
            started.finish()
    if not text:
        return 0
    if harness == "droid" and name == "SessionStart":
        from guards.integrations.droid_hooks import mark_framed

        mark_framed(event)
    return emit(harness, name, additionalContext=text)


def touch(cwd: str, sid: str | None, label: str, discovery: Discovery | None = None) -> Repo | None:
    """The session is alive (one journal record); returns the repository it touched.
    ``discovery``: that repository's, started in ``cwd`` already."""
    if sid is None:
        return None
    import time

    from guards.git.repo import NotARepositoryError
    from guards.state.workspace import Workspace, touch_record

    try:
        # The settings only if the ledger must be locked (as an edit's record).
        ws = Workspace.open(cwd=cwd, discovery=discovery, settings_when_asked=True)
    except NotARepositoryError:
        return None
    # One journal record: the label and worktree fill only empty fields.
    ws.ledger.append([touch_record(sid, time.time(), label, ws.repo.toplevel_text)], durable=False)
    ledger = ledger_dir(cwd, ws.repo)
    if ledger is not None:  # the shell gate answers only where the markers' folder is
        os.makedirs(os.path.join(ledger, OBSERVE_DIR), exist_ok=True)
    return ws.repo
