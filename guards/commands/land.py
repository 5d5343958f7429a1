"""guards land: a writer's branch onto the integration branch, queued, as a merge commit."""

from __future__ import annotations

import argparse
import time
from typing import Any

from guards import output
from guards.errors import ExitCode, UsageError
from guards.protect.land import LandStatus, land, landings, resolve
from guards.state.workspace import Workspace

HELP = "merge a branch into the integration branch: queued, one at a time, never a force"

#: Exit status of each way a landing ends.
EXIT = {
    LandStatus.LANDED: ExitCode.OK,
    LandStatus.ALREADY: ExitCode.OK,
    LandStatus.CONFLICT: ExitCode.CONFLICT,
    LandStatus.REFUSED: ExitCode.REFUSED,
    LandStatus.FAILED: ExitCode.UNKNOWN_STATE,
}


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "branch", nargs="?", metavar="BRANCH", help="the branch to land (default: this one)"
    )
    parser.add_argument(
        "--worktree", metavar="PATH", help="land the branch checked out in this worktree"
    )
    parser.add_argument(
        "--into",
        metavar="BRANCH",
        help="the branch to merge into (default: land.into, else the branch the worktree "
        "was cut from, else the default branch)",
    )
    parser.add_argument(
        "--delete-branch",
        action="store_true",
        help="delete the landed branch once it is in the target (not while checked out)",
    )
    parser.add_argument(
        "--list", action="store_true", help="show queued, landed and failed landings"
    )
    parser.add_argument("--json", action="store_true", help="machine-readable (see README)")


def run(args: argparse.Namespace) -> int:
    ws = Workspace.open()
    if args.list:
        if args.branch or args.worktree or args.into or args.delete_branch:
            raise UsageError("--list takes no branch, --worktree, --into or --delete-branch")
        return _list(ws, args.json)
    if args.branch and args.worktree:
        raise UsageError("give a BRANCH or --worktree PATH, not both")
    request = resolve(
        ws,
        branch=args.branch,
        worktree=args.worktree,
        into=args.into,
        delete_branch=args.delete_branch,
    )

    def waiting(position: int, ahead: list[dict[str, Any]]) -> None:
        shown = output.listing([f"{t.get('branch')} (pid {t.get('pid')})" for t in ahead], 3)
        output.error(
            f"waiting to land {request.branch} into {request.into}: place {position + 1} "
            f"in the queue, {position} ahead ({shown})"
        )

    result = land(ws, request, waiting)
    if args.json:
        output.dump_json({"landing": result.to_json()})
    if result.status in (LandStatus.LANDED, LandStatus.ALREADY):
        if not args.json:
            print(result.detail)
            for path in result.checkouts_updated:
                print(f"updated the checkout of {request.into} at {output.show_path(path)}")
            for note in result.notes:
                print(note)
    else:
        output.error(result.detail)
    return EXIT[result.status]


def _list(ws: Workspace, as_json: bool) -> int:
    queued, history = landings(ws)
    if as_json:
        output.dump_json({"queue": queued, "history": history})
        return ExitCode.OK
    now = time.time()
    if not queued and not history:
        print("no landings")
        return ExitCode.OK
    rows = [
        (
            f"queued #{t.get('seq')}" if i else f"landing #{t.get('seq')}",
            str(t.get("branch")),
            str(t.get("into")),
            output.age(_number(t.get("requested")), now),
            f"pid {t.get('pid')}" + (f", session {t['session']}" if t.get("session") else ""),
        )
        for i, t in enumerate(queued)
    ]
    rows += [
        (
            str(h.get("status")),
            str(h.get("branch")),
            str(h.get("into")),
            output.age(_number(h.get("finished")), now),
            _what(h),
        )
        for h in history
    ]
    print(output.table(rows, ("STATUS", "BRANCH", "INTO", "WHEN", "DETAIL")))
    return ExitCode.OK


def _number(value: object) -> float | None:
    return float(value) if isinstance(value, (int, float)) else None


def _what(record: dict[str, Any]) -> str:
    if record.get("status") == LandStatus.LANDED:
        merge = str(record.get("merge_commit") or "")[:12]
        changed = record.get("changed")
        return f"merge {merge}, {changed} path{'' if changed == 1 else 's'} changed"
    return str(record.get("detail") or "")
