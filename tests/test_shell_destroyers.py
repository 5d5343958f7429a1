"""Shell commands that destroy files without git, in the agent hooks: a corpus of real
lines run by bash after the hook allowed them, with another session's uncommitted work
(tracked and modified, untracked, ignored) in reach; what must not trigger anything;
targets only bash knows widening to the command's directory."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from guards.predict.file_reach import Reach, reach
from guards.predict.shell import analyze
from tests.helpers import git, make_repo, run_agent_hook, run_guards

#: alice's uncommitted work: path -> content.
ALICE = {
    "src/app.py": "print('alice')\n",  # tracked, modified
    "src/new.py": "alice's new module\n",  # untracked
    "src/cache.log": "alice's log\n",  # ignored (*.log)
    "build/out.o": "alice's object\n",  # ignored directory (build/)
}


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    path = make_repo(
        tmp_path / "repo",
        {
            "README": "hello\n",
            "src/app.py": "print('hi')\n",
            "src/util.py": "util\n",
            ".gitignore": "*.log\nbuild/\n",
        },
    )
    for rel, content in ALICE.items():
        (path / rel).parent.mkdir(parents=True, exist_ok=True)
        (path / rel).write_text(content)
    res = run_guards("record", "--session", "alice", *ALICE, cwd=path)
    assert res.returncode == 0, res.stderr
    return path


def hook(
    repo: Path, line: str, harness: str = "claude", tool_use_id: str = "toolu_1"
) -> subprocess.CompletedProcess[str]:
    """The harness's PreToolUse for its shell tool, as a process with JSON on stdin."""
    tool, key = {
        "claude": ("Bash", "command"),
        "codex": ("exec_command", "command"),
        "gemini": ("run_shell_command", "command"),
    }[harness]
    event: dict[str, Any] = {
        "session_id": "bob",
        "hook_event_name": "BeforeTool" if harness == "gemini" else "PreToolUse",
        "tool_name": tool,
        "cwd": str(repo),
        "tool_input": {key: line},
    }
    if harness != "gemini":
        event["tool_use_id"] = tool_use_id
    return run_agent_hook(harness, repo, json.dumps(event).encode())


def allowed(res: subprocess.CompletedProcess[str]) -> str:
    """The hook let the line run; what it said (context or stderr)."""
    assert res.returncode == 0, res.stderr
    if res.stdout:
        out = json.loads(res.stdout)["hookSpecificOutput"]
        assert "permissionDecision" not in out, out
        return str(out.get("additionalContext", ""))
    return res.stderr


def bash(repo: Path, line: str) -> None:
    res = subprocess.run(
        ["bash", "-c", line], cwd=repo, capture_output=True, text=True, timeout=60, check=False
    )
    assert res.returncode == 0, (line, res.stderr)


def _content(path: Path) -> str | None:
    if path.is_symlink() or not path.exists():
        return None
    return path.read_text(errors="replace")


def rescue_refs(repo: Path) -> list[str]:
    return git(repo, "for-each-ref", "--format=%(refname)", "refs/rescue").split()


def rescued_paths(repo: Path, ref: str) -> list[str]:
    """The paths a rescue holds (its commit's ``Path:`` trailers)."""
    message = git(repo, "log", "-1", "--format=%B", ref)
    return [line[len("Path: ") :] for line in message.splitlines() if line.startswith("Path: ")]


def recovered(repo: Path) -> dict[str, str]:
    """Each rescued path with the content its rescue holds."""
    return {
        path: git(repo, "show", f"{ref}:{path}")
        for ref in rescue_refs(repo)
        for path in rescued_paths(repo, ref)
    }


#: (line, alice's paths it destroys).
CORPUS = [
    ("rm -rf src", ["src/app.py", "src/new.py", "src/cache.log"]),
    ("rm -f src/*.py", ["src/app.py", "src/new.py"]),
    ("cd src && rm -- app.py new.py cache.log", ["src/app.py", "src/new.py", "src/cache.log"]),
    ("rm -r build", ["build/out.o"]),
    ("find . -name '*.py' -delete", ["src/app.py", "src/new.py"]),
    ("find src -type f -exec rm -f {} +", ["src/app.py", "src/new.py", "src/cache.log"]),
    ("find . -name '*.o' -exec rm {} \\;", ["build/out.o"]),
    ("cp README src/app.py", ["src/app.py"]),
    ("cp -r src /tmp/elsewhere-$$ && cp README build/out.o", ["build/out.o"]),
    ("mv README src/new.py", ["src/new.py"]),
    ("truncate -s 0 src/app.py", ["src/app.py"]),
    ("echo overwritten > src/app.py", ["src/app.py"]),
    ("echo overwritten 2>&1 >src/cache.log", ["src/cache.log"]),
    ("echo overwritten | tee src/new.py", ["src/new.py"]),
    ("shred -u src/app.py", ["src/app.py"]),
    ("unlink src/new.py", ["src/new.py"]),
    ("ln -sf README src/app.py", ["src/app.py"]),
    ("bash -c 'rm -rf src build'", list(ALICE)),
    ("mv src/app.py /tmp/gone-$$ && rm -f /tmp/gone-$$", ["src/app.py"]),
    (
        "mkdir -p /tmp/empty-$$ && rsync -a --delete /tmp/empty-$$/ src/",
        ["src/app.py", "src/new.py", "src/cache.log"],
    ),
]


@pytest.mark.parametrize(("line", "destroyed"), CORPUS, ids=[c[0] for c in CORPUS])
def test_other_sessions_work_is_recoverable_after_the_line_ran(
    repo: Path, line: str, destroyed: list[str]
) -> None:
    said = allowed(hook(repo, line))
    assert "guards: rescued" in said
    if "rsync" in line and shutil.which("rsync") is None:
        pass  # the hook's answer is what is checked; the line cannot run here
    else:
        bash(repo, line)
        gone = [p for p in destroyed if _content(repo / p) != ALICE[p]]
        assert gone == destroyed, "the corpus line no longer destroys what it names"
    held = recovered(repo)
    assert {p: held.get(p) for p in destroyed} == {p: ALICE[p] for p in destroyed}


def test_plain_git_brings_the_work_back_after_rm_rf(repo: Path) -> None:
    allowed(hook(repo, "rm -rf src build"))
    bash(repo, "rm -rf src build")
    for ref in rescue_refs(repo):
        git(repo, "restore", f"--source={ref}", "--", *rescued_paths(repo, ref))
    assert {p: (repo / p).read_text() for p in ALICE} == ALICE


@pytest.mark.parametrize("harness", ["codex", "gemini"])
def test_codex_and_gemini_shell_tools_are_guarded_too(repo: Path, harness: str) -> None:
    res = hook(repo, "rm -rf src", harness=harness)
    told = res.stdout if harness == "codex" else res.stderr  # Codex: PreToolUse's context
    assert res.returncode == 0 and "guards: rescued 3 paths of session alice" in told
    assert set(recovered(repo)) >= {"src/app.py", "src/new.py", "src/cache.log"}


def test_policy_block_denies_the_line(repo: Path) -> None:
    res = subprocess.run(
        [sys.executable, "-m", "guards.commands.agent_hook", "codex"],
        cwd=repo,
        input=json.dumps(
            {
                "session_id": "bob",
                "hook_event_name": "PreToolUse",
                "tool_name": "exec_command",
                "cwd": str(repo),
                "tool_input": {"command": "rm -rf src"},
                "tool_use_id": "t",
            }
        ),
        capture_output=True,
        text=True,
        env={**os.environ, "GUARDS_POLICY": "block"},
        check=False,
    )
    assert res.returncode == 2
    assert "refused `rm -rf src`" in res.stderr and "alice: 3" in res.stderr
    assert rescue_refs(repo) == []


def test_the_callers_own_work_is_destroyed_as_asked(repo: Path) -> None:
    (repo / "src/mine.py").write_text("bob's\n")
    assert run_guards("record", "--session", "claude-bob", "src/mine.py", cwd=repo).returncode == 0
    res = hook(repo, "rm -f src/mine.py")
    assert (res.returncode, res.stdout) == (0, "")
    assert rescue_refs(repo) == []


def test_removing_the_whole_repository_is_refused_while_others_work_is_there(
    repo: Path,
) -> None:
    res = hook(repo, f"cd .. && rm -rf {repo.name}")
    out = json.loads(res.stdout)["hookSpecificOutput"]
    assert out["permissionDecision"] == "deny"
    assert "the repository that would hold their rescue" in out["permissionDecisionReason"]


# -- what must not trigger anything ----------------------------------------------------

QUIET = [
    "rm -f /tmp/guards-test-not-there",
    "echo x >> src/app.py",
    "sed -i s/alice/bob/ src/app.py",
    "mv src/app.py src/renamed.py",
    "cp README /tmp/guards-test-copy-$$",
    "rm -f src/missing.txt",
    "rm -f README",
    "truncate -s +10 src/app.py",
    "echo hi > /dev/null 2>&1",
    "cp -n README src/app.py",
    "echo x | tee -a src/new.py",
    "rm src",
    "ls -la src | grep app",
]


@pytest.mark.parametrize("line", QUIET)
def test_lines_that_destroy_no_work_pass_untouched(repo: Path, line: str) -> None:
    res = hook(repo, line)
    assert (res.returncode, res.stdout, res.stderr) == (0, "", "")
    assert rescue_refs(repo) == []


@pytest.mark.parametrize(
    "line",
    [
        "ls -la && npm test -- --watch=false",
        "rm -f /tmp/guards-test-not-there",
        "echo x > /tmp/guards-test-out-$$",
        "mv /tmp/a-$$ /tmp/b-$$",
    ],
)
def test_a_line_that_reaches_nothing_in_a_repository_reads_no_git_state(
    repo: Path, line: str
) -> None:
    program = (
        "import sys\n"
        "from guards.protect.guard import guard_line\n"
        "v = guard_line(sys.argv[1], sys.argv[2])\n"
        "assert v.deny is None and not v.rescued, v\n"
        "print(sorted(m for m in sys.modules if m.startswith('guards.git')))\n"
    )
    res = subprocess.run(
        [sys.executable, "-c", program, line, str(repo)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "[]"


# -- targets only bash knows -------------------------------------------------------------

UNKNOWN = [
    "ls src | xargs rm -f",
    'rm -rf "$NOT_SET_ANYWHERE"/*',
    "rm -rf $(ls -d src)",
    'eval "$(cat /dev/null)"; rm -f nothing-here',
    "find src -name '*.py' -exec sh -c 'rm \"$1\"' _ {} \\;",
]


@pytest.mark.parametrize("line", UNKNOWN)
def test_unknown_targets_widen_to_everything_under_the_directory(repo: Path, line: str) -> None:
    said = allowed(hook(repo, line))
    assert "rescued 3 paths of session alice" in said
    assert {p: recovered(repo).get(p) for p in ALICE} == ALICE


def test_unknown_targets_widen_only_to_the_commands_directory(repo: Path) -> None:
    allowed(hook(repo, "cd src && ls | xargs rm -f"))
    assert set(recovered(repo)) == {"src/app.py", "src/new.py", "src/cache.log"}


def test_a_cd_the_line_does_not_show_refuses(repo: Path) -> None:
    res = hook(repo, "cd $(mktemp -d) && rm -rf *")
    out = json.loads(res.stdout)["hookSpecificOutput"]
    assert out["permissionDecision"] == "deny"
    assert "refused `rm -rf *`" in out["permissionDecisionReason"]


# -- reach, without git --------------------------------------------------------------------


def test_globs_expand_against_the_disk_after_a_cd(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    for name in ("a.py", "b.py", ".hidden.py", "c.txt"):
        (tmp_path / "src" / name).write_text("x")
    found = analyze("cd src && rm -f *.py '*.txt'", str(tmp_path), files=True)
    [call] = found.files
    assert reach(call) == [
        Reach(str(tmp_path / "src/a.py")),
        Reach(str(tmp_path / "src/b.py")),
        Reach(str(tmp_path / "src/*.txt")),
    ]


def test_cp_into_a_directory_reaches_the_name_it_lands_on(tmp_path: Path) -> None:
    (tmp_path / "dst").mkdir()
    (tmp_path / "tree").mkdir()
    found = analyze("cp -r tree README dst && mv -n x y", str(tmp_path), files=True)
    cp, mv = found.files
    assert reach(cp) == [
        Reach(str(tmp_path / "dst/tree"), True),
        Reach(str(tmp_path / "dst/README")),
    ]
    assert reach(mv) == []


def test_find_is_dry_run_with_its_own_tests(tmp_path: Path) -> None:
    for name in ("a.pyc", "b.py", "sub/c.pyc"):
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text("x")
    [call] = analyze("find . -name '*.pyc' -print -delete", str(tmp_path), files=True).files
    assert sorted(r.path for r in reach(call) or []) == [
        str(tmp_path / "a.pyc"),
        str(tmp_path / "sub/c.pyc"),
    ]
    (tmp_path / "out").write_text("")
    [call] = analyze("find . -fprint out -delete", str(tmp_path), files=True).files
    assert reach(call) == [Reach(str(tmp_path), True)]  # cannot be dry-run: everything
