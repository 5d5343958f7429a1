"""Work checks: dirty paths by owner and age, stashes, rescue refs, operations in progress."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from guards.doctor.findings import Context, Finding, Level, days, listing, plural
from guards.errors import GuardsError
from guards.git import operations
from guards.git import process as git
from guards.git.dirty import DirtyPath, parse_porcelain_v2, read_dirty
from guards.git.refs import for_each_ref
from guards.git.repo import Repo
from guards.output import age, show_path
from guards.state.attribution import classify


def _rescue_log(ctx: Context) -> list[dict[str, Any]]:
    rescues = ctx.data.rescues if ctx.data is not None else []
    return [r for r in rescues if isinstance(r, dict)]


def _dirty_paths(ctx: Context, repo: Repo) -> list[DirtyPath]:
    """The status started before the checks, else (none, or it failed: a submodule git
    cannot read) :func:`read_dirty`, which knows what to do then."""
    started, ctx.started_status = ctx.started_status, None
    if started is not None:
        res = started.result(check=False)
        if res.returncode == 0:
            return parse_porcelain_v2(res.stdout)
    return read_dirty(repo)


def check_dirty(ctx: Context) -> list[Finding]:
    repo = ctx.repo
    if repo is None or repo.toplevel is None:
        return []
    dirty = _dirty_paths(ctx, repo)
    if not dirty:
        return [Finding(Level.OK, "paths", "dirty", "the work tree is clean")]
    records: Mapping[str, Any] = (
        ctx.data.paths.get(repo.worktree_key, {}) if ctx.data is not None else {}
    )
    by_owner: dict[str, int] = {}
    stale: list[tuple[str, float, str]] = []
    orphaned: dict[str, list[str]] = {}
    stale_after = ctx.stale_after
    oldest: float | None = None
    for d in dirty:
        record = records.get(d.path)
        owner = (
            classify(record, repo.toplevel / d.path, None, repo.object_format)
            if record is not None
            else None
        )
        who = owner.session if owner is not None and owner.session else None
        by_owner[who or "unknown"] = by_owner.get(who or "unknown", 0) + 1
        since = owner.recorded if owner is not None and owner.recorded is not None else None
        if since is None:
            try:
                since = os.lstat(repo.toplevel / d.path).st_mtime
            except OSError:
                since = None
        if since is not None:
            oldest = since if oldest is None else min(oldest, since)
            if ctx.now - since > stale_after:
                stale.append((d.path, since, who or "owner unknown"))
        if who is not None:
            st = ctx.sessions.get(who)
            if st is None or not st.live:
                orphaned.setdefault(who, []).append(d.path)
    described = ", ".join(
        f"{'owner unknown' if k == 'unknown' else 'session ' + k} {n}"
        for k, n in sorted(by_owner.items(), key=lambda kv: (-kv[1], kv[0]))
    )
    findings = [
        Finding(
            Level.OK,
            "paths",
            "dirty",
            f"{plural(len(dirty), 'dirty path')} (oldest changed {age(oldest, ctx.now)}): "
            f"{described}",
            data={"total": len(dirty), "by_owner": by_owner, "oldest": oldest},
        )
    ]
    if stale:
        stale.sort(key=lambda s: s[1])
        findings.append(
            Finding(
                Level.WARN,
                "paths",
                "dirty-stale",
                f"{plural(len(stale), 'path')} dirty for over {days(stale_after)}: "
                + listing([f"{show_path(p)} ({age(t, ctx.now)}, {w})" for p, t, w in stale]),
                "commit, checkpoint (guards checkpoint) or discard them; guards status "
                "shows their owners",
                {"paths": [{"path": p, "since": t, "owner": w} for p, t, w in stale]},
            )
        )
    if orphaned:

        def state_of(sid: str) -> str:
            st = ctx.sessions.get(sid)
            return st.state if st is not None else "unknown session"

        parts = [
            f"{sid} ({state_of(sid)}, {plural(len(ps), 'path')})"
            for sid, ps in sorted(orphaned.items())
        ]
        findings.append(
            Finding(
                Level.WARN,
                "paths",
                "dirty-orphaned",
                f"dirty paths of sessions that are gone: {listing(parts)}",
                "review them (guards status); commit them, re-own them with guards record "
                "PATH, or discard them",
                {"sessions": orphaned},
            )
        )
    return findings


def check_stashes(ctx: Context) -> list[Finding]:
    repo = ctx.repo
    if repo is None:
        return []
    if not for_each_ref(repo.run, ("objectname",), ["refs/stash"]):
        return [Finding(Level.OK, "stashes", "stashes", "no stashes")]
    fmt = "--format=%H%x00%ct%x00%an%x00%gs"
    res = repo.run(["log", "-g", "-z", fmt, "refs/stash", "--"])
    fields = git.zsplit(res.stdout)
    by_rescue = {
        str(r.get("stash")): str(r.get("session") or r.get("owner") or "")
        for r in _rescue_log(ctx)
        if r.get("stash")
    }
    stashes: list[dict[str, Any]] = []
    for i in range(0, len(fields) - 3, 4):
        oid = fields[i].decode()
        stashes.append(
            {
                "name": f"stash@{{{i // 4}}}",
                "commit": oid,
                "time": int(fields[i + 1] or 0),
                "author": os.fsdecode(fields[i + 2]),
                "message": os.fsdecode(fields[i + 3]),
                "session": by_rescue.get(oid) or None,
            }
        )
    newest = max(s["time"] for s in stashes)
    old = [s for s in stashes if ctx.now - s["time"] > ctx.stale_after]
    findings = [
        Finding(
            Level.OK,
            "stashes",
            "stashes",
            f"{plural(len(stashes), 'stash', 'stashes')} (shared by every "
            f"worktree), newest {age(newest, ctx.now)}",
            data={"stashes": stashes},
        )
    ]
    if old:

        def who(s: dict[str, Any]) -> str:
            return f"session {s['session']}" if s["session"] else str(s["author"])

        findings.append(
            Finding(
                Level.WARN,
                "stashes",
                "stashes-old",
                f"{plural(len(old), 'stash', 'stashes')} older than "
                f"{days(ctx.stale_after)}: "
                + listing(
                    [
                        f"{s['name']} ({age(s['time'], ctx.now)}, {who(s)}: {s['message']})"
                        for s in old
                    ]
                ),
                f"look (git stash show -p {old[0]['name']}), then keep it "
                f"(git stash branch NAME {old[0]['name']}) or drop it",
                {"stashes": [s["name"] for s in old]},
            )
        )
    return findings


def check_rescues(ctx: Context) -> list[Finding]:
    repo = ctx.repo
    if repo is None:
        return []
    namespace = str(ctx.setting("rescue.namespace"))
    refs = [
        (name, int(when or 0))
        for name, when in for_each_ref(repo.run, ("refname", "creatordate:unix"), [namespace + "/"])
    ]
    if not refs:
        return [Finding(Level.OK, "rescues", "rescues", f"no rescue refs under {namespace}")]
    oldest = min(refs, key=lambda r: r[1])
    findings = [
        Finding(
            Level.OK,
            "rescues",
            "rescues",
            f"{plural(len(refs), 'rescue ref')} under {namespace}, oldest "
            f"{age(oldest[1], ctx.now)} ({oldest[0]})",
            data={"count": len(refs), "oldest": oldest[0]},
        )
    ]
    old = [name for name, when in refs if ctx.now - when > ctx.stale_after]
    if old:
        findings.append(
            Finding(
                Level.WARN,
                "rescues",
                "rescues-old",
                f"{plural(len(old), 'rescue ref')} older than {days(ctx.stale_after)}: "
                f"{listing(old)}",
                f"restore what is still wanted (guards rescue show {old[0]}), then delete "
                f"the ref (git update-ref -d {old[0]})",
                {"refs": old},
            )
        )
    remote = str(ctx.setting("rescue.remote"))
    if remote:
        pushed = {str(r.get("ref")): r.get("push") for r in _rescue_log(ctx) if r.get("ref")}
        from guards.protect.rescue.push import PushOutcome  # the rescue package: only here

        unpushed = [name for name, _ in refs if pushed.get(name) != PushOutcome.PUSHED]
        if unpushed:
            findings.append(
                Finding(
                    Level.WARN,
                    "rescues",
                    "rescues-unpushed",
                    f"{plural(len(unpushed), 'rescue ref')} not pushed to {remote}: "
                    f"{listing(unpushed)}",
                    f"push one with git push {remote} {unpushed[0]}:{unpushed[0]} (refs "
                    f"holding secrets stay local by design)",
                    {
                        "remote": remote,
                        "refs": unpushed,
                        "status": {n: pushed.get(n) for n in unpushed},
                    },
                )
            )
        else:
            findings.append(
                Finding(
                    Level.OK,
                    "rescues",
                    "rescues-unpushed",
                    f"every rescue ref is pushed to {remote}",
                )
            )
    findings += _redundant_rescues(ctx)
    return findings


def _redundant_rescues(ctx: Context) -> list[Finding]:
    """Rescues whose content is already elsewhere: prunable without losing anything."""
    from guards.protect.rescue.retention import redundant_rescues
    from guards.state.identity import caller_id
    from guards.state.ledger import Ledger
    from guards.state.workspace import Workspace

    repo = ctx.repo
    if repo is None:
        return []
    ledger = ctx.ledger or Ledger(repo.ledger_dir_text)
    try:
        found = redundant_rescues(Workspace(repo, ctx.config, ledger, caller_id()))
    except GuardsError:
        return []  # informational: the other rescue checks report what cannot be read
    if not found:
        return []
    refs = [r.rescue.ref for r in found]
    return [
        Finding(
            Level.WARN,
            "rescues",
            "rescues-redundant",
            f"{plural(len(refs), 'rescue ref')} hold nothing that is not already elsewhere "
            f"(restored, committed or pushed): {listing(refs)}",
            "guards rescue prune --redundant --dry-run, then guards rescue prune --redundant --yes",
            {"refs": refs, "where": {r.rescue.ref: list(r.where) for r in found}},
        )
    ]


def check_operations(ctx: Context) -> list[Finding]:
    repo = ctx.repo
    if repo is None or repo.is_bare:
        return []
    findings = [
        Finding(
            Level.WARN,
            "operations",
            "operation",
            f"a {op} is in progress",
            f"finish it: {operations.FINISH.get(op, 'see git status')}",
            {"operation": op},
        )
        for op in repo.operations_in_progress()
    ]
    for name in operations.AUTOSTASH_FILES:
        path = repo.git_dir / name
        try:
            oid = path.read_text().strip()
        except FileNotFoundError:
            continue
        except OSError as e:
            oid = f"unreadable: {e.strerror}"
        findings.append(
            Finding(
                Level.PROBLEM,
                "operations",
                "autostash",
                f"local changes are parked in {path} ({oid}), held by no ref",
                f"finish the operation (it re-applies them), or keep them now: "
                f"git stash store -m autostash {oid}",
                {"file": os.fsdecode(path), "commit": oid},
            )
        )
    if not findings:
        findings.append(Finding(Level.OK, "operations", "operation", "no operation in progress"))
    return findings
