"""guards rescue list/show/restore/drop/prune: browse rescues, put work back, delete on request."""

from __future__ import annotations

import argparse
import sys
import time

from guards import output
from guards.config import parse_duration
from guards.errors import ExitCode, UsageError
from guards.protect.rescue import UNKNOWN
from guards.protect.rescue.catalog import (
    Rescue,
    delete_rescue,
    read_rescues,
    resolve,
    restore_commands,
)
from guards.protect.rescue.restore import RestoredRepository, restore_paths, restore_repository
from guards.state.workspace import Workspace

HELP = "list, show, restore and delete rescues (work saved before a destructive command)"


def configure(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    ref_help = (
        "the rescue ref (refs/rescue/ may be left out), or latest, @1, @2, ... (newest first)"
    )
    yes_help = "do not ask (needed when not on a terminal)"
    lst = sub.add_parser("list", help="rescue refs, newest first (by rescue time)")
    lst.add_argument("--json", action="store_true", help="machine-readable (see README)")
    lst.add_argument("--owner", metavar="SESSION", help="only rescues of this session")
    show = sub.add_parser("show", help="what a rescue holds and how to restore it")
    show.add_argument("ref", metavar="REF", help=ref_help)
    show.add_argument("--json", action="store_true", help="machine-readable (see README)")
    restore = sub.add_parser(
        "restore", help="put rescued files back; newer edits are left alone (conflicts)"
    )
    restore.add_argument("ref", metavar="REF", help=ref_help)
    restore.add_argument("paths", nargs="*", metavar="PATH", help="default: every rescued path")
    restore.add_argument("--index", action="store_true", help="restore staged versions too")
    drop = sub.add_parser("drop", help="delete one rescue ref (asks first)")
    drop.add_argument("ref", metavar="REF", help=ref_help)
    drop.add_argument("-y", "--yes", action="store_true", help=yes_help)
    prune = sub.add_parser(
        "prune",
        help="delete rescue refs older than a duration, or whose content is elsewhere (asks first)",
    )
    prune.add_argument("--older-than", metavar="D", help="with its unit: 12h, 30d, 2w")
    prune.add_argument(
        "--redundant",
        action="store_true",
        help="only rescues whose content is already elsewhere (restored and unchanged, "
        "committed on a branch, pushed to the rescue remote)",
    )
    prune.add_argument("--owner", metavar="SESSION", help="only rescues of this session")
    prune.add_argument("--dry-run", action="store_true", help="only say what would go")
    prune.add_argument("-y", "--yes", action="store_true", help=yes_help)


def run(args: argparse.Namespace) -> int:
    actions = {
        "list": _list,
        "show": _show,
        "restore": _restore,
        "drop": _drop,
        "prune": _prune,
    }
    return actions[args.action](args)


# -- list / show ------------------------------------------------------------------------------


def _list(args: argparse.Namespace) -> int:
    ws = Workspace.open()
    numbered = list(enumerate(read_rescues(ws), start=1))
    if args.owner:
        numbered = [(n, r) for n, r in numbered if r.owner == args.owner]
    if args.json:
        output.dump_json({"rescues": [r.to_json() for _n, r in numbered]})
        return ExitCode.OK
    if not numbered:
        print("no rescues")
        return ExitCode.OK
    rows = [
        (
            f"@{n}",
            r.ref,
            r.owner or UNKNOWN,
            str(r.one("Command") or r.log.get("command") or "-"),
            output.age(r.time),
            _holds(r),
            str(r.log.get("push") or "local"),
        )
        for n, r in numbered
    ]
    print(output.table(rows, ("#", "REF", "OWNER", "COMMAND", "AGE", "HOLDS", "PUSH")))
    return ExitCode.OK


def _show(args: argparse.Namespace) -> int:
    ws = Workspace.open()
    r = resolve(ws, args.ref)
    if args.json:
        output.dump_json({"rescue": r.to_json(), "restore": restore_commands(r)})
        return ExitCode.OK
    doc = r.to_json()
    rows = [
        ("ref", r.ref),
        ("commit", r.commit),
        ("owner", r.owner or "unknown"),
        ("caller", str(doc["caller"] or "-")),
        ("command", str(doc["command"] or "-")),
        ("time", f"{doc['time']} ({output.age(r.time)})"),
        ("host", str(doc["host"] or "-")),
    ]
    if r.kept_commit:
        rows.append(("holds", str(doc["label"] or "a commit")))
    else:
        rows.append(("head", str(doc["head"] or "-")))
    if doc["push"]:
        rows.append(("push", f"{doc['push']} ({doc['remote']}) {doc['push_detail'] or ''}".strip()))
    if doc["local_only"]:
        rows.append(("local only", ", ".join(output.show_path(p) for p in doc["local_only"])))
    print(output.table(rows))
    if r.paths:
        print(f"paths ({len(r.paths)}):")
        for p in r.paths:
            print(f"  {output.show_path(p)}")
    print("restore:")
    for c in restore_commands(r):
        print(f"  {c}")
    return ExitCode.OK


# -- restore ----------------------------------------------------------------------------------


def _restore(args: argparse.Namespace) -> int:
    ws = Workspace.open()
    r = resolve(ws, args.ref)
    if r.repository:
        return _report_repository(r, restore_repository(ws, r))
    done = restore_paths(ws, r, args.paths, index=args.index)
    print(done.summary(r.ref))
    for p in done.conflicts:
        print(
            f"conflict: {output.show_path(p)} changed since the rescue; left alone "
            f"(compare: git diff {r.ref} -- {output.show_path(p)})"
        )
    for p in done.index_conflicts:
        print(f"conflict: staged {output.show_path(p)} changed since the rescue; index left alone")
    return ExitCode.FINDINGS if done.conflicts or done.index_conflicts else ExitCode.OK


def _report_repository(r: Rescue, done: RestoredRepository) -> int:
    shown = output.show_path(done.directory + "/")
    if done.conflict:
        print(f"conflict: {shown} holds a repository again; left alone (compare: git log {r.ref})")
        return ExitCode.FINDINGS
    print(
        f"restored the repository {shown} from {r.ref}: {done.refs} refs, HEAD {done.head}, "
        f"{done.written} files written ({done.on_disk} already on disk)"
    )
    return ExitCode.OK


# -- drop / prune -----------------------------------------------------------------------------


def _confirm(question: str, yes: bool) -> bool:
    """Destructive maintenance asks on a terminal; elsewhere it needs ``--yes``."""
    if yes:
        return True
    if not (sys.stdin.isatty() and sys.stderr.isatty()):
        raise UsageError(f"{question}: not on a terminal to ask; give --yes to go ahead")
    sys.stderr.write(f"{question} [y/N] ")
    sys.stderr.flush()
    answer = sys.stdin.readline().strip().lower()
    return answer in ("y", "yes")


def _drop(args: argparse.Namespace) -> int:
    ws = Workspace.open()
    r = resolve(ws, args.ref)
    if not _confirm(f"drop {r.ref} ({output.age(r.time)}, {_holds(r)})?", args.yes):
        print("nothing dropped")
        return ExitCode.OK
    delete_rescue(ws, r)
    print(f"dropped {r.ref} (was {r.commit[:12]}; `git branch keep {r.commit}` while it lasts)")
    return ExitCode.OK


def _prune(args: argparse.Namespace) -> int:
    if args.older_than is None and not args.redundant:
        raise UsageError("prune which rescues? give --older-than D and/or --redundant")
    ws = Workspace.open()
    cutoff = None
    if args.older_than is not None:
        try:
            cutoff = time.time() - parse_duration(args.older_than, unit_required=True)
        except ValueError as e:
            raise UsageError(f"bad --older-than {args.older_than!r}: expected {e}") from None
    doomed = [
        r
        for r in read_rescues(ws)
        if (cutoff is None or r.time < cutoff) and (not args.owner or r.owner == args.owner)
    ]
    if args.redundant:
        from guards.protect.rescue.retention import redundant_rescues

        doomed = [found.rescue for found in redundant_rescues(ws, doomed)]
    if doomed and not args.dry_run:
        which = " and ".join(
            w
            for w in (
                f"older than {args.older_than}" if args.older_than else "",
                "whose content is elsewhere" if args.redundant else "",
            )
            if w
        )
        question = (
            f"drop {len(doomed)} rescue ref{'s' if len(doomed) != 1 else ''} {which} "
            f"({output.listing([r.ref for r in doomed], 3)})?"
        )
        if not _confirm(question, args.yes):
            print("nothing dropped")
            return ExitCode.OK
    for r in doomed:
        if not args.dry_run:
            delete_rescue(ws, r)
        verb = "would drop" if args.dry_run else "dropped"
        print(f"{verb} {r.ref} ({output.age(r.time)})")
    if not doomed:
        print("nothing to prune")
    return ExitCode.OK


def _holds(r: Rescue) -> str:
    n = r.path_count
    return str(r.log.get("label") or f"{n} path{'s' if n != 1 else ''}")
