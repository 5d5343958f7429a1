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
