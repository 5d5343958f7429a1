"""Repository discovery and the git access layer."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from guards import git as guards_git
from guards.git.repo import NotARepositoryError, config_bool, discover
from tests.helpers import git, make_repo


def test_discover_plain_repository(repo: Path) -> None:
    r = discover(repo / "src")
    assert r.toplevel == repo.resolve()
    assert r.git_dir == r.common_dir == (repo / ".git").resolve()
    assert r.prefix == "src/" and not r.is_bare and not r.is_linked_worktree
    assert r.object_format == "sha1"
    assert r.head() is not None and r.head_ref() == "refs/heads/main"


def test_discover_linked_worktree(repo: Path, tmp_path: Path) -> None:
    git(repo, "worktree", "add", "-q", str(tmp_path / "wt"))
    r = discover(tmp_path / "wt")
    assert r.is_linked_worktree
    assert r.common_dir == (repo / ".git").resolve()
    assert r.ledger_dir == (repo / ".git" / "guards").resolve()
    assert r.toplevel == (tmp_path / "wt").resolve()


def test_discover_bare_repository(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q", "--bare", "b.git")
    r = discover(tmp_path / "b.git")
    assert r.is_bare and r.toplevel is None
    with pytest.raises(Exception, match="no work tree"):
        _ = r.worktree


def test_discover_unborn_branch(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q", "fresh")
    r = discover(tmp_path / "fresh")
    assert r.head() is None and r.head_ref() == "refs/heads/main"


def test_discover_path_with_newline(tmp_path: Path) -> None:
    weird = make_repo(tmp_path / "odd\nname")
    r = discover(weird)
    assert r.toplevel == weird.resolve()
    assert r.git_dir == (weird / ".git").resolve()


def test_not_a_repository(tmp_path: Path) -> None:
    with pytest.raises(NotARepositoryError, match="not a git repository"):
        discover(tmp_path)


def test_operations_in_progress(repo: Path) -> None:
    git(repo, "checkout", "-q", "-b", "other")
    (repo / "README").write_text("other\n")
    git(repo, "commit", "-qam", "other")
    git(repo, "checkout", "-q", "main")
    (repo / "README").write_text("main\n")
    git(repo, "commit", "-qam", "main")
    git(repo, "merge", "other", check=False)
    assert discover(repo).operations_in_progress() == ["merge"]
    git(repo, "merge", "--abort")
    git(repo, "cherry-pick", "other", check=False)
    assert discover(repo).operations_in_progress() == ["cherry-pick"]
    git(repo, "cherry-pick", "--abort")
    git(repo, "bisect", "start")
    assert discover(repo).operations_in_progress() == ["bisect"]


def test_git_error_carries_command_and_stderr(repo: Path) -> None:
    with pytest.raises(guards_git.GitError) as info:
        guards_git.run(["rev-parse", "--verify", "nosuchref"], cwd=repo)
    assert info.value.returncode == 128
    assert b"nosuchref" in info.value.stderr or "nosuchref" in str(info.value)
    assert "\n" not in str(info.value)


def test_real_git_skips_a_shim_and_honours_the_override(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shim_dir = tmp_path / "shim"
    shim_dir.mkdir()
    shim = shim_dir / "git"
    shim.write_bytes(b"#!/bin/sh\n# " + guards_git.SHIM_MARKER + b"\nexit 99\n")
    shim.chmod(shim.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{shim_dir}{os.pathsep}{os.environ['PATH']}")
    found = guards_git.real_git()
    assert found != str(shim) and os.path.basename(found) == "git"
    monkeypatch.setattr(guards_git, "_real_git_cache", None)
    monkeypatch.setenv(guards_git.REAL_GIT_ENV, str(shim))
    with pytest.raises(guards_git.GitNotFoundError):
        guards_git.real_git()


def test_zsplit() -> None:
    assert guards_git.zsplit(b"") == []
    assert guards_git.zsplit(b"a\0b c\0") == [b"a", b"b c"]
    assert guards_git.zsplit(b"a\nb\0") == [b"a\nb"]


def test_a_stopped_multi_commit_revert_is_a_revert_not_also_a_cherry_pick(tmp_path: Path) -> None:
    """One reader of git's operation markers: sequencer/todo of a revert used to count as
    a cherry-pick too (doctor then told the user to finish both)."""
    repo = make_repo(tmp_path / "r", {"f": "1\n"})
    for content in ("2\n", "3\n"):
        (repo / "f").write_text(content)
        git(repo, "commit", "-qam", content)
    (repo / "f").write_text("local\n")
    git(repo, "commit", "-qam", "local")
    git(repo, "revert", "--no-edit", "HEAD~1", "HEAD~2", check=False)
    assert discover(repo).operations_in_progress() == ["revert"]
    git(repo, "revert", "--abort")
    git(repo, "cherry-pick", "HEAD~1", "HEAD~2", check=False)
    assert discover(repo).operations_in_progress() == ["cherry-pick"]


@pytest.mark.parametrize("backend", ["--merge", "--apply"])
def test_a_stopped_rebase_names_its_branch_and_old_tip(repo: Path, backend: str) -> None:
    """One reader of a stopped rebase's files (land read head-name, the rebase predictor
    orig-head, each with its own loop over rebase-merge/ and rebase-apply/)."""
    from guards.git.operations import rebase_file

    git(repo, "checkout", "-q", "-b", "topic")
    (repo / "README").write_text("topic\n")
    git(repo, "commit", "-qam", "topic")
    old_tip = git(repo, "rev-parse", "HEAD").strip()
    git(repo, "checkout", "-q", "main")
    (repo / "README").write_text("main\n")
    git(repo, "commit", "-qam", "main")
    git_dir = str(discover(repo).git_dir)
    assert rebase_file(git_dir, "head-name") is None
    git(repo, "rebase", backend, "main", "topic", check=False)  # stops on the conflict
    assert discover(repo).operations_in_progress() == ["rebase"]
    assert rebase_file(git_dir, "head-name") == "refs/heads/topic"
    assert rebase_file(git_dir, "orig-head") == old_tip


def test_boolean_settings_read_as_git_reads_them(repo: Path) -> None:
    r = discover(repo)
    assert r.filemode() and config_bool(r.run, "guards.test") is None
    for value, expected in (("yes", True), ("off", False), ("maybe", None)):
        git(repo, "config", "guards.test", value)
        assert config_bool(r.run, "guards.test") is expected
    git(repo, "config", "core.fileMode", "no")
    assert not r.filemode()
    git(repo, "config", "core.fileMode", "maybe")
    assert r.filemode()  # not a boolean: git's default
