"""The blast radius of shell commands that destroy files without git (``rm``, ``find
-delete``, ``mv``/``cp`` onto a file, ``truncate``, ``>``, ``rsync --delete``, ...): the
dirty paths of one work tree inside their reach (:mod:`guards.predict.file_reach`).

What such a command destroys is the work tree's content, whatever git knows of it: a
tracked file whose content differs from the index (``worktree``; a file whose content is
staged as it is loses nothing, the index keeps it), an untracked file (``untracked``), an
ignored file (``ignored``). Committed content is never lost to them.
"""

from __future__ import annotations

import os

from guards.git.dirty import read_dirty
from guards.predict.blast.radius import BlastRadius, Loss, LossKind

TYPE_CHECKING = False  # see guards.values: these imports cost start-up time
if TYPE_CHECKING:
    from guards.git.repo import Repo
    from guards.predict.file_reach import Reach


def inside(path: str, top: str) -> str | None:
    """``path`` relative to ``top`` ("" for ``top`` itself); None when outside it."""
    rel = os.path.relpath(path, top)
    if rel == ".":
        return ""
    if rel == ".." or rel.startswith("../"):
        return None
    return rel


def file_radius(repo: Repo, reach: list[Reach]) -> BlastRadius:
    """The dirty paths of ``repo``'s work tree that ``reach`` covers (read with one
    ``git status`` limited to the reach)."""
    top = repo.toplevel_text
    if top is None:
        return BlastRadius(worktree=None, losses=[])
    # What each reach covers, relative to the top: (path, subtree); "" is everything.
    covered: list[tuple[str, bool]] = []
    for r in reach:
        rel = inside(r.path, top)
        if rel is None:
            if r.subtree and inside(top, r.path) is not None:
                covered.append(("", True))  # the work tree lies inside the reach
            continue
        if rel == ".git" or rel.startswith(".git/"):
            continue  # git's own files, not the work tree's content
        covered.append((rel, r.subtree or rel == ""))
    if not covered:
        return BlastRadius(worktree=top, losses=[])
    whole = any(rel == "" for rel, _ in covered)
    pathspecs = None if whole else sorted({rel for rel, _ in covered})
    losses: dict[str, set[str]] = {}
    for d in read_dirty(repo, ignored=True, pathspecs=pathspecs):
        if d.ignored:
            kind = LossKind.IGNORED
        elif d.untracked:
            kind = LossKind.UNTRACKED
        elif d.xy[1] == "." or not os.path.lexists(os.path.join(top, d.path)):
            continue  # the index holds this content (or nothing is on disk to lose)
        else:
            kind = LossKind.WORKTREE
        for path in _clip(d.path, covered):
            losses.setdefault(path, set()).add(kind)
    found = [Loss(p, frozenset(kinds)) for p, kinds in sorted(losses.items())]
    return BlastRadius(worktree=top, losses=found)


def _clip(entry: str, covered: list[tuple[str, bool]]) -> list[str]:
    """The part of a status entry the reach covers: git names a wholly untracked or
    ignored directory as one ``dir/`` entry, of which a command may reach one file."""
    if not entry.endswith("/"):
        return [entry] if any(_covers(rel, sub, entry) for rel, sub in covered) else []
    directory = entry.rstrip("/")
    out = []
    for rel, sub in covered:
        if _covers(rel, sub, directory):
            return [entry]
        if rel.startswith(directory + "/"):
            out.append(rel)
    return out


def _covers(rel: str, subtree: bool, path: str) -> bool:
    if rel == "" or rel == path:
        return True
    return subtree and path.startswith(rel + "/")
