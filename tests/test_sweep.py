"""Every repository on the machine: the registry, guards doctor --all, guards reap --all."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from guards.errors import ExitCode
from guards.state.repositories import known, registry_file
from tests.helpers import git, make_repo, run_guards


def registered() -> list[str]:
    return [k.git_dir for k in known()]


def git_dir(repo: Path) -> str:
    return str((repo / ".git").resolve())


def test_a_session_start_a_record_and_a_rescue_register_the_repository_once(
    tmp_path: Path,
) -> None:
    one, two, three = (make_repo(tmp_path / name) for name in ("one", "two", "three"))
    assert run_guards("session", "start", "--id", "s", cwd=one).returncode == 0
    assert run_guards("session", "start", "--id", "t", cwd=one).returncode == 0
    (two / "README").write_text("mine\n")
    assert run_guards("record", "--session", "s", "README", cwd=two).returncode == 0
    (three / "README").write_text("someone's\n")
    # Nothing at risk: the guarded git registers nothing.
    assert run_guards("run", "--", "status", "--short", cwd=three).returncode == 0
    assert registered() == [git_dir(one), git_dir(two)]
    # A rescue does.
    assert run_guards("run", "--", "reset", "--hard", cwd=three).returncode == 0
    assert registered() == [git_dir(one), git_dir(two), git_dir(three)]
    lines = Path(registry_file()).read_text().splitlines()
    assert len(lines) == 3 and all(json.loads(line)["added"] > 0 for line in lines)


def test_doctor_all_gives_one_line_per_repository_and_the_worst_status(
    tmp_path: Path,
) -> None:
    healthy, troubled, vanished = (
        make_repo(tmp_path / name) for name in ("healthy", "troubled", "vanished")
    )
    for repo in (healthy, troubled, vanished):
        assert run_guards("session", "start", "--id", "s", cwd=repo).returncode == 0
    # Local changes parked by an autostash in no ref: a doctor problem.
    oid = git(troubled, "rev-parse", "HEAD").strip()
    (troubled / ".git" / "MERGE_AUTOSTASH").write_text(oid + "\n")
    shutil.rmtree(vanished)
    proc = run_guards("doctor", "--all", cwd=tmp_path)
    assert proc.returncode == ExitCode.FINDINGS, proc.stderr
    lines = proc.stdout.splitlines()
    assert len(lines) == 3
    assert lines[0].startswith("warn") or lines[0].startswith("ok")
    assert str(healthy) in lines[0]
    assert lines[1].startswith("problem") and str(troubled) in lines[1]
    assert "1 problem" in lines[1] and "MERGE_AUTOSTASH" in lines[1]
    assert lines[2].startswith("gone") and "dropped from the registry" in lines[2]
    # The vanished one is gone from the registry for good.
    assert registered() == [git_dir(healthy), git_dir(troubled)]
    doc = json.loads(run_guards("doctor", "--all", "--json", cwd=tmp_path).stdout)
    assert doc["exit"] == ExitCode.FINDINGS
    assert [r["status"] for r in doc["repositories"]] == ["ran", "ran"]
    assert doc["repositories"][1]["report"]["counts"]["problem"] == 1


def test_a_repository_over_its_time_bound_is_stopped_and_reported(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "slow")
    assert run_guards("session", "start", "--id", "s", cwd=repo).returncode == 0
    proc = run_guards("doctor", "--all", cwd=tmp_path, env={"GUARDS_SWEEP_TIMEOUT": "0.05"})
    assert proc.returncode == ExitCode.UNKNOWN_STATE
    assert proc.stdout.startswith("timeout") and "no answer within 0.05 s" in proc.stdout
    assert registered() == [git_dir(repo)]  # slow is not gone


def test_reap_all_sweeps_every_repository(tmp_path: Path) -> None:
    fleet, quiet = make_repo(tmp_path / "fleet"), make_repo(tmp_path / "quiet")
    assert run_guards("session", "start", "--id", "s", cwd=quiet).returncode == 0
    wt = tmp_path / "wt-done"
    made = run_guards("worktree", "add", str(wt), "-b", "done", "--session", "done", cwd=fleet)
    assert made.returncode == 0, made.stderr
    (wt / "notes.txt").write_text("left behind\n")
    assert run_guards("session", "end", "done", "--no-persist", cwd=fleet).returncode == 0
    dry = run_guards("reap", "--all", cwd=tmp_path)
    assert dry.returncode == 0, dry.stderr
    lines = dry.stdout.splitlines()
    # In the order guards first met them: quiet at its session start, fleet at worktree add.
    assert lines[0].startswith("ok") and str(quiet) in lines[0]
    assert "no linked worktrees" in lines[0]
    assert lines[1].startswith("ok") and str(fleet) in lines[1] and "would reap 1" in lines[1]
    assert lines[2] == "dry run: nothing changed; guards reap --all --apply does it"
    assert wt.exists()
    applied = run_guards("reap", "--all", "--apply", "--json", cwd=tmp_path)
    assert applied.returncode == 0, applied.stderr
    doc = json.loads(applied.stdout)
    assert doc["applied"] is True and doc["exit"] == 0
    outcomes = [w["outcome"] for w in doc["repositories"][1]["report"]["worktrees"]]
    assert outcomes == ["reaped"] and not wt.exists()
    rescued = git(fleet, "for-each-ref", "--format=%(refname)", "refs/rescue").split()
    assert len(rescued) == 1 and git(fleet, "show", f"{rescued[0]}:notes.txt") == "left behind\n"


def test_an_empty_registry_is_said_plainly(tmp_path: Path) -> None:
    proc = run_guards("doctor", "--all", cwd=tmp_path)
    assert proc.returncode == 0 and "no repositories registered yet" in proc.stdout


def test_a_fleet_goes_from_worktree_add_to_land_to_reap_all_losing_nothing(
    tmp_path: Path,
) -> None:
    """Two agents, a worktree each: one lands its branch and leaves a scratch file, the
    other dies mid-task. The sweep rescues both leftovers, then prunes both worktrees."""
    repo = make_repo(tmp_path / "repo", {"README": "hello\n"})
    wts = {name: tmp_path / f"wt-{name}" for name in ("done", "dead")}
    for name, wt in wts.items():
        made = run_guards("worktree", "add", str(wt), "-b", name, "--session", name, cwd=repo)
        assert made.returncode == 0, made.stderr
    (wts["done"] / "feature.txt").write_text("landed work\n")
    git(wts["done"], "add", "feature.txt")
    git(wts["done"], "commit", "-qm", "feature")
    (wts["done"] / "scratch.txt").write_text("never committed\n")
    landed = run_guards("land", cwd=wts["done"])
    assert landed.returncode == 0, landed.stderr
    assert git(repo, "show", "main:feature.txt") == "landed work\n"
    (wts["dead"] / "half.txt").write_text("half done\n")
    for name in wts:
        ended = run_guards("session", "end", name, "--no-persist", cwd=repo)
        assert ended.returncode == 0, ended.stderr
    swept = run_guards("reap", "--all", "--apply", cwd=tmp_path)
    assert swept.returncode == 0, swept.stdout + swept.stderr
    assert not any(wt.exists() for wt in wts.values())
    kept = {}
    for ref in git(repo, "for-each-ref", "--format=%(refname)", "refs/rescue").split():
        for path in git(repo, "ls-tree", "-r", "--name-only", ref).split():
            kept[path] = git(repo, "show", f"{ref}:{path}")
    assert kept["scratch.txt"] == "never committed\n"
    assert kept["half.txt"] == "half done\n"
    assert git(repo, "show", "main:feature.txt") == "landed work\n"


def test_a_registered_repository_is_found_without_parsing_the_registry(
    tmp_path: Path,
) -> None:
    # Every record asks; a listed repository is found by a byte search of the file as
    # the registry writes it (it once searched a spaced form it never wrote, and parsed
    # the whole registry on every agent edit).
    from guards.state.repositories import _listed_verbatim

    repo = make_repo(tmp_path / "repo")
    other = make_repo(tmp_path / "repo-other")
    assert not _listed_verbatim(git_dir(repo))
    for each in (other, repo):
        (each / "README").write_text("mine\n")
        assert run_guards("record", "--session", "s", "README", cwd=each).returncode == 0
    assert _listed_verbatim(git_dir(repo)) and _listed_verbatim(git_dir(other))
    assert not _listed_verbatim(git_dir(repo)[:-1])  # a prefix of a listed path is not
    assert not _listed_verbatim(str(tmp_path / "repo"))
