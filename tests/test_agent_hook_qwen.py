"""guards agent-hook qwen: Qwen Code's events as its 0.24.4 sends them (Claude's shape,
its own tools, PostToolUseFailure, an empty UserPromptSubmit after each tool round, a
context shown only after the tool ran)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from guards.commands.agent_hook import session_for
from guards.state.barrier import pending_writes
from tests.helpers import git, make_repo, run_agent_hook, run_guards

ALICE = "alice"
SID = "746acfac-24db-43de-8021-6bec2188a55c"
ME = session_for("qwen", SID)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "repo", {"README": "hello\n", "src/app.py": "print('hi')\n"})


def send(
    repo: Path, event: str, payload: dict[str, Any], env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    body = {
        "session_id": SID,
        "transcript_path": "/nowhere/chat.jsonl",
        "cwd": str(repo),
        "timestamp": "2026-12-01T10:58:44.607Z",
        "permission_mode": "yolo",
        "hook_event_name": event,
        **payload,
    }
    return run_agent_hook("qwen", repo, json.dumps(body).encode(), env)


def shell(command: str, use_id: str = "toolu_1_a", **extra: str) -> dict[str, Any]:
    return {
        "tool_name": "run_shell_command",
        "tool_input": {"command": command, "description": "d", **extra},
        "tool_use_id": use_id,
        "tool_call_id": "toolu_0001",
    }


def answer(res: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    assert res.returncode == 0, res.stderr
    doc: dict[str, Any] = json.loads(res.stdout)
    return doc


def silent(res: subprocess.CompletedProcess[str]) -> None:
    assert (res.returncode, res.stdout) == (0, ""), res.stderr


def alice_dirty(repo: Path) -> None:
    (repo / "src/app.py").write_text("print('alice')\n")
    res = run_guards("record", "--session", ALICE, "src/app.py", cwd=repo)
    assert res.returncode == 0, res.stderr


def owners(repo: Path) -> dict[str, str | None]:
    res = run_guards("status", "--json", cwd=repo)
    return {p["path"]: p.get("owner") for p in json.loads(res.stdout)["paths"]}


def rescue_refs(repo: Path) -> list[str]:
    return git(repo, "for-each-ref", "--format=%(refname)", "refs/rescue").split()


def markers(repo: Path) -> list[str]:
    folder = repo / ".git/guards/observe"
    return sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []


@pytest.mark.parametrize("end", ["PostToolUse", "PostToolUseFailure"])
def test_the_rescue_comes_before_the_command_and_the_notice_with_its_end(
    repo: Path, end: str
) -> None:
    """Qwen only logs a PreToolUse context: the notice rides on the tool's end."""
    alice_dirty(repo)
    silent(send(repo, "PreToolUse", shell("git reset --hard")))
    [ref] = rescue_refs(repo)
    assert ref.startswith(f"refs/rescue/{ALICE}/")
    assert git(repo, "show", f"{ref}:src/app.py") == "print('alice')\n"
    git(repo, "reset", "--hard")
    said = answer(send(repo, end, {**shell("git reset --hard"), "tool_response": {}}))
    context = said["hookSpecificOutput"]["additionalContext"]
    assert said["hookSpecificOutput"]["hookEventName"] == end
    assert "guards: rescued 1 path of session alice" in context and ref in context
    assert markers(repo) == []


def test_under_policy_block_pre_tool_use_denies_with_the_reason_on_stderr(repo: Path) -> None:
    alice_dirty(repo)
    res = send(repo, "PreToolUse", shell("git reset --hard"), env={"GUARDS_POLICY": "block"})
    assert res.returncode == 2 and res.stdout == ""
    assert "policy is block" in res.stderr and ALICE in res.stderr
    assert rescue_refs(repo) == []


def test_a_line_in_another_directory_is_guarded_there(repo: Path, tmp_path: Path) -> None:
    """``directory`` is where the line runs (Qwen wants it absolute)."""
    other = make_repo(tmp_path / "other", {"f.txt": "one\n"})
    (other / "f.txt").write_text("someone's\n")
    silent(send(repo, "PreToolUse", shell("git checkout -- .", directory=str(other))))
    [ref] = rescue_refs(other)
    assert git(other, "show", f"{ref}:f.txt") == "someone's\n"
    assert rescue_refs(repo) == []


def test_write_file_and_edit_are_recorded_and_a_failed_edit_is_not(repo: Path) -> None:
    (repo / "README").write_text("nobody's\n")  # unknown: the failed edit's Pre rescues it
    for tool, name, event in (
        ("write_file", "new.txt", "PostToolUse"),
        ("edit", "src/app.py", "PostToolUse"),
        ("edit", "README", "PostToolUseFailure"),
    ):
        payload = {
            "tool_name": tool,
            "tool_input": {"file_path": str(repo / name), "old_string": "a", "new_string": "b"},
            "tool_use_id": f"toolu_{name}",
        }
        silent(send(repo, "PreToolUse", payload))
        if event == "PostToolUse":
            (repo / name).write_text("by qwen\n")
            payload["tool_response"] = {"llmContent": "ok", "returnDisplay": ""}
            silent(send(repo, event, payload))
        else:
            payload["error"] = "File has not been read in this session."
            # its start rescued README all the same: the model hears of it at the end
            res = send(repo, event, payload)
            context = json.loads(res.stdout)["hookSpecificOutput"]["additionalContext"]
            assert res.returncode == 0 and "guards: rescued" in context, res.stderr
    assert owners(repo) == {"new.txt": ME, "src/app.py": ME, "README": None}
    # every write's end withdrew it from the barrier: no destroyer waits for them
    assert pending_writes(str(repo / ".git/guards"), str(repo)) == []


def test_a_write_over_another_writers_file_rescues_it_first(repo: Path) -> None:
    alice_dirty(repo)
    payload = {
        "tool_name": "edit",
        "tool_input": {"file_path": str(repo / "src/app.py"), "old_string": "a", "new_string": "b"},
        "tool_use_id": "toolu_e",
    }
    res = send(repo, "PreToolUse", payload)
    assert res.returncode == 0 and "guards: rescued" in res.stderr
    [ref] = rescue_refs(repo)
    # Qwen only logs a PreToolUse context: the notice comes with the write's result
    payload["tool_response"] = {"llmContent": "ok", "returnDisplay": ""}
    res = send(repo, "PostToolUse", payload)
    answer = json.loads(res.stdout)["hookSpecificOutput"]
    assert answer["hookEventName"] == "PostToolUse" and ref in answer["additionalContext"]
    res = send(repo, "PostToolUse", payload)  # told once
    assert (res.returncode, res.stdout) == (0, ""), res.stderr


@pytest.mark.parametrize("end", ["PostToolUse", "PostToolUseFailure"])
def test_files_a_shell_command_made_are_observed_also_when_it_failed(repo: Path, end: str) -> None:
    command = "echo made > made.txt; exit 3"
    silent(send(repo, "PreToolUse", shell(command)))
    (repo / "made.txt").write_text("made\n")
    extra = {"error": "Exit Code: 3"} if end == "PostToolUseFailure" else {"tool_response": {}}
    silent(send(repo, end, {**shell(command), **extra}))
    assert owners(repo) == {"made.txt": ME}
    assert markers(repo) == []


def test_the_frame_comes_once_per_prompt_not_after_each_tool_round(repo: Path) -> None:
    alice_dirty(repo)
    silent(send(repo, "SessionStart", {"source": "startup", "model": "m"}))
    frame = answer(send(repo, "UserPromptSubmit", {"prompt": "go", "prompt_id": "p#0"}))
    context = frame["hookSpecificOutput"]["additionalContext"]
    assert context.startswith("[Workspace:") and "src/app.py" in context
    silent(send(repo, "UserPromptSubmit", {"prompt": "", "prompt_id": "p#0"}))
    again = answer(send(repo, "UserPromptSubmit", {"prompt": "next", "prompt_id": "p#1"}))
    assert again["hookSpecificOutput"]["additionalContext"].startswith("[Workspace:")


def test_session_start_registers_and_session_end_ends_the_session(repo: Path) -> None:
    silent(send(repo, "SessionStart", {"source": "startup", "model": "m"}))
    res = run_guards("session", "list", "--json", cwd=repo)
    [mine] = [s for s in json.loads(res.stdout)["sessions"] if s["id"] == ME]
    assert mine["liveness"] != "ended"
    silent(send(repo, "SessionEnd", {"reason": "prompt_input_exit"}))
    res = run_guards("session", "list", "--json", cwd=repo)
    [mine] = [s for s in json.loads(res.stdout)["sessions"] if s["id"] == ME]
    assert mine["liveness"] == "ended"


def test_shell_commands_run_as_the_qwen_session(repo: Path) -> None:
    res = run_guards("status", "--json", cwd=repo, env={"QWEN_CODE_SESSION_ID": SID})
    assert json.loads(res.stdout)["caller"] == ME


def test_the_shim_in_the_line_finds_the_hooks_receipt_and_rescues_nothing_twice(
    repo: Path,
) -> None:
    alice_dirty(repo)
    silent(send(repo, "PreToolUse", shell("git reset --hard")))
    env = {"QWEN_CODE_SESSION_ID": SID}
    shim = run_guards("run", "--", "reset", "--hard", cwd=repo, env=env)
    assert shim.returncode == 0 and "guards:" not in shim.stderr, shim.stderr
    assert len(rescue_refs(repo)) == 1
    done = send(repo, "PostToolUse", {**shell("git reset --hard"), "tool_response": {}})
    assert done.stdout.count("guards: rescued") == 1
    assert not any((repo / ".git/guards/receipts").iterdir())


def test_unreadable_input_that_could_run_git_is_refused(repo: Path) -> None:
    body = b'{"hook_event_name": "PreToolUse", "tool_input": {"command": "git reset --hard'
    res = run_agent_hook("qwen", repo, body)
    assert res.returncode == 2 and "not JSON" in res.stderr
    assert "Traceback" not in res.stderr


def test_both_entry_points_take_qwen(repo: Path) -> None:
    body = json.dumps({"hook_event_name": "Notification", "session_id": SID}).encode()
    assert run_guards("agent-hook", "qwen", cwd=repo, input=body).returncode == 0
    assert run_agent_hook("qwen", repo, body).returncode == 0
