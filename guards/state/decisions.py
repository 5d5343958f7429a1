"""The decision log: every decision of the guard where something was at risk.

It lives beside the ledger, in ``$(git rev-parse --git-common-dir)/guards/``:
``decisions.log`` and, once rotated, ``decisions.log.1`` (one older file is kept, so
the log is bounded by about twice ``log.max_bytes``). Both are the owner's alone
(0600). Each entry is one line of JSON, appended with one ``write()``
(:func:`guards.fsutil.append_private`): concurrent writers add whole lines, and a writer
killed mid-write leaves a last line without its newline, which readers skip.

An entry (schema ``v`` 1)::

    {"v": 1, "id": "3f9c0a1b", "time": 1700000000.0, "kind": "rescued",
     "via": "run", "session": "alice", "host": "box", "command": "git reset --hard",
     "cwd": "/repo/src", "worktree": "/repo", "policy": "rescue", "why": null,
     "paths": [{"path": "a.txt", "owner": "bob"}], "path_count": 1,
     "commits": [], "rescues": [{"ref": "refs/rescue/bob/...", "commit": "...",
     "owner": "bob", "path_count": 1, "index_commit": "..."}]}

``kind``: ``rescued`` (work was saved to ``rescues``, then the command ran),
``refused`` (the command did not run: ``why``), ``warned`` (policy ``warn``: the command
ran and ``paths``/``commits`` were lost), ``bypassed`` (``GUARDS_DISABLE=1``: the
command ran untouched and ``paths``/``commits`` were at risk), ``denied`` (an agent
hook denied a shell line: ``why``). ``via``: ``run`` (``guards run``: the shim and the
aliases) or ``agent-hook``. ``paths`` holds at most :data:`MAX_PATHS` entries,
``path_count`` counts them all. Nothing is written when nothing was at risk.
"""

from __future__ import annotations

import os
import time

from guards import fsutil, jsontext
from guards.errors import UnknownStateError

TYPE_CHECKING = False  # see guards.values: these imports cost start-up time
if TYPE_CHECKING:
    from typing import Any, Final

SCHEMA = 1
LOG_FILE = "decisions.log"
#: The older half of the log, after a rotation.
ROTATED_FILE = LOG_FILE + ".1"
LOCK_FILE = LOG_FILE + ".lock"
#: How many paths (and commits) an entry names; ``path_count`` counts them all.
MAX_PATHS = 50
#: How much of a command line an entry keeps.
MAX_COMMAND = 500


class Kind:
    """What the guard did (plain strings: they are the JSON's)."""

    RESCUED: Final = "rescued"
    REFUSED: Final = "refused"
    WARNED: Final = "warned"
    BYPASSED: Final = "bypassed"
    DENIED: Final = "denied"

    ALL: Final = (RESCUED, REFUSED, WARNED, BYPASSED, DENIED)


def new_entry(
    kind: str,
    *,
    via: str,
    session: str | None,
    host: str,
    command: str,
    cwd: str,
    worktree: str | None,
    policy: str | None = None,
    why: str | None = None,
    paths: list[tuple[str, str | None]] | None = None,
    commits: list[str] | None = None,
    rescues: list[dict[str, Any]] | None = None,
    now: float | None = None,
) -> dict[str, Any]:
    """One entry (see the module's docstring); ``paths``: (path, owner or None)."""
    paths = paths or []
    commits = commits or []
    return {
        "v": SCHEMA,
        "id": os.urandom(4).hex(),
        "time": time.time() if now is None else now,
        "kind": kind,
        "via": via,
        "session": session,
        "host": host,
        "command": command if len(command) <= MAX_COMMAND else command[: MAX_COMMAND - 3] + "...",
        "cwd": cwd,
        "worktree": worktree,
        "policy": policy,
        "why": why,
        "paths": [{"path": p, "owner": o} for p, o in paths[:MAX_PATHS]],
        "path_count": len(paths),
        "commits": commits[:MAX_PATHS],
        "commit_count": len(commits),
        "rescues": rescues or [],
    }


def append(directory: str | os.PathLike[str], entry: dict[str, Any], max_bytes: int) -> None:
    """Add ``entry`` to the log in ``directory``; rotate it once it is over ``max_bytes``.

    Raises :class:`UnknownStateError` when the log cannot be written."""
    folder = os.fspath(directory)
    line = jsontext.dumps(entry, ensure_ascii=False) + "\n"
    path = os.path.join(folder, LOG_FILE)
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
        size = fsutil.append_private(path, line.encode("utf-8", "surrogateescape"))
    except OSError as e:
        raise UnknownStateError(f"cannot write the decision log {path}: {e.strerror}") from e
    if size > max_bytes:
        _rotate(folder, max_bytes)


def _rotate(folder: str, max_bytes: int) -> None:
    """Move the full log aside (replacing the older half), once, under the log's lock.

    A writer that opened the log just before the rename appends to the older half: its
    line is kept all the same."""
    path = os.path.join(folder, LOG_FILE)
    try:
        with fsutil.locked(
            os.path.join(folder, LOCK_FILE),
            0.0,
            what="the decision log",
            holder="rotating it",
            setting="log.max_bytes",
        ):
            if os.stat(path).st_size > max_bytes:
                os.replace(path, os.path.join(folder, ROTATED_FILE))
                fsutil.fsync_directory(folder)
    except (OSError, UnknownStateError):
        pass  # another writer is rotating it, or it is gone: the next append tries again


def read(directory: str | os.PathLike[str]) -> tuple[list[dict[str, Any]], int]:
    """Every entry, oldest first, and how many complete lines did not decode.

    A last line without its newline (a writer killed mid-write, or one writing right
    now) is skipped, not counted."""
    folder = os.fspath(directory)
    entries: list[dict[str, Any]] = []
    bad = 0
    for name in (ROTATED_FILE, LOG_FILE):
        try:
            with open(os.path.join(folder, name), "rb") as f:
                data = f.read()
        except FileNotFoundError:
            continue
        except OSError as e:
            raise UnknownStateError(
                f"cannot read the decision log {os.path.join(folder, name)}: {e.strerror}"
            ) from e
        lines = data.split(b"\n")
        for raw in lines[:-1]:  # the part after the last newline is incomplete
            if not raw.strip():
                continue
            try:
                entry = jsontext.loads(raw.decode("utf-8", "surrogateescape"))
            except ValueError:
                bad += 1
                continue
            if isinstance(entry, dict) and entry.get("kind") in Kind.ALL:
                entries.append(entry)
            else:
                bad += 1
    entries.sort(key=entry_time)
    return entries, bad


def entry_time(entry: dict[str, Any]) -> float:
    when = entry.get("time")
    return float(when) if isinstance(when, (int, float)) else 0.0
