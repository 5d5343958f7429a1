"""Worktree and branch checks: worktrees registered or not, owners gone, the graveyard."""

from __future__ import annotations

from guards.doctor.findings import Context, Finding, Level, days, listing, plural
from guards.git.history import default_branch
from guards.git.names import HEADS
from guards.git.refs import for_each_ref
from guards.output import age, show_path
from guards.protect.worktrees import real, registry


def check_worktrees(ctx: Context) -> list[Finding]:
    repo = ctx.repo
    if repo is None:
        return []
    listed = ctx.git_worktrees()
    registered = registry(ctx.data)
    git_paths = {real(w.path) for w in listed}
    unregistered, dead_owner, prunable, locked = [], [], [], []
    for w in listed:
        if w.locked is not None:
            locked.append(w.path)
        if w.prunable is not None:
            prunable.append((w.path, w.prunable))
        key_record = registered.get(real(w.path))
        if key_record is None:
            if not w.is_main:
                unregistered.append(w.path)
            continue
        owner = str(key_record[1].get("session") or "")
        st = ctx.sessions.get(owner)
        if st is None or not st.live:
            dead_owner.append((w.path, owner, st.state if st else "unknown session"))
    missing = [
        str(rec.get("path") or key)
        for path, (key, rec) in registered.items()
        if path not in git_paths
    ]
    data = {
        "worktrees": [w.path for w in listed],
        "registered": len(registered),
        "unregistered": unregistered,
        "locked": locked,
    }
    findings = [
        Finding(
            Level.OK,
            "worktrees",
            "worktrees",
            f"the main worktree and {plural(len(listed) - 1, 'linked worktree')}: "
            f"{len(listed) - 1 - len(unregistered)} registered, "
            f"{len(unregistered)} unregistered, {len(locked)} locked",
            data=data,
        )
    ]
    if unregistered:
        findings.append(
            Finding(
                Level.OK,
                "worktrees",
                "worktrees-unregistered",
                f"worktrees made outside guards (owner unknown): {listing(unregistered)}",
                data={"worktrees": unregistered},
            )
        )
    if dead_owner:
        findings.append(
            Finding(
                Level.WARN,
                "worktrees",
                "worktrees-owner-dead",
                "worktrees whose owner is gone: "
                + listing([f"{p} ({o or 'no owner'}, {s})" for p, o, s in dead_owner]),
                "guards reap shows what reaping would rescue; guards reap --apply does it",
                {"worktrees": [p for p, _, _ in dead_owner]},
            )
        )
    if prunable:
        findings.append(
            Finding(
                Level.WARN,
                "worktrees",
                "worktrees-prunable",
                "prunable worktrees: " + listing([f"{p} ({why})" for p, why in prunable]),
                "check nothing there is still needed, then git worktree prune",
                {"worktrees": [p for p, _ in prunable]},
            )
        )
    if missing:
        findings.append(
            Finding(
                Level.WARN,
                "worktrees",
                "worktrees-missing",
                f"registered worktrees git no longer knows: {listing(missing)}",
                f"forget it: guards worktree remove {show_path(missing[0])}",
                {"worktrees": missing},
            )
        )
    return findings


def check_graveyard(ctx: Context) -> list[Finding]:
    repo = ctx.repo
    if repo is None:
        return []
    tips = []
    if repo.head() is not None:
        tips.append("HEAD")
    default = default_branch(repo.run)
    if default is not None:
        tips.append(default)
    if not tips:
        return [Finding(Level.OK, "branches", "graveyard", "no commits yet")]
    fields = ("refname", "upstream", "committerdate:unix")
    rows = for_each_ref(repo.run, fields, [HEADS], no_merged=tips)
    namespace = str(ctx.setting("rescue.namespace")) + "/"
    checked_out = {w.branch for w in ctx.git_worktrees()}
    graves = []
    for name, upstream, when_text in rows:
        when = int(when_text or 0)
        if upstream or name.startswith(namespace) or name in checked_out:
            continue
        if ctx.now - when > ctx.stale_after:
            graves.append((name.removeprefix(HEADS), when))
    if not graves:
        return [Finding(Level.OK, "branches", "graveyard", "no abandoned branches")]
    graves.sort(key=lambda g: g[1])
    return [
        Finding(
            Level.WARN,
            "branches",
            "graveyard",
            f"{plural(len(graves), 'branch', 'branches')} with no upstream, not merged, "
            f"untouched for over {days(ctx.stale_after)}: "
            + listing([f"{b} ({age(t, ctx.now)})" for b, t in graves]),
            f"push (git push -u REMOTE {graves[0][0]}), merge, or delete after review "
            f"(git branch -D {graves[0][0]})",
            {"branches": [b for b, _ in graves]},
        )
    ]
