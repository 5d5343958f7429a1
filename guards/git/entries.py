"""Tree and index entries, and the machine formats git lists them in.

``ls-files -s -z``: ``<mode> SP <oid> SP <stage> TAB <path> NUL``.
``ls-tree -r -z``: ``<mode> SP <type> SP <oid> TAB <path> NUL``.
``diff-index``/``diff-tree --raw -z --no-renames``: ``:<old mode> SP <new mode> SP <old
oid> SP <new oid> SP <status> NUL <path> NUL`` (mode ``000000`` for an absent side).
``update-index -z --index-info``: ``<mode> SP <oid> TAB <path> NUL`` (mode 0 removes
every stage of the path).
"""

from __future__ import annotations

import os

from guards.git import process as git
from guards.git.objects import ZERO_MODE, zero_oid
from guards.values import Value

TYPE_CHECKING = False  # see guards.values: these imports cost start-up time
if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

    from guards.git.refs import Runner


class Entry(Value):
    """A tree or index entry: mode (octal text, as git prints it) and object id."""

    __slots__ = ("mode", "oid")

    def __init__(self, mode: str, oid: str) -> None:
        self.mode = mode
        self.oid = oid


#: A path's state in a tree or index: an entry, or None when the path is absent.
State = Entry | None


class Change(Value):
    """A path's change between two trees (or a tree and the index)."""

    __slots__ = ("new", "old", "status")

    def __init__(self, old: State, new: State, status: str) -> None:
        self.old = old
        self.new = new
        self.status = status


class IndexEntry(Value):
    """One record of ``ls-files -s``: a path at a stage (0, or 1-3 in a conflict)."""

    __slots__ = ("entry", "path", "stage")

    def __init__(self, path: str, entry: Entry, stage: int) -> None:
        self.path = path
        self.entry = entry
        self.stage = stage


def index_entries(data: bytes) -> Iterator[IndexEntry]:
    """``ls-files -s -z`` output, record by record."""
    for rec in git.zsplit(data):
        meta, _, raw = rec.partition(b"\t")
        mode, oid, stage = meta.decode("ascii").split(" ")
        yield IndexEntry(os.fsdecode(raw), Entry(mode, oid), int(stage))


#: Paths named on one ``ls-files`` command line (a long list goes in several calls).
PATHS_PER_CALL = 500


def index_entries_of(run: Runner, paths: Sequence[str] | None) -> Iterator[IndexEntry]:
    """The index's records (every stage) of ``paths``, each taken literally (a file, or
    a directory and everything under it); None: the whole index. Asked in chunks of
    :data:`PATHS_PER_CALL` paths."""
    query = ["--literal-pathspecs", "ls-files", "-s", "-z"]
    if paths is None:
        yield from index_entries(run(query).stdout)
        return
    for start in range(0, len(paths), PATHS_PER_CALL):
        chunk = paths[start : start + PATHS_PER_CALL]
        yield from index_entries(run([*query, "--", *chunk]).stdout)


def tree_listing(data: bytes) -> Iterator[tuple[str, Entry]]:
    """``ls-tree -r -z`` output: (path, entry) for each record."""
    for rec in git.zsplit(data):
        meta, _, raw = rec.partition(b"\t")
        mode, _kind, oid = meta.decode("ascii").split(" ")
        yield os.fsdecode(raw), Entry(mode, oid)


def parse_raw_diff(data: bytes) -> dict[str, Change]:
    """``diff-index``/``diff-tree -r -z --no-renames --raw`` output: path -> change."""
    out: dict[str, Change] = {}
    records = git.zsplit(data)
    for meta, raw in zip(records[::2], records[1::2], strict=False):
        old_mode, new_mode, old_oid, new_oid, status = (
            meta.decode("ascii").lstrip(":").split(" ")[:5]
        )
        out[os.fsdecode(raw)] = Change(
            _state(old_mode, old_oid), _state(new_mode, new_oid), status[:1]
        )
    return out


def _state(mode: str, oid: str) -> State:
    return None if mode == ZERO_MODE else Entry(mode, oid)


def index_info_line(path: str, state: State, object_format: str) -> bytes:
    """One ``update-index -z --index-info`` record (mode 0 removes every stage)."""
    if state is None:
        return b"0 %s\t%s\0" % (zero_oid(object_format).encode(), os.fsencode(path))
    return b"%s %s\t%s\0" % (state.mode.encode(), state.oid.encode(), os.fsencode(path))
