"""Before any ref points at a rescue: the capture equals the disk, every blob reads back
whole, and every tree holds exactly the wanted paths as captured."""

from __future__ import annotations

from guards.git import process as git
from guards.git.entries import Entry, State
from guards.git.objects import GITLINK
from guards.output import listing, show_path
from guards.protect.snapshot import (
    DIRECTORY,
    SPECIAL,
    Capture,
    SnapshotError,
    check_objects,
    displaced,
    filtered_oids,
    read_tree_changes,
)
from guards.state.workspace import Workspace


def _verify_capture(
    ws: Workspace,
    cap: Capture,
    on_disk: dict[str, State | str],
    checked: set[str],
    bad_checked: set[str],
) -> None:
    """Every listed path in the snapshot equals the disk, and every blob reads back whole.

    ``checked`` blob ids were already re-read (``bad_checked`` of them failed).
    """
    mismatched, filtered = _differ_from_disk(ws, cap, on_disk)
    if mismatched and cap.rewrite_trees():
        # A cached tree of the real index was stale: the trees written from the entries
        # alone must now agree with the disk.
        mismatched, filtered = _differ_from_disk(ws, cap, on_disk)
    if filtered and not mismatched:
        # git stored these through a clean filter or eol conversion: a rescue keeps the
        # bytes on disk, every one of them, and they must be the bytes read here.
        raw = cap.store_raw(filtered)
        mismatched = [p for p in filtered if _disk_oid(on_disk[p]) != raw[p]]
        # Written only now (the early read-back found them missing): read them back below.
        checked = checked - set(raw.values())
        bad_checked = bad_checked - set(raw.values())
    if mismatched:
        raise SnapshotError(
            f"rescue could not be verified: {_names(mismatched)} changed while being rescued "
            f"(or git stored something else); retry"
        )
    _check_blobs(ws, cap, checked, bad_checked)


def _disk_oid(state: State | str) -> str | None:
    return state.oid if isinstance(state, Entry) else None


def _check_blobs(ws: Workspace, cap: Capture, checked: set[str], bad_checked: set[str]) -> None:
    blobs: set[str] = set()
    for p in cap.paths:
        states: list[State] = [cap.worktree_state(p)]
        if p in cap.index_changes:  # a staged version (HEAD's own blobs are not at risk)
            states.append(cap.index_state(p))
        states += [e for _, e in cap.stages.get(p, [])]
        blobs.update(s.oid for s in states if s is not None and s.mode != GITLINK)
    bad = sorted(blobs & bad_checked)
    bad += check_objects(ws.repo, blobs - checked, cap.env)
    if bad:
        raise SnapshotError(
            f"rescue could not be verified: object {bad[0]} is missing or corrupt "
            f"({len(bad)} bad objects; run git fsck)"
        )


def _differ_from_disk(
    ws: Workspace, cap: Capture, on_disk: dict[str, State | str]
) -> tuple[list[str], list[str]]:
    """The listed paths whose state in the snapshot is not what the disk holds, and the
    files git stored filtered (clean filter, eol conversion): their bytes on disk differ,
    but git's filters make them what the snapshot holds."""
    filemode: bool | None = None  # read only when an exec bit disagrees
    mismatched: list[str] = []
    refilter: list[str] = []
    for p in cap.paths:
        want = cap.worktree_state(p)
        got = on_disk[p]
        if got == SPECIAL or p in cap.special:
            # A FIFO, socket or device: never read, its index entry stays.
            if got != SPECIAL or p not in cap.special:
                mismatched.append(p)
            continue
        if got == DIRECTORY:
            if want is None or want.mode != GITLINK or want.oid != _nested_head(ws, p):
                mismatched.append(p)
            continue
        if p in cap.skip_worktree:
            continue  # not checked out: the index entry is its state
        if got is None or want is None or isinstance(got, str):
            if got != want:
                mismatched.append(p)
            continue
        same_kind = got.mode == want.mode
        if not same_kind and got.mode[:3] == want.mode[:3]:
            if filemode is None:
                filemode = ws.repo.filemode()
            same_kind = not filemode  # core.filemode=false: git keeps the index's bit
        if not same_kind:
            mismatched.append(p)
        elif got.oid != want.oid:
            refilter.append(p)
    filtered: list[str] = []
    if refilter:
        hashed = filtered_oids(ws.repo, refilter)
        for p in refilter:
            want = cap.worktree_state(p)
            if want is None:
                mismatched.append(p)
            elif hashed.get(p) == want.oid or _index_entry_taken(cap, p, want.oid):
                filtered.append(p)
            else:
                mismatched.append(p)
    return mismatched, filtered


def _index_entry_taken(cap: Capture, path: str, oid: str) -> bool:
    """The snapshot holds the real index's entry for this file: git found the file
    unchanged by its stat data, yet its bytes no longer give that blob through the
    filters now in force (an attribute changed since it was added: t1051). Its raw bytes
    are stored instead, like a filtered file's."""
    entry = cap.index_state(path)
    return entry is not None and entry.oid == oid


def _nested_head(ws: Workspace, path: str) -> str | None:
    res = git.run(["rev-parse", "-q", "--verify", "HEAD"], cwd=ws.repo.worktree / path, check=False)
    return res.stdout.decode().strip() if res.returncode == 0 else None


def _verify_tree(cap: Capture, tree: str, paths: list[str], kind: str) -> None:
    """Read the tree back: exactly the wanted paths differ from HEAD, as captured."""
    changes = read_tree_changes(cap.repo, cap.head_tree, tree, cap.env)
    wanted = set(paths)
    # A path that gave way to a wanted one (a directory replaced by a file) changes too.
    bad = [p for p in changes if p not in wanted and not displaced(p, wanted)]
    for p in paths:
        expect = cap.index_state(p) if kind == "index" else cap.worktree_state(p)
        got = changes[p].new if p in changes else cap.head_state(p)
        touched = p in changes or p in cap.worktree_changes or p in cap.index_changes
        if touched and got != expect:
            bad.append(p)
    if bad:
        raise SnapshotError(f"rescue could not be verified: {kind} tree is wrong at {_names(bad)}")


def _names(paths: list[str]) -> str:
    return listing([show_path(p) for p in paths])
