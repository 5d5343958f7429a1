"""guards reap: rescue first, prune second; skip whatever cannot be proven abandoned."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from guards.state.ledger import Ledger
from guards.state.session import hostname, process_start_time
from tests.helpers import git, make_repo, run_guards


def set_session(
    repo: Path,
    sid: str,
    *,
    pid: int | None = None,
    pid_start: str | None = None,
    last_seen: float | None = None,
    ended: bool = False,
) -> None:
    now = time.time()
    with Ledger(repo / ".git" / "guards").transaction() as data:
        data.sessions[sid] = {
            "id": sid,
            "label": "",
            "host": hostname(),
            "pid": pid,
            "pid_start": pid_start,
            "worktree": None,
            "started": now - 7200,
            "last_seen": now - 7200 if last_seen is None else last_seen,
            "ended": ended,
        }


def gone_pid() -> int:
    """The pid of a process that has exited."""
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def dead(repo: Path, sid: str) -> None:
    set_session(repo, sid, pid=gone_pid(), pid_start="0:1")


def add(repo: Path, path: Path, sid: str, *extra: str) -> Path:
    res = run_guards("worktree", "add", str(path), "--session", sid, *extra, cwd=repo)
    assert res.returncode == 0, res.stderr
    return path


def rescue_refs(repo: Path) -> list[str]:
    return git(repo, "for-each-ref", "--format=%(refname)", "refs/rescue").split()


def observe(repo: Path, *worktrees: Path) -> str:
    """Everything the dry run must leave alone: refs, worktrees, ledger, files, index."""
    h = hashlib.sha256()
    h.update(git(repo, "for-each-ref", "--format=%(objectname) %(refname)").encode())
    h.update(git(repo, "worktree", "list", "--porcelain").encode())
    st = os.stat(repo / ".git" / "index")
    h.update(f"{st.st_mtime_ns}".encode() + (repo / ".git" / "index").read_bytes())
    for name in ("ledger.json", "worktrees.lock"):
        p = repo / ".git" / "guards" / name
        h.update(p.read_bytes() if p.exists() else b"absent")
    # The worktrees, and their git dirs (index bytes and mtime included).
    for wt in (*worktrees, repo / ".git" / "worktrees"):
        for dirpath, _dirs, files in os.walk(wt):
            for f in sorted(files):
                full = Path(dirpath) / f
                st = os.lstat(full)
                h.update(f"{full} {st.st_mtime_ns} {st.st_size}".encode())
                if not full.is_symlink():
                    h.update(full.read_bytes())
    return h.hexdigest()


@pytest.fixture
def app(tmp_path: Path) -> Path:
    repo = make_repo(
        tmp_path / "app",
        {
            "README": "hello\n",
            "src/app.py": "print('hi')\n",
            ".gitignore": "*.cache\nnode_modules/\n",
            ".worktreeinclude": "node_modules\n",
        },
    )
    (repo / "node_modules").mkdir()
    (repo / "node_modules" / "dep.js").write_text("dep\n")
    return repo


def test_dead_owner_is_reaped_with_everything_verified_recoverable(
    app: Path, tmp_path: Path
) -> None:
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    git(app, "remote", "add", "origin", str(remote))
    git(app, "push", "-q", "origin", "main")
    wt = add(app, tmp_path / "wt", "s1", "-b", "topic")
    (wt / "README").write_text("committed on topic\n")
    git(wt, "commit", "-q", "-am", "topic commit")
    topic_tip = git(wt, "rev-parse", "HEAD").strip()
    (wt / "src" / "app.py").write_text("print('edited')\n")
    (wt / "new.py").write_text("brand new\n")
    (wt / "staged.txt").write_text("staged\n")
    git(wt, "add", "staged.txt")
    (wt / "build.cache").write_text("ignored but precious\n")
    dead(app, "s1")
    env = {"GUARDS_RESCUE_REMOTE": "origin"}

    before = observe(app, wt)
    dry = run_guards("reap", cwd=app, env=env)
    assert dry.returncode == 0, dry.stderr
    assert f"would reap {wt}" in dry.stdout
    assert "rescue 4 dirty paths, keep 1 unpushed commit, remove" in dry.stdout
    assert "dry run: nothing changed" in dry.stdout
    assert observe(app, wt) == before

    res = run_guards("reap", "--apply", cwd=app, env=env)
    assert res.returncode == 0, res.stderr
    assert f"reaped {wt}" in res.stdout
    assert "pid" in res.stdout and "gone" in res.stdout
    assert not wt.exists()
    assert str(wt) not in git(app, "worktree", "list", "--porcelain")
    assert os.path.realpath(wt) not in Ledger(app / ".git" / "guards").read().worktrees
    refs = rescue_refs(app)
    assert len(refs) == 2 and all(r.startswith("refs/rescue/s1/") for r in refs)
    paths_ref = next(r for r in refs if git(app, "rev-parse", r).strip() != topic_tip)
    commit_ref = next(r for r in refs if r != paths_ref)
    # Every kind of work comes back from the rescue refs, byte for byte.
    assert git(app, "show", f"{paths_ref}:src/app.py") == "print('edited')\n"
    assert git(app, "show", f"{paths_ref}:new.py") == "brand new\n"
    assert git(app, "show", f"{paths_ref}:staged.txt") == "staged\n"
    assert git(app, "show", f"{paths_ref}:build.cache") == "ignored but precious\n"
    assert git(app, "show", f"{paths_ref}:README") == "committed on topic\n"
    assert git(app, "rev-parse", commit_ref).strip() == topic_tip
    # The included link was as guards left it: not work, not rescued.
    assert git(app, "ls-tree", paths_ref, "node_modules") == ""
    # Pushed: the remote has the rescue refs (ignored files stay local only).
    remote_refs = git(remote, "for-each-ref", "--format=%(refname)", "refs/rescue").split()
    assert sorted(remote_refs) == sorted(refs)
    pushed = git(remote, "rev-parse", paths_ref).strip()
    assert git(remote, "show", f"{pushed}:new.py") == "brand new\n"
    assert git(remote, "ls-tree", pushed, "build.cache") == ""
    assert "pushed to origin" in res.stdout


def test_pid_reused_counts_as_dead_and_is_reaped(app: Path, tmp_path: Path) -> None:
    wt = add(app, tmp_path / "wt", "s1")
    (wt / "notes.txt").write_text("left behind\n")
    # Our own pid is alive, but its start time is not the recorded one: reused.
    set_session(app, "s1", pid=os.getpid(), pid_start="0:1")
    res = run_guards("reap", "--apply", cwd=app)
    assert res.returncode == 0, res.stderr
    assert f"pid {os.getpid()} reused" in res.stdout
    assert not wt.exists()
    (ref,) = rescue_refs(app)
    assert git(app, "show", f"{ref}:notes.txt") == "left behind\n"


def test_worktrees_that_may_still_be_in_use_are_skipped_and_reported(
    app: Path, tmp_path: Path
) -> None:
    live = add(app, tmp_path / "live", "s-live")
    set_session(app, "s-live", pid=os.getpid(), pid_start=process_start_time(os.getpid()))
    recent = add(app, tmp_path / "recent", "s-recent")
    set_session(app, "s-recent", last_seen=time.time())  # no pid: heartbeat within the TTL
    person = add(app, tmp_path / "person", "s-person")
    dead(app, "s-person")
    git(app, "worktree", "unlock", str(person))
    git(app, "worktree", "lock", "--reason", "Ana: keep until review", str(person))
    busy = add(app, tmp_path / "busy", "s-busy")
    dead(app, "s-busy")
    idle_soon = add(app, tmp_path / "idle", "s-idle")
    dead(app, "s-idle")
    for wt in (live, recent, person, busy, idle_soon):
        (wt / "work.txt").write_text(f"work in {wt.name}\n")
    sleeper = subprocess.Popen(["sleep", "60"], cwd=busy / "src")
    try:
        res = run_guards("reap", "--apply", "--min-idle", "1h", cwd=app)
    finally:
        sleeper.kill()
        sleeper.wait()
    assert res.returncode == 0, res.stderr
    out = res.stdout
    assert f"skip {live}: owner s-live is alive (pid {os.getpid()} alive)" in out
    assert f"skip {recent}: owner s-recent is alive (heartbeat" in out
    assert f"skip {person}: locked by a person or another tool (Ana: keep until review)" in out
    assert f"skip {busy}: active" in out  # --min-idle 1h: its files changed just now
    assert f"skip {idle_soon}: active" in out
    assert rescue_refs(app) == []
    for wt in (live, recent, person, busy, idle_soon):
        assert (wt / "work.txt").exists()
    # Without --min-idle the dead owners' worktrees qualify; a process inside still wins.
    sleeper = subprocess.Popen(["sleep", "60"], cwd=busy / "src")
    try:
        res = run_guards("reap", "--apply", cwd=app)
    finally:
        sleeper.kill()
        sleeper.wait()
    assert f"skip {busy}: process {sleeper.pid} running inside" in res.stdout
    assert f"reaped {idle_soon}" in res.stdout
    assert busy.exists() and not idle_soon.exists()
    assert f"skip {person}: locked by a person" in res.stdout and person.exists()


def test_a_worktree_whose_check_cannot_run_is_skipped(app: Path, tmp_path: Path) -> None:
    wt = add(app, tmp_path / "wt", "s1")
    (wt / "work.txt").write_text("work\n")
    dead(app, "s1")
    gitdir = Path(git(wt, "rev-parse", "--absolute-git-dir").strip())
    (gitdir / "index").write_bytes(b"not an index")
    res = run_guards("reap", "--apply", cwd=app)
    assert res.returncode == 0, res.stderr
    assert f"skip {wt}: check could not run" in res.stdout
    assert (wt / "work.txt").exists()


def test_pinned_by_another_live_session_is_skipped(app: Path, tmp_path: Path) -> None:
    wt = add(app, tmp_path / "wt", "s1")
    dead(app, "s1")
    set_session(app, "s2", pid=os.getpid(), pid_start=process_start_time(os.getpid()))
    git(app, "worktree", "unlock", str(wt))
    git(app, "worktree", "lock", "--reason", "guards: session s2", str(wt))
    res = run_guards("reap", "--apply", cwd=app)
    assert f"skip {wt}: pinned by live session s2" in res.stdout
    assert wt.exists()


def test_unregistered_worktrees_are_reaped_only_with_the_flag(app: Path, tmp_path: Path) -> None:
    wt = tmp_path / "plain"
    git(app, "worktree", "add", "-q", "--detach", str(wt))
    (wt / "README").write_text("a detached commit\n")
    git(wt, "commit", "-q", "-am", "detached work")
    tip = git(wt, "rev-parse", "HEAD").strip()
    (wt / "scratch.txt").write_text("scratch\n")
    env = {"GUARDS_SESSION_TTL": "0"}  # no owner to ask: idleness decides
    res = run_guards("reap", "--apply", cwd=app, env=env)
    assert f"skip {wt}: not made by guards (reaped only with --include-unregistered)" in res.stdout
    assert wt.exists() and rescue_refs(app) == []
    res = run_guards("reap", "--apply", "--include-unregistered", cwd=app)
    assert f"skip {wt}: active" in res.stdout  # the default TTL (30 min) has not passed
    res = run_guards("reap", "--apply", "--include-unregistered", cwd=app, env=env)
    assert res.returncode == 0, res.stderr
    assert f"reaped {wt}" in res.stdout and not wt.exists()
    refs = rescue_refs(app)
    assert all(r.startswith("refs/rescue/unknown/") for r in refs) and len(refs) == 2
    kept = [r for r in refs if git(app, "rev-parse", r).strip() == tip]
    assert kept, "the detached commit stays reachable"
    scratch = next(r for r in refs if r not in kept)
    assert git(app, "show", f"{scratch}:scratch.txt") == "scratch\n"


def test_a_prunable_worktree_keeps_its_commits_and_loses_its_entry(
    app: Path, tmp_path: Path
) -> None:
    wt = add(app, tmp_path / "wt", "s1", "--from", "HEAD")
    git(wt, "checkout", "-q", "--detach")
    (wt / "README").write_text("only here\n")
    git(wt, "commit", "-q", "-am", "only here")
    tip = git(wt, "rev-parse", "HEAD").strip()
    import shutil

    shutil.rmtree(wt)
    dead(app, "s1")
    res = run_guards("reap", "--apply", cwd=app)
    assert res.returncode == 0, res.stderr
    assert f"reaped {wt}" in res.stdout
    assert str(wt) not in git(app, "worktree", "list", "--porcelain")
    (ref,) = rescue_refs(app)
    assert git(app, "rev-parse", ref).strip() == tip


def test_two_reapers_at_once_do_the_work_once_and_lose_nothing(app: Path, tmp_path: Path) -> None:
    worktrees = []
    for i in range(3):
        wt = add(app, tmp_path / f"wt{i}", f"s{i}")
        (wt / "work.txt").write_text(f"work {i}\n")
        (wt / "x.cache").write_text(f"cache {i}\n")
        dead(app, f"s{i}")
        worktrees.append(wt)
    env = dict(os.environ)
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "guards", "reap", "--apply", "--json"],
            cwd=app,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    outputs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outputs
    reaped = [
        w["path"]
        for out, _err in outputs
        for w in json.loads(out)["worktrees"]
        if w["outcome"] == "reaped"
    ]
    assert sorted(reaped) == sorted(str(w) for w in worktrees)  # each exactly once
    refs = rescue_refs(app)
    assert len(refs) == 3
    for i, wt in enumerate(worktrees):
        assert not wt.exists()
        (ref,) = [r for r in refs if r.startswith(f"refs/rescue/s{i}/")]
        assert git(app, "show", f"{ref}:work.txt") == f"work {i}\n"
        assert git(app, "show", f"{ref}:x.cache") == f"cache {i}\n"
    log = Ledger(app / ".git" / "guards").read().rescues
    assert len(log) == 3


def test_ended_session_is_reaped_and_a_clean_worktree_needs_no_rescue(
    app: Path, tmp_path: Path
) -> None:
    wt = add(app, tmp_path / "wt", "s1")
    set_session(app, "s1", ended=True, last_seen=time.time())
    res = run_guards("reap", "--apply", cwd=app)
    assert res.returncode == 0, res.stderr
    assert f"reaped {wt} (owner s1 ended" in res.stdout
    assert not wt.exists() and rescue_refs(app) == []
    assert run_guards("reap", cwd=app).stdout == "no linked worktrees\n"


def test_bad_reap_input_is_one_line(app: Path) -> None:
    for args in (["reap", "--min-idle", "soon"], ["reap", "--bogus"]):
        res = run_guards(*args, cwd=app)
        assert res.returncode == 2
        assert len(res.stderr.strip().splitlines()) == 1 and "Traceback" not in res.stderr


def test_min_idle_without_a_unit_is_refused_naming_the_units(app: Path) -> None:
    res = run_guards("reap", "--min-idle", "30", cwd=app)
    assert res.returncode == 2
    assert res.stderr == (
        "guards: bad --min-idle '30': expected a duration with its unit: 90s, 30m, 2h, 14d or 1w\n"
    )


def test_a_reaper_running_inside_the_worktree_leaves_it(app: Path, tmp_path: Path) -> None:
    wt = add(app, tmp_path / "wt", "s1")
    (wt / "work.txt").write_text("work\n")
    dead(app, "s1")
    res = run_guards("reap", "--apply", cwd=wt)
    assert res.returncode == 0, res.stderr
    assert f"skip {wt}: process" in res.stdout and "running inside" in res.stdout
    assert (wt / "work.txt").exists() and rescue_refs(app) == []
