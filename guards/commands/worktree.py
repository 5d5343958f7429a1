"""guards worktree add/list/remove: one registered, locked worktree per writer."""

from __future__ import annotations

import argparse
import os
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from guards import output
from guards.errors import ExitCode, GuardsError, RefusedError, UsageError
from guards.git.process import GitError
from guards.git.worktrees import list_worktrees
from guards.output import show_path
from guards.protect.land import is_landed, starting_branch, target_of
from guards.protect.reaper import forget, lock_timeout, remove_worktree, rescue_worktree
from guards.protect.rescue import namespace, report_line
from guards.protect.worktrees import (
    WorktreeState,
    find_includes,
    include_patterns,
    inspect,
    lock_reason,
    place_includes,
    real,
    record_excludes,
    registry,
    serialize,
)
from guards.state import session as sessions
from guards.state.ledger import LedgerData, op_worktree
from guards.state.repositories import remember
from guards.state.workspace import Workspace, touch_record

HELP = "one worktree per writer: add (registered and locked), list, remove safely"


def configure(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    add = sub.add_parser("add", help="make a worktree for one session, locked while it lives")
    add.add_argument("path", metavar="PATH", help="where the new worktree goes")
    add.add_argument("-b", dest="branch", metavar="BRANCH", help="create this new branch")
    add.add_argument("--from", dest="start", metavar="REF", help="start here (default: HEAD)")
    add.add_argument("--session", help="the owning session (default: $GUARDS_SESSION)")
    add.add_argument(
        "--setup",
        metavar="CMD",
        help="run this shell command in the new worktree instead of linking/copying "
        ".worktreeinclude artifacts",
    )
    add.add_argument("--json", action="store_true", help="machine-readable result")
    lst = sub.add_parser("list", help="every worktree: owner, alive/dead, dirty, unpushed, locks")
    lst.add_argument("--json", action="store_true", help="machine-readable (see README)")
    rm = sub.add_parser("remove", help="remove a worktree; refuses while work would be lost")
    rm.add_argument("path", metavar="PATH", help="the worktree to remove")
    how = rm.add_mutually_exclusive_group()
    how.add_argument("--rescue", action="store_true", help="rescue, verify, then remove")
    how.add_argument("--force", action="store_true", help="remove even if work is lost")


def run(args: argparse.Namespace) -> int:
    actions = {"add": _add, "list": _list, "remove": _remove}
    return actions[args.action](args)


# -- add ---------------------------------------------------------------------------------------


def _add(args: argparse.Namespace) -> int:
    ws = Workspace.open()
    owner = args.session or ws.caller
    if not owner:
        raise UsageError(
            f"whose worktree? give --session or set {sessions.SESSION_ENV} (guards session start)"
        )
    owner = sessions.validate_id(owner, "--session")
    if args.setup is not None and not args.setup.strip():
        raise UsageError("--setup needs a command")
    mode = str(ws.config.get("worktree.include_mode"))
    extra = list(ws.config.get("worktree.include"))
    target = Path(os.path.abspath(args.path))
    if os.path.lexists(target) and not (target.is_dir() and not any(target.iterdir())):
        raise UsageError(f"{show_path(str(target))} already exists and is not an empty directory")
    reason = lock_reason(owner)
    cmd = ["worktree", "add", "--lock", "--reason", reason]
    if args.branch:
        cmd += ["-b", args.branch]
    cmd += ["--", os.fspath(target)]
    if args.start:
        cmd.append(args.start)
    ws.ledger.read()  # an unreadable ledger stops us before git makes anything
    cut_from = starting_branch(ws.repo, args.start)
    with serialize(ws.repo, lock_timeout(ws)):
        res = ws.repo.run(cmd, check=False, readonly=False)
        if res.returncode != 0:
            raise GitError(["worktree", "add"], res.returncode, res.stderr)
        top = Path(real(target))
        base = _rev(top, "HEAD")
        branch = _branch(top)
        includes: list[dict[str, Any]] = []
        notes: list[str] = []
        excluded: Path | None = None
        if args.setup is None and ws.repo.toplevel is not None:
            source = ws.repo.worktree
            try:
                found = find_includes(ws.repo, include_patterns(source, extra))
                includes, notes = place_includes(source, top, found, mode)
                excluded = record_excludes(top, [i["path"] for i in includes])
            except (GuardsError, OSError) as e:
                notes.append(f"included artifacts incomplete: {e}")
        now = time.time()
        record = {
            "path": os.fspath(top),
            "session": owner,
            "branch": branch,
            "base": base,
            # where `guards land` merges this worktree's branch by default
            "from_branch": cut_from if cut_from != branch else None,
            "created": now,
            "lock_reason": reason,
            "includes": includes,
            "setup": args.setup,
        }
        ws.ledger.append([op_worktree(os.fspath(top), record), touch_record(owner, now)])
        remember(ws.repo)  # for `guards doctor --all` and `guards reap --all`
    setup_rc = 0
    if args.setup is not None:
        setup_rc = subprocess.run(args.setup, shell=True, cwd=top, check=False).returncode
    if args.json:
        output.dump_json(
            {
                "worktree": {
                    **record,
                    "exclude_file": str(excluded) if excluded else None,
                    "notes": notes,
                    "setup_exit": setup_rc,
                }
            }
        )
    else:
        where = f"branch {branch}" if branch else f"detached at {base[:12] if base else '?'}"
        print(f"worktree {show_path(str(top))} for session {owner} on {where}, locked ({reason})")
        for item in includes:
            print(f"  included {show_path(item['path'])} ({item['mode']})")
        for note in notes:
            output.warn(note)
    if setup_rc != 0:
        output.error(f"--setup command exited {setup_rc}; the worktree is kept, registered")
        return ExitCode.FINDINGS
    return ExitCode.OK


def _rev(top: Path, rev: str) -> str | None:
    from guards.git import process as git

    res = git.run(["rev-parse", "--verify", "-q", f"{rev}^{{commit}}"], cwd=top, check=False)
    return res.stdout.decode().strip() or None if res.returncode == 0 else None


def _branch(top: Path) -> str | None:
    from guards.git import process as git
    from guards.git.history import symbolic_head
    from guards.git.names import branch_name

    ref = symbolic_head(lambda args, **kw: git.run(args, cwd=top, **kw))
    return branch_name(ref) if ref else None


# -- list ----------------------------------------------------------------------------------------


def _states(ws: Workspace) -> tuple[list[WorktreeState], float]:
    data, problem = ws.read_ledger()
    now = time.time()
    states = inspect(
        ws.repo, data, ttl=float(ws.config.get("session.ttl")), namespace=namespace(ws), now=now
    )
    if problem is not None:
        for st in states:
            st.problems.append(str(problem))
    return states, now


def _list(args: argparse.Namespace) -> int:
    ws = Workspace.open()
    states, now = _states(ws)
    data, _ = ws.read_ledger()
    known = {real(s.path) for s in states}
    missing = [
        rec.get("path") or key for path, (key, rec) in registry(data).items() if path not in known
    ]
    landed = {s.path: _landing(ws, s, data) for s in states}
    if args.json:
        output.dump_json(
            {
                "worktrees": [
                    {
                        **s.to_json(now),
                        "land_target": landed[s.path][0],
                        "landed": landed[s.path][1],
                    }
                    for s in states
                ],
                "registered_missing": missing,
            }
        )
        return ExitCode.OK
    rows = []
    for s in states:
        rows.append(
            (
                "main" if s.is_main else (s.owner or "-"),
                "-" if s.is_main else s.liveness,
                _count(s.dirty),
                _count(s.unsaved),
                _landed_text(*landed[s.path]),
                _lock_text(s),
                "prunable" if s.prunable is not None else ("!" if s.problems else ""),
                show_path(s.path),
            )
        )
    header = ("OWNER", "STATE", "DIRTY", "UNPUSHED", "LANDED", "LOCKED", "", "PATH")
    print(output.table(rows, header))
    for s in states:
        for problem in s.problems:
            output.warn(f"{show_path(s.path)}: {problem}")
    for m in missing:
        output.warn(f"registered but unknown to git: {show_path(str(m))}")
    return ExitCode.OK


def _landing(
    ws: Workspace, s: WorktreeState, data: LedgerData | None
) -> tuple[str | None, bool | None]:
    """(the branch its branch lands into, whether it is in there); None, None for the
    main worktree and detached ones."""
    if s.is_main or s.short_branch is None:
        return None, None
    target = target_of(ws, s.short_branch, data)
    if target is None:
        return None, None
    return target, is_landed(ws.repo, s.short_branch, target)


def _landed_text(target: str | None, landed: bool | None) -> str:
    if target is None:
        return "-"
    if landed is None:
        return "?"
    return f"{'yes' if landed else 'no'} ({target})"


def _count(items: Sequence[object] | None) -> str:
    return "?" if items is None else str(len(items))


def _lock_text(s: WorktreeState) -> str:
    if s.locked is None:
        return "-"
    return "guards" if s.lock_session else "other"


# -- remove --------------------------------------------------------------------------------------


def _remove(args: argparse.Namespace) -> int:
    ws = Workspace.open()
    target = real(os.path.abspath(args.path))
    listed = {real(w.path): w for w in list_worktrees(ws.repo)}
    if target not in listed:
        data, _ = ws.read_ledger()
        if target in registry(data):
            forget(ws, target)
            print(f"forgot {show_path(target)} (git no longer knows it)")
            return ExitCode.OK
        raise UsageError(f"{show_path(args.path)} is not a worktree of this repository")
    if listed[target].is_main:
        raise UsageError(f"{show_path(args.path)} is the main worktree; it cannot be removed")
    with serialize(ws.repo, lock_timeout(ws)):
        states, _now = _states(ws)
        st = next(s for s in states if real(s.path) == target)
        blockers = _blockers(st, ws.caller)
        if blockers and not args.force:
            raise RefusedError(
                f"not removing {show_path(st.path)}: {blockers[0]}; --force removes it anyway"
            )
        at_risk = _at_risk(st)
        results = []
        if at_risk and args.rescue:
            results = rescue_worktree(ws, st, command="guards worktree remove")
        elif at_risk and not args.force:
            raise RefusedError(
                f"not removing {show_path(st.path)}: {at_risk}; --rescue keeps them under "
                f"rescue refs first, --force discards them"
            )
        try:
            remove_worktree(ws, st, over_foreign_lock=args.force, force=args.force)
        except GitError as e:
            raise GuardsError(f"{e}", exit_code=ExitCode.UNKNOWN_STATE) from None
    for r in results:
        print(report_line(r))
    lost = f" (discarded: {at_risk})" if at_risk and args.force else ""
    print(f"removed {show_path(st.path)}{lost}")
    return ExitCode.OK


def _blockers(st: WorktreeState, caller: str | None) -> list[str]:
    out = []
    if st.problems:
        out.append("its check could not run (" + "; ".join(st.problems) + ")")
    if st.processes is None and st.exists:
        out.append("cannot see which processes run inside it")
    elif st.processes:
        out.append(f"process {', '.join(map(str, st.processes[:5]))} runs inside it")
    if st.locked_by_other:
        out.append(f"it is locked by a person or another tool ({st.locked or 'no reason'})")
    if st.liveness == sessions.Liveness.LIVE and st.owner != caller:
        out.append(f"its owner, session {st.owner}, is alive ({st.owner_reason})")
    return out


def _at_risk(st: WorktreeState) -> str:
    parts = []
    if st.dirty:
        n = len(st.dirty)
        parts.append(f"{n} dirty path{'s' if n != 1 else ''} (ignored files included)")
    if st.unsaved:
        n = len(st.unsaved)
        parts.append(f"{n} commit{'s' if n != 1 else ''} on no remote or other branch")
    return " and ".join(parts)
