"""guards status: every dirty path with its owner, class and age."""

from __future__ import annotations

import os
import time

from guards import output
from guards.errors import ExitCode, UsageError
from guards.git import GitError
from guards.git.dirty import DirtyPath, finish_reading, read_dirty, start_reading
from guards.state.attribution import Owner
from guards.state.workspace import Workspace, release_stale
from guards.values import Value

TYPE_CHECKING = False  # see guards.values: these imports cost start-up time
if TYPE_CHECKING:
    import argparse
    from typing import Any

HELP = "dirty paths with owner, class (mine/foreign/unknown) and age"


#: Every option is an on/off flag: guards.main runs the command without argparse.
FLAGS = {"--json": "machine-readable (see README)", "--ignored": "list ignored files too"}


def configure(parser: argparse.ArgumentParser) -> None:
    for flag, text in FLAGS.items():
        parser.add_argument(flag, action="store_true", help=text)
    parser.add_argument(
        "--owner",
        metavar="SESSION",
        help="only paths this session owns (`unknown`: paths nobody provably owns)",
    )
    parser.add_argument(
        "paths",
        nargs="*",
        metavar="PATH",
        help="only these paths (git pathspecs relative to this directory, as git status)",
    )


class Row(Value):
    """A dirty path, its owner, and since when it is what it is."""

    __slots__ = ("dirty", "owner", "since", "since_source")

    def __init__(
        self, dirty: DirtyPath, owner: Owner, since: float | None, since_source: str | None
    ) -> None:
        self.dirty = dirty
        self.owner = owner
        #: when the path became what it is: recorded time, else its mtime (None if deleted)
        self.since = since
        self.since_source = since_source


def collect(
    ws: Workspace,
    ignored: bool = False,
    dirty: list[DirtyPath] | None = None,
    partial: bool = False,
) -> tuple[list[Row], str | None]:
    """The rows; ``partial``: ``dirty`` is not every dirty path (a pathspec limited it),
    so attributions of paths missing from it are not taken for clean."""
    if dirty is None:
        dirty = read_dirty(ws.repo, ignored=ignored)
    data, problem = ws.read_ledger()
    owners = ws.owners(dirty, data)
    if data is not None and not partial:
        release_stale(ws, data, dirty, ignored_listed=ignored)
    top = ws.repo.worktree_key
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
    # git status (nearly all of the cost) scans while the repository is discovered and
    # the settings are read.
    pathspecs = list(getattr(args, "paths", None) or [])
    owner = getattr(args, "owner", None)
    started = start_reading(ignored=args.ignored, pathspecs=pathspecs)
    try:
        ws = Workspace.open()
    except BaseException:
        started.result(check=False)  # not left behind as a zombie
        raise
    try:
        dirty = finish_reading(started)
    except GitError as e:
        if pathspecs and e.returncode == 128:  # git refused a pathspec (outside the repo)
            said = e.stderr.decode("utf-8", "replace").strip().splitlines()
            raise UsageError(said[0].removeprefix("fatal: ") if said else str(e)) from None
        raise
    rows, problem = collect(ws, ignored=args.ignored, dirty=dirty, partial=bool(pathspecs))
    if owner is not None:
        rows = [r for r in rows if (r.owner.session or "unknown") == owner]
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
    elif pathspecs or owner is not None:
        print("no dirty path matches")
    else:
        print("nothing dirty")
    return ExitCode.UNKNOWN_STATE if problem else ExitCode.OK


def _as_json(ws: Workspace, rows: list[Row], problem: str | None) -> dict[str, Any]:
    now = time.time()
    return {
        "repository": ws.repo.common_dir_text,
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
