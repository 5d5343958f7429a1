"""The ledger's data in memory (sessions, worktrees, attributions, the rescue log) and
the journal records that change it. The file format is described in
:mod:`guards.state.ledger`."""

from __future__ import annotations

from _collections_abc import MutableMapping

from guards import jsontext
from guards.errors import UnknownStateError
from guards.values import MutableValue

TYPE_CHECKING = False  # see guards.values: these imports cost start-up time
if TYPE_CHECKING:
    from collections.abc import Iterator
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

#: Lookups answered by bisection before the whole section is decoded, plus one per 16
#: attributions held: a bisection costs about as much as decoding 16 lines.
BISECTIONS_BEFORE_DECODING = 64


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

    __slots__ = ("_count", "_lookups", "_overlay", "_raw", "_section")

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
        #: Bisections made so far: past :data:`BISECTIONS_BEFORE_DECODING` of the count,
        #: decoding the section once is cheaper than going on (a guard classifying
        #: 50,000 dirty paths).
        self._lookups = 0

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
        self._lookups += 1
        if self._lookups > BISECTIONS_BEFORE_DECODING + self._count // 16:
            return self._items().get(path)
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
        dumps = jsontext.dumps
        lines = sorted(
            dumps(path) + ":" + dumps(pack(value)) for path, value in self._items().items()
        )
        return ("{\n" + ",\n".join(lines) + "\n}").encode()


def _lookup(section: bytes, path: str) -> Any:
    """The stored value of ``path`` in a section, by bisection over its sorted lines;
    None when it has none."""
    if not section.startswith(b"{\n") or not section.endswith(b"\n}"):
        return _decode_paths(section).get(path) if section else None
    target = jsontext.dumps(path).encode() + b":"
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
        return jsontext.loads(line[len(target) :].rstrip(b","))
    except ValueError:
        return {"damaged": line.decode("ascii", "replace")}


def _decode_paths(section: bytes | str) -> dict[str, Any]:
    try:
        doc = jsontext.loads(section)
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


def _short(e: Exception) -> str:
    text = str(e).splitlines()[0] if str(e) else type(e).__name__
    return text[:80]
