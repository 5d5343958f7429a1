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
    ``{path: attribution}`` written as ``{``, one ``"path":attribution`` line per path
    sorted by the JSON-encoded path, ``}``, so that a reader finds a path by bisecting
    the bytes without decoding the others). An attribution is stored packed, ``"session|recorded|
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
records with one ``write()`` and, for records a crash must not lose, flushes them
(``fdatasync``) before saying it is done (:meth:`Ledger.append` says which are not).
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

from guards.state.ledger.files import encode_snapshot
from guards.state.ledger.records import (
    COMPACT_BYTES,
    COMPACT_ENV,
    CORRUPT_SUFFIX,
    JOURNAL_FILE,
    LEDGER_FILE,
    LOCK_FILE,
    SCHEMA,
    Attributions,
    LedgerData,
    LedgerFormatError,
    LedgerUnreadableError,
    op_attribute,
    op_claim,
    op_drop_rescue,
    op_end,
    op_forget_paths,
    op_forget_worktree,
    op_release,
    op_rescue,
    op_start,
    op_touch,
    op_worktree,
    pack,
    recorded_at,
    unpack,
)
from guards.state.ledger.store import Ledger

__all__ = [
    "COMPACT_BYTES",
    "COMPACT_ENV",
    "CORRUPT_SUFFIX",
    "JOURNAL_FILE",
    "LEDGER_FILE",
    "LOCK_FILE",
    "SCHEMA",
    "Attributions",
    "Ledger",
    "LedgerData",
    "LedgerFormatError",
    "LedgerUnreadableError",
    "encode_snapshot",
    "op_attribute",
    "op_claim",
    "op_drop_rescue",
    "op_end",
    "op_forget_paths",
    "op_forget_worktree",
    "op_release",
    "op_rescue",
    "op_start",
    "op_touch",
    "op_worktree",
    "pack",
    "recorded_at",
    "unpack",
]
