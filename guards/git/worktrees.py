"""The worktrees git knows of: ``git worktree list --porcelain -z``."""

from __future__ import annotations

import os

from guards.git.names import ObjectId, RefName
from guards.git.objects import is_zero_oid
from guards.values import Value

TYPE_CHECKING = False  # see guards.values: these imports cost start-up time
if TYPE_CHECKING:
    from guards.git.repo import Repo


#: The question :func:`parse_worktree_list` reads git's answer to.
LIST_ARGS = ("worktree", "list", "--porcelain", "-z")


class GitWorktree(Value):
    """One worktree as git lists it; the first one listed is the main worktree."""

    __slots__ = ("bare", "branch", "head", "is_main", "locked", "path", "prunable")

    def __init__(
        self,
        path: str,
        head: ObjectId | None,
        branch: RefName | None,
        bare: bool,
        locked: str | None,
        prunable: str | None,
        is_main: bool,
    ) -> None:
        self.path = path
        #: None when unborn (git lists the zero id) or bare
        self.head = head
        #: ``refs/heads/...``; None when detached or bare
        self.branch = branch
        self.bare = bare
        #: the lock reason ("" when locked without one); None when not locked
        self.locked = locked
        #: why git would prune it (its directory is gone); None when it would not
        self.prunable = prunable
        self.is_main = is_main


def parse_worktree_list(data: bytes) -> list[GitWorktree]:
    """Records of ``git worktree list --porcelain -z``: attribute lines, each record ended
    by an empty one."""
    out: list[GitWorktree] = []
    current: dict[str, str] = {}

    def flush() -> None:
        if not current:
            return
        head = current.get("HEAD") or None
        out.append(
            GitWorktree(
                path=current.get("worktree", ""),
                head=None if head is None or is_zero_oid(head) else ObjectId(head),
                branch=RefName(current["branch"]) if "branch" in current else None,
                bare="bare" in current,
                locked=current.get("locked"),
                prunable=current.get("prunable"),
                is_main=not out,
            )
        )
        current.clear()

    for record in data.split(b"\0"):
        if not record:
            flush()
            continue
        name, _, value = record.partition(b" ")
        current[name.decode("ascii", "replace")] = os.fsdecode(value)
    flush()
    return out


def list_worktrees(repo: Repo) -> list[GitWorktree]:
    """Every worktree of ``repo``'s repository; the first one is the main worktree."""
    return parse_worktree_list(repo.run(list(LIST_ARGS)).stdout)
