"""What every doctor check shares: a finding and its level, the context, listing helpers."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Final

from guards import output
from guards.config import KEYS, Config
from guards.errors import GuardsError
from guards.git import process as git
from guards.git.repo import Repo
from guards.git.worktrees import GitWorktree, list_worktrees
from guards.state.ledger import Ledger, LedgerData, LedgerUnreadableError
from guards.state.session import Liveness, Verdict


class Level:
    """How much a finding matters, the least first; the strings are the JSON's.

    Plain strings, not an Enum (as :class:`guards.errors.ExitCode`)."""

    OK: Final = "ok"
    WARN: Final = "warn"
    PROBLEM: Final = "problem"

    ALL: Final = (OK, WARN, PROBLEM)


#: How many names a one-line message lists before it says "and N more".
LIST_MAX = output.SHOWN_IN_REPORTS


@dataclass(frozen=True)
class Finding:
    level: str
    area: str
    #: A stable id for the check that made it (JSON consumers key on this).
    check: str
    message: str
    fix: str = ""
    data: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "level": self.level,
            "area": self.area,
            "check": self.check,
            "message": self.message,
            "fix": self.fix or None,
            "data": self.data,
        }


#: Doctor's name for a session that is gone by its heartbeat (no pid to check) or whose
#: record is unreadable; live, ended and dead are :class:`Liveness` values.
STALE = "stale"
#: The states doctor counts sessions by, in its report's order.
SESSION_STATES = (Liveness.LIVE, Liveness.ENDED, Liveness.DEAD, STALE)


@dataclass(frozen=True)
class SessionState:
    """A session's verdict (:meth:`Session.verdict`, the one liveness rule) as doctor
    reports it: a state of :data:`SESSION_STATES` and why."""

    verdict: Verdict
    state: str
    reason: str

    @property
    def live(self) -> bool:
        return self.verdict.liveness == Liveness.LIVE


@dataclass
class Context:
    """What the checks share: the repository, settings and the ledger, read once."""

    repo: Repo | None
    config: Config
    now: float
    ledger: Ledger | None = None
    data: LedgerData | None = None
    #: Why the ledger cannot be trusted (then every owner is unknown).
    ledger_problem: LedgerUnreadableError | None = None
    sessions: dict[str, SessionState] = field(default_factory=dict)
    _worktrees: list[GitWorktree] | None = None
    #: This work tree's ``git status``, started before the checks' imports and their
    #: other git calls so that they overlap it (its answer is taken once).
    started_status: git.Pending | None = None

    #: Settings that could not be read (their defaults are used meanwhile).
    config_problems: list[str] = field(default_factory=list)

    def setting(self, name: str) -> Any:
        """A setting's value; its default (and a noted problem) when it cannot be read."""
        try:
            return self.config.get(name)
        except GuardsError as e:
            if str(e) not in self.config_problems:
                self.config_problems.append(str(e))
            return KEYS[name].default

    @property
    def stale_after(self) -> float:
        return float(self.setting("doctor.stale_after"))

    def git_worktrees(self) -> list[GitWorktree]:
        """Every worktree git knows (listed once); the first is the main worktree."""
        if self._worktrees is None:
            assert self.repo is not None
            self._worktrees = list_worktrees(self.repo)
        return self._worktrees


Check = Callable[[Context], list[Finding]]


def listing(items: list[str], limit: int = LIST_MAX) -> str:
    """``"a, b, c and 4 more"``: one line however many there are (guards.output.listing
    with doctor's limit)."""
    return output.listing(items, limit)


def plural(n: int, word: str, plural: str | None = None) -> str:
    """``"1 session"``, ``"3 sessions"``."""
    return f"{n} {word if n == 1 else (plural or word + 's')}"


def days(seconds: float) -> str:
    """A threshold as set (``14 days``, ``36 h``, ``90 s``)."""
    if seconds % 86400 == 0:
        return plural(int(seconds // 86400), "day")
    if seconds >= 3600:
        return f"{seconds / 3600:g} h"
    return f"{seconds:g} s"


def worst(findings: Iterable[Finding]) -> str:
    """The gravest level among ``findings`` (ok when there are none)."""
    return max((f.level for f in findings), key=Level.ALL.index, default=Level.OK)
