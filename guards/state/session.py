"""Sessions: one writer each (an agent run, a harness seat, a person's shell).

The caller's identity is ``GUARDS_SESSION``; in an agent harness's shell command without
it, the harness session the command runs for (guards.state.identity). Without either
the caller is *unidentified* and owns nothing: every dirty path it could destroy counts
as not its own.
"""

from __future__ import annotations

import os
import time

from guards.state.identity import (
    MAX_ID_LENGTH,
    PROCESS_GONE,
    PROCESS_LIVE,
    SESSION_ENV,
    caller_id,
    hostname,
    process_alive,
    process_liveness,
    process_start_time,
    validate_id,
)
from guards.values import MutableValue, Value

TYPE_CHECKING = False  # see guards.values: these imports cost start-up time
if TYPE_CHECKING:
    from typing import Any, Final

__all__ = [
    "MAX_ID_LENGTH",
    "SESSION_ENV",
    "Liveness",
    "Session",
    "Verdict",
    "caller_id",
    "hostname",
    "judge",
    "new_id",
    "process_alive",
    "process_start_time",
    "validate_id",
]


class Liveness:
    """Whether a session is alive. Plain strings, not an Enum: see
    :class:`guards.errors.ExitCode`."""

    LIVE: Final = "live"
    DEAD: Final = "dead"
    ENDED: Final = "ended"
    #: The record cannot be read (a field of the wrong type, not an object at all):
    #: nothing proves the session alive.
    UNKNOWN: Final = "unknown"


class Verdict(Value):
    """Whether a session is alive, and what the answer rests on (for the explanations
    doctor, ``guards worktree list`` and reap give; the answer is :attr:`liveness`)."""

    __slots__ = ("idle", "liveness", "pid", "pid_checked", "pid_running")

    def __init__(
        self,
        liveness: str,
        *,
        pid_checked: bool = False,
        pid: int | None = None,
        pid_running: bool | None = None,
        idle: float | None = None,
    ) -> None:
        self.liveness = liveness
        #: Decided by the session's process on this host (else by its heartbeat).
        self.pid_checked = pid_checked
        self.pid = pid
        #: Some process has the pid (when dead: the pid was reused; else it is gone).
        self.pid_running = pid_running
        #: Seconds since the last heartbeat, when the heartbeat decided.
        self.idle = idle


class Session(MutableValue):
    """A session's ledger record."""

    FIELDS = (
        "id",
        "label",
        "host",
        "pid",
        "pid_start",
        "worktree",
        "started",
        "last_seen",
        "ended",
    )
    __slots__ = FIELDS

    def __init__(
        self,
        id: str,
        label: str = "",
        host: str = "",
        pid: int | None = None,
        pid_start: str | None = None,
        worktree: str | None = None,
        started: float = 0.0,
        last_seen: float = 0.0,
        ended: bool = False,
    ) -> None:
        self.id = id
        self.label = label
        self.host = host
        self.pid = pid
        #: The recorded process's start time: a pid alive with another start time was reused.
        self.pid_start = pid_start
        self.worktree = worktree
        self.started = started
        self.last_seen = last_seen
        self.ended = ended

    def to_json(self) -> dict[str, object]:
        return {name: getattr(self, name) for name in self.FIELDS}

    @classmethod
    def from_json(cls, doc: dict[str, object]) -> Session:
        known = {f: doc[f] for f in cls.FIELDS if f in doc}
        return cls(**known)  # type: ignore[arg-type]

    def liveness(self, ttl: float, now: float | None = None) -> str:
        return self.verdict(ttl, now).liveness

    def verdict(self, ttl: float, now: float | None = None) -> Verdict:
        """The liveness rule, the one every part of guards asks.

        Ended is ended. A pid on this host decides next: alive only while a process
        with that pid runs and started when the recorded one did (else it is gone or
        reused). Without one (or with another host's pid, which cannot be checked from
        here) the heartbeat decides: alive while ``last_seen`` is at most ``ttl`` old.
        A field the rule needs of the wrong type makes the answer UNKNOWN, never a crash.
        """
        if self.ended:
            return Verdict(Liveness.ENDED)
        if self.pid is not None and self.host == hostname():
            if not _is_int(self.pid):
                return Verdict(Liveness.UNKNOWN)
            process = process_liveness(self.pid, self.pid_start)
            return Verdict(
                Liveness.LIVE if process == PROCESS_LIVE else Liveness.DEAD,
                pid_checked=True,
                pid=self.pid,
                pid_running=process != PROCESS_GONE,
            )
        if not _is_number(self.last_seen):
            return Verdict(Liveness.UNKNOWN)
        now = time.time() if now is None else now
        idle = now - self.last_seen
        return Verdict(Liveness.LIVE if idle <= ttl else Liveness.DEAD, idle=idle)


def judge(session_id: str, record: object, ttl: float, now: float | None = None) -> Verdict:
    """The liveness of a ledger session record (keyed by ``session_id``): UNKNOWN when
    the record cannot be read."""
    if not isinstance(record, dict):
        return Verdict(Liveness.UNKNOWN)
    try:
        session = Session.from_json({**record, "id": session_id})
    except (TypeError, ValueError):
        return Verdict(Liveness.UNKNOWN)
    return session.verdict(ttl, now)


def one_edit_apart(a: str, b: str) -> bool:
    """Are two different ids one typo apart: one character inserted, deleted, replaced,
    or two neighbours swapped (``alcie`` / ``alice``)?"""
    if a == b or abs(len(a) - len(b)) > 1:
        return False
    if len(a) == len(b):
        diff = [i for i in range(len(a)) if a[i] != b[i]]
        return len(diff) == 1 or (
            len(diff) == 2 and diff[1] == diff[0] + 1 and a[diff[0]] == b[diff[1]]
            and a[diff[1]] == b[diff[0]]
        )  # fmt: skip
    short, long = (a, b) if len(a) < len(b) else (b, a)
    i = 0
    while i < len(short) and short[i] == long[i]:
        i += 1
    return short[i:] == long[i + 1 :]


def near_live(
    session_id: str, records: dict[str, Any], ttl: float, now: float | None = None
) -> list[str]:
    """The live sessions whose ids are one typo away from ``session_id``."""
    return sorted(
        other
        for other, record in records.items()
        if one_edit_apart(session_id, other)
        and judge(other, record, ttl, now).liveness == Liveness.LIVE
    )


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def new_id() -> str:
    return time.strftime("s-%Y%m%d-%H%M%S", time.gmtime()) + f"-{os.getpid()}"
