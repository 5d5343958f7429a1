"""Reading refs: ``git for-each-ref`` with NUL-separated fields, parsed in one place."""

from __future__ import annotations

import os

TYPE_CHECKING = False  # see guards.values: these imports cost start-up time
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from guards.git import Result

    #: How a question reaches git: a repository's ``run`` (argv, ...) -> result.
    Runner = Callable[..., Result]


def for_each_ref(
    run: Runner,
    fields: Sequence[str],
    patterns: Sequence[str],
    *,
    count: int | None = None,
    check: bool = True,
) -> list[tuple[str, ...]]:
    """One row per ref matching ``patterns`` (git's: a prefix, or globs), its ``fields``
    (for-each-ref's field names: ``refname``, ``objectname``, ``creatordate:unix``, ...)
    in order. Fields are NUL-separated (no field holds a NUL, and a ref name no
    newline); names are decoded as the file system's. ``check=False``: a failed git
    gives the rows it printed (none, as a rule)."""
    args = ["for-each-ref", "--format=" + "%00".join(f"%({f})" for f in fields)]
    if count is not None:
        args.append(f"--count={count}")
    args.extend(patterns)
    out = (run(args) if check else run(args, check=False)).stdout
    rows = []
    for line in out.split(b"\n"):
        parts = line.split(b"\0")
        if line and len(parts) == len(fields):
            rows.append(tuple(os.fsdecode(p) for p in parts))
    return rows
