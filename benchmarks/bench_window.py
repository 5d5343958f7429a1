"""The racing window of a guarded destructive command (issue 17, item 1).

A write that lands after guards last looked at a path and before git runs can be
overwritten without a rescue. Without the second look, that window ran from the moment
the snapshot hashed the files to ``exec`` (verification, the ref, the rescue log); with
it, from the start of the last look (a fresh blast radius and a metadata check of every
path rescued) to ``exec``. Both are measured in the same run, on the same command:

- ``hash -> exec without a second look``: from the first snapshot's files hashed to the
  end of the first rescue (where guards used to hand over to git);
- ``last look -> exec``: from the start of the last look (its git status) to the
  hand-over now: the window of a path that became dirty since the first look;
- ``metadata check -> exec``: from the last ``lstat`` pass over the paths in reach to the
  hand-over: the window of a path already judged (rescued, or the caller's own);
- ``whole guard``: the guarded command's own time before git, for scale.

In process (``guard_command``, then ``git reset --hard`` as ``exec`` would run it), with
``--dirty`` files of another session in a repository of ``--files`` files.

Usage: python benchmarks/bench_window.py [--files 20000] [--dirty 1000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import BENCH_ENV, generate_repo, make_alices_work
from guards.predict import blast, cmdline
from guards.protect import decide, guard, receipts, snapshot


class Clock:
    """Moments of one guarded command, taken by wrapping the steps it runs."""

    def __init__(self) -> None:
        self.hashed: list[float] = []
        self.looks: list[float] = []
        self.protects: list[float] = []
        self.checks: list[float] = []

    def install(self) -> None:
        take = snapshot.Capture.take.__func__  # type: ignore[attr-defined]
        radius = blast.blast_radius
        carry_out = decide.carry_out
        check = receipts.unchanged
        clock = self

        def timed_take(cls: Any, repo: Any, paths: Any, on_hashed: Any = None) -> Any:
            def hashed() -> None:
                clock.hashed.append(time.perf_counter())
                if on_hashed is not None:
                    on_hashed()

            return take(cls, repo, paths, on_hashed=hashed)

        def timed_radius(cmd: Any) -> Any:
            clock.looks.append(time.perf_counter())
            return radius(cmd)

        def timed_carry_out(*args: Any, **kw: Any) -> Any:
            try:
                return carry_out(*args, **kw)
            finally:
                clock.protects.append(time.perf_counter())

        def timed_check(*args: Any) -> Any:
            clock.checks.append(time.perf_counter())
            return check(*args)

        receipts.unchanged = timed_check
        snapshot.Capture.take = classmethod(timed_take)  # type: ignore[method-assign,assignment]
        blast.blast_radius = timed_radius
        decide.carry_out = timed_carry_out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=20_000)
    ap.add_argument("--dirty", type=int, default=1_000)
    ap.add_argument("--repeat", type=int, default=5)
    opts = ap.parse_args()
    for key, value in BENCH_ENV.items():
        os.environ[key] = value
    os.environ["GUARDS_SESSION"] = "bob"
    os.environ["GUARDS_QUIET"] = "1"
    with tempfile.TemporaryDirectory() as tmp:
        repo = Path(tmp) / "repo"
        print(f"generating {opts.files} files ...", flush=True)
        names = generate_repo(repo, opts.files)
        chosen = names[:: max(1, len(names) // opts.dirty)][: opts.dirty]
        before, after, checked, whole = [], [], [], []
        for n in range(opts.repeat):
            make_alices_work(repo, chosen, n)
            time.sleep(0.05)  # past the racy window of the metadata check
            clock = Clock()
            clock.install()
            cmd = cmdline.parse(["reset", "--hard"], dict(os.environ), str(repo))
            start = time.perf_counter()
            guard.guard_command(cmd, report=False)
            end = time.perf_counter()
            subprocess.run(["git", "reset", "-q", "--hard"], cwd=repo, check=True)
            _restore(clock)
            before.append(clock.protects[0] - clock.hashed[0])
            after.append(end - clock.looks[-1])
            checked.append(end - clock.checks[-1])
            whole.append(end - start)
        rows = [
            ("hash -> exec without a second look", statistics.median(before)),
            ("last look -> exec (now)", statistics.median(after)),
            ("metadata check -> exec (now)", statistics.median(checked)),
            ("whole guard (before git)", statistics.median(whole)),
        ]
        print(f"\n{opts.files} files, {opts.dirty} foreign dirty, median of {opts.repeat}")
        for name, value in rows:
            print(f"  {name:40s} {value * 1000:8.1f} ms")
        print(f"  window ratio now/before: {rows[1][1] / rows[0][1]:.2f}x")


_ORIGINAL = (snapshot.Capture.take, blast.blast_radius, decide.carry_out, receipts.unchanged)


def _restore(_clock: Clock) -> None:
    (snapshot.Capture.take, blast.blast_radius, decide.carry_out, receipts.unchanged) = _ORIGINAL  # type: ignore[method-assign,assignment]


if __name__ == "__main__":
    main()
