"""CLI conventions: --version, --help, one-line errors, exit codes, no tracebacks."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import guards
from guards.commands import COMMANDS
from guards.errors import ExitCode
from guards.main import main
from tests.helpers import PROJECT_ROOT, run_guards


def test_version(tmp_path: Path) -> None:
    res = run_guards("--version", cwd=tmp_path)
    assert res.returncode == 0 and res.stdout == f"guards {guards.__version__}\n"


def test_help_lists_every_subcommand(tmp_path: Path) -> None:
    res = run_guards("--help", cwd=tmp_path)
    assert res.returncode == 0
    for name in COMMANDS:
        assert re.search(rf"^\s+{re.escape(name)}\s", res.stdout, re.M), name


def test_every_subcommand_has_help(tmp_path: Path) -> None:
    for name in COMMANDS:
        res = run_guards(name, "--help", cwd=tmp_path)
        assert res.returncode == 0 and res.stdout.startswith("usage: guards"), name


def test_unknown_subcommand_is_one_line_exit_2(tmp_path: Path) -> None:
    res = run_guards("frobnicate", cwd=tmp_path)
    assert res.returncode == ExitCode.USAGE
    assert res.stderr.count("\n") == 1 and res.stderr.startswith("guards: ")


def test_missing_argument_is_one_line(tmp_path: Path) -> None:
    res = run_guards("record", cwd=tmp_path)
    assert res.returncode == ExitCode.USAGE and res.stderr.count("\n") == 1


def test_no_arguments_prints_help_and_succeeds(tmp_path: Path) -> None:
    res = run_guards(cwd=tmp_path)
    assert res.returncode == 0 and "COMMAND" in res.stdout


def test_outside_a_repository_is_one_line(tmp_path: Path) -> None:
    res = run_guards("status", cwd=tmp_path)
    assert res.returncode == ExitCode.USAGE
    assert res.stderr == "guards: not a git repository (or any of the parent directories): .git\n"


def test_no_git_on_path_is_one_line(tmp_path: Path) -> None:
    res = run_guards("status", cwd=tmp_path, env={"PATH": str(tmp_path)})
    assert res.returncode == ExitCode.UNKNOWN_STATE
    assert res.stderr.count("\n") == 1 and "git not found" in res.stderr


def test_unusable_ledger_directory_is_one_line(repo: Path) -> None:
    (repo / ".git" / "guards").write_text("not a directory")
    (repo / "README").write_text("x\n")
    res = run_guards("record", "--session", "s", "README", cwd=repo)
    assert res.returncode == ExitCode.UNKNOWN_STATE
    assert "Traceback" not in res.stderr and res.stderr.count("\n") == 1


def test_internal_error_is_one_line_with_a_log_and_no_traceback(
    hermetic_seal: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(args: object) -> int:
        raise ZeroDivisionError("a bug")

    monkeypatch.setattr("guards.commands.status.run", broken)
    assert main(["status"]) == ExitCode.INTERNAL
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "internal error (ZeroDivisionError: a bug)" in err
    assert "Traceback" not in err
    log = hermetic_seal / ".xdg-state" / "guards" / "log" / "guards.log"
    assert "ZeroDivisionError" in log.read_text()


def test_exit_codes_are_documented_in_the_readme() -> None:
    readme = (PROJECT_ROOT / "README.md").read_text()
    for code in ExitCode.ALL:
        assert re.search(rf"\|\s*`?{int(code)}`?\s*\|", readme), code


def test_flag_only_commands_read_their_flags_without_argparse(repo: Path) -> None:
    # guards.main runs `status` and `doctor` without argparse when given only their FLAGS;
    # anything else still goes through the full parser and its one-line errors.
    (repo / "new.txt").write_text("x\n")
    both = run_guards("status", "--ignored", "--json", cwd=repo)
    assert both.returncode == 0 and '"new.txt"' in both.stdout
    for bad in (["status", "--json", "--owner"], ["status", "--bogus"], ["doctor", "-x"]):
        res = run_guards(*bad, cwd=repo)
        assert res.returncode == ExitCode.USAGE, bad
        assert res.stderr.count("\n") == 1 and res.stderr.startswith("guards: "), bad
    assert run_guards("status", "--help", cwd=repo).stdout.startswith("usage: guards status")
    # a word after the flags is a path filter, read by argparse
    res = run_guards("status", "--json", "elsewhere", cwd=repo)
    assert res.returncode == 0 and '"new.txt"' not in res.stdout
