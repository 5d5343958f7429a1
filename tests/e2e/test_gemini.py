"""Gemini CLI, the real CLI from npm, with guards' hooks installed by `guards install
--gemini`, driven headless (`gemini -p --approval-mode yolo`) against the scripted fake
model (tests/e2e/model_server.py).

Gemini's payloads carry no tool_use_id (a shell line's start marker is keyed by the
command), its BeforeTool shows the model no context (the rescue is told at AfterTool,
inside <hook_context>), and its shell commands carry no session id (they stay
unidentified; the hook itself acts as the session)."""

from __future__ import annotations

import json
import shlex
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from guards.commands.agent_hook import session_for
from tests.e2e.clis import Cli, Run, cli_env, run_gemini
from tests.e2e.model_server import ModelServer, Step, say, shell
from tests.e2e.model_server import edit as edit_file
from tests.e2e.model_server import write as write_file
from tests.e2e.scenario import (
    ALICE,
    ALICE_WORK,
    FILES,
    IN_SUB_WORK,
    INTERACTIVE,
    THROUGH_THE_SHIM,
    TOUR_PATHS,
    attributed_after_the_tour,
    attribution_tour,
    check_hook_and_shim,
    check_in_sub,
    check_interactive,
    check_prompt_status_from_the_shell,
    check_write_over_alice,
    counted_project,
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
from tests.helpers import doctor_findings, git, run_guards

Model = Callable[[list[Step]], ModelServer]
RESCUED = "guards: rescued"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return project(tmp_path / "repo", "--gemini", "--no-aliases")


def gemini_env(
    gemini: Cli,
    server: ModelServer,
    home: Path,
    env: dict[str, str] | None = None,
    path_first: list[Path] | None = None,
) -> dict[str, str]:
    """The API key way in (settings.json), the fake model's URL, the workspace trusted."""
    settings = home / ".gemini/settings.json"
    settings.parent.mkdir(parents=True, exist_ok=True)
    settings.write_text(json.dumps({"security": {"auth": {"selectedType": "gemini-api-key"}}}))
    return cli_env(
        {
            "GOOGLE_GEMINI_BASE_URL": server.url,
            "GEMINI_API_KEY": "x",
            "GEMINI_CLI_TRUST_WORKSPACE": "true",
            **(env or {}),
        },
        path_first=[*(path_first or []), *gemini.path_first],
    )


def gemini_run(
    gemini: Cli,
    repo: Path,
    server: ModelServer,
    home: Path,
    env: dict[str, str] | None = None,
    path_first: list[Path] | None = None,
) -> Run:
    assert gemini.path is not None
    run = run_gemini(gemini.path, repo, "go", gemini_env(gemini, server, home, env, path_first))
    assert run.returncode == 0, f"gemini exited {run.returncode}: {run.stderr[-2000:]}"
    return run


def me(run: Run) -> str:
    return session_for("gemini", run.session_id)


def test_install_writes_project_hooks_with_millisecond_timeouts(repo: Path) -> None:
    doc = json.loads((repo / ".gemini/settings.json").read_text())
    assert set(doc["hooks"]) == {
        "BeforeTool",
        "AfterTool",
        "SessionStart",
        "BeforeAgent",
        "AfterAgent",
        "SessionEnd",
    }
    [group] = doc["hooks"]["BeforeTool"]
    assert group["matcher"] == "^(run_shell_command|write_file|replace)$"
    assert group["hooks"][0]["timeout"] == 60000


def test_hooks_migrated_from_claude_time_out_doctor_says_so_and_install_mends_them(
    gemini: Cli, model: Model, repo: Path, hermetic_seal: Path
) -> None:
    """`gemini hooks migrate --from-claude` copies Claude's `timeout: 60` (seconds) as
    60 ms. Gemini 0.61 then gives up on the guard ("Hook timed out after 60ms") and runs
    the command without waiting for it: the guard's rescue races the command. Doctor
    calls that a problem; `guards install --gemini` puts the timeouts back."""
    settings = repo / ".gemini/settings.json"
    doc = json.loads(settings.read_text())
    for groups in doc["hooks"].values():
        for group in groups:
            for hook in group["hooks"]:
                hook["timeout"] = 60
    settings.write_text(json.dumps(doc))
    git(repo, "commit", "-qam", "hooks migrated")
    found = doctor_findings(repo).get("harness-timeouts", [])
    assert [f["level"] for f in found] == ["problem"] and "60 ms" in str(found[0]["message"])
    write_work(repo, ALICE_WORK)
    server = model([[shell("git reset --hard")], say("done")])
    run = gemini_run(gemini, repo, server, hermetic_seal)
    assert "Hook timed out after 60ms" in run.stderr
    assert (repo / "src/app.py").read_text() == FILES["src/app.py"]  # it ran regardless
    assert run_guards("install", "--gemini", "--no-aliases", cwd=repo).returncode == 0
    assert "harness-timeouts" not in doctor_findings(repo)
    git(repo, "commit", "-qam", "hooks mended")
    for ref in rescue_refs(repo):
        git(repo, "update-ref", "-d", ref)
    write_work(repo, ALICE_WORK)
    server = model([[shell("git reset --hard")], say("done")])
    run = gemini_run(gemini, repo, server, hermetic_seal)
    assert "timed out" not in run.stderr
    [ref] = rescue_refs(repo)
    assert show(repo, ref, "src/app.py") == ALICE_WORK["src/app.py"]
    assert RESCUED in server.at_step(1).news()


DESTRUCTIVE = {
    "git reset --hard": (["src/app.py"], {"src/app.py": FILES["src/app.py"]}),
    "git checkout -- .": (["src/app.py"], {"src/app.py": FILES["src/app.py"]}),
    "git clean -fd": (["src/alice_new.py"], {"src/alice_new.py": None}),
    "git stash -u": (
        ["src/alice_new.py", "src/app.py"],
        {"src/app.py": FILES["src/app.py"], "src/alice_new.py": None},
    ),
}


@pytest.mark.parametrize("command", list(DESTRUCTIVE))
def test_the_hook_rescues_alices_work_before_a_gemini_shell_command_and_the_model_reads_it(
    gemini: Cli, model: Model, repo: Path, hermetic_seal: Path, command: str
) -> None:
    write_work(repo, ALICE_WORK)
    server = model([[shell(command)], say("done")])
    gemini_run(gemini, repo, server, hermetic_seal)
    destroyed, after = DESTRUCTIVE[command]
    for path, content in after.items():
        assert (repo / path).read_text() == content if content else not (repo / path).exists()
    [ref] = rescue_refs(repo)
    assert ref.startswith(f"refs/rescue/{ALICE}/")
    for path in destroyed:
        assert show(repo, ref, path) == ALICE_WORK[path]
    news = server.at_step(1).news()
    assert "<hook_context>" in news
    assert news.count(RESCUED) == 1 and ref in news
    if command == "git stash -u":
        assert git(repo, "stash", "list") != ""
    assert observe_markers(repo) == []


def test_hook_and_shim_rescue_the_same_work_once(
    gemini: Cli, model: Model, repo: Path, hermetic_seal: Path, tmp_path: Path
) -> None:
    """The shim inside the line finds the hook's receipt and keeps no second copy of
    the work (one ref, one notice): as the session, known by the gemini process, or
    unidentified where the process tree cannot be read (any receipt holds the bytes)."""
    shim = tmp_path / "shim"
    res = run_guards("install", "--shim", str(shim), "--no-aliases", cwd=repo)
    assert res.returncode == 0, res.stderr
    write_work(repo, ALICE_WORK)
    server = model(THROUGH_THE_SHIM)
    gemini_run(gemini, repo, server, hermetic_seal, path_first=[shim])
    check_hook_and_shim(repo, server, shim)


def test_a_command_given_a_dir_path_is_guarded_there(
    gemini: Cli, model: Model, repo: Path, hermetic_seal: Path
) -> None:
    """run_shell_command's ``dir_path``: the line is judged where it runs."""
    write_work(repo, IN_SUB_WORK)
    server = model(in_sub(repo))
    gemini_run(gemini, repo, server, hermetic_seal)
    check_in_sub(repo, server)


def test_with_policy_block_the_hook_refuses_and_the_model_reads_why(
    gemini: Cli, model: Model, repo: Path, hermetic_seal: Path
) -> None:
    write_work(repo, ALICE_WORK)
    server = model([[shell("git reset --hard")], say("done")])
    gemini_run(gemini, repo, server, hermetic_seal, env={"GUARDS_POLICY": "block"})
    assert (repo / "src/app.py").read_text() == ALICE_WORK["src/app.py"]
    assert rescue_refs(repo) == []
    news = server.at_step(1).news()
    assert "Tool execution blocked" in news
    assert "policy is block" in news and ALICE in news


def test_write_file_replace_and_shell_commands_are_attributed_to_the_session(
    gemini: Cli, model: Model, repo: Path, hermetic_seal: Path
) -> None:
    write_work(repo, {"README": "alice's readme\n"})
    script = attribution_tour("gemini", repo)
    server = model(script)
    run = gemini_run(gemini, repo, server, hermetic_seal)
    assert (repo / "src/app.py").read_text() == "print('gemini')\n"
    expected = {"README": ALICE, **dict.fromkeys(TOUR_PATHS, me(run))}
    assert attributed_after_the_tour(repo) == expected


@pytest.mark.parametrize("tool", ["write_file", "replace"])
def test_a_write_over_alices_uncommitted_file_rescues_it_first_and_the_model_hears_of_it(
    gemini: Cli, model: Model, repo: Path, hermetic_seal: Path, tool: str
) -> None:
    """BeforeTool of write_file / replace on a file another writer left uncommitted:
    the hook rescues it before Gemini writes, the write goes ahead, the file becomes the
    session's own, and the notice reaches the model after the tool."""
    write_work(repo, {"README": "alice's readme\n"})
    step = (
        write_file(str(repo / "README"), "gemini's readme\n")
        if tool == "write_file"
        else edit_file(str(repo / "README"), "alice's readme", "gemini's readme")
    )
    server = model([[step], say("done")])
    run = gemini_run(gemini, repo, server, hermetic_seal)
    check_write_over_alice(repo, server, 1, me(run), "gemini's readme\n")


FRAME = "[Workspace:"


def test_the_frame_arrives_once_per_prompt_and_the_session_ends_with_the_cli(
    gemini: Cli, model: Model, repo: Path, hermetic_seal: Path
) -> None:
    write_work(repo, {"README": "alice's readme\n"})
    server = model([[shell("echo hi")], say("done")])
    run = gemini_run(gemini, repo, server, hermetic_seal)
    first, second = server.at_step(0), server.at_step(1)
    assert first.text().count(FRAME) == 1
    assert "README" in first.text() and f"session {ALICE}" in first.text()
    assert second.text().count(FRAME) == 1  # the tool result's turn gets no second frame
    record = sessions(repo)[me(run)]
    assert record["liveness"] == "ended"


def test_the_prompt_s_frame_takes_the_git_status_its_hook_s_shell_started(
    gemini: Cli, model: Model, tmp_path: Path, hermetic_seal: Path
) -> None:
    repo, log, env = counted_project(tmp_path / "counted", "--gemini", "--no-aliases")
    write_work(repo, {"README": "alice's readme\n"})
    server = model([say("done")])
    gemini_run(gemini, repo, server, hermetic_seal, env)
    assert server.at_step(0).text().count(FRAME) == 1
    check_prompt_status_from_the_shell(log, prompts=1)


def test_shell_commands_run_as_the_session_known_by_its_process(
    gemini: Cli, model: Model, repo: Path, hermetic_seal: Path, tmp_path: Path
) -> None:
    """Gemini puts no session id in its shell commands' environment (only GEMINI_CLI=1):
    its SessionStart hook registers the gemini process, and guards in a command below it
    is that session; its session end takes the registration back."""
    guards_status = f"{shlex.quote(sys.executable)} -m guards status --json > status.json"
    server = model([[shell(guards_status)], say("done")])
    run = gemini_run(gemini, repo, server, hermetic_seal)
    assert json.loads((repo / "status.json").read_text())["caller"] == me(run)
    assert owners(repo) == {"status.json": me(run)}
    assert list((repo / ".git/guards/harnesses").iterdir()) == []  # ended: taken back


def test_with_the_shim_the_session_s_own_work_is_destroyed_as_asked_and_alice_s_rescued(
    gemini: Cli, model: Model, repo: Path, hermetic_seal: Path, tmp_path: Path
) -> None:
    """The shim inside a line is the session too: `git checkout -- .` over the session's
    own edit and alice's rescues alice's work only (before, the unidentified shim kept
    the session's own edit as well)."""
    shim = tmp_path / "shim"
    assert run_guards("install", "--shim", str(shim), "--no-aliases", cwd=repo).returncode == 0
    write_work(repo, {"src/app.py": ALICE_WORK["src/app.py"]})
    mine = write_file(str(repo / "README"), "gemini's readme\n")
    server = model([[mine], [shell("command -v git; git checkout -- .")], say("done")])
    gemini_run(gemini, repo, server, hermetic_seal, path_first=[shim])
    assert str(shim / "git") in server.at_step(2).news()  # the command met the shim
    assert (repo / "README").read_text() == FILES["README"]
    assert (repo / "src/app.py").read_text() == FILES["src/app.py"]
    [ref] = rescue_refs(repo)
    assert ref.startswith(f"refs/rescue/{ALICE}/")
    assert show(repo, ref, "src/app.py") == ALICE_WORK["src/app.py"]


def test_the_interactive_ui_frames_each_prompt_once_and_its_session_is_guarded(
    gemini: Cli, model: Model, repo: Path, hermetic_seal: Path
) -> None:
    """`gemini --approval-mode yolo -i PROMPT` on a terminal, a later prompt typed: the
    frame once with each prompt (BeforeAgent); a shell command's file is the session's;
    quitting (Ctrl+C twice) ends the session."""
    write_work(repo, {"README": "alice's readme\n"})
    server = model(INTERACTIVE)
    env = gemini_env(gemini, server, hermetic_seal)
    assert gemini.path is not None
    with Terminal([str(gemini.path), "--approval-mode", "yolo", "-i", "go"], repo, env) as ui:
        ui.wait_for("first turn over")
        ui.settle()
        ui.type("and now")
        ui.wait_for("second over")
        ui.settle()
        assert ui.quit() == 0
    check_interactive(repo, server.main_requests, "gemini")
