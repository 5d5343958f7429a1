"""What a rescue is given and gives back, and how it fails."""

from __future__ import annotations

from guards.errors import RefusedError
from guards.values import Value

#: The override named when a rescue cannot be completed: run, saying what was lost.
OVERRIDE = "GUARDS_POLICY=warn"


class AtRiskPath(Value):
    """A path whose work a command would destroy, and who wrote it."""

    __slots__ = ("looked", "owner", "path")

    def __init__(
        self, path: str, owner: str | None, looked: tuple[int, int, int, int] | None = None
    ) -> None:
        #: repository-relative path in the work tree (tracked, untracked or ignored; may
        #: be deleted on disk). A directory stands for every file under it.
        self.path = path
        #: owning session id; None = unknown owner
        self.owner = owner
        #: (mode, size, mtime_ns, inode) of the ``lstat`` it was judged by, if one was
        #: kept: the rescue sorts and sizes it by that one (its content is read afresh)
        self.looked = looked


class RescueFailedError(RefusedError):
    """A rescue could not be completed and verified: nothing points at it."""


class RescueResult(Value):
    """One rescue ref made (or one commit kept) and what it holds."""

    __slots__ = (
        "commit",
        "index_commit",
        "label",
        "local_only",
        "owner",
        "paths",
        "push",
        "push_detail",
        "ref",
        "remote",
        "repository",
    )

    def __init__(
        self,
        ref: str,
        commit: str,
        owner: str | None,
        paths: list[str],
        push: str | None,
        push_detail: str = "",
        remote: str | None = None,
        local_only: list[str] | None = None,
        label: str | None = None,
        index_commit: str | None = None,
        repository: str | None = None,
    ) -> None:
        self.ref = ref
        self.commit = commit
        self.owner = owner
        self.paths = paths
        #: None when no remote is configured (or the commit stays local); else a
        #: PushOutcome
        self.push = push
        self.push_detail = push_detail
        self.remote = remote
        #: paths kept out of what was pushed (ignored files, secrets): local-only
        self.local_only = [] if local_only is None else local_only
        #: for a kept commit: what it was ("stash@{0}", "branch topic")
        self.label = label
        #: the commit holding the index state (second parent), when paths were rescued
        self.index_commit = index_commit
        #: the submodule (its directory, relative to the outer work tree) whose own
        #: repository holds this rescue; None for the repository the command runs in
        self.repository = repository

    __hash__ = None  # type: ignore[assignment]  # it holds lists: never hashed

    def inside(self, root: str) -> RescueResult:
        """The same rescue, made in the submodule at ``root`` of the repository."""
        return RescueResult(
            self.ref,
            self.commit,
            self.owner,
            self.paths,
            self.push,
            self.push_detail,
            self.remote,
            self.local_only,
            self.label,
            self.index_commit,
            f"{root}/{self.repository}" if self.repository else root,
        )
