"""Interception costs, side by side in one run (issue 9, item 10).

(a) shim passthrough (`git rev-parse HEAD`, `git status`) against plain git and against
    the physical limit of any shim: a minimal sh script that only execs git.
    Target: <= 1.1x the minimal script.
(b) guarded `reset --hard` with nothing at risk (through the shim, as it usually
    arrives; `python -m guards run` is shown too) against interpreter start-up + one
    `git status --porcelain=v2 -z` + plain `reset --hard`. Target: <= 1.5x.
    Start-up-bound: run it with a clean install's interpreter (see README.md).
(c) guarded `reset --hard` with 1,000 foreign dirty files in a 100,000-file repository
    against status + private-index snapshot + plain reset. Target: <= 1.3x.

Usage: python benchmarks/bench_guard.py [--files 100000] [--dirty 1000] [--repeat 9]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import (
    env,
    generate_repo,
    guards_cmd,
    make_alices_work,
    report,
    run_cmd,
    timeit,
    timeit_in_rotation,
)
from guards.integrations.installation import SHIM_MARKER_FILE, shim_text

GIT = shutil.which("git") or "git"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=100_000)
    ap.add_argument("--dirty", type=int, default=1_000)
    ap.add_argument("--repeat", type=int, default=9)
    opts = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        shim_dir, minimal_dir = _shims(root)
        small = root / "small"
        generate_repo(small, 200)
        passthrough(small, shim_dir, minimal_dir, opts.repeat * 3)
        nothing_at_risk(small, shim_dir, opts.repeat * 2)
        print(f"\ngenerating {opts.files} files ...", flush=True)
        big = root / "big"
        names = generate_repo(big, opts.files)
        foreign_at_risk(big, names, opts.dirty, opts.repeat)


def _shims(root: Path) -> tuple[Path, Path]:
    shim_dir = root / "shim"
    shim_dir.mkdir()
    (shim_dir / "git").write_text(shim_text(shim_dir))
    (shim_dir / "git").chmod(0o755)
    (shim_dir / SHIM_MARKER_FILE).write_text("")
    minimal_dir = root / "minimal"
    minimal_dir.mkdir()
    (minimal_dir / "git").write_text(f'#!/bin/sh\nexec {GIT} "$@"\n')
    (minimal_dir / "git").chmod(0o755)
    return shim_dir, minimal_dir


def passthrough(repo: Path, shim_dir: Path, minimal_dir: Path, repeat: int) -> None:
    for args in (["rev-parse", "HEAD"], ["status"]):
        plain = timeit(run_cmd([GIT, *args], repo), repeat)
        minimal = timeit(run_cmd([str(minimal_dir / "git"), *args], repo), repeat)
        path = f"{shim_dir}{os.pathsep}{os.environ['PATH']}"
        shim = timeit(run_cmd(["git", *args], repo, {"PATH": path}), repeat)
        name = "git " + " ".join(args)
        report(
            f"(a) shim passthrough: {name}",
            [
                ("plain git", plain),
                ("minimal exec-only sh script", minimal),
                ("guards shim", shim),
            ],
        )
        print(f"  shim / minimal script = {shim / minimal:.2f}x  (target <= 1.10)")
        print(f"  shim / plain git      = {shim / plain:.2f}x")


def nothing_at_risk(repo: Path, shim_dir: Path, repeat: int) -> None:
    startup = timeit(run_cmd([sys.executable, "-c", "pass"], repo), repeat)
    status = timeit(
        run_cmd([GIT, "--no-optional-locks", "status", "--porcelain=v2", "-z"], repo), repeat
    )
    reset = timeit(run_cmd([GIT, "reset", "-q", "--hard"], repo), repeat)
    path = f"{shim_dir}{os.pathsep}{os.environ['PATH']}"
    # The way a guarded command usually arrives: `git reset --hard` with the shim first on
    # PATH (the shim starts guards with `python -c`). The `git safe-*` aliases and a typed
    # `guards run` go through `python -m guards`, which also loads runpy.
    shimmed = timeit(run_cmd(["git", "reset", "-q", "--hard"], repo, {"PATH": path}), repeat)
    guarded = timeit(run_cmd(guards_cmd("run", "--", "reset", "-q", "--hard"), repo), repeat)
    baseline = startup + status + reset
    report(
        "(b) reset --hard, nothing at risk",
        [
            ("python start-up", startup),
            ("git status --porcelain=v2 -z", status),
            ("git reset --hard", reset),
            ("git reset --hard through the shim", shimmed),
            ("python -m guards run -- reset --hard", guarded),
        ],
    )
    print(f"  shim / (start-up + status + reset) = {shimmed / baseline:.2f}x  (target <= 1.5)")
    print(f"  python -m guards run / (start-up + status + reset) = {guarded / baseline:.2f}x")


def foreign_at_risk(repo: Path, names: list[str], dirty: int, repeat: int) -> None:
    chosen = names[:: max(1, len(names) // dirty)][:dirty]
    counter = [0]

    def make_foreign_work() -> None:
        counter[0] += 1
        make_alices_work(repo, chosen, counter[0])

    def plumbing() -> None:
        e = env()
        run = lambda *a, **kw: subprocess.run(  # noqa: E731
            [GIT, *a], cwd=repo, check=True, capture_output=True, **kw
        )
        subprocess.run(
            [GIT, "--no-optional-locks", "status", "--porcelain=v2", "-z"],
            cwd=repo,
            env=e,
            check=True,
            capture_output=True,
        )
        private = repo / ".git" / "bench-index"
        shutil.copy2(repo / ".git" / "index", private)
        pe = {**e, "GIT_INDEX_FILE": str(private)}
        subprocess.run([GIT, "add", "-A"], cwd=repo, env=pe, check=True, capture_output=True)
        tree = (
            subprocess.run([GIT, "write-tree"], cwd=repo, env=pe, check=True, capture_output=True)
            .stdout.decode()
            .strip()
        )
        commit = (
            subprocess.run(
                [GIT, "commit-tree", tree, "-p", "HEAD", "-m", "snap"],
                cwd=repo,
                env=e,
                check=True,
                capture_output=True,
            )
            .stdout.decode()
            .strip()
        )
        run("update-ref", f"refs/bench/{counter[0]}-{time.monotonic_ns()}", commit, "", env=e)
        run("reset", "-q", "--hard", env=e)

    guarded_run = run_cmd(
        guards_cmd("run", "--", "reset", "-q", "--hard"),
        repo,
        {"GUARDS_SESSION": "bob", "GUARDS_QUIET": "1"},
    )
    # In turn: each run leaves objects behind (loose for the plumbing, packed for guards),
    # which then weigh on the runs after it, whichever contender they are.
    times = timeit_in_rotation(
        {"plumbing": plumbing, "guarded": guarded_run}, repeat, setup=make_foreign_work
    )
    baseline, guarded = times["plumbing"], times["guarded"]
    report(
        f"(c) reset --hard with {len(chosen)} foreign dirty files in {len(names)} files",
        [
            ("status + private-index snapshot + reset", baseline),
            ("guards run -- reset --hard", guarded),
        ],
    )
    print(f"  guarded / plumbing baseline = {guarded / baseline:.2f}x  (target <= 1.3)")


if __name__ == "__main__":
    main()
