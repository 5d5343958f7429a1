"""One worktree per writer: the registry, and what each worktree holds that could be lost.

A worktree made by ``guards worktree add`` is registered in the ledger
(``LedgerData.worktrees[<real path>]``: path, session, branch, base, created,
lock_reason, includes) and locked with ``git worktree lock`` whose reason guards writes
recognisably (``guards: session S``). A lock with any other reason, or none, belongs to
a person or another tool, and guards respects it.

The state of a worktree answers the reaper's questions, each with yes, no or unknown:
is the owner alive, what dirty work is there (ignored files included: ``git worktree
remove`` deletes them silently), which commits are on no remote, tag, rescue ref or
other branch, when was it last active, and does a process still run inside it.

Ignored artifacts copied or linked in at creation (``.worktreeinclude``) are not work
while they are as guards left them: each is recorded with a digest.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import stat
import subprocess
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from guards.errors import GuardsError, UnknownStateError
from guards.fsutil import KEEP_MODE, atomic_write, locked
from guards.git import process as git
from guards.git.dirty import read_dirty
from guards.git.files import holds_repository, walk_files
from guards.git.history import commits_held_only_by
from guards.git.names import ObjectId
from guards.git.repo import Repo, discover
from guards.git.worktrees import list_worktrees
from guards.output import show_path
from guards.state.ledger import LedgerData
from guards.state.session import Liveness, judge

#: What guards writes as a lock reason; any other reason belongs to someone else.
LOCK_PREFIX = "guards: session "
#: The lock that serializes creating and reaping worktrees (in the ledger directory).
LOCK_FILE = "worktrees.lock"
#: The file listing ignored artifacts a new worktree needs (Claude Code's convention).
INCLUDE_FILE = ".worktreeinclude"
EXCLUDE_BEGIN = "# >>> guards worktree includes (managed by guards worktree add)"
EXCLUDE_END = "# <<< guards worktree includes"
#: Copied files larger than this are fingerprinted by stat data only.
_HASH_LIMIT = 16 * 1024 * 1024


def lock_reason(session_id: str) -> str:
    return f"{LOCK_PREFIX}{session_id}"


def lock_owner(reason: str | None) -> str | None:
    """The session named by a lock guards wrote; None for anyone else's lock."""
    if reason is None or not reason.startswith(LOCK_PREFIX):
        return None
    return reason[len(LOCK_PREFIX) :].strip() or None


def real(path: str | os.PathLike[str]) -> str:
    return os.path.realpath(os.fspath(path))


# -- what git knows ---------------------------------------------------------------------------


# -- the serializing lock -----------------------------------------------------------------------


@contextlib.contextmanager
def serialize(repo: Repo, timeout: float) -> Iterator[None]:
    """One lock for creating and reaping: a reaper never sees a half-made worktree."""
    directory = repo.ledger_dir
    try:
        directory.mkdir(mode=0o700, exist_ok=True)
    except OSError as e:
        raise UnknownStateError(f"cannot create {directory}: {e.strerror}") from e
    with locked(
        directory / LOCK_FILE,
        timeout,
        what="the worktrees",
        holder="creating or reaping worktrees",
        setting="worktree.lock_timeout",
    ):
        yield


# -- processes inside a worktree ------------------------------------------------------------------


def process_cwds(proc: str = "/proc") -> dict[int, str] | None:
    """pid -> real working directory of every process we can see; None = cannot tell.

    Linux: ``/proc/PID/cwd``. Processes of other users whose cwd we may not read are
    left out (they cannot write our files in the common case), and so are those a
    sandbox hides from root; one of our own we cannot read makes the answer unknown.
    Without ``/proc``: ``lsof -d cwd``; without that either, unknown (the reaper then
    skips every worktree and says why).
    """
    if not os.path.isdir(os.path.join(proc, "self")):
        return _lsof_cwds()
    uid = os.getuid()
    out: dict[int, str] = {}
    try:
        names = os.listdir(proc)
    except OSError:
        return None
    for name in names:
        # Our own process counts too: a reaper running inside a worktree keeps it.
        if not name.isdigit():
            continue
        try:
            target = os.readlink(os.path.join(proc, name, "cwd"))
        except FileNotFoundError:
            continue  # exited meanwhile
        except PermissionError:
            try:
                # A process of ours we may not look at is a blind spot. root's refusals
                # come from a sandbox (no ptrace capability), not from ownership.
                if uid != 0 and os.stat(os.path.join(proc, name)).st_uid == uid:
                    return None
            except OSError:
                pass
            continue
        except OSError:
            continue
        out[int(name)] = target.removesuffix(" (deleted)")
    return out


def _lsof_cwds() -> dict[int, str] | None:
    try:
        res = subprocess.run(
            ["lsof", "-n", "-w", "-d", "cwd", "-F", "pn"],
            capture_output=True,
            check=False,
            timeout=30,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if res.returncode not in (0, 1) or not res.stdout:
        return None
    out: dict[int, str] = {}
    pid: int | None = None
    for line in res.stdout.split(b"\n"):
        if line.startswith(b"p") and line[1:].isdigit():
            pid = int(line[1:])
        elif line.startswith(b"n") and pid is not None:
            out[pid] = os.fsdecode(line[1:])
    return out


def processes_inside(path: str, cwds: dict[int, str] | None) -> list[int] | None:
    if cwds is None:
        return None
    top = real(path)
    return sorted(pid for pid, cwd in cwds.items() if cwd == top or cwd.startswith(top + "/"))


# -- included artifacts ---------------------------------------------------------------------------


def artifact_digest(path: Path) -> str | None:
    """A fingerprint of a copied or linked artifact; None when it is gone or holds a
    repository (whose history is not in its files: never "as guards placed it")."""
    try:
        st = os.lstat(path)
    except OSError:
        return None
    h = hashlib.sha256()
    if stat.S_ISLNK(st.st_mode):
        h.update(b"link\0" + os.fsencode(os.readlink(path)))
    elif stat.S_ISDIR(st.st_mode):
        if holds_repository(path):
            return None
        for rel, repository in walk_files(path, "", enter_repositories=False, sort=True):
            if repository:
                return None
            h.update(os.fsencode(rel) + b"\0")
            h.update(_stat_line(os.path.join(path, rel)))
    else:
        h.update(_stat_line(os.fspath(path)))
        if stat.S_ISREG(st.st_mode) and st.st_size <= _HASH_LIMIT:
            try:
                h.update(path.read_bytes())
            except OSError:
                return None
    return h.hexdigest()


def _stat_line(full: str) -> bytes:
    try:
        st = os.lstat(full)
    except OSError:
        return b"gone\0"
    link = os.fsencode(os.readlink(full)) if stat.S_ISLNK(st.st_mode) else b""
    return f"{st.st_mode:o} {st.st_size} {st.st_mtime_ns}\0".encode() + link + b"\0"


def unchanged_artifacts(top: Path, includes: Iterable[dict[str, Any]]) -> list[str]:
    """Included artifacts still exactly as guards placed them (not work)."""
    out = []
    for item in includes:
        rel = str(item.get("path", ""))
        if rel and item.get("digest") and artifact_digest(top / rel) == item.get("digest"):
            out.append(rel)
    return out


def include_patterns(source_top: Path | None, extra: list[str]) -> list[str]:
    lines: list[str] = []
    if source_top is not None:
        try:
            lines = (source_top / INCLUDE_FILE).read_text("utf-8").splitlines()
        except FileNotFoundError:
            pass
        except (OSError, UnicodeDecodeError) as e:
            raise UnknownStateError(f"cannot read {source_top / INCLUDE_FILE}: {e}") from e
    return [ln for ln in lines + extra if ln.strip() and not ln.lstrip().startswith("#")]


def find_includes(source: Repo, patterns: list[str]) -> list[str]:
    """Ignored paths of ``source`` matching ``patterns`` (gitignore syntax), git's matching.

    A wholly matching directory is one entry. Only paths the repository itself ignores
    qualify: a tracked or plain untracked file is never copied behind git's back.
    """
    if not patterns:
        return []
    import tempfile

    with tempfile.NamedTemporaryFile("w", encoding="utf-8", suffix=".include") as f:
        f.write("\n".join(patterns) + "\n")
        f.flush()
        res = source.run(
            ["ls-files", "-z", "--others", "--ignored", "--directory", f"--exclude-from={f.name}"]
        )
    matched = [os.fsdecode(p) for p in git.zsplit(res.stdout)]
    if not matched:
        return []
    ignored = source.run(
        ["check-ignore", "-z", "--stdin"], stdin=git.nul_join(matched), check=False
    )
    if ignored.returncode not in (0, 1):
        raise git.GitError(["check-ignore"], ignored.returncode, ignored.stderr)
    keep = {os.fsdecode(p) for p in git.zsplit(ignored.stdout)}
    return [p.rstrip("/") for p in matched if p in keep]


def place_includes(
    source_top: Path, target_top: Path, paths: list[str], mode: str
) -> tuple[list[dict[str, Any]], list[str]]:
    """Link or copy each artifact; returns (records, one-line notes on what was skipped)."""
    records: list[dict[str, Any]] = []
    notes: list[str] = []
    for rel in paths:
        src = source_top / rel
        dst = target_top / rel
        if "\n" in rel:
            notes.append(f"{show_path(rel)} not included: an exclude file cannot name it")
            continue
        if os.path.lexists(dst):
            notes.append(f"{show_path(rel)} not included: the new worktree already has it")
            continue
        how = mode
        if how == "auto":
            how = "link" if src.is_dir() and not src.is_symlink() else "copy"
        try:
            dst.parent.mkdir(parents=True, exist_ok=True)
            if how == "link":
                os.symlink(os.path.abspath(src), dst)
            elif src.is_dir() and not src.is_symlink():
                shutil.copytree(src, dst, symlinks=True)
            else:
                shutil.copy2(src, dst, follow_symlinks=False)
        except OSError as e:
            notes.append(f"{show_path(rel)} not included: {e.strerror or e}")
            continue
        records.append(
            {"path": rel, "mode": how, "source": os.fspath(src), "digest": artifact_digest(dst)}
        )
    return records, notes


def exclude_pattern(rel: str) -> str:
    """An anchored gitignore pattern naming exactly ``rel`` (file, directory or link)."""
    out = []
    for ch in rel:
        out.append("\\" + ch if ch in "\\*?[" else ch)
    text = "".join(out)
    if text.endswith(" "):
        stripped = text.rstrip(" ")
        text = stripped + "\\ " * (len(text) - len(stripped))
    return "/" + text


def record_excludes(worktree: Path, paths: list[str]) -> Path | None:
    """Add anchored patterns for ``paths`` to the exclude file git reads in ``worktree``.

    Linked worktrees share ``info/exclude`` with the main one (``git rev-parse
    --git-path info/exclude`` names the common dir's file; a per-worktree
    ``$GIT_DIR/info/exclude`` is never read). The patterns go into one block guards
    manages there. They name only artifacts the repository ignores already; the block
    makes their link form (a symlink is no directory for ``node_modules/``) ignored too.
    """
    if not paths:
        return None
    res = git.run(
        ["rev-parse", "--path-format=absolute", "--git-path", "info/exclude"], cwd=worktree
    )
    target = Path(os.fsdecode(git.strip_newline(res.stdout)))
    try:
        text = target.read_text("utf-8")
    except FileNotFoundError:
        text = ""
    lines = text.splitlines()
    if EXCLUDE_BEGIN in lines and EXCLUDE_END in lines[lines.index(EXCLUDE_BEGIN) :]:
        start = lines.index(EXCLUDE_BEGIN)
        end = lines.index(EXCLUDE_END, start)
        before, block, after = lines[:start], lines[start + 1 : end], lines[end + 1 :]
    else:
        before, block, after = lines, [], []
    wanted = list(dict.fromkeys(block + [exclude_pattern(p) for p in paths]))
    if wanted == block:
        return target
    new = "\n".join([*before, EXCLUDE_BEGIN, *wanted, EXCLUDE_END, *after]) + "\n"
    target.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(target, new.encode("utf-8"), mode=KEEP_MODE)  # git's file: its mode stays
    return target


# -- the state of each worktree -------------------------------------------------------------------


@dataclass
class WorktreeState:
    path: str
    is_main: bool
    registered: bool
    record: dict[str, Any]
    owner: str | None
    #: live, dead, ended, unknown (no record to judge by), or "-" (unregistered)
    liveness: str
    owner_reason: str
    #: whether the owner's liveness comes from a pid check (else: from idleness)
    pid_checked: bool
    branch: str | None
    head: str | None
    locked: str | None
    prunable: str | None
    exists: bool
    #: work that removal would destroy (ignored files included); None: could not read
    dirty: list[str] | None = None
    #: commits reachable from HEAD on no remote, tag, rescue ref or other branch
    unsaved: list[ObjectId] | None = None
    last_activity: float | None = None
    #: pids with their cwd inside; None when that cannot be seen
    processes: list[int] | None = None
    problems: list[str] = field(default_factory=list)

    @property
    def lock_session(self) -> str | None:
        return lock_owner(self.locked)

    @property
    def locked_by_other(self) -> bool:
        """Locked by a person or another tool (a lock guards did not write)."""
        return self.locked is not None and self.lock_session is None

    @property
    def short_branch(self) -> str | None:
        return self.branch.removeprefix("refs/heads/") if self.branch else None

    def idle(self, now: float) -> float | None:
        return None if self.last_activity is None else max(0.0, now - self.last_activity)

    def to_json(self, now: float) -> dict[str, Any]:
        return {
            "path": self.path,
            "main": self.is_main,
            "registered": self.registered,
            "owner": self.owner,
            "liveness": self.liveness,
            "owner_reason": self.owner_reason,
            "branch": self.short_branch,
            "head": self.head,
            "base": self.record.get("base"),
            "created": self.record.get("created"),
            "locked": self.locked is not None,
            "lock_reason": self.locked,
            "locked_by": (
                None if self.locked is None else ("guards" if self.lock_session else "other")
            ),
            "prunable": self.prunable,
            "exists": self.exists,
            "dirty": None if self.dirty is None else len(self.dirty),
            "dirty_paths": self.dirty,
            "unpushed": None if self.unsaved is None else len(self.unsaved),
            "unpushed_commits": self.unsaved,
            "last_activity": self.last_activity,
            "idle_seconds": self.idle(now),
            "processes": self.processes,
            "problems": self.problems,
        }


def registry(data: LedgerData | None) -> dict[str, tuple[str, dict[str, Any]]]:
    """Registered worktrees by real path -> (ledger key, record)."""
    out: dict[str, tuple[str, dict[str, Any]]] = {}
    for key, rec in (data.worktrees if data is not None else {}).items():
        if isinstance(rec, dict):
            out[real(str(rec.get("path") or key))] = (key, rec)
    return out


def owner_liveness(
    data: LedgerData | None, owner: str | None, ttl: float, now: float
) -> tuple[str, str, bool]:
    """(liveness, why, pid_checked) of a worktree's owning session (the verdict of
    :meth:`Session.verdict`, the one liveness rule)."""
    unknown = Liveness.UNKNOWN
    if data is None:
        return unknown, "ledger unreadable", False
    if not owner:
        return unknown, "no owner recorded", False
    rec = data.sessions.get(owner)
    if rec is None:
        return unknown, f"no record of session {owner}", False
    v = judge(owner, rec, ttl, now)
    if v.liveness == Liveness.UNKNOWN:
        return unknown, f"unreadable record of session {owner}", False
    if v.liveness == Liveness.ENDED:
        return v.liveness, f"session {owner} ended", v.pid_checked
    if v.pid_checked:
        if v.liveness == Liveness.LIVE:
            return v.liveness, f"pid {v.pid} alive", True
        return v.liveness, f"pid {v.pid} {'reused' if v.pid_running else 'gone'}", True
    seen = int(v.idle or 0)
    if v.liveness == Liveness.LIVE:
        return v.liveness, f"heartbeat {seen} s ago", False
    return v.liveness, f"no heartbeat for {seen} s", False


def inspect(
    repo: Repo,
    data: LedgerData | None,
    *,
    ttl: float,
    namespace: str,
    now: float | None = None,
    only: Iterable[str] | None = None,
    processes: bool = True,
    deep: bool = True,
) -> list[WorktreeState]:
    """The state of every worktree git knows (or of ``only`` those real paths)."""
    now = time.time() if now is None else now
    regs = registry(data)
    wanted = {real(p) for p in only} if only is not None else None
    listed = list_worktrees(repo)
    cwds = process_cwds() if processes else None
    out: list[WorktreeState] = []
    todo: list[WorktreeState] = []
    for wt in listed:
        rp = real(wt.path)
        if wanted is not None and rp not in wanted:
            continue
        key_rec = regs.get(rp)
        rec = key_rec[1] if key_rec else {}
        owner = str(rec.get("session") or "") or None if key_rec else None
        if key_rec:
            liveness, why, pid_checked = owner_liveness(data, owner, ttl, now)
        else:
            liveness, why, pid_checked = "-", "unregistered", False
        st = WorktreeState(
            path=wt.path,
            is_main=wt.is_main,
            registered=key_rec is not None,
            record=rec,
            owner=owner,
            liveness=liveness,
            owner_reason=why,
            pid_checked=pid_checked,
            branch=wt.branch,
            head=wt.head,
            locked=wt.locked,
            prunable=wt.prunable,
            exists=os.path.isdir(wt.path),
        )
        if deep and not wt.bare:
            todo.append(st)
            if processes and st.exists:
                st.processes = processes_inside(wt.path, cwds)
        out.append(st)
    _fill_all(todo, repo, data, namespace, now)
    return out


def _fill_all(
    states: list[WorktreeState], repo: Repo, data: LedgerData | None, namespace: str, now: float
) -> None:
    """Each worktree's git calls are independent: run them side by side."""
    if len(states) <= 1:
        for st in states:
            _fill(st, repo, data, namespace, now)
        return
    from concurrent.futures import ThreadPoolExecutor

    workers = min(len(states), max(2, 2 * (os.cpu_count() or 1)), 16)
    with ThreadPoolExecutor(max_workers=workers) as pool:
        list(pool.map(lambda st: _fill(st, repo, data, namespace, now), states))


def _fill(
    st: WorktreeState, repo: Repo, data: LedgerData | None, namespace: str, now: float
) -> None:
    times: list[float] = []
    if st.owner and data is not None:
        srec = data.sessions.get(st.owner)
        if isinstance(srec, dict):
            with contextlib.suppress(TypeError, ValueError):
                times.append(float(srec.get("last_seen") or 0))
    with contextlib.suppress(TypeError, ValueError):
        times.append(float(st.record.get("created") or 0))
    if st.exists:
        try:
            wrepo = discover(st.path)
            if real(wrepo.worktree) != real(st.path):
                raise UnknownStateError(f"{st.path} is not the top of its worktree")
            top = wrepo.worktree
            dirty = read_dirty(wrepo, ignored=True)
            skip = unchanged_artifacts(top, st.record.get("includes") or [])
            st.dirty = [
                d.path
                for d in dirty
                if d.path.rstrip("/") not in skip
                and not any(d.path.startswith(s + "/") for s in skip)
            ]
            for name in ("index", "HEAD", "logs/HEAD"):
                with contextlib.suppress(OSError):
                    times.append(os.lstat(wrepo.git_dir / name).st_mtime)
            for p in st.dirty:
                with contextlib.suppress(OSError):
                    times.append(os.lstat(top / p.rstrip("/")).st_mtime)
        except GuardsError as e:
            st.problems.append(f"cannot read its dirty work: {e}")
    else:
        st.dirty = []  # nothing on disk (prunable): only its commits can still be lost
    try:
        st.unsaved = unsaved_commits(repo, st.head, st.branch, namespace)
    except GuardsError as e:
        st.problems.append(f"cannot list its commits: {e}")
    st.last_activity = max(times) if times else None


def unsaved_commits(
    repo: Repo, head: str | None, branch: str | None, namespace: str
) -> list[ObjectId]:
    """Commits of ``head`` that no remote-tracking ref, tag, rescue ref or other branch has."""
    if not head:
        return []
    saved_by = ["refs/heads/", "refs/remotes/", "refs/tags/", namespace.rstrip("/") + "/"]
    ignoring = [branch] if branch else []
    return commits_held_only_by(repo.run, head, ignoring=ignoring, refs=saved_by)
