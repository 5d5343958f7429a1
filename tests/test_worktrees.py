"""guards worktree add/list/remove: registered, locked, runnable, removed only when safe."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from guards.protect.worktrees import exclude_pattern, lock_owner, process_cwds, processes_inside
from guards.state.ledger import Ledger
from tests.helpers import git, make_repo, run_guards


def ledger(repo: Path) -> Ledger:
    return Ledger(repo / ".git" / "guards")


def worktree_porcelain(repo: Path) -> list[dict[str, str]]:
    out: list[dict[str, str]] = []
    for block in git(repo, "worktree", "list", "--porcelain").strip().split("\n\n"):
        rec = {}
        for line in block.splitlines():
            k, _, v = line.partition(" ")
            rec[k] = v
        out.append(rec)
    return out


@pytest.fixture
def app(tmp_path: Path) -> Path:
    """A repository with ignored artifacts a worktree needs to run."""
    repo = make_repo(
        tmp_path / "app",
        {
            "README": "hello\n",
            ".gitignore": "node_modules/\n.env\n.venv/\n*.log\n",
            ".worktreeinclude": "node_modules\n.env\n",
        },
    )
    (repo / "node_modules" / "left-pad").mkdir(parents=True)
    (repo / "node_modules" / "left-pad" / "index.js").write_text("pad\n")
    (repo / ".env").write_text("TOKEN=1\n")
    (repo / ".venv").mkdir()
    (repo / ".venv" / "python").write_text("py\n")
    (repo / "debug.log").write_text("noise\n")
    return repo


def test_add_registers_locks_and_makes_the_worktree_runnable(app: Path, tmp_path: Path) -> None:
    wt = tmp_path / "wt-alice"
    res = run_guards(
        "worktree",
        "add",
        str(wt),
        "-b",
        "feature",
        "--session",
        "alice",
        cwd=app,
        env={"GUARDS_WORKTREE_INCLUDE": ".venv"},
    )
    assert res.returncode == 0, res.stderr
    assert "locked (guards: session alice)" in res.stdout
    rec = ledger(app).read().worktrees[os.path.realpath(wt)]
    assert rec["session"] == "alice"
    assert rec["branch"] == "feature"
    assert rec["base"] == git(app, "rev-parse", "HEAD").strip()
    assert rec["lock_reason"] == "guards: session alice"
    assert rec["created"] > 0
    listed = {os.path.realpath(w["worktree"]): w for w in worktree_porcelain(app)}
    assert listed[os.path.realpath(wt)]["locked"] == "guards: session alice"
    # Directories are linked, files copied; only ignored artifacts qualify.
    assert os.readlink(wt / "node_modules") == str(app / "node_modules")
    assert os.readlink(wt / ".venv") == str(app / ".venv")
    assert not (wt / ".env").is_symlink() and (wt / ".env").read_text() == "TOKEN=1\n"
    assert not os.path.lexists(wt / "debug.log")
    # The links are ignored (a symlink is no directory for `node_modules/`): never committed.
    assert git(wt, "status", "--porcelain", "--untracked-files=all") == ""
    assert git(wt, "add", "-A", "--dry-run") == ""
    exclude = (app / ".git" / "info" / "exclude").read_text()
    assert "/node_modules\n" in exclude and "/.venv\n" in exclude
    # The main worktree still ignores exactly what it did.
    assert git(app, "status", "--porcelain") == ""
    # Unchanged included artifacts are not work: the new worktree counts as clean.
    doc = json.loads(run_guards("worktree", "list", "--json", cwd=app).stdout)
    mine = next(w for w in doc["worktrees"] if w["path"] == str(wt))
    assert mine["dirty"] == 0 and mine["owner"] == "alice" and mine["locked_by"] == "guards"


def test_a_changed_copied_artifact_is_work_again(app: Path, tmp_path: Path) -> None:
    wt = tmp_path / "wt"
    assert run_guards("worktree", "add", str(wt), "--session", "alice", cwd=app).returncode == 0
    (wt / ".env").write_text("TOKEN=2\n")
    doc = json.loads(run_guards("worktree", "list", "--json", cwd=app).stdout)
    mine = next(w for w in doc["worktrees"] if w["path"] == str(wt))
    assert mine["dirty_paths"] == [".env"]


def test_add_with_setup_runs_the_command_instead_of_linking(app: Path, tmp_path: Path) -> None:
    wt = tmp_path / "wt"
    res = run_guards(
        "worktree",
        "add",
        str(wt),
        "--session",
        "bob",
        "--from",
        "HEAD",
        "--setup",
        "echo ready > setup.out",
        cwd=app,
    )
    assert res.returncode == 0, res.stderr
    assert (wt / "setup.out").read_text() == "ready\n"
    assert not os.path.lexists(wt / "node_modules")
    failing = run_guards(
        "worktree",
        "add",
        str(tmp_path / "wt2"),
        "--session",
        "bob",
        "--setup",
        "exit 3",
        cwd=app,
    )
    assert failing.returncode == 1
    assert "--setup command exited 3" in failing.stderr


@pytest.mark.parametrize(
    ("args", "env", "message"),
    [
        (["worktree", "add", "{tmp}/w"], {}, "whose worktree?"),
        (["worktree", "add", "{tmp}/w", "--session", "no spaces"], {}, "invalid --session"),
        (["worktree", "add", "{repo}", "--session", "a"], {}, "already exists"),
        (["worktree", "add", "{tmp}/w", "--session", "a", "--from", "nope"], {}, "failed"),
        (["worktree", "add", "{tmp}/w", "--session", "a", "-b", "main"], {}, "failed"),
        (["worktree", "add", "{tmp}/w", "--session", "a", "--setup", " "], {}, "--setup"),
        (["worktree", "remove", "{tmp}/nowhere"], {}, "not a worktree"),
        (["worktree", "remove", "{repo}"], {}, "main worktree"),
        (["worktree", "frobnicate"], {}, "invalid choice"),
        (["worktree", "list"], {"GUARDS_WORKTREE_INCLUDE_MODE": "hardlink"}, None),
        (
            ["worktree", "add", "{tmp}/w", "--session", "a"],
            {"GUARDS_WORKTREE_INCLUDE_MODE": "hardlink"},
            "bad value",
        ),
    ],
)
def test_bad_input_is_one_line_never_a_traceback(
    repo: Path, tmp_path: Path, args: list[str], env: dict[str, str], message: str | None
) -> None:
    argv = [a.format(tmp=tmp_path, repo=repo) for a in args]
    res = run_guards(*argv, cwd=repo, env=env)
    if message is None:
        assert res.returncode == 0, res.stderr  # list does not need the include mode
        return
    assert res.returncode != 0
    assert "Traceback" not in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1, res.stderr
    assert message in res.stderr


def test_outside_a_repository_is_one_line(tmp_path: Path) -> None:
    res = run_guards("worktree", "list", cwd=tmp_path)
    assert res.returncode == 2 and len(res.stderr.strip().splitlines()) == 1


def test_list_shows_registered_unregistered_locked_and_prunable(repo: Path, tmp_path: Path) -> None:
    assert (
        run_guards("worktree", "add", str(tmp_path / "g"), "--session", "s1", cwd=repo).returncode
        == 0
    )
    git(repo, "worktree", "add", "-q", "-b", "plain", str(tmp_path / "plain"))
    (tmp_path / "plain" / "new.txt").write_text("x\n")
    (tmp_path / "plain" / "README").write_text("changed\n")
    git(tmp_path / "plain", "commit", "-q", "-am", "local only")
    git(repo, "worktree", "add", "-q", "--detach", str(tmp_path / "held"))
    git(repo, "worktree", "lock", "--reason", "on a usb disk", str(tmp_path / "held"))
    git(repo, "worktree", "add", "-q", "--detach", str(tmp_path / "gone"))
    import shutil

    shutil.rmtree(tmp_path / "gone")
    res = run_guards("worktree", "list", "--json", cwd=repo)
    assert res.returncode == 0, res.stderr
    by_path = {w["path"]: w for w in json.loads(res.stdout)["worktrees"]}
    g, plain, held, gone = (by_path[str(tmp_path / n)] for n in ("g", "plain", "held", "gone"))
    assert g["registered"] and g["owner"] == "s1" and g["liveness"] == "live"
    assert g["locked_by"] == "guards" and g["dirty"] == 0 and g["unpushed"] == 0
    assert not plain["registered"] and plain["owner"] is None
    assert plain["dirty"] == 1 and plain["unpushed"] == 1
    assert held["locked_by"] == "other" and held["lock_reason"] == "on a usb disk"
    assert gone["prunable"] is not None and not gone["exists"] and gone["dirty"] == 0
    text = run_guards("worktree", "list", cwd=repo).stdout
    assert "OWNER" in text and "prunable" in text and "s1" in text


def test_remove_refuses_a_worktree_holding_only_ignored_files(repo: Path, tmp_path: Path) -> None:
    (repo / ".gitignore").write_text("*.cache\n")
    git(repo, "add", ".gitignore")
    git(repo, "commit", "-q", "-m", "ignore")
    wt = tmp_path / "wt"
    env = {"GUARDS_SESSION": "s1"}
    assert run_guards("worktree", "add", str(wt), cwd=repo, env=env).returncode == 0
    (wt / "build.cache").write_text("hours of work\n")
    res = run_guards("worktree", "remove", str(wt), cwd=repo, env=env)
    assert res.returncode == 20
    assert "1 dirty path (ignored files included)" in res.stderr
    assert (wt / "build.cache").exists()
    res = run_guards("worktree", "remove", str(wt), "--rescue", cwd=repo, env=env)
    assert res.returncode == 0, res.stderr
    assert not wt.exists()
    ref = git(repo, "for-each-ref", "--format=%(refname)", "refs/rescue/s1").split()[0]
    assert git(repo, "show", f"{ref}:build.cache") == "hours of work\n"
    assert os.path.realpath(wt) not in ledger(repo).read().worktrees
    assert "restore:" in res.stdout


def test_remove_refuses_unpushed_commits_unless_forced(repo: Path, tmp_path: Path) -> None:
    wt = tmp_path / "wt"
    env = {"GUARDS_SESSION": "s1"}
    assert run_guards("worktree", "add", str(wt), "-b", "topic", cwd=repo, env=env).returncode == 0
    (wt / "README").write_text("topic\n")
    git(wt, "commit", "-q", "-am", "topic work")
    res = run_guards("worktree", "remove", str(wt), cwd=repo, env=env)
    assert res.returncode == 20 and "1 commit on no remote or other branch" in res.stderr
    res = run_guards("worktree", "remove", str(wt), "--force", cwd=repo, env=env)
    assert res.returncode == 0, res.stderr
    assert "discarded" in res.stdout
    assert not wt.exists()


def test_remove_refuses_a_live_foreign_owner_and_a_persons_lock(repo: Path, tmp_path: Path) -> None:
    wt = tmp_path / "wt"
    assert run_guards("worktree", "add", str(wt), "--session", "s1", cwd=repo).returncode == 0
    res = run_guards("worktree", "remove", str(wt), cwd=repo, env={"GUARDS_SESSION": "s2"})
    assert res.returncode == 20 and "session s1, is alive" in res.stderr
    git(repo, "worktree", "unlock", str(wt))
    git(repo, "worktree", "lock", "--reason", "keep: demo tomorrow", str(wt))
    res = run_guards("worktree", "remove", str(wt), cwd=repo, env={"GUARDS_SESSION": "s1"})
    assert res.returncode == 20 and "keep: demo tomorrow" in res.stderr
    assert wt.exists()


def test_remove_forgets_a_registered_worktree_git_no_longer_knows(
    repo: Path, tmp_path: Path
) -> None:
    wt = tmp_path / "wt"
    assert run_guards("worktree", "add", str(wt), "--session", "s1", cwd=repo).returncode == 0
    git(repo, "worktree", "remove", "--force", "--force", str(wt))
    res = run_guards("worktree", "remove", str(wt), cwd=repo)
    assert res.returncode == 0 and "forgot" in res.stdout
    assert ledger(repo).read().worktrees == {}


def test_lock_reasons_guards_did_not_write_belong_to_someone_else() -> None:
    assert lock_owner("guards: session s1") == "s1"
    assert lock_owner("") is None
    assert lock_owner("guards is great") is None
    assert lock_owner(None) is None


def test_exclude_patterns_name_exactly_one_path() -> None:
    assert exclude_pattern("node_modules") == "/node_modules"
    assert exclude_pattern("a*b/[x]?") == "/a\\*b/\\[x]\\?"
    assert exclude_pattern("#tmp ") == "/#tmp\\ "


def test_process_scan_finds_a_process_inside_and_says_when_it_cannot_see(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import subprocess

    inside = tmp_path / "w" / "sub"
    inside.mkdir(parents=True)
    proc = subprocess.Popen(["sleep", "30"], cwd=inside)
    try:
        assert proc.pid in (processes_inside(str(tmp_path / "w"), process_cwds()) or [])
        assert processes_inside(str(tmp_path / "other"), process_cwds()) == []
    finally:
        proc.kill()
        proc.wait()
    # No /proc and no lsof: unknown, never "nobody".
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert process_cwds(proc=str(tmp_path / "no-proc")) is None
    assert processes_inside(str(tmp_path / "w"), None) is None


def test_copy_mode_copies_directories_and_an_untouched_copy_is_not_work(
    app: Path, tmp_path: Path
) -> None:
    wt = tmp_path / "wt"
    res = run_guards(
        "worktree",
        "add",
        str(wt),
        "--session",
        "a",
        cwd=app,
        env={"GUARDS_WORKTREE_INCLUDE_MODE": "copy"},
    )
    assert res.returncode == 0, res.stderr
    assert not (wt / "node_modules").is_symlink()
    assert (wt / "node_modules" / "left-pad" / "index.js").read_text() == "pad\n"
    doc = json.loads(run_guards("worktree", "list", "--json", cwd=app).stdout)
    assert next(w for w in doc["worktrees"] if w["path"] == str(wt))["dirty"] == 0
    (wt / "node_modules" / "left-pad" / "index.js").write_text("patched\n")
    doc = json.loads(run_guards("worktree", "list", "--json", cwd=app).stdout)
    assert next(w for w in doc["worktrees"] if w["path"] == str(wt))["dirty"] == 1
