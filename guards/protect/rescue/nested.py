"""Repositories inside the checkout: submodules and untracked nested repositories.

A gitlink holds a commit id, not a repository's files, refs or uncommitted work, and
nothing under a ``.git`` can enter a tree. So a rescue takes them apart:

- a **submodule** (a gitlink in the index) keeps its history in its own git dir, which
  the guarded commands leave alone: its dirty work is rescued inside it, to a rescue
  ref of its own (same naming, verified), and the outer rescue keeps the gitlink;
- an **untracked nested repository** goes whole with ``clean -ffd`` or ``worktree
  remove --force``, its ``.git`` included: its files go into the outer rescue as plain
  files, and its history and dirty work into one commit (its own snapshot, with every
  ref's commit as a parent and its refs in trailers), copied into the outer repository
  and kept under a rescue ref of its own;
- a repository **git cannot read** (a ``.git`` file pointing nowhere): its files go into
  the outer rescue as plain files; a ``.git`` directory git cannot read holds what no
  rescue can keep, and fails the rescue.

This module finds and sorts them (:func:`plan`) and copies objects between
repositories; :mod:`.build` does the rescues.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

from guards.git import process as git
from guards.git.entries import Entry, index_entries_of
from guards.git.files import walk_files
from guards.git.objects import GITLINK, TREE
from guards.git.refs import for_each_ref
from guards.git.repo import NotARepositoryError, Repo, discover
from guards.output import show_path
from guards.protect.rescue.result import OVERRIDE, RescueFailedError
from guards.protect.snapshot import Looks, expand_paths
from guards.state.workspace import Workspace
from guards.values import MutableValue, Value


@contextlib.contextmanager
def own_environment() -> Iterator[None]:
    """git calls meanwhile see the repository around their directory, nothing else."""
    saved = {k: os.environ.pop(k) for k in list(os.environ) if git.is_local_repo_variable(k)}
    try:
        yield
    finally:
        os.environ.update(saved)


class Plan(MutableValue):
    """What a rescue does with the repositories among (and around) its paths."""

    __slots__ = ("groups", "handled", "keep", "submodules")

    def __init__(self) -> None:
        #: owner -> the paths of the outer rescue (nested repositories' files included)
        self.groups: dict[str | None, list[str]] = {}
        #: readable submodule -> {path inside it ("" for all its dirty work): owner}
        self.submodules: dict[str, dict[str, str | None]] = {}
        #: readable untracked nested repository -> owner: kept whole
        self.keep: dict[str, str | None] = {}
        #: repositories whose content is taken care of: the outer rescue keeps their
        #: paths as they are (a gitlink, or plain files) without checking them again
        self.handled: set[str] = set()


class _Root(Value):
    __slots__ = ("path", "repo", "submodule")

    def __init__(self, path: str, submodule: bool, repo: Repo | None) -> None:
        self.path = path
        self.submodule = submodule
        self.repo = repo  # None: git cannot read it


def plan(ws: Workspace, groups: dict[str | None, list[str]], looks: Looks | None = None) -> Plan:
    """Sort every path by the repository it lies in (see the module's docs); ``looks``:
    see :func:`guards.protect.snapshot.look`."""
    top = ws.repo.worktree
    expanded: dict[str | None, list[str]] = {}
    candidates: set[str] = set()
    for owner, paths in groups.items():
        found, repos = expand_paths(top, paths, looks)
        expanded[owner] = found
        candidates.update(repos)
        candidates.update(_enclosing(top, found))
    out = Plan()
    if not candidates:
        out.groups = expanded
        return out
    roots = _classify(ws, sorted(candidates))
    for owner, paths in expanded.items():
        kept: list[str] = []
        for p in paths:
            root = _outermost(p, roots)
            if root is None:
                kept.append(p)
            elif root.submodule and root.repo is not None:
                inner = "" if p == root.path else p[len(root.path) + 1 :]
                out.submodules.setdefault(root.path, {}).setdefault(inner, owner)
                if p == root.path:
                    kept.append(p)  # the gitlink itself
            elif p == root.path:
                files, inner_roots = _files_of(top, p)
                kept += files
                for r in [p, *inner_roots]:
                    _keep(ws, out, roots.get(r) or _classify(ws, [r])[r], owner, p)
            else:
                kept.append(p)
                chain = _chain(p, roots)
                for r in chain:
                    _keep(ws, out, roots[r], owner, chain[0])
        out.groups[owner] = kept
    out.handled |= set(roots)
    return out


def _keep(ws: Workspace, out: Plan, root: _Root, owner: str | None, container: str) -> None:
    """Keep ``root`` whole when its history lies in ``container``, the directory at risk
    (a linked worktree's or a gitfile's repository elsewhere survives: its files, in
    the outer rescue, are all it loses)."""
    if root.path in out.handled:
        return  # judged already
    out.handled.add(root.path)
    if root.repo is not None:
        inside = os.path.realpath(ws.repo.worktree / container) + os.sep
        if os.path.realpath(root.repo.common_dir).startswith(inside):
            out.keep.setdefault(root.path, owner)
        return
    dot_git = ws.repo.worktree / root.path / ".git"
    if dot_git.is_dir() and not dot_git.is_symlink() and any(dot_git.iterdir()):
        raise RescueFailedError(
            f"cannot rescue {show_path(root.path + '/')}: git cannot read this nested "
            f"repository, and its .git holds what no rescue can keep; nothing was run "
            f"(override: {OVERRIDE})"
        )


def _enclosing(top: Path, paths: list[str]) -> set[str]:
    """The directories above ``paths`` that hold a ``.git`` (nested repositories)."""
    seen: dict[str, bool] = {}
    found: set[str] = set()
    base = os.fspath(top) + os.sep
    for p in paths:
        parts = p.split("/")
        for i in range(1, len(parts)):
            d = "/".join(parts[:i])
            has = seen.get(d)
            if has is None:
                has = seen[d] = os.path.lexists(base + d + "/.git")
            if has:
                found.add(d)
    return found


def _outermost(path: str, roots: dict[str, _Root]) -> _Root | None:
    parts = path.split("/")
    for i in range(1, len(parts) + 1):
        root = roots.get("/".join(parts[:i]))
        if root is not None:
            return root
    return None


def _chain(path: str, roots: dict[str, _Root]) -> list[str]:
    """Every repository ``path`` lies in, outermost first."""
    parts = path.split("/")
    return [d for i in range(1, len(parts)) if (d := "/".join(parts[:i])) in roots]


def _files_of(top: Path, root: str) -> tuple[list[str], list[str]]:
    """Every file and symlink under ``root`` but the ``.git`` entries, and the
    repositories nested further down."""
    files: list[str] = []
    inner: list[str] = []
    for found, repository in walk_files(top, root, enter_repositories=True):
        (inner if repository else files).append(found)
    return files, inner


def _classify(ws: Workspace, paths: list[str]) -> dict[str, _Root]:
    """Each directory holding a ``.git``: submodule or not, and its repository when git
    can read it there."""
    gitlinks = {
        item.path for item in index_entries_of(ws.repo.run, paths) if item.entry.mode == GITLINK
    }
    top = ws.repo.worktree
    out = {}
    for p in paths:
        out[p] = _Root(p, p in gitlinks, _readable(top / p))
    return out


def _readable(directory: Path) -> Repo | None:
    """The repository at ``directory`` itself, when git can read it."""
    with own_environment():
        try:
            repo = discover(directory)
        except (NotARepositoryError, git.GitError):
            return None
    if repo.toplevel is None or os.path.realpath(repo.toplevel) != os.path.realpath(directory):
        return None
    return repo


# -- a repository's refs, and copying its objects ------------------------------------------


class Refs(Value):
    """Everything that keeps a repository's history."""

    __slots__ = ("commits", "head", "others", "refs", "stash")

    def __init__(
        self,
        head: str,
        refs: list[tuple[str, str]],
        commits: list[str],
        others: list[str],
        stash: list[str],
    ) -> None:
        #: what HEAD is: a branch (``refs/heads/...``), a commit id, or "unborn"
        self.head = head
        #: (ref name, object id) for every ref
        self.refs = refs
        #: every commit to keep reachable: HEAD's, each ref's (tags peeled), stash entries
        self.commits = commits
        #: tag objects (and other non-commit objects) the refs point at
        self.others = others
        #: the stash entries, newest first (``refs/stash`` and its reflog)
        self.stash = stash

    __hash__ = None  # type: ignore[assignment]  # it holds lists: never hashed


def read_refs(repo: Repo) -> Refs:
    """Everything that keeps ``repo``'s history: HEAD, refs, stash entries."""
    with own_environment():
        branch = repo.head_ref()
        head_oid = repo.head()
        rows = for_each_ref(
            repo.run, ("objectname", "objecttype", "*objectname", "*objecttype", "refname"), []
        )
        stash = repo.run(["rev-list", "--walk-reflogs", "refs/stash", "--"], check=False)
    head = branch or head_oid or "unborn"
    if head_oid is None:
        head = f"{head} (unborn)" if head.startswith("refs/") else "unborn"
    refs: list[tuple[str, str]] = []
    commits: list[str] = [head_oid] if head_oid else []
    others: list[str] = []
    for oid, kind, peeled, peeled_kind, name in rows:
        refs.append((name, oid))
        if kind == "commit":
            commits.append(oid)
        else:
            others.append(oid)
            if peeled_kind == "commit":
                commits.append(peeled)
    entries = stash.stdout.decode().split() if stash.returncode == 0 else []
    commits += entries
    return Refs(head, refs, list(dict.fromkeys(commits)), list(dict.fromkeys(others)), entries)


def keep_objects(repo: Repo, oids: list[str], identity: dict[str, str]) -> str | None:
    """A commit (in ``repo``) whose tree keeps objects no commit reaches: the raw content
    of each tag object as a blob ``tag/<id>`` (``git hash-object -t tag`` makes the very
    same tag again), each tagged tree as ``tree/<id>``, each tagged blob as ``blob/<id>``.
    Tagged commits come back as more parents. None when there is nothing to keep."""
    from guards.git.entries import index_info_line
    from guards.protect.snapshot import commit_tree

    lines: list[bytes] = []
    commits: list[str] = []
    todo = list(oids)
    seen: set[str] = set()
    while todo:
        oid = todo.pop()
        if oid in seen:
            continue
        seen.add(oid)
        kind = repo.run(["cat-file", "-t", oid]).stdout.decode().strip()
        if kind == "tag":
            raw = repo.run(["cat-file", "tag", oid]).stdout
            blob = repo.run(["hash-object", "-w", "--stdin"], stdin=raw, readonly=False)
            state = Entry("100644", blob.stdout.decode().strip())
            lines.append(index_info_line(f"tag/{oid}", state, repo.object_format))
            target = raw.split(b"\n", 1)[0].removeprefix(b"object ").decode()
            todo.append(target)
        elif kind == "commit":
            commits.append(oid)
        elif kind == "tree":
            lines.append(index_info_line(f"tree/{oid}", Entry(TREE, oid), repo.object_format))
        elif kind == "blob":
            lines.append(index_info_line(f"blob/{oid}", Entry("100644", oid), repo.object_format))
    if not lines:
        return None
    with tempfile.TemporaryDirectory(prefix="guards-objects-") as tmp:
        env = {"GIT_INDEX_FILE": os.path.join(tmp, "index")}
        repo.run(["update-index", "-z", "--index-info"], stdin=b"".join(lines),
                 extra_env=env, readonly=False)  # fmt: skip
        tree = repo.run(["write-tree"], extra_env=env).stdout.decode().strip()
    message = "guards rescue: objects the refs of a nested repository name\n"
    return commit_tree(repo, tree, commits, message, identity)


def copy_objects(source: Repo, target: Repo, tips: list[str]) -> None:
    """Copy everything reachable from ``tips`` from ``source`` into ``target``'s object
    store (one pack; no ref is written), then check that ``target`` holds all of it."""
    wanted = "".join(f"{t}\n" for t in tips).encode()
    with own_environment():
        pack = source.run(["pack-objects", "--revs", "--stdout", "-q"], stdin=wanted)
    target.run(["index-pack", "--stdin"], stdin=pack.stdout, readonly=False)
    # Read back: every object reachable from the tips is there (a missing one fails).
    target.run(["rev-list", "--objects", "--no-object-names", "--stdin"], stdin=wanted)
