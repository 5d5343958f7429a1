"""Guards' own files: one atomic write and one file lock (and the nearest directory).

Every file guards keeps content in (the ledger, settings, install manifests, hook
scripts, the shim, the harness settings, the exclude block, the agent hook's rescue
receipts) is written by
:func:`atomic_write`, so a reader sees the old content or the new, never a torn mix, and
a crash never leaves half a file. The ledger and the worktree registry are serialized
by :class:`locked`, an OS lock (a holder killed with SIGKILL releases it).

Only ``os`` is imported at start-up: the ledger and the settings are read on every
start-up, and ``filelock`` (~30 ms) is imported only when a lock is taken.
"""

from __future__ import annotations

import os

from guards.errors import UnknownStateError

TYPE_CHECKING = False  # see guards.values: these imports cost start-up time
if TYPE_CHECKING:
    from types import TracebackType

    import filelock

#: ``mode`` for :func:`atomic_write`: what a plain ``open(path, "w")`` would leave.
KEEP_MODE = None
#: Guards' private state and settings: the owner alone reads and writes them.
PRIVATE = 0o600
#: Scripts git or a shell runs (hooks, the shim).
EXECUTABLE = 0o755


def atomic_write(
    path: str | os.PathLike[str], data: bytes, *, mode: int | None = PRIVATE, durable: bool = True
) -> None:
    """Replace ``path`` with ``data``: all of it or none of it, also across a crash.

    A temporary file in the same directory is written, flushed to disk and renamed over
    ``path``; then the directory is flushed, so the rename itself survives a crash. On
    any failure the temporary file is removed and ``path`` is as it was; the error (an
    ``OSError`` naming ``path`` as a rule) propagates: each caller says what it wrote.

    ``mode``: the new file's permission bits exactly (the umask does not narrow them);
    ``KEEP_MODE`` (None): an existing file's bits, and for a new file what ``open``
    gives (0o666 less the umask) — for files that belong to git or to the user.

    ``durable=False``: neither the file nor the directory is flushed to disk (readers
    still see all of it or none of it): for files that matter only while this boot
    lasts, such as the barrier's announcements (a process that a crash ended is gone).
    """
    target = os.fspath(path)
    directory = os.path.dirname(target) or "."
    tmp = os.path.join(
        directory,
        f".{os.path.basename(target)}.guards-tmp-{os.getpid()}-{os.urandom(4).hex()}",
    )
    if mode is KEEP_MODE:
        try:
            mode = os.stat(target).st_mode & 0o7777
        except FileNotFoundError:
            pass  # a new file: what open gives
    created = False
    try:
        # O_EXCL: never write through a file or symlink someone planted at the temporary name.
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666 if mode is None else 0o600)
        created = True
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            if mode is not None:
                os.fchmod(fd, mode)
            if durable:
                os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, target)
    except BaseException as e:
        if created:
            remove(tmp)
        if isinstance(e, OSError) and e.filename == tmp:
            # Name the file the caller asked for, not a temporary one that is gone.
            e.filename, e.filename2 = target, None
        raise
    if durable:
        fsync_directory(directory)


def remove(path: str | os.PathLike[str]) -> None:
    """Unlink ``path`` if it can be (gone already, or not ours to remove: never an error).
    Not ``contextlib.suppress``: contextlib costs the hooks' start-up (collections)."""
    try:
        os.unlink(path)
    except OSError:
        pass


def fsync_directory(directory: str | os.PathLike[str]) -> None:
    """Make a rename or a removal in ``directory`` survive a crash."""
    fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class LockTimeoutError(UnknownStateError):
    """Another guards held the lock longer than the setting allows waiting."""


class locked:  # lower case, like contextlib.suppress: it reads ``with locked(...):``
    """Hold the OS file lock ``path`` (created 0600 if missing) for a ``with`` block.

    ``what`` names the lock for the user ("the ledger"), ``holder`` says what another
    guards holding it is doing ("writing"), ``setting`` is the key whose value is
    ``timeout`` (seconds). Failing to get the lock is one :class:`UnknownStateError` line
    naming the lock file (and, on a timeout, the setting); the caller's data is then
    untouched.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        timeout: float,
        *,
        what: str,
        holder: str,
        setting: str,
    ) -> None:
        self.path = os.fspath(path)
        self.timeout = timeout
        self.what = what
        self.holder = holder
        self.setting = setting
        self._lock: filelock.BaseFileLock | None = None

    def __enter__(self) -> None:
        # Imported here: filelock costs ~30 ms to import and readers never need it.
        import filelock

        lock = filelock.FileLock(self.path, timeout=self.timeout, mode=0o600)
        try:
            lock.acquire()
        except filelock.Timeout:  # before OSError: it is a TimeoutError
            raise LockTimeoutError(
                f"{self.what} lock {self.path} stayed busy for {self.timeout:g}s; another "
                f"guards is {self.holder} (raise {self.setting} to wait longer)"
            ) from None
        except OSError as e:
            raise UnknownStateError(
                f"cannot take {self.what} lock {self.path}: {e.strerror}"
            ) from e
        self._lock = lock

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._lock is not None:
            self._lock.release()
            self._lock = None


def append_private(path: str | os.PathLike[str], data: bytes) -> int:
    """Append ``data`` to ``path`` with one ``write()`` (created 0600, never through a
    symlink), flushed to disk; returns the file's size after. Appends of a few KiB to a
    local file are not interleaved, so concurrent writers each add whole records; a
    writer killed mid-write leaves a last line without its newline (readers skip it)."""
    target = os.fspath(path)
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(target, flags, PRIVATE)
    try:
        if os.fstat(fd).st_mode & 0o077:
            os.fchmod(fd, PRIVATE)  # owner-only, whatever made the file before
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fdatasync(fd)
        return os.fstat(fd).st_size
    finally:
        os.close(fd)


def nearest_directory(path: str) -> str:
    """``path`` when it is a directory, else its nearest ancestor that is (``mkdir -p x &&
    cd x`` in a line not run yet; a file deleted since): where a git call can start."""
    while not os.path.isdir(path):
        parent = os.path.dirname(path)
        if parent == path:
            break
        path = parent
    return path
