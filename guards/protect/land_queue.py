"""The landing queue: one landing at a time per repository, first come, first served.

A request takes a numbered ticket in ``<git-common-dir>/guards/landings.json`` (a small
file beside the ledger, replaced atomically under ``landings.lock``), waits until every
ticket before it is gone, then lands holding ``land.lock`` and finally leaves its ticket
for a history record (queued, landed and failed landings are what ``guards land
--list`` shows). An OS lock alone would not do: it hands itself to whoever asks next,
not to whoever asked first.

A ticket whose process is gone (killed, crashed: its pid no longer runs with the start
time it recorded) is dropped by whoever looks next, so a dead request never blocks the
queue. A ticket of another host cannot be checked from here: it counts as waiting
until it is older than the wait timeout.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Callable, Iterator
from typing import Any

from guards import fsutil
from guards.errors import UnknownStateError
from guards.state import session as sessions

QUEUE_FILE = "landings.json"
QUEUE_LOCK = "landings.lock"
#: Held for the whole of a landing (the queue decides who may take it).
LAND_LOCK = "land.lock"
SCHEMA = 1
#: How many finished landings the history keeps.
HISTORY_KEEP = 200
#: How often a waiting request looks at the queue (seconds).
POLL = 0.1

Ticket = dict[str, Any]
#: Told (position, tickets ahead) each time a waiting request's place changes.
OnWait = Callable[[int, list[Ticket]], None]


class LandingQueue:
    """The queue and history file of one repository's ledger directory."""

    def __init__(self, directory: str | os.PathLike[str], lock_timeout: float) -> None:
        self.directory = os.fspath(directory)
        self.file = os.path.join(self.directory, QUEUE_FILE)
        self.lock_timeout = lock_timeout

    # -- reading -------------------------------------------------------------------------

    def read(self) -> dict[str, Any]:
        """The queue and history as they are (no lock: the file is replaced atomically).
        A damaged file reads as empty: tickets are short-lived and history only informs."""
        try:
            with open(self.file, "rb") as f:
                doc = json.loads(f.read())
        except FileNotFoundError:
            return _empty()
        except (OSError, ValueError, RecursionError):
            return _empty()
        if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
            return _empty()
        if not isinstance(doc.get("queue"), list) or not isinstance(doc.get("history"), list):
            return _empty()
        doc["queue"] = [t for t in doc["queue"] if isinstance(t, dict)]
        doc["history"] = [h for h in doc["history"] if isinstance(h, dict)]
        return doc

    def queued(self, now: float | None = None, wait_timeout: float = 0.0) -> list[Ticket]:
        """The tickets waiting or landing, first first (dead ones left out)."""
        now = time.time() if now is None else now
        return [t for t in self.read()["queue"] if _alive(t, now, wait_timeout)]

    def history(self) -> list[dict[str, Any]]:
        """Finished landings, newest first."""
        return list(reversed(self.read()["history"]))

    # -- writing -------------------------------------------------------------------------

    @contextlib.contextmanager
    def _change(self) -> Iterator[dict[str, Any]]:
        try:
            os.makedirs(self.directory, mode=0o700, exist_ok=True)
        except OSError as e:
            raise UnknownStateError(f"cannot create {self.directory}: {e.strerror}") from e
        with fsutil.locked(
            os.path.join(self.directory, QUEUE_LOCK),
            self.lock_timeout,
            what="the landing queue",
            holder="queueing a landing",
            setting="ledger.lock_timeout",
        ):
            doc = self.read()
            yield doc
            payload = json.dumps(doc, separators=(",", ":"), sort_keys=True).encode()
            try:
                fsutil.atomic_write(self.file, payload, mode=fsutil.PRIVATE)
            except OSError as e:
                raise UnknownStateError(f"cannot write {self.file}: {e.strerror}") from e

    def enqueue(self, ticket: Ticket) -> Ticket:
        """Append ``ticket`` (its ``seq`` and liveness fields are filled in here)."""
        pid = os.getpid()
        with self._change() as doc:
            seq = int(doc.get("next_seq") or 1)
            doc["next_seq"] = seq + 1
            full = {
                **ticket,
                "seq": seq,
                "pid": pid,
                "pid_start": sessions.process_start_time(pid),
                "host": sessions.hostname(),
                "requested": time.time(),
            }
            doc["queue"].append(full)
        return full

    def place(self, seq: int, wait_timeout: float) -> tuple[int, list[Ticket]]:
        """(position, tickets ahead) of ticket ``seq``; dead tickets are dropped on the way."""
        now = time.time()
        queue = self.read()["queue"]
        if any(not _alive(t, now, wait_timeout) for t in queue):
            with self._change() as doc:
                doc["queue"] = [t for t in doc["queue"] if _alive(t, now, wait_timeout)]
                queue = doc["queue"]
        seqs = [t.get("seq") for t in queue]
        if seq not in seqs:
            raise UnknownStateError(
                f"the landing request's ticket {seq} vanished from {self.file}; run it again"
            )
        ahead = queue[: seqs.index(seq)]
        return len(ahead), ahead

    def leave(self, seq: int, record: dict[str, Any] | None = None) -> None:
        """Drop ticket ``seq``; with ``record``, add it to the history."""
        with self._change() as doc:
            doc["queue"] = [t for t in doc["queue"] if t.get("seq") != seq]
            if record is not None:
                doc["history"] = [*doc["history"], record][-HISTORY_KEEP:]

    @contextlib.contextmanager
    def turn(self, ticket: Ticket, wait_timeout: float, on_wait: OnWait) -> Iterator[Ticket]:
        """Queue ``ticket``, wait for its turn (telling ``on_wait`` its place whenever it
        changes), and hold the landing lock while the body runs. The ticket stays
        queued until the body calls :meth:`leave` or the block ends."""
        mine = self.enqueue(ticket)
        seq = int(mine["seq"])
        try:
            deadline = time.monotonic() + wait_timeout
            last: int | None = None
            while True:
                position, ahead = self.place(seq, wait_timeout)
                if position == 0:
                    break
                if position != last:
                    on_wait(position, ahead)
                    last = position
                if time.monotonic() >= deadline:
                    first = ahead[0]
                    raise fsutil.LockTimeoutError(
                        f"waited {wait_timeout:g}s to land, still {position} ahead (the first: "
                        f"{first.get('branch')} into {first.get('into')}, pid "
                        f"{first.get('pid')}); raise land.timeout to wait longer"
                    )
                time.sleep(POLL)
            with fsutil.locked(
                os.path.join(self.directory, LAND_LOCK),
                max(1.0, deadline - time.monotonic()),
                what="the landing",
                holder="landing a branch",
                setting="land.timeout",
            ):
                yield mine
        finally:
            with contextlib.suppress(UnknownStateError):
                if any(t.get("seq") == seq for t in self.read()["queue"]):
                    self.leave(seq)


def _empty() -> dict[str, Any]:
    return {"schema": SCHEMA, "next_seq": 1, "queue": [], "history": []}


def _alive(ticket: Ticket, now: float, wait_timeout: float) -> bool:
    """A ticket counts while its process runs (same pid, same start time); one of
    another host while it is younger than the wait timeout."""
    pid = ticket.get("pid")
    if ticket.get("host") == sessions.hostname() and isinstance(pid, int):
        return sessions.process_alive(pid, ticket.get("pid_start"))
    requested = ticket.get("requested")
    if not isinstance(requested, (int, float)) or wait_timeout <= 0:
        return True
    return now - requested <= 2 * wait_timeout
