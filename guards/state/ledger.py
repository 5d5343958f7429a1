"""The per-repository ledger: sessions, worktrees, path attributions, the rescue log.

It lives in ``$(git rev-parse --git-common-dir)/guards/ledger.json``, shared by every
linked worktree and never committed. Writers hold a ``filelock`` lock (an OS lock: a
writer killed with SIGKILL releases it) and replace the file atomically (temp file,
fsync, rename, fsync of the directory), so readers need no lock at all.

A ledger guards cannot trust is never silently replaced: a corrupt, truncated or
newer-schema one is moved aside (``ledger.json.corrupt-<time>-<pid>``, content intact)
and reported in one line, and every ownership answer becomes "unknown", which means:
rescue. Readers that must not change anything (the frame, doctor) use
:meth:`Ledger.peek`; both judge the bytes by the same :func:`decode`.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Iterator

from guards import fsutil
from guards.errors import UnknownStateError
from guards.values import MutableValue

TYPE_CHECKING = False  # see guards.values: these imports cost start-up time
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

SCHEMA = 1
LEDGER_FILE = "ledger.json"
LOCK_FILE = "ledger.lock"
CORRUPT_SUFFIX = ".corrupt-"


class LedgerUnreadableError(UnknownStateError):
    """The ledger exists but cannot be trusted; ownership is unknown."""

    def __init__(self, message: str, *, newer_schema: int | None = None) -> None:
        super().__init__(message)
        #: Set when a newer guards wrote the ledger: the fix is an upgrade, not a repair.
        self.newer_schema = newer_schema


class LedgerFormatError(ValueError):
    """Bytes that are not a ledger this guards can trust; the message says why."""

    def __init__(self, reason: str, *, newer_schema: int | None = None) -> None:
        super().__init__(reason.splitlines()[0][:80] if reason else "unknown format")
        self.newer_schema = newer_schema


class LedgerData(MutableValue):
    """The ledger's content. Values are plain JSON so that unknown fields survive."""

    __slots__ = ("extra", "paths", "rescues", "sessions", "worktrees")

    def __init__(
        self,
        sessions: dict[str, dict[str, Any]] | None = None,
        paths: dict[str, dict[str, dict[str, Any]]] | None = None,
        rescues: list[dict[str, Any]] | None = None,
        worktrees: dict[str, dict[str, Any]] | None = None,
        extra: dict[str, Any] | None = None,
    ) -> None:
        self.sessions = {} if sessions is None else sessions
        #: worktree top level -> path -> attribution record
        self.paths = {} if paths is None else paths
        self.rescues = [] if rescues is None else rescues
        self.worktrees = {} if worktrees is None else worktrees
        self.extra = {} if extra is None else extra

    def to_json(self) -> dict[str, Any]:
        return {
            **self.extra,
            "schema": SCHEMA,
            "sessions": self.sessions,
            "paths": self.paths,
            "rescues": self.rescues,
            "worktrees": self.worktrees,
        }

    @classmethod
    def from_json(cls, doc: object) -> LedgerData:
        if not isinstance(doc, dict):
            raise ValueError("top level is not an object")
        sections = {"sessions": dict, "paths": dict, "rescues": list, "worktrees": dict}
        for name, kind in sections.items():
            if not isinstance(doc.get(name, kind()), kind):
                raise ValueError(f"{name!r} is not a JSON {kind.__name__}")
        for worktree_paths in doc.get("paths", {}).values():
            if not isinstance(worktree_paths, dict):
                raise ValueError("'paths' holds a non-object")
        return cls(
            sessions=doc.get("sessions", {}),
            paths=doc.get("paths", {}),
            rescues=doc.get("rescues", []),
            worktrees=doc.get("worktrees", {}),
            extra={k: v for k, v in doc.items() if k not in sections and k != "schema"},
        )


def decode(raw: bytes) -> LedgerData:
    """The one check every ledger reader makes: JSON (nested no deeper than ``json``
    decodes), this guards' schema, each section of the right type.

    Raises :class:`LedgerFormatError` saying why the bytes cannot be trusted.
    """
    try:
        doc = json.loads(raw)
    except ValueError as e:
        raise LedgerFormatError(_short(e)) from e
    except RecursionError as e:  # no ValueError: json's answer to very deep nesting
        raise LedgerFormatError("nested deeper than JSON is decoded here") from e
    schema = doc.get("schema") if isinstance(doc, dict) else None
    if isinstance(schema, int) and not isinstance(schema, bool) and schema > SCHEMA:
        raise LedgerFormatError(f"schema {schema}, this guards reads {SCHEMA}", newer_schema=schema)
    if schema != SCHEMA:
        raise LedgerFormatError(f"schema is {schema!r}, expected {SCHEMA}")
    try:
        return LedgerData.from_json(doc)
    except ValueError as e:
        raise LedgerFormatError(_short(e)) from e


class Ledger:
    def __init__(self, directory: str | os.PathLike[str], lock_timeout: float = 10.0) -> None:
        # Kept as text: reading (status, the frame) never needs pathlib (start-up time).
        self._directory = os.fspath(directory)
        self._file = os.path.join(self._directory, LEDGER_FILE)
        self.lock_timeout = lock_timeout

    @property
    def directory(self) -> Path:
        from pathlib import Path

        return Path(self._directory)

    @property
    def path(self) -> Path:
        return self.directory / LEDGER_FILE

    @property
    def lock_path(self) -> Path:
        return self.directory / LOCK_FILE

    # -- reading (no lock: writers replace the file atomically) -----------------------

    def read(self) -> LedgerData:
        """The ledger's content; empty when there is none yet.

        Raises :class:`LedgerUnreadableError` (after keeping a corrupt file aside).
        """
        return self._read(locked=False)

    def peek(self) -> tuple[LedgerData | None, LedgerUnreadableError | None]:
        """The ledger without side effects: no lock, no keeping a corrupt file aside.

        For readers that must never block or modify (the frame, doctor). Returns the
        data (empty when there is no ledger yet) or why it cannot be trusted; the same
        :func:`decode` as :meth:`read` decides that.
        """
        try:
            with open(self._file, "rb") as f:
                raw = f.read()
        except FileNotFoundError:
            return LedgerData(), None
        except OSError as e:
            return None, LedgerUnreadableError(f"ledger {self._file} is unreadable ({e.strerror})")
        try:
            return decode(raw), None
        except LedgerFormatError as e:
            if e.newer_schema is not None:
                return None, LedgerUnreadableError(
                    f"ledger {self._file} was written by a newer guards ({e})",
                    newer_schema=e.newer_schema,
                )
            return None, LedgerUnreadableError(f"ledger {self._file} is corrupt ({e})")

    def _read(self, *, locked: bool) -> LedgerData:
        try:
            with open(self._file, "rb") as f:
                raw = f.read()
        except FileNotFoundError:
            return LedgerData()
        except OSError as e:
            raise LedgerUnreadableError(
                f"ledger {self._file} is unreadable ({e.strerror}); ownership is unknown"
            ) from e
        return self._parse(raw, locked)

    def _parse(self, raw: bytes, locked: bool = False) -> LedgerData:
        try:
            return decode(raw)
        except LedgerFormatError as e:
            aside = self._keep_aside(raw, locked)
            if e.newer_schema is not None:
                raise LedgerUnreadableError(
                    f"ledger {self.path} was written by a newer guards ({e}); kept aside as "
                    f"{aside.name}, ownership is unknown: upgrade guards",
                    newer_schema=e.newer_schema,
                ) from e
            raise LedgerUnreadableError(
                f"ledger {self.path} was corrupt ({e}); kept aside as {aside.name}, "
                f"ownership is unknown until sessions record again"
            ) from e

    def _keep_aside(self, raw: bytes, locked: bool = False) -> Path:
        """Move a corrupt ledger out of the way, once, under the lock (``locked``: the
        caller holds it already; taking it again would wait for ourselves)."""
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        aside = self.directory / f"{LEDGER_FILE}{CORRUPT_SUFFIX}{stamp}-{os.getpid()}"
        try:
            with contextlib.nullcontext() if locked else self._lock():
                try:
                    current = self.path.read_bytes()
                except FileNotFoundError:
                    return aside  # someone else kept it aside already
                if current == raw:
                    os.replace(self.path, aside)
                    fsutil.fsync_directory(self.directory)
        except OSError as e:
            raise LedgerUnreadableError(
                f"ledger {self.path} is corrupt and could not be kept aside ({e.strerror}); "
                f"move it away by hand"
            ) from e
        return aside

    def kept_aside(self) -> list[Path]:
        """Corrupt ledgers moved aside earlier (doctor reports them)."""
        try:
            return sorted(p for p in self.directory.iterdir() if CORRUPT_SUFFIX in p.name)
        except OSError:
            return []

    # -- writing -----------------------------------------------------------------------

    @contextlib.contextmanager
    def transaction(self) -> Iterator[LedgerData]:
        """Lock, read, let the caller change the data, write it back atomically.

        Nothing is written when the body raises.
        """
        self._ensure_directory()
        with self._lock():
            data = self._read(locked=True)
            yield data
            self._write(data)

    def _ensure_directory(self) -> None:
        try:
            self.directory.mkdir(mode=0o700, exist_ok=True)
        except OSError as e:
            raise UnknownStateError(
                f"cannot create the ledger directory {self.directory}: {e.strerror}"
            ) from e

    def _lock(self) -> fsutil.locked:
        return fsutil.locked(
            self.lock_path,
            self.lock_timeout,
            what="the ledger",
            holder="writing",
            setting="ledger.lock_timeout",
        )

    def _write(self, data: LedgerData) -> None:
        payload = json.dumps(data.to_json(), separators=(",", ":"), sort_keys=True).encode()
        try:
            fsutil.atomic_write(self._file, payload, mode=fsutil.PRIVATE)
        except OSError as e:
            raise UnknownStateError(f"cannot write the ledger {self.path}: {e.strerror}") from e


def _short(e: Exception) -> str:
    text = str(e).splitlines()[0] if str(e) else type(e).__name__
    return text[:80]
