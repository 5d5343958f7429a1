"""The reaper: rescue first, prune second.

For each worktree whose owner is dead (pid gone or reused, session ended, or no pid
and idle past the TTL) and that nobody else holds (a lock guards did not write belongs
to a person or another tool; a guards lock naming another live session pins it), the
reaper snapshots its dirty work (ignored files included) and keeps its commits that
are on no remote, tag, rescue ref or other branch under rescue refs, verifies them,
pushes them if ``rescue.remote`` is set, and only then removes the worktree. A worktree
with a process running inside, or one whose check could not run, is skipped and
reported, never removed. Creating and reaping share one lock.

Removal is ``git worktree remove --force`` of that one worktree, which also deletes
its administrative directory (the per-worktree prune). ``git worktree prune`` is never
run: it would drop entries the reaper did not check.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import Any

from guards.errors import GuardsError, RefusedError
from guards.git import process as git
from guards.output import Progress, age
from guards.protect.rescue import (
    AtRiskPath,
    RescueFailedError,
    RescueResult,
    namespace,
    ref_values,
    rescue_commits,
    rescue_paths,
)
from guards.protect.worktrees import (
    WorktreeState,
    inspect,
    owner_liveness,
    process_cwds,
    processes_inside,
    real,
    serialize,
)
from guards.state.ledger import LedgerData, op_forget_paths, op_forget_worktree
from guards.state.session import Liveness
from guards.state.workspace import Workspace

REAP_COMMAND = "guards reap"


@dataclass
class Decision:
    state: WorktreeState
    #: reap, skip
    action: str
    reason: str
    #: after --apply: reaped, failed (nothing removed), or None
    outcome: str | None = None
    detail: str = ""
    rescues: list[RescueResult] = field(default_factory=list)

    def to_json(self, now: float) -> dict[str, Any]:
        return {
            **self.state.to_json(now),
            "action": self.action,
            "reason": self.reason,
            "outcome": self.outcome,
            "detail": self.detail,
            "rescues": [
                {
                    "ref": r.ref,
                    "commit": r.commit,
                    "paths": r.paths,
                    "label": r.label,
                    "push": r.push,
                    "push_detail": r.push_detail,
                }
                for r in self.rescues
            ],
        }


def lock_timeout(ws: Workspace) -> float:
    return float(ws.config.get("worktree.lock_timeout"))


def decide(
    st: WorktreeState,
    data: LedgerData | None,
    *,
    ttl: float,
    min_idle: float,
    include_unregistered: bool,
    now: float,
) -> Decision:
    """Reap or skip, with the reason; every unknown is a skip."""

    def skip(reason: str) -> Decision:
        return Decision(st, "skip", reason)

    if not st.registered and not include_unregistered:
        return skip("not made by guards (reaped only with --include-unregistered)")
    if st.problems:
        return skip("check could not run: " + "; ".join(st.problems))
    if st.locked_by_other:
        return skip(f"locked by a person or another tool ({st.locked or 'no reason given'})")
    pin = st.lock_session
    if pin and pin != st.owner and owner_liveness(data, pin, ttl, now)[0] == Liveness.LIVE:
        return skip(f"pinned by live session {pin}")
    if st.liveness == Liveness.LIVE:
        return skip(f"owner {st.owner} is alive ({st.owner_reason})")
    threshold = min_idle
    if st.liveness != Liveness.ENDED and not st.pid_checked:
        threshold = max(threshold, ttl)  # no pid to prove death: idleness must
    idle = st.idle(now)
    if idle is None:
        return skip("last activity unknown")
    if idle < threshold:
        return skip(f"active {age(st.last_activity, now)} (needs {threshold:g} s idle)")
    if st.exists and st.processes is None:
        return skip("cannot see which processes run inside (no /proc, no lsof)")
    if st.processes:
        shown = ", ".join(str(p) for p in st.processes[:5])
        return skip(f"process {shown} running inside")
    who = f"owner {st.owner} {st.liveness} ({st.owner_reason})" if st.registered else "unregistered"
    return Decision(st, "reap", f"{who}, idle {age(st.last_activity, now).removesuffix(' ago')}")


def plan(
    ws: Workspace,
    *,
    include_unregistered: bool,
    min_idle: float,
    now: float | None = None,
) -> tuple[list[Decision], LedgerData | None]:
    now = time.time() if now is None else now
    data, problem = ws.read_ledger()
    ttl = float(ws.config.get("session.ttl"))
    states = inspect(ws.repo, data, ttl=ttl, namespace=namespace(ws), now=now)
    decisions = []
    for st in states:
        if st.is_main:
            continue
        if problem is not None:
            st.problems.append(str(problem))
        decisions.append(
            decide(
                st,
                data,
                ttl=ttl,
                min_idle=min_idle,
                include_unregistered=include_unregistered,
                now=now,
            )
        )
    return decisions, data


def reap(
    ws: Workspace, *, apply: bool, include_unregistered: bool, min_idle: float
) -> list[Decision]:
    """The plan (dry run), or the plan carried out under the worktree lock."""
    if not apply:
        return plan(ws, include_unregistered=include_unregistered, min_idle=min_idle)[0]
    with serialize(ws.repo, lock_timeout(ws)):
        # Judged again under the lock: another reaper may have been first.
        decisions, _ = plan(ws, include_unregistered=include_unregistered, min_idle=min_idle)
        doomed = [d for d in decisions if d.action == "reap"]
        shown = Progress(
            "Reaping worktrees",
            len(doomed),
            quiet=ws.config.quiet,
            delay=ws.config.progress_delay,
        )
        for d in doomed:
            try:
                d.rescues = rescue_worktree(ws, d.state, command=REAP_COMMAND)
                remove_worktree(ws, d.state)
                d.outcome = "reaped"
            except GuardsError as e:
                d.outcome = "failed"
                d.detail = str(e)
            shown.tick()
        shown.done()
    return decisions


# -- the steps, shared with `guards worktree remove` ------------------------------------------


def rescue_worktree(ws: Workspace, st: WorktreeState, *, command: str) -> list[RescueResult]:
    """Dirty work and unsaved commits of one worktree to verified rescue refs."""
    results: list[RescueResult] = []
    if st.dirty and st.exists:
        wws = Workspace.open(cwd=st.path)
        if real(wws.repo.worktree) != real(st.path):
            raise RescueFailedError(f"{st.path} is no longer the top of a worktree; not removed")
        at_risk = [AtRiskPath(p.rstrip("/"), st.owner) for p in st.dirty]
        started = time.time()
        done = rescue_paths(wws, at_risk, command=command)
        verify_paths(wws, done)
        unchanged_since(wws, st, started, done)
        results += done
    if st.unsaved and st.head:
        label = f"branch {st.short_branch}" if st.short_branch else "detached HEAD"
        kept = rescue_commits(ws, [(st.head, label, st.owner)], command=command)
        values = ref_values(ws, [r.ref for r in kept])
        for r in kept:
            if values.get(r.ref) != st.head:
                raise RescueFailedError(f"{r.ref} does not hold {st.head} after the rescue")
        results += kept
    return results


def verify_paths(wws: Workspace, results: list[RescueResult]) -> None:
    """Read each rescue commit back: every rescued file still on disk is in its tree."""
    top = wws.repo.worktree
    for r in results:
        res = wws.repo.run(["ls-tree", "-r", "-z", "--name-only", r.commit])
        names = {os.fsdecode(n) for n in git.zsplit(res.stdout)}
        missing = [p for p in r.paths if os.path.lexists(top / p) and p not in names]
        if missing:
            raise RescueFailedError(
                f"rescue {r.ref} lacks {len(missing)} paths (e.g. {missing[0]}); not removed"
            )


def unchanged_since(
    wws: Workspace, st: WorktreeState, started: float, results: list[RescueResult]
) -> None:
    """Nothing became dirty or changed after the rescue began (else: not removed)."""
    from guards.git.dirty import read_dirty
    from guards.protect.snapshot import expand_paths
    from guards.protect.worktrees import unchanged_artifacts

    top = wws.repo.worktree
    rescued = {p for r in results for p in r.paths}
    skip = set(unchanged_artifacts(top, st.record.get("includes") or []))
    now_dirty = [
        d.path.rstrip("/")
        for d in read_dirty(wws.repo, ignored=True)
        if d.path.rstrip("/") not in skip
    ]
    files, _repos = expand_paths(top, now_dirty)
    for p in files:
        try:
            changed = os.lstat(top / p).st_mtime >= started
        except FileNotFoundError:
            changed = False
        if p not in rescued or changed:
            raise RescueFailedError(
                f"{st.path}: {p} changed while being reaped; rescued what was there, "
                f"not removed (run again)"
            )


def remove_worktree(
    ws: Workspace, st: WorktreeState, *, over_foreign_lock: bool = False, force: bool = False
) -> None:
    """Remove one worktree (and its administrative entry), then forget it in the ledger."""
    if st.exists and not force:
        inside = processes_inside(st.path, process_cwds())
        if inside is None or inside:
            raise RefusedError(
                f"{st.path}: "
                + ("a process started inside it" if inside else "cannot see processes inside it")
                + "; not removed"
            )
    ours = st.locked is not None and st.lock_session is not None
    if ours:
        ws.repo.run(["worktree", "unlock", st.path], readonly=False)
    args = ["worktree", "remove", "--force"]
    if over_foreign_lock and st.locked_by_other:
        args.append("--force")  # git's own override for a locked worktree
    try:
        ws.repo.run([*args, st.path], readonly=False)
    except GuardsError:
        if ours:  # put our lock back: the worktree stays as it was
            ws.repo.run(
                ["worktree", "lock", "--reason", st.locked or "", st.path],
                check=False,
                readonly=False,
            )
        raise
    forget(ws, st.path)


def forget(ws: Workspace, path: str) -> None:
    """Drop the worktree's registration and its path attributions from the ledger."""
    target = real(path)
    data = ws.ledger.read(rescues=False)  # every worktree's keys, to find this one's
    ws.ledger.append(
        [
            *(
                op_forget_worktree(key)
                for key, rec in data.worktrees.items()
                if _rec_path(key, rec) == target
            ),
            *(op_forget_paths(key) for key in data.paths if real(key) == target or key == path),
        ]
    )


def _rec_path(key: str, rec: object) -> str:
    if isinstance(rec, dict) and rec.get("path"):
        return real(str(rec["path"]))
    return real(key)
