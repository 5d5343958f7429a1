"""git's object ids and file modes: the constants and the hashing git itself does.

Each object format (``sha1``, ``sha256``) has its own ids; everything here takes the
repository's ``object_format``. ``hashlib`` is imported only when something is hashed:
it costs ~10 ms at start-up, and most commands never hash.
"""

from __future__ import annotations

from guards.git.names import FileMode, ObjectId

TYPE_CHECKING = False  # see guards.values: these imports cost start-up time
if TYPE_CHECKING:
    from typing import Any

#: The mode git writes for "no such entry" in raw diffs and ``status --porcelain=v2``.
ZERO_MODE = FileMode("000000")
REGULAR = FileMode("100644")
EXECUTABLE = FileMode("100755")
SYMLINK = FileMode("120000")
#: A submodule's (or nested repository's) entry: a commit, not a blob.
GITLINK = FileMode("160000")
TREE = FileMode("040000")

#: ``git hash-object -t tree /dev/null`` for each object format.
_EMPTY_TREES = {
    "sha1": "4b825dc642cb6eb9a060e54bf8d69288fbee4904",
    "sha256": "6ef19b41225c5369f1c104d45d8d85efa9b057b53b14b4b9b939dd74decc5321",
}


def hex_length(object_format: str) -> int:
    return 64 if object_format == "sha256" else 40


def empty_tree(object_format: str) -> ObjectId:
    """The id of the empty tree (git knows it without storing it)."""
    return ObjectId(_EMPTY_TREES["sha256" if object_format == "sha256" else "sha1"])


def zero_oid(object_format: str) -> ObjectId:
    """The all-zero id git uses for "no object" (a deleted ref, an unborn side)."""
    return ObjectId("0" * hex_length(object_format))


def is_zero_oid(oid: str) -> bool:
    return bool(oid) and set(oid) == {"0"}


def hasher(object_format: str) -> Any:
    """A fresh hash of the object format's kind (sha1 or sha256)."""
    import hashlib

    return hashlib.sha256() if object_format == "sha256" else hashlib.sha1()


def _light_hasher(object_format: str) -> Any:
    """:func:`hasher` with CPython's own SHA modules where they exist: hashlib loads
    OpenSSL, several milliseconds of every ``guards record`` (which hashes small files;
    large data goes through hashlib, faster per byte)."""
    names = ("_sha2", "_sha256") if object_format == "sha256" else ("_sha1",)
    attr = "sha256" if object_format == "sha256" else "sha1"
    for module in names:  # 3.12 keeps sha256 in _sha2, 3.10-3.11 in _sha256
        try:
            return getattr(__import__(module), attr)()
        except (ImportError, AttributeError):
            continue
    return hasher(object_format)  # a Python built without them


def object_hasher(kind: bytes, size: int, object_format: str = "sha1") -> Any:
    """A hash of an object of ``kind`` (b"blob", b"tree", ...) and ``size`` bytes, git's
    header already in: what is fed to it next is the object's content."""
    h = hasher(object_format)
    h.update(kind + b" %d\0" % size)
    return h


def object_oid(kind: bytes, data: bytes, object_format: str = "sha1") -> ObjectId:
    """The id git gives an object of ``kind`` (b"blob", b"tree", ...) holding ``data``."""
    h = object_hasher(kind, len(data), object_format)
    h.update(data)
    return ObjectId(h.hexdigest())


def blob_oid(data: bytes, object_format: str = "sha1") -> ObjectId:
    """The blob id of raw bytes, as ``git hash-object --no-filters`` computes it (small
    data: a symlink's target, a recorded file; see :func:`_light_hasher`)."""
    h = _light_hasher(object_format)
    h.update(b"blob %d\0" % len(data))
    h.update(data)
    return ObjectId(h.hexdigest())


def file_blob_oid(path: str, size: int, object_format: str = "sha1") -> ObjectId:
    """The blob id of a file's raw bytes, read in chunks (rescued files may be large);
    "" when the file did not hold ``size`` bytes while read (it is changing: never equal
    to anything git stored)."""
    h = object_hasher(b"blob", size, object_format)
    seen = 0
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
            seen += len(chunk)
    if seen != size:
        return ObjectId("")
    return ObjectId(h.hexdigest())
