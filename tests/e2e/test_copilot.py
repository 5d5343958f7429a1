"""GitHub Copilot CLI, the real CLI from npm, with guards' hooks installed by `guards
install --copilot` (.github/hooks/guards.json), driven headless (`copilot -p
--allow-all`) against the scripted fake model (tests/e2e/model_server.py; Copilot
speaks the Anthropic wire format with its own tools: bash, create, edit).

Copilot's payloads name no event (the installed command does) and carry no tool-call id
(a shell line's start marker is keyed by the command, as Gemini's); its preToolUse
context reaches the model after the tool result; its shell commands carry
COPILOT_AGENT_SESSION_ID."""

from __future__ import annotations

import json
import shlex
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from guards.commands.agent_hook import session_for
from tests.e2e.clis import Cli, Run, cli_env, run_copilot
from tests.e2e.model_server import COPILOT, ModelServer, say, shell
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
    observe_markers,
    owners,
    project,
    rescue_refs,
    sessions,
    show,
    write_work,
)
from tests.e2e.terminal import Terminal
from tests.helpers import doctor_findings, run_guards

Model = Callable[..., ModelServer]
#: What Copilot puts before a preToolUse hook's additionalContext.
PRE_CONTEXT = "Additional context from preToolUse hook"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return project(tmp_path / "repo", "--copilot", "--no-aliases")


def copilot_run(
    copilot: Cli,
    repo: Path,
    server: ModelServer,
    env: dict[str, str] | None = None,
    shim: Path | None = None,
    trust_all: bool = True,
) -> Run:
    """One headless prompt; with ``shim``, `guards install --shim DIR` first and DIR
    first on the CLI's PATH; ``trust_all`` False: without ``COPILOT_ALLOW_ALL``, so that
    only Copilot's own folder trust says whether it loads the repository's hooks."""
    assert copilot.path is not None
    if shim is not None:
        res = run_guards("install", "--shim", str(shim), "--no-aliases", cwd=repo)
        assert res.returncode == 0, res.stderr
    full_env = cli_env(
        {
            "COPILOT_PROVIDER_TYPE": "anthropic",
            "COPILOT_PROVIDER_BASE_URL": server.url,
            "COPILOT_PROVIDER_API_KEY": "x",
            "COPILOT_MODEL": "claude-sonnet-4.5",
            **({"COPILOT_ALLOW_ALL": "true"} if trust_all else {}),
            **(env or {}),
        },
        path_first=[*([shim] if shim is not None else []), *copilot.path_first],
    )
    run = run_copilot(copilot.path, repo, "go", full_env)
    assert run.returncode == 0, f"copilot exited {run.returncode}: {run.stderr[-2000:]}"
    return run


def me(run: Run) -> str:
    return session_for("copilot", run.session_id)


def test_the_hooks_rescue_alices_work_before_each_destructive_form_and_the_model_reads_it(
    copilot: Cli, model: Model, repo: Path
) -> None:
    tour = Tour(repo)
    server = model(tour.script(), tour.before_step(), flavour=COPILOT)
    copilot_run(copilot, repo, server)
    tour.check(server)
    for step in range(1, len(tour.commands) + 1):
        assert PRE_CONTEXT in server.at_step(step).news()
    assert observe_markers(repo) == []


def test_with_policy_block_the_hook_refuses_and_the_model_reads_why(
    copilot: Cli, model: Model, repo: Path
) -> None:
    write_work(repo, ALICE_WORK)
    server = model([[shell("git reset --hard")], say("done")], flavour=COPILOT)
    copilot_run(copilot, repo, server, env={"GUARDS_POLICY": "block"})
    assert (repo / "src/app.py").read_text() == ALICE_WORK["src/app.py"]
    assert rescue_refs(repo) == []
    news = server.at_step(1).news()
    assert "policy is block" in news and ALICE in news
    assert "refused `git reset --hard`" in news


def test_create_edit_and_shell_commands_are_attributed_to_the_session(
    copilot: Cli, model: Model, repo: Path
) -> None:
    write_work(repo, {"README": "alice's readme\n"})
    script = attribution_tour("copilot", repo)
    server = model(script, flavour=COPILOT)
    run = copilot_run(copilot, repo, server)
    assert (repo / "src/app.py").read_text() == "print('copilot')\n"
    expected = {"README": ALICE, **dict.fromkeys(TOUR_PATHS, me(run))}
    assert attributed_after_the_tour(repo) == expected


FRAME = "[Workspace:"


def test_the_frame_arrives_once_shell_commands_run_as_the_session_and_it_ends(
    copilot: Cli, model: Model, repo: Path
) -> None:
    """The frame comes once at the prompt (Copilot would show a sessionStart context as
    well); guards inside a shell command knows the session from
    COPILOT_AGENT_SESSION_ID; sessionEnd ends it."""
    write_work(repo, {"README": "alice's readme\n"})
    guards_status = f"{shlex.quote(sys.executable)} -m guards status --json > status.json"
    server = model([[shell(guards_status)], say("done")], flavour=COPILOT)
    run = copilot_run(copilot, repo, server)
    first, second = server.at_step(0), server.at_step(1)
    assert first.text().count(FRAME) == 1
    assert "README" in first.text() and f"session {ALICE}" in first.text()
    assert second.text().count(FRAME) == 1  # the tool result's turn gets no second frame
    assert (repo / "status.json").exists(), second.news()
    assert json.loads((repo / "status.json").read_text())["caller"] == me(run)
    assert owners(repo) == {"README": ALICE, "status.json": me(run)}
    assert sessions(repo)[me(run)]["liveness"] == "ended"


def test_hook_and_shim_rescue_the_same_work_once(
    copilot: Cli, model: Model, repo: Path, tmp_path: Path
) -> None:
    """Copilot sends no tool-call id, but its shell commands show the session
    (COPILOT_AGENT_SESSION_ID): the shim inside the line finds the hook's receipt."""
    shim = tmp_path / "shim"
    write_work(repo, ALICE_WORK)
    server = model(THROUGH_THE_SHIM, flavour=COPILOT)
    copilot_run(copilot, repo, server, shim=shim)
    check_hook_and_shim(repo, server, shim)


def test_in_a_folder_copilot_does_not_trust_doctor_says_so_and_its_fix_makes_the_hooks_run(
    copilot: Cli, model: Model, repo: Path, hermetic_seal: Path
) -> None:
    """Untrusted, Copilot loads no repository hooks and still runs the model's shell
    commands (alice's work is gone, nothing rescued): the danger doctor reports. The step
    its finding names, done as written, makes the hooks run."""
    [finding] = doctor_findings(repo)["copilot-untrusted"]
    config = hermetic_seal / ".copilot" / "config.json"
    assert f'add "{repo}" to "trustedFolders" in {config}' in str(finding["fix"])
    write_work(repo, ALICE_WORK)
    server = model([[shell("git reset --hard")], say("done")], flavour=COPILOT)
    copilot_run(copilot, repo, server, trust_all=False)
    assert (repo / "src/app.py").read_text() == FILES["src/app.py"]  # what Copilot does
    assert rescue_refs(repo) == []
    # The fix, into the config.json Copilot wrote meanwhile (comment lines above its JSON)
    text = config.read_text()
    comments = [line for line in text.splitlines() if line.startswith("//")]
    doc = json.loads("\n".join(line for line in text.splitlines() if not line.startswith("//")))
    doc.setdefault("trustedFolders", []).append(str(repo))
    config.write_text("\n".join([*comments, json.dumps(doc, indent=2)]) + "\n")
    assert "copilot-untrusted" not in doctor_findings(repo)
    write_work(repo, ALICE_WORK)
    server = model([[shell("git reset --hard")], say("done")], flavour=COPILOT)
    copilot_run(copilot, repo, server, trust_all=False)
    assert (repo / "src/app.py").read_text() == FILES["src/app.py"]
    [ref] = rescue_refs(repo)
    assert show(repo, ref, "src/app.py") == ALICE_WORK["src/app.py"]
    assert RESCUED in server.at_step(1).news()


def test_the_interactive_ui_frames_each_prompt_once_and_its_session_is_guarded(
    copilot: Cli, model: Model, repo: Path
) -> None:
    """`copilot --allow-all -i PROMPT` on a terminal, a later prompt typed: the frame
    once with each prompt; a shell command's file is the session's; quitting (Ctrl+C
    twice) ends the session."""
    write_work(repo, {"README": "alice's readme\n"})
    server = model(INTERACTIVE, flavour=COPILOT)
    env = cli_env(
        {
            "COPILOT_PROVIDER_TYPE": "anthropic",
            "COPILOT_PROVIDER_BASE_URL": server.url,
            "COPILOT_PROVIDER_API_KEY": "x",
            "COPILOT_MODEL": "claude-sonnet-4.5",
            "COPILOT_ALLOW_ALL": "true",
        },
        path_first=list(copilot.path_first),
    )
    assert copilot.path is not None
    with Terminal([str(copilot.path), "--allow-all", "-i", "go"], repo, env) as ui:
        # (its spinner draws into the words it shows: the server tells when a turn ended)
        ui.wait_until(lambda: 1 in server.answered_steps(), "the first turn's end")
        ui.settle(2.0)
        ui.type("and now")
        ui.wait_until(lambda: 2 in server.answered_steps(), "the second turn's end")
        ui.settle(2.0)
        assert ui.quit() == 0
    check_interactive(repo, server.main_requests, "copilot")
