"""Blast radius: predicted before the command, then checked by running the real git.

Each case copies a repository holding every kind of dirty state (tests/blast_states.py),
predicts with :func:`guards.predict.blast.blast_radius`, runs the real git command and compares
what was really destroyed with the prediction, path by path and kind by kind.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from guards.errors import UnknownStateError
from guards.git.quoting import parse_clean_output
from guards.predict import blast, cmdline
from guards.predict.blast import history_commands, ref_commands, tree_commands
from tests.blast_states import (
    CALM,
    CASES,
    FULL,
    NO_ITA,
    STASH_CASES,
    base_repo,
    cached_dirty_repo,
    observe,
    snapshot,
    write,
)
from tests.helpers import PROJECT_ROOT, git, make_repo


def _repo(tmp_path: Path, factory: Path, variant: str) -> Path:
    if variant == FULL:
        return cached_dirty_repo(tmp_path, factory)
    if variant == CALM:
        return cached_dirty_repo(tmp_path, factory, conflicts=False, untracked_collisions=False)
    return cached_dirty_repo(tmp_path, factory, ita=False)


@pytest.fixture
def factory(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.getbasetemp() / "blast-templates"
    d.mkdir(exist_ok=True)
    return d


def predict(top: Path, argv: list[str], cwd: Path | None = None) -> blast.BlastRadius:
    cmd = cmdline.parse(argv, dict(os.environ), str(cwd or top))
    return blast.blast_radius(cmd)


def as_dict(radius: blast.BlastRadius) -> dict[str, set[str]]:
    return {loss.path: set(loss.kinds) for loss in radius.losses}


def assert_exact(top: Path, argv: list[str], cwd: Path | None = None) -> blast.BlastRadius:
    radius = predict(top, argv, cwd)
    assert not radius.everything
    targets = ("HEAD", "other") if any("other" in a for a in argv) else ("HEAD",)
    destroyed, proc = observe(top, argv, targets, cwd=cwd)
    assert as_dict(radius) == destroyed, (proc.returncode, proc.stderr.decode())
    return radius


@pytest.mark.parametrize(("variant", "argv"), CASES, ids=[" ".join(c[1]) for c in CASES])
def test_prediction_equals_what_git_destroyed(
    tmp_path: Path, factory: Path, variant: str, argv: list[str]
) -> None:
    top = _repo(tmp_path, factory, variant)
    assert_exact(top, argv)


SUBDIR_CASES = [
    ["clean", "-fdx"],
    ["clean", "-fd", "."],
    ["clean", "-fx", "--", "../odd dir", "sub"],
    ["checkout", "--", "."],
    ["restore", "--source=other", "."],
    ["reset", "-q", "--", "sub", "../staged.txt"],
    ["rm", "-rf", "sub"],
    ["mv", "-f", "keep.txt", "../staged.txt"],
    ["reset", "--hard"],
]


@pytest.mark.parametrize("argv", SUBDIR_CASES, ids=[" ".join(c) for c in SUBDIR_CASES])
def test_prediction_from_a_subdirectory_uses_the_prefix(
    tmp_path: Path, factory: Path, argv: list[str]
) -> None:
    top = _repo(tmp_path, factory, FULL)
    assert_exact(top, argv, cwd=top / "dir")


def test_clean_reads_quoted_names_and_whole_directories(tmp_path: Path, factory: Path) -> None:
    top = _repo(tmp_path, factory, FULL)
    radius = assert_exact(top, ["clean", "-ffdx"])
    paths = set(radius.paths)
    for name in ("u\nnl.txt", " lead space.txt", "trail space.txt ", 'u"q.txt', "ü.txt"):
        assert name in paths
        assert f"odd dir/{name}" in paths
    assert "nested/inner.txt" in paths
    assert as_dict(radius)["build/deep/more.bin"] == {"ignored"}


def test_clean_skips_nested_repositories_without_double_force(
    tmp_path: Path, factory: Path
) -> None:
    top = _repo(tmp_path, factory, FULL)
    radius = assert_exact(top, ["clean", "-fdx"])
    assert "nested/inner.txt" not in radius.paths


def test_parse_clean_output_strips_prefix_once_and_keeps_spaces() -> None:
    out = (
        b"Would remove Would remove x\n"
        b"Would remove  two  spaces \n"
        b'Would remove "a\\nb\\303\\251\\"q"\n'
        b"Would remove dir/\n"
        b"Would skip repository nested/\n"
    )
    removed, skipped = parse_clean_output(out)
    assert removed == ["Would remove x", " two  spaces ", 'a\nbé"q', "dir/"]
    assert skipped == ["nested/"]


def test_pathspec_from_file_limits_the_prediction(tmp_path: Path, factory: Path) -> None:
    top = _repo(tmp_path, factory, FULL)
    (top / ".git" / "list").write_bytes(b"dir\0with space.txt\0")
    argv = ["checkout", "--pathspec-from-file=.git/list", "--pathspec-file-nul"]
    radius = assert_exact(top, argv)
    assert set(radius.paths) == {"dir/sub/deep.txt", "with space.txt"}


def test_pathspec_from_stdin_counts_the_whole_scope(tmp_path: Path, factory: Path) -> None:
    top = _repo(tmp_path, factory, FULL)
    argv = ["restore", "--pathspec-from-file=-"]
    radius = predict(top, argv)
    whole = as_dict(predict(top, ["restore", "."]))
    assert as_dict(radius) == whole
    destroyed, _ = observe(top, argv, stdin=b"unstaged.txt\n")
    assert set(destroyed) <= set(whole)
    assert destroyed


# ---------------------------------------------------------------------------
# stash: work moved away from its author


def _changed(top: Path, argv: list[str]) -> set[str]:
    before = snapshot(top)
    subprocess.run(["git", *argv], cwd=top, capture_output=True, check=False)
    after = snapshot(top)
    changed = set()
    for b, a in ((before.work, after.work), (before.index, after.index)):
        changed |= {p for p in b.keys() | a.keys() if b.get(p) != a.get(p)}
    return changed


@pytest.mark.parametrize("argv", STASH_CASES, ids=[" ".join(c) for c in STASH_CASES])
def test_stash_moves_exactly_the_paths_it_takes_away(
    tmp_path: Path, factory: Path, argv: list[str]
) -> None:
    top = _repo(tmp_path, factory, NO_ITA)
    radius = predict(top, argv)
    assert radius.moves and not radius.everything
    assert set(radius.paths) == _changed(top, argv)


def test_stash_with_an_intent_to_add_entry_refuses_so_nothing_moves(
    tmp_path: Path, factory: Path
) -> None:
    top = _repo(tmp_path, factory, FULL)
    radius = predict(top, ["stash", "-u"])
    assert radius.empty()
    assert _changed(top, ["stash", "-u"]) == set()


def test_stash_drop_pop_and_clear_name_the_entries_commits(tmp_path: Path) -> None:
    top = make_repo(tmp_path / "r")
    oids = []
    for n in range(3):
        write(top, "README", f"edit {n}\n")
        git(top, "stash", "-q")
        oids.append(git(top, "rev-parse", "stash@{0}").strip())
    newest, middle, oldest = oids[2], oids[1], oids[0]
    assert predict(top, ["stash", "drop"]).commits == [(newest, "stash@{0}")]
    assert predict(top, ["stash", "drop", "1"]).commits == [(middle, "stash@{1}")]
    assert predict(top, ["stash", "pop", "stash@{2}"]).commits == [(oldest, "stash@{2}")]
    cleared = predict(top, ["stash", "clear"])
    assert [oid for oid, _ in cleared.commits] == [newest, middle, oldest]
    assert not cmdline.could_destroy(cmdline.parse(["stash", "list"], dict(os.environ), str(top)))
    assert predict(top, ["stash", "show"]).empty()
    git(top, "stash", "clear")
    assert predict(top, ["stash", "clear"]).empty()


# ---------------------------------------------------------------------------
# branches and commits


def _branch_repo(tmp_path: Path) -> tuple[Path, str, str]:
    top = make_repo(tmp_path / "r")
    git(top, "branch", "merged")
    git(top, "checkout", "-q", "-b", "lonely")
    write(top, "README", "lonely\n")
    git(top, "commit", "-q", "-am", "lonely")
    lonely = git(top, "rev-parse", "HEAD").strip()
    git(top, "checkout", "-q", "main")
    return top, lonely, git(top, "rev-parse", "HEAD").strip()


def test_branch_force_delete_names_commits_no_other_ref_reaches(tmp_path: Path) -> None:
    top, lonely, _main = _branch_repo(tmp_path)
    assert predict(top, ["branch", "-D", "lonely", "merged"]).commits == [(lonely, "branch lonely")]
    assert predict(top, ["branch", "--delete", "--force", "merged"]).commits == []
    git(top, "branch", "twin", "lonely")
    assert predict(top, ["branch", "-D", "lonely"]).commits == []
    assert predict(top, ["branch", "-D", "lonely", "twin"]).commits == [
        (lonely, "branch lonely"),
        (lonely, "branch twin"),
    ]


def test_branch_reset_rename_and_checkout_B_name_the_overwritten_tip(tmp_path: Path) -> None:
    top, lonely, main = _branch_repo(tmp_path)
    assert predict(top, ["branch", "-f", "lonely", "main"]).commits == [(lonely, "branch lonely")]
    assert predict(top, ["branch", "-M", "merged", "lonely"]).commits == [(lonely, "branch lonely")]
    assert predict(top, ["checkout", "-B", "lonely"]).commits == [(lonely, "branch lonely")]
    assert predict(top, ["switch", "-C", "lonely", "main"]).commits == [(lonely, "branch lonely")]
    assert predict(top, ["branch", "-f", "merged", "main"]).commits == []
    assert main


# ---------------------------------------------------------------------------
# worktree remove, submodule deinit, sparse-checkout, aborts, autostash


def test_worktree_remove_force_loses_everything_dirty_in_that_worktree(tmp_path: Path) -> None:
    top = base_repo(tmp_path / "r")
    wt = tmp_path / "wt two"
    git(top, "worktree", "add", "-q", str(wt), "other")
    write(wt, "changes_in_x.txt", "edited in wt\n")
    write(wt, "new file.txt", "untracked in wt\n")
    write(wt, "w.log", "ignored in wt\n")
    radius = predict(top, ["worktree", "remove", "--force", str(wt)])
    assert radius.worktree == str(wt)
    expected = {
        "changes_in_x.txt": {"worktree"},
        "new file.txt": {"untracked"},
        "w.log": {"ignored"},
    }
    assert as_dict(radius) == expected
    assert predict(top, ["worktree", "remove", str(wt)]).empty()  # git refuses: dirty
    git(top, "worktree", "remove", "--force", str(wt))
    assert not wt.exists()


def test_worktree_remove_without_force_still_deletes_ignored_files(tmp_path: Path) -> None:
    top = base_repo(tmp_path / "r")
    wt = tmp_path / "wt"
    git(top, "worktree", "add", "-q", "--detach", str(wt))
    write(wt, "only.log", "ignored only\n")
    radius = predict(top, ["-C", str(wt), "worktree", "remove", "."])
    assert as_dict(radius) == {"only.log": {"ignored"}}
    git(top, "worktree", "remove", str(wt))
    assert not wt.exists()


def test_worktree_remove_names_a_detached_head_no_ref_reaches(tmp_path: Path) -> None:
    top = base_repo(tmp_path / "r")
    wt = tmp_path / "wt"
    git(top, "worktree", "add", "-q", "--detach", str(wt))
    write(wt, "clean.txt", "committed only in wt\n")
    git(wt, "commit", "-q", "-am", "detached work")
    head = git(wt, "rev-parse", "HEAD").strip()
    radius = predict(top, ["worktree", "remove", str(wt)])
    assert [oid for oid, _ in radius.commits] == [head]


def test_submodule_deinit_force_loses_the_submodules_dirty_files(tmp_path: Path) -> None:
    sub_src = make_repo(tmp_path / "sub-src", {"lib.txt": "lib\n", ".gitignore": "*.o\n"})
    top = make_repo(tmp_path / "r")
    git(top, "submodule", "add", "-q", str(sub_src), "libs/sub")
    git(top, "commit", "-q", "-m", "add sub")
    sub = top / "libs" / "sub"
    write(sub, "lib.txt", "lib edited\n")
    write(sub, "new.txt", "sub untracked\n")
    write(sub, "x.o", "sub ignored\n")
    assert predict(top, ["submodule", "deinit", "libs/sub"]).empty()  # git refuses
    radius = predict(top, ["submodule", "deinit", "-f", "libs/sub"])
    expected = {
        "libs/sub/lib.txt": {"worktree"},
        "libs/sub/new.txt": {"untracked"},
        "libs/sub/x.o": {"ignored"},
    }
    assert as_dict(radius) == expected
    git(top, "submodule", "deinit", "-q", "-f", "libs/sub")
    assert not (sub / "lib.txt").exists()
    assert not (sub / "x.o").exists()


def test_sparse_checkout_set_loses_ignored_files_leaving_the_cone(tmp_path: Path) -> None:
    top = make_repo(
        tmp_path / "r",
        {
            "a/keep.txt": "a\n",
            "b/go.txt": "b\n",
            "b/deep/go2.txt": "bd\n",
            "c/c.txt": "c\n",
            "d/d.txt": "d\n",
            ".gitignore": "*.log\n",
        },
    )
    write(top, "b/deep/gone.log", "ignored in b/deep\n")
    write(top, "a/stays.log", "ignored in a\n")
    write(top, "c/kept.log", "ignored in c, kept: c holds untracked work\n")
    write(top, "c/unt.txt", "untracked in c\n")
    write(top, "d/kept.log", "ignored in d, kept: d holds a local change\n")
    write(top, "d/d.txt", "d edited\n")
    argv = ["sparse-checkout", "set", "a"]
    radius = predict(top, argv)
    destroyed, proc = observe(top, argv)
    assert proc.returncode == 0, proc.stderr
    assert as_dict(radius) == destroyed == {"b/deep/gone.log": {"ignored"}}


def _conflicted(tmp_path: Path, command: str) -> Path:
    top = make_repo(tmp_path / "r", {"f.txt": "base\n", "g.txt": "g base\n"})
    git(top, "checkout", "-q", "-b", "side")
    write(top, "f.txt", "side\n")
    write(top, "h.txt", "side adds h\n")
    git(top, "add", "-A")
    git(top, "commit", "-q", "-m", "side")
    git(top, "checkout", "-q", "main")
    write(top, "f.txt", "main\n")
    git(top, "commit", "-q", "-am", "main")
    write(top, "g.txt", "g local edit\n")
    git(top, command, "side", check=False)
    write(top, "f.txt", "resolution in progress\n")
    return top


CONFLICT_CASES = [
    ("merge", ["reset", "--hard"]),
    ("merge", ["reset", "--merge"]),
    ("merge", ["reset"]),
    ("merge", ["checkout", "-f", "HEAD"]),
    ("merge", ["checkout", "--", "."]),
    ("merge", ["checkout", "--ours", "--", "f.txt"]),
    ("merge", ["checkout", "-m", "--", "f.txt"]),
    ("merge", ["restore", "f.txt"]),
    ("merge", ["restore", "--theirs", "f.txt"]),
    ("merge", ["restore", "-m", "f.txt"]),
    ("merge", ["restore", "--ignore-unmerged", "."]),
    ("merge", ["restore", "--source=HEAD", "f.txt"]),
    ("merge", ["restore", "--source=side", "."]),
    ("merge", ["restore", "-S", "-W", "f.txt"]),
    ("merge", ["restore", "--staged", "f.txt"]),
    ("merge", ["rm", "-f", "f.txt"]),
    ("merge", ["rm", "f.txt"]),
    ("merge", ["rm", "g.txt", "f.txt"]),
    ("merge", ["rm", "--cached", "f.txt"]),
    ("merge", ["switch", "-f", "side"]),
    ("merge", ["stash"]),
    ("cherry-pick", ["cherry-pick", "--skip"]),
    ("cherry-pick", ["reset", "--hard"]),
]


@pytest.mark.parametrize(
    ("command", "argv"), CONFLICT_CASES, ids=[" ".join(c[1]) for c in CONFLICT_CASES]
)
def test_prediction_during_a_conflict_equals_what_git_destroyed(
    tmp_path: Path, command: str, argv: list[str]
) -> None:
    top = _conflicted(tmp_path, command)
    radius = predict(top, argv)
    destroyed, _ = observe(top, argv, ("HEAD", "side"))
    assert as_dict(radius) == destroyed


@pytest.mark.parametrize("command", ["merge", "cherry-pick"])
def test_abort_loses_the_conflict_resolution_in_progress(tmp_path: Path, command: str) -> None:
    top = _conflicted(tmp_path, command)
    argv = [command, "--abort"]
    radius = predict(top, argv)
    destroyed, proc = observe(top, argv, ("HEAD", "side"))
    assert proc.returncode == 0, proc.stderr
    assert as_dict(radius) == destroyed
    assert "f.txt" in destroyed and "g.txt" not in destroyed
    assert predict(top, argv).empty()  # nothing left to abort


AUTOSTASH_CASES = [
    ["rebase", "--autostash", "other"],
    ["-c", "rebase.autoStash=true", "rebase", "other"],
    ["merge", "--autostash", "other"],
    ["-c", "merge.autostash=true", "merge", "other"],
    ["-c", "pull.rebase=true", "-c", "rebase.autostash=1", "pull", "."],
]


@pytest.mark.parametrize("argv", AUTOSTASH_CASES, ids=[" ".join(c) for c in AUTOSTASH_CASES])
def test_autostash_moves_every_local_change(tmp_path: Path, factory: Path, argv: list[str]) -> None:
    top = _repo(tmp_path, factory, NO_ITA)
    radius = predict(top, argv)
    assert radius.moves
    tracked_dirty = {e.path for e in blast.read_state(_ctx(top)).entries.values()}
    assert set(radius.paths) == tracked_dirty
    assert "staged_mod.txt" in radius.paths


def _diverge(top: Path, path: str, branch: str) -> None:
    """``branch`` (from main) and main each change ``path`` in a commit of their own (to
    ``"<branch>\\n"`` and ``"main\\n"``); main stays checked out: a merge or rebase of
    ``branch`` then stops on a conflict in ``path``."""
    git(top, "checkout", "-q", "-b", branch)
    write(top, path, f"{branch}\n")
    git(top, "commit", "-q", "-am", branch)
    git(top, "checkout", "-q", "main")
    write(top, path, "main\n")
    git(top, "commit", "-q", "-am", "main")


def test_the_predictor_reads_status_with_the_one_porcelain_v2_reader(
    tmp_path: Path, factory: Path
) -> None:
    """The predictor's state is guards.git.dirty's reading of the same status: the same
    paths, and the same HEAD and index versions (a conflict's base stands for HEAD)."""
    from guards.git.dirty import read_dirty
    from guards.git.repo import discover

    conflicted = make_repo(tmp_path / "c", {"a": "base\n"})
    _diverge(conflicted, "a", "theirs")
    git(conflicted, "merge", "-q", "theirs", check=False)
    for top in (_repo(tmp_path, factory, FULL), conflicted):
        state = blast.read_state(_ctx(top), hash_work=False)
        dirty = {d.path: d for d in read_dirty(discover(top), ignored=True)}
        assert set(state.entries) | set(state.untracked) | set(state.ignored) == set(dirty)
        for path, e in state.entries.items():
            d = dirty[path]
            assert (e.xy, e.unmerged) == (d.xy, d.unmerged)
            assert e.head == (None if d.head_mode == "000000" else (d.head_mode, d.head_oid))
            if not e.unmerged and not e.intent_to_add:
                index = None if d.index_mode == "000000" else (d.index_mode, d.index_oid)
                assert e.index == index
    assert blast.read_state(_ctx(conflicted)).entries["a"].unmerged


def test_rebase_without_autostash_moves_nothing(tmp_path: Path, factory: Path) -> None:
    top = _repo(tmp_path, factory, NO_ITA)
    assert predict(top, ["rebase", "other"]).empty()
    assert predict(top, ["-c", "rebase.autoStash=true", "rebase", "--no-autostash", "x"]).empty()


def _ctx(top: Path) -> blast.Context:
    ctx = blast.context(cmdline.parse(["status"], dict(os.environ), str(top)))
    assert ctx is not None
    return ctx


# ---------------------------------------------------------------------------
# unknowns, bad inputs, read-only


def test_shell_alias_and_options_git_knows_but_guards_does_not_put_everything_at_risk(
    tmp_path: Path,
) -> None:
    top = make_repo(tmp_path / "r")
    assert predict(top, ["-c", "alias.x=!git reset --hard", "x"]).everything
    # Real options of git 2.39 missing from guards' tables: cannot tell what they do.
    assert predict(top, ["rebase", "--reset-author-date", "--abort"]).everything
    assert predict(top, ["am", "--quoted-cr=strip", "--abort"]).everything


def test_options_git_does_not_know_are_git_refusing_the_command(tmp_path: Path) -> None:
    top = make_repo(tmp_path / "r")
    (top / "README").write_text("dirty\n")
    for argv in (
        ["reset", "--hard", "--frobnicate"],
        ["reset", "--hadr"],
        ["clean", "-fZ"],
        ["checkout", "--no-such-flag", "main"],
        ["checkout", "-B"],
        ["stash", "push", "-m"],
        ["restore", "--pathspec-from-file=missing"],
        ["reset", "--patch", "--hard"],
        ["checkout", "-f", "-m", "main"],
        ["clean", "-fxX"],
    ):
        assert predict(top, argv).empty(), argv
        assert subprocess.run(["git", *argv], cwd=top, capture_output=True).returncode != 0
    assert (top / "README").read_text() == "dirty\n"


def test_nothing_at_risk_in_a_clean_tree(tmp_path: Path) -> None:
    top = make_repo(tmp_path / "r")
    for argv in (["reset", "--hard"], ["checkout", "--", "."], ["clean", "-fdx"]):
        assert predict(top, argv).empty(), argv


def test_outside_a_repository_nothing_is_at_risk(tmp_path: Path) -> None:
    (tmp_path / "plain").mkdir()
    assert predict(tmp_path / "plain", ["reset", "--hard"]).empty()


def test_a_failing_git_query_is_unknown_state(tmp_path: Path) -> None:
    top = make_repo(tmp_path / "r")
    (top / ".git" / "index").write_bytes(b"garbage")
    with pytest.raises(UnknownStateError):
        predict(top, ["reset", "--hard"])


def test_prediction_never_touches_the_index(tmp_path: Path, factory: Path) -> None:
    top = _repo(tmp_path, factory, FULL)
    index = top / ".git" / "index"
    os.utime(index, (1_000_000_000, 1_000_000_000))
    # Stale stat data everywhere: a refreshing reader would rewrite the index.
    for p in top.rglob("*.txt"):
        if ".git" not in p.parts and not p.is_symlink():
            os.utime(p, None)
    before = (index.read_bytes(), index.stat().st_mtime_ns)
    for argv in (
        ["reset", "--hard", "other"],
        ["checkout", "other", "--", "."],
        ["restore", "--source=other", "."],
        ["clean", "-fdx"],
        ["stash", "-u"],
        ["rm", "-rf", "dir"],
    ):
        predict(top, argv)
    assert (index.read_bytes(), index.stat().st_mtime_ns) == before


def test_rebase_abort_resets_to_the_original_branch(tmp_path: Path) -> None:
    top = make_repo(tmp_path / "r", {"f.txt": "base\n", "g.txt": "g base\n"})
    _diverge(top, "f.txt", "side")
    git(top, "rebase", "side", check=False)
    write(top, "f.txt", "resolution in progress\n")
    write(top, "new.txt", "new during rebase\n")
    git(top, "add", "new.txt")
    argv = ["rebase", "--abort"]
    radius = predict(top, argv)
    destroyed, proc = observe(top, argv)
    assert proc.returncode == 0, proc.stderr
    assert as_dict(radius) == destroyed
    assert set(destroyed) == {"f.txt", "new.txt"}


@pytest.mark.parametrize(
    "argv",
    [["checkout", "-p"], ["restore", "-p", "dir"], ["reset", "-p"], ["stash", "-p"]],
    ids=lambda a: " ".join(a),
)
def test_patch_mode_counts_every_hunk_it_could_be_told_to_take(
    tmp_path: Path, factory: Path, argv: list[str]
) -> None:
    # The answers come on stdin, which guards never reads: all of them could be "y".
    top = _repo(tmp_path, factory, NO_ITA)
    radius = predict(top, argv)
    answer_yes = b"a\n" * 100
    destroyed, _ = observe(top, argv, stdin=answer_yes)
    assert set(destroyed) <= set(radius.paths)
    assert radius.paths


def test_checkout_dash_means_the_previous_branch(tmp_path: Path, factory: Path) -> None:
    top = _repo(tmp_path, factory, CALM)
    git(top, "checkout", "-q", "other")
    git(top, "checkout", "-q", "main")
    write(top, "icoll.log", "ignored again\n")
    assert as_dict(predict(top, ["checkout", "-"])) == {"icoll.log": {"ignored"}}


def test_recursing_into_submodules_is_computed_and_submodule_update_is_not(
    tmp_path: Path,
) -> None:
    top = make_repo(tmp_path / "r", {"a": "a\n"})
    (top / "a").write_text("changed\n")
    radius = predict(top, ["reset", "--hard", "--recurse-submodules"])
    assert not radius.everything and as_dict(radius) == {"a": {"worktree"}}
    assert predict(top, ["submodule", "update", "--force"]).everything


def test_mv_onto_a_file_inside_an_ignored_directory(tmp_path: Path, factory: Path) -> None:
    top = _repo(tmp_path, factory, FULL)
    radius = assert_exact(top, ["mv", "-f", "clean.txt", "build/out.bin"])
    assert as_dict(radius) == {"build/out.bin": {"ignored"}}


def test_a_file_of_the_target_inside_an_ignored_directory_hits_only_that_file(
    tmp_path: Path,
) -> None:
    top = base_repo(tmp_path / "r")
    git(top, "checkout", "-q", "other")
    write(top, "build/in-x.bin", "tracked in x only\n")
    git(top, "add", "-f", "build/in-x.bin")
    git(top, "commit", "-q", "-m", "x has a file in build/")
    git(top, "checkout", "-q", "main")
    write(top, "build/in-x.bin", "ignored, collides\n")
    write(top, "build/other.bin", "ignored, stays\n")
    for argv in (["checkout", "other"], ["reset", "--hard", "other"]):
        radius = predict(top, argv)
        assert as_dict(radius) == {"build/in-x.bin": {"ignored"}}, argv
    assert_exact(top, ["reset", "--hard", "other"])


def test_git_dir_and_work_tree_from_the_environment(tmp_path: Path, factory: Path) -> None:
    top = _repo(tmp_path, factory, FULL)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = dict(os.environ, GIT_DIR=str(top / ".git"), GIT_WORK_TREE=str(top))
    cmd = cmdline.parse(["reset", "--hard"], env, str(elsewhere))
    radius = blast.blast_radius(cmd)
    assert radius.worktree == str(top)
    assert as_dict(radius) == as_dict(predict(top, ["reset", "--hard"]))
    assert "staged_mod.txt" in radius.paths


def test_the_rules_document_names_every_kind_of_loss_and_every_handled_command() -> None:
    doc = (PROJECT_ROOT / "docs" / "blast-radius.md").read_text(encoding="utf-8")
    for kind in blast.LossKind.ALL:
        assert f"| `{kind}` |" in doc
    for sub in [*tree_commands.HANDLERS, *history_commands.HANDLERS, *ref_commands.HANDLERS]:
        assert f"`{sub}" in doc, sub


def test_each_handled_command_is_predicted_by_the_module_that_holds_its_handler() -> None:
    # The handlers are imported when asked for (a guarded reset loads only its own).
    tables = {"tree_commands": tree_commands, "history_commands": history_commands}
    tables["ref_commands"] = ref_commands
    held = {sub: name for name, module in tables.items() for sub in module.HANDLERS}
    assert held == blast.HANDLER_MODULES


# ---------------------------------------------------------------------------
# Changes an index flag hides from `git status` (assume-unchanged, skip-worktree)


def _hidden_repo(tmp_path: Path, flag: str) -> Path:
    """f and k carry ``flag`` and differ from their entries; ``other`` changes f and g."""
    top = make_repo(tmp_path / "r", {"f": "base\n", "k": "keep\n", "g": "g\n"})
    git(top, "checkout", "-q", "-b", "other")
    write(top, "f", "f in other\n")
    write(top, "g", "g in other\n")
    git(top, "commit", "-q", "-am", "other")
    git(top, "checkout", "-q", "main")
    git(top, "update-index", flag, "f", "k")
    write(top, "f", "f hidden edit\n")
    write(top, "k", "k hidden edit\n")
    return top


HIDDEN_CASES = [
    ["reset", "--hard"],
    ["reset", "--hard", "other"],
    ["reset", "--merge", "other"],
    ["checkout", "-f"],
    ["checkout", "-f", "other"],
    ["checkout", "other"],
    ["checkout", "-m", "other"],
    ["switch", "--discard-changes", "other"],
    ["checkout", "--", "."],
    ["checkout", "other", "--", "."],
    ["checkout", "--ignore-skip-worktree-bits", "--", "."],
    ["restore", "."],
    ["restore", "--ignore-skip-worktree-bits", "."],
    ["restore", "--source=other", "."],
    ["restore", "--source=other", "-SW", "."],
    ["rm", "-f", "f", "k", "g"],
    ["rm", "-f", "--sparse", "f", "k"],
    ["mv", "-f", "g", "f"],
    ["stash"],
    ["stash", "push", "--", "f", "g"],
]


@pytest.mark.parametrize("flag", ["--assume-unchanged", "--skip-worktree"])
@pytest.mark.parametrize("argv", HIDDEN_CASES, ids=lambda a: " ".join(a))
def test_changes_an_index_flag_hides_are_predicted(
    tmp_path: Path, flag: str, argv: list[str]
) -> None:
    top = _hidden_repo(tmp_path, flag)
    if argv[0] == "stash":
        write(top, "g", "g visible edit\n")  # something for stash to take
    radius = predict(top, argv)
    assert not radius.everything
    destroyed, proc = observe(top, argv, ("HEAD", "other"))
    assert as_dict(radius) == destroyed, (proc.returncode, proc.stderr.decode())


# ---------------------------------------------------------------------------
# Ignored files in the target's way: switches, reset --keep/--merge, cherry-pick, revert


def _in_the_way(tmp_path: Path) -> Path:
    """``other`` changes d and adds x.log and build/t.bin (ignored names); ``pick`` adds
    p.log; ``drop`` deletes q.log. The work tree holds ignored files at those paths."""
    top = make_repo(
        tmp_path / "r",
        {".gitignore": "*.log\nbuild/\n", "a": "a\n", "c": "c\n", "d": "d\n"},
    )
    git(top, "checkout", "-q", "-b", "other")
    write(top, "d", "d in other\n")
    write(top, "x.log", "x.log in other\n")
    write(top, "build/t.bin", "t.bin in other\n")
    git(top, "add", "-f", "d", "x.log", "build/t.bin")
    git(top, "commit", "-q", "-m", "other")
    git(top, "checkout", "-q", "-b", "pick", "main")
    write(top, "p.log", "p.log in pick\n")
    git(top, "add", "-f", "p.log")
    git(top, "commit", "-q", "-m", "pick")
    git(top, "checkout", "-q", "main")
    write(top, "q.log", "q.log committed\n")
    git(top, "add", "-f", "q.log")
    git(top, "commit", "-q", "-m", "add q.log")
    git(top, "rm", "-q", "q.log")
    git(top, "commit", "-q", "-m", "drop q.log")
    git(top, "branch", "drop")
    for name in ("x.log", "build/t.bin", "p.log", "q.log", "build/other.bin"):
        write(top, name, f"someone's ignored {name}\n")
    return top


IN_THE_WAY_CASES = [
    ("rm d", ["checkout", "other"]),
    ("rm d", ["switch", "other"]),
    ("git rm -q --cached c", ["checkout", "other"]),
    ("rm c; mkdir c; echo in > c/new.txt", ["switch", "other"]),
    ("rm d; mkdir d; echo in > d/new.txt", ["checkout", "other"]),
    ("git rm -q d", ["checkout", "other"]),
    ("", ["reset", "--keep", "other"]),
    ("rm c", ["reset", "--keep", "other"]),
    ("echo st > a; git add a; echo mod > a", ["reset", "--keep", "other"]),
    ("echo st > d; git add d", ["reset", "--keep", "other"]),
    ("echo unt > new.txt", ["reset", "--keep", "other"]),
    ("", ["reset", "--merge", "other"]),
    ("echo dirty > a", ["reset", "--merge", "other"]),
    ("echo dirty > a; git add a", ["reset", "--merge", "other"]),
    ("echo dirty > d", ["reset", "--merge", "other"]),
    ("git rm -q --cached c", ["reset", "--merge", "other"]),
    ("echo new > n.txt; git add n.txt", ["reset", "--merge", "other"]),
    ("", ["cherry-pick", "pick"]),
    ("", ["cherry-pick", "--no-commit", "pick", "other"]),
    ("echo u > p.log.txt; rm p.log; echo u > p.log; git add -f p.log.txt", ["cherry-pick", "pick"]),
    ("", ["revert", "--no-edit", "HEAD"]),
    ("", ["merge", "--no-edit", "pick"]),
    ("", ["rebase", "other"]),
    ("", ["rebase", "--onto", "other", "HEAD~1"]),
    ("git checkout -q pick", ["rebase", "other", "main"]),
    ("echo dirty > a", ["rebase", "other"]),
    ("git checkout -q other", ["rebase", "main"]),
]


@pytest.mark.parametrize(
    ("setup", "argv"), IN_THE_WAY_CASES, ids=[f"{s} | {' '.join(a)}" for s, a in IN_THE_WAY_CASES]
)
def test_ignored_files_in_the_targets_way_are_predicted(
    tmp_path: Path, setup: str, argv: list[str]
) -> None:
    top = _in_the_way(tmp_path)
    if setup:
        subprocess.run(["sh", "-c", setup], cwd=top, check=True)
    radius = predict(top, argv)
    assert not radius.everything
    destroyed, proc = observe(top, argv, ("HEAD", "other", "pick", "drop", "HEAD~1"))
    assert as_dict(radius) == destroyed, (proc.returncode, proc.stderr.decode())


# ---------------------------------------------------------------------------
# A directory where a tracked file was, a file where a tracked directory was


SWAPS = {
    "dir where a file was": "rm f; mkdir f; echo new > f/new.txt; echo ign > f/x.log",
    "file where a dir was": "rm -r dir; echo 'file now' > dir",
    "dir where a removed file was": "git rm -q f; mkdir f; echo new > f/new.txt",
}
SWAP_COMMANDS = [
    ["checkout", "--", "."],
    ["checkout", "--", "f"],
    ["restore", "."],
    ["restore", "dir"],
    ["checkout", "HEAD", "--", "."],
    ["restore", "-SW", "."],
    ["reset", "--hard"],
]


def _swap_repo(tmp_path: Path, setup: str) -> Path:
    top = make_repo(
        tmp_path / "r", {".gitignore": "*.log\n", "f": "f\n", "dir/a": "a\n", "dir/b": "b\n"}
    )
    subprocess.run(["sh", "-c", setup], cwd=top, check=True)
    return top


@pytest.mark.parametrize("swap", SWAPS)
@pytest.mark.parametrize("argv", SWAP_COMMANDS, ids=lambda a: " ".join(a))
def test_file_directory_swaps_are_predicted(tmp_path: Path, swap: str, argv: list[str]) -> None:
    top = _swap_repo(tmp_path, SWAPS[swap])
    assert_exact(top, argv)


@pytest.mark.parametrize("swap", SWAPS)
@pytest.mark.parametrize("argv", [["stash"], ["stash", "-u"], ["stash", "-a"]], ids=" ".join)
def test_stash_deletes_what_stands_where_a_tracked_file_comes_back(
    tmp_path: Path, swap: str, argv: list[str]
) -> None:
    top = _swap_repo(tmp_path, SWAPS[swap])
    radius = predict(top, argv)
    destroyed, proc = observe(top, argv)
    assert proc.returncode == 0, proc.stderr
    # What git deleted (or took into the stash) is all in the radius.
    assert set(destroyed) <= set(radius.paths)
    assert destroyed


MV_CASES = [
    ("echo staged > b; git add b; rm b", ["mv", "a", "b"]),
    ("rm b", ["mv", "a", "b"]),
    ("echo new > n; git add n; rm n", ["mv", "a", "n"]),
    ("echo staged > b; git add b; rm b", ["mv", "-k", "a", "b"]),
    ("mkdir -p e; echo staged > e/a; git add e/a; rm e/a", ["mv", "a", "e"]),
    ("echo staged > b; git add b", ["mv", "a", "b"]),
    ("echo staged > b; git add b", ["mv", "-f", "a", "b"]),
    ("echo u > u.txt", ["mv", "a", "u.txt"]),
]


@pytest.mark.parametrize(
    ("setup", "argv"), MV_CASES, ids=[f"{s} | {' '.join(a)}" for s, a in MV_CASES]
)
def test_mv_onto_a_staged_path_whose_file_is_gone(
    tmp_path: Path, setup: str, argv: list[str]
) -> None:
    top = make_repo(tmp_path / "r", {"a": "a\n", "b": "b\n", "d/x": "x\n"})
    subprocess.run(["sh", "-c", setup], cwd=top, check=True)
    assert_exact(top, argv)


# ---------------------------------------------------------------------------
# sparse-checkout: every form


def _sparse_repo(tmp_path: Path) -> Path:
    return make_repo(
        tmp_path / "r",
        {
            ".gitignore": "*.log\n",
            "top.txt": "top\n",
            "a/keep.txt": "a\n",
            "b/go.txt": "b\n",
            "b/deep/go2.txt": "bd\n",
            "c/c.txt": "c\n",
            "d/d.txt": "d\n",
        },
    )


DIRTY_DIRS = (
    "echo ig1 > b/deep/gone.log; echo ig2 > a/stays.log; echo ig3 > c/kept.log; "
    "echo u1 > c/unt.txt; echo ig4 > d/kept.log; echo mod > d/d.txt"
)
SPARSE_CASES = [
    (DIRTY_DIRS, ["sparse-checkout", "set", "a"]),
    (DIRTY_DIRS, ["sparse-checkout", "init"]),
    (DIRTY_DIRS, ["sparse-checkout", "init", "--cone"]),
    (DIRTY_DIRS, ["sparse-checkout", "set", "--no-cone", "/a/"]),
    (DIRTY_DIRS, ["sparse-checkout", "reapply"]),
    (DIRTY_DIRS, ["sparse-checkout", "add", "b"]),
    (DIRTY_DIRS, ["-C", "a", "sparse-checkout", "set", "../b"]),
    (
        "git sparse-checkout set a; mkdir -p c; echo ig5 > c/late.log",
        ["sparse-checkout", "reapply"],
    ),
    (
        "git sparse-checkout set a; mkdir -p c; echo ig6 > c/late.log",
        ["sparse-checkout", "add", "b"],
    ),
    ("git sparse-checkout set a b; echo ig7 > b/i.log", ["sparse-checkout", "set", "a"]),
    ("git sparse-checkout set a b; echo ig8 > b/i.log", ["sparse-checkout", "set", "a", "b/deep"]),
    (
        "git sparse-checkout set a b; echo ig9 > b/i.log; git sparse-checkout disable",
        ["sparse-checkout", "init", "--cone"],
    ),
    ("git sparse-checkout set a; mkdir -p b; echo u10 > b/go.txt", ["sparse-checkout", "disable"]),
    (
        "git sparse-checkout set --no-cone /a/; mkdir b; echo ig11 > b/i.log",
        ["sparse-checkout", "reapply"],
    ),
]


@pytest.mark.parametrize(
    ("setup", "argv"), SPARSE_CASES, ids=[f"{s[:20]} | {' '.join(a)}" for s, a in SPARSE_CASES]
)
def test_sparse_checkout_every_form(tmp_path: Path, setup: str, argv: list[str]) -> None:
    top = _sparse_repo(tmp_path)
    subprocess.run(["sh", "-c", setup], cwd=top, check=True, capture_output=True)
    assert_exact(top, argv)


def test_sparse_checkout_set_from_stdin_counts_every_directory_as_leaving(
    tmp_path: Path,
) -> None:
    top = _sparse_repo(tmp_path)
    subprocess.run(["sh", "-c", DIRTY_DIRS], cwd=top, check=True)
    radius = predict(top, ["sparse-checkout", "set", "--stdin"])
    destroyed, _ = observe(top, ["sparse-checkout", "set", "--stdin"], stdin=b"a\n")
    assert set(destroyed) <= set(radius.paths)
    assert destroyed


@pytest.mark.parametrize("action", ["add", "reapply"])
def test_sparse_checkout_outside_a_sparse_checkout_is_refused_by_git(
    tmp_path: Path, action: str
) -> None:
    top = _sparse_repo(tmp_path)
    subprocess.run(["sh", "-c", DIRTY_DIRS], cwd=top, check=True)
    assert predict(top, ["sparse-checkout", action, "b"][: 3 if action == "add" else 2]).empty()


# ---------------------------------------------------------------------------
# Commits only a reflog would keep


def _history(tmp_path: Path) -> Path:
    """main: i - two - three; side: i - side-only; three stash entries."""
    top = make_repo(tmp_path / "r", {"a": "a\n"})
    for n in ("two", "three"):
        write(top, "a", f"{n}\n")
        git(top, "commit", "-q", "-am", n)
    git(top, "branch", "side", "HEAD~2")
    git(top, "checkout", "-q", "side")
    write(top, "s", "side\n")
    git(top, "add", "s")
    git(top, "commit", "-q", "-m", "side-only")
    git(top, "checkout", "-q", "main")
    return top


def _reachable(top: Path) -> set[str]:
    return set(git(top, "rev-list", "--all").split())


def _stash_list(top: Path) -> list[str]:
    return git(top, "log", "-g", "--format=%H", "refs/stash", "--", check=False).split()


COMMIT_CASES = [
    ["reset", "--hard", "HEAD~2"],
    ["reset", "--keep", "HEAD~1"],
    ["reset", "HEAD~1"],
    ["reset", "--mixed", "side"],
    ["worktree", "add", "-B", "side", "../elsewhere", "main"],
    ["fetch", ".", "+main:side"],
    ["fetch", ".", "main:side"],
    ["fetch", ".", "+side:main"],
    ["push", ".", ":side"],
    ["push", ".", "--delete", "side"],
    ["push", ".", "+main:side"],
    ["push", ".", "main:side"],
]


@pytest.mark.parametrize("argv", COMMIT_CASES, ids=" ".join)
def test_commits_left_to_the_reflog_are_predicted(tmp_path: Path, argv: list[str]) -> None:
    top = _history(tmp_path)
    radius = predict(top, argv)
    before = _reachable(top)
    subprocess.run(["git", *argv], cwd=top, capture_output=True)
    lost = before - _reachable(top)
    predicted = {oid for oid, _ in radius.commits}
    # Keeping the predicted tips keeps every lost commit (their ancestors included).
    kept = set(git(top, "rev-list", *predicted).split()) if predicted else set()
    assert lost <= kept, (lost, radius.commits)
    assert bool(lost) == bool(predicted)


def test_a_forced_fetch_into_a_branch_checked_out_in_another_worktree_is_refused(
    tmp_path: Path,
) -> None:
    """git refuses to fetch into a branch a linked worktree has checked out, so nothing
    is lost (the worktrees are read by guards.git.worktrees, as everywhere else)."""
    top = _history(tmp_path)
    git(top, "worktree", "add", "-q", str(tmp_path / "side-wt"), "side")
    radius = predict(top, ["fetch", ".", "+main:side"])
    proc = subprocess.run(["git", "fetch", ".", "+main:side"], cwd=top, capture_output=True)
    assert proc.returncode != 0 and b"checked out" in proc.stderr
    assert radius.empty() and not radius.commits


STASH_CASES_REFLOG = [
    ["reflog", "expire", "--expire=now", "--all"],
    ["reflog", "expire", "--expire=now", "refs/stash"],
    ["reflog", "expire", "--all"],
    ["reflog", "delete", "stash@{1}"],
    ["reflog", "delete", "--updateref", "stash@{0}"],
    ["-c", "gc.refs/stash.reflogExpireUnreachable=now", "gc", "--prune=now"],
    ["-c", "gc.reflogExpire=now", "-c", "gc.reflogExpireUnreachable=now", "gc"],
]


@pytest.mark.parametrize("argv", STASH_CASES_REFLOG, ids=" ".join)
def test_stash_entries_a_reflog_command_drops_are_predicted(
    tmp_path: Path, argv: list[str]
) -> None:
    top = _history(tmp_path)
    for n in range(3):
        write(top, "a", f"stashed {n}\n")
        git(top, "stash", "-q")
    before = _stash_list(top)
    radius = predict(top, argv)
    subprocess.run(["git", *argv], cwd=top, capture_output=True, check=True)
    dropped = [oid for oid in before if oid not in _stash_list(top)]
    assert sorted(oid for oid, _ in radius.commits) == sorted(dropped)
    # Without settings for refs/stash itself, git never expires the stash.
    assert bool(dropped) == ("--expire=now" in argv or "delete" in argv or "stash" in str(argv))


# ---------------------------------------------------------------------------
# Commands that run shell commands of their own, plumbing, apply, autocorrect


@pytest.mark.parametrize(
    "argv",
    [
        ["rebase", "-x", "true", "HEAD~1"],
        ["rebase", "--exec=true", "HEAD~1"],
        ["bisect", "run", "true"],
        ["submodule", "foreach", "true"],
        ["filter-branch", "-f", "HEAD"],
        ["read-tree", "-u", "--reset", "HEAD"],
        ["read-tree", "-u", "-m", "HEAD"],
        ["read-tree", "HEAD"],
        ["-c", "submodule.x.update=!rm -rf .", "submodule", "update"],
    ],
    ids=" ".join,
)
def test_commands_running_shell_commands_or_rewriting_wholesale_are_opaque(
    tmp_path: Path, argv: list[str]
) -> None:
    top = _history(tmp_path)
    write(top, "notes.txt", "untracked notes\n")
    assert predict(top, argv).everything


def test_rebase_exec_with_local_changes_is_refused_by_git(tmp_path: Path) -> None:
    top = _history(tmp_path)
    write(top, "a", "local change\n")
    argv = ["rebase", "-x", "true", "HEAD~1"]
    assert predict(top, argv).empty()
    assert subprocess.run(["git", *argv], cwd=top, capture_output=True).returncode != 0
    assert predict(top, ["rebase", "--autostash", "-x", "true", "HEAD~1"]).everything


@pytest.mark.parametrize(
    "argv",
    [
        ["read-tree", "-n", "-u", "--reset", "HEAD"],
        ["bisect", "log"],
        ["submodule", "update"],
        ["checkout-index", "-a"],
        ["apply", "--check", "p.diff"],
    ],
    ids=" ".join,
)
def test_harmless_forms_of_those_commands_destroy_nothing(tmp_path: Path, argv: list[str]) -> None:
    top = _history(tmp_path)
    write(top, "a", "local change\n")
    (top / "p.diff").write_bytes(
        subprocess.run(["git", "diff"], cwd=top, capture_output=True).stdout
    )
    assert predict(top, argv).empty()


@pytest.mark.parametrize(
    "argv",
    [
        ["checkout-index", "-f", "-a"],
        ["checkout-index", "-f", "--", "dir", "with space.txt", "staged_mod.txt"],
        ["checkout-index", "-f", "-n", "-a"],
    ],
    ids=" ".join,
)
def test_checkout_index_force_is_r3(tmp_path: Path, factory: Path, argv: list[str]) -> None:
    top = _repo(tmp_path, factory, FULL)
    if "dir" in argv:
        argv = [*argv[:3], "dir/sub/deep.txt", *argv[4:]]
    assert_exact(top, argv)


APPLY_CASES = [
    (["diff"], ["-R"]),
    (["diff", "--cached", "--", "b"], ["-R", "--index"]),
    (["diff", "--cached"], ["-R", "--cached"]),
    (["diff", "HEAD", "--", "c"], ["-R"]),
    (["diff", "HEAD", "--", "a"], ["-R"]),
]


@pytest.mark.parametrize(
    ("diff", "flags"), APPLY_CASES, ids=[f"{' '.join(d)} | {' '.join(f)}" for d, f in APPLY_CASES]
)
def test_apply_rewrites_the_dirty_files_its_patch_touches(
    tmp_path: Path, diff: list[str], flags: list[str]
) -> None:
    top = make_repo(tmp_path / "r", {"a": "a\n", "b": "b\n", "c": "c\n"})
    write(top, "a", "a edited\n")
    write(top, "b", "b staged\n")
    git(top, "add", "b")
    write(top, "c", "c staged\n")
    git(top, "add", "c")
    write(top, "c", "c staged then edited\n")
    patch = subprocess.run(["git", *diff], cwd=top, capture_output=True, check=True).stdout
    (top / ".git" / "p.diff").write_bytes(patch)
    argv = ["apply", *flags, ".git/p.diff"]
    radius = predict(top, argv)
    destroyed, proc = observe(top, argv)
    assert proc.returncode == 0, proc.stderr
    assert as_dict(radius) == destroyed
    assert destroyed or flags == ["-R", "--cached"]


@pytest.mark.parametrize("spelling", [["--build-fake-ancestor", "anc"], ["--build-fake=anc"]])
@pytest.mark.parametrize("there", ["nothing", "untracked", "dirty"])
def test_apply_build_fake_ancestor_overwrites_its_file_and_predicting_writes_nothing(
    tmp_path: Path, spelling: list[str], there: str
) -> None:
    """Found by git's t1512: ``--build-fake-ancestor F`` writes an index file F even
    with ``--numstat``; the prediction's own query wrote F in the work tree (then
    rescued it as someone's untracked file, again and again). F is also what the
    command overwrites."""
    top = make_repo(tmp_path / "r", {"a": "a\n", "anc": "tracked\n"})
    write(top, "a", "a edited\n")
    patch = subprocess.run(["git", "diff", "--", "a"], cwd=top, capture_output=True).stdout
    git(top, "checkout", "--", "a")
    (top / ".git" / "p.diff").write_bytes(patch)
    if there == "nothing":
        git(top, "rm", "-q", "anc")
    else:
        if there == "untracked":
            git(top, "rm", "-q", "--cached", "anc")
        write(top, "anc", "someone's work\n")
    before = (top / "anc").read_bytes() if (top / "anc").exists() else None
    argv = ["apply", *spelling, ".git/p.diff"]
    radius = predict(top, argv)
    assert ((top / "anc").read_bytes() if (top / "anc").exists() else None) == before
    destroyed, proc = observe(top, argv)
    assert proc.returncode == 0, proc.stderr
    assert as_dict(radius) == destroyed
    assert ("anc" in destroyed) == (there != "nothing")


def test_apply_index_refuses_a_file_that_does_not_match_the_index(tmp_path: Path) -> None:
    top = make_repo(tmp_path / "r", {"c": "c\n"})
    write(top, "c", "c staged\n")
    git(top, "add", "c")
    write(top, "c", "c staged then edited\n")
    patch = subprocess.run(["git", "diff", "--cached"], cwd=top, capture_output=True).stdout
    (top / ".git" / "p.diff").write_bytes(patch)
    assert predict(top, ["apply", "-R", "--index", ".git/p.diff"]).empty()


def test_apply_from_stdin_puts_everything_at_risk(tmp_path: Path) -> None:
    top = make_repo(tmp_path / "r", {"a": "a\n"})
    assert predict(top, ["apply", "-R"]).everything


def test_help_autocorrect_is_followed_to_the_command_git_would_run(
    tmp_path: Path, factory: Path
) -> None:
    top = _repo(tmp_path, factory, FULL)
    for value in ("immediate", "-1", "1", "prompt"):
        cmd = cmdline.parse(
            ["-c", f"help.autocorrect={value}", "rset", "--hard"], {**os.environ}, str(top)
        )
        if value == "prompt":
            assert cmd.subcommand == "rset"  # no terminal: git asks nobody, runs nothing
            continue
        assert (cmd.subcommand, cmd.args) == ("reset", ["--hard"]), value
    for value in ("0", "never"):
        cmd = cmdline.parse(
            ["-c", f"help.autocorrect={value}", "rset", "--hard"], {**os.environ}, str(top)
        )
        assert cmd.subcommand == "rset", value
    ambiguous = cmdline.parse(["-c", "help.autocorrect=-1", "rest"], {**os.environ}, str(top))
    assert ambiguous.subcommand == "rest"  # restore or reset: git does not guess
    assert_exact(top, ["-c", "help.autocorrect=-1", "rset", "--hard"])
