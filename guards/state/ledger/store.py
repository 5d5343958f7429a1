"""The ledger itself: lock-free reads, O(1) appends, compaction under the lock, and
what happens to files it cannot trust (see :mod:`guards.state.ledger`)."""

from __future__ import annotations

import os
import time

from guards import fsutil, jsontext
from guards.errors import UnknownStateError
from guards.state.ledger.files import (
    _apply_journal,
    _Journal,
    _journal_header,
    _parse_header,
    _parse_journal_header,
    _quick_header,
    _read_journal,
    _read_snapshot,
    _Snapshot,
    encode_snapshot,
)
from guards.state.ledger.records import (
    COMPACT_BYTES,
    COMPACT_ENV,
    CORRUPT_SUFFIX,
    JOURNAL_FILE,
    LEDGER_FILE,
    LOCK_FILE,
    READ_RETRIES,
    LedgerData,
    LedgerFormatError,
    LedgerUnreadableError,
    _Moved,
)

TYPE_CHECKING = False  # see guards.values: these imports cost start-up time
if TYPE_CHECKING:
    from collections.abc import Callable, Generator, Iterator
    from contextlib import AbstractContextManager
    from pathlib import Path
    from typing import Any

# -- the ledger -------------------------------------------------------------------------------


class Ledger:
    def __init__(
        self,
        directory: str | os.PathLike[str],
        lock_timeout: float | Callable[[], float] = 10.0,
    ) -> None:
        # Kept as text: reading (status, the frame) never needs pathlib (start-up time).
        self._directory = os.fspath(directory)
        self._file = os.path.join(self._directory, LEDGER_FILE)
        self._journal = os.path.join(self._directory, JOURNAL_FILE)
        #: seconds to wait for the lock; a callable is asked only when the lock is taken
        self._lock_timeout = lock_timeout

    @property
    def lock_timeout(self) -> float:
        if callable(self._lock_timeout):
            self._lock_timeout = self._lock_timeout()
        return self._lock_timeout

    @property
    def directory(self) -> Path:
        from pathlib import Path

        return Path(self._directory)

    @property
    def path(self) -> Path:
        """The snapshot file."""
        return self.directory / LEDGER_FILE

    @property
    def journal_path(self) -> Path:
        return self.directory / JOURNAL_FILE

    @property
    def lock_path(self) -> Path:
        return self.directory / LOCK_FILE

    def _sealed(self, generation: int) -> str:
        return f"{self._journal}.{generation}"

    def exists(self) -> bool:
        """Has anything been written yet?"""
        return os.path.lexists(self._file) or os.path.lexists(self._journal)

    def mentions_session(self, session_id: str) -> bool:
        """Does any ledger file name this session? A byte search (nothing decoded) of the
        journals, then of the snapshot's core section: cheap enough for every ``guards
        record`` (a session's every record touches it in the live journal). True may be
        a coincidence (a label of that text); False means the session has no record, or
        the files could not be read."""
        needle = f'"{session_id}"'.encode()
        try:
            names = [n for n in os.listdir(self._directory) if n.startswith(JOURNAL_FILE)]
        except OSError:
            return False
        for name in sorted(names, key=lambda n: n != JOURNAL_FILE):  # the live one first
            if name != JOURNAL_FILE and not name[len(JOURNAL_FILE) + 1 :].isdigit():
                continue
            try:
                with open(os.path.join(self._directory, name), "rb") as f:
                    if needle in f.read():
                        return True
            except OSError:
                continue
        try:
            with open(self._file, "rb") as f:
                header = _parse_header(f.readline(), self._file)
                if header is None:  # schema 1: the whole file is the core
                    f.seek(0)
                    return needle in f.read()
                start = f.tell()
                for kind, _key, offset, length, _crc, _count in header["sections"]:
                    if kind == "core":
                        f.seek(start + offset)
                        return needle in f.read(length)
        except (OSError, LedgerFormatError, ValueError, TypeError):
            pass
        return False

    # -- reading (no lock) ------------------------------------------------------------------

    def read(self, worktree: str | None = None, *, rescues: bool = True) -> LedgerData:
        """The ledger's content; empty when there is none yet.

        ``worktree``: read only that worktree's attributions (``scope``); ``rescues``:
        read the rescue log too. Raises :class:`LedgerUnreadableError` (after keeping
        an untrustworthy file aside).
        """
        try:
            try:
                return self._load(worktree, rescues)
            except LedgerFormatError as e:
                if e.file is not None or e.newer_schema is not None:
                    raise self._kept_aside_error(e) from e
                # Files that disagree (generations missing), none of them corrupt: the
                # rebuild under the lock makes them agree; read again.
                self._keep_aside()
                try:
                    return self._load(worktree, rescues)
                except LedgerFormatError as again:
                    raise self._kept_aside_error(again) from again
        except OSError as e:
            raise LedgerUnreadableError(
                f"ledger {self._file} is unreadable ({e.strerror}); ownership is unknown"
            ) from e

    def peek(
        self, worktree: str | None = None, *, rescues: bool = True
    ) -> tuple[LedgerData | None, LedgerUnreadableError | None]:
        """The ledger without side effects: no lock, no keeping a corrupt file aside.

        For readers that must never block or modify (the frame, doctor). Returns the
        data (empty when there is no ledger yet) or why it cannot be trusted; the same
        checks as :meth:`read` decide that.
        """
        try:
            return self._load(worktree, rescues), None
        except OSError as e:
            return None, LedgerUnreadableError(f"ledger {self._file} is unreadable ({e.strerror})")
        except LedgerFormatError as e:
            where = e.file or self._file
            if e.newer_schema is not None:
                return None, LedgerUnreadableError(
                    f"ledger {where} was written by a newer guards ({e})",
                    newer_schema=e.newer_schema,
                )
            return None, LedgerUnreadableError(f"ledger {where} is corrupt ({e})")

    def _load(self, scope: str | None, rescues: bool) -> LedgerData:
        for attempt in range(READ_RETRIES):
            try:
                return self._load_once(scope, rescues)
            except _Moved:
                time.sleep(min(0.0005 * 2**attempt, 0.05))
        return self._load_once(scope, rescues, final=True)

    def _load_once(self, scope: str | None, rescues: bool, final: bool = False) -> LedgerData:
        snapshot = _read_snapshot(self._file, scope, rescues)
        covers = snapshot.generation if snapshot is not None else 0
        data = snapshot.data if snapshot is not None else LedgerData(scope=scope)
        journals: list[_Journal] = []
        g = covers + 1
        while True:
            try:
                journal = _read_journal(self._sealed(g))
            except FileNotFoundError:
                break
            if journal.generation != g:
                raise LedgerFormatError(
                    f"journal {g} says it is generation {journal.generation}", file=journal.path
                )
            journals.append(journal)
            g += 1
        try:
            live: _Journal | None = _read_journal(self._journal)
        except FileNotFoundError:
            live = None
        if live is not None:
            if live.generation == g:
                journals.append(live)
            elif not (journals and live.inode == journals[-1].inode):
                # A compaction moved on meanwhile (or generations are missing).
                if final:
                    raise LedgerFormatError(
                        f"journal generation {live.generation} follows snapshot generation "
                        f"{covers}: journals are missing"
                    )
                raise _Moved
        elif journals:
            if final:
                raise LedgerFormatError("sealed journals without a live one")
            raise _Moved
        for journal in journals:
            _apply_journal(data, journal, rescues)
        return data

    def kept_aside(self) -> list[Path]:
        """Corrupt ledger files moved aside earlier (doctor reports them)."""
        try:
            return sorted(p for p in self.directory.iterdir() if CORRUPT_SUFFIX in p.name)
        except OSError:
            return []

    # -- writing: records (no lock) ---------------------------------------------------------

    def append(self, records: list[list[Any]], *, durable: bool = True) -> None:
        """Add ``records`` to the journal: O(1), no lock; flushed to disk before it
        returns when ``durable``.

        Not durable: the everyday records of agents at work (attributions, touches,
        releases, a session's end), written on every edit and prompt, stay in the page
        cache like the edits they describe (no harness flushes the files it writes). A
        crash of the machine loses at most the last of them, and a lost one is the safe
        way round: an unattributed dirty path counts as foreign and is rescued, a
        release or touch lost keeps a path attributed or a session alive a little
        longer. What the journal cannot lose is flushed: the rescue log, session starts,
        registered worktrees, the reaper's records. A crash mid-append leaves a torn
        record, which readers skip (a zero-filled tail included: it ends in no newline).

        Refuses (after keeping it aside) to write into a ledger whose snapshot header
        or live journal header cannot be trusted, and migrates a schema-1 ledger first.
        """
        if not records:
            return
        payload = "".join("\x1e" + jsontext.dumps(r) + "\n" for r in records).encode()
        try:
            migrate = self._check_snapshot_header()
            if migrate:
                self._rewrite(None)
            size = self._append(payload, durable)
        except LedgerFormatError as e:
            raise self._kept_aside_error(e) from e
        except OSError as e:
            raise UnknownStateError(
                f"cannot write the ledger journal {self._journal}: {e.strerror}"
            ) from e
        # Fold when this append crossed a multiple of the limit: one writer in many
        # tries (should the lock be busy, the next multiple tries again).
        limit = _compact_bytes()
        if size // limit != (size - len(payload)) // limit:
            try:
                self.compact(wait=False)
            except LedgerUnreadableError:
                raise  # found while folding: reported like any untrustworthy ledger
            except UnknownStateError:
                pass  # the records are written; the next writer folds the journal

    def _check_snapshot_header(self) -> bool:
        """Is the snapshot's header sound? True when it is schema 1 (to migrate)."""
        try:
            f = open(self._file, "rb")  # noqa: SIM115
        except FileNotFoundError:
            return False
        except IsADirectoryError:
            raise UnknownStateError(
                f"ledger {self._file} is unreadable (a directory); ownership is unknown"
            ) from None
        with f:
            first = f.readline()
            size = os.fstat(f.fileno()).st_size
            quick = _quick_header(first)
            if quick is not None:
                claimed = quick[1]
            else:
                header = _parse_header(first, self._file)
                if header is None:
                    return True
                claimed = sum(s[3] for s in header["sections"])
        if size != len(first) + claimed:
            raise LedgerFormatError("truncated (shorter than its header says)", file=self._file)
        return False

    def _append(self, payload: bytes, durable: bool) -> int:
        """One ``write()`` of ``payload`` to the live journal (then ``fdatasync`` when
        ``durable``); its size after."""
        import fcntl

        while True:
            try:
                fd = os.open(self._journal, os.O_RDWR | os.O_APPEND)
            except FileNotFoundError:
                self._create_live()
                continue
            try:
                # Shared: appenders never wait for each other, only for a seal.
                fcntl.flock(fd, fcntl.LOCK_SH)
                st = os.fstat(fd)
                try:
                    current = os.stat(self._journal).st_ino
                except FileNotFoundError:
                    current = None
                if current != st.st_ino:
                    continue  # sealed meanwhile: append to the new live journal
                first = os.pread(fd, 256, 0)
                _parse_journal_header(first[: first.find(b"\n") + 1], self._journal)
                written = os.write(fd, payload)
                if written != len(payload):
                    raise OSError(28, f"only {written} of {len(payload)} bytes written")
                if durable:
                    os.fdatasync(fd)
                return st.st_size + written
            finally:
                os.close(fd)  # releases the flock before anything else is done

    def _create_live(self, generation: int | None = None) -> None:
        """Create the live journal (atomically: another writer may race us)."""
        self._ensure_directory()
        if generation is None:
            generation = max([self._snapshot_generation(), *self._sealed_generations()]) + 1
        tmp = f"{self._journal}.tmp-{os.getpid()}-{os.urandom(4).hex()}"
        fsutil.atomic_write(tmp, _journal_header(generation), mode=fsutil.PRIVATE)
        try:
            os.link(tmp, self._journal)
        except FileExistsError:
            pass
        finally:
            os.unlink(tmp)
        fsutil.fsync_directory(self._directory)

    def _snapshot_generation(self) -> int:
        try:
            with open(self._file, "rb") as f:
                first = f.readline()
        except FileNotFoundError:
            return 0
        quick = _quick_header(first)
        if quick is not None:
            return quick[0]
        header = _parse_header(first, self._file)
        return 0 if header is None else int(header["generation"])

    def _sealed_generations(self) -> list[int]:
        prefix = JOURNAL_FILE + "."
        out = []
        for name in os.listdir(self._directory):
            if name.startswith(prefix) and name[len(prefix) :].isdigit():
                out.append(int(name[len(prefix) :]))
        return out

    # -- writing: compaction and transactions (under the lock) --------------------------------

    def compact(self, *, wait: bool = True) -> bool:
        """Fold the journal into the snapshot. ``wait=False``: skip when another guards
        holds the lock (it is compacting). Returns whether it ran."""
        try:
            self._rewrite(None, wait=wait)
        except fsutil.LockTimeoutError:
            if wait:
                raise
            return False
        return True

    def transaction(self) -> AbstractContextManager[LedgerData]:
        """Lock, read everything, let the caller change the data, write it back as the
        new snapshot (records appended meanwhile follow it in the journal). O(ledger):
        for rare changes; everyday writers append records instead.

        Nothing is written when the body raises.
        """

        import contextlib

        @contextlib.contextmanager
        def body() -> Iterator[LedgerData]:
            steps = self._rewrite_steps()
            data = next(steps)
            try:
                yield data
            except BaseException:
                steps.close()
                raise
            with contextlib.suppress(StopIteration):
                steps.send(data)

        return body()

    def _rewrite(self, mutate: Callable[[LedgerData], None] | None, *, wait: bool = True) -> None:
        steps = self._rewrite_steps(wait=wait)
        data = next(steps)
        if mutate is not None:
            mutate(data)
        try:
            steps.send(data)
        except StopIteration:
            return

    def _rewrite_steps(self, *, wait: bool = True) -> Generator[LedgerData, LedgerData, None]:
        """Under the lock: seal the journal, read, (yield to the caller), write the new
        snapshot, delete the folded journals."""
        self._ensure_directory()
        with self._lock() if wait else self._lock(timeout=0.0):
            try:
                upto = self._seal()
                data = self._load_sealed(upto)
            except LedgerFormatError as e:
                raise self._kept_aside_error(e, locked=True) from e
            yield data
            self._write_snapshot(data, upto)
            self._drop_sealed(upto)

    def _seal(self) -> int:
        """Under the lock: seal the live journal; the generation to fold up to."""
        import fcntl

        try:
            fd = os.open(self._journal, os.O_RDONLY)
        except FileNotFoundError:
            self._create_live()
            return self._live_generation() - 1
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)  # waits for the appends under way, only them
            st = os.fstat(fd)
            first = os.pread(fd, 256, 0)
            header = first[: first.find(b"\n") + 1]
            generation = _parse_journal_header(header, self._journal)
            if st.st_size == len(header):
                return generation - 1  # nothing in it: it stays the live journal
            sealed = self._sealed(generation)
            try:
                os.link(self._journal, sealed)
            except FileExistsError:  # an earlier seal stopped between link and rename
                if os.stat(sealed).st_ino != st.st_ino:
                    raise LedgerFormatError(
                        f"sealed journal {generation} is not the live journal", file=sealed
                    ) from None
            tmp = f"{self._journal}.tmp-{os.getpid()}-{os.urandom(4).hex()}"
            fsutil.atomic_write(tmp, _journal_header(generation + 1), mode=fsutil.PRIVATE)
            os.replace(tmp, self._journal)
            fsutil.fsync_directory(self._directory)
            return generation
        finally:
            os.close(fd)

    def _live_generation(self) -> int:
        with open(self._journal, "rb") as f:
            return _parse_journal_header(f.readline(), self._journal)

    def _load_sealed(self, upto: int) -> LedgerData:
        """Under the lock: the snapshot and the sealed journals up to ``upto``."""
        snapshot = _read_snapshot(self._file, None, True)
        covers = snapshot.generation if snapshot is not None else 0
        data = snapshot.data if snapshot is not None else LedgerData()
        for g in range(covers + 1, upto + 1):
            try:
                journal = _read_journal(self._sealed(g))
            except FileNotFoundError:
                raise LedgerFormatError(f"sealed journal {g} is missing") from None
            _apply_journal(data, journal)
        return data

    def _write_snapshot(self, data: LedgerData, generation: int) -> None:
        payload = encode_snapshot(data, generation)
        try:
            fsutil.atomic_write(self._file, payload, mode=fsutil.PRIVATE)
        except OSError as e:
            raise UnknownStateError(f"cannot write the ledger {self.path}: {e.strerror}") from e

    def _drop_sealed(self, upto: int) -> None:
        for g in self._sealed_generations():
            if g <= upto:
                try:
                    os.unlink(self._sealed(g))
                except FileNotFoundError:
                    continue

    # -- keeping untrustworthy files aside ------------------------------------------------------

    def _kept_aside_error(
        self, e: LedgerFormatError, *, locked: bool = False
    ) -> LedgerUnreadableError:
        shown = e.file or self._file
        try:
            aside = self._keep_aside(locked=locked)
        except OSError as oe:
            return LedgerUnreadableError(
                f"ledger {shown} is corrupt ({e}) and could not be kept aside "
                f"({oe.strerror}); move it away by hand"
            )
        where = f"kept aside as {', '.join(aside)}" if aside else "rebuilt from its journal"
        if e.newer_schema is not None:
            return LedgerUnreadableError(
                f"ledger {shown} was written by a newer guards ({e}); {where}, ownership is "
                f"unknown: upgrade guards",
                newer_schema=e.newer_schema,
            )
        return LedgerUnreadableError(
            f"ledger {shown} was corrupt ({e}); {where}, ownership is unknown until "
            f"sessions record again"
        )

    def _keep_aside(self, *, locked: bool = False) -> list[str]:
        """Under the lock: move every file that cannot be trusted aside (content intact)
        and rebuild the ledger from the others. Returns the names kept aside."""
        import contextlib

        with contextlib.nullcontext() if locked else self._lock():
            return self._keep_aside_locked()

    def _keep_aside_locked(self) -> list[str]:
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        aside: list[str] = []

        def move(path: str, base: str) -> None:
            name = f"{base}{CORRUPT_SUFFIX}{stamp}-{os.getpid()}"
            if os.path.lexists(os.path.join(self._directory, name)):
                name += f"-{len(aside)}"
            os.replace(path, os.path.join(self._directory, name))
            aside.append(name)

        upto = max([0, *self._sealed_generations()])
        if os.path.lexists(self._journal):
            try:
                upto = max(upto, self._seal())  # every record so far is sealed now
            except LedgerFormatError:
                move(self._journal, JOURNAL_FILE)
        snapshot: _Snapshot | None
        try:
            snapshot = _read_snapshot(self._file, None, True)
        except LedgerFormatError:
            move(self._file, LEDGER_FILE)
            snapshot = None
        data = snapshot.data if snapshot is not None else LedgerData()
        covers = snapshot.generation if snapshot is not None else 0
        for g in sorted(self._sealed_generations()):
            if g <= covers or g > upto:
                continue
            try:
                journal = _read_journal(self._sealed(g))
                _apply_journal(LedgerData(), journal)  # judged on its own first
            except LedgerFormatError:
                move(self._sealed(g), JOURNAL_FILE)
                continue
            _apply_journal(data, journal)
        upto = max(upto, covers)
        if snapshot is not None or upto > 0 or os.path.lexists(self._journal):
            self._write_snapshot(data, upto)
            self._drop_sealed(upto)
            if not os.path.lexists(self._journal):
                self._create_live(upto + 1)
        fsutil.fsync_directory(self._directory)
        return aside

    # -- the lock -------------------------------------------------------------------------------

    def _ensure_directory(self) -> None:
        try:
            os.mkdir(self._directory, 0o700)
        except FileExistsError:
            if not os.path.isdir(self._directory):
                raise UnknownStateError(
                    f"cannot create the ledger directory {self._directory}: not a directory"
                ) from None
        except OSError as e:
            raise UnknownStateError(
                f"cannot create the ledger directory {self._directory}: {e.strerror}"
            ) from e

    def _lock(self, timeout: float | None = None) -> fsutil.locked:
        return fsutil.locked(
            self.lock_path,
            self.lock_timeout if timeout is None else timeout,
            what="the ledger",
            holder="writing",
            setting="ledger.lock_timeout",
        )


def _compact_bytes() -> int:
    try:
        return int(os.environ.get(COMPACT_ENV) or COMPACT_BYTES)
    except ValueError:
        return COMPACT_BYTES
