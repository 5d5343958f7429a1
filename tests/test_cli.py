"""The command line people type: "did you mean", help for everything, completion."""

from __future__ import annotations

import argparse
import subprocess
from pathlib import Path

import pytest

from guards.cli import build_parser
from guards.commands import COMMANDS
from tests.helpers import run_guards


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (("stauts",), "guards: argument COMMAND: invalid choice: 'stauts'; did you mean 'status'?"),
        (("session", "strat"), "invalid choice: 'strat'; did you mean 'start'?"),
        (("rescue", "lsit"), "invalid choice: 'lsit'; did you mean 'list'?"),
        (("config", "gte", "policy"), "invalid choice: 'gte'; did you mean 'get'?"),
    ],
)
def test_a_mistyped_command_or_action_gets_a_did_you_mean(
    tmp_path: Path, args: tuple[str, ...], expected: str
) -> None:
    res = run_guards(*args, cwd=tmp_path)
    assert res.returncode == 2 and res.stdout == ""
    assert expected in res.stderr and res.stderr.count("\n") == 1


def test_a_word_like_no_command_lists_the_commands(tmp_path: Path) -> None:
    res = run_guards("frobnicate", cwd=tmp_path)
    assert res.returncode == 2 and "did you mean" not in res.stderr
    assert "choose from 'session', 'record', 'status'" in res.stderr


def _undocumented(parser: argparse.ArgumentParser, name: str) -> list[str]:
    missing = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help for choice in action._choices_actions}
            for word, child in action.choices.items():
                if not helps.get(word):
                    missing.append(f"{name} {word}")
                missing.extend(_undocumented(child, f"{name} {word}"))
        elif not action.help:
            missing.append(f"{name} {'/'.join(action.option_strings) or action.dest}")
    return missing


def test_every_command_action_and_argument_has_help_text() -> None:
    assert _undocumented(build_parser(), "guards") == []


def test_help_names_the_session_and_disable_variables_and_completion(tmp_path: Path) -> None:
    res = run_guards("--help", cwd=tmp_path)
    assert res.returncode == 0
    assert "GUARDS_SESSION=ID" in res.stdout and "GUARDS_DISABLE=1" in res.stdout
    assert "guards completion bash" in res.stdout


def _bash_complete(script: Path, *words: str) -> list[str]:
    probe = (
        f"source {script}\n"
        'COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); COMPREPLY=()\n'
        "_guards_complete\n"
        'printf "%s\\n" "${COMPREPLY[@]}"\n'
    )
    res = subprocess.run(
        ["bash", "-c", probe, "bash", *words],
        capture_output=True,
        text=True,
        check=True,
        cwd=script.parent,
    )
    return [line for line in res.stdout.splitlines() if line]


def test_bash_completion_completes_commands_actions_options_and_files(tmp_path: Path) -> None:
    res = run_guards("completion", "bash", cwd=tmp_path)
    assert res.returncode == 0
    script = tmp_path / "guards.bash"
    script.write_text(res.stdout)
    (tmp_path / "notes.txt").write_text("x")
    assert _bash_complete(script, "guards", "sta") == ["status"]
    assert _bash_complete(script, "guards", "") == list(COMMANDS)
    assert _bash_complete(script, "guards", "rescue", "pr") == ["prune"]
    assert _bash_complete(script, "guards", "rescue", "prune", "--o") == [
        "--older-than",
        "--owner",
    ]
    assert _bash_complete(script, "guards", "session", "start", "--l") == ["--label"]
    assert _bash_complete(script, "guards", "record", "no") == ["notes.txt"]


def test_zsh_and_fish_completion_name_every_command(tmp_path: Path) -> None:
    zsh = run_guards("completion", "zsh", cwd=tmp_path)
    assert zsh.returncode == 0 and "bashcompinit" in zsh.stdout
    assert "complete -o default -F _guards_complete guards" in zsh.stdout
    fish = run_guards("completion", "fish", cwd=tmp_path)
    assert fish.returncode == 0
    for name in COMMANDS:
        assert f" -a {name} -d " in fish.stdout, name
    assert "__fish_seen_subcommand_from rescue; and not" in fish.stdout
    assert "-n '__fish_seen_subcommand_from rescue' -l older-than" in fish.stdout


def test_completion_for_an_unknown_shell_is_a_usage_error(tmp_path: Path) -> None:
    res = run_guards("completion", "tcsh", cwd=tmp_path)
    assert res.returncode == 2 and res.stderr.count("\n") == 1
