"""Sessions: one writer each (an agent run, a harness seat, a person's shell).

The caller's identity is ``GUARDS_SESSION``; in an agent harness's shell command without
it, the harness session the command runs for (guards.state.identity). Without either
the caller is *unidentified* and owns nothing: every dirty path it could destroy counts
as not its own.
"""

from __future__ import annotations

import enum
import os
import re
import time

from guards.errors import UsageError
from guards.state.identity import MAX_ID_LENGTH as MAX_ID_LENGTH
from guards.state.identity import harness_caller
from guards.values import MutableValue

SESSION_ENV = "GUARDS_SESSION"
_ID_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:@+=-]*")


class Liveness(str, enum.Enum):
    LIVE = "live"
    DEAD = "dead"
    ENDED = "ended"


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

    def liveness(self, ttl: float, now: float | None = None) -> Liveness:
        if self.ended:
            return Liveness.ENDED
        if self.pid is not None and self.host == hostname():
            alive = process_start_time(self.pid)
            return Liveness.LIVE if alive is not None and alive == self.pid_start else Liveness.DEAD
        # No pid (or another host's pid, which cannot be checked from here): heartbeat.
        now = time.time() if now is None else now
        return Liveness.LIVE if now - self.last_seen <= ttl else Liveness.DEAD


def validate_id(session_id: str, what: str = "session id") -> str:
    if not session_id or len(session_id) > MAX_ID_LENGTH or not _ID_PATTERN.fullmatch(session_id):
        shown = session_id if len(session_id) <= 40 else session_id[:37] + "..."
        raise UsageError(
            f"invalid {what} {shown!r}: use 1-{MAX_ID_LENGTH} letters, digits and ._:@+=- "
            f"(starting with a letter or digit)"
        )
    return session_id


def caller_id() -> str | None:
    """The calling session from ``GUARDS_SESSION``, else the harness session whose shell
    command this is; None when unidentified."""
    value = os.environ.get(SESSION_ENV, "").strip()
    if value:
        return validate_id(value, f"{SESSION_ENV} value")
    return harness_caller()


def new_id() -> str:
    return time.strftime("s-%Y%m%d-%H%M%S", time.gmtime()) + f"-{os.getpid()}"


_hostname: str | None = None


def hostname() -> str:
    global _hostname
    if _hostname is None:
        import socket  # lazily: the frame asks only for the caller's id

        _hostname = socket.gethostname()
    return _hostname


def process_start_time(pid: int) -> str | None:
    """An identifier of when ``pid`` started, or None when no such process exists.

    Linux: field 22 of ``/proc/PID/stat`` (clock ticks since boot, plus the boot id so
    that a reboot never matches). Elsewhere: ``ps -o lstart=``.
    """
    if pid <= 0:
        return None
    if not _HAS_PROC:
        return _ps_start_time(pid)
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except FileNotFoundError:
        return None
    except OSError:
        return _ps_start_time(pid)
    # The command name may hold spaces and parentheses: fields start after the last ')'.
    fields = stat[stat.rfind(b")") + 2 :].split()
    return f"{_boot_id()}:{fields[19].decode()}"


_HAS_PROC = os.path.exists("/proc/self/stat")
_boot: str | None = None


def _boot_id() -> str:
    global _boot
    if _boot is None:
        try:
            with open("/proc/sys/kernel/random/boot_id") as f:
                _boot = f.read().strip()
        except OSError:
            _boot = "noboot"
    return _boot


def _ps_start_time(pid: int) -> str | None:
    import subprocess  # lazily: only where there is no /proc (start-up time)

    try:
        res = subprocess.run(
            ["ps", "-o", "lstart=", "-p", str(pid)], capture_output=True, text=True, check=False
        )
    except OSError:
        return None
    return res.stdout.strip() or None
