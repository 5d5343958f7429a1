"""Attribution: "session S wrote path P, and P looked like F when that was recorded".

Ownership of a dirty path for a caller C is ``mine`` (attributed to C and the
fingerprint still matches), ``foreign`` (attributed to another session and still
matching) or ``unknown`` (no record, changed since recorded, or the ledger is
unreadable). A path that changed after it was recorded has no known owner.
"""

from __future__ import annotations

import enum
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: Files up to this size also get a content id, so that a touch (new mtime, same bytes)
#: does not lose the owner. Larger files are compared by their stat data alone.
HASH_MAX_SIZE = 4 * 1024 * 1024


class Ownership(str, enum.Enum):
    MINE = "mine"
    FOREIGN = "foreign"
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class Fingerprint:
    deleted: bool = False
    size: int = 0
    mtime_ns: int = 0
    mode: int = 0
    inode: int = 0
    #: git's blob id of the raw bytes (no clean filters), where cheap; else None.
    blob: str | None = None

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


def blob_id(data: bytes, object_format: str = "sha1") -> str:
    import hashlib  # lazily: ~10 ms to import, and the frame's clean path never hashes

    h = hashlib.sha256() if object_format == "sha256" else hashlib.sha1()
    h.update(b"blob %d\0" % len(data))
    h.update(data)
    return h.hexdigest()


def _content(path: Path, st: os.stat_result) -> bytes | None:
    if stat.S_ISLNK(st.st_mode):
        return os.fsencode(os.readlink(path))
    if stat.S_ISREG(st.st_mode) and st.st_size <= HASH_MAX_SIZE:
        with open(path, "rb") as f:
            return f.read()
    return None


def fingerprint(path: Path, object_format: str = "sha1", *, with_blob: bool = True) -> Fingerprint:
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
        blob = blob_id(content, object_format) if content is not None else None
    return Fingerprint(
        size=st.st_size, mtime_ns=st.st_mtime_ns, mode=st.st_mode, inode=st.st_ino, blob=blob
    )


def still_matches(recorded: Fingerprint, path: Path, object_format: str = "sha1") -> bool:
    """Does ``path`` still hold what was recorded? Cheap stat first, content when needed."""
    current = fingerprint(path, object_format, with_blob=False)
    if recorded.deleted or current.deleted:
        return recorded.deleted and current.deleted
    if current.mode != recorded.mode or current.size != recorded.size:
        return False
    if current.mtime_ns == recorded.mtime_ns and current.inode == recorded.inode:
        return True
    if recorded.blob is None:
        return False
    return fingerprint(path, object_format).blob == recorded.blob


@dataclass(frozen=True)
class Attribution:
    session: str
    fingerprint: Fingerprint
    recorded: float
    #: how it was learned: "record" (named by the writer or its harness), "turn", "observed"
    source: str = "record"

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


@dataclass(frozen=True)
class Owner:
    """Who owns a dirty path, as far as guards can tell, relative to a caller."""

    ownership: Ownership
    #: The attributed session when the record still matches; None when unknown.
    session: str | None
    #: When the attribution was recorded (None when there is none that matches).
    recorded: float | None


UNKNOWN_OWNER = Owner(Ownership.UNKNOWN, None, None)


def classify(
    record: dict[str, Any] | None,
    path: Path,
    caller: str | None,
    object_format: str = "sha1",
) -> Owner:
    """The owner of the dirty path at absolute ``path`` for ``caller``."""
    if record is None:
        return UNKNOWN_OWNER
    try:
        attribution = Attribution.from_json(record)
    except (TypeError, ValueError, AttributeError):
        return UNKNOWN_OWNER
    if not attribution.session or not still_matches(attribution.fingerprint, path, object_format):
        return UNKNOWN_OWNER
    ownership = Ownership.MINE if attribution.session == caller else Ownership.FOREIGN
    return Owner(ownership, attribution.session, attribution.recorded)
