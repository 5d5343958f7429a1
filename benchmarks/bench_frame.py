"""guards frame against Python start-up plus one `git status --porcelain=v2 -z`.

The frame runs before every agent turn, so its budget is what the cheapest possible
Python hook would pay anyway: start the interpreter and ask git once.
Target (issue 4): guards frame <= 1.2x that baseline.

Bytecode is cached in a temporary directory for every run (the sandbox sets
PYTHONDONTWRITEBYTECODE, which an installed guards never suffers from). guards runs as
the console script next to the interpreter when there is one.

Run it with the interpreter of a clean install (``python -m venv v && v/bin/pip install .
&& v/bin/python benchmarks/bench_frame.py``): a development interpreter whose
site-packages preload modules at start-up (editable-install finders, ``.pth`` files)
makes the baseline pay for imports guards would otherwise pay alone, which flatters the
ratio.
Usage: python benchmarks/bench_frame.py [--files 20000] [--dirty 200] [--attributed 100]
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
    ap.add_argument("--files", type=int, default=20_000)
    ap.add_argument("--dirty", type=int, default=200)
    ap.add_argument("--attributed", type=int, default=100)
    ap.add_argument("--sessions", type=int, default=20)
    ap.add_argument("--repeat", type=int, default=21)
    opts = ap.parse_args()
    with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as tmp:
        repo = Path(tmp) / "repo"
        print(f"generating {opts.files} files ...", flush=True)
        names = generate_repo(repo, opts.files)
        dirty = names[:: max(1, len(names) // opts.dirty)][: opts.dirty]
        for rel in dirty:
            (repo / rel).write_text("changed\n")
        _write_ledger(repo, dirty[: opts.attributed], opts.sessions)
        run_env = _bytecode_env(Path(tmp) / "pycache")
        status = ["git", "--no-optional-locks", "status", "--porcelain=v2", "-z"]
        baseline_code = (
            "import subprocess, sys\n"
            f"subprocess.run({status!r}, stdout=subprocess.PIPE, check=True)\n"
        )
        clean = Path(tmp) / "clean"
        generate_repo(clean, min(opts.files, 1000))
        commands = {
            "git status --porcelain=v2 -z": (status, repo),
            "python start-up": ([sys.executable, "-c", "pass"], repo),
            "python start-up + git status (baseline)": (
                [sys.executable, "-c", baseline_code],
                repo,
            ),
            "guards frame": (guards_script("frame"), repo),
            "guards frame --json": (guards_script("frame", "--json"), repo),
            "clean tree: baseline": ([sys.executable, "-c", baseline_code], clean),
            "clean tree: guards frame": (guards_script("frame"), clean),
        }
        times, cpu = interleaved(commands, run_env, opts.repeat)
    rows = list(times.items())
    report(
        f"frame: {opts.files} tracked, {len(dirty)} dirty, {opts.attributed} attributed",
        rows,
    )
    ratio = times["guards frame"] / times["python start-up + git status (baseline)"]
    clean_ratio = times["clean tree: guards frame"] / times["clean tree: baseline"]
    print(f"  guards ran as: {' '.join(guards_script('frame'))}")
    print(f"  guards frame / baseline = {ratio:.2f}x  (target <= 1.2x)")
    print(f"  clean tree: guards frame / baseline = {clean_ratio:.2f}x  (target <= 1.2x)")
    base = "python start-up + git status (baseline)"
    print(
        f"  CPU time: guards frame / baseline = {cpu['guards frame'] / cpu[base]:.2f}x, "
        f"clean tree {cpu['clean tree: guards frame'] / cpu['clean tree: baseline']:.2f}x"
    )


def _bytecode_env(cache: Path) -> dict[str, str]:
    e = env(PYTHONPYCACHEPREFIX=str(cache))
    e.pop("PYTHONDONTWRITEBYTECODE", None)
    return e


def _write_ledger(repo: Path, attributed: list[str], sessions: int) -> None:
    now = time.time()
    with Ledger(repo / ".git" / "guards").transaction() as data:
        for i in range(sessions):
            data.sessions[f"s{i}"] = {"id": f"s{i}", "started": now, "last_seen": now}
        mine = data.paths.setdefault(str(repo.resolve()), {})
        for i, rel in enumerate(attributed):
            mine[rel] = Attribution(f"s{i % sessions}", fingerprint(repo / rel), now).to_json()


if __name__ == "__main__":
    main()
