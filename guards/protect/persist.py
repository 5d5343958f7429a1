"""Checkpoints, and persisting a session's work when it ends.

A checkpoint commits a session's own dirty work (paths recorded by it and unchanged
since) to its WIP ref, ``refs/wip/<session>`` beside the rescue namespace, touching
neither the index nor any branch: a new commit each time, its first parent HEAD, its
second the index state, its last the previous checkpoint. With ``rescue.remote`` set it
is pushed there: what leaves the machine holds no ignored or secret-looking file and no
local history (an earlier checkpoint could hold one).

Pushing is never a plain force. The lease is the value this repository last pushed to
that remote ref (kept under ``refs/guards/remote/<remote>/wip/<session>``), so a WIP
ref someone else moved on the remote (the same session id on another machine) is never
overwritten blindly: the push is rejected as stale, guards fetches what the remote
holds, makes it a parent of what it pushes (nothing on the remote is dropped) and
retries once with the fetched value as the lease.

:func:`persist_session` is what ending a session calls (``guards session end``, the
harnesses' SessionEnd hook): it never raises, and its :class:`PersistResult` says in
one line what became of the work.
"""

from __future__ import annotations

import contextlib
import os
import time
from dataclasses import dataclass, field
from typing import Any, Final

from guards.errors import GuardsError, RefusedError, UsageError, first_line
from guards.git.dirty import read_dirty
from guards.git.repo import discover
from guards.protect.rescue import (
    NO_HOOKS,
    PushOutcome,
    RescueFailedError,
    RescueResult,
    build_snapshots,
    classify_push,
    identity,
    log_rescues,
    push,
    ref_values,
    safe_component,
    wip_ref,
)
from guards.protect.snapshot import SnapshotError
from guards.state.attribution import Ownership
from guards.state.workspace import Workspace

#: Where the value last pushed to a remote's WIP ref is remembered (the push lease).
TRACKING_PREFIX = "refs/guards/remote/"
#: The command name a session's last checkpoint is logged under.
SESSION_END = "session end"


class PersistOutcome:
    """What became of a checkpoint's push (plain strings, as :class:`PushOutcome`)."""

    PUSHED: Final = "pushed"
    #: Nothing of the session was left uncommitted: no checkpoint, no push.
    NOTHING_TO_PUSH: Final = "nothing-to-push"
    #: Checkpointed here; no ``rescue.remote`` is set.
    LOCAL_ONLY: Final = "local-only"
    AUTH_DENIED: Final = "auth-denied"
    #: The remote's WIP ref moved under the push, and again after one fetch and retry.
    REMOTE_MOVED: Final = "remote-moved"
    #: The remote refused (a hook, a protected ref namespace).
    REJECTED: Final = "rejected"
    NETWORK: Final = "network"
    #: git did not say whether the push arrived: never reported as a failure.
    UNKNOWN: Final = "unknown"
    #: The checkpoint itself could not be taken (the work is still in the work tree).
    FAILED: Final = "failed"

    ALL: Final = (
        PUSHED,
        NOTHING_TO_PUSH,
        LOCAL_ONLY,
        AUTH_DENIED,
        REMOTE_MOVED,
        REJECTED,
        NETWORK,
        UNKNOWN,
        FAILED,
    )
    #: Outcomes that mean the work did not reach where it should have.
    FAILURES: Final = (AUTH_DENIED, REMOTE_MOVED, REJECTED, NETWORK, FAILED)


@dataclass(frozen=True)
class PersistResult:
    """A checkpoint and its push, as ``guards checkpoint`` and session end report it."""

    session: str
    outcome: str
    #: the session's WIP ref (``refs/wip/<session>``)
    ref: str | None = None
    #: the new checkpoint commit; None when none was taken
    commit: str | None = None
    previous: str | None = None
    paths: list[str] = field(default_factory=list)
    remote: str | None = None
    detail: str = ""
    #: the remote had moved: guards fetched it and pushed once more
    retried: bool = False
    #: what was pushed (the checkpoint, or its copy without local-only paths)
    pushed_commit: str | None = None
    #: paths kept out of the push (ignored files, secret-looking names)
    local_only: list[str] = field(default_factory=list)
    index_commit: str | None = None

    @property
    def failed(self) -> bool:
        """Whether the work missed where it was meant to go ("unknown" is no failure)."""
        return self.outcome in PersistOutcome.FAILURES

    @property
    def push(self) -> str | None:
        """The push outcome; None when nothing was pushed nor meant to be."""
        if self.remote is None or self.commit is None:
            return None
        return self.outcome

    def line(self) -> str:
        """One line saying what became of the session's work."""
        who = f"session {self.session}"
        if self.outcome == PersistOutcome.FAILED:
            return f"could not checkpoint the work of {who}: {self.detail}"
        if self.commit is None:
            return f"nothing of {who} to checkpoint" + (f" ({self.detail})" if self.detail else "")
        n = len(self.paths)
        line = f"checkpoint {self.commit[:12]}: {n} path{'s' if n != 1 else ''} to {self.ref}"
        if self.outcome == PersistOutcome.PUSHED:
            line += f"; pushed to {self.remote}"
            if self.retried:
                line += " (the remote had moved: fetched it and retried once)"
        elif self.outcome == PersistOutcome.UNKNOWN:
            line += (
                f"; whether the push to {self.remote} arrived is unknown ({self.detail}); "
                f"kept locally"
            )
        elif self.outcome != PersistOutcome.LOCAL_ONLY:
            line += f"; push to {self.remote} failed ({self.outcome}: {self.detail}), kept locally"
        if self.local_only:
            line += f"; {len(self.local_only)} secret/ignored paths kept local only"
        return line

    def to_json(self) -> dict[str, Any]:
        return {
            "session": self.session,
            "outcome": self.outcome,
            "failed": self.failed,
            "ref": self.ref,
            "commit": self.commit,
            "previous": self.previous,
            "paths": self.paths,
            "remote": self.remote,
            "push": self.push,
            "push_detail": self.detail,
            "retried": self.retried,
            "pushed_commit": self.pushed_commit,
            "local_only": self.local_only,
        }


def persist_session(ws: Workspace, session_id: str) -> PersistResult:
    """Checkpoint ``session_id``'s own dirty work and push it to ``rescue.remote``.

    The work is looked for in the worktree the session recorded (when it still is one
    of this repository's), else in ``ws``'s. Never raises: whatever goes wrong is the
    result's outcome (:data:`PersistOutcome.FAILED` with a one-line detail), so that a
    session's end is never hidden by its persist.
    """
    try:
        return checkpoint(_session_workspace(ws, session_id), session_id, command=SESSION_END)
    except GuardsError as e:
        return PersistResult(session_id, PersistOutcome.FAILED, detail=first_line(e))
    except OSError as e:
        detail = f"{e.strerror or e} ({e.filename})" if e.filename else str(e.strerror or e)
        return PersistResult(session_id, PersistOutcome.FAILED, detail=detail)
    except Exception as e:  # a bug must not keep the session from ending either
        return PersistResult(
            session_id,
            PersistOutcome.FAILED,
            detail=f"internal error ({type(e).__name__}: {first_line(e)})",
        )


def checkpoint(
    ws: Workspace, owner: str, *, message: str = "", command: str = "checkpoint"
) -> PersistResult:
    """Commit ``owner``'s own dirty work to its WIP ref, push it when a remote is set,
    and log it; raises :class:`GuardsError` when the checkpoint cannot be taken (a push
    that fails is the result's outcome, never an exception)."""
    mine_ws = ws if ws.caller == owner else Workspace(ws.repo, ws.config, ws.ledger, owner)
    if mine_ws.repo.toplevel is None:
        return PersistResult(owner, PersistOutcome.NOTHING_TO_PUSH, detail="no work tree")
    dirty = read_dirty(mine_ws.repo)
    data, problem = mine_ws.read_ledger()
    if problem is not None:
        raise GuardsError(
            f"{problem}; nothing can be proven the work of session {owner}, so nothing was "
            f"checkpointed",
            exit_code=problem.exit_code,
        )
    owners = mine_ws.owners(dirty, data)
    mine = [d.path for d, o in zip(dirty, owners, strict=True) if o.ownership == Ownership.MINE]
    remote = str(ws.config.get("rescue.remote")) or None
    if not mine:
        return PersistResult(owner, PersistOutcome.NOTHING_TO_PUSH, remote=remote)
    ref = wip_ref(mine_ws, owner)
    previous = ref_values(mine_ws, [ref]).get(ref)
    now = time.time()
    logged = command + (f" -m {message}" if message else "")
    try:
        built = build_snapshots(
            mine_ws,
            {owner: mine},
            command=logged,
            now=now,
            split_local_only=remote is not None,
            extra_parents={owner: [previous]} if previous else None,
            subject="guards checkpoint",
            body=message,
        )[0]
    except SnapshotError as e:
        raise RescueFailedError(f"checkpoint failed: {e}") from None
    res = mine_ws.repo.run(
        [
            *NO_HOOKS,
            "update-ref",
            "--create-reflog",
            "-m",
            f"guards {command}: {message or f'{len(mine)} paths'}",
            ref,
            built.commit,
            previous or "",
        ],
        check=False,
        readonly=False,
    )
    if res.returncode != 0:
        raise RefusedError(f"{ref} moved while checkpointing (another checkpoint?); run it again")
    outcome, detail, retried, pushed = PersistOutcome.LOCAL_ONLY, "", False, None
    if remote is not None:
        outcome, detail, retried, pushed = push_wip(mine_ws, remote, ref, built.pushable)
    result = PersistResult(
        session=owner,
        outcome=outcome,
        ref=ref,
        commit=built.commit,
        previous=previous,
        paths=built.paths,
        remote=remote,
        detail=detail,
        retried=retried,
        pushed_commit=pushed,
        local_only=built.local_only,
        index_commit=built.index_commit,
    )
    logged_result = RescueResult(
        ref=ref,
        commit=built.commit,
        owner=owner,
        paths=built.paths,
        push=result.push,
        push_detail=detail,
        remote=remote,
        local_only=built.local_only,
        index_commit=built.index_commit,
    )
    log_rescues(mine_ws, [logged_result], command=logged, now=now)
    return result


# -- the push --------------------------------------------------------------------------------


def tracking_ref(remote: str, ref: str) -> str:
    """Where the value last pushed to ``remote``'s ``ref`` is remembered."""
    return f"{TRACKING_PREFIX}{safe_component(remote)}/{ref.removeprefix('refs/')}"


def push_wip(
    ws: Workspace, remote: str, ref: str, commit: str
) -> tuple[str, str, bool, str | None]:
    """Push ``commit`` to ``remote``'s ``ref`` with the last pushed value as the lease.

    Returns (outcome, detail, retried, pushed commit). A stale lease (the remote moved)
    fetches the remote's value, adds it as a parent and retries once.
    """
    tracking = tracking_ref(remote, ref)
    lease = ref_values(ws, [tracking]).get(tracking, "")
    outcome, detail = _push_one(ws, remote, ref, commit, lease)
    retried = False
    if outcome == _STALE:
        retried = True
        fetched, fetch_outcome, fetch_detail = _fetch(ws, remote, ref, tracking)
        if fetch_outcome is not None:
            return (
                fetch_outcome,
                f"the remote moved; fetching it failed: {fetch_detail}",
                True,
                None,
            )
        if fetched is not None and not _is_ancestor(ws, fetched, commit):
            commit = _with_parent(ws, commit, fetched)
        outcome, detail = _push_one(ws, remote, ref, commit, fetched or "")
        if outcome == _STALE:
            return PersistOutcome.REMOTE_MOVED, detail, True, None
    if outcome == PersistOutcome.PUSHED:
        ws.repo.run(
            [*NO_HOOKS, "update-ref", "-m", f"guards: pushed to {remote}", tracking, commit],
            readonly=False,
        )
        return outcome, detail, retried, commit
    return outcome, detail, retried, None


#: Internal: the push was rejected because the lease no longer holds.
_STALE = "stale"


def _push_one(ws: Workspace, remote: str, ref: str, commit: str, lease: str) -> tuple[str, str]:
    outcome, detail = push(ws, remote, [(commit, ref)], leases={ref: lease})[ref]
    if outcome == PushOutcome.REJECTED and "stale info" in detail:
        return _STALE, detail
    if outcome == PushOutcome.PUSHED:
        return (PersistOutcome.NOTHING_TO_PUSH if "up to date" in detail else outcome), detail
    return outcome, detail


def _fetch(
    ws: Workspace, remote: str, ref: str, tracking: str
) -> tuple[str | None, str | None, str]:
    """The remote's value of ``ref`` into ``tracking``: (value or None when the remote
    has no such ref, failure outcome or None, detail)."""
    res = ws.repo.run(
        [
            *NO_HOOKS,
            "fetch",
            "--no-write-fetch-head",
            "--no-tags",
            "--no-auto-gc",
            "--no-recurse-submodules",
            remote,
            f"+{ref}:{tracking}",
        ],
        check=False,
        readonly=False,
        extra_env={"GIT_TERMINAL_PROMPT": "0", "GCM_INTERACTIVE": "never"},
    )
    if res.returncode == 0:
        return ref_values(ws, [tracking]).get(tracking), None, ""
    if b"couldn't find remote ref" in res.stderr:
        ws.repo.run([*NO_HOOKS, "update-ref", "-d", tracking], check=False, readonly=False)
        return None, None, ""
    outcome, detail = classify_push(res, [ref])[ref]
    return None, outcome, detail


def _is_ancestor(ws: Workspace, ancestor: str, commit: str) -> bool:
    """Git unable to tell counts as no: the push is then refused as a rewrite."""
    from guards.git.history import ancestry

    return ancestry(ws.repo.run, ancestor, commit) is True


def _with_parent(ws: Workspace, commit: str, parent: str) -> str:
    """``commit`` again with ``parent`` added as its last parent (same tree, message)."""
    info = ws.repo.run(["show", "-s", "--format=%T%x00%P%x00%B", commit]).stdout
    tree, parents, message = os.fsdecode(info).split("\0", 2)
    args = [*NO_HOOKS, "-c", "commit.gpgsign=false", "commit-tree", tree]
    for p in [*parents.split(), parent]:
        args += ["-p", p]
    text = message.rstrip("\n") + f"\nRemote-Wip: {parent}\n"
    res = ws.repo.run(
        [*args, "-F", "-"],
        stdin=text.encode("utf-8", "surrogateescape"),
        extra_env=identity(),
        readonly=False,
    )
    return res.stdout.decode().strip()


# -- whose worktree -----------------------------------------------------------------------------


def _session_workspace(ws: Workspace, session_id: str) -> Workspace:
    """Where the session's work is: the worktree holding most of the paths it recorded
    (then the worktree it started in), when that still is one of this repository's;
    else ``ws``'s. Either way with the session as the caller."""
    from guards.state.ledger import LedgerUnreadableError

    try:
        data = ws.ledger.read(rescues=False)  # every worktree's attributions
    except LedgerUnreadableError:
        data = None
    candidates: list[str] = []
    if data is not None:
        counts = {
            top: sum(
                1
                for rec in records.values()
                if isinstance(rec, dict) and rec.get("session") == session_id
            )
            for top, records in data.paths.items()
        }
        candidates += sorted((t for t, n in counts.items() if n), key=lambda t: -counts[t])
        record = data.sessions.get(session_id)
        recorded = record.get("worktree") if isinstance(record, dict) else None
        if isinstance(recorded, str):
            candidates.append(recorded)
    for top in candidates:
        if top == ws.repo.toplevel_text:
            break
        with contextlib.suppress(GuardsError, OSError):
            if os.path.isdir(top):
                other = discover(top)
                if (
                    os.path.realpath(other.common_dir_text)
                    == os.path.realpath(ws.repo.common_dir_text)
                    and other.toplevel_text is not None
                    and os.path.realpath(other.toplevel_text) == os.path.realpath(top)
                ):
                    return Workspace(other, ws.config, ws.ledger, session_id)
    return Workspace(ws.repo, ws.config, ws.ledger, session_id)


def end_session(ws: Workspace, session_id: str, *, persist: bool = True) -> PersistResult | None:
    """``guards session end``: persist the session's work (unless told not to), then mark
    it ended. A persist that fails never keeps the session from ending: it is the
    result. Raises :class:`UsageError` for a session the ledger does not know."""
    data = ws.ledger.read()
    if session_id not in data.sessions:
        raise UsageError(f"no session {session_id!r} in this repository")
    persisted = persist_session(ws, session_id) if persist else None
    with ws.ledger.transaction() as fresh:
        record = fresh.sessions.get(session_id)
        if isinstance(record, dict):
            record["ended"] = True
            record["last_seen"] = time.time()
    return persisted
