"""What a rescue is given and gives back, and how it fails."""

from __future__ import annotations

from dataclasses import dataclass, field

from guards.errors import RefusedError

#: The override named when a rescue cannot be completed: run, saying what was lost.
OVERRIDE = "GUARDS_POLICY=warn"


@dataclass(frozen=True)
class AtRiskPath:
    #: repository-relative path in the work tree (tracked, untracked or ignored; may be
    #: deleted on disk). A directory stands for every file under it.
    path: str
    #: owning session id; None = unknown owner
    owner: str | None


class RescueFailedError(RefusedError):
    """A rescue could not be completed and verified: nothing points at it."""


@dataclass(frozen=True)
class RescueResult:
    ref: str
    commit: str
    owner: str | None
    paths: list[str]
    #: None when no remote is configured (or the commit stays local); else a PushOutcome
    push: str | None
    push_detail: str = ""
    remote: str | None = None
    #: paths kept out of what was pushed (ignored files, secrets): local-only
    local_only: list[str] = field(default_factory=list)
    #: for a kept commit: what it was ("stash@{0}", "branch topic")
    label: str | None = None
    #: the commit holding the index state (second parent), when paths were rescued
    index_commit: str | None = None
    #: the submodule (its directory, relative to the outer work tree) whose own
    #: repository holds this rescue; None for the repository the command runs in
    repository: str | None = None
