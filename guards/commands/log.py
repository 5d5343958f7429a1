"""guards log: every decision of the guard where something was at risk, oldest first.

The log itself (where it lives, its format, its bound) is :mod:`guards.state.decisions`;
it is written by the guard pipeline (:mod:`guards.protect.guard`).
"""

from __future__ import annotations

import argparse
import time

from guards import output
from guards.errors import ExitCode, UsageError
from guards.state import decisions
from guards.state.workspace import Workspace

HELP = "what guards decided where work was at risk: rescued, refused, warned, bypassed, denied"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="machine-readable (see README)")
    parser.add_argument("--session", metavar="S", help="only decisions for this calling session")
    parser.add_argument(
        "--since",
        metavar="T",
        help="only decisions since T: a duration back from now (90m, 2h, 7d) or a "
        "date/time (2024-05-01, 2024-05-01T12:00, UTC)",
    )
    parser.add_argument(
        "--kind", choices=decisions.Kind.ALL, action="append", help="only this kind (repeatable)"
    )


def parse_since(text: str, now: float) -> float:
    """A duration back from ``now``, or an ISO date/time in UTC -> a timestamp."""
    from guards.config import parse_duration

    try:
        return now - parse_duration(text)
    except ValueError:
        pass
    import calendar

    for fmt in ("%Y-%m-%dT%H:%M:%SZ", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%dT%H:%M", "%Y-%m-%d"):
        try:
            return float(calendar.timegm(time.strptime(text, fmt)))
        except ValueError:
            continue
    raise UsageError(
        f"bad --since {text!r}: expected a duration (90m, 2h, 7d) or a UTC date/time "
        "(2024-05-01, 2024-05-01T12:00)"
    )


def selected(
    entries: list[dict[str, object]], session: str | None, since: float | None, kinds: list[str]
) -> list[dict[str, object]]:
    out = []
    for e in entries:
        if session is not None and e.get("session") != session:
            continue
        if since is not None and decisions.entry_time(e) < since:
            continue
        if kinds and e.get("kind") not in kinds:
            continue
        out.append(e)
    return out


def summary(entry: dict[str, object]) -> str:
    """What happened, in a few words."""
    kind = entry.get("kind")
    count = entry.get("path_count") or 0
    commits = entry.get("commit_count") or 0
    held = []
    if count:
        held.append(f"{count} path{'s' if count != 1 else ''}")
    if commits:
        held.append(f"{commits} commit{'s' if commits != 1 else ''}")
    what = " and ".join(held) or "work"
    rescues = entry.get("rescues")
    refs = (
        [str(r.get("ref")) for r in rescues if isinstance(r, dict)]
        if isinstance(rescues, list)
        else []
    )
    if kind == decisions.Kind.RESCUED:
        return f"{what} to {output.listing(refs, 2)}"
    if kind in (decisions.Kind.REFUSED, decisions.Kind.DENIED):
        why = str(entry.get("why") or "")
        return _short(why, 100)
    if kind == decisions.Kind.WARNED:
        return f"{what} lost (policy warn)"
    return f"{what} at risk, run without guards"


def run(args: argparse.Namespace) -> int:
    ws = Workspace.open()
    now = time.time()
    since = parse_since(args.since, now) if args.since else None
    entries, bad = decisions.read(ws.repo.ledger_dir_text)
    if bad:
        output.warn(f"{bad} line(s) of the decision log do not read as entries; skipped")
    shown = selected(entries, args.session, since, args.kind or [])
    if args.json:
        output.dump_json(
            {"entries": [{**e, "time": output.iso(decisions.entry_time(e))} for e in shown]}
        )
        return ExitCode.OK
    if not shown:
        print("no decisions logged" + (" that match" if entries else ""))
        return ExitCode.OK
    rows = [
        (
            str(e.get("id")),
            output.age(decisions.entry_time(e), now),
            str(e.get("kind")),
            str(e.get("session") or "-"),
            _short(str(e.get("command") or "-"), 40),
            summary(e),
        )
        for e in shown
    ]
    print(output.table(rows, ("ID", "AGE", "KIND", "SESSION", "COMMAND", "WHAT")))
    return ExitCode.OK


def _short(text: str, width: int) -> str:
    text = " ".join(text.split())
    if not text.isprintable():
        text = output.show_path(text)  # a command line is the caller's words: no escapes
    return text if len(text) <= width else text[: width - 3] + "..."
