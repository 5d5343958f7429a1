"""How guards talks: one-line messages, aligned tables, ages, safely shown paths."""

from __future__ import annotations

import os
import sys
import time

TYPE_CHECKING = False  # see guards.values: these imports cost start-up time
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any, TextIO

JSON_SCHEMA_VERSION = 1


def use_color(stream: TextIO) -> bool:
    return "NO_COLOR" not in os.environ and stream.isatty() and os.environ.get("TERM") != "dumb"


def paint(text: str, code: str, stream: TextIO = sys.stdout) -> str:
    return f"\033[{code}m{text}\033[0m" if use_color(stream) else text


def error(message: str) -> None:
    _stderr(f"guards: {message}")


def warn(message: str) -> None:
    _stderr(f"guards: warning: {message}")


#: Lines on their way to stderr while :class:`Held` holds them (None: not holding).
_held: list[str] | None = None


class Held:
    """Within it, guards' lines for stderr wait, and are written when it ends (also on
    the way out of an error). The guard holds its notices until its last look: stderr
    may be a file in the command's reach (``git clean -f 2>errs``), and a notice written
    into it meanwhile would change it under the next look, again and again. A line held
    twice is written once: a path the next look judges again is told about again (a FIFO
    left out of the rescue)."""

    __slots__ = ("_outer",)

    def __enter__(self) -> Held:
        global _held
        self._outer = _held is not None
        if not self._outer:
            _held = []
        return self

    def __exit__(self, *exc: object) -> None:
        global _held
        if self._outer or _held is None:
            return
        lines, _held = _held, None
        for line in dict.fromkeys(lines):
            _stderr(line)


def _stderr(line: str) -> None:
    if _held is not None:
        _held.append(line)
        return
    print(line, file=sys.stderr, flush=True)


_ESCAPES = {"\n": "\\n", "\t": "\\t", "\r": "\\r", '"': '\\"', "\\": "\\\\"}


def show_path(path: str) -> str:
    """A path as one safe terminal token: quoted C-style like git when it holds control
    characters, quotes, backslashes or bytes that are not UTF-8 (readable UTF-8 stays as
    it is, as with git's ``core.quotePath=false``)."""
    raw = os.fsencode(path)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        text = None
    if text is not None and text.isprintable() and '"' not in text and "\\" not in text:
        return path
    out = []
    for ch in text if text is not None else raw.decode("latin-1"):
        if ch in _ESCAPES:
            out.append(_ESCAPES[ch])
        elif text is None and ord(ch) >= 0x80:
            out.append(f"\\{ord(ch):03o}")  # a byte that is not UTF-8
        elif not ch.isprintable():
            # control characters and invisible ones (e.g. U+202E) that could fool a reader
            out.append("".join(f"\\{b:03o}" for b in ch.encode("utf-8")))
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


#: How many names a one-line message shows before "and N more": a guarded command's
#: message, printed beside git's own output, names few.
SHOWN = 3
#: ... and a report (doctor, land), which is read on its own.
SHOWN_IN_REPORTS = 5


def listing(items: Sequence[str], limit: int = SHOWN) -> str:
    """``"a, b, c and 4 more"``: the first ``limit`` items, then how many were left out."""
    shown = ", ".join(items[:limit])
    return shown + (f" and {len(items) - limit} more" if len(items) > limit else "")


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


def page(text: str) -> None:
    """Print ``text``; on a terminal, through a pager when it is longer than the screen
    (as git does: ``$GUARDS_PAGER``, else ``$PAGER``, else ``less``, with ``LESS=FRX``
    unless set). A pager that cannot start leaves the text printed plainly."""
    lines = text.count("\n") + 1
    if not sys.stdout.isatty() or lines < _screen_rows():
        print(text)
        return
    import shlex
    import subprocess

    command = os.environ.get("GUARDS_PAGER") or os.environ.get("PAGER") or "less"
    if command in ("", "cat"):
        print(text)
        return
    env = {**os.environ, "LESS": os.environ.get("LESS", "FRX")}
    sys.stdout.flush()
    try:
        subprocess.run(shlex.split(command), input=(text + "\n").encode(), env=env, check=False)
    except (OSError, ValueError):
        print(text)


def _screen_rows() -> int:
    try:
        return os.get_terminal_size(sys.stdout.fileno()).lines
    except (OSError, ValueError):
        return 24


def dump_json(doc: dict[str, Any], stream: TextIO = sys.stdout) -> None:
    """JSON with ``schema`` first; non-UTF-8 name bytes travel as ``\\udcXX`` escapes."""
    import json  # lazily: most commands print text, and the frame's start-up counts

    stream.write(json.dumps({"schema": JSON_SCHEMA_VERSION, **doc}, indent=2) + "\n")


def stderr_line(line: str) -> None:
    """A line on stderr exactly as given (the rescue report formats its own prefix)."""
    _stderr(line)


class Progress:
    """How far a long operation got, on stderr, the way git shows it:
    ``Rescuing: 45% (4500/10000)`` rewritten in place with ``\\r``, then ``, done.``.

    Shown only when stderr is a terminal, never when ``quiet``, and only once the
    operation has run for :attr:`delay` seconds (counted from ``started``; the setting
    ``progress.delay``): a fast one prints nothing at all. Redrawn when the percentage
    changes, at most every 50 ms.
    """

    __slots__ = ("count", "delay", "enabled", "last", "shown", "started", "stream", "title",
                 "total")  # fmt: skip

    def __init__(
        self,
        title: str,
        total: int,
        *,
        quiet: bool = False,
        delay: float = 1.0,
        started: float | None = None,
        stream: TextIO | None = None,
    ) -> None:
        self.stream = sys.stderr if stream is None else stream
        self.title = title
        self.total = total
        self.count = 0
        self.delay = delay
        self.started = time.monotonic() if started is None else started
        self.shown = -1.0  # when last drawn
        self.last = -1  # the percentage last drawn
        try:
            tty = self.stream.isatty()
        except (AttributeError, ValueError):
            tty = False
        self.enabled = tty and not quiet and total > 0

    def tick(self, n: int = 1) -> None:
        self.count += n
        if not self.enabled:
            return
        now = time.monotonic()
        if now - self.started < self.delay:
            return
        percent = min(100, self.count * 100 // self.total)
        if percent != self.last and now - self.shown >= 0.05:
            self._draw(percent, "")
            self.shown = now

    def done(self) -> None:
        """The final line (only if anything was shown)."""
        if self.enabled and self.last >= 0:
            self._draw(min(100, self.count * 100 // self.total), ", done.\n")

    def _draw(self, percent: int, end: str) -> None:
        self.last = percent
        try:
            self.stream.write(f"\r{self.title}: {percent:3d}% ({self.count}/{self.total}){end}")
            self.stream.flush()
        except (OSError, ValueError):
            self.enabled = False  # a closed terminal never fails the operation
