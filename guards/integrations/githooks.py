"""The checks behind guards' git hooks: what a hook *can* guard.

No hook runs before ``reset``, ``stash``, ``clean`` or ``checkout -- p`` destroy work
(docs/blast-radius.md, "Why the prediction happens before git starts"); those belong
to ``guards run`` and the shim.
The hooks guard the rest:

- **foreign commit** (pre-commit, pre-merge-commit): a commit must not carry paths whose
  work is attributed to another *live* session. Dead or ended sessions' work and work of
  unknown owner does not block (committing loses nothing; the frame and doctor report it).
- **mass deletion** (pre-commit): a commit must not delete more than
  ``max(max_files, max_percent % of tracked files)``.
- **ledger sync** (post-commit, post-checkout, post-merge, post-rewrite): paths that are
  clean again stop being attributed. Housekeeping only: it never fails a git operation.
- **push breaker** (pre-push): a push must not drop remote commits this repository has
  never seen, nor delete a remote branch whose tip is found nowhere else here.

Each refusal names its override, an environment variable (``OVERRIDES``).
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from guards import output
from guards.config import parse_bool
from guards.errors import ExitCode, UsageError
from guards.git.dirty import DirtyPath, read_dirty
from guards.git.entries import index_entries_of, parse_raw_diff
from guards.git.history import commits_held_only_by
from guards.git.objects import empty_tree, is_zero_oid, zero_oid
from guards.git.repo import Repo
from guards.state.attribution import Attribution, Ownership, classify
from guards.state.ledger import LedgerData, LedgerUnreadableError
from guards.state.session import Liveness, judge
from guards.state.workspace import Workspace, release_stale

ALLOW_FOREIGN_COMMIT = "GUARDS_ALLOW_FOREIGN_COMMIT"
ALLOW_MASS_DELETION = "GUARDS_ALLOW_MASS_DELETION"
ALLOW_FORCE_PUSH = "GUARDS_ALLOW_FORCE_PUSH"
OVERRIDES = (ALLOW_FOREIGN_COMMIT, ALLOW_MASS_DELETION, ALLOW_FORCE_PUSH)

DEFAULT_MAX_FILES = 50
DEFAULT_MAX_PERCENT = 20.0


@dataclass
class Verdict:
    """What a check found: ``refused`` blocks the git operation; ``lines`` say why."""

    refused: bool = False
    exit_code: int = ExitCode.OK
    lines: list[str] = field(default_factory=list)

    def refuse(self, lines: Iterable[str], code: int = ExitCode.REFUSED) -> Verdict:
        self.refused = True
        self.exit_code = code
        self.lines.extend(lines)
        return self


def allowed(name: str, env: Mapping[str, str] | None = None) -> bool:
    """Is the override ``name`` set to a true value? A bad value is a usage error."""
    value = (os.environ if env is None else env).get(name, "")
    try:
        return parse_bool(value)
    except ValueError:
        raise UsageError(f"bad value {value!r} for {name}: expected 1 or 0") from None


# -- what the commit would record ------------------------------------------------------


@dataclass(frozen=True)
class StagedChange:
    """One path whose index entry differs from HEAD (what the commit would record)."""

    path: str
    #: git's status letter: A, M, D, T, U (unmerged)
    status: str
    #: the staged blob id (all zeros for a deletion or an unmerged path)
    oid: str


def staged_changes(repo: Repo) -> list[StagedChange]:
    """The index (``$GIT_INDEX_FILE`` when a hook runs with a temporary one) against HEAD.

    ``diff-index --cached`` compares trees with the index and never refreshes or writes
    the index, unlike ``git diff``.
    """
    base = repo.head() or empty_tree(repo.object_format)
    res = repo.run(["diff-index", "--cached", "-z", "--no-renames", "--raw", base])
    return [
        StagedChange(
            path, change.status, change.new.oid if change.new else zero_oid(repo.object_format)
        )
        for path, change in parse_raw_diff(res.stdout).items()
    ]


# -- foreign commit --------------------------------------------------------------------


@dataclass(frozen=True)
class ForeignPath:
    path: str
    session: str
    recorded: float | None


def _live_sessions(data: LedgerData, ttl: float, now: float) -> set[str]:
    return {
        session_id
        for session_id, record in data.sessions.items()
        if judge(session_id, record, ttl, now).liveness == Liveness.LIVE
    }


def foreign_staged_paths(
    ws: Workspace, data: LedgerData, changes: list[StagedChange] | None = None
) -> list[ForeignPath]:
    """Staged paths whose work is attributed to another session that is still live.

    A path counts when its attribution still matches the work tree (the usual case) or
    when the staged blob is exactly the recorded content (the work tree moved on, or the
    pre-commit framework stashed the unstaged part away while hooks run).
    """
    records: Mapping[str, Any] = data.paths.get(ws.repo.worktree_key) or {}
    ttl = float(ws.config.get("session.ttl"))
    live = _live_sessions(data, ttl, time.time()) - {ws.caller or ""}
    candidates = {
        p: r
        for p, r in records.items()
        if isinstance(r, dict) and r.get("session") in live and r.get("session") != ws.caller
    }
    if not candidates:
        return []  # the common case costs no git call at all
    if changes is None:
        changes = staged_changes(ws.repo)
    top = ws.repo.worktree
    fmt = ws.repo.object_format
    found: list[ForeignPath] = []
    for change in changes:
        record = candidates.get(change.path)
        if record is None:
            continue
        owner = classify(record, top / change.path, ws.caller, fmt)
        attribution = Attribution.from_json(record)
        if owner.ownership == Ownership.FOREIGN or _staged_is_recorded(change, attribution):
            found.append(ForeignPath(change.path, attribution.session, attribution.recorded))
    return found


def _staged_is_recorded(change: StagedChange, attribution: Attribution) -> bool:
    fp = attribution.fingerprint
    if change.status == "D":
        return fp.deleted
    return fp.blob is not None and not is_zero_oid(change.oid) and fp.blob == change.oid


def check_foreign_commit(
    ws: Workspace, *, warn_only: bool = False, changes: list[StagedChange] | None = None
) -> Verdict:
    verdict = Verdict()
    data, problem = ws.read_ledger()
    if data is None:
        # Committing destroys nothing: an unreadable ledger warns instead of blocking.
        verdict.lines.append(f"warning: foreign-commit check skipped: {problem}")
        return verdict
    foreign = foreign_staged_paths(ws, data, changes)
    if not foreign:
        return verdict
    who = (
        "you are unidentified: GUARDS_SESSION is not set"
        if ws.caller is None
        else f"you are session {ws.caller}"
    )
    listing = [
        f"  {output.show_path(f.path)}  (session {f.session}, recorded {output.age(f.recorded)})"
        for f in foreign
    ]
    count = f"{len(foreign)} staged path{'s' if len(foreign) != 1 else ''}"
    if warn_only or allowed(ALLOW_FOREIGN_COMMIT):
        verdict.lines.append(
            f"warning: committing {count} attributed to other live sessions ({who}):"
        )
        verdict.lines.extend(listing)
        return verdict
    return verdict.refuse(
        [
            f"refusing to commit {count} attributed to other live sessions "
            f"({who}); unstage them (git restore --staged -- <path>) or set "
            f"{ALLOW_FOREIGN_COMMIT}=1 to commit them anyway:",
            *listing,
        ]
    )


# -- mass deletion ---------------------------------------------------------------------


def _tracked_in_head(repo: Repo) -> int:
    if repo.head() is None:
        return 0
    res = repo.run(["ls-tree", "-r", "-z", "--name-only", "HEAD"])
    return res.stdout.count(b"\0")


def deletion_limit(tracked: int, max_files: int, max_percent: float) -> int:
    """The most deletions one commit may hold: max(max_files, max_percent % of tracked)."""
    return max(max_files, int(tracked * max_percent / 100.0))


def check_mass_deletion(
    repo: Repo,
    *,
    max_files: int = DEFAULT_MAX_FILES,
    max_percent: float = DEFAULT_MAX_PERCENT,
    changes: list[StagedChange] | None = None,
) -> Verdict:
    verdict = Verdict()
    if changes is None:
        changes = staged_changes(repo)
    deleted = sum(1 for c in changes if c.status == "D")
    if deleted <= max_files:
        return verdict  # below the floor whatever the size of the tree: no more git calls
    tracked = _tracked_in_head(repo)
    limit = deletion_limit(tracked, max_files, max_percent)
    if deleted <= limit:
        return verdict
    summary = (
        f"this commit deletes {deleted} of {tracked} tracked files, more than "
        f"max({max_files} files, {max_percent:g}% = {int(tracked * max_percent / 100.0)})"
    )
    if allowed(ALLOW_MASS_DELETION):
        verdict.lines.append(f"warning: {summary} ({ALLOW_MASS_DELETION} is set)")
        return verdict
    return verdict.refuse(
        [
            f"refusing: {summary}; if that is meant, set {ALLOW_MASS_DELETION}=1 "
            f"(or raise --max-files/--max-percent)"
        ]
    )


# -- ledger sync -----------------------------------------------------------------------


def sync_ledger(ws: Workspace, *, unstaged_hidden: bool = False) -> str | None:
    """Release attributions of paths that are clean now. Returns a warning, or None.

    Fast when there is nothing to do: without attributed paths in this work tree no git
    command runs at all; otherwise one ``git status``.

    ``unstaged_hidden``: the pre-commit framework runs hooks of every stage with the
    unstaged changes of tracked files stashed away, so a path that looks clean may only
    be hidden. Then a tracked path is released only when the index holds exactly the
    recorded content (the work was committed); discarded edits are released by the next
    sync that sees the real work tree (a native hook, ``guards status``).
    """
    if ws.repo.toplevel is None:
        return None
    try:
        data = ws.ledger.read(ws.repo.worktree_key, rescues=False)
    except LedgerUnreadableError as e:
        return str(e)
    records = data.paths.get(ws.repo.worktree_key)
    if not records:
        return None
    dirty = read_dirty(ws.repo)
    if unstaged_hidden:
        dirty = dirty + _possibly_hidden(ws.repo, records, {d.path for d in dirty})
    release_stale(ws, data, dirty, ignored_listed=False)
    return None


#: Above this many paths, list the whole index instead of naming them on the command line.
_MAX_ARGV_PATHS = 200


def _possibly_hidden(
    repo: Repo, records: Mapping[str, dict[str, Any]], dirty: set[str]
) -> list[DirtyPath]:
    """Clean-looking tracked paths whose recorded content is not what the index holds."""
    candidates = [p for p in records if p not in dirty]
    if not candidates:
        return []
    named = candidates if len(candidates) <= _MAX_ARGV_PATHS else None
    index = {item.path: item.entry.oid for item in index_entries_of(repo.run, named)}
    hidden = []
    for path in candidates:
        oid = index.get(path)
        if oid is None:
            continue  # not in the index: the framework hides nothing of it
        try:
            recorded = Attribution.from_json(records[path]).fingerprint.blob
        except (TypeError, ValueError, AttributeError):
            recorded = None
        if recorded != oid:
            hidden.append(DirtyPath(path=path, xy=".M"))
    return hidden


# -- push breaker ----------------------------------------------------------------------


@dataclass(frozen=True)
class PushUpdate:
    """One line git feeds pre-push: ``<local ref> <local oid> <remote ref> <remote oid>``."""

    local_ref: str
    local_oid: str
    remote_ref: str
    remote_oid: str

    @property
    def deletes(self) -> bool:
        return is_zero_oid(self.local_oid)

    @property
    def creates(self) -> bool:
        return is_zero_oid(self.remote_oid)


def parse_push_lines(data: bytes) -> list[PushUpdate]:
    updates = []
    for raw in data.splitlines():
        line = raw.decode("utf-8", "surrogateescape").strip()
        if not line:
            continue
        parts = line.rsplit(" ", 3)
        if len(parts) != 4 or not all(_is_hex(p) for p in (parts[1], parts[3])):
            raise UsageError(f"pre-push input line is not '<ref> <oid> <ref> <oid>': {line[:80]!r}")
        updates.append(PushUpdate(*parts))
    return updates


def _is_hex(text: str) -> bool:
    return len(text) in (40, 64) and all(c in "0123456789abcdef" for c in text)


def remote_tip(repo: Repo, remote: str, ref: str) -> str | None:
    """The remote's current tip of ``ref`` (None: no such ref there). Raises GitError."""
    res = repo.run(["ls-remote", "--", remote, ref])
    for line in res.stdout.decode("utf-8", "surrogateescape").splitlines():
        oid, _, name = line.partition("\t")
        if name == ref:
            return oid
    return None


def _exists(repo: Repo, oid: str) -> bool:
    return repo.run(["cat-file", "-e", oid], check=False).returncode == 0


def _is_ancestor(repo: Repo, ancestor: str, descendant: str) -> bool:
    """Git unable to tell counts as no: the breaker then looks at what would be dropped."""
    from guards.git.history import ancestry

    return ancestry(repo.run, ancestor, descendant) is True


def _unreachable_count(repo: Repo, oid: str, keep: list[str], exclude: list[str]) -> int:
    """How many commits of ``oid`` no ref (but the excluded) and no ``keep`` oid reaches."""
    return len(commits_held_only_by(repo.run, oid, other_tips=keep, ignoring=exclude))


def _tracking_refs(remote: str, remote_ref: str) -> list[str]:
    """The remote-tracking ref a named remote's branch maps to by git's default refspec."""
    if remote and remote_ref.startswith("refs/heads/"):
        return [f"refs/remotes/{remote}/{remote_ref.removeprefix('refs/heads/')}"]
    return []


def _short(oid: str) -> str:
    return oid[:12]


def check_push(
    repo: Repo, remote: str, updates: list[PushUpdate], *, named_remote: bool = True
) -> Verdict:
    """Refuse updates that drop remote commits nobody here has seen.

    - an update whose remote tip is unknown here, or known but neither an ancestor of
      what is pushed nor reachable from any ref here (a force push without a lease on
      a tip you have seen);
    - the deletion of a remote branch whose tip no other ref here reaches (its own
      remote-tracking ref does not count: the push deletes it too).
    """
    verdict = Verdict()
    problems: list[str] = []
    for u in updates:
        if u.creates or u.remote_oid == u.local_oid:
            continue
        if not _exists(repo, u.remote_oid):
            what = "deleting" if u.deletes else f"pushing {u.local_ref} to"
            problems.append(
                f"  {what} {u.remote_ref}: the remote tip {_short(u.remote_oid)} was never "
                f"fetched here, so the commits it holds would be lost unseen"
            )
            continue
        if u.deletes:
            exclude = _tracking_refs(remote, u.remote_ref) if named_remote else []
            lost = _unreachable_count(repo, u.remote_oid, [], exclude)
            if lost:
                problems.append(
                    f"  deleting {u.remote_ref}: {lost} commit{'s' if lost != 1 else ''} "
                    f"(tip {_short(u.remote_oid)}) found on no other ref here"
                )
            continue
        if _is_ancestor(repo, u.remote_oid, u.local_oid):
            continue
        lost = _unreachable_count(repo, u.remote_oid, [u.local_oid], [])
        if lost:
            problems.append(
                f"  pushing {u.local_ref} to {u.remote_ref}: drops {lost} remote "
                f"commit{'s' if lost != 1 else ''} (tip {_short(u.remote_oid)}) that no "
                f"ref here holds"
            )
    if not problems:
        return verdict
    if allowed(ALLOW_FORCE_PUSH):
        verdict.lines.append(f"warning: {ALLOW_FORCE_PUSH} is set; pushing anyway:")
        verdict.lines.extend(problems)
        return verdict
    return verdict.refuse(
        [
            f"refusing to push to {remote or 'the remote'}: it would drop remote commits "
            f"nobody here has seen; fetch and integrate them first, or set "
            f"{ALLOW_FORCE_PUSH}=1 to push anyway:",
            *problems,
        ]
    )
