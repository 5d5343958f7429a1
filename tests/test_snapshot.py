"""Snapshots touch nothing and capture every kind of dirty state (real git, no mocks)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

from guards.protect.rescue import AtRiskPath, rescue_paths
from guards.protect.snapshot import Capture
from guards.state.workspace import Workspace
from tests.helpers import git, make_repo, observe


def rescue_all(repo: Path, paths: list[str], owner: str | None = "alice") -> list[Any]:
    ws = Workspace.open(repo)
    return rescue_paths(ws, [AtRiskPath(p, owner) for p in paths], command="reset --hard")


def rescued_and_untouched(repo: Path, paths: list[str], owner: str | None = "alice") -> str:
    """Rescue ``paths``; assert nothing observable changed; return the rescue ref."""
    before = observe(repo)
    results = rescue_all(repo, paths, owner)
    assert observe(repo) == before
    assert len(results) == 1
    return str(results[0].ref)


def show(repo: Path, spec: str) -> bytes:
    return subprocess.run(
        ["git", "cat-file", "blob", spec], cwd=repo, capture_output=True, check=True
    ).stdout


def tree_entry(repo: Path, ref: str, path: str) -> str:
    out = subprocess.run(
        ["git", "ls-tree", "-z", ref, "--", path], cwd=repo, capture_output=True, check=True
    ).stdout
    return out.split(b"\t")[0].decode() if out else ""


def test_snapshot_of_every_kind_of_change_touches_nothing_and_restores_with_plain_git(
    tmp_path: Path,
) -> None:
    repo = make_repo(
        tmp_path / "r",
        {"mod": "a\n", "staged": "b\n", "both": "c\n", "gone": "d\n", "rmd": "e\n", "x": "f\n"},
    )
    git(repo, "commit", "-q", "--allow-empty", "-m", "second")
    (repo / "mod").write_text("stashed earlier\n")
    git(repo, "stash", "-q")  # a stash entry that must survive untouched
    (repo / "mod").write_text("a2\n")
    (repo / "staged").write_text("b2\n")
    git(repo, "add", "staged")
    (repo / "both").write_text("c-staged\n")
    git(repo, "add", "both")
    (repo / "both").write_text("c-worktree\n")
    (repo / "gone").unlink()
    git(repo, "rm", "-q", "rmd")
    (repo / "x").chmod(0o755)
    os.symlink("mod", repo / "link")
    (repo / "added").write_text("new staged\n")
    git(repo, "add", "added")
    (repo / "untracked dir").mkdir()
    (repo / "untracked dir" / "u v.txt").write_text("untracked\n")
    assert git(repo, "stash", "list")
    paths = ["mod", "staged", "both", "gone", "rmd", "x", "link", "added", "untracked dir/u v.txt"]
    ref = rescued_and_untouched(repo, paths)

    assert show(repo, f"{ref}:mod") == b"a2\n"
    assert show(repo, f"{ref}:both") == b"c-worktree\n"
    assert show(repo, f"{ref}^2:both") == b"c-staged\n"
    assert show(repo, f"{ref}:untracked dir/u v.txt") == b"untracked\n"
    assert tree_entry(repo, ref, "gone") == ""
    assert tree_entry(repo, ref, "rmd") == ""
    assert tree_entry(repo, ref, "x").startswith("100755 ")
    assert tree_entry(repo, ref, "link").startswith("120000 ")
    assert show(repo, f"{ref}:link") == b"mod"
    # The rescue commit sits on HEAD: plain git gets each file back.
    assert git(repo, "rev-parse", f"{ref}^1") == git(repo, "rev-parse", "HEAD")
    git(repo, "reset", "-q", "--hard")
    git(repo, "clean", "-qfd")
    for p in ["mod", "staged", "both", "x", "link", "added", "untracked dir/u v.txt"]:
        git(repo, "restore", f"--source={ref}", "--", p)
    assert (repo / "both").read_text() == "c-worktree\n"
    assert (repo / "untracked dir" / "u v.txt").read_text() == "untracked\n"
    assert os.readlink(repo / "link") == "mod"
    assert os.stat(repo / "x").st_mode & 0o100


def test_snapshot_holds_only_the_listed_paths_on_top_of_head(repo: Path) -> None:
    (repo / "README").write_text("mine\n")
    (repo / "src" / "app.py").write_text("theirs\n")
    git(repo, "add", "src/app.py")
    ref = rescued_and_untouched(repo, ["README"])
    assert show(repo, f"{ref}:README") == b"mine\n"
    assert show(repo, f"{ref}:src/app.py") == b"print('hi')\n"
    assert show(repo, f"{ref}^2:src/app.py") == b"print('hi')\n"
    changed = git(repo, "diff", "--name-only", "HEAD", ref).split()
    assert changed == ["README"]


def test_one_ref_per_owner_from_one_capture(repo: Path) -> None:
    (repo / "README").write_text("alice\n")
    (repo / "src" / "app.py").write_text("bob\n")
    (repo / "loose").write_text("nobody\n")
    before = observe(repo)
    ws = Workspace.open(repo)
    results = rescue_paths(
        ws,
        [AtRiskPath("README", "alice"), AtRiskPath("src/app.py", "bob"), AtRiskPath("loose", None)],
        command="reset --hard",
    )
    assert observe(repo) == before
    by_owner = {r.owner: r for r in results}
    assert set(by_owner) == {"alice", "bob", None}
    assert by_owner[None].ref.startswith("refs/rescue/unknown/")
    assert git(repo, "diff", "--name-only", "HEAD", by_owner["alice"].ref).split() == ["README"]
    assert git(repo, "diff", "--name-only", "HEAD", by_owner["bob"].ref).split() == ["src/app.py"]
    assert git(repo, "diff", "--name-only", "HEAD", by_owner[None].ref).split() == ["loose"]


def test_odd_file_names_survive(repo: Path) -> None:
    names = ["-leading dash", "new\nline", 'quo"te', "tab\there", "ünï", "sp ace "]
    raw = b"caf\xe9-latin1"
    for n in names:
        (repo / n).write_text(n)
    (repo / os.fsdecode(raw)).write_bytes(b"latin\n")
    paths = [*names, os.fsdecode(raw)]
    ref = rescued_and_untouched(repo, paths)
    for n in names:
        assert show(repo, f"{ref}:{n}") == n.encode()
    out = subprocess.run(
        ["git", "show", f"{ref}:".encode() + raw], cwd=repo, capture_output=True, check=True
    ).stdout
    assert out == b"latin\n"
    message = git(repo, "log", "-1", "--format=%B", ref)
    assert 'Path: "new\\nline"' in message
    assert "Rescued-For: alice" in message


def test_ignored_files_are_rescued_when_listed(repo: Path) -> None:
    (repo / ".gitignore").write_text("*.log\nbuild/\n")
    git(repo, "add", ".gitignore")
    git(repo, "commit", "-qm", "ignore")
    (repo / "debug.log").write_text("log\n")
    (repo / "build").mkdir()
    (repo / "build" / "out.o").write_text("obj\n")
    ref = rescued_and_untouched(repo, ["debug.log", "build/"])
    assert show(repo, f"{ref}:debug.log") == b"log\n"
    assert show(repo, f"{ref}:build/out.o") == b"obj\n"


def test_unborn_branch_rescue_has_no_parent_but_head(tmp_path: Path) -> None:
    repo = tmp_path / "unborn"
    repo.mkdir()
    git(repo, "init", "-q")
    (repo / "a").write_text("staged\n")
    git(repo, "add", "a")
    (repo / "a").write_text("worktree\n")
    (repo / "b").write_text("untracked\n")
    ref = rescued_and_untouched(repo, ["a", "b"])
    assert show(repo, f"{ref}:a") == b"worktree\n"
    assert show(repo, f"{ref}:b") == b"untracked\n"
    parents = git(repo, "log", "-1", "--format=%P", ref).split()
    assert len(parents) == 1  # only the index commit
    assert show(repo, f"{parents[0]}:a") == b"staged\n"
    assert "Head: unborn" in git(repo, "log", "-1", "--format=%B", ref)


def test_merge_conflict_keeps_markers_and_all_three_stages(repo: Path) -> None:
    git(repo, "checkout", "-q", "-b", "other")
    (repo / "README").write_text("theirs\n")
    git(repo, "commit", "-qam", "theirs")
    git(repo, "checkout", "-q", "main")
    (repo / "README").write_text("ours\n")
    git(repo, "commit", "-qam", "ours")
    git(repo, "merge", "other", check=False)
    assert git(repo, "ls-files", "-u")
    (repo / "src" / "app.py").write_text("unrelated edit\n")
    ref = rescued_and_untouched(repo, ["README", "src/app.py"])
    assert b"<<<<<<<" in show(repo, f"{ref}:README")
    message = git(repo, "log", "-1", "--format=%B", ref)
    stages = next(
        line.split(": ")[1] for line in message.splitlines() if line.startswith("Conflict-Stages")
    )
    assert show(repo, f"{stages}:1/README") == b"hello\n"
    assert show(repo, f"{stages}:2/README") == b"ours\n"
    assert show(repo, f"{stages}:3/README") == b"theirs\n"
    assert git(repo, "ls-files", "-u")  # still conflicted, untouched


def test_conflict_elsewhere_does_not_break_a_rescue_of_other_paths(repo: Path) -> None:
    git(repo, "checkout", "-q", "-b", "other")
    (repo / "README").write_text("theirs\n")
    git(repo, "commit", "-qam", "theirs")
    git(repo, "checkout", "-q", "main")
    (repo / "README").write_text("ours\n")
    git(repo, "commit", "-qam", "ours")
    git(repo, "merge", "other", check=False)
    (repo / "note").write_text("note\n")
    ref = rescued_and_untouched(repo, ["note"])
    assert git(repo, "diff", "--name-only", "HEAD", ref).split() == ["note"]


def test_intent_to_add_entry_is_rescued(repo: Path) -> None:
    (repo / "ita").write_text("intent\n")
    git(repo, "add", "-N", "ita")
    ref = rescued_and_untouched(repo, ["ita"])
    assert show(repo, f"{ref}:ita") == b"intent\n"


def test_sparse_checkout_skip_worktree_entries_are_not_deletions(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "sparse", {"in/a": "a\n", "out/b": "b\n"})
    git(repo, "sparse-checkout", "set", "in")
    assert not (repo / "out").exists()
    (repo / "in" / "a").write_text("edited\n")
    ref = rescued_and_untouched(repo, ["in/a", "out/b"])
    assert show(repo, f"{ref}:in/a") == b"edited\n"
    assert show(repo, f"{ref}:out/b") == b"b\n"


def test_linked_worktree_uses_its_own_index(repo: Path, tmp_path: Path) -> None:
    wt = tmp_path / "wt"
    git(repo, "worktree", "add", "-q", "-b", "side", str(wt))
    (wt / "README").write_text("staged in wt\n")
    git(wt, "add", "README")
    (wt / "README").write_text("worktree in wt\n")
    main_before = observe(repo)
    ref = rescued_and_untouched(wt, ["README"])
    assert observe(repo) == main_before
    assert show(wt, f"{ref}:README") == b"worktree in wt\n"
    assert show(wt, f"{ref}^2:README") == b"staged in wt\n"
    assert git(wt, "rev-parse", f"{ref}^1") == git(wt, "rev-parse", "side")


def test_untracked_nested_repository_is_kept_whole_touching_nothing(repo: Path) -> None:
    nested = make_repo(repo / "nested", {"f": "nested\n"})
    (nested / "f").write_text("dirty\n")
    before, inside = observe(repo), observe(nested)
    results = rescue_all(repo, ["nested/"])
    assert observe(repo) == before
    assert observe(nested) == inside
    (kept,) = [r for r in results if r.label == "repository nested/"]
    assert git(repo, "show", f"{kept.commit}:f") == "dirty\n"
    head = git(nested, "rev-parse", "HEAD").strip()
    assert git(repo, "merge-base", "--is-ancestor", head, kept.ref, check=False) == ""


def test_dirty_submodule_is_rescued_inside_it(repo: Path, tmp_path: Path) -> None:
    sub_src = make_repo(tmp_path / "subsrc", {"s": "sub\n"})
    git(repo, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(sub_src), "sub")
    git(repo, "commit", "-qm", "add sub")
    (repo / "sub" / "s").write_text("dirty inside\n")
    before, inside = observe(repo), observe(repo / "sub")
    results = rescue_all(repo, ["sub"])
    assert observe(repo) == before
    assert observe(repo / "sub") == inside
    (sub,) = [r for r in results if r.repository == "sub"]
    assert git(repo / "sub", "show", f"{sub.ref}:s") == "dirty inside\n"


def test_submodule_moved_to_another_commit_is_kept_as_gitlink(repo: Path, tmp_path: Path) -> None:
    sub_src = make_repo(tmp_path / "subsrc", {"s": "sub\n"})
    git(repo, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(sub_src), "sub")
    git(repo, "commit", "-qm", "add sub")
    git(repo / "sub", "commit", "-q", "--allow-empty", "-m", "moved")
    moved = git(repo / "sub", "rev-parse", "HEAD").strip()
    ref = rescued_and_untouched(repo, ["sub"])
    assert tree_entry(repo, ref, "sub") == f"160000 commit {moved}"


def test_capture_hashes_once_and_cuts_trees_per_subset(repo: Path) -> None:
    (repo / "README").write_text("one\n")
    (repo / "other").write_text("two\n")
    ws = Workspace.open(repo)
    with Capture.take(ws.repo, ["README", "other"]) as cap:
        both = cap.all_tree
        only = cap.tree(["README"])
        assert both != only
        assert cap.tree(["README", "other"]) == both
        # Few objects: straight into the store (loose), no quarantine to move them from.
        assert git(repo, "cat-file", "-t", only) == "tree\n"
        cap.migrate()
    names = git(repo, "ls-tree", "--name-only", only).split()
    assert "other" not in names and "README" in names


def test_a_capture_of_many_objects_is_written_aside_until_it_moves_in(repo: Path) -> None:
    """Past git's unpack limit the objects go to a quarantine (moved in packed); below
    it, straight into the store, loose, as a push that small would land."""
    from guards.protect.snapshot import few_objects

    names = [f"many/f{i}" for i in range(60)]
    (repo / "many").mkdir()
    for name in names:
        (repo / name).write_text(f"{name}\n")
    assert not few_objects(names) and few_objects(["README", "src/app.py"])
    ws = Workspace.open(repo)
    with Capture.take(ws.repo, names) as cap:
        tree = cap.all_tree
        assert git(repo, "cat-file", "-t", tree, check=False) == ""  # nowhere in the store
        cap.migrate()
    assert git(repo, "cat-file", "-t", tree) == "tree\n"
    loose = int(git(repo, "count-objects").split()[0])
    assert loose < 10  # the 60 blobs and their trees came in as one pack


def test_core_filemode_false_keeps_the_index_mode_and_still_verifies(repo: Path) -> None:
    git(repo, "config", "core.filemode", "false")
    (repo / "README").write_text("edited\n")
    (repo / "README").chmod(0o755)
    ref = rescued_and_untouched(repo, ["README"])
    assert tree_entry(repo, ref, "README").startswith("100644 ")
    assert show(repo, f"{ref}:README") == b"edited\n"


def test_eol_conversion_does_not_apply_the_rescue_holds_the_raw_bytes(repo: Path) -> None:
    (repo / ".gitattributes").write_text("*.txt text eol=lf\n")
    git(repo, "add", ".gitattributes")
    git(repo, "commit", "-qm", "attributes")
    (repo / "dos.txt").write_bytes(b"one\r\ntwo\r\n")
    ref = rescued_and_untouched(repo, ["dos.txt"])
    assert show(repo, f"{ref}:dos.txt") == b"one\r\ntwo\r\n"
