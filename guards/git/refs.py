"""Reading refs: ``git for-each-ref`` with NUL-separated fields, parsed in one place."""

from __future__ import annotations

import os

TYPE_CHECKING = False  # see guards.values: these imports cost start-up time
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from guards.git.process import Result

    #: How a question reaches git: a repository's ``run`` (argv, ...) -> result.
    Runner = Callable[..., Result]


def for_each_ref(
    run: Runner,
    fields: Sequence[str],
    patterns: Sequence[str],
    *,
    count: int | None = None,
    contains: str | None = None,
    no_merged: Sequence[str] = (),
    check: bool = True,
) -> list[tuple[str, ...]]:
    """One row per ref matching ``patterns`` (git's: a prefix, or globs; none: every
    ref), its ``fields`` (for-each-ref's field names: ``refname``, ``objectname``,
    ``creatordate:unix``, ``contents``, ...) in order. Only refs whose commit
    ``contains`` a commit, or is merged into none of ``no_merged``, when given. Each
    field ends with a NUL (no field holds one; a message may span lines), so a record
    ends with NUL and git's newline; names are decoded as the file system's.
    ``check=False``: a failed git gives the rows it printed (none, as a rule)."""
    args = ["for-each-ref", "--format=" + "".join(f"%({f})%00" for f in fields)]
    if count is not None:
        args.append(f"--count={count}")
    if contains is not None:
        args.append(f"--contains={contains}")
    args.extend(f"--no-merged={commit}" for commit in no_merged)
    args.extend(patterns)
    out = (run(args) if check else run(args, check=False)).stdout
    rows = []
    for record in out.split(b"\0\n")[:-1]:
        parts = record.split(b"\0")
        if len(parts) == len(fields):
            rows.append(tuple(os.fsdecode(p) for p in parts))
    return rows
