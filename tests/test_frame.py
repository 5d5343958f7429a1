"""guards frame: what a new turn inherits, in the exact shape agents are given."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from guards.state.attribution import Attribution, fingerprint
from guards.state.ledger import Ledger
from tests.helpers import PROJECT_ROOT, git, run_guards

CLOSING = (
    "You did not necessarily make these. Do not assume they are yours, and do not\n"
    "assume they are someone else's.]\n"
)


def attribute(repo: Path, path: str, session: str, ago: float) -> None:
    record = Attribution(session, fingerprint(repo / path), time.time() - ago).to_json()
    with Ledger(repo / ".git" / "guards").transaction() as data:
        data.paths.setdefault(str(repo), {})[path] = record


def frame(repo: Path, *args: str, env: dict[str, str] | None = None) -> str:
    res = run_guards("frame", *args, cwd=repo, env=env)
    assert res.returncode == 0, res.stderr
    assert res.stderr == ""
    return res.stdout


def test_a_clean_tree_prints_nothing_at_all(repo: Path) -> None:
    res = run_guards("frame", cwd=repo)
    assert (res.returncode, res.stdout, res.stderr) == (0, "", "")


def test_outside_a_repository_prints_nothing_at_all(tmp_path: Path) -> None:
    res = run_guards("frame", cwd=tmp_path)
    assert (res.returncode, res.stdout, res.stderr) == (0, "", "")


def test_a_bare_repository_prints_nothing_at_all(tmp_path: Path, repo: Path) -> None:
    bare = tmp_path / "bare.git"
    git(tmp_path, "clone", "-q", "--bare", str(repo), str(bare))
    res = run_guards("frame", cwd=bare)
    assert (res.returncode, res.stdout, res.stderr) == (0, "", "")


def test_short_frame_with_unknown_owners(repo: Path) -> None:
    (repo / "README").write_text("edited\n")
    (repo / "src" / "new module.py").write_text("x\n")
    assert frame(repo) == (
        "[Workspace: 2 uncommitted changes present before this turn began \u2014\n"
        " M README              (owner unknown)\n"
        "?? src/new module.py   (owner unknown)\n" + CLOSING
    )


def test_one_change_is_singular(repo: Path) -> None:
    (repo / "README").write_text("edited\n")
    out = frame(repo)
    assert out.startswith("[Workspace: 1 uncommitted change present before this turn began")


def test_attributed_frame_matches_the_documented_format(tmp_path: Path) -> None:
    from tests.helpers import make_repo

    repo = make_repo(
        tmp_path / "r",
        {"cli/__tests__/enforcement.test.mjs": "t\n", "cli/src/lib/enforcement.js": "e\n"},
    )
    (repo / "cli/__tests__/enforcement.test.mjs").write_text("t2\n")
    (repo / "cli/src/lib/enforcement.js").write_text("e2\n")
    attribute(repo, "cli/__tests__/enforcement.test.mjs", "pod-architect", ago=150)
    assert frame(repo) == (
        "[Workspace: 2 uncommitted changes present before this turn began \u2014\n"
        " M cli/__tests__/enforcement.test.mjs   (session pod-architect, 2 min ago)\n"
        " M cli/src/lib/enforcement.js           (owner unknown)\n" + CLOSING
    )


def test_the_callers_own_paths_say_so(repo: Path) -> None:
    (repo / "README").write_text("mine\n")
    attribute(repo, "README", "me", ago=630)
    out = frame(repo, env={"GUARDS_SESSION": "me"})
    assert " M README   (your session me, 10 min ago)\n" in out


def test_a_path_changed_after_it_was_recorded_has_no_known_owner(repo: Path) -> None:
    (repo / "README").write_text("recorded\n")
    attribute(repo, "README", "writer", ago=60)
    (repo / "README").write_text("changed by someone else afterwards\n")
    assert " M README   (owner unknown)\n" in frame(repo)


def test_truncated_at_max_with_a_count_of_the_rest(repo: Path) -> None:
    for i in range(5):
        (repo / f"f{i}.txt").write_text("x\n")
    out = frame(repo, "--max", "2")
    lines = out.splitlines()
    assert lines[0].startswith("[Workspace: 5 uncommitted changes")
    assert lines[1:3] == ["?? f0.txt   (owner unknown)", "?? f1.txt   (owner unknown)"]
    assert lines[3] == " ... and 3 more (`guards status` lists them all)"
    assert out.endswith(CLOSING)


def test_every_spelling_of_the_options_reads_the_same(repo: Path) -> None:
    # The frame reads its options without argparse (start-up time): same answers.
    for i in range(5):
        (repo / f"f{i}.txt").write_text("x\n")
    expected = frame(repo, "--max", "2")
    assert frame(repo, "--max=2") == expected
    doc = json.loads(frame(repo, "--json", "--max", "2"))
    assert doc == json.loads(frame(repo, "--max=2", "--json"))  # owners unknown: no ages
    assert doc["shown"] == 2 and doc["total"] == 5 and doc["text"] == expected


def test_help_and_unknown_options_go_through_the_full_parser(repo: Path) -> None:
    res = run_guards("frame", "--help", cwd=repo)
    assert res.returncode == 0 and res.stdout.startswith("usage: guards frame")
    for bad in (["--bogus"], ["--max"], ["--max", "2", "extra"]):
        res = run_guards("frame", *bad, cwd=repo)
        assert res.returncode == 2 and res.stdout == "", bad
        assert res.stderr.count("\n") == 1 and res.stderr.startswith("guards: "), bad


def test_max_defaults_to_the_config_setting(repo: Path) -> None:
    for i in range(25):
        (repo / f"f{i:02}.txt").write_text("x\n")
    assert " ... and 5 more" in frame(repo)  # frame.max_paths defaults to 20
    assert " ... and 22 more" in frame(repo, env={"GUARDS_FRAME_MAX_PATHS": "3"})


def test_odd_names_are_quoted_like_git(repo: Path) -> None:
    (repo / "new\nline.txt").write_text("x\n")
    assert '?? "new\\nline.txt"   (owner unknown)\n' in frame(repo)


def test_errors_go_to_stderr_in_one_line_and_exit_zero(repo: Path) -> None:
    (repo / "README").write_text("edited\n")
    res = run_guards("frame", "--max", "lots", cwd=repo, env={"GUARDS_SESSION": "bad id!"})
    assert res.returncode == 0
    assert " M README   (owner unknown)" in res.stdout
    errors = res.stderr.splitlines()
    assert len(errors) == 2 and all(e.startswith("guards: frame: ") for e in errors)


def test_a_corrupt_ledger_shows_owners_unknown_and_is_left_alone(repo: Path) -> None:
    ledger = repo / ".git" / "guards" / "ledger.json"
    ledger.parent.mkdir()
    ledger.write_text("{corrupt")
    (repo / "README").write_text("edited\n")
    res = run_guards("frame", cwd=repo)
    assert res.returncode == 0
    assert " M README   (owner unknown)" in res.stdout
    assert len(res.stderr.splitlines()) == 1 and "corrupt" in res.stderr
    assert ledger.read_text() == "{corrupt"
    assert sorted(p.name for p in ledger.parent.iterdir()) == ["ledger.json"]


def test_a_deeply_nested_ledger_shows_owners_unknown_like_a_corrupt_one(repo: Path) -> None:
    """The frame's ledger reader lacked the ledger module's depth guard: the frame
    printed a RecursionError and no paths at all."""
    ledger = repo / ".git" / "guards" / "ledger.json"
    ledger.parent.mkdir()
    deep = "[" * 100_000 + "]" * 100_000
    ledger.write_text(deep)
    (repo / "README").write_text("edited\n")
    res = run_guards("frame", cwd=repo)
    assert res.returncode == 0
    assert " M README   (owner unknown)" in res.stdout
    assert len(res.stderr.splitlines()) == 1 and "corrupt" in res.stderr
    assert ledger.read_text() == deep


def test_a_git_failure_is_one_line_on_stderr_and_exit_zero(repo: Path) -> None:
    (repo / "README").write_text("edited\n")
    (repo / ".git" / "index").write_bytes(b"garbage")
    res = run_guards("frame", cwd=repo)
    assert res.returncode == 0
    assert res.stdout == ""
    assert len(res.stderr.splitlines()) == 1 and res.stderr.startswith("guards: frame: ")


def test_the_frame_never_touches_the_index(repo: Path) -> None:
    (repo / "README").write_text("edited\n")
    os.utime(repo / "src" / "app.py", (time.time(), time.time()))  # stat cache now stale
    index = repo / ".git" / "index"
    before = (index.read_bytes(), index.stat().st_mtime_ns)
    frame(repo)
    assert (index.read_bytes(), index.stat().st_mtime_ns) == before


def test_frame_works_in_a_linked_worktree(repo: Path, tmp_path: Path) -> None:
    wt = tmp_path / "wt"
    git(repo, "worktree", "add", "-q", "-b", "side", str(wt))
    (wt / "README").write_text("side edit\n")
    attribute_wt = Attribution(
        "side-writer", fingerprint(wt / "README"), time.time() - 7300
    ).to_json()
    with Ledger(repo / ".git" / "guards").transaction() as data:
        data.paths.setdefault(str(wt), {})["README"] = attribute_wt
    assert " M README   (session side-writer, 2 h ago)\n" in frame(wt)
    assert frame(repo) == ""


def test_json_form(repo: Path) -> None:
    (repo / "README").write_text("edited\n")
    (repo / "a.txt").write_text("a\n")
    attribute(repo, "README", "pod", ago=120)
    doc = json.loads(frame(repo, "--json", "--max", "1"))
    assert doc["schema"] == 1
    assert doc["repository"] == str(repo / ".git") and doc["worktree"] == str(repo)
    assert (doc["total"], doc["shown"]) == (2, 1)
    (entry,) = doc["paths"]
    assert entry["path"] == "README" and entry["state"] == ".M"
    assert entry["owner"] == "pod" and entry["class"] == "foreign"
    assert 119 <= entry["age_seconds"] < 200 and entry["recorded"].endswith("Z")
    assert doc["text"].startswith("[Workspace: 2 uncommitted changes")
    assert " ... and 1 more" in doc["text"]


def test_json_form_when_clean_or_outside_a_repository(repo: Path, tmp_path: Path) -> None:
    clean = json.loads(frame(repo, "--json"))
    assert (clean["total"], clean["paths"], clean["text"]) == (0, [], "")
    outside = json.loads(frame(tmp_path, "--json"))
    assert outside["repository"] is None and outside["total"] == 0


def test_max_paths_from_the_user_and_repository_config_files(repo: Path) -> None:
    for i in range(6):
        (repo / f"f{i}.txt").write_text("x\n")
    user = Path(os.environ["XDG_CONFIG_HOME"]) / "guards" / "config.toml"
    user.parent.mkdir(parents=True)
    user.write_text("[frame]\nmax_paths = 4\n")
    assert " ... and 2 more" in frame(repo)
    (repo / ".git" / "guards").mkdir()
    (repo / ".git" / "guards" / "config.toml").write_text("[frame]\nmax_paths = 5\n")
    assert " ... and 1 more" in frame(repo)


# What the frame must not import: each costs milliseconds at every agent turn (see
# guards.values). Run with -S so that no site-packages hook preloads any of them.
HEAVY_MODULES = (
    "argparse",
    # json pulls in re and enum: guards.jsontext reads the ledger
    "json",
    "re",
    "enum",
    "dataclasses",
    "hashlib",
    "pathlib",
    "platformdirs",
    "subprocess",
    "typing",
)


@pytest.mark.parametrize("session", [None, "pod-architect"])
def test_the_frame_imports_nothing_heavy(repo: Path, session: str | None) -> None:
    (repo / "README").write_text("edited\n")
    (repo / "new.txt").write_text("x\n")
    attribute(repo, "new.txt", "pod-architect", ago=60)
    code = (
        "import sys\n"
        f"sys.path.insert(0, {str(PROJECT_ROOT)!r})\n"
        f"heavy = {HEAVY_MODULES!r}\n"
        "assert not [m for m in heavy if m in sys.modules], 'preloaded'\n"
        "from guards.main import main\n"
        "status = main(['frame'])\n"
        "sys.stdout.flush()\n"
        "print('IMPORTED', [m for m in heavy if m in sys.modules], status, file=sys.stderr)\n"
    )
    env = {**os.environ, **({"GUARDS_SESSION": session} if session else {})}
    res = subprocess.run(
        [sys.executable, "-S", "-c", code], cwd=repo, env=env, capture_output=True, text=True
    )
    assert res.stderr == "IMPORTED [] 0\n"
    assert "(session pod-architect" in res.stdout or "(your session pod-architect" in res.stdout


@pytest.mark.parametrize("setting", ["2", "lots"])
def test_the_agent_hook_frames_with_the_same_maximum_as_guards_frame(
    repo: Path, setting: str
) -> None:
    """One reading of frame.max_paths: the hook used to fall back to 20 silently."""
    for i in range(25):
        (repo / f"f{i:02}.txt").write_text("x\n")
    env = {"GUARDS_FRAME_MAX_PATHS": setting}
    command = run_guards("frame", cwd=repo, env=env)
    event = {"hook_event_name": "UserPromptSubmit", "session_id": "s1", "cwd": str(repo)}
    hook = run_guards("agent-hook", "claude", cwd=repo, env=env, input=json.dumps(event).encode())
    context = json.loads(hook.stdout)["hookSpecificOutput"]["additionalContext"]
    assert context == command.stdout
    shown = 2 if setting == "2" else 20
    assert f"... and {25 - shown} more" in context
    assert (command.stderr == "") == (hook.stderr == "") == (setting == "2")
