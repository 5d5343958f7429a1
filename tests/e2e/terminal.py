"""A CLI's interactive UI on a pseudo-terminal, driven as a user would: read what it
shows, type, press Enter, quit with Ctrl+C.

The terminal is 120 columns by 40 rows (a terminal with no size makes a TUI draw one
character per line). What it showed is kept with its escape sequences stripped, so that
a test waits for words, not for drawing.
"""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import signal
import struct
import subprocess
import termios
import time
from collections.abc import Callable
from pathlib import Path

COLUMNS, ROWS = 120, 40
#: CSI and OSC sequences, and the two-byte escapes (charset selection, keypad modes).
_ESCAPES = re.compile(
    rb"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[()][0-9A-Za-z]|\x1b."
)
CTRL_C = b"\x03"
#: Variables by which a CLI tells it runs under CI (the `is-ci` convention): a person's
#: terminal has none, and Factory Droid 0.225's interactive UI draws nothing with CI=true
#: (as `.ci/run` runs the suite).
CI_VARIABLES = ("CI", "CONTINUOUS_INTEGRATION", "BUILD_NUMBER", "RUN_ID", "GITHUB_ACTIONS")


class Terminal:
    """``args`` running on a pseudo-terminal in a process group of its own."""

    def __init__(self, args: list[str], cwd: Path, env: dict[str, str]) -> None:
        leader, follower = pty.openpty()
        fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLUMNS, 0, 0))
        self._leader = leader
        self._raw = b""
        self._closed = False
        self.proc = subprocess.Popen(
            args,
            cwd=cwd,
            env={
                **{k: v for k, v in env.items() if k not in CI_VARIABLES},
                "TERM": "xterm-256color",
            },
            stdin=follower,
            stdout=follower,
            stderr=follower,
            start_new_session=True,
        )
        os.close(follower)

    def __enter__(self) -> Terminal:
        return self

    def __exit__(self, *exc: object) -> None:
        self.quit()

    @property
    def shown(self) -> str:
        """Everything the terminal showed so far, escape sequences stripped."""
        return _ESCAPES.sub(b"", self._raw).decode("utf-8", "replace")

    def _read(self, seconds: float) -> None:
        ready, _, _ = select.select([self._leader], [], [], seconds)
        if ready:
            try:
                self._raw += os.read(self._leader, 1 << 16)
            except OSError:  # EIO: the program closed the terminal
                time.sleep(seconds)

    def wait_for(self, *texts: str, timeout: float = 60) -> str:
        """Until the terminal shows one of ``texts``, whitespace aside (a TUI may draw a
        space as a cursor move); returns the first one shown."""
        deadline = time.monotonic() + timeout
        while True:
            shown = "".join(self.shown.split())
            for text in texts:
                if "".join(text.split()) in shown:
                    return text
            if time.monotonic() > deadline or self.proc.poll() is not None:
                tail = self.shown[-1500:]
                raise AssertionError(f"the terminal never showed {texts!r}; it ends:\n{tail}")
            self._read(0.2)

    def wait_until(self, done: Callable[[], bool], what: str, timeout: float = 60) -> None:
        """Until ``done()`` (e.g. the fake model answered a step), reading meanwhile: for
        a UI whose animation draws into the words it shows."""
        deadline = time.monotonic() + timeout
        while not done():
            if time.monotonic() > deadline or self.proc.poll() is not None:
                raise AssertionError(f"never {what}; the terminal ends:\n{self.shown[-1500:]}")
            self._read(0.2)

    def settle(self, seconds: float = 1.5) -> None:
        """Keep reading for ``seconds`` (the UI finishing a turn: its hooks, its redraw)."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            self._read(0.1)

    def press(self, keys: bytes) -> None:
        os.write(self._leader, keys)

    def type(self, line: str) -> None:
        """Type ``line``, then Enter (apart: a UI may take a fast paste for one chunk)."""
        self.press(line.encode())
        self.settle(0.5)
        self.press(b"\r")

    def quit(self, timeout: float = 15) -> int:
        """Ctrl+C twice (the usual way out of a TUI), then the process group is killed
        if it is still there after ``timeout`` seconds; returns the exit status."""
        if self._closed:
            return self.proc.returncode
        for _ in range(2):
            if self.proc.poll() is None:
                try:
                    self.press(CTRL_C)
                except OSError:
                    break
                self.settle(0.3)  # the second press must come soon after the first
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        os.close(self._leader)
        self._closed = True
        return self.proc.returncode
