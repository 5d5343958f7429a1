"""guards.git: how git is run (posix_spawn without stdin, subprocess with it)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from guards.git import process as guards_git
from tests.helpers import counting_git, git


def test_output_larger_than_a_pipe_on_both_streams_at_once(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A stand-in for git that fills stdout and stderr in turns: a runner that drained
    # one pipe before the other would deadlock here.
    fake = tmp_path / "chatty-git"
    fake.write_text(
        f"#!{sys.executable}\n"
        "import sys\n"
        "for i in range(400):\n"
        "    sys.stdout.write('o' * 1000 + '\\n'); sys.stdout.flush()\n"
        "    sys.stderr.write('e' * 1000 + '\\n'); sys.stderr.flush()\n"
        "sys.exit(3)\n"
    )
    fake.chmod(0o755)
    monkeypatch.setattr(guards_git, "_real_git_cache", str(fake))
    res = guards_git.run(["anything"], check=False)
    assert res.returncode == 3
    assert res.stdout == (b"o" * 1000 + b"\n") * 400
    assert res.stderr == (b"e" * 1000 + b"\n") * 400


def test_stdout_and_exit_status_come_back_exactly(repo: Path) -> None:
    for i in range(3000):
        (repo / f"file-{i:05}.txt").write_text("x\n")
    git(repo, "add", ".")
    res = guards_git.run(["ls-files", "-s", "-z"], cwd=repo)
    assert res.returncode == 0
    assert res.stdout == git(repo, "ls-files", "-s", "-z").encode()
    assert len(res.stdout) > 64 * 1024  # more than one pipe buffer
    failed = guards_git.run(["rev-parse", "--verify", "no-such-ref"], cwd=repo, check=False)
    assert failed.returncode == 128 and b"fatal" in failed.stderr


def test_cwd_is_where_git_runs(repo: Path, tmp_path: Path) -> None:
    sub = repo / "src"
    res = guards_git.run(["rev-parse", "--show-prefix"], cwd=sub)
    assert res.stdout == b"src/\n"
    with pytest.raises(guards_git.GitError, match="cannot change to"):
        guards_git.run(["status"], cwd=tmp_path / "missing")


def test_stdin_is_fed_when_given_and_empty_otherwise(repo: Path) -> None:
    blob = guards_git.run(["hash-object", "--stdin"], cwd=repo, stdin=b"hello\n")
    assert blob.stdout == git(repo, "rev-parse", "HEAD:README").encode()
    empty = guards_git.run(["hash-object", "--stdin"], cwd=repo)  # /dev/null, never a tty
    assert empty.stdout == b"e69de29bb2d1d6434b8b29ae775ad8c2e48c5391\n"


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="reads /proc")
def test_git_gets_sigpipe_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Python ignores SIGPIPE; a git that inherited that would never die of a closed pipe.
    fake = tmp_path / "report-git"
    fake.write_text("#!/bin/sh\ngrep '^SigIgn' /proc/$$/status\n")
    fake.chmod(0o755)
    monkeypatch.setattr(guards_git, "_real_git_cache", str(fake))
    ignored = int(guards_git.run(["x"]).stdout.split()[1], 16)
    assert not ignored & (1 << (13 - 1))  # SIGPIPE is signal 13


def test_a_started_call_answers_later(repo: Path) -> None:
    pending = guards_git.start(["rev-parse", "--show-toplevel"], cwd=repo)
    status = guards_git.run(["status", "--porcelain"], cwd=repo)
    assert status.returncode == 0
    assert pending.result().stdout == f"{repo}\n".encode()
    failing = guards_git.start(["rev-parse", "--verify", "nope"], cwd=repo)
    with pytest.raises(guards_git.GitError):
        failing.result()
    assert failing.result(check=False).returncode == 128


def test_a_missing_git_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(guards_git, "_real_git_cache", str(tmp_path / "no-git"))
    with pytest.raises(guards_git.GitNotFoundError, match="cannot run git"):
        guards_git.run(["status"])
    with pytest.raises(guards_git.GitNotFoundError, match="cannot run git"):
        guards_git.start(["status"])


def test_a_query_asked_ahead_is_answered_by_the_git_started_then(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    wrapper, log = counting_git(tmp_path)
    monkeypatch.setattr(guards_git, "_real_git_cache", str(wrapper))
    monkeypatch.setattr(guards_git, "_AHEAD", [])
    monkeypatch.chdir(repo)
    query = ["rev-parse", "--show-toplevel"]
    guards_git.ahead(query, cwd=str(repo))
    assert guards_git.run(query, cwd=str(repo)).stdout == f"{repo}\n".encode()
    assert guards_git.run(query, cwd=str(repo)).stdout == f"{repo}\n".encode()  # asked anew
    assert len(log.read_text().splitlines()) == 2
    # Another directory, another environment: each is its own query.
    guards_git.ahead(query, cwd=str(repo))
    sub = guards_git.run(["rev-parse", "--show-prefix"], cwd=str(repo / "src"))
    assert sub.stdout == b"src/\n"
    moved = {**os.environ, "GIT_DIR": "nowhere"}
    other = guards_git.run(query, cwd=str(repo), env=moved, check=False)
    assert other.returncode != 0
    guards_git.finish_ahead()  # reaps the one nobody asked
    assert guards_git._AHEAD == []
    assert len(log.read_text().splitlines()) == 5


def test_an_unusable_git_ahead_is_left_to_the_query_asked_later(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(guards_git, "_real_git_cache", str(tmp_path / "no-git"))
    monkeypatch.setattr(guards_git, "_AHEAD", [])
    guards_git.ahead(["status"], cwd=str(tmp_path))
    assert guards_git._AHEAD == []
    with pytest.raises(guards_git.GitNotFoundError, match="cannot run git"):
        guards_git.run(["status"], cwd=str(tmp_path))


def test_symbolic_head_and_ancestry_are_three_valued_where_git_is(repo: Path) -> None:
    """HEAD's branch (bytes git allows kept as os.fsdecode keeps them) or None when
    detached; ancestry True / False, and None when git cannot tell (an unknown id), an
    error only when asked to be strict."""
    from guards.git.history import ancestry, symbolic_head
    from guards.git.repo import discover

    run = discover(repo).run
    git(repo, "commit", "-q", "--allow-empty", "-m", "second")
    git(repo, "checkout", "-q", "-b", os.fsdecode(b"caf\xe9"))
    assert symbolic_head(run) == os.fsdecode(b"refs/heads/caf\xe9")
    first, second = (git(repo, "rev-parse", r).strip() for r in ("HEAD~1", "HEAD"))
    assert ancestry(run, first, second) is True
    assert ancestry(run, second, first) is False
    assert ancestry(run, "0" * 40, second) is None
    with pytest.raises(guards_git.GitError):
        ancestry(run, "0" * 40, second, strict=True)
    git(repo, "checkout", "-q", "--detach")
    assert symbolic_head(run) is None


def _environment_git_sees(repo: Path, *, stdin: bytes | None = None) -> dict[str, str]:
    res = guards_git.run(["-c", "alias.show-env=!env -0", "show-env"], cwd=repo, stdin=stdin)
    pairs = (item.split(b"=", 1) for item in res.stdout.split(b"\0") if b"=" in item)
    return {k.decode(): v.decode() for k, v in pairs}


def test_guards_own_git_calls_keep_freed_heap_unless_the_user_says_otherwise(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # zlib's ~256 KiB per deflated object would otherwise go back to the kernel and come
    # again for the next one: most of what writing a rescue's objects cost (glibc).
    monkeypatch.delenv("MALLOC_TRIM_THRESHOLD_", raising=False)
    for stdin in (None, b"input"):  # posix_spawn, and subprocess when input is fed
        assert _environment_git_sees(repo, stdin=stdin)["MALLOC_TRIM_THRESHOLD_"] == str(4 << 20)
    monkeypatch.setenv("MALLOC_TRIM_THRESHOLD_", "131072")
    assert _environment_git_sees(repo)["MALLOC_TRIM_THRESHOLD_"] == "131072"
