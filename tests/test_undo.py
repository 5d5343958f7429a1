"""`guards undo` and rescue retention (`rescue prune --redundant`, doctor's suggestion)."""

from __future__ import annotations

import json
from pathlib import Path

from guards.errors import ExitCode
from tests.helpers import git, make_repo, record, run_guards

BOB = {"GUARDS_SESSION": "bob"}


def _wiped(tmp_path: Path) -> Path:
    """alice's edit and a staged change of unknown owner, then bob's `reset --hard`."""
    repo = make_repo(tmp_path / "repo", {"a.txt": "a\n", "b.txt": "b\n"})
    (repo / "a.txt").write_text("alice's edit\n")
    record(repo, "alice", "a.txt")
    (repo / "b.txt").write_text("staged\n")
    git(repo, "add", "b.txt")
    (repo / "b.txt").write_text("staged, then edited\n")
    res = run_guards("run", "--", "reset", "--hard", cwd=repo, env=BOB)
    assert res.returncode == 0 and (repo / "a.txt").read_text() == "a\n"
    return repo


def test_undo_restores_the_callers_last_rescue_and_the_index(tmp_path: Path) -> None:
    repo = _wiped(tmp_path)
    res = run_guards("undo", cwd=repo, env=BOB)
    assert res.returncode == 0, res.stdout + res.stderr
    assert (repo / "a.txt").read_text() == "alice's edit\n"
    assert (repo / "b.txt").read_text() == "staged, then edited\n"
    assert git(repo, "show", ":b.txt") == "staged\n"
    # Again: everything is already as rescued; nothing is written twice.
    again = json.loads(run_guards("undo", "--json", cwd=repo, env=BOB).stdout)
    assert again["complete"] and all(r["written"] == [] for r in again["refs"])


def test_undo_never_overwrites_newer_work_unless_forced_and_then_rescues_it(
    tmp_path: Path,
) -> None:
    repo = _wiped(tmp_path)
    (repo / "a.txt").write_text("newer work\n")
    res = run_guards("undo", cwd=repo, env=BOB)
    assert res.returncode == ExitCode.FINDINGS
    assert "conflict: a.txt changed since the rescue" in res.stdout
    assert (repo / "a.txt").read_text() == "newer work\n"
    assert (repo / "b.txt").read_text() == "staged, then edited\n"  # the rest came back
    forced = run_guards("undo", "--force", cwd=repo, env=BOB)
    assert forced.returncode == 0, forced.stdout + forced.stderr
    assert (repo / "a.txt").read_text() == "alice's edit\n"
    # The newer work was rescued first, logged, and one more undo... is itself undoable.
    entries = json.loads(run_guards("log", "--json", cwd=repo).stdout)["entries"]
    last = entries[-1]
    assert last["via"] == "undo" and last["kind"] == "rescued"
    [rescue] = last["rescues"]
    assert git(repo, "show", f"{rescue['ref']}:a.txt") == "newer work\n"


def test_undo_of_a_chosen_entry_and_its_errors(tmp_path: Path) -> None:
    repo = _wiped(tmp_path)
    entry = json.loads(run_guards("log", "--json", cwd=repo).stdout)["entries"][0]
    other = run_guards("undo", entry["id"][:5], cwd=repo, env={"GUARDS_SESSION": "carol"})
    assert other.returncode == 0 and (repo / "a.txt").read_text() == "alice's edit\n"
    nothing = run_guards("undo", cwd=repo, env={"GUARDS_SESSION": "carol"})
    assert nothing.returncode == ExitCode.USAGE and nothing.stderr.count("\n") == 1
    missing = run_guards("undo", "ffffffffff", cwd=repo, env=BOB)
    assert missing.returncode == ExitCode.USAGE and "no decision log entry" in missing.stderr
    run_guards("run", "--", "reset", "--hard", cwd=repo, env={**BOB, "GUARDS_POLICY": "block"})
    refused = json.loads(run_guards("log", "--json", cwd=repo).stdout)["entries"][-1]
    assert refused["kind"] == "refused"
    res = run_guards("undo", refused["id"], cwd=repo, env=BOB)
    assert res.returncode == ExitCode.USAGE and "not a rescue" in res.stderr


def _refs(repo: Path) -> list[str]:
    return git(repo, "for-each-ref", "--format=%(refname)", "refs/rescue").split()


def test_prune_redundant_drops_only_rescues_whose_content_is_elsewhere(tmp_path: Path) -> None:
    repo = _wiped(tmp_path)
    before = _refs(repo)
    assert len(before) == 2
    # Nothing is elsewhere yet: nothing to prune, and doctor suggests nothing.
    assert run_guards("rescue", "prune", "--redundant", cwd=repo).stdout == "nothing to prune\n"
    assert "rescues-redundant" not in run_guards("doctor", "--json", cwd=repo).stdout
    run_guards("undo", cwd=repo, env=BOB)
    (repo / "b.txt").write_text("edited again after the undo\n")  # b's rescue: not elsewhere
    doc = json.loads(run_guards("doctor", "--json", cwd=repo).stdout)
    [finding] = [f for f in doc["findings"] if f["check"] == "rescues-redundant"]
    alice_ref = [r for r in before if "/alice/" in r]
    assert finding["data"]["refs"] == alice_ref
    assert "prune --redundant" in finding["fix"]
    dry = run_guards("rescue", "prune", "--redundant", "--dry-run", cwd=repo)
    assert dry.stdout.startswith(f"would drop {alice_ref[0]}") and _refs(repo) == before
    assert run_guards("rescue", "prune", "--redundant", "--yes", cwd=repo).returncode == 0
    assert _refs(repo) == [r for r in before if r not in alice_ref]
    # Committed on a branch counts too: the staged version and the edited file.
    git(repo, "add", "b.txt")
    git(repo, "commit", "-qm", "only the newest b")
    assert run_guards("rescue", "prune", "--redundant", cwd=repo).stdout == "nothing to prune\n"
    git(repo, "checkout", "-q", "-b", "keep-all")
    (repo / "b.txt").write_text("staged\n")
    git(repo, "commit", "-qam", "staged b")
    (repo / "b.txt").write_text("staged, then edited\n")
    git(repo, "commit", "-qam", "edited b")
    assert run_guards("rescue", "prune", "--redundant", "--yes", cwd=repo).returncode == 0
    assert _refs(repo) == []


def test_nothing_expires_by_age_unless_asked(tmp_path: Path) -> None:
    repo = _wiped(tmp_path)
    res = run_guards("rescue", "prune", cwd=repo)
    assert res.returncode == ExitCode.USAGE and res.stderr.count("\n") == 1
    assert len(_refs(repo)) == 2
