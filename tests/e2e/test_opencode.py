"""opencode, the real CLI from npm (``opencode-ai``), with guards' plugin installed by
`guards install --opencode` (.opencode/plugins/guards.js), driven headless (`opencode run
--format json`) against the scripted fake model (tests/e2e/model_server.py): a provider
of the sealed user config's opencode.json on ``@ai-sdk/anthropic`` at the fake server,
with opencode's own tools (bash, write, edit with filePath).

The plugin's tool.execute.before is awaited before a tool runs: exit 2 of the hook
throws, and the Error is the tool result the model reads. A rescue is told after the
tool ran, appended to its output by tool.execute.after. The frame is a synthetic text
part of each prompt (chat.message); shell commands get GUARDS_SESSION from shell.env;
the plugin's dispose (opencode exits) ends the sessions it saw."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from guards.commands.agent_hook import session_for
from tests.e2e.clis import (
    OPENCODE_OFFLINE,
    Cli,
    Run,
    cli_env,
    opencode_config,
    opencode_offline_plugin_deps,
    run_opencode,
)
from tests.e2e.model_server import OPENCODE, ModelServer, Step, read, say, shell
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
from tests.helpers import disposable_python, git, make_repo, path_without_guards, run_guards

Model = Callable[..., ModelServer]
FRAME = "[Workspace:"
PLUGIN = ".opencode/plugins/guards.js"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    repo = project(tmp_path / "repo", "--opencode", "--no-aliases")
    assert git(repo, "ls-files", PLUGIN).strip() == PLUGIN
    return repo


def config_home(hermetic_seal: Path) -> Path:
    return Path(cli_env({})["XDG_CONFIG_HOME"]) / "opencode"


def opencode_run(
    opencode: Cli,
    repo: Path,
    server: ModelServer,
    prompts: tuple[str, ...] = ("go",),
    env: dict[str, str] | None = None,
    shim: Path | None = None,
    options: tuple[str, ...] = (),
) -> Run:
    """Headless prompts (a later one continues the session); the fake model is the user
    config's; with ``shim``, `guards install --shim DIR` first and DIR first on PATH;
    ``options``: more of ``opencode run``'s (``--pure``)."""
    assert opencode.path is not None
    if shim is not None:
        res = run_guards("install", "--shim", str(shim), "--no-aliases", cwd=repo)
        assert res.returncode == 0, res.stderr
    full_env = cli_env(env or {}, path_first=[shim] if shim is not None else None)
    user = Path(full_env["XDG_CONFIG_HOME"]) / "opencode"
    user.mkdir(parents=True, exist_ok=True)
    (user / "opencode.json").write_text(json.dumps(opencode_config(server.url)))
    opencode_offline_plugin_deps(user, repo / ".opencode")
    run = run_opencode(opencode.path, repo, list(prompts), full_env, options=options)
    assert run.returncode == 0, f"opencode exited {run.returncode}: {run.stderr[-2000:]}"
    return run


def me(run: Run) -> str:
    return session_for("opencode", run.session_id)


def tool_result(server: ModelServer, step: int) -> dict[str, object]:
    [result] = [
        block
        for block in server.at_step(step).body["messages"][-1]["content"]
        if block.get("type") == "tool_result"
    ]
    return dict(result)


def test_the_plugin_rescues_alices_work_before_each_destructive_form_and_the_model_reads_it(
    opencode: Cli, model: Model, repo: Path
) -> None:
    tour = Tour(repo)
    server = model(tour.script(), tour.before_step(), flavour=OPENCODE)
    opencode_run(opencode, repo, server)
    tour.check(server)
    for step in range(1, len(tour.commands) + 1):
        assert RESCUED in json.dumps(tool_result(server, step))  # appended to its output
    assert observe_markers(repo) == []


def test_with_policy_block_the_plugin_refuses_and_the_model_reads_why(
    opencode: Cli, model: Model, repo: Path
) -> None:
    write_work(repo, ALICE_WORK)
    server = model([[shell("git reset --hard")], say("done")], flavour=OPENCODE)
    opencode_run(opencode, repo, server, env={"GUARDS_POLICY": "block"})
    assert (repo / "src/app.py").read_text() == ALICE_WORK["src/app.py"]
    assert rescue_refs(repo) == []
    result = tool_result(server, 1)
    assert result.get("is_error") is True
    news = json.dumps(result)
    assert "policy is block" in news and ALICE in news
    assert "refused `git reset --hard`" in news


def test_with_guards_gone_the_plugin_refuses_and_the_model_reads_why(
    opencode: Cli, model: Model, tmp_path: Path
) -> None:
    """The plugin's fail-closed path, with the real opencode: the interpreter the plugin
    recorded is gone and no guards is on PATH. The hook's script says so and exits 2,
    the plugin throws, and the destructive command never runs."""
    repo = make_repo(tmp_path / "gone", FILES)
    python = disposable_python(tmp_path / "venv")
    install = [str(python), "-m", "guards", "install", "--opencode", "--no-aliases"]
    done = subprocess.run(install, cwd=repo, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "guards' plugin")
    write_work(repo, ALICE_WORK)
    python.unlink()
    server = model([[shell("git reset --hard")], say("done")], flavour=OPENCODE)
    opencode_run(opencode, repo, server, env={"PATH": path_without_guards()})
    assert (repo / "src/app.py").read_text() == ALICE_WORK["src/app.py"]
    result = tool_result(server, 1)
    assert result.get("is_error") is True
    assert "the opencode hook cannot run: guards is not installed any more" in json.dumps(result)


def test_write_edit_and_shell_commands_are_attributed_to_the_session(
    opencode: Cli, model: Model, repo: Path
) -> None:
    write_work(repo, {"README": "alice's readme\n"})
    script = attribution_tour("opencode", repo, read_first=True)
    server = model(script, flavour=OPENCODE)
    run = opencode_run(opencode, repo, server)
    assert (repo / "src/app.py").read_text() == "print('opencode')\n"
    expected = {"README": ALICE, **dict.fromkeys(TOUR_PATHS, me(run))}
    assert attributed_after_the_tour(repo) == expected


@pytest.mark.parametrize("tool", ["write", "edit"])
def test_a_write_over_alices_uncommitted_file_rescues_it_first_and_the_model_hears_of_it(
    opencode: Cli, model: Model, repo: Path, tool: str
) -> None:
    write_work(repo, {"README": "alice's readme\n"})
    target = str(repo / "README")
    change = (
        write_file(target, "opencode's readme\n")
        if tool == "write"
        else edit_file(target, "alice's readme", "opencode's readme")
    )
    server = model([[read(target)], [change], say("done")], flavour=OPENCODE)
    run = opencode_run(opencode, repo, server)
    check_write_over_alice(repo, server, 2, me(run), "opencode's readme\n")


def test_the_frame_arrives_once_per_prompt_and_shell_commands_run_as_the_session(
    opencode: Cli, model: Model, repo: Path
) -> None:
    """The frame is a part of each prompt (chat.message), once; guards inside a shell
    command is the session (GUARDS_SESSION from the plugin's shell.env)."""
    write_work(repo, {"README": "alice's readme\n"})
    guards_status = f"{shlex.quote(sys.executable)} -m guards status --json > status.json"
    script: list[Step] = [[shell(guards_status)], say("done"), say("done again")]
    server = model(script, flavour=OPENCODE)
    run = opencode_run(opencode, repo, server, prompts=("go", "and again"))
    first, after_tool, second = server.at_step(0), server.at_step(1), server.at_step(2)
    assert first.text().count(FRAME) == 1
    assert "README" in first.text() and f"session {ALICE}" in first.text()
    assert FRAME not in after_tool.news() and after_tool.text().count(FRAME) == 1
    assert second.news().count(FRAME) == 1
    assert (repo / "status.json").exists(), after_tool.news()
    assert json.loads((repo / "status.json").read_text())["caller"] == me(run)
    assert owners(repo) == {"README": ALICE, "status.json": me(run)}


def test_the_session_ends_when_opencode_exits(opencode: Cli, model: Model, repo: Path) -> None:
    """The plugin's dispose (opencode run exits) sends SessionEnd for the sessions it saw:
    the session's own work is persisted and the session marked ended."""
    server = model([[shell("echo mine > mine.txt")], say("done")], flavour=OPENCODE)
    run = opencode_run(opencode, repo, server)
    assert (repo / "mine.txt").read_text() == "mine\n", run.stderr[-2000:]
    assert owners(repo) == {"mine.txt": me(run)}
    assert sessions(repo)[me(run)]["liveness"] == "ended", run.stderr[-2000:]
    assert show(repo, f"refs/wip/{me(run)}", "mine.txt") == "mine\n"


def test_a_command_given_a_workdir_is_guarded_there(
    opencode: Cli, model: Model, repo: Path
) -> None:
    """bash's ``workdir``: the line is judged where it runs."""
    write_work(repo, IN_SUB_WORK)
    server = model(in_sub(repo), flavour=OPENCODE)
    opencode_run(opencode, repo, server)
    check_in_sub(repo, server)


def test_hook_and_shim_rescue_the_same_work_once(
    opencode: Cli, model: Model, repo: Path, tmp_path: Path
) -> None:
    shim = tmp_path / "shim"
    write_work(repo, ALICE_WORK)
    server = model(THROUGH_THE_SHIM, flavour=OPENCODE)
    opencode_run(opencode, repo, server, shim=shim)
    check_hook_and_shim(repo, server, shim)


def test_the_user_plugin_guards_every_project(opencode: Cli, model: Model, tmp_path: Path) -> None:
    """`guards install --opencode --user`: ~/.config/opencode/plugins/guards.js."""
    repo = make_repo(tmp_path / "repo", FILES)
    res = run_guards("install", "--opencode", "--user", "--no-aliases", cwd=repo)
    assert res.returncode == 0, res.stderr
    assert (Path(cli_env({})["XDG_CONFIG_HOME"]) / "opencode/plugins/guards.js").is_file()
    write_work(repo, ALICE_WORK)
    server = model([[shell("git reset --hard")], say("done")], flavour=OPENCODE)
    opencode_run(opencode, repo, server)
    [ref] = rescue_refs(repo)
    assert show(repo, ref, "src/app.py") == ALICE_WORK["src/app.py"]
    assert RESCUED in server.at_step(1).news()


def test_with_pure_opencode_loads_no_plugin_and_only_the_shim_guards_git(
    opencode: Cli, model: Model, repo: Path, tmp_path: Path
) -> None:
    """``opencode run --pure`` ("run without external plugins") skips guards' project
    plugin: no hook runs, and a ``git reset --hard`` destroys alice's work (what the README
    says). With the shim first on PATH, the shim rescues it first."""
    write_work(repo, ALICE_WORK)
    script = [[shell("touch made.txt && git reset --hard")], say("done")]
    run = opencode_run(opencode, repo, model(script, flavour=OPENCODE), options=("--pure",))
    assert (repo / "src/app.py").read_text() == FILES["src/app.py"]  # alice's work is gone
    assert rescue_refs(repo) == []
    assert owners(repo)["made.txt"] is None  # nor did the plugin see the line end
    assert me(run) not in sessions(repo)
    write_work(repo, ALICE_WORK)
    server = model([[shell("git reset --hard")], say("done")], flavour=OPENCODE)
    opencode_run(opencode, repo, server, shim=tmp_path / "shim", options=("--pure",))
    [ref] = rescue_refs(repo)
    assert show(repo, ref, "src/app.py") == ALICE_WORK["src/app.py"]
    assert server.at_step(1).news().count(RESCUED) == 1  # the shim's notice


def test_the_interactive_ui_frames_each_prompt_once_and_its_session_is_guarded(
    opencode: Cli, model: Model, repo: Path
) -> None:
    """`opencode --auto --prompt PROMPT` (its TUI) on a terminal, a later prompt typed:
    the frame once with each prompt; a shell command's file is the session's; quitting
    (Ctrl+C twice) ends the session."""
    write_work(repo, {"README": "alice's readme\n"})
    server = model(INTERACTIVE, flavour=OPENCODE)
    env = {**OPENCODE_OFFLINE, **cli_env({}), "PWD": str(repo)}
    user = Path(env["XDG_CONFIG_HOME"]) / "opencode"
    user.mkdir(parents=True, exist_ok=True)
    (user / "opencode.json").write_text(json.dumps(opencode_config(server.url)))
    opencode_offline_plugin_deps(user, repo / ".opencode")
    assert opencode.path is not None
    with Terminal([str(opencode.path), "--auto", "--prompt", "go"], repo, env) as ui:
        # (the server tells when a turn ended: a TUI redraws its words as it likes)
        ui.wait_until(lambda: 1 in server.answered_steps(), "the first turn's end")
        ui.settle(2.0)
        ui.type("and now")
        ui.wait_until(lambda: 2 in server.answered_steps(), "the second turn's end")
        ui.settle(2.0)
        ui.quit()
    check_interactive(repo, server.main_requests, "opencode")
