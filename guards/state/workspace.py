"""The caller's view of one repository: where it is, its settings, its ledger, who asks."""

from __future__ import annotations

import os
import time

from guards.config import Config
from guards.errors import GuardsError, UsageError
from guards.git.dirty import DirtyPath
from guards.git.repo import Repo, discover
from guards.state import session as sessions
from guards.state.attribution import UNKNOWN_OWNER, Attribution, Owner, classify, fingerprint
from guards.state.ledger import Ledger, LedgerData, LedgerUnreadableError
from guards.values import Value


class Workspace(Value):
    """The repository, its settings and ledger, and the calling session (None when
    unidentified)."""

    __slots__ = ("caller", "config", "ledger", "repo")

    def __init__(self, repo: Repo, config: Config, ledger: Ledger, caller: str | None) -> None:
        self.repo = repo
        self.config = config
        self.ledger = ledger
        self.caller = caller

    @classmethod
    def open(cls, cwd: str | os.PathLike[str] | None = None) -> Workspace:
        repo = discover(cwd)
        config = Config(repo.ledger_dir_text)
        lock_timeout = float(config.get("ledger.lock_timeout"))
        ledger = Ledger(repo.ledger_dir_text, lock_timeout=lock_timeout)
        return cls(repo=repo, config=config, ledger=ledger, caller=sessions.caller_id())

    def read_ledger(self) -> tuple[LedgerData | None, LedgerUnreadableError | None]:
        """The ledger, or the reason it cannot be trusted (then every owner is unknown)."""
        try:
            return self.ledger.read(), None
        except LedgerUnreadableError as e:
            return None, e

    def owners(self, dirty: list[DirtyPath], data: LedgerData | None) -> list[Owner]:
        """Who owns each dirty path, relative to the caller."""
        if data is None:
            return [UNKNOWN_OWNER for _ in dirty]
        records = data.paths.get(self.repo.worktree_key, {})
        top = self.repo.worktree_key
        fmt = self.repo.object_format
        join = os.path.join  # strings, not Paths: this runs once per dirty path
        return [classify(records.get(d.path), join(top, d.path), self.caller, fmt) for d in dirty]

    def repo_relative(self, user_path: str) -> str:
        """A path as the user typed it (relative to the cwd) -> repository-relative."""
        from pathlib import Path  # here: reading (status) never needs it

        top = self.repo.worktree
        absolute = Path(os.path.abspath(user_path))
        # Resolve the directories but not the last component: a symlink is itself a file.
        parent = Path(os.path.realpath(absolute.parent))
        candidate = parent / absolute.name if absolute.name else parent
        try:
            rel = candidate.relative_to(os.path.realpath(top))
        except ValueError:
            raise UsageError(f"{user_path!r} is outside the repository at {top}") from None
        if rel.parts and rel.parts[0] == ".git":
            raise UsageError(f"{user_path!r} is inside the .git directory")
        return rel.as_posix() if rel.parts else ""


def touch_session(data: LedgerData, session_id: str, now: float | None = None) -> None:
    """Mark a session active, creating its record when it has none yet."""
    now = time.time() if now is None else now
    record = data.sessions.get(session_id)
    if record is None:
        data.sessions[session_id] = sessions.Session(
            id=session_id, host=sessions.hostname(), started=now, last_seen=now
        ).to_json()
    else:
        record["last_seen"] = now


def release_stale(
    ws: Workspace, data: LedgerData, dirty: list[DirtyPath], *, ignored_listed: bool
) -> None:
    """Forget attributions of paths that are no longer dirty (committed or reverted).

    Writes only when something is stale. Without the ignored files in ``dirty``, a
    recorded path that still exists may be ignored (and still work): those are kept
    unless git says they are not ignored.
    """
    records = data.paths.get(ws.repo.worktree_key)
    if not records:
        return
    dirty_paths = {d.path for d in dirty}
    candidates = [p for p in records if p not in dirty_paths]
    if not candidates:
        return
    top = ws.repo.worktree
    if not ignored_listed:
        existing = [p for p in candidates if os.path.lexists(top / p)]
        ignored = _ignored(ws, existing) if existing else set()
        candidates = [p for p in candidates if p not in ignored]
    if not candidates:
        return
    try:
        with ws.ledger.transaction() as fresh:
            current = fresh.paths.get(ws.repo.worktree_key, {})
            for p in candidates:
                # Only what we judged: a newer record made meanwhile stays.
                if p in current and current[p].get("recorded") == records[p].get("recorded"):
                    del current[p]
    except GuardsError:
        pass  # housekeeping only: a busy or unwritable ledger is reported elsewhere


def _ignored(ws: Workspace, paths: list[str]) -> set[str]:
    from guards import git

    res = ws.repo.run(["check-ignore", "-z", "--stdin"], stdin=git.nul_join(paths), check=False)
    if res.returncode not in (0, 1):
        return set(paths)  # cannot tell: keep them all
    return {os.fsdecode(p) for p in git.zsplit(res.stdout)}


def record_paths(
    ws: Workspace, session_id: str, relative: list[str], source: str = "record"
) -> None:
    """Attribute each repository-relative path, as it is now, to ``session_id``."""
    top = ws.repo.worktree
    fmt = ws.repo.object_format
    prints = {rel: fingerprint(top / rel, fmt) for rel in relative}
    now = time.time()
    with ws.ledger.transaction() as data:
        touch_session(data, session_id, now)
        records = data.paths.setdefault(ws.repo.worktree_key, {})
        for rel, fp in prints.items():
            records[rel] = Attribution(session_id, fp, now, source).to_json()
    from guards.state.repositories import remember

    remember(ws.repo)  # for `guards doctor --all` and `guards reap --all`
