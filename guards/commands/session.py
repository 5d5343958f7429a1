"""guards session start/end/list/heartbeat."""

from __future__ import annotations

import argparse
import os
import shlex
import time

from guards import output
from guards.errors import ExitCode, UsageError
from guards.protect.persist import end_session
from guards.state import session as sessions
from guards.state.ledger import op_start
from guards.state.repositories import remember
from guards.state.session import Session
from guards.state.workspace import Workspace, touch_record, typo_warning

HELP = "start, end, list and keep alive writer sessions"


def configure(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    start = sub.add_parser("start", help="register a session; prints `export GUARDS_SESSION=...`")
    start.add_argument("--id", help="session id (default: generated)")
    start.add_argument("--label", default="", help="a human name for the session")
    start.add_argument(
        "--pid",
        type=int,
        help="the process whose life is the session's (default: the calling shell or agent)",
    )
    start.add_argument(
        "--shell",
        choices=("sh", "fish"),
        default="sh",
        help="the line to print: sh (export ..., for eval) or fish (set -gx ..., for source)",
    )
    end = sub.add_parser(
        "end",
        help="checkpoint the session's own work (pushed to rescue.remote when set), then "
        "mark it ended (default: $GUARDS_SESSION)",
    )
    end.add_argument("id", nargs="?", help="the session to end (default: $GUARDS_SESSION)")
    end.add_argument(
        "--no-persist", action="store_true", help="only mark it ended, checkpoint nothing"
    )
    end.add_argument("--json", action="store_true", help="machine-readable result")
    lst = sub.add_parser("list", help="sessions with liveness")
    lst.add_argument("--json", action="store_true", help="machine-readable (see README)")
    beat = sub.add_parser("heartbeat", help="mark the session active now")
    beat.add_argument("--session", help="default: $GUARDS_SESSION")


def run(args: argparse.Namespace) -> int:
    actions = {"start": _start, "end": _end, "list": _list, "heartbeat": _heartbeat}
    return actions[args.action](args)


def _start(args: argparse.Namespace) -> int:
    ws = Workspace.open()
    session_id = sessions.validate_id(args.id) if args.id else sessions.new_id()
    pid = args.pid if args.pid is not None else os.getppid()
    pid_start = sessions.process_start_time(pid)
    if pid_start is None:
        raise UsageError(f"no process with pid {pid} is running")
    now = time.time()
    worktree = ws.repo.worktree_key if ws.repo.toplevel is not None else None
    # A start record keeps an earlier label (when none is given) and start time.
    record = Session(
        id=session_id,
        label=args.label,
        host=sessions.hostname(),
        pid=pid,
        pid_start=pid_start,
        worktree=worktree,
        started=now,
        last_seen=now,
    )
    _warn_if_typo(ws, session_id)
    ws.ledger.append([op_start(session_id, record.to_json())])
    remember(ws.repo)  # for `guards doctor --all` and `guards reap --all`
    if args.shell == "fish":
        print(f"set -gx {sessions.SESSION_ENV} {_fish_quote(session_id)}")
    else:
        print(f"export {sessions.SESSION_ENV}={shlex.quote(session_id)}")
    return ExitCode.OK


def _fish_quote(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _warn_if_typo(ws: Workspace, session_id: str) -> None:
    warning = typo_warning(ws.ledger, session_id, lambda: float(ws.config.get("session.ttl")))
    if warning:
        output.warn(warning)


def _end(args: argparse.Namespace) -> int:
    ws = Workspace.open()
    session_id = sessions.validate_id(args.id) if args.id else ws.caller
    if session_id is None:
        raise UsageError(f"which session? give an id or set {sessions.SESSION_ENV}")
    persisted = end_session(ws, session_id, persist=not args.no_persist)
    if args.json:
        output.dump_json(
            {
                "session": session_id,
                "ended": True,
                "persist": persisted.to_json() if persisted is not None else None,
            }
        )
    elif persisted is not None and persisted.failed:
        output.warn(f"session {session_id} ended; {persisted.line()}")
    else:
        if persisted is not None:
            print(persisted.line())
        print(f"session {session_id} ended")
    return ExitCode.OK


def _heartbeat(args: argparse.Namespace) -> int:
    ws = Workspace.open()
    session_id = sessions.validate_id(args.session) if args.session else ws.caller
    if session_id is None:
        raise UsageError(f"which session? give --session or set {sessions.SESSION_ENV}")
    _warn_if_typo(ws, session_id)
    ws.ledger.append([touch_record(session_id, time.time())], durable=False)
    return ExitCode.OK


def _list(args: argparse.Namespace) -> int:
    ws = Workspace.open()
    data = ws.ledger.read(rescues=False)  # every worktree: the counts are per session
    ttl = float(ws.config.get("session.ttl"))
    counts: dict[str, int] = {}
    for records in data.paths.values():
        for rec in records.values():
            owner = str(rec.get("session", ""))
            counts[owner] = counts.get(owner, 0) + 1
    rows = []
    for sid in sorted(data.sessions):
        s = Session.from_json(data.sessions[sid])
        rows.append((s, s.liveness(ttl), counts.get(sid, 0)))
    if args.json:
        output.dump_json(
            {
                "sessions": [
                    {
                        **s.to_json(),
                        "liveness": live,
                        "attributed_paths": n,
                        "caller": s.id == ws.caller,
                    }
                    for s, live, n in rows
                ]
            }
        )
        return ExitCode.OK
    if not rows:
        print("no sessions")
        return ExitCode.OK
    table = [
        (
            ("* " if s.id == ws.caller else "  ") + s.id,
            s.label or "-",
            live,
            str(s.pid) if s.pid is not None else "-",
            output.age(s.last_seen),
            str(n),
        )
        for s, live, n in rows
    ]
    print(output.table(table, ("  SESSION", "LABEL", "STATE", "PID", "LAST SEEN", "PATHS")))
    return ExitCode.OK
