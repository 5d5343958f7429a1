"""guards undo [ENTRY]: bring back what the caller's last guarded command rescued.

The logic (which entry, what each rescue ref gives back, rescuing first under
``--force``) is :mod:`guards.protect.rescue.undo`; this module parses and prints.
"""

from __future__ import annotations

import argparse

from guards import output
from guards.errors import ExitCode
from guards.protect.rescue import report_line
from guards.protect.rescue.undo import Undone, pick_entry, undo
from guards.state.decisions import entry_time
from guards.state.workspace import Workspace

HELP = "bring back what your last guarded command rescued (newer work is left alone)"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "entry", nargs="?", metavar="ENTRY", help="a decision log id (guards log); default: "
        "your last rescue in this work tree",
    )  # fmt: skip
    parser.add_argument(
        "--force",
        action="store_true",
        help="also overwrite paths changed since the rescue, after rescuing them first",
    )
    parser.add_argument("--json", action="store_true", help="machine-readable (see README)")


def run(args: argparse.Namespace) -> int:
    ws = Workspace.open()
    entry = pick_entry(ws, args.entry)
    done = undo(ws, entry, force=args.force)
    if args.json:
        output.dump_json(_json(done))
    else:
        _print(done)
    return ExitCode.OK if done.complete else ExitCode.FINDINGS


def _json(done: Undone) -> dict[str, object]:
    refs = []
    for u in done.refs:
        doc: dict[str, object] = {"ref": u.ref, "skipped": u.skipped}
        if u.paths is not None:
            doc.update(
                written=u.paths.written,
                deleted=u.paths.deleted,
                already=u.paths.already,
                staged=u.paths.staged,
                conflicts=u.paths.conflicts,
                index_conflicts=u.paths.index_conflicts,
                forced=u.paths.forced,
            )
        if u.repository is not None:
            doc.update(repository=u.repository.directory, conflict=u.repository.conflict)
        refs.append(doc)
    return {
        "entry": done.entry.get("id"),
        "command": done.entry.get("command"),
        "complete": done.complete,
        "refs": refs,
        "rescued_first": [r.ref for r in done.rescued_first],
    }


def _print(done: Undone) -> None:
    e = done.entry
    when = output.age(entry_time(e))
    print(f"undo {e.get('id')}: `{e.get('command')}` ({when}, session {e.get('session') or '-'})")
    for r in done.rescued_first:
        print(report_line(r))
    for u in done.refs:
        if u.skipped is not None:
            print(f"not restored: {u.ref}: {u.skipped}")
            continue
        if u.repository is not None:
            shown = output.show_path(u.repository.directory + "/")
            if u.repository.conflict:
                print(f"conflict: {shown} holds a repository again; left alone ({u.ref})")
            else:
                print(f"restored the repository {shown} from {u.ref}")
            continue
        p = u.paths
        assert p is not None
        print(p.summary(u.ref))
        for path in p.conflicts:
            print(
                f"conflict: {output.show_path(path)} changed since the rescue; left alone "
                f"(guards undo --force {e.get('id')} rescues it, then overwrites it)"
            )
        for path in p.index_conflicts:
            print(f"conflict: staged {output.show_path(path)} changed since the rescue; left alone")
