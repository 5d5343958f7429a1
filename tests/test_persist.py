"""Persist at session end: the session's own work to its WIP ref, pushed with a lease."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from guards.protect.persist import PersistOutcome, PersistResult, persist_session
from guards.state.ledger import Ledger
from guards.state.session import hostname
from guards.state.workspace import Workspace
from tests.helpers import git, make_repo, observe, run_guards


def start(repo: Path, session: str, cwd: Path | None = None) -> None:
    proc = run_guards("session", "start", "--id", session, cwd=cwd or repo)
    assert proc.returncode == 0, proc.stderr


def record(repo: Path, session: str, *paths: str) -> None:
    proc = run_guards("record", "--session", session, *paths, cwd=repo)
    assert proc.returncode == 0, proc.stderr


def ended(repo: Path, session: str) -> bool:
    common = git(repo, "rev-parse", "--path-format=absolute", "--git-common-dir").strip()
    data = Ledger(Path(common) / "guards")
    return bool(data.read().sessions[session]["ended"])


def bare_remote(tmp_path: Path, name: str = "remote.git") -> Path:
    bare = tmp_path / name
    git(tmp_path, "init", "-q", "--bare", str(bare))
    return bare


def end(repo: Path, session: str, remote: str | None = "origin") -> dict[str, object]:
    env = {"GUARDS_RESCUE_REMOTE": remote} if remote else {}
    proc = run_guards("session", "end", session, "--json", cwd=repo, env=env)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["ended"] is True and ended(repo, session)
    persist = doc["persist"]
    assert isinstance(persist, dict)
    return persist


@pytest.fixture
def world(repo: Path, tmp_path: Path) -> tuple[Path, Path]:
    bare = bare_remote(tmp_path)
    git(repo, "remote", "add", "origin", f"file://{bare}")
    start(repo, "alice")
    (repo / "README").write_text("alice's half-done work\n")
    (repo / "notes.txt").write_text("untracked, alice's\n")
    (repo / "src" / "app.py").write_text("bob's\n")
    record(repo, "alice", "README", "notes.txt")
    record(repo, "bob", "src/app.py")
    return repo, bare


def test_session_end_checkpoints_own_work_and_pushes_it(world: tuple[Path, Path]) -> None:
    repo, bare = world
    before = observe(repo)
    persist = end(repo, "alice")
    assert persist["outcome"] == PersistOutcome.PUSHED and persist["failed"] is False
    assert persist["ref"] == "refs/wip/alice" and persist["paths"] == ["README", "notes.txt"]
    after = observe(repo)
    after["refs"] = [r for r in after["refs"] if not r.startswith("refs/guards/")]
    assert after == before  # the work tree, index, HEAD and branches untouched
    assert git(bare, "show", "refs/wip/alice:README") == "alice's half-done work\n"
    assert git(bare, "show", "refs/wip/alice:src/app.py") == "print('hi')\n"  # not bob's
    # The lease for the next push is what was pushed.
    assert (
        git(repo, "rev-parse", "refs/guards/remote/origin/wip/alice").strip()
        == git(bare, "rev-parse", "refs/wip/alice").strip()
    )


def test_session_end_in_text_says_what_was_persisted(world: tuple[Path, Path]) -> None:
    repo, _ = world
    proc = run_guards("session", "end", "alice", cwd=repo, env={"GUARDS_RESCUE_REMOTE": "origin"})
    assert proc.returncode == 0, proc.stderr
    assert "2 paths to refs/wip/alice; pushed to origin" in proc.stdout


def test_session_end_with_nothing_of_its_own_pushes_nothing(repo: Path, tmp_path: Path) -> None:
    bare = bare_remote(tmp_path)
    git(repo, "remote", "add", "origin", f"file://{bare}")
    start(repo, "alice")
    (repo / "README").write_text("owner unknown\n")
    persist = end(repo, "alice")
    assert persist["outcome"] == PersistOutcome.NOTHING_TO_PUSH and persist["commit"] is None
    assert git(bare, "for-each-ref") == "" and git(repo, "for-each-ref", "refs/wip") == ""


def test_session_end_without_a_remote_keeps_the_checkpoint_local(world: tuple[Path, Path]) -> None:
    repo, bare = world
    persist = end(repo, "alice", remote=None)
    assert persist["outcome"] == PersistOutcome.LOCAL_ONLY and persist["push"] is None
    assert git(repo, "show", "refs/wip/alice:README") == "alice's half-done work\n"
    assert git(bare, "for-each-ref") == ""


def test_a_rejected_push_is_reported_and_the_session_still_ends(
    world: tuple[Path, Path],
) -> None:
    repo, bare = world
    hook = bare / "hooks" / "pre-receive"
    hook.parent.mkdir(exist_ok=True)
    hook.write_text("#!/bin/sh\necho 'no WIP here' >&2\nexit 1\n")
    hook.chmod(0o755)
    proc = run_guards("session", "end", "alice", cwd=repo, env={"GUARDS_RESCUE_REMOTE": "origin"})
    assert proc.returncode == 0 and ended(repo, "alice")
    assert "push to origin failed (rejected" in proc.stderr and "kept locally" in proc.stderr
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    assert git(repo, "show", "refs/wip/alice:README") == "alice's half-done work\n"
    assert git(bare, "for-each-ref") == ""


def test_an_unreachable_remote_is_a_network_outcome(
    world: tuple[Path, Path], tmp_path: Path
) -> None:
    repo, _ = world
    persist = end(repo, "alice", remote=f"file://{tmp_path / 'nowhere.git'}")
    assert persist["outcome"] == PersistOutcome.NETWORK and persist["failed"] is True
    assert git(repo, "show", "refs/wip/alice:README") == "alice's half-done work\n"


def push_elsewhere(bare: Path, tmp_path: Path, ref: str, content: str) -> str:
    """Another machine moves ``ref`` on the remote (the same session id elsewhere)."""
    other = make_repo(tmp_path / f"other-{content}", {"other.txt": content})
    git(other, "push", "-q", "--force", str(bare), f"HEAD:{ref}")
    return git(other, "rev-parse", "HEAD").strip()


def test_a_remote_that_moved_is_fetched_and_pushed_once_more_keeping_its_commit(
    world: tuple[Path, Path], tmp_path: Path
) -> None:
    repo, bare = world
    env = {"GUARDS_SESSION": "alice", "GUARDS_RESCUE_REMOTE": "origin"}
    assert run_guards("checkpoint", cwd=repo, env=env).returncode == 0
    theirs = push_elsewhere(bare, tmp_path, "refs/wip/alice", "elsewhere\n")
    (repo / "README").write_text("alice, later\n")
    record(repo, "alice", "README")
    persist = end(repo, "alice")
    assert persist["outcome"] == PersistOutcome.PUSHED and persist["retried"] is True
    tip = git(bare, "rev-parse", "refs/wip/alice").strip()
    assert tip == persist["pushed_commit"]
    # Nothing the remote held was dropped: the other machine's commit is in its history.
    git(bare, "merge-base", "--is-ancestor", theirs, tip)
    assert git(bare, "show", "refs/wip/alice:README") == "alice, later\n"


def test_a_remote_that_moves_again_after_the_retry_is_reported(
    world: tuple[Path, Path], tmp_path: Path
) -> None:
    repo, bare = world
    # Fetches read one repository and pushes go to another whose ref moved too: the
    # lease is stale again after the one retry.
    push_to = bare_remote(tmp_path, "push-side.git")
    git(repo, "config", "remote.origin.pushurl", f"file://{push_to}")
    push_elsewhere(bare, tmp_path, "refs/wip/alice", "fetched\n")
    push_elsewhere(push_to, tmp_path, "refs/wip/alice", "pushed\n")
    persist = end(repo, "alice")
    assert persist["outcome"] == PersistOutcome.REMOTE_MOVED and persist["retried"] is True
    assert "stale" in str(persist["push_detail"])
    assert git(repo, "show", "refs/wip/alice:README") == "alice's half-done work\n"


def test_no_persist_only_ends_the_session(world: tuple[Path, Path]) -> None:
    repo, _ = world
    proc = run_guards("session", "end", "alice", "--no-persist", "--json", cwd=repo)
    assert proc.returncode == 0 and json.loads(proc.stdout)["persist"] is None
    assert ended(repo, "alice") and git(repo, "for-each-ref", "refs/wip") == ""


def test_ending_an_unknown_session_is_a_usage_error(repo: Path) -> None:
    proc = run_guards("session", "end", "nobody", cwd=repo)
    assert proc.returncode == 2 and "no session 'nobody'" in proc.stderr


def test_the_session_s_own_worktree_is_persisted_from_anywhere(repo: Path, tmp_path: Path) -> None:
    wt = tmp_path / "wt-alice"
    proc = run_guards("worktree", "add", str(wt), "-b", "task", "--session", "alice", cwd=repo)
    assert proc.returncode == 0, proc.stderr
    (wt / "README").write_text("in alice's worktree\n")
    record(wt, "alice", "README")
    persist = end(repo, "alice", remote=None)  # run from the main worktree
    assert persist["paths"] == ["README"]
    assert git(repo, "show", "refs/wip/alice:README") == "in alice's worktree\n"


def test_persist_session_never_raises(repo: Path) -> None:
    ws = Workspace.open(repo)
    (repo / ".git" / "guards").mkdir(exist_ok=True)
    (repo / ".git" / "guards" / "ledger.json").mkdir()  # unreadable, and never kept aside
    result = persist_session(ws, "alice")
    assert result.outcome == PersistOutcome.FAILED and result.failed
    assert "could not checkpoint the work of session alice" in result.line()


def test_an_unknown_push_outcome_is_not_a_failure() -> None:
    result = PersistResult(
        "alice",
        PersistOutcome.UNKNOWN,
        ref="refs/wip/alice",
        commit="0123456789abcdef",
        paths=["a"],
        remote="origin",
        detail="git push did not report this ref",
    )
    assert not result.failed
    assert "unknown" in result.line() and "failed" not in result.line()


def kill_session(repo: Path, session: str) -> None:
    """Make ``session`` dead: its recorded process is gone."""
    gone = subprocess.Popen(["true"])
    gone.wait()
    with Ledger(repo / ".git" / "guards").transaction() as data:
        data.sessions[session].update(
            {"pid": gone.pid, "pid_start": "0:1", "host": hostname(), "ended": False}
        )


def test_frame_and_doctor_show_the_last_checkpoint_of_a_dead_session(repo: Path) -> None:
    (repo / "README").write_text("bob's work\n")
    record(repo, "bob", "README")
    proc = run_guards("checkpoint", cwd=repo, env={"GUARDS_SESSION": "bob"})
    assert proc.returncode == 0, proc.stderr
    frame = run_guards("frame", cwd=repo, env={"GUARDS_SESSION": "alice"})
    assert "stopped without ending" not in frame.stdout  # bob is alive (heartbeat)
    kill_session(repo, "bob")
    frame = run_guards("frame", cwd=repo, env={"GUARDS_SESSION": "alice"})
    assert frame.returncode == 0, frame.stderr
    assert "Session bob stopped without ending; its last checkpoint: refs/wip/bob (" in frame.stdout
    doc = json.loads(run_guards("frame", "--json", cwd=repo).stdout)
    assert [(c["session"], c["ref"]) for c in doc["checkpoints"]] == [("bob", "refs/wip/bob")]
    report = json.loads(run_guards("doctor", "--json", cwd=repo).stdout)
    found = next(f for f in report["findings"] if f["check"] == "checkpoints")
    assert found["level"] == "warn" and "bob refs/wip/bob" in found["message"]
    assert (
        found["data"]["checkpoints"][0]["commit"] == git(repo, "rev-parse", "refs/wip/bob").strip()
    )
    # Ended sessions are no longer "stopped without ending".
    assert run_guards("session", "end", "bob", "--no-persist", cwd=repo).returncode == 0
    assert "stopped without ending" not in run_guards("frame", cwd=repo).stdout
