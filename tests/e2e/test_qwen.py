"""Qwen Code, the real CLI from npm, with guards' hooks installed by `guards install
--qwen` (.qwen/settings.json), driven headless (`qwen -p --approval-mode yolo
--auth-type anthropic`) against the scripted fake model (tests/e2e/model_server.py; Qwen
speaks the Anthropic wire format with its own tools: run_shell_command, write_file,
edit).

Qwen sends Claude's payloads, but shows the model no PreToolUse context: the rescue
notice rides on the command's PostToolUse (or PostToolUseFailure), appended to the tool
result. It sends UserPromptSubmit again after every tool round with an empty prompt (the
frame comes only with a prompt's text), and its shell commands carry
QWEN_CODE_SESSION_ID."""

from __future__ import annotations

import json
import shlex
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from guards.commands.agent_hook import session_for
from tests.e2e.clis import Cli, Run, cli_env, run_qwen, run_qwen_acp
from tests.e2e.model_server import (
    ANTHROPIC,
    QWEN,
    ModelServer,
    Request,
    Step,
    read,
    say,
    shell,
    tool_names,
)
from tests.e2e.model_server import edit as edit_file
from tests.e2e.model_server import write as write_file
from tests.e2e.scenario import (
    ALICE,
    ALICE_WORK,
    FILES,
    IN_SUB_WORK,
    INTERACTIVE,
    RESCUED,
    THROUGH_THE_SHIM,
    TOUR_PATHS,
    Tour,
    attributed_after_the_tour,
    attribution_tour,
    check_hook_and_shim,
    check_in_sub,
    check_interactive,
    check_write_over_alice,
    in_sub,
    observe_markers,
    owners,
    project,
    rescue_refs,
    sessions,
    show,
    write_work,
)
from tests.e2e.terminal import Terminal
from tests.helpers import git, make_repo, run_guards

Model = Callable[..., ModelServer]
FRAME = "[Workspace:"
#: Where Qwen puts a UserPromptSubmit context in the request.
PROMPT_CONTEXT = "<qwen:user-prompt-submit-context>"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return project(tmp_path / "repo", "--qwen", "--no-aliases")


def qwen_env(server: ModelServer, env: dict[str, str] | None = None) -> dict[str, str]:
    return {
        "ANTHROPIC_BASE_URL": server.url,
        "ANTHROPIC_API_KEY": "x",
        "QWEN_CODE_SUPPRESS_YOLO_WARNING": "1",
        **(env or {}),
    }


def qwen_run(
    qwen: Cli,
    repo: Path,
    server: ModelServer,
    prompts: tuple[str, ...] = ("go",),
    env: dict[str, str] | None = None,
    shim: Path | None = None,
) -> Run:
    """Headless prompts (a later one resumes the session); with ``shim``, `guards install
    --shim DIR` first and DIR first on the CLI's PATH."""
    assert qwen.path is not None
    if shim is not None:
        res = run_guards("install", "--shim", str(shim), "--no-aliases", cwd=repo)
        assert res.returncode == 0, res.stderr
    first = [*([shim] if shim is not None else []), *qwen.path_first]
    full_env = cli_env(qwen_env(server, env), path_first=first)
    run = run_qwen(qwen.path, repo, list(prompts), full_env)
    assert run.returncode == 0, f"qwen exited {run.returncode}: {run.stderr[-2000:]}"
    return run


def me(run: Run) -> str:
    return session_for("qwen", run.session_id)


def test_the_hooks_rescue_alices_work_before_each_destructive_form_and_the_model_reads_it(
    qwen: Cli, model: Model, repo: Path
) -> None:
    tour = Tour(repo)
    server = model(tour.script(), tour.before_step(), flavour=QWEN)
    qwen_run(qwen, repo, server)
    tour.check(server)
    for step in range(1, len(tour.commands) + 1):
        [result] = [
            block
            for message in [server.at_step(step).body["messages"][-1]]
            for block in message["content"]
            if block.get("type") == "tool_result"
        ]
        assert RESCUED in json.dumps(result)  # appended to the command's own result
    assert observe_markers(repo) == []


def test_with_policy_block_the_hook_refuses_and_the_model_reads_why(
    qwen: Cli, model: Model, repo: Path
) -> None:
    write_work(repo, ALICE_WORK)
    server = model([[shell("git reset --hard")], say("done")], flavour=QWEN)
    qwen_run(qwen, repo, server, env={"GUARDS_POLICY": "block"})
    assert (repo / "src/app.py").read_text() == ALICE_WORK["src/app.py"]
    assert rescue_refs(repo) == []
    news = server.at_step(1).news()
    assert "policy is block" in news and ALICE in news
    assert "refused `git reset --hard`" in news


def test_write_file_edit_and_shell_commands_are_attributed_to_the_session(
    qwen: Cli, model: Model, repo: Path
) -> None:
    write_work(repo, {"README": "alice's readme\n"})
    script = attribution_tour("qwen", repo, read_first=True)
    server = model(script, flavour=QWEN)
    run = qwen_run(qwen, repo, server)
    assert (repo / "src/app.py").read_text() == "print('qwen')\n"
    expected = {"README": ALICE, **dict.fromkeys(TOUR_PATHS, me(run))}
    assert attributed_after_the_tour(repo) == expected


@pytest.mark.parametrize("tool", ["write_file", "edit"])
def test_a_write_over_alices_uncommitted_file_rescues_it_first_and_the_model_hears_of_it(
    qwen: Cli, model: Model, repo: Path, tool: str
) -> None:
    write_work(repo, {"README": "alice's readme\n"})
    target = str(repo / "README")
    change = (
        write_file(target, "qwen's readme\n")
        if tool == "write_file"
        else edit_file(target, "alice's readme", "qwen's readme")
    )
    # Qwen changes an existing file only once the session has read it
    server = model([[read(target)], [change], say("done")], flavour=QWEN)
    run = qwen_run(qwen, repo, server)
    check_write_over_alice(repo, server, 2, me(run), "qwen's readme\n")


def test_the_frame_arrives_once_per_prompt_and_shell_commands_run_as_the_session(
    qwen: Cli, model: Model, repo: Path
) -> None:
    """The frame comes with each prompt's text, not with the empty prompt Qwen sends after
    every tool round (nor at SessionStart, whose context Qwen would show as well); guards
    inside a shell command knows the session from QWEN_CODE_SESSION_ID."""
    write_work(repo, {"README": "alice's readme\n"})
    guards_status = f"{shlex.quote(sys.executable)} -m guards status --json > status.json"
    script: list[Step] = [[shell(guards_status)], say("done"), say("done again")]
    server = model(script, flavour=QWEN)
    run = qwen_run(qwen, repo, server, prompts=("go", "and again"))
    first, after_tool, second = server.at_step(0), server.at_step(1), server.at_step(2)
    assert first.text().count(FRAME) == 1
    assert "README" in first.text() and f"session {ALICE}" in first.text()
    # Qwen sent UserPromptSubmit again (empty) before this request: no second frame
    assert FRAME not in after_tool.news() and after_tool.text().count(FRAME) == 1
    assert second.news().count(FRAME) == 1 and PROMPT_CONTEXT in second.news()
    assert (repo / "status.json").exists(), after_tool.news()
    assert json.loads((repo / "status.json").read_text())["caller"] == me(run)
    assert owners(repo) == {"README": ALICE, "status.json": me(run)}
    assert sessions(repo)[me(run)]["liveness"] != "ended"  # headless: no SessionEnd


def test_hook_and_shim_rescue_the_same_work_once(
    qwen: Cli, model: Model, repo: Path, tmp_path: Path
) -> None:
    shim = tmp_path / "shim"
    write_work(repo, ALICE_WORK)
    server = model(THROUGH_THE_SHIM, flavour=QWEN)
    qwen_run(qwen, repo, server, shim=shim)
    check_hook_and_shim(repo, server, shim)


def test_the_session_ends_when_an_editor_ends_qwen_acp(qwen: Cli, model: Model, repo: Path) -> None:
    """`qwen -p` sends no SessionEnd; `qwen --acp` (as an editor runs it) does when it is
    ended: the session's own work is persisted and the session marked ended."""
    assert qwen.path is not None
    server = model([[shell("echo mine > mine.txt")], say("done")], flavour=QWEN)
    run = run_qwen_acp(
        qwen.path, repo, "go", cli_env(qwen_env(server), path_first=list(qwen.path_first))
    )
    assert (repo / "mine.txt").read_text() == "mine\n", run.stderr[-2000:]
    assert owners(repo) == {"mine.txt": me(run)}
    assert sessions(repo)[me(run)]["liveness"] == "ended", run.stderr[-2000:]
    assert show(repo, f"refs/wip/{me(run)}", "mine.txt") == "mine\n"


def test_with_folder_trust_on_install_names_the_step_and_the_hooks_run_only_once_trusted(
    qwen: Cli, model: Model, tmp_path: Path, hermetic_seal: Path
) -> None:
    """Qwen's folder trust (off by default) makes it ignore an untrusted project's
    .qwen/settings.json: `guards install --qwen` says so with the step, and the step
    works."""
    settings = hermetic_seal / ".qwen/settings.json"
    settings.parent.mkdir(parents=True, exist_ok=True)
    settings.write_text(json.dumps({"security": {"folderTrust": {"enabled": True}}}))
    repo = make_repo(tmp_path / "repo", FILES)
    res = run_guards("install", "--qwen", "--no-aliases", cwd=repo)
    trusted = hermetic_seal / ".qwen/trustedFolders.json"
    assert f'"{repo}": "TRUST_FOLDER" to {trusted}' in res.stderr
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "guards hooks")
    write_work(repo, ALICE_WORK)
    untrusted = model([say("done")], flavour=QWEN)
    qwen_run(qwen, repo, untrusted)
    # untrusted, Qwen 0.24.4 ran without our hooks, and without shell or write tools
    assert sessions(repo).keys() == {ALICE}
    # (no shell tool offered: the server takes each request for a side call)
    [offered] = [o for r in untrusted.requests if (o := tool_names(ANTHROPIC, r.body))][:1]
    assert "read_file" in offered and not offered & {"run_shell_command", "write_file", "edit"}
    trusted.write_text(json.dumps({str(repo): "TRUST_FOLDER"}))
    assert "trust" not in run_guards("install", "--qwen", cwd=repo).stderr.lower()
    server = model([[shell("git reset --hard")], say("done")], flavour=QWEN)
    qwen_run(qwen, repo, server)
    [ref] = rescue_refs(repo)
    assert show(repo, ref, "src/app.py") == ALICE_WORK["src/app.py"]
    assert RESCUED in server.at_step(1).news()


def test_a_command_run_in_another_directory_is_guarded_there(
    qwen: Cli, model: Model, repo: Path
) -> None:
    """``directory`` of run_shell_command: `git checkout -- .` in sub/ destroys (and so
    rescues) alice's work in sub/ only."""
    write_work(repo, IN_SUB_WORK)
    server = model(in_sub(repo), flavour=QWEN)
    qwen_run(qwen, repo, server)
    check_in_sub(repo, server)


#: How the interactive UI's own requests (0.24.4) start their last message.
UI_CALLS = ("[SUGGESTION MODE", "Managed memory")


def asks(request: Request) -> str:
    """The first text of the request's last message."""
    content = request.body["messages"][-1]["content"]
    first = content[0] if isinstance(content, list) and content else content
    return str(first.get("text", "") if isinstance(first, dict) else first)


def test_the_interactive_ui_frames_each_prompt_once_and_its_session_is_guarded(
    qwen: Cli, model: Model, repo: Path
) -> None:
    """`qwen --approval-mode yolo … -i PROMPT` on a terminal, a later prompt typed: the
    frame once with each prompt; a shell command's file is the session's; quitting
    (Ctrl+C twice) ends the session."""
    write_work(repo, {"README": "alice's readme\n"})
    server = model(INTERACTIVE, flavour=QWEN)
    env = cli_env(qwen_env(server), path_first=list(qwen.path_first))
    assert qwen.path is not None
    args = [str(qwen.path), "--approval-mode", "yolo", "--auth-type", "anthropic"]
    args += ["--model", "claude-sonnet-4-5", "-i", "go"]
    with Terminal(args, repo, env) as ui:
        ui.wait_for("first turn over")
        ui.settle()
        ui.type("and now")
        ui.wait_for("second over")
        ui.settle()
        assert ui.quit() == 0
    # The UI's own calls offer the tools too: a suggestion of what to type next, memory.
    # The UI's own calls offer the tools too: a suggestion of what to type next, memory.
    loop = [r for r in server.main_requests if not asks(r).startswith(UI_CALLS)]
    check_interactive(repo, loop, "qwen")
