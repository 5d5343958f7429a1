"""Building rescues: the at-risk paths captured, checked against the caps, committed per
owner and verified; then the refs, the push and the log. Kept commits (stash entries,
branch tips) get refs of their own."""

from __future__ import annotations

import os
import stat
import threading
import time
from collections.abc import Callable, Collection

from guards.errors import GuardsError
from guards.git import process as git
from guards.git.entries import Entry, State, index_entries_of
from guards.git.files import holds_repository
from guards.git.objects import GITLINK, empty_tree
from guards.output import Progress, listing, show_path
from guards.protect.rescue import nested
from guards.protect.rescue.log import log_rescues
from guards.protect.rescue.naming import (
    RAW_BYTES,
    REPOSITORY_LABEL,
    UNKNOWN,
    _iso,
    _message,
    _stamp,
    _who,
    command_slug,
    head_trailer,
    identity,
    namespace,
    owner_component,
    trailer_value,
)
from guards.protect.rescue.push import _local_only, _stash_local_only, push
from guards.protect.rescue.refs import create_refs
from guards.protect.rescue.result import OVERRIDE, AtRiskPath, RescueFailedError, RescueResult
from guards.protect.rescue.verify import _verify_capture, _verify_tree
from guards.protect.snapshot import (
    Capture,
    Looks,
    SnapshotError,
    check_objects,
    commit_tree,
    disk_states,
    look,
)
from guards.state import session as sessions
from guards.state.workspace import Workspace
from guards.values import Value

TYPE_CHECKING = False  # see guards.values: typing costs every rescue start-up time
if TYPE_CHECKING:
    from typing import TypeVar

    _T = TypeVar("_T")
    #: what the early check finds: the disk's states, the blobs read back, the bad ones
    _Checked = tuple[dict[str, State | str], set[str], set[str]]


class _Beside:
    """``work`` run in a thread of its own (concurrent.futures would cost every rescue
    ~25 ms of imports); :meth:`result` gives what it returned, or raises what it
    raised."""

    def __init__(self, work: Callable[[], _Checked]) -> None:
        self._work = work
        self._value: _Checked | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            self._value = self._work()
        except BaseException as e:  # handed to whoever asks for the result
            self._error = e

    def join(self) -> None:
        self._thread.join()

    def result(self) -> _Checked:
        self._thread.join()
        if self._error is not None:
            raise self._error
        assert self._value is not None
        return self._value


class _Built(Value):
    __slots__ = ("commit", "index_commit", "local_only", "owner", "paths", "pushable")

    def __init__(
        self,
        owner: str | None,
        paths: list[str],
        commit: str,
        index_commit: str,
        pushable: str,
        local_only: list[str],
    ) -> None:
        self.owner = owner
        self.paths = paths
        self.commit = commit
        self.index_commit = index_commit
        #: what a push sends: the commit itself, or a copy without local-only paths
        self.pushable = pushable
        self.local_only = local_only


def rescue_paths(
    ws: Workspace, at_risk: list[AtRiskPath], *, command: str, progress: bool = False
) -> list[RescueResult]:
    """Commit at-risk paths to one verified rescue ref per owner (see module docs).

    Submodules' dirty work is rescued inside them, untracked nested repositories are
    kept whole (see :mod:`.nested`). ``progress``: a rescue that takes more than a second
    shows how far it got on stderr, if that is a terminal."""
    if not at_risk:
        return []
    now = time.time()
    remote = str(ws.config.get("rescue.remote")) or None
    inner: list[RescueResult] = []

    def prepare() -> tuple[list[_Built], list[tuple[str, str | None, str]]]:
        # What the judge saw of each path (one lstat per path per look, not per step).
        looks: Looks = {a.path: a.looked for a in at_risk if a.looked is not None}
        found = nested.plan(ws, _group(ws, at_risk), looks)
        for root, paths in found.submodules.items():
            inner.extend(_rescue_submodule(ws, root, paths, command=command))
        keepers = [
            (root, owner, _keep_repository(ws, root, owner, command=command, now=now))
            for root, owner in found.keep.items()
        ]
        groups = {o: ps for o, ps in found.groups.items() if ps}
        built = (
            build_snapshots(
                ws,
                groups,
                command=command,
                now=now,
                split_local_only=remote is not None,
                handled=found.handled,
                progress=progress,
                looks=looks,
            )
            if groups
            else []
        )
        return built, keepers

    built, keepers = _refusing(prepare)
    if not built and not keepers:
        return inner  # everything at risk lay in submodules
    ns = namespace(ws)
    stamp = _stamp(now)
    slug = command_slug(command)
    wanted = [(f"{ns}/{owner_component(b.owner)}/{stamp}-{slug}", b.commit) for b in built]
    wanted += [
        (f"{ns}/{owner_component(owner)}/{stamp}-{slug}-repo-{command_slug(root, 30)}", commit)
        for root, owner, commit in keepers
    ]
    refs = create_refs(ws, wanted, f"guards rescue: {command}")
    path_refs, kept_refs = refs[: len(built)], refs[len(built) :]
    pushes = push(ws, remote, [(b.pushable, ref) for b, ref in zip(built, path_refs, strict=True)])
    results = [
        RescueResult(
            ref=ref,
            commit=b.commit,
            owner=b.owner,
            paths=b.paths,
            push=pushes[ref][0] if remote else None,
            push_detail=pushes[ref][1] if remote else "",
            remote=remote,
            local_only=b.local_only,
            index_commit=b.index_commit,
        )
        for b, ref in zip(built, path_refs, strict=True)
    ]
    # A nested repository's history stays local: it may hold anything.
    results += [
        RescueResult(
            ref=ref,
            commit=commit,
            owner=owner,
            paths=[],
            push=None,
            remote=remote,
            label=f"{REPOSITORY_LABEL}{root}/",
            local_only=[root] if remote else [],
        )
        for (root, owner, commit), ref in zip(keepers, kept_refs, strict=True)
    ]
    log_rescues(ws, results, command=command, now=now)
    return inner + results


def _refusing(prepare: Callable[[], _T]) -> _T:
    """Any failure on the way to a verified rescue refuses the command, in one line."""
    try:
        return prepare()
    except SnapshotError as e:
        raise RescueFailedError(f"{e}; nothing was run (override: {OVERRIDE})") from None
    except RescueFailedError:
        raise
    except GuardsError as e:
        raise RescueFailedError(
            f"rescue failed: {e}; nothing was run (override: {OVERRIDE})"
        ) from None
    except OSError as e:
        raise RescueFailedError(
            f"rescue failed: cannot read {e.filename or 'a file'}: {e.strerror}; "
            f"nothing was run (override: {OVERRIDE})"
        ) from None


def _rescue_submodule(
    ws: Workspace, root: str, paths: dict[str, str | None], *, command: str
) -> list[RescueResult]:
    """A submodule's dirty work, rescued inside it (its own rescue refs, verified)."""
    with nested.own_environment():
        sub = Workspace.open(ws.repo.worktree / root)
        owners: dict[str, str | None] = {}
        if "" in paths:  # the submodule itself is at risk: all of its dirty work
            for item in dirty_at_risk(sub, ignored=True):
                owners[item.path] = item.owner if item.owner is not None else paths[""]
        for p, owner in paths.items():
            if p and (owner is not None or p not in owners):
                owners[p] = owner
        results = rescue_paths(sub, [AtRiskPath(p, o) for p, o in owners.items()], command=command)
    return [r.inside(root) for r in results]


def _keep_repository(
    ws: Workspace, root: str, owner: str | None, *, command: str, now: float
) -> str:
    """An untracked nested repository whole: one commit holding its dirty work (its own
    snapshot, verified) with its HEAD, every ref's commit and its stash entries as
    parents and its refs in trailers, copied into this repository's object store and
    read back there. Returns the commit; no ref is written."""
    from guards.git.dirty import read_dirty
    from guards.git.repo import discover

    with nested.own_environment():
        repo = discover(ws.repo.worktree / root)
        if repo.object_format != ws.repo.object_format:
            raise RescueFailedError(
                f"cannot keep the nested repository {show_path(root + '/')}: its objects are "
                f"{repo.object_format}, this repository's {ws.repo.object_format}; move it "
                f"out of the checkout first; nothing was run (override: {OVERRIDE})"
            )
        refs = nested.read_refs(repo)
        head = repo.head()
        parents = [c for c in refs.commits if c != head]
        objects = nested.keep_objects(repo, refs.others, identity())
        body = "\n".join(
            [
                f"Repository: {trailer_value(root)}",
                f"Repository-Head: {head_trailer(refs.head)}",
                *(f"Repository-Ref: {trailer_value(name)} {oid}" for name, oid in refs.refs),
                *(f"Repository-Stash: {oid}" for oid in refs.stash),
                *([f"Repository-Objects: {objects}"] if objects else []),
            ]
        )
        parents += [objects] if objects else []
        top = repo.worktree
        dirty = [
            d.path
            for d in read_dirty(repo, ignored=True)
            if not holds_repository(top / d.path.rstrip("/"))  # kept on their own
        ]
        subject = f"guards rescue of the nested repository {root}"
        if dirty:
            mine = Workspace(repo=repo, config=ws.config, ledger=ws.ledger, caller=ws.caller)
            (kept,) = build_snapshots(
                mine,
                {owner: dirty},
                command=command,
                now=now,
                split_local_only=False,
                extra_parents={owner: parents},
                subject=subject,
                body=body,
                handled=None,
            )
            commit = kept.commit
        else:
            tree = (
                repo.run(["rev-parse", "HEAD^{tree}"]).stdout.decode().strip()
                if head
                else (empty_tree(repo.object_format))
            )
            trailers = [
                ("Rescued-For", owner or UNKNOWN),
                ("Rescued-By", ws.caller or "unidentified"),
                ("Command", command.replace("\n", " ")),
                ("Host", sessions.hostname()),
                ("Time", _iso(now)),
            ]
            message = _message(f"{subject}: its history", trailers, [], body)
            commit = commit_tree(repo, tree, [*([head] if head else []), *parents], message,
                                 identity())  # fmt: skip
    # Into this repository, as the command sees it (its --git-dir & co).
    nested.copy_objects(repo, ws.repo, [commit])
    return commit


def dirty_at_risk(ws: Workspace, *, ignored: bool = False) -> list[AtRiskPath]:
    """All dirty work of the work tree with its owners (unknown when unprovable)."""
    from guards.git.dirty import read_dirty

    dirty = read_dirty(ws.repo, ignored=ignored)
    data, _problem = ws.read_ledger()
    owners = ws.owners(dirty, data)
    return [AtRiskPath(d.path, o.session) for d, o in zip(dirty, owners, strict=True)]


def _group(ws: Workspace, at_risk: list[AtRiskPath]) -> dict[str | None, list[str]]:
    groups: dict[str | None, list[str]] = {}
    for item in at_risk:
        groups.setdefault(item.owner, []).append(item.path)
    return groups


def build_snapshots(
    ws: Workspace,
    groups: dict[str | None, list[str]],
    *,
    command: str,
    now: float,
    split_local_only: bool,
    extra_parents: dict[str | None, list[str]] | None = None,
    subject: str = "guards rescue",
    body: str = "",
    handled: Collection[str] | None = (),
    progress: bool = False,
    looks: Looks | None = None,
) -> list[_Built]:
    """The commits for each owner's paths, verified; no ref is created here.

    A repository among the paths is checked (only a clean submodule passes) unless it
    is ``handled`` already (:mod:`.nested`); ``handled=None`` checks none."""
    repo = ws.repo
    top = repo.worktree
    owner_of: dict[str, str | None] = {}
    repos: list[str] = []
    from guards.protect.snapshot import expand_paths

    expanded: dict[str | None, list[str]] = {}
    for owner, paths in groups.items():
        found, nested = expand_paths(top, paths, looks)
        repos += nested
        for p in found:
            if p not in owner_of:
                owner_of[p] = owner
                expanded.setdefault(owner, []).append(p)
    all_paths = list(owner_of)
    if handled is not None:
        _check_nested(ws, [r for r in repos if r not in handled])
    _check_caps(ws, all_paths, looks)
    # Verification overlaps the capture. The files are read once, here, their raw bytes
    # packed into the store (fast-import) while git waits; their ids then go into the
    # private index as they are (git hashes only what was not read whole: see
    # Capture._read_already), and their blobs are read back here while git writes the
    # trees.
    hashed = threading.Event()
    stored = threading.Event()
    env: dict[str, str] = {}

    def on_hashed(cap: Capture) -> None:
        env.update(cap.env)
        hashed.set()

    started = time.monotonic()
    delay = ws.config.progress_delay

    def early_check() -> tuple[dict[str, State | str], set[str], set[str]]:
        shown = Progress(
            "Rescuing", len(all_paths), quiet=not progress, delay=delay, started=started
        )
        try:
            disk = disk_states(repo, all_paths, True, store=True, on_file=shown.tick)
            read.update(disk)
        finally:
            stored.set()  # never leave the capture waiting
        shown.done()
        oids = {s.oid for s in disk.values() if isinstance(s, Entry) and s.mode != GITLINK}
        hashed.wait()
        shown = Progress(
            "Verifying rescue", len(oids), quiet=not progress, delay=delay, started=started
        )
        bad = set(check_objects(repo, oids, env, on_read=shown.tick))
        shown.done()
        return disk, oids, bad

    read: dict[str, State | str] = {}  # what the early check read and stored

    def stored_read() -> dict[str, State | str]:
        stored.wait()
        return read

    early = _Beside(early_check)
    try:
        cap = Capture.take(
            repo, all_paths, on_hashed=on_hashed, before_hashing=stored_read, looks=looks
        )
    finally:
        hashed.set()  # never leave the checker waiting
        early.join()  # its reads end before the capture is cleaned up, even after a failure
    with cap:
        disk, checked, bad = early.result()
        _verify_capture(ws, cap, disk, checked, bad)
        built = _build_all(
            ws,
            cap,
            expanded,
            all_paths,
            command=command,
            now=now,
            split_local_only=split_local_only,
            extra_parents=extra_parents,
            subject=subject,
            body=body,
        )
        # Verified: into the repository's store, packed, before any ref names them.
        cap.migrate()
        return built


def _build_all(
    ws: Workspace,
    cap: Capture,
    expanded: dict[str | None, list[str]],
    all_paths: list[str],
    *,
    command: str,
    now: float,
    split_local_only: bool,
    extra_parents: dict[str | None, list[str]] | None,
    subject: str,
    body: str,
) -> list[_Built]:
    local_only: set[str] = set()
    if split_local_only:
        local_only = _local_only(ws, all_paths)
    built = []
    for owner, paths in expanded.items():
        built.append(
            _commit_owner(
                ws,
                cap,
                owner,
                paths,
                command=command,
                now=now,
                local_only=[p for p in paths if p in local_only],
                extra_parents=(extra_parents or {}).get(owner, []),
                subject=subject,
                body=body,
                split=split_local_only,
            )
        )
    return built


def _commit_owner(
    ws: Workspace,
    cap: Capture,
    owner: str | None,
    paths: list[str],
    *,
    command: str,
    now: float,
    local_only: list[str],
    extra_parents: list[str],
    subject: str,
    body: str,
    split: bool,
) -> _Built:
    repo = ws.repo
    ident = identity()
    caller = ws.caller or "unidentified"
    head_parents = [cap.head] if cap.head else []

    def make(subset: list[str], withheld: list[str], extra: list[str]) -> tuple[str, str]:
        wt_tree = cap.tree(subset, "worktree")
        ix_tree = cap.tree(subset, "index")
        # The capture already read back its own tree and HEAD's needs no check.
        if wt_tree != cap.all_tree:
            _verify_tree(cap, wt_tree, subset, "worktree")
        if ix_tree != cap.head_tree:
            _verify_tree(cap, ix_tree, subset, "index")
        base = [
            ("Rescued-For", owner or UNKNOWN),
            ("Rescued-By", caller),
            ("Command", command.replace("\n", " ")),
            ("Host", sessions.hostname()),
            ("Time", _iso(now)),
            ("Head", cap.head or "unborn"),
        ]
        index_commit = commit_tree(
            repo,
            ix_tree,
            head_parents,
            _message(f"{subject}: index state for {_who(owner)}", base, subset),
            ident,
            cap.env,
        )
        parents = [*head_parents, index_commit]
        # The tree holds the files' bytes as they were on disk (no clean filter, no eol
        # conversion): guards rescue restore writes them back as they are.
        trailers = [*base, ("Index", index_commit), ("Bytes", RAW_BYTES)]
        stages = cap.stages_tree(subset)
        if stages is not None:
            stages_commit = commit_tree(
                repo,
                stages,
                [],
                _message(f"{subject}: conflict stages for {_who(owner)}", base, subset),
                ident,
                cap.env,
            )
            parents.append(stages_commit)
            trailers.append(("Conflict-Stages", stages_commit))
        parents += extra
        if withheld:
            trailers.append(("Withheld", f"{len(withheld)} local-only paths (secret or ignored)"))
        n = len(subset)
        commit = commit_tree(
            repo,
            wt_tree,
            parents,
            _message(
                f"{subject}: {n} path{'s' if n != 1 else ''} of {_who(owner)} "
                f"before `{command.splitlines()[0] if command else ''}`",
                trailers,
                subset,
                body,
            ),
            ident,
            cap.env,
        )
        return commit, index_commit

    commit, index_commit = make(paths, [], extra_parents)
    pushable = commit
    if split and (local_only or extra_parents):
        # What leaves the machine holds no local-only path and no local history that
        # might (an earlier checkpoint's secrets live in its parents).
        keep = [p for p in paths if p not in set(local_only)]
        pushable, _ = make(keep, local_only, [])
    return _Built(owner, paths, commit, index_commit, pushable, local_only)


# -- checks before and after --------------------------------------------------------------


def _check_nested(ws: Workspace, repos: list[str]) -> None:
    """A nested repository's files are not in a gitlink: only a clean submodule passes."""
    for r in repos:
        absolute = ws.repo.worktree / r
        res = git.run(
            ["status", "--porcelain", "-z", "--untracked-files=all", "--ignore-submodules=none"],
            cwd=absolute,
            check=False,
        )
        if res.returncode != 0:
            raise RescueFailedError(
                f"cannot rescue {show_path(r + '/')}: git cannot read this nested repository "
                f"({git.GitError([], res.returncode, res.stderr)}); nothing was run "
                f"(override: {OVERRIDE})"
            )
        if res.stdout:
            raise RescueFailedError(
                f"cannot rescue {show_path(r + '/')}: a submodule or nested repository with "
                f"uncommitted files (a gitlink does not hold them); commit them inside it "
                f"first; nothing was run (override: {OVERRIDE})"
            )
        first = next(index_entries_of(ws.repo.run, [r]), None)
        if first is None or first.entry.mode != GITLINK:
            raise RescueFailedError(
                f"cannot rescue {show_path(r + '/')}: an untracked nested repository (its "
                f"history lives in its own .git, which no commit here can hold); move it out "
                f"of the checkout or push it; nothing was run (override: {OVERRIDE})"
            )


def _human(size: int) -> str:
    for unit, factor in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if size >= factor:
            return f"{size / factor:.1f}{unit}"
    return f"{size}B"


def _check_caps(ws: Workspace, paths: list[str], looks: Looks | None = None) -> None:
    """Over a cap, the rescue fails naming the files and the override; nothing is dropped."""
    max_file = int(ws.config.get("rescue.max_file_size"))
    max_total = int(ws.config.get("rescue.max_total_size"))
    base = os.fspath(ws.repo.worktree) + os.sep
    total = 0
    over: list[tuple[str, int]] = []
    for p in paths:
        seen = look(base, p, looks)
        if seen is None or not stat.S_ISREG(seen[0]):
            continue
        total += seen[1]
        if seen[1] > max_file:
            over.append((p, seen[1]))
    if over:
        over.sort(key=lambda item: -item[1])
        shown = listing([f"{show_path(p)} ({_human(s)})" for p, s in over])
        raise RescueFailedError(
            f"rescue refused: {shown} over rescue.max_file_size ({_human(max_file)}); "
            f"nothing was run; raise it with GUARDS_RESCUE_MAX_FILE_SIZE={over[0][1]} "
            f"or accept the loss with {OVERRIDE}"
        )
    if total > max_total:
        raise RescueFailedError(
            f"rescue refused: {len(paths)} paths hold {_human(total)}, over "
            f"rescue.max_total_size ({_human(max_total)}); nothing was run; raise it with "
            f"GUARDS_RESCUE_MAX_TOTAL_SIZE={total} or accept the loss with {OVERRIDE}"
        )


# -- kept commits -----------------------------------------------------------------------------


def rescue_commits(
    ws: Workspace, commits: list[tuple[str, str, str | None]], *, command: str
) -> list[RescueResult]:
    """Keep existing commits (stash entries, branch tips) reachable under rescue refs."""
    if not commits:
        return []
    now = time.time()
    ns = namespace(ws)
    stamp = _stamp(now)
    slug = command_slug(command)
    wanted = []
    for oid, label, owner in commits:
        res = ws.repo.run(["rev-parse", "--verify", "-q", f"{oid}^{{commit}}"], check=False)
        if res.returncode != 0:
            raise RescueFailedError(
                f"cannot keep {label}: commit {oid} is not readable; nothing was run "
                f"(override: {OVERRIDE})"
            )
        full = res.stdout.decode().strip()
        what = command_slug(label.replace("@{", "-").replace("}", ""), 30)
        name = f"{ns}/{owner_component(owner)}/{stamp}-{slug}-{what}"
        wanted.append((name, full))
    refs = create_refs(ws, wanted, f"guards rescue: {command}")
    remote = str(ws.config.get("rescue.remote")) or None
    withheld = {
        ref: _stash_local_only(ws, oid) if remote else []
        for ref, (_, oid) in zip(refs, wanted, strict=True)
    }
    pushes = push(
        ws,
        remote,
        [(oid, ref) for ref, (_, oid) in zip(refs, wanted, strict=True) if not withheld[ref]],
    )
    results = [
        RescueResult(
            ref=ref,
            commit=oid,
            owner=owner,
            paths=[],
            push=pushes[ref][0] if ref in pushes else None,
            push_detail=pushes[ref][1] if ref in pushes else "",
            remote=remote,
            label=label,
            local_only=withheld[ref],
        )
        for ref, (_, oid), (_, label, owner) in zip(refs, wanted, commits, strict=True)
    ]
    log_rescues(ws, results, command=command, now=now)
    return results
