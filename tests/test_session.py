"""Sessions: start/end/list/heartbeat and liveness with pid-reuse protection."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from guards.state.session import Liveness, Session, hostname, judge, process_start_time
from tests.helpers import run_guards


def sessions_json(repo: Path) -> dict[str, dict[str, object]]:
    res = run_guards("session", "list", "--json", cwd=repo)
    assert res.returncode == 0, res.stderr
    return {s["id"]: s for s in json.loads(res.stdout)["sessions"]}


def test_session_start_prints_an_export_line_for_eval(repo: Path) -> None:
    res = run_guards("session", "start", "--id", "pod-architect", "--label", "architect", cwd=repo)
    assert res.returncode == 0, res.stderr
    assert res.stdout == "export GUARDS_SESSION=pod-architect\n"
    s = sessions_json(repo)["pod-architect"]
    assert s["label"] == "architect" and s["liveness"] == "live" and s["host"] == hostname()


def test_session_start_defaults_to_the_calling_process(repo: Path) -> None:
    # A shell that evals the export line lives on: its pid is the session's.
    shell = subprocess.run(
        ["sh", "-c", f'"{sys.executable}" -m guards session start --id via-shell; echo "pid=$$"'],
        cwd=repo,
        capture_output=True,
        text=True,
        check=True,
    )
    shell_pid = int(shell.stdout.split("pid=")[1])
    assert sessions_json(repo)["via-shell"]["pid"] == shell_pid
    # ... and that shell has exited by now: the session is dead.
    assert sessions_json(repo)["via-shell"]["liveness"] == "dead"


def test_generated_id_is_valid_and_unique_enough(repo: Path) -> None:
    res = run_guards("session", "start", cwd=repo)
    assert res.returncode == 0
    assert res.stdout.startswith("export GUARDS_SESSION=s-")


def test_session_end_marks_it_ended(repo: Path) -> None:
    run_guards("session", "start", "--id", "a", cwd=repo)
    assert run_guards("session", "end", cwd=repo, env={"GUARDS_SESSION": "a"}).returncode == 0
    assert sessions_json(repo)["a"]["liveness"] == "ended"


def test_heartbeat_creates_and_refreshes_a_pidless_session(repo: Path) -> None:
    assert run_guards("session", "heartbeat", "--session", "bot", cwd=repo).returncode == 0
    first = sessions_json(repo)["bot"]
    assert first["pid"] is None and first["liveness"] == "live"
    time.sleep(0.05)
    run_guards("session", "heartbeat", cwd=repo, env={"GUARDS_SESSION": "bot"})
    assert sessions_json(repo)["bot"]["last_seen"] > first["last_seen"]  # type: ignore[operator]


def test_pidless_session_dies_after_the_ttl(repo: Path) -> None:
    run_guards("session", "heartbeat", "--session", "bot", cwd=repo)
    env = {"GUARDS_SESSION_TTL": "0"}
    time.sleep(0.05)
    res = run_guards("session", "list", "--json", cwd=repo, env=env)
    assert json.loads(res.stdout)["sessions"][0]["liveness"] == "dead"


def test_live_pid_is_live_and_dead_pid_is_dead(repo: Path) -> None:
    proc = subprocess.Popen(["sleep", "60"])
    try:
        run_guards("session", "start", "--id", "p", "--pid", str(proc.pid), cwd=repo)
        assert sessions_json(repo)["p"]["liveness"] == "live"
    finally:
        proc.kill()
        proc.wait()
    assert sessions_json(repo)["p"]["liveness"] == "dead"


def test_reused_pid_with_another_start_time_is_dead() -> None:
    proc = subprocess.Popen(["sleep", "60"])
    try:
        start = process_start_time(proc.pid)
        assert start is not None
        same = Session(id="x", host=hostname(), pid=proc.pid, pid_start=start)
        reused = Session(id="x", host=hostname(), pid=proc.pid, pid_start=start + "-earlier")
        assert same.liveness(ttl=0) == Liveness.LIVE
        assert reused.liveness(ttl=0) == Liveness.DEAD
    finally:
        proc.kill()
        proc.wait()


ANNOUNCED = """
import sys
from guards.protect.land_queue import LandingQueue
from guards.state import barrier

ledger, worktree = sys.argv[1], sys.argv[2]
barrier.announce_destroyer(ledger, worktree, "git reset --hard")
LandingQueue(ledger, 10).enqueue({"branch": "task", "into": "main"})
print("announced", flush=True)
sys.stdin.read()  # until the test lets it exit
"""


@pytest.mark.skipif(not os.path.exists("/proc/self/stat"), reason="zombies are read in /proc")
def test_a_zombie_process_is_dead_to_sessions_the_landing_queue_and_the_barrier(
    tmp_path: Path,
) -> None:
    """One liveness rule: a process that exited but was not reaped yet has done its work
    (the barrier alone used to say so; sessions and landing tickets called it live)."""
    from guards.protect.land_queue import LandingQueue
    from guards.state import barrier

    ledger, worktree = tmp_path / "guards", str(tmp_path)
    proc = subprocess.Popen(
        [sys.executable, "-c", ANNOUNCED, str(ledger), worktree],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline() == "announced\n"
        start = process_start_time(proc.pid)
        session = Session(id="z", host=hostname(), pid=proc.pid, pid_start=start)
        queue = LandingQueue(ledger, 10)
        assert session.liveness(ttl=0) == Liveness.LIVE
        assert [t["pid"] for t in queue.queued(wait_timeout=1)] == [proc.pid]
        assert barrier.live_destroyers(str(ledger), worktree) == [
            f"pid {proc.pid}: git reset --hard"
        ]

        assert proc.stdin is not None
        proc.stdin.close()  # it exits; nobody reaps it (no wait) until the end
        deadline = time.monotonic() + 30
        while Path(f"/proc/{proc.pid}/stat").read_bytes().rsplit(b") ", 1)[1][:1] != b"Z":
            assert time.monotonic() < deadline, "the process never became a zombie"
            time.sleep(0.01)
        assert process_start_time(proc.pid) == start  # the pid still names it

        verdict = session.verdict(ttl=0)
        assert (verdict.liveness, verdict.pid_running) == (Liveness.DEAD, False)  # "gone"
        assert queue.queued(wait_timeout=1) == []
        assert barrier.live_destroyers(str(ledger), worktree) == []
    finally:
        proc.kill()
        proc.wait()


def _odd_records() -> dict[str, object]:
    now = time.time()
    me, pid = hostname(), os.getpid()
    start = process_start_time(pid)
    return {
        "heartbeat-fresh": {"id": "s", "last_seen": now - 60},
        "heartbeat-expired": {"id": "s", "last_seen": now - 7200},
        "no-id-field": {"last_seen": now - 60},
        "null-heartbeat": {"id": "s", "last_seen": None},
        "text-heartbeat": {"id": "s", "last_seen": str(now)},
        "text-pid": {"id": "s", "pid": str(pid), "pid_start": start, "host": me},
        "live-pid": {"id": "s", "pid": pid, "pid_start": start, "host": me},
        "reused-pid": {"id": "s", "pid": pid, "pid_start": "another start", "host": me},
        "ended-with-live-pid": {"id": "s", "pid": pid, "pid_start": start, "host": me, "ended": 1},
        "other-host-pid": {"id": "s", "pid": pid, "host": "elsewhere", "last_seen": now},
        "not-an-object": "garbage",
    }


@pytest.mark.parametrize("case", sorted(_odd_records()))
def test_doctor_reap_and_the_commit_hook_take_liveness_from_the_one_rule(case: str) -> None:
    """Four readers of a session record used to answer differently for odd ones: the
    commit hook crashed on a null or text heartbeat or pid and ignored a record without
    its ``id``; doctor read a text heartbeat as live; worktrees/reap said unknown."""
    from guards.doctor.ledger import session_states
    from guards.integrations.githooks import _live_sessions
    from guards.protect.worktrees import owner_liveness
    from guards.state.ledger import LedgerData

    now, ttl = time.time(), 1800.0
    data = LedgerData(sessions={"s": _odd_records()[case]})  # type: ignore[dict-item]
    rule = judge("s", data.sessions["s"], ttl, now)
    doctor = session_states(data, ttl, now)["s"]
    assert doctor.verdict == rule
    assert doctor.live == (rule.liveness == Liveness.LIVE)
    if rule.liveness != Liveness.UNKNOWN:
        assert doctor.state in {rule.liveness, "stale"}
    assert owner_liveness(data, "s", ttl, now)[0] == rule.liveness
    assert ("s" in _live_sessions(data, ttl, now)) == (rule.liveness == Liveness.LIVE)


def test_the_rule_on_odd_records() -> None:
    now, ttl = time.time(), 1800.0
    verdicts = {case: judge("s", rec, ttl, now).liveness for case, rec in _odd_records().items()}
    assert verdicts == {
        "heartbeat-fresh": Liveness.LIVE,
        "heartbeat-expired": Liveness.DEAD,
        "no-id-field": Liveness.LIVE,
        "null-heartbeat": Liveness.UNKNOWN,
        "text-heartbeat": Liveness.UNKNOWN,
        "text-pid": Liveness.UNKNOWN,
        "live-pid": Liveness.LIVE,
        "reused-pid": Liveness.DEAD,
        "ended-with-live-pid": Liveness.ENDED,
        "other-host-pid": Liveness.LIVE,
        "not-an-object": Liveness.UNKNOWN,
    }


def test_start_with_a_pid_that_does_not_exist_is_refused(repo: Path) -> None:
    res = run_guards("session", "start", "--pid", "999999999", cwd=repo)
    assert res.returncode == 2 and "no process" in res.stderr


@pytest.mark.parametrize("bad", ["a b", "$(rm -rf ~)", "x;y", "-lead", "a" * 10_000, "é"])
def test_bad_session_ids_are_one_line_errors(repo: Path, bad: str) -> None:
    res = run_guards("session", "start", f"--id={bad}", cwd=repo)
    assert res.returncode == 2
    assert res.stderr.count("\n") == 1 and "invalid session id" in res.stderr
    env_res = run_guards("status", cwd=repo, env={"GUARDS_SESSION": bad})
    assert env_res.returncode == 2 and env_res.stderr.count("\n") == 1


def test_session_list_text_marks_the_caller(repo: Path) -> None:
    run_guards("session", "start", "--id", "me", cwd=repo)
    run_guards("session", "heartbeat", "--session", "other", cwd=repo)
    res = run_guards("session", "list", cwd=repo, env={"GUARDS_SESSION": "me"})
    lines = res.stdout.splitlines()
    assert lines[0].split() == ["SESSION", "LABEL", "STATE", "PID", "LAST", "SEEN", "PATHS"]
    assert any(line.startswith("* me") for line in lines)
    assert any(line.startswith("  other") for line in lines)


def test_no_sessions_says_so(repo: Path) -> None:
    assert run_guards("session", "list", cwd=repo).stdout == "no sessions\n"
