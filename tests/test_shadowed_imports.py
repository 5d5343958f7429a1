"""A repository's own Python files never replace the modules guards runs on.

Every installed artifact starts guards inside the user's repository: git runs aliases
and hooks at the top of the work tree, the harnesses run their hooks in the project,
the shim runs wherever git is typed. ``python -m`` and ``python -c`` put the current
directory first on Python's path, so a ``json.py`` or ``enum.py`` of the project (or
``PYTHONPATH=.``) used to replace the standard library's: the agent hook died with a
traceback and exit 1, which the harnesses read as "go on", and the command ran
unguarded; the shim and the aliases refused every destructive command in that project.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

import guards
from tests.helpers import git, path_without_guards, record, run_guards

#: Stand-ins for a project's own modules that happen to share a standard library name.
SHADOWS = {
    "json.py": "def helper():\n    return 'the project json'\n",
    "enum.py": "raise SystemExit('the project enum ran')\n",
    "subprocess.py": "raise SystemExit('the project subprocess ran')\n",
}


@pytest.fixture
def shadowed(repo: Path, tmp_path: Path) -> dict[str, str]:
    """Aliases, the shim, native hooks and Claude's hooks installed; the project holds
    modules named like the standard library's (committed: nothing else is dirty), and
    alice's uncommitted README is at risk."""
    shim = tmp_path / "shim"
    res = run_guards("install", "--shim", str(shim), "--hooks", "--claude", cwd=repo)
    assert res.returncode == 0, res.stderr
    for name, text in SHADOWS.items():
        (repo / name).write_text(text)
    git(repo, "add", *SHADOWS)
    git(repo, "commit", "-q", "-m", "the project's modules")
    (repo / "README").write_text("alice's afternoon\n")
    record(repo, "alice", "README")
    path = os.pathsep.join([str(shim), path_without_guards()])
    return {**os.environ, "PATH": path, "GUARDS_SESSION": "bob"}


def _rescued_readme(repo: Path) -> str:
    refs = git(repo, "for-each-ref", "--format=%(refname)", "refs/rescue/alice").split()
    assert len(refs) == 1, refs
    return git(repo, "show", f"{refs[0]}:README")


@pytest.mark.parametrize("pythonpath", [None, "."])
def test_the_shim_rescues_in_a_project_whose_modules_shadow_the_standard_library(
    repo: Path, shadowed: dict[str, str], pythonpath: str | None
) -> None:
    env = dict(shadowed)
    if pythonpath is not None:
        env["PYTHONPATH"] = pythonpath
    res = subprocess.run(
        ["git", "reset", "--hard"], cwd=repo, env=env, capture_output=True, text=True
    )
    assert res.returncode == 0, res.stderr
    assert "guards: rescued 1 path of session alice" in res.stderr
    assert _rescued_readme(repo) == "alice's afternoon\n"
    assert (repo / "README").read_text() == "hello\n"


def test_the_alias_rescues_in_a_project_whose_modules_shadow_the_standard_library(
    repo: Path, shadowed: dict[str, str]
) -> None:
    env = {**shadowed, "PATH": path_without_guards()}  # the alias alone, no shim
    res = subprocess.run(
        ["git", "safe-checkout", "--", "README"],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
    )
    assert res.returncode == 0, res.stderr
    assert _rescued_readme(repo) == "alice's afternoon\n"


def test_the_claude_hook_rescues_in_a_project_whose_modules_shadow_the_standard_library(
    repo: Path, shadowed: dict[str, str]
) -> None:
    settings = json.loads((repo / ".claude/settings.local.json").read_text())
    command = settings["hooks"]["PreToolUse"][0]["hooks"][0]["command"]
    event = {
        "hook_event_name": "PreToolUse",
        "session_id": "s1",
        "tool_use_id": "toolu_1",
        "cwd": str(repo),
        "tool_name": "Bash",
        "tool_input": {"command": "git reset --hard"},
    }
    env = {**shadowed, "PATH": path_without_guards(), "PYTHONPATH": str(repo)}
    hook = subprocess.run(
        ["sh", "-c", command],
        cwd=repo,
        input=json.dumps(event),
        env=env,
        capture_output=True,
        text=True,
    )
    assert hook.returncode == 0, hook.stderr
    assert "Traceback" not in hook.stderr
    assert "guards: rescued 1 path of session alice" in hook.stdout  # Claude: the context
    assert _rescued_readme(repo) == "alice's afternoon\n"


def test_the_pre_commit_hook_still_checks_in_a_project_whose_modules_shadow_the_standard_library(
    repo: Path, shadowed: dict[str, str]
) -> None:
    git(repo, "add", "README")
    env = {**shadowed, "PATH": path_without_guards()}
    res = subprocess.run(
        ["git", "commit", "-q", "-m", "bob commits alice's file"],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
    )
    assert "not installed" not in res.stderr
    assert res.returncode != 0  # the foreign-commit check ran and refused
    assert "README" in res.stderr


def test_a_guards_that_cannot_start_says_so_in_one_line_and_exits_as_asked(
    tmp_path: Path,
) -> None:
    import shlex
    import sys

    from guards.integrations.installation import python_launch

    launch = python_launch("no_such_module:main", 'the "x" hook \\ here', 7)
    res = subprocess.run(
        [sys.executable, *shlex.split(launch), "arg"], cwd=tmp_path, capture_output=True, text=True
    )
    assert res.returncode == 7
    assert res.stderr == (
        'the "x" hook \\ here: guards cannot run (ModuleNotFoundError: No module named '
        "'no_such_module')\n"
    )
    quiet = python_launch("no_such_module:main", "", 1)
    res = subprocess.run([sys.executable, *shlex.split(quiet)], capture_output=True, text=True)
    assert (res.returncode, res.stderr) == (1, "")


def test_an_artifact_starts_python_without_site_and_with_the_recorded_roots(
    tmp_path: Path,
) -> None:
    # No site: a venv's .pth files (1 ms each call in a fresh venv, tens of ms where they
    # import packages) are not processed; guards and its dependencies come from the
    # directories recorded when the artifact was written, and nothing else is added.
    import shlex
    import sys

    from guards.integrations.installation import import_roots, python_launch

    roots, files = import_roots()
    assert files and all(os.path.isfile(f) for f in files)  # filelock, platformdirs ...
    probe = tmp_path / "probe"
    (probe / "guards_probe").mkdir(parents=True)
    (probe / "guards_probe" / "__init__.py").write_text(
        "import sys\n"
        "def main(argv):\n"
        "    print(repr((sys.flags.no_site, 'site' in sys.modules, sys.path[-len(argv):])))\n"
        "    return 0\n"
    )
    launch = python_launch("guards_probe:main", "the probe", 7).replace(
        "+ [", "+ [" + repr(str(probe)).replace("'", "'\"'\"'") + ", ", 1
    )
    res = subprocess.run(
        [sys.executable, *shlex.split(launch), *roots], capture_output=True, text=True
    )
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == repr((1, False, roots))


def test_an_artifact_refuses_at_once_when_a_recorded_dependency_is_gone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A dependency uninstalled since the artifact was written would fail half-way (a
    # lock not taken, a setting not read): the artifact says so before guards starts.
    import shlex
    import sys

    from guards.integrations import installation

    roots, files = installation.import_roots()
    gone = str(tmp_path / "site-packages" / "filelock" / "__init__.py")
    monkeypatch.setattr(installation, "import_roots", lambda: (roots, [*files, gone]))
    launch = installation.python_launch("guards.main:main", "the x hook", 7)
    res = subprocess.run(
        [sys.executable, *shlex.split(launch), "--version"], capture_output=True, text=True
    )
    assert res.returncode == 7 and res.stdout == ""
    assert res.stderr == (
        "the x hook: guards cannot run (FileNotFoundError: [Errno 2] No such file or "
        f"directory: {gone!r})\n"
    )
    monkeypatch.undo()
    fine = installation.python_launch("guards.main:main", "the x hook", 7)
    ok = subprocess.run(
        [sys.executable, *shlex.split(fine), "--version"], capture_output=True, text=True
    )
    assert (ok.returncode, ok.stdout) == (0, f"guards {guards.__version__}\n"), ok.stderr


def test_an_artifact_s_python_runs_the_cycle_collector_rarely(tmp_path: Path) -> None:
    # Importing a hook's modules allocates tens of thousands of objects: the collector
    # runs every COLLECT_EVERY allocations, not Python's 700 (guards.errors.collect_rarely).
    import shlex
    import sys

    from guards.errors import COLLECT_EVERY
    from guards.integrations.installation import python_launch

    probe = tmp_path / "probe"
    (probe / "guards_probe").mkdir(parents=True)
    (probe / "guards_probe" / "__init__.py").write_text(
        "import gc\ndef main(argv):\n    print(gc.get_threshold()[0])\n    return 0\n"
    )
    launch = python_launch("guards_probe:main", "the probe", 7).replace(
        "+ [", "+ [" + repr(str(probe)).replace("'", "'\"'\"'") + ", ", 1
    )
    res = subprocess.run([sys.executable, *shlex.split(launch)], capture_output=True, text=True)
    assert (res.returncode, res.stdout.strip()) == (0, str(COLLECT_EVERY)), res.stderr
