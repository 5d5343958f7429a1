"""guards reap: rescue, then remove, the worktrees of dead sessions (a dry run by default)."""

from __future__ import annotations

import argparse
import time

from guards import output
from guards.config import parse_duration
from guards.errors import ExitCode, UsageError
from guards.output import show_path
from guards.protect.reaper import reap
from guards.protect.rescue import report_line
from guards.state.workspace import Workspace

HELP = "rescue and remove worktrees whose owner is dead (dry run unless --apply)"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--apply", action="store_true", help="do it (default: show the plan)")
    parser.add_argument(
        "--include-unregistered",
        action="store_true",
        help="also worktrees not made by guards (owner unknown: idle past session.ttl)",
    )
    parser.add_argument(
        "--min-idle",
        metavar="D",
        default="0",
        help="only worktrees untouched this long (90, 30m, 2h, 14d)",
    )
    parser.add_argument("--json", action="store_true")


def run(args: argparse.Namespace) -> int:
    try:
        min_idle = parse_duration(args.min_idle)
    except ValueError as e:
        raise UsageError(f"bad --min-idle {args.min_idle!r}: expected {e}") from None
    ws = Workspace.open()
    decisions = reap(
        ws,
        apply=args.apply,
        include_unregistered=args.include_unregistered,
        min_idle=min_idle,
    )
    failed = [d for d in decisions if d.outcome == "failed"]
    if args.json:
        now = time.time()
        output.dump_json({"applied": args.apply, "worktrees": [d.to_json(now) for d in decisions]})
        return ExitCode.REFUSED if failed else ExitCode.OK
    if not decisions:
        print("no linked worktrees")
    for d in decisions:
        st = d.state
        path = show_path(st.path)
        if d.action == "skip":
            print(f"skip {path}: {d.reason}")
            continue
        what = []
        if st.dirty:
            what.append(f"rescue {len(st.dirty)} dirty path{'s' if len(st.dirty) != 1 else ''}")
        if st.unsaved:
            n = len(st.unsaved)
            what.append(f"keep {n} unpushed commit{'s' if n != 1 else ''}")
        plan = ", ".join([*what, "remove"])
        if d.outcome is None:
            print(f"would reap {path} ({d.reason}): {plan}")
        elif d.outcome == "reaped":
            for r in d.rescues:
                print(report_line(r))
            print(f"reaped {path} ({d.reason})")
        else:
            output.error(f"did not reap {path}: {d.detail}")
    if not args.apply and any(d.action == "reap" for d in decisions):
        print("dry run: nothing changed; guards reap --apply does it")
    return ExitCode.REFUSED if failed else ExitCode.OK
