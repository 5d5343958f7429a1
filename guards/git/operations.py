"""Operations in progress (merge, rebase, cherry-pick, revert, am, bisect), read from the
marker files git leaves in the git directory while one is stopped."""

from __future__ import annotations

import os

#: Files naming the commit an operation in progress brings in (its "theirs" side).
INCOMING_HEADS = ("MERGE_HEAD", "CHERRY_PICK_HEAD", "REBASE_HEAD")
#: Where a stopped ``--autostash`` keeps the local changes: in no ref at all.
AUTOSTASH_FILES = ("rebase-merge/autostash", "rebase-apply/autostash", "MERGE_AUTOSTASH")
#: How a person finishes each operation.
FINISH = {
    "rebase": "git rebase --continue, or git rebase --abort",
    "am": "git am --continue, or git am --abort",
    "merge": "git merge --continue, or git merge --abort",
    "cherry-pick": "git cherry-pick --continue, or git cherry-pick --abort",
    "revert": "git revert --continue, or git revert --abort",
    "bisect": "git bisect reset",
}


def _exists(git_dir: str, name: str) -> bool:
    return os.path.exists(os.path.join(git_dir, name))


def _sequencer_operation(git_dir: str) -> str | None:
    """A multi-commit cherry-pick or revert stopped between commits leaves only
    ``sequencer/``; its todo list says which of the two it is."""
    try:
        with open(os.path.join(git_dir, "sequencer", "todo"), "rb") as f:
            first = f.readline().split(maxsplit=1)
    except OSError:
        return "cherry-pick" if _exists(git_dir, "sequencer") else None
    if first and first[0] in (b"revert", b"r"):
        return "revert"
    return "cherry-pick"


def in_progress(git_dir: str) -> list[str]:
    """Every operation stopped in this git directory (a worktree's own git dir)."""
    found: list[str] = []
    if _exists(git_dir, "rebase-merge"):
        found.append("rebase")
    if _exists(git_dir, "rebase-apply"):
        found.append("am" if _exists(git_dir, "rebase-apply/applying") else "rebase")
    if _exists(git_dir, "MERGE_HEAD"):
        found.append("merge")
    picking = _exists(git_dir, "CHERRY_PICK_HEAD")
    reverting = _exists(git_dir, "REVERT_HEAD")
    if not (picking or reverting):
        sequencer = _sequencer_operation(git_dir)
        picking = sequencer == "cherry-pick"
        reverting = sequencer == "revert"
    if picking:
        found.append("cherry-pick")
    if reverting:
        found.append("revert")
    if _exists(git_dir, "BISECT_LOG"):
        found.append("bisect")
    return found


def rebase_file(git_dir: str, name: str) -> str | None:
    """A stopped rebase's file ``name`` (``head-name``: the branch being rebased,
    ``orig-head``: its tip before), from ``rebase-merge/`` or else ``rebase-apply/``;
    None when neither holds one that can be read."""
    for directory in ("rebase-merge", "rebase-apply"):
        try:
            with open(os.path.join(git_dir, directory, name), encoding="utf-8") as f:
                return f.read().strip()
        except (OSError, UnicodeDecodeError):
            continue
    return None


def incoming_heads(git_dir: str) -> list[str]:
    """The commits the operations in progress bring in (MERGE_HEAD may name several)."""
    oids: list[str] = []
    for name in INCOMING_HEADS:
        try:
            with open(os.path.join(git_dir, name), encoding="ascii") as f:
                oids += f.read().split()
        except (OSError, ValueError):
            continue
    return oids
