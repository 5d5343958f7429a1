"""How guards talks: one-line messages, aligned tables, ages, safely shown paths."""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Sequence
from typing import Any, TextIO

JSON_SCHEMA_VERSION = 1


def use_color(stream: TextIO) -> bool:
    return "NO_COLOR" not in os.environ and stream.isatty() and os.environ.get("TERM") != "dumb"


def paint(text: str, code: str, stream: TextIO = sys.stdout) -> str:
    return f"\033[{code}m{text}\033[0m" if use_color(stream) else text


def error(message: str) -> None:
    print(f"guards: {message}", file=sys.stderr)


def warn(message: str) -> None:
    print(f"guards: warning: {message}", file=sys.stderr)


_ESCAPES = {"\n": "\\n", "\t": "\\t", "\r": "\\r", '"': '\\"', "\\": "\\\\"}


def show_path(path: str) -> str:
    """A path as one safe terminal token, quoted C-style like git does when needed."""
    raw = os.fsencode(path)
    needs_quotes = (
        any(b < 0x20 or b == 0x7F or b >= 0x80 for b in raw) or '"' in path or "\\" in path
    )
    if not needs_quotes:
        return path
    try:
        raw.decode("utf-8")
        printable_utf8 = True
    except UnicodeDecodeError:
        printable_utf8 = False
    out = []
    for ch in os.fsdecode(raw) if printable_utf8 else raw.decode("latin-1"):
        if ch in _ESCAPES:
            out.append(_ESCAPES[ch])
        elif ord(ch) < 0x20 or ord(ch) == 0x7F or (not printable_utf8 and ord(ch) >= 0x80):
            out.append(f"\\{ord(ch):03o}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def age(since: float | None, now: float | None = None) -> str:
    """``"2 min ago"``, ``"3 weeks ago"``; ``"-"`` when unknown."""
    if since is None:
        return "-"
    seconds = max(0.0, (time.time() if now is None else now) - since)
    for limit, unit, size in (
        (60, "s", 1),
        (3600, "min", 60),
        (86400, "h", 3600),
        (14 * 86400, "days", 86400),
        (60 * 86400, "weeks", 7 * 86400),
    ):
        if seconds < limit:
            return f"{int(seconds // size)} {unit} ago"
    return f"{int(seconds // (30 * 86400))} months ago"


def iso(ts: float | None) -> str | None:
    if ts is None:
        return None
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ts))


def table(rows: Sequence[Sequence[str]], header: Sequence[str] | None = None) -> str:
    """Left-aligned columns; the last column is never padded (paths may be long)."""
    all_rows = [list(header)] + [list(r) for r in rows] if header else [list(r) for r in rows]
    if not all_rows:
        return ""
    widths = [max(len(r[i]) for r in all_rows) for i in range(len(all_rows[0]) - 1)]
    lines = []
    for r in all_rows:
        cells = [c.ljust(w) for c, w in zip(r, widths, strict=False)] + [r[-1]]
        lines.append("  ".join(cells).rstrip())
    return "\n".join(lines)


def dump_json(doc: dict[str, Any], stream: TextIO = sys.stdout) -> None:
    """JSON with ``schema`` first; non-UTF-8 name bytes travel as ``\\udcXX`` escapes."""
    stream.write(json.dumps({"schema": JSON_SCHEMA_VERSION, **doc}, indent=2) + "\n")


def stderr_line(line: str) -> None:
    """A line on stderr exactly as given (the rescue report formats its own prefix)."""
    print(line, file=sys.stderr, flush=True)
