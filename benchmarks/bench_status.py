"""guards status against plain `git status --porcelain=v2 -z`, side by side in one run.

Target (issue 2): guards' cost <= 1.5x git's plus interpreter start-up. The commands run
in rotation (load hits all alike); guards runs as the installed console script. Measure
with a clean install's interpreter (see README.md).
Usage: python benchmarks/bench_status.py [--files 50000] [--dirty 1000] [--records 5000]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import env, generate_repo, guards_script, interleaved, report
from guards.state.attribution import Attribution, fingerprint
from guards.state.ledger import Ledger


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=50_000)
    ap.add_argument("--dirty", type=int, default=1_000)
    ap.add_argument("--records", type=int, default=5_000)
    ap.add_argument("--repeat", type=int, default=15)
    opts = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        repo = Path(tmp) / "repo"
        print(f"generating {opts.files} files ...", flush=True)
        names = generate_repo(repo, opts.files)
        dirty = names[:: max(1, len(names) // opts.dirty)][: opts.dirty]
        for rel in dirty:
            (repo / rel).write_text("changed\n")
        _write_ledger(repo, dirty, opts.records)
        run_env = env(GUARDS_SESSION="s0")
        commands = {
            "git status": (
                ["git", "--no-optional-locks", "status", "--porcelain=v2", "-z"],
                repo,
            ),
            "start-up": ([sys.executable, "-c", "pass"], repo),
            "guards status": (guards_script("status"), repo),
            "guards status --json": (guards_script("status", "--json"), repo),
        }
        times, _cpu = interleaved(commands, run_env, opts.repeat)
    git_status, startup = times["git status"], times["start-up"]
    guards, guards_json = times["guards status"], times["guards status --json"]
    budget = 1.5 * git_status + startup
    report(
        f"status: {opts.files} tracked, {len(dirty)} dirty, {opts.records} ledger records",
        [
            ("git status --porcelain=v2 -z", git_status),
            ("python start-up", startup),
            ("guards status", guards),
            ("guards status --json", guards_json),
        ],
    )
    print(f"  guards status / (git status + start-up) = {guards / (git_status + startup):.2f}x")
    print(f"  guards status / budget (1.5x git + start-up) = {guards / budget:.2f}  (target <= 1)")


def _write_ledger(repo: Path, dirty: list[str], records: int) -> None:
    """Attributions for the dirty paths, the rest in other worktrees (as in a fleet)."""
    ledger = Ledger(repo / ".git" / "guards")
    now = time.time()
    with ledger.transaction() as data:
        mine = data.paths.setdefault(str(repo.resolve()), {})
        for i, rel in enumerate(dirty):
            mine[rel] = Attribution(f"s{i % 24}", fingerprint(repo / rel), now).to_json()
        for i in range(max(0, records - len(dirty))):
            other = data.paths.setdefault(f"/elsewhere/wt{i % 100}", {})
            other[f"x/{i}.txt"] = Attribution(
                f"s{i % 24}", fingerprint(repo / "nope"), now
            ).to_json()


if __name__ == "__main__":
    main()
