"""The caller's view of one repository: where it is, its settings, its ledger, who asks.

Everyday ledger writes (attributing paths, touching a session, releasing clean paths)
are journal records (:meth:`Ledger.append`): O(1) whatever the ledger holds, no lock.
"""

from __future__ import annotations

import os
import time

from guards.errors import GuardsError, UsageError, first_line
from guards.fsutil import nearest_directory
from guards.git.repo import Discovery, Repo, discover
from guards.state import identity
from guards.state.fingerprint import Attribution, fingerprint
from guards.state.ledger import (
    Ledger,
    LedgerData,
    LedgerUnreadableError,
    op_attribute,
    op_claim,
    op_release,
    op_touch,
    recorded_at,
)
from guards.values import Value

TYPE_CHECKING = False  # see guards.values: these imports cost start-up time
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any

    from guards.config import Config
    from guards.git.dirty import DirtyPath
    from guards.state.attribution import Owner


class Workspace(Value):
    """The repository, its settings and ledger, and the calling session (None when
    unidentified)."""

    __slots__ = ("_config", "caller", "ledger", "repo")

    def __init__(
        self, repo: Repo, config: Config | None, ledger: Ledger, caller: str | None
    ) -> None:
        self.repo = repo
        self._config = config
        self.ledger = ledger
        self.caller = caller

    @property
    def config(self) -> Config:
        """The repository's settings, read when first asked for: an agent's edit is
        recorded without importing or reading them (a compaction's lock timeout is the
        one setting a record may need)."""
        if self._config is None:
            from guards.config import Config

            self._config = Config(self.repo.ledger_dir_text)
        return self._config

    @classmethod
    def open(
        cls,
        cwd: str | os.PathLike[str] | None = None,
        *,
        discovery: Discovery | None = None,
        settings_when_asked: bool = False,
    ) -> Workspace:
        """The workspace of ``cwd``; ``discovery``: its git call, already started there.
        The settings are read now, so that a setting that cannot be used refuses before
        anything is done; ``settings_when_asked``: when first needed instead (a record,
        which may need none)."""
        repo = discover(cwd) if discovery is None else discovery.repo()
        ws: Workspace | None = None

        def lock_timeout() -> float:  # asked by the ledger when it takes its lock
            assert ws is not None
            return float(ws.config.get("ledger.lock_timeout"))

        ledger = Ledger(repo.ledger_dir_text, lock_timeout=lock_timeout)
        caller = identity.caller_id(repo.ledger_dir_text)
        ws = cls(repo=repo, config=None, ledger=ledger, caller=caller)
        if not settings_when_asked:
            _ = ledger.lock_timeout  # read (and checked) now
        return ws

    def read_ledger(
        self, *, rescues: bool = False
    ) -> tuple[LedgerData | None, LedgerUnreadableError | None]:
        """The ledger, or the reason it cannot be trusted (then every owner is unknown).

        Only this worktree's attributions are read (``data.scope``; everything in a bare
        repository), and the rescue log only when asked for.
        """
        try:
            return self.ledger.read(self.repo.toplevel_text, rescues=rescues), None
        except LedgerUnreadableError as e:
            return None, e

    def owners(self, dirty: list[DirtyPath], data: LedgerData | None) -> list[Owner]:
        """Who owns each dirty path, relative to the caller."""
        from guards.state.attribution import UNKNOWN_OWNER, classify

        if data is None:
            return [UNKNOWN_OWNER for _ in dirty]
        records: Mapping[str, Any] = data.paths.get(self.repo.worktree_key, {})
        top = self.repo.worktree_key
        fmt = self.repo.object_format
        join = os.path.join  # strings, not Paths: this runs once per dirty path
        return [classify(records.get(d.path), join(top, d.path), self.caller, fmt) for d in dirty]

    def repo_relative(self, user_path: str) -> str:
        """A path as the user typed it (relative to the cwd) -> repository-relative."""
        return repo_relative(self.repo, user_path)


def repo_relative(repo: Repo, user_path: str) -> str:
    """A path as the user typed it (relative to the cwd) -> repository-relative (text
    only: ``guards record`` never needs pathlib)."""
    top = repo.worktree_key
    absolute = os.path.abspath(user_path)
    # Resolve the directories but not the last component: a symlink is itself a file.
    head, name = os.path.split(absolute)
    parent = os.path.realpath(head)
    candidate = os.path.join(parent, name) if name else parent
    root = os.path.realpath(top).rstrip("/") or "/"
    if candidate == root:
        return ""
    prefix = root if root.endswith("/") else root + "/"
    if not candidate.startswith(prefix):
        raise UsageError(f"{user_path!r} is outside the repository at {top}")
    rel = candidate[len(prefix) :]
    if rel.split("/", 1)[0] == ".git":
        raise UsageError(f"{user_path!r} is inside the .git directory")
    return rel


def touch_session(data: LedgerData, session_id: str, now: float | None = None) -> None:
    """Mark a session active, creating its record when it has none yet (in data being
    rewritten by a transaction; everyday writers append :func:`touch_record`)."""
    from guards.state.session import Session

    now = time.time() if now is None else now
    record = data.sessions.get(session_id)
    if record is None:
        data.sessions[session_id] = Session(
            id=session_id, host=identity.hostname(), started=now, last_seen=now
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
    key = ws.repo.worktree_key
    records = data.paths.get(key)
    if not records:
        return
    dirty_paths = {d.path for d in dirty}
    candidates = [p for p in records if p not in dirty_paths]
    if not candidates:
        return
    top = ws.repo.worktree_key
    if not ignored_listed:
        existing = [p for p in candidates if os.path.lexists(os.path.join(top, p))]
        ignored = _ignored(ws, existing) if existing else set()
        candidates = [p for p in candidates if p not in ignored]
    if not candidates:
        return
    # Each release names the attribution it judged: one recorded meanwhile stays.
    releases = [op_release(key, p, recorded_at(records, p)) for p in candidates]
    try:
        ws.ledger.append(releases, durable=False)
    except GuardsError:  # housekeeping: a ledger problem shows elsewhere
        return


def _ignored(ws: Workspace, paths: list[str]) -> set[str]:
    from guards.git import process as git

    res = ws.repo.run(["check-ignore", "-z", "--stdin"], stdin=git.nul_join(paths), check=False)
    if res.returncode not in (0, 1):
        return set(paths)  # cannot tell: keep them all
    return {os.fsdecode(p) for p in git.zsplit(res.stdout)}


def touch_record(
    session_id: str, now: float, label: str | None = None, worktree: str | None = None
) -> list[object]:
    """The journal record that marks a session active (created when it has no record;
    ``label`` and ``worktree`` fill only empty fields)."""
    return op_touch(session_id, now, identity.hostname(), label, worktree)


def typo_warning(ledger: Ledger, session_id: str, ttl: Callable[[], float]) -> str | None:
    """When ``session_id`` is new (no ledger file names it) and one typo away from a live
    session, the warning to print; else None. Cheap for a known session (a byte search),
    so every ``guards record`` can ask; a new session is new only once."""
    if ledger.mentions_session(session_id):
        return None
    data, _problem = ledger.peek(worktree="\0", rescues=False)  # sessions only
    if data is None or not data.sessions:
        return None
    from guards.state.session import near_live

    near = near_live(session_id, data.sessions, ttl())
    if not near:
        return None
    return (
        f"new session {session_id!r} is one typo away from live session {near[0]!r}: "
        f"check {identity.SESSION_ENV} (guards session list)"
    )


def record_paths(
    ws: Workspace,
    session_id: str,
    relative: list[str],
    source: str = "record",
    *,
    expected: Mapping[str, object] | None = None,
) -> None:
    """Attribute each repository-relative path, as it is now, to ``session_id``.

    With ``expected`` (path -> when its attribution seen was recorded, None for none),
    a path is attributed only if its attribution is still that one when the record is
    applied: an attribution another writer made meanwhile wins.
    """
    attribute(ws.repo, ws.ledger, session_id, relative, source, expected=expected)
    from guards.state.repositories import remember

    remember(ws.repo)  # for `guards doctor --all` and `guards reap --all`


def record_files(
    sid: str, files: list[str], started: Discovery | None = None
) -> tuple[list[str], list[str]]:
    """Record each absolute path for ``sid`` in its own repository (one outside any, or
    inside ``.git``, is nobody's to attribute): (the paths recorded, one line for each
    repository whose record failed). The agent hooks' way in, after each edit;
    ``started``: the discovery of the first path's repository, begun by the caller."""
    by_repo: dict[str, tuple[Workspace, list[str]]] = {}
    for path in files:
        path = os.path.abspath(path)
        try:
            where = nearest_directory(os.path.dirname(path))
            discovery, started = started, None  # the first path's only, even if it fails
            ws = Workspace.open(cwd=where, discovery=discovery, settings_when_asked=True)
            if ws.repo.toplevel_text is None:  # (text: no pathlib on every edit)
                continue
            rel = ws.repo_relative(path)
        except GuardsError:
            continue  # outside any repository (or inside .git): nothing to attribute
        if not rel:
            continue
        entry = by_repo.setdefault(ws.repo.worktree_key, (ws, []))
        entry[1].append(rel)
    done: list[str] = []
    problems: list[str] = []
    for ws, rels in by_repo.values():
        try:
            record_paths(ws, sid, rels, source="record")
            done += rels
        except GuardsError as e:
            problems.append(f"cannot record {len(rels)} path(s): {first_line(e)}")
    return done, problems


def attribute(
    repo: Repo,
    ledger: Ledger,
    session_id: str,
    relative: list[str],
    source: str = "record",
    *,
    expected: Mapping[str, object] | None = None,
    on_path: Callable[[], object] | None = None,
) -> None:
    """:func:`record_paths` for a repository and ledger (no settings needed): one
    journal append, whatever the ledger holds. ``on_path`` runs after each path."""
    top = repo.worktree_key
    fmt = repo.object_format
    join = os.path.join
    prints = []
    for rel in relative:
        prints.append((rel, fingerprint(join(top, rel), fmt)))
        if on_path is not None:
            on_path()
    now = time.time()
    records = [touch_record(session_id, now)]
    for rel, fp in prints:
        record = Attribution(session_id, fp, now, source).to_json()
        if expected is None:
            records.append(op_attribute(top, rel, record))
        else:
            records.append(op_claim(top, rel, record, expected.get(rel)))
    ledger.append(records, durable=False)


def claimable(
    repo: Repo, session_id: str, patterns: list[str], since_start: bool
) -> tuple[list[str], list[str]]:
    """For ``guards record PATTERN`` / ``--since-start``: the dirty paths the patterns
    match (each must match one) or, with ``since_start``, that changed since the session
    started; never a path another session owns, nor one another live session recorded
    and someone changed since ("can't see" is not "isn't mine to leave"). Returns the
    paths and notes on what was left out."""
    from guards.config import Config
    from guards.git.dirty import read_dirty
    from guards.output import show_path
    from guards.state.attribution import Ownership, classify
    from guards.state.session import Liveness, judge

    try:
        data = Ledger(repo.ledger_dir_text).read(repo.toplevel_text, rescues=False)
    except LedgerUnreadableError as e:
        raise LedgerUnreadableError(f"{e}: claim paths by name instead") from e
    candidates: list[str] = []
    for pattern in patterns:
        matched = [d.path for d in read_dirty(repo, pathspecs=[pattern], magic="glob")]
        if not matched:
            raise UsageError(f"no dirty path matches {show_path(pattern)}")
        candidates.extend(matched)
    notes: list[str] = []
    top = repo.worktree_key
    if since_start:
        record = data.sessions.get(session_id)
        started = record.get("started") if isinstance(record, dict) else None
        if not isinstance(started, (int, float)):
            raise UsageError(
                f"session {session_id} has no start time: start it with guards session "
                "start, or record paths by name"
            )
        deleted = 0
        for d in read_dirty(repo):
            try:
                changed = os.lstat(os.path.join(top, d.path)).st_mtime
            except OSError:
                mine = records_here(data, top).get(d.path, {}).get("session") == session_id
                deleted += not mine  # when it was deleted is unknown: never claimed
                continue
            if changed >= started:
                candidates.append(d.path)
        if deleted:
            notes.append(
                f"left {deleted} deleted {'path' if deleted == 1 else 'paths'} "
                "(when deleted is unknown: record by name)"
            )
    ttl = float(Config(repo.ledger_dir_text).get("session.ttl"))
    records = records_here(data, top)
    claimed: list[str] = []
    others = 0
    for path in dict.fromkeys(candidates):
        rec = records.get(path)
        if rec is not None and rec.get("session") != session_id:
            owner = classify(rec, os.path.join(top, path), session_id, repo.object_format)
            recorder = str(rec.get("session"))
            live = judge(recorder, data.sessions.get(recorder), ttl).liveness == Liveness.LIVE
            if owner.ownership == Ownership.FOREIGN or live:
                others += 1
                continue
        claimed.append(path)
    if others:
        notes.append(
            f"left {others} {'path' if others == 1 else 'paths'} of other sessions (guards status)"
        )
    return claimed, notes


def records_here(data: LedgerData, worktree: str) -> Mapping[str, Any]:
    """The attributions of one worktree's paths."""
    records: Mapping[str, Any] = data.paths.get(worktree, {})
    return records
