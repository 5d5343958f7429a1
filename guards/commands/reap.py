"""guards reap: rescue, then remove, the worktrees of dead sessions (a dry run by default)."""

from __future__ import annotations

import argparse
import time
from typing import Any

from guards import output
from guards.config import Config, parse_duration
from guards.doctor.sweep import SweepStatus, Swept, sweep, worst_exit
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
        help="only worktrees untouched this long (90s, 30m, 2h, 14d; default 0)",
    )
    parser.add_argument(
        "--all",
        action="store_true",
        help="every repository guards has been used in on this machine (one line each)",
    )
    parser.add_argument("--json", action="store_true", help="machine-readable (see README)")


def run(args: argparse.Namespace) -> int:
    try:
        min_idle = parse_duration(args.min_idle, unit_required=True)
    except ValueError as e:
        raise UsageError(f"bad --min-idle {args.min_idle!r}: expected {e}") from None
    if args.all:
        return _all(args)
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


def _all(args: argparse.Namespace) -> int:
    """``guards reap --all``: one line per repository; the worst exit status."""
    argv = ["reap", "--min-idle", args.min_idle]
    if args.apply:
        argv.append("--apply")
    if args.include_unregistered:
        argv.append("--include-unregistered")

    def line(s: Swept) -> None:
        if args.json:
            return
        where = show_path(s.path or s.git_dir)
        if s.status == SweepStatus.GONE:
            print(f"{'gone':8} {where}: dropped from the registry ({s.detail})")
        elif s.status != SweepStatus.RAN or s.report is None:
            print(f"{s.status:8} {where}: {s.detail}")
        else:
            level, text = _summary(s.report)
            print(f"{level:8} {where}: {text}")

    timeout = float(Config(None).get("sweep.timeout"))
    results = sweep(argv, timeout, line)
    status = worst_exit(results)
    if args.json:
        output.dump_json(
            {
                "applied": args.apply,
                "exit": status,
                "repositories": [r.to_json() for r in results],
            }
        )
    elif not results:
        print("no repositories registered yet")
    elif not args.apply and any(
        d.get("action") == "reap"
        for r in results
        if r.report
        for d in r.report.get("worktrees", [])
        if isinstance(d, dict)
    ):
        print("dry run: nothing changed; guards reap --all --apply does it")
    return status


def _summary(report: dict[str, Any]) -> tuple[str, str]:
    """(level, "reaped 1, would reap 2, skipped 3, failed 1: why") of one repository."""
    decisions = [d for d in report.get("worktrees", []) if isinstance(d, dict)]
    counts = {
        "reaped": sum(d.get("outcome") == "reaped" for d in decisions),
        "would reap": sum(
            d.get("action") == "reap" and d.get("outcome") is None for d in decisions
        ),
        "skipped": sum(d.get("action") == "skip" for d in decisions),
        "failed": sum(d.get("outcome") == "failed" for d in decisions),
    }
    text = ", ".join(f"{k} {n}" for k, n in counts.items() if n) or "no linked worktrees"
    failed = next((d for d in decisions if d.get("outcome") == "failed"), None)
    if failed is not None:
        text += f" (first failure: {show_path(str(failed.get('path')))}: {failed.get('detail')})"
        return "failed", text
    return "ok", text
