"""Mistakes are caught and a person's own work is theirs: record, session, checkpoint."""

from __future__ import annotations

import os
import time
from pathlib import Path

from guards.state.session import one_edit_apart
from tests.helpers import attributed, run_guards


def start(repo: Path, session: str) -> None:
    """A live session: its life is this test process's."""
    res = run_guards("session", "start", "--id", session, "--pid", str(os.getpid()), cwd=repo)
    assert res.returncode == 0, res.stderr


def test_recording_a_missing_path_is_an_error_and_records_nothing(repo: Path) -> None:
    res = run_guards("record", "--session", "alice", "missing.txt", "README", cwd=repo)
    assert res.returncode == 2 and res.stdout == ""
    assert res.stderr == "guards: no such file: missing.txt (and git sees no deleted file there)\n"
    assert attributed(repo) == {}


def test_a_deleted_tracked_file_or_directory_is_recorded_as_git_sees_it(repo: Path) -> None:
    (repo / "README").unlink()
    (repo / "src" / "app.py").unlink()
    (repo / "src").rmdir()
    res = run_guards("record", "--session", "alice", "README", "src", cwd=repo)
    assert (res.returncode, res.stdout) == (0, "recorded 2 paths for session alice\n")
    assert attributed(repo) == {"README": "alice", "src/app.py": "alice"}


def test_record_says_what_it_recorded_unless_quiet(repo: Path) -> None:
    (repo / "README").write_text("changed\n")
    res = run_guards("record", "--session", "alice", "README", cwd=repo)
    assert res.stdout == "recorded 1 path for session alice\n" and res.stderr == ""
    res = run_guards("record", "-q", "--session", "alice", "README", cwd=repo)
    assert (res.returncode, res.stdout, res.stderr) == (0, "", "")


def test_record_without_paths_or_since_start_is_a_usage_error(repo: Path) -> None:
    res = run_guards("record", "--session", "alice", cwd=repo)
    assert res.returncode == 2 and res.stderr.count("\n") == 1


def test_a_pattern_claims_the_dirty_paths_it_matches_but_never_another_live_sessions(
    repo: Path,
) -> None:
    start(repo, "bob")
    for name in ("src/app.py", "src/new.py", "src/deep/x.py", "notes.md"):
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(f"{name}\n")
    run_guards("record", "--session", "bob", "src/new.py", cwd=repo)
    res = run_guards("record", "--session", "alice", "src/*.py", cwd=repo)
    assert res.returncode == 0, res.stderr
    assert res.stdout == (
        "recorded 1 path for session alice; left 1 path of other sessions (guards status)\n"
    )
    assert attributed(repo) == {"src/app.py": "alice", "src/new.py": "bob"}
    res = run_guards("record", "--session", "alice", "**/*.py", cwd=repo)
    assert attributed(repo)["src/deep/x.py"] == "alice"
    assert attributed(repo)["src/new.py"] == "bob"


def test_a_pattern_that_matches_no_dirty_path_is_an_error(repo: Path) -> None:
    res = run_guards("record", "--session", "alice", "lib/*.py", cwd=repo)
    assert res.returncode == 2 and res.stderr == "guards: no dirty path matches lib/*.py\n"


def test_since_start_claims_what_changed_since_the_session_started_and_nothing_else(
    repo: Path,
) -> None:
    (repo / "before.txt").write_text("made before alice started\n")
    old = time.time() - 3600
    os.utime(repo / "before.txt", (old, old))
    start(repo, "bob")
    start(repo, "alice")
    (repo / "README").write_text("alice's edit\n")
    (repo / "mine.txt").write_text("alice's new file\n")
    (repo / "bobs.txt").write_text("bob's file\n")
    run_guards("record", "--session", "bob", "bobs.txt", cwd=repo)
    (repo / "src" / "app.py").unlink()  # a deletion: when it happened is unknown
    res = run_guards("record", "--session", "alice", "--since-start", cwd=repo)
    assert res.returncode == 0, res.stderr
    assert res.stdout == (
        "recorded 2 paths for session alice; left 1 deleted path (when deleted is unknown: "
        "record by name); left 1 path of other sessions (guards status)\n"
    )
    assert attributed(repo) == {"README": "alice", "mine.txt": "alice", "bobs.txt": "bob"}


def test_since_start_never_takes_a_path_a_live_session_recorded_and_someone_changed(
    repo: Path,
) -> None:
    start(repo, "bob")
    start(repo, "alice")
    (repo / "README").write_text("bob's edit\n")
    run_guards("record", "--session", "bob", "README", cwd=repo)
    (repo / "README").write_text("bob's second edit, not recorded yet\n")
    res = run_guards("record", "--session", "alice", "--since-start", cwd=repo)
    assert res.stdout == "nothing to record; left 1 path of other sessions (guards status)\n"
    assert attributed(repo) == {"README": "bob"}


def test_since_start_of_a_session_that_never_started_is_an_error(repo: Path) -> None:
    start(repo, "bob")
    res = run_guards("record", "--session", "zed", "--since-start", cwd=repo)
    assert res.returncode == 2 and "has no start time" in res.stderr


def test_a_new_session_one_typo_from_a_live_one_is_warned_about_once(repo: Path) -> None:
    start(repo, "alice")
    (repo / "README").write_text("x\n")
    first = run_guards("record", "--session", "alcie", "README", cwd=repo)
    assert first.returncode == 0
    assert first.stderr == (
        "guards: warning: new session 'alcie' is one typo away from live session 'alice': "
        "check GUARDS_SESSION (guards session list)\n"
    )
    again = run_guards("record", "--session", "alcie", "README", cwd=repo)
    assert again.returncode == 0 and again.stderr == ""
    res = run_guards("session", "start", "--id", "alicee", cwd=repo)
    assert "one typo away from live session 'alice'" in res.stderr
    res = run_guards("session", "start", "--id", "bob", cwd=repo)
    assert res.stderr == ""


def test_one_edit_apart() -> None:
    assert one_edit_apart("alice", "alcie")  # two neighbours swapped
    assert one_edit_apart("alice", "alce")  # one deleted
    assert one_edit_apart("alice", "alicex")  # one inserted
    assert one_edit_apart("alice", "alica")  # one replaced
    assert not one_edit_apart("alice", "alice")
    assert not one_edit_apart("alice", "bob")
    assert not one_edit_apart("alice", "ailce1")
    assert not one_edit_apart("ab", "ba-")


def test_session_start_prints_a_fish_line_on_request(repo: Path) -> None:
    res = run_guards("session", "start", "--id", "alice", "--shell", "fish", cwd=repo)
    assert (res.returncode, res.stdout) == (0, "set -gx GUARDS_SESSION 'alice'\n")


def test_session_end_confirms(repo: Path) -> None:
    start(repo, "alice")
    res = run_guards("session", "end", "alice", "--no-persist", cwd=repo)
    assert (res.returncode, res.stdout) == (0, "session alice ended\n")
    res = run_guards("session", "end", "alice", cwd=repo)
    assert res.stdout == "nothing of session alice to checkpoint\nsession alice ended\n"


def test_checkpoint_that_finds_nothing_says_how_to_claim_work(repo: Path) -> None:
    (repo / "README").write_text("unrecorded\n")
    res = run_guards("checkpoint", cwd=repo, env={"GUARDS_SESSION": "alice"})
    assert res.returncode == 0
    assert res.stdout == (
        "nothing of session alice to checkpoint: 1 dirty path is no one's (guards status); "
        "claim yours with guards record PATH... or guards record --since-start, then "
        "checkpoint again\n"
    )
    run_guards("record", "--session", "alice", "README", cwd=repo)
    res = run_guards("checkpoint", cwd=repo, env={"GUARDS_SESSION": "alice"})
    assert res.stdout.startswith("checkpoint ")
