"""Rescues at scale: objects packed, short messages, the tree as the path list."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from guards.protect.rescue import AtRiskPath, rescue_paths
from guards.protect.rescue.catalog import resolve
from guards.protect.rescue.naming import MAX_MESSAGE
from guards.protect.rescue.restore import restore_paths
from guards.state.workspace import Workspace
from tests.helpers import git, observe, record

FILES = 2000


def loose_objects(repo: Path) -> int:
    fields = dict(line.split(": ", 1) for line in git(repo, "count-objects", "-v").splitlines())
    return int(fields["count"])


def big_dirty_repo(repo: Path) -> list[str]:
    """2,000 dirty paths: half of them tracked and edited (in nested directories), a
    staged one, half untracked."""
    tracked = [f"d{i % 20}/e{i % 7}/t{i}.txt" for i in range(FILES // 2)]
    for p in tracked:
        (repo / p).parent.mkdir(parents=True, exist_ok=True)
        (repo / p).write_text(f"tracked {p}\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "many files")
    git(repo, "repack", "-adq")
    git(repo, "prune-packed")
    for p in tracked:
        (repo / p).write_text(f"edited {p}\n")
    untracked = [f"new/u{i}.bin" for i in range(FILES // 2)]
    (repo / "new").mkdir()
    for p in untracked:
        (repo / p).write_bytes(f"untracked {p}\r\n".encode() + bytes(range(256)))
    (repo / "d0/e0/t0.txt").write_text("staged\n")
    git(repo, "add", "d0/e0/t0.txt")
    (repo / "d0/e0/t0.txt").write_text("staged, then edited\n")
    return tracked + untracked


def test_a_2000_file_rescue_leaves_at_most_100_loose_objects(repo: Path) -> None:
    paths = big_dirty_repo(repo)
    before = loose_objects(repo)
    seen = observe(repo)
    (result,) = rescue_paths(
        Workspace.open(repo), [AtRiskPath(p, "alice") for p in paths], command="reset --hard"
    )
    assert loose_objects(repo) - before <= 100
    assert observe(repo) == seen  # worktree, index, HEAD, stash untouched
    # Everything is there, byte for byte, readable by plain git.
    assert git(repo, "show", f"{result.ref}:d3/e3/t3.txt") == "edited d3/e3/t3.txt\n"
    raw = (repo / "new/u7.bin").read_bytes()
    blob = git(repo, "rev-parse", f"{result.ref}:new/u7.bin").strip()
    assert git(repo, "hash-object", "--no-filters", "new/u7.bin").strip() == blob
    assert len(raw) > 256
    git(repo, "fsck", "--connectivity-only", "--no-dangling")


def test_a_big_rescue_keeps_its_message_short_and_its_tree_is_the_list(repo: Path) -> None:
    paths = big_dirty_repo(repo)
    ws = Workspace.open(repo)
    (result,) = rescue_paths(ws, [AtRiskPath(p, "alice") for p in paths], command="reset --hard")
    message = git(repo, "log", "-1", "--format=%B", result.ref)
    assert len(message.encode()) <= MAX_MESSAGE
    assert f"Path-Count: {len(paths)}\n" in message
    assert "Path: " not in message
    r = resolve(ws, result.ref)
    assert r.path_count == len(paths)
    assert sorted(r.paths) == sorted(paths)
    # Restore reads the list from the trees: every file comes back, the staged one too.
    git(repo, "reset", "-q", "--hard")
    git(repo, "clean", "-qfd")
    done = restore_paths(ws, r, [], index=True)
    assert len(done.written) == len(paths) and not done.conflicts
    assert (repo / "d5/e5/t5.txt").read_text() == "edited d5/e5/t5.txt\n"
    assert (repo / "d0/e0/t0.txt").read_text() == "staged, then edited\n"
    assert git(repo, "show", ":d0/e0/t0.txt") == "staged\n"


def test_a_small_rescue_still_names_every_path(repo: Path) -> None:
    (repo / "README").write_text("edited\n")
    (repo / "new.txt").write_text("new\n")
    ws = Workspace.open(repo)
    (result,) = rescue_paths(
        ws, [AtRiskPath(p, "alice") for p in ("README", "new.txt")], command="reset --hard"
    )
    message = git(repo, "log", "-1", "--format=%B", result.ref)
    assert "Path: README\nPath: new.txt\n" in message and "Path-Count: 2\n" in message
    assert resolve(ws, result.ref).paths == ["README", "new.txt"]


def test_a_rescue_from_before_path_count_lists_its_trailers(repo: Path) -> None:
    """Old rescues (every path in the message, no count) read as they always did."""
    (repo / "README").write_text("old rescue\n")
    git(repo, "add", "README")
    tree = git(repo, "write-tree").strip()
    git(repo, "reset", "-q", "--hard")
    head = git(repo, "rev-parse", "HEAD").strip()
    message = (
        "guards rescue: 1 path of session alice before `reset --hard`\n\n"
        f"Rescued-For: alice\nRescued-By: bob\nCommand: reset --hard\nHost: h\n"
        f"Time: 2026-01-01T00:00:00Z\nHead: {head}\nBytes: raw\nPath: README\n"
    )
    commit = git(repo, "commit-tree", tree, "-p", head, "-m", message).strip()
    git(repo, "update-ref", "refs/rescue/alice/20260101T000000Z-reset-hard", commit)
    ws = Workspace.open(repo)
    r = resolve(ws, "refs/rescue/alice/20260101T000000Z-reset-hard")
    assert r.paths == ["README"] and r.path_count == 1
    done = restore_paths(ws, r, [], index=False)
    assert done.written == ["README"]
    assert (repo / "README").read_text() == "old rescue\n"


def test_a_rescue_of_99_files_stays_under_100_loose_objects(repo: Path) -> None:
    """Blobs and trees are each moved in loose only when few: together still at most 100."""
    paths = [f"new/f{i}.txt" for i in range(99)]
    (repo / "new").mkdir()
    for p in paths:
        (repo / p).write_text(f"new {p}\n")
    before = loose_objects(repo)
    (result,) = rescue_paths(
        Workspace.open(repo), [AtRiskPath(p, "alice") for p in paths], command="clean -fd"
    )
    assert loose_objects(repo) - before <= 100
    assert git(repo, "show", f"{result.ref}:new/f42.txt") == "new new/f42.txt\n"


def test_a_guarded_reset_looks_at_each_file_in_reach_once_per_look(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 100,000 files in reach cost 0.1 s per pass of lstat: the judge's look serves the
    # owner, the special-file check, the caps and the snapshot's sorting; the rescue
    # reads each file once more (its content), and the look before git once more.
    import os

    from guards.predict import cmdline
    from guards.protect.guard import guard_command

    tracked = big_dirty_repo(repo)[: FILES // 2]
    record(repo, "alice", *tracked)
    top = os.fspath(repo) + os.sep
    counts: dict[str, int] = {}
    real_lstat = os.lstat

    def counting_lstat(path: Any, *args: Any, **kw: Any) -> os.stat_result:
        name = os.fsdecode(path)
        if name.startswith(top):
            counts[name[len(top) :]] = counts.get(name[len(top) :], 0) + 1
        return real_lstat(path, *args, **kw)

    monkeypatch.setenv("GUARDS_SESSION", "bob")
    monkeypatch.chdir(repo)
    cmd = cmdline.parse(["reset", "-q", "--hard"], dict(os.environ), os.fspath(repo))
    monkeypatch.setattr(os, "lstat", counting_lstat)
    (result,) = guard_command(cmd)
    monkeypatch.setattr(os, "lstat", real_lstat)
    assert result.owner == "alice"
    assert git(repo, "show", f"{result.ref}:d3/e3/t3.txt") == "edited d3/e3/t3.txt\n"
    # The judge's look (its signature), the rescue's read, the snapshot's check for
    # files gone, the look before git. (The staged file is looked at twice more.)
    looks = {p: counts.get(p, 0) for p in tracked if p != "d0/e0/t0.txt"}
    assert max(looks.values()) <= 4, sorted(set(looks.values()))


def test_no_cycle_collection_runs_while_a_command_is_guarded(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Every collection walks every live object: with a few per path in reach, a fifth of
    # a big guarded command went there. Off while guarding (judging, rescuing, looking
    # again), back on after.
    import gc
    import os

    from guards.predict import cmdline
    from guards.protect import decide
    from guards.protect.guard import guard_command

    tracked = big_dirty_repo(repo)[: FILES // 2]
    record(repo, "alice", *tracked)
    monkeypatch.setenv("GUARDS_SESSION", "bob")
    monkeypatch.chdir(repo)
    cmd = cmdline.parse(["reset", "-q", "--hard"], dict(os.environ), os.fspath(repo))
    enabled: list[bool] = []
    judge = decide.decide

    def judging(*args: Any, **kw: Any) -> decide.Decision:
        enabled.append(gc.isenabled())
        return judge(*args, **kw)

    monkeypatch.setattr(decide, "decide", judging)
    (result,) = guard_command(cmd)
    assert result.owner == "alice"
    assert enabled and not any(enabled)
    assert gc.isenabled()
