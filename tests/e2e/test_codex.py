"""Codex CLI, the real CLI from npm, with guards' hooks installed by `guards install
--codex`, driven headless (`codex exec --json`) against the scripted fake model.

Codex runs project hooks only in a trusted project and only hooks the user trusted
(README, "Agent harnesses"): the set-up trusts the project, and trusts our hooks with the hashes
`codex app-server` reports, as a user reviewing them would."""

from __future__ import annotations

import json
import shlex
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from guards.commands.agent_hook import session_for
from tests.e2e.clis import Cli, Run, cli_env, codex_hook_hashes, run_codex
from tests.e2e.model_server import ModelServer, Step, say, shell
from tests.e2e.model_server import edit as edit_file
from tests.e2e.model_server import write as write_file
from tests.e2e.scenario import (
    ALICE,
    ALICE_WORK,
    FILES,
    RESCUED,
    TOUR_PATHS,
    Tour,
    attributed_after_the_tour,
    owners,
    project,
    rescue_refs,
    sessions,
    show,
    write_work,
)
from tests.helpers import run_guards

Model = Callable[..., ModelServer]
#: A model slug codex knows (an unknown one is offered no apply_patch tool).
MODEL = "gpt-5.5"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return project(tmp_path / "repo", "--codex")


def codex_home(hermetic_seal: Path) -> Path:
    return hermetic_seal / ".codex"


def configure(
    codex: Cli, repo: Path, server: ModelServer, home: Path, *, login_shell: bool = True
) -> dict[str, str]:
    """config.toml for the fake model, the trusted project and our trusted hooks."""
    assert codex.path is not None
    home.mkdir(parents=True, exist_ok=True)
    top = "" if login_shell else "allow_login_shell = false\n"
    config = (
        f'{top}model = "{MODEL}"\nmodel_provider = "fake"\n'
        f'[model_providers.fake]\nname = "fake"\nbase_url = "{server.url}/v1"\n'
        'wire_api = "responses"\nenv_key = "FAKE_MODEL_KEY"\n'
        f'[projects.{json.dumps(str(repo))}]\ntrust_level = "trusted"\n'
    )
    (home / "config.toml").write_text(config)
    env = cli_env({"CODEX_HOME": str(home), "FAKE_MODEL_KEY": "x"})
    ours = [h for h in codex_hook_hashes(codex.path, repo, env) if "agent_hook" in h["command"]]
    assert ours, "codex does not see guards' hooks"
    for hook in ours:
        config += f"[hooks.state.{json.dumps(hook['key'])}]\n"
        config += f"trusted_hash = {json.dumps(hook['currentHash'])}\n"
    (home / "config.toml").write_text(config)
    return env


def codex_run(
    codex: Cli,
    repo: Path,
    server: ModelServer,
    home: Path,
    prompts: list[str] | None = None,
    *,
    env: dict[str, str] | None = None,
    path_first: list[Path] | None = None,
    login_shell: bool = True,
) -> Run:
    assert codex.path is not None
    full_env = configure(codex, repo, server, home, login_shell=login_shell)
    full_env.update(env or {})
    if path_first:
        full_env["PATH"] = ":".join([*map(str, path_first), full_env["PATH"]])
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


# -- attribution -------------------------------------------------------------------------


def test_apply_patch_and_shell_commands_are_attributed_to_the_session(
    codex: Cli, model: Model, repo: Path, hermetic_seal: Path
) -> None:
    write_work(repo, {"README": "alice's readme\n"})
    script: list[Step] = [
        [write_file("new.txt", "written by codex\n")],
        [edit_file("src/app.py", "print('hi')", "print('codex')")],
        [shell("echo ok > made.txt")],
        [shell("echo failing > failed.txt; exit 3")],
        say("done"),
    ]
    server = model(script)
    run = codex_run(codex, repo, server, codex_home(hermetic_seal))
    assert (repo / "src/app.py").read_text() == "print('codex')\n"
    expected = {"README": ALICE, **dict.fromkeys(TOUR_PATHS, me(run))}
    assert attributed_after_the_tour(repo) == expected


def test_apply_patch_over_alices_uncommitted_file_rescues_it_first(
    codex: Cli, model: Model, repo: Path, hermetic_seal: Path
) -> None:
    write_work(repo, {"README": "alice's readme\n"})
    server = model([[edit_file("README", "alice's readme", "codex's readme")], say("done")])
    run = codex_run(codex, repo, server, codex_home(hermetic_seal))
    assert (repo / "README").read_text() == "codex's readme\n"
    [ref] = rescue_refs(repo)
    assert show(repo, ref, "README") == "alice's readme\n"
    assert owners(repo) == {"README": me(run)}


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
    res = run_guards("install", "--shim", str(shim), "--no-aliases", cwd=repo)
    assert res.returncode == 0, res.stderr
    write_work(repo, ALICE_WORK)
    server = model([[shell("command -v git; git reset --hard")], say("done")])
    codex_run(codex, repo, server, codex_home(hermetic_seal), path_first=[shim], login_shell=False)
    news = server.at_step(1).news()
    assert str(shim / "git") in news
    assert (repo / "src/app.py").read_text() == FILES["src/app.py"]
    [ref] = rescue_refs(repo)
    assert show(repo, ref, "src/app.py") == ALICE_WORK["src/app.py"]
    assert news.count(RESCUED) == 1
