"""The ledger's rescue log, and the line that reports a rescue."""

from __future__ import annotations

import shlex

from guards.errors import GuardsError
from guards.output import show_path
from guards.protect.rescue.naming import REPOSITORY_LABEL, _who
from guards.protect.rescue.push import PushOutcome
from guards.protect.rescue.result import RescueResult
from guards.state import session as sessions
from guards.state.ledger import op_rescue
from guards.state.workspace import Workspace

TYPE_CHECKING = False  # see guards.values: typing costs every rescue start-up time
if TYPE_CHECKING:
    from typing import Any

#: How many paths of one rescue the ledger's log keeps (the commit names them all).
LOGGED_PATHS = 100
#: seconds a rescue once waited for the ledger lock to log itself (logging is a journal
#: append now and waits for nothing; kept for the package's exports)
LOG_LOCK_WAIT = 1.0


def log_rescues(ws: Workspace, results: list[RescueResult], *, command: str, now: float) -> None:
    """Append to the ledger's rescue log; the refs are the truth, so a busy ledger only warns."""
    from guards.output import warn
    from guards.state.repositories import remember

    remember(ws.repo)  # for `guards doctor --all` and `guards reap --all`
    entries = [
        {
            "ref": r.ref,
            "commit": r.commit,
            "index_commit": r.index_commit,
            "owner": r.owner,
            "caller": ws.caller,
            "command": command,
            "host": sessions.hostname(),
            "time": now,
            "worktree": ws.repo.worktree_key if ws.repo.toplevel else None,
            # The commit's trailers hold every path; the log keeps the ledger small.
            "paths": r.paths[:LOGGED_PATHS],
            "path_count": len(r.paths),
            "label": r.label,
            "remote": r.remote,
            "push": r.push,
            "push_detail": r.push_detail,
            "local_only": r.local_only,
        }
        for r in results
    ]
    # The refs hold everything (their trailers); the log only helps doctor and friends.
    # One journal append: no lock to wait for before the command the user asked for runs.
    try:
        ws.ledger.append([op_rescue(entry) for entry in entries])
    except GuardsError as e:
        warn(f"rescue done but not logged in the ledger ({e}); `guards rescue list` shows it")


def decision_rescues(results: list[RescueResult]) -> list[dict[str, Any]]:
    """The rescues of one decision, as the decision log names them."""
    return [
        {
            "ref": r.ref,
            "commit": r.commit,
            "owner": r.owner,
            "path_count": len(r.paths),
            "index_commit": r.index_commit,
            "label": r.label,
            "repository": r.repository,
        }
        for r in results
    ]


def restore_command(result: RescueResult) -> str:
    if result.label and result.label.startswith("stash"):
        return f"git stash apply --index {result.ref}"
    if result.label and result.label.startswith("branch "):
        return f"git branch {result.label.split(' ', 1)[1]} {result.ref}"
    if result.label and not result.label.startswith(REPOSITORY_LABEL):
        return f"git log {result.ref}"
    if result.repository:
        return f"cd {shlex.quote(result.repository)} && guards rescue restore {result.ref}"
    return f"guards rescue restore {result.ref}"


def report_line(result: RescueResult) -> str:
    """Principle 5: whose work, which ref, the command that restores it, what was pushed."""
    who = _who(result.owner)
    if result.label:
        what = f"kept {result.label} ({result.commit[:12]}) of {who}"
    else:
        n = len(result.paths)
        what = f"rescued {n} path{'s' if n != 1 else ''} of {who}"
    where = f" in submodule {show_path(result.repository + '/')}" if result.repository else ""
    line = f"guards: {what} to {result.ref}{where}; restore: {restore_command(result)}"
    if result.push is not None:
        if result.push == PushOutcome.PUSHED:
            line += f"; pushed to {result.remote}"
        else:
            detail = f": {result.push_detail}" if result.push_detail else ""
            line += f"; push to {result.remote} failed ({result.push}{detail}), kept locally"
    if result.local_only:
        n = len(result.local_only)
        if result.label:
            line += f"; not pushed: holds {n} untracked or secret path{'s' if n != 1 else ''}"
        else:
            line += f"; {n} secret/ignored path{'s' if n != 1 else ''} kept local only"
    return line


def rescue_log_entries(ws: Workspace) -> dict[str, dict[str, Any]]:
    """The ledger's rescue log by ref (the newest entry wins); empty when unreadable."""
    data, _problem = ws.read_ledger(rescues=True)
    if data is None:
        return {}
    return {str(e.get("ref")): e for e in data.rescues if isinstance(e, dict)}
