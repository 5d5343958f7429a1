"""guards install / uninstall: exactly what was set up, nothing of the user's."""

from __future__ import annotations

import json
from pathlib import Path

from guards.integrations.harness_settings import hook_command
from guards.integrations.installation import SAFE_ALIASES, alias_value
from tests.helpers import git, run_guards


def aliases(repo: Path, scope: str = "--local") -> dict[str, str]:
    out = git(repo, "config", scope, "-z", "--get-regexp", r"^alias\.", check=False)
    pairs = [entry.split("\n", 1) for entry in out.split("\0") if entry]
    return {k.removeprefix("alias."): v for k, v in pairs}


def test_install_sets_the_six_safe_aliases_locally(repo: Path) -> None:
    res = run_guards("install", cwd=repo)
    assert res.returncode == 0, res.stderr
    assert aliases(repo) == {name: alias_value(sub) for name, sub in SAFE_ALIASES.items()}
    again = run_guards("install", cwd=repo)
    assert again.stdout == "nothing to do: already set up\n"


def test_dry_run_changes_nothing(repo: Path) -> None:
    res = run_guards("install", "--dry-run", cwd=repo)
    assert res.returncode == 0
    assert res.stdout.count("would set alias.safe-") == 6
    assert aliases(repo) == {}


def test_install_keeps_a_users_own_alias_and_uninstall_leaves_it(repo: Path) -> None:
    git(repo, "config", "alias.safe-reset", "!echo mine")
    git(repo, "config", "alias.st", "status")
    res = run_guards("install", cwd=repo)
    assert "keep your own alias.safe-reset" in res.stdout
    assert aliases(repo)["safe-reset"] == "!echo mine"
    assert run_guards("uninstall", cwd=repo).returncode == 0
    assert aliases(repo) == {"safe-reset": "!echo mine", "st": "status"}


def test_uninstall_leaves_an_alias_the_user_changed_since(repo: Path) -> None:
    run_guards("install", cwd=repo)
    git(repo, "config", "alias.safe-clean", "!echo changed")
    res = run_guards("uninstall", cwd=repo)
    assert "leave alias.safe-clean" in res.stdout
    assert aliases(repo) == {"safe-clean": "!echo changed"}


def test_global_install_and_uninstall(repo: Path, hermetic_seal: Path) -> None:
    before = (hermetic_seal / ".gitconfig").read_text()
    assert run_guards("install", "--global", cwd=repo).returncode == 0
    assert set(aliases(repo, "--global")) == set(SAFE_ALIASES)
    assert aliases(repo) == {}
    assert run_guards("uninstall", "--global", cwd=repo).returncode == 0
    assert aliases(repo, "--global") == {}
    assert "[user]" in (hermetic_seal / ".gitconfig").read_text() and before


def test_shim_install_refuses_to_clobber_a_foreign_file(repo: Path, tmp_path: Path) -> None:
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "git").write_text("#!/bin/sh\necho not ours\n")
    res = run_guards("install", "--no-aliases", "--shim", str(tmp_path / "bin"), cwd=repo)
    assert res.returncode == 2 and "not a guards shim" in res.stderr
    assert (tmp_path / "bin" / "git").read_text() == "#!/bin/sh\necho not ours\n"
    res = run_guards("uninstall", "--shim", str(tmp_path / "bin"), cwd=repo)
    assert res.returncode == 2 and (tmp_path / "bin" / "git").exists()


def test_shim_uninstall_removes_only_the_shim(repo: Path, tmp_path: Path) -> None:
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "other-tool").write_text("keep me")
    run_guards("install", "--no-aliases", "--shim", str(bindir), cwd=repo)
    assert (bindir / "git").exists()
    res = run_guards("uninstall", "--shim", str(bindir), cwd=repo)
    assert res.returncode == 0, res.stderr
    assert sorted(p.name for p in bindir.iterdir()) == ["other-tool"]


def test_outside_a_repository_aliases_need_global(tmp_path: Path) -> None:
    res = run_guards("install", cwd=tmp_path)
    assert res.returncode == 2 and "--global" in res.stderr


def test_uninstall_with_nothing_installed_says_so(repo: Path) -> None:
    res = run_guards("uninstall", cwd=repo)
    assert res.returncode == 0 and "nothing to remove" in res.stdout


def test_install_again_repairs_aliases_an_older_guards_or_interpreter_wrote(repo: Path) -> None:
    old = "!/gone/venv/bin/python3 -m guards run --alias -- reset"
    git(repo, "config", "alias.safe-reset", old)

    res = run_guards("install", cwd=repo)

    assert res.returncode == 0, res.stderr
    assert "update alias.safe-reset (local git config)" in res.stdout
    assert "keep your own" not in res.stdout
    assert aliases(repo)["safe-reset"] == alias_value("reset")


def test_install_again_repairs_harness_hooks_of_another_interpreter(repo: Path) -> None:
    settings = repo / ".claude" / "settings.json"
    settings.parent.mkdir()
    old = "/gone/venv/bin/python3 -m guards.commands.agent_hook claude"
    hook = {"type": "command", "command": old, "timeout": 60}
    settings.write_text(json.dumps({"hooks": {"SessionEnd": [{"hooks": [hook]}]}}))

    res = run_guards("install", "--claude", "--shared", "--no-aliases", cwd=repo)

    assert res.returncode == 0, res.stderr
    doc = json.loads(settings.read_text())
    commands = [h["command"] for g in doc["hooks"]["SessionEnd"] for h in g["hooks"]]
    assert commands == [hook_command("claude")]
