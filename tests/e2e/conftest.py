"""Fixtures of the end-to-end tests: the real CLIs (installed once) and the fake model."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.e2e.clis import Cli, install_clis
from tests.e2e.model_server import ModelServer, Step


@pytest.hookimpl(tryfirst=True)  # before -m deselects
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every end-to-end test needs a package index (the CLIs come from npm): ``index``."""
    here = Path(__file__).parent
    for item in items:
        if here in item.path.parents:
            item.add_marker(pytest.mark.index)


@pytest.fixture(scope="session")
def clis() -> dict[str, Cli]:
    return install_clis()


#: Set (CI sets it): a CLI that cannot be installed fails its tests instead of skipping
#: them, so that a run whose npm failed cannot pass with the real CLIs never run.
REQUIRED = "GUARDS_E2E_REQUIRED"


def _cli(clis: dict[str, Cli], name: str) -> Cli:
    cli = clis[name]
    if cli.path is None:
        if os.environ.get(REQUIRED) == "1":
            pytest.fail(f"{name} CLI not available ({REQUIRED}=1): {cli.problem}")
        pytest.skip(f"{name} CLI not available: {cli.problem}")
    return cli


@pytest.fixture
def claude(clis: dict[str, Cli]) -> Cli:
    return _cli(clis, "claude")


@pytest.fixture
def codex(clis: dict[str, Cli]) -> Cli:
    return _cli(clis, "codex")


@pytest.fixture
def gemini(clis: dict[str, Cli]) -> Cli:
    return _cli(clis, "gemini")


@pytest.fixture
def copilot(clis: dict[str, Cli]) -> Cli:
    return _cli(clis, "copilot")


@pytest.fixture
def qwen(clis: dict[str, Cli]) -> Cli:
    return _cli(clis, "qwen")


@pytest.fixture
def opencode(clis: dict[str, Cli]) -> Cli:
    return _cli(clis, "opencode")


@pytest.fixture
def droid(clis: dict[str, Cli]) -> Cli:
    return _cli(clis, "droid")


@pytest.fixture
def model() -> Iterator[Callable[..., ModelServer]]:
    """Start a fake model answering from a script; stopped (and checked) at teardown."""
    servers: list[ModelServer] = []

    def start(
        script: list[Step],
        before_step: dict[int, Callable[[], object]] | None = None,
        flavour: str = "",
    ) -> ModelServer:
        server = ModelServer(script, before_step=before_step or {}, flavour=flavour).start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()
    problems = [e for s in servers for e in s.errors]
    assert not problems, f"the fake model saw problems: {problems}"
