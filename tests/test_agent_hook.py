"""guards agent-hook claude|codex: the harness events end to end, as the harness sends them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from guards.commands.agent_hook import session_for
from guards.git.process import CONTEXT_QUERY
from guards.protect import receipts
from guards.protect.guard import guard_line
from guards.state.observation import observe
from tests.helpers import (
    attributed,
    counting_git,
    git,
    make_repo,
    run_agent_hook,
    run_guards,
)

BOB = session_for("claude", "bob")


def send(
    repo: Path,
    event: dict[str, Any],
    harness: str = "claude",
    env: dict[str, str] | None = None,
    raw: bytes | None = None,
    fast: bool = True,
) -> subprocess.CompletedProcess[str]:
    """Run the hook as the harness does: a process, the event on stdin."""
    body = raw if raw is not None else json.dumps({"cwd": str(repo), **event}).encode()
    if not fast:
        return run_guards("agent-hook", harness, cwd=repo, env=env, input=body)
    return run_agent_hook(harness, repo, body, env)


def bash_event(session: str, command: object, tool_use_id: str | None = None) -> dict[str, Any]:
    """A PreToolUse event for the shell tool running ``command``."""
    event: dict[str, Any] = {
        "session_id": session,
        "hook_event_name": "PreToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": command},
    }
    if tool_use_id is not None:
        event["tool_use_id"] = tool_use_id
    return event


def answer(res: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    out: dict[str, Any] = doc["hookSpecificOutput"]
    return out


def owners(repo: Path) -> dict[str, str]:
    res = run_guards("status", "--json", cwd=repo)
    assert res.returncode in (0, 1), res.stderr
    doc = json.loads(res.stdout)
    return {p["path"]: p.get("owner") for p in doc["paths"]}


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "repo", {"README": "hello\n", "src/app.py": "print('hi')\n"})


# -- attribution ---------------------------------------------------------------------


def test_write_and_edit_events_record_the_file_for_the_session(repo: Path) -> None:
    (repo / "src/app.py").write_text("print('bob')\n")
    (repo / "new.txt").write_text("new\n")
    for tool, target in (("Edit", "src/app.py"), ("Write", "new.txt")):
        res = send(
            repo,
            {
                "session_id": "bob",
                "hook_event_name": "PostToolUse",
                "tool_name": tool,
                "tool_input": {"file_path": str(repo / target), "content": "x"},
                "tool_response": {"success": True},
            },
        )
        assert (res.returncode, res.stdout) == (0, ""), res.stderr
    assert owners(repo) == {"src/app.py": BOB, "new.txt": BOB}


def test_multiedit_and_notebookedit_record_too(repo: Path) -> None:
    (repo / "README").write_text("changed\n")
    (repo / "nb.ipynb").write_text("{}\n")
    send(
        repo,
        {
            "session_id": "bob",
            "hook_event_name": "PostToolUse",
            "tool_name": "MultiEdit",
            "tool_input": {"file_path": str(repo / "README"), "edits": []},
        },
    )
    send(
        repo,
        {
            "session_id": "bob",
            "hook_event_name": "PostToolUse",
            "tool_name": "NotebookEdit",
            "tool_input": {"notebook_path": str(repo / "nb.ipynb"), "new_source": "x"},
        },
    )
    assert owners(repo) == {"README": BOB, "nb.ipynb": BOB}


def test_codex_apply_patch_records_every_file_the_patch_names(repo: Path) -> None:
    (repo / "src/app.py").write_text("print('codex')\n")
    (repo / "docs").mkdir()
    (repo / "docs/new.md").write_text("hello\n")
    patch = (
        "*** Begin Patch\n*** Update File: src/app.py\n@@\n-print('hi')\n+print('codex')\n"
        "*** Add File: docs/new.md\n+hello\n*** End Patch\n"
    )
    res = send(
        repo,
        {
            "session_id": "c-1",
            "hook_event_name": "PostToolUse",
            "tool_name": "apply_patch",
            "tool_use_id": "call_1",
            "tool_input": {"command": patch},
        },
        harness="codex",
    )
    assert res.returncode == 0, res.stderr
    assert owners(repo) == {"src/app.py": "codex-c-1", "docs/new.md": "codex-c-1"}


def test_files_a_shell_command_changes_are_attributed_to_its_session(repo: Path) -> None:
    (repo / "README").write_text("alice's\n")
    assert run_guards("record", "--session", "alice", "README", cwd=repo).returncode == 0
    pre = bash_event("bob", "sed -i s/hi/bye/ src/app.py && echo x > made.txt", "toolu_7")
    assert send(repo, pre).stdout == ""
    subprocess.run(["bash", "-c", pre["tool_input"]["command"]], cwd=repo, check=True)
    res = send(repo, {**pre, "hook_event_name": "PostToolUse", "tool_response": {}})
    assert res.returncode == 0, res.stderr
    assert owners(repo) == {"README": "alice", "src/app.py": BOB, "made.txt": BOB}
    assert list((repo / ".git/guards/observe").iterdir()) == []  # the marker is gone


def test_a_failing_shell_command_s_files_are_attributed_and_its_marker_removed(
    repo: Path,
) -> None:
    """Claude sends PostToolUseFailure, not PostToolUse, when the command exits non-zero."""
    pre = bash_event("bob", "echo half > half.txt; exit 3", "toolu_8")
    assert send(repo, pre).stdout == ""
    subprocess.run(["bash", "-c", pre["tool_input"]["command"]], cwd=repo, check=False)
    failure = {**pre, "hook_event_name": "PostToolUseFailure", "error": "Exit code 3"}
    res = send(repo, failure)
    assert (res.returncode, res.stdout) == (0, ""), res.stderr
    assert owners(repo) == {"half.txt": BOB}
    assert list((repo / ".git/guards/observe").iterdir()) == []


CAROL = session_for("claude", "carol")


def write_event(session: str, path: Path, event: str = "PostToolUse") -> dict[str, Any]:
    return {
        "session_id": session,
        "hook_event_name": event,
        "tool_name": "Write",
        "tool_input": {"file_path": str(path), "content": "x"},
        "tool_use_id": f"toolu_w_{session}",
    }


def bob_destroys_and_carol_s_version_survives(repo: Path, version: str) -> None:
    """bob's next destructive command must rescue carol's version of src/app.py."""
    res = run_guards("run", "--", "checkout", "--", ".", cwd=repo, env={"GUARDS_SESSION": BOB})
    assert res.returncode == 0, res.stderr
    kept = [git(repo, "show", f"{ref}:src/app.py") for ref in rescue_refs(repo)]
    assert version in kept, (res.stderr, kept)


def test_a_shell_command_s_end_does_not_claim_what_another_session_recorded_meanwhile(
    repo: Path,
) -> None:
    """carol writes (and records) src/app.py while bob's shell line runs, then writes it
    again (her second Write's PostToolUse has not come yet): bob's line did not write it."""
    pre = bash_event("bob", "sleep 0", "toolu_s1")
    assert send(repo, pre).returncode == 0
    (repo / "src/app.py").write_text("carol 1\n")
    assert send(repo, write_event("carol", repo / "src/app.py")).returncode == 0
    assert owners(repo)["src/app.py"] == CAROL
    (repo / "src/app.py").write_text("carol 2\n")
    res = send(repo, {**pre, "hook_event_name": "PostToolUse", "tool_response": {}})
    assert res.returncode == 0, res.stderr
    assert owners(repo)["src/app.py"] != BOB
    bob_destroys_and_carol_s_version_survives(repo, "carol 2\n")


def test_an_exact_record_made_while_the_observation_reads_the_ledger_wins(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The observation reads the ledger, then writes: carol's record landing in between
    (a real process) must not be overwritten by bob's observation."""
    from guards.state.workspace import Workspace

    pre = bash_event("bob", "sleep 0", "toolu_s2")
    assert send(repo, pre).returncode == 0
    threshold = os.stat(next((repo / ".git/guards/observe").iterdir())).st_ctime_ns
    (repo / "src/app.py").write_text("carol\n")
    real_read = Workspace.read_ledger

    def read_then_carol_records(self: Workspace, **kw: Any) -> Any:
        found = real_read(self, **kw)
        assert send(repo, write_event("carol", repo / "src/app.py")).returncode == 0
        return found

    with monkeypatch.context() as m:
        m.setattr(Workspace, "read_ledger", read_then_carol_records)
        claimed = observe(Workspace.open(repo), BOB, threshold)
    assert claimed in ([], ["src/app.py"])  # claimed or not, carol's record must win
    assert owners(repo)["src/app.py"] == CAROL
    bob_destroys_and_carol_s_version_survives(repo, "carol\n")


# -- guarding shell lines ----------------------------------------------------------------


def alice_dirty(repo: Path) -> None:
    (repo / "src/app.py").write_text("print('alice')\n")
    assert run_guards("record", "--session", "alice", "src/app.py", cwd=repo).returncode == 0


def test_claude_rescue_then_allow_names_the_rescue_in_additional_context(repo: Path) -> None:
    alice_dirty(repo)
    res = send(
        repo,
        bash_event("bob", "cd src && git checkout -- .", "t1"),
        fast=False,
    )
    out = answer(res)
    assert "permissionDecision" not in out
    assert "rescued 1 path of session alice to refs/rescue/alice/" in out["additionalContext"]
    assert git(repo, "for-each-ref", "--format=%(refname)", "refs/rescue").startswith(
        "refs/rescue/alice/"
    )


def test_codex_deny_is_exit_2_with_the_reason_on_stderr(repo: Path) -> None:
    alice_dirty(repo)
    res = send(
        repo,
        bash_event("c-1", "git reset --hard", "t1"),
        harness="codex",
        env={"GUARDS_POLICY": "block"},
    )
    assert res.returncode == 2
    assert res.stdout == ""
    assert "alice" in res.stderr and len(res.stderr.strip().splitlines()) == 1


def test_codex_hears_about_the_rescue_from_pre_tool_use_once(repo: Path) -> None:
    """Codex 0.171 shows a PreToolUse context between the call and its output (the e2e
    tests read it there): told then, and not again after the command."""
    alice_dirty(repo)
    pre = bash_event("c-1", "git stash", "t2")
    res = send(repo, pre, harness="codex")
    assert "guards: rescued 1 path of session alice" in answer(res)["additionalContext"]
    post = send(repo, {**pre, "hook_event_name": "PostToolUse"}, harness="codex")
    assert post.returncode == 0 and "rescued" not in post.stdout, post.stdout


def rescue_refs(repo: Path) -> list[str]:
    return git(repo, "for-each-ref", "--format=%(refname)", "refs/rescue").split()


def hook_rescues(repo: Path) -> None:
    """The hook guards `git reset --hard` (alice's work is rescued, the line may run)."""
    answer(send(repo, bash_event("bob", "git reset --hard", "toolu_9")))
    assert len(rescue_refs(repo)) == 1


def shim_runs(repo: Path, session: str = BOB) -> subprocess.CompletedProcess[str]:
    """The line's own git is the shim: `guards run` in the session's environment."""
    return run_guards("run", "--", "reset", "--hard", cwd=repo, env={"GUARDS_SESSION": session})


@pytest.mark.parametrize("staged", [False, True])
def test_the_shim_inside_the_hooked_command_does_not_rescue_the_same_work_again(
    repo: Path, staged: bool
) -> None:
    if staged:  # the index holds one version, the work tree another: both must match
        (repo / "src/app.py").write_text("print('alice, staged')\n")
        git(repo, "add", "src/app.py")
    alice_dirty(repo)
    hook_rescues(repo)
    res = shim_runs(repo)
    assert res.returncode == 0 and "guards:" not in res.stderr, res.stderr
    [ref] = rescue_refs(repo)
    assert git(repo, "show", f"{ref}:src/app.py") == "print('alice')\n"
    assert (repo / "src/app.py").read_text() == "print('hi')\n"  # git ran
    receipts = repo / ".git/guards/receipts"
    [receipt] = receipts.iterdir()
    assert receipt.stat().st_mode & 0o777 == 0o600  # written by fsutil.atomic_write
    post = {**bash_event("bob", "git reset --hard", "toolu_9"), "hook_event_name": "PostToolUse"}
    assert send(repo, post).returncode == 0
    assert list(receipts.iterdir()) == []  # the command ended: its receipt went with it


def test_work_written_after_the_hook_rescued_is_rescued_again_by_the_shim(repo: Path) -> None:
    alice_dirty(repo)
    hook_rescues(repo)
    (repo / "src/app.py").write_text("print('carol, after the hook')\n")
    res = shim_runs(repo)
    assert res.returncode == 0 and "guards: rescued 1 path" in res.stderr
    contents = sorted(git(repo, "show", f"{ref}:src/app.py") for ref in rescue_refs(repo))
    assert contents == ["print('alice')\n", "print('carol, after the hook')\n"]


@pytest.mark.parametrize("why", ["another session", "the ref is gone"])
def test_a_receipt_proves_nothing_to_another_session_or_without_its_ref(
    repo: Path, why: str
) -> None:
    alice_dirty(repo)
    hook_rescues(repo)
    if why == "the ref is gone":
        git(repo, "update-ref", "-d", rescue_refs(repo)[0])
    res = shim_runs(repo, "carol" if why == "another session" else BOB)
    assert res.returncode == 0 and "guards: rescued 1 path of session alice" in res.stderr


def test_an_unidentified_shim_inside_the_hooked_command_rescues_nothing_twice(
    repo: Path,
) -> None:
    """Gemini CLI's shell commands carry no session id: the shim inside the hooked line
    runs unidentified. The hook's receipt still proves the work held (one ref, no second
    notice); an identified other session is not let off (the test above)."""
    alice_dirty(repo)
    hook_rescues(repo)
    res = run_guards("run", "--", "reset", "--hard", cwd=repo, env={"GUARDS_SESSION": ""})
    assert res.returncode == 0 and "guards:" not in res.stderr, res.stderr
    [ref] = rescue_refs(repo)
    assert git(repo, "show", f"{ref}:src/app.py") == "print('alice')\n"
    assert (repo / "src/app.py").read_text() == "print('hi')\n"  # git ran


def test_one_line_s_rescues_in_two_places_of_a_repository_leave_one_receipt_for_both(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    alice_dirty(repo)
    (repo / "README").write_text("alice's readme\n")
    assert run_guards("record", "--session", "alice", "README", cwd=repo).returncode == 0
    monkeypatch.setenv("GUARDS_SESSION", BOB)
    in_src = guard_line("git checkout -- .", str(repo / "src"))
    at_top = guard_line("git checkout -- README", str(repo))
    files = receipts.write(BOB, "toolu_3", in_src.rescues + at_top.rescues)
    assert len(files) == 1 and len(rescue_refs(repo)) == 2
    res = shim_runs(repo)  # reset --hard: both paths at risk, both already rescued
    assert res.returncode == 0 and "guards:" not in res.stderr, res.stderr
    assert len(rescue_refs(repo)) == 2


def test_codex_s_shim_is_identified_by_the_thread_id_and_rescues_nothing_twice(
    repo: Path,
) -> None:
    """Codex has no env file for GUARDS_SESSION, but its shell commands carry
    CODEX_THREAD_ID, the hooks' session_id."""
    alice_dirty(repo)
    res = send(repo, bash_event("c-1", "git reset --hard", "call_1"), harness="codex")
    assert "guards: rescued" in answer(res)["additionalContext"]
    shim = run_guards("run", "--", "reset", "--hard", cwd=repo, env={"CODEX_THREAD_ID": "c-1"})
    assert shim.returncode == 0 and "guards:" not in shim.stderr, shim.stderr
    assert len(rescue_refs(repo)) == 1


@pytest.mark.parametrize(
    ("env", "caller"),
    [
        ({"CODEX_THREAD_ID": "t-1"}, "codex-t-1"),
        ({"CLAUDE_CODE_SESSION_ID": "9f1c"}, "claude-9f1c"),
        ({"CLAUDE_CODE_SESSION_ID": "9f1c", "GUARDS_SESSION": "me"}, "me"),
        ({}, None),
    ],
)
def test_a_harness_shell_command_runs_as_its_session(
    repo: Path, env: dict[str, str], caller: str | None
) -> None:
    res = run_guards("status", "--json", cwd=repo, env=env)
    assert json.loads(res.stdout)["caller"] == caller


def test_guards_disable_lets_everything_through(repo: Path) -> None:
    alice_dirty(repo)
    res = send(
        repo,
        bash_event("bob", "git reset --hard"),
        env={"GUARDS_DISABLE": "1"},
    )
    assert (res.returncode, res.stdout) == (0, "")
    assert git(repo, "for-each-ref", "refs/rescue") == ""


# -- sessions and the frame ------------------------------------------------------------------


def test_session_start_registers_the_session_and_exports_the_identity_without_a_frame(
    repo: Path, tmp_path: Path
) -> None:
    """The first prompt's UserPromptSubmit frames the turn: at SessionStart as well, the
    frame reached the model twice (Claude Code delivers both contexts)."""
    alice_dirty(repo)
    env_file = tmp_path / "claude-env"
    res = send(
        repo,
        {"session_id": "bob", "hook_event_name": "SessionStart", "source": "startup"},
        env={"CLAUDE_ENV_FILE": str(env_file)},
        fast=False,
    )
    assert (res.returncode, res.stdout) == (0, ""), res.stderr
    assert env_file.read_text() == f"export GUARDS_SESSION={BOB}\n"
    sessions = json.loads(run_guards("session", "list", "--json", cwd=repo).stdout)["sessions"]
    assert BOB in {s["id"] for s in sessions}
    prompt = {"session_id": "bob", "hook_event_name": "UserPromptSubmit", "prompt": "hi"}
    out = answer(send(repo, prompt))
    assert out["additionalContext"].startswith("[Workspace: 1 uncommitted change present")
    assert "src/app.py" in out["additionalContext"] and "session alice" in out["additionalContext"]


def test_user_prompt_submit_frames_the_turn_and_is_silent_when_clean(repo: Path) -> None:
    event = {"session_id": "bob", "hook_event_name": "UserPromptSubmit", "prompt": "hi"}
    clean = send(repo, event)
    assert (clean.returncode, clean.stdout) == (0, "")
    (repo / "README").write_text("dirty\n")
    out = answer(send(repo, event))
    assert out["hookEventName"] == "UserPromptSubmit"
    assert "README" in out["additionalContext"] and "owner unknown" in out["additionalContext"]


def test_a_prompt_starts_its_git_calls_before_the_handlers_load(repo: Path) -> None:
    """git status and the discovery run while the handlers, the ledger and the frame are
    imported (guards.integrations.hook_start); the frame is the same as without them."""
    (repo / "README").write_text("dirty\n")
    event = {"session_id": "bob", "cwd": str(repo), "hook_event_name": "UserPromptSubmit"}
    res = _hook_python(
        repo,
        event,
        "from guards.integrations import hook_start\n"
        "started = hook_start.start(hook_start.read_event('claude', sys.stdin.buffer.read()))\n"
        "loaded = [m for m in sys.modules if m.startswith(('guards.state', 'guards.report'))]\n"
        "loaded += [m for m in ('guards.integrations.agent_hooks',) if m in sys.modules]\n"
        "print(loaded, started is not None, file=sys.stderr)\n"
        "started.finish()\n",
    )
    assert res.stderr.splitlines()[-1:] == ["[] True"], res.stderr
    text = answer(send(repo, event))["additionalContext"]
    assert "README" in text and "owner unknown" in text


def test_session_end_marks_the_session_ended(repo: Path) -> None:
    send(repo, {"session_id": "bob", "hook_event_name": "SessionStart"})
    res = send(repo, {"session_id": "bob", "hook_event_name": "SessionEnd", "reason": "exit"})
    assert (res.returncode, res.stdout) == (0, "")
    sessions = json.loads(run_guards("session", "list", "--json", cwd=repo).stdout)["sessions"]
    assert [s["liveness"] for s in sessions if s["id"] == BOB] == ["ended"]


def test_session_end_checkpoints_the_sessions_own_work_first(repo: Path) -> None:
    """Commit early, push often: the harness's SessionEnd persists the session's work."""
    send(repo, {"session_id": "bob", "hook_event_name": "SessionStart"})
    (repo / "src/app.py").write_text("print('bob')\n")
    edit = {
        "session_id": "bob",
        "hook_event_name": "PostToolUse",
        "tool_name": "Write",
        "tool_input": {"file_path": str(repo / "src/app.py")},
    }
    assert send(repo, edit).returncode == 0
    res = send(repo, {"session_id": "bob", "hook_event_name": "SessionEnd", "reason": "exit"})
    assert (res.returncode, res.stdout, res.stderr) == (0, "", "")
    assert git(repo, "show", f"refs/wip/{BOB}:src/app.py") == "print('bob')\n"
    assert (repo / "src/app.py").read_text() == "print('bob')\n"  # the work stays


@pytest.mark.parametrize(("harness", "stop"), [("claude", "Stop"), ("gemini", "AfterAgent")])
def test_a_turns_end_persists_the_sessions_work_only_when_configured(
    repo: Path, harness: str, stop: str
) -> None:
    send(repo, {"session_id": "bob", "hook_event_name": "SessionStart"}, harness)
    (repo / "src/app.py").write_text("print('bob')\n")
    tool = "Write" if harness == "claude" else "write_file"
    edit = {
        "session_id": "bob",
        "hook_event_name": "PostToolUse" if harness == "claude" else "AfterTool",
        "tool_name": tool,
        "tool_input": {"file_path": str(repo / "src/app.py")},
    }
    assert send(repo, edit, harness).returncode == 0
    end = {"session_id": "bob", "hook_event_name": stop}
    assert (send(repo, end, harness).returncode, git(repo, "for-each-ref", "refs/wip")) == (0, "")
    run_guards("config", "set", "--repo", "persist.on_stop", "true", cwd=repo)
    res = send(repo, end, harness)
    assert (res.returncode, res.stdout, res.stderr) == (0, "", "")
    [wip] = git(repo, "for-each-ref", "--format=%(refname)", "refs/wip").split()
    assert git(repo, "show", f"{wip}:src/app.py") == "print('bob')\n"
    assert (repo / "src/app.py").read_text() == "print('bob')\n"  # the work stays


@pytest.mark.parametrize(
    "event",
    [
        {"hook_event_name": "Stop"},
        {"hook_event_name": "Notification", "message": "git"},
        {"hook_event_name": "PreToolUse", "tool_name": "Read", "tool_input": {"file_path": "x"}},
    ],
)
def test_other_events_are_exit_0_and_silent(repo: Path, event: dict[str, Any]) -> None:
    res = send(repo, {"session_id": "bob", **event})
    assert (res.returncode, res.stdout, res.stderr) == (0, "", "")


# -- bad input ---------------------------------------------------------------------------


def test_malformed_json_that_could_run_git_is_refused_in_one_line(repo: Path) -> None:
    raw = b'{"hook_event_name": "PreToolUse", "tool_input": {"command": "git reset --hard"'
    res = send(repo, {}, raw=raw)
    assert res.returncode == 2
    assert len(res.stderr.strip().splitlines()) == 1 and "Traceback" not in res.stderr


def test_malformed_json_without_git_is_one_line_and_nonzero(repo: Path) -> None:
    res = send(repo, {}, raw=b"not json at all", fast=False)
    assert res.returncode == 1
    assert len(res.stderr.strip().splitlines()) == 1 and "Traceback" not in res.stderr


def test_an_internal_error_in_the_hook_is_logged_and_answered_as_before(
    repo: Path,
    hermetic_seal: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The one error boundary: a bug's traceback goes to guards' log, as for ``guards
    run``; a tool call that could run git is denied (JSON for Claude, exit 2 for
    Gemini), any other event says one line and exits 1."""
    from guards.errors import UnknownStateError
    from guards.integrations import agent_hooks

    def broken(harness: str, event: dict[str, Any]) -> int:
        raise ZeroDivisionError("a bug")

    monkeypatch.setattr(agent_hooks, "_pre_shell", broken)
    monkeypatch.setattr(agent_hooks, "_post_shell", broken)
    log = hermetic_seal / ".xdg-state" / "guards" / "log" / "guards.log"
    start = json.dumps({"cwd": str(repo), **bash_event("bob", "git reset --hard", "t1")})

    assert agent_hooks.main("gemini", start.encode()) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and "Traceback" not in err
    assert "could not check this command (internal error (ZeroDivisionError: a bug)" in err
    assert f"details in {log}" in err
    assert log.read_text().count("ZeroDivisionError: a bug") == 1

    assert agent_hooks.main("claude", start.encode()) == 0
    out, err = capsys.readouterr()
    denied = json.loads(out)["hookSpecificOutput"]
    assert denied["permissionDecision"] == "deny"
    assert "internal error (ZeroDivisionError" in denied["permissionDecisionReason"]
    assert log.read_text().count("ZeroDivisionError: a bug") == 2

    end = json.loads(start) | {"hook_event_name": "PostToolUse", "tool_response": {}}
    assert agent_hooks.main("claude", json.dumps(end).encode()) == 1
    out, err = capsys.readouterr()
    assert out == "" and err.startswith("guards agent-hook: PostToolUse: internal error (")
    assert log.read_text().count("ZeroDivisionError: a bug") == 3

    def cannot_tell(harness: str, event: dict[str, Any]) -> int:
        raise UnknownStateError("cannot read the ledger")

    monkeypatch.setattr(agent_hooks, "_post_shell", cannot_tell)
    assert agent_hooks.main("claude", json.dumps(end).encode()) == 1
    assert capsys.readouterr().err == "guards agent-hook: PostToolUse: cannot read the ledger\n"
    assert log.read_text().count("Traceback") == 3  # not a bug: nothing logged


def test_a_shell_command_that_is_not_a_string_is_refused_when_it_mentions_git(
    repo: Path,
) -> None:
    event = bash_event("bob", {"git": "reset"})
    out = answer(send(repo, event))
    assert out["permissionDecision"] == "deny"


def test_unknown_harness_is_a_usage_error(repo: Path) -> None:
    res = run_guards("agent-hook", "cursor", cwd=repo, input=b"{}")
    assert res.returncode == 2 and len(res.stderr.strip().splitlines()) == 1


def test_a_pathspec_git_rejects_passes_the_hook_as_it_passes_guards_run(repo: Path) -> None:
    """One pipeline: the hook used to deny this with git's own status error in the reason,
    while `guards run` let git reject the pathspec itself (nothing at risk either way)."""
    (repo / "README").write_text("someone's edit\n")
    res = send(repo, bash_event("bob", "git checkout -- ':(foo)README'"))
    assert res.returncode == 0, res.stderr
    assert "deny" not in res.stdout and "porcelain" not in res.stdout + res.stderr
    assert git(repo, "for-each-ref", "refs/rescue") == ""
    plain = subprocess.run(
        ["git", "checkout", "--", ":(foo)README"], cwd=repo, capture_output=True, check=False
    )
    guarded = run_guards("run", "--", "checkout", "--", ":(foo)README", cwd=repo)
    assert (guarded.returncode, guarded.stderr.encode()) == (plain.returncode, plain.stderr)
    assert (repo / "README").read_text() == "someone's edit\n"


# -- write tools overwriting someone else's uncommitted file ----------------------------


def write_pre(session: str, tool: str, target: str, harness: str = "claude") -> dict[str, Any]:
    key = "notebook_path" if tool == "NotebookEdit" else "file_path"
    return {
        "session_id": session,
        "hook_event_name": "BeforeTool" if harness == "gemini" else "PreToolUse",
        "tool_name": tool,
        "tool_input": {key: target, "content": "bob's\n"},
        "tool_use_id": "toolu_pw",
    }


def rescued_contents(repo: Path, path: str) -> list[str]:
    return [git(repo, "show", f"{ref}:{path}") for ref in rescue_refs(repo)]


@pytest.mark.parametrize("tool", ["Write", "Edit", "MultiEdit", "NotebookEdit"])
def test_a_claude_write_tool_rescues_another_session_s_file_before_overwriting_it(
    repo: Path, tool: str
) -> None:
    alice_dirty(repo)
    out = answer(send(repo, write_pre("bob", tool, str(repo / "src/app.py"))))
    assert "permissionDecision" not in out
    assert "rescued 1 path of session alice" in out["additionalContext"]
    assert rescued_contents(repo, "src/app.py") == ["print('alice')\n"]
    assert (repo / "src/app.py").read_text() == "print('alice')\n"  # untouched


def test_unrecorded_and_untracked_content_is_rescued_before_a_write_too(repo: Path) -> None:
    """Unknown counts as foreign: an untracked file nobody recorded, a relative path."""
    (repo / "notes.txt").write_text("someone's notes\n")
    out = answer(send(repo, write_pre("bob", "Write", "notes.txt")))
    assert "rescued 1 path of unknown owner" in out["additionalContext"]
    assert rescued_contents(repo, "notes.txt") == ["someone's notes\n"]


@pytest.mark.parametrize("case", ["own recorded file", "new file", "clean file", "outside"])
def test_a_write_that_destroys_nothing_of_anyone_else_s_is_silent(
    repo: Path, tmp_path: Path, case: str
) -> None:
    target = {
        "own recorded file": repo / "src/app.py",
        "new file": repo / "brand/new.txt",
        "clean file": repo / "README",
        "outside": tmp_path / "elsewhere.txt",
    }[case]
    if case == "own recorded file":
        target.write_text("bob's first\n")
        assert run_guards("record", "--session", BOB, "src/app.py", cwd=repo).returncode == 0
    if case == "outside":
        target.write_text("not in a repository\n")
    res = send(repo, write_pre("bob", "Write", str(target)))
    assert (res.returncode, res.stdout, res.stderr) == (0, "", "")
    assert rescue_refs(repo) == []


def test_a_write_over_another_session_s_file_is_refused_under_policy_block(repo: Path) -> None:
    alice_dirty(repo)
    res = send(
        repo, write_pre("bob", "Edit", str(repo / "src/app.py")), env={"GUARDS_POLICY": "block"}
    )
    out = answer(res)
    assert out["permissionDecision"] == "deny"
    reason = out["permissionDecisionReason"]
    assert "refused `Edit src/app.py`" in reason and "alice" in reason
    assert rescue_refs(repo) == []


def test_codex_apply_patch_rescues_the_files_it_updates_first(repo: Path) -> None:
    alice_dirty(repo)
    (repo / "README").write_text("carol's readme\n")
    assert run_guards("record", "--session", "carol", "README", cwd=repo).returncode == 0
    patch = (
        "*** Begin Patch\n*** Update File: src/app.py\n@@\n-print('alice')\n+print('c')\n"
        "*** Update File: README\n@@\n-carol's readme\n+c\n*** Add File: fresh.txt\n+x\n"
        "*** End Patch\n"
    )
    pre = {
        "session_id": "c-1",
        "hook_event_name": "PreToolUse",
        "tool_name": "apply_patch",
        "tool_input": {"command": patch},
        "tool_use_id": "call_p",
    }
    res = send(repo, pre, harness="codex")
    assert "guards: rescued" in answer(res)["additionalContext"]
    assert sorted(rescued_contents(repo, "src/app.py")) == ["print('alice')\n", "print('hi')\n"]
    assert "carol's readme\n" in rescued_contents(repo, "README")


def test_gemini_write_file_rescues_another_session_s_file_first(repo: Path) -> None:
    alice_dirty(repo)
    res = send(
        repo, write_pre("g-1", "write_file", str(repo / "src/app.py"), "gemini"), harness="gemini"
    )
    assert res.returncode == 0, res.stderr
    assert "guards: rescued 1 path of session alice" in res.stderr
    assert rescued_contents(repo, "src/app.py") == ["print('alice')\n"]


# -- Gemini CLI --------------------------------------------------------------------------

GEM = session_for("gemini", "g-1")


def gemini_shell(command: str, event: str = "BeforeTool") -> dict[str, Any]:
    """Gemini's shell tool event: no tool_use_id."""
    return {
        "session_id": "g-1",
        "hook_event_name": event,
        "tool_name": "run_shell_command",
        "tool_input": {"command": command, "description": "x"},
    }


def test_gemini_shell_files_are_attributed_without_a_tool_use_id(repo: Path) -> None:
    pre = gemini_shell("echo x > made.txt")
    assert send(repo, pre, harness="gemini").returncode == 0
    [marker] = list((repo / ".git/guards/observe").iterdir())
    assert marker.name.startswith(f"{GEM}.cmd-")
    subprocess.run(["bash", "-c", "echo x > made.txt"], cwd=repo, check=True)
    post = {**gemini_shell("echo x > made.txt", "AfterTool"), "tool_response": {}}
    res = send(repo, post, harness="gemini")
    assert (res.returncode, res.stdout) == (0, ""), res.stderr
    assert owners(repo) == {"made.txt": GEM}
    assert list((repo / ".git/guards/observe").iterdir()) == []


def test_gemini_identical_commands_queue_their_start_markers(repo: Path) -> None:
    pre = gemini_shell("true")
    for _ in range(2):
        assert send(repo, pre, harness="gemini").returncode == 0
    first, second = sorted((repo / ".git/guards/observe").iterdir())
    send(repo, {**gemini_shell("true", "AfterTool"), "tool_response": {}}, harness="gemini")
    assert list((repo / ".git/guards/observe").iterdir()) == [second]  # the oldest went
    assert first != second


def test_gemini_write_file_and_replace_record_the_file_but_not_a_failed_edit(
    repo: Path,
) -> None:
    (repo / "new.txt").write_text("new\n")
    (repo / "src/app.py").write_text("print('gem')\n")
    (repo / "README").write_text("alice's\n")
    for tool, path, error in (
        ("write_file", "new.txt", None),
        ("replace", str(repo / "src/app.py"), None),
        ("replace", "README", {"message": "0 occurrences found"}),
    ):
        event = {
            "session_id": "g-1",
            "hook_event_name": "AfterTool",
            "tool_name": tool,
            "tool_input": {"file_path": path},
            "tool_response": {"llmContent": "ok", "error": error},
        }
        res = send(repo, event, harness="gemini")
        assert res.returncode == 0, res.stderr
    assert owners(repo) == {"new.txt": GEM, "src/app.py": GEM, "README": None}


def test_gemini_deny_is_exit_2_and_the_rescue_is_told_after_the_command(repo: Path) -> None:
    alice_dirty(repo)
    block = send(
        repo, gemini_shell("git reset --hard"), harness="gemini", env={"GUARDS_POLICY": "block"}
    )
    assert block.returncode == 2 and block.stdout == ""
    assert "alice" in block.stderr
    pre = send(repo, gemini_shell("git stash"), harness="gemini")
    assert pre.returncode == 0 and pre.stdout == ""
    post = send(repo, gemini_shell("git stash", "AfterTool"), harness="gemini")
    out = answer(post)
    assert out["hookEventName"] == "AfterTool"
    assert "guards: rescued 1 path of session alice" in out["additionalContext"]


def test_gemini_before_agent_gets_the_frame(repo: Path) -> None:
    alice_dirty(repo)
    event = {"session_id": "g-1", "hook_event_name": "BeforeAgent", "prompt": "go"}
    out = answer(send(repo, event, harness="gemini"))
    assert out["hookEventName"] == "BeforeAgent"
    assert "src/app.py" in out["additionalContext"]


# -- what every tool call and prompt imports ------------------------------------------------

#: Modules that cost milliseconds each at start-up (see guards.values and
#: benchmarks/README.md), and guards' own heavy layers, that these events never need.
HOOK_NEVER_IMPORTS = (
    "argparse",
    "dataclasses",
    "pathlib",
    "subprocess",
    "typing",
    "tempfile",
    "logging",
    "concurrent.futures",
    "filelock",
    "guards.protect.rescue",
    "guards.protect.snapshot",
    # re and enum (which json pulls in too) are about a fifth of a hook's time: the
    # events are read by guards.jsontext, shell lines parsed without re
    "json",
    "re",
    "enum",
    # collections and functools, by way of contextlib: guards.fsutil.remove instead
    "contextlib",
)


@pytest.mark.parametrize(
    "event",
    [
        {"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": {"command": "ls"}},
        {
            "hook_event_name": "PreToolUse",
            "tool_name": "Bash",
            "tool_input": {"command": "npm test | tee test.log && rm -rf /nonexistent-dir/x"},
        },
        {
            "hook_event_name": "PreToolUse",
            "tool_name": "Bash",
            "tool_input": {"command": "git reset --hard"},  # nothing at risk
        },
        {"hook_event_name": "PreToolUse", "tool_name": "Write", "tool_input": {"file_path": "n"}},
        {
            "hook_event_name": "PostToolUse",
            "tool_name": "Write",
            "tool_input": {"file_path": "README"},
            "tool_response": {},
        },
        {"hook_event_name": "UserPromptSubmit", "prompt": "go"},
        {  # no start marker of its own: the shell gate's are looked through
            "hook_event_name": "PostToolUse",
            "tool_name": "Bash",
            "tool_input": {"command": "ls"},
            "tool_response": {},
        },
    ],
    ids=[
        "line-without-git",
        "destroyers-without-git",
        "reset-nothing-at-risk",
        "write-new-file",
        "write-recorded",
        "prompt",
        "line-end",
    ],
)
def test_a_hook_event_imports_only_what_it_needs(repo: Path, event: dict[str, Any]) -> None:
    """Each runs on every tool call or prompt of an agent: start-up is its cost."""
    _assert_lean_hook(repo, event)


def test_an_edit_is_recorded_without_reading_the_settings(repo: Path) -> None:
    # Settings are a module and two files to read (and tomllib where a file exists) on
    # every edit; a record needs none of them (a compaction's lock timeout, when asked).
    (repo / ".git/guards").mkdir(parents=True, exist_ok=True)
    (repo / ".git/guards/config.toml").write_text("[ledger]\nlock_timeout = 3\n")
    event = {
        "hook_event_name": "PostToolUse",
        "tool_name": "Write",
        "tool_input": {"file_path": "README"},
        "tool_response": {},
    }
    _assert_lean_hook(repo, event, also=("guards.config", "tomllib", "tomli", "select"))
    assert attributed(repo) == {"README": session_for("claude", "s1")}


@pytest.mark.parametrize("tool", ["Write", "Edit", "NotebookEdit"])
def test_a_write_s_end_loads_none_of_the_other_events_handlers(repo: Path, tool: str) -> None:
    """The end of every edit an agent makes: read once, recorded, answered by
    guards.integrations.write_hooks alone (no agent_hooks, no git runner, no Copilot
    reader); the file is the session's all the same."""
    key = "notebook_path" if tool == "NotebookEdit" else "file_path"
    (repo / "README").write_text("edited\n")
    event = {
        "hook_event_name": "PostToolUse",
        "tool_name": tool,
        "tool_input": {key: "README"},
        "tool_response": {},
    }
    handlers = (
        "guards.integrations.agent_hooks",
        "guards.integrations.copilot_hooks",
        "guards.git.process",
        "guards.predict.shell",
    )
    _assert_lean_hook(repo, event, also=handlers)
    assert attributed(repo) == {"README": session_for("claude", "s1")}


def test_a_line_s_end_that_takes_the_shell_gate_s_marker_stays_lean(repo: Path) -> None:
    start = {"session_id": "s1", "cwd": str(repo), "tool_use_id": "toolu_1"}
    start.update(hook_event_name="PreToolUse", tool_name="Bash", tool_input={"command": "ls"})
    folder = repo / ".git/guards/observe"
    folder.mkdir(parents=True)
    (folder / "_shell.1-0.json").write_text(json.dumps(start, separators=(",", ":")))
    _assert_lean_hook(repo, {**start, "hook_event_name": "PostToolUse", "tool_response": {}})
    assert list(folder.iterdir()) == []  # taken


def test_a_destructive_line_over_only_the_sessions_own_work_imports_no_rescue_machinery(
    repo: Path,
) -> None:
    (repo / "README").write_text("the session's own edit\n")
    res = run_guards("record", "--session", session_for("claude", "s1"), "README", cwd=repo)
    assert res.returncode == 0, res.stderr
    event = {
        "hook_event_name": "PreToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": "git reset --hard"},
    }
    _assert_lean_hook(repo, event)
    assert rescue_refs(repo) == []


def _assert_lean_hook(repo: Path, event: dict[str, Any], also: tuple[str, ...] = ()) -> None:
    payload = {"session_id": "s1", "cwd": str(repo), "tool_use_id": "toolu_1", **event}
    res = _hook_python(
        repo,
        payload,
        "status = fast_main(['claude'])\n"
        f"print([m for m in {HOOK_NEVER_IMPORTS + also!r} if m in sys.modules], status, "
        "file=sys.stderr)\n",
    )
    assert res.stderr.splitlines()[-1:] == ["[] 0"], res.stderr


def _hook_python(repo: Path, event: dict[str, Any], body: str) -> subprocess.CompletedProcess[str]:
    """``body`` run after the hook's entry point is imported, as the installed command
    starts it (installation.python_launch), with ``event`` on stdin."""
    from tests.helpers import PROJECT_ROOT

    code = (
        "import sys\n"
        f"sys.path.insert(0, {str(PROJECT_ROOT)!r})\n"
        "from guards.commands.agent_hook import fast_main\n"
    )
    return subprocess.run(
        [sys.executable, "-S", "-c", code + body],
        input=json.dumps(event),
        cwd=repo,
        capture_output=True,
        text=True,
        env=dict(os.environ),
    )


def test_a_destructive_git_line_asks_its_first_query_once_and_others_never(
    repo: Path, tmp_path: Path
) -> None:
    """The hook starts the guard's first query before importing the shell parser; the
    guard takes that answer (a mismatch would run it twice); a line whose git cannot
    destroy anything starts none."""
    wrapper, log = counting_git(tmp_path)
    env = {"GUARDS_REAL_GIT": str(wrapper)}
    res = send(repo, bash_event("s1", "git reset --hard", "t1"), env=env)
    assert (res.returncode, res.stdout) == (0, ""), res.stderr  # nothing at risk: one look
    calls = log.read_text().splitlines()
    assert sum(" ".join(CONTEXT_QUERY) in c for c in calls) == 1, calls
    log.unlink()
    (repo / "src/app.py").write_text("nobody's\n")
    res = send(repo, bash_event("s1", "git checkout -- .", "t3"), env=env)
    assert res.returncode == 0 and "guards: rescued" in res.stdout + res.stderr, res.stderr
    log.unlink()
    assert send(repo, bash_event("s1", "git status && git log -1", "t2"), env=env).returncode == 0
    assert not log.exists() or CONTEXT_QUERY[1] not in log.read_text()
