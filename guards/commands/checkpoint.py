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
    if args.json:
        if result.commit is None:
            output.dump_json({"checkpoint": None, "paths": []})
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
    else:
        print(result.line())
    return ExitCode.OK
