"""`guards explain` says what the guard then does: over the whole blast-radius matrix,
explain's answer is compared with what a real `guards run` of the same command did (its
exit status, its decision log entry, its rescue refs)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from guards.errors import ExitCode
from guards.state import decisions
from tests.blast_states import CALM, CASES, FULL, NO_ITA, STASH_CASES, cached_dirty_repo
from tests.helpers import git, make_repo, record, run_guards

BOB = {"GUARDS_SESSION": "bob"}

MATRIX = [*CASES, *((NO_ITA, argv) for argv in STASH_CASES)]


@pytest.fixture
def factory(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.getbasetemp() / "explain-templates"
    d.mkdir(exist_ok=True)
    return d


def _repo(tmp_path: Path, factory: Path, variant: str) -> Path:
    kw = {
        FULL: {},
        CALM: {"conflicts": False, "untracked_collisions": False},
        NO_ITA: {"ita": False},
    }[variant]
    top = cached_dirty_repo(tmp_path, factory, **kw)
    # Some of it is the caller's own, some another session's, the rest unknown.
    record(top, "bob", "unstaged.txt", "untracked.txt")
    record(top, "alice", "staged_mod.txt", "with space.txt")
    return top


def explain(top: Path, argv: list[str], env: dict[str, str]) -> tuple[int, dict[str, Any]]:
    res = run_guards("explain", "--json", "--", *argv, cwd=top, env=env)
    assert res.returncode in (0, 1, 4, 20), res.stderr
    return res.returncode, json.loads(res.stdout)


def _logged(top: Path) -> list[dict[str, Any]]:
    entries, _bad = decisions.read(top / ".git" / "guards")
    return entries


def assert_agrees(top: Path, argv: list[str], env: dict[str, str]) -> None:
    status, said = explain(top, argv, env)
    assert git(top, "for-each-ref", "refs/rescue") == ""  # explain changed nothing
    assert _logged(top) == []
    real = run_guards("run", "--", *argv, cwd=top, env=env)
    entries = _logged(top)
    refs = git(top, "for-each-ref", "--format=%(refname)", "refs/rescue").split()
    guarded = sorted(p["path"] for c in said["commands"] for p in c["paths"] if p["guarded"])
    commits = [c["label"] for cmd in said["commands"] for c in cmd["commits"]]
    if said["action"] == "nothing":
        assert status == ExitCode.OK
        assert entries == [] and refs == [], real.stderr
    elif said["action"] == "refuse":
        assert status == real.returncode == said["exit_code"], real.stderr
        assert [e["kind"] for e in entries] == ["refused"] and refs == []
    else:
        assert said["action"] == "rescue" and status == 1
        assert real.returncode not in (ExitCode.REFUSED, ExitCode.UNKNOWN_STATE), real.stderr
        [entry] = entries
        assert entry["kind"] == "rescued" and entry["path_count"] == len(guarded)
        if len(guarded) <= decisions.MAX_PATHS:
            assert sorted(p["path"] for p in entry["paths"]) == guarded
        assert entry["commits"] == commits
        assert sorted(r["ref"] for r in entry["rescues"]) == sorted(refs)


@pytest.mark.parametrize(("variant", "argv"), MATRIX, ids=[" ".join(c[1]) for c in MATRIX])
def test_explain_agrees_with_what_the_guard_then_does(
    tmp_path: Path, factory: Path, variant: str, argv: list[str]
) -> None:
    assert_agrees(_repo(tmp_path, factory, variant), argv, BOB)


BLOCKED = [
    (FULL, ["reset", "--hard"]),
    (FULL, ["clean", "-fdx"]),
    (FULL, ["checkout", "--", "unstaged.txt"]),  # the caller's own: nothing to refuse
    (NO_ITA, ["stash"]),
]


@pytest.mark.parametrize(("variant", "argv"), BLOCKED, ids=[" ".join(c[1]) for c in BLOCKED])
def test_explain_agrees_under_policy_block(
    tmp_path: Path, factory: Path, variant: str, argv: list[str]
) -> None:
    assert_agrees(_repo(tmp_path, factory, variant), argv, {**BOB, "GUARDS_POLICY": "block"})


def test_explain_names_each_paths_owner_and_what_is_lost(tmp_path: Path, factory: Path) -> None:
    top = _repo(tmp_path, factory, FULL)
    status, said = explain(top, ["checkout", "--", "."], BOB)
    assert status == 1 and said["action"] == "rescue"
    paths = {p["path"]: p for p in said["commands"][0]["paths"]}
    assert paths["unstaged.txt"]["ownership"] == "mine" and not paths["unstaged.txt"]["guarded"]
    assert paths["staged_mod.txt"]["owner"] == "alice"
    assert paths["staged_mod.txt"]["ownership"] == "foreign"
    assert paths["staged_mod.txt"]["losses"] == ["worktree"]
    text = run_guards("explain", "--", "checkout", "--", ".", cwd=top, env=BOB).stdout
    assert "alice (another session)" in text and "you" in text
    assert text.rstrip().endswith("then run git")


def test_explain_of_a_shell_line_agrees_with_the_agent_hooks_guard(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"a.txt": "a\n"})
    (repo / "a.txt").write_text("alice's\n")
    record(repo, "alice", "a.txt")
    line = "git status && git checkout -- a.txt"
    res = run_guards("explain", "--json", "--line", line, cwd=repo, env=BOB)
    said = json.loads(res.stdout)
    assert res.returncode == 1 and said["action"] == "rescue"
    assert said["commands"][0]["paths"][0]["owner"] == "alice"
    blocked = run_guards("explain", "--line", line, cwd=repo, env={**BOB, "GUARDS_POLICY": "block"})
    assert blocked.returncode == ExitCode.REFUSED and "guards would refuse" in blocked.stdout
    unseen = run_guards("explain", "--line", 'cd "$X" && git reset --hard', cwd=repo, env=BOB)
    assert unseen.returncode == ExitCode.REFUSED
    harmless = run_guards("explain", "--line", "ls && git log", cwd=repo, env=BOB)
    assert harmless.returncode == 0 and "do nothing" in harmless.stdout
    assert git(repo, "for-each-ref", "refs/rescue") == "" and _logged(repo) == []
    assert (repo / "a.txt").read_text() == "alice's\n"


def test_explain_usage_errors_are_one_line(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    for args in ([], ["--line", "git x", "--", "reset"]):
        res = run_guards("explain", *args, cwd=repo)
        assert res.returncode == ExitCode.USAGE and res.stderr.count("\n") == 1, res.stderr
    res = run_guards("explain", "--", "reset", "--bogus-option", cwd=repo)
    assert res.returncode == 0 and "do nothing" in res.stdout  # git refuses it itself
