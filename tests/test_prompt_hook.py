"""A prompt's installed hook: its shell starts the frame's git status and hands it to the
hook's Python (guards.git.process.handed_status), which takes it only when it is exactly
the call it would make itself, and never reads a failed one as a clean tree."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from guards.git.process import find_real_git
from guards.integrations import harness_settings
from tests.helpers import PROJECT_ROOT, counting_git, make_repo


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    repo = make_repo(tmp_path / "repo", {"README": "hello\n", "src/app.py": "print('hi')\n"})
    (repo / "README").write_text("someone else's\n")
    (repo / "notes.txt").write_text("untracked, someone else's\n")
    return repo


def prompt_command(harness: str, real_git: Path) -> str:
    """The prompt's command as ``guards install`` writes it where ``real_git`` is the real
    git (found in a process of its own: the search is cached per process)."""
    code = (
        "import sys\n"
        "from guards.integrations.harness_settings import installed_hook\n"
        f"sys.stdout.write(installed_hook({harness!r}, sys.argv[1])['command'])\n"
    )
    event = "BeforeAgent" if harness == "gemini" else "UserPromptSubmit"
    res = subprocess.run(
        [sys.executable, "-c", code, event],
        env={**os.environ, "GUARDS_REAL_GIT": str(real_git)},
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    return res.stdout


def run_hook(
    command: str, cwd: Path, event: object, env: dict[str, str]
) -> subprocess.CompletedProcess[str]:
    """``command`` run as the harnesses run it (a shell, the event on stdin)."""
    return subprocess.run(
        ["sh", "-c", command],
        input=json.dumps(event),
        cwd=cwd,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=60,
    )


def prompt(repo: Path, harness: str = "claude") -> dict[str, object]:
    name = "BeforeAgent" if harness == "gemini" else "UserPromptSubmit"
    return {"session_id": "bob", "cwd": str(repo), "hook_event_name": name, "prompt": "hi"}


def frame_of(res: subprocess.CompletedProcess[str]) -> str:
    assert res.returncode == 0, res.stderr
    text = json.loads(res.stdout)["hookSpecificOutput"]["additionalContext"]
    assert isinstance(text, str)
    return text


def framed(
    installed: Path,
    cwd: Path,
    repo: Path,
    *,
    harness: str = "claude",
    running: Path | None = None,
    env: dict[str, str] | None = None,
) -> str:
    """The frame the prompt's command, installed where ``installed`` is the real git,
    gives for ``harness``'s prompt in ``repo``, run in ``cwd`` where ``running`` (else
    ``installed``) is the real git, with ``env``: it names both files of the other
    writer."""
    command = prompt_command(harness, installed)
    assert "--handed-status" in command
    env = {"GUARDS_REAL_GIT": str(running or installed), **(env or {})}
    text = frame_of(run_hook(command, cwd, prompt(repo, harness), env))
    assert "README" in text and "notes.txt" in text and "owner unknown" in text
    return text


def statuses(log: Path) -> int:
    return sum(" status " in f" {line} " for line in log.read_text().splitlines())


@pytest.mark.parametrize("harness", ["claude", "codex", "gemini"])
def test_the_prompt_s_python_takes_the_status_its_shell_started(
    repo: Path, tmp_path: Path, harness: str
) -> None:
    wrapper, log = counting_git(tmp_path)
    framed(wrapper, repo, repo, harness=harness)
    assert statuses(log) == 1  # the shell's: Python ran none of its own


def test_the_frame_is_the_one_python_builds_alone(repo: Path, tmp_path: Path) -> None:
    wrapper, _ = counting_git(tmp_path)
    env = {"GUARDS_REAL_GIT": str(wrapper)}
    handed = frame_of(run_hook(prompt_command("claude", wrapper), repo, prompt(repo), env))
    alone = harness_settings.event_command("claude", "PostToolUse")  # no shell-started status
    assert frame_of(run_hook(alone, repo, prompt(repo), env)) == handed


def test_a_hook_run_in_another_directory_asks_git_itself(repo: Path, tmp_path: Path) -> None:
    """The shell's status is of the directory the harness ran the hook in: for an event
    of another directory Python asks git there (the shell's answer is not the frame's)."""
    wrapper, log = counting_git(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    framed(wrapper, elsewhere, repo)
    assert statuses(log) == 2


def test_a_status_that_failed_in_the_shell_is_never_a_clean_tree(
    repo: Path, tmp_path: Path
) -> None:
    """A git that fails (or dies half-way through its output) in the shell: Python asks
    again and frames what is really there."""
    real = find_real_git()
    assert real is not None
    log = tmp_path / "calls.log"
    flaky = tmp_path / "flaky-git"
    # The first call prints half a record and fails; the others are git's.
    flaky.write_text(
        "#!/bin/sh\n"
        f"printf '%s\\n' \"$*\" >> '{log}'\n"
        f"if [ ! -e '{tmp_path}/failed-once' ]; then : > '{tmp_path}/failed-once'; "
        "printf '1 .M N... 100644'; exit 1; fi\n"
        f"exec '{real}' \"$@\"\n"
    )
    flaky.chmod(0o755)
    framed(flaky, repo, repo)
    assert statuses(log) == 2


def test_a_trace_variable_keeps_the_status_out_of_the_shell_and_the_trace(
    repo: Path, tmp_path: Path
) -> None:
    """guards' own git calls stay out of the user's traces: with a GIT_TRACE* variable
    set the shell runs no git, and Python's own runs without it."""
    wrapper, log = counting_git(tmp_path)
    trace = tmp_path / "trace.log"
    framed(wrapper, repo, repo, env={"GIT_TRACE_PERFORMANCE": str(trace)})
    assert statuses(log) == 1  # Python's
    assert not trace.exists()


def test_another_real_git_than_the_installed_one_is_asked_itself(
    repo: Path, tmp_path: Path
) -> None:
    (tmp_path / "then").mkdir()
    (tmp_path / "now").mkdir()
    installed, installed_log = counting_git(tmp_path / "then")
    now, now_log = counting_git(tmp_path / "now")
    framed(installed, repo, repo, running=now)
    assert (statuses(installed_log), statuses(now_log)) == (1, 1)


def test_another_event_sent_to_the_prompt_s_command_is_answered_as_ever(
    repo: Path, tmp_path: Path
) -> None:
    """Not a prompt after all (a misplaced hook): the shell's git stops, nothing waits."""
    wrapper, _ = counting_git(tmp_path)
    command = prompt_command("claude", wrapper)
    event = {"session_id": "bob", "cwd": str(repo), "hook_event_name": "SessionStart"}
    res = run_hook(command, repo, event, {"GUARDS_REAL_GIT": str(wrapper)})
    assert (res.returncode, res.stdout) == (0, ""), res.stderr
    plain = harness_settings.event_command("claude", "PostToolUse")
    env = {"GUARDS_REAL_GIT": str(wrapper)}
    for body in ({"not": "an event"}, ["not", "an", "object"]):
        res = run_hook(command, repo, body, env)
        alone = run_hook(plain, repo, body, env)
        answers = [(r.returncode, r.stdout, r.stderr) for r in (res, alone)]
        assert answers[0] == answers[1]


def test_a_prompt_loads_none_of_the_other_events_handlers(repo: Path, tmp_path: Path) -> None:
    """The installed hook answers a prompt through guards.integrations.prompt_hooks."""
    wrapper, _ = counting_git(tmp_path)
    command = prompt_command("claude", wrapper).replace(
        "exit_now(main(sys.argv[1:]))",
        # (double quotes: the code sits in single quotes, twice)
        "status = main(sys.argv[1:])\n"
        'others = ("guards.integrations.agent_hooks", "guards.integrations.write_hooks")\n'
        "print([m for m in others if m in sys.modules], file=sys.stderr)\n"
        "exit_now(status)",
    )
    assert "others = " in command
    res = run_hook(command, repo, prompt(repo), {"GUARDS_REAL_GIT": str(wrapper)})
    assert "README" in frame_of(res)
    assert res.stderr.splitlines()[-1:] == ["[]"], res.stderr


def test_only_the_prompts_of_harnesses_read_early_start_git_in_the_shell() -> None:
    hands = {
        (harness, event)
        for harness, events in harness_settings.EVENTS.items()
        for event in events
        if "--handed-status" in harness_settings.event_command(harness, event)
    }
    assert hands == {
        ("claude", "UserPromptSubmit"),
        ("codex", "UserPromptSubmit"),
        ("gemini", "BeforeAgent"),
    }


def test_a_status_run_with_another_environment_is_not_taken(repo: Path, tmp_path: Path) -> None:
    """Python takes a handed status only when its own call would run with the same
    environment: here the shell's git ran without the trace variable Python sees."""
    wrapper, log = counting_git(tmp_path)
    trace = tmp_path / "trace.log"
    code = (
        "import sys\n"
        "from guards.git import process\n"
        f"done = process.handed_status(4, {str(wrapper)!r}, '.').result()\n"
        "sys.stdout.buffer.write(done.stdout)\n"
    )
    git_status = shlex.join([str(wrapper), "status", "--porcelain=v2", "-z"])
    python = shlex.join([sys.executable, "-c", code])
    traced = f"GIT_TRACE_PERFORMANCE={shlex.quote(str(trace))}"
    script = f"{{ {git_status}; printf 0; }} | {traced} {python} 4<&0"
    env = {**os.environ, "GUARDS_REAL_GIT": str(wrapper), "PYTHONPATH": str(PROJECT_ROOT)}
    res = subprocess.run(["sh", "-c", script], cwd=repo, env=env, capture_output=True, timeout=60)
    assert res.returncode == 0, res.stderr
    assert b"README" in res.stdout and b"notes.txt" in res.stdout
    assert statuses(log) == 2 and not trace.exists()
