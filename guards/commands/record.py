"""guards record: attribute the current content of paths to a session."""

from __future__ import annotations

import argparse

from guards.errors import ExitCode, UsageError
from guards.git.dirty import read_dirty
from guards.state import session as sessions
from guards.state.workspace import Workspace, record_paths

HELP = "attribute the current content of paths to a session"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--session", help="default: $GUARDS_SESSION")
    parser.add_argument(
        "--source",
        default="record",
        choices=("record", "turn", "observed"),
        help="how the writer is known: named by it (record), a turn boundary, an observation",
    )
    parser.add_argument("paths", nargs="+", metavar="PATH", help="relative to this directory")


def run(args: argparse.Namespace) -> int:
    ws = Workspace.open()
    session_id = sessions.validate_id(args.session) if args.session else ws.caller
    if session_id is None:
        raise UsageError(f"which session? give --session or set {sessions.SESSION_ENV}")
    relative = _expand(ws, [ws.repo_relative(p) for p in args.paths])
    record_paths(ws, session_id, relative, args.source)
    return ExitCode.OK


def _expand(ws: Workspace, relative: list[str]) -> list[str]:
    """A directory stands for every dirty path below it."""
    top = ws.repo.worktree
    files: list[str] = []
    directories: list[str] = []
    for rel in relative:
        target = top / rel if rel else top
        if target.is_dir() and not target.is_symlink():
            directories.append(rel or ".")
        else:
            files.append(rel)
    if directories:
        files.extend(d.path for d in read_dirty(ws.repo, pathspecs=directories))
    return list(dict.fromkeys(files))
