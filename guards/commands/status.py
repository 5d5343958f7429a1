"""guards status: every dirty path with its owner, class and age."""

from __future__ import annotations

import argparse
import os
import time
from dataclasses import dataclass
from typing import Any

from guards import output
from guards.attribution import Owner
from guards.dirty import DirtyPath, read_dirty
from guards.errors import ExitCode
from guards.workspace import Workspace, release_stale

HELP = "dirty paths with owner, class (mine/foreign/unknown) and age"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="machine-readable (see README)")
    parser.add_argument("--ignored", action="store_true", help="list ignored files too")


@dataclass(frozen=True)
class Row:
    dirty: DirtyPath
    owner: Owner
    #: when the path became what it is: recorded time, else its mtime (None if deleted)
    since: float | None
    since_source: str | None


def collect(ws: Workspace, ignored: bool = False) -> tuple[list[Row], str | None]:
    dirty = read_dirty(ws.repo, ignored=ignored)
    data, problem = ws.read_ledger()
    owners = ws.owners(dirty, data)
    if data is not None:
        release_stale(ws, data, dirty, ignored_listed=ignored)
    top = os.fsdecode(ws.repo.worktree)
    rows = []
    for d, owner in zip(dirty, owners, strict=True):
        if owner.recorded is not None:
            rows.append(Row(d, owner, owner.recorded, "recorded"))
            continue
        try:
            rows.append(Row(d, owner, os.lstat(os.path.join(top, d.path)).st_mtime, "mtime"))
        except OSError:
            rows.append(Row(d, owner, None, None))
    return rows, str(problem) if problem else None


def run(args: argparse.Namespace) -> int:
    ws = Workspace.open()
    rows, problem = collect(ws, ignored=args.ignored)
    if problem:
        output.error(problem)
    if args.json:
        output.dump_json(_as_json(ws, rows, problem))
    elif rows:
        print(
            output.table(
                [
                    (
                        r.dirty.state,
                        r.owner.session or "-",
                        r.owner.ownership.value,
                        output.age(r.since),
                        output.show_path(r.dirty.path),
                    )
                    for r in rows
                ],
                ("ST", "OWNER", "CLASS", "AGE", "PATH"),
            )
        )
    else:
        print("nothing dirty")
    return ExitCode.UNKNOWN_STATE if problem else ExitCode.OK


def _as_json(ws: Workspace, rows: list[Row], problem: str | None) -> dict[str, Any]:
    now = time.time()
    return {
        "repository": os.fsdecode(ws.repo.common_dir),
        "worktree": ws.repo.worktree_key,
        "caller": ws.caller,
        "ledger": {"ok": problem is None, "problem": problem},
        "paths": [
            {
                "path": r.dirty.path,
                "state": r.dirty.xy,
                "staged": r.dirty.staged,
                "unstaged": r.dirty.unstaged,
                "untracked": r.dirty.untracked,
                "ignored": r.dirty.ignored,
                "unmerged": r.dirty.unmerged,
                "owner": r.owner.session,
                "class": r.owner.ownership.value,
                "since": output.iso(r.since),
                "since_source": r.since_source,
                "age_seconds": None if r.since is None else round(max(0.0, now - r.since), 3),
            }
            for r in rows
        ],
    }
