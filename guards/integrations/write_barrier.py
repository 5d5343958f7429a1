"""A write tool's call in the barrier (guards.state.barrier) of each checkout it touches.

Before the write runs, the agent hook announces it in every checkout its files are in,
once any destructive command running there has finished (bounded); after the write was
recorded, or when it will not happen, the announcement is taken back. A call is named
by the harness's tool-use id, else (Gemini CLI: no id) by a digest of its files.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # see guards.values: typing stays out of the hot path
if TYPE_CHECKING:
    from typing import Any


def write_wait() -> float:
    from guards.state.barrier import write_wait

    return write_wait()


def write_key(event: dict[str, Any], files: list[str]) -> str:
    """What names this tool call in the barrier: its id, else (Gemini) its files."""
    use_id = event.get("tool_use_id")
    if isinstance(use_id, str) and use_id:
        return use_id
    import hashlib

    text = "\0".join(sorted(os.path.abspath(f) for f in files))
    return "files-" + hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()[:24]


def barriers(files: list[str]) -> dict[str, str]:
    """work tree -> ledger directory, for the checkouts ``files`` are in."""
    from guards.state.barrier import locate

    found: dict[str, str] = {}
    for path in files:
        where = locate(os.path.dirname(os.path.abspath(path)))
        if where is not None:
            found.setdefault(where[0], where[1])
    return found


def enter_writes(event: dict[str, Any], sid: str | None, files: list[str]) -> list[str]:
    """Announce the write in each checkout it touches, after any destructive command
    running there finished (bounded); returns those still running (nothing announced)."""
    from guards.state import barrier

    key = write_key(event, files)
    entered: list[tuple[str, str]] = []
    for worktree, ledger_dir in barriers(files).items():
        running = barrier.enter_write(ledger_dir, worktree, sid or "unidentified", key)
        if running:
            for done_ledger, _ in entered:
                barrier.withdraw_write(done_ledger, sid or "unidentified", key)
            return running
        entered.append((ledger_dir, worktree))
    return []


def leave_writes(event: dict[str, Any], sid: str | None, files: list[str]) -> None:
    """The write is over (recorded) or will not happen: destroyers need not wait."""
    from guards.state import barrier

    key = write_key(event, files)
    for ledger_dir in barriers(files).values():
        barrier.withdraw_write(ledger_dir, sid or "unidentified", key)
