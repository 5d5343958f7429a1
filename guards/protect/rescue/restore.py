"""Putting rescued work back: files, staged versions, whole nested repositories.

Restoring never overwrites newer work: a path is written only where the disk (or the
index) still holds what HEAD has; anything else is a conflict, reported and left alone.
The one exception is ``force``: paths the caller (``guards undo --force``) has rescued
first, whose newer content is therefore kept on a rescue ref of its own.
Rescued files are written byte for byte (the rescue holds the bytes that were on disk).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path

from guards import output
from guards.errors import GuardsError, UsageError
from guards.git import process as git
from guards.git.entries import Entry, State, index_entries_of, index_info_line, tree_listing
from guards.git.files import holds_repository
from guards.git.objects import EXECUTABLE, GITLINK, SYMLINK, TREE
from guards.git.process import NO_HOOKS
from guards.git.quarantine import missing_objects, read_back
from guards.git.quoting import unquote_path
from guards.protect.rescue.catalog import Rescue, restore_commands
from guards.protect.rescue.naming import RAW_BYTES, head_of
from guards.protect.snapshot import disk_states, filtered_oids, tree_entries
from guards.state.workspace import Workspace


@dataclass
class Restored:
    """What a restore of paths did."""

    written: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    already: int = 0
    staged: int = 0
    conflicts: list[str] = field(default_factory=list)
    index_conflicts: list[str] = field(default_factory=list)
    #: conflicts written all the same (``force``)
    forced: list[str] = field(default_factory=list)

    def summary(self, ref: str) -> str:
        """The one line that says what came back from ``ref``."""
        count = len(self.written) + len(self.deleted)
        return (
            f"restored {count} path{'s' if count != 1 else ''} from {ref}"
            + (f" ({self.already} already as rescued)" if self.already else "")
            + (f"; {self.staged} staged versions restored" if self.staged else "")
            + (f"; {len(self.forced)} overwritten after rescuing them" if self.forced else "")
        )


@dataclass
class RestoredRepository:
    """What a restore of a kept nested repository did (``conflict``: nothing)."""

    directory: str
    conflict: bool = False
    refs: int = 0
    head: str = ""
    written: int = 0
    on_disk: int = 0


def _tree_states(ws: Workspace, treeish: str | None, paths: list[str]) -> dict[str, State]:
    if treeish is None or not paths:
        return dict.fromkeys(paths)
    return tree_entries(ws.repo, treeish, paths)


def _index_states(ws: Workspace, paths: list[str]) -> dict[str, State]:
    out: dict[str, State] = dict.fromkeys(paths)
    wanted = set(paths)
    for item in index_entries_of(ws.repo.run, paths):
        if item.path in wanted and item.stage == 0:
            out[item.path] = item.entry
    return out


def _same(ws: Workspace, p: str, disk: State | str, want: State, filemode: bool) -> bool:
    if isinstance(disk, str) or disk is None or want is None:
        return disk == want
    if (disk.mode if filemode else disk.mode[:3]) != (want.mode if filemode else want.mode[:3]):
        return False
    if disk.oid == want.oid:
        return True
    # The raw bytes differ from the blob: maybe a clean filter or eol conversion.
    return filtered_oids(ws.repo, [p]).get(p) == want.oid


def _select(ws: Workspace, r: Rescue, user_paths: list[str]) -> list[str]:
    if not user_paths:
        return list(r.paths)
    chosen: list[str] = []
    for raw in user_paths:
        rel = ws.repo_relative(raw)
        hits = [p for p in r.paths if not rel or p == rel or p.startswith(rel.rstrip("/") + "/")]
        if not hits:
            raise UsageError(f"{raw!r} is not among the paths of {r.ref}")
        chosen += [p for p in hits if p not in chosen]
    return chosen


def restore_paths(
    ws: Workspace,
    r: Rescue,
    user_paths: list[str],
    *,
    index: bool,
    force: Collection[str] = (),
) -> Restored:
    """Put the rescued versions of ``user_paths`` (default: all) back where the disk
    still holds HEAD's; with ``index``, the staged versions too where the index does.

    ``force``: repository-relative paths written even over newer content (a file, a
    symlink or nothing on disk; never a directory), which the caller must have rescued
    first."""
    if r.repository or r.kept_commit:
        raise UsageError(
            f"{r.ref} keeps a commit, not paths; restore it with: {restore_commands(r)[0]}"
        )
    paths = _select(ws, r, user_paths)
    filemode = ws.repo.filemode()
    rescued = _tree_states(ws, r.commit, paths)
    head = _tree_states(ws, "HEAD" if ws.repo.head() else None, paths)
    disk = disk_states(ws.repo, paths, filemode)
    done = Restored()
    for p in paths:
        if _same(ws, p, disk[p], rescued[p], filemode):
            done.already += 1
        elif (
            _same(ws, p, disk[p], head[p], filemode)
            # Nothing there now (an `rm` after the rescue): writing it back loses nothing.
            or disk[p] is None
            or (p in force and not isinstance(disk[p], str))
        ):
            (done.written if rescued[p] is not None else done.deleted).append(p)
            if p in force and not _same(ws, p, disk[p], head[p], filemode):
                done.forced.append(p)
        else:
            done.conflicts.append(p)
    index_updates: list[bytes] = []
    index_commit = r.one("Index")
    if index and index_commit:
        staged = _tree_states(ws, index_commit, paths)
        current = _index_states(ws, paths)
        for p in paths:
            if current[p] == staged[p]:
                continue
            if current[p] == head[p] or p in force:
                index_updates.append(index_info_line(p, staged[p], ws.repo.object_format))
            else:
                done.index_conflicts.append(p)
    if r.one("Bytes") == RAW_BYTES:
        write_raw(ws, {p: rescued[p] for p in done.written}, progress=True)
    else:  # rescues of older guards hold what git's clean filters made of the files
        _checkout(ws, {p: rescued[p] for p in done.written})
    for p in done.deleted:
        os.unlink(ws.repo.worktree / p)
    if index_updates:
        ws.repo.run(
            [*NO_HOOKS, "update-index", "-z", "--index-info"],
            stdin=b"".join(index_updates),
            readonly=False,
        )
    done.staged = len(index_updates)
    return done


def write_raw(
    ws: Workspace, entries: dict[str, State], top: Path | None = None, *, progress: bool = False
) -> None:
    """Write rescued files byte for byte: no smudge filter, no eol conversion (the rescue
    holds the bytes that were on disk). Each file is written aside and renamed into place.
    Blobs are read one at a time (never all in memory); every one is checked to exist
    before the first file is written. ``progress``: shown on a terminal unless quiet."""
    blobs = {p: s for p, s in entries.items() if s is not None and s.mode not in (GITLINK, TREE)}
    absent = set(missing_objects(ws.repo.worktree, [s.oid for s in blobs.values()]))
    missing = [p for p, s in blobs.items() if s.oid in absent]
    if missing:
        raise GuardsError(
            f"cannot restore {output.show_path(missing[0])}: its rescued blob does not read "
            f"back (run git fsck)"
        )
    top = ws.repo.worktree if top is None else top
    shown = output.Progress(
        "Restoring",
        len(entries),
        quiet=not progress or ws.config.quiet,
        delay=ws.config.progress_delay,
    )
    by_oid: dict[str, list[str]] = {}
    for p, state in entries.items():
        if state is None:
            shown.tick()
        elif state.mode == GITLINK:
            (top / p).mkdir(parents=True, exist_ok=True)  # a submodule's directory, as git
            shown.tick()
        elif state.mode != TREE:
            by_oid.setdefault(state.oid, []).append(p)
    for oid, data in read_back(ws.repo.worktree, by_oid, ws.repo.object_format):
        if data is None:
            raise GuardsError(
                f"cannot restore {output.show_path(by_oid[oid][0])}: its rescued blob does "
                f"not read back (run git fsck)"
            )
        for p in by_oid[oid]:
            state = entries[p]
            assert state is not None
            _write_file(top / p, state, data)
            shown.tick()
    shown.done()


def _write_file(target: Path, state: Entry, data: bytes) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    aside = target.parent / f".{target.name}.guards-restore-{os.getpid()}"
    if state.mode == SYMLINK:
        os.symlink(os.fsdecode(data), aside)
    else:
        mode = 0o777 if state.mode == EXECUTABLE else 0o666  # the umask applies
        fd = os.open(aside, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
        except BaseException:
            os.unlink(aside)
            raise
    os.replace(aside, target)


def restore_repository(ws: Workspace, r: Rescue) -> RestoredRepository:
    """A kept nested repository, anew where it was: its refs and HEAD, its index as
    rescued, and the rescued files that are missing on disk (newer files stay)."""
    from guards.protect.rescue.nested import own_environment

    assert r.repository is not None
    target = ws.repo.worktree / r.repository
    if holds_repository(target):
        return RestoredRepository(r.repository, conflict=True)
    refs = [v.rsplit(" ", 1) for v in r.trailers.get("Repository-Ref", [])]
    head = head_of(r.one("Repository-Head"))
    scratch = "refs/guards/restoring"
    target.mkdir(parents=True, exist_ok=True)
    with own_environment():

        def run(*args: str, stdin: bytes | None = None) -> None:
            git.run(list(args), cwd=target, stdin=stdin, readonly=False)

        run("init", "-q")
        source = os.fspath(ws.repo.common_dir)
        run("fetch", "-q", "--no-tags", "--no-write-fetch-head", source, f"+{r.ref}:{scratch}")
        objects = r.one("Repository-Objects")
        if objects:  # tag objects, kept as blobs of their raw content
            for tag in _all_entries(ws, objects):
                if tag.startswith("tag/"):
                    raw = ws.repo.run(["cat-file", "blob", f"{objects}:{tag}"]).stdout
                    run("hash-object", "-t", "tag", "-w", "--stdin", stdin=raw)
        payload = b"".join(
            b"create %s\0%s\0" % (os.fsencode(unquote_path(name)), oid.encode())
            for name, oid in refs
            if name != "refs/stash"  # the stash is its reflog: stored entry by entry
        )
        run("update-ref", "-z", "--stdin", stdin=payload)
        for entry in reversed(r.trailers.get("Repository-Stash", [])):
            subject = ws.repo.run(["log", "-1", "--format=%s", entry]).stdout.decode().strip()
            run("stash", "store", "-q", "-m", subject, entry)
        if head.startswith("refs/"):
            run("symbolic-ref", "HEAD", head)
        elif head != "unborn":
            run("update-ref", "--no-deref", "HEAD", head)
        index = r.one("Index")
        if index or head != "unborn":
            run("read-tree", index or "HEAD")
        run("update-ref", "-d", scratch)
    files = _all_entries(ws, r.commit)
    missing = {p: e for p, e in files.items() if not os.path.lexists(target / p)}
    write_raw(ws, missing, target)
    return RestoredRepository(
        r.repository,
        refs=len(refs),
        head=head,
        written=len(missing),
        on_disk=len(files) - len(missing),
    )


def _all_entries(ws: Workspace, treeish: str) -> dict[str, State]:
    """Every file entry of ``treeish``."""
    res = ws.repo.run(["ls-tree", "-r", "-z", "--full-tree", treeish])
    return dict(tree_listing(res.stdout))


def _checkout(ws: Workspace, entries: dict[str, State]) -> None:
    """Write rescued blobs to the work tree through a private index (filters and modes apply)."""
    if not entries:
        return
    tmp = Path(tempfile.mkdtemp(prefix="guards-restore-"))
    try:
        env = {"GIT_INDEX_FILE": str(tmp / "index")}
        fmt = ws.repo.object_format
        info = b"".join(index_info_line(p, s, fmt) for p, s in entries.items())
        git.run(["update-index", "-z", "--index-info"], cwd=ws.repo.worktree, stdin=info,
                extra_env=env, readonly=False)  # fmt: skip
        git.run(
            ["checkout-index", "-f", "-z", "--stdin"],
            cwd=ws.repo.worktree,
            stdin=git.nul_join(entries),
            extra_env=env,
            readonly=False,
        )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
