"""The one walk of a work tree's directory (guards.git.files): what git could store."""

from __future__ import annotations

import os
from pathlib import Path

from guards.git.files import walk_files
from guards.protect.snapshot import expand_paths
from guards.protect.worktrees import artifact_digest
from tests.helpers import git, make_repo


def _tree(tmp_path: Path) -> Path:
    top = tmp_path / "top"
    (top / "d" / "e").mkdir(parents=True)
    (top / "d" / "a.txt").write_text("a")
    (top / "d" / "e" / "b.txt").write_text("b")
    (top / "d" / ".git").write_text("gitdir: /nowhere\n")  # a gitdir link: never a path
    (top / "target").mkdir()
    (top / "target" / "t.txt").write_text("t")
    os.symlink("../target", top / "d" / "link")  # a symlink to a directory: one file
    make_repo(top / "d" / "nested", {"n.txt": "n"})
    return top


def test_files_symlinks_and_nested_repositories_as_git_sees_them(tmp_path: Path) -> None:
    top = _tree(tmp_path)
    entered = sorted(walk_files(top, "d", enter_repositories=True))
    assert entered == [
        ("d/a.txt", False),
        ("d/e/b.txt", False),
        ("d/link", False),
        ("d/nested", True),
        ("d/nested/n.txt", False),
    ]
    stopped = sorted(walk_files(top, "d", enter_repositories=False))
    assert stopped == [
        ("d/a.txt", False),
        ("d/e/b.txt", False),
        ("d/link", False),
        ("d/nested", True),
    ]


def test_a_sorted_walk_is_in_name_order(tmp_path: Path) -> None:
    top = _tree(tmp_path)
    walked = [p for p, _ in walk_files(top, "d", enter_repositories=False, sort=True)]
    assert walked == ["d/nested", "d/a.txt", "d/link", "d/e/b.txt"]  # repositories first


def test_expand_paths_keeps_a_nested_repository_as_one_path(tmp_path: Path) -> None:
    top = _tree(tmp_path)
    (top / "d" / ".git").unlink()
    paths, repos = expand_paths(top, ["d/"])
    assert sorted(paths) == ["d/a.txt", "d/e/b.txt", "d/link", "d/nested"]
    assert repos == ["d/nested"]
    (top / "d" / ".git").write_text("gitdir: /nowhere\n")  # now d itself is one
    assert expand_paths(top, ["d/"]) == (["d"], ["d"])


def test_an_artifact_holding_a_repository_is_never_as_placed(tmp_path: Path) -> None:
    # Its history (commits, branches) is not in its files: a fingerprint of the files
    # would call it unchanged after a commit inside it, and the reaper would delete it.
    top = _tree(tmp_path)
    assert artifact_digest(top / "target") == artifact_digest(top / "target")
    assert artifact_digest(top / "target") is not None
    assert artifact_digest(top / "d") is None
    assert artifact_digest(top / "d" / "nested") is None
    git(top / "d" / "nested", "commit", "-q", "--allow-empty", "-m", "later")
    assert artifact_digest(top / "d" / "nested") is None


def test_the_walk_up_to_git_finds_a_linked_worktrees_shared_repository(tmp_path: Path) -> None:
    from guards.git.files import find_repository

    main = make_repo(tmp_path / "main", {"a": "a\n"})
    git(main, "worktree", "add", "-q", str(tmp_path / "linked"))
    common = str((main / ".git").resolve())
    assert find_repository(str(main / "no" / "such" / "dir")) == (str(main.resolve()), common)
    linked = find_repository(str(tmp_path / "linked"))
    assert linked is not None and linked[0] == str((tmp_path / "linked").resolve())
    assert os.path.realpath(linked[1]) == common
    assert find_repository(str(tmp_path)) is None


def test_a_file_that_changed_kind_after_its_look_is_never_followed_nor_waited_on(
    repo: Path,
) -> None:
    # The rescue streams a file by the size its lstat gave: if the path is a FIFO or a
    # symlink by the time it is opened, nothing is read from it (no wait for a writer
    # that never comes, no content from elsewhere) and its id says it was not read.
    from guards.git.quarantine import write_blobs

    (repo / "kept.txt").write_bytes(b"kept\n")
    os.mkfifo(repo / "fifo")
    (repo / "outside.txt").write_bytes(b"other\n")
    os.symlink(repo / "outside.txt", repo / "link")
    top = os.fspath(repo) + os.sep
    oids = write_blobs(repo, [(top + "kept.txt", 5), (top + "fifo", 5), (top + "link", 6)], "sha1")
    assert oids[top + "kept.txt"] == git(repo, "hash-object", "kept.txt").strip()
    assert oids[top + "fifo"] == "" and oids[top + "link"] == ""
    assert git(repo, "cat-file", "-p", oids[top + "kept.txt"]) == "kept\n"
