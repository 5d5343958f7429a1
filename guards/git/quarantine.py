"""A private object directory: new objects written aside, then moved in packed.

git writes every new object loose, one file each (``update-index``, ``write-tree``,
``hash-object -w``, ``commit-tree``): a rescue of 10,000 files left 11,000 loose objects
in the repository. Inside a :class:`Quarantine`, git writes them into a temporary
object directory instead (``GIT_OBJECT_DIRECTORY``), still reading the repository's own
store (``GIT_ALTERNATE_OBJECT_DIRECTORIES``), as git's own ``receive-pack`` does with an
incoming push. :meth:`Quarantine.migrate` then moves them into the repository the way a
push lands: one ``pack-objects`` piped into ``index-pack`` (which hashes every object
again as it indexes it), or ``unpack-objects`` below :data:`UNPACK_LIMIT` objects (as
git's ``transfer.unpackLimit`` does: a pack per handful of objects would slow git down
more than a few loose files do). Until then nothing in the repository's store names them.
:func:`write_blobs` packs files' bytes the same way (``fastimport.unpackLimit``), so a
rescue leaves fewer than 2 x :data:`UNPACK_LIMIT` loose objects.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from guards.git import process as git
from guards.git.objects import object_hasher, object_oid

TYPE_CHECKING = False  # see guards.values: typing costs every rescue start-up time
if TYPE_CHECKING:
    from typing import IO

#: Fewer new objects than this are moved in loose (git's own default is 100; half of it
#: here, so that the blobs and the trees of one rescue stay under 100 loose objects).
UNPACK_LIMIT = 50


class Quarantine:
    """New objects go to ``directory``; the repository at ``cwd`` is read as usual."""

    def __init__(self, cwd: Path, directory: Path) -> None:
        self.cwd = cwd
        self.directory = directory
        directory.mkdir(parents=True, exist_ok=True)
        res = git.run(["rev-parse", "--path-format=absolute", "--git-path", "objects"], cwd=cwd)
        self.store = os.fsdecode(git.strip_newline(res.stdout))
        inherited = os.environ.get("GIT_ALTERNATE_OBJECT_DIRECTORIES", "")
        #: the environment of every git call that writes (or reads) quarantined objects
        self.env = {
            "GIT_OBJECT_DIRECTORY": os.fspath(directory),
            "GIT_ALTERNATE_OBJECT_DIRECTORIES": os.pathsep.join(
                [self.store, *([inherited] if inherited else [])]
            ),
        }

    def objects(self) -> list[str]:
        """Every object written here (and only here: no alternates)."""
        res = git.run(
            ["cat-file", "--batch-all-objects", "--batch-check=%(objectname)"],
            cwd=self.cwd,
            extra_env={
                "GIT_OBJECT_DIRECTORY": os.fspath(self.directory),
                "GIT_ALTERNATE_OBJECT_DIRECTORIES": "",
            },
        )
        return res.stdout.decode().split()

    def migrate(self) -> list[str]:
        """Move every quarantined object into the repository's store; returns their ids,
        each checked to be there (a failure raises :class:`git.GitError`)."""
        oids = self.objects()
        if not oids:
            return []
        listing = "".join(f"{oid}\n" for oid in oids).encode()
        receive = (
            ["index-pack", "--stdin"] if len(oids) >= UNPACK_LIMIT else ["unpack-objects", "-q"]
        )
        _pipe(
            # No delta search: rescued files are mostly unlike each other, and a later gc
            # packs them tighter. Compression as for loose objects (level 1): fast.
            ["-c", "pack.compression=1", "pack-objects", "--stdout", "-q", "--window=0"],
            self.env,
            listing,
            receive,
            self.cwd,
        )
        missing = missing_objects(self.cwd, oids)
        if missing:
            raise git.GitError(receive, 1, f"object {missing[0]} missing after the move".encode())
        return oids


def _pipe(
    first: list[str], first_env: dict[str, str], stdin: bytes, second: list[str], cwd: Path
) -> None:
    """``git <first> | git <second>`` (the second in the repository's own environment):
    the pack streams through a pipe, never whole in memory."""
    env1 = git._environment(None, first_env)
    env2 = git._environment(None, None)
    with subprocess.Popen(
        git._argv(first, False, cwd),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env1,
    ) as producer:
        assert producer.stdout is not None and producer.stdin is not None
        with subprocess.Popen(
            git._argv(second, False, cwd),
            stdin=producer.stdout,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env=env2,
        ) as consumer:
            producer.stdout.close()  # the consumer holds it now
            producer.stdin.write(stdin)
            producer.stdin.close()
            err2 = consumer.stderr.read() if consumer.stderr else b""
            consumer.wait()
        err1 = producer.stderr.read() if producer.stderr else b""
        producer.wait()
    if producer.returncode != 0:
        raise git.GitError(first, producer.returncode, err1)
    if consumer.returncode != 0:
        raise git.GitError(second, consumer.returncode, err2)


def missing_objects(cwd: Path, oids: Iterable[str]) -> list[str]:
    """The ids among ``oids`` the repository at ``cwd`` does not hold."""
    wanted = sorted(set(oids))
    if not wanted:
        return []
    res = git.run(
        ["cat-file", "--batch-check=%(objectname)", "--buffer"],
        cwd=cwd,
        stdin="".join(f"{oid}\n" for oid in wanted).encode(),
    )
    return [
        line.split()[0].decode() for line in res.stdout.splitlines() if line.endswith(b" missing")
    ]


def read_back(
    cwd: Path,
    oids: Iterable[str],
    object_format: str,
    extra_env: dict[str, str] | None = None,
) -> Iterator[tuple[str, bytes | None]]:
    """Each object's content as git reads it back, one at a time (never all of them in
    memory): ``(oid, content)``, content None when missing or not hashing to its id."""
    wanted = sorted(set(oids))
    if not wanted:
        return
    with subprocess.Popen(
        git._argv(["cat-file", "--batch", "--buffer"], True, cwd),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=git._environment(None, extra_env),
    ) as proc:
        assert proc.stdin is not None and proc.stdout is not None
        import threading

        def feed() -> None:
            try:
                for start in range(0, len(wanted), 1000):
                    chunk = wanted[start : start + 1000]
                    proc.stdin.write("".join(f"{o}\n" for o in chunk).encode())  # type: ignore[union-attr]
                proc.stdin.close()  # type: ignore[union-attr]
            except OSError:
                pass  # cat-file died: the reader sees the short output

        feeder = threading.Thread(target=feed, daemon=True)
        feeder.start()
        out = proc.stdout
        try:
            for oid in wanted:
                header = out.readline().split(b" ")
                if len(header) != 3:
                    if not header[0]:
                        yield from ((rest, None) for rest in wanted[wanted.index(oid) :])
                        return
                    yield oid, None
                    continue
                size = int(header[2])
                content = out.read(size)
                out.read(1)
                ok = (
                    header[0].decode() == oid
                    and len(content) == size
                    and object_oid(header[1], content, object_format) == oid
                )
                yield oid, content if ok else None
        finally:
            proc.stdout.close()
            proc.kill()
            feeder.join()


def write_blobs(
    cwd: Path,
    files: list[tuple[str, int]],
    object_format: str,
    on_file: Callable[[], object] | None = None,
) -> dict[str, str]:
    """Store the raw bytes of regular files (no filters: what is on disk) straight into
    the repository's store as one pack, through ``git fast-import`` (no loose object per
    file, each file read once). ``files``: (absolute path, size from ``lstat``). Returns
    each file's blob id as read; "" for a file that did not hold its size while read (it
    is changing: never equal to anything). ``on_file`` runs after each file."""
    out: dict[str, str] = {}
    if not files:
        return out
    proc = subprocess.Popen(
        # Every blob streamed into the pack as it comes (no delta search against the
        # previous one: rescued files are mostly unlike each other, a later gc packs).
        git._argv(
            [
                *git.NO_HOOKS,
                "-c",
                f"fastimport.unpackLimit={UNPACK_LIMIT}",
                "fast-import",
                "--quiet",
                "--done",
                "--big-file-threshold=1",
            ],
            False,
            cwd,
        ),
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=git._environment(None, None),
    )
    assert proc.stdin is not None and proc.stderr is not None
    sink = proc.stdin
    try:
        for path, size in files:
            out[path] = _send_blob(sink, path, size, object_format)
            if on_file is not None:
                on_file()
        sink.write(b"done\n")
        sink.close()
    except BrokenPipeError:
        pass  # fast-import died: its stderr says why
    except BaseException:
        proc.kill()
        proc.wait()
        raise
    err = proc.stderr.read()
    proc.wait()
    if proc.returncode != 0:
        raise git.GitError(["fast-import"], proc.returncode, err)
    return out


#: How a rescued file is opened: never through a symlink, never waiting on a FIFO (a
#: path can change kind after it was looked at); plain ``os`` calls, as ``open()``'s
#: buffered reader doubled the cost of reading 50,000 small files.
_READ_FLAGS = (
    os.O_RDONLY | os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
)


def _send_blob(sink: IO[bytes], path: str, size: int, object_format: str) -> str:
    """One ``blob`` command of exactly ``size`` bytes; the id of what was read."""
    h = object_hasher(b"blob", size, object_format)
    sink.write(b"blob\ndata %d\n" % size)
    seen = 0
    intact = False
    try:
        fd = os.open(path, _READ_FLAGS)
    except OSError:
        fd = -1
    if fd >= 0:
        try:
            while seen < size:
                chunk = os.read(fd, min(1 << 20, size - seen))
                if not chunk:
                    break
                sink.write(chunk)
                h.update(chunk)
                seen += len(chunk)
            intact = seen == size and not os.read(fd, 1)
        except OSError:
            intact = False
        finally:
            os.close(fd)
    if seen < size:
        sink.write(b"\0" * (size - seen))  # fast-import wants the announced size
    sink.write(b"\n")
    return h.hexdigest() if intact else ""
