"""guards doctor on a fleet-sized checkout against plain `git status`, in one run.

The checkout: 100,000 tracked files (1,000 dirty), 50 sessions (half of them dead),
20 linked worktrees (registered, made with --no-checkout so the benchmark stays small
on disk), 200 rescue refs (made with one `git update-ref --stdin`) and their log,
a few stashes and abandoned branches.
Target (issue 4): report the ratio to `git status`, keep it under 5x.

Usage: python benchmarks/bench_doctor.py [--files 100000] [--sessions 50]
       [--worktrees 20] [--rescues 200] [--dirty 1000]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import env, generate_repo, guards_cmd, report, sh, timeit
from guards.state.attribution import Attribution, fingerprint
from guards.state.ledger import Ledger


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=100_000)
    ap.add_argument("--dirty", type=int, default=1_000)
    ap.add_argument("--sessions", type=int, default=50)
    ap.add_argument("--worktrees", type=int, default=20)
    ap.add_argument("--rescues", type=int, default=200)
    ap.add_argument("--repeat", type=int, default=7)
    opts = ap.parse_args()
    with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as tmp:
        repo = Path(tmp) / "repo"
        print(f"generating {opts.files} files ...", flush=True)
        names = generate_repo(repo, opts.files)
        dirty = names[:: max(1, len(names) // opts.dirty)][: opts.dirty]
        _populate(repo, Path(tmp), dirty, opts)
        run_env = env(PYTHONPYCACHEPREFIX=str(Path(tmp) / "pycache"))
        run_env.pop("PYTHONDONTWRITEBYTECODE", None)

        def timed(args: list[str], repeat: int = opts.repeat) -> float:
            def go() -> None:
                subprocess.run(args, cwd=repo, env=run_env, stdout=subprocess.DEVNULL, check=False)

            return timeit(go, repeat)

        rows = [
            ("git status", timed(["git", "status"])),
            (
                "git --no-optional-locks status --porcelain=v2 -z",
                timed(["git", "--no-optional-locks", "status", "--porcelain=v2", "-z"]),
            ),
            ("python start-up", timed([sys.executable, "-c", "pass"])),
            ("guards doctor", timed(guards_cmd("doctor"))),
            ("guards doctor --json", timed(guards_cmd("doctor", "--json"), 3)),
        ]
        res = subprocess.run(
            guards_cmd("doctor"), cwd=repo, env=run_env, capture_output=True, text=True
        )
    report(
        f"doctor: {opts.files} files, {len(dirty)} dirty, {opts.sessions} sessions, "
        f"{opts.worktrees} worktrees, {opts.rescues} rescue refs",
        rows,
    )
    print(f"  guards doctor / git status = {rows[3][1] / rows[0][1]:.2f}x  (keep < 5x)")
    print(f"  (doctor exit {res.returncode}; last line: {res.stdout.splitlines()[-1]!r})")


def _populate(repo: Path, tmp: Path, dirty: list[str], opts: argparse.Namespace) -> None:
    for rel in dirty:
        (repo / rel).write_text("changed\n")
    head = sh(["git", "rev-parse", "HEAD"], repo).stdout.decode().strip()
    ns = "refs/rescue"
    refs = [
        f"{ns}/s{i % opts.sessions}/2026010{i % 9}T00{i:04d}Z-reset" for i in range(opts.rescues)
    ]
    sh(
        ["git", "update-ref", "--stdin"],
        repo,
        input="".join(f"create {r} {head}\n" for r in refs).encode(),
    )
    for i in range(5):
        sh(["git", "branch", f"abandoned-{i}"], repo)
    worktrees = []
    for i in range(opts.worktrees):
        path = tmp / f"wt{i:02d}"
        sh(["git", "worktree", "add", "-q", "--no-checkout", "-b", f"wt{i}", str(path)], repo)
        worktrees.append(path)
    now = time.time()
    with Ledger(repo / ".git" / "guards").transaction() as data:
        for i in range(opts.sessions):
            dead = i % 2 == 1
            data.sessions[f"s{i}"] = {
                "id": f"s{i}",
                "host": "elsewhere" if dead else "",
                "started": now - 3600,
                "last_seen": now - (7200 if dead else 10),
            }
        mine = data.paths.setdefault(str(repo.resolve()), {})
        for i, rel in enumerate(dirty):
            mine[rel] = Attribution(f"s{i % opts.sessions}", fingerprint(repo / rel), now).to_json()
        for i, path in enumerate(worktrees):
            data.worktrees[str(path)] = {
                "path": str(path),
                "session": f"s{i % opts.sessions}",
                "branch": f"refs/heads/wt{i}",
                "base": "",
                "created": now,
                "lock_reason": None,
            }
        data.rescues = [{"ref": r, "push": None if i % 3 else "pushed"} for i, r in enumerate(refs)]


if __name__ == "__main__":
    main()
