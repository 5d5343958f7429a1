"""guards record and guards status: attribution, ownership classes, any file name."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.helpers import git, ledger_doc, run_guards

ALICE = {"GUARDS_SESSION": "alice"}
BOB = {"GUARDS_SESSION": "bob"}


def status(
    repo: Path, env: dict[str, str] | None = None, *args: str
) -> dict[str, dict[str, object]]:
    res = run_guards("status", "--json", *args, cwd=repo, env=env)
    assert res.returncode == 0, res.stderr
    return {p["path"]: p for p in json.loads(res.stdout)["paths"]}


def test_recorded_path_is_mine_for_its_session_and_foreign_for_others(repo: Path) -> None:
    (repo / "README").write_text("alice was here\n")
    assert run_guards("record", "README", cwd=repo, env=ALICE).returncode == 0
    assert status(repo, ALICE)["README"]["class"] == "mine"
    assert status(repo, BOB)["README"]["class"] == "foreign"
    assert status(repo, BOB)["README"]["owner"] == "alice"
    # Unidentified callers own nothing.
    assert status(repo)["README"]["class"] == "foreign"


def test_unrecorded_dirty_path_is_unknown_with_mtime_age(repo: Path) -> None:
    (repo / "src" / "app.py").write_text("changed\n")
    os.utime(repo / "src" / "app.py", (time.time() - 7200, time.time() - 7200))
    entry = status(repo, ALICE)["src/app.py"]
    assert entry["class"] == "unknown" and entry["owner"] is None
    assert entry["since_source"] == "mtime" and 7100 < entry["age_seconds"] < 7400  # type: ignore[operator]


def test_path_changed_after_recording_has_no_known_owner(repo: Path) -> None:
    (repo / "README").write_text("alice\n")
    run_guards("record", "README", cwd=repo, env=ALICE)
    (repo / "README").write_text("bob overwrote it, longer\n")
    assert status(repo, ALICE)["README"]["class"] == "unknown"


def test_touch_without_content_change_keeps_the_owner(repo: Path) -> None:
    (repo / "README").write_text("alice\n")
    run_guards("record", "README", cwd=repo, env=ALICE)
    os.utime(repo / "README", (time.time() + 5, time.time() + 5))
    assert status(repo, ALICE)["README"]["class"] == "mine"


def test_same_size_rewrite_is_detected(repo: Path) -> None:
    (repo / "README").write_text("aaaa\n")
    run_guards("record", "README", cwd=repo, env=ALICE)
    time.sleep(0.01)
    (repo / "README").write_text("bbbb\n")
    assert status(repo, ALICE)["README"]["class"] == "unknown"


def test_deletion_is_recorded_as_a_deletion(repo: Path) -> None:
    (repo / "README").unlink()
    assert run_guards("record", "README", cwd=repo, env=ALICE).returncode == 0
    entry = status(repo, BOB)["README"]
    assert entry["class"] == "foreign" and entry["state"] == ".D"
    (repo / "README").write_text("resurrected by someone\n")
    assert status(repo, BOB)["README"]["class"] == "unknown"


def test_staged_and_untracked_and_ignored_paths_are_listed(repo: Path) -> None:
    (repo / ".gitignore").write_text("*.log\n")
    (repo / "new.txt").write_text("n\n")
    (repo / "debug.log").write_text("l\n")
    (repo / "README").write_text("staged\n")
    git(repo, "add", "README")
    plain = status(repo)
    assert plain["README"]["staged"] is True and plain["README"]["unstaged"] is False
    assert plain["new.txt"]["untracked"] is True
    assert "debug.log" not in plain
    assert status(repo, None, "--ignored")["debug.log"]["ignored"] is True


def test_record_paths_are_relative_to_the_current_directory(repo: Path) -> None:
    (repo / "src" / "app.py").write_text("x\n")
    assert run_guards("record", "app.py", cwd=repo / "src", env=ALICE).returncode == 0
    assert status(repo, ALICE)["src/app.py"]["class"] == "mine"


def test_record_a_directory_records_its_dirty_files(repo: Path) -> None:
    (repo / "src" / "app.py").write_text("x\n")
    (repo / "src" / "new.py").write_text("y\n")
    assert run_guards("record", "src", cwd=repo, env=ALICE).returncode == 0
    st = status(repo, ALICE)
    assert st["src/app.py"]["class"] == "mine" and st["src/new.py"]["class"] == "mine"


def test_record_outside_the_repository_is_a_one_line_error(repo: Path, tmp_path: Path) -> None:
    (tmp_path / "elsewhere").write_text("x")
    res = run_guards("record", str(tmp_path / "elsewhere"), cwd=repo, env=ALICE)
    assert res.returncode == 2 and "outside the repository" in res.stderr
    assert res.stderr.count("\n") == 1


def test_record_without_a_session_is_a_one_line_error(repo: Path) -> None:
    res = run_guards("record", "README", cwd=repo)
    assert res.returncode == 2 and "GUARDS_SESSION" in res.stderr


def test_record_outside_a_repository_is_a_one_line_error(tmp_path: Path) -> None:
    res = run_guards("record", "x", cwd=tmp_path, env=ALICE)
    assert (
        res.returncode == 2 and res.stderr.count("\n") == 1 and "not a git repository" in res.stderr
    )


def test_recording_creates_the_session(repo: Path) -> None:
    (repo / "README").write_text("x\n")
    run_guards("record", "--session", "newbie", "README", cwd=repo)
    res = run_guards("session", "list", "--json", cwd=repo)
    assert [s["id"] for s in json.loads(res.stdout)["sessions"]] == ["newbie"]


def test_committed_paths_stop_being_attributed(repo: Path) -> None:
    (repo / "README").write_text("x\n")
    (repo / "other").write_text("y\n")
    run_guards("record", "README", "other", cwd=repo, env=ALICE)
    git(repo, "commit", "-qam", "take README")
    status(repo, ALICE)
    assert set(ledger_doc(repo)["paths"][str(repo.resolve())]) == {"other"}


def test_ignored_recorded_path_keeps_its_attribution(repo: Path) -> None:
    (repo / ".gitignore").write_text(".env\n")
    (repo / ".env").write_text("SECRET=1\n")
    run_guards("record", ".env", cwd=repo, env=ALICE)
    status(repo, ALICE)
    assert status(repo, BOB, "--ignored")[".env"]["class"] == "foreign"


WEIRD_NAMES = [
    "with space.txt",
    "new\nline.txt",
    "tab\there.txt",
    'quote"d.txt',
    "single'quote.txt",
    "back\\slash.txt",
    "-leading-dash.txt",
    "ünïcødé.txt",
    os.fsdecode(b"latin1-\xe9\xff.txt"),
    "star*.txt",
]


@pytest.mark.parametrize("name", WEIRD_NAMES)
def test_any_file_name_round_trips_through_record_and_status_json(repo: Path, name: str) -> None:
    (repo / os.fsencode(name).decode("utf-8", "surrogateescape")).write_bytes(b"content\n")
    res = run_guards("record", "--", name, cwd=repo, env=ALICE)
    assert res.returncode == 0, res.stderr
    st = status(repo, ALICE)
    assert name in st, list(st)
    assert st[name]["class"] == "mine"
    assert os.fsencode(name) in os.listdir(os.fsencode(repo))


def test_status_text_is_aligned_and_quotes_odd_names(repo: Path) -> None:
    (repo / "README").write_text("a\n")
    (repo / "new\nline").write_text("b\n")
    run_guards("record", "README", cwd=repo, env=ALICE)
    res = run_guards("status", cwd=repo, env=ALICE)
    lines = res.stdout.splitlines()
    assert lines[0].split() == ["ST", "OWNER", "CLASS", "AGE", "PATH"]
    assert len(lines) == 3
    readme = next(line for line in lines if line.endswith("README"))
    assert readme.split()[:3] == ["M", "alice", "mine"]
    assert any(line.endswith('"new\\nline"') for line in lines)
    assert len({line.index(lines[0].split()[-1]) for line in lines[:1]}) == 1


def test_clean_tree_says_nothing_dirty(repo: Path) -> None:
    res = run_guards("status", cwd=repo)
    assert res.returncode == 0 and res.stdout == "nothing dirty\n"


def test_status_in_a_linked_worktree_sees_its_own_paths(repo: Path, tmp_path: Path) -> None:
    git(repo, "worktree", "add", "-q", str(tmp_path / "wt"))
    (tmp_path / "wt" / "README").write_text("wt\n")
    run_guards("record", "README", cwd=tmp_path / "wt", env=ALICE)
    assert status(tmp_path / "wt", BOB)["README"]["class"] == "foreign"
    assert status(repo, BOB) == {}


def test_status_does_not_rewrite_the_index(repo: Path) -> None:
    (repo / "README").write_text("dirty\n")
    future = time.time() + 100
    os.utime(repo / "src" / "app.py", (future, future))  # stale stat data git would refresh
    index = repo / ".git" / "index"
    before = (index.read_bytes(), index.stat().st_mtime_ns)
    run_guards("status", cwd=repo)
    assert (index.read_bytes(), index.stat().st_mtime_ns) == before


def test_status_on_unborn_branch(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q", "fresh")
    (tmp_path / "fresh" / "a").write_text("a\n")
    st = status(tmp_path / "fresh")
    assert st["a"]["untracked"] is True


def test_record_imports_nothing_heavy_and_takes_no_lock(repo: Path) -> None:
    # `guards record` runs on every agent edit: one journal append. No argparse, no
    # settings, no pathlib, no json/re/enum (the record is written by hand), no hashlib
    # (OpenSSL; CPython's own SHA-1 hashes the blob), and no filelock (~30-60 ms to
    # import): appends need no lock. No select either: the repository is found without
    # running git (guards.git.repo.plain_layout), so no pipe is waited for; and no _json
    # (a shared library): the record's strings need no escaping and nothing is read; nor
    # the code that runs git (guards.git.process), as nothing is run.
    import os
    import subprocess
    import sys

    from tests.helpers import PROJECT_ROOT

    (repo / "new.txt").write_text("x\n")
    heavy = (
        "argparse", "dataclasses", "enum", "filelock", "hashlib", "json", "pathlib",
        "platformdirs", "re", "select", "_json", "socket", "subprocess", "typing",
        "guards.git.process",
    )  # fmt: skip
    code = (
        "import sys\n"
        f"sys.path.insert(0, {str(PROJECT_ROOT)!r})\n"
        "from guards.main import main\n"
        "status = main(['record', 'new.txt'])\n"
        f"print('IMPORTED', [m for m in {heavy!r} if m in sys.modules], status, file=sys.stderr)\n"
    )
    for _ in range(2):  # the first creates the journal, the second only appends
        res = subprocess.run(
            [sys.executable, "-S", "-c", code],
            cwd=repo,
            env={**os.environ, "GUARDS_SESSION": "alice"},
            capture_output=True,
            text=True,
        )
        assert res.stderr == "IMPORTED [] 0\n"
    assert ledger_doc(repo)["paths"][str(repo.resolve())]["new.txt"]["session"] == "alice"


def test_record_of_a_file_runs_no_git_in_a_plain_checkout(repo: Path, tmp_path: Path) -> None:
    """The repository of a plain checkout or linked worktree is found from its files
    (tests/test_repo.py compares that with git on every layout); an edit's record is then
    one journal append and no process."""
    from tests.helpers import counting_git

    wrapper, log = counting_git(tmp_path)
    git(repo, "worktree", "add", "-q", str(tmp_path / "linked"))
    for where in (repo / "src", tmp_path / "linked/src"):
        (where / "app.py").write_text("edited\n")
        env = {"GUARDS_REAL_GIT": str(wrapper), "GUARDS_SESSION": "alice"}
        res = run_guards("record", "app.py", cwd=where, env=env)
        assert res.returncode == 0, res.stderr
    assert not log.exists(), log.read_text()
    assert "src/app.py" in ledger_doc(repo)["paths"][str((tmp_path / "linked").resolve())]


def test_status_imports_nothing_heavy(repo: Path) -> None:
    # `guards status` reads: git status, the ledger, the settings. None of these modules
    # is needed for that, and each costs milliseconds of start-up (see guards.values).
    import os
    import subprocess
    import sys

    from tests.helpers import PROJECT_ROOT

    (repo / "new.txt").write_text("x\n")
    heavy = ("argparse", "dataclasses", "pathlib", "platformdirs", "subprocess", "typing")
    code = (
        "import sys\n"
        f"sys.path.insert(0, {str(PROJECT_ROOT)!r})\n"
        "from guards.main import main\n"
        "status = main(['status', '--json'])\n"
        "sys.stdout.flush()\n"
        f"print('IMPORTED', [m for m in {heavy!r} if m in sys.modules], status, file=sys.stderr)\n"
    )
    res = subprocess.run(
        [sys.executable, "-S", "-c", code],
        cwd=repo,
        env={**os.environ, "GUARDS_SESSION": "alice"},
        capture_output=True,
        text=True,
    )
    assert res.stderr == "IMPORTED [] 0\n"
    assert '"new.txt"' in res.stdout


def _listed(res_stdout: str) -> list[str]:
    return [line.split()[-1] for line in res_stdout.splitlines()[1:]]


def test_status_filters_by_path_relative_to_this_directory(repo: Path) -> None:
    (repo / "README").write_text("changed\n")
    (repo / "src" / "app.py").write_text("changed\n")
    (repo / "src" / "new.py").write_text("new\n")
    run_guards("record", "--session", "alice", "README", "src/app.py", cwd=repo)
    res = run_guards("status", "src", cwd=repo)
    assert res.returncode == 0 and _listed(res.stdout) == ["src/app.py", "src/new.py"]
    res = run_guards("status", "new.py", cwd=repo / "src")
    assert _listed(res.stdout) == ["src/new.py"]
    res = run_guards("status", "--json", "*.py", cwd=repo)
    assert [p["path"] for p in json.loads(res.stdout)["paths"]] == ["src/app.py", "src/new.py"]
    # a partial listing never releases the attributions of the paths it left out
    assert ledger_doc(repo)["paths"][str(repo.resolve())]["README"]["session"] == "alice"
    res = run_guards("status", "docs", cwd=repo)
    assert (res.returncode, res.stdout) == (0, "no dirty path matches\n")


def test_status_filters_by_owner(repo: Path) -> None:
    (repo / "README").write_text("changed\n")
    (repo / "src" / "app.py").write_text("changed\n")
    (repo / "other.txt").write_text("new\n")
    run_guards("record", "--session", "alice", "README", cwd=repo)
    run_guards("record", "--session", "bob", "src/app.py", cwd=repo)
    assert _listed(run_guards("status", "--owner", "alice", cwd=repo).stdout) == ["README"]
    assert _listed(run_guards("status", "--owner", "unknown", cwd=repo).stdout) == ["other.txt"]
    res = run_guards("status", "--owner", "bob", "--json", cwd=repo)
    assert [p["path"] for p in json.loads(res.stdout)["paths"]] == ["src/app.py"]


def test_status_of_a_path_outside_the_repository_is_one_line(repo: Path, tmp_path: Path) -> None:
    res = run_guards("status", str(tmp_path), cwd=repo)
    assert (
        res.returncode == 2 and res.stderr.count("\n") == 1 and "outside repository" in res.stderr
    )


def _status_on_a_terminal(repo: Path, rows: int, pager: str) -> bytes:
    """`guards status` with stdout on a pseudo-terminal of ``rows`` lines."""
    import fcntl
    import pty
    import struct
    import termios

    from tests.helpers import PROJECT_ROOT

    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", rows, 120, 0, 0))
    proc = subprocess.Popen(
        [sys.executable, "-m", "guards", "status"],
        cwd=repo,
        stdout=follower,
        stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": str(PROJECT_ROOT), "GUARDS_PAGER": pager},
    )
    os.close(follower)
    seen = b""
    while True:
        try:
            chunk = os.read(leader, 4096)
        except OSError:  # the terminal closed: every writer is gone
            break
        if not chunk:
            break
        seen += chunk
    assert proc.wait(timeout=60) == 0, proc.stderr.read() if proc.stderr else b""
    os.close(leader)
    return seen


def test_a_status_longer_than_the_terminal_goes_through_the_pager(
    repo: Path, tmp_path: Path
) -> None:
    for i in range(30):
        (repo / f"new-{i:02}.txt").write_text("x\n")
    paged = tmp_path / "paged.txt"
    pager = f"sh -c 'cat > {paged}'"
    assert b"new-29.txt" not in _status_on_a_terminal(repo, 10, pager)
    assert "new-29.txt" in paged.read_text() and paged.read_text().startswith("ST ")
    paged.unlink()
    shown = _status_on_a_terminal(repo, 100, pager)  # it fits: no pager
    assert b"new-29.txt" in shown and not paged.exists()


def test_an_edit_outside_any_repository_does_not_keep_the_next_file_from_its_record(
    tmp_path: Path,
) -> None:
    """The agent hooks' record of edited files starts the first file's discovery early;
    when that file lies outside any repository, the next file finds its own."""
    from guards.git.repo import Discovery
    from guards.state.workspace import record_files
    from tests.helpers import make_repo

    outside = tmp_path / "plain" / "notes.txt"
    outside.parent.mkdir()
    outside.write_text("x\n")
    repo = make_repo(tmp_path / "repo")
    (repo / "README").write_text("mine\n")
    started = Discovery(str(outside.parent))
    done, problems = record_files("s1", [str(outside), str(repo / "README")], started)
    assert (done, problems) == (["README"], [])
