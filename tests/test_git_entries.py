"""git's entry listings, parsed once (guards.git.entries), on real git output."""

from __future__ import annotations

from pathlib import Path

from guards.git.entries import Entry, index_entries, parse_raw_diff, tree_listing
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
