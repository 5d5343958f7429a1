"""Shared helpers for the benchmarks: generated repositories and side-by-side timing."""

from __future__ import annotations

import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

BENCH_ENV = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_AUTHOR_NAME": "bench",
    "GIT_AUTHOR_EMAIL": "bench@example.com",
    "GIT_COMMITTER_NAME": "bench",
    "GIT_COMMITTER_EMAIL": "bench@example.com",
}


_PYCACHE = tempfile.mkdtemp(prefix="guards-bench-pyc-")


def env(**extra: str) -> dict[str, str]:
    """A clean environment; bytecode is cached (as in any real install) even where the
    machine sets PYTHONDONTWRITEBYTECODE, else every run would pay for compiling."""
    e = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "GUARDS_"))}
    e.pop("PYTHONDONTWRITEBYTECODE", None)
    e["PYTHONPYCACHEPREFIX"] = _PYCACHE
    e.update(BENCH_ENV)
    e.update(extra)
    return e


def sh(args: Sequence[str], cwd: Path, **kw: object) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(list(args), cwd=cwd, env=env(), check=True, capture_output=True, **kw)  # type: ignore[call-overload,no-any-return]


def generate_repo(path: Path, files: int, per_dir: int = 500) -> list[str]:
    """A committed repository of ``files`` small files; returns their relative paths."""
    path.mkdir(parents=True)
    sh(["git", "init", "-q", "-b", "main"], path)
    # No auto gc: one started by the big commit would run during the timings.
    sh(["git", "config", "gc.auto", "0"], path)
    names = []
    for i in range(files):
        rel = f"d{i // per_dir:04d}/f{i:06d}.txt"
        target = path / rel
        if i % per_dir == 0:
            target.parent.mkdir()
        target.write_text(f"file {i}\n" * 4)
        names.append(rel)
    sh(["git", "add", "-A"], path)
    sh(["git", "commit", "-q", "-m", "generated"], path)
    settle_index(path)
    return names


def settle_index(path: Path) -> None:
    """The index as any checkout's is once a ``git status`` ran a second after its files
    were written. An index written in the same second as its files leaves every entry
    racily clean (git cannot trust their stat data), and a status that may not rewrite
    the index (``--no-optional-locks``: guards' every read) hashes all their contents
    again, on every call: 11 ms instead of 4 ms for 2,000 files, a figure of the fixture,
    not of the code measured. Plain git refreshes it, as a user's ``git status`` does."""
    time.sleep(1.05)
    sh(["git", "update-index", "-q", "--refresh"], path)


def make_alices_work(repo: Path, paths: Sequence[str], round_: int) -> None:
    """Edit ``paths`` and record them for session alice (work foreign to the benchmark's
    caller, bob): what a guarded destructive command must rescue."""
    from guards.state.attribution import Attribution, fingerprint
    from guards.state.ledger import Ledger

    for rel in paths:
        (repo / rel).write_text(f"alice's edit {round_}\n")
    now = time.time()
    with Ledger(repo / ".git" / "guards").transaction() as data:
        records = data.paths.setdefault(str(repo.resolve()), {})
        for rel in paths:
            records[rel] = Attribution("alice", fingerprint(repo / rel), now).to_json()


def timeit(
    fn: Callable[[], object], repeat: int, setup: Callable[[], object] | None = None
) -> float:
    """Median wall time of ``fn`` over ``repeat`` runs (after one warm-up); ``setup``
    runs untimed before each."""
    if setup:
        setup()
    fn()
    samples = []
    for _ in range(repeat):
        if setup:
            setup()
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def timeit_in_rotation(
    fns: dict[str, Callable[[], object]], repeat: int, setup: Callable[[], object] | None = None
) -> dict[str, float]:
    """Median wall time of each of ``fns``, run in turn ``repeat`` times (after one warm-up
    round), ``setup`` untimed before each run: whatever the runs leave behind (loose
    objects, a warmer cache) weighs on each contender alike."""
    samples: dict[str, list[float]] = {name: [] for name in fns}
    for round_ in range(repeat + 1):
        for name, fn in fns.items():
            if setup:
                setup()
            start = time.perf_counter()
            fn()
            if round_:
                samples[name].append(time.perf_counter() - start)
    return {name: statistics.median(v) for name, v in samples.items()}


def run_cmd(
    args: Sequence[str], cwd: Path, extra_env: dict[str, str] | None = None
) -> Callable[[], None]:
    e = env(**(extra_env or {}))

    def go() -> None:
        subprocess.run(list(args), cwd=cwd, env=e, check=True, stdout=subprocess.DEVNULL)

    return go


def guards_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "guards", *args]


def guards_script(*args: str) -> list[str]:
    """The ``guards`` console script installed next to this interpreter, as users and
    harness hooks run it (``python -m guards`` when there is none: it also loads runpy)."""
    script = Path(sys.executable).with_name("guards")
    return [str(script), *args] if script.is_file() else guards_cmd(*args)


def report(title: str, rows: list[tuple[str, float]]) -> None:
    print(f"\n{title}")
    width = max(len(name) for name, _ in rows)
    for name, seconds in rows:
        print(f"  {name.ljust(width)}  {seconds * 1000:9.1f} ms")


def interleaved(
    commands: dict[str, tuple[list[str], Path]], run_env: dict[str, str], repeat: int
) -> tuple[dict[str, float], dict[str, float]]:
    """Median wall and CPU time of each command, run in rotation so load hits all alike.

    CPU time (user + system of the child and its git) is the steadier figure on a
    shared machine.
    """
    wall: dict[str, list[float]] = {name: [] for name in commands}
    cpu: dict[str, list[float]] = {name: [] for name in commands}
    for round_ in range(repeat + 1):
        for name, (args, cwd) in commands.items():
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            start = time.perf_counter()
            subprocess.run(args, cwd=cwd, env=run_env, check=True, stdout=subprocess.DEVNULL)
            elapsed = time.perf_counter() - start
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            if round_:  # the first round warms caches (and writes the bytecode)
                wall[name].append(elapsed)
                cpu[name].append(
                    after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
                )
    return (
        {name: statistics.median(values) for name, values in wall.items()},
        {name: statistics.median(values) for name, values in cpu.items()},
    )


def fill_ledger(
    directory: Path, own: str, own_records: dict[str, object], others: int, per_worktree: int
) -> None:
    """A ledger whose snapshot holds ``own_records`` for ``own`` and ``others``
    attributions spread over other worktrees (as a fleet's would be)."""
    from guards.state.attribution import Attribution, fingerprint
    from guards.state.ledger import Ledger, pack

    ledger = Ledger(directory)
    fake = pack(Attribution("s1", fingerprint(directory / "nope"), time.time()).to_json())
    with ledger.transaction() as data:
        data.sessions.update(
            {f"s{i}": {"id": f"s{i}", "last_seen": time.time()} for i in range(24)}
        )
        data.attributions(own).raw.update({p: pack(r) for p, r in own_records.items()})
        for i in range(others):
            data.attributions(f"/elsewhere/wt{i // per_worktree:03d}").raw[f"x/{i}.txt"] = fake
