"""guards land: queued merge commits onto the integration branch, never a force."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import filelock
import pytest

from guards.errors import ExitCode
from guards.protect.land_queue import LAND_LOCK, LandingQueue
from guards.state.session import hostname
from tests.helpers import commit_file, git, head, run_guards


def branch_with(repo: Path, branch: str, name: str, content: str, start: str = "main") -> str:
    """A branch off ``start`` with one commit writing ``name``, made without a checkout
    (the main worktree stays on main)."""
    blob = git(repo, "hash-object", "-w", "--stdin", input=content.encode()).strip()
    index = repo / ".git" / f"index-{branch}"
    env_git = ["env", f"GIT_INDEX_FILE={index}", "git"]
    subprocess.run([*env_git, "read-tree", start], cwd=repo, check=True)
    subprocess.run(
        [*env_git, "update-index", "--add", "--cacheinfo", f"100644,{blob},{name}"],
        cwd=repo,
        check=True,
    )
    tree = subprocess.run(
        [*env_git, "write-tree"], cwd=repo, check=True, capture_output=True, text=True
    ).stdout.strip()
    index.unlink()
    commit = git(repo, "commit-tree", tree, "-p", start, "-m", f"{branch}: {name}").strip()
    git(repo, "branch", branch, commit)
    return commit


def parents(repo: Path, rev: str) -> list[str]:
    return git(repo, "log", "-1", "--format=%P", rev).split()


def land(repo: Path, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    proc = run_guards("land", *args, cwd=cwd or repo)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


def test_a_worktree_branch_lands_as_a_merge_into_the_branch_it_was_cut_from(
    repo: Path, tmp_path: Path
) -> None:
    wt = tmp_path / "wt-alice"
    made = run_guards("worktree", "add", str(wt), "-b", "task", "--session", "alice", cwd=repo)
    assert made.returncode == 0, made.stderr
    task = commit_file(wt, "feature.txt", "new feature\n")
    before = head(repo, "main")
    (wt / "scratch.txt").write_text("not committed\n")
    proc = land(repo, cwd=wt)  # no arguments: this worktree's branch, into main
    assert proc.returncode == 0, proc.stderr
    assert "landed task" in proc.stdout and "into main as merge" in proc.stdout
    assert "1 uncommitted path in" in proc.stdout and "is not part of what landed" in proc.stdout
    assert not (repo / "scratch.txt").exists()
    merge = head(repo, "main")
    # A merge commit even though a fast-forward was possible; the branch is untouched.
    assert parents(repo, merge) == [before, task] and head(repo, "task") == task
    assert git(repo, "log", "-1", "--format=%s", merge) == "Merge branch 'task' into main\n"
    # main's checkout was brought up to date as git merge would, and is clean.
    assert (repo / "feature.txt").read_text() == "new feature\n"
    assert git(repo, "status", "--porcelain") == ""
    listed = json.loads(run_guards("worktree", "list", "--json", cwd=repo).stdout)
    mine = next(w for w in listed["worktrees"] if w["branch"] == "task")
    assert mine["landed"] is True and mine["land_target"] == "main"


def test_worktree_list_says_not_landed_until_it_is(repo: Path, tmp_path: Path) -> None:
    wt = tmp_path / "wt"
    assert (
        run_guards("worktree", "add", str(wt), "-b", "task", "--session", "a", cwd=repo).returncode
        == 0
    )
    commit_file(wt, "f.txt", "x\n")
    text = run_guards("worktree", "list", cwd=repo).stdout
    assert "LANDED" in text and "no (main)" in text
    assert land(repo, "task").returncode == 0
    assert "yes (main)" in run_guards("worktree", "list", cwd=repo).stdout


def test_a_conflict_changes_nothing_and_names_the_paths(repo: Path) -> None:
    theirs = branch_with(repo, "task", "README", "task's README\n")
    ours = commit_file(repo, "README", "main's README\n")
    proc = land(repo, "task", "--json")
    assert proc.returncode == ExitCode.CONFLICT == 21
    assert "1 conflicting path: README" in proc.stderr and proc.stderr.count("\n") == 1
    doc = json.loads(proc.stdout)["landing"]
    assert doc["status"] == "conflict" and doc["conflicts"] == ["README"]
    assert head(repo, "main") == ours and head(repo, "task") == theirs
    assert (repo / "README").read_text() == "main's README\n"
    assert git(repo, "status", "--porcelain") == ""
    history = json.loads(land(repo, "--list", "--json").stdout)["history"]
    assert history[0]["status"] == "conflict" and history[0]["conflicts"] == ["README"]


def test_uncommitted_work_in_the_target_checkout_that_the_merge_touches_refuses(
    repo: Path,
) -> None:
    branch_with(repo, "task", "src/app.py", "print('task')\n")
    (repo / "src" / "app.py").write_text("someone's uncommitted edit\n")
    before = head(repo, "main")
    proc = land(repo, "task")
    assert proc.returncode == ExitCode.REFUSED
    assert "uncommitted change the merge would overwrite: src/app.py" in proc.stderr
    assert head(repo, "main") == before
    assert (repo / "src" / "app.py").read_text() == "someone's uncommitted edit\n"


def test_an_untracked_file_in_the_way_refuses(repo: Path) -> None:
    branch_with(repo, "task", "new.txt", "from task\n")
    (repo / "new.txt").write_text("untracked, someone's\n")
    proc = land(repo, "task")
    assert proc.returncode == ExitCode.REFUSED and "new.txt" in proc.stderr
    assert (repo / "new.txt").read_text() == "untracked, someone's\n"


def test_uncommitted_work_the_merge_does_not_touch_is_kept(repo: Path) -> None:
    branch_with(repo, "task", "new.txt", "from task\n")
    (repo / "README").write_text("someone's uncommitted edit\n")
    git(repo, "add", "README")
    (repo / "scratch").write_text("untracked\n")
    proc = land(repo, "task")
    assert proc.returncode == 0, proc.stderr
    assert (repo / "new.txt").read_text() == "from task\n"
    assert (repo / "README").read_text() == "someone's uncommitted edit\n"
    assert git(repo, "status", "--porcelain").splitlines() == ["M  README", "?? scratch"]


def test_a_merge_in_progress_in_the_target_checkout_refuses(repo: Path) -> None:
    branch_with(repo, "other", "README", "other\n")
    commit_file(repo, "README", "main\n")
    git(repo, "merge", "other", check=False)  # stops with a conflict
    branch_with(repo, "task", "new.txt", "x\n")
    before = head(repo, "main")
    proc = land(repo, "task")
    assert proc.returncode == ExitCode.REFUSED and "a merge is in progress" in proc.stderr
    assert head(repo, "main") == before


def test_a_target_checked_out_nowhere_only_moves_its_ref(repo: Path) -> None:
    git(repo, "branch", "release")
    branch_with(repo, "task", "new.txt", "x\n", start="release")
    (repo / "README").write_text("dirty main checkout, none of landing's business\n")
    proc = land(repo, "task", "--into", "release")
    assert proc.returncode == 0, proc.stderr
    assert git(repo, "show", "release:new.txt") == "x\n"
    assert not (repo / "new.txt").exists() and head(repo, "main") != head(repo, "release")


def test_land_into_setting_and_usage_errors(repo: Path) -> None:
    git(repo, "branch", "develop")
    branch_with(repo, "task", "new.txt", "x\n")
    proc = run_guards("land", "task", cwd=repo, env={"GUARDS_LAND_INTO": "develop"})
    assert proc.returncode == 0 and "into develop" in proc.stdout, proc.stderr
    for args, words in (
        (["nope"], "no local branch 'nope'"),
        (["main"], "main is the branch to land into"),
        (["task", "--into", "nope"], "no local branch 'nope' (--into)"),
        (["--list", "task"], "--list takes no branch"),
    ):
        res = land(repo, *args)
        assert res.returncode == ExitCode.USAGE and words in res.stderr, (args, res.stderr)
        assert res.stderr.count("\n") == 1


def test_delete_branch_only_once_it_is_in_the_target(repo: Path, tmp_path: Path) -> None:
    # A conflict lands nothing, so nothing is deleted.
    branch_with(repo, "clash", "README", "clash\n")
    commit_file(repo, "README", "main\n")
    assert land(repo, "clash", "--delete-branch").returncode == ExitCode.CONFLICT
    assert git(repo, "branch", "--list", "clash") != ""
    # Landed: deleted.
    task = branch_with(repo, "task", "new.txt", "x\n")
    git(repo, "config", "branch.task.description", "mine")
    proc = land(repo, "task", "--delete-branch")
    assert proc.returncode == 0, proc.stderr
    assert f"deleted branch task (was {task[:12]})" in proc.stdout
    assert git(repo, "branch", "--list", "task") == ""
    assert git(repo, "config", "--get", "branch.task.description", check=False) == ""
    git(repo, "merge-base", "--is-ancestor", task, "main")
    # Checked out in its worktree: landed but kept, saying why.
    wt = tmp_path / "wt"
    assert (
        run_guards("worktree", "add", str(wt), "-b", "held", "--session", "a", cwd=repo).returncode
        == 0
    )
    commit_file(wt, "held.txt", "held\n")
    proc = land(repo, "held", "--delete-branch")
    assert proc.returncode == 0 and "branch held kept: it is checked out in" in proc.stdout
    assert git(repo, "branch", "--list", "held") != ""


def test_an_already_landed_branch_is_deleted_without_a_new_merge(repo: Path) -> None:
    branch_with(repo, "task", "new.txt", "x\n")
    assert land(repo, "task").returncode == 0
    merged = head(repo, "main")
    proc = land(repo, "task", "--delete-branch")
    assert proc.returncode == 0 and "already in main" in proc.stdout
    assert head(repo, "main") == merged and git(repo, "branch", "--list", "task") == ""


def test_a_git_older_than_2_38_is_refused_clearly(repo: Path, tmp_path: Path) -> None:
    real = subprocess.run(["which", "git"], capture_output=True, text=True).stdout.strip()
    old = tmp_path / "old-git"
    old.write_text(
        f'#!/bin/sh\nif [ "$1" = version ]; then echo "git version 2.37.1"; exit 0; fi\n'
        f'exec {real} "$@"\n'
    )
    old.chmod(0o755)
    branch_with(repo, "task", "new.txt", "x\n")
    before = head(repo, "main")
    proc = run_guards("land", "task", cwd=repo, env={"GUARDS_REAL_GIT": str(old)})
    assert proc.returncode == ExitCode.REFUSED
    assert "needs git >= 2.38" in proc.stderr and proc.stderr.count("\n") == 1
    assert head(repo, "main") == before


def test_land_list_json_shows_the_queue_and_the_history(repo: Path) -> None:
    branch_with(repo, "task", "new.txt", "x\n")
    assert land(repo, "task").returncode == 0
    doc = json.loads(land(repo, "--list", "--json").stdout)
    assert doc["schema"] == 1 and doc["queue"] == []
    record = doc["history"][0]
    assert record["status"] == "landed" and record["branch"] == "task"
    assert record["into"] == "main" and record["merge_commit"] == head(repo, "main")
    assert "landed" in land(repo, "--list").stdout


def wait_for(condition: object, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def test_concurrent_landings_run_one_at_a_time_first_come_first_served(repo: Path) -> None:
    n = 5
    tips = [branch_with(repo, f"task-{i}", f"file-{i}.txt", f"{i}\n") for i in range(n)]
    ledger_dir = repo / ".git" / "guards"
    ledger_dir.mkdir(exist_ok=True)
    queue = LandingQueue(ledger_dir, 10)
    # Hold the landing lock so that every request queues; start them one by one.
    held = filelock.FileLock(str(ledger_dir / LAND_LOCK))
    held.acquire()
    procs = []
    try:
        for i in range(n):
            procs.append(
                subprocess.Popen(
                    [sys.executable, "-m", "guards", "land", f"task-{i}", "--json"],
                    cwd=repo,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    text=True,
                    env=dict(os.environ),
                )
            )
            wait_for(lambda i=i: len(queue.read()["queue"]) == i + 1)
    finally:
        held.release()
    outputs = [p.communicate(timeout=120) for p in procs]
    for p, (_out, err) in zip(procs, outputs, strict=True):
        assert p.returncode == 0, err
        assert "Traceback" not in err
    for i, (_out, err) in enumerate(outputs):
        if i:  # each waiting request said its place in the queue
            assert f"place {i + 1} in the queue, {i} ahead" in err, err
    # None lost: every branch is in main, each by its own merge commit, in request order.
    merges = git(repo, "rev-list", "--first-parent", "--merges", "--reverse", "main").split()
    assert [parents(repo, m)[1] for m in merges] == tips
    assert sorted(p.name for p in repo.glob("file-*.txt")) == [f"file-{i}.txt" for i in range(n)]
    assert git(repo, "status", "--porcelain") == ""
    # One at a time: no two landings overlapped.
    history = sorted(queue.history(), key=lambda h: h["started"])
    assert [h["branch"] for h in history] == [f"task-{i}" for i in range(n)]
    assert [h["seq"] for h in history] == sorted(h["seq"] for h in history)
    for earlier, later in itertools.pairwise(history):
        assert earlier["finished"] <= later["started"]
    assert queue.read()["queue"] == []


def test_a_dead_request_never_blocks_the_queue(repo: Path) -> None:
    branch_with(repo, "task", "new.txt", "x\n")
    ledger_dir = repo / ".git" / "guards"
    ledger_dir.mkdir(exist_ok=True)
    queue = LandingQueue(ledger_dir, 10)
    dead = subprocess.Popen(["true"])
    dead.wait()
    with queue._change() as doc:
        doc["queue"].append(
            {
                "seq": 99,
                "branch": "ghost",
                "into": "main",
                "pid": dead.pid,
                "pid_start": "0:1",
                "host": hostname(),
                "requested": time.time(),
            }
        )
        doc["next_seq"] = 100
    proc = land(repo, "task")
    assert proc.returncode == 0, proc.stderr
    assert queue.read()["queue"] == []


@pytest.mark.parametrize("how", ["branch", "worktree"])
def test_the_branch_can_be_named_or_found_by_its_worktree(
    repo: Path, tmp_path: Path, how: str
) -> None:
    wt = tmp_path / "wt"
    assert (
        run_guards("worktree", "add", str(wt), "-b", "task", "--session", "a", cwd=repo).returncode
        == 0
    )
    commit_file(wt, "t.txt", "t\n")
    args = ["task"] if how == "branch" else ["--worktree", str(wt)]
    proc = land(repo, *args)
    assert proc.returncode == 0 and "landed task" in proc.stdout, proc.stderr
