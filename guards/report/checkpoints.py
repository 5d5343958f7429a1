"""The last checkpoint of each session that stopped without ending: where the work of a
crashed or killed writer was last saved (``guards checkpoint``, or a harness doing it).

Read from the ledger's log alone (no git call: the frame shows it on an agent's hot
path); doctor checks the refs themselves.
"""

from __future__ import annotations

from guards.values import Value

TYPE_CHECKING = False  # see guards.values: these imports cost start-up time
if TYPE_CHECKING:
    from guards.state.ledger import LedgerData

#: Where checkpoints live: ``refs/wip/<session>`` (beside the rescue namespace).
WIP_PART = "/wip/"


class LastCheckpoint(Value):
    """A session's newest logged checkpoint."""

    __slots__ = ("commit", "ref", "session", "time")

    def __init__(self, session: str, ref: str, commit: str | None, time: float) -> None:
        self.session = session
        self.ref = ref
        self.commit = commit
        self.time = time


def latest_checkpoints(data: LedgerData) -> dict[str, LastCheckpoint]:
    """Each session's newest checkpoint in the ledger's log."""
    latest: dict[str, LastCheckpoint] = {}
    for entry in data.rescues:
        if not isinstance(entry, dict):
            continue
        ref, owner, when = entry.get("ref"), entry.get("owner"), entry.get("time")
        if not isinstance(ref, str) or WIP_PART not in ref or not isinstance(owner, str):
            continue
        if not isinstance(when, (int, float)) or isinstance(when, bool):
            continue
        commit = entry.get("commit")
        if owner not in latest or when >= latest[owner].time:
            latest[owner] = LastCheckpoint(
                owner, ref, commit if isinstance(commit, str) else None, float(when)
            )
    return latest


def dead_sessions_checkpoints(
    data: LedgerData, ttl: float, now: float | None = None
) -> list[LastCheckpoint]:
    """The newest checkpoint of every session that is dead (stopped without ending),
    newest first."""
    latest = latest_checkpoints(data)
    if not latest:
        return []
    from guards.state.session import Liveness, judge

    dead = [
        c
        for sid, c in latest.items()
        if sid in data.sessions
        and judge(sid, data.sessions[sid], ttl, now).liveness == Liveness.DEAD
    ]
    return sorted(dead, key=lambda c: -c.time)
