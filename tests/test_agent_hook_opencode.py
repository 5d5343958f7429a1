"""guards agent-hook opencode: the events of guards' opencode plugin (hooks/opencode-plugin.js)
as opencode 1.18.33 passes them (its tools bash, write, edit with ``filePath``; ``callID``;
a context shown only after the tool ran), and the plugin's install, uninstall and doctor."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from guards.commands.agent_hook import session_for
from guards.integrations import harness_settings
from guards.integrations.opencode_hooks import from_opencode
from guards.state.identity import harness_caller
from tests.helpers import (
    PROJECT_ROOT,
    disposable_python,
    git,
    make_repo,
    run_agent_hook,
    run_guards,
)
from tests.helpers import (
    doctor_findings as doctor,
)

ALICE = "alice"
SID = "ses_dcafcaf90ffezGqh5sp0wzzYtp"
ME = session_for("opencode", SID)
PLUGIN = ".opencode/plugins/guards.js"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "repo", {"README": "hello\n", "src/app.py": "print('hi')\n"})


def send(
    repo: Path, event: str, payload: dict[str, Any], env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    body = {"event": event, "sessionID": SID, "directory": str(repo), **payload}
    return run_agent_hook("opencode", repo, json.dumps(body).encode(), env)


def bash(command: str, call: str = "toolu_0002", **extra: str) -> dict[str, Any]:
    return {"tool": "bash", "callID": call, "args": {"command": command, **extra}}


def silent(res: subprocess.CompletedProcess[str]) -> None:
    assert (res.returncode, res.stdout) == (0, ""), res.stderr


def context(res: subprocess.CompletedProcess[str]) -> str:
    assert res.returncode == 0, res.stderr
    return str(json.loads(res.stdout)["hookSpecificOutput"]["additionalContext"])


def alice_dirty(repo: Path) -> None:
    (repo / "src/app.py").write_text("print('alice')\n")
    res = run_guards("record", "--session", ALICE, "src/app.py", cwd=repo)
    assert res.returncode == 0, res.stderr


def owners(repo: Path) -> dict[str, str | None]:
    res = run_guards("status", "--json", cwd=repo)
    return {p["path"]: p.get("owner") for p in json.loads(res.stdout)["paths"]}


def rescue_refs(repo: Path) -> list[str]:
    return git(repo, "for-each-ref", "--format=%(refname)", "refs/rescue").split()


def test_the_payload_reads_as_claudes() -> None:
    event = from_opencode(
        {
            "event": "tool.execute.before",
            "tool": "edit",
            "sessionID": SID,
            "callID": "toolu_1",
            "args": {"filePath": "/r/a.py", "oldString": "a", "newString": "b"},
            "directory": "/r",
        }
    )
    assert event["hook_event_name"] == "PreToolUse" and event["tool_name"] == "Edit"
    assert event["tool_input"]["file_path"] == "/r/a.py" and event["tool_use_id"] == "toolu_1"
    assert (event["session_id"], event["cwd"]) == (SID, "/r")
    where = from_opencode(
        {
            "event": "tool.execute.after",
            "tool": "bash",
            "directory": "/r",
            "args": {"command": "ls", "workdir": "sub"},
        }
    )
    assert (where["hook_event_name"], where["tool_name"], where["cwd"]) == (
        "PostToolUse",
        "Bash",
        "/r/sub",
    )
    patch = from_opencode(
        {
            "event": "tool.execute.before",
            "tool": "apply_patch",
            "args": {"patchText": "*** Begin Patch"},
        }
    )
    assert patch["tool_input"]["input"] == "*** Begin Patch"
    assert from_opencode({"event": "session.idle"})["hook_event_name"] == "Stop"
    assert from_opencode({"event": "session.end"})["hook_event_name"] == "SessionEnd"


def test_the_rescue_comes_before_the_command_and_the_notice_with_its_end(repo: Path) -> None:
    alice_dirty(repo)
    silent(send(repo, "tool.execute.before", bash("git reset --hard")))
    [ref] = rescue_refs(repo)
    assert ref.startswith(f"refs/rescue/{ALICE}/")
    assert git(repo, "show", f"{ref}:src/app.py") == "print('alice')\n"
    git(repo, "reset", "--hard")
    after = {**bash("git reset --hard"), "metadata": {"exit": 0}}
    said = context(send(repo, "tool.execute.after", after))
    assert "guards: rescued 1 path of session alice" in said and ref in said


def test_under_policy_block_the_call_is_denied_with_the_reason_on_stderr(repo: Path) -> None:
    alice_dirty(repo)
    res = send(repo, "tool.execute.before", bash("git reset --hard"), {"GUARDS_POLICY": "block"})
    assert res.returncode == 2 and res.stdout == ""
    assert "policy is block" in res.stderr and ALICE in res.stderr
    assert rescue_refs(repo) == []


def test_a_line_with_a_workdir_is_guarded_there(repo: Path, tmp_path: Path) -> None:
    other = make_repo(tmp_path / "other", {"f.txt": "one\n"})
    (other / "f.txt").write_text("someone's\n")
    silent(send(repo, "tool.execute.before", bash("git checkout -- .", workdir=str(other))))
    [ref] = rescue_refs(other)
    assert git(other, "show", f"{ref}:f.txt") == "someone's\n"
    assert rescue_refs(repo) == []


def test_write_edit_and_shell_lines_are_the_sessions(repo: Path) -> None:
    for tool, name, call in (("write", "new.txt", "toolu_w"), ("edit", "README", "toolu_e")):
        args = {"filePath": str(repo / name)}
        silent(send(repo, "tool.execute.before", {"tool": tool, "callID": call, "args": args}))
        (repo / name).write_text(f"{tool}\n")
        after = {"tool": tool, "callID": call, "args": args, "metadata": {}}
        silent(send(repo, "tool.execute.after", after))
    silent(send(repo, "tool.execute.before", bash("echo x > made.txt", "toolu_b")))
    (repo / "made.txt").write_text("x\n")
    silent(send(repo, "tool.execute.after", {**bash("echo x", "toolu_b"), "metadata": {"exit": 3}}))
    assert owners(repo) == {"README": ME, "new.txt": ME, "made.txt": ME}


def test_a_prompt_gets_the_frame_and_the_session_ends(repo: Path) -> None:
    alice_dirty(repo)
    frame = context(send(repo, "chat.message", {"prompt": "go"}))
    assert "[Workspace:" in frame and "src/app.py" in frame
    silent(send(repo, "session.idle", {}))
    silent(send(repo, "session.end", {}))
    res = run_guards("session", "list", "--json", cwd=repo)
    listed = {s["id"]: s for s in json.loads(res.stdout)["sessions"]}
    assert listed[ME]["liveness"] == "ended"


def test_unreadable_input_that_could_run_git_is_refused(repo: Path) -> None:
    res = run_agent_hook("opencode", repo, b'{"event": "tool.execute.before", "args": "git')
    assert res.returncode == 2 and "refusing" in res.stderr


def test_shell_commands_are_the_session_by_the_plugins_variable() -> None:
    assert harness_caller({"OPENCODE_SESSION_ID": SID}) == ME


def test_install_writes_our_plugin_and_uninstall_removes_only_ours(repo: Path) -> None:
    res = run_guards("install", "--opencode", "--no-aliases", cwd=repo)
    assert res.returncode == 0, res.stderr
    text = (repo / PLUGIN).read_text()
    assert text.startswith("// guards-opencode-plugin")
    assert json.dumps(harness_settings.hook_script("opencode")) in text
    again = run_guards("install", "--opencode", "--no-aliases", cwd=repo)
    assert "already set up" in again.stdout
    res = run_guards("uninstall", "--opencode", cwd=repo)
    assert res.returncode == 0 and not (repo / PLUGIN).exists()
    (repo / PLUGIN).parent.mkdir(parents=True, exist_ok=True)
    (repo / PLUGIN).write_text("export const Mine = async () => ({})\n")
    res = run_guards("install", "--opencode", "--no-aliases", cwd=repo)
    assert res.returncode != 0 and "not guards' opencode plugin" in res.stderr
    run_guards("uninstall", "--opencode", cwd=repo)
    assert (repo / PLUGIN).read_text() == "export const Mine = async () => ({})\n"


def test_the_user_plugin_lives_in_the_config_dir(repo: Path, hermetic_seal: Path) -> None:
    res = run_guards("install", "--opencode", "--user", "--no-aliases", cwd=repo)
    assert res.returncode == 0, res.stderr
    [written] = [line.split()[-1] for line in res.stdout.splitlines() if "plugin" in line]
    assert written.endswith("/opencode/plugins/guards.js") and Path(written).is_file()
    assert not (repo / PLUGIN).exists()


def test_doctor_reports_a_missing_plugin_and_one_whose_guards_is_gone(
    repo: Path, tmp_path: Path
) -> None:
    res = run_guards("install", "--opencode", "--no-aliases", cwd=repo)
    assert res.returncode == 0, res.stderr
    assert "opencode-plugin-missing" not in doctor(repo)
    (repo / PLUGIN).unlink()
    [missing] = doctor(repo)["opencode-plugin-missing"]
    assert missing["level"] == "problem" and "guards install --opencode" in str(missing["fix"])
    python = disposable_python(tmp_path / "venv")
    done = subprocess.run(
        [str(python), "-m", "guards", "install", "--opencode", "--no-aliases"],
        cwd=repo,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    python.unlink()
    runners = [f for f in doctor(repo).get("harness-runner", []) if "opencode" in str(f)]
    assert runners and "guards" in str(runners[0]["message"])


SESSION_IDS = [
    SID,
    "ses with spaces",
    "a- b",  # a "-" then a space: one "-", as session_for makes it
    "--edge--",
    "ünïcödé-id",
    "tab\tand\nnewline",
    "",
    "x" * 119,  # "opencode-" + 119 = 128: the longest id kept as it is
]


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not on PATH")
def test_the_plugin_names_a_session_as_guards_does(tmp_path: Path) -> None:
    """The plugin puts GUARDS_SESSION into every shell command itself: its rule must be
    session_for's, or the session's own edits would be another session's to guards."""
    source = (PROJECT_ROOT / "hooks/opencode-plugin.js").read_text()
    start = source.index("function guardsSession(")
    body = source[start : source.index("\n}\n", start) + 3]
    script = tmp_path / "names.js"
    script.write_text(
        body + "const ids = JSON.parse(process.argv[2]);\n"
        "console.log(JSON.stringify(ids.map(guardsSession)));\n"
    )
    res = subprocess.run(
        ["node", str(script), json.dumps(SESSION_IDS)], capture_output=True, text=True, check=True
    )
    assert json.loads(res.stdout) == [session_for("opencode", i) for i in SESSION_IDS]
