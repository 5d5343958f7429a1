"""The dirty set of a work tree, read from ``git status --porcelain=v2 -z``.

Reading never writes: ``--no-optional-locks`` keeps git from refreshing the index.
Renames are not detected, so a rename is a deletion plus an addition: both are work.
"""

from __future__ import annotations

import os

from guards.git import process as git
from guards.git.files import holds_repository
from guards.git.names import FileMode, ObjectId
from guards.git.objects import GITLINK, ZERO_MODE
from guards.values import Value

#: An id not given (git wrote none for this side).
NO_ID = ObjectId("")

TYPE_CHECKING = False  # see guards.values: these imports cost start-up time
if TYPE_CHECKING:
    from collections.abc import Callable

    from guards.git.repo import Repo


class DirtyPath(Value):
    """One path that differs from HEAD in the index or the work tree, or is untracked."""

    __slots__ = (
        "head_mode",
        "head_oid",
        "index_mode",
        "index_oid",
        "path",
        "submodule",
        "worktree_mode",
        "xy",
    )

    def __init__(
        self,
        path: str,
        xy: str,
        head_mode: FileMode = ZERO_MODE,
        index_mode: FileMode = ZERO_MODE,
        worktree_mode: FileMode = ZERO_MODE,
        head_oid: ObjectId = NO_ID,
        index_oid: ObjectId = NO_ID,
        submodule: str = "N...",
    ) -> None:
        self.path = path
        #: git's two-letter code: index then work tree (``??`` untracked, ``!!`` ignored,
        #: ``UU`` and friends for unmerged).
        self.xy = xy
        self.head_mode = head_mode
        self.index_mode = index_mode
        self.worktree_mode = worktree_mode
        self.head_oid = head_oid
        self.index_oid = index_oid
        #: A gitlink (submodule) entry: ``N...`` when not a submodule.
        self.submodule = submodule

    @property
    def untracked(self) -> bool:
        return self.xy == "??"

    @property
    def ignored(self) -> bool:
        return self.xy == "!!"

    @property
    def unmerged(self) -> bool:
        return self.xy in {"DD", "AU", "UD", "UA", "DU", "AA", "UU"}

    @property
    def staged(self) -> bool:
        """The index differs from HEAD."""
        return self.xy[0] not in ".?!"

    @property
    def unstaged(self) -> bool:
        """The work tree differs from the index."""
        return self.xy[1] not in ".?!"

    @property
    def deleted_in_worktree(self) -> bool:
        return self.xy[1] == "D" or (self.xy[0] == "D" and self.xy[1] == ".")

    @property
    def state(self) -> str:
        """A short human state in git's short-status style (`` M``, ``A ``, ``??``)."""
        return self.xy.replace(".", " ")


def read_dirty(
    repo: Repo,
    *,
    ignored: bool = False,
    pathspecs: list[str] | None = None,
    magic: str = "literal",
) -> list[DirtyPath]:
    """Every dirty path of the work tree (untracked files listed one by one); with
    ``pathspecs``, those they match: literal names by default (`*` in a name is no
    glob), or ``magic="glob"`` (shell-like patterns: `*` within a directory, `**`
    across)."""
    limit = None
    if pathspecs is not None:
        # `status` has no --pathspec-from-file: the pathspecs go on the command line.
        limit = ["--", *(f":({magic}){p}" for p in pathspecs)]
    return parse_porcelain_v2(
        read_status(lambda args: repo.run(args, check=False), ignored=ignored, limit=limit)
    )


def read_status(
    run: Callable[[list[str]], git.Result],
    *,
    ignored: bool = False,
    limit: list[str] | None = None,
) -> bytes:
    """``git status`` (:func:`git.status_args`; ``limit`` is ``["--", pathspec...]``),
    run by ``run``, that a submodule git cannot read does not fail.

    git fails the whole status when a submodule's ``.git`` points nowhere, yet the
    commands guards protect run fine beside it. Such a submodule is left out of a second
    status, and reported as changed inside (tracked and untracked): what git cannot
    read there is never taken for clean."""
    args = [*git.status_args(ignored=ignored), *(limit or [])]
    res = run(args)
    if res.returncode == 0:
        return res.stdout
    broken = _unreadable_submodules(run, limit)
    if broken:
        excludes = [f":(exclude,top,literal){path}" for path, _ in broken]
        again = run([*args, *([] if limit else ["--"]), *excludes])
        if again.returncode == 0:
            link = GITLINK.encode()
            unknown = b"".join(
                b"1 .M S.MU %s %s %s %s %s %s\0"
                % (link, link, link, oid.encode(), oid.encode(), os.fsencode(path))
                for path, oid in broken
            )
            return again.stdout + unknown
    raise git.GitError(args, res.returncode, res.stderr)


def _unreadable_submodules(
    run: Callable[[list[str]], git.Result], limit: list[str] | None
) -> list[tuple[str, str]]:
    """(path, recorded commit) of each checked-out submodule git cannot read."""
    from guards.git.entries import index_entries  # dataclasses: not on status' hot path

    top = run(["rev-parse", "--show-toplevel"])
    links = run(["ls-files", "-s", "-z", "--full-name", *(limit or [])])
    if top.returncode != 0 or links.returncode != 0:
        return []
    base = os.fsdecode(git.strip_newline(top.stdout))
    env = {k: v for k, v in os.environ.items() if not git.is_local_repo_variable(k)}
    out = []
    for item in index_entries(links.stdout):
        directory = os.path.join(base, item.path)
        if item.entry.mode != GITLINK or item.stage != 0 or not holds_repository(directory):
            continue
        reads = git.run(["rev-parse", "--git-dir"], cwd=directory, env=env, check=False)
        if reads.returncode != 0:
            out.append((item.path, item.entry.oid))
    return out


def start_reading(
    *, ignored: bool = False, pathspecs: list[str] | None = None, cwd: str | None = None
) -> git.Pending:
    """:func:`read_dirty` for the repository around ``cwd`` (the current directory by
    default), started in the background: porcelain paths are relative to the top level
    wherever git runs, so the scan can begin before the repository is even discovered.
    ``pathspecs``: git's own, relative to that directory (as ``git status -- PATHSPEC``)."""
    limit = ["--", *pathspecs] if pathspecs else []
    return git.start([*git.status_args(ignored=ignored), *limit], cwd=cwd)


def finish_reading(started: git.Pending) -> list[DirtyPath]:
    return parse_porcelain_v2(started.result().stdout)


def count_porcelain_v2(data: bytes) -> int:
    """How many dirty paths :func:`parse_porcelain_v2` would return, without making
    them (a worktree's status can list 100,000)."""
    records = git.zsplit(data)
    count = i = 0
    while i < len(records):
        kind = records[i][:1]
        i += 2 if kind == b"2" else 1  # a copy/rename record: its origin follows
        count += kind in (b"1", b"2", b"u", b"?", b"!")
    return count


def parse_porcelain_v2(data: bytes) -> list[DirtyPath]:
    records = git.zsplit(data)
    out: list[DirtyPath] = []
    i = 0
    while i < len(records):
        rec = records[i]
        i += 1
        kind = rec[:1]
        if kind == b"1":
            f = rec.split(b" ", 8)
            out.append(_entry(f[8], f[1], f[2], f[3], f[4], f[5], f[6], f[7]))
        elif kind == b"2":
            # Renames are off, but a copy/rename record still carries its origin after NUL.
            f = rec.split(b" ", 9)
            out.append(_entry(f[9], f[1], f[2], f[3], f[4], f[5], f[6], f[7]))
            i += 1
        elif kind == b"u":
            f = rec.split(b" ", 10)
            # stage 2 ("ours") stands for the index side of an unmerged path.
            out.append(_entry(f[10], f[1], f[2], f[3], f[4], f[6], f[7], f[8]))
        elif kind == b"?":
            out.append(DirtyPath(path=os.fsdecode(rec[2:]), xy="??"))
        elif kind == b"!":
            out.append(DirtyPath(path=os.fsdecode(rec[2:]), xy="!!"))
    return out


def _entry(
    path: bytes,
    xy: bytes,
    sub: bytes,
    m_head: bytes,
    m_index: bytes,
    m_worktree: bytes,
    h_head: bytes,
    h_index: bytes,
) -> DirtyPath:
    return DirtyPath(
        path=os.fsdecode(path),
        xy=xy.decode(),
        submodule=sub.decode(),
        head_mode=FileMode(m_head.decode()),
        index_mode=FileMode(m_index.decode()),
        worktree_mode=FileMode(m_worktree.decode()),
        head_oid=ObjectId(h_head.decode()),
        index_oid=ObjectId(h_index.decode()),
    )
