"""Rescues at the edges (issue 14, protection side): staged versions with their own
owner, raw bytes behind filters, nested repositories and submodules, special files,
stray refs in the rescue namespace, quiet commands, trees git itself gets wrong.

Every case runs the real command through the guarded git (``guards run``, the shim or
an alias) and checks that nothing was lost."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.guarded import install_aliases, install_shim, run_via
from tests.helpers import git, run_guards

ALICE = {"GUARDS_SESSION": "alice"}
BOB = {"GUARDS_SESSION": "bob"}
WAYS = ["guards-run", "alias", "shim"]


def rescue_refs(repo: Path) -> list[str]:
    return git(repo, "for-each-ref", "--format=%(refname)", "refs/rescue").split()


def blob(repo: Path, rev: str, path: str) -> bytes:
    return git_bytes(repo, "cat-file", "blob", f"{rev}:{path}")


def git_bytes(cwd: Path, *args: str) -> bytes:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, check=True).stdout


def guarded(
    way: str, args: list[str], repo: Path, tmp_path: Path, env: dict[str, str]
) -> subprocess.CompletedProcess[bytes]:
    if way == "alias":
        install_aliases(repo)
    shim = install_shim(tmp_path / "shim") if way == "shim" else None
    return run_via(way, args, repo, shim_dir=shim, env=env)


# -- 1. a staged version has an owner of its own -----------------------------------------


def _bob_staged_alice_rewrote(repo: Path) -> None:
    (repo / "README").write_text("bob's staged version\n")
    git(repo, "add", "README")
    (repo / "README").write_text("alice rewrote the file\n")
    assert run_guards("record", "README", cwd=repo, env=ALICE).returncode == 0


@pytest.mark.parametrize("way", WAYS)
@pytest.mark.parametrize(
    "args", [["reset"], ["reset", "--hard"], ["restore", "--staged", "README"]], ids=" ".join
)
def test_a_staged_version_the_caller_did_not_write_is_rescued(
    repo: Path, tmp_path: Path, way: str, args: list[str]
) -> None:
    _bob_staged_alice_rewrote(repo)
    staged = git(repo, "rev-parse", ":README").strip()
    res = guarded(way, args, repo, tmp_path, ALICE)
    assert res.returncode == 0, res.stderr
    refs = rescue_refs(repo)
    assert refs, "bob's staged version was dropped without a rescue"
    index_commits = [git(repo, "rev-parse", f"{r}^2").strip() for r in refs]
    assert any(git(repo, "rev-parse", f"{c}:README").strip() == staged for c in index_commits)


@pytest.mark.parametrize("args", [["reset"], ["reset", "--hard"]], ids=" ".join)
def test_a_staged_version_equal_to_the_callers_own_file_is_still_the_callers(
    repo: Path, args: list[str]
) -> None:
    (repo / "README").write_text("alice's own edit\n")
    git(repo, "add", "README")
    assert run_guards("record", "README", cwd=repo, env=ALICE).returncode == 0
    res = run_via("guards-run", args, repo, env=ALICE)
    assert res.returncode == 0, res.stderr
    assert rescue_refs(repo) == []
    assert b"guards:" not in res.stderr
