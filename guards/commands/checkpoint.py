"""guards checkpoint: the caller's own dirty work onto its own WIP ref, touching nothing.

"Commit early, push often" without touching the index or the branch: each checkpoint
is a new commit on ``refs/wip/<session>`` (beside the rescue namespace), its first
parent HEAD, its second the index state, its last the previous checkpoint.
"""

from __future__ import annotations

import argparse
import time

from guards import output
from guards.errors import ExitCode, RefusedError, UsageError
from guards.git.dirty import read_dirty
from guards.protect.rescue import (
    NO_HOOKS,
    PushOutcome,
    RescueFailedError,
    RescueResult,
    build_snapshots,
    log_rescues,
    push,
    ref_values,
    wip_ref,
)
from guards.protect.snapshot import SnapshotError
from guards.state.attribution import Ownership
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
    caller = ws.caller
    dirty = read_dirty(ws.repo)
    data, problem = ws.read_ledger()
    if problem is not None:
        output.error(f"{problem}; nothing can be proven yours, so nothing was checkpointed")
        return ExitCode.UNKNOWN_STATE
    owners = ws.owners(dirty, data)
    mine = [d.path for d, o in zip(dirty, owners, strict=True) if o.ownership is Ownership.MINE]
    if not mine:
        if args.json:
            output.dump_json({"checkpoint": None, "paths": []})
        else:
            print(f"nothing of session {caller} to checkpoint")
        return ExitCode.OK
    ref = wip_ref(ws, caller)
    previous = ref_values(ws, [ref]).get(ref)
    remote = str(ws.config.get("rescue.remote")) or None
    now = time.time()
    command = "checkpoint" + (f" -m {args.message}" if args.message else "")
    try:
        built = build_snapshots(
            ws,
            {caller: mine},
            command=command,
            now=now,
            split_local_only=remote is not None,
            extra_parents={caller: [previous]} if previous else None,
            subject="guards checkpoint",
            body=args.message,
        )[0]
    except SnapshotError as e:
        raise RescueFailedError(f"checkpoint failed: {e}") from None
    res = ws.repo.run(
        [
            *NO_HOOKS,
            "update-ref",
            "--create-reflog",
            "-m",
            f"guards checkpoint: {args.message or f'{len(mine)} paths'}",
            ref,
            built.commit,
            previous or "",
        ],
        check=False,
        readonly=False,
    )
    if res.returncode != 0:
        raise RefusedError(f"{ref} moved while checkpointing (another checkpoint?); run it again")
    outcome: tuple[str, str] | None = None
    if remote is not None:
        remote_tip = _remote_value(ws, remote, ref)
        leases = {ref: remote_tip} if remote_tip else None
        outcome = push(ws, remote, [(built.pushable, ref)], leases=leases)[ref]
    result = RescueResult(
        ref=ref,
        commit=built.commit,
        owner=caller,
        paths=built.paths,
        push=outcome[0] if outcome else None,
        push_detail=outcome[1] if outcome else "",
        remote=remote,
        local_only=built.local_only,
        index_commit=built.index_commit,
    )
    log_rescues(ws, [result], command=command, now=now)
    if args.json:
        output.dump_json(
            {
                "checkpoint": {
                    "ref": ref,
                    "commit": built.commit,
                    "previous": previous,
                    "paths": built.paths,
                    "push": result.push,
                    "push_detail": result.push_detail,
                    "remote": remote,
                    "local_only": built.local_only,
                }
            }
        )
    else:
        n = len(built.paths)
        line = f"checkpoint {built.commit[:12]}: {n} path{'s' if n != 1 else ''} to {ref}"
        if result.push == PushOutcome.PUSHED:
            line += f"; pushed to {remote}"
        elif result.push:
            line += f"; push to {remote} failed ({result.push}: {result.push_detail})"
        if built.local_only:
            line += f"; {len(built.local_only)} secret/ignored paths kept local only"
        print(line)
    return ExitCode.OK


def _remote_value(ws: Workspace, remote: str, ref: str) -> str | None:
    """What the remote holds at ``ref`` now (the lease for replacing our own WIP there)."""
    res = ws.repo.run(
        ["ls-remote", remote, ref],
        check=False,
        extra_env={"GIT_TERMINAL_PROMPT": "0"},
    )
    for line in res.stdout.decode("utf-8", "replace").splitlines():
        oid, _, name = line.partition("\t")
        if name == ref:
            return oid
    return None
