"""Merging without a checkout: ``git merge-tree --write-tree`` (git >= 2.38) computes the
merge in the object store, ``commit-tree`` makes the merge commit, and a branch moves
only by ``update-ref <ref> <new> <old>``, a compare-and-swap."""

from __future__ import annotations

import os

from guards.git import process as git
from guards.git.names import ObjectId, RefName
from guards.values import Value

TYPE_CHECKING = False  # see guards.values: these imports cost start-up time
if TYPE_CHECKING:
    from guards.git.repo import Repo

#: ``merge-tree --write-tree`` came in git 2.38.
MERGE_TREE_GIT = (2, 38)


class MergeTree(Value):
    """What merging two commits gives: the result's tree and the conflicting paths."""

    __slots__ = ("conflicts", "tree")

    def __init__(self, tree: ObjectId, conflicts: list[str]) -> None:
        #: the merged tree (with conflict markers in it when there are conflicts)
        self.tree = tree
        self.conflicts = conflicts

    @property
    def clean(self) -> bool:
        return not self.conflicts


def merge_tree(repo: Repo, ours: str, theirs: str) -> MergeTree:
    """Merge ``theirs`` into ``ours`` in the object store (no index, no work tree).

    Raises :class:`git.GitError` when git cannot merge them at all (unrelated
    histories, a missing object).
    """
    args = ["merge-tree", "--write-tree", "-z", "--name-only", "--no-messages", ours, theirs]
    res = repo.run(args, check=False)
    if res.returncode not in (0, 1):
        raise git.GitError(args, res.returncode, res.stderr)
    fields = git.zsplit(res.stdout)
    if not fields:
        raise git.GitError(args, res.returncode, b"no tree in merge-tree's answer")
    conflicts = [os.fsdecode(f) for f in fields[1:] if f]
    if res.returncode == 1 and not conflicts:
        raise git.GitError(args, res.returncode, b"conflicts without conflicting paths")
    return MergeTree(ObjectId(fields[0].decode("ascii")), list(dict.fromkeys(conflicts)))


def changed_paths(repo: Repo, old: str, new: str) -> list[str]:
    """Paths whose content or mode differs between two commits (or trees)."""
    res = repo.run(["diff-tree", "-r", "-z", "--name-only", "--no-renames", old, new])
    return [os.fsdecode(p) for p in git.zsplit(res.stdout)]


def is_ancestor(repo: Repo, ancestor: str, commit: str) -> bool:
    """:func:`guards.git.history.ancestry`, where git failing is an error."""
    from guards.git.history import ancestry

    return bool(ancestry(repo.run, ancestor, commit, strict=True))


def rev(repo: Repo, name: str) -> ObjectId | None:
    """The commit ``name`` names, or None."""
    res = repo.run(["rev-parse", "--verify", "-q", f"{name}^{{commit}}"], check=False)
    return ObjectId(res.stdout.decode().strip()) if res.returncode == 0 else None


def commit_merge(repo: Repo, tree: str, parents: list[str], message: str) -> ObjectId:
    """The merge commit, under the user's own identity (it goes on their branch); no
    hooks run."""
    args = [*git.NO_HOOKS, "commit-tree", tree]
    for p in parents:
        args += ["-p", p]
    res = repo.run(
        [*args, "-F", "-"], stdin=message.encode("utf-8", "surrogateescape"), readonly=False
    )
    return ObjectId(res.stdout.decode().strip())


def committer_known(repo: Repo) -> bool:
    """Whether git knows who commits here (``user.name``/``user.email`` or the like)."""
    return repo.run(["var", "GIT_COMMITTER_IDENT"], check=False).returncode == 0


def move_ref(repo: Repo, ref: RefName, new: str, old: str, message: str) -> bool:
    """``update-ref ref new old``: moves ``ref`` only if it still holds ``old``."""
    res = repo.run(
        [*git.NO_HOOKS, "update-ref", "-m", message, ref, new, old], check=False, readonly=False
    )
    return res.returncode == 0


def delete_ref(repo: Repo, ref: RefName, old: str) -> bool:
    """Delete ``ref`` only if it still holds ``old``."""
    res = repo.run([*git.NO_HOOKS, "update-ref", "-d", ref, old], check=False, readonly=False)
    return res.returncode == 0


def switch_checkout(worktree: str, old: str, new: str) -> git.Result:
    """Bring a checkout's index and files from commit ``old`` to ``new`` as a
    fast-forward ``git merge`` does (``read-tree -m -u``: local changes to paths that do
    not change are kept; git refuses, changing nothing, when one would be overwritten)."""
    return git.run(["read-tree", "-m", "-u", old, new], cwd=worktree, check=False, readonly=False)
