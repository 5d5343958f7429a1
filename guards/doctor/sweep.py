"""The machine-wide sweep behind ``guards doctor --all`` and ``guards reap --all``.

Every repository of the registry (guards.state.repositories) is looked at by a guards
process of its own, started in its main worktree (its git dir when it has none) with
``--json`` and a time bound (``sweep.timeout``): one repository that hangs (a network
filesystem, a huge monorepo) costs its own time bound and never the others'. A
repository whose git dir is gone is dropped from the registry. The sweep runs the
repositories one after another: it is meant for a timer, not for speed.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

from guards.errors import ExitCode
from guards.git import process as git
from guards.git.worktrees import LIST_ARGS, parse_worktree_list
from guards.state.repositories import KnownRepository, drop, known

#: Seconds a process gets between SIGTERM and SIGKILL once its time is up.
GRACE = 2.0


class SweepStatus:
    #: The command ran and answered (its exit status says how it went).
    RAN: Final = "ran"
    #: No answer within the time bound: the process group was stopped.
    TIMEOUT: Final = "timeout"
    #: The repository's git dir is gone: dropped from the registry.
    GONE: Final = "gone"
    #: The command ran but gave no readable answer.
    ERROR: Final = "error"


@dataclass
class Swept:
    """One repository's part of a sweep."""

    git_dir: str
    #: where the command ran (main worktree, else the git dir); None when gone
    path: str | None
    status: str
    exit_code: int
    #: the command's ``--json`` answer
    report: dict[str, Any] | None = None
    #: why, when there is no report (git's or guards' own first line)
    detail: str = ""
    seconds: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return {
            "git_dir": self.git_dir,
            "path": self.path,
            "status": self.status,
            "exit": self.exit_code,
            "seconds": round(self.seconds, 3),
            "detail": self.detail or None,
            "report": self.report,
        }


def sweep(
    argv: list[str], timeout: float, on_each: Callable[[Swept], None] | None = None
) -> list[Swept]:
    """Run ``guards <argv> --json`` in every registered repository, ``on_each`` told of
    each as it finishes; gone repositories are dropped from the registry."""
    results: list[Swept] = []
    gone: list[str] = []
    for entry in known():
        swept = _one(entry, argv, timeout)
        if swept.status == SweepStatus.GONE:
            gone.append(entry.git_dir)
        results.append(swept)
        if on_each is not None:
            on_each(swept)
    drop(gone)
    return results


def worst_exit(results: list[Swept]) -> int:
    """The sweep's exit status: the highest of the repositories' (0 when none)."""
    return max((r.exit_code for r in results), default=ExitCode.OK)


def _one(entry: KnownRepository, argv: list[str], timeout: float) -> Swept:
    if not entry.exists:
        return Swept(entry.git_dir, None, SweepStatus.GONE, ExitCode.OK, detail="git dir gone")
    where = main_worktree(entry.git_dir)
    started = time.monotonic()
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "guards", *argv, "--json"],
            cwd=where,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,  # its git processes are stopped with it
        )
    except OSError as e:
        return Swept(entry.git_dir, where, SweepStatus.ERROR, ExitCode.UNKNOWN_STATE, detail=str(e))
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _stop(proc)
        return Swept(
            entry.git_dir,
            where,
            SweepStatus.TIMEOUT,
            ExitCode.UNKNOWN_STATE,
            detail=f"no answer within {timeout:g} s (sweep.timeout)",
            seconds=time.monotonic() - started,
        )
    seconds = time.monotonic() - started
    first = next(
        (ln.strip() for ln in err.decode("utf-8", "replace").splitlines() if ln.strip()), ""
    )
    try:
        report = json.loads(out)
    except ValueError:
        report = None
    if not isinstance(report, dict):
        code = proc.returncode if proc.returncode > 0 else ExitCode.INTERNAL
        detail = first.removeprefix("guards: ") or f"no answer (exit {proc.returncode})"
        return Swept(entry.git_dir, where, SweepStatus.ERROR, code, detail=detail, seconds=seconds)
    return Swept(
        entry.git_dir,
        where,
        SweepStatus.RAN,
        proc.returncode if proc.returncode >= 0 else ExitCode.INTERNAL,
        report,
        detail=first.removeprefix("guards: "),
        seconds=seconds,
    )


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM the process group, SIGKILL it after :data:`GRACE` seconds."""
    for sig, wait in ((signal.SIGTERM, GRACE), (signal.SIGKILL, None)):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, sig)
        try:
            proc.communicate(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


def main_worktree(git_dir: str) -> str:
    """The repository's main worktree when it has one on disk, else its git dir."""
    res = git.run(list(LIST_ARGS), cwd=git_dir, check=False)
    if res.returncode == 0:
        listed = parse_worktree_list(res.stdout)
        if listed and not listed[0].bare and os.path.isdir(listed[0].path):
            return listed[0].path
    return git_dir
