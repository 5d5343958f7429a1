"""guards run (and the alias and shim in front of it): rescue first, then git, exactly."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from guards.git.process import CONTEXT_QUERY
from tests.guarded import install_aliases, install_shim, run_via
from tests.helpers import PROJECT_ROOT, counting_git, git, run_guards

ALICE = {"GUARDS_SESSION": "alice"}
BOB = {"GUARDS_SESSION": "bob"}


@pytest.fixture
def shared(repo: Path, tmp_path: Path) -> Path:
    """A checkout where alice has recorded work and someone left unrecorded work."""
    install_aliases(repo)
    git(repo, "branch", "other")
    (repo / "README").write_text("alice's afternoon\n")
    (repo / "alice-new.txt").write_text("alice's new file\n")
    (repo / "src" / "app.py").write_text("nobody recorded this\n")
    res = run_guards("record", "README", "alice-new.txt", cwd=repo, env=ALICE)
    assert res.returncode == 0, res.stderr
    return repo


def rescue_refs(repo: Path) -> list[str]:
    return git(repo, "for-each-ref", "--format=%(refname)", "refs/rescue").split()


def content_at(repo: Path, ref: str, path: str) -> str:
    return git(repo, "show", f"{ref}:{path}")


WAYS = ["guards-run", "alias", "shim"]


@pytest.mark.parametrize("way", WAYS)
def test_reset_hard_rescues_foreign_and_unknown_work_then_resets(
    shared: Path, tmp_path: Path, way: str
) -> None:
    shim = install_shim(tmp_path / "shim")
    res = run_via(way, ["reset", "--hard"], shared, shim_dir=shim, env=BOB)
    assert res.returncode == 0, res.stderr
    assert b"HEAD is now at" in res.stdout
    assert git(shared, "status", "--porcelain") == "?? alice-new.txt\n"  # reset keeps it
    refs = rescue_refs(shared)
    alice = [r for r in refs if r.startswith("refs/rescue/alice/")]
    unknown = [r for r in refs if r.startswith("refs/rescue/unknown/")]
    assert len(alice) == 1 and len(unknown) == 1, refs
    assert content_at(shared, alice[0], "README") == "alice's afternoon\n"
    assert content_at(shared, unknown[0], "src/app.py") == "nobody recorded this\n"
    # One line per rescue on stderr, naming whose work, the ref and the restore command.
    lines = [line for line in res.stderr.decode().splitlines() if line.startswith("guards:")]
    assert len(lines) == 2
    assert any("alice" in line and alice[0] in line and "restore" in line for line in lines)


@pytest.mark.parametrize("way", WAYS)
def test_callers_own_work_is_discarded_as_asked_without_a_rescue(
    repo: Path, tmp_path: Path, way: str
) -> None:
    install_aliases(repo)
    shim = install_shim(tmp_path / "shim")
    (repo / "README").write_text("bob's own scratch\n")
    run_guards("record", "README", cwd=repo, env=BOB)
    res = run_via(way, ["reset", "--hard"], repo, shim_dir=shim, env=BOB)
    assert res.returncode == 0
    assert rescue_refs(repo) == []
    assert res.stderr == b""
    assert (repo / "README").read_text() == "hello\n"


DESTRUCTIVE = [
    (["checkout", "--", "."], ["README", "src/app.py"]),
    (["restore", "."], ["README", "src/app.py"]),
    (["restore", "--source=other", "--staged", "--worktree", "."], ["README", "src/app.py"]),
    (["clean", "-fd"], ["alice-new.txt"]),
    (["clean", "-fdx"], ["alice-new.txt", "build.log"]),
    (["stash"], ["README", "src/app.py"]),
    (["stash", "-u"], ["README", "alice-new.txt", "src/app.py"]),
    (["stash", "push", "--include-u"], ["README", "alice-new.txt", "src/app.py"]),
    (["switch", "-f", "other"], ["README", "src/app.py"]),
    (["switch", "--disc", "other"], ["README", "src/app.py"]),
    (["checkout", "-f", "other"], ["README", "src/app.py"]),
    (["reset", "--ha"], ["README", "src/app.py"]),
    (["rm", "-f", "README"], ["README"]),
    (["mv", "-f", "src/app.py", "README"], ["README"]),
    (["-c", "alias.tidy=reset --hard", "tidy"], ["README", "src/app.py"]),
]


def _ways(args: list[str]) -> list[str]:
    sub = next(a for a in args if not a.startswith("-") and "=" not in a)
    aliased = sub in {"reset", "stash", "switch", "checkout", "restore", "clean"}
    return ["guards-run", "shim", *(["alias"] if aliased and args[0] == sub else [])]


@pytest.mark.parametrize(
    ("args", "lost", "way"),
    [(args, lost, way) for args, lost in DESTRUCTIVE for way in _ways(args)],
    ids=lambda v: " ".join(v) if isinstance(v, list) and v and v[0] != "README" else None,
)
def test_destructive_commands_rescue_other_writers_work(
    shared: Path, tmp_path: Path, args: list[str], lost: list[str], way: str
) -> None:
    (shared / ".gitignore").write_text("*.log\n")
    (shared / "build.log").write_text("someone's ignored log\n")
    before = {p: (shared / p).read_text() for p in lost}
    shim = install_shim(tmp_path / "shim")
    res = run_via(way, args, shared, shim_dir=shim, env=BOB)
    assert res.returncode == 0, res.stderr
    refs = rescue_refs(shared)
    assert refs, res.stderr
    for path, content in before.items():
        holders = [r for r in refs if git(shared, "ls-tree", "--name-only", r, "--", path).strip()]
        assert any(content_at(shared, r, path) == content for r in holders), path


def test_rebase_autostash_rescues_before_the_stash_dance(shared: Path) -> None:
    (shared / "t").write_text("t\n")
    git(shared, "add", "t")
    git(shared, "stash", "push", "-q", "--", "t")  # keep the tree's other dirt as it is
    res = run_via("guards-run", ["rebase", "--autostash", "other"], shared, env=BOB)
    assert res.returncode == 0, res.stderr
    refs = rescue_refs(shared)
    assert any(content_at(shared, r, "README") == "alice's afternoon\n" for r in refs), refs


def test_worktree_remove_force_rescues_the_removed_worktrees_work(
    repo: Path, tmp_path: Path
) -> None:
    wt = tmp_path / "wt"
    git(repo, "worktree", "add", "-q", str(wt))
    (wt / "README").write_text("work in the other worktree\n")
    (wt / "scratch.txt").write_text("untracked there\n")
    res = run_via("guards-run", ["worktree", "remove", "--force", str(wt)], repo, env=BOB)
    assert res.returncode == 0, res.stderr
    assert not wt.exists()
    refs = rescue_refs(repo)
    assert any(content_at(repo, r, "README") == "work in the other worktree\n" for r in refs)
    assert any(content_at(repo, r, "scratch.txt") == "untracked there\n" for r in refs)


def test_merge_abort_rescues_work_it_would_reset(repo: Path) -> None:
    git(repo, "checkout", "-q", "-b", "side")
    (repo / "README").write_text("side\n")
    git(repo, "commit", "-qam", "side")
    git(repo, "checkout", "-q", "main")
    (repo / "README").write_text("main\n")
    git(repo, "commit", "-qam", "main")
    git(repo, "merge", "side", check=False)
    (repo / "README").write_text("resolved by hand, not yet added\n")
    res = run_via("guards-run", ["merge", "--abort"], repo, env=BOB)
    assert res.returncode in (0, 128), res.stderr
    refs = rescue_refs(repo)
    assert any(
        content_at(repo, r, "README") == "resolved by hand, not yet added\n" for r in refs
    ), res.stderr


def test_stash_drop_keeps_the_dropped_entry_reachable(shared: Path) -> None:
    git(shared, "stash", "-u")
    stash = git(shared, "rev-parse", "stash@{0}").strip()
    res = run_via("guards-run", ["stash", "drop"], shared, env=BOB)
    assert res.returncode == 0, res.stderr
    assert git(shared, "stash", "list") == ""
    kept = [git(shared, "rev-parse", r).strip() for r in rescue_refs(shared)]
    assert stash in kept


def test_branch_force_delete_keeps_its_commits(repo: Path) -> None:
    git(repo, "checkout", "-q", "-b", "topic")
    (repo / "t").write_text("t\n")
    git(repo, "add", "t")
    git(repo, "commit", "-qm", "topic work")
    tip = git(repo, "rev-parse", "HEAD").strip()
    git(repo, "checkout", "-q", "main")
    res = run_via("guards-run", ["branch", "-D", "topic"], repo, env=BOB)
    assert res.returncode == 0, res.stderr
    assert tip in [git(repo, "rev-parse", r).strip() for r in rescue_refs(repo)]


def test_policy_block_refuses_and_destroys_nothing(shared: Path) -> None:
    res = run_via("guards-run", ["reset", "--hard"], shared, env={**BOB, "GUARDS_POLICY": "block"})
    assert res.returncode == 20
    err = res.stderr.decode()
    assert err.count("\n") == 1 and "refused" in err and "GUARDS_DISABLE=1" in err
    assert (shared / "README").read_text() == "alice's afternoon\n"
    assert rescue_refs(shared) == []


def test_a_block_refusal_names_the_first_paths_then_how_many_more(shared: Path) -> None:
    res = run_via("guards-run", ["reset", "--hard"], shared, env={**BOB, "GUARDS_POLICY": "block"})
    err = res.stderr.decode()
    assert "2 paths not provably yours (alice: 1, owner unknown: 1): README, src/app.py;" in err
    for i in range(3):
        (shared / f"more-{i}.txt").write_text("more\n")
    res = run_via("guards-run", ["clean", "-fd"], shared, env={**BOB, "GUARDS_POLICY": "block"})
    assert res.returncode == 20
    err = res.stderr.decode()
    assert "4 paths not provably yours (alice: 1, owner unknown: 3): " in err
    assert " and 1 more; policy is block" in err


def test_policy_warn_runs_git_and_says_what_is_lost(shared: Path) -> None:
    res = run_via("guards-run", ["reset", "--hard"], shared, env={**BOB, "GUARDS_POLICY": "warn"})
    assert res.returncode == 0
    assert "about to destroy" in res.stderr.decode()
    assert rescue_refs(shared) == []
    assert (shared / "README").read_text() == "hello\n"


def test_quiet_keeps_stderr_identical_but_still_rescues(shared: Path) -> None:
    res = run_via("guards-run", ["reset", "--hard"], shared, env={**BOB, "GUARDS_QUIET": "1"})
    assert res.returncode == 0 and res.stderr == b""
    assert len(rescue_refs(shared)) == 2


def test_failed_rescue_refuses_and_names_the_override(shared: Path) -> None:
    env = {**BOB, "GUARDS_RESCUE_MAX_FILE_SIZE": "4"}
    res = run_via("guards-run", ["reset", "--hard"], shared, env=env)
    assert res.returncode == 20
    err = res.stderr.decode()
    assert err.count("\n") == 1 and "GUARDS_RESCUE_MAX_FILE_SIZE" in err
    assert (shared / "README").read_text() == "alice's afternoon\n"
    assert rescue_refs(shared) == []


def test_file_recorded_by_alice_then_changed_by_someone_else_is_not_alices(repo: Path) -> None:
    (repo / "README").write_text("alice\n")
    run_guards("record", "README", cwd=repo, env=ALICE)
    (repo / "README").write_text("carol changed it afterwards\n")
    res = run_via("guards-run", ["checkout", "--", "README"], repo, env=ALICE)
    assert res.returncode == 0
    refs = rescue_refs(repo)
    assert [r.split("/")[2] for r in refs] == ["unknown"]
    assert content_at(repo, refs[0], "README") == "carol changed it afterwards\n"


def test_nothing_at_risk_means_no_rescue_and_no_output(repo: Path) -> None:
    plain = run_via("plain", ["reset", "--hard"], repo)
    guarded = run_via("guards-run", ["reset", "--hard"], repo, env=BOB)
    assert guarded.returncode == plain.returncode == 0
    assert guarded.stdout == plain.stdout and guarded.stderr == plain.stderr == b""
    assert rescue_refs(repo) == []


def test_alias_from_a_subdirectory_honours_git_prefix(shared: Path) -> None:
    (shared / "src" / "app.py").write_text("unknown edit\n")
    res = run_via("alias", ["restore", "app.py"], shared / "src", env=BOB)
    assert res.returncode == 0, res.stderr
    assert (shared / "src" / "app.py").read_text() == "print('hi')\n"
    assert (shared / "README").read_text() == "alice's afternoon\n"  # outside the pathspec


def test_guard_never_reads_stdin(repo: Path) -> None:
    (repo / "README").write_text("changed\n")
    git(repo, "add", "README")
    (repo / "README").write_text("changed again\n")
    # `reset -p` asks on stdin; the answers must reach git untouched.
    res = run_via("guards-run", ["reset", "-p"], repo, env=BOB, input=b"y\n")
    assert res.returncode == 0, res.stderr
    assert git(repo, "diff", "--cached", "--name-only") == ""


def test_guards_disable_hands_the_command_to_git(shared: Path) -> None:
    res = run_via("guards-run", ["reset", "--hard"], shared, env={"GUARDS_DISABLE": "1"})
    assert res.returncode == 0 and rescue_refs(shared) == []


def test_global_options_point_the_guard_at_the_right_repository(
    shared: Path, tmp_path: Path
) -> None:
    res = run_via("guards-run", ["-C", str(shared), "reset", "--hard"], tmp_path, env=BOB)
    assert res.returncode == 0, res.stderr
    assert len(rescue_refs(shared)) == 2


def test_rescue_is_listed(shared: Path) -> None:
    run_via("guards-run", ["reset", "--hard"], shared, env=BOB)
    res = run_guards("rescue", "list", "--json", cwd=shared)
    assert res.returncode == 0, res.stderr
    listed = json.loads(res.stdout)["rescues"]
    assert {r["ref"] for r in listed} == set(rescue_refs(shared))


# Found by running git's own test scripts (t3903, t7300, t2006, t3600, t3906) through the
# shim: each is a state where plain git works and guards must not get in the way.


def test_a_file_replaced_by_a_directory_does_not_block_stash(repo: Path) -> None:
    git(repo, "rm", "-q", "README")
    (repo / "README").mkdir()
    (repo / "README" / "file").write_text("x\n")
    res = run_via("guards-run", ["stash", "push"], repo, env=BOB)
    assert res.returncode == 0, res.stderr
    assert git(repo, "stash", "list") != ""
    assert rescue_refs(repo), "the moved work is rescued too"


def test_a_dot_git_file_does_not_block_clean(repo: Path) -> None:
    (repo / "junk").mkdir()
    (repo / "junk" / ".git").write_text("gitdir: nowhere\n")
    (repo / "junk" / "f").write_text("f\n")
    res = run_via("guards-run", ["clean", "-f", "-d"], repo, env=BOB)
    assert res.returncode == 0, res.stderr
    assert not (repo / "junk").exists()
    assert any(content_at(repo, r, "junk/f") == "f\n" for r in rescue_refs(repo))


def test_an_index_entry_whose_blob_is_missing_does_not_block_reset(repo: Path) -> None:
    git(repo, "update-index", "--add", "--cacheinfo", f"100644,{'de' * 20},ghost")
    (repo / "README").write_text("unknown work\n")
    res = run_via("guards-run", ["reset", "--hard"], repo, env=BOB)
    assert res.returncode == 0, res.stderr
    assert git(repo, "status", "--porcelain") == ""
    assert any(content_at(repo, r, "README") == "unknown work\n" for r in rescue_refs(repo))


def test_a_staged_file_whose_blob_is_lost_is_rescued_from_disk(repo: Path) -> None:
    # The index (stat-clean) names a blob the object store lost: git keeps that entry
    # when it hashes the file, so the rescue holds it only once it is read back from
    # disk and checked (write-tree no longer looks up every entry's object).
    (repo / "README").write_text("staged work, its blob lost\n")
    git(repo, "add", "README")
    oid = git(repo, "rev-parse", ":README").strip()
    (repo / ".git" / "objects" / oid[:2] / oid[2:]).unlink()
    res = run_via("guards-run", ["reset", "--hard"], repo, env=BOB)
    assert res.returncode == 0, res.stderr
    assert any(
        content_at(repo, r, "README") == "staged work, its blob lost\n" for r in rescue_refs(repo)
    )
    assert (repo / "README").read_text() != "staged work, its blob lost\n"


@pytest.fixture
def with_submodule(repo: Path, tmp_path: Path) -> Path:
    from tests.helpers import make_repo

    make_repo(tmp_path / "upstream", {"s": "sub\n"})
    git(repo, "submodule", "add", "-q", str(tmp_path / "upstream"), "sub")
    git(repo, "commit", "-qm", "add sub")
    return repo


def test_stash_leaves_a_dirty_submodule_alone(with_submodule: Path) -> None:
    repo = with_submodule
    (repo / "sub" / "s").write_text("dirty inside the submodule\n")
    (repo / "README").write_text("top-level work\n")
    res = run_via("guards-run", ["-c", "submodule.recurse=true", "stash", "push"], repo, env=BOB)
    assert res.returncode == 0, res.stderr
    assert (repo / "sub" / "s").read_text() == "dirty inside the submodule\n"


def test_reset_after_rm_cached_of_a_submodule_keeps_its_checkout(with_submodule: Path) -> None:
    repo = with_submodule
    git(repo, "rm", "-q", "--cached", "sub")
    res = run_via("guards-run", ["reset", "--hard"], repo, env=BOB)
    assert res.returncode == 0, res.stderr
    assert (repo / "sub" / "s").read_text() == "sub\n"


@pytest.mark.parametrize("pathspec", ["", ":(bogus)x"])
def test_a_pathspec_git_refuses_is_refused_by_git_itself(repo: Path, pathspec: str) -> None:
    plain = run_via("plain", ["rm", "-rf", pathspec], repo)
    guarded = run_via("guards-run", ["rm", "-rf", pathspec], repo, env=BOB)
    assert guarded.returncode == plain.returncode == 128
    assert guarded.stderr == plain.stderr


def test_the_guard_knows_exactly_the_policies_the_config_accepts() -> None:
    from guards import config
    from guards.protect.decide import Policy

    policy = config.key("policy")
    assert policy.default == Policy.RESCUE
    assert [policy.parse(name) for name in Policy.ALL] == list(Policy.ALL)
    with pytest.raises(ValueError) as info:
        policy.parse("nuke")
    assert str(info.value) == " | ".join(Policy.ALL)


def test_the_summary_names_three_commits_then_counts_the_rest() -> None:
    from guards.protect.decide import summary

    commits = [(f"{i}" * 40, f"stash@{{{i}}}") for i in range(5)]
    assert summary([], commits[:3]) == (
        "3 commit(s) that would become unreachable (stash@{0}, stash@{1}, stash@{2})"
    )
    assert summary([], commits) == (
        "5 commit(s) that would become unreachable (stash@{0}, stash@{1}, stash@{2} and 2 more)"
    )


def test_nothing_at_risk_imports_only_what_it_needs(repo: Path) -> None:
    # The guarded git's common case (a clean tree) must stay cheap to start: these
    # modules cost milliseconds each (see guards.values and benchmarks/README.md).
    heavy = (
        "argparse", "contextlib", "dataclasses", "enum", "json", "pathlib", "re", "subprocess",
        "typing",
        # the predictors of other commands than reset's
        "guards.predict.blast.history_commands", "guards.predict.blast.ref_commands",
    )  # fmt: skip
    code = (
        "import sys\n"
        f"sys.path.insert(0, {str(PROJECT_ROOT)!r})\n"
        "from guards.commands.run import _guard\n"
        "_guard(['reset', '-q', '--hard'])\n"
        f"print([m for m in {heavy!r} if m in sys.modules])\n"
    )
    res = subprocess.run(
        [sys.executable, "-S", "-c", code], cwd=repo, env=dict(os.environ), capture_output=True
    )
    assert (res.returncode, res.stdout, res.stderr) == (0, b"[]\n", b"")


def test_a_repository_whose_path_holds_a_newline_is_guarded(tmp_path: Path) -> None:
    from tests.helpers import make_repo

    repo = make_repo(tmp_path / "odd\nplace", {"README": "hello\n"})
    (repo / "README").write_text("someone's work\n")
    res = run_guards("run", "--", "reset", "-q", "--hard", cwd=repo)
    assert res.returncode == 0, res.stderr
    assert (repo / "README").read_text() == "hello\n"
    ref = git(repo, "for-each-ref", "--format=%(refname)", "refs/rescue").strip()
    assert git(repo, "show", f"{ref}:README") == "someone's work\n"


def test_git_prefix_in_the_environment_does_not_move_a_guarded_git(
    shared: Path, tmp_path: Path
) -> None:
    """A git run from the top level by git itself (a user's `!` alias) sees GIT_PREFIX;
    through the shim it must still clean where it runs, like plain git (it used to clean
    only the prefix directory)."""
    shim = install_shim(tmp_path / "shim")
    (shared / "top-untracked.txt").write_text("x\n")
    (shared / "src" / "sub-untracked.txt").write_text("y\n")
    env = {**BOB, "GIT_PREFIX": "src/"}
    res = run_via("shim", ["clean", "-fd"], shared, shim_dir=shim, env=env)
    assert res.returncode == 0, res.stderr
    assert not (shared / "top-untracked.txt").exists()
    assert not (shared / "src" / "sub-untracked.txt").exists()
    assert rescue_refs(shared)  # alice's and the unknown untracked files were rescued


def test_our_alias_in_a_subdirectory_with_a_relative_work_tree(shared: Path) -> None:
    """git passes --work-tree=.. to the alias as GIT_WORK_TREE=.., relative to the user's
    directory: guards goes back there, and git finds the same work tree."""
    (shared / "src" / "app.py").write_text("unknown edit\n")
    args = ["--git-dir=../.git", "--work-tree=..", "safe-restore", "app.py"]
    res = subprocess.run(
        ["git", *args], cwd=shared / "src", env={**os.environ, **BOB}, capture_output=True
    )
    assert res.returncode == 0, res.stderr
    assert (shared / "src" / "app.py").read_text() == "print('hi')\n"
    assert (shared / "README").read_text() == "alice's afternoon\n"
    assert any(r.startswith("refs/rescue/unknown/") for r in rescue_refs(shared))


def test_guards_own_git_calls_stay_out_of_the_users_trace(shared: Path, tmp_path: Path) -> None:
    trace = tmp_path / "trace.json"
    env = {**BOB, "GIT_TRACE2_EVENT": str(trace)}
    res = run_via("guards-run", ["reset", "--hard"], shared, env=env)
    assert res.returncode == 0, res.stderr
    assert len(rescue_refs(shared)) == 2  # guards ran a dozen git commands to rescue
    starts = [json.loads(line) for line in trace.read_text().splitlines()]
    argvs = [e["argv"][1:] for e in starts if e["event"] == "start"]
    assert argvs == [["reset", "--hard"]]


def test_the_guards_first_query_runs_once_started_before_its_imports(
    repo: Path, tmp_path: Path
) -> None:
    """`guards run` starts the repository query before importing the guard; the guard
    takes that answer (a mismatch would run it twice), here and from a subdirectory."""
    wrapper, log = counting_git(tmp_path)
    env = {**BOB, "GUARDS_REAL_GIT": str(wrapper)}
    for where in (repo, repo / "src"):
        log.unlink(missing_ok=True)
        res = run_guards("run", "--", "reset", "--hard", cwd=where, env=env)
        assert res.returncode == 0, res.stderr
        calls = log.read_text().splitlines()
        assert sum(" ".join(CONTEXT_QUERY) in c for c in calls) == 1, calls
        assert calls[-1] == "reset --hard"
    (repo / "src" / "app.py").write_text("nobody's\n")
    res = run_guards("run", "--", "checkout", "--", "app.py", cwd=repo / "src", env=env)
    assert res.returncode == 0 and "guards: rescued" in res.stderr, res.stderr
