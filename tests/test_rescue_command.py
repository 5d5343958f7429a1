"""guards rescue list/show/restore/drop/prune, run as a user would."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from guards.protect.rescue import AtRiskPath, RescueResult, rescue_commits, rescue_paths
from guards.state.workspace import Workspace
from tests.helpers import git, run_guards


def rescue(repo: Path, paths: list[str], owner: str | None = "alice") -> RescueResult:
    ws = Workspace.open(repo)
    return rescue_paths(ws, [AtRiskPath(p, owner) for p in paths], command="reset --hard")[0]


def test_list_shows_rescues_and_json_has_every_field(repo: Path) -> None:
    (repo / "README").write_text("alice's\n")
    a = rescue(repo, ["README"], "alice")
    (repo / "src" / "app.py").write_text("bob's\n")
    b = rescue(repo, ["src/app.py"], "bob")
    proc = run_guards("rescue", "list", cwd=repo)
    assert proc.returncode == 0, proc.stderr
    assert a.ref in proc.stdout and b.ref in proc.stdout
    assert "reset --hard" in proc.stdout
    proc = run_guards("rescue", "list", "--json", "--owner", "bob", cwd=repo)
    doc = json.loads(proc.stdout)
    assert doc["schema"] == 1
    assert [r["ref"] for r in doc["rescues"]] == [b.ref]
    entry = doc["rescues"][0]
    assert entry["owner"] == "bob" and entry["paths"] == ["src/app.py"]
    assert entry["commit"] == b.commit and entry["command"] == "reset --hard"
    assert entry["kind"] == "paths" and entry["index_commit"] == b.index_commit


def test_list_with_no_rescues_says_so(repo: Path) -> None:
    proc = run_guards("rescue", "list", cwd=repo)
    assert proc.returncode == 0 and proc.stdout.strip() == "no rescues"


def test_show_prints_owner_paths_and_restore_commands(repo: Path) -> None:
    (repo / "README").write_text("x\n")
    r = rescue(repo, ["README"])
    short = r.ref.removeprefix("refs/rescue/")
    proc = run_guards("rescue", "show", short, cwd=repo)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "alice" in out and "reset --hard" in out and "README" in out
    assert f"guards rescue restore {r.ref}" in out
    assert f"git restore --source={r.ref} -- <path>" in out


def test_show_unknown_ref_is_one_line_usage_error(repo: Path) -> None:
    proc = run_guards("rescue", "show", "nope", cwd=repo)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr


def test_restore_puts_files_back_after_reset_hard(repo: Path) -> None:
    (repo / "README").write_text("precious\n")
    (repo / "new file").write_text("untracked\n")
    (repo / "src" / "app.py").unlink()
    r = rescue(repo, ["README", "new file", "src/app.py"])
    git(repo, "reset", "-q", "--hard")
    git(repo, "clean", "-qfd")
    proc = run_guards("rescue", "restore", r.ref, cwd=repo)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (repo / "README").read_text() == "precious\n"
    assert (repo / "new file").read_text() == "untracked\n"
    assert not (repo / "src" / "app.py").exists()
    # the index was not touched: README shows as modified, not staged
    assert git(repo, "status", "--porcelain", "--", "README").startswith(" M")


def test_restore_leaves_newer_edits_alone_and_reports_conflicts(repo: Path) -> None:
    (repo / "README").write_text("rescued\n")
    (repo / "src" / "app.py").write_text("rescued too\n")
    r = rescue(repo, ["README", "src/app.py"])
    git(repo, "reset", "-q", "--hard")
    (repo / "README").write_text("newer edit\n")
    proc = run_guards("rescue", "restore", r.ref, cwd=repo)
    assert proc.returncode == 1
    assert "conflict: README" in proc.stdout
    assert (repo / "README").read_text() == "newer edit\n"
    assert (repo / "src" / "app.py").read_text() == "rescued too\n"


def test_restore_after_rm_writes_back_what_rm_deleted(repo: Path) -> None:
    # `rm -rf src` after the rescue: a missing file is no newer work (writing it back
    # overwrites nothing); a tracked file rm deleted is the most natural thing to restore.
    (repo / "src" / "app.py").write_text("rescued edit\n")
    (repo / "README").write_text("rescued readme\n")
    r = rescue(repo, ["src/app.py", "README"])
    import shutil

    shutil.rmtree(repo / "src")
    (repo / "README").unlink()
    proc = run_guards("rescue", "restore", r.ref, cwd=repo)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "conflict" not in proc.stdout
    assert (repo / "src" / "app.py").read_text() == "rescued edit\n"
    assert (repo / "README").read_text() == "rescued readme\n"


def test_restore_of_chosen_paths_only(repo: Path) -> None:
    (repo / "README").write_text("one\n")
    (repo / "src" / "app.py").write_text("two\n")
    r = rescue(repo, ["README", "src/app.py"])
    git(repo, "reset", "-q", "--hard")
    proc = run_guards("rescue", "restore", r.ref, "app.py", cwd=repo / "src")
    assert proc.returncode == 0, proc.stderr
    assert (repo / "src" / "app.py").read_text() == "two\n"
    assert (repo / "README").read_text() == "hello\n"
    proc = run_guards("rescue", "restore", r.ref, "nothere", cwd=repo)
    assert proc.returncode == 2 and "not among the paths" in proc.stderr


def test_restore_with_index_brings_staged_versions_back(repo: Path) -> None:
    (repo / "README").write_text("staged\n")
    git(repo, "add", "README")
    (repo / "README").write_text("worktree\n")
    r = rescue(repo, ["README"])
    git(repo, "reset", "-q", "--hard")
    proc = run_guards("rescue", "restore", "--index", r.ref, cwd=repo)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (repo / "README").read_text() == "worktree\n"
    assert git(repo, "show", ":README") == "staged\n"


def test_restore_is_idempotent(repo: Path) -> None:
    (repo / "README").write_text("again\n")
    r = rescue(repo, ["README"])
    proc = run_guards("rescue", "restore", r.ref, cwd=repo)
    assert proc.returncode == 0
    assert "restored 0 paths" in proc.stdout and "1 already" in proc.stdout


def test_restore_of_a_kept_stash_points_at_git_stash_apply(repo: Path) -> None:
    (repo / "README").write_text("stashed\n")
    git(repo, "stash", "-q")
    oid = git(repo, "rev-parse", "stash@{0}").strip()
    [kept] = rescue_commits(Workspace.open(repo), [(oid, "stash@{0}", "alice")], command="stash")
    proc = run_guards("rescue", "restore", kept.ref, cwd=repo)
    assert proc.returncode == 2 and "git stash apply --index" in proc.stderr
    listing = run_guards("rescue", "list", cwd=repo).stdout
    assert "stash@{0}" in listing


def test_drop_deletes_only_the_named_ref(repo: Path) -> None:
    (repo / "README").write_text("x\n")
    a = rescue(repo, ["README"])
    b = rescue(repo, ["README"])
    refused = run_guards("rescue", "drop", a.ref, cwd=repo)  # not a terminal, no --yes
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1
    assert "give --yes" in refused.stderr
    assert len(git(repo, "for-each-ref", "refs/rescue").splitlines()) == 2
    proc = run_guards("rescue", "drop", "--yes", a.ref, cwd=repo)
    assert proc.returncode == 0, proc.stderr
    refs = git(repo, "for-each-ref", "--format=%(refname)", "refs/rescue").split()
    assert refs == [b.ref]
    # its entries in the ledger's rescue log went with it
    assert [e["ref"] for e in Workspace.open(repo).ledger.read().rescues] == [b.ref]


def test_prune_deletes_only_old_rescues_and_only_when_asked(repo: Path) -> None:
    (repo / "README").write_text("x\n")
    old = rescue(repo, ["README"])
    new = rescue(repo, ["README"])
    ws = Workspace.open(repo)
    with ws.ledger.transaction() as data:
        for entry in data.rescues:
            if entry["ref"] == old.ref:
                entry["time"] = time.time() - 40 * 86400
    dry = run_guards("rescue", "prune", "--older-than", "30d", "--dry-run", cwd=repo)
    assert dry.returncode == 0 and f"would drop {old.ref}" in dry.stdout
    assert len(git(repo, "for-each-ref", "refs/rescue").splitlines()) == 2
    refused = run_guards("rescue", "prune", "--older-than", "30d", cwd=repo)
    assert refused.returncode == 2 and refused.stderr == (
        f"guards: drop 1 rescue ref older than 30d ({old.ref})?: not on a terminal to ask; "
        "give --yes to go ahead\n"
    )
    assert len(git(repo, "for-each-ref", "refs/rescue").splitlines()) == 2
    proc = run_guards("rescue", "prune", "--older-than", "30d", "-y", cwd=repo)
    assert proc.returncode == 0, proc.stderr
    assert git(repo, "for-each-ref", "--format=%(refname)", "refs/rescue").split() == [new.ref]
    assert [e["ref"] for e in Workspace.open(repo).ledger.read().rescues] == [new.ref]
    bad = run_guards("rescue", "prune", "--older-than", "soon", cwd=repo)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr


def test_prune_requires_older_than(repo: Path) -> None:
    proc = run_guards("rescue", "prune", cwd=repo)
    assert proc.returncode == 2


def test_outside_a_repository_is_a_one_line_error(tmp_path: Path) -> None:
    proc = run_guards("rescue", "list", cwd=tmp_path)
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_restore_handles_odd_names(repo: Path) -> None:
    name = "new\nline -x"
    (repo / name).write_text("odd\n")
    r = rescue(repo, [name])
    os.unlink(repo / name)
    proc = run_guards("rescue", "restore", r.ref, cwd=repo)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (repo / name).read_text() == "odd\n"


def test_prune_durations_need_a_unit(repo: Path) -> None:
    proc = run_guards("rescue", "prune", "--older-than", "30", "--yes", cwd=repo)
    assert proc.returncode == 2
    assert proc.stderr == (
        "guards: bad --older-than '30': expected a duration with its unit: "
        "90s, 30m, 2h, 14d or 1w\n"
    )


def _on_a_terminal(repo: Path, answer: bytes, *args: str) -> tuple[int, str]:
    """Run guards with stdin and stderr on a pseudo-terminal, typing ``answer``."""
    import pty
    import subprocess
    import sys

    from tests.helpers import PROJECT_ROOT

    leader, follower = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "guards", *args],
        cwd=repo,
        stdin=follower,
        stdout=subprocess.PIPE,
        stderr=follower,
        env={**os.environ, "PYTHONPATH": str(PROJECT_ROOT)},
    )
    os.close(follower)
    seen = b""
    while b"[y/N]" not in seen:
        chunk = os.read(leader, 1024)
        assert chunk, seen
        seen += chunk
    os.write(leader, answer)
    out, _ = proc.communicate(timeout=60)
    os.close(leader)
    assert b"drop " in seen
    return proc.returncode, out.decode()


def test_drop_asks_on_a_terminal_and_no_keeps_the_ref(repo: Path) -> None:
    (repo / "README").write_text("x\n")
    r = rescue(repo, ["README"])
    code, out = _on_a_terminal(repo, b"n\n", "rescue", "drop", r.ref)
    assert (code, out) == (0, "nothing dropped\n")
    assert git(repo, "for-each-ref", "--format=%(refname)", "refs/rescue").split() == [r.ref]
    code, out = _on_a_terminal(repo, b"y\n", "rescue", "drop", "latest")
    assert code == 0 and out.startswith(f"dropped {r.ref}")
    assert git(repo, "for-each-ref", "refs/rescue") == ""


def test_latest_and_at_n_name_rescues_newest_first(repo: Path) -> None:
    (repo / "README").write_text("first\n")
    first = rescue(repo, ["README"])
    (repo / "README").write_text("second\n")
    second = rescue(repo, ["README"])
    ws = Workspace.open(repo)
    with ws.ledger.transaction() as data:  # the first rescue an hour older
        for entry in data.rescues:
            if entry["ref"] == first.ref:
                entry["time"] = entry["time"] - 3600
    for name, expected in (("latest", second), ("@1", second), ("@2", first)):
        proc = run_guards("rescue", "show", "--json", name, cwd=repo)
        assert proc.returncode == 0, proc.stderr
        assert json.loads(proc.stdout)["rescue"]["ref"] == expected.ref, name
    listing = run_guards("rescue", "list", cwd=repo).stdout.splitlines()
    assert listing[1].split()[:2] == ["@1", second.ref]
    assert listing[2].split()[:2] == ["@2", first.ref]
    proc = run_guards("rescue", "show", "@3", cwd=repo)
    assert proc.returncode == 2
    assert proc.stderr == "guards: no rescue @3: there are only 2 (see `guards rescue list`)\n"


def test_list_orders_a_stash_rescue_by_when_it_was_rescued(repo: Path) -> None:
    (repo / "README").write_text("stashed long ago\n")
    git(repo, "stash", "-q")  # the stash commit is dated 1700000000 (the seal's date)
    oid = git(repo, "rev-parse", "stash@{0}").strip()
    (repo / "README").write_text("paths\n")
    paths = rescue(repo, ["README"])
    [kept] = rescue_commits(Workspace.open(repo), [(oid, "stash@{0}", "alice")], command="stash")
    proc = run_guards("rescue", "list", "--json", cwd=repo)
    assert [r["ref"] for r in json.loads(proc.stdout)["rescues"]] == [kept.ref, paths.ref]
