"""guards checkpoint: the caller's own dirty work onto its own WIP ref, touching nothing.

"Commit early, push often" without touching the index or the branch (see
guards.protect.persist): each checkpoint is a new commit on ``refs/wip/<session>``,
pushed to ``rescue.remote`` when one is set.
"""

from __future__ import annotations

import argparse

from guards import output
from guards.errors import ExitCode, UsageError
from guards.protect.persist import checkpoint
from guards.state.session import SESSION_ENV
from guards.state.workspace import Workspace

HELP = "snapshot your own dirty work to your WIP ref (and push it if a remote is set)"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-m", "--message", default="", help="what this checkpoint is")
    parser.add_argument("--json", action="store_true", help="machine-readable result")


def run(args: argparse.Namespace) -> int:
    ws = Workspace.open()
    if ws.caller is None:
        raise UsageError(f"checkpoint of whose work? set {SESSION_ENV} (guards session start)")
    result = checkpoint(ws, ws.caller, message=args.message)
    unclaimed = _unclaimed(ws) if result.commit is None and not result.failed else 0
    if args.json:
        if result.commit is None:
            output.dump_json({"checkpoint": None, "paths": [], "unclaimed": unclaimed})
        else:
            doc = result.to_json()
            output.dump_json(
                {
                    "checkpoint": {
                        key: doc[key]
                        for key in (
                            "ref",
                            "commit",
                            "previous",
                            "paths",
                            "push",
                            "push_detail",
                            "retried",
                            "remote",
                            "local_only",
                        )
                    }
                }
            )
    elif unclaimed:
        print(
            f"{result.line()}: {unclaimed} dirty {'path is' if unclaimed == 1 else 'paths are'} "
            "no one's (guards status); claim yours with guards record PATH... or guards "
            "record --since-start, then checkpoint again"
        )
    else:
        print(result.line())
    return ExitCode.OK


def _unclaimed(ws: Workspace) -> int:
    """How many dirty paths nobody owns (work the caller may have forgotten to record)."""
    from guards.git.dirty import read_dirty
    from guards.state.attribution import Ownership

    dirty = read_dirty(ws.repo)
    data, _problem = ws.read_ledger()
    return sum(o.ownership == Ownership.UNKNOWN for o in ws.owners(dirty, data))
