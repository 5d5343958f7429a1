"""Landing: a writer's branch onto the integration branch as a merge commit, one at a
time per repository, touching nobody's checkout but the target's own.

The merge is computed in the object store (``git merge-tree --write-tree``, git >=
2.38), committed with ``commit-tree`` (first parent the target, second the branch:
never a fast-forward) and the target moves by ``update-ref <target> <new> <old>``, a
compare-and-swap: never a force, and a target that moved meanwhile is merged again.

Before anything moves, the landing refuses (changing nothing, saying why) when git is
too old, a merge, rebase, cherry-pick, revert or am is stopped in a checkout of the
target or of the branch, or a checkout of the target has an uncommitted change
(untracked files included) to a path the merge would change. A conflict changes nothing
either: both branches stay as they were and the conflicting paths are named.

A checkout of the target is updated as ``git merge`` would update it on a fast-forward
(``read-tree -m -u``: its other local changes are kept; git itself refuses, changing
nothing, when one would be overwritten), and only then does the ref move; if the ref
moved meanwhile, the checkout is put back and the landing starts over. Nobody else's
checkout, index or stash is touched.
"""

from __future__ import annotations

import contextlib
import os
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Final

from guards.errors import GuardsError, UsageError
from guards.git import process as git
from guards.git.dirty import read_dirty
from guards.git.history import default_branch
from guards.git.merge import (
    MERGE_TREE_GIT,
    changed_paths,
    commit_merge,
    committer_known,
    delete_ref,
    is_ancestor,
    merge_tree,
    move_ref,
    rev,
    switch_checkout,
)
from guards.git.names import HEADS, BranchName, RefName, branch_name, branch_ref
from guards.git.operations import in_progress, rebase_file
from guards.git.process import git_version
from guards.git.repo import Repo, discover
from guards.git.worktrees import GitWorktree, list_worktrees
from guards.output import SHOWN_IN_REPORTS, listing, show_path
from guards.protect.land_queue import LandingQueue, OnWait
from guards.state.ledger import LedgerData
from guards.state.repositories import remember
from guards.state.workspace import Workspace

#: How often a landing starts over when the target moved under it (outside guards).
ATTEMPTS = 3


class LandStatus:
    """How a landing ended (plain strings: the JSON's and the history's)."""

    LANDED: Final = "landed"
    #: The branch was already in the target: nothing to merge.
    ALREADY: Final = "already-landed"
    CONFLICT: Final = "conflict"
    #: A preflight check said no; nothing changed.
    REFUSED: Final = "refused"
    #: Something went wrong on the way (a git call); nothing changed.
    FAILED: Final = "failed"

    ALL: Final = (LANDED, ALREADY, CONFLICT, REFUSED, FAILED)


@dataclass
class Landing:
    """One landing request and how it ended (``guards land --json``; the history)."""

    branch: str
    into: str
    status: str = LandStatus.FAILED
    source_commit: str | None = None
    target_before: str | None = None
    target_after: str | None = None
    merge_commit: str | None = None
    #: conflicting paths (status conflict)
    conflicts: list[str] = field(default_factory=list)
    #: uncommitted paths in a checkout of the target that the merge would change
    blocking_paths: list[str] = field(default_factory=list)
    #: paths the landing changed in the target
    changed: int = 0
    #: checkouts of the target brought up to date
    checkouts_updated: list[str] = field(default_factory=list)
    #: with --delete-branch: True deleted, False kept (see notes), None not asked
    branch_deleted: bool | None = None
    detail: str = ""
    notes: list[str] = field(default_factory=list)
    session: str | None = None
    seq: int | None = None
    requested: float | None = None
    started: float | None = None
    finished: float | None = None
    #: how many landings were queued before this one when it asked
    queued_behind: int = 0

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class LandRequest:
    branch: BranchName
    into: BranchName
    #: how the target was chosen: --into, land.into, worktree, default
    into_from: str
    delete_branch: bool = False


# -- what to land where ---------------------------------------------------------------------------


def resolve(
    ws: Workspace,
    *,
    branch: str | None,
    worktree: str | None,
    into: str | None,
    delete_branch: bool = False,
) -> LandRequest:
    """The branch to land and the branch to land it into; a :class:`UsageError` saying
    what is missing otherwise."""
    repo = ws.repo
    listed = list_worktrees(repo)
    if branch is not None:
        source = _local_branch(repo, branch, "branch to land")
    elif worktree is not None:
        wanted = os.path.realpath(worktree)
        match = next((w for w in listed if os.path.realpath(w.path) == wanted), None)
        if match is None:
            raise UsageError(f"{show_path(worktree)} is not a worktree of this repository")
        if match.branch is None:
            raise UsageError(f"{show_path(worktree)} has no branch checked out (detached HEAD)")
        source = branch_name(match.branch)
    else:
        head = repo.head_ref() if repo.toplevel is not None else None
        if head is None or not head.startswith(HEADS):
            raise UsageError("which branch? HEAD is detached here: name the branch to land")
        source = branch_name(head)
    data, _problem = ws.read_ledger()
    target, how = _target(ws, source, into, data)
    if target == source:
        raise UsageError(
            f"{source} is the branch to land into ({how}); name another branch to land, "
            f"or another target with --into"
        )
    return LandRequest(source, target, how, delete_branch)


def _local_branch(repo: Repo, name: str, what: str) -> BranchName:
    short = BranchName(name.removeprefix(HEADS))
    if not short or rev(repo, branch_ref(short)) is None:
        raise UsageError(f"no local branch {name!r} ({what})")
    check = repo.run(["check-ref-format", "--branch", short], check=False)
    if check.returncode != 0:
        raise UsageError(f"{name!r} is not a valid branch name ({what})")
    return short


def _target(
    ws: Workspace, source: BranchName, into: str | None, data: LedgerData | None
) -> tuple[BranchName, str]:
    if into:
        return _local_branch(ws.repo, into, "--into"), "--into"
    configured = str(ws.config.get("land.into"))
    if configured:
        return _local_branch(ws.repo, configured, "land.into"), "land.into"
    cut_from = cut_from_branch(data, source)
    if cut_from is not None and rev(ws.repo, branch_ref(cut_from)) is not None:
        return cut_from, "worktree"
    default = integration_default(ws.repo)
    if default is not None:
        return default, "default branch"
    raise UsageError(
        f"land {source} into which branch? give --into BRANCH or set land.into "
        f"(guards config set land.into main)"
    )


def cut_from_branch(data: LedgerData | None, source: str) -> BranchName | None:
    """The branch a guards worktree on ``source`` was cut from, as ``guards worktree
    add`` recorded it (the newest such worktree wins)."""
    found: tuple[float, str] | None = None
    for rec in (data.worktrees if data is not None else {}).values():
        if not isinstance(rec, dict) or rec.get("branch") != source:
            continue
        cut = rec.get("from_branch")
        when = rec.get("created")
        if isinstance(cut, str) and cut:
            stamp = float(when) if isinstance(when, (int, float)) else 0.0
            if found is None or stamp >= found[0]:
                found = (stamp, cut)
    return BranchName(found[1]) if found else None


def starting_branch(repo: Repo, start: str | None) -> BranchName | None:
    """The local branch a new worktree is cut from: ``start`` when it names a local
    branch (or a remote-tracking one with a local namesake), else the branch checked out
    where it is made; None when that is no branch."""
    if start is None:
        head = repo.head_ref()
        return branch_name(head) if head is not None and head.startswith(HEADS) else None
    res = repo.run(["rev-parse", "--symbolic-full-name", start], check=False)
    full = os.fsdecode(git.strip_newline(res.stdout)) if res.returncode == 0 else ""
    if full.startswith(HEADS):
        return branch_name(RefName(full))
    if full.startswith("refs/remotes/") and full.count("/") >= 3:
        short = BranchName(full.split("/", 3)[3])
        return short if rev(repo, branch_ref(short)) is not None else None
    return None


def integration_default(repo: Repo) -> BranchName | None:
    """The default branch as a local branch: ``origin/HEAD``'s target's local namesake,
    else a local ``main`` or ``master``."""
    ref = default_branch(repo.run)
    if ref is None:
        return None
    if ref.startswith("refs/remotes/"):
        short = BranchName(ref.split("/", 3)[3])
        if rev(repo, branch_ref(short)) is not None:
            return short
        for fallback in (BranchName("main"), BranchName("master")):
            if rev(repo, branch_ref(fallback)) is not None:
                return fallback
        return None
    return branch_name(RefName(ref))


def target_of(ws: Workspace, source: str, data: LedgerData | None) -> BranchName | None:
    """Where ``source`` would land (no --into): for ``guards worktree list``."""
    try:
        target, _how = _target(ws, BranchName(source), None, data)
    except GuardsError:
        return None
    return None if target == source else target


def is_landed(repo: Repo, source: str, target: str) -> bool | None:
    """Whether ``source``'s tip is in ``target``; None when either cannot be read."""
    tip, into = rev(repo, branch_ref(BranchName(source))), rev(repo, branch_ref(BranchName(target)))
    if tip is None or into is None:
        return None
    try:
        return is_ancestor(repo, tip, into)
    except GuardsError:
        return None


# -- the landing ----------------------------------------------------------------------------


def land(ws: Workspace, request: LandRequest, on_wait: OnWait) -> Landing:
    """Queue, wait for the turn, land (or refuse, or report the conflict), record it."""
    queue = LandingQueue(ws.repo.ledger_dir_text, ws.ledger.lock_timeout)
    wait = float(ws.config.get("land.timeout"))
    remember(ws.repo)  # for `guards doctor --all` and `guards reap --all`
    ticket = {"branch": request.branch, "into": request.into, "session": ws.caller}
    behind = len(queue.queued(wait_timeout=wait))
    with queue.turn(ticket, wait, on_wait) as mine:
        result = Landing(
            branch=request.branch,
            into=request.into,
            session=ws.caller,
            seq=int(mine["seq"]),
            requested=float(mine["requested"]),
            started=time.time(),
            queued_behind=behind,
        )
        try:
            _land(ws, request, result)
        except GuardsError as e:
            result.status = LandStatus.FAILED
            result.detail = str(e).splitlines()[0] if str(e) else type(e).__name__
            raise
        finally:
            result.finished = time.time()
            with contextlib.suppress(GuardsError):
                queue.leave(int(mine["seq"]), result.to_json())
    return result


def _land(ws: Workspace, request: LandRequest, result: Landing) -> None:
    repo = ws.repo
    source_ref, target_ref = branch_ref(request.branch), branch_ref(request.into)
    _, version = git_version()
    if version is not None and version < MERGE_TREE_GIT:
        _refuse(
            result,
            f"guards land needs git >= {MERGE_TREE_GIT[0]}.{MERGE_TREE_GIT[1]} "
            f"(merge-tree --write-tree) to merge without a checkout; this git is "
            f"{version[0]}.{version[1]}: upgrade git, or merge by hand",
        )
        return
    for attempt in range(ATTEMPTS):
        source, target = rev(repo, source_ref), rev(repo, target_ref)
        if source is None or target is None:
            missing = request.branch if source is None else request.into
            raise UsageError(f"branch {missing} is gone")
        result.source_commit, result.target_before = source, target
        result.target_after = target
        if is_ancestor(repo, source, target):
            result.status = LandStatus.ALREADY
            result.detail = f"{request.branch} is already in {request.into}: nothing to merge"
            _delete_branch(ws, request, result)
            return
        checkouts = list_worktrees(repo)
        if _stopped_operation(request, checkouts, result):
            return
        if attempt == 0:
            _note_uncommitted(checkouts, source_ref, request.branch, result)
        if not committer_known(repo):
            raise UsageError(
                "git does not know who you are (user.name, user.email): the merge commit "
                "is yours; set them with git config, then land again"
            )
        try:
            merged = merge_tree(repo, target, source)
        except git.GitError as e:
            if b"unrelated histories" not in e.stderr:
                raise
            _refuse(
                result,
                f"cannot land {request.branch} into {request.into}: they share no history "
                f"(git refuses to merge unrelated histories); nothing changed",
            )
            return
        if not merged.clean:
            result.status = LandStatus.CONFLICT
            result.conflicts = merged.conflicts
            n = len(merged.conflicts)
            result.detail = (
                f"cannot land {request.branch} into {request.into}: {n} conflicting "
                f"path{'s' if n != 1 else ''}: {_names(merged.conflicts)}; "
                f"nothing changed, both branches kept; merge {request.into} into "
                f"{request.branch}, resolve, commit and land again"
            )
            return
        touched = changed_paths(repo, target, merged.tree)
        result.changed = len(touched)
        targets = [
            w for w in checkouts if w.branch == target_ref and not w.bare and os.path.isdir(w.path)
        ]
        if _blocked(targets, touched, request, result):
            return
        merge = commit_merge(
            repo, merged.tree, [target, source], _message(request.branch, request.into)
        )
        updated = _update_checkouts(targets, target, merge, result)
        if updated is None:
            return
        if move_ref(
            repo,
            target_ref,
            merge,
            target,
            f"guards land: merge {request.branch} into {request.into}",
        ):
            result.status = LandStatus.LANDED
            result.merge_commit = merge
            result.target_after = merge
            result.checkouts_updated = updated
            result.detail = (
                f"landed {request.branch} ({source[:12]}) into {request.into} as merge "
                f"{merge[:12]} ({result.changed} path{'s' if result.changed != 1 else ''} "
                f"changed)"
            )
            _delete_branch(ws, request, result)
            return
        # The target moved outside guards while we merged: put its checkouts back, again.
        for path in reversed(updated):
            switch_checkout(path, merge, target)
        result.notes.append(f"{request.into} moved while landing (attempt {attempt + 1})")
    raise GuardsError(
        f"{request.into} kept moving while landing ({ATTEMPTS} attempts); land again",
        exit_code=4,
    )


def _names(paths: list[str]) -> str:
    return listing([show_path(p) for p in paths], SHOWN_IN_REPORTS)


def _refuse(result: Landing, detail: str) -> None:
    result.status = LandStatus.REFUSED
    result.detail = detail


def _stopped_operation(request: LandRequest, checkouts: list[GitWorktree], result: Landing) -> bool:
    """A merge (or rebase, cherry-pick, ...) stopped in a checkout of either branch."""
    wanted = {branch_ref(request.into): request.into, branch_ref(request.branch): request.branch}
    for w in checkouts:
        if w.bare or not os.path.isdir(w.path):
            continue
        if w.branch is not None and w.branch not in wanted:
            continue
        try:
            git_dir = discover(w.path).git_dir_text
        except GuardsError:
            continue
        branch = w.branch or _rebasing(git_dir)
        if branch not in wanted:
            continue
        ops = [op for op in in_progress(git_dir) if op != "bisect"]
        if ops:
            _refuse(
                result,
                f"a {ops[0]} is in progress in {show_path(w.path)} (the checkout of "
                f"{wanted[branch]}): finish it first, then land again",
            )
            return True
    return False


def _note_uncommitted(
    checkouts: list[GitWorktree], source_ref: RefName, branch: str, result: Landing
) -> None:
    """Uncommitted work in the branch's own checkout is not part of what lands: say so."""
    for w in checkouts:
        if w.branch != source_ref or w.bare or not os.path.isdir(w.path):
            continue
        with contextlib.suppress(GuardsError):
            n = len(read_dirty(discover(w.path)))
            if n:
                result.notes.append(
                    f"{n} uncommitted path{'s' if n != 1 else ''} in {show_path(w.path)} "
                    f"{'are' if n != 1 else 'is'} not part of what landed from {branch}"
                )


def _rebasing(git_dir: str) -> RefName | None:
    """The branch a stopped rebase is rebasing (its checkout is detached meanwhile)."""
    return RefName(rebase_file(git_dir, "head-name") or "") or None


def _blocked(
    targets: list[GitWorktree], touched: list[str], request: LandRequest, result: Landing
) -> bool:
    """Uncommitted changes in a checkout of the target that the merge would overwrite."""
    if not targets or not touched:
        return False
    changed = set(touched)
    # An untracked file where the merge puts a directory, and the other way round.
    parents = {p.rsplit("/", i)[0] for p in touched for i in range(1, p.count("/") + 1)}
    for w in targets:
        if not os.path.isdir(w.path):
            continue
        dirty = read_dirty(discover(w.path))
        hits = [
            d.path
            for d in dirty
            if d.path.rstrip("/") in changed
            or d.path.rstrip("/") in parents
            or any(prefix in changed for prefix in _leading_dirs(d.path.rstrip("/")))
        ]
        if hits:
            result.blocking_paths = hits
            n = len(hits)
            _refuse(
                result,
                f"the checkout of {request.into} at {show_path(w.path)} has uncommitted "
                f"change{'s' if n != 1 else ''} the merge would overwrite: "
                f"{listing([show_path(h) for h in hits], SHOWN_IN_REPORTS)}; commit, checkpoint or "
                f"move {'them' if n != 1 else 'it'} away there, then land again",
            )
            return True
    return False


def _leading_dirs(path: str) -> list[str]:
    """``a/b/c`` -> ``a``, ``a/b``."""
    parts = path.split("/")
    return ["/".join(parts[:i]) for i in range(1, len(parts))]


def _update_checkouts(
    targets: list[GitWorktree], old: str, new: str, result: Landing
) -> list[str] | None:
    """Bring every checkout of the target from ``old`` to ``new``; None (and every one
    put back) when git refuses one."""
    done: list[str] = []
    for w in targets:
        # Fresh stat data first, so that a file touched but unchanged is no "change".
        git.run(["update-index", "-q", "--refresh"], cwd=w.path, check=False, readonly=False)
        res = switch_checkout(w.path, old, new)
        if res.returncode != 0:
            for path in reversed(done):
                switch_checkout(path, new, old)
            words = git.GitError(["read-tree"], res.returncode, res.stderr)
            _refuse(
                result,
                f"cannot bring the checkout of {result.into} at {show_path(w.path)} up to "
                f"date ({str(words).split(': ', 1)[-1]}); nothing changed: commit or move "
                f"those changes there, then land again",
            )
            return None
        done.append(w.path)
    return done


def _delete_branch(ws: Workspace, request: LandRequest, result: Landing) -> None:
    """With --delete-branch: delete the landed branch, only once it is in the target."""
    if not request.delete_branch:
        return
    result.branch_deleted = False
    repo = ws.repo
    source_ref = branch_ref(request.branch)
    tip, into = rev(repo, source_ref), rev(repo, branch_ref(request.into))
    if tip is None:
        result.notes.append(f"branch {request.branch} is gone already")
        return
    if into is None or not is_ancestor(repo, tip, into):
        result.notes.append(f"branch {request.branch} kept: it is not in {request.into}")
        return
    holders = [w.path for w in list_worktrees(repo) if w.branch == source_ref]
    if holders:
        result.notes.append(
            f"branch {request.branch} kept: it is checked out in {show_path(holders[0])} "
            f"(remove that worktree, then git branch -d {request.branch})"
        )
        return
    if not delete_ref(repo, source_ref, tip):
        result.notes.append(f"branch {request.branch} kept: it moved meanwhile")
        return
    repo.run(
        ["config", "--remove-section", f"branch.{request.branch}"], check=False, readonly=False
    )
    result.branch_deleted = True
    result.notes.append(f"deleted branch {request.branch} (was {tip[:12]})")


def _message(branch: str, into: str) -> str:
    return f"Merge branch '{branch}' into {into}\n\nLanded-By: guards land\n"


def landings(ws: Workspace) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(queued tickets, finished landings newest first) for ``guards land --list``."""
    queue = LandingQueue(ws.repo.ledger_dir_text, ws.ledger.lock_timeout)
    return queue.queued(wait_timeout=float(ws.config.get("land.timeout"))), queue.history()
