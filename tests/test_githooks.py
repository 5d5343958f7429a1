"""The hook checks, called as git and the pre-commit framework call them: `guards hook ...`."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from guards.state.workspace import Workspace
from tests.helpers import attributed, commit_file, git, head, make_repo, record, run_guards

LEDGER = Path(".git/guards/ledger.json")


def set_session(repo: Path, session: str, **fields: object) -> None:
    ws = Workspace.open(repo)
    with ws.ledger.transaction() as data:
        data.sessions[session].update(fields)


def hook(repo: Path, *args: str, env: dict[str, str] | None = None, input: bytes | None = None):
    return run_guards("hook", *args, cwd=repo, env=env, input=input)


def assert_one_line_error(stderr: str) -> None:
    assert "Traceback" not in stderr
    assert len(stderr.strip().splitlines()) == 1, stderr


# -- foreign commit ----------------------------------------------------------------------


def stage_agent_a_readme(repo: Path) -> None:
    """Session agent-a edits README, records it, and it is staged."""
    (repo / "README").write_text("agent a\n")
    record(repo, "agent-a", "README")
    git(repo, "add", "README")


def test_foreign_commit_refuses_staged_path_of_another_live_session_naming_path_and_owner(
    repo: Path,
) -> None:
    (repo / "src/app.py").write_text("print('agent a was here')\n")
    record(repo, "agent-a", "src/app.py")
    git(repo, "add", "src/app.py")

    res = hook(repo, "foreign-commit", env={"GUARDS_SESSION": "agent-b"})

    assert res.returncode == 20
    assert "src/app.py" in res.stderr and "agent-a" in res.stderr
    assert "GUARDS_ALLOW_FOREIGN_COMMIT=1" in res.stderr
    assert "Traceback" not in res.stderr


def test_foreign_commit_refuses_an_unidentified_caller_too(repo: Path) -> None:
    stage_agent_a_readme(repo)

    res = hook(repo, "foreign-commit")

    assert res.returncode == 20
    assert "GUARDS_SESSION is not set" in res.stderr


def test_foreign_commit_warn_argument_names_the_paths_but_lets_the_commit_through(
    repo: Path,
) -> None:
    stage_agent_a_readme(repo)

    res = hook(repo, "foreign-commit", "--warn", env={"GUARDS_SESSION": "agent-b"})

    assert res.returncode == 0
    assert "warning" in res.stderr and "README" in res.stderr and "agent-a" in res.stderr


def test_foreign_commit_override_variable_lets_the_commit_through(repo: Path) -> None:
    stage_agent_a_readme(repo)

    res = hook(repo, "foreign-commit", env={"GUARDS_ALLOW_FOREIGN_COMMIT": "1"})

    assert res.returncode == 0
    assert "README" in res.stderr


def test_foreign_commit_bad_override_value_is_a_one_line_usage_error(repo: Path) -> None:
    stage_agent_a_readme(repo)

    res = hook(repo, "foreign-commit", env={"GUARDS_ALLOW_FOREIGN_COMMIT": "perhaps"})

    assert res.returncode == 2
    assert_one_line_error(res.stderr)


def test_foreign_commit_lets_a_session_commit_its_own_work(repo: Path) -> None:
    stage_agent_a_readme(repo)

    res = hook(repo, "foreign-commit", env={"GUARDS_SESSION": "agent-a"})

    assert res.returncode == 0, res.stderr
    assert res.stderr == ""


@pytest.mark.parametrize(
    "fields", [{"ended": True}, {"last_seen": 0.0}], ids=["ended", "heartbeat-expired"]
)
def test_foreign_commit_does_not_block_work_of_dead_sessions(
    repo: Path, fields: dict[str, object]
) -> None:
    (repo / "README").write_text("agent a\n")
    record(repo, "agent-a", "README")
    set_session(repo, "agent-a", **fields)
    git(repo, "add", "README")

    res = hook(repo, "foreign-commit", env={"GUARDS_SESSION": "agent-b"})

    assert res.returncode == 0, res.stderr


def test_foreign_commit_does_not_block_a_session_whose_process_is_gone(repo: Path) -> None:
    (repo / "README").write_text("agent a\n")
    record(repo, "agent-a", "README")
    # pid 1's start time never matches this made-up one: the pid was "reused".
    from guards.state.session import hostname

    set_session(repo, "agent-a", pid=1, pid_start="not-this-process", host=hostname())
    git(repo, "add", "README")

    assert hook(repo, "foreign-commit", env={"GUARDS_SESSION": "agent-b"}).returncode == 0


def test_foreign_commit_blocks_a_live_session_whose_record_lacks_its_id(repo: Path) -> None:
    """The hook read session records on its own (``Session.from_json(doc)`` without the
    ledger key) and counted a fresh session with no ``id`` field as not live, where
    doctor, reap and the rule all call it live: its staged work went through."""
    stage_agent_a_readme(repo)
    ws = Workspace.open(repo)
    with ws.ledger.transaction() as data:
        del data.sessions["agent-a"]["id"]

    res = hook(repo, "foreign-commit", env={"GUARDS_SESSION": "agent-b"})

    assert res.returncode == 20 and "agent-a" in res.stderr
    doctor = json.loads(run_guards("doctor", "--json", cwd=repo).stdout)
    (sessions,) = [f for f in doctor["findings"] if f["check"] == "sessions"]
    assert sessions["data"]["sessions"]["agent-a"]["state"] == "live"


def test_foreign_commit_survives_a_session_record_with_a_null_heartbeat(repo: Path) -> None:
    """A ``last_seen`` of null made the hook crash (exit 3, the commit refused) while
    doctor called the same session stale: unreadable proves nothing alive."""
    stage_agent_a_readme(repo)
    set_session(repo, "agent-a", last_seen=None)

    res = hook(repo, "foreign-commit", env={"GUARDS_SESSION": "agent-b"})

    assert res.returncode == 0, res.stderr
    assert "internal error" not in res.stderr


def test_foreign_commit_does_not_block_unknown_owner_work(repo: Path) -> None:
    (repo / "README").write_text("nobody recorded this\n")
    (repo / "src/app.py").write_text("agent a, then changed by someone\n")
    record(repo, "agent-a", "src/app.py")
    (repo / "src/app.py").write_text("changed after the record: owner unknown\n")
    git(repo, "add", "README", "src/app.py")

    res = hook(repo, "foreign-commit", env={"GUARDS_SESSION": "agent-b"})

    assert res.returncode == 0, res.stderr


def test_foreign_commit_ignores_foreign_work_that_is_not_staged(repo: Path) -> None:
    (repo / "README").write_text("agent a, unstaged\n")
    record(repo, "agent-a", "README")
    (repo / "mine.txt").write_text("b's own\n")
    git(repo, "add", "mine.txt")

    res = hook(repo, "foreign-commit", env={"GUARDS_SESSION": "agent-b"})

    assert res.returncode == 0, res.stderr


def test_foreign_commit_catches_staged_recorded_content_after_the_worktree_moved_on(
    repo: Path,
) -> None:
    (repo / "README").write_text("agent a's version\n")
    record(repo, "agent-a", "README")
    git(repo, "add", "README")
    (repo / "README").write_text("edited again after staging\n")

    res = hook(repo, "foreign-commit", env={"GUARDS_SESSION": "agent-b"})

    assert res.returncode == 20
    assert "README" in res.stderr


def test_foreign_commit_catches_a_staged_deletion_recorded_by_another_session(
    repo: Path,
) -> None:
    (repo / "README").unlink()
    record(repo, "agent-a", "README")
    git(repo, "rm", "-q", "--cached", "README")

    res = hook(repo, "foreign-commit", env={"GUARDS_SESSION": "agent-b"})

    assert res.returncode == 20
    assert "README" in res.stderr


def test_foreign_commit_reads_the_index_named_by_git_index_file(repo: Path) -> None:
    (repo / "README").write_text("agent a\n")
    record(repo, "agent-a", "README")
    env = {"GIT_INDEX_FILE": str(repo / ".git" / "other-index")}
    for args in (["read-tree", "HEAD"], ["add", "README"]):
        subprocess.run(["git", *args], cwd=repo, env={**os.environ, **env}, check=True)
    index_before = (repo / ".git/index").read_bytes()

    in_temp = hook(repo, "foreign-commit", env={"GUARDS_SESSION": "agent-b", **env})
    in_real = hook(repo, "foreign-commit", env={"GUARDS_SESSION": "agent-b"})

    assert in_temp.returncode == 20, in_temp.stderr
    assert in_real.returncode == 0, in_real.stderr
    assert (repo / ".git/index").read_bytes() == index_before


def test_foreign_commit_warns_without_blocking_when_the_ledger_is_unreadable(
    repo: Path,
) -> None:
    (repo / ".git/guards").mkdir()
    (repo / LEDGER).write_text(json.dumps({"schema": 999}))
    (repo / "README").write_text("changed\n")
    git(repo, "add", "README")

    res = hook(repo, "foreign-commit")

    assert res.returncode == 0
    assert "warning" in res.stderr and "newer guards" in res.stderr
    assert_one_line_error(res.stderr)


def test_foreign_commit_on_an_unborn_branch_compares_with_the_empty_tree(tmp_path: Path) -> None:
    repo = tmp_path / "fresh"
    repo.mkdir()
    git(repo, "init", "-q")
    (repo / "new.txt").write_text("agent a\n")
    record(repo, "agent-a", "new.txt")
    git(repo, "add", "new.txt")

    res = hook(repo, "foreign-commit", env={"GUARDS_SESSION": "agent-b"})

    assert res.returncode == 20
    assert "new.txt" in res.stderr


# -- mass deletion -------------------------------------------------------------------------


@pytest.fixture
def big_repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "big", {f"f/{i:03}.txt": f"{i}\n" for i in range(300)})


def delete(repo: Path, count: int) -> None:
    git(repo, "rm", "-q", *[f"f/{i:03}.txt" for i in range(count)])


def test_mass_deletion_refuses_more_than_the_percentage_naming_the_counts(big_repo: Path) -> None:
    delete(big_repo, 61)  # limit: max(50, 20% of 300 = 60)

    res = hook(big_repo, "mass-deletion")

    assert res.returncode == 20
    assert "deletes 61 of 300 tracked files" in res.stderr
    assert "GUARDS_ALLOW_MASS_DELETION=1" in res.stderr
    assert_one_line_error(res.stderr)


def test_mass_deletion_allows_up_to_the_larger_threshold(big_repo: Path) -> None:
    delete(big_repo, 60)

    assert hook(big_repo, "mass-deletion").returncode == 0


def test_mass_deletion_file_floor_wins_in_small_repositories(tmp_path: Path) -> None:
    small = make_repo(tmp_path / "small", {f"f/{i:03}.txt": "x\n" for i in range(80)})
    git(small, "rm", "-q", *[f"f/{i:03}.txt" for i in range(50)])  # 62%, but only 50 files

    assert hook(small, "mass-deletion").returncode == 0
    git(small, "rm", "-q", "f/050.txt")
    assert hook(small, "mass-deletion").returncode == 20


def test_mass_deletion_thresholds_are_arguments(big_repo: Path) -> None:
    delete(big_repo, 10)

    assert hook(big_repo, "mass-deletion").returncode == 0
    strict = hook(big_repo, "mass-deletion", "--max-files", "5", "--max-percent", "1")
    assert strict.returncode == 20
    assert "deletes 10 of 300" in strict.stderr


def test_mass_deletion_override_variable_lets_the_commit_through(big_repo: Path) -> None:
    delete(big_repo, 100)

    res = hook(big_repo, "mass-deletion", env={"GUARDS_ALLOW_MASS_DELETION": "1"})

    assert res.returncode == 0
    assert "warning" in res.stderr


@pytest.mark.parametrize(
    "args", [["--max-percent", "150"], ["--max-files", "-1"], ["--max-files", "many"]]
)
def test_mass_deletion_bad_thresholds_are_one_line_usage_errors(
    repo: Path, args: list[str]
) -> None:
    res = hook(repo, "mass-deletion", *args)

    assert res.returncode == 2
    assert_one_line_error(res.stderr)


# -- ledger sync -------------------------------------------------------------------------


def test_ledger_sync_releases_committed_and_reverted_paths_and_keeps_dirty_ones(
    repo: Path,
) -> None:
    for name in ("README", "src/app.py", "notes.txt"):
        (repo / name).write_text(f"{name} by agent a\n")
    record(repo, "agent-a", "README", "src/app.py", "notes.txt")
    git(repo, "add", "README")
    git(repo, "commit", "-q", "-m", "README")
    git(repo, "checkout", "-q", "--", "src/app.py")

    res = hook(repo, "ledger-sync", "0" * 40, "1" * 40, "1")

    assert res.returncode == 0 and res.stderr == ""
    assert attributed(repo) == {"notes.txt": "agent-a"}


def test_ledger_sync_without_a_ledger_does_nothing(repo: Path) -> None:
    res = hook(repo, "ledger-sync")

    assert res.returncode == 0 and res.stderr == ""
    assert not (repo / ".git/guards").exists()


def test_ledger_sync_never_fails_the_git_operation(repo: Path, tmp_path: Path) -> None:
    (repo / ".git/guards").mkdir()
    (repo / LEDGER).write_text("{ not json")

    corrupt = hook(repo, "ledger-sync")
    outside = hook(tmp_path, "ledger-sync")

    for res in (corrupt, outside):
        assert res.returncode == 0
        assert "warning" in res.stderr
        assert_one_line_error(res.stderr)


# -- push breaker (stdin lines, as the native pre-push hook gets them) -----------------------

ZERO = "0" * 40


@pytest.fixture
def pushed(tmp_path: Path) -> tuple[Path, Path]:
    """A clone whose main and topic are pushed to a bare remote ``origin``."""
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    local = make_repo(tmp_path / "local", {"a.txt": "a\n"})
    git(local, "remote", "add", "origin", str(remote))
    git(local, "branch", "topic")
    git(local, "push", "-q", "origin", "main", "topic")
    return local, remote


def push_check(local: Path, remote: Path, *lines: str, env: dict[str, str] | None = None):
    data = "".join(line + "\n" for line in lines).encode()
    return hook(local, "push-breaker", "origin", str(remote), env=env, input=data)


def test_push_breaker_lets_fast_forwards_and_new_branches_through(
    pushed: tuple[Path, Path],
) -> None:
    local, remote = pushed
    old = head(local)
    new = commit_file(local, "b.txt", "b\n")

    res = push_check(
        local,
        remote,
        f"refs/heads/main {new} refs/heads/main {old}",
        f"refs/heads/main {new} refs/heads/new {ZERO}",
    )

    assert res.returncode == 0, res.stderr


def test_push_breaker_refuses_to_drop_remote_commits_never_fetched(
    pushed: tuple[Path, Path], tmp_path: Path
) -> None:
    local, remote = pushed
    other = tmp_path / "other"
    git(tmp_path, "clone", "-q", str(remote), str(other))
    unseen = commit_file(other, "theirs.txt", "theirs\n")
    git(other, "push", "-q", "origin", "main")
    git(local, "commit", "-q", "--amend", "-m", "rewritten")

    res = push_check(local, remote, f"refs/heads/main {head(local)} refs/heads/main {unseen}")

    assert res.returncode == 20
    assert "refs/heads/main" in res.stderr and unseen[:12] in res.stderr
    assert "GUARDS_ALLOW_FORCE_PUSH=1" in res.stderr


def test_push_breaker_allows_a_force_push_over_a_tip_seen_here(pushed: tuple[Path, Path]) -> None:
    local, remote = pushed
    seen = head(local, "refs/remotes/origin/main")
    git(local, "commit", "-q", "--amend", "-m", "rewritten")

    res = push_check(local, remote, f"refs/heads/main {head(local)} refs/heads/main {seen}")

    assert res.returncode == 0, res.stderr


def test_push_breaker_refuses_to_drop_commits_no_ref_here_holds(
    pushed: tuple[Path, Path],
) -> None:
    local, remote = pushed
    orphan = commit_file(local, "lost.txt", "only here\n")
    git(local, "reset", "-q", "--hard", "HEAD~1")
    rewritten = commit_file(local, "other.txt", "other\n")

    res = push_check(local, remote, f"refs/heads/main {rewritten} refs/heads/main {orphan}")

    assert res.returncode == 20
    assert "drops 1 remote commit" in res.stderr


def test_push_breaker_refuses_deleting_a_branch_whose_tip_is_nowhere_else(
    pushed: tuple[Path, Path],
) -> None:
    local, remote = pushed
    git(local, "checkout", "-q", "topic")
    tip = commit_file(local, "topic.txt", "topic work\n")
    git(local, "push", "-q", "origin", "topic")
    git(local, "checkout", "-q", "main")
    git(local, "branch", "-q", "-D", "topic")  # now only refs/remotes/origin/topic holds it

    refused = push_check(local, remote, f"(delete) {ZERO} refs/heads/topic {tip}")
    git(local, "branch", "keep", tip)
    allowed = push_check(local, remote, f"(delete) {ZERO} refs/heads/topic {tip}")

    assert refused.returncode == 20
    assert "deleting refs/heads/topic" in refused.stderr
    assert allowed.returncode == 0, allowed.stderr


def test_push_breaker_override_variable_lets_the_push_through(
    pushed: tuple[Path, Path],
) -> None:
    local, remote = pushed
    unknown = "1234567890" * 4

    res = push_check(
        local,
        remote,
        f"refs/heads/main {head(local)} refs/heads/main {unknown}",
        env={"GUARDS_ALLOW_FORCE_PUSH": "1"},
    )

    assert res.returncode == 0
    assert "warning" in res.stderr


def test_push_breaker_malformed_input_is_a_one_line_error(pushed: tuple[Path, Path]) -> None:
    local, remote = pushed

    res = push_check(local, remote, "this is not a pre-push line")

    assert res.returncode == 2
    assert_one_line_error(res.stderr)


def test_hook_run_rejects_an_unknown_hook_type_in_one_line(repo: Path) -> None:
    res = hook(repo, "run", "commit-msg")

    assert res.returncode == 2
    assert_one_line_error(res.stderr)
