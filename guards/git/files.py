"""Walking a work tree's directory the way git sees its files.

git stores files and symlinks, never directories: a symlink to a directory is one
entry (never followed), and a ``.git`` entry is never part of the tree. A *directory*
named ``.git`` is a repository's store; a *file* named ``.git`` is a gitdir link (a
submodule's or linked worktree's pointer, or junk) that git can never store. A
directory holding either is a nested repository: its files belong to it, not to the
repository around it.
"""

from __future__ import annotations

import os
import stat

from guards.fsutil import nearest_directory

TYPE_CHECKING = False  # see guards.values: these imports cost start-up time
if TYPE_CHECKING:
    from collections.abc import Iterator

DOT_GIT = ".git"


def holds_repository(directory: str | os.PathLike[str]) -> bool:
    """Whether a directory is a repository's work tree (or a submodule's): it holds a
    ``.git`` directory or gitdir file (even a dangling one)."""
    return os.path.lexists(os.path.join(directory, DOT_GIT))


def find_repository(start: str) -> tuple[str, str] | None:
    """(work tree top, common git dir) of the checkout holding ``start`` (which need not
    exist yet), found by walking up to its ``.git`` without running git: a ``.git``
    directory, or a gitdir file (``gitdir: <path>``, a linked worktree's or a
    submodule's), whose ``commondir`` names the repository the worktrees share. None
    when there is none, or its gitdir file cannot be read. The top is a real path.

    For hot paths (the hooks) that must not start git; it does not know what git's
    discovery also honours (``GIT_DIR``, ``GIT_CEILING_DIRECTORIES``, safe.directory)."""
    path = nearest_directory(os.path.abspath(start))
    if not os.path.isdir(path):
        return None
    while True:
        dotgit = os.path.join(path, DOT_GIT)
        git_dir: str | None = None
        if os.path.isdir(dotgit):
            git_dir = dotgit
        elif os.path.isfile(dotgit):
            try:
                with open(dotgit, encoding="utf-8") as f:
                    first = f.readline().strip()
            except OSError:
                return None
            if first.startswith("gitdir:"):
                git_dir = os.path.normpath(os.path.join(path, first[7:].strip()))
        if git_dir is not None:
            common = git_dir
            try:
                with open(os.path.join(git_dir, "commondir"), encoding="utf-8") as f:
                    common = os.path.normpath(os.path.join(git_dir, f.read().strip()))
            except OSError:
                pass
            return os.path.realpath(path), common
        parent = os.path.dirname(path)
        if parent == path:
            return None
        path = parent


def walk_files(
    top: str | os.PathLike[str], start: str, *, enter_repositories: bool, sort: bool = False
) -> Iterator[tuple[str, bool]]:
    """``(path, is_repository)`` for everything git could store below ``top/start``:
    paths relative to ``top`` with ``/`` separators, ``.git`` entries left out.

    A directory below ``start`` holding a ``.git`` is a nested repository: it is
    yielded as ``(dir, True)``, and then entered (its files yielded like any others)
    only when ``enter_repositories``. ``sort`` yields each directory's entries in name
    order (for fingerprints); otherwise in the file system's order.
    """
    top = os.fspath(top)
    base = os.path.join(top, start) if start else top
    for dirpath, dirnames, filenames in os.walk(base):
        if sort:
            dirnames.sort()
            filenames.sort()
        rel = os.path.relpath(dirpath, top).replace(os.sep, "/")
        prefix = "" if rel == "." else rel + "/"
        if DOT_GIT in dirnames:
            dirnames.remove(DOT_GIT)
        for name in list(dirnames):
            full = os.path.join(dirpath, name)
            if os.path.islink(full):
                dirnames.remove(name)
                filenames.append(name)  # a symlink is a file to git, never followed
            elif holds_repository(full):
                yield prefix + name, True
                if not enter_repositories:
                    dirnames.remove(name)
        if sort:
            filenames.sort()
        for name in filenames:
            if name != DOT_GIT:
                yield prefix + name, False


def is_regular_file(path: str | os.PathLike[str]) -> bool:
    """A regular file, not following symlinks (a FIFO, socket or device is never opened)."""
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


def special_kind(path: str | os.PathLike[str]) -> str | None:
    """ "FIFO", "socket" or "device" when ``path`` is one (opening it could block
    forever, and it holds no content to keep); None otherwise."""
    try:
        mode = os.lstat(path).st_mode
    except OSError:
        return None
    return special_mode_kind(mode)


def special_mode_kind(mode: int) -> str | None:
    if stat.S_ISFIFO(mode):
        return "FIFO"
    if stat.S_ISSOCK(mode):
        return "socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "device"
    return None
