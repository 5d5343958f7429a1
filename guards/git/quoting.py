"""git's C-style path quoting, and the one human-oriented output guards has to read.

git quotes a path that holds control characters, a double quote, a backslash or (with
``core.quotePath``, the default) bytes over 0x7f: ``"a\\tb\\303\\251"``. Machine formats
(``-z``) never quote; ``git clean -n`` has no ``-z``, so its lines are read here.
"""

from __future__ import annotations

import os

#: git's one-letter escapes (quote.c: ``sq_lookup``), as byte values.
_ESCAPES = {
    ord("a"): 7,
    ord("b"): 8,
    ord("t"): 9,
    ord("n"): 10,
    ord("v"): 11,
    ord("f"): 12,
    ord("r"): 13,
    ord('"'): 34,
    ord("\\"): 92,
}


def c_unquote(data: bytes) -> bytes:
    """Undo git's C-style quoting of a path; an unquoted path is returned as it is."""
    if not (len(data) >= 2 and data.startswith(b'"') and data.endswith(b'"')):
        return data
    body = data[1:-1]
    out = bytearray()
    i = 0
    while i < len(body):
        c = body[i]
        if c == 0x5C and i + 1 < len(body):
            n = body[i + 1]
            if n in _ESCAPES:
                out.append(_ESCAPES[n])
                i += 2
                continue
            if 0x30 <= n <= 0x37 and i + 3 < len(body):
                out.append(int(body[i + 1 : i + 4], 8))
                i += 4
                continue
        out.append(c)
        i += 1
    return bytes(out)


def unquote_path(text: str) -> str:
    """:func:`c_unquote` for a path held as text (e.g. a commit trailer written with
    :func:`guards.output.show_path`)."""
    return os.fsdecode(c_unquote(text.encode("utf-8", "surrogateescape")))


_WOULD_REMOVE = b"Would remove "
_WOULD_SKIP = b"Would skip repository "


def parse_clean_output(data: bytes) -> tuple[list[str], list[str]]:
    """(removed, skipped) paths from ``git clean -n``: the prefix is stripped once, never
    a space more; a trailing ``/`` (a whole directory) is kept."""
    removed: list[str] = []
    skipped: list[str] = []
    for line in data.split(b"\n"):
        if line.startswith(_WOULD_REMOVE):
            removed.append(os.fsdecode(c_unquote(line[len(_WOULD_REMOVE) :])))
        elif line.startswith(_WOULD_SKIP):
            skipped.append(os.fsdecode(c_unquote(line[len(_WOULD_SKIP) :])))
    return removed, skipped
