"""A harness whose shell commands carry no session id (Gemini CLI) is known by its
process: its session start hook registers the process, and guards in any command below
it in the process tree is that session. Real processes: a fake harness (a Python process,
as Gemini's is a node process) runs the hooks and the commands, through ``sh -c`` as
Gemini does."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from guards.state import identity
from guards.state.identity import HARNESS_PROCESSES, session_for
from tests.helpers import git, make_repo

pytestmark = pytest.mark.skipif(
    not os.path.exists("/proc/self/stat"), reason="the process tree is read from /proc"
)

SID = "g-1"
ME = session_for("gemini", SID)
STATUS = f"{sys.executable} -m guards status --json"
HOOK = f"{sys.executable} -m guards.commands.agent_hook gemini"

#: The fake harness: runs each of argv's shell lines in turn (``sh -c``, stdin from a
#: file when the line is ``<FILE LINE``), prints each one's output as a JSON list.
HARNESS = """
import json, subprocess, sys
out = []
for line in sys.argv[1:]:
    stdin = None
    if line.startswith("<"):
        name, line = line[1:].split(" ", 1)
        stdin = open(name, "rb")
    res = subprocess.run(["sh", "-c", line], stdin=stdin, capture_output=True, text=True)
    out.append(res.stdout)
print(json.dumps(out))
"""


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "repo", {"README": "hello\n"})


def event_file(repo: Path, name: str) -> Path:
    path = repo.parent / f"{name}.json"
    path.write_text(json.dumps({"session_id": SID, "hook_event_name": name, "cwd": str(repo)}))
    return path


def harness(repo: Path, *lines: str) -> list[str]:
    """Run ``lines`` in one fake harness process; their outputs."""
    env = {k: v for k, v in os.environ.items() if k != identity.SESSION_ENV}
    res = subprocess.run(
        [sys.executable, "-c", HARNESS, *lines],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    outputs: list[str] = json.loads(res.stdout)
    return outputs


def caller(status_json: str) -> str | None:
    found: str | None = json.loads(status_json)["caller"]
    return found


def test_a_command_below_the_registered_harness_is_its_session(repo: Path) -> None:
    start = event_file(repo, "SessionStart")
    _, status = harness(repo, f"<{start} {HOOK}", STATUS)
    assert caller(status) == ME
    [registered] = (repo / ".git/guards" / HARNESS_PROCESSES).iterdir()
    assert registered.read_text().splitlines()[1] == ME


def test_a_command_outside_the_harness_stays_unidentified(repo: Path) -> None:
    start = event_file(repo, "SessionStart")
    harness(repo, f"<{start} {HOOK}")
    res = subprocess.run(
        STATUS.split(),
        cwd=repo,
        env={k: v for k, v in os.environ.items() if k != identity.SESSION_ENV},
        capture_output=True,
        text=True,
        check=True,
    )
    assert caller(res.stdout) is None


def test_another_harness_process_is_not_the_session(repo: Path) -> None:
    """The registration names one process (its start time too): a second harness run,
    even one that gets the same pid back, is not the first one's session."""
    start = event_file(repo, "SessionStart")
    harness(repo, f"<{start} {HOOK}")
    [status] = harness(repo, STATUS)
    assert caller(status) is None


def test_a_registration_whose_start_time_differs_is_a_reused_pid(repo: Path) -> None:
    folder = repo / ".git/guards" / HARNESS_PROCESSES
    folder.mkdir(parents=True)
    parent_of_status = os.getpid()  # the status below is this test's child
    (folder / str(parent_of_status)).write_text(f"0:0\n{ME}\n")
    res = subprocess.run(STATUS.split(), cwd=repo, capture_output=True, text=True, check=True)
    assert caller(res.stdout) is None
    started = identity.process_start_time(parent_of_status)
    (folder / str(parent_of_status)).write_text(f"{started}\n{ME}\n")
    res = subprocess.run(STATUS.split(), cwd=repo, capture_output=True, text=True, check=True)
    assert caller(res.stdout) == ME  # the same check, with the true start time


def test_the_session_end_takes_the_registration_back(repo: Path) -> None:
    start, end = event_file(repo, "SessionStart"), event_file(repo, "SessionEnd")
    _, _, status = harness(repo, f"<{start} {HOOK}", f"<{end} {HOOK}", STATUS)
    assert caller(status) is None
    assert list((repo / ".git/guards" / HARNESS_PROCESSES).iterdir()) == []


def test_the_session_s_own_edit_is_its_own_to_destroy(repo: Path) -> None:
    """`git checkout -- .` through guards in the harness: the session's recorded edit
    goes as asked, nothing is rescued (an unidentified caller would have kept it)."""
    start = event_file(repo, "SessionStart")
    (repo / "README").write_text("gemini's readme\n")
    record = f"{sys.executable} -m guards record --session {ME} README"
    run = f"{sys.executable} -m guards run -- checkout -- . 2>&1"
    _, _, said = harness(repo, f"<{start} {HOOK}", record, run)
    assert "rescued" not in said
    assert (repo / "README").read_text() == "hello\n"
    assert git(repo, "for-each-ref", "refs/rescue") == ""
