"""The ledger's files: snapshot sections and journals, encoded and decoded (the format
is described in :mod:`guards.state.ledger`)."""

from __future__ import annotations

import os

from guards import jsontext
from guards.state.ledger.records import (
    RS,
    SCHEMA,
    Attributions,
    LedgerData,
    LedgerFormatError,
    _apply,
    _short,
)

TYPE_CHECKING = False  # see guards.values: these imports cost start-up time
if TYPE_CHECKING:
    from typing import Any


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
        doc = jsontext.loads(line)
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
        doc = jsontext.loads(chunk)
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
        doc = jsontext.loads(raw)
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
        jsontext.module()
        .dumps(
            {"sessions": data.sessions, "worktrees": data.worktrees, "extra": data.extra},
            separators=jsontext.COMPACT,
            sort_keys=True,
        )
        .encode()
    )
    chunks: list[tuple[str, str, bytes, int]] = [
        ("core", "", core, len(data.sessions)),
        ("rescues", "", jsontext.dumps(data.rescues).encode(), len(data.rescues)),
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
    header = jsontext.dumps(
        {"schema": SCHEMA, "generation": generation, "size": offset, "sections": sections}
    ).encode()
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
        doc = jsontext.loads(line)
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
    next record) are skipped. NUL bytes after a record are what a machine crash leaves
    where appends not yet flushed were (the file grew, their data never reached the
    disk): no record holds one (JSON escapes it), so they end no record and hide none."""
    segments = journal.body.split(RS)
    if b"\0" in journal.body:
        segments = [s.rstrip(b"\0") for s in segments]
    complete = [s for s in segments if s.endswith(b"\n")]
    if not complete:
        return []
    try:
        # One decode for all of them: much faster than one json.loads per line.
        records = jsontext.loads(b"[" + b",".join(complete) + b"]")
    except (ValueError, RecursionError):
        for s in complete:
            try:
                jsontext.loads(s)
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
