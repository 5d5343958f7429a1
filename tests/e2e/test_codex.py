"""Codex CLI, the real CLI from npm, with guards' hooks installed by `guards install
--codex`, driven headless (`codex exec --json`) against the scripted fake model.

Codex runs project hooks only in a trusted project and only hooks the user trusted
(README, "Agent harnesses"): the set-up writes only the fake model's provider to
config.toml and then runs the documented `guards install --codex --trust` (with
`--shim DIR` where a scenario has the shim), which trusts our hooks and the project; no
trust is written by hand. A hooks/list of `codex app-server` checks our hashes are
Codex's own."""

from __future__ import annotations

import json
import os
import shlex
import signal
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from guards.commands.agent_hook import session_for
from guards.integrations import codex_trust
from tests.e2e.clis import Cli, Run, cli_env, codex_hook_hashes, run_codex
from tests.e2e.model_server import ModelServer, say, shell
from tests.e2e.model_server import edit as edit_file
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
    check_prompt_status_from_the_shell,
    counted_project,
    in_sub,
    owners,
    project,
    rescue_refs,
    sessions,
    show,
    write_work,
)
from tests.e2e.terminal import Terminal
from tests.helpers import git, run_guards

Model = Callable[..., ModelServer]
#: A model slug codex knows (an unknown one is offered no apply_patch tool).
MODEL = "gpt-5.5"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return project(tmp_path / "repo", "--codex")


def codex_home(hermetic_seal: Path) -> Path:
    return hermetic_seal / ".codex"


def configure(
    codex: Cli,
    repo: Path,
    server: ModelServer,
    home: Path,
    *,
    shim: Path | None = None,
    env: dict[str, str] | None = None,
) -> dict[str, str]:
    """config.toml for the fake model; then trust as the README says: `guards install
    --codex --trust` (and `--shim DIR`; in ``env``, the run's own variables)."""
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(
        f'model = "{MODEL}"\nmodel_provider = "fake"\n'
        f'[model_providers.fake]\nname = "fake"\nbase_url = "{server.url}/v1"\n'
        'wire_api = "responses"\nenv_key = "FAKE_MODEL_KEY"\n'
    )
    install = ["install", "--codex", "--trust", "--no-aliases"]
    if shim is not None:
        install += ["--shim", str(shim)]
    res = run_guards(*install, cwd=repo, env={**(env or {}), "CODEX_HOME": str(home)})
    assert res.returncode == 0, res.stderr
    assert res.stderr == "", res.stderr  # nothing left untrusted, nothing to warn of
    return cli_env({"CODEX_HOME": str(home), "FAKE_MODEL_KEY": "x"})


def codex_run(
    codex: Cli,
    repo: Path,
    server: ModelServer,
    home: Path,
    prompts: list[str] | None = None,
    *,
    env: dict[str, str] | None = None,
    shim: Path | None = None,
) -> Run:
    assert codex.path is not None
    full_env = configure(codex, repo, server, home, shim=shim, env=env)
    full_env.update(env or {})
    if shim is not None:
        full_env["PATH"] = ":".join([str(shim), full_env["PATH"]])
    run = run_codex(codex.path, repo, prompts or ["go"], full_env)
    assert run.returncode == 0, f"codex exited {run.returncode}: {run.stderr[-2000:]}"
    return run


def me(run: Run) -> str:
    for event in run.events:
        if event.get("type") == "thread.started":
            return session_for("codex", str(event["thread_id"]))
    raise AssertionError("no thread")


def errors(run: Run) -> list[str]:
    return [
        str(e["item"].get("message"))
        for e in run.events
        if e.get("type") == "item.completed" and e["item"].get("type") == "error"
    ]


# -- rescue before each destructive form -----------------------------------------------------


def test_each_destructive_form_runs_after_alices_work_is_rescued_and_the_model_hears_of_it(
    codex: Cli, model: Model, repo: Path, hermetic_seal: Path
) -> None:
    """reset --hard, checkout -- ., clean -fd, stash -u in turn, alice's work written anew
    before each (see scenario.Tour)."""
    tour = Tour(repo)
    server = model(tour.script(), tour.before_step())
    run = codex_run(codex, repo, server, codex_home(hermetic_seal))
    assert errors(run) == []
    tour.check(server)


def test_the_notice_comes_from_pre_tool_use_between_the_command_and_its_output(
    codex: Cli, model: Model, repo: Path, hermetic_seal: Path
) -> None:
    """Codex 0.171 shows a PreToolUse additionalContext as a developer message after the
    call and before its output: the model reads of the rescue with the command."""
    write_work(repo, ALICE_WORK)
    server = model([[shell("git reset --hard")], say("done")])
    codex_run(codex, repo, server, codex_home(hermetic_seal))
    items = server.at_step(1).body["input"]
    kinds = ["notice" if RESCUED in json.dumps(item) else str(item.get("type")) for item in items]
    assert kinds.count("notice") == 1
    at = kinds.index("notice")
    assert kinds[at - 1] == "function_call" and kinds[at + 1] == "function_call_output"


def test_block_policy_refuses_and_the_model_reads_the_reason(
    codex: Cli, model: Model, repo: Path, hermetic_seal: Path
) -> None:
    write_work(repo, ALICE_WORK)
    server = model([[shell("git reset --hard")], say("done")])
    codex_run(codex, repo, server, codex_home(hermetic_seal), env={"GUARDS_POLICY": "block"})
    assert (repo / "src/app.py").read_text() == ALICE_WORK["src/app.py"]
    assert rescue_refs(repo) == []
    news = server.at_step(1).news()
    assert "policy is block" in news and ALICE in news


def test_a_command_run_in_another_directory_rescues_what_it_destroys_there(
    codex: Cli, model: Model, repo: Path, hermetic_seal: Path
) -> None:
    write_work(repo, {"sub/notes.txt": "alice's notes\n", "README": "alice's readme\n"})
    server = model([[shell("cd sub && git checkout -- .")], say("done")])
    codex_run(codex, repo, server, codex_home(hermetic_seal))
    assert (repo / "sub/notes.txt").read_text() == FILES["sub/notes.txt"]
    assert (repo / "README").read_text() == "alice's readme\n"
    [ref] = rescue_refs(repo)
    assert show(repo, ref, "sub/notes.txt") == "alice's notes\n"
    assert RESCUED in server.at_step(1).news()


def test_a_command_given_a_workdir_is_guarded_there(
    codex: Cli, model: Model, repo: Path, hermetic_seal: Path
) -> None:
    """exec_command's ``workdir``: the hook's cwd is that directory, and the line is
    judged there."""
    write_work(repo, IN_SUB_WORK)
    server = model(in_sub(repo))
    codex_run(codex, repo, server, codex_home(hermetic_seal))
    check_in_sub(repo, server)


# -- attribution -------------------------------------------------------------------------


def test_apply_patch_and_shell_commands_are_attributed_to_the_session(
    codex: Cli, model: Model, repo: Path, hermetic_seal: Path
) -> None:
    write_work(repo, {"README": "alice's readme\n"})
    script = attribution_tour("codex", None)
    server = model(script)
    run = codex_run(codex, repo, server, codex_home(hermetic_seal))
    assert (repo / "src/app.py").read_text() == "print('codex')\n"
    expected = {"README": ALICE, **dict.fromkeys(TOUR_PATHS, me(run))}
    assert attributed_after_the_tour(repo) == expected


def test_apply_patch_over_alices_uncommitted_file_rescues_it_first_and_the_model_hears_of_it(
    codex: Cli, model: Model, repo: Path, hermetic_seal: Path
) -> None:
    write_work(repo, {"README": "alice's readme\n"})
    server = model([[edit_file("README", "alice's readme", "codex's readme")], say("done")])
    run = codex_run(codex, repo, server, codex_home(hermetic_seal))
    assert (repo / "README").read_text() == "codex's readme\n"
    [ref] = rescue_refs(repo)
    assert show(repo, ref, "README") == "alice's readme\n"
    assert owners(repo) == {"README": me(run)}
    news = server.at_step(1).news()
    assert news.count(RESCUED) == 1 and ref in news, news


# -- sessions: the frame, identity, the end ------------------------------------------------

FRAME = "[Workspace:"


def test_the_frame_arrives_once_at_session_start_and_once_per_later_prompt(
    codex: Cli, model: Model, repo: Path, hermetic_seal: Path
) -> None:
    write_work(repo, {"README": "alice's readme\n"})
    server = model([say("first answer"), say("second answer")])
    codex_run(codex, repo, server, codex_home(hermetic_seal), ["first prompt", "second prompt"])
    first, second = server.at_step(0), server.at_step(1)
    assert first.text().count(FRAME) == 1
    assert "README" in first.text() and f"session {ALICE}" in first.text()
    assert second.text().count(FRAME) == 2


def test_each_prompt_s_frame_takes_the_git_status_its_hook_s_shell_started(
    codex: Cli, model: Model, tmp_path: Path, hermetic_seal: Path
) -> None:
    repo, log, env = counted_project(tmp_path / "counted", "--codex")
    write_work(repo, {"README": "alice's readme\n"})
    server = model([say("first answer"), say("second answer")])
    home = codex_home(hermetic_seal)
    codex_run(codex, repo, server, home, ["first prompt", "second prompt"], env=env)
    assert server.at_step(1).text().count(FRAME) == 2
    check_prompt_status_from_the_shell(log, prompts=2)


def test_shell_commands_run_as_the_session_and_the_session_ends_with_the_cli(
    codex: Cli, model: Model, repo: Path, hermetic_seal: Path
) -> None:
    """Codex has no env file to export GUARDS_SESSION: guards inside its shell commands
    knows the session from CODEX_THREAD_ID."""
    guards_status = f"{shlex.quote(sys.executable)} -m guards status --json > status.json"
    server = model([[shell(guards_status)], say("done")])
    run = codex_run(codex, repo, server, codex_home(hermetic_seal))
    assert json.loads((repo / "status.json").read_text())["caller"] == me(run)
    assert owners(repo) == {"status.json": me(run)}
    assert sessions(repo)[me(run)]["liveness"] == "ended"
    assert errors(run) == []  # no complaint about the SessionEnd hook's timeout


# -- hooks and the shim together ---------------------------------------------------------------


def test_hook_and_shim_rescue_the_same_work_once(
    codex: Cli, model: Model, repo: Path, tmp_path: Path, hermetic_seal: Path
) -> None:
    shim = tmp_path / "shim"
    write_work(repo, ALICE_WORK)
    server = model(THROUGH_THE_SHIM)
    codex_run(codex, repo, server, codex_home(hermetic_seal), shim=shim)
    check_hook_and_shim(repo, server, shim)


def test_the_shim_guards_git_inside_a_script_codex_runs(
    codex: Cli, model: Model, repo: Path, tmp_path: Path, hermetic_seal: Path
) -> None:
    """The documented install (`guards install --shim DIR --codex --trust`, DIR first on
    PATH): Codex's `bash -lc` still finds the shim, so a `git reset --hard` inside a
    script, which no hook can read, rescues alice's work first."""
    shim = tmp_path / "shim"
    script = repo / "tidy.sh"
    script.write_text('#!/bin/sh\necho "git is $(command -v git)"\ngit reset --hard\n')
    script.chmod(0o755)
    git(repo, "add", "tidy.sh")
    git(repo, "commit", "-q", "-m", "a tidy script")
    write_work(repo, ALICE_WORK)
    server = model([[shell("./tidy.sh")], say("done")])
    codex_run(codex, repo, server, codex_home(hermetic_seal), shim=shim)
    config = (codex_home(hermetic_seal) / "config.toml").read_text()
    assert "allow_login_shell = false" in config
    assert f"git is {shim / 'git'}" in server.at_step(1).news()
    assert (repo / "src/app.py").read_text() == FILES["src/app.py"]
    [ref] = rescue_refs(repo)
    assert ref.endswith("-reset-hard")  # the shim's guards run named git's command
    assert show(repo, ref, "src/app.py") == ALICE_WORK["src/app.py"]
    # untracked: reset --hard leaves it, so nothing of it to rescue
    assert (repo / "src/alice_new.py").read_text() == ALICE_WORK["src/alice_new.py"]


# -- trust: our hashes are Codex's ----------------------------------------------------------


def test_our_hook_keys_and_hashes_are_the_ones_codex_reports(
    codex: Cli, repo: Path, tmp_path: Path, hermetic_seal: Path
) -> None:
    """Project hooks behind a group of the user's own (their positions count) and user
    hooks under $CODEX_HOME: `codex app-server` lists each of ours with the key and hash
    we compute, and, after `guards install --codex --trust`, as trusted."""
    assert codex.path is not None
    home = codex_home(hermetic_seal)
    hooks_json = repo / ".codex/hooks.json"
    doc = json.loads(hooks_json.read_text())
    users = {"hooks": [{"type": "command", "command": "true", "timeout": 5}]}
    doc["hooks"]["PreToolUse"].insert(0, {"matcher": "Bash", **users})
    doc["hooks"]["Stop"].insert(0, users)
    hooks_json.write_text(json.dumps(doc))
    env = {"CODEX_HOME": str(home)}
    for scope in ("--project", "--user"):
        res = run_guards("install", "--codex", scope, "--trust", "--no-aliases", cwd=repo, env=env)
        assert res.returncode == 0, res.stderr
    listed = codex_hook_hashes(codex.path, repo, cli_env(env))
    theirs = {h["key"]: (h["currentHash"], h["trustStatus"]) for h in listed}
    mine = {}
    for path in (hooks_json, home / "hooks.json"):
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv("CODEX_HOME", str(home))
            for hook in codex_trust.our_hooks(json.loads(path.read_text()), path):
                mine[hook.key] = (hook.hash, "trusted")
    assert len(mine) == 12
    assert {k: v for k, v in theirs.items() if k in mine} == mine
    assert f"{hooks_json}:pre_tool_use:1:0" in mine  # behind the user's group
    assert theirs[f"{hooks_json}:pre_tool_use:0:0"][1] == "untrusted"  # theirs: untouched


#: Codex 0.171 offers a newer model before the first prompt; its second choice keeps ours.
KEEP_THE_MODEL = "Use existing model"
DOWN = b"\x1b[B"


def drive_the_tui(codex: Cli, repo: Path, env: dict[str, str], *options: str) -> None:
    """`codex [options] go` on a terminal, then a second prompt typed, then Ctrl+C twice."""
    assert codex.path is not None
    args = [str(codex.path), "--sandbox", "danger-full-access", "--ask-for-approval", "never"]
    with Terminal([*args, *options, "go"], repo, env) as ui:
        if ui.wait_for("first turn over", KEEP_THE_MODEL) == KEEP_THE_MODEL:
            ui.settle(1.0)
            ui.press(DOWN)
            ui.settle(0.5)
            ui.press(b"\r")
            ui.wait_for("first turn over")
        ui.settle()
        ui.type("and now")
        ui.wait_for("second over")
        ui.settle()
        assert ui.quit() == 0


def stop_codex_daemons(home: Path) -> None:
    """Kill the app-server daemons Codex started from ``home`` (they outlive the TUI)."""
    marker = str(home / "packages").encode()
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and marker in (proc / "cmdline").read_bytes():
                os.kill(int(proc.name), signal.SIGKILL)
        except OSError:
            continue  # gone meanwhile, or not ours to read


@pytest.mark.parametrize("daemon", [False, True], ids=["no-daemon", "daemon"])
def test_the_interactive_ui_frames_each_prompt_once_and_its_session_is_guarded(
    codex: Cli, model: Model, repo: Path, hermetic_seal: Path, daemon: bool
) -> None:
    """The TUI on a terminal, a later prompt typed: the frame once with each prompt; a
    shell command's file is the session's. By default (0.171) the TUI runs its thread in
    a background app-server that outlives it: quitting sends no SessionEnd, the session
    stays live until its heartbeat ages; with `--no-daemon` quitting ends it."""
    write_work(repo, {"README": "alice's readme\n"})
    server = model(INTERACTIVE)
    env = configure(codex, repo, server, codex_home(hermetic_seal))
    try:
        drive_the_tui(codex, repo, env, *([] if daemon else ["--no-daemon"]))
    finally:
        stop_codex_daemons(codex_home(hermetic_seal))
    loop = server.main_requests  # (the TUI's title request is a side call)
    check_interactive(repo, loop, "codex", ended=not daemon)
