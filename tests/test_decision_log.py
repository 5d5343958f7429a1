"""The decision log and `guards log`: every kind of decision, nothing when nothing is at risk."""

from __future__ import annotations

import json
import stat
from pathlib import Path
from typing import Any

import pytest

from guards.errors import ExitCode
from guards.protect.guard import guard_line
from guards.state import decisions
from tests.guarded import install_shim, run_via
from tests.helpers import git, make_repo, record, run_guards

BOB = {"GUARDS_SESSION": "bob"}


def _entries(repo: Path) -> list[dict[str, Any]]:
    entries, bad = decisions.read(repo / ".git" / "guards")
    assert bad == 0
    return entries


def _dirty(tmp_path: Path) -> Path:
    repo = make_repo(tmp_path / "repo", {"a.txt": "a\n", "b.txt": "b\n"})
    (repo / "a.txt").write_text("alice's edit\n")
    record(repo, "alice", "a.txt")
    (repo / "new.txt").write_text("untracked, owner unknown\n")
    return repo


def test_nothing_is_logged_when_nothing_is_at_risk(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    (repo / "README").write_text("bob's own\n")
    record(repo, "bob", "README")
    for args in (["reset", "--hard"], ["status"], ["clean", "-fd"]):
        assert run_guards("run", "--", *args, cwd=repo, env=BOB).returncode == 0
    assert not (repo / ".git" / "guards" / decisions.LOG_FILE).exists()
    assert run_guards("log", cwd=repo).stdout == "no decisions logged\n"


def test_a_rescue_is_logged_with_refs_session_command_and_paths(tmp_path: Path) -> None:
    repo = _dirty(tmp_path)
    (repo / "sub").mkdir()
    res = run_guards("run", "--", "checkout", "--", "..", cwd=repo / "sub", env=BOB)
    assert res.returncode == 0, res.stderr
    [entry] = _entries(repo)
    assert entry["kind"] == "rescued" and entry["via"] == "run"
    assert entry["session"] == "bob" and entry["command"] == "git checkout -- .."
    assert entry["cwd"] == str(repo / "sub") and entry["worktree"] == str(repo)
    assert entry["paths"] == [{"path": "a.txt", "owner": "alice"}] and entry["path_count"] == 1
    [rescue] = entry["rescues"]
    assert git(repo, "rev-parse", rescue["ref"]).strip() == rescue["commit"]
    log = repo / ".git" / "guards" / decisions.LOG_FILE
    assert stat.S_IMODE(log.stat().st_mode) == 0o600
    doc = json.loads(run_guards("log", "--json", cwd=repo).stdout)
    assert [e["id"] for e in doc["entries"]] == [entry["id"]]
    assert doc["entries"][0]["time"].endswith("Z")


def test_a_refusal_under_policy_block_is_logged_with_why(tmp_path: Path) -> None:
    repo = _dirty(tmp_path)
    env = {**BOB, "GUARDS_POLICY": "block"}
    res = run_guards("run", "--", "clean", "-f", cwd=repo, env=env)
    assert res.returncode == ExitCode.REFUSED
    [entry] = _entries(repo)
    assert entry["kind"] == "refused" and entry["policy"] == "block"
    assert "policy is block" in entry["why"] and entry["rescues"] == []
    assert entry["paths"] == [{"path": "new.txt", "owner": None}]
    assert "refused" in run_guards("log", cwd=repo).stdout


def test_a_loss_under_policy_warn_is_logged(tmp_path: Path) -> None:
    repo = _dirty(tmp_path)
    res = run_guards("run", "--", "reset", "--hard", cwd=repo, env={**BOB, "GUARDS_POLICY": "warn"})
    assert res.returncode == 0 and (repo / "a.txt").read_text() == "a\n"
    [entry] = _entries(repo)
    assert entry["kind"] == "warned" and entry["paths"] == [{"path": "a.txt", "owner": "alice"}]
    assert "lost" in run_guards("log", cwd=repo).stdout


def test_guards_disable_through_the_shim_is_logged_as_a_bypass(tmp_path: Path) -> None:
    repo = _dirty(tmp_path)
    shim = install_shim(tmp_path / "shim")
    env = {**BOB, "GUARDS_DISABLE": "1"}
    res = run_via("shim", ["reset", "--hard"], repo, shim_dir=shim, env=env)
    assert res.returncode == 0 and res.stderr == b""  # git's own output, nothing of ours
    assert (repo / "a.txt").read_text() == "a\n"
    assert git(repo, "for-each-ref", "refs/rescue") == ""
    [entry] = _entries(repo)
    assert entry["kind"] == "bypassed" and entry["command"] == "git reset --hard"
    assert entry["paths"] == [{"path": "a.txt", "owner": "alice"}]
    # Harmless commands under the override still cost no log line.
    assert run_via("shim", ["status"], repo, shim_dir=shim, env=env).returncode == 0
    assert len(_entries(repo)) == 1


def test_a_shell_line_denied_in_an_agent_hook_is_logged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = _dirty(tmp_path)
    monkeypatch.setenv("GUARDS_POLICY", "block")
    monkeypatch.setenv("GUARDS_SESSION", "bob")
    verdict = guard_line("git status && git checkout -- .", str(repo))
    unseen = guard_line('cd "$SOMEWHERE" && git reset --hard', str(repo))
    assert verdict.deny and unseen.deny
    first, second = _entries(repo)
    assert first["kind"] == second["kind"] == "denied"
    assert first["via"] == "agent-hook" and first["command"] == "git status && git checkout -- ."
    assert first["paths"] == [{"path": "a.txt", "owner": "alice"}]
    assert second["why"] == unseen.deny and second["paths"] == []


def test_the_log_is_rotated_and_both_halves_are_read(tmp_path: Path) -> None:
    repo = _dirty(tmp_path)
    env = {**BOB, "GUARDS_POLICY": "block", "GUARDS_LOG_MAX_BYTES": "2000"}
    for _ in range(6):
        run_guards("run", "--", "reset", "--hard", cwd=repo, env=env)
    folder = repo / ".git" / "guards"
    assert (folder / decisions.ROTATED_FILE).exists()
    assert (folder / decisions.LOG_FILE).stat().st_size <= 2000 + 1500
    assert stat.S_IMODE((folder / decisions.ROTATED_FILE).stat().st_mode) == 0o600
    entries = _entries(repo)
    assert 2 <= len(entries) <= 6 and all(e["kind"] == "refused" for e in entries)
    times = [e["time"] for e in entries]
    assert times == sorted(times)


def test_a_torn_last_line_is_skipped_and_a_bad_line_counted(tmp_path: Path) -> None:
    folder = tmp_path / "guards"
    entry = decisions.new_entry(
        "refused", via="run", session=None, host="h", command="git x", cwd="/", worktree=None
    )
    decisions.append(folder, entry, 10**6)
    with open(folder / decisions.LOG_FILE, "a") as f:
        f.write("not json\n")
        f.write('{"kind": "rescued", "tor')
    entries, bad = decisions.read(folder)
    assert [e["id"] for e in entries] == [entry["id"]] and bad == 1


def test_log_filters_by_session_since_and_kind(tmp_path: Path) -> None:
    repo = _dirty(tmp_path)
    run_guards("run", "--", "clean", "-f", cwd=repo, env={**BOB, "GUARDS_POLICY": "block"})
    run_guards("run", "--", "reset", "--hard", cwd=repo, env={"GUARDS_SESSION": "carol"})

    def ids(*args: str) -> list[str]:
        res = run_guards("log", "--json", *args, cwd=repo)
        assert res.returncode == 0, res.stderr
        return [e["kind"] for e in json.loads(res.stdout)["entries"]]

    assert ids() == ["refused", "rescued"]
    assert ids("--session", "carol") == ["rescued"]
    assert ids("--kind", "refused") == ["refused"]
    assert ids("--since", "1h") == ["refused", "rescued"]
    assert ids("--since", "2999-01-01") == []
    bad = run_guards("log", "--since", "yesterday-ish", cwd=repo)
    assert bad.returncode == ExitCode.USAGE and bad.stderr.count("\n") == 1
