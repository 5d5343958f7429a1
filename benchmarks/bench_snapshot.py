"""Snapshot speed: guards' rescue snapshot vs the best plain-git ways, in one run.

    python benchmarks/bench_snapshot.py                          # 100,000 files, 1,000 modified
    python benchmarks/bench_snapshot.py --modified 1000,10000,50000 --repeat 3
    python benchmarks/bench_snapshot.py --files 2000             # quick

Compared, on the same generated repository (packed, as after a clone), for each count of
modified files (plus ``--untracked`` new files), every run on content never seen before
(set up untimed), so that every run writes all of its objects:

- ``plumbing``: the optimal private-index snapshot with plain git: copy the index keeping
  its mtime, ``add -A``, ``write-tree``, ``commit-tree`` (real index untouched);
- ``snapshot``: guards' snapshot of the dirty paths (files read once and packed through
  ``fast-import``, trees for HEAD+paths and for the index state written aside and moved
  in packed, full verification: trees read back, disk rehashed, blobs re-read);
- ``rescue``: ``rescue_paths`` end to end (snapshot + create-only ref + rescue log);
- ``status+rescue``: ``git status`` to find the dirty paths, then ``rescue``;
- ``stash create``: ``git stash create`` (rewrites the real index, misses untracked
  files; ``--no-stash`` skips it).

Also printed, for one rescue of each size: the loose objects it leaves (``git
count-objects -v``) and the size of its commit message. Targets (issue 16): ``rescue``
at most 1.3x ``plumbing`` at 1k, 10k and 50k modified files of 100k; at most 100 loose
objects; a message of at most 4 KiB.

Measured 2026-12-01, 100,000 files, median of 3, on the 2-CPU VM under a load average of
8-14 from other jobs (the table is in benchmarks/README.md): rescue 0.92x / 0.96x / 0.77x
plumbing at 1,000 / 10,000 / 50,000 modified (before: 1.26x / 1.07x / 1.08x); 0 loose
objects and 279-byte messages (before: 2,304 / 11,304 / 51,304 loose objects and
29 KB / 253 KB / 1.2 MB messages).
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

from guards.git import dirty as dirty_mod
from guards.protect.rescue import AtRiskPath, build_snapshots, rescue_paths
from guards.state.workspace import Workspace

ENV = {
    **os.environ,
    "GIT_AUTHOR_NAME": "bench",
    "GIT_AUTHOR_EMAIL": "bench@example.com",
    "GIT_COMMITTER_NAME": "bench",
    "GIT_COMMITTER_EMAIL": "bench@example.com",
}


def git(repo: Path, *args: str, env: dict[str, str] | None = None, stdin: bytes = b"") -> bytes:
    return subprocess.run(
        ["git", *args], cwd=repo, env=env or ENV, input=stdin, capture_output=True, check=True
    ).stdout


def generate(repo: Path, files: int) -> None:
    git(repo.parent, "init", "-q", str(repo))
    git(repo, "config", "gc.auto", "0")  # no auto gc during the timings
    for i in range(files):
        d = repo / f"d{i // 1000:03d}" / f"e{(i // 100) % 10}"
        if i % 100 == 0:
            d.mkdir(parents=True, exist_ok=True)
        (d / f"f{i}.txt").write_text(f"file {i}\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "generated")
    git(repo, "repack", "-adq")  # as after a clone or a gc: history lives in a pack


def make_dirty(repo: Path, files: int, modified: int, untracked: int, tag: str) -> None:
    """``modified`` tracked files edited and ``untracked`` new files, all holding content
    never seen before (``tag``): every run writes its objects, as a real rescue does."""
    step = max(1, files // modified)
    for i in range(0, step * modified, step):
        path = repo / f"d{i // 1000:03d}" / f"e{(i // 100) % 10}" / f"f{i}.txt"
        path.write_text(f"file {i}\nmodified {tag}\n")
    new = repo / "new"
    new.mkdir(exist_ok=True)
    for j in range(untracked):
        (new / f"u{j}.txt").write_text(f"untracked {j} {tag}\n")
    # Let the racy-git window pass, then refresh the real index once, as a user's
    # `git status` would: every measured run starts from the same, fresh stat cache.
    time.sleep(1.1)
    git(repo, "status", "--porcelain")


def loose_objects(repo: Path) -> tuple[int, int]:
    """(loose objects, their KiB) as ``git count-objects -v`` says."""
    fields = dict(
        line.split(": ", 1) for line in git(repo, "count-objects", "-v").decode().splitlines()
    )
    return int(fields["count"]), int(fields["size"])


def what_a_rescue_leaves(repo: Path, ws: Workspace, paths: list[str]) -> str:
    """One rescue: the loose objects it adds, the size of its commit's message."""
    before = loose_objects(repo)
    (result,) = rescue_paths(ws, [AtRiskPath(p, "bench") for p in paths], command="bench")
    after = loose_objects(repo)
    raw = git(repo, "cat-file", "commit", result.commit)
    message = raw.split(b"\n\n", 1)[1]
    return (
        f"one rescue of {len(paths)} paths leaves {after[0] - before[0]} loose objects "
        f"({after[1] - before[1]} KiB); its commit message: {len(message)} bytes"
    )


def plumbing(repo: Path, tmp: Path) -> None:
    index = tmp / "plumbing-index"
    shutil.copy2(repo / ".git" / "index", index)
    env = {**ENV, "GIT_INDEX_FILE": str(index)}
    git(repo, "add", "-A", env=env)
    tree = git(repo, "write-tree", env=env).decode().strip()
    head = git(repo, "rev-parse", "HEAD").decode().strip()
    git(repo, "commit-tree", tree, "-p", head, "-m", "wip", env=env)


def stash_create(repo: Path, tmp: Path) -> None:
    git(repo, "stash", "create")


def measure(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=100_000)
    parser.add_argument(
        "--modified",
        default="",
        help="comma-separated counts of modified files, one measurement each "
        "(default: 1%% of --files)",
    )
    parser.add_argument("--untracked", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--no-stash", action="store_true", help="skip `git stash create`")
    parser.add_argument("--keep", action="store_true", help="keep the generated repository")
    args = parser.parse_args()
    counts = [int(n) for n in args.modified.split(",") if n] or [max(1, args.files // 100)]
    tmp = Path(tempfile.mkdtemp(prefix="guards-bench-"))
    repo = tmp / "repo"
    try:
        t0 = time.perf_counter()
        generate(repo, args.files)
        load = os.getloadavg()
        print(
            f"repository: {args.files} tracked files (generated in "
            f"{time.perf_counter() - t0:.1f}s); git {git(repo, 'version').decode().split()[-1]}, "
            f"{os.cpu_count()} CPUs, load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}, "
            f"median of {args.repeat}"
        )
        for modified in counts:
            git(repo, "reset", "-q", "--hard")
            git(repo, "clean", "-qfdx")
            measure_one(repo, tmp, modified, args)
        if args.keep:
            print(f"repository kept at {repo}")
        return 0
    finally:
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)


def measure_one(repo: Path, tmp: Path, modified: int, args: argparse.Namespace) -> None:
    tags = iter(range(1_000_000))

    def dirty() -> None:
        make_dirty(repo, args.files, modified, args.untracked, f"{modified}-{next(tags)}")

    dirty()
    ws = Workspace.open(repo)
    paths = [d.path for d in dirty_mod.read_dirty(ws.repo)]
    at_risk = [AtRiskPath(p, "bench") for p in paths]
    print(f"\n{modified} modified, {args.untracked} untracked ({len(paths)} dirty paths):")
    print("  " + what_a_rescue_leaves(repo, ws, paths))

    def snapshot() -> None:
        build_snapshots(
            ws, {"bench": paths}, command="bench", now=time.time(), split_local_only=False
        )

    def rescue() -> None:
        rescue_paths(ws, at_risk, command="bench")

    def status_and_rescue() -> None:
        found = [AtRiskPath(d.path, "bench") for d in dirty_mod.read_dirty(ws.repo)]
        rescue_paths(ws, found, command="bench")

    # Interleave the contenders so that drift (page cache, CPU) hits all alike; each run
    # gets content of its own (set up untimed), so each writes every object it holds.
    contenders: dict[str, Callable[[], object]] = {
        "plumbing": lambda: plumbing(repo, tmp),
        "snapshot": snapshot,
        "rescue": rescue,
        "status+rescue": status_and_rescue,
    }
    runs: dict[str, list[float]] = {name: [] for name in contenders}
    untouched = True
    index = repo / ".git" / "index"
    for _ in range(args.repeat):
        for name, fn in contenders.items():
            dirty()
            before = (index.read_bytes(), index.stat().st_mtime_ns)
            start = time.perf_counter()
            fn()
            runs[name].append(time.perf_counter() - start)
            if name != "plumbing":
                untouched &= (index.read_bytes(), index.stat().st_mtime_ns) == before
    medians = {name: statistics.median(t) for name, t in runs.items()}
    if not args.no_stash:
        # stash create rewrites the real index: measured last.
        medians["stash create"] = measure(lambda: stash_create(repo, tmp), args.repeat)
    base = medians["plumbing"]
    print(f"  {'method':<16}{'median s':>10}{'vs plumbing':>14}")
    for name, value in medians.items():
        print(f"  {name:<16}{value:>10.3f}{value / base:>13.2f}x")
    print(f"  real index untouched by guards: {'yes' if untouched else 'NO'}")


if __name__ == "__main__":
    raise SystemExit(main())
