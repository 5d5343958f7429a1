"""Ledger checks: the ledger, its lock, corrupt ledgers kept aside, the sessions."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from guards.doctor.findings import (
    SESSION_STATES,
    STALE,
    Context,
    Finding,
    Level,
    SessionState,
    listing,
    plural,
)
from guards.git.refs import for_each_ref
from guards.output import age, show_path
from guards.state.ledger import SCHEMA, LedgerData
from guards.state.session import Liveness, Verdict, judge

#: How long the ledger lock may stay busy while doctor looks before it counts as stuck
#: (writers hold it for milliseconds).
LOCK_PATIENCE = 1.0


def session_states(data: LedgerData, ttl: float, now: float) -> dict[str, SessionState]:
    """Every recorded session with why it counts as live, ended, dead or stale."""
    return {sid: describe(judge(sid, rec, ttl, now), now) for sid, rec in data.sessions.items()}


def describe(v: Verdict, now: float) -> SessionState:
    """Doctor's words for a verdict; the verdict itself is the state layer's."""
    if v.liveness == Liveness.UNKNOWN:
        # A record guards cannot read proves nothing about liveness.
        return SessionState(v, STALE, "unreadable session record")
    if v.liveness == Liveness.ENDED:
        return SessionState(v, v.liveness, "ended")
    if v.pid_checked:
        if v.liveness == Liveness.LIVE:
            return SessionState(v, v.liveness, f"pid {v.pid} running")
        why = "reused" if v.pid_running else "gone"
        return SessionState(v, v.liveness, f"pid {v.pid} {why}")
    if v.liveness == Liveness.LIVE:
        return SessionState(v, v.liveness, "heartbeat")
    idle = age(now - (v.idle or 0.0), now).removesuffix(" ago")
    return SessionState(v, STALE, f"no heartbeat for {idle}")


def check_ledger(ctx: Context) -> list[Finding]:
    if ctx.ledger is None:
        return []
    path = ctx.ledger.path
    if ctx.ledger_problem is not None:
        fix = (
            "upgrade guards (the ledger is left untouched)"
            if ctx.ledger_problem.newer_schema is not None
            else "`guards status` keeps the corrupt ledger aside; sessions then record again"
        )
        return [
            Finding(
                Level.PROBLEM,
                "ledger",
                "ledger",
                f"{ctx.ledger_problem}: every owner is unknown",
                fix,
                {"path": os.fsdecode(path)},
            )
        ]
    assert ctx.data is not None
    if not ctx.ledger.exists():
        return [
            Finding(
                Level.OK,
                "ledger",
                "ledger",
                "no ledger yet (nothing recorded)",
                data={"path": os.fsdecode(path), "exists": False},
            )
        ]
    d = ctx.data
    # Other worktrees' attributions are counted from the snapshot (doctor reads only
    # this worktree's).
    attributed = sum(len(p) for p in d.paths.values()) + d.elsewhere
    return [
        Finding(
            Level.OK,
            "ledger",
            "ledger",
            f"ledger readable (schema {SCHEMA}): {plural(len(d.sessions), 'session')}, "
            f"{plural(attributed, 'attributed path')}, {plural(len(d.rescues), 'rescue')}, "
            f"{plural(len(d.worktrees), 'registered worktree')}",
            data={"path": os.fsdecode(path), "exists": True, "schema": SCHEMA},
        )
    ]


def lock_holders(lock_path: Path) -> list[int]:
    """Pids holding a lock on ``lock_path``, from ``/proc/locks`` (Linux; else empty)."""
    try:
        inode = os.stat(lock_path).st_ino
        with open("/proc/locks") as f:
            lines = f.read().splitlines()
    except OSError:
        return []
    pids = []
    for line in lines:
        parts = line.split()
        if len(parts) >= 6 and parts[5].rsplit(":", 1)[-1] == str(inode):
            try:
                pids.append(int(parts[4]))
            except ValueError:
                continue
    return sorted(set(pids))


def lock_is_free(lock_path: Path, patience: float = LOCK_PATIENCE) -> bool | None:
    """Can the ledger lock be had within ``patience`` seconds? None: cannot tell.

    A shared, non-blocking ``flock`` on a read-only descriptor, released at once: it
    neither creates nor changes the lock file (filelock's own acquire would chmod it).
    """
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not on POSIX
        return None
    try:
        fd = os.open(lock_path, os.O_RDONLY)
    except FileNotFoundError:
        return True
    except OSError:
        return None
    try:
        deadline = time.monotonic() + patience
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    return False
                time.sleep(0.05)
                continue
            except OSError:
                return None
            fcntl.flock(fd, fcntl.LOCK_UN)
            return True
    finally:
        os.close(fd)


def check_ledger_lock(ctx: Context) -> list[Finding]:
    if ctx.ledger is None:
        return []
    lock_path = ctx.ledger.lock_path
    free = lock_is_free(lock_path)
    if free:
        return [Finding(Level.OK, "ledger", "lock", "the ledger lock is free")]
    if free is None:
        return [
            Finding(
                Level.PROBLEM,
                "ledger",
                "lock",
                f"cannot test the ledger lock {lock_path}",
                f"check the permissions of {lock_path}",
            )
        ]
    holders = lock_holders(lock_path)
    by = f" by pid {', '.join(map(str, holders))}" if holders else ""
    return [
        Finding(
            Level.PROBLEM,
            "ledger",
            "lock",
            f"the ledger lock {lock_path} has been held{by} for over {LOCK_PATIENCE:g}s "
            f"(writers hold it for milliseconds): guarded commands will time out",
            f"find and end the process holding it{by}",
            {"path": os.fsdecode(lock_path), "holders": holders},
        )
    ]


def check_kept_aside(ctx: Context) -> list[Finding]:
    if ctx.ledger is None:
        return []
    aside = ctx.ledger.kept_aside()
    if not aside:
        return [Finding(Level.OK, "ledger", "kept-aside", "no corrupt ledgers kept aside")]
    names = [p.name for p in aside]
    return [
        Finding(
            Level.WARN,
            "ledger",
            "kept-aside",
            f"{plural(len(aside), 'corrupt ledger')} kept aside: {listing(names)}",
            f"look at them, then delete them (rm {show_path(os.fsdecode(aside[0]))})",
            {"files": [os.fsdecode(p) for p in aside]},
        )
    ]


def check_sessions(ctx: Context) -> list[Finding]:
    if ctx.data is None:
        return []
    counts = dict.fromkeys(SESSION_STATES, 0)
    gone = []
    for sid, st in sorted(ctx.sessions.items()):
        counts[st.state] += 1
        if st.state in {Liveness.DEAD, STALE}:
            gone.append((sid, st))
    summary = ", ".join(f"{n} {state}" for state, n in counts.items() if n)
    data: dict[str, Any] = {
        "counts": counts,
        "sessions": {
            sid: {"state": st.state, "reason": st.reason} for sid, st in ctx.sessions.items()
        },
    }
    findings = [
        Finding(
            Level.OK,
            "sessions",
            "sessions",
            f"{plural(len(ctx.sessions), 'session')}: {summary}" if summary else "no sessions",
            data=data,
        )
    ]
    if gone:
        findings.append(
            Finding(
                Level.WARN,
                "sessions",
                "sessions-gone",
                f"{plural(len(gone), 'session')} stopped without ending: "
                f"{listing([f'{sid} ({st.state}: {st.reason})' for sid, st in gone])}",
                f"review their work (guards status), then guards session end {gone[0][0]}",
                {"sessions": [sid for sid, _ in gone]},
            )
        )
    return findings


def check_checkpoints(ctx: Context) -> list[Finding]:
    """The last checkpoint (``refs/wip/<session>``) of each session that stopped
    without ending: where a crashed writer's work was last saved."""
    if ctx.repo is None or ctx.data is None:
        return []
    gone = [sid for sid, st in ctx.sessions.items() if st.state in {Liveness.DEAD, STALE}]
    if not gone:
        return []
    parent = str(ctx.setting("rescue.namespace")).rsplit("/", 1)[0]
    # here: the rescue package (its builder) is not for the doctor's other checks
    from guards.protect.rescue import owner_component

    refs = {f"{parent}/wip/{owner_component(sid)}": sid for sid in gone}
    fields = ("refname", "objectname", "creatordate:unix")
    found: list[tuple[str, str, str, float]] = []
    for ref, oid, when in for_each_ref(ctx.repo.run, fields, list(refs)):
        if ref in refs:
            found.append((refs[ref], ref, oid, float(when or 0)))
    if not found:
        return []
    found.sort(key=lambda f: -f[3])
    sid, ref, _, _ = found[0]
    return [
        Finding(
            Level.WARN,
            "sessions",
            "checkpoints",
            "last checkpoints of sessions that stopped without ending: "
            + listing([f"{s} {r} ({age(t, ctx.now)})" for s, r, _, t in found]),
            f"see what it holds (git show --stat {ref}), take files back (git restore "
            f"--source={ref} -- PATH), then guards session end {sid}",
            {
                "checkpoints": [
                    {"session": s, "ref": r, "commit": c, "time": t} for s, r, c, t in found
                ]
            },
        )
    ]
