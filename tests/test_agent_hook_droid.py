"""guards agent-hook droid: Factory Droid's events as its 0.225 sends them (Claude's shape,
its own tools Execute/Create/Edit, no tool-use id, a write's response as JSON text, no
UserPromptSubmit under `droid exec`, a context shown only after the tool ran)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from guards.commands.agent_hook import session_for
from guards.integrations import harness_settings
from guards.state.barrier import pending_writes
from tests.helpers import git, make_repo, run_agent_hook, run_guards

ALICE = "alice"
SID = "aecb8c75-56a4-47bf-8009-8553aa23cbfc"
ME = session_for("droid", SID)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "repo", {"README": "hello\n", "src/app.py": "print('hi')\n"})


def send(
    repo: Path, event: str, payload: dict[str, Any], env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    body = {
        "session_id": SID,
        "transcript_path": "/nowhere/s.jsonl",
        "cwd": str(repo),
        "permission_mode": "auto-high",
        "hook_event_name": event,
        **payload,
    }
    return run_agent_hook("droid", repo, json.dumps(body).encode(), env)


def shell(command: str) -> dict[str, Any]:
    return {
        "tool_name": "Execute",
        "tool_input": {
            "command": command,
            "summary": "Run a shell command here",
            "riskLevel": "low",
            "riskLevelReason": "r",
        },
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


def test_the_rescue_comes_before_the_command_and_the_notice_with_its_end(repo: Path) -> None:
    """Droid drops a PreToolUse context: the notice rides on the command's PostToolUse."""
    alice_dirty(repo)
    silent(send(repo, "PreToolUse", shell("git reset --hard")))
    [ref] = rescue_refs(repo)
    assert ref.startswith(f"refs/rescue/{ALICE}/")
    assert git(repo, "show", f"{ref}:src/app.py") == "print('alice')\n"
    git(repo, "reset", "--hard")
    response = {"tool_response": "HEAD is now at 1234567 init\n\n[Process exited with code 0]"}
    said = answer(send(repo, "PostToolUse", {**shell("git reset --hard"), **response}))
    context = said["hookSpecificOutput"]["additionalContext"]
    assert said["hookSpecificOutput"]["hookEventName"] == "PostToolUse"
    assert "guards: rescued 1 path of session alice" in context and ref in context
    assert markers(repo) == []


def test_under_policy_block_pre_tool_use_denies_with_the_reason_on_stderr(repo: Path) -> None:
    alice_dirty(repo)
    res = send(repo, "PreToolUse", shell("git reset --hard"), env={"GUARDS_POLICY": "block"})
    assert res.returncode == 2 and res.stdout == ""
    assert "policy is block" in res.stderr and ALICE in res.stderr
    assert rescue_refs(repo) == []


def test_create_and_edit_are_recorded_and_a_failed_edit_is_not(repo: Path) -> None:
    (repo / "README").write_text("nobody's\n")  # unknown: the failed edit's Pre rescues it
    for tool, name, response in (
        ("Create", "new.txt", {"success": True, "file_path": "x"}),
        ("Edit", "src/app.py", {"success": True, "file_path": "x", "linesAdded": 1}),
        ("Edit", "README", {"success": False, "message": "old_str not found"}),
    ):
        payload = {
            "tool_name": tool,
            "tool_input": {"file_path": str(repo / name), "old_str": "a", "new_str": "b"},
        }
        send(repo, "PreToolUse", payload)
        if response["success"]:
            (repo / name).write_text("by droid\n")
        payload["tool_response"] = json.dumps(response)  # JSON text, as Droid sends it
        res = send(repo, "PostToolUse", payload)
        assert res.returncode == 0, res.stderr
    assert owners(repo) == {"new.txt": ME, "src/app.py": ME, "README": None}
    assert pending_writes(str(repo / ".git/guards"), str(repo)) == []


def test_a_write_over_another_writers_file_rescues_it_first(repo: Path) -> None:
    alice_dirty(repo)
    payload = {
        "tool_name": "Edit",
        "tool_input": {"file_path": str(repo / "src/app.py"), "old_str": "a", "new_str": "b"},
    }
    res = send(repo, "PreToolUse", payload)
    assert res.returncode == 0 and "guards: rescued" in res.stderr
    [ref] = rescue_refs(repo)
    payload["tool_response"] = json.dumps({"success": True, "file_path": "x"})
    said = answer(send(repo, "PostToolUse", payload))["hookSpecificOutput"]
    assert said["hookEventName"] == "PostToolUse" and ref in said["additionalContext"]
    silent(send(repo, "PostToolUse", payload))  # told once


def apply_patch(patch: str, response: dict[str, Any] | None = None) -> dict[str, Any]:
    """Droid's ApplyPatch: the patch as ``input``, its result as JSON text."""
    payload: dict[str, Any] = {"tool_name": "ApplyPatch", "tool_input": {"input": patch}}
    if response is not None:
        payload["tool_response"] = json.dumps(response)
    return payload


ALICES_PATCH = "*** Begin Patch\n*** Update File: src/app.py\n@@\n-print('alice')\n+print('d')\n"


def test_an_apply_patch_over_another_writers_file_rescues_it_first(repo: Path) -> None:
    """ApplyPatch is what Droid offers GPT-family models instead of Create and Edit."""
    alice_dirty(repo)
    res = send(repo, "PreToolUse", apply_patch(ALICES_PATCH + "*** End Patch\n"))
    assert res.returncode == 0 and "guards: rescued" in res.stderr, res.stderr
    [ref] = rescue_refs(repo)
    assert git(repo, "show", f"{ref}:src/app.py") == "print('alice')\n"
    (repo / "src/app.py").write_text("print('d')\n")
    done = {"success": True, "files": [{"path": str(repo / "src/app.py")}]}
    said = answer(send(repo, "PostToolUse", apply_patch(ALICES_PATCH, done)))
    assert ref in said["hookSpecificOutput"]["additionalContext"]
    assert owners(repo) == {"src/app.py": ME}
    assert pending_writes(str(repo / ".git/guards"), str(repo)) == []


def test_apply_patch_files_are_recorded_relative_or_absolute_and_a_failed_one_is_not(
    repo: Path,
) -> None:
    made = f"*** Begin Patch\n*** Add File: {repo / 'new.txt'}\n+new\n*** End Patch\n"
    send(repo, "PreToolUse", apply_patch(made))
    (repo / "new.txt").write_text("new\n")
    silent(send(repo, "PostToolUse", apply_patch(made, {"success": True, "files": []})))
    (repo / "README").write_text("nobody's\n")
    failed = "*** Begin Patch\n*** Update File: README\n@@\n-hello\n+bye\n*** End Patch\n"
    send(repo, "PreToolUse", apply_patch(failed))
    refused = {"success": False, "message": "Invalid context"}
    assert send(repo, "PostToolUse", apply_patch(failed, refused)).returncode == 0
    assert owners(repo) == {"new.txt": ME, "README": None}


def test_droid_tools_read_as_claudes_and_codexs() -> None:
    from guards.integrations.droid_hooks import from_droid

    for droid, ours in (("Execute", "Bash"), ("Edit", "Edit"), ("ApplyPatch", "apply_patch")):
        assert from_droid({"tool_name": droid})["tool_name"] == ours
    failed = from_droid({"tool_name": "ApplyPatch", "tool_response": '{"success": false}'})
    assert failed["tool_response"] == {"success": False, "error": "failed"}


def test_files_a_shell_command_made_are_observed(repo: Path) -> None:
    command = "echo made > made.txt"
    silent(send(repo, "PreToolUse", shell(command)))
    (repo / "made.txt").write_text("made\n")
    silent(send(repo, "PostToolUse", {**shell(command), "tool_response": "ok"}))
    assert owners(repo) == {"made.txt": ME}
    assert markers(repo) == []


def test_the_frame_comes_with_session_start_and_not_again_with_the_first_prompt(
    repo: Path,
) -> None:
    """`droid exec` sends no UserPromptSubmit: the frame comes with SessionStart; the
    interactive UI's first prompt after it gets none, its next one does."""
    alice_dirty(repo)
    env_file = repo.parent / "droid-env.sh"
    res = send(repo, "SessionStart", {"source": "startup"}, env={"CLAUDE_ENV_FILE": str(env_file)})
    said = answer(res)["hookSpecificOutput"]
    assert said["hookEventName"] == "SessionStart"
    assert said["additionalContext"].startswith("[Workspace:")
    assert "src/app.py" in said["additionalContext"]
    assert env_file.read_text() == f"export GUARDS_SESSION={ME}\n"
    silent(send(repo, "UserPromptSubmit", {"prompt": "go", "message_id": "m1"}))
    again = answer(send(repo, "UserPromptSubmit", {"prompt": "next", "message_id": "m2"}))
    assert again["hookSpecificOutput"]["additionalContext"].startswith("[Workspace:")
    assert markers(repo) == []


def test_a_clean_start_leaves_the_first_prompt_its_frame(repo: Path) -> None:
    silent(send(repo, "SessionStart", {"source": "startup"}))
    alice_dirty(repo)
    said = answer(send(repo, "UserPromptSubmit", {"prompt": "go", "message_id": "m1"}))
    assert "src/app.py" in said["hookSpecificOutput"]["additionalContext"]


def test_session_end_ends_the_session_and_drops_the_start_frames_flag(repo: Path) -> None:
    alice_dirty(repo)
    answer(send(repo, "SessionStart", {"source": "startup"}))
    assert markers(repo) == [f"{ME}.framed"]
    silent(send(repo, "SessionEnd", {"reason": "other", "message_count": 5}))
    res = run_guards("session", "list", "--json", cwd=repo)
    [mine] = [s for s in json.loads(res.stdout)["sessions"] if s["id"] == ME]
    assert mine["liveness"] == "ended"
    assert markers(repo) == []


def test_the_shim_in_the_line_finds_the_hooks_receipt_and_rescues_nothing_twice(
    repo: Path,
) -> None:
    """No tool-use id, but the line's guards runs as the session (GUARDS_SESSION from
    CLAUDE_ENV_FILE): the receipt is left under a key of the line's own."""
    alice_dirty(repo)
    silent(send(repo, "PreToolUse", shell("git reset --hard")))
    shim = run_guards("run", "--", "reset", "--hard", cwd=repo, env={"GUARDS_SESSION": ME})
    assert shim.returncode == 0 and "guards:" not in shim.stderr, shim.stderr
    assert len(rescue_refs(repo)) == 1
    done = send(repo, "PostToolUse", {**shell("git reset --hard"), "tool_response": "ok"})
    assert done.stdout.count("guards: rescued") == 1
    assert not any((repo / ".git/guards/receipts").iterdir())


def test_unreadable_input_that_could_run_git_is_refused(repo: Path) -> None:
    body = b'{"hook_event_name": "PreToolUse", "tool_input": {"command": "git reset --hard'
    res = run_agent_hook("droid", repo, body)
    assert res.returncode == 2 and "not JSON" in res.stderr
    assert "Traceback" not in res.stderr


def test_both_entry_points_take_droid(repo: Path) -> None:
    body = json.dumps({"hook_event_name": "Notification", "session_id": SID}).encode()
    assert run_guards("agent-hook", "droid", cwd=repo, input=body).returncode == 0
    assert run_agent_hook("droid", repo, body).returncode == 0


# -- install ------------------------------------------------------------------------------


def test_install_writes_a_flat_hooks_json_and_uninstall_removes_it(repo: Path) -> None:
    res = run_guards("install", "--droid", "--no-aliases", cwd=repo)
    assert res.returncode == 0, res.stderr
    doc = json.loads((repo / ".factory/hooks.json").read_text())
    assert set(doc) == set(harness_settings.DROID_EVENTS)  # events at the top level
    [group] = doc["PreToolUse"]
    assert group["matcher"] == "Execute|Create|Edit|ApplyPatch"
    assert group["hooks"][0]["command"] == harness_settings.event_command("droid", "PreToolUse")
    assert run_guards("install", "--droid", cwd=repo).stdout.count("hooks") == 0  # done
    res = run_guards("uninstall", "--droid", cwd=repo)
    assert res.returncode == 0, res.stderr
    assert not (repo / ".factory/hooks.json").exists()


def test_install_keeps_the_users_hooks_json_entries(repo: Path) -> None:
    theirs = {
        "PreToolUse": [{"matcher": "Execute", "hooks": [{"type": "command", "command": "x"}]}]
    }
    (repo / ".factory").mkdir()
    (repo / ".factory/hooks.json").write_text(json.dumps(theirs))
    assert run_guards("install", "--droid", "--no-aliases", cwd=repo).returncode == 0
    doc = json.loads((repo / ".factory/hooks.json").read_text())
    assert doc["PreToolUse"][0] == theirs["PreToolUse"][0] and len(doc["PreToolUse"]) == 2
    assert run_guards("uninstall", "--droid", cwd=repo).returncode == 0
    assert json.loads((repo / ".factory/hooks.json").read_text()) == theirs


def test_hooks_in_settings_json_without_hooks_json_get_ours_beside_them(repo: Path) -> None:
    """A new hooks.json would hide settings.json's hooks from Droid: ours go there too."""
    theirs = {"model": "m", "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "y"}]}]}}
    (repo / ".factory").mkdir()
    (repo / ".factory/settings.json").write_text(json.dumps(theirs))
    assert run_guards("install", "--droid", "--no-aliases", cwd=repo).returncode == 0
    assert not (repo / ".factory/hooks.json").exists()
    doc = json.loads((repo / ".factory/settings.json").read_text())
    assert doc["model"] == "m" and len(doc["hooks"]["Stop"]) == 2
    assert "PreToolUse" in doc["hooks"]
    assert run_guards("uninstall", "--droid", cwd=repo).returncode == 0
    assert json.loads((repo / ".factory/settings.json").read_text()) == theirs


def test_a_failed_edit_gets_no_end_and_the_turns_end_withdraws_its_write(repo: Path) -> None:
    """Droid sends no PostToolUse for an Edit that failed (old_str not found): its
    announcement would hold destructive commands back until it expires."""
    payload = {
        "tool_name": "Edit",
        "tool_input": {"file_path": str(repo / "README"), "old_str": "zz", "new_str": "b"},
    }
    silent(send(repo, "PreToolUse", payload))
    assert pending_writes(str(repo / ".git/guards"), str(repo)) == [ME]
    silent(send(repo, "Stop", {"stop_hook_active": False, "tool_execution_count": 1}))
    assert pending_writes(str(repo / ".git/guards"), str(repo)) == []


def test_the_turns_end_leaves_another_sessions_write_whose_name_begins_with_ours(
    repo: Path,
) -> None:
    """A session named ``<ours>.b`` is another writer: our turn's end must not take its
    announced write back (a destructive command would then run through its write)."""
    other = f"{SID}.b"
    payload = {
        "session_id": other,
        "tool_name": "Edit",
        "tool_input": {"file_path": str(repo / "README"), "old_str": "zz", "new_str": "b"},
    }
    silent(send(repo, "PreToolUse", payload))
    silent(send(repo, "Stop", {"stop_hook_active": False, "tool_execution_count": 1}))
    assert pending_writes(str(repo / ".git/guards"), str(repo)) == [session_for("droid", other)]


def test_user_install_writes_the_users_hooks_json(repo: Path, hermetic_seal: Path) -> None:
    assert run_guards("install", "--droid", "--user", "--no-aliases", cwd=repo).returncode == 0
    doc = json.loads((hermetic_seal / ".factory/hooks.json").read_text())
    assert doc["SessionStart"][0]["hooks"][0]["command"] == harness_settings.hook_command("droid")
    assert not (repo / ".factory").exists()
    assert run_guards("uninstall", "--droid", "--user", cwd=repo).returncode == 0
    assert not (hermetic_seal / ".factory/hooks.json").exists()
