"""The per-repository ledger: sessions, worktrees, path attributions, the rescue log.

It lives in ``$(git rev-parse --git-common-dir)/guards/``, shared by every linked
worktree and never committed, as a **snapshot** and a **journal** (schema 2):

``ledger.json`` (the snapshot)
    One header line, then sections. The header is a JSON object
    ``{"schema": 2, "generation": C, "sections": [[kind, key, offset, length, crc32,
    count], ...]}``: the snapshot holds every journal record of generations up to ``C``;
    each section's bytes start at ``offset`` after the header line and are checked by
    their CRC-32. Kinds: ``core`` (``{"sessions", "worktrees", "extra"}``), ``rescues``
    (the rescue log, a list) and one ``paths`` section per worktree (key: its top level;
    ``{path: attribution}``). An attribution is stored packed, ``"session|recorded|
    source|size|mtime_ns|mode|inode|blob"`` (``...|source|D`` for a deletion), or as
    its JSON object when it does not fit that shape (odd or unknown fields survive). A
    reader decodes only the sections it needs: ``guards status`` and the frame read the
    core and their own worktree's attributions, never the other worktrees'.
``ledger.journal`` (the live journal)
    A header line ``{"schema": 2, "generation": G}``, then records, each one line:
    ``\\x1e`` (RS, which JSON never leaves unescaped), a JSON array, ``\\n``. Records:
    ``["a", worktree, path, attribution]`` attribute; ``["a", worktree, path,
    attribution, recorded]`` attribute only if the path's attribution is still the one
    recorded at ``recorded`` (null: none), a compare-and-set for writers that decided
    from what they read (an observation must not overwrite a record made meanwhile);
    ``["r", worktree, path, recorded]`` release the path if its attribution is still the
    one recorded at ``recorded``; ``["R", worktree]`` forget a worktree's attributions;
    ``["t", session, now, host, label, worktree]`` touch a session (created when missing;
    label and worktree only fill empty fields); ``["b", session, record]`` session start
    (keeps an earlier label and start time); ``["e", session, now]`` session end; ``["w",
    key, record]`` / ``["W", key]`` register / forget a worktree; ``["x", entry]`` /
    ``["X", ref]`` add to / trim the rescue log.
``ledger.journal.<G>`` (sealed journals)
    A journal sealed by a compaction and not yet folded into the snapshot.

Writing a record costs O(1): no lock, no read of the ledger (only the snapshot's header
line, to refuse writing into a ledger that cannot be trusted). The writer opens the live
journal with ``O_APPEND``, takes a *shared* ``flock`` on it (writers never wait for each
other), checks the file it opened is still the live journal (else reopens), writes its
records with one ``write()`` and flushes them (``fdatasync``) before saying it is done.
Appends to a regular file are not interleaved on a local file system; a writer killed
mid-write leaves a *torn* record: bytes that do not end with a newline before the next
RS. Readers skip torn records (their writer never got to acknowledge them); a complete
record that does not decode makes the ledger untrusted.

Compaction runs under the ledger lock (``filelock``: a SIGKILLed holder releases it),
taken by the writer whose append made the live journal cross a multiple of
``COMPACT_BYTES`` (without waiting: a busy lock means someone is compacting) and by
every :meth:`Ledger.transaction` (a whole rewrite, for rare changes). It *seals* the
live journal: an exclusive ``flock`` on it (waits for the in-flight appends only), a
hard link to ``ledger.journal.<G>``, an atomic rename of a fresh journal of generation
``G+1`` over ``ledger.journal``, unlock. Then it reads the snapshot and the sealed
journals, writes the new snapshot (generation ``G``, atomically: temp file, fsync,
rename; the sections of worktrees no record touched are copied as they were, undecoded)
and deletes the sealed journals. A writer blocked by the seal finds its file is no
longer the live journal and appends to the new one; no record lands in a journal after
it was sealed. A compaction killed half-way leaves a sealed journal the next one folds
(a generation is folded once: the snapshot names the last one it holds).

Readers take no lock and never wait. They read the snapshot (generation ``C``), then
the sealed journals ``C+1, C+2, ...`` while they exist, then the live journal, which must
be the next generation (or the last sealed one itself, the same file, while a seal is
under way). A gap means a compaction ran meanwhile: the reader starts over (a few
retries; a gap that persists is an inconsistent ledger). So every record is seen
exactly once: a generation is either in the snapshot read or in a journal read, never
both, and journals only grow until sealed.

A ledger guards cannot trust is never silently replaced: a corrupt, truncated or
newer-schema snapshot or journal is moved aside (``ledger.json.corrupt-<time>-<pid>``
or ``ledger.journal.corrupt-...``, content intact) and reported in one line, every
ownership answer of that read becomes "unknown", which means: rescue, and the ledger
is rebuilt from the files that remain trustworthy. Readers that must not change
anything (the frame, doctor) use :meth:`Ledger.peek`; both judge the bytes the same
way. A schema-1 ``ledger.json`` (one JSON document) is read as the snapshot of
generation 0 and rewritten as schema 2 by the first writer (under the lock).
"""

from __future__ import annotations

import os
import time
from _collections_abc import MutableMapping

from guards import fsutil
from guards.errors import UnknownStateError
from guards.values import MutableValue

TYPE_CHECKING = False  # see guards.values: these imports cost start-up time
if TYPE_CHECKING:
    from collections.abc import Callable, Generator, Iterator
    from contextlib import AbstractContextManager
    from pathlib import Path
    from typing import Any

SCHEMA = 2
LEDGER_FILE = "ledger.json"
JOURNAL_FILE = "ledger.journal"
LOCK_FILE = "ledger.lock"
CORRUPT_SUFFIX = ".corrupt-"
#: A journal longer than this is folded into the snapshot by the writer that passed it.
COMPACT_BYTES = 256 * 1024
#: Environment override of COMPACT_BYTES (tests, benchmarks).
COMPACT_ENV = "GUARDS_LEDGER_COMPACT_BYTES"
#: How often a reader starts over when compactions keep moving the journal under it.
READ_RETRIES = 30

RS = b"\x1e"
_SEP = (",", ":")


def _json() -> Any:
    """The json module, imported on first use: ``guards record`` writes and checks its
    few lines without it (json pulls in ``re`` and ``enum``: start-up time)."""
    import json

    return json


def _encode(value: object) -> str:
    """JSON text of a record, by hand for the types records hold (json's own encoder
    for anything else, and for strings that need escaping)."""
    t = type(value)
    if t is str:
        text: str = value  # type: ignore[assignment]
        if text.isascii() and text.isprintable() and '"' not in text and "\\" not in text:
            return '"' + text + '"'
    elif value is None:
        return "null"
    elif value is True:
        return "true"
    elif value is False:
        return "false"
    elif t is int:
        return str(value)
    elif t is float and -1e300 < value < 1e300:  # type: ignore[operator]
        return repr(value)
    elif t is list:
        return "[" + ",".join(_encode(v) for v in value) + "]"  # type: ignore[attr-defined]
    encoded: str = _json().dumps(value, separators=_SEP)
    return encoded


def _quick_header(first: bytes) -> tuple[int, int] | None:
    """(generation, size of the sections) from a schema-2 snapshot header as guards
    writes it, without json; None when it is not that (the full check decides)."""
    if not first.startswith(b'{"schema":2,"generation":'):
        return None
    parts = first[:200].split(b",", 3)
    if len(parts) != 4 or not parts[3].startswith(b'"sections":'):
        return None
    generation, size = parts[1][13:], parts[2][7:]
    if not parts[2].startswith(b'"size":') or not generation.isdigit() or not size.isdigit():
        return None
    return int(generation), int(size)


def _quick_journal_header(first: bytes) -> int | None:
    prefix = b'{"schema":2,"generation":'
    number = first[len(prefix) : -2]
    if first.startswith(prefix) and first.endswith(b"}\n") and number.isdigit():
        return int(number)
    return None


class LedgerUnreadableError(UnknownStateError):
    """The ledger exists but cannot be trusted; ownership is unknown."""

    def __init__(self, message: str, *, newer_schema: int | None = None) -> None:
        super().__init__(message)
        #: Set when a newer guards wrote the ledger: the fix is an upgrade, not a repair.
        self.newer_schema = newer_schema


class LedgerFormatError(ValueError):
    """Bytes that are not a ledger this guards can trust; the message says why."""

    def __init__(
        self, reason: str, *, newer_schema: int | None = None, file: str | None = None
    ) -> None:
        super().__init__(reason.splitlines()[0][:80] if reason else "unknown format")
        self.newer_schema = newer_schema
        #: The file that cannot be trusted (None: the files disagree with each other).
        self.file = file


class _Moved(Exception):
    """A compaction moved the journal while it was read: start over."""


# -- attributions, packed -----------------------------------------------------------------

_RECORD_KEYS = frozenset(("session", "fingerprint", "recorded", "source"))
_PRINT_KEYS = frozenset(("size", "mtime_ns", "mode", "inode", "blob"))


def pack(record: object) -> object:
    """An attribution record as stored: the packed string when it has the usual shape,
    else the record itself (odd records survive as they are)."""
    if not isinstance(record, dict) or record.keys() != _RECORD_KEYS:
        return record
    session, fp = record["session"], record["fingerprint"]
    recorded, source = record["recorded"], record["source"]
    if (
        type(session) is not str
        or not session
        or "|" in session
        or type(source) is not str
        or "|" in source
        or type(recorded) is not float
        or not -1e300 < recorded < 1e300
        or not isinstance(fp, dict)
    ):
        return record
    head = f"{session}|{recorded!r}|{source}|"
    if fp == {"deleted": True}:
        return head + "D"
    if fp.keys() != _PRINT_KEYS:
        return record
    numbers = (fp["size"], fp["mtime_ns"], fp["mode"], fp["inode"])
    blob = fp["blob"]
    if any(type(n) is not int for n in numbers):
        return record
    if blob is not None and (type(blob) is not str or not blob or "|" in blob):
        return record
    return head + "|".join(map(str, numbers)) + "|" + (blob or "")


def unpack(value: object) -> Any:
    """The attribution record a stored value stands for."""
    if type(value) is not str:
        return value
    parts = value.split("|")
    try:
        if len(parts) == 4 and parts[3] == "D":
            fp: dict[str, Any] = {"deleted": True}
        elif len(parts) == 8:
            fp = {
                "size": int(parts[3]),
                "mtime_ns": int(parts[4]),
                "mode": int(parts[5]),
                "inode": int(parts[6]),
                "blob": parts[7] or None,
            }
        else:
            return {"damaged": value}
        return {
            "session": parts[0],
            "fingerprint": fp,
            "recorded": float(parts[1]),
            "source": parts[2],
        }
    except ValueError:
        return {"damaged": value}


def recorded_at(records: Attributions | dict[str, Any], path: str) -> object:
    """When the attribution of ``path`` was recorded (for a release record)."""
    if isinstance(records, Attributions):
        return _recorded(records.stored(path))
    return _recorded(records.get(path))


def _recorded(value: object) -> object:
    """When a stored attribution was recorded (without unpacking all of it)."""
    if type(value) is str:
        parts = value.split("|", 2)
        try:
            return float(parts[1]) if len(parts) == 3 else None
        except ValueError:
            return None
    return value.get("recorded") if isinstance(value, dict) else None


_GONE: Any = object()  # in an overlay: the path was released


class Attributions(MutableMapping):  # type: ignore[type-arg]
    """One worktree's attributions: path -> attribution record (a JSON object).

    Read, they stay the section's bytes: one line per path, sorted, so that a lookup is
    a bisection over the bytes and reading 100k attributions to classify 1,000 dirty
    paths makes no per-path object (journal records read after the snapshot go to a
    small overlay). Iterating, counting past an overlay or changing them decodes the
    section into a dict of packed strings (one string per path, not nested dicts). A
    record looked up is kept decoded, so changing it in place (in a transaction) is
    kept.
    """

    __slots__ = ("_count", "_overlay", "_raw", "_section")

    def __init__(
        self, raw: dict[str, Any] | None = None, section: bytes | None = None, count: int = 0
    ) -> None:
        #: The decoded attributions (None while only the section bytes are held).
        self._raw: dict[str, Any] | None = raw if raw is not None or section else {}
        #: Undecoded section bytes (a compaction copies untouched worktrees verbatim).
        self._section = section if raw is None else None
        #: Changes on top of the section: path -> stored value, or _GONE.
        self._overlay: dict[str, Any] = {}
        self._count = count

    def _items(self) -> dict[str, Any]:
        raw = self._raw
        if raw is None:
            raw = _decode_paths(self._section or b"{}")
            for path, value in self._overlay.items():
                if value is _GONE:
                    raw.pop(path, None)
                else:
                    raw[path] = value
            self._raw, self._section, self._overlay = raw, None, {}
        return raw

    @property
    def raw(self) -> dict[str, Any]:
        """path -> stored value (packed string or record), all of them decoded."""
        return self._items()

    def stored(self, path: str) -> Any:
        """The stored value of ``path`` (packed string or record), None when there is
        none; never decodes the whole section."""
        if self._raw is not None:
            return self._raw.get(path)
        value = self._overlay.get(path)
        if value is not None:
            return None if value is _GONE else value
        return _lookup(self._section or b"", path)

    def put(self, path: str, value: Any) -> None:
        """Store ``value`` (packed or not) for ``path`` without decoding the section."""
        if self._raw is not None:
            self._raw[path] = value
        else:
            self._overlay[path] = value

    def release(self, path: str, recorded: object) -> None:
        """Drop ``path`` if its attribution is the one recorded at ``recorded``."""
        current = self.stored(path)
        if current is None or _recorded(current) != recorded:
            return
        if self._raw is not None:
            del self._raw[path]
        else:
            self._overlay[path] = _GONE

    def __getitem__(self, path: str) -> dict[str, Any]:
        value = self.get(path, _GONE)
        if value is _GONE:
            raise KeyError(path)
        return value  # type: ignore[no-any-return]

    def get(self, path: str, default: Any = None) -> Any:
        value = self.stored(path)
        if value is None:
            return default
        if type(value) is str:
            value = unpack(value)
            self.put(path, value)  # decoded once; changed in place, the change is kept
        return value

    def __contains__(self, path: object) -> bool:
        return isinstance(path, str) and self.stored(path) is not None

    def __setitem__(self, path: str, record: dict[str, Any]) -> None:
        self._items()[path] = record

    def __delitem__(self, path: str) -> None:
        del self._items()[path]

    def __iter__(self) -> Iterator[str]:
        return iter(self._items())

    def __len__(self) -> int:
        if self._raw is None and not self._overlay:
            return self._count
        return len(self._items())

    def __bool__(self) -> bool:
        if self._raw is None and _GONE not in self._overlay.values():
            return bool(self._count or self._overlay)
        return bool(len(self))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Attributions):
            return dict(self.items()) == dict(other.items())
        if isinstance(other, dict):
            return dict(self.items()) == other
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Attributions({len(self)} paths)"

    def encode(self) -> bytes:
        """The section: ``{``, one ``"path":value`` line per path sorted by the encoded
        path, ``}`` (JSON as a whole; sorted lines for the bisection)."""
        if self._raw is None and not self._overlay and self._section is not None:
            return self._section
        dumps = _json().dumps
        lines = sorted(
            dumps(path) + ":" + dumps(pack(value), separators=_SEP)
            for path, value in self._items().items()
        )
        return ("{\n" + ",\n".join(lines) + "\n}").encode()


def _lookup(section: bytes, path: str) -> Any:
    """The stored value of ``path`` in a section, by bisection over its sorted lines;
    None when it has none."""
    if not section.startswith(b"{\n") or not section.endswith(b"\n}"):
        return _decode_paths(section).get(path) if section else None
    target = _encode(path).encode() + b":"
    lo, end = 2, len(section) - 2
    hi = end
    while lo < hi:
        mid = (lo + hi) // 2
        start = max(section.rfind(b"\n", lo, mid) + 1, lo)
        stop = section.find(b"\n", start, end)
        stop = end if stop < 0 else stop
        if section[start:stop] < target:
            lo = stop + 1
        else:
            hi = start
    if lo >= end or not section.startswith(target, lo):
        return None
    stop = section.find(b"\n", lo, end)
    line = section[lo : end if stop < 0 else stop]
    try:
        return _json().loads(line[len(target) :].rstrip(b","))
    except ValueError:
        return {"damaged": line.decode("ascii", "replace")}


def _decode_paths(section: bytes | str) -> dict[str, Any]:
    try:
        doc = _json().loads(section)
    except (ValueError, RecursionError) as e:
        raise LedgerFormatError(f"a paths section: {_short(e)}") from e
    if not isinstance(doc, dict):
        raise LedgerFormatError("a paths section is not an object")
    return doc


# -- the data -------------------------------------------------------------------------------


class LedgerData(MutableValue):
    """The ledger's content. Values are plain JSON so that unknown fields survive.

    ``scope``: None when everything was read; else the one worktree whose attributions
    were read (``paths`` holds no other; ``rescues`` is empty unless asked for).
    """

    __slots__ = ("elsewhere", "extra", "paths", "rescues", "scope", "sessions", "worktrees")

    def __init__(
        self,
        sessions: dict[str, dict[str, Any]] | None = None,
        paths: dict[str, Attributions] | None = None,
        rescues: list[dict[str, Any]] | None = None,
        worktrees: dict[str, dict[str, Any]] | None = None,
        extra: dict[str, Any] | None = None,
        scope: str | None = None,
    ) -> None:
        self.sessions = {} if sessions is None else sessions
        #: worktree top level -> path -> attribution record
        self.paths: dict[str, Attributions] = {} if paths is None else paths
        self.rescues = [] if rescues is None else rescues
        self.worktrees = {} if worktrees is None else worktrees
        self.extra = {} if extra is None else extra
        self.scope = scope
        #: With a scope: how many attributions the snapshot holds for other worktrees
        #: (their records in the journal not counted).
        self.elsewhere = 0

    def attributions(self, worktree: str) -> Attributions:
        """The attributions of ``worktree`` (created empty when it has none)."""
        found = self.paths.get(worktree)
        if not isinstance(found, Attributions):
            found = self.paths[worktree] = Attributions(dict(found) if found else None)
        return found

    def to_json(self) -> dict[str, Any]:
        """Everything as one JSON document (the shape schema 1 stored)."""
        return {
            **self.extra,
            "schema": SCHEMA,
            "sessions": self.sessions,
            "paths": {wt: dict(records.items()) for wt, records in self.paths.items()},
            "rescues": self.rescues,
            "worktrees": self.worktrees,
        }

    @classmethod
    def from_json(cls, doc: object) -> LedgerData:
        """A schema-1 document (every section checked for its type)."""
        if not isinstance(doc, dict):
            raise ValueError("top level is not an object")
        sections = {"sessions": dict, "paths": dict, "rescues": list, "worktrees": dict}
        for name, kind in sections.items():
            if not isinstance(doc.get(name, kind()), kind):
                raise ValueError(f"{name!r} is not a JSON {kind.__name__}")
        paths = {}
        for worktree, worktree_paths in doc.get("paths", {}).items():
            if not isinstance(worktree_paths, dict):
                raise ValueError("'paths' holds a non-object")
            paths[worktree] = Attributions(worktree_paths)
        return cls(
            sessions=doc.get("sessions", {}),
            paths=paths,
            rescues=doc.get("rescues", []),
            worktrees=doc.get("worktrees", {}),
            extra={k: v for k, v in doc.items() if k not in sections and k != "schema"},
        )


# -- records ----------------------------------------------------------------------------------


def op_attribute(worktree: str, path: str, record: dict[str, Any]) -> list[Any]:
    return ["a", worktree, path, pack(record)]


def op_claim(worktree: str, path: str, record: dict[str, Any], expected: object) -> list[Any]:
    """Attribute ``path`` only if its attribution is still the one recorded at
    ``expected`` (None: only if it has none) when the record is applied."""
    return ["a", worktree, path, pack(record), expected]


def op_release(worktree: str, path: str, recorded: object) -> list[Any]:
    """Release ``path`` if its attribution is still the one recorded at ``recorded``."""
    return ["r", worktree, path, recorded]


def op_forget_paths(worktree: str) -> list[Any]:
    return ["R", worktree]


def op_touch(
    session: str, now: float, host: str, label: str | None = None, worktree: str | None = None
) -> list[Any]:
    return ["t", session, now, host, label, worktree]


def op_start(session: str, record: dict[str, Any]) -> list[Any]:
    return ["b", session, record]


def op_end(session: str, now: float) -> list[Any]:
    return ["e", session, now]


def op_worktree(key: str, record: dict[str, Any]) -> list[Any]:
    return ["w", key, record]


def op_forget_worktree(key: str) -> list[Any]:
    return ["W", key]


def op_rescue(entry: dict[str, Any]) -> list[Any]:
    return ["x", entry]


def op_drop_rescue(ref: str) -> list[Any]:
    return ["X", ref]


def _apply(data: LedgerData, rec: object, rescues: bool) -> None:
    """One journal record onto ``data`` (records of worktrees outside its scope, and
    rescue-log records when the log was not read, change nothing it holds)."""
    if not isinstance(rec, list) or not rec or not isinstance(rec[0], str):
        raise LedgerFormatError("a journal record is not a list")
    op, n = rec[0], len(rec)
    if op in ("a", "r", "R") and n >= 2:
        worktree = rec[1]
        if not isinstance(worktree, str):
            raise LedgerFormatError("a journal record names no worktree")
        if data.scope is not None and worktree != data.scope:
            return
        if op == "a" and n in (4, 5) and isinstance(rec[2], str):
            records = data.attributions(worktree)
            if n == 4 or _recorded(records.stored(rec[2])) == rec[4]:
                records.put(rec[2], rec[3])
        elif op == "r" and n == 4 and isinstance(rec[2], str):
            if worktree in data.paths:
                data.attributions(worktree).release(rec[2], rec[3])
        elif op == "R" and n == 2:
            data.paths.pop(worktree, None)
        else:
            raise LedgerFormatError(f"a bad {op!r} journal record")
    elif op in ("t", "b", "e") and n >= 3 and isinstance(rec[1], str):
        sid = rec[1]
        current = data.sessions.get(sid)
        if op == "t" and n == 6:
            if not isinstance(current, dict):
                data.sessions[sid] = {
                    "id": sid, "label": rec[4] or "", "host": rec[3], "pid": None,
                    "pid_start": None, "worktree": rec[5], "started": rec[2],
                    "last_seen": rec[2], "ended": False,
                }  # fmt: skip
                return
            current["last_seen"] = rec[2]
            if rec[4] and not current.get("label"):
                current["label"] = rec[4]
            if rec[5] and not current.get("worktree"):
                current["worktree"] = rec[5]
        elif op == "b" and isinstance(rec[2], dict):
            new = dict(rec[2])
            if isinstance(current, dict):
                if not new.get("label"):
                    new["label"] = current.get("label", "")
                if "started" in current:
                    new["started"] = current["started"]
            data.sessions[sid] = new
        elif op == "e":
            if isinstance(current, dict):
                current["ended"] = True
                current["last_seen"] = rec[2]
        else:
            raise LedgerFormatError(f"a bad {op!r} journal record")
    elif op == "w" and n == 3 and isinstance(rec[1], str):
        data.worktrees[rec[1]] = rec[2]
    elif op == "W" and n == 2 and isinstance(rec[1], str):
        data.worktrees.pop(rec[1], None)
    elif op == "x" and n == 2:
        if rescues:
            data.rescues.append(rec[1])
    elif op == "X" and n == 2:
        if rescues:
            data.rescues[:] = [
                e for e in data.rescues if not (isinstance(e, dict) and e.get("ref") == rec[1])
            ]
    else:
        raise LedgerFormatError(f"an unknown journal record {op[:10]!r}")


# -- the snapshot file ------------------------------------------------------------------------


class _Snapshot:
    """A snapshot read from disk: its generation and the sections wanted."""

    __slots__ = ("data", "generation", "version")

    def __init__(self, data: LedgerData, generation: int, version: int) -> None:
        self.data = data
        self.generation = generation
        self.version = version


def _crc(data: bytes) -> int:
    import zlib

    return zlib.crc32(data)


def _check_schema(doc: object, what: str, file: str) -> int:
    schema = doc.get("schema") if isinstance(doc, dict) else None
    if isinstance(schema, int) and not isinstance(schema, bool) and schema > SCHEMA:
        raise LedgerFormatError(
            f"schema {schema}, this guards reads {SCHEMA}", newer_schema=schema, file=file
        )
    if schema not in (1, SCHEMA) or isinstance(schema, bool):
        raise LedgerFormatError(f"{what}schema is {schema!r}, expected {SCHEMA}", file=file)
    return int(schema)


def _parse_header(line: bytes, file: str) -> dict[str, Any] | None:
    """The schema-2 header line, or None when the file is a schema-1 document."""
    try:
        doc = _json().loads(line)
    except (ValueError, RecursionError):
        return None  # maybe a schema-1 document over several lines: judged as a whole
    if _check_schema(doc, "", file) == 1:
        return None
    sections = doc.get("sections")
    generation = doc.get("generation")
    if "size" in doc and (
        not isinstance(sections, list)
        or not all(isinstance(x, list) and len(x) == 6 for x in sections)
        or doc["size"] != sum(x[3] for x in sections)
    ):
        raise LedgerFormatError("the header's size disagrees with its sections", file=file)
    if not isinstance(sections, list) or type(generation) is not int or generation < 0:
        raise LedgerFormatError("a header without sections or generation", file=file)
    for s in sections:
        if (
            not isinstance(s, list)
            or len(s) != 6
            or not all(type(x) is str for x in s[:2])
            or not all(type(x) is int and x >= 0 for x in s[2:])
        ):
            raise LedgerFormatError("a bad section in the header", file=file)
    header: dict[str, Any] = doc
    return header


def _read_snapshot(file: str, scope: str | None, rescues: bool) -> _Snapshot | None:
    """The snapshot file's generation and the sections a reader wants (None: no file);
    paths sections are checked (CRC) and decoded only as far as they are used."""
    try:
        f = open(file, "rb")  # noqa: SIM115
    except FileNotFoundError:
        return None
    except IsADirectoryError as e:
        raise OSError(e.errno, "is a directory") from e
    with f:
        first = f.readline()
        header = _parse_header(first, file)
        if header is None:
            return _Snapshot(_decode_v1(first + f.read(), file), 0, 1)
        sections: list[list[Any]] = header["sections"]
        size = os.fstat(f.fileno()).st_size - len(first)
        if sum(s[3] for s in sections) != size:
            raise LedgerFormatError(
                f"{size} bytes of sections, the header says {sum(s[3] for s in sections)}"
                " (truncated?)",
                file=file,
            )
        data = LedgerData(scope=scope)
        for kind, key, offset, length, crc, count in sections:
            if kind == "paths" and scope is not None and key != scope:
                data.elsewhere += count
                continue
            if kind == "rescues" and not rescues:
                continue
            # Only the sections wanted are read: a reader of one worktree never holds
            # the other worktrees' bytes.
            f.seek(len(first) + offset)
            chunk = f.read(length)
            if len(chunk) != length or _crc(chunk) != crc:
                raise LedgerFormatError(f"the {kind} section fails its checksum", file=file)
            _decode_section(data, kind, key, chunk, count, file)
    return _Snapshot(data, header["generation"], SCHEMA)


def _decode_section(
    data: LedgerData, kind: str, key: str, chunk: bytes, count: int, file: str
) -> None:
    if kind == "paths":
        # Kept as bytes (its checksum held): looked up by bisection, decoded only when
        # iterated or changed.
        if not (chunk.startswith(b"{\n") and chunk.endswith(b"\n}")):
            raise LedgerFormatError("a paths section is not one line per path", file=file)
        data.paths[key] = Attributions(section=chunk, count=count)
        return
    try:
        doc = _json().loads(chunk)
    except (ValueError, RecursionError) as e:
        raise LedgerFormatError(f"the {kind} section: {_short(e)}", file=file) from e
    if kind == "core":
        if not isinstance(doc, dict) or not all(
            isinstance(doc.get(k, {}), dict) for k in ("sessions", "worktrees", "extra")
        ):
            raise LedgerFormatError("the core section has the wrong shape", file=file)
        data.sessions = doc.get("sessions", {})
        data.worktrees = doc.get("worktrees", {})
        data.extra = doc.get("extra", {})
    elif kind == "rescues":
        if not isinstance(doc, list):
            raise LedgerFormatError("the rescue log is not a list", file=file)
        data.rescues = doc
    else:
        raise LedgerFormatError(f"an unknown section {kind[:20]!r}", file=file)


def _decode_v1(raw: bytes, file: str) -> LedgerData:
    try:
        doc = _json().loads(raw)
    except ValueError as e:
        raise LedgerFormatError(_short(e), file=file) from e
    except RecursionError as e:  # no ValueError: json's answer to very deep nesting
        raise LedgerFormatError("nested deeper than JSON is decoded here", file=file) from e
    if _check_schema(doc, "", file) != 1:
        raise LedgerFormatError("a schema-2 ledger without its header line", file=file)
    try:
        return LedgerData.from_json(doc)
    except ValueError as e:
        raise LedgerFormatError(_short(e), file=file) from e


def encode_snapshot(data: LedgerData, generation: int) -> bytes:
    """The snapshot file for ``data`` (everything must have been read: scope None)."""
    core = (
        _json()
        .dumps(
            {"sessions": data.sessions, "worktrees": data.worktrees, "extra": data.extra},
            separators=_SEP,
            sort_keys=True,
        )
        .encode()
    )
    chunks: list[tuple[str, str, bytes, int]] = [
        ("core", "", core, len(data.sessions)),
        ("rescues", "", _json().dumps(data.rescues, separators=_SEP).encode(), len(data.rescues)),
    ]
    for worktree in sorted(data.paths):
        records = data.paths[worktree]
        if not isinstance(records, Attributions):
            records = Attributions(dict(records))
        if not len(records):
            continue
        chunks.append(("paths", worktree, records.encode(), len(records)))
    sections = []
    offset = 0
    for kind, key, chunk, count in chunks:
        sections.append([kind, key, offset, len(chunk), _crc(chunk), count])
        offset += len(chunk)
    header = (
        _json()
        .dumps(
            {"schema": SCHEMA, "generation": generation, "size": offset, "sections": sections},
            separators=_SEP,
        )
        .encode()
    )
    head: bytes = header
    return head + b"\n" + b"".join(chunk for _, _, chunk, _ in chunks)


# -- journals ---------------------------------------------------------------------------------


class _Journal:
    __slots__ = ("body", "generation", "inode", "path")

    def __init__(self, path: str, generation: int, inode: int, body: bytes) -> None:
        self.path = path
        self.generation = generation
        self.inode = inode
        self.body = body


def _journal_header(generation: int) -> bytes:
    return b'{"schema":%d,"generation":%d}\n' % (SCHEMA, generation)


def _parse_journal_header(line: bytes, file: str) -> int:
    quick = _quick_journal_header(line)
    if quick is not None and quick >= 1:
        return quick
    if not line.endswith(b"\n"):
        raise LedgerFormatError("a journal without its header line", file=file)
    try:
        doc = _json().loads(line)
    except (ValueError, RecursionError) as e:
        raise LedgerFormatError(f"the journal header: {_short(e)}", file=file) from e
    if _check_schema(doc, "journal ", file) != SCHEMA:
        raise LedgerFormatError("a journal of schema 1", file=file)
    generation = doc.get("generation")
    if type(generation) is not int or generation < 1:
        raise LedgerFormatError("a journal without a generation", file=file)
    return generation


def _read_journal(path: str) -> _Journal:
    """A journal file (FileNotFoundError when there is none)."""
    with open(path, "rb") as f:
        first = f.readline()
        generation = _parse_journal_header(first, path)
        body = f.read()
        inode = os.fstat(f.fileno()).st_ino
    return _Journal(path, generation, inode, body)


def _records(journal: _Journal) -> list[Any]:
    """The complete records of a journal, in order; torn ones (no newline before the
    next record) are skipped."""
    segments = journal.body.split(RS)
    complete = [s for s in segments if s.endswith(b"\n")]
    if not complete:
        return []
    try:
        # One decode for all of them: much faster than one json.loads per line.
        records = _json().loads(b"[" + b",".join(complete) + b"]")
    except (ValueError, RecursionError):
        for s in complete:
            try:
                _json().loads(s)
            except (ValueError, RecursionError) as e:
                raise LedgerFormatError(f"a journal record: {_short(e)}", file=journal.path) from e
        raise LedgerFormatError("a journal record", file=journal.path) from None
    if not isinstance(records, list):  # pragma: no cover - json.loads of a list
        raise LedgerFormatError("journal records", file=journal.path)
    return records


def _apply_journal(data: LedgerData, journal: _Journal, rescues: bool = True) -> None:
    for rec in _records(journal):
        try:
            _apply(data, rec, rescues)
        except LedgerFormatError as e:
            raise LedgerFormatError(str(e), file=journal.path) from e


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

    def append(self, records: list[list[Any]]) -> None:
        """Add ``records`` to the journal: O(1), no lock, durable when it returns.

        Refuses (after keeping it aside) to write into a ledger whose snapshot header
        or live journal header cannot be trusted, and migrates a schema-1 ledger first.
        """
        if not records:
            return
        payload = "".join("\x1e" + _encode(r) + "\n" for r in records).encode()
        try:
            migrate = self._check_snapshot_header()
            if migrate:
                self._rewrite(None)
            size = self._append(payload)
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

    def _append(self, payload: bytes) -> int:
        """One ``write()`` of ``payload`` to the live journal; its size after."""
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


def _short(e: Exception) -> str:
    text = str(e).splitlines()[0] if str(e) else type(e).__name__
    return text[:80]
