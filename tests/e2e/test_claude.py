"""Claude Code, the real CLI from npm, with guards' hooks installed by `guards install
--claude`, driven headless against the scripted fake model (tests/e2e/model_server.py)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from guards.commands.agent_hook import session_for
from tests.e2e.clis import Cli, Run, claude_interactive, cli_env, run_claude
from tests.e2e.model_server import ModelServer, Step, say, shell
from tests.e2e.model_server import read as read_file
from tests.e2e.model_server import write as write_file
from tests.e2e.scenario import (
    ALICE,
    ALICE_WORK,
    FILES,
    INTERACTIVE,
    RESCUED,
    THROUGH_THE_SHIM,
    TOUR_PATHS,
    Tour,
    attributed_after_the_tour,
    attribution_tour,
    check_hook_and_shim,
    check_interactive,
    check_prompt_status_from_the_shell,
    counted_project,
    owners,
    project,
    rescue_refs,
    sessions,
    show,
    write_work,
)
from tests.e2e.terminal import Terminal
from tests.helpers import run_guards

Model = Callable[..., ModelServer]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return project(tmp_path / "repo", "--claude")


def claude_run(
    claude: Cli,
    repo: Path,
    server: ModelServer,
    prompts: list[str] | None = None,
    *,
    env: dict[str, str] | None = None,
    path_first: list[Path] | None = None,
    cwd: Path | None = None,
) -> Run:
    assert claude.path is not None
    full_env = cli_env(
        {
            "ANTHROPIC_BASE_URL": server.url,
            "ANTHROPIC_API_KEY": "x",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_TELEMETRY": "1",
            "DISABLE_AUTOUPDATER": "1",
            **(env or {}),
        },
        [*(path_first or []), *claude.path_first],
    )
    run = run_claude(claude.path, cwd or repo, prompts or ["go"], full_env)
    assert run.returncode == 0, f"claude exited {run.returncode}: {run.stderr[-2000:]}"
    assert len(run.results()) == len(prompts or ["go"]), run.events[-3:]
    return run


def me(run: Run) -> str:
    """The guards session of the run's Claude session."""
    return session_for("claude", run.session_id)


# -- rescue before each destructive form -----------------------------------------------------


def test_each_destructive_form_runs_after_alices_work_is_rescued_and_the_model_hears_of_it(
    claude: Cli, model: Model, repo: Path
) -> None:
    """reset --hard, checkout -- ., clean -fd, stash -u in turn, alice's work written anew
    before each (see scenario.Tour)."""
    tour = Tour(repo)
    server = model(tour.script(), tour.before_step())
    claude_run(claude, repo, server)
    tour.check(server)


def test_block_policy_refuses_and_the_model_reads_the_reason(
    claude: Cli, model: Model, repo: Path
) -> None:
    write_work(repo, ALICE_WORK)
    server = model([[shell("git reset --hard")], say("done")])
    claude_run(claude, repo, server, env={"GUARDS_POLICY": "block"})
    assert (repo / "src/app.py").read_text() == ALICE_WORK["src/app.py"]
    assert rescue_refs(repo) == []
    news = server.at_step(1).news()
    assert '"is_error": true' in news
    assert "policy is block" in news and ALICE in news


def test_a_command_run_in_another_directory_rescues_what_it_destroys_there(
    claude: Cli, model: Model, repo: Path
) -> None:
    write_work(repo, {"sub/notes.txt": "alice's notes\n", "README": "alice's readme\n"})
    server = model([[shell("cd sub && git checkout -- .")], say("done")])
    claude_run(claude, repo, server)
    assert (repo / "sub/notes.txt").read_text() == FILES["sub/notes.txt"]
    assert (repo / "README").read_text() == "alice's readme\n"  # outside `sub`: untouched
    [ref] = rescue_refs(repo)
    assert show(repo, ref, "sub/notes.txt") == "alice's notes\n"
    assert RESCUED in server.at_step(1).news()


# -- attribution -------------------------------------------------------------------------


def test_write_edit_and_shell_commands_are_attributed_to_the_session(
    claude: Cli, model: Model, repo: Path
) -> None:
    write_work(repo, {"README": "alice's readme\n"})
    script = attribution_tour("claude", repo, read_first=True)
    server = model(script)
    run = claude_run(claude, repo, server)
    assert "PostToolUseFailure" in run.hooks_started()
    expected = {"README": ALICE, **dict.fromkeys(TOUR_PATHS, me(run))}
    assert attributed_after_the_tour(repo) == expected


def test_a_write_over_alices_uncommitted_file_rescues_it_first_and_the_model_hears_of_it(
    claude: Cli, model: Model, repo: Path
) -> None:
    write_work(repo, {"README": "alice's readme\n"})
    script: list[Step] = [
        [read_file(str(repo / "README"))],  # Write over an existing file wants a Read first
        [write_file(str(repo / "README"), "claude's readme\n")],
        say("done"),
    ]
    server = model(script)
    run = claude_run(claude, repo, server)
    [ref] = rescue_refs(repo)
    assert show(repo, ref, "README") == "alice's readme\n"
    assert (repo / "README").read_text() == "claude's readme\n"
    assert owners(repo) == {"README": me(run)}
    assert RESCUED in server.at_step(2).news()


# -- sessions: the frame, identity, the end ------------------------------------------------


FRAME = "[Workspace:"


def test_the_frame_arrives_once_at_session_start_and_once_per_later_prompt(
    claude: Cli, model: Model, repo: Path
) -> None:
    write_work(repo, {"README": "alice's readme\n"})
    server = model([say("first answer"), say("second answer")])
    claude_run(claude, repo, server, ["first prompt", "second prompt"])
    first, second = server.at_step(0), server.at_step(1)
    assert first.text().count(FRAME) == 1
    assert "README" in first.text() and f"session {ALICE}" in first.text()
    assert second.text().count(FRAME) == 2  # the first prompt's, and the second's


def test_each_prompt_s_frame_takes_the_git_status_its_hook_s_shell_started(
    claude: Cli, model: Model, tmp_path: Path
) -> None:
    repo, log, env = counted_project(tmp_path / "counted", "--claude")
    write_work(repo, {"README": "alice's readme\n"})
    server = model([say("first answer"), say("second answer")])
    claude_run(claude, repo, server, ["first prompt", "second prompt"], env=env)
    assert server.at_step(1).text().count(FRAME) == 2
    check_prompt_status_from_the_shell(log, prompts=2)


def test_shell_commands_run_as_the_session_and_the_session_ends_with_the_cli(
    claude: Cli, model: Model, repo: Path
) -> None:
    server = model([[shell('printf %s "$GUARDS_SESSION" > who.txt')], say("done")])
    run = claude_run(claude, repo, server)
    assert (repo / "who.txt").read_text() == me(run)
    assert owners(repo) == {"who.txt": me(run)}
    record = sessions(repo)[me(run)]
    assert record["liveness"] == "ended"


# -- hooks and the shim together ---------------------------------------------------------------


def test_hook_and_shim_rescue_the_same_work_once(
    claude: Cli, model: Model, repo: Path, tmp_path: Path
) -> None:
    shim = tmp_path / "shim"
    res = run_guards("install", "--shim", str(shim), "--no-aliases", cwd=repo)
    assert res.returncode == 0, res.stderr
    write_work(repo, ALICE_WORK)
    server = model(THROUGH_THE_SHIM)
    claude_run(claude, repo, server, path_first=[shim])
    check_hook_and_shim(repo, server, shim)


def test_with_persist_on_stop_each_turn_persists_the_sessions_work(
    claude: Cli, model: Model, repo: Path
) -> None:
    assert (
        run_guards("config", "set", "--repo", "persist.on_stop", "true", cwd=repo).returncode == 0
    )
    server = model([[write_file(str(repo / "new.txt"), "written by claude\n")], say("done")])
    run = claude_run(claude, repo, server)
    assert "Stop" in run.hooks_started()
    wip = f"refs/wip/{me(run)}"
    assert show(repo, wip, "new.txt") == "written by claude\n"
    assert (repo / "new.txt").read_text() == "written by claude\n"  # the work stays


def test_the_interactive_ui_frames_each_prompt_once_and_its_session_is_guarded(
    claude: Cli, model: Model, repo: Path, hermetic_seal: Path
) -> None:
    """`claude --allowedTools … -- PROMPT` on a terminal, a later prompt typed: the
    frame once with the first prompt (SessionStart and UserPromptSubmit both come), once
    more with the next; a shell command's file is the session's; quitting (Ctrl+C
    twice) ends the session."""
    write_work(repo, {"README": "alice's readme\n"})
    server = model(INTERACTIVE)
    key = "sk-ant-e2e-0123456789abcdefghijklmn"
    claude_interactive(hermetic_seal, repo, key)
    env = cli_env(
        {
            "ANTHROPIC_BASE_URL": server.url,
            "ANTHROPIC_API_KEY": key,
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_TELEMETRY": "1",
            "DISABLE_AUTOUPDATER": "1",
        },
        claude.path_first,
    )
    assert claude.path is not None
    tools = ["--allowedTools", "Bash", "Write", "Edit", "Read"]
    with Terminal([str(claude.path), *tools, "--", "go"], repo, env) as ui:
        ui.wait_for("first turn over")
        ui.settle()
        ui.type("and now")
        ui.wait_for("second over")
        ui.settle()
        assert ui.quit() == 0
    check_interactive(repo, server.main_requests, "claude")
