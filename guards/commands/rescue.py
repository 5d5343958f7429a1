"""guards rescue list/show/restore/drop/prune: browse rescues, put work back, delete on request."""

from __future__ import annotations

import argparse
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
    lst = sub.add_parser("list", help="rescue refs, newest first")
    lst.add_argument("--json", action="store_true", help="machine-readable (see README)")
    lst.add_argument("--owner", metavar="SESSION", help="only rescues of this session")
    show = sub.add_parser("show", help="what a rescue holds and how to restore it")
    show.add_argument("ref")
    show.add_argument("--json", action="store_true")
    restore = sub.add_parser(
        "restore", help="put rescued files back; newer edits are left alone (conflicts)"
    )
    restore.add_argument("ref")
    restore.add_argument("paths", nargs="*", metavar="PATH", help="default: every rescued path")
    restore.add_argument("--index", action="store_true", help="restore staged versions too")
    drop = sub.add_parser("drop", help="delete one rescue ref")
    drop.add_argument("ref")
    prune = sub.add_parser("prune", help="delete rescue refs older than a duration")
    prune.add_argument("--older-than", required=True, metavar="D", help="e.g. 30d, 2w, 12h")
    prune.add_argument("--owner", metavar="SESSION")
    prune.add_argument("--dry-run", action="store_true", help="only say what would go")


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
    rescues = read_rescues(ws)
    if args.owner:
        rescues = [r for r in rescues if r.owner == args.owner]
    if args.json:
        output.dump_json({"rescues": [r.to_json() for r in rescues]})
        return ExitCode.OK
    if not rescues:
        print("no rescues")
        return ExitCode.OK
    rows = [
        (
            r.ref,
            r.owner or UNKNOWN,
            str(r.one("Command") or r.log.get("command") or "-"),
            output.age(r.time),
            str(r.log.get("label") or f"{len(r.paths)} path{'s' if len(r.paths) != 1 else ''}"),
            str(r.log.get("push") or "local"),
        )
        for r in rescues
    ]
    print(output.table(rows, ("REF", "OWNER", "COMMAND", "AGE", "HOLDS", "PUSH")))
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
    count = len(done.written) + len(done.deleted)
    print(
        f"restored {count} path{'s' if count != 1 else ''} from {r.ref}"
        + (f" ({done.already} already as rescued)" if done.already else "")
        + (f"; {done.staged} staged versions restored" if done.staged else "")
    )
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


def _drop(args: argparse.Namespace) -> int:
    ws = Workspace.open()
    r = resolve(ws, args.ref)
    delete_rescue(ws, r)
    print(f"dropped {r.ref} (was {r.commit[:12]}; `git branch keep {r.commit}` while it lasts)")
    return ExitCode.OK


def _prune(args: argparse.Namespace) -> int:
    ws = Workspace.open()
    try:
        age = parse_duration(args.older_than)
    except ValueError as e:
        raise UsageError(f"bad --older-than {args.older_than!r}: expected {e}") from None
    cutoff = time.time() - age
    doomed = [
        r for r in read_rescues(ws) if r.time < cutoff and (not args.owner or r.owner == args.owner)
    ]
    for r in doomed:
        if not args.dry_run:
            delete_rescue(ws, r)
        verb = "would drop" if args.dry_run else "dropped"
        print(f"{verb} {r.ref} ({output.age(r.time)})")
    if not doomed:
        print("nothing to prune")
    return ExitCode.OK
