"""How much a post-* hook (ledger sync) costs on a big checkout, against `git status`.

    python benchmarks/bench_hooks.py [--files 50000] [--modified 1000] [--untracked 200]
                                     [--attributed 300] [--repeat 7]

Builds a throw-away repository with ``--files`` tracked files, modifies some, adds
untracked ones, attributes ``--attributed`` paths to a session (a third of them clean
again, so a sync has something to release), installs the native hooks and times,
medians of ``--repeat`` runs in this one process run:

- ``git status --porcelain=v2 -z`` with the flags guards uses (the best plain-git way
  to learn what is dirty, and the floor for any sync);
- the native post-commit hook (``sh`` + Python + guards) with nothing to release,
  with releases (the ledger restored before each run), and with no attribution at
  all (the fast path: no git call);
- ``python -c pass`` for scale.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import env, generate_repo
from guards.git.process import status_args

STATUS = ["git", "--no-optional-locks", *status_args()]


def build_repo(root: Path, files: int, modified: int, untracked: int) -> Path:
    repo = root / "repo"
    names = generate_repo(repo, files, per_dir=100)
    for name in names[:modified]:
        (repo / name).write_text(f"{name} modified\n")
    for i in range(untracked):
        (repo / f"new{i:05}.txt").write_text("new\n")
    subprocess.run(STATUS, cwd=repo, env=env(), check=True, capture_output=True)  # warm
    return repo


def attribute(repo: Path, count: int, modified: int) -> None:
    """Attribute ``count`` paths: two thirds still dirty, one third clean (to release)."""
    from guards.state.workspace import Workspace, record_paths

    dirty = [f"d{i // 100:04d}/f{i:06d}.txt" for i in range(min(modified, count * 2 // 3))]
    clean = [f"d{i // 100:04d}/f{i:06d}.txt" for i in range(modified, modified + count // 3)]
    record_paths(Workspace.open(repo), "bench-session", dirty + clean)


def round_robin(
    variants: dict[str, tuple[Callable[[], object], Callable[[], object]]], repeat: int
) -> dict[str, float]:
    """Median seconds of each variant, run in turns so that machine noise hits all alike.

    Each variant is ``(prepare, timed)``: ``prepare`` runs untimed before each ``timed``.
    """
    times: dict[str, list[float]] = {name: [] for name in variants}
    for _ in range(repeat):
        for name, (prepare, timed) in variants.items():
            prepare()
            start = time.perf_counter()
            timed()
            times[name].append(time.perf_counter() - start)
    return {name: statistics.median(values) for name, values in times.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=50_000)
    parser.add_argument("--modified", type=int, default=1000)
    parser.add_argument("--untracked", type=int, default=200)
    parser.add_argument("--attributed", type=int, default=300)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    if min(args.files, args.repeat) < 1 or args.modified > args.files:
        parser.error("--files and --repeat must be >= 1 and --modified <= --files")

    root = Path(tempfile.mkdtemp(prefix="guards-bench-hooks-"))
    try:
        (root / "home").mkdir()
        bench_env = env(HOME=str(root / "home"), XDG_CONFIG_HOME=str(root / "home" / ".config"))
        os.environ.clear()
        os.environ.update(bench_env)  # the in-process guards calls see the same world
        started = time.perf_counter()
        repo = build_repo(root, args.files, args.modified, args.untracked)
        print(
            f"repository: {args.files} tracked files, {args.modified} modified, "
            f"{args.untracked} untracked (built in {time.perf_counter() - started:.1f}s)"
        )

        from guards.git.repo import discover
        from guards.integrations.native_hooks import install_native_hooks

        install_native_hooks(discover(repo))
        hook = repo / ".git" / "hooks" / "post-commit"
        ledger_dir = repo / ".git" / "guards"
        from guards.state.ledger import Ledger

        def saved() -> dict[str, bytes]:
            """The ledger's files (snapshot and journal), folded into the snapshot first."""
            Ledger(ledger_dir).compact()
            return {p.name: p.read_bytes() for p in ledger_dir.glob("ledger.j*")}

        def run(argv: list[str]) -> Callable[[], object]:
            return lambda: subprocess.run(
                argv, cwd=repo, env=bench_env, check=True, capture_output=True
            )

        attribute(repo, args.attributed, args.modified)
        full = saved()
        run([str(hook)])()  # releases the clean third
        steady_state = saved()

        def put(content: dict[str, bytes] | None) -> Callable[[], object]:
            def prepare() -> None:
                for p in ledger_dir.glob("ledger.j*"):
                    p.unlink()
                for name, data in (content or {}).items():
                    (ledger_dir / name).write_bytes(data)

            return prepare

        def nothing() -> None:
            pass

        medians = round_robin(
            {
                "status": (nothing, run(STATUS)),
                "empty": (put(None), run([str(hook)])),
                "releasing": (put(full), run([str(hook)])),
                "steady": (put(steady_state), run([str(hook)])),
                "python": (nothing, run([sys.executable, "-c", "pass"])),
            },
            args.repeat,
        )
        status, empty, releasing, steady, python = (
            medians[k] for k in ("status", "empty", "releasing", "steady", "python")
        )

        print(f"{'what':58} {'median':>9} {'vs status':>10}")
        rows = [
            ("git status --porcelain=v2 -z (plain git)", status),
            ("post-commit hook, nothing attributed (fast path)", empty),
            (f"post-commit hook, {args.attributed} attributed, 1/3 to release", releasing),
            (f"post-commit hook, {args.attributed * 2 // 3} attributed, none to release", steady),
            ("python -c pass (interpreter start, for scale)", python),
        ]
        for label, seconds in rows:
            print(f"{label:58} {seconds * 1000:8.1f}ms {seconds / status:9.2f}x")
        print(
            f"ratio post-commit hook / git status: {releasing / status:.2f}x with releases, "
            f"{steady / status:.2f}x steady, {empty / status:.2f}x with nothing attributed"
        )
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
