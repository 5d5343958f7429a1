"""The ledger at fleet scale: recording, concurrent recorders, and readers at 100k attributions.

    python benchmarks/bench_ledger.py [--files 20000] [--dirty 1000] [--repeat 15]
                                      [--sizes 1000,10000,100000] [--recorders 8]

Rows (each ratio against a baseline measured in the same run, interleaved):

1. ``guards record`` of one path with 1k / 10k / 100k attributions in the ledger, against
   interpreter start-up (``python -c pass``). Target: <= 1.3x, flat in the ledger's size.
   Also: what one compaction (folding ~1,000 journal records) costs at each size.
2. 8 concurrent recorders at 20k / 100k attributions: per-record latency (p50, p95,
   worst) and failures, in-process (``record_paths``: the ledger's own cost) and through
   the CLI (``guards record`` per path, as an agent's hook runs it; includes 8 interpreters
   starting at once on this machine's cores). Target: p95 <= 100 ms, 0 failures.
3. ``guards status`` / ``guards frame`` with 100k attributions against ``git status`` on
   the same repository: wall time and peak RSS (``getrusage(RUSAGE_CHILDREN)`` of a
   helper process per run, so each figure is one command's own peak, its git included).
   Target: <= 1.5x git's time, <= 2x git's memory. Two layouts: "spread" (the reader's
   worktree holds its 1,000 dirty paths' attributions, 99,000 are other worktrees') and,
   for the read-only frame, "own" (all 100k attributions in the reader's worktree).

Run it with the interpreter of a clean install (see README.md): start-up-bound rows
depend on it.
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

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import env, fill_ledger, generate_repo, guards_script, interleaved
from guards.state.attribution import Attribution, fingerprint
from guards.state.ledger import Ledger

_PEAK = (
    "import resource, subprocess, sys, time\n"
    "t = time.perf_counter()\n"
    "subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, check=True)\n"
    "t = time.perf_counter() - t\n"
    "print(t, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
)


def load() -> str:
    one, five, _ = os.getloadavg()
    return f"load average {one:.1f} (5 min {five:.1f}) on {os.cpu_count()} CPUs"


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


# -- 1. record ----------------------------------------------------------------------------------


def bench_record(root: Path, sizes: list[int], repeat: int) -> None:
    print(f"\n1. guards record of one path vs interpreter start-up ({load()})")
    repo = root / "rec"
    generate_repo(repo, 200)
    (repo / "d0000" / "f000000.txt").write_text("edited\n")
    own = str(repo.resolve())
    run_env = env(GUARDS_SESSION="s0")
    print(f"  guards ran as: {' '.join(guards_script('record'))}")
    print(
        f"  {'attributions':>12} {'start-up':>9} {'record':>9} {'ratio':>6} "
        f"{'CPU ratio':>9} {'compaction':>11}"
    )
    for n in sizes:
        ledger_dir = repo / ".git" / "guards"
        for f in ledger_dir.glob("ledger*"):
            f.unlink()
        fp = Attribution("s1", fingerprint(repo / "README"), time.time()).to_json()
        fill_ledger(ledger_dir, own, {f"p/{i}": fp for i in range(n)}, 0, 1)
        commands = {
            "start-up": ([sys.executable, "-c", "pass"], repo),
            "record": (guards_script("record", "d0000/f000000.txt"), repo),
        }
        times, cpu = interleaved(commands, run_env, repeat)
        # What the writer that crosses the journal limit pays: ~1,000 records to fold.
        from guards.state.ledger import op_attribute

        ledger = Ledger(ledger_dir)
        ledger.append([op_attribute(own, f"j/{i}", fp) for i in range(1000)])
        t = time.perf_counter()
        ledger.compact()
        compaction = time.perf_counter() - t
        print(
            f"  {n:>12,} {times['start-up'] * 1000:7.1f}ms {times['record'] * 1000:7.1f}ms "
            f"{times['record'] / times['start-up']:5.2f}x "
            f"{cpu['record'] / cpu['start-up']:8.2f}x {compaction * 1000:9.1f}ms"
        )


# -- 2. concurrent recorders --------------------------------------------------------------------

_RECORDER = """
import json, sys, time
from guards.state.workspace import Workspace, record_paths
ws = Workspace.open()
me, count = sys.argv[1], int(sys.argv[2])
times, failures = [], 0
for i in range(count):
    t = time.perf_counter()
    try:
        record_paths(ws, me, [f"{me}/f{i}"])
    except Exception:
        failures += 1
    times.append(time.perf_counter() - t)
print(json.dumps({"times": times, "failures": failures}))
"""

_CLI_RECORDER = """
import json, subprocess, sys, time
me, count, guards = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
times, failures = [], 0
for i in range(count):
    t = time.perf_counter()
    res = subprocess.run([*guards, "record", "-q", "--session", me, f"{me}/f{i}"],
                         stdout=subprocess.DEVNULL)  # this stdout is the JSON below
    times.append(time.perf_counter() - t)
    failures += res.returncode != 0
print(json.dumps({"times": times, "failures": failures}))
"""


def bench_concurrent(root: Path, sizes: list[int], recorders: int, each: int, cli: int) -> None:
    import json

    print(f"\n2. {recorders} concurrent recorders ({load()})")
    for n in sizes:
        repo = root / f"conc{n}"
        generate_repo(repo, 100)
        own = str(repo.resolve())
        fp = Attribution("seed", fingerprint(repo / "README"), time.time()).to_json()
        fill_ledger(repo / ".git" / "guards", own, {f"seed/{i}": fp for i in range(n)}, 0, 1)
        for w in range(recorders):
            (repo / f"w{w}").mkdir()
            for i in range(max(each, cli)):
                (repo / f"w{w}" / f"f{i}").write_text(f"{w} {i}\n")
        for label, script, count, extra in (
            ("in-process record_paths", _RECORDER, each, []),
            ("guards record (CLI)", _CLI_RECORDER, cli, guards_script()),
        ):
            procs = [
                subprocess.Popen(
                    [sys.executable, "-c", script, f"w{w}", str(count), *extra],
                    cwd=repo,
                    env=env(),
                    stdout=subprocess.PIPE,
                )
                for w in range(recorders)
            ]
            times: list[float] = []
            failures = 0
            for p in procs:
                out, _ = p.communicate()
                failures += p.returncode != 0
                doc = json.loads(out)
                times += doc["times"]
                failures += doc["failures"]
            data = Ledger(repo / ".git" / "guards").read(own, rescues=False)
            print(
                f"  {n:>7,} attributions, {label}: {len(times)} records, "
                f"p50 {statistics.median(times) * 1000:.1f} ms, "
                f"p95 {percentile(times, 0.95) * 1000:.1f} ms, "
                f"worst {max(times) * 1000:.1f} ms, failures {failures}; "
                f"ledger now {len(data.paths.get(own, {})):,} here"
            )
        # the CLI recorders re-recorded the first paths: same counts, newer records


# -- 3. readers -----------------------------------------------------------------------------------


def peak(argv: list[str], cwd: Path, run_env: dict[str, str]) -> tuple[float, int]:
    out = subprocess.run(
        [sys.executable, "-c", _PEAK, *argv],
        cwd=cwd,
        env=run_env,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()
    return float(out[0]), int(out[1])


def bench_readers(root: Path, files: int, dirty_count: int, repeat: int) -> None:
    print(f"\n3. readers at 100,000 attributions vs git status ({load()})")
    repo = root / "read"
    print(f"  generating {files} files ...", flush=True)
    names = generate_repo(repo, files)
    dirty = names[:: max(1, len(names) // dirty_count)][:dirty_count]
    for rel in dirty:
        (repo / rel).write_text("changed\n")
    own = str(repo.resolve())
    now = time.time()
    mine = {
        rel: Attribution(f"s{i % 24}", fingerprint(repo / rel), now).to_json()
        for i, rel in enumerate(dirty)
    }
    ledger_dir = repo / ".git" / "guards"
    run_env = env(GUARDS_SESSION="s0")
    status = ["git", "--no-optional-locks", "status", "--porcelain=v2", "-z"]
    layouts = {
        "spread": (mine, 100_000 - len(mine)),
        "own": (
            {**mine, **{f"clean/{i}": next(iter(mine.values())) for i in range(100_000)}},
            0,
        ),
    }
    for layout, (own_records, others) in layouts.items():
        for f in ledger_dir.glob("ledger*"):
            f.unlink()
        fill_ledger(ledger_dir, own, own_records, others, 1000)
        size = (ledger_dir / "ledger.json").stat().st_size
        baseline = f"import subprocess\nsubprocess.run({status!r}, stdout=subprocess.PIPE)\n"
        commands = {
            "git status": (status, repo),
            "python + git status": ([sys.executable, "-c", baseline], repo),
            "guards frame": (guards_script("frame"), repo),
        }
        if layout == "spread":  # status releases clean paths: "own" is not its steady state
            commands["guards status"] = (guards_script("status"), repo)
            commands["guards doctor"] = (guards_script("doctor"), repo)
        times, cpu = interleaved(commands, run_env, repeat)
        rss = {
            name: statistics.median(peak(argv, cwd, run_env)[1] for _ in range(3))
            for name, (argv, cwd) in commands.items()
        }
        print(
            f"  layout {layout}: {len(own_records):,} attributions in the reader's worktree, "
            f"{others:,} elsewhere; snapshot {size / 1e6:.1f} MB"
        )
        base_t, base_c, base_m = times["git status"], cpu["git status"], rss["git status"]
        for name in commands:
            print(
                f"    {name:20} {times[name] * 1000:8.1f} ms {times[name] / base_t:5.2f}x   "
                f"CPU {cpu[name] * 1000:7.1f} ms {cpu[name] / base_c:5.2f}x   "
                f"peak RSS {rss[name] / 1024:6.1f} MiB {rss[name] / base_m:5.2f}x"
            )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, default=20_000)
    ap.add_argument("--dirty", type=int, default=1_000)
    ap.add_argument("--repeat", type=int, default=15)
    ap.add_argument("--sizes", default="1000,10000,100000")
    ap.add_argument("--concurrent-sizes", default="20000,100000")
    ap.add_argument("--recorders", type=int, default=8)
    ap.add_argument("--each", type=int, default=150, help="in-process records per recorder")
    ap.add_argument("--cli", type=int, default=15, help="CLI records per recorder")
    ap.add_argument("--only", choices=("record", "concurrent", "readers"))
    opts = ap.parse_args()
    with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as tmp:
        root = Path(tmp)
        if opts.only in (None, "record"):
            bench_record(root, [int(n) for n in opts.sizes.split(",")], opts.repeat)
        if opts.only in (None, "concurrent"):
            sizes = [int(n) for n in opts.concurrent_sizes.split(",")]
            bench_concurrent(root, sizes, opts.recorders, opts.each, opts.cli)
        if opts.only in (None, "readers"):
            bench_readers(root, opts.files, opts.dirty, opts.repeat)


if __name__ == "__main__":
    main()
