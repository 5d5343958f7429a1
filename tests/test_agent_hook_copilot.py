"""guards agent-hook copilot <event>: GitHub Copilot CLI's events as its 1.0.102 sends
them (no event name, no tool-call id, flat answers)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from guards.commands.agent_hook import session_for
from tests.helpers import git, make_repo, run_agent_hook, run_guards

ALICE = "alice"
SID = "f8847078-6532-4895-bfb5-b7f2712b5249"
ME = session_for("copilot", SID)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "repo", {"README": "hello\n", "src/app.py": "print('hi')\n"})


def send(
    repo: Path, event: str, payload: dict[str, Any], env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    body = json.dumps({"sessionId": SID, "timestamp": 1, "cwd": str(repo), **payload})
    return run_agent_hook("copilot", repo, body.encode(), env, event=event)


def bash(command: str) -> dict[str, Any]:
    return {"toolName": "bash", "toolArgs": {"command": command, "description": "d"}}


def answer(res: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    assert res.returncode == 0, res.stderr
    doc: dict[str, Any] = json.loads(res.stdout)
    return doc


def alice_dirty(repo: Path) -> None:
    (repo / "src/app.py").write_text("print('alice')\n")
    res = run_guards("record", "--session", ALICE, "src/app.py", cwd=repo)
    assert res.returncode == 0, res.stderr


def owners(repo: Path) -> dict[str, str | None]:
    res = run_guards("status", "--json", cwd=repo)
    return {p["path"]: p.get("owner") for p in json.loads(res.stdout)["paths"]}


def rescue_refs(repo: Path) -> list[str]:
    return git(repo, "for-each-ref", "--format=%(refname)", "refs/rescue").split()


def test_pre_tool_use_rescues_then_allows_with_the_notice_as_additional_context(
    repo: Path,
) -> None:
    alice_dirty(repo)
    said = answer(send(repo, "preToolUse", bash("git reset --hard")))
    [ref] = rescue_refs(repo)
    assert ref.startswith(f"refs/rescue/{ALICE}/")
    assert set(said) == {"additionalContext"}
    assert "guards: rescued 1 path of session alice" in said["additionalContext"]
    assert git(repo, "show", f"{ref}:src/app.py") == "print('alice')\n"


def test_under_policy_block_pre_tool_use_denies_with_the_reason(repo: Path) -> None:
    alice_dirty(repo)
    res = send(repo, "preToolUse", bash("git reset --hard"), env={"GUARDS_POLICY": "block"})
    said = answer(res)
    assert said["permissionDecision"] == "deny"
    assert "policy is block" in said["permissionDecisionReason"]
    assert rescue_refs(repo) == []


def test_toolargs_sent_as_json_text_are_read_too(repo: Path) -> None:
    alice_dirty(repo)
    payload = {"toolName": "bash", "toolArgs": json.dumps({"command": "git checkout -- ."})}
    assert "additionalContext" in answer(send(repo, "preToolUse", payload))
    assert len(rescue_refs(repo)) == 1


def test_harmless_commands_and_other_tools_get_no_answer(repo: Path) -> None:
    for payload in (bash("ls -la"), {"toolName": "view", "toolArgs": {"path": str(repo)}}):
        res = send(repo, "preToolUse", payload)
        assert (res.returncode, res.stdout) == (0, ""), res.stderr


def test_create_and_edit_are_recorded_for_the_session_unless_they_failed(repo: Path) -> None:
    (repo / "new.txt").write_text("new\n")
    (repo / "src/app.py").write_text("print('copilot')\n")
    (repo / "failed.txt").write_text("not copilot's\n")
    for tool, name, result in (
        ("create", "new.txt", "success"),
        ("edit", "src/app.py", "success"),
        ("create", "failed.txt", "failure"),
    ):
        payload = {
            "toolName": tool,
            "toolArgs": {"path": str(repo / name)},
            "toolResult": {"resultType": result, "textResultForLlm": "x"},
        }
        res = send(repo, "postToolUse", payload)
        assert (res.returncode, res.stdout) == (0, ""), res.stderr
    assert owners(repo) == {"new.txt": ME, "src/app.py": ME, "failed.txt": None}


def test_a_write_over_another_writers_file_rescues_it_first(repo: Path) -> None:
    alice_dirty(repo)
    payload = {"toolName": "edit", "toolArgs": {"path": str(repo / "src/app.py")}}
    said = answer(send(repo, "preToolUse", payload))
    assert "guards: rescued" in said["additionalContext"]
    assert len(rescue_refs(repo)) == 1


def test_files_a_shell_command_made_are_observed_without_a_tool_call_id(repo: Path) -> None:
    command = "echo made > made.txt; exit 3"
    assert send(repo, "preToolUse", bash(command)).returncode == 0
    (repo / "made.txt").write_text("made\n")
    result = {"toolResult": {"resultType": "success", "textResultForLlm": "exit code 3"}}
    res = send(repo, "postToolUse", {**bash(command), **result})
    assert (res.returncode, res.stdout) == (0, ""), res.stderr
    assert owners(repo) == {"made.txt": ME}
    assert not any((repo / ".git/guards/observe").iterdir())


def test_the_frame_comes_at_the_prompt_not_at_session_start_and_the_session_ends(
    repo: Path,
) -> None:
    alice_dirty(repo)
    start = send(repo, "sessionStart", {"source": "new", "initialPrompt": "go"})
    assert (start.returncode, start.stdout) == (0, ""), start.stderr
    frame = answer(send(repo, "userPromptSubmitted", {"prompt": "go"}))
    assert frame["additionalContext"].startswith("[Workspace:")
    assert "src/app.py" in frame["additionalContext"]
    assert send(repo, "sessionEnd", {"reason": "complete"}).returncode == 0
    res = run_guards("session", "list", "--json", cwd=repo)
    [mine] = [s for s in json.loads(res.stdout)["sessions"] if s["id"] == ME]
    assert mine["liveness"] == "ended"


def test_shell_commands_run_as_the_copilot_session(repo: Path) -> None:
    res = run_guards("status", "--json", cwd=repo, env={"COPILOT_AGENT_SESSION_ID": SID})
    assert json.loads(res.stdout)["caller"] == ME


@pytest.mark.parametrize("args", [["copilot"], ["copilot", "PreToolUse"], ["claude", "x"]])
def test_a_missing_or_unknown_event_is_a_usage_error(repo: Path, args: list[str]) -> None:
    for fast in (True, False):
        if fast:
            res = run_agent_hook(args[0], repo, b"{}", event=(args[1:] or [None])[0])
        else:
            res = run_guards("agent-hook", *args, cwd=repo, input=b"{}")
        assert res.returncode == 2
        assert "usage: guards agent-hook" in res.stderr and "Traceback" not in res.stderr


def test_unreadable_input_that_could_run_git_is_denied_with_the_reason(repo: Path) -> None:
    res = run_agent_hook("copilot", repo, b'{"toolArgs": "git reset --hard', event="preToolUse")
    said = answer(res)
    assert said["permissionDecision"] == "deny"
    assert "not JSON" in said["permissionDecisionReason"]


def test_the_shim_in_the_line_finds_the_hooks_receipt_and_rescues_nothing_twice(
    repo: Path,
) -> None:
    alice_dirty(repo)
    assert "additionalContext" in answer(send(repo, "preToolUse", bash("git reset --hard")))
    env = {"COPILOT_AGENT_SESSION_ID": SID}
    shim = run_guards("run", "--", "reset", "--hard", cwd=repo, env=env)
    assert shim.returncode == 0 and "guards:" not in shim.stderr, shim.stderr
    assert len(rescue_refs(repo)) == 1
    done = send(repo, "postToolUse", {**bash("git reset --hard"), "toolResult": {}})
    assert done.returncode == 0, done.stderr
    assert not any((repo / ".git/guards/receipts").iterdir())
