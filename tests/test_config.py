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


def test_get_of_a_key_with_no_value_prints_nothing_and_exits_1(repo: Path) -> None:
    res = run_guards("config", "get", "rescue.remote", cwd=repo)
    assert (res.returncode, res.stdout, res.stderr) == (1, "", "")
    res = run_guards("config", "get", "--repo", "policy", cwd=repo)
    assert (res.returncode, res.stdout) == (1, "")
    run_guards("config", "set", "rescue.remote", "origin", cwd=repo)
    res = run_guards("config", "get", "rescue.remote", cwd=repo)
    assert (res.returncode, res.stdout) == (0, "origin\n")


def test_unset_of_a_key_that_is_not_set_exits_1(repo: Path) -> None:
    assert run_guards("config", "unset", "policy", cwd=repo).returncode == 1


def test_set_and_unset_say_what_they_did_in_which_file(repo: Path) -> None:
    res = run_guards("config", "set", "session.ttl", "7200", cwd=repo)
    path = repo / ".git" / "guards" / "config.toml"
    assert (res.returncode, res.stdout) == (0, f"session.ttl = 2h (repository file {path})\n")
    res = run_guards("config", "unset", "session.ttl", cwd=repo)
    assert res.stdout == f"session.ttl unset (repository file {path})\n"


def test_set_warns_when_a_higher_origin_overrides_the_value(repo: Path) -> None:
    res = run_guards("config", "set", "policy", "warn", cwd=repo, env={"GUARDS_POLICY": "block"})
    assert res.returncode == 0
    assert res.stderr == "guards: warning: GUARDS_POLICY in the environment overrides policy\n"
    res = run_guards("config", "set", "--user", "policy", "block", cwd=repo)
    assert "repository's file" in res.stderr and "overrides policy" in res.stderr


def test_a_bad_value_is_one_error_line_with_one_prefix(repo: Path) -> None:
    res = run_guards("config", "set", "policy", "nuke", cwd=repo)
    assert res.stderr == ("guards: bad value 'nuke' for policy: expected rescue | block | warn\n")


def test_list_shows_sizes_and_durations_in_units_and_json_keeps_numbers(repo: Path) -> None:
    res = run_guards("config", "list", cwd=repo)
    rows = {line.split()[0]: line.split()[1:] for line in res.stdout.splitlines()[1:]}
    assert rows["rescue.max_file_size"][:2] == ["100", "MiB"]
    assert rows["rescue.max_total_size"][:2] == ["2", "GiB"]
    assert rows["doctor.stale_after"][0] == "14d"
    assert rows["session.ttl"][0] == "30m"
    res = run_guards("config", "list", "--json", cwd=repo)
    settings = {s["key"]: s["value"] for s in json.loads(res.stdout)["settings"]}
    assert settings["rescue.max_file_size"] == "104857600"
    assert settings["doctor.stale_after"] == "1209600"


def test_what_list_shows_reads_back_as_the_same_value() -> None:
    from guards.config import show_duration, show_size

    for size in (0, 1000, 1024, 5 * 1024**2, 3 * 1024**3, 1024**2 + 1):
        assert parse_size(show_size(size)) == size
    for seconds in (0.0, 1.5, 90.0, 1800.0, 7200.0, 14 * 86400.0):
        assert parse_duration(show_duration(seconds)) == seconds


def test_command_line_durations_need_a_unit() -> None:
    with pytest.raises(ValueError, match="with its unit"):
        parse_duration("30", unit_required=True)
    assert parse_duration("30d", unit_required=True) == 30 * 86400.0
    assert parse_duration("0", unit_required=True) == 0.0
