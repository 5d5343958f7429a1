"""git's entry listings, parsed once (guards.git.entries), on real git output."""

from __future__ import annotations

from pathlib import Path

from guards.git.entries import (
    PATHS_PER_CALL,
    Entry,
    index_entries,
    index_entries_of,
    parse_raw_diff,
    tree_listing,
)
from guards.git.objects import GITLINK, REGULAR, zero_oid
from guards.git.repo import discover
from guards.integrations.githooks import staged_changes
from tests.helpers import git, make_repo


def _staged(tmp_path: Path) -> Path:
    repo = make_repo(tmp_path / "repo", {"keep": "k\n", "gone": "g\n", "odd\tname\n": "o\n"})
    (repo / "keep").write_text("changed\n")
    (repo / "new").write_text("n\n")
    git(repo, "rm", "-q", "gone")
    git(repo, "add", "keep", "new")
    git(
        repo,
        "update-index",
        "--add",
        "--cacheinfo",
        f"{GITLINK},{git(repo, 'rev-parse', 'HEAD').strip()},sub",
    )
    return repo


def test_the_raw_diff_and_the_staged_changes_agree(tmp_path: Path) -> None:
    repo = _staged(tmp_path)
    raw = git(repo, "diff-index", "--cached", "-z", "--no-renames", "--raw", "HEAD").encode()
    changes = parse_raw_diff(raw)
    assert {p: c.status for p, c in changes.items()} == {
        "keep": "M",
        "gone": "D",
        "new": "A",
        "sub": "A",
    }
    assert changes["gone"].new is None and changes["new"].old is None
    assert changes["sub"].new is not None and changes["sub"].new.mode == GITLINK
    staged = {c.path: (c.status, c.oid) for c in staged_changes(discover(repo))}
    assert staged["gone"] == ("D", zero_oid("sha1"))
    assert {p: s for p, (s, _) in staged.items()} == {p: c.status for p, c in changes.items()}


def test_index_and_tree_listings_keep_odd_names_and_stages(tmp_path: Path) -> None:
    repo = _staged(tmp_path)
    listed = list(index_entries(git(repo, "ls-files", "-s", "-z").encode()))
    assert {e.path for e in listed} == {"keep", "new", "odd\tname\n", "sub"}
    assert all(e.stage == 0 for e in listed)
    tree = dict(tree_listing(git(repo, "ls-tree", "-r", "-z", "HEAD").encode()))
    assert set(tree) == {"keep", "gone", "odd\tname\n"}
    assert tree["keep"] == Entry(REGULAR, git(repo, "rev-parse", "HEAD:keep").strip())


def test_counting_a_status_agrees_with_parsing_it(tmp_path: Path) -> None:
    """Every kind of record (changed, added, deleted, unmerged, untracked, ignored, a
    rename record's second path): the count is the parse's length."""
    from guards.git import process as guards_git
    from guards.git.dirty import count_porcelain_v2, parse_porcelain_v2

    repo = make_repo(tmp_path / "repo", {"a.txt": "a\n", "b.txt": "b\n", ".gitignore": "*.log\n"})
    (repo / "a.txt").write_text("changed\n")
    (repo / "b.txt").unlink()
    (repo / "new file.txt").write_text("n\n")
    (repo / "debug.log").write_text("x\n")
    (repo / "staged.txt").write_text("s\n")
    git(repo, "add", "staged.txt")
    status = git(repo, *guards_git.status_args(ignored=True)).encode("utf-8", "surrogateescape")
    renamed = (
        b"2 R. N... 100644 100644 100644 " + b"0" * 40 + b" " + b"0" * 40 + b" R100 new\0old\0"
    )
    for data in (status, status + renamed, b""):
        assert count_porcelain_v2(data) == len(parse_porcelain_v2(data))
    assert count_porcelain_v2(status) == 5


def test_index_entries_of_reads_paths_literally_in_chunks(tmp_path: Path) -> None:
    many = {f"d/f{i}": f"{i}\n" for i in range(PATHS_PER_CALL + 3)}
    repo = make_repo(tmp_path / "repo", {"*": "star\n", "a": "a\n", **many})
    run = discover(str(repo)).run
    calls: list[list[str]] = []

    def counting(args: list[str], **kw: object) -> object:
        calls.append(args)
        return run(args, **kw)

    paths = [*many, "missing"]
    assert {e.path for e in index_entries_of(counting, paths)} == set(many)
    assert len(calls) == 2
    assert [e.path for e in index_entries_of(run, ["*"])] == ["*"]  # not a glob
    assert [e.path for e in index_entries_of(run, ["d"])][:2] == ["d/f0", "d/f1"]
    assert len(list(index_entries_of(run, None))) == len(many) + 2
    assert list(index_entries_of(counting, [])) == [] and len(calls) == 2
