"""guards doctor: each finding appears with its state, and goes when the state is fixed."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from guards import doctor
from guards.config import Config
from guards.doctor import Finding
from guards.git import process as guards_git
from guards.integrations.installation import SAFE_ALIASES
from guards.integrations.native_hooks import MARKER
from guards.state.attribution import Attribution, fingerprint
from guards.state.ledger import Ledger
from guards.state.session import hostname, process_start_time
from tests.helpers import git, make_repo, run_guards

DAY = 86400.0


def findings(cwd: Path) -> list[Finding]:
    return doctor.diagnose(cwd)[1]


def by_check(cwd: Path, check: str) -> list[Finding]:
    return [f for f in findings(cwd) if f.check == check]


def level_of(cwd: Path, check: str) -> str | None:
    found = by_check(cwd, check)
    return doctor.worst(found) if found else None


def ledger(repo: Path) -> Ledger:
    return Ledger(repo / ".git" / "guards")


def attribute(repo: Path, path: str, session: str, recorded: float | None = None) -> None:
    record = Attribution(
        session, fingerprint(repo / path), recorded if recorded is not None else time.time()
    ).to_json()
    with ledger(repo).transaction() as data:
        data.paths.setdefault(str(repo), {})[path] = record


def add_session(repo: Path, sid: str, **fields: Any) -> None:
    now = time.time()
    record = {"id": sid, "host": hostname(), "started": now, "last_seen": now, **fields}
    with ledger(repo).transaction() as data:
        data.sessions[sid] = record


def live_pid_fields() -> dict[str, Any]:
    return {"pid": os.getpid(), "pid_start": process_start_time(os.getpid())}


def dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def snapshot(root: Path) -> dict[str, tuple[bytes, int]]:
    out = {}
    for p in sorted(root.rglob("*")):
        if p.is_file() and not p.is_symlink():
            out[str(p)] = (p.read_bytes(), p.stat().st_mtime_ns)
    return out


# -- the command itself -------------------------------------------------------------------


def test_doctor_on_a_fresh_repo_exits_zero_with_warnings_and_fixes(repo: Path) -> None:
    res = run_guards("doctor", cwd=repo)
    assert res.returncode == 0, res.stderr
    assert "warn" in res.stdout and "fix: guards install" in res.stdout
    assert res.stdout.rstrip().endswith("0 problems, 2 warnings")


def test_doctor_exits_one_when_a_problem_is_found(repo: Path) -> None:
    (repo / ".git" / "guards").mkdir()
    (repo / ".git" / "guards" / "ledger.json").write_text("{not json")
    res = run_guards("doctor", cwd=repo)
    assert res.returncode == 1
    assert "problem" in res.stdout and "corrupt" in res.stdout


def test_doctor_json_schema(repo: Path) -> None:
    res = run_guards("doctor", "--json", cwd=repo)
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    assert doc["schema"] == 1
    assert doc["repository"] == str(repo / ".git")
    assert doc["worktree"] == str(repo)
    assert doc["bare"] is False
    assert doc["healthy"] is True
    assert set(doc["counts"]) == {"ok", "warn", "problem"}
    assert sum(doc["counts"].values()) == len(doc["findings"])
    for f in doc["findings"]:
        assert set(f) == {"level", "area", "check", "message", "fix", "data"}
        assert f["level"] in {"ok", "warn", "problem"}
        assert "\n" not in f["message"] and "\n" not in (f["fix"] or "")
        assert f["level"] == "ok" or f["fix"]
    checks = {f["check"] for f in doc["findings"]}
    for expected in (
        "repository",
        "git-version",
        "hooks",
        "hooks-path",
        "aliases",
        "shim",
        "ledger",
        "lock",
        "kept-aside",
        "sessions",
        "dirty",
        "stashes",
        "rescues",
        "operation",
        "worktrees",
        "graveyard",
    ):
        assert expected in checks


def test_doctor_outside_a_repository_says_so_and_runs_setup_checks(tmp_path: Path) -> None:
    res = run_guards("doctor", "--json", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    assert doc["repository"] is None
    first = doc["findings"][0]
    assert first["check"] == "repository" and "not inside a git repository" in first["message"]
    assert {f["area"] for f in doc["findings"]} == {"repository", "setup"}


def test_doctor_in_a_bare_repository_says_so(tmp_path: Path, repo: Path) -> None:
    bare = tmp_path / "bare.git"
    git(tmp_path, "clone", "-q", "--bare", str(repo), str(bare))
    res = run_guards("doctor", "--json", cwd=bare)
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    assert doc["bare"] is True and doc["worktree"] is None
    assert "bare repository" in doc["findings"][0]["message"]
    checks = {f["check"]: f["level"] for f in doc["findings"]}
    assert "dirty" not in checks and "operation" not in checks
    assert checks["hooks"] == "ok"  # no commits are made in a bare repository
    assert checks["ledger"] == "ok" and checks["graveyard"] == "ok"


def test_doctor_modifies_nothing_not_even_the_index_stat_cache(repo: Path) -> None:
    git(repo, "branch", "old-idea")
    (repo / "README").write_text("changed\n")
    (repo / "new.txt").write_text("new\n")
    # Same bytes, new mtime: a plain `git status` would rewrite the index's stat cache.
    os.utime(repo / "src" / "app.py", (time.time(), time.time()))
    (repo / ".git" / "guards").mkdir()
    (repo / ".git" / "guards" / "ledger.json").write_text("{corrupt")
    (repo / ".git" / "guards" / "ledger.lock").write_text("")
    before = snapshot(repo)
    res = run_guards("doctor", cwd=repo)
    assert res.returncode == 1
    assert snapshot(repo) == before


def test_unreadable_settings_are_a_problem_and_defaults_are_used(repo: Path) -> None:
    config = repo / ".git" / "guards" / "config.toml"
    config.parent.mkdir()
    config.write_text("doctor = [bad toml")
    res = run_guards("doctor", cwd=repo)
    assert res.returncode == 1
    assert "Traceback" not in res.stderr
    assert "settings unreadable, defaults used" in res.stdout
    assert "no abandoned branches" in res.stdout  # the other checks still ran
    config.write_text('[doctor]\nstale_after = "3d"\n')
    assert level_of(repo, "config") == "ok"


def test_a_check_that_cannot_run_is_a_problem_not_a_crash(repo: Path) -> None:
    def broken(ctx: doctor.Context) -> list[Finding]:
        raise guards_git.GitError(["status"], 128, b"fatal: index file corrupt")

    ctx, _ = doctor.open_context(repo)
    (f,) = doctor.run_checks(ctx, [broken])
    assert f.level == "problem" and "could not check broken" in f.message
    assert "index file corrupt" in f.message


# -- setup --------------------------------------------------------------------------------


def test_git_version_is_reported_and_an_old_git_is_a_problem(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (ok,) = by_check(repo, "git-version")
    assert ok.level == "ok" and "git version 2." in ok.message
    fake = tmp_path / "oldgit"
    fake.write_text("#!/bin/sh\necho 'git version 2.20.1'\n")
    fake.chmod(0o755)
    monkeypatch.setattr(guards_git, "_real_git_cache", str(fake))
    ctx = doctor.Context(repo=None, config=Config(None), now=time.time())
    (old,) = doctor.check_git_version(ctx)
    assert old.level == "problem" and "too old" in old.message
    monkeypatch.setattr(guards_git, "_real_git_cache", None)
    assert doctor.check_git_version(ctx)[0].level == "ok"


NATIVE_HOOK = f"#!/bin/sh\n{MARKER} pre-commit\nexit 0\n"


def _write_hook(repo: Path, name: str, body: str, mode: int = 0o755) -> Path:
    hooks = repo / ".git" / "hooks"
    hooks.mkdir(exist_ok=True)
    path = hooks / name
    path.write_text(body)
    path.chmod(mode)
    return path


def test_hooks_by_installer_native_pre_commit_and_other(repo: Path) -> None:
    (missing,) = by_check(repo, "hooks")
    assert missing.level == "warn" and "no guards pre-commit hook" in missing.message
    _write_hook(repo, "pre-commit", NATIVE_HOOK)
    _write_hook(
        repo, "pre-push", "#!/bin/sh\n# File generated by pre-commit: https://pre-commit.com\n"
    )
    _write_hook(repo, "post-merge", "#!/bin/sh\necho mine\n")
    (found,) = by_check(repo, "hooks")
    assert found.level == "ok"
    assert found.data["hooks"] == {
        "post-merge": "other",
        "pre-commit": "guards",
        "pre-push": "pre-commit",
    }
    _write_hook(repo, "pre-commit", "#!/bin/sh\n# File generated by pre-commit\n")
    assert level_of(repo, "hooks") == "ok"
    _write_hook(repo, "pre-commit", "#!/bin/sh\necho homemade\n")
    assert level_of(repo, "hooks") == "warn"


def test_a_hook_that_only_mentions_the_marker_is_not_guards_own(repo: Path) -> None:
    """One test of "written by guards install --hooks": doctor used to count any hook
    holding the marker's words as guards' own, where uninstall (rightly) would not."""
    _write_hook(repo, "pre-commit", "#!/bin/sh\necho 'replaced the guards-native-hook'\n")
    (found,) = by_check(repo, "hooks")
    assert found.data["hooks"] == {"pre-commit": "other"}
    assert found.level == "warn"


def test_a_hook_that_is_not_executable_is_reported(repo: Path) -> None:
    hook = _write_hook(repo, "pre-commit", NATIVE_HOOK, mode=0o644)
    (f,) = by_check(repo, "hooks-not-executable")
    assert f.level == "warn" and "pre-commit" in f.message and "chmod +x" in f.fix
    hook.chmod(0o755)
    assert by_check(repo, "hooks-not-executable") == []
    assert level_of(repo, "hooks") == "ok"


def test_core_hooks_path_at_any_scope_is_reported(repo: Path) -> None:
    assert level_of(repo, "hooks-path") == "ok"
    git(repo, "config", "--global", "core.hooksPath", "/somewhere/hooks")
    (f,) = by_check(repo, "hooks-path")
    assert f.level == "warn" and "global" in f.message and "pre-commit refuses" in f.message
    assert "git config --global --unset-all core.hooksPath" in f.fix
    git(repo, "config", "--global", "--unset", "core.hooksPath")
    git(repo, "config", "core.hooksPath", ".githooks")
    (f,) = by_check(repo, "hooks-path")
    assert f.level == "warn" and "local" in f.message
    git(repo, "config", "--unset", "core.hooksPath")
    assert level_of(repo, "hooks-path") == "ok"


def test_safe_aliases_missing_wrong_and_installed(repo: Path) -> None:
    (f,) = by_check(repo, "aliases")
    assert f.level == "warn" and "not installed" in f.message
    for sub in SAFE_ALIASES.values():
        git(repo, "config", f"alias.safe-{sub}", f"!guards run -- {sub}")
    (f,) = by_check(repo, "aliases")
    assert f.level == "ok"
    git(repo, "config", "alias.safe-reset", "reset --hard")
    git(repo, "config", "--unset", "alias.safe-clean")
    assert by_check(repo, "aliases")[0].message.endswith("safe-clean")
    (wrong,) = by_check(repo, "aliases-wrong")
    assert "safe-reset" in wrong.message
    git(repo, "config", "alias.safe-reset", "!guards run -- reset")
    git(repo, "config", "alias.safe-clean", "!guards run -- clean")
    assert level_of(repo, "aliases") == "ok" and by_check(repo, "aliases-wrong") == []


def _shim(directory: Path) -> Path:
    directory.mkdir()
    shim = directory / "git"
    shim.write_bytes(b"#!/bin/sh\n# " + guards_git.SHIM_MARKER + b'\nexec guards run -- "$@"\n')
    shim.chmod(0o755)
    return shim


def test_shim_first_on_path_and_its_real_git(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ctx = doctor.Context(repo=None, config=Config(None), now=time.time())
    (plain,) = doctor.check_shim(ctx)
    assert plain.level == "ok" and plain.data["shim"] is False
    shim = _shim(tmp_path / "shimdir")
    real_dir = os.path.dirname(shutil.which("git") or "/usr/bin/git")
    monkeypatch.setenv("PATH", f"{shim.parent}{os.pathsep}{real_dir}")
    (good,) = doctor.check_shim(ctx)
    assert good.level == "ok" and good.data["shim"] is True
    assert good.data["real_git"] == os.path.join(real_dir, "git")
    monkeypatch.setenv("PATH", str(shim.parent))
    (broken,) = doctor.check_shim(ctx)
    assert broken.level == "problem" and "finds no real git" in broken.message
    monkeypatch.setenv("PATH", f"{shim.parent}{os.pathsep}{real_dir}")
    assert doctor.check_shim(ctx)[0].level == "ok"


# -- ledger -------------------------------------------------------------------------------


def test_a_corrupt_ledger_is_a_problem_and_doctor_does_not_move_it(repo: Path) -> None:
    assert by_check(repo, "ledger")[0].message.startswith("no ledger yet")
    directory = repo / ".git" / "guards"
    directory.mkdir()
    (directory / "ledger.json").write_text('{"schema": 1, "sessions": [')
    (f,) = by_check(repo, "ledger")
    assert f.level == "problem" and "corrupt" in f.message and "guards status" in f.fix
    assert (directory / "ledger.json").exists()
    (directory / "ledger.json").unlink()
    add_session(repo, "s1")
    (f,) = by_check(repo, "ledger")
    assert f.level == "ok" and "1 session" in f.message


#: Ledgers nested deeper than json can decode (a RecursionError, not a ValueError).
DEEP_LEDGERS = {
    "array": "[" * 100_000 + "]" * 100_000,
    "object": '{"a":' * 100_000 + "1" + "}" * 100_000,
    "inside-a-ledger": '{"schema": 1, "sessions": {}, "notes": '
    + "[" * 100_000
    + "]" * 100_000
    + "}",
}


@pytest.mark.parametrize("shape", sorted(DEEP_LEDGERS))
def test_a_deeply_nested_ledger_is_a_finding_not_an_internal_error(repo: Path, shape: str) -> None:
    """doctor read the ledger through a reader without the ledger module's guard and
    died with exit 3 (RecursionError) where `guards status` keeps the file aside."""
    directory = repo / ".git" / "guards"
    directory.mkdir()
    (directory / "ledger.json").write_text(DEEP_LEDGERS[shape])
    res = run_guards("doctor", "--json", cwd=repo)
    assert res.returncode == 1, res.stderr
    assert res.stderr == ""
    (f,) = [f for f in json.loads(res.stdout)["findings"] if f["check"] == "ledger"]
    assert f["level"] == "problem" and "corrupt" in f["message"] and "guards status" in f["fix"]
    assert sorted(p.name for p in directory.iterdir()) == ["ledger.json"]  # read-only
    status = run_guards("status", cwd=repo)
    assert status.returncode == 4 and "corrupt" in status.stderr
    assert len(list(directory.glob("ledger.json.corrupt-*"))) == 1


def test_a_newer_ledger_is_a_problem_with_upgrade_as_the_fix(repo: Path) -> None:
    directory = repo / ".git" / "guards"
    directory.mkdir()
    (directory / "ledger.json").write_text('{"schema": 99}')
    (f,) = by_check(repo, "ledger")
    assert f.level == "problem" and "newer guards" in f.message and "upgrade" in f.fix
    (directory / "ledger.json").write_text('{"schema": 1}')
    assert level_of(repo, "ledger") == "ok"


def test_a_stuck_ledger_lock_is_a_problem_naming_its_holder(repo: Path) -> None:
    add_session(repo, "s1")
    lock = repo / ".git" / "guards" / "ledger.lock"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import fcntl, sys, time\n"
            f"f = open({str(lock)!r}, 'a')\n"
            "fcntl.flock(f, fcntl.LOCK_EX)\n"
            "print('held', flush=True)\n"
            "time.sleep(60)\n",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        (f,) = by_check(repo, "lock")
        assert f.level == "problem" and "held" in f.message
        if os.path.exists("/proc/locks"):
            assert str(holder.pid) in f.message
    finally:
        holder.kill()
        holder.wait()
    (f,) = by_check(repo, "lock")
    assert f.level == "ok"


def test_corrupt_ledgers_kept_aside_are_reported(repo: Path) -> None:
    add_session(repo, "s1")
    aside = repo / ".git" / "guards" / "ledger.json.corrupt-20260101T000000Z-1"
    aside.write_text("{")
    (f,) = by_check(repo, "kept-aside")
    assert f.level == "warn" and aside.name in f.message
    aside.unlink()
    assert level_of(repo, "kept-aside") == "ok"


# -- sessions and dirty paths ---------------------------------------------------------------


def test_sessions_live_dead_reused_and_stale(repo: Path) -> None:
    add_session(repo, "alive", **live_pid_fields())
    add_session(repo, "gone", pid=dead_pid(), pid_start="whatever")
    add_session(repo, "reused", pid=os.getpid(), pid_start="not-this-process")
    add_session(repo, "quiet", last_seen=time.time() - 2 * DAY)
    (summary,) = by_check(repo, "sessions")
    assert summary.data["counts"] == {"live": 1, "ended": 0, "dead": 2, "stale": 1}
    assert summary.data["sessions"]["reused"]["reason"].endswith("reused")
    (gone,) = by_check(repo, "sessions-gone")
    assert gone.level == "warn"
    assert set(gone.data["sessions"]) == {"gone", "reused", "quiet"}
    for sid in ("gone", "reused", "quiet"):
        assert run_guards("session", "end", sid, cwd=repo).returncode == 0
    assert by_check(repo, "sessions-gone") == []
    assert by_check(repo, "sessions")[0].data["counts"]["ended"] == 3


def test_dirty_paths_are_counted_by_owner(repo: Path) -> None:
    (f,) = by_check(repo, "dirty")
    assert f.message == "the work tree is clean"
    add_session(repo, "writer", **live_pid_fields())
    (repo / "README").write_text("edited\n")
    (repo / "notes.txt").write_text("n\n")
    attribute(repo, "README", "writer")
    (f,) = by_check(repo, "dirty")
    assert f.level == "ok" and f.data["by_owner"] == {"writer": 1, "unknown": 1}
    assert "session writer 1" in f.message and "owner unknown 1" in f.message


def test_the_command_counts_the_whole_work_tree_by_owner_from_a_subdirectory(repo: Path) -> None:
    """The command starts git status in the caller's directory before it has found the
    repository (to overlap the checks): its paths are the top level's all the same."""
    add_session(repo, "writer", **live_pid_fields())
    (repo / "README").write_text("edited\n")
    (repo / "deep/er").mkdir(parents=True)
    (repo / "deep/er/new.txt").write_text("n\n")
    attribute(repo, "README", "writer")
    res = run_guards("doctor", "--json", cwd=repo / "deep/er")
    [dirty] = [f for f in json.loads(res.stdout)["findings"] if f["check"] == "dirty"]
    assert dirty["data"]["by_owner"] == {"writer": 1, "unknown": 1}, res.stdout


def test_the_command_reports_dirty_paths_beside_a_submodule_git_cannot_read(
    repo: Path, tmp_path: Path
) -> None:
    """git status fails there; the status started before the checks is not the last
    word (the checks' own reading leaves that submodule out and says it changed)."""
    make_repo(tmp_path / "sub-origin", {"s.txt": "s\n"})
    git(
        repo,
        "-c",
        "protocol.file.allow=always",
        "submodule",
        "add",
        "-q",
        str(tmp_path / "sub-origin"),
        "sub",
    )
    git(repo, "commit", "-qm", "sub")
    (repo / "sub/.git").write_text("gitdir: /nonexistent\n")
    (repo / "README").write_text("edited\n")
    res = run_guards("doctor", "--json", cwd=repo)
    [dirty] = [f for f in json.loads(res.stdout)["findings"] if f["check"] == "dirty"]
    assert dirty["data"]["total"] >= 2, res.stdout  # README and the unreadable submodule


def test_a_path_dirty_for_weeks_is_a_finding(repo: Path) -> None:
    (repo / "README").write_text("half done\n")
    three_weeks_ago = time.time() - 21 * DAY
    os.utime(repo / "README", (three_weeks_ago, three_weeks_ago))
    (f,) = by_check(repo, "dirty-stale")
    assert f.level == "warn" and "README (3 weeks ago, owner unknown)" in f.message
    assert "14 days" in f.message
    git(repo, "commit", "-qam", "finish it")
    assert by_check(repo, "dirty-stale") == []


def test_stale_after_is_configurable(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (repo / "README").write_text("half done\n")
    two_days_ago = time.time() - 2 * DAY
    os.utime(repo / "README", (two_days_ago, two_days_ago))
    assert by_check(repo, "dirty-stale") == []
    monkeypatch.setenv("GUARDS_DOCTOR_STALE_AFTER", "1d")
    assert level_of(repo, "dirty-stale") == "warn"


def test_dirty_paths_of_dead_sessions_are_a_finding(repo: Path) -> None:
    add_session(repo, "ghost", pid=dead_pid(), pid_start="x")
    add_session(repo, "alive", **live_pid_fields())
    (repo / "README").write_text("ghost work\n")
    attribute(repo, "README", "ghost")
    (f,) = by_check(repo, "dirty-orphaned")
    assert f.level == "warn" and "ghost (dead, 1 path)" in f.message
    attribute(repo, "README", "alive")
    assert by_check(repo, "dirty-orphaned") == []


# -- stashes, rescues, operations -------------------------------------------------------------


def test_old_stashes_are_reported_with_age_author_and_session(repo: Path) -> None:
    assert by_check(repo, "stashes")[0].message == "no stashes"
    (repo / "README").write_text("stashed\n")
    git(repo, "stash", "push", "-q", "-m", "parked work")
    oid = git(repo, "rev-parse", "refs/stash").strip()
    with ledger(repo).transaction() as data:
        data.rescues.append({"ref": "refs/rescue/x", "stash": oid, "session": "pod-a"})
    (summary,) = by_check(repo, "stashes")
    assert summary.data["stashes"][0]["session"] == "pod-a"
    assert summary.data["stashes"][0]["author"] == "A U Thor"
    (old,) = by_check(repo, "stashes-old")  # the sealed commit date is in 2023
    assert old.level == "warn" and "stash@{0}" in old.message and "session pod-a" in old.message
    assert "git stash show -p stash@{0}" in old.fix
    git(repo, "stash", "drop", "-q")
    assert by_check(repo, "stashes-old") == []
    assert by_check(repo, "stashes")[0].message == "no stashes"


def test_rescue_refs_count_oldest_and_unpushed(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    head = git(repo, "rev-parse", "HEAD").strip()
    refs = ["refs/rescue/s1/20260101T000000Z-reset", "refs/rescue/s2/20260102T000000Z-clean"]
    git(repo, "update-ref", "--stdin", input="".join(f"create {r} {head}\n" for r in refs).encode())
    (summary,) = by_check(repo, "rescues")
    assert summary.data["count"] == 2 and "2 rescue refs" in summary.message
    (old,) = by_check(repo, "rescues-old")
    assert old.level == "warn"
    assert by_check(repo, "rescues-unpushed") == []  # no remote configured
    monkeypatch.setenv("GUARDS_RESCUE_REMOTE", "origin")
    with ledger(repo).transaction() as data:
        data.rescues += [{"ref": refs[0], "push": "pushed"}, {"ref": refs[1], "push": None}]
    (unpushed,) = by_check(repo, "rescues-unpushed")
    assert unpushed.level == "warn" and unpushed.data["refs"] == [refs[1]]
    with ledger(repo).transaction() as data:
        data.rescues[1]["push"] = "pushed"
    assert level_of(repo, "rescues-unpushed") == "ok"
    for r in refs:
        git(repo, "update-ref", "-d", r)
    assert by_check(repo, "rescues-old") == []
    assert by_check(repo, "rescues")[0].message == "no rescue refs under refs/rescue"


def test_a_merge_in_progress_is_reported_until_finished(repo: Path) -> None:
    git(repo, "switch", "-q", "-c", "other")
    (repo / "README").write_text("theirs\n")
    git(repo, "commit", "-qam", "theirs")
    git(repo, "switch", "-q", "main")
    (repo / "README").write_text("ours\n")
    git(repo, "commit", "-qam", "ours")
    git(repo, "merge", "other", check=False)
    (f,) = by_check(repo, "operation")
    assert f.level == "warn" and f.message == "a merge is in progress"
    assert "git merge --abort" in f.fix
    git(repo, "merge", "--abort")
    assert by_check(repo, "operation")[0].message == "no operation in progress"


def test_an_autostash_parked_by_a_stopped_rebase_is_a_problem(repo: Path) -> None:
    git(repo, "switch", "-q", "-c", "topic")
    (repo / "README").write_text("topic\n")
    git(repo, "commit", "-qam", "topic")
    git(repo, "switch", "-q", "main")
    (repo / "README").write_text("main\n")
    git(repo, "commit", "-qam", "main")
    git(repo, "switch", "-q", "topic")
    (repo / "src" / "app.py").write_text("uncommitted\n")
    git(repo, "rebase", "--autostash", "main", check=False)
    assert (repo / ".git" / "rebase-merge" / "autostash").exists()
    (parked,) = by_check(repo, "autostash")
    assert parked.level == "problem" and "held by no ref" in parked.message
    assert level_of(repo, "operation") == "warn"
    git(repo, "rebase", "--abort")
    assert by_check(repo, "autostash") == []
    assert (repo / "src" / "app.py").read_text() == "uncommitted\n"


# -- worktrees and branches -----------------------------------------------------------------


def register_worktree(repo: Path, path: Path, session: str) -> None:
    with ledger(repo).transaction() as data:
        data.worktrees[str(path)] = {
            "path": str(path),
            "session": session,
            "branch": "refs/heads/x",
            "base": "",
            "created": time.time(),
            "lock_reason": None,
        }


def test_unregistered_registered_and_dead_owner_worktrees(repo: Path, tmp_path: Path) -> None:
    wt = tmp_path / "wt1"
    git(repo, "worktree", "add", "-q", "-b", "wt1", str(wt))
    (f,) = by_check(repo, "worktrees-unregistered")
    assert str(wt) in f.message
    add_session(repo, "owner", **live_pid_fields())
    register_worktree(repo, wt, "owner")
    assert by_check(repo, "worktrees-unregistered") == []
    assert "1 registered" in by_check(repo, "worktrees")[0].message
    assert by_check(repo, "worktrees-owner-dead") == []
    add_session(repo, "owner", pid=dead_pid(), pid_start="x")
    (dead,) = by_check(repo, "worktrees-owner-dead")
    assert dead.level == "warn" and "owner" in dead.message and "guards reap" in dead.fix
    add_session(repo, "owner", **live_pid_fields())
    assert by_check(repo, "worktrees-owner-dead") == []


def test_locked_prunable_and_missing_worktrees(repo: Path, tmp_path: Path) -> None:
    wt = tmp_path / "wt2"
    git(repo, "worktree", "add", "-q", "-b", "wt2", str(wt))
    git(repo, "worktree", "lock", "--reason", "busy", str(wt))
    assert "1 locked" in by_check(repo, "worktrees")[0].message
    git(repo, "worktree", "unlock", str(wt))
    shutil.rmtree(wt)
    (f,) = by_check(repo, "worktrees-prunable")
    assert f.level == "warn" and str(wt) in f.message and "git worktree prune" in f.fix
    git(repo, "worktree", "prune")
    assert by_check(repo, "worktrees-prunable") == []
    register_worktree(repo, wt, "someone")
    (missing,) = by_check(repo, "worktrees-missing")
    assert str(wt) in missing.message
    with ledger(repo).transaction() as data:
        data.worktrees.clear()
    assert by_check(repo, "worktrees-missing") == []


def test_abandoned_branches_are_the_graveyard(repo: Path, tmp_path: Path) -> None:
    git(repo, "switch", "-q", "-c", "abandoned")
    (repo / "idea.txt").write_text("idea\n")
    git(repo, "add", "idea.txt")
    git(repo, "commit", "-qm", "an idea")  # sealed committer date: 2023
    git(repo, "switch", "-q", "main")
    git(repo, "branch", "merged")  # merged into HEAD: not a grave
    (f,) = by_check(repo, "graveyard")
    assert f.level == "warn" and f.data["branches"] == ["abandoned"]
    assert "git branch -D abandoned" in f.fix
    # With an upstream it is not abandoned.
    remote = make_repo(tmp_path / "remote")
    git(repo, "remote", "add", "origin", str(remote))
    git(repo, "fetch", "-q", "origin")
    git(repo, "branch", "-q", "--set-upstream-to=origin/main", "abandoned")
    assert level_of(repo, "graveyard") == "ok"
    git(repo, "branch", "-q", "--unset-upstream", "abandoned")
    assert level_of(repo, "graveyard") == "warn"
    git(repo, "branch", "-q", "-D", "abandoned")
    assert by_check(repo, "graveyard")[0].message == "no abandoned branches"


def test_graveyard_on_an_unborn_branch_does_not_fail(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    git(tmp_path, "init", "-q", str(empty))
    (f,) = by_check(empty, "graveyard")
    assert f.level == "ok"


def test_odd_ledger_records_do_not_break_doctor(repo: Path) -> None:
    with ledger(repo).transaction() as data:
        data.sessions["weird"] = {"pid": "not a number", "host": hostname()}
        data.worktrees["/nowhere"] = "not an object"  # type: ignore[assignment]
        data.rescues.append("not an object")  # type: ignore[arg-type]
    res = run_guards("doctor", "--json", cwd=repo)
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    sessions = next(f for f in doc["findings"] if f["check"] == "sessions")
    assert sessions["data"]["sessions"]["weird"]["state"] == "stale"


def test_a_hook_installed_by_the_pre_commit_framework_is_recognised(repo: Path) -> None:
    res = subprocess.run(
        [sys.executable, "-m", "pre_commit", "install", "-t", "pre-commit", "-t", "pre-push"],
        cwd=repo,
        capture_output=True,
        text=True,
        check=False,
    )
    assert res.returncode == 0, res.stderr
    (f,) = by_check(repo, "hooks")
    assert f.level == "ok"
    assert f.data["hooks"] == {"pre-commit": "pre-commit", "pre-push": "pre-commit"}
