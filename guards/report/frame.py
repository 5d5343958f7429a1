"""The frame: what a new agent turn inherits, in a few lines for its prompt.

It sits on the agent's hot path, so it costs one ``git status`` plus one ledger read,
never takes a lock, never writes, and imports nothing it does not need (the config
files, and with them ``platformdirs``, are read only when there is something to show).
"""

from __future__ import annotations

import os
import time

from guards.git.dirty import DirtyPath, parse_porcelain_v2, read_dirty
from guards.git.repo import Repo
from guards.output import age, iso, show_path
from guards.report.checkpoints import (
    LastCheckpoint,
    dead_sessions_checkpoints,
    latest_checkpoints,
)
from guards.state.attribution import UNKNOWN_OWNER, Owner, Ownership, classify
from guards.state.ledger import Ledger, LedgerData

TYPE_CHECKING = False  # see guards.values: these imports cost start-up time
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

    from guards.git.process import Pending
    from guards.state.ledger import LedgerUnreadableError

    #: A read of the ledger: its data, or why it cannot be trusted.
    Peeked = tuple[LedgerData | None, LedgerUnreadableError | None]

CLOSING = (
    "You did not necessarily make these. Do not assume they are yours, and do not\n"
    "assume they are someone else's.]"
)
#: Spaces between the longest shown path and the owner column.
GAP = 3
#: How many dead sessions' checkpoints the frame names.
MAX_CHECKPOINTS = 3


class Entry:
    """One dirty path and its owner (a plain class: dataclasses cost start-up time)."""

    __slots__ = ("dirty", "owner")

    def __init__(self, dirty: DirtyPath, owner: Owner) -> None:
        self.dirty = dirty
        self.owner = owner


class Frame:
    """What a turn inherits: the dirty paths with owners, for ``caller``, and where
    sessions that stopped without ending last checkpointed their work."""

    __slots__ = ("caller", "checkpoints", "entries", "ledger_problem")

    def __init__(
        self,
        entries: list[Entry],
        caller: str | None,
        ledger_problem: str | None,
        checkpoints: list[LastCheckpoint] | None = None,
    ) -> None:
        self.entries = entries
        self.caller = caller
        #: Why owners are all unknown (an unreadable ledger), else None.
        self.ledger_problem = ledger_problem
        #: The last checkpoint of each dead session, newest first.
        self.checkpoints = checkpoints or []


def collect(repo: Repo, caller: str | None, status: Pending | None = None) -> Frame:
    """The dirty paths of the caller's work tree with their owners (one ``git status``;
    ``status``: that one, started already by :func:`guards.git.dirty.start_reading`:
    the ledger is read while git still runs, the longer of the two)."""
    if status is not None:
        peeked = _peek(repo)
        done = status.result(check=False)
        if done.returncode == 0:
            return attribute(repo, parse_porcelain_v2(done.stdout), caller, peeked)
        # (a submodule git cannot read fails the status: read_dirty copes)
        return attribute(repo, read_dirty(repo), caller, peeked)
    return attribute(repo, read_dirty(repo), caller)


def _peek(repo: Repo) -> Peeked:
    # Never the lock, never keeping a corrupt ledger aside: the frame only looks.
    # The rescue log too: the last checkpoints of dead sessions come from it.
    return Ledger(repo.ledger_dir_text).peek(repo.toplevel_text, rescues=True)


def attribute(
    repo: Repo,
    dirty: list[DirtyPath],
    caller: str | None,
    peeked: Peeked | None = None,
) -> Frame:
    """Owners for dirty paths already read (one ledger read, no lock; ``peeked``: that
    read, done already)."""
    if not dirty:
        return Frame([], caller, None)
    data, problem = _peek(repo) if peeked is None else peeked
    records: Mapping[str, Any] = data.paths.get(repo.worktree_key, {}) if data else {}
    top = repo.worktree_key
    entries = []
    for d in dirty:
        record = records.get(d.path)
        owner = (
            classify(record, os.path.join(top, d.path), caller, repo.object_format)
            if record is not None
            else UNKNOWN_OWNER
        )
        entries.append(Entry(d, owner))
    checkpoints = _dead_checkpoints(repo, data) if data is not None else []
    return Frame(entries, caller, str(problem) if problem is not None else None, checkpoints)


def _dead_checkpoints(repo: Repo, data: LedgerData) -> list[LastCheckpoint]:
    """Only when the log holds checkpoints at all are settings read (the TTL)."""
    if not latest_checkpoints(data):
        return []
    from guards.config import KEYS, Config
    from guards.errors import GuardsError

    try:
        ttl = float(Config(repo.ledger_dir_text).get("session.ttl"))
    except GuardsError:
        ttl = float(KEYS["session.ttl"].default)
    return dead_sessions_checkpoints(data, ttl)


def owner_text(owner: Owner, caller: str | None, now: float) -> str:
    """``session pod-architect, 2 min ago`` / ``owner unknown``."""
    if owner.ownership == Ownership.UNKNOWN or owner.session is None:
        return "owner unknown"
    who = "your session" if owner.session == caller else "session"
    when = f", {age(owner.recorded, now)}" if owner.recorded is not None else ""
    return f"{who} {owner.session}{when}"


def render(frame: Frame, max_paths: int, now: float | None = None) -> str:
    """The frame text; empty when nothing is dirty."""
    if not frame.entries:
        return ""
    now = time.time() if now is None else now
    n = len(frame.entries)
    shown = frame.entries[:max_paths]
    paths = [show_path(e.dirty.path) for e in shown]
    width = max(len(p) for p in paths) + GAP
    noun = "change" if n == 1 else "changes"
    lines = [f"[Workspace: {n} uncommitted {noun} present before this turn began \u2014"]
    for entry, path in zip(shown, paths, strict=True):
        lines.append(
            f"{entry.dirty.state} {path.ljust(width)}({owner_text(entry.owner, frame.caller, now)})"
        )
    if n > len(shown):
        lines.append(f" ... and {n - len(shown)} more (`guards status` lists them all)")
    for c in frame.checkpoints[:MAX_CHECKPOINTS]:
        lines.append(
            f"Session {c.session} stopped without ending; its last checkpoint: {c.ref} "
            f"({age(c.time, now)})"
        )
    if len(frame.checkpoints) > MAX_CHECKPOINTS:
        lines.append(f" ... and {len(frame.checkpoints) - MAX_CHECKPOINTS} more (guards doctor)")
    lines.append(CLOSING)
    return "\n".join(lines) + "\n"


def as_json(repo: Repo | None, frame: Frame | None, max_paths: int) -> dict[str, Any]:
    """The ``--json`` document (see the README's schema)."""
    now = time.time()
    entries = frame.entries if frame is not None else []
    return {
        "repository": repo.common_dir_text if repo is not None else None,
        "worktree": repo.toplevel_text if repo is not None else None,
        "caller": frame.caller if frame is not None else None,
        "ledger_problem": frame.ledger_problem if frame is not None else None,
        "total": len(entries),
        "shown": min(len(entries), max_paths),
        "paths": [
            {
                "path": e.dirty.path,
                "state": e.dirty.xy,
                "owner": e.owner.session,
                "class": e.owner.ownership,
                "recorded": iso(e.owner.recorded),
                "age_seconds": (
                    None if e.owner.recorded is None else round(max(0.0, now - e.owner.recorded), 3)
                ),
            }
            for e in entries[:max_paths]
        ],
        "checkpoints": [
            {
                "session": c.session,
                "ref": c.ref,
                "commit": c.commit,
                "time": iso(c.time),
                "age_seconds": round(max(0.0, now - c.time), 3),
            }
            for c in (frame.checkpoints if frame is not None else [])
        ],
        "text": render(frame, max_paths, now) if frame is not None else "",
    }


def configured_max_paths(repo: Repo | None) -> int:
    """``frame.max_paths`` (environment, repository file, user file); its default, with
    one line on stderr, when the setting is unreadable or there is no repository."""
    from guards.config import KEYS, Config
    from guards.errors import GuardsError

    default = int(KEYS["frame.max_paths"].default)
    if repo is None:
        return default
    try:
        return int(Config(repo.ledger_dir_text).get("frame.max_paths"))
    except GuardsError as e:
        from guards.output import error

        error(f"frame: {e}; listing up to {default} paths")
        return default
