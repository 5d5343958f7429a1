"""guards config: files, environment, validation."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from guards.config import parse_duration, parse_size
from tests.helpers import run_guards


def test_set_get_unset_in_the_repository_file(repo: Path) -> None:
    assert run_guards("config", "set", "policy", "block", cwd=repo).returncode == 0
    assert run_guards("config", "get", "policy", cwd=repo).stdout == "block\n"
    assert (repo / ".git" / "guards" / "config.toml").read_text() == 'policy = "block"\n'
    assert run_guards("config", "unset", "policy", cwd=repo).returncode == 0
    assert run_guards("config", "get", "policy", cwd=repo).stdout == "rescue\n"


def test_repository_file_overrides_user_file_and_environment_overrides_both(repo: Path) -> None:
    run_guards("config", "set", "--user", "rescue.max_file_size", "5MiB", cwd=repo)
    assert run_guards("config", "get", "rescue.max_file_size", cwd=repo).stdout == "5242880\n"
    run_guards("config", "set", "rescue.max_file_size", "1024", cwd=repo)
    assert run_guards("config", "get", "rescue.max_file_size", cwd=repo).stdout == "1024\n"
    res = run_guards(
        "config",
        "get",
        "rescue.max_file_size",
        cwd=repo,
        env={"GUARDS_RESCUE_MAX_FILE_SIZE": "2k"},
    )
    assert res.stdout == "2048\n"


def test_user_file_lives_under_the_xdg_config_dir(repo: Path, hermetic_seal: Path) -> None:
    run_guards("config", "set", "--user", "quiet", "true", cwd=repo)
    path = hermetic_seal / ".xdg-config" / "guards" / "config.toml"
    assert path.read_text() == "quiet = true\n"


def test_list_shows_every_key_with_its_origin(repo: Path) -> None:
    run_guards("config", "set", "rescue.remote", "origin", cwd=repo)
    res = run_guards("config", "list", "--json", cwd=repo, env={"GUARDS_QUIET": "1"})
    settings = {s["key"]: s for s in json.loads(res.stdout)["settings"]}
    assert settings["rescue.remote"]["origin"] == "repo"
    assert settings["quiet"] == {**settings["quiet"], "value": "true", "origin": "env GUARDS_QUIET"}
    assert settings["policy"]["origin"] == "default"
    assert all(s["doc"] for s in settings.values())


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (("set", "polcy", "block"), "unknown config key 'polcy'; valid keys: policy"),
        (("set", "policy", "nuke"), "expected rescue | block | warn"),
        (("set", "rescue.max_file_size", "lots"), "expected a size"),
        (("set", "session.ttl", "soon"), "expected a duration"),
        (("set", "rescue.namespace", "rescue"), "expected a ref prefix"),
        (("get", "nope"), "unknown config key"),
    ],
)
def test_bad_keys_and_values_are_one_line_errors_listing_what_is_valid(
    repo: Path, args: tuple[str, ...], needle: str
) -> None:
    res = run_guards("config", *args, cwd=repo)
    assert res.returncode == 2
    assert needle in res.stderr and res.stderr.count("\n") == 1


def test_bad_environment_value_is_a_one_line_error(repo: Path) -> None:
    res = run_guards("config", "get", "policy", cwd=repo, env={"GUARDS_POLICY": "yolo"})
    assert res.returncode == 2 and "GUARDS_POLICY" in res.stderr


def test_broken_toml_file_is_a_one_line_error(repo: Path) -> None:
    (repo / ".git" / "guards").mkdir()
    (repo / ".git" / "guards" / "config.toml").write_text("policy = \n")
    res = run_guards("config", "get", "policy", cwd=repo)
    assert res.returncode == 2 and "not valid TOML" in res.stderr and res.stderr.count("\n") == 1


def test_repo_scope_outside_a_repository_is_refused(tmp_path: Path) -> None:
    res = run_guards("config", "set", "policy", "warn", cwd=tmp_path)
    assert res.returncode == 2 and "--user" in res.stderr
    assert run_guards("config", "get", "policy", cwd=tmp_path).stdout == "rescue\n"


def test_size_and_duration_parsing() -> None:
    assert parse_size("50MiB") == 50 * 1024**2
    assert parse_size(10) == 10
    assert parse_duration("30m") == 1800.0
    assert parse_duration("2w") == 14 * 86400.0
    with pytest.raises(ValueError):
        parse_size("-1")


@pytest.mark.parametrize("xdg", ["set", "unset", "blank"])
def test_the_user_file_is_where_platformdirs_puts_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, xdg: str
) -> None:
    # Computed without importing platformdirs on Linux: it must agree with it.
    from platformdirs import user_config_dir

    from guards import config

    monkeypatch.setenv("HOME", str(tmp_path))
    if xdg == "unset":
        monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    else:
        monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg") if xdg == "set" else "  ")
    expected = os.path.join(user_config_dir("guards"), config.CONFIG_FILE)
    assert config.user_config_file() == expected
    assert config.user_config_path() == Path(expected)
