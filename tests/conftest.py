"""The hermetic seal: every test runs real git in a throw-away world of its own.

Temp ``HOME`` and XDG dirs, no system config, an empty template dir, fixed identities
and dates, ``GIT_EDITOR=false`` (an unexpected editor fails at once), and none of the
caller's ``GIT_*`` or ``GUARDS_*`` variables.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import guards
from guards import git as guards_git

PROJECT_ROOT = Path(guards.__file__).resolve().parent.parent

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


@pytest.fixture(autouse=True)
def hermetic_seal(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Path:
    home = tmp_path_factory.mktemp("home")
    templates = tmp_path_factory.mktemp("git-templates")
    for name in list(os.environ):
        if name.startswith(("GIT_", "GUARDS_")) or name in {"NO_COLOR", "XDG_CONFIG_DIRS"}:
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


def git(cwd: Path | str, *args: str, check: bool = True, input: bytes | None = None) -> str:
    """Run the real git in ``cwd``; its stdout as text."""
    proc = subprocess.run(["git", *args], cwd=cwd, input=input, capture_output=True, check=False)
    if check and proc.returncode != 0:
        raise AssertionError(
            f"git {' '.join(args)} failed ({proc.returncode}): {proc.stderr.decode()}"
        )
    return proc.stdout.decode("utf-8", "surrogateescape")


def run_guards(
    *args: str,
    cwd: Path | str,
    env: dict[str, str] | None = None,
    input: bytes | None = None,
    timeout: float = 120,
) -> subprocess.CompletedProcess[str]:
    """Run the guards CLI in a real subprocess, as a user would."""
    full_env = dict(os.environ)
    if env:
        full_env.update(env)
    return subprocess.run(
        [sys.executable, "-m", "guards", *args],
        cwd=cwd,
        env=full_env,
        input=input.decode() if input is not None else None,
        capture_output=True,
        text=True,
        errors="surrogateescape",
        timeout=timeout,
        check=False,
    )


def make_repo(path: Path, files: dict[str, str] | None = None) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q")
    for name, content in (files or {"README": "hello\n"}).items():
        target = path / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content)
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "initial")
    return path


@pytest.fixture
def repo(tmp_path: Path) -> Iterator[Path]:
    """A repository with one commit holding ``README`` and ``src/app.py``."""
    yield make_repo(tmp_path / "repo", {"README": "hello\n", "src/app.py": "print('hi')\n"})
