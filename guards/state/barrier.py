"""The barrier between writers and destroyers: a write is either in a destructive
command's snapshot or after git ran, never in between.

Both sides announce themselves with a small file in ``<ledger dir>/barrier/`` before
they act, and look for the other side after announcing (each side's announcement is in
place before it looks, so of two that race, at least one sees the other):

- a guarded destructive command (``guards run``) announces ``destroy.<pid>.ann``
  (its pid and that process's start time, its work tree) before it looks at the
  checkout; after ``exec`` the pid is git's, so the announcement lasts exactly as long
  as git runs. Then it waits (at most :func:`destroy_wait`) for the writes already
  announced in its work tree to end, and only then looks. A dead pid (or a pid reused
  by another process) releases it: a killed command never holds writers back. Whoever
  finds a dead announcement removes it.
- an agent hook about to let a write tool (Write, Edit, ``apply_patch``,
  ``write_file`` ...) write announces ``write.<session>.<key>.ann`` (its paths), then
  looks for live destroyers in the same work tree: if there is one, it takes its
  announcement back and waits (at most :func:`write_wait`) until the destroyer is gone,
  then announces again. The tool's PostToolUse takes it back after the write was
  recorded. An announcement whose end never came counts for ``WRITE_TTL`` only.

The reach of a destructive command is its whole work tree (before it looks, nothing
finer is known, and it is over in seconds). With nothing announced, both sides pay one
directory listing. Every failure to announce fails open: the barrier narrows a race
that the second look before git (guards.protect.guard) narrows too.
"""

from __future__ import annotations

import os
import time

from guards import fsutil

BARRIER_DIR = "barrier"


def write_wait() -> float:
    """Seconds a write tool waits for a destructive command in its work tree
    (``GUARDS_BARRIER_WRITE_WAIT``; read when asked, not at import)."""
    return float(os.environ.get("GUARDS_BARRIER_WRITE_WAIT") or 20.0)


def destroy_wait() -> float:
    """Seconds a destructive command waits for announced writes in its work tree
    (``GUARDS_BARRIER_DESTROY_WAIT``)."""
    return float(os.environ.get("GUARDS_BARRIER_DESTROY_WAIT") or 5.0)


#: Seconds an announced write counts when its end never came.
WRITE_TTL = 30.0
#: Seconds between two looks while waiting.
POLL = 0.01


def locate(start: str) -> tuple[str, str] | None:
    """(work tree, ledger directory) of the checkout holding ``start``, found by walking
    up to its ``.git`` (no git call), or None. The work tree is a real path."""
    from guards.git.files import find_repository

    found = find_repository(start)
    if found is None:
        return None
    top, common = found
    return top, os.path.join(common, "guards")


def _folder(ledger_dir: str) -> str:
    return os.path.join(ledger_dir, BARRIER_DIR)


#: The fields of an announcement, in order (NUL-separated text: no json on the
#: guarded git's hot path, and a path may hold a newline).
_FIELDS = ("kind", "pid", "start", "worktree", "session", "label", "time")


def _write(path: str, doc: dict[str, object]) -> bool:
    text = "\0".join("" if doc.get(k) is None else str(doc[k]) for k in _FIELDS)
    try:
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        # No fsync: an announcement speaks for a live process, which a crash ends anyway.
        fsutil.atomic_write(path, text.encode("utf-8", "surrogateescape"), durable=False)
        return True
    except OSError:
        return False


def _entries(ledger_dir: str, prefix: str) -> list[tuple[str, dict[str, object]]]:
    folder = _folder(ledger_dir)
    try:
        names = [n for n in os.listdir(folder) if n.startswith(prefix) and n.endswith(".ann")]
    except OSError:
        return []
    found = []
    for name in names:
        path = os.path.join(folder, name)
        try:
            with open(path, "rb") as f:
                parts = f.read().decode("utf-8", "surrogateescape").split("\0")
        except OSError:
            continue  # taken back meanwhile
        if len(parts) != len(_FIELDS):
            continue  # not an announcement of this guards
        doc: dict[str, object] = dict(zip(_FIELDS, parts, strict=True))
        try:
            doc["pid"] = int(parts[1]) if parts[1] else None
            doc["time"] = float(parts[6])
        except ValueError:
            continue
        doc["start"] = parts[2] or None
        found.append((path, doc))
    return found


def _start_time(pid: int) -> str | None:
    from guards.state.identity import process_start_time

    return process_start_time(pid)


# -- destroyers ------------------------------------------------------------------------


def announce_destroyer(ledger_dir: str, worktree: str, label: str) -> str | None:
    """This process is about to look at ``worktree`` and then become git (``exec``)."""
    pid = os.getpid()
    path = os.path.join(_folder(ledger_dir), f"destroy.{pid}.ann")
    doc: dict[str, object] = {
        "kind": "destroy",
        "pid": pid,
        "start": _start_time(pid),
        "worktree": worktree,
        "label": label,
        "time": time.time(),
    }
    live_destroyers(ledger_dir, worktree)  # sweeps the announcements of dead commands
    return path if _write(path, doc) else None


def live_destroyers(ledger_dir: str, worktree: str) -> list[str]:
    """Labels of the live destructive commands announced in ``worktree`` (other than
    this process); dead announcements are removed."""
    from guards.state.identity import process_alive

    me = os.getpid()
    found = []
    for path, doc in _entries(ledger_dir, "destroy."):
        pid = doc.get("pid")
        if not isinstance(pid, int) or isinstance(pid, bool):
            continue
        if pid != me and not process_alive(pid, doc.get("start")):
            fsutil.remove(path)  # dead (or its pid reused): released
            continue
        if pid != me and doc.get("worktree") == worktree:
            found.append(f"pid {pid}: {doc.get('label')}")
    return found


def wait_for_destroyers(ledger_dir: str, worktree: str, limit: float | None = None) -> list[str]:
    """Wait until no live destructive command is announced in ``worktree`` (at most
    ``limit`` seconds, :func:`write_wait` by default); returns those still there."""
    deadline = time.monotonic() + (write_wait() if limit is None else limit)
    while True:
        found = live_destroyers(ledger_dir, worktree)
        if not found or time.monotonic() >= deadline:
            return found
        time.sleep(POLL)


# -- writers ---------------------------------------------------------------------------


def _write_name(session: str, key: str) -> str:
    safe = "".join(c if c.isalnum() or c in "-_.=@+" else "_" for c in f"{session}.{key}")
    return f"write.{safe[:200]}.ann"


def announce_write(ledger_dir: str, worktree: str, session: str, key: str) -> str | None:
    path = os.path.join(_folder(ledger_dir), _write_name(session, key))
    doc: dict[str, object] = {
        "kind": "write",
        "worktree": worktree,
        "session": session,
        "time": time.time(),
    }
    return path if _write(path, doc) else None


def withdraw_write(ledger_dir: str, session: str, key: str) -> None:
    fsutil.remove(os.path.join(_folder(ledger_dir), _write_name(session, key)))


def withdraw_writes_of(ledger_dir: str, session: str) -> None:
    """Take back every write ``session`` announced (its turn is over: none still runs).
    Matched on the session each announcement records, never on a file-name prefix (one
    session's name may begin another's)."""
    for path, doc in _entries(ledger_dir, "write."):
        if doc.get("session") == session:
            fsutil.remove(path)


def pending_writes(ledger_dir: str, worktree: str) -> list[str]:
    """Sessions with a write announced in ``worktree`` that has not ended (nor expired;
    expired announcements are removed)."""
    now = time.time()
    found = []
    for path, doc in _entries(ledger_dir, "write."):
        when = doc.get("time")
        if not isinstance(when, (int, float)) or now - when > WRITE_TTL:
            fsutil.remove(path)
            continue
        if doc.get("worktree") == worktree:
            found.append(str(doc.get("session")))
    return found


def wait_for_writes(ledger_dir: str, worktree: str, limit: float | None = None) -> list[str]:
    """Wait until the writes announced in ``worktree`` have ended (at most ``limit``
    seconds, :func:`destroy_wait` by default); returns the sessions whose writes are
    still announced."""
    deadline = time.monotonic() + (destroy_wait() if limit is None else limit)
    while True:
        found = pending_writes(ledger_dir, worktree)
        if not found or time.monotonic() >= deadline:
            return found
        time.sleep(POLL)


def enter_write(
    ledger_dir: str, worktree: str, session: str, key: str, limit: float | None = None
) -> list[str]:
    """Announce a write, then make sure no destructive command runs in ``worktree``:
    if one does, take the announcement back, wait for it to finish, and try again.
    Returns the destructive commands still running after ``limit`` seconds (the write
    must not go ahead: its announcement is taken back), else [] (announced)."""
    deadline = time.monotonic() + (write_wait() if limit is None else limit)
    while True:
        announce_write(ledger_dir, worktree, session, key)
        found = live_destroyers(ledger_dir, worktree)
        if not found:
            return []
        withdraw_write(ledger_dir, session, key)
        found = wait_for_destroyers(ledger_dir, worktree, max(0.0, deadline - time.monotonic()))
        if found:
            return found
