"""Every repository guards has been used in on this machine (by this user).

A small file in platformdirs' user data dir, ``repositories.jsonl``: one JSON line per
repository, ``{"git_dir": <common git dir>, "added": <time>}``, appended the first time
a session starts, a path is recorded or a rescue is made there. ``guards doctor --all``
and ``guards reap --all`` sweep it; entries whose git dir is gone are dropped then.

Cheap by design: knowing a repository costs one small file read (and nothing at all
on the guarded git's nothing-at-risk path, which never calls :func:`remember`); only a
new repository takes the lock, to append its line. Registering is best effort: a
registry that cannot be written never fails the command that wanted it.
"""

from __future__ import annotations

import os
import sys
import time

from guards import jsontext
from guards.values import Value

TYPE_CHECKING = False  # see guards.values: these imports cost start-up time
if TYPE_CHECKING:
    from collections.abc import Iterable

    from guards.fsutil import locked
    from guards.git.repo import Repo

REGISTRY_FILE = "repositories.jsonl"
LOCK_FILE = "repositories.lock"
#: Seconds to wait for another guards appending or dropping entries.
LOCK_TIMEOUT = 5.0

#: Git dirs this process knows to be registered already (one read per process).
_known_here: set[str] = set()


class KnownRepository(Value):
    """One registered repository: its common git dir and when guards first saw it."""

    __slots__ = ("added", "git_dir")

    def __init__(self, git_dir: str, added: float | None) -> None:
        self.git_dir = git_dir
        self.added = added

    @property
    def exists(self) -> bool:
        """Whether its git dir is still there (else the entry is dropped)."""
        return os.path.isfile(os.path.join(self.git_dir, "HEAD"))


def data_dir() -> str:
    """platformdirs' user data dir for guards; on Linux computed as platformdirs does
    ($XDG_DATA_HOME, else ~/.local/share), without importing it (start-up time)."""
    if sys.platform.startswith("linux"):
        base = os.environ.get("XDG_DATA_HOME", "")
        if not base.strip():
            base = os.path.expanduser("~/.local/share")
        return os.path.join(base, "guards")
    from platformdirs import user_data_dir

    return str(user_data_dir("guards"))


def registry_file() -> str:
    return os.path.join(data_dir(), REGISTRY_FILE)


def known() -> list[KnownRepository]:
    """Every registered repository, each once, oldest first (unreadable lines skipped)."""
    try:
        with open(registry_file(), "rb") as f:
            raw = f.read()
    except OSError:
        return []
    seen: dict[str, KnownRepository] = {}
    for line in raw.splitlines():
        try:
            entry = jsontext.loads(line)
        except ValueError:
            continue
        if not isinstance(entry, dict) or not isinstance(entry.get("git_dir"), str):
            continue
        added = entry.get("added")
        git_dir = entry["git_dir"]
        if git_dir not in seen:
            seen[git_dir] = KnownRepository(
                git_dir, float(added) if isinstance(added, (int, float)) else None
            )
    return list(seen.values())


def _entry_start(git_dir: str) -> bytes:
    """How :func:`_append` starts the line of ``git_dir`` (the same serializer)."""
    return jsontext.dumps({"git_dir": git_dir, "added": 0})[: -len("0}")].encode()


def _listed_verbatim(git_dir: str) -> bool:
    """A plain path is written in the registry exactly as it is (JSON needs no escape):
    found at the start of a line as :func:`_append` writes it, it is registered, and no
    JSON parsing is needed (a registry of an older format is parsed instead)."""
    if any(c in git_dir for c in '"\\') or not git_dir.isascii() or not git_dir.isprintable():
        return False
    try:
        with open(registry_file(), "rb") as f:
            raw = f.read()
    except OSError:
        return False
    line = _entry_start(git_dir)
    return raw.startswith(line) or b"\n" + line in raw


def remember(repo: Repo) -> None:
    """Register ``repo`` if it is not yet (best effort: never raises)."""
    git_dir = os.path.realpath(repo.common_dir_text)
    if git_dir in _known_here:
        return
    try:
        if _listed_verbatim(git_dir):
            _known_here.add(git_dir)
            return
        if any(k.git_dir == git_dir for k in known()):
            _known_here.add(git_dir)
            return
        if _inside_work_tree(repo):
            # Never write into the work tree guarded (HOME is the work tree: the dotfiles
            # pattern, git's own test scripts): the file would be untracked work that
            # stash -u takes and clean deletes (t3905).
            return
        _append(git_dir)
        _known_here.add(git_dir)
    except Exception:  # a registry we cannot write must not fail a record or a rescue
        return


def _inside_work_tree(repo: Repo) -> bool:
    """Whether the registry lies in ``repo``'s work tree (text paths: no imports)."""
    if repo.toplevel_text is None:
        return False  # a bare repository
    top = os.path.realpath(repo.toplevel_text)
    here = os.path.realpath(data_dir())
    return here == top or here.startswith(top.rstrip(os.sep) + os.sep)


def _append(git_dir: str) -> None:
    with _lock():
        if any(k.git_dir == git_dir for k in known()):
            return
        line = jsontext.dumps({"git_dir": git_dir, "added": time.time()}) + "\n"
        fd = os.open(registry_file(), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, line.encode())
        finally:
            os.close(fd)


def drop(git_dirs: Iterable[str]) -> bool:
    """Remove these entries (their repositories are gone); the rest stays as it was.
    False when the registry could not be rewritten (they are dropped another time)."""
    from guards.fsutil import PRIVATE, atomic_write

    gone = set(git_dirs)
    if not gone:
        return True
    try:
        with _lock():
            kept = [k for k in known() if k.git_dir not in gone]
            text = "".join(
                jsontext.dumps({"git_dir": k.git_dir, "added": k.added}) + "\n" for k in kept
            )
            atomic_write(registry_file(), text.encode(), mode=PRIVATE)
    except Exception:
        return False
    _known_here.difference_update(gone)
    return True


def _lock() -> locked:
    from guards.fsutil import locked

    directory = data_dir()
    os.makedirs(directory, mode=0o700, exist_ok=True)
    return locked(
        os.path.join(directory, LOCK_FILE),
        LOCK_TIMEOUT,
        what="the repository registry",
        holder="changing it",
        setting="nothing: run again",
    )
