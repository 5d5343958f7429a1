"""The shell gate: the installed tool-start command answers a plain shell line without
Python (guards.integrations.shell_gate), and hands every other event to Python untouched.

Each test runs the command exactly as install writes it, as the harness runs it (``sh
-c`` of the entry's command, the event on stdin)."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from guards.commands.agent_hook import session_for
from guards.integrations import harness_settings, shell_gate
from guards.predict.shell_files import could_destroy_files
from tests.helpers import git, make_repo, run_guards

BOB = session_for("claude", "bob")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    path = make_repo(tmp_path / "repo", {"README": "hello\n", "src/app.py": "print('hi')\n"})
    (path / ".git/guards/observe").mkdir(parents=True)  # as the first line's hook leaves it
    return path


def compact(event: dict[str, Any]) -> bytes:
    """As Node's JSON.stringify and serde_json send it: no blanks between tokens."""
    return json.dumps(event, separators=(",", ":")).encode()


def shell_event(
    repo: Path | str, command: str, harness: str = "claude", **more: Any
) -> dict[str, Any]:
    event, tool = shell_gate.GATED[harness]
    doc: dict[str, Any] = {
        "session_id": "bob",
        "transcript_path": "/nowhere/t.jsonl",
        "cwd": str(repo),
        "hook_event_name": event,
        "tool_name": tool,
        "tool_input": {"command": command, **more},
    }
    if harness in ("claude", "codex", "qwen"):
        doc["tool_use_id"] = "toolu_1"
    return doc


def run_installed(
    repo: Path | str,
    body: bytes,
    harness: str = "claude",
    event: str = "PreToolUse",
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    command = harness_settings.installed_hook(harness, event)["command"]
    return subprocess.run(
        command,
        shell=True,
        cwd=repo,
        input=body.decode(),
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=60,
        check=False,
    )


def harness_gap() -> None:
    """The real harnesses start the line 12-29 ms after the hook answered (measured with
    the e2e suite's CLIs): a file the line writes within the marker's own clock tick
    (4 ms at HZ=250) would stay unknown (guards.integrations.shell_gate)."""
    time.sleep(0.012)


def markers(repo: Path) -> list[str]:
    return sorted(p.name for p in (repo / ".git/guards/observe").iterdir())


def gated(repo: Path) -> list[str]:
    return [m for m in markers(repo) if m.startswith(shell_gate.PENDING_PREFIX)]


def owners(repo: Path) -> dict[str, str]:
    res = run_guards("status", "--json", cwd=repo)
    assert res.returncode in (0, 1), res.stderr
    return {p["path"]: p.get("owner") for p in json.loads(res.stdout)["paths"]}


def test_a_plain_line_is_answered_by_the_shell_and_its_files_attributed_at_its_end(
    repo: Path,
) -> None:
    body = compact(shell_event(repo, "touch made.txt && sed -i s/hi/bye/ src/app.py"))
    res = run_installed(repo, body)
    assert (res.returncode, res.stdout, res.stderr) == (0, "", "")
    [marker] = gated(repo)
    assert (repo / ".git/guards/observe" / marker).read_bytes() == body  # the event, raw
    harness_gap()
    subprocess.run(["sh", "-c", "touch made.txt && sed -i s/hi/bye/ src/app.py"], cwd=repo)
    post = {**json.loads(body), "hook_event_name": "PostToolUse", "tool_response": {}}
    res = run_installed(repo, compact(post), event="PostToolUse")
    assert (res.returncode, res.stdout) == (0, ""), res.stderr
    assert owners(repo) == {"made.txt": BOB, "src/app.py": BOB}
    assert markers(repo) == []  # the line's end took the shell's marker


def test_the_line_s_end_takes_only_its_own_start(repo: Path) -> None:
    """Another session's, and another tool call's, markers stay for their own ends."""
    mine = shell_event(repo, "touch mine.txt")
    theirs = {**shell_event(repo, "touch theirs.txt"), "session_id": "carol"}
    later = {**shell_event(repo, "true"), "tool_use_id": "toolu_2"}
    for event in (theirs, later, mine):
        assert run_installed(repo, compact(event)).returncode == 0
    assert len(gated(repo)) == 3
    harness_gap()
    (repo / "mine.txt").write_text("")
    post = {**mine, "hook_event_name": "PostToolUseFailure", "error": "Exit code 1"}
    assert run_installed(repo, compact(post), event="PostToolUseFailure").returncode == 0
    assert owners(repo) == {"mine.txt": BOB}
    left = [json.loads((repo / ".git/guards/observe" / m).read_text()) for m in gated(repo)]
    assert sorted(e["session_id"] + e["tool_use_id"] for e in left) == [
        "bobtoolu_2",
        "caroltoolu_1",
    ]


@pytest.mark.parametrize(
    "line",
    [
        "ls -la",
        "npm test -- --watch=false",
        "pytest -q tests/test_x.py",
        "cat a | sort | uniq -c",
        "echo 'rmdir is not rm'",
        "make rm-cache",
        "rmx; terminal",
        "git status",
        "GIT_DIR=x ls",
        "ls .GIT",
        "echo x > f",
        "echo x >> f",
        "rm -f f",
        "/bin/rm f",
        "ls;rm f",
        "x=$(unlink f)",
        "a&&mv a b",
        "{cp,x} a b",
        "ls|tee f",
        "find . -delete",
        "a=rm; $a f",
        "`truncate -s0 f`",
        "(shred f)",
        "echo a\tunlink f",
    ],
)
def test_the_shell_steps_aside_for_every_line_python_would_look_at(repo: Path, line: str) -> None:
    """The gate answers a line only when the hook's own cheap test finds no git and
    nothing that destroys files (and no ``>`` at all): never a line Python would guard."""
    res = run_installed(repo, compact(shell_event(repo, line)))
    assert res.returncode == 0, res.stderr
    looked_at = "git" in line.lower() or could_destroy_files(line) or ">" in line
    by_shell = bool(gated(repo))
    tab_or_quote = "\t" in line  # an escaped character in the JSON: Python reads it
    assert by_shell == (not looked_at and not tab_or_quote), (line, markers(repo))
    if not by_shell:
        assert markers(repo) == [f"{BOB}.toolu_1.json"]  # Python's own start marker


def alice_dirty(repo: Path) -> None:
    (repo / "README").write_text("alice's work\n")
    assert run_guards("record", "--session", "alice", "README", cwd=repo).returncode == 0


def test_a_destructive_line_reaches_python_with_its_event_intact(repo: Path) -> None:
    alice_dirty(repo)
    res = run_installed(repo, compact(shell_event(repo, "git reset --hard")))
    assert res.returncode == 0, res.stderr
    context = json.loads(res.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "rescued 1 path of session alice" in context
    assert gated(repo) == []


@pytest.mark.parametrize(
    "why",
    [
        "spaced JSON",
        "a quote in the command",
        "no session",
        "blank session",
        "disabled",
        "a command list before a command string",
        "a long event",
    ],
)
def test_events_the_shell_cannot_be_sure_of_go_to_python(repo: Path, why: str) -> None:
    event = shell_event(repo, "touch made.txt")
    body, env = compact(event), None
    if why == "spaced JSON":
        body = json.dumps(event).encode()
    elif why == "a quote in the command":
        body = compact(shell_event(repo, 'touch "made.txt"'))
    elif why == "no session":
        body = compact({k: v for k, v in event.items() if k != "session_id"})
    elif why == "blank session":
        body = compact({**event, "session_id": " "})
    elif why == "a long event":  # dash's prefix matching is quadratic: 1 MB took 3 min
        body = compact(shell_event(repo, "touch " + "x" * shell_gate.MAX_EVENT))
    elif why == "a command list before a command string":
        # Python reads tool_input's command (the list: git); the gate must not read "ls".
        listed = {**event, "tool_input": {"command": ["git", "status"]}, "x": {"command": "ls"}}
        body = compact(listed)
    else:
        env = {"GUARDS_DISABLE": "1"}
    res = run_installed(repo, body, env=env)
    assert (res.returncode, res.stdout) == (0, ""), res.stderr
    python_marks = (
        [] if why in ("no session", "blank session", "disabled") else [f"{BOB}.toolu_1.json"]
    )
    assert markers(repo) == python_marks


def test_a_linked_worktree_or_a_missing_observe_folder_goes_to_python(
    repo: Path, tmp_path: Path
) -> None:
    git(repo, "worktree", "add", "-q", str(tmp_path / "wt"))
    res = run_installed(tmp_path / "wt", compact(shell_event(tmp_path / "wt", "true")))
    assert res.returncode == 0, res.stderr
    assert markers(repo) == [f"{BOB}.toolu_1.json"]  # the common dir's, by Python
    fresh = make_repo(tmp_path / "fresh")
    assert run_installed(fresh, compact(shell_event(fresh, "true"))).returncode == 0
    assert markers(fresh) == [f"{BOB}.toolu_1.json"]  # Python made the folder


def test_a_line_outside_any_repository_is_exit_0_and_leaves_nothing(tmp_path: Path) -> None:
    outside = tmp_path / "plain"
    outside.mkdir()
    res = run_installed(outside, compact(shell_event(outside, "ls")))
    assert (res.returncode, res.stdout, res.stderr) == (0, "", "")
    assert list(outside.iterdir()) == []


@pytest.mark.parametrize("where", ["sub/../README", "./src", "src//x"])
def test_a_cwd_with_dot_parts_is_walked_by_python(repo: Path, where: str) -> None:
    """The shell walks up the text of the path; Python's abspath first folds . and ..."""
    res = run_installed(repo, compact(shell_event(f"{repo}/{where}", "true")))
    assert res.returncode == 0, res.stderr
    assert gated(repo) == []


GEM = session_for("gemini", "bob")


def test_gemini_lines_queue_by_command_and_the_oldest_start_is_taken(repo: Path) -> None:
    pre = shell_event(repo, "touch made.txt", harness="gemini", description="x")
    for _ in range(2):
        assert run_installed(repo, compact(pre), "gemini", "BeforeTool").returncode == 0
    first, second = gated(repo)
    folder = repo / ".git/guards/observe"
    older = min((first, second), key=lambda m: (folder / m).stat().st_ctime_ns)
    harness_gap()
    (repo / "made.txt").write_text("")
    post = {**pre, "hook_event_name": "AfterTool", "tool_response": {}}
    res = run_installed(repo, compact(post), "gemini", "AfterTool")
    assert (res.returncode, res.stdout) == (0, ""), res.stderr
    assert owners(repo) == {"made.txt": GEM}
    assert gated(repo) == sorted({first, second} - {older})


def test_gemini_s_dir_path_moves_the_line_and_python_reads_it(repo: Path) -> None:
    pre = shell_event(repo, "touch made.txt", harness="gemini", dir_path="src")
    assert run_installed(repo, compact(pre), "gemini", "BeforeTool").returncode == 0
    assert gated(repo) == [] and len(markers(repo)) == 1


@pytest.mark.parametrize("harness", ["codex", "qwen", "droid"])
def test_every_gated_harness_s_plain_line_is_attributed(repo: Path, harness: str) -> None:
    pre = shell_event(repo, "touch made.txt", harness=harness)
    event = pre["hook_event_name"]
    assert run_installed(repo, compact(pre), harness, event).returncode == 0
    assert len(gated(repo)) == 1
    harness_gap()
    (repo / "made.txt").write_text("")
    post = {**pre, "hook_event_name": "PostToolUse", "tool_response": {}}
    res = run_installed(repo, compact(post), harness, "PostToolUse")
    assert res.returncode == 0, res.stderr
    assert owners(repo) == {"made.txt": session_for(harness, "bob")}
    assert markers(repo) == []


def test_only_the_tool_start_events_of_gated_harnesses_carry_the_gate() -> None:
    for harness, events in harness_settings.EVENTS.items():
        for event in events:
            command = harness_settings.installed_hook(harness, event)["command"]
            assert ("_guards_gate" in command) == shell_gate.gated(harness, event), (
                harness,
                event,
            )
            assert harness_settings.is_ours({"command": command})


#: The events the real CLIs sent for ``touch made.txt`` (the e2e suite's tour, 2026-12-04:
#: Claude Code 2.1.332, Codex 0.171.0, Gemini CLI 0.61.0, Qwen Code 0.24.4), with the
#: repository's path as ``@REPO@``: the gate must read each as plain.
REAL_EVENTS = {
    "claude": '{"session_id":"79b34de1-c572-41be-ae5b-27fc106c1923","transcript_path":"/h/.claude'
    '/projects/-r/79b34de1.jsonl","cwd":"@REPO@","prompt_id":"e556b59b","permission_mode":'
    '"default","effort":{"level":"medium"},"hook_event_name":"PreToolUse","tool_name":"Bash",'
    '"tool_input":{"command":"touch made.txt","description":"run a command"},"tool_use_id":'
    '"toolu_0007"}',
    "codex": '{"session_id":"01a23f28-8b40-7bb2-a136-6b3137546a34","turn_id":"01a23f28-8b66",'
    '"transcript_path":"/h/.codex/sessions/rollout.jsonl","cwd":"@REPO@","hook_event_name":'
    '"PreToolUse","model":"gpt-5.5","permission_mode":"bypassPermissions","tool_name":"Bash",'
    '"tool_input":{"command":"touch made.txt"},"tool_use_id":"call_0007"}',
    "gemini": '{"session_id":"c5637645-103f-45ea-99c2-7c36ed295163","transcript_path":"/h/.gemini'
    '/tmp/repo/chats/session.jsonl","cwd":"@REPO@","hook_event_name":"BeforeTool","timestamp":'
    '"2026-12-04T03:45:54.537Z","tool_name":"run_shell_command","tool_input":{"command":'
    '"touch made.txt","description":"run a command"}}',
    "qwen": '{"session_id":"71a6ba2c-b254-4d3b-bd57-1299a0471409","transcript_path":"/h/.qwen/'
    'projects/-r/chats/71a6ba2c.jsonl","cwd":"@REPO@","hook_event_name":"PreToolUse",'
    '"timestamp":"2026-12-04T03:45:55.005Z","permission_mode":"yolo","prompt_id":'
    '"71a6ba2c-b254-4d3b-bd57-1299a0471409########0","tool_name":"run_shell_command",'
    '"tool_input":{"command":"touch made.txt","description":"run a command"},"tool_use_id":'
    '"toolu_1796355955005_4f109m6wx","tool_call_id":"toolu_0007"}',
}


@pytest.mark.parametrize("harness", sorted(REAL_EVENTS))
def test_the_events_the_real_clis_send_are_answered_by_the_shell(repo: Path, harness: str) -> None:
    body = REAL_EVENTS[harness].replace("@REPO@", str(repo)).encode()
    res = run_installed(repo, body, harness, shell_gate.GATED[harness][0])
    assert (res.returncode, res.stdout, res.stderr) == (0, "", "")
    assert len(gated(repo)) == 1


def test_a_session_s_start_makes_the_folder_the_gate_needs(tmp_path: Path) -> None:
    fresh = make_repo(tmp_path / "fresh")
    start = {"session_id": "bob", "cwd": str(fresh), "hook_event_name": "SessionStart"}
    res = run_installed(fresh, compact(start), event="SessionStart")
    assert res.returncode == 0, res.stderr
    assert run_installed(fresh, compact(shell_event(fresh, "ls"))).returncode == 0
    assert len(gated(fresh)) == 1  # the session's first line already needs no Python


def test_without_cat_on_path_the_event_still_reaches_python(repo: Path, tmp_path: Path) -> None:
    """The gate reads the event with cat; where the harness's PATH has no cat, the event
    is still on stdin and the hook's Python reads it as before the gate existed."""
    only_sh = tmp_path / "bin"
    only_sh.mkdir()
    (only_sh / "sh").symlink_to("/bin/sh")
    res = run_installed(repo, compact(shell_event(repo, "ls")), env={"PATH": str(only_sh)})
    assert (res.returncode, res.stdout) == (0, ""), res.stderr
    assert markers(repo) == [f"{BOB}.toolu_1.json"]  # Python's own
