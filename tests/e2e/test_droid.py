"""Factory Droid, the real CLI from npm (@factory/cli, its binary from
@factory/cli-linux-x64), with guards' hooks installed by `guards install --droid`
(.factory/hooks.json), driven headless (`droid exec --auto high -m custom:Fake-0`) against
the scripted fake model (tests/e2e/model_server.py): a BYOK custom model of provider
``anthropic`` in ~/.factory/settings.json, no Factory login, Factory's own services
pointed at a dead port on 127.0.0.1 (``FACTORY_AIRGAP_ENABLED``).

Droid sends Claude's payloads with its own tools (Execute, Create, Edit) and no tool-use
id. It drops a PreToolUse context: the rescue notice rides on the command's PostToolUse
(a user message after the tool result). `droid exec` sends no UserPromptSubmit, so the
frame comes with SessionStart. Its shell commands carry no session id of their own, but
see GUARDS_SESSION from CLAUDE_ENV_FILE. One test drives the interactive UI on a
terminal (tests/e2e/terminal.py), which sends UserPromptSubmit."""

from __future__ import annotations

import json
import shlex
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from guards.commands.agent_hook import session_for
from guards.state.barrier import pending_writes
from tests.e2e.clis import Cli, Run, cli_env, droid_env, droid_model, run_droid
from tests.e2e.model_server import DROID, ModelServer, Step, patch, say, shell
from tests.e2e.model_server import edit as edit_file
from tests.e2e.model_server import write as write_file
from tests.e2e.scenario import (
    ALICE,
    ALICE_WORK,
    INTERACTIVE,
    THROUGH_THE_SHIM,
    Tour,
    attribution_tour,
    check_hook_and_shim,
    check_interactive,
    check_write_over_alice,
    observe_markers,
    owners,
    project,
    rescue_refs,
    sessions,
    show,
    write_work,
)
from tests.e2e.terminal import Terminal

Model = Callable[..., ModelServer]
FRAME = "[Workspace:"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return project(tmp_path / "repo", "--droid", "--no-aliases")


def droid_run(
    droid: Cli,
    repo: Path,
    server: ModelServer,
    home: Path,
    prompts: tuple[str, ...] = ("go",),
    env: dict[str, str] | None = None,
    shim: Path | None = None,
    edit_tools: str | None = None,
) -> Run:
    """Headless prompts (a later one continues the session); with ``shim``, `guards install
    --shim DIR` first and DIR first on the CLI's PATH. ``cwd`` and ``PWD`` are the repo.
    ``edit_tools``: the model's ``fileEditToolProfile`` (clis.droid_model)."""
    from tests.helpers import run_guards

    assert droid.path is not None
    if shim is not None:
        res = run_guards("install", "--shim", str(shim), "--no-aliases", cwd=repo)
        assert res.returncode == 0, res.stderr
    model = droid_model(home, server.url, edit_tools)
    extra = {**droid_env(home), "PWD": str(repo), **(env or {})}
    first = [*([shim] if shim is not None else []), *droid.path_first]
    run = run_droid(droid.path, repo, list(prompts), cli_env(extra, first), model=model)
    assert run.returncode == 0, f"droid exited {run.returncode}: {run.stderr[-2000:]}"
    return run


def me(run: Run) -> str:
    return session_for("droid", run.session_id)


def test_the_hooks_rescue_alices_work_before_each_destructive_form_and_the_model_reads_it(
    droid: Cli, model: Model, repo: Path, hermetic_seal: Path
) -> None:
    tour = Tour(repo)
    server = model(tour.script(), tour.before_step(), flavour=DROID)
    droid_run(droid, repo, server, hermetic_seal)
    tour.check(server)
    assert observe_markers(repo) == []


def test_with_policy_block_the_hook_refuses_and_the_model_reads_why(
    droid: Cli, model: Model, repo: Path, hermetic_seal: Path
) -> None:
    write_work(repo, ALICE_WORK)
    server = model([[shell("git reset --hard")], say("done")], flavour=DROID)
    droid_run(droid, repo, server, hermetic_seal, env={"GUARDS_POLICY": "block"})
    assert (repo / "src/app.py").read_text() == ALICE_WORK["src/app.py"]
    assert rescue_refs(repo) == []
    news = server.at_step(1).news()
    assert "policy is block" in news and ALICE in news
    assert "refused `git reset --hard`" in news and '"is_error": true' in news


def test_create_edit_and_shell_commands_are_attributed_to_the_session(
    droid: Cli, model: Model, repo: Path, hermetic_seal: Path
) -> None:
    write_work(repo, {"README": "alice's readme\n"})
    script = attribution_tour("droid", repo, failing=False)
    server = model(script, flavour=DROID)
    run = droid_run(droid, repo, server, hermetic_seal)
    assert (repo / "src/app.py").read_text() == "print('droid')\n"
    expected = {"README": ALICE, **dict.fromkeys(("new.txt", "src/app.py", "made.txt"), me(run))}
    assert owners(repo) == expected
    assert observe_markers(repo) == []


def test_a_failing_command_or_edit_gets_no_end_its_files_stay_unknown(
    droid: Cli, model: Model, repo: Path, hermetic_seal: Path
) -> None:
    """Droid 0.225 sends no PostToolUse (and has no PostToolUseFailure) for a command that
    exits non-zero: its files stay nobody's (a later destructive command rescues them),
    and its start marker waits for the sweep. Nor for an Edit that failed: its write
    announcement is taken back at the turn's end."""
    script: list[Step] = [
        [shell("echo failing > failed.txt; exit 3")],
        [edit_file(str(repo / "README"), "not in the file", "x")],
        say("done"),
    ]
    server = model(script, flavour=DROID)
    droid_run(droid, repo, server, hermetic_seal)
    assert owners(repo) == {"failed.txt": None}
    assert len(observe_markers(repo)) == 1
    assert '"is_error": true' in server.at_step(2).news()  # the edit failed
    assert pending_writes(str(repo / ".git/guards"), str(repo)) == []


@pytest.mark.parametrize("tool", ["Create", "Edit"])
def test_a_write_over_alices_uncommitted_file_rescues_it_first_and_the_model_hears_of_it(
    droid: Cli, model: Model, repo: Path, hermetic_seal: Path, tool: str
) -> None:
    write_work(repo, {"README": "alice's readme\n"})
    target = str(repo / "README")
    change = (
        write_file(target, "droid's readme\n")
        if tool == "Create"
        else edit_file(target, "alice's readme", "droid's readme")
    )
    server = model([[change], say("done")], flavour=DROID)
    run = droid_run(droid, repo, server, hermetic_seal)
    check_write_over_alice(repo, server, 1, me(run), "droid's readme\n")


#: droid's model setting that offers ApplyPatch instead of Create and Edit (as droid does
#: to GPT-family models).
PATCHING = "apply-patch"


def test_an_apply_patch_over_alices_uncommitted_file_rescues_it_first_and_the_model_hears_of_it(
    droid: Cli, model: Model, repo: Path, hermetic_seal: Path
) -> None:
    """ApplyPatch, a patch naming the file relative to the project as a model may."""
    write_work(repo, {"README": "alice's readme\n"})
    change = patch(edit_file("README", "alice's readme", "droid's readme"))
    server = model([[change], say("done")], flavour=DROID)
    run = droid_run(droid, repo, server, hermetic_seal, edit_tools=PATCHING)
    check_write_over_alice(repo, server, 1, me(run), "droid's readme\n")


def test_apply_patch_files_are_the_sessions_and_a_patch_that_fails_records_nothing(
    droid: Cli, model: Model, repo: Path, hermetic_seal: Path
) -> None:
    """A patch that adds a file and one that updates another (absolute paths, as droid's
    tool asks) are recorded for the session; one that does not apply gets no PostToolUse
    (as a failed Create or Edit): its file stays alice's, its write announcement is taken
    back at the turn's end, and the rescue before it kept alice's version."""
    write_work(repo, {"README": "alice's readme\n"})
    script: list[Step] = [
        [patch(write_file(str(repo / "new.txt"), "written by droid\n"))],
        [patch(edit_file(str(repo / "src/app.py"), "print('hi')", "print('droid')"))],
        [patch(edit_file(str(repo / "README"), "not in the file", "x"))],
        say("done"),
    ]
    server = model(script, flavour=DROID)
    run = droid_run(droid, repo, server, hermetic_seal, edit_tools=PATCHING)
    assert (repo / "src/app.py").read_text() == "print('droid')\n"
    assert '"is_error": true' in server.at_step(3).news()  # the last patch failed
    assert owners(repo) == {"README": ALICE, "new.txt": me(run), "src/app.py": me(run)}
    assert (repo / "README").read_text() == "alice's readme\n"
    [ref] = rescue_refs(repo)
    assert show(repo, ref, "README") == "alice's readme\n"
    assert pending_writes(str(repo / ".git/guards"), str(repo)) == []


def test_the_frame_arrives_once_and_shell_commands_run_as_the_session(
    droid: Cli, model: Model, repo: Path, hermetic_seal: Path
) -> None:
    """The frame comes with SessionStart (droid exec sends no UserPromptSubmit), once;
    guards inside a shell command knows the session from GUARDS_SESSION (CLAUDE_ENV_FILE);
    the session ends with the process (SessionEnd)."""
    write_work(repo, {"README": "alice's readme\n"})
    guards_status = f"{shlex.quote(sys.executable)} -m guards status --json > status.json"
    script: list[Step] = [[shell(guards_status)], say("done")]
    server = model(script, flavour=DROID)
    run = droid_run(droid, repo, server, hermetic_seal)
    first, after_tool = server.at_step(0), server.at_step(1)
    assert first.text().count(FRAME) == 1
    assert "README" in first.text() and f"session {ALICE}" in first.text()
    assert after_tool.text().count(FRAME) == 1
    assert json.loads((repo / "status.json").read_text())["caller"] == me(run)
    assert owners(repo) == {"README": ALICE, "status.json": me(run)}
    assert sessions(repo)[me(run)]["liveness"] == "ended"
    assert not list((repo / ".git/guards/observe").glob("*.framed"))


def test_hook_and_shim_rescue_the_same_work_once(
    droid: Cli, model: Model, repo: Path, hermetic_seal: Path, tmp_path: Path
) -> None:
    shim = tmp_path / "shim"
    write_work(repo, ALICE_WORK)
    server = model(THROUGH_THE_SHIM, flavour=DROID)
    droid_run(droid, repo, server, hermetic_seal, shim=shim)
    check_hook_and_shim(repo, server, shim)


def test_the_interactive_ui_frames_each_prompt_once_and_its_session_is_guarded(
    droid: Cli, model: Model, repo: Path, hermetic_seal: Path
) -> None:
    """`droid --auto high PROMPT` on a terminal, as a user starts it. Unlike exec, it asks
    to trust the folder before it loads the project's configuration (hooks included);
    then it sends UserPromptSubmit for every prompt: the frame comes with the session's
    start and not again with the first prompt, a later prompt gets its own; a shell
    command's file is the session's; quitting ends the session."""
    write_work(repo, {"README": "alice's readme\n"})
    server = model(INTERACTIVE, flavour=DROID)
    droid_model(hermetic_seal, server.url)
    env = cli_env({**droid_env(hermetic_seal), "PWD": str(repo)}, droid.path_first)
    assert droid.path is not None
    with Terminal([str(droid.path), "--auto", "high", "go"], repo, env) as ui:
        ui.wait_for("Trust this folder")
        ui.settle(1.0)
        ui.press(b"\r")  # its first choice: trust
        ui.wait_for("first turn over")
        ui.settle()
        ui.type("and now")
        ui.wait_for("second over")
        ui.settle()
        assert ui.quit() == 0
    check_interactive(repo, server.main_requests, "droid")
    assert not list((repo / ".git/guards/observe").glob("*.framed"))
