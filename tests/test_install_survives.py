"""Installed artifacts outlive the interpreter that installed them: each finds guards when
it runs (the recorded interpreter, else `guards` on PATH), and fails loudly, never
silently, when guards is gone."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.helpers import (
    git,
    guards_command_dir,
    install_with_disposable_python,
    path_without_guards,
    record,
)


@pytest.fixture
def installed(repo: Path, tmp_path: Path) -> dict[str, Path]:
    """aliases, shim, native hooks and Claude settings installed by a venv-like interpreter
    (a symlink to this Python) that the test can make disappear."""
    python, shim_dir = install_with_disposable_python(repo, tmp_path)
    assert str(python) in (shim_dir / "git").read_text()
    (repo / "README").write_text("alice's afternoon\n")
    record(repo, "alice", "README")
    return {"python": python, "shim": shim_dir}


def _run(repo: Path, argv: list[str], path: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv,
        cwd=repo,
        env={**os.environ, "PATH": path, "GUARDS_SESSION": "bob", **env},
        capture_output=True,
        text=True,
        check=False,
    )


def _claude_pre_tool_use(repo: Path) -> str:
    settings = json.loads((repo / ".claude/settings.local.json").read_text())
    group = settings["hooks"]["PreToolUse"][0]
    return str(group["hooks"][0]["command"])


def test_with_the_interpreter_gone_and_no_guards_every_artifact_refuses_loudly(
    repo: Path, installed: dict[str, Path]
) -> None:
    installed["python"].unlink()
    path = f"{installed['shim']}{os.pathsep}{path_without_guards()}"

    status = _run(repo, ["git", "status", "--short"], path)
    shim = _run(repo, ["git", "reset", "--hard"], path)
    alias = _run(repo, ["git", "safe-reset", "--hard"], path_without_guards())  # no shim

    assert status.returncode == 0 and "README" in status.stdout  # no Python needed
    assert shim.returncode == 20
    assert "guards-shim: refusing `git reset`: guards cannot run" in shim.stderr
    assert "GUARDS_DISABLE=1" in shim.stderr and shim.stderr.count("\n") == 1
    assert alias.returncode == 20
    assert "guards: refusing git safe-reset: guards is not installed any more" in alias.stderr
    assert (repo / "README").read_text() == "alice's afternoon\n"  # nothing ran
    event = json.dumps(
        {
            "hook_event_name": "PreToolUse",
            "session_id": "s1",
            "cwd": str(repo),
            "tool_name": "Bash",
            "tool_input": {"command": "git reset --hard"},
        }
    )
    hook = subprocess.run(
        ["sh", "-c", _claude_pre_tool_use(repo)],
        cwd=repo,
        input=event,
        env={**os.environ, "PATH": path_without_guards()},
        capture_output=True,
        text=True,
        check=False,
    )
    assert hook.returncode == 2  # Claude Code blocks the tool call and shows the line
    assert "the claude hook cannot run: guards is not installed any more" in hook.stderr


def test_with_the_interpreter_gone_the_native_hooks_warn_on_commit_and_refuse_a_push(
    repo: Path, installed: dict[str, Path], tmp_path: Path
) -> None:
    installed["python"].unlink()
    path = path_without_guards()
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    git(repo, "remote", "add", "origin", str(remote))
    git(repo, "add", "README")

    commit = _run(repo, ["git", "commit", "-q", "-m", "x"], path)
    push = _run(repo, ["git", "push", "-q", "origin", "HEAD:refs/heads/main"], path)

    assert commit.returncode == 0, commit.stderr
    assert "warning: guards is not installed" in commit.stderr
    assert push.returncode != 0
    assert "refusing the push: guards is not installed any more" in push.stderr
    assert "git push --no-verify" in push.stderr
    assert git(remote, "for-each-ref", "refs/heads") == ""


def test_with_the_interpreter_gone_guards_on_path_takes_over(
    repo: Path, installed: dict[str, Path], tmp_path: Path
) -> None:
    installed["python"].unlink()
    on_path = guards_command_dir(tmp_path / "pipx-bin")
    path = os.pathsep.join([str(installed["shim"]), str(on_path), path_without_guards()])

    shim = _run(repo, ["git", "reset", "--hard"], path)

    assert shim.returncode == 0, shim.stderr
    assert "guards: rescued 1 path of session alice to refs/rescue/alice/" in shim.stderr
    rescued = git(repo, "for-each-ref", "--format=%(refname)", "refs/rescue")
    assert git(repo, "show", f"{rescued.strip()}:README") == "alice's afternoon\n"
    (repo / "README").write_text("alice again\n")
    record(repo, "alice", "README")
    alias = _run(repo, ["git", "safe-checkout", "--", "README"], path)
    assert alias.returncode == 0, alias.stderr
    assert "guards: rescued 1 path of session alice" in alias.stderr
    (repo / "README").write_text("bob's change\n")
    git(repo, "add", "README")
    commit = _run(repo, ["git", "commit", "-q", "-m", "x"], path)
    assert commit.returncode == 0, commit.stderr
    assert "not installed" not in commit.stderr
