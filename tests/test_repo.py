"""Repository discovery and the git access layer."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from guards.git import process as guards_git
from guards.git.repo import (
    _DISCOVERY_FLAGS,
    NotARepositoryError,
    Repo,
    _from_rev_parse,
    config_bool,
    discover,
    plain_layout,
)
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


# -- discovery without git: the same answer as git's, or none ----------------------------


def _asked_git(cwd: Path) -> Repo | None:
    """What ``git rev-parse`` finds from ``cwd`` (None: no repository)."""
    res = guards_git.run(["rev-parse", *_DISCOVERY_FLAGS], cwd=cwd, check=False)
    try:
        return _from_rev_parse(res, cwd)
    except NotARepositoryError:
        return None


def _layouts(tmp_path: Path, repo: Path) -> dict[str, tuple[Path, bool]]:
    """Every layout this test can build: name -> (a directory in it, whether discovery
    must find it without git)."""
    (repo / "src/deep/er").mkdir(parents=True)
    git(repo, "worktree", "add", "-q", str(tmp_path / "linked"))
    (tmp_path / "linked/src/sub").mkdir(parents=True)
    inner = make_repo(repo / "src/nested")  # a repository inside a work tree (untracked)
    (repo / "src/fake").mkdir()
    (repo / "src/fake/.git").mkdir()  # not a git dir: git looks further up
    os.symlink(repo / "src", tmp_path / "link-to-src")
    os.symlink(tmp_path / "linked", tmp_path / "link-to-linked")
    sub_origin = make_repo(tmp_path / "sub-origin")
    superproject = make_repo(tmp_path / "super")
    git(superproject, "-c", "protocol.file.allow=always", "submodule", "add", "-q",
        str(sub_origin), "mod")  # fmt: skip
    separate = tmp_path / "separate"
    git(tmp_path, "init", "-q", "--separate-git-dir", str(tmp_path / "separate.git"), str(separate))
    core_worktree = make_repo(tmp_path / "core-wt-repo")
    (tmp_path / "core-wt-tree").mkdir()
    git(core_worktree, "config", "core.worktree", str(tmp_path / "core-wt-tree"))
    included = make_repo(tmp_path / "included")
    git(included, "config", "include.path", str(tmp_path / "nowhere.cfg"))
    sha256 = tmp_path / "sha256"
    git(tmp_path, "init", "-q", "--object-format=sha256", str(sha256))
    detached = make_repo(tmp_path / "detached")
    git(detached, "checkout", "-q", "--detach")
    dotgit_link = make_repo(tmp_path / "dotgit-link-target")
    (tmp_path / "dotgit-link").mkdir()
    os.symlink(dotgit_link / ".git", tmp_path / "dotgit-link/.git")
    bare = tmp_path / "bare.git"
    git(tmp_path, "init", "-q", "--bare", str(bare))
    newline = make_repo(tmp_path / "odd\nname")
    (tmp_path / "nothing").mkdir()
    return {
        "plain, top": (repo, True),
        "plain, subdirectory": (repo / "src/deep/er", True),
        "linked worktree": (tmp_path / "linked", True),
        "linked worktree, subdirectory": (tmp_path / "linked/src/sub", True),
        "nested repository": (inner, True),
        "an empty .git: git looks further up": (repo / "src/fake", False),
        "symlinked cwd": (tmp_path / "link-to-src", True),
        "symlinked cwd, linked worktree": (tmp_path / "link-to-linked", True),
        "submodule": (superproject / "mod", False),
        "superproject": (superproject, True),
        ".git file, separate git dir": (separate, False),
        "core.worktree": (core_worktree, False),
        "include in the config": (included, False),
        "sha256": (sha256, False),
        "detached HEAD": (detached, True),
        "symlinked .git": (tmp_path / "dotgit-link", False),
        "bare repository": (bare, False),
        "inside .git": (repo / ".git/refs", False),
        "path with a newline": (newline, True),
        "no repository": (tmp_path / "nothing", False),
    }


def test_discovery_without_git_finds_what_git_finds_on_every_layout(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    layouts = _layouts(tmp_path, repo)
    for name, (where, fast) in layouts.items():
        found = plain_layout(where)
        assert found == _asked_git(where) if found else not fast, name
        assert (found is not None) == fast, name
        monkeypatch.chdir(where)
        assert plain_layout() == found, name
    monkeypatch.chdir(tmp_path)
    # Variables that move discovery: git is asked (and answers otherwise).
    bare = tmp_path / "bare.git"
    for variable, value in (
        ("GIT_DIR", str(tmp_path / "included/.git")),
        ("GIT_WORK_TREE", str(tmp_path / "nothing")),
        ("GIT_CEILING_DIRECTORIES", str(tmp_path)),
        ("GIT_DISCOVERY_ACROSS_FILESYSTEM", "1"),
        ("GIT_CONFIG_COUNT", "0"),
        ("GIT_TEST_ASSUME_DIFFERENT_OWNER", "1"),
    ):
        with monkeypatch.context() as env:
            env.setenv(variable, value)
            assert plain_layout(repo) is None, variable
    found = plain_layout(repo / "src")
    with monkeypatch.context() as env:  # a bare repository with a work tree named
        env.setenv("GIT_DIR", str(bare))
        env.setenv("GIT_WORK_TREE", str(repo))
        assert plain_layout(repo / "src") is None
        asked = _asked_git(repo / "src")
        assert asked is not None and found is not None
        assert (asked.toplevel_text, asked.common_dir_text) == (found.toplevel_text, str(bare))


@pytest.mark.skipif(os.geteuid() != 0, reason="only root can give a directory away")
def test_discovery_without_git_leaves_a_checkout_of_another_owner_to_git(repo: Path) -> None:
    """safe.directory: git refuses (or trusts, as configured) what another user owns."""
    assert plain_layout(repo) is not None
    os.chown(repo, 4242, -1)
    assert plain_layout(repo) is None
    with pytest.raises(NotARepositoryError, match=r"safe\.directory"):
        discover(repo)  # git's words: dubious ownership, then the command that trusts it
