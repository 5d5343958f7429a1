"""The hermetic seal: every test runs real git in a throw-away world of its own.

Temp ``HOME`` and XDG dirs, no system config, an empty template dir, fixed identities
and dates, ``GIT_EDITOR=false`` (an unexpected editor fails at once), and none of the
caller's ``GIT_*`` or ``GUARDS_*`` variables (nor an agent harness's session id).
"""

from __future__ import annotations

import compileall
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from guards.git import process as guards_git
from guards.state.identity import HARNESS_SESSION_ENV
from tests.helpers import PROJECT_ROOT, make_repo


def pytest_sessionstart(session: pytest.Session) -> None:
    """Compile guards' bytecode once, as pip does when it installs a wheel.

    Every shim, alias and hook the suite runs is a fresh interpreter importing guards.
    Where ``PYTHONDONTWRITEBYTECODE`` is set (CI's image sets it) and the checkout is
    new, each of them would compile guards' sources again: test_guarded_holes took
    126 s so and 35-54 s with the bytecode there."""
    if not hasattr(session.config, "workerinput"):  # once, in the controller
        compileall.compile_dir(PROJECT_ROOT / "guards", quiet=1)


_SEAL = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_AUTHOR_NAME": "A U Thor",
    "GIT_AUTHOR_EMAIL": "author@example.com",
    "GIT_AUTHOR_DATE": "1700000000 +0000",
    "GIT_COMMITTER_NAME": "C O Mitter",
    "GIT_COMMITTER_EMAIL": "committer@example.com",
    "GIT_COMMITTER_DATE": "1700000000 +0000",
    "GIT_EDITOR": "false",
    "GIT_PAGER": "cat",
    "PAGER": "cat",
    "LC_ALL": "C.UTF-8",
    "TZ": "UTC",
}


#: Also gone: an agent harness's session variables (guards reads its caller from them
#: when the suite itself runs in an agent's shell) and the harnesses' homes (an install
#: with --trust must never reach the caller's own Codex config).
_UNSEALED = {
    "NO_COLOR",
    "XDG_CONFIG_DIRS",
    "CODEX_HOME",
    "GEMINI_CLI_HOME",
    "GEMINI_CLI_TRUSTED_FOLDERS_PATH",
    "QWEN_HOME",
    "QWEN_CODE_TRUSTED_FOLDERS_PATH",
    "QWEN_CODE_SYSTEM_SETTINGS_PATH",
    "COPILOT_HOME",
    "COPILOT_ALLOW_ALL",
    *(name for _harness, name in HARNESS_SESSION_ENV),
}


@pytest.fixture(autouse=True)
def hermetic_seal(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Path:
    home = tmp_path_factory.mktemp("home")
    templates = tmp_path_factory.mktemp("git-templates")
    for name in list(os.environ):
        if name.startswith(("GIT_", "GUARDS_")) or name in _UNSEALED:
            monkeypatch.delenv(name)
    monkeypatch.setenv("HOME", str(home))
    for xdg in ("CONFIG", "DATA", "STATE", "CACHE"):
        monkeypatch.setenv(f"XDG_{xdg}_HOME", str(home / f".xdg-{xdg.lower()}"))
    monkeypatch.setenv("GIT_TEMPLATE_DIR", str(templates))
    monkeypatch.setenv("PYTHONPATH", str(PROJECT_ROOT))
    for name, value in _SEAL.items():
        monkeypatch.setenv(name, value)
    (home / ".gitconfig").write_text(
        "[init]\n\tdefaultBranch = main\n"
        "[user]\n\tname = A U Thor\n\temail = author@example.com\n"
        "[core]\n\tautocrlf = false\n"
        "[advice]\n\tdetachedHead = false\n"
        '[protocol "file"]\n\tallow = always\n'
    )
    monkeypatch.setattr(guards_git, "_real_git_cache", None)
    return home


@pytest.fixture
def repo(tmp_path: Path) -> Iterator[Path]:
    """A repository with one commit holding ``README`` and ``src/app.py``."""
    yield make_repo(tmp_path / "repo", {"README": "hello\n", "src/app.py": "print('hi')\n"})
