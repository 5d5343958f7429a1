"""Concurrency suite: 8 writers race in one checkout; no version at risk is ever lost.

Each writer is its own process with its own session (``claude-w3``). In a loop it writes
unique content (``w3-17``: writer and counter; write to a temp file, then rename, so no
one ever sees half a file) to its own files (tracked and untracked) and to shared
tracked files, half the time as a harness's Write tool (the agent hook's PreToolUse
before the write, its PostToolUse after: the barrier), half the time as an
uncooperative writer (write, then ``guards record``), and now and then runs a random
destructive command (``reset --hard``, ``checkout -- .``, ``restore .``, ``clean -fd``,
``stash -u``) through the git shim or ``guards run``. Every step is logged with wall
clock times to the writer's own log.

The invariant, checked at the end from the logs: a version ``c`` of path ``p`` written
by ``Y`` must still exist (in the working tree, the index, a rescue ref or a stash
entry) when some destructive command ``D`` of another writer ``X`` ran entirely while
``c`` was the current, recorded content of ``p``:

- ``c``'s record finished before ``D`` started, and no write to ``p`` began before ``D``
  ended (``c`` was the content for the whole of ``D``);
- no command of ``Y`` itself started in between (``Y`` may destroy its own recorded work,
  as asked), and no other writer recorded ``p`` meanwhile (that would make ``c`` theirs);
- ``D`` ran (a command guards refused, "nothing was run", destroyed and rescued nothing);
- no destructive command was already running when ``c`` was written. Versions written
  while one was running are reported apart: through the hooks, the barrier makes them
  land in its snapshot or after git, so none may be lost (asserted); an uncooperative
  writer's can be overwritten by git after guards' last look (counted and reported).

Also: every process finishes in time (no deadlock), no stderr holds a traceback, the
ledger loads. 10 s in CI, 60 s with ``pytest -m slow``.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from guards.errors import ExitCode
from guards.state.ledger import Ledger
from tests.guarded import install_shim
from tests.helpers import git, make_repo

WRITERS = 8
SHARED = 4

WRITER = r"""
import json, os, random, subprocess, sys, time
wid, repo, shim, deadline, log_path, seed, tmp = sys.argv[1:8]
deadline = float(deadline)
rng = random.Random(int(seed))
me = f"w{wid}"
session = f"claude-{me}"  # the guards session of harness session `me` (its hook's view)
env = {**os.environ, "GUARDS_SESSION": session}
shim_env = {**env, "PATH": shim + os.pathsep + env["PATH"]}
log = open(log_path, "a", buffering=1)
guards = [sys.executable, "-m", "guards"]
COMMANDS = [["reset", "--hard"], ["checkout", "--", "."], ["restore", "."],
            ["clean", "-fd"], ["stash", "-u"]]


def emit(**kw):
    log.write(json.dumps(kw) + "\n")


def hook(event, path):
    # A Write tool call's hook, as Claude Code sends it: may the write go?
    body = {"cwd": repo, "session_id": me, "hook_event_name": event, "tool_name": "Write",
            "tool_input": {"file_path": os.path.join(repo, path), "content": "x"},
            "tool_use_id": f"toolu-{me}-{counter}"}
    p = subprocess.run([sys.executable, "-m", "guards.commands.agent_hook", "claude"],
                       cwd=repo, input=json.dumps(body).encode(), capture_output=True,
                       env=env, timeout=120)
    out = p.stdout.decode()
    return p.returncode == 0 and "deny" not in out, p.stderr.decode("utf-8", "replace")


def run(argv, e):
    try:
        p = subprocess.run(argv, cwd=repo, env=e, capture_output=True, timeout=120)
        return p.returncode, p.stderr.decode("utf-8", "replace")
    except subprocess.TimeoutExpired as exc:
        return "timeout", str(exc)


counter = 0
while time.time() < deadline:
    r = rng.random()
    if r < 0.88:
        if r < 0.35:
            path = f"own/{me}-t{rng.randrange(4)}.txt"
        elif r < 0.5:
            path = f"own/{me}-n{rng.randrange(2)}.txt"
        else:
            path = f"shared/s{rng.randrange(int(os.environ['SHARED']))}.txt"
        counter += 1
        content = f"{me}-{counter}\n"
        # Half the writes come through a harness's Write tool (its hooks around the
        # write: the barrier), half from an uncooperative writer (write, then record).
        mode = "hook" if rng.random() < 0.5 else "plain"
        if mode == "hook":
            ok, err = hook("PreToolUse", path)
            if not ok:
                emit(op="write-denied", path=path, err=err, t=time.time())
                continue
        tmpfile = os.path.join(tmp, f"{me}.tmp")
        with open(tmpfile, "w") as f:
            f.write(content)
        t0 = time.time()
        emit(op="write-start", path=path, content=content, t=t0, mode=mode)
        os.replace(tmpfile, os.path.join(repo, path))
        if mode == "hook":
            ok, err = hook("PostToolUse", path)
            rc = 0 if ok else 1
        else:
            rc, err = run([*guards, "record", "--", path], env)
        emit(op="recorded", path=path, content=content, t0=t0, t=time.time(), rc=rc, err=err,
             mode=mode)
    else:
        cmd = rng.choice(COMMANDS)
        way = rng.choice(["shim", "guards-run"])
        argv = ["git", *cmd] if way == "shim" else [*guards, "run", "--", *cmd]
        t0 = time.time()
        emit(op="destroy-start", cmd=cmd, way=way, t=t0)
        rc, err = run(argv, shim_env if way == "shim" else env)
        emit(op="destroy", cmd=cmd, way=way, t0=t0, t=time.time(), rc=rc, err=err)
    time.sleep(rng.uniform(0, 0.02))
emit(op="done", t=time.time())
"""


@dataclass
class Version:
    writer: str
    path: str
    content: str
    write_start: float
    recorded: float | None  # None: the record failed
    mode: str = "plain"  # "hook": through a harness's Write tool and its hooks


@dataclass
class Destroy:
    writer: str
    cmd: list[str]
    way: str
    start: float
    end: float
    rc: object
    err: str


@dataclass
class Logs:
    versions: list[Version] = field(default_factory=list)
    destroys: list[Destroy] = field(default_factory=list)
    records: list[tuple[str, str, float]] = field(default_factory=list)  # writer, path, end
    stderr: list[tuple[str, str]] = field(default_factory=list)
    done: set[str] = field(default_factory=set)
    #: commands (records and destructive ones) still running after 120 s
    stuck: list[str] = field(default_factory=list)
    #: harness writes the barrier refused (a destructive command ran past the bound)
    denied: int = 0


def read_logs(logs_dir: Path) -> Logs:
    out = Logs()
    for log in sorted(logs_dir.glob("w*.log")):
        writer = log.stem
        for line in log.read_text().splitlines():
            ev = json.loads(line)
            if ev.get("rc") == "timeout":
                out.stuck.append(f"{writer} {ev['op']} {ev.get('path') or ev.get('cmd')}")
            if ev["op"] == "recorded":
                ok = ev["rc"] == 0
                out.versions.append(
                    Version(
                        writer,
                        ev["path"],
                        ev["content"],
                        ev["t0"],
                        ev["t"] if ok else None,
                        ev.get("mode", "plain"),
                    )
                )
                out.records.append((writer, ev["path"], ev["t"]))
                out.stderr.append((f"{writer} record {ev['path']}", ev["err"]))
            elif ev["op"] == "destroy":
                out.destroys.append(
                    Destroy(writer, ev["cmd"], ev["way"], ev["t0"], ev["t"], ev["rc"], ev["err"])
                )
                out.stderr.append((f"{writer} {' '.join(ev['cmd'])} via {ev['way']}", ev["err"]))
            elif ev["op"] == "write-denied":
                out.denied += 1
                out.stderr.append((f"{writer} hook {ev['path']}", ev["err"]))
            elif ev["op"] == "done":
                out.done.add(writer)
    return out


@dataclass
class Verdict:
    checked: list[tuple[Version, Destroy]] = field(default_factory=list)
    raced: list[Version] = field(default_factory=list)


def can_destroy(d: Destroy, path: str) -> bool:
    """Could command ``d`` overwrite or remove ``path``? (Untracked: own/*-n*.txt.)"""
    untracked = "-n" in path
    if d.cmd[0] == "clean":
        return untracked
    if d.cmd[0] == "stash":
        return True
    return not untracked  # reset --hard, checkout -- ., restore .


def ran(d: Destroy) -> bool:
    """Did git run at all? A command guards refused (exit 20, "nothing was run": a rescue
    that could not be verified, say) left the checkout as it was, so it put nothing at
    risk and rescued nothing: a version it saw can still be overwritten afterwards by
    its own writer, as asked."""
    return not (d.rc == ExitCode.REFUSED and "nothing was run" in d.err)


def at_risk_versions(logs: Logs) -> Verdict:
    """The (version, command) pairs the invariant covers; see the module docs."""
    verdict = Verdict()
    writes_by_path: dict[str, list[float]] = {}
    for v in logs.versions:
        writes_by_path.setdefault(v.path, []).append(v.write_start)
    for v in logs.versions:
        if v.recorded is None:
            continue
        later = [t for t in writes_by_path[v.path] if t > v.write_start]
        valid_until = min(later, default=float("inf"))
        for d in logs.destroys:
            if d.writer == v.writer or d.start < v.recorded or d.end > valid_until:
                continue
            if not ran(d):
                continue
            if not can_destroy(d, v.path):
                continue
            own = any(
                o.writer == v.writer and v.recorded <= o.start <= d.end for o in logs.destroys
            )
            claimed = any(
                w != v.writer and p == v.path and v.write_start <= t <= d.end
                for w, p, t in logs.records
            )
            if own or claimed:
                continue
            if any(
                z.start <= v.write_start < z.end and can_destroy(z, v.path) and ran(z)
                for z in logs.destroys
            ):
                verdict.raced.append(v)
            else:
                verdict.checked.append((v, d))
            break
    return verdict


def _git_out(cwd: Path, *args: str, input: bytes | None = None) -> bytes:
    return subprocess.run(
        ["git", *args], cwd=cwd, input=input, capture_output=True, check=True
    ).stdout


def recoverable_contents(repo: Path) -> set[bytes]:
    """Every file content in the working tree, the index, the rescue refs (and their
    parents: staged states) and the stash entries (and their parents)."""
    found: set[bytes] = set()
    for dirpath, dirnames, filenames in os.walk(repo):
        if ".git" in dirnames:
            dirnames.remove(".git")
        for name in filenames:
            full = os.path.join(dirpath, name)
            if not os.path.islink(full):
                found.add(Path(full).read_bytes())
    oids = []
    for rec in _git_out(repo, "ls-files", "-s", "-z").split(b"\0"):
        if rec:
            oids.append(rec.split(b"\t")[0].split()[1])
    tips = _git_out(repo, "for-each-ref", "--format=%(objectname)", "refs/rescue").split()
    stash = subprocess.run(
        ["git", "log", "-g", "--format=%H", "refs/stash"], cwd=repo, capture_output=True
    )
    if stash.returncode == 0:
        tips += stash.stdout.split()
    commits: set[bytes] = set()
    for tip in tips:
        commits.update(_git_out(repo, "rev-list", "--parents", "-n", "1", tip.decode()).split())
    if commits:
        listing = _git_out(
            repo, "rev-list", "--objects", "--no-walk", "--stdin", input=b"\n".join(commits)
        )
        # --no-walk still lists the trees and blobs of each given commit
        oids += [line.split()[0] for line in listing.splitlines() if line.strip()]
    if oids:
        batch = _git_out(repo, "cat-file", "--batch", input=b"\n".join(oids) + b"\n")
        i = 0
        while i < len(batch):
            nl = batch.index(b"\n", i)
            header = batch[i:nl].split()
            if header[-1] == b"missing":
                i = nl + 1
                continue
            size = int(header[2])
            if header[1] == b"blob":
                found.add(batch[nl + 1 : nl + 1 + size])
            i = nl + 1 + size + 1
    return found


def race(tmp_path: Path, seconds: float) -> int:
    """Run the race for ``seconds``; assert the invariant; return how many versions at
    risk it checked (0 when the machine was too loaded for any to be at risk)."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    seed = int(os.environ.get("GUARDS_RACE_SEED", random.randrange(1 << 30)))
    repo = make_repo(
        tmp_path / "repo",
        {
            **{
                f"own/w{i}-t{k}.txt": f"committed w{i} t{k}\n"
                for i in range(WRITERS)
                for k in range(4)
            },
            **{f"shared/s{k}.txt": f"committed s{k}\n" for k in range(SHARED)},
        },
    )
    shim = install_shim(tmp_path / "shim")
    logs_dir = tmp_path / "logs"
    logs_dir.mkdir()
    script = tmp_path / "writer.py"
    script.write_text(WRITER)
    deadline = time.time() + seconds
    procs = []
    for i in range(WRITERS):
        tmp = tmp_path / f"tmp-w{i}"
        tmp.mkdir()
        procs.append(
            subprocess.Popen(
                [
                    sys.executable,
                    str(script),
                    str(i),
                    str(repo),
                    str(shim),
                    str(deadline),
                    str(logs_dir / f"w{i}.log"),
                    str(seed * 100 + i),
                    str(tmp),
                ],
                env={**os.environ, "SHARED": str(SHARED)},
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
            )
        )
    hung = []
    crashed = []
    for i, proc in enumerate(procs):
        try:
            _out, err = proc.communicate(timeout=max(0.0, deadline - time.time()) + 180)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            hung.append(f"w{i}")
            continue
        if proc.returncode != 0:
            crashed.append(f"w{i}: {err.decode()[-500:]}")
    logs = read_logs(logs_dir)
    verdict = at_risk_versions(logs)
    found = recoverable_contents(repo)
    lost = [(v, d) for v, d in verdict.checked if v.content.encode() not in found]
    # versions at risk, but written while another command that could destroy them was
    # already running: through a harness's hooks the barrier covers them (none may be
    # lost); an uncooperative writer's are only narrowed by the second look (counted)
    raced_gone = [v for v in verdict.raced if v.content.encode() not in found]
    hook_raced = [v for v in verdict.raced if v.mode == "hook"]
    hook_gone = [v for v in raced_gone if v.mode == "hook"]
    plain_raced = [v for v in verdict.raced if v.mode != "hook"]
    plain_gone = [v for v in raced_gone if v.mode != "hook"]
    tracebacks = [
        (what, err) for what, err in logs.stderr if "Traceback" in err or "internal error" in err
    ]
    rescue_refs = git(repo, "for-each-ref", "--format=%(refname)", "refs/rescue").split()
    failed = [d for d in logs.destroys if d.rc != 0]
    print(
        f"concurrency suite: seed={seed} seconds={seconds} writers={WRITERS} "
        f"writes={len(logs.versions)} destructive={len(logs.destroys)} "
        f"(exit != 0: {len(failed)}) rescue_refs={len(rescue_refs)} "
        f"versions_checked={len(verdict.checked)} "
        f"raced_through_hooks={len(hook_raced)} (gone: {len(hook_gone)}) "
        f"raced_uncooperative={len(plain_raced)} (gone: {len(plain_gone)}) "
        f"hook_writes_refused={logs.denied} "
        f"losses={len(lost)} hung={len(hung)} tracebacks={len(tracebacks)}"
    )
    ledger_problem = None
    try:
        Ledger(repo / ".git" / "guards").read()
    except Exception as e:  # any failure to load is the finding
        ledger_problem = str(e)
    where = f"(seed {seed}; GUARDS_RACE_SEED={seed} reproduces the inputs)"
    assert not hung, f"writers did not finish (deadlock?): {hung} {where}"
    assert not logs.stuck, f"commands that did not finish in 120 s: {logs.stuck[:3]} {where}"
    assert not crashed, f"writers crashed: {crashed} {where}"
    assert logs.done == {f"w{i}" for i in range(WRITERS)}, where
    assert ledger_problem is None, f"ledger does not load: {ledger_problem} {where}"
    assert not tracebacks, f"tracebacks: {tracebacks[:3]} {where}"
    assert not lost, (
        "LOST: "
        + "; ".join(
            f"{v.content.strip()} of {v.path} (written by {v.writer}, at risk in "
            f"{d.writer}'s {' '.join(d.cmd)} via {d.way}, rc {d.rc})"
            for v, d in lost[:5]
        )
        + f" {where}"
    )
    assert not hook_gone, (
        "LOST through the barrier: "
        + "; ".join(f"{v.content.strip()} of {v.path} (by {v.writer})" for v in hook_gone[:5])
        + f" {where}"
    )
    return len(verdict.checked) if logs.destroys else 0


def test_eight_writers_racing_destructive_commands_lose_no_version_at_risk(
    tmp_path: Path,
) -> None:
    # On a loaded machine (a parallel suite on two cores) every destructive command can
    # take seconds, so that no version is ever at risk in a 10 s race: race again,
    # longer, until one really raced. Every attempt asserts the invariant.
    for seconds in (10, 20, 40):
        if race(tmp_path / f"race-{seconds}s", seconds):
            return
    pytest.fail("the race never raced: no version was at risk in 70 s of racing")


@pytest.mark.slow
def test_eight_writers_racing_for_a_minute_lose_no_version_at_risk(tmp_path: Path) -> None:
    assert race(tmp_path, 60), "the race never raced: no version was at risk"


def test_a_refused_command_puts_nothing_at_risk_and_a_command_that_ran_does() -> None:
    # The timeline of a race that failed in a full suite run (seed 727560197): w0 wrote
    # and recorded w0-4, w1's `stash -u` was refused (a rescue it could not verify: nothing
    # ran), then w0 overwrote its own w0-4. Nothing lost it but its own writer, so the
    # judge must not hold the refused stash to it; had the stash run, it must.
    version = Version("w0", "own/w0-t2.txt", "w0-4\n", write_start=0.0, recorded=0.2)
    overwrite = Version("w0", "own/w0-t2.txt", "w0-9\n", write_start=3.0, recorded=3.2)
    refusal = "guards: rescue could not be verified: ...; retry; nothing was run (override: …)"
    refused = Destroy("w1", ["stash", "-u"], "shim", 1.7, 2.7, ExitCode.REFUSED, refusal)
    ran_through = Destroy("w1", ["stash", "-u"], "shim", 1.7, 2.7, 0, "guards: rescued 1 path")

    def judge(destroy: Destroy) -> Verdict:
        return at_risk_versions(Logs(versions=[version, overwrite], destroys=[destroy]))

    assert judge(refused).checked == []
    assert judge(ran_through).checked == [(version, ran_through)]
