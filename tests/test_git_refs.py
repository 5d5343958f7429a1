"""guards.git.refs: for-each-ref read once, NUL-separated fields."""

from __future__ import annotations

from pathlib import Path

from guards.git.refs import for_each_ref
from guards.git.repo import discover
from tests.helpers import git, make_repo


def test_for_each_ref_gives_each_refs_fields_in_order(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"README": "hello\n"})
    head = git(repo, "rev-parse", "HEAD").strip()
    git(repo, "branch", "caf\u00e9/x")
    git(repo, "update-ref", "refs/rescue/a", head)
    run = discover(str(repo)).run
    rows = for_each_ref(run, ("refname", "objectname", "subject"), ["refs/heads/caf\u00e9"])
    subject = git(repo, "log", "-1", "--format=%s").strip()
    assert rows == [("refs/heads/caf\u00e9/x", head, subject)]
    assert for_each_ref(run, ("objectname",), ["refs/rescue/"]) == [(head,)]
    assert for_each_ref(run, ("refname",), ["refs/nothing/"]) == []
    assert len(for_each_ref(run, ("refname",), ["refs/"], count=1)) == 1
    assert for_each_ref(run, ("refname",), ["refs/"], check=False)


def test_for_each_ref_reads_messages_over_lines_and_filters_by_history(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"README": "hello\n"})
    base = git(repo, "rev-parse", "HEAD").strip()
    git(repo, "checkout", "-qb", "side")
    git(repo, "commit", "-q", "--allow-empty", "-m", "subject\n\nbody line\n\nKey: value")
    side = git(repo, "rev-parse", "HEAD").strip()
    git(repo, "checkout", "-q", "-")
    run = discover(str(repo)).run
    rows = for_each_ref(run, ("refname", "contents", "objectname"), ["refs/heads/side"])
    assert rows == [("refs/heads/side", "subject\n\nbody line\n\nKey: value\n", side)]
    heads = ["refs/heads/"]
    assert for_each_ref(run, ("refname",), heads, no_merged=["HEAD"]) == [("refs/heads/side",)]
    assert for_each_ref(run, ("refname",), heads, contains=side) == [("refs/heads/side",)]
    assert len(for_each_ref(run, ("refname",), heads, contains=base)) == 2
    assert for_each_ref(run, ("refname",), heads, contains="0" * 40, check=False) == []
