"""Command-line analysis: argv read the way git reads it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from guards.errors import UsageError
from guards.predict import cmdline
from guards.predict.cmdline import could_destroy, parse
from guards.predict.options import parse_options
from tests.helpers import git, make_repo


def p(repo: Path | str, *argv: str, env: dict[str, str] | None = None) -> cmdline.GitCommand:
    full = dict(os.environ)
    full.update(env or {})
    return parse(list(argv), full, str(repo))


def destroys(repo: Path, *argv: str, env: dict[str, str] | None = None) -> bool:
    return could_destroy(p(repo, *argv, env=env))


# ---------------------------------------------------------------------------
# global options


def test_global_options_are_kept_in_order_and_skipped(repo: Path) -> None:
    argv = [
        "-C",
        "src",
        "-c",
        "core.quotepath=off",
        "--no-pager",
        "-p",
        "--literal-pathspecs",
        "--no-replace-objects",
        "--namespace",
        "ns",
        "--config-env=user.name=HOME",
        "reset",
        "--hard",
    ]
    cmd = p(repo, *argv)
    assert cmd.subcommand == "reset"
    assert cmd.args == ["--hard"]
    assert cmd.global_options == argv[:-2]
    assert cmd.cwd == str(repo / "src")
    assert cmd.origin_cwd == str(repo)


def test_repeated_relative_C_accumulates_and_empty_C_is_ignored(repo: Path) -> None:
    cmd = p(repo, "-C", "src", "-C", "..", "-C", "", "-C", "src", "status")
    assert cmd.cwd == str(repo / "src")
    assert p(repo, "-C", str(repo / "src"), "status").cwd == str(repo / "src")


def test_git_dir_and_work_tree_options_are_global(repo: Path) -> None:
    cmd = p("/", "--git-dir", str(repo / ".git"), f"--work-tree={repo}", "clean", "-fdx")
    assert cmd.subcommand == "clean"
    assert cmd.args == ["-fdx"]
    assert could_destroy(cmd)


def test_no_subcommand_version_help_and_exec_path_destroy_nothing(repo: Path) -> None:
    assert p(repo).subcommand is None
    assert p(repo, "--version").subcommand == "version"
    assert p(repo, "-h").subcommand == "help"
    assert p(repo, "--exec-path").subcommand is None
    cmd = p(repo, "--exec-path=/nowhere", "--bare", "status")
    assert cmd.subcommand == "status"
    for argv in ([], ["--version"], ["--exec-path"], ["--html-path"], ["--list-cmds=main"]):
        assert not destroys(repo, *argv)


def test_unknown_or_incomplete_global_options_are_usage_errors(repo: Path) -> None:
    with pytest.raises(UsageError):
        p(repo, "--frobnicate", "status")
    with pytest.raises(UsageError):
        p(repo, "-C")
    with pytest.raises(UsageError):
        p(repo, "-c")


# ---------------------------------------------------------------------------
# aliases


def test_alias_from_repo_config_is_expanded(repo: Path) -> None:
    git(repo, "config", "alias.nuke", "reset --hard")
    cmd = p(repo, "nuke", "HEAD~0")
    assert cmd.subcommand == "reset"
    assert cmd.args == ["--hard", "HEAD~0"]
    assert cmd.aliases == ["nuke"]
    assert could_destroy(cmd)


def test_alias_chains_resolve_with_the_same_global_options(repo: Path) -> None:
    cmd = p(repo, "-c", "alias.a=b -q", "-c", "alias.b=c", "-c", "alias.c=clean -fd", "a", "x")
    assert (cmd.subcommand, cmd.args, cmd.aliases) == ("clean", ["-fd", "-q", "x"], ["a", "b", "c"])


def test_alias_from_GIT_CONFIG_COUNT_in_the_environment(repo: Path) -> None:
    env = {
        "GIT_CONFIG_COUNT": "1",
        "GIT_CONFIG_KEY_0": "alias.wipe",
        "GIT_CONFIG_VALUE_0": "checkout -f",
    }
    cmd = p(repo, "wipe", "main", env=env)
    assert (cmd.subcommand, cmd.args) == ("checkout", ["-f", "main"])


def test_alias_from_an_included_file_and_quoting(repo: Path, tmp_path: Path) -> None:
    inc = tmp_path / "inc.cfg"
    inc.write_text("[alias]\n\tsq = stash push -m 'two words' -- \\\"a b\\\"\n")
    git(repo, "config", "include.path", str(inc))
    cmd = p(repo, "sq")
    assert cmd.args == ["push", "-m", "two words", "--", "a b"]


def test_alias_found_in_the_repository_named_by_C(repo: Path, tmp_path: Path) -> None:
    git(repo, "config", "alias.zap", "restore .")
    assert p(tmp_path, "-C", str(repo), "zap").subcommand == "restore"
    assert p(tmp_path, "zap").subcommand == "zap"  # outside: no such alias


def test_an_alias_cannot_shadow_a_builtin(repo: Path) -> None:
    cmd = p(repo, "-c", "alias.status=reset --hard", "status")
    assert cmd.subcommand == "status"
    assert not could_destroy(cmd)


def test_recursive_alias_is_a_usage_error(repo: Path) -> None:
    with pytest.raises(UsageError, match="recursive"):
        p(repo, "-c", "alias.x=y", "-c", "alias.y=x", "x")


def test_shell_alias_is_opaque_and_could_destroy(repo: Path) -> None:
    cmd = p(repo, "-c", "alias.boom=!git reset --hard && echo", "boom", "arg")
    assert cmd.shell_alias == "git reset --hard && echo"
    assert cmd.subcommand is None
    assert cmd.args == ["arg"]
    assert could_destroy(cmd)
    chained = p(repo, "-c", "alias.a=b", "-c", "alias.b=!true", "a")
    assert chained.shell_alias == "true"


def test_unknown_command_is_kept_and_harmless(repo: Path) -> None:
    cmd = p(repo, "frobnicate", "--hard")
    assert cmd.subcommand == "frobnicate"
    assert not could_destroy(cmd)


def test_split_cmdline_matches_git_quoting() -> None:
    assert cmdline.split_cmdline(r"""a 'b c' "d \" e" f\ g ''""") == [
        "a",
        "b c",
        'd " e',
        "f g",
        "",
    ]
    with pytest.raises(UsageError):
        cmdline.split_cmdline("a 'b")


# ---------------------------------------------------------------------------
# subcommand options


def test_unambiguous_long_prefixes_resolve() -> None:
    assert parse_options("reset", ["--ha"]).has("hard")
    assert parse_options("clean", ["--forc"]).has("force")
    assert parse_options("switch", ["--disc", "x"]).has("discard-changes")
    assert parse_options("restore", ["--sour=HEAD", "."]).value("source") == "HEAD"
    assert parse_options("stash-push", ["--include-u"]).has("include-untracked")
    assert parse_options("checkout", ["--no-overl", "x"]).values["overlay"] == [False]
    assert parse_options("reset", ["--h"]).has("hard")  # the only option starting with h


def test_ambiguous_or_unknown_long_options_are_reported() -> None:
    # git: "ambiguous option: no-ov (could be --no-overlay or --no-overwrite-ignore)"
    assert parse_options("checkout", ["--no-ov", "x"]).unknown == ["--no-ov"]
    assert parse_options("clean", ["--bogus"]).unknown == ["--bogus"]


def test_combined_short_flags_and_repeats() -> None:
    o = parse_options("clean", ["-ffdx"])
    assert o.count("force") == 2 and o.has("d") and o.has("x")
    o = parse_options("clean", ["-fde*.o", "-e", "*.a"])
    assert o.values["exclude"] == ["*.o", "*.a"]
    o = parse_options("checkout", ["-fbnew", "start"])
    assert o.has("force") and o.value("b") == "new" and o.positionals == ["start"]


def test_double_dash_separates_paths() -> None:
    o = parse_options("checkout", ["main", "--", "--hard", "-f"])
    assert o.positionals == ["main"]
    assert o.after_dashdash == ["--hard", "-f"]
    assert not o.has("force")


def test_options_after_positionals_still_count() -> None:
    assert parse_options("reset", ["HEAD", "--hard"]).has("hard")


# ---------------------------------------------------------------------------
# could_destroy


HARMLESS = [
    ["status"],
    ["log", "--oneline"],
    ["diff", "HEAD"],
    ["add", "-A"],
    ["commit", "-m", "x"],
    ["fetch"],
    ["stash", "list"],
    ["stash", "show", "-p"],
    ["stash", "apply"],
    ["branch", "-d", "topic"],
    ["branch", "topic"],
    ["branch", "--list", "-f"],
    ["checkout", "-b", "new"],
    ["checkout"],
    ["switch", "-c", "new"],
    ["reset", "--soft", "HEAD~1"],
    ["clean", "-n", "-fdx"],
    ["clean", "-d"],
    ["rm", "-n", "-f", "file"],
    ["worktree", "list"],
    ["worktree", "prune"],
    ["pull"],
    ["cherry-pick", "--continue"],
    ["merge", "--continue"],
    ["submodule", "status"],
    ["submodule", "update"],
    ["sparse-checkout", "list"],
    ["sparse-checkout", "disable"],
    ["fetch", "origin"],
    ["fetch", "origin", "main"],
    ["push", "origin", "main"],
    ["push", "--dry-run", ".", ":x"],
    ["reflog", "show"],
    ["bisect", "log"],
    ["read-tree", "-n", "-u", "HEAD"],
    ["checkout-index", "-a"],
    ["apply", "--check", "x.patch"],
    ["worktree", "add", "p"],
    ["am", "--continue"],
    ["reset", "-h"],
    ["reset", "--help"],
    ["clean", "-fdx", "-h"],
    ["stash", "drop", "-h"],
    ["worktree", "remove", "--help"],
]

DESTRUCTIVE = [
    ["reset", "--hard"],
    ["reset"],
    ["reset", "-p"],
    ["checkout", "--", "."],
    ["checkout", "-f", "main"],
    ["checkout", "main"],
    ["checkout", "-B", "topic"],
    ["switch", "--discard-changes", "main"],
    ["switch", "main"],
    ["restore", "."],
    ["clean", "-fdx"],
    ["clean", "-i"],
    ["stash"],
    ["stash", "-u"],
    ["stash", "drop"],
    ["stash", "clear"],
    ["stash", "pop"],
    ["rm", "-f", "x"],
    ["rm", "--cached", "x"],
    ["mv", "-f", "a", "b"],
    ["worktree", "remove", "wt"],
    ["branch", "-D", "topic"],
    ["branch", "-d", "-f", "topic"],
    ["branch", "-M", "a", "b"],
    ["branch", "-f", "topic", "main"],
    ["rebase", "--autostash", "main"],
    ["rebase", "--abort"],
    ["merge", "--abort"],
    ["merge", "main"],
    ["cherry-pick", "--abort"],
    ["revert", "--skip"],
    ["cherry-pick", "abc"],
    ["revert", "HEAD"],
    ["gc"],
    ["sparse-checkout", "add", "dir"],
    ["fetch", ".", "+a:b"],
    ["push", ".", ":b"],
    ["push", "origin", "--delete", "b"],
    ["reflog", "expire", "--all"],
    ["reflog", "delete", "stash@{1}"],
    ["bisect", "run", "true"],
    ["filter-branch", "HEAD"],
    ["read-tree", "-u", "--reset", "HEAD"],
    ["checkout-index", "-f", "-a"],
    ["apply", "x.patch"],
    ["rebase", "-x", "true", "main"],
    ["submodule", "foreach", "true"],
    ["mv", "a", "b"],
    ["rm", "file"],
    ["worktree", "add", "-B", "b", "p"],
    ["am", "--abort"],
    ["pull", "--rebase", "--autostash"],
    ["submodule", "deinit", "-f", "x"],
    ["submodule", "update", "--force"],
    ["sparse-checkout", "set", "a"],
    ["sparse-checkout", "reapply"],
]


@pytest.mark.parametrize("argv", HARMLESS, ids=[" ".join(a) for a in HARMLESS])
def test_harmless_commands_cannot_destroy(repo: Path, argv: list[str]) -> None:
    assert not destroys(repo, *argv)


@pytest.mark.parametrize("argv", DESTRUCTIVE, ids=[" ".join(a) for a in DESTRUCTIVE])
def test_destructive_commands_could_destroy(repo: Path, argv: list[str]) -> None:
    cmd = p(repo, *argv)
    assert could_destroy(cmd)
    assert cmd.subcommand in cmdline.DESTRUCTIVE_SUBCOMMANDS


def test_config_turns_harmless_commands_destructive(repo: Path) -> None:
    assert not destroys(repo, "clean", "-d")
    assert destroys(repo, "-c", "clean.requireForce=false", "clean", "-d")
    git(repo, "config", "clean.requireForce", "no")
    assert destroys(repo, "clean", "-d")
    assert not destroys(repo, "clean", "-n")
    # (rebase itself could always destroy: the switch to the new base overwrites ignored
    # files in its way; with autostash it also stashes.)
    assert destroys(repo, "-c", "rebase.autoStash=true", "rebase", "main")
    assert destroys(repo, "-c", "pull.rebase=true", "-c", "rebase.autostash=1", "pull")
    assert not destroys(repo, "-c", "rebase.autostash=1", "pull", "--no-rebase")
    assert destroys(repo, "-c", "merge.autostash=yes", "pull")
    assert destroys(repo, "-c", "branch.main.rebase=true", "-c", "rebase.autostash=on", "pull")
    env = {
        "GIT_CONFIG_COUNT": "1",
        "GIT_CONFIG_KEY_0": "rebase.autoStash",
        "GIT_CONFIG_VALUE_0": "true",
    }
    assert destroys(repo, "rebase", "main", env=env)


def test_settings_are_read_in_the_repository_git_will_use(repo: Path, tmp_path: Path) -> None:
    git(repo, "config", "clean.requireForce", "false")
    other = make_repo(tmp_path / "other")
    assert destroys(other, "-C", str(repo), "clean", "-d")
    assert not destroys(other, "clean", "-d")
    env = {"GIT_DIR": str(repo / ".git"), "GIT_WORK_TREE": str(repo)}
    assert destroys(other, "clean", "-d", env=env)


def test_every_could_destroy_subcommand_is_listed() -> None:
    # The shim passes everything outside this set straight to git.
    for name in ("reset", "checkout", "switch", "restore", "clean", "stash", "rm", "mv"):
        assert name in cmdline.DESTRUCTIVE_SUBCOMMANDS
    assert "status" not in cmdline.DESTRUCTIVE_SUBCOMMANDS
    assert cmdline.DESTRUCTIVE_SUBCOMMANDS <= cmdline.KNOWN_COMMANDS
