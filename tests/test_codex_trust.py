"""Codex's trust in guards' hooks: `guards install --codex --trust` writes it for our own
entries only (a text edit of config.toml that keeps the user's comments and tables),
install without --trust and `guards doctor` name the step still needed, and a reinstall
from another interpreter never drops trust silently. That our hashes are Codex's own is
checked against the real binary in tests/e2e/test_codex.py."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from guards.integrations import codex_trust, harness_settings
from tests.helpers import disposable_python, doctor_findings, git, run_guards

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

USERS_CONFIG = """\
# my Codex settings
model = "gpt-5.5"  # the one I like

[tui]
# keep this
notifications = true

[projects."/elsewhere"]
trust_level = "untrusted"
"""


def config(home: Path) -> Path:
    return home / ".codex" / "config.toml"


def trusted(home: Path) -> dict[str, str]:
    """key -> trusted_hash in config.toml."""
    doc = tomllib.loads(config(home).read_text())
    return {k: v["trusted_hash"] for k, v in doc.get("hooks", {}).get("state", {}).items()}


def ours(repo: Path) -> dict[str, str]:
    path = repo / ".codex/hooks.json"
    hooks = codex_trust.our_hooks(harness_settings.read_settings(path), path)
    return {h.key: h.hash for h in hooks}


def test_hook_hash_follows_codex_identity() -> None:
    """The identity Codex hashes: event label, matcher (absent where Codex ignores it),
    the handler with its timeout; compact JSON, keys sorted."""
    handler = {"type": "command", "command": "echo hi", "timeout": 60}
    identity = {
        "event_name": "pre_tool_use",
        "hooks": [{"async": False, "command": "echo hi", "timeout": 60, "type": "command"}],
        "matcher": "Bash",
    }
    import hashlib

    text = json.dumps(identity, sort_keys=True, separators=(",", ":"))
    assert codex_trust.hook_hash("PreToolUse", "Bash", handler) == (
        "sha256:" + hashlib.sha256(text.encode()).hexdigest()
    )
    # Stop takes no matcher: a matcher written there changes nothing
    assert codex_trust.hook_hash("Stop", "Bash", handler) == codex_trust.hook_hash(
        "Stop", None, handler
    )
    assert codex_trust.hook_hash("PreToolUse", "Bash", {**handler, "command": "echo ho"}) != (
        codex_trust.hook_hash("PreToolUse", "Bash", handler)
    )


def test_install_without_trust_names_the_one_step_and_changes_no_config(
    repo: Path, hermetic_seal: Path
) -> None:
    res = run_guards("install", "--codex", "--no-aliases", cwd=repo)
    assert res.returncode == 0, res.stderr
    assert "skips them without a word; guards install --codex --trust" in res.stderr
    assert f"Codex does not trust the project {repo}" in res.stderr
    assert not config(hermetic_seal).exists()


def test_trust_writes_our_entries_and_keeps_every_line_of_the_users_config(
    repo: Path, hermetic_seal: Path
) -> None:
    config(hermetic_seal).parent.mkdir()
    config(hermetic_seal).write_text(USERS_CONFIG)
    res = run_guards("install", "--codex", "--trust", "--no-aliases", cwd=repo)
    assert res.returncode == 0, res.stderr
    assert "trust guards' 6 Codex hooks, trust the project" in res.stdout
    text = config(hermetic_seal).read_text()
    assert text.startswith(USERS_CONFIG)  # comments, tables, order: all kept
    assert trusted(hermetic_seal) == ours(repo)
    doc = tomllib.loads(text)
    assert doc["projects"][str(repo)] == {"trust_level": "trusted"}
    assert doc["projects"]["/elsewhere"] == {"trust_level": "untrusted"}
    assert "allow_login_shell" not in doc  # no shim: the login shell is left alone
    again = run_guards("install", "--codex", "--trust", "--no-aliases", cwd=repo)
    assert again.returncode == 0 and "nothing to do" in again.stdout
    assert config(hermetic_seal).read_text() == text
    assert run_guards("doctor", cwd=repo).returncode == 0


def test_a_reinstall_from_another_interpreter_says_trust_was_lost_and_trust_restores_it(
    repo: Path, hermetic_seal: Path, tmp_path: Path
) -> None:
    assert run_guards("install", "--codex", "--trust", "--no-aliases", cwd=repo).returncode == 0
    before = trusted(hermetic_seal)
    venv = disposable_python(tmp_path / "venv").parent

    def install_from(bin_dir: Path, *options: str) -> subprocess.CompletedProcess[str]:
        """`guards install` run by another interpreter (its hooks name that one)."""
        argv = [str(bin_dir / "python3"), "-m", "guards", "install", *options]
        return subprocess.run(argv, cwd=repo, capture_output=True, text=True, check=False)

    res = install_from(venv, "--codex", "--no-aliases")
    assert res.returncode == 0, res.stderr
    assert "Codex no longer trusts 6 of guards' 6 hooks" in res.stderr
    assert "guards install --codex --trust" in res.stderr
    doctor = run_guards("doctor", "--json", cwd=repo)
    assert doctor.returncode == 1
    checks = {f["check"]: f for f in json.loads(doctor.stdout)["findings"]}
    assert checks["codex-hooks-changed"]["level"] == "problem"
    assert checks["codex-hooks-changed"]["fix"] == "guards install --codex --trust"
    res = install_from(venv, "--codex", "--trust", "--no-aliases")
    assert res.returncode == 0, res.stderr
    assert "trust guards' 6 Codex hooks again" in res.stdout
    after = trusted(hermetic_seal)
    assert after == ours(repo) and after.keys() == before.keys() and after != before
    assert config(hermetic_seal).read_text().count("[hooks.state.") == 6  # replaced in place


def test_doctor_reports_untrusted_hooks_and_project_as_problems_with_their_fix(
    repo: Path,
) -> None:
    assert run_guards("install", "--codex", "--no-aliases", cwd=repo).returncode == 0
    res = run_guards("doctor", "--json", cwd=repo)
    assert res.returncode == 1
    checks = {f["check"]: f for f in json.loads(res.stdout)["findings"]}
    for check in ("codex-hooks-untrusted", "codex-project-untrusted"):
        assert checks[check]["level"] == "problem"
        assert checks[check]["fix"].startswith("guards install --codex --trust")


def test_doctor_reports_hooks_the_user_turned_off_as_a_problem_install_leaves_alone(
    repo: Path, hermetic_seal: Path
) -> None:
    """`enabled = false` in Codex's config.toml: Codex skips that hook, so what it guards
    is unguarded; the user's to decide, so install does not turn it back on."""
    assert run_guards("install", "--codex", "--trust", "--no-aliases", cwd=repo).returncode == 0
    assert "codex-hooks-disabled" not in doctor_findings(repo)
    text = config(hermetic_seal).read_text()
    first = text.index("trusted_hash")
    config(hermetic_seal).write_text(text[:first] + "enabled = false\n" + text[first:])
    [finding] = doctor_findings(repo)["codex-hooks-disabled"]
    assert finding["level"] == "problem"
    assert "1 of guards' Codex hooks" in str(finding["message"])
    assert str(finding["fix"]).startswith("remove their enabled = false")
    assert run_guards("install", "--codex", "--trust", "--no-aliases", cwd=repo).returncode == 0
    assert "codex-hooks-disabled" in doctor_findings(repo)


def test_user_hooks_are_trusted_without_a_project(
    tmp_path: Path, hermetic_seal: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "codex-home"
    monkeypatch.setenv("CODEX_HOME", str(home))
    res = run_guards("install", "--codex", "--user", "--trust", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    doc = tomllib.loads((home / "config.toml").read_text())
    assert "projects" not in doc
    hooks = home / "hooks.json"
    keys = {h.key for h in codex_trust.our_hooks(harness_settings.read_settings(hooks), hooks)}
    assert set(doc["hooks"]["state"]) == keys
    assert all(k.startswith(f"{home}/hooks.json:") for k in keys)


def test_with_a_shim_trust_keeps_it_on_codex_shell_path(repo: Path, hermetic_seal: Path) -> None:
    config(hermetic_seal).parent.mkdir()
    config(hermetic_seal).write_text(USERS_CONFIG)
    shim = repo.parent / "shim"
    res = run_guards("install", "--shim", str(shim), "--codex", "--trust", "--no-aliases", cwd=repo)
    assert res.returncode == 0, res.stderr
    assert "set allow_login_shell = false" in res.stdout
    text = config(hermetic_seal).read_text()
    assert tomllib.loads(text)["allow_login_shell"] is False
    # a top-level key, so before the user's first table
    assert text.index("allow_login_shell") < text.index("[tui]")


def test_doctor_reports_a_shim_that_codex_login_shell_loses(
    repo: Path, hermetic_seal: Path
) -> None:
    shim = repo.parent / "shim"
    assert run_guards("install", "--codex", "--trust", "--no-aliases", cwd=repo).returncode == 0
    res = run_guards("install", "--shim", str(shim), "--no-aliases", "--codex", cwd=repo)
    assert "allow_login_shell = false" in res.stderr
    res = run_guards("doctor", "--json", cwd=repo)
    checks = {f["check"]: f for f in json.loads(res.stdout)["findings"]}
    assert checks["codex-login-shell"]["level"] == "problem"


def test_a_linked_worktree_is_trusted_as_its_main_checkout(
    repo: Path, hermetic_seal: Path, tmp_path: Path
) -> None:
    """Codex looks a linked worktree up under [projects] by its main checkout."""
    linked = tmp_path / "linked"
    git(repo, "worktree", "add", "-q", str(linked))
    res = run_guards("install", "--codex", "--trust", "--no-aliases", cwd=linked)
    assert res.returncode == 0, res.stderr
    doc = tomllib.loads(config(hermetic_seal).read_text())
    assert list(doc["projects"]) == [str(repo)]
    assert set(doc["hooks"]["state"]) == set(ours(linked))


def test_an_unparsable_config_is_refused_in_one_line_and_left_alone(
    repo: Path, hermetic_seal: Path
) -> None:
    config(hermetic_seal).parent.mkdir()
    config(hermetic_seal).write_text("model = \n")
    res = run_guards("install", "--codex", "--trust", "--no-aliases", cwd=repo)
    assert res.returncode != 0
    assert "is not valid TOML" in res.stderr and "Traceback" not in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1
    assert config(hermetic_seal).read_text() == "model = \n"


def test_a_config_that_no_text_edit_can_extend_is_refused_with_the_lines_to_add(
    repo: Path, hermetic_seal: Path
) -> None:
    """hooks.state written as an inline table cannot take another table: refused, with
    what to add by hand, the file unchanged."""
    original = 'hooks = { state = { "x:stop:0:0" = { trusted_hash = "sha256:0" } } }\n'
    config(hermetic_seal).parent.mkdir()
    config(hermetic_seal).write_text(original)
    res = run_guards("install", "--codex", "--trust", "--no-aliases", cwd=repo)
    assert res.returncode != 0
    assert "add it yourself:" in res.stderr and "trusted_hash = " in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1
    assert config(hermetic_seal).read_text() == original


def test_trust_without_codex_is_a_usage_error(repo: Path) -> None:
    res = run_guards("install", "--claude", "--trust", cwd=repo)
    assert res.returncode != 0 and "--trust goes with --codex" in res.stderr


def test_edit_replaces_a_key_in_place_and_adds_to_an_existing_table() -> None:
    text = '[hooks.state."k"]\n# why\ntrusted_hash = "old"\nenabled = true\n[other]\nx = 1\n'
    changes: list[codex_trust.Change] = [
        (("hooks", "state", "k"), "trusted_hash", "new"),
        (("other",), "y", "2"),
        ((), "allow_login_shell", False),
    ]
    assert codex_trust.edit(text, changes) == (
        'allow_login_shell = false\n[hooks.state."k"]\n# why\ntrusted_hash = "new"\n'
        'enabled = true\n[other]\ny = "2"\nx = 1\n'
    )


def test_trust_never_covers_an_entry_that_only_looks_like_ours(
    repo: Path, hermetic_seal: Path
) -> None:
    """A project's hooks.json comes with the repository: a look-alike of our hook (here
    async, so it would not block a command) beside ours is left for the user to judge."""
    assert run_guards("install", "--codex", "--no-aliases", cwd=repo).returncode == 0
    path = repo / ".codex/hooks.json"
    doc = json.loads(path.read_text())
    look_alike = {**harness_settings.installed_hook("codex", "PreToolUse"), "async": True}
    doc["hooks"]["PreToolUse"].append({"matcher": "Bash", "hooks": [look_alike]})
    path.write_text(json.dumps(doc))
    res = run_guards("install", "--codex", "--trust", "--no-aliases", cwd=repo)
    assert res.returncode == 0, res.stderr
    keys = set(trusted(hermetic_seal))
    assert f"{path}:pre_tool_use:0:0" in keys and len(keys) == 6
    assert f"{path}:pre_tool_use:1:0" not in keys
    doctor = run_guards("doctor", "--json", cwd=repo)
    checks = {f["check"]: f for f in json.loads(doctor.stdout)["findings"]}
    assert "1 of guards' 7 hooks" in checks["codex-hooks-untrusted"]["message"]


def test_uninstall_takes_our_trust_out_and_leaves_the_users(
    repo: Path, hermetic_seal: Path
) -> None:
    config(hermetic_seal).parent.mkdir()
    config(hermetic_seal).write_text(USERS_CONFIG)
    assert run_guards("install", "--codex", "--trust", "--no-aliases", cwd=repo).returncode == 0
    path = repo / ".codex/hooks.json"
    theirs = f"{path}:stop:0:0"
    text = config(hermetic_seal).read_text()
    text = text.replace(
        f"[hooks.state.{json.dumps(theirs)}]\n", f"[hooks.state.{json.dumps(theirs)}]\n# mine\n"
    )
    mine = ours(repo)[theirs]
    config(hermetic_seal).write_text(text.replace(mine, "sha256:reviewed-by-me"))
    res = run_guards("uninstall", "--codex", cwd=repo)
    assert res.returncode == 0, res.stderr
    assert "remove Codex's trust in guards' 5 hooks" in res.stdout
    after = config(hermetic_seal).read_text()
    assert after.startswith(USERS_CONFIG)
    assert trusted(hermetic_seal) == {theirs: "sha256:reviewed-by-me"}  # changed: theirs
    assert tomllib.loads(after)["projects"][str(repo)] == {"trust_level": "trusted"}
    assert after.count("[hooks.state.") == 1


def test_install_without_trust_over_an_unparsable_config_says_it_cannot_tell(
    repo: Path, hermetic_seal: Path
) -> None:
    config(hermetic_seal).parent.mkdir()
    config(hermetic_seal).write_text("model = \n")
    res = run_guards("install", "--codex", "--no-aliases", cwd=repo)
    assert res.returncode == 0, res.stderr
    assert "cannot tell whether Codex trusts guards' hooks" in res.stderr
    assert "is not valid TOML" in res.stderr
    assert config(hermetic_seal).read_text() == "model = \n"
    doctor = run_guards("doctor", "--json", cwd=repo)
    checks = {f["check"]: f for f in json.loads(doctor.stdout)["findings"]}
    assert doctor.returncode == 1 and checks["codex-config"]["level"] == "problem"
