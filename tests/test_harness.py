"""The shell-line reader and the guard behind the harness hooks: a corpus of lines.

The invariant: when the hook lets a destructive line run and bash then runs it, no other
session's uncommitted content is lost (it is in the work tree or in a rescue ref); a
harmless line is let through, rescues nothing, and costs no git call when it runs no git.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from guards.commands import agent_hook
from guards.commands.agent_hook import session_for
from guards.git import process as guards_git
from guards.predict.shell import analyze, patch_paths
from guards.state.workspace import Workspace, record_paths
from tests.helpers import git, make_repo, run_guards

ALICE = {
    "src/app.py": "print('alice was here')\n",
    "notes/todo.txt": "alice's untracked notes\n",
    "src/lib.py": "STAGED = 'alice'\n",
}
BOB = "bob"  # the harness session whose agent runs the lines: claude-bob
GIT = shutil.which("git") or "/usr/bin/git"

DESTRUCTIVE = [
    "git reset --hard",
    "git reset --hard HEAD",
    "git reset --har",
    "git -c core.quotepath=off reset --hard",
    "git --no-pager reset --hard HEAD~0",
    "GIT_PAGER=cat git reset --hard",
    "env git reset --hard",
    'env -i PATH="$PATH" HOME="$HOME" git reset --hard',
    "command git reset --hard",
    "\\git reset --hard",
    '"git" reset --hard',
    "'git' stash",
    f"{GIT} checkout -- .",
    "$(command -v git) reset --hard",
    "git checkout -- .",
    "git checkout .",
    "git checkout HEAD -- src",
    "git checkout -f other",
    "git switch -f other",
    "git switch --discard-changes other",
    "git restore .",
    "git restore --staged --worktree .",
    "git restore --source=HEAD -- src/app.py",
    "git clean -fd",
    "git clean -fdx",
    "git clean -f -d -x",
    "git clean --forc -d",
    "git stash",
    "git stash -u",
    "git stash push --include-untracked",
    "git stash save wip",
    "git rm -rf src",
    "git rm -f src/app.py",
    "cd src && git checkout -- .",
    "cd src; git restore app.py",
    "(cd src && git stash)",
    "{ git stash; }",
    "true && git reset --hard",
    "false || git reset --hard",
    "git status; git reset --hard",
    "git add -A && git reset --hard",
    "bash -c 'git reset --hard'",
    'sh -c "git clean -fd"',
    "bash -c 'cd src && git checkout -- .'",
    "bash <<'EOF'\ngit reset --hard\nEOF",
    "echo . | xargs git checkout --",
    "printf 'src/app.py\\n' | xargs git checkout --",
    "find src -name '*.py' -exec git checkout -- {} +",
    "eval 'git reset --hard'",
    'eval "git stash"',
    "G=git; $G reset --hard",
    "cmd='git reset --hard'; eval \"$cmd\"",
    "echo $(git stash)",
    "x=`git stash -u`",
    "git -C src checkout -- .",
    "git --git-dir=.git --work-tree=. reset --hard",
    "GIT_DIR=.git git reset --hard",
    "git rs",
    "git nuke",
    "timeout 60 git reset --hard",
    "nohup git stash -u >/dev/null 2>&1",
    'for f in src/app.py; do git checkout -- "$f"; done',
    "if true; then git reset --hard; fi",
    "git stash -u && git stash drop",
    "git reset --hard; git clean -fdx",
    "echo 'git reset --hard' | bash",
    'sh -c "$(echo git reset --hard)"',
    'python3 -c \'import subprocess; subprocess.run(["git", "reset", "--hard"])\'',
    "f() { git reset --hard; }; f",
    "case x in x) git clean -fd;; esac",
]

HARMLESS = [
    "ls -la",
    "echo hello",
    "pwd",
    "cat README",
    "echo 'git reset --hard'",
    'echo "git stash -u"',
    "grep -rn 'git stash' . || true",
    "printf '%s\\n' 'git clean -fdx'",
    "cat <<'EOF'\ngit reset --hard\nEOF",
    "cat <<EOF > plan.md\nrun git stash later\nEOF",
    "echo done # git reset --hard",
    "touch newfile && echo ok",
    "mkdir -p build && ls build",
    "grep git README || true",
    "command -v git",
    "type git",
    "git status",
    "git log --oneline -3",
    "git diff --stat",
    "git diff | head -5",
    "git ls-files | wc -l",
    "git branch --list",
    "git stash list",
    "git show HEAD --stat",
    "git rev-parse HEAD",
    "git checkout -b feature",
    "git switch -c feature2",
    "git clean -n",
    "git clean --dry-run -d",
    "git reset --soft HEAD",
    "git --version",
    "git log --grep='reset --hard' --oneline",
]


def test_the_corpus_is_large_enough() -> None:
    assert len(DESTRUCTIVE) + len(HARMLESS) >= 60
    assert len(set(DESTRUCTIVE)) == len(DESTRUCTIVE)


# -- fixtures ---------------------------------------------------------------------------


def shared_checkout(path: Path) -> Path:
    """A checkout where session alice has uncommitted work of every kind."""
    repo = make_repo(
        path,
        {"README": "hello\n", "src/app.py": "print('hi')\n", "src/lib.py": "STAGED = None\n"},
    )
    git(repo, "branch", "other")
    git(repo, "config", "alias.rs", "reset --hard")
    git(repo, "config", "alias.nuke", "!git reset --hard && git clean -fd")
    for rel, content in ALICE.items():
        target = repo / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content)
    git(repo, "add", "src/lib.py")
    record_paths(Workspace.open(repo), "alice", list(ALICE))
    return repo


def hook(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    event: dict[str, Any],
    harness: str = "claude",
) -> tuple[int, dict[str, Any] | None, str]:
    """Run the hook in-process: (exit status, JSON answer or None, stderr)."""
    monkeypatch.setenv("GUARDS_SESSION", "placeholder")  # restored after the test
    capsys.readouterr()
    code = agent_hook.main(harness, json.dumps(event).encode())
    out, err = capsys.readouterr()
    return code, (json.loads(out) if out.strip() else None), err


def pre_bash(repo: Path, line: str, use_id: str = "toolu_1") -> dict[str, Any]:
    return {
        "session_id": BOB,
        "transcript_path": "/dev/null",
        "cwd": str(repo),
        "hook_event_name": "PreToolUse",
        "tool_name": "Bash",
        "tool_use_id": use_id,
        "tool_input": {"command": line, "description": "test"},
    }


def decision(answer: dict[str, Any] | None) -> tuple[str | None, str]:
    if answer is None:
        return None, ""
    out = answer["hookSpecificOutput"]
    return out.get("permissionDecision"), out.get("additionalContext", "")


def rescued_blobs(repo: Path, path: str) -> set[str]:
    """Every content of ``path`` held by a rescue commit (work tree and index side)."""
    refs = git(repo, "for-each-ref", "--format=%(objectname)", "refs/rescue").split()
    found = set()
    for oid in refs:
        for rev in (oid, f"{oid}^2"):
            res = subprocess.run(
                ["git", "show", f"{rev}:{path}"], cwd=repo, capture_output=True, check=False
            )
            if res.returncode == 0:
                found.add(res.stdout.decode())
    return found


def alice_content_survives(repo: Path) -> list[str]:
    """Alice's paths whose content is neither in the work tree nor in a rescue ref."""
    lost = []
    for rel, content in ALICE.items():
        target = repo / rel
        if target.is_file() and target.read_text() == content:
            continue
        if content in rescued_blobs(repo, rel):
            continue
        lost.append(rel)
    return lost


def run_bash(repo: Path, line: str) -> None:
    env = {**os.environ, "GUARDS_SESSION": session_for("claude", BOB)}
    subprocess.run(["bash", "-c", line], cwd=repo, env=env, capture_output=True, timeout=60)


# -- the invariant ----------------------------------------------------------------------


@pytest.mark.parametrize("line", DESTRUCTIVE)
def test_destructive_line_loses_no_other_sessions_work(
    line: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    repo = shared_checkout(tmp_path / "repo")
    code, answer, err = hook(capsys, monkeypatch, pre_bash(repo, line))
    assert code == 0, err
    verdict, context = decision(answer)
    if verdict == "deny":
        assert answer is not None
        assert answer["hookSpecificOutput"]["permissionDecisionReason"]
        return
    assert verdict is None  # never "allow": that would skip the user's own permission rules
    assert "guards: rescued" in context, f"nothing rescued for {line!r}: {answer} {err}"
    run_bash(repo, line)
    assert alice_content_survives(repo) == []


@pytest.mark.parametrize("line", HARMLESS)
def test_harmless_line_is_let_through_untouched(
    line: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    repo = shared_checkout(tmp_path / "repo")
    calls: list[list[str]] = []
    real_run = guards_git.run

    def counting_run(args: Any, **kw: Any) -> guards_git.Result:
        calls.append(list(args))
        return real_run(args, **kw)

    monkeypatch.setattr(guards_git, "run", counting_run)
    code, answer, err = hook(capsys, monkeypatch, pre_bash(repo, line))
    monkeypatch.setattr(guards_git, "run", real_run)
    assert (code, answer) == (0, None), err
    assert git(repo, "for-each-ref", "refs/rescue") == ""
    if not analyze(line, str(repo)).runs_git:
        assert calls == []
    run_bash(repo, line)
    assert alice_content_survives(repo) == []


# -- reading lines ----------------------------------------------------------------------


def calls_of(line: str, cwd: str = "/w") -> list[tuple[tuple[str | None, ...], str | None]]:
    return [(c.argv, c.cwd) for c in analyze(line, cwd).calls]


def test_cd_changes_where_later_git_runs_but_not_after_a_subshell() -> None:
    assert calls_of("(cd sub && git stash); git status") == [
        (("stash",), "/w/sub"),
        (("status",), "/w"),
    ]


def test_cd_in_a_pipeline_element_does_not_move_the_next_element() -> None:
    assert calls_of("cd /tmp | git reset --hard") == [(("reset", "--hard"), "/w")]


def test_quoted_arguments_of_non_executing_commands_are_data() -> None:
    assert calls_of("echo 'git reset --hard' && grep 'git stash' x") == []
    assert calls_of("git commit -m 'git reset --hard'") == [
        (("commit", "-m", "git reset --hard"), "/w")
    ]


def test_heredoc_is_data_unless_a_shell_reads_it() -> None:
    assert calls_of("cat <<'EOF'\ngit reset --hard\nEOF") == []
    assert calls_of("bash <<'EOF'\ngit reset --hard\nEOF") == [(("reset", "--hard"), "/w")]


def test_command_substitution_and_sh_c_strings_are_followed() -> None:
    assert calls_of("echo $(git stash)") == [(("stash",), "/w")]
    assert calls_of('sh -c "cd x; git clean -fdx"') == [(("clean", "-fdx"), "/w/x")]


def test_words_only_bash_knows_are_unknown() -> None:
    found = analyze("for f in a b; do git checkout -- $f; done", "/w")
    assert found.calls[0].argv == ("checkout", "--", None)
    assert not found.calls[0].known
    assert analyze("git checkout src/{a,b}.py", "/w").calls[0].argv == ("checkout", None)
    found = analyze('HOME=x; while read HOME; do git checkout -- "$HOME"; done < l', "/w")
    assert found.calls[0].argv == ("checkout", "--", None)


@pytest.mark.parametrize(
    "line",
    [
        "echo 'unbalanced git",
        'eval "$(printf git) reset --hard"',
        "$GIT_CMD reset --hard",
        "echo git reset --hard | sh",
        "python3 -c 'import os; os.system(\"git clean -fdx\")'",
    ],
)
def test_unreadable_lines_that_could_run_git_are_opaque(line: str) -> None:
    assert analyze(line, "/w").opaque


def test_unreadable_lines_that_never_mention_git_are_left_alone() -> None:
    assert analyze("echo 'unbalanced", "/w").opaque == []
    assert analyze('eval "$X"', "/w").opaque == []


def test_opaque_line_rescues_all_dirty_work_first(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = shared_checkout(tmp_path / "repo")
    code, answer, _ = hook(capsys, monkeypatch, pre_bash(repo, 'eval "$(echo git) stash -u"'))
    verdict, context = decision(answer)
    assert (code, verdict) == (0, None)
    assert context.count("guards: rescued") == 1
    assert "3 paths of session alice" in context


def test_git_after_a_cd_to_an_unknown_directory_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = shared_checkout(tmp_path / "repo")
    _, answer, _ = hook(capsys, monkeypatch, pre_bash(repo, 'cd "$SOMEWHERE" && git reset --hard'))
    verdict, _ = decision(answer)
    assert verdict == "deny"
    assert answer is not None
    assert "directory" in answer["hookSpecificOutput"]["permissionDecisionReason"]
    # ... but a harmless one there is fine
    _, answer, _ = hook(capsys, monkeypatch, pre_bash(repo, 'cd "$SOMEWHERE" && git status'))
    assert answer is None


def test_block_policy_denies_with_the_reason(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = shared_checkout(tmp_path / "repo")
    monkeypatch.setenv("GUARDS_POLICY", "block")
    _, answer, _ = hook(capsys, monkeypatch, pre_bash(repo, "git reset --hard"))
    verdict, _ = decision(answer)
    assert verdict == "deny"
    assert answer is not None
    assert "alice" in answer["hookSpecificOutput"]["permissionDecisionReason"]
    assert (repo / "src/app.py").read_text() == ALICE["src/app.py"]


def test_own_work_is_not_rescued(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = make_repo(tmp_path / "repo", {"README": "hello\n"})
    (repo / "README").write_text("mine\n")
    mine = session_for("claude", BOB)
    assert run_guards("record", "--session", mine, "README", cwd=repo).returncode == 0
    _, answer, _ = hook(capsys, monkeypatch, pre_bash(repo, "git checkout -- README"))
    assert answer is None


# -- apply_patch and identity -------------------------------------------------------------


def test_patch_paths_reads_update_add_delete_and_move_lines() -> None:
    body = (
        "*** Begin Patch\n*** Update File: src/app.py\n@@\n-a\n+b\n"
        "*** Add File: docs/new.md\n+hello\n*** Delete File: old.txt\n"
        "*** Update File: a.py\n*** Move to: b.py\n*** End Patch\n"
    )
    assert patch_paths(body) == ["src/app.py", "docs/new.md", "old.txt", "a.py", "b.py"]


def test_session_ids_map_to_valid_guards_sessions() -> None:
    from guards.commands.agent_hook import MAX_ID_LENGTH
    from guards.state.session import MAX_ID_LENGTH as SESSION_MAX
    from guards.state.session import validate_id

    assert MAX_ID_LENGTH == SESSION_MAX
    assert session_for("claude", "9f1c-22ab") == "claude-9f1c-22ab"
    odd = session_for("codex", "a b/c\n" + "x" * 300)
    assert validate_id(odd) == odd
    assert odd != session_for("codex", "a b/c\n" + "x" * 299)
