"""What a path looked like when it was recorded: its fingerprint, and the attribution
record that carries it.

Kept apart from guards.state.attribution (ownership, an ``enum``) because ``guards
record`` runs on every agent edit and needs only these.
"""

from __future__ import annotations

import os
import stat

from guards.git.objects import blob_oid
from guards.values import Value

TYPE_CHECKING = False  # see guards.values: these imports cost start-up time
if TYPE_CHECKING:
    from typing import Any

#: Files up to this size also get a content id, so that a touch (new mtime, same bytes)
#: does not lose the owner. Larger files are compared by their stat data alone.
HASH_MAX_SIZE = 4 * 1024 * 1024


class Fingerprint(Value):
    """What a path looked like: stat data, and the content's blob id where cheap."""

    __slots__ = ("blob", "deleted", "inode", "mode", "mtime_ns", "size")

    def __init__(
        self,
        deleted: bool = False,
        size: int = 0,
        mtime_ns: int = 0,
        mode: int = 0,
        inode: int = 0,
        blob: str | None = None,
    ) -> None:
        self.deleted = deleted
        self.size = size
        self.mtime_ns = mtime_ns
        self.mode = mode
        self.inode = inode
        #: git's blob id of the raw bytes (no clean filters), where cheap; else None.
        self.blob = blob

    def to_json(self) -> dict[str, Any]:
        if self.deleted:
            return {"deleted": True}
        return {
            "size": self.size,
            "mtime_ns": self.mtime_ns,
            "mode": self.mode,
            "inode": self.inode,
            "blob": self.blob,
        }

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> Fingerprint:
        if doc.get("deleted"):
            return cls(deleted=True)
        return cls(
            size=int(doc.get("size", -1)),
            mtime_ns=int(doc.get("mtime_ns", -1)),
            mode=int(doc.get("mode", -1)),
            inode=int(doc.get("inode", -1)),
            blob=doc.get("blob"),
        )


def _content(path: str | os.PathLike[str], st: os.stat_result) -> bytes | None:
    if stat.S_ISLNK(st.st_mode):
        return os.fsencode(os.readlink(path))
    if stat.S_ISREG(st.st_mode) and st.st_size <= HASH_MAX_SIZE:
        with open(path, "rb") as f:
            return f.read()
    return None


def fingerprint(
    path: str | os.PathLike[str], object_format: str = "sha1", *, with_blob: bool = True
) -> Fingerprint:
    """What ``path`` looks like now (a missing path is a deletion)."""
    try:
        st = os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return Fingerprint(deleted=True)
    blob = None
    if with_blob:
        try:
            content = _content(path, st)
        except OSError:
            content = None
        blob = blob_oid(content, object_format) if content is not None else None
    return Fingerprint(
        size=st.st_size, mtime_ns=st.st_mtime_ns, mode=st.st_mode, inode=st.st_ino, blob=blob
    )


def still_matches(
    recorded: Fingerprint, path: str | os.PathLike[str], object_format: str = "sha1"
) -> bool:
    """Does ``path`` still hold what was recorded? Cheap stat first, content when needed."""
    return _matches(
        recorded.deleted, recorded.size, recorded.mtime_ns, recorded.mode, recorded.inode,
        recorded.blob, path, object_format,
    )  # fmt: skip


def _matches(
    deleted: bool,
    size: int,
    mtime_ns: int,
    mode: int,
    inode: int,
    blob: str | None,
    path: str | os.PathLike[str],
    object_format: str,
    now: tuple[int, int, int, int] | None = None,
) -> bool:
    """``now``: the path's (mode, size, mtime_ns, inode) from an ``lstat`` the caller
    took already (one per path per look); None: taken here."""
    # Plain values, not dataclasses: this runs once per dirty path on every status/frame.
    if now is None:
        try:
            st = os.lstat(path)
        except (FileNotFoundError, NotADirectoryError):
            return deleted
        now = (st.st_mode, st.st_size, st.st_mtime_ns, st.st_ino)
    if deleted or now[0] != mode or now[1] != size:
        return False
    if now[2] == mtime_ns and now[3] == inode:
        return True
    if blob is None:
        return False
    return fingerprint(path, object_format).blob == blob


class Attribution(Value):
    """Session ``session`` wrote a path that looked like ``fingerprint`` at ``recorded``."""

    __slots__ = ("fingerprint", "recorded", "session", "source")

    def __init__(
        self, session: str, fingerprint: Fingerprint, recorded: float, source: str = "record"
    ) -> None:
        self.session = session
        self.fingerprint = fingerprint
        self.recorded = recorded
        #: how it was learned: "record" (named by the writer or its harness), "turn",
        #: "observed"
        self.source = source

    def to_json(self) -> dict[str, Any]:
        return {
            "session": self.session,
            "fingerprint": self.fingerprint.to_json(),
            "recorded": self.recorded,
            "source": self.source,
        }

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> Attribution:
        return cls(
            session=str(doc.get("session", "")),
            fingerprint=Fingerprint.from_json(doc.get("fingerprint") or {}),
            recorded=float(doc.get("recorded", 0.0)),
            source=str(doc.get("source", "record")),
        )
