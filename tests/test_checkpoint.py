"""guards checkpoint: the caller's own work onto its own WIP ref, touching nothing."""

from __future__ import annotations

import json
from pathlib import Path

from tests.helpers import git, observe, run_guards


def as_session(session: str, **extra: str) -> dict[str, str]:
    return {"GUARDS_SESSION": session, **extra}


def record(repo: Path, session: str, *paths: str) -> None:
    proc = run_guards("record", *paths, cwd=repo, env=as_session(session))
    assert proc.returncode == 0, proc.stderr


def test_checkpoint_commits_only_my_work_and_touches_nothing(repo: Path) -> None:
    (repo / "README").write_text("mine\n")
    (repo / "src" / "app.py").write_text("someone else's\n")
    (repo / "notes").write_text("mine, untracked\n")
    record(repo, "alice", "README", "notes")
    record(repo, "bob", "src/app.py")
    before = observe(repo)
    proc = run_guards("checkpoint", "-m", "halfway", cwd=repo, env=as_session("alice"))
    assert proc.returncode == 0, proc.stderr
    assert "2 paths to refs/wip/alice" in proc.stdout
    assert observe(repo) == before
    assert git(repo, "diff", "--name-only", "HEAD", "refs/wip/alice").split() == ["README", "notes"]
    message = git(repo, "log", "-1", "--format=%B", "refs/wip/alice")
    assert "halfway" in message and "Rescued-For: alice" in message


def test_each_checkpoint_is_a_new_commit_on_the_same_ref(repo: Path) -> None:
    (repo / "README").write_text("one\n")
    record(repo, "alice", "README")
    assert run_guards("checkpoint", cwd=repo, env=as_session("alice")).returncode == 0
    first = git(repo, "rev-parse", "refs/wip/alice").strip()
    (repo / "README").write_text("two\n")
    record(repo, "alice", "README")
    assert run_guards("checkpoint", cwd=repo, env=as_session("alice")).returncode == 0
    second = git(repo, "rev-parse", "refs/wip/alice").strip()
    assert first != second
    parents = git(repo, "log", "-1", "--format=%P", second).split()
    assert parents[-1] == first
    assert git(repo, "show", "refs/wip/alice:README") == "two\n"
    assert len(git(repo, "reflog", "show", "refs/wip/alice").splitlines()) == 2


def test_checkpoint_with_nothing_of_mine_does_nothing(repo: Path) -> None:
    (repo / "README").write_text("unknown owner\n")
    proc = run_guards("checkpoint", cwd=repo, env=as_session("alice"))
    assert proc.returncode == 0
    assert "nothing of session alice" in proc.stdout
    assert not git(repo, "for-each-ref", "refs/wip")


def test_checkpoint_needs_a_session(repo: Path) -> None:
    proc = run_guards("checkpoint", cwd=repo)
    assert proc.returncode == 2 and "GUARDS_SESSION" in proc.stderr


def test_checkpoint_pushes_without_secrets_or_local_history(repo: Path, tmp_path: Path) -> None:
    bare = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(bare))
    git(repo, "remote", "add", "origin", f"file://{bare}")
    env = as_session("alice", GUARDS_RESCUE_REMOTE="origin")
    (repo / ".env").write_text("TOKEN=1\n")
    (repo / "README").write_text("one\n")
    record(repo, "alice", ".env", "README")
    proc = run_guards("checkpoint", "--json", cwd=repo, env=env)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)["checkpoint"]
    assert doc["push"] == "pushed" and doc["local_only"] == [".env"]
    assert git(bare, "show", "refs/wip/alice:README") == "one\n"
    assert git(bare, "ls-tree", "--name-only", "refs/wip/alice").split().count(".env") == 0
    # A second checkpoint replaces our own WIP on the remote; the secret never travels.
    (repo / "README").write_text("two\n")
    record(repo, "alice", "README")
    proc = run_guards("checkpoint", cwd=repo, env=env)
    assert proc.returncode == 0 and "pushed to origin" in proc.stdout, proc.stdout + proc.stderr
    assert git(bare, "show", "refs/wip/alice:README") == "two\n"
    objects = git(bare, "cat-file", "--batch-all-objects", "--batch-check=%(objectname)")
    secret = git(repo, "rev-parse", "refs/wip/alice:.env").strip()
    assert secret not in objects
