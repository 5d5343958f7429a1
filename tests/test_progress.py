"""Progress on stderr for long operations: on a terminal only, never quiet, like git."""

from __future__ import annotations

import io
from pathlib import Path

from guards.output import Progress
from tests.helpers import git, run_guards, run_on_a_terminal

FILES = 300
#: Show progress at once (it waits a second by default: these runs are shorter).
AT_ONCE = {"GUARDS_PROGRESS_DELAY": "0s"}


def many_edited_files(repo: Path) -> list[str]:
    names = [f"src/f{i}.txt" for i in range(FILES)]
    for name in names:
        (repo / name).write_text("committed\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "many")
    for name in names:
        (repo / name).write_text("someone's work\n")
    return names


def test_a_rescue_shows_progress_on_a_terminal(repo: Path) -> None:
    many_edited_files(repo)
    code, shown = run_on_a_terminal("run", "--", "reset", "--hard", cwd=repo, env=AT_ONCE)
    assert code == 0, shown
    assert b"\rRescuing: " in shown
    # Line endings on a terminal may become CRLF: look for the words.
    assert f"Rescuing: 100% ({FILES + 1}/{FILES + 1}), done.".encode() in shown or (
        f"Rescuing: 100% ({FILES}/{FILES}), done.".encode() in shown
    )
    assert b"Verifying rescue: 100%" in shown
    assert b"guards: rescued" in shown  # the rescue line still comes after it
    assert git(repo, "for-each-ref", "refs/rescue")


def test_no_progress_when_stderr_is_not_a_terminal(repo: Path) -> None:
    many_edited_files(repo)
    res = run_guards("run", "--", "reset", "--hard", cwd=repo, env=AT_ONCE)
    assert res.returncode == 0
    assert "Rescuing" not in res.stderr and "\r" not in res.stderr
    assert "guards: rescued" in res.stderr


def test_no_progress_in_quiet_mode_even_on_a_terminal(repo: Path) -> None:
    many_edited_files(repo)
    code, shown = run_on_a_terminal(
        "run", "--", "reset", "--hard", cwd=repo, env={**AT_ONCE, "GUARDS_QUIET": "1"}
    )
    assert code == 0
    assert b"Rescuing" not in shown and b"guards: rescued" not in shown
    assert git(repo, "for-each-ref", "refs/rescue")  # rescued all the same


def test_no_progress_for_a_command_given_quiet(repo: Path) -> None:
    many_edited_files(repo)
    code, shown = run_on_a_terminal("run", "--", "reset", "--hard", "-q", cwd=repo, env=AT_ONCE)
    assert code == 0
    assert b"Rescuing" not in shown


def test_a_big_record_and_a_restore_show_progress_on_a_terminal(repo: Path) -> None:
    names = many_edited_files(repo)
    more = [f"new/n{i}.txt" for i in range(500)]
    (repo / "new").mkdir()
    for name in more:
        (repo / name).write_text("new\n")
    code, shown = run_on_a_terminal(
        "record", "--session", "alice", "src", "new", cwd=repo, env=AT_ONCE
    )
    assert code == 0, shown
    total = len(names) + len(more)
    assert f"Recording: 100% ({total}/{total}), done.".encode() in shown
    res = run_guards("run", "--", "reset", "--hard", cwd=repo)
    assert res.returncode == 0, res.stderr
    code, shown = run_on_a_terminal("rescue", "restore", "latest", cwd=repo, env=AT_ONCE)
    assert code == 0, shown
    assert f"Restoring: 100% ({FILES}/{FILES}), done.".encode() in shown
    assert (repo / "src/f7.txt").read_text() == "someone's work\n"


def test_a_quick_operation_shows_nothing_and_a_slow_one_counts_up() -> None:
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    quick = Terminal()
    p = Progress("Rescuing", 10, stream=quick, delay=60)
    for _ in range(10):
        p.tick()
    p.done()
    assert quick.getvalue() == ""
    slow = Terminal()
    p = Progress("Rescuing", 200, stream=slow, delay=0)
    p.tick(90)
    p.tick(110)
    p.done()
    assert slow.getvalue().startswith("\rRescuing:  45% (90/200)")
    assert slow.getvalue().endswith("\rRescuing: 100% (200/200), done.\n")
    pipe = io.StringIO()  # not a terminal
    p = Progress("Rescuing", 10, stream=pipe, delay=0)
    p.tick(10)
    p.done()
    assert pipe.getvalue() == ""


def test_reap_apply_shows_progress_on_a_terminal(repo: Path, tmp_path: Path) -> None:
    import subprocess
    import time

    from guards.state.ledger import Ledger
    from guards.state.session import hostname

    wt = tmp_path / "wt"
    res = run_guards("worktree", "add", str(wt), "--session", "s1", cwd=repo)
    assert res.returncode == 0, res.stderr
    (wt / "notes.txt").write_text("left behind\n")
    gone = subprocess.Popen(["true"])
    gone.wait()
    now = time.time()
    with Ledger(repo / ".git" / "guards").transaction() as data:
        data.sessions["s1"] = {
            "id": "s1", "label": "", "host": hostname(), "pid": gone.pid, "pid_start": "0:1",
            "worktree": None, "started": now - 7200, "last_seen": now - 7200, "ended": False,
        }  # fmt: skip
    code, shown = run_on_a_terminal("reap", "--apply", cwd=repo, env=AT_ONCE)
    assert code == 0, shown
    assert b"Reaping worktrees: 100% (1/1), done." in shown
    assert not wt.exists()
