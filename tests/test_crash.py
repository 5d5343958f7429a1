"""Crash suite: a guarded destructive command SIGKILLed at random moments loses nothing.

Each trial copies one prepared checkout (other writers' recorded and unrecorded work,
a staged version, the caller's own work), starts ``guards run -- <destructive command>``
and kills it: after a random delay in [0, 1.2 T] (T = the measured duration of an
uninterrupted run), or the moment a phase becomes visible from outside (the snapshot's
private temporary directory appears; the first rescue ref appears). Half the kills hit
the whole process group (guards and its git children), half only the guards process
(its git children run on as orphans; the checks wait for them).

After each trial: every byte of work that was at risk is in the working tree, the index
or a rescue ref; every rescue ref is complete (each path its trailers list is in its
tree, with the bytes that were at risk); the ledger loads; the next ``guards record``
gets the ledger lock at once. The CI run does ~24 trials, ``pytest -m slow`` 200.
"""

from __future__ import annotations

import contextlib
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from guards.git.objects import blob_oid
from guards.protect.rescue import parse_trailers
from guards.state.ledger import Ledger
from tests.helpers import git, make_repo, run_guards

pytestmark = pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs /proc")

COMMANDS = [
    ["reset", "--hard"],
    ["clean", "-fd"],
    ["checkout", "--", "."],
    ["stash", "-u"],
]
MODES = ["random", "random", "snapshot-started", "ref-created"]
CALLER = "bob"
OWNER = "alice"
#: how many files each kind of at-risk work has (enough to make the snapshot take time)
N_FILES = 40


# -- the prepared checkout ------------------------------------------------------------------


@dataclass
class Prepared:
    """What was at risk: (path, bytes) pairs that must survive every crash."""

    at_risk: list[tuple[str, bytes]] = field(default_factory=list)
    own: list[tuple[str, bytes]] = field(default_factory=list)


def prepare(trial_dir: Path) -> Prepared:
    """A checkout at ``trial_dir`` with work of alice, of nobody known, and of bob."""
    files = {f"tracked/a{i:02}.txt": f"committed a{i}\n" for i in range(N_FILES)}
    files.update({f"tracked/u{i:02}.txt": f"committed u{i}\n" for i in range(N_FILES)})
    files.update({"staged.txt": "committed staged\n", "bob.txt": "committed bob\n"})
    make_repo(trial_dir, files)
    prep = Prepared()
    recorded = []
    for i in range(N_FILES):
        # alice: modified tracked files and new files, recorded
        for rel, data in (
            (f"tracked/a{i:02}.txt", f"alice edit a{i}\n" * 50),
            (f"alice/new{i:02}.txt", f"alice new {i}\n" * 50),
        ):
            (trial_dir / rel).parent.mkdir(exist_ok=True)
            (trial_dir / rel).write_bytes(data.encode())
            prep.at_risk.append((rel, data.encode()))
            recorded.append(rel)
        # nobody known: modified tracked files and new files, never recorded
        for rel, data in (
            (f"tracked/u{i:02}.txt", f"unknown edit u{i}\n" * 50),
            (f"unknown/n{i:02}.txt", f"unknown new {i}\n" * 50),
        ):
            (trial_dir / rel).parent.mkdir(exist_ok=True)
            (trial_dir / rel).write_bytes(data.encode())
            prep.at_risk.append((rel, data.encode()))
    # alice's staged version differs from her working-tree version: both are at risk
    (trial_dir / "staged.txt").write_bytes(b"alice staged\n")
    git(trial_dir, "add", "staged.txt")
    (trial_dir / "staged.txt").write_bytes(b"alice unstaged\n")
    prep.at_risk += [("staged.txt", b"alice staged\n"), ("staged.txt", b"alice unstaged\n")]
    recorded.append("staged.txt")
    res = run_guards("record", "--session", OWNER, *recorded, cwd=trial_dir)
    assert res.returncode == 0, res.stderr
    (trial_dir / "bob.txt").write_bytes(b"bob's own work\n")
    prep.own.append(("bob.txt", b"bob's own work\n"))
    res = run_guards("record", "--session", CALLER, "bob.txt", cwd=trial_dir)
    assert res.returncode == 0, res.stderr
    return prep


# -- where content can be found -----------------------------------------------------------------


def _git_bytes(cwd: Path, *args: str, input: bytes | None = None) -> bytes:
    proc = subprocess.run(["git", *args], cwd=cwd, input=input, capture_output=True, check=True)
    return proc.stdout


def tree_entries(cwd: Path, commit: str) -> set[tuple[str, str]]:
    """(path, blob id) of every file in a commit's tree."""
    out = set()
    for rec in _git_bytes(cwd, "ls-tree", "-r", "-z", "--full-tree", commit).split(b"\0"):
        if not rec:
            continue
        meta, _, path = rec.partition(b"\t")
        _mode, kind, oid = meta.decode().split()
        if kind == "blob":
            out.add((os.fsdecode(path), oid))
    return out


def rescue_refs(cwd: Path) -> dict[str, str]:
    out = _git_bytes(cwd, "for-each-ref", "--format=%(refname) %(objectname)", "refs/rescue")
    return dict(line.split(" ", 1) for line in out.decode().splitlines())  # type: ignore[misc]


def stash_commits(cwd: Path) -> list[str]:
    res = subprocess.run(
        ["git", "log", "-g", "--format=%H %P", "refs/stash"], cwd=cwd, capture_output=True
    )
    if res.returncode != 0:
        return []
    return [oid for line in res.stdout.decode().split("\n") for oid in line.split()]


def kept_entries(cwd: Path) -> set[tuple[str, str]]:
    """(path, blob id) held by the index, every rescue commit (with its parents: the
    staged state, conflict stages) and every stash entry (with its parents)."""
    found: set[tuple[str, str]] = set()
    for rec in _git_bytes(cwd, "ls-files", "-s", "-z").split(b"\0"):
        if rec:
            meta, _, path = rec.partition(b"\t")
            found.add((os.fsdecode(path), meta.decode().split()[1]))
    commits = set(stash_commits(cwd))
    for oid in rescue_refs(cwd).values():
        parents = _git_bytes(cwd, "rev-list", "--parents", "-n", "1", oid).decode().split()
        commits.update(parents)
    for commit in commits:
        found |= tree_entries(cwd, commit)
    return found


def lost_content(cwd: Path, wanted: list[tuple[str, bytes]]) -> list[tuple[str, bytes]]:
    """The (path, bytes) pairs found nowhere: not on disk, not staged, not rescued."""
    kept = kept_entries(cwd)
    lost = []
    for path, data in wanted:
        on_disk = cwd / path
        if on_disk.is_file() and not on_disk.is_symlink() and on_disk.read_bytes() == data:
            continue
        if (path, blob_oid(data)) in kept:
            continue
        lost.append((path, data))
    return lost


def incomplete_rescues(cwd: Path, expected: dict[str, set[bytes]]) -> list[str]:
    """Rescue refs whose commit lacks a path its trailers list, or holds other bytes.

    ``expected`` maps a path to the versions it could legitimately hold in a rescue.
    """
    bad = []
    head = dict(tree_entries(cwd, "HEAD"))
    for ref, oid in rescue_refs(cwd).items():
        message = _git_bytes(cwd, "cat-file", "commit", oid).decode("utf-8", "surrogateescape")
        body = message.split("\n\n", 1)[1]
        trailers = parse_trailers(body)
        paths = trailers.get("Path", [])
        if not paths or "Index" not in trailers:
            bad.append(f"{ref}: no Path/Index trailers")
            continue
        entries = dict(tree_entries(cwd, oid))
        index_entries = dict(tree_entries(cwd, trailers["Index"][0]))
        for p in paths:
            if p not in entries:
                bad.append(f"{ref}: {p} listed but not in the tree")
                continue
            versions = expected.get(p)
            if versions is not None and entries[p] not in {blob_oid(v) for v in versions}:
                bad.append(f"{ref}: {p} holds unexpected bytes")
            if p in index_entries and versions is not None:
                # the staged state is either a version at risk or HEAD's (unstaged work)
                allowed = {blob_oid(v) for v in versions} | ({head[p]} if p in head else set())
                if index_entries[p] not in allowed:
                    bad.append(f"{ref}: {p} has unexpected staged bytes")
    return bad


# -- killing --------------------------------------------------------------------------------------


def _group_alive(pgid: int) -> bool:
    """Does any process of the group still run? (Zombies waiting for init do not count.)"""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rindex(b")") + 2 :].split()
        if int(fields[2]) == pgid and fields[0] != b"Z":
            return True
    return False


def wait_group_gone(pgid: int, timeout: float = 60) -> None:
    """Orphaned git children of a killed guards run on: wait until they are done."""
    deadline = time.monotonic() + timeout
    while _group_alive(pgid):
        if time.monotonic() > deadline:
            os.killpg(pgid, signal.SIGKILL)
            raise AssertionError(f"process group {pgid} still running after {timeout}s")
        time.sleep(0.005)


def guarded_env(tmpdir: Path) -> dict[str, str]:
    return {**os.environ, "GUARDS_SESSION": CALLER, "TMPDIR": str(tmpdir)}


def start(cmd: list[str], cwd: Path, tmpdir: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "guards", "run", "--", *cmd],
        cwd=cwd,
        env=guarded_env(tmpdir),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )


def _wait_for(proc: subprocess.Popen[bytes], seen: object, limit: float) -> None:
    """Spin until ``seen()`` is true or the process exits."""
    deadline = time.monotonic() + limit
    while proc.poll() is None and time.monotonic() < deadline:
        if seen():  # type: ignore[operator]
            return
        time.sleep(0.0005)


def kill_run(
    cmd: list[str], cwd: Path, tmpdir: Path, mode: str, delay: float, whole_group: bool
) -> tuple[int | None, bytes]:
    """Run the guarded command, kill it as ``mode`` says; (exit status or None, stderr)."""
    proc = start(cmd, cwd, tmpdir)
    if mode == "random":
        time.sleep(delay)
    elif mode == "snapshot-started":
        _wait_for(proc, lambda: any(tmpdir.glob("guards-snapshot-*")), 30)
        time.sleep(delay)
    elif mode == "ref-created":
        _wait_for(proc, lambda: (cwd / ".git" / "refs" / "rescue").exists(), 30)
    if whole_group:
        os.killpg(proc.pid, signal.SIGKILL)
    else:
        with contextlib.suppress(ProcessLookupError):
            os.kill(proc.pid, signal.SIGKILL)
    _out, err = proc.communicate(timeout=60)
    wait_group_gone(proc.pid)
    return proc.returncode, err


# -- the trials ---------------------------------------------------------------------------------


@dataclass
class Template:
    path: Path
    prep: Prepared
    durations: dict[str, float]


@pytest.fixture
def template(tmp_path: Path) -> Iterator[Template]:
    """The prepared checkout, built at the path every trial then copies it back to (the
    ledger names work trees by absolute path)."""
    base = tmp_path
    trial = base / "trial"
    prep = prepare(trial)
    stored = base / "template"
    trial.rename(stored)
    durations = {}
    for cmd in COMMANDS:
        shutil.copytree(stored, trial, symlinks=True)
        tmpdir = base / "tmp"
        tmpdir.mkdir(exist_ok=True)
        t0 = time.monotonic()
        proc = start(cmd, trial, tmpdir)
        _out, err = proc.communicate(timeout=120)
        durations[" ".join(cmd)] = time.monotonic() - t0
        assert proc.returncode == 0, err.decode()
        assert b"rescued" in err, err.decode()
        assert lost_content(trial, prep.at_risk) == []
        shutil.rmtree(trial)
    yield Template(stored, prep, durations)


@dataclass
class Outcome:
    trials: int = 0
    losses: int = 0
    failures: list[str] = field(default_factory=list)


def one_trial(template: Template, rng: random.Random, trial_no: int, seed: int) -> list[str]:
    """Run one kill; return the broken invariants (empty: all held)."""
    trial = template.path.parent / "trial"
    tmpdir = template.path.parent / f"tmp-{trial_no}"
    if trial.exists():
        shutil.rmtree(trial)
    shutil.copytree(template.path, trial, symlinks=True)
    tmpdir.mkdir()
    cmd = rng.choice(COMMANDS)
    mode = rng.choice(MODES)
    duration = template.durations[" ".join(cmd)]
    delay = rng.uniform(0, 1.2 * duration) if mode == "random" else rng.uniform(0, 0.05)
    if mode == "ref-created":
        delay = 0.0
    whole_group = rng.random() < 0.5
    where = (
        f"seed={seed} trial={trial_no} cmd={' '.join(cmd)} mode={mode} "
        f"delay={delay:.3f}s group={whole_group}"
    )
    rc, err = kill_run(cmd, trial, tmpdir, mode, delay, whole_group)
    problems = []
    text = err.decode("utf-8", "replace")
    if "Traceback" in text or "internal error" in text:
        problems.append(f"{where}: traceback: {text!r}")
    lost = lost_content(trial, template.prep.at_risk)
    if lost:
        problems.append(f"{where}: LOST {len(lost)} versions, e.g. {lost[:3]} (rc={rc})")
    expected: dict[str, set[bytes]] = {}
    for path, data in template.prep.at_risk:
        expected.setdefault(path, set()).add(data)
    problems += [f"{where}: {p}" for p in incomplete_rescues(trial, expected)]
    try:
        Ledger(trial / ".git" / "guards").read()
    except Exception as e:  # any failure to load is the finding
        problems.append(f"{where}: ledger does not load: {e}")
    res = run_guards(
        "record",
        "--session",
        CALLER,
        "bob.txt",
        cwd=trial,
        env={"GUARDS_LEDGER_LOCK_TIMEOUT": "2s", "TMPDIR": str(tmpdir)},
        timeout=30,
    )
    if res.returncode != 0:
        problems.append(f"{where}: next guards record failed: {res.stderr.strip()}")
    shutil.rmtree(tmpdir, ignore_errors=True)
    return problems


def run_trials(template: Template, trials: int) -> Outcome:
    seed = int(os.environ.get("GUARDS_CRASH_SEED", random.randrange(1 << 30)))
    rng = random.Random(seed)
    outcome = Outcome()
    for n in range(trials):
        problems = one_trial(template, rng, n, seed)
        outcome.trials += 1
        outcome.losses += sum("LOST" in p for p in problems)
        outcome.failures += problems
    print(
        f"crash suite: seed={seed} trials={outcome.trials} losses={outcome.losses} "
        f"failures={len(outcome.failures)} durations="
        + ", ".join(f"{k}: {v:.2f}s" for k, v in template.durations.items())
    )
    return outcome


def check_control(template: Template) -> None:
    """Without a kill, every at-risk version is in a complete rescue and the caller's own
    work was destroyed as asked (so the checks of the trials can fail)."""
    trial = template.path.parent / "trial"  # the path the ledger knows
    shutil.copytree(template.path, trial, symlinks=True)
    tmpdir = template.path.parent / "tmp-control"
    tmpdir.mkdir()
    try:
        proc = start(["reset", "--hard"], trial, tmpdir)
        _out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err.decode()
        assert (trial / "bob.txt").read_bytes() == b"committed bob\n"
        assert lost_content(trial, template.prep.own) == template.prep.own
        refs = rescue_refs(trial)
        assert len(refs) == 2, refs  # alice's and the unknown owner's
        assert lost_content(trial, template.prep.at_risk) == []
        assert incomplete_rescues(trial, {}) == []
    finally:
        shutil.rmtree(trial, ignore_errors=True)


def test_killed_guarded_commands_lose_nothing_and_leave_no_partial_rescue(
    template: Template,
) -> None:
    check_control(template)
    outcome = run_trials(template, 20)
    assert outcome.failures == [], "\n".join(outcome.failures[:10])


@pytest.mark.slow
def test_killed_guarded_commands_lose_nothing_200_trials(template: Template) -> None:
    outcome = run_trials(template, 200)
    assert outcome.failures == [], "\n".join(outcome.failures[:10])


# -- the ledger's journal ---------------------------------------------------------------------

_APPENDER = r"""
import sys
from guards.state.ledger import Ledger, op_attribute
ledger = Ledger(sys.argv[1])
trial = sys.argv[2]
fp = {"size": 1, "mtime_ns": 2, "mode": 33188, "inode": 3, "blob": "ab" * 20}
i = 0
sys.stdout.write("ready\n")
sys.stdout.flush()
while True:
    # ~6 KB per append: writes that span pages, so a kill can tear one
    batch = [
        op_attribute("/w", f"{trial}/{i}/{k}" + "x" * 100,
                     {"session": f"t{trial}", "fingerprint": fp, "recorded": 1.5,
                      "source": "record"})
        for k in range(25)
    ]
    ledger.append(batch)
    sys.stdout.write(f"{i}\n")  # acknowledged: append() returned
    sys.stdout.flush()
    i += 1
"""

_COMPACTOR = r"""
import sys, time
from guards.state.ledger import Ledger
ledger = Ledger(sys.argv[1])
ledger.read()
sys.stdout.write("ready\n")
sys.stdout.flush()
while True:
    ledger.compact()
    time.sleep(0.005)
"""


@pytest.mark.parametrize(("seeded", "trials"), [(0, 16), (100_000, 8)])
def test_writers_and_compactions_killed_mid_append_lose_no_acknowledged_record(
    tmp_path: Path, seeded: int, trials: int
) -> None:
    """SIGKILL an appending writer (and a compaction running beside it) at random
    moments, trial after trial: the ledger always loads, untouched by any "kept aside",
    and every append that returned is in it; also with 100,000 attributions in the
    worktree the compactions fold (each takes long enough to be killed midway)."""
    seed = int(os.environ.get("GUARDS_CRASH_SEED", random.randrange(1 << 30)))
    rng = random.Random(seed)
    directory = tmp_path / "guards"
    ledger = Ledger(directory)
    if seeded:
        fp = {"size": 1, "mtime_ns": 2, "mode": 33188, "inode": 3, "blob": "cd" * 20}
        record = {"session": "seed", "fingerprint": fp, "recorded": 1.0, "source": "record"}
        with ledger.transaction() as data:
            data.attributions("/w").update({f"seed/{i}": record for i in range(seeded)})
    env = {**os.environ, "GUARDS_LEDGER_COMPACT_BYTES": "60000"}
    acked: dict[str, int] = {}
    for trial in range(trials):
        writer = subprocess.Popen(
            [sys.executable, "-c", _APPENDER, str(directory), str(trial)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
        )
        compactor = subprocess.Popen(
            [sys.executable, "-c", _COMPACTOR, str(directory)],
            stdout=subprocess.PIPE,
            env=env,
        )
        assert writer.stdout is not None and compactor.stdout is not None
        assert writer.stdout.readline() == compactor.stdout.readline() == b"ready\n"
        time.sleep(rng.uniform(0.0, 0.4))
        for proc in rng.sample([writer, compactor], 2):
            time.sleep(rng.uniform(0, 0.01))
            proc.kill()
        out, err = writer.communicate()
        compactor.communicate()
        assert b"Traceback" not in err, err.decode()
        lines = out.decode().split("\n")[:-1]  # the last, unterminated line: not acked
        acked[str(trial)] = len(lines)
        data, problem = ledger.peek()
        where = f"seed={seed} trial={trial}"
        assert problem is None and data is not None, f"{where}: {problem}"
        present = data.paths.get("/w", {})
        assert len([k for k in present if k.startswith("seed/")]) == seeded, where
        for t, n in acked.items():
            for i in range(n):
                for k in (0, 24):
                    key = f"{t}/{i}/{k}" + "x" * 100
                    assert key in present, f"{where}: acknowledged record {t}/{i}/{k} lost"
    print(
        f"journal crash suite: seed={seed} trials={len(acked)} acknowledged={sum(acked.values())}"
    )
    assert ledger.kept_aside() == []
    assert ledger.read() == ledger.peek()[0]
    assert sum(acked.values()) > 0
