"""guards' hooks through the real pre-commit framework: try-repo, install, git commit/push.

The framework pip-installs guards from a git repository at a commit. The lead commits
while work goes on, so the tests snapshot the project's *working tree* into a throw-away
repository once per run and point the framework at that. The hook environment is built
once per run too (a session-wide ``PRE_COMMIT_HOME`` and pip cache).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from tests.helpers import (
    PROJECT_ROOT,
    attributed,
    commit_file,
    git,
    head,
    make_repo,
    record,
    run_guards,
)

#: One test process runs this file: its session fixtures (the project snapshot, the
#: pre-commit home holding the hook's environment) are built once.
pytestmark = pytest.mark.xdist_group("pre-commit-framework")

MANIFEST = PROJECT_ROOT / ".pre-commit-hooks.yaml"
HOOK_TYPES = (
    "pre-commit",
    "pre-merge-commit",
    "post-commit",
    "post-checkout",
    "post-merge",
    "post-rewrite",
    "pre-push",
)
STATE_HOOKS = ("guards-foreign-commit", "guards-mass-deletion", "guards-ledger-sync")


def manifest_hooks() -> list[dict[str, object]]:
    hooks = yaml.safe_load(MANIFEST.read_text())
    assert isinstance(hooks, list)
    return hooks


# -- the manifest ------------------------------------------------------------------------


def test_manifest_is_valid_for_pre_commit() -> None:
    res = subprocess.run(
        [sys.executable, "-m", "pre_commit", "validate-manifest", str(MANIFEST)],
        capture_output=True,
        check=False,
    )

    assert res.returncode == 0, res.stdout + res.stderr


def test_manifest_hooks_look_at_state_with_explicit_stages() -> None:
    stages: dict[str, list[str]] = {}
    for hook in manifest_hooks():
        assert hook["language"] == "python"
        assert hook["always_run"] is True and hook["pass_filenames"] is False
        assert hook["minimum_pre_commit_version"]
        assert str(hook["entry"]).startswith("guards hook ")
        stages[str(hook["id"])] = list(hook["stages"])  # type: ignore[call-overload]
    assert stages == {
        "guards-foreign-commit": ["pre-commit", "pre-merge-commit"],
        "guards-mass-deletion": ["pre-commit"],
        "guards-ledger-sync": ["post-commit", "post-checkout", "post-merge", "post-rewrite"],
        "guards-push-breaker": ["pre-push"],
    }


def test_every_hook_id_in_the_manifest_is_documented_in_the_readme() -> None:
    readme = (PROJECT_ROOT / "README.md").read_text(encoding="utf-8")

    missing = [str(h["id"]) for h in manifest_hooks() if f"`{h['id']}`" not in readme]

    assert missing == [], f"README.md does not document {missing}"


# -- a snapshot of this project for the framework to install ------------------------------

_SNAPSHOT_FILES = ("pyproject.toml", "README.md", ".pre-commit-hooks.yaml", "LICENSE")
_SNAPSHOT_DIRS = ("guards", "hooks", "bin")


def _sealed_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "GUARDS_"))}
    env.update(
        HOME=str(home),
        GIT_CONFIG_NOSYSTEM="1",
        GIT_AUTHOR_NAME="Snap Shot",
        GIT_AUTHOR_EMAIL="snap@example.com",
        GIT_COMMITTER_NAME="Snap Shot",
        GIT_COMMITTER_EMAIL="snap@example.com",
    )
    return env


@pytest.fixture(scope="session")
def guards_snapshot(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A git repository holding the project's working tree as it is now; (path, commit)."""
    src = tmp_path_factory.mktemp("guards-snapshot")
    for name in _SNAPSHOT_FILES:
        if (PROJECT_ROOT / name).exists():
            shutil.copy2(PROJECT_ROOT / name, src / name)
    if not (src / "README.md").exists():
        (src / "README.md").write_text("guards\n")
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")
    for name in _SNAPSHOT_DIRS:
        if (PROJECT_ROOT / name).is_dir():
            shutil.copytree(PROJECT_ROOT / name, src / name, ignore=ignore)
        (src / name).mkdir(exist_ok=True)
        if not any((src / name).iterdir()):
            (src / name / "__init__.py").write_text("")  # git keeps no empty directory
    env = _sealed_env(tmp_path_factory.mktemp("snapshot-home"))
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "snapshot"]):
        subprocess.run(["git", *args], cwd=src, env=env, check=True, capture_output=True)
    rev = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=src, env=env, check=True, capture_output=True, text=True
    ).stdout.strip()
    return src, rev


@pytest.fixture(scope="session")
def framework_cache(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return tmp_path_factory.mktemp("pre-commit-home"), tmp_path_factory.mktemp("pip-cache")


@pytest.fixture
def framework(
    framework_cache: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> Iterator[None]:
    pre_commit_home, pip_cache = framework_cache
    monkeypatch.setenv("PRE_COMMIT_HOME", str(pre_commit_home))
    monkeypatch.setenv("PIP_CACHE_DIR", str(pip_cache))
    monkeypatch.delenv("PRE_COMMIT", raising=False)
    yield


def pre_commit(repo: Path, *args: str, env: dict[str, str] | None = None):
    return subprocess.run(
        [sys.executable, "-m", "pre_commit", *args],
        cwd=repo,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )


def run_git(repo: Path, *args: str, env: dict[str, str] | None = None):
    return subprocess.run(
        ["git", *args],
        cwd=repo,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        check=False,
    )


def use_guards_hooks(repo: Path, snapshot: tuple[Path, str], mass_args: str = "") -> None:
    """A .pre-commit-config.yaml with every guards hook, installed for every hook type."""
    src, rev = snapshot
    args = f"\n        args: [{mass_args}]" if mass_args else ""
    (repo / ".pre-commit-config.yaml").write_text(
        f"""repos:
-   repo: {src}
    rev: {rev}
    hooks:
    -   id: guards-foreign-commit
    -   id: guards-mass-deletion{args}
    -   id: guards-ledger-sync
    -   id: guards-push-breaker
"""
    )
    git(repo, "add", ".pre-commit-config.yaml")
    git(repo, "commit", "-q", "--no-verify", "-m", "use guards hooks")
    types = [a for t in HOOK_TYPES for a in ("--hook-type", t)]
    res = pre_commit(repo, "install", "--install-hooks", *types)
    assert res.returncode == 0, res.stdout + res.stderr


# -- through the framework -------------------------------------------------------------------


@pytest.mark.index
def test_try_repo_runs_this_repository_foreign_commit_hook(
    repo: Path, guards_snapshot: tuple[Path, str], framework: None
) -> None:
    (repo / "README").write_text("agent a's half-done work\n")
    record(repo, "agent-a", "README")
    git(repo, "add", "README")
    src, rev = guards_snapshot

    res = pre_commit(repo, "try-repo", str(src), "guards-foreign-commit", "--ref", rev, "--verbose")

    assert res.returncode == 1, res.stdout + res.stderr
    assert "README" in res.stdout and "agent-a" in res.stdout


@pytest.mark.index
def test_framework_commit_hooks_refuse_foreign_work_and_mass_deletions_then_sync(
    tmp_path: Path, guards_snapshot: tuple[Path, str], framework: None
) -> None:
    repo = make_repo(tmp_path / "work", {f"f{i}.txt": f"{i}\n" for i in range(10)})
    use_guards_hooks(repo, guards_snapshot, mass_args="--max-files, '3', --max-percent, '0'")
    (repo / "f0.txt").write_text("agent a\n")
    record(repo, "agent-a", "f0.txt")
    git(repo, "add", "f0.txt")

    refused = run_git(repo, "commit", "-m", "take a's work", env={"GUARDS_SESSION": "agent-b"})
    assert refused.returncode != 0
    assert "f0.txt" in refused.stderr and "agent-a" in refused.stderr

    own = run_git(repo, "commit", "-m", "a commits", env={"GUARDS_SESSION": "agent-a"})
    assert own.returncode == 0, own.stdout + own.stderr
    assert attributed(repo) == {}  # post-commit released the committed path

    git(repo, "rm", "-q", "f1.txt", "f2.txt", "f3.txt", "f4.txt")
    mass = run_git(repo, "commit", "-m", "delete four")
    assert mass.returncode != 0
    assert "deletes 4 of 11 tracked files" in mass.stderr


@pytest.mark.index
def test_framework_post_hooks_sync_the_ledger_on_checkout_merge_and_amend(
    tmp_path: Path, guards_snapshot: tuple[Path, str], framework: None
) -> None:
    repo = make_repo(tmp_path / "work", {"a.txt": "a\n", "b.txt": "b\n", "c.txt": "c\n"})
    use_guards_hooks(repo, guards_snapshot)
    for name in ("a.txt", "b.txt", "c.txt", "d.txt"):
        (repo / name).write_text(f"{name} by agent a\n")
    record(repo, "agent-a", "a.txt", "b.txt", "c.txt", "d.txt")

    # The framework stashes unstaged edits while any hook runs: b.txt and c.txt look
    # clean to the post-checkout hook but must stay attributed. So must the discarded
    # a.txt (the hook cannot tell it from a hidden one): `guards status` releases it.
    git(repo, "checkout", "-q", "--", "a.txt")  # post-checkout
    assert set(attributed(repo)) == {"a.txt", "b.txt", "c.txt", "d.txt"}
    assert (repo / "b.txt").read_text() == "b.txt by agent a\n"

    git(repo, "add", "b.txt")
    git(repo, "commit", "-q", "--no-verify", "-m", "b")  # --no-verify: post-commit still runs
    assert set(attributed(repo)) == {"a.txt", "c.txt", "d.txt"}

    git(repo, "add", "c.txt")
    amend = run_git(repo, "commit", "--amend", "--no-verify", "-m", "b and c")  # post-rewrite
    assert amend.returncode == 0, amend.stdout + amend.stderr
    assert set(attributed(repo)) == {"a.txt", "d.txt"}

    without_hooks = ("-c", "core.hooksPath=/dev/null")  # setup steps: no hook runs
    git(repo, *without_hooks, "checkout", "-q", "-b", "side")
    (repo / "e.txt").write_text("e\n")
    git(repo, "add", "e.txt")
    git(repo, *without_hooks, "commit", "-q", "-m", "e")
    git(repo, *without_hooks, "checkout", "-q", "main")
    (repo / "d.txt").unlink()  # gone without any hook: the next one notices
    git(repo, "merge", "-q", "--no-edit", "side")  # post-merge
    assert set(attributed(repo)) == {"a.txt"}

    assert run_guards("status", cwd=repo).returncode == 0
    assert attributed(repo) == {}


@pytest.mark.index
def test_framework_push_breaker_checks_the_first_pushed_ref(
    tmp_path: Path, guards_snapshot: tuple[Path, str], framework: None
) -> None:
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    local = make_repo(tmp_path / "local", {"a.txt": "a\n"})
    use_guards_hooks(local, guards_snapshot)
    git(local, "remote", "add", "origin", str(remote))
    first = run_git(local, "push", "-q", "origin", "main")
    assert first.returncode == 0, first.stdout + first.stderr

    other = tmp_path / "other"
    git(tmp_path, "clone", "-q", str(remote), str(other))
    unseen = commit_file(other, "theirs.txt", "theirs\n")
    git(other, "push", "-q", "origin", "main")
    (local / "mine.txt").write_text("mine\n")
    git(local, "add", "mine.txt")
    git(local, "-c", "core.hooksPath=/dev/null", "commit", "-q", "-m", "mine")

    forced = run_git(local, "push", "--force", "origin", "main")
    assert forced.returncode != 0
    output = forced.stdout + forced.stderr  # git sends pre-push's stdout to the terminal
    assert "refs/heads/main" in output and unseen[:12] in output
    assert head(remote, "main") == unseen

    git(local, "pull", "-q", "--no-rebase", "--no-edit", "origin", "main")
    merged = run_git(local, "push", "-q", "origin", "main")
    assert merged.returncode == 0, merged.stdout + merged.stderr
