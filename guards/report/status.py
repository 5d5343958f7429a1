"""Status: every dirty path with its owner, its class and since when it is so."""

from __future__ import annotations

import os
import time

from guards import output
from guards.git.dirty import DirtyPath, read_dirty
from guards.state.attribution import Owner
from guards.state.workspace import Workspace, release_stale
from guards.values import Value

TYPE_CHECKING = False  # see guards.values: these imports cost start-up time
if TYPE_CHECKING:
    from typing import Any


class Row(Value):
    """A dirty path, its owner, and since when it is what it is."""

    __slots__ = ("dirty", "owner", "since", "since_source")

    def __init__(
        self, dirty: DirtyPath, owner: Owner, since: float | None, since_source: str | None
    ) -> None:
        self.dirty = dirty
        self.owner = owner
        #: when the path became what it is: recorded time, else its mtime (None if deleted)
        self.since = since
        self.since_source = since_source


def collect(
    ws: Workspace,
    ignored: bool = False,
    dirty: list[DirtyPath] | None = None,
    partial: bool = False,
) -> tuple[list[Row], str | None]:
    """The rows; ``partial``: ``dirty`` is not every dirty path (a pathspec limited it),
    so attributions of paths missing from it are not taken for clean."""
    if dirty is None:
        dirty = read_dirty(ws.repo, ignored=ignored)
    data, problem = ws.read_ledger()
    owners = ws.owners(dirty, data)
    if data is not None and not partial:
        release_stale(ws, data, dirty, ignored_listed=ignored)
    top = ws.repo.worktree_key
    rows = []
    for d, owner in zip(dirty, owners, strict=True):
        if owner.recorded is not None:
            rows.append(Row(d, owner, owner.recorded, "recorded"))
            continue
        try:
            rows.append(Row(d, owner, os.lstat(os.path.join(top, d.path)).st_mtime, "mtime"))
        except OSError:
            rows.append(Row(d, owner, None, None))
    return rows, str(problem) if problem else None


def status_document(ws: Workspace, rows: list[Row], problem: str | None) -> dict[str, Any]:
    now = time.time()
    return {
        "repository": ws.repo.common_dir_text,
        "worktree": ws.repo.worktree_key,
        "caller": ws.caller,
        "ledger": {"ok": problem is None, "problem": problem},
        "paths": [
            {
                "path": r.dirty.path,
                "state": r.dirty.xy,
                "staged": r.dirty.staged,
                "unstaged": r.dirty.unstaged,
                "untracked": r.dirty.untracked,
                "ignored": r.dirty.ignored,
                "unmerged": r.dirty.unmerged,
                "owner": r.owner.session,
                "class": r.owner.ownership,
                "since": output.iso(r.since),
                "since_source": r.since_source,
                "age_seconds": None if r.since is None else round(max(0.0, now - r.since), 3),
            }
            for r in rows
        ],
    }
