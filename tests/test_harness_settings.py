"""guards install/uninstall --claude/--codex: our hooks in, then out, nothing else touched."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from guards.integrations import harness_settings
from tests.helpers import run_guards

USERS_OWN = {
    "model": "opus",
    "permissions": {"allow": ["Bash(npm test)"]},
    "hooks": {
        "PreToolUse": [
            {"matcher": "Bash", "hooks": [{"type": "command", "command": "my-linter --bash"}]}
        ],
        "Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}],
    },
}


def our_commands(doc: dict[str, Any]) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for event, groups in doc.get("hooks", {}).items():
        for group in groups:
            for hook in group["hooks"]:
                if harness_settings.is_ours(hook):
                    found.setdefault(event, []).append(group.get("matcher", ""))
    return found


def test_claude_project_install_merges_and_uninstall_restores_the_users_file(
    repo: Path,
) -> None:
    settings = repo / ".claude/settings.json"
    settings.parent.mkdir()
    settings.write_text(json.dumps(USERS_OWN, indent=2))
    res = run_guards("install", "--claude", "--shared", "--no-aliases", cwd=repo)
    assert res.returncode == 0, res.stderr
    doc = json.loads(settings.read_text())
    assert our_commands(doc) == {
        "PreToolUse": ["Bash|Write|Edit|MultiEdit|NotebookEdit"],
        "PostToolUse": ["Bash|Write|Edit|MultiEdit|NotebookEdit"],
        "PostToolUseFailure": ["Bash"],
        "SessionStart": [""],
        "UserPromptSubmit": [""],
        "Stop": [""],
        "SessionEnd": [""],
    }
    assert doc["hooks"]["PreToolUse"][0] == USERS_OWN["hooks"]["PreToolUse"][0]
    assert doc["model"] == "opus" and doc["permissions"] == USERS_OWN["permissions"]
    again = run_guards("install", "--claude", "--shared", "--no-aliases", cwd=repo)
    assert again.stdout == "nothing to do: already set up\n"
    res = run_guards("uninstall", "--claude", cwd=repo)
    assert res.returncode == 0, res.stderr
    assert json.loads(settings.read_text()) == USERS_OWN


def test_reinstall_adds_the_events_a_newer_guards_hooks(repo: Path) -> None:
    """Settings written by an older guards lack PostToolUseFailure: install adds it alone."""
    assert run_guards("install", "--claude", "--no-aliases", cwd=repo).returncode == 0
    settings = repo / ".claude/settings.local.json"
    doc = json.loads(settings.read_text())
    del doc["hooks"]["PostToolUseFailure"]
    settings.write_text(json.dumps(doc))
    res = run_guards("install", "--claude", "--no-aliases", cwd=repo)
    assert res.returncode == 0, res.stderr
    assert "hooks (PostToolUseFailure)" in res.stdout
    assert our_commands(json.loads(settings.read_text()))["PostToolUseFailure"] == ["Bash"]


def test_reinstall_moves_our_hook_to_the_new_matcher_without_doubling_it(repo: Path) -> None:
    """An older guards hooked PreToolUse for Bash alone; its group may hold a user's hook."""
    assert run_guards("install", "--claude", "--codex", "--no-aliases", cwd=repo).returncode == 0
    for name, old in ((".claude/settings.local.json", "Bash"), (".codex/hooks.json", "Bash")):
        settings = repo / name
        doc = json.loads(settings.read_text())
        [group] = doc["hooks"]["PreToolUse"]
        group["matcher"] = old
        group["hooks"].append({"type": "command", "command": "my-linter"})
        settings.write_text(json.dumps(doc))
    res = run_guards("install", "--claude", "--codex", "--no-aliases", cwd=repo)
    assert res.returncode == 0, res.stderr
    claude = json.loads((repo / ".claude/settings.local.json").read_text())
    codex = json.loads((repo / ".codex/hooks.json").read_text())
    assert our_commands(claude)["PreToolUse"] == ["Bash|Write|Edit|MultiEdit|NotebookEdit"]
    assert our_commands(codex)["PreToolUse"] == ["Bash|apply_patch"]
    for doc in (claude, codex):
        assert doc["hooks"]["PreToolUse"][0] == {
            "matcher": "Bash",
            "hooks": [{"type": "command", "command": "my-linter"}],
        }


def test_claude_user_install_writes_the_home_settings(repo: Path, hermetic_seal: Path) -> None:
    res = run_guards("install", "--claude", "--user", "--no-aliases", cwd=repo)
    assert res.returncode == 0, res.stderr
    settings = hermetic_seal / ".claude/settings.json"
    hook = json.loads(settings.read_text())["hooks"]["PreToolUse"][0]["hooks"][0]
    assert hook["type"] == "command"
    assert hook["command"] == harness_settings.event_command("claude", "PreToolUse")
    assert "_guards_gate" in hook["command"]  # the shell gate first (the tool-start event)
    assert "from guards.commands.agent_hook import fast_main" in hook["command"]
    assert "' claude; fi" in hook["command"]  # the harness, after the launcher
    assert not (repo / ".claude").exists()
    assert run_guards("uninstall", "--claude", "--user", cwd=repo).returncode == 0
    assert json.loads(settings.read_text()) == {}


def test_codex_install_writes_hooks_json_with_apply_patch(repo: Path) -> None:
    res = run_guards("install", "--codex", "--no-aliases", cwd=repo)
    assert res.returncode == 0, res.stderr
    doc = json.loads((repo / ".codex/hooks.json").read_text())
    assert our_commands(doc)["PostToolUse"] == ["Bash|apply_patch"]
    # Codex 0.171 sends SessionEnd, and clamps (and reports) a timeout over 3 s.
    assert doc["hooks"]["SessionEnd"][0]["hooks"][0]["timeout"] == 3
    command = doc["hooks"]["PreToolUse"][0]["hooks"][0]["command"]
    assert command == harness_settings.event_command("codex", "PreToolUse")


def test_plain_uninstall_also_takes_our_project_hooks_out(repo: Path) -> None:
    assert run_guards("install", "--claude", "--codex", cwd=repo).returncode == 0
    res = run_guards("uninstall", cwd=repo)
    assert res.returncode == 0, res.stderr
    assert json.loads((repo / ".claude/settings.local.json").read_text()) == {}
    assert json.loads((repo / ".codex/hooks.json").read_text()) == {}


def test_dry_run_shows_the_plan_and_writes_nothing(repo: Path) -> None:
    res = run_guards("install", "--claude", "--no-aliases", "--dry-run", cwd=repo)
    assert res.returncode == 0
    assert "would add the guards claude hooks" in res.stdout
    assert not (repo / ".claude").exists()


def test_invalid_settings_are_left_alone_with_a_one_line_error(repo: Path) -> None:
    settings = repo / ".claude/settings.json"
    settings.parent.mkdir()
    settings.write_text("{ not json")
    res = run_guards("install", "--claude", "--shared", "--no-aliases", cwd=repo)
    assert res.returncode != 0
    assert len(res.stderr.strip().splitlines()) == 1 and "Traceback" not in res.stderr
    assert settings.read_text() == "{ not json"


def test_remove_keeps_a_users_hook_that_shares_a_group_with_ours() -> None:
    doc: dict[str, Any] = {
        "hooks": {
            "PostToolUse": [
                {
                    "matcher": "Write",
                    "hooks": [
                        {"type": "command", "command": "prettier --write"},
                        {"type": "command", "command": "guards agent-hook claude"},
                    ],
                }
            ]
        }
    }
    assert harness_settings.remove(doc) == ["PostToolUse"]
    assert doc == {
        "hooks": {
            "PostToolUse": [
                {"matcher": "Write", "hooks": [{"type": "command", "command": "prettier --write"}]}
            ]
        }
    }


def test_outside_a_repository_harness_hooks_go_to_the_user(
    tmp_path: Path, hermetic_seal: Path
) -> None:
    res = run_guards("install", "--codex", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert (hermetic_seal / ".codex/hooks.json").exists()


def test_gemini_user_install_writes_the_user_s_settings_and_keeps_their_own(
    repo: Path, hermetic_seal: Path
) -> None:
    """`--user`: ~/.gemini/settings.json, the user's own settings kept; uninstall takes
    only ours out."""
    settings = hermetic_seal / ".gemini/settings.json"
    settings.parent.mkdir(parents=True, exist_ok=True)
    theirs = {"security": {"auth": {"selectedType": "gemini-api-key"}}}
    settings.write_text(json.dumps(theirs))
    res = run_guards("install", "--gemini", "--user", "--no-aliases", cwd=repo)
    assert res.returncode == 0, res.stderr
    assert not (repo / ".gemini").exists()
    doc = json.loads(settings.read_text())
    assert doc["security"] == theirs["security"]
    project = run_guards("install", "--gemini", "--no-aliases", cwd=repo)
    assert project.returncode == 0, project.stderr
    # the events, matchers and timeouts of a project install (pinned by the test below)
    assert doc["hooks"] == json.loads((repo / ".gemini/settings.json").read_text())["hooks"]
    assert run_guards("uninstall", "--gemini", "--user", cwd=repo).returncode == 0
    assert json.loads(settings.read_text()) == theirs


def test_gemini_install_writes_settings_json_in_milliseconds_and_warns_of_trust(
    repo: Path, hermetic_seal: Path
) -> None:
    res = run_guards("install", "--gemini", "--no-aliases", cwd=repo)
    assert res.returncode == 0, res.stderr
    doc = json.loads((repo / ".gemini/settings.json").read_text())
    assert our_commands(doc) == {
        "BeforeTool": ["^(run_shell_command|write_file|replace)$"],
        "AfterTool": ["^(run_shell_command|write_file|replace)$"],
        "SessionStart": [""],
        "BeforeAgent": [""],
        "AfterAgent": [""],
        "SessionEnd": [""],
    }
    assert {h["timeout"] for g in doc["hooks"].values() for h in g[0]["hooks"]} == {60000}
    trusted = hermetic_seal / ".gemini/trustedFolders.json"
    assert f'"{repo}": "TRUST_FOLDER" to {trusted}' in res.stderr
    trusted.parent.mkdir(parents=True, exist_ok=True)
    trusted.write_text(json.dumps({str(repo.parent): "TRUST_FOLDER"}))
    again = run_guards("install", "--gemini", "--no-aliases", cwd=repo)
    assert "trust" not in again.stderr.lower()
    trusted.write_text(json.dumps({str(repo.parent): "TRUST_FOLDER", str(repo): "DO_NOT_TRUST"}))
    assert "does not trust" in run_guards("install", "--gemini", cwd=repo).stderr
    res = run_guards("uninstall", "--gemini", cwd=repo)
    assert res.returncode == 0, res.stderr
    assert json.loads((repo / ".gemini/settings.json").read_text()) == {}


def test_claude_install_writes_the_personal_settings_and_says_what_it_set_up(
    repo: Path,
) -> None:
    res = run_guards("install", "--claude", cwd=repo)

    assert res.returncode == 0, res.stderr
    assert not (repo / ".claude/settings.json").exists()  # the file teams commit
    personal = repo / ".claude/settings.local.json"
    pre = our_commands(json.loads(personal.read_text()))["PreToolUse"]
    assert pre == ["Bash|Write|Edit|MultiEdit|NotebookEdit"]
    lines = res.stdout.splitlines()
    subs = ("reset", "stash", "switch", "checkout", "restore", "clean")
    assert [line.split(" (")[0] for line in lines[:6]] == [f"set alias.safe-{s}" for s in subs]
    assert lines[6] == (
        "add the guards claude hooks (PreToolUse, PostToolUse, PostToolUseFailure, "
        f"SessionStart, UserPromptSubmit, Stop, SessionEnd) to {personal}"
    )
    assert len(lines) == 7
    assert "settings.local.json is not ignored by git" in res.stderr
    (repo / ".gitignore").write_text(".claude/settings.local.json\n")
    assert run_guards("uninstall", "--claude", cwd=repo).returncode == 0
    again = run_guards("install", "--claude", "--no-aliases", cwd=repo)
    assert again.returncode == 0 and again.stderr == ""


def test_claude_shared_install_writes_the_team_settings(repo: Path) -> None:
    res = run_guards("install", "--claude", "--shared", "--no-aliases", cwd=repo)

    assert res.returncode == 0, res.stderr
    assert not (repo / ".claude/settings.local.json").exists()
    shared = repo / ".claude/settings.json"
    assert our_commands(json.loads(shared.read_text()))["SessionEnd"] == [""]
    assert res.stderr == ""


def test_copilot_install_writes_its_own_hooks_file_and_uninstall_takes_only_ours(
    repo: Path,
) -> None:
    hooks = repo / ".github/hooks"
    hooks.mkdir(parents=True)
    theirs = hooks / "team.json"
    theirs_text = json.dumps(
        {"version": 1, "hooks": {"preToolUse": [{"type": "command", "bash": "my-linter"}]}}
    )
    theirs.write_text(theirs_text)
    res = run_guards("install", "--copilot", "--no-aliases", cwd=repo)
    assert res.returncode == 0, res.stderr
    ours = hooks / "guards.json"
    doc = json.loads(ours.read_text())
    assert doc["version"] == 1
    assert list(doc["hooks"]) == list(harness_settings.COPILOT_EVENTS)
    for event, [entry] in doc["hooks"].items():
        assert entry["type"] == "command" and entry["timeoutSec"] == 60
        assert f"' copilot {event}; fi" in entry["bash"]
    again = run_guards("install", "--copilot", "--no-aliases", cwd=repo)
    assert "nothing to do" in again.stdout
    # a hook the user added to our file stays when ours go
    doc["hooks"]["sessionEnd"].append({"type": "command", "bash": "notify-send bye"})
    ours.write_text(json.dumps(doc))
    res = run_guards("uninstall", "--copilot", cwd=repo)
    assert res.returncode == 0, res.stderr
    assert json.loads(ours.read_text()) == {
        "version": 1,
        "hooks": {"sessionEnd": [{"type": "command", "bash": "notify-send bye"}]},
    }
    assert theirs.read_text() == theirs_text


def test_copilot_uninstall_removes_the_file_it_wrote_and_user_scope_is_refused(
    repo: Path, tmp_path: Path
) -> None:
    assert run_guards("install", "--copilot", "--no-aliases", cwd=repo).returncode == 0
    assert run_guards("uninstall", "--copilot", cwd=repo).returncode == 0
    assert not (repo / ".github").exists()
    for where, args in ((repo, ["--copilot", "--user"]), (tmp_path, ["--copilot"])):
        res = run_guards("install", *args, cwd=where)
        assert res.returncode != 0
        assert res.stderr.strip().startswith("guards: GitHub Copilot CLI hooks are installed")
        assert "Traceback" not in res.stderr


QWEN_MATCHER = "^(run_shell_command|write_file|edit)$"


def test_qwen_install_writes_settings_json_beside_the_users_own_and_uninstall_takes_ours(
    repo: Path,
) -> None:
    settings = repo / ".qwen/settings.json"
    settings.parent.mkdir()
    settings.write_text(json.dumps(USERS_OWN))
    res = run_guards("install", "--qwen", "--no-aliases", cwd=repo)
    assert res.returncode == 0, res.stderr
    assert "trust" not in res.stderr.lower()  # Qwen's folder trust is off by default
    doc = json.loads(settings.read_text())
    assert our_commands(doc) == {
        "PreToolUse": [QWEN_MATCHER],
        "PostToolUse": [QWEN_MATCHER],
        "PostToolUseFailure": [QWEN_MATCHER],
        "SessionStart": [""],
        "UserPromptSubmit": [""],
        "Stop": [""],
        "SessionEnd": [""],
    }
    ours = {
        e: [h for x in g for h in x["hooks"] if "guards" in str(h)] for e, g in doc["hooks"].items()
    }
    assert {h["timeout"] for hs in ours.values() for h in hs} == {60}  # seconds
    commands = {e: [h["command"] for h in hs] for e, hs in ours.items()}
    assert commands == {e: [harness_settings.event_command("qwen", e)] for e in ours}
    assert doc["$version"] == 4  # as Qwen would write it at its start (a dirty file)
    res = run_guards("uninstall", "--qwen", cwd=repo)
    assert res.returncode == 0, res.stderr
    assert json.loads(settings.read_text()) == {**USERS_OWN, "$version": 4}


def test_qwen_install_says_how_to_trust_the_project_when_folder_trust_is_on(
    repo: Path, hermetic_seal: Path
) -> None:
    qwen_home = hermetic_seal / ".qwen"
    qwen_home.mkdir()
    (qwen_home / "settings.json").write_text(
        json.dumps({"security": {"folderTrust": {"enabled": True}}})
    )
    res = run_guards("install", "--qwen", "--no-aliases", cwd=repo)
    assert res.returncode == 0, res.stderr
    trusted = qwen_home / "trustedFolders.json"
    assert "does not trust" in res.stderr
    assert f'"{repo}": "TRUST_FOLDER" to {trusted}' in res.stderr
    trusted.write_text(json.dumps({str(repo): "TRUST_FOLDER"}))
    assert "trust" not in run_guards("install", "--qwen", cwd=repo).stderr.lower()
    trusted.write_text(json.dumps({str(repo.parent): "TRUST_PARENT"}))
    assert "trust" not in run_guards("install", "--qwen", cwd=repo).stderr.lower()
    trusted.write_text(json.dumps({str(repo): "DO_NOT_TRUST"}))
    assert "does not trust" in run_guards("install", "--qwen", cwd=repo).stderr
    # the user's settings are read in any folder: nothing to trust
    res = run_guards("install", "--qwen", "--user", "--no-aliases", cwd=repo)
    assert res.returncode == 0 and "trust" not in res.stderr.lower(), res.stderr
    assert our_commands(json.loads((qwen_home / "settings.json").read_text()))


def test_qwen_user_install_honours_qwen_home(repo: Path, tmp_path: Path) -> None:
    home = tmp_path / "qwen-home"
    res = run_guards("install", "--qwen", "--user", cwd=repo, env={"QWEN_HOME": str(home)})
    assert res.returncode == 0, res.stderr
    assert "PreToolUse" in our_commands(json.loads((home / "settings.json").read_text()))
    res = run_guards("uninstall", "--qwen", "--user", cwd=repo, env={"QWEN_HOME": str(home)})
    assert res.returncode == 0, res.stderr
    assert json.loads((home / "settings.json").read_text()) == {"$version": 4}
