"""Gemini CLI, the real CLI from npm, driven headless (`gemini -p --approval-mode yolo`)
against the scripted fake model.

guards has no Gemini hooks yet (no rescue notice before the command, no attribution, no
frame, no session): what protects a Gemini session today is the git shim first on
PATH, which these scenarios check. Its shell commands are unidentified, so the shim
treats every dirty path as not theirs."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.e2e.clis import Cli, Run, cli_env, run_gemini
from tests.e2e.model_server import ModelServer, say, shell
from tests.e2e.scenario import (
    ALICE,
    ALICE_WORK,
    Tour,
    project,
    rescue_refs,
    write_work,
)

Model = Callable[..., ModelServer]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return project(tmp_path / "repo", "--shim", str(tmp_path / "shim"), "--no-aliases")


def gemini_run(
    gemini: Cli, repo: Path, server: ModelServer, home: Path, env: dict[str, str] | None = None
) -> Run:
    assert gemini.path is not None
    settings = home / ".gemini/settings.json"
    settings.parent.mkdir(parents=True, exist_ok=True)
    settings.write_text(json.dumps({"security": {"auth": {"selectedType": "gemini-api-key"}}}))
    full_env = cli_env(
        {
            "GOOGLE_GEMINI_BASE_URL": server.url,
            "GEMINI_API_KEY": "x",
            "GEMINI_CLI_TRUST_WORKSPACE": "true",
            **(env or {}),
        },
        path_first=[repo.parent / "shim"],
    )
    run = run_gemini(gemini.path, repo, "go", full_env)
    assert run.returncode == 0, f"gemini exited {run.returncode}: {run.stderr[-2000:]}"
    return run


def test_the_shim_rescues_alices_work_before_each_destructive_form_and_the_model_reads_it(
    gemini: Cli, model: Model, repo: Path, hermetic_seal: Path
) -> None:
    """reset --hard, checkout -- ., clean -fd, stash -u in turn, alice's work written anew
    before each (see scenario.Tour)."""
    tour = Tour(repo)
    server = model(tour.script(), tour.before_step())
    gemini_run(gemini, repo, server, hermetic_seal)
    tour.check(server)


def test_with_policy_block_the_shim_refuses_and_the_model_reads_why(
    gemini: Cli, model: Model, repo: Path, hermetic_seal: Path
) -> None:
    write_work(repo, ALICE_WORK)
    server = model([[shell("git reset --hard")], say("done")])
    gemini_run(gemini, repo, server, hermetic_seal, env={"GUARDS_POLICY": "block"})
    assert (repo / "src/app.py").read_text() == ALICE_WORK["src/app.py"]
    assert rescue_refs(repo) == []
    news = server.at_step(1).news()
    assert "policy is block" in news and ALICE in news
