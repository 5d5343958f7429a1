"""The git shim: passthrough without Python, destructive commands through guards."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from guards.integrations.installation import shim_text
from guards.predict.cmdline import DESTRUCTIVE_SUBCOMMANDS
from tests.guarded import install_aliases, install_shim, run_via
from tests.helpers import git, half_upgraded, path_without_guards, run_guards

BOB = {"GUARDS_SESSION": "bob"}


@pytest.fixture
def shim(tmp_path: Path) -> Path:
    return install_shim(tmp_path / "shim bin")  # a space in the directory on purpose


@pytest.fixture
def busy_repo(repo: Path) -> Path:
    """History, a branch, a tag, a stash, dirty files: something for every reader."""
    install_aliases(repo)
    (repo / "README").write_text("second\n")
    git(repo, "commit", "-qam", "second")
    git(repo, "tag", "v1")
    git(repo, "branch", "feature")
    (repo / "src" / "app.py").write_text("stashed\n")
    git(repo, "stash")
    (repo / "README").write_text("dirty\n")
    (repo / "untracked.txt").write_text("u\n")
    return repo


TRANSPARENT = [
    [],
    ["--version"],
    ["--exec-path"],
    ["status"],
    ["status", "--porcelain=v2", "-z"],
    ["status", "--short", "--branch"],
    ["log", "--oneline"],
    ["log", "-p", "-1"],
    ["diff"],
    ["diff", "--stat"],
    ["diff", "--cached"],
    ["show", "HEAD"],
    ["rev-parse", "HEAD"],
    ["rev-parse", "--show-toplevel"],
    ["branch"],
    ["branch", "-a", "-v"],
    ["branch", "--list", "feat*"],
    ["tag", "-l"],
    ["stash", "list"],
    ["stash", "show", "-p"],
    ["ls-files", "-z"],
    ["ls-tree", "-r", "HEAD"],
    ["cat-file", "-p", "HEAD"],
    ["config", "--list", "--local"],
    ["for-each-ref"],
    ["describe", "--tags"],
    ["blame", "src/app.py"],
    ["grep", "hello"],
    ["shortlog", "-s", "HEAD"],
    ["reflog", "-n", "3"],
    ["worktree", "list"],
    ["check-ignore", "-v", "nothing"],
    ["rev-parse", "nosuchbranch"],
    ["checkout", "nosuchbranch"],
    ["switch", "nosuchbranch"],
    ["frobnicate"],
    ["log", "--nosuchoption"],
    ["-C", ".", "status", "--short"],
    ["-c", "color.ui=never", "log", "--oneline", "-1"],
    ["--no-pager", "log", "-1", "--format=%H"],
]


@pytest.mark.parametrize("args", TRANSPARENT, ids=lambda a: " ".join(a) or "(none)")
def test_non_destructive_commands_are_byte_identical_through_every_way(
    busy_repo: Path, shim: Path, args: list[str]
) -> None:
    plain = run_via("plain", args, busy_repo)
    for way in ("guards-run", "shim"):
        other = run_via(way, args, busy_repo, shim_dir=shim, env=BOB)
        assert other.returncode == plain.returncode, (way, other.stderr)
        assert other.stdout == plain.stdout, way
        assert other.stderr == plain.stderr, way


@pytest.mark.parametrize(
    "args", [["switch", "feature"], ["stash", "list"], ["checkout", "feature"]]
)
def test_aliases_are_transparent_for_harmless_forms(busy_repo: Path, args: list[str]) -> None:
    plain = run_via("plain", [*args], busy_repo)
    git(busy_repo, "checkout", "-q", "main") if args[0] != "stash" else None
    via_alias = run_via("alias", args, busy_repo, env=BOB)
    assert via_alias.returncode == plain.returncode
    assert via_alias.stdout == plain.stdout


def test_passthrough_starts_no_python(busy_repo: Path, tmp_path: Path) -> None:
    # A shim whose guards interpreter does not exist still runs every harmless command.
    directory = tmp_path / "nopython"
    directory.mkdir()
    (directory / "git").write_text(
        shim_text(directory).replace(sys.executable, str(tmp_path / "no-such-python"))
    )
    (directory / "git").chmod(0o755)
    res = run_via("shim", ["status", "--short"], busy_repo, shim_dir=directory)
    assert res.returncode == 0 and b"README" in res.stdout
    # ... and refuses a destructive one in one line, naming the bypass.
    no_guards = {"PATH": path_without_guards()}
    res = run_via("shim", ["reset", "--hard"], busy_repo, shim_dir=directory, env=no_guards)
    assert res.returncode == 20
    assert res.stderr.decode().count("\n") == 1 and b"GUARDS_DISABLE=1" in res.stderr
    assert (busy_repo / "README").read_text() == "dirty\n"


def test_shim_refuses_when_guards_cannot_be_imported(busy_repo: Path, tmp_path: Path) -> None:
    # The recorded interpreter is there, and so is the guards package it ran from, but
    # that interpreter cannot import it (a package half-replaced by an upgrade).
    directory = tmp_path / "broken"
    directory.mkdir()
    text = half_upgraded(shim_text(directory), tmp_path)
    (directory / "git").write_text(text)
    (directory / "git").chmod(0o755)
    res = run_via("shim", ["reset", "--hard"], busy_repo, shim_dir=directory)
    assert res.returncode == 20, res.stderr
    line = res.stderr.decode()
    assert line.startswith("guards-shim: refusing this git command: guards cannot run (")
    assert "No module named 'guards." in line and "GUARDS_DISABLE=1" in line
    assert line.count("\n") == 1
    assert (busy_repo / "README").read_text() == "dirty\n"
    ok = run_via("shim", ["log", "--oneline"], busy_repo, shim_dir=directory)
    assert ok.returncode == 0
    bypass = {"GUARDS_DISABLE": "1"}
    res = run_via("shim", ["reset", "--hard"], busy_repo, shim_dir=directory, env=bypass)
    assert res.returncode == 0, res.stderr  # the named override runs git itself
    assert (busy_repo / "README").read_text() != "dirty\n"


def test_shim_never_recurses_into_itself_or_another_shim(busy_repo: Path, tmp_path: Path) -> None:
    first = install_shim(tmp_path / "first")
    second = install_shim(tmp_path / "second")
    env = {"PATH": f"{first}{os.pathsep}{second}{os.pathsep}{os.environ['PATH']}"}
    res = subprocess.run(
        ["git", "rev-parse", "HEAD"],
        cwd=busy_repo,
        env={**os.environ, **env},
        capture_output=True,
        timeout=20,
        check=False,
    )
    assert res.returncode == 0 and len(res.stdout.strip()) == 40
    res = subprocess.run(
        ["git", "reset", "--hard"],
        cwd=busy_repo,
        env={**os.environ, **env, **BOB},
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert res.returncode == 0, res.stderr


def test_guards_disable_bypasses_the_shim(busy_repo: Path, shim: Path) -> None:
    res = run_via(
        "shim", ["reset", "--hard"], busy_repo, shim_dir=shim, env={"GUARDS_DISABLE": "1"}
    )
    assert res.returncode == 0
    assert git(busy_repo, "for-each-ref", "refs/rescue") == ""


def test_shim_rescues_through_an_alias_defined_in_config(busy_repo: Path, shim: Path) -> None:
    git(busy_repo, "config", "alias.wipe", "reset --hard")
    res = run_via("shim", ["wipe"], busy_repo, shim_dir=shim, env=BOB)
    assert res.returncode == 0, res.stderr
    assert git(busy_repo, "for-each-ref", "refs/rescue") != ""


def test_everyday_commands_behave_as_git_through_the_shim(repo: Path, shim: Path) -> None:
    (repo / "new.txt").write_text("n\n")
    assert run_via("shim", ["add", "new.txt"], repo, shim_dir=shim).returncode == 0
    assert run_via("shim", ["commit", "-qm", "via shim"], repo, shim_dir=shim).returncode == 0
    assert git(repo, "log", "-1", "--format=%s").strip() == "via shim"
    assert run_via("shim", ["checkout", "-q", "-b", "b1"], repo, shim_dir=shim).returncode == 0
    assert run_via("shim", ["switch", "-q", "-c", "b2"], repo, shim_dir=shim).returncode == 0
    assert git(repo, "branch", "--show-current").strip() == "b2"
    assert run_via("shim", ["stash", "list"], repo, shim_dir=shim).stdout == b""
    assert git(repo, "for-each-ref", "refs/rescue") == ""


def test_exit_status_and_stdin_pass_through(repo: Path, shim: Path) -> None:
    res = run_via("shim", ["hash-object", "--stdin"], repo, shim_dir=shim, input=b"hello\n")
    assert (
        res.stdout.strip() == git(repo, "hash-object", "--stdin", input=b"hello\n").strip().encode()
    )
    assert run_via("shim", [], repo, shim_dir=shim).returncode == 1


def test_signals_reach_git_directly(repo: Path, shim: Path) -> None:
    env = {**os.environ, "PATH": f"{shim}{os.pathsep}{os.environ['PATH']}"}
    proc = subprocess.Popen(
        ["git", "hash-object", "--stdin"],
        cwd=repo,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    time.sleep(0.3)
    # exec: the shim's process *is* git by now, so the signal ends git itself.
    assert Path(f"/proc/{proc.pid}/exe").resolve().name == "git"
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=10) == -signal.SIGTERM


DESTRUCTIVE_FORMS = {
    "reset": ["reset", "--hard"],
    "checkout": ["checkout", "--", "."],
    "switch": ["switch", "-f", "feature"],
    "restore": ["restore", "."],
    "clean": ["clean", "-fd"],
    "rm": ["rm", "-f", "README"],
    "mv": ["mv", "-f", "README", "x"],
    "rebase": ["rebase", "--autostash", "feature"],
    "pull": ["pull", "--autostash"],
    "merge": ["merge", "--abort"],
    "cherry-pick": ["cherry-pick", "--abort"],
    "am": ["am", "--abort"],
    "revert": ["revert", "--abort"],
    "sparse-checkout": ["sparse-checkout", "set", "src"],
    "stash": ["stash"],
    "branch": ["branch", "-D", "feature"],
    "worktree": ["worktree", "remove", "--force", "elsewhere"],
    "submodule": ["submodule", "deinit", "-f", "--all"],
    "fetch": ["fetch", ".", "+main:feature"],
    "push": ["push", ".", ":feature"],
    "reflog": ["reflog", "expire", "--expire=now", "--all"],
    "gc": ["gc"],
    "bisect": ["bisect", "run", "true"],
    "filter-branch": ["filter-branch", "HEAD"],
    "read-tree": ["read-tree", "-u", "--reset", "HEAD"],
    "checkout-index": ["checkout-index", "-f", "-a"],
    "apply": ["apply", "-R", "some.patch"],
}


def test_shim_routes_every_destructive_subcommand_to_guards(
    busy_repo: Path, tmp_path: Path
) -> None:
    assert set(DESTRUCTIVE_FORMS) == DESTRUCTIVE_SUBCOMMANDS
    directory = tmp_path / "nopython"
    directory.mkdir()
    (directory / "git").write_text(
        shim_text(directory).replace(sys.executable, str(tmp_path / "no-such-python"))
    )
    (directory / "git").chmod(0o755)
    for sub, args in DESTRUCTIVE_FORMS.items():
        for form in (args, ["-C", ".", *args]):
            res = run_via(
                "shim", form, busy_repo, shim_dir=directory, env={"PATH": path_without_guards()}
            )
            assert res.returncode == 20 and b"guards cannot run" in res.stderr, (sub, form)
    # The harmless forms of the same commands do not need guards at all.
    more_forms = (
        ["submodule", "foreach", "true"],
        ["submodule", "update"],
        ["worktree", "add", "-B", "feature", "../wt"],
        ["push", ".", "--delete", "feature"],
        ["fetch", "--stdin", "."],
        ["reflog", "delete", "stash@{0}"],
        ["-c", "help.autocorrect=1", "rset", "--hard"],
        ["--no-such-global-option", "status"],
    )
    for form in more_forms:
        res = run_via(
            "shim", form, busy_repo, shim_dir=directory, env={"PATH": path_without_guards()}
        )
        assert res.returncode == 20 and b"guards cannot run" in res.stderr, form
    for args in (
        ["stash", "list"],
        ["branch", "-v"],
        ["worktree", "list"],
        ["submodule", "status"],
        ["fetch", "."],
        ["push", "--dry-run", ".", "main"],
        ["reflog", "-n", "1"],
        ["bisect", "log"],
        ["worktree", "add", "--detach", "../wt2"],
        ["frobnicate"],
    ):
        res = run_via("shim", args, busy_repo, shim_dir=directory)
        assert b"guards cannot run" not in res.stderr, args


def test_install_shim_command_writes_a_working_shim(repo: Path, tmp_path: Path) -> None:
    res = run_guards("install", "--no-aliases", "--shim", str(tmp_path / "bin"), cwd=repo)
    assert res.returncode == 0, res.stderr
    assert "export PATH=" in res.stdout
    out = run_via("shim", ["rev-parse", "HEAD"], repo, shim_dir=tmp_path / "bin")
    assert out.returncode == 0 and len(out.stdout.strip()) == 40


def test_pre_commit_stashing_of_unstaged_changes_survives_the_shim(
    repo: Path, shim: Path, tmp_path: Path
) -> None:
    """pre-commit runs `git checkout -- .` around its hooks and re-applies a patch."""
    (repo / ".pre-commit-config.yaml").write_text(
        "repos:\n- repo: local\n  hooks:\n  - id: ok\n    name: ok\n"
        "    entry: 'true'\n    language: system\n"
    )
    git(repo, "add", ".pre-commit-config.yaml")
    git(repo, "commit", "-qm", "config")
    env = {
        **os.environ,
        "PATH": f"{shim}{os.pathsep}{os.environ['PATH']}",
        "PRE_COMMIT_HOME": str(tmp_path / "pc-home"),
        **BOB,
    }
    subprocess.run(
        [sys.executable, "-m", "pre_commit", "install"],
        cwd=repo,
        env=env,
        check=True,
        capture_output=True,
    )
    (repo / "README").write_text("staged\n")
    git(repo, "add", "README")
    (repo / "README").write_text("staged\nplus unstaged\n")
    res = subprocess.run(
        ["git", "commit", "-qm", "with hooks"],
        cwd=repo,
        env=env,
        capture_output=True,
        check=False,
    )
    assert res.returncode == 0, res.stdout + res.stderr
    assert git(repo, "show", "HEAD:README") == "staged\n"
    assert (repo / "README").read_text() == "staged\nplus unstaged\n"
