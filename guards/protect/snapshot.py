"""Non-invasive snapshots: uncommitted work into commits, touching nothing.

The real index is never written (not even its stat cache): it is copied, keeping its
mtime so that git trusts its stat data and rehashes nothing it need not, and every
write goes to that private copy through ``GIT_INDEX_FILE``. Only the listed paths are
hashed (``update-index --stdin``: explicit paths, no pathspec matching, which costs
O(index x pathspecs) in ``git add``). The working tree, HEAD, the stash and every ref
stay as they were; the objects written are new, unreferenced blobs, trees and commits.

One :class:`Capture` does the expensive part once; trees for any subset of its paths
(one per owner, or one without secrets for a push) are then cheap copies of an index
whose cache-tree is valid everywhere else.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import tempfile
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from guards.errors import RefusedError
from guards.git import process as git
from guards.git.entries import (
    Change,
    Entry,
    State,
    index_entries,
    index_info_line,
    parse_raw_diff,
    tree_listing,
)
from guards.git.files import holds_repository, is_regular_file, special_mode_kind, walk_files
from guards.git.objects import (
    EXECUTABLE,
    GITLINK,
    REGULAR,
    SYMLINK,
    blob_oid,
    empty_tree,
    file_blob_oid,
)
from guards.git.quarantine import UNPACK_LIMIT, Quarantine, read_back, write_blobs
from guards.git.repo import Repo

#: git config for every command that writes a private index: a full index file of our
#: own (no shared index written into the git dir), no fsmonitor round trips.
_PRIVATE = ["-c", "core.splitIndex=false", "-c", "core.fsmonitor=false"]
#: Diffs that involve a submodule read .gitmodules for its ignore setting, and die on any
#: value git refuses there (``update = !cmd``: t7406); none is needed to list changes.
_NO_SUBMODULE_CONFIG = ["--ignore-submodules=none"]
#: Commits guards writes never prompt for or attempt a signature.
_NO_SIGN = ["-c", "commit.gpgsign=false"]


class SnapshotError(RefusedError):
    """A snapshot could not be taken or verified; nothing points at it."""


def real_index_path(repo: Repo) -> Path:
    """The index this work tree uses (its own in a linked worktree; honours GIT_INDEX_FILE)."""
    return Path(repo.index_file_text())


def _locate(repo: Repo) -> tuple[Path, str | None, str]:
    """The real index's path, HEAD and HEAD's tree (the empty tree when unborn): one call."""
    res = repo.run(
        ["rev-parse", "--path-format=absolute", "--git-path", "index", "HEAD", "HEAD^{tree}"],
        check=False,
    )
    lines = git.strip_newline(res.stdout).split(b"\n")
    if res.returncode == 0 and len(lines) >= 3:
        # The two ids come last; the index path before them may itself hold a newline.
        index = b"\n".join(lines[:-2])
        return Path(os.fsdecode(index)), lines[-2].decode(), lines[-1].decode()
    head = repo.head()
    if head is not None:
        raise SnapshotError(f"snapshot failed: cannot read HEAD's tree in {repo.worktree}")
    return real_index_path(repo), None, empty_tree(repo.object_format)


def few_objects(paths: list[str]) -> bool:
    """Whether a capture of these files writes fewer objects than git's unpack limit:
    a blob each, a tree per directory on their way for each of the few trees a rescue
    writes (the work tree's, the index's, one per owner), and its commits. Those go
    straight into the store, loose, as an incoming push that small would land; the
    quarantine, which packs the objects of bigger captures, would cost five git calls
    more than they do."""
    directories = {""}
    for p in paths:
        parts = p.split("/")[:-1]
        directories.update("/".join(parts[: i + 1]) for i in range(len(parts)))
    return len(paths) + 4 * len(directories) + 8 < UNPACK_LIMIT


#: What :func:`disk_states` says for a directory (a nested repository) ...
DIRECTORY = "directory"
#: ... and for a FIFO, socket or device: no content to keep, never opened.
SPECIAL = "special"


#: path -> (mode, size, mtime_ns, inode) of the ``lstat`` a rescue took of it already:
#: one per path per look (100,000 paths: 0.1 s each time), not one per step.
Looks = dict[str, tuple[int, int, int, int]]


def look(base: str, path: str, looks: Looks | None) -> tuple[int, int, int, int] | None:
    """``path``'s entry in ``looks``, else its ``lstat`` now (kept there); None when it
    cannot be looked at (absent, unreadable)."""
    if looks is not None and path in looks:
        return looks[path]
    try:
        st = os.lstat(base + path)
    except OSError:
        return None
    found = (st.st_mode, st.st_size, st.st_mtime_ns, st.st_ino)
    if looks is not None:
        looks[path] = found
    return found


def expand_paths(
    top: Path, paths: Iterable[str], looks: Looks | None = None
) -> tuple[list[str], list[str]]:
    """Normalize the listed paths; a plain directory stands for every file under it.

    Returns (paths, repositories): directories holding a ``.git`` are nested
    repositories or submodules, kept as one path each for the caller to judge.
    ``looks``: what was seen of the paths already (see :func:`look`).
    """
    seen: set[str] = set()
    out: list[str] = []
    repos: list[str] = []

    def add(p: str) -> None:
        if p not in seen:
            seen.add(p)
            out.append(p)

    base = os.fspath(top) + os.sep
    for raw in paths:
        p = raw.rstrip("/")
        if not p:
            continue
        now = look(base, p, looks)
        if now is None:
            add(p)  # deleted (or unreadable: the snapshot will say so)
            continue
        if not stat.S_ISDIR(now[0]):
            add(p)
            continue
        if holds_repository(top / p):
            repos.append(p)
            add(p)
            continue
        for found, repository in walk_files(top, p, enter_repositories=False):
            if repository:
                repos.append(found)
            add(found)
    return out, repos


class Capture:
    """The listed paths hashed once into a private index, ready to be cut into trees.

    Use as a context manager: the private index files live in a temporary directory.
    """

    def __init__(self, repo: Repo, paths: list[str]) -> None:
        self.repo = repo
        self.paths = paths
        self.head: str | None = None
        self.head_tree = ""
        #: the tree of HEAD plus every listed path in its working-tree state
        self.all_tree = ""
        #: listed paths whose working-tree state differs from HEAD
        self.worktree_changes: dict[str, Change] = {}
        #: listed paths whose (stage 0) index state differs from HEAD; unmerged ones too
        self.index_changes: dict[str, Change] = {}
        #: unmerged listed paths -> [(stage, entry)]
        self.stages: dict[str, list[tuple[int, Entry]]] = {}
        self.skip_worktree: set[str] = set()
        #: listed FIFOs, sockets and devices: never opened nor hashed (their index entry
        #: stays)
        self.special: list[str] = []
        #: paths whose staged blob was already missing from the object store (HEAD's
        #: taken)
        self.missing_staged: list[str] = []
        self._unchanged_states: dict[str, State] = {}
        self._tmp: Path | None = None
        self._base: Path | None = None
        #: where git writes the capture's objects until :meth:`migrate` moves them in
        #: packed
        self.quarantine: Quarantine | None = None
        self._counter = 0
        self._rewritten = False

    @property
    def fmt(self) -> str:
        return self.repo.object_format

    def __enter__(self) -> Capture:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None

    # -- the expensive part, once --------------------------------------------------------

    @classmethod
    def take(
        cls,
        repo: Repo,
        paths: list[str],
        on_hashed: Callable[[Capture], object] | None = None,
        before_hashing: Callable[[], object] | None = None,
        looks: Looks | None = None,
    ) -> Capture:
        """Hash ``paths`` into a private index; ``on_hashed`` runs once their blobs exist.
        ``before_hashing`` runs (waits) right before git hashes the files: blobs already
        in the store by then are not written again; what it returns, if a dict, is what
        :func:`disk_states` read and stored of them (``store=True``): those files are not
        hashed again. ``looks``: see :func:`look`."""
        cap = cls(repo=repo, paths=list(dict.fromkeys(paths)))
        try:
            cap._take(on_hashed, before_hashing, looks)
        except BaseException:
            cap.close()
            raise
        return cap

    def _take(
        self,
        on_hashed: Callable[[Capture], object] | None,
        before_hashing: Callable[[], object] | None = None,
        looks: Looks | None = None,
    ) -> None:
        repo = self.repo
        self._tmp = Path(tempfile.mkdtemp(prefix="guards-snapshot-"))
        if not few_objects(self.paths):
            try:
                self.quarantine = Quarantine(repo.worktree, self._tmp / "objects")
            except git.GitError as e:
                raise SnapshotError(f"snapshot failed: {e}") from e
        real, self.head, self.head_tree = _locate(repo)
        listed = set(self.paths)
        # What the real index holds vs HEAD (read-only: --cached never refreshes).
        args = ["diff-index", "--cached", "-z", "--no-renames", *_NO_SUBMODULE_CONFIG]
        res = self._git([*args, self.head_tree])
        real_changes = parse_raw_diff(res.stdout)
        # A staged blob that is already missing from the object store holds nothing that
        # could be lost (nor can any tree hold it): the snapshot takes HEAD's version.
        self.missing_staged = self._missing_blobs(real_changes)
        for p in self.missing_staged:
            real_changes[p] = Change(real_changes[p].old, real_changes[p].old, "M")
        self.index_changes = {
            p: c for p, c in real_changes.items() if p in listed and p not in self.missing_staged
        }
        unmerged = [p for p, c in self.index_changes.items() if c.status == "U"]
        if unmerged:
            self.stages = self._read_stages(unmerged)

        base = self._tmp / "index"
        if real.exists():
            # copy2 keeps the mtime: git then trusts the stat data of every entry.
            shutil.copy2(real, base)
        self._base = base
        # Everything staged that is not listed goes back to HEAD's state, so that the
        # trees hold HEAD plus the listed paths and nothing else.
        reverts: list[bytes] = []
        for p, c in real_changes.items():
            if p in listed:
                continue
            if c.status == "U":
                # Removing every stage first makes an unmerged path a plain entry again.
                reverts.append(index_info_line(p, None, self.fmt))
            reverts.append(index_info_line(p, c.old, self.fmt))
        if reverts:
            self._private(base, ["update-index", "-z", "--index-info"], b"".join(reverts))
        self._unhide(base, listed)
        # FIFOs, sockets and devices are never opened (git refuses them anyway): their
        # index entry stays as it is.
        top = os.fspath(repo.worktree) + os.sep
        self.special = [
            p
            for p in self.paths
            if (seen := look(top, p, looks)) is not None and special_mode_kind(seen[0])
        ]
        special = set(self.special)
        hashed = [p for p in self.paths if p not in special]
        stored = before_hashing() if before_hashing is not None else None
        read, by_git = self._read_already(hashed, stored if isinstance(stored, dict) else {})
        if by_git:
            self._private(
                base,
                [
                    "update-index",
                    "--add",
                    "--remove",
                    "--replace",
                    "--ignore-skip-worktree-entries",
                    "-z",
                    "--stdin",
                ],
                git.nul_join(by_git),
            )
        if read:
            # After git's own pass, which removed what gave way (a file where a directory
            # was, or the reverse); these entries replace whatever stands in their way.
            self._private(base, ["update-index", "-z", "--index-info"], b"".join(read))
        if on_hashed is not None:
            on_hashed(self)
        stray = self._write_all_tree()
        if stray and self.rewrite_trees():
            stray = self._write_all_tree()
        if stray:
            raise SnapshotError(
                f"snapshot holds unlisted path {stray[0]!r} (the index changed meanwhile?); "
                f"retry the command"
            )
        same = [
            p for p in self.paths if p not in self.worktree_changes and p not in self.index_changes
        ]
        if same:
            self._unchanged_states = self._head_entries(same)
        top = os.fspath(repo.worktree) + os.sep
        missing_but_kept = [
            p
            for p in self.paths
            if not os.path.lexists(top + p)
            and (p not in self.worktree_changes or self.worktree_changes[p].new is not None)
        ]
        if missing_but_kept:
            self.skip_worktree = self._skip_worktree(missing_but_kept)

    def _read_already(
        self, paths: list[str], stored: dict[str, object]
    ) -> tuple[list[bytes], list[str]]:
        """The index entries of the regular files whose raw bytes were read and stored
        whole already (``stored``: path -> what :func:`disk_states` found), and the
        paths left for git to hash: anything else (gone, a directory, a symlink, whose
        blob is not stored there, a file that changed while read). git would only hash
        those files again, and a rescue keeps their raw bytes in the end anyway (see
        rescue.verify). Only where git takes the mode from the disk as that read did:
        with ``core.fileMode`` or ``core.symlinks`` off, git may keep the index's, and
        every path goes to git."""
        read: list[bytes] = []
        by_git: list[str] = []
        if stored and not (self.repo.filemode() and self.repo.symlinks()):
            stored = {}
        for p in paths:
            state = stored.get(p)
            if isinstance(state, Entry) and state.oid and state.mode in (REGULAR, EXECUTABLE):
                read.append(index_info_line(p, state, self.fmt))
            else:
                by_git.append(p)
        return read, by_git

    def _unhide(self, index: Path, listed: set[str]) -> None:
        """In the private index, clear the assume-unchanged and skip-worktree flags of
        listed files that are on disk: with them, ``update-index`` never reads the file,
        and the snapshot would hold the entry instead of the work at risk."""
        res = self._git([*_PRIVATE, "ls-files", "-v", "-z"], index=index)
        valid: list[str] = []
        skip: list[str] = []
        top = self.repo.worktree
        for rec in git.zsplit(res.stdout):
            tag = rec[:1]
            if tag == b"H" or not tag:
                continue
            path = os.fsdecode(rec[2:])
            if path not in listed or not os.path.lexists(top / path):
                continue
            if tag.islower():
                valid.append(path)
            if tag in (b"S", b"s"):
                skip.append(path)
        for flag, paths in (("--no-assume-unchanged", valid), ("--no-skip-worktree", skip)):
            if paths:
                self._private(index, ["update-index", flag, "-z", "--stdin"], git.nul_join(paths))

    def _write_all_tree(self) -> list[str]:
        """Write :attr:`all_tree` and read its changes; returns unlisted paths it changes."""
        assert self._base is not None
        self.all_tree = self._write_tree(self._base)
        res = self._git(
            ["diff-tree", "-r", "-z", "--no-renames", *_NO_SUBMODULE_CONFIG, self.head_tree,
             self.all_tree],
        )  # fmt: skip
        self.worktree_changes = parse_raw_diff(res.stdout)
        listed = set(self.paths)
        return [p for p in self.worktree_changes if p not in listed and not displaced(p, listed)]

    def rewrite_trees(self) -> bool:
        """Write the trees again from the private index's entries alone, without the
        cached trees copied from the real index: a cached tree can be stale (after
        ``git replace -d``, it may name a tree whose true content is not the index's),
        and ``write-tree`` trusts it. Returns whether the capture changed."""
        assert self._tmp is not None and self._base is not None
        if self._rewritten:
            return False
        self._rewritten = True
        res = self._git([*_PRIVATE, "ls-files", "-s", "-z"], index=self._base)
        fresh = self._tmp / "rewritten"
        self._private(fresh, ["update-index", "-z", "--index-info"], res.stdout)
        before = self.all_tree
        self._base = fresh
        stray = self._write_all_tree()
        if stray:
            raise SnapshotError(
                f"snapshot holds unlisted path {stray[0]!r} (the index changed meanwhile?); "
                f"retry the command"
            )
        return self.all_tree != before

    def store_raw(self, paths: list[str]) -> dict[str, str]:
        """Store the raw bytes of these regular files (git stored them through its clean
        filters or eol conversion, which may drop bytes) in place of the filtered blobs;
        returns the raw blobs' ids as git wrote them, for the caller to verify."""
        assert self._base is not None
        oids = raw_blobs(self.repo, paths, self.env)
        lines = []
        for p in paths:
            state = self.worktree_state(p)
            assert state is not None
            lines.append(index_info_line(p, Entry(state.mode, oids[p]), self.fmt))
        self._private(self._base, ["update-index", "-z", "--index-info"], b"".join(lines))
        stray = self._write_all_tree()
        if stray:
            raise SnapshotError(
                f"snapshot holds unlisted path {stray[0]!r} (the index changed meanwhile?); "
                f"retry the command"
            )
        return oids

    def _read_stages(self, paths: list[str]) -> dict[str, list[tuple[int, Entry]]]:
        res = self._git(["ls-files", "-u", "-s", "-z"])
        wanted = set(paths)
        out: dict[str, list[tuple[int, Entry]]] = {}
        for item in index_entries(res.stdout):
            if item.path in wanted:
                out.setdefault(item.path, []).append((item.stage, item.entry))
        return out

    def _skip_worktree(self, paths: list[str]) -> set[str]:
        res = self._git(["--literal-pathspecs", "ls-files", "-z", "-t", "--", *paths])
        out = set()
        for rec in git.zsplit(res.stdout):
            tag, _, raw = rec.partition(b" ")
            if tag == b"S":
                out.add(os.fsdecode(raw))
        return out

    # -- cheap cuts ----------------------------------------------------------------------

    def head_state(self, path: str) -> State:
        """HEAD's entry for a listed path (known whenever the path changed at all)."""
        for changes in (self.worktree_changes, self.index_changes):
            if path in changes:
                return changes[path].old
        return self.worktree_state(path)

    def worktree_state(self, path: str) -> State:
        if path in self.worktree_changes:
            return self.worktree_changes[path].new
        for changes in (self.index_changes,):
            if path in changes:
                return changes[path].old
        return self._unchanged(path)

    def index_state(self, path: str) -> State:
        """The real index's stage-0 entry; HEAD's for an unmerged path (stages kept apart)."""
        change = self.index_changes.get(path)
        if change is None:
            return self.head_state(path)
        return change.old if change.status == "U" else change.new

    def _unchanged(self, path: str) -> State:
        # Neither the worktree nor the index differ from HEAD for this path.
        if path not in self._unchanged_states:
            self._unchanged_states.update(self._head_entries([path]))
        return self._unchanged_states.get(path)

    def _head_entries(self, paths: list[str]) -> dict[str, State]:
        """HEAD's entries for ``paths`` (None when absent)."""
        try:
            return tree_entries(self.repo, self.head_tree, paths)
        except git.GitError as e:
            raise SnapshotError(f"snapshot failed: {e}") from e

    def tree(self, paths: Iterable[str], kind: str = "worktree") -> str:
        """HEAD's tree with ``paths`` in their worktree (or index) state, nothing else."""
        wanted = set(paths)
        if kind == "index" and not any(p in self.index_changes for p in wanted):
            return self.head_tree  # nothing of theirs is staged: the index state is HEAD's
        lines = []
        for p in self.paths:
            if p not in self.worktree_changes and p not in self.index_changes:
                continue  # HEAD's state everywhere
            if p in wanted:
                if kind == "index":
                    target = self.index_state(p)
                    current = self.worktree_state(p)
                    if target != current:
                        lines.append(index_info_line(p, target, self.fmt))
            elif p in self.worktree_changes:
                lines.append(index_info_line(p, self.worktree_changes[p].old, self.fmt))
        if not lines:
            return self.all_tree
        assert self._tmp is not None and self._base is not None
        self._counter += 1
        cut = self._tmp / f"cut{self._counter}"
        shutil.copy2(self._base, cut)
        self._private(cut, ["update-index", "-z", "--index-info"], b"".join(lines))
        return self._write_tree(cut)

    def stages_tree(self, paths: Iterable[str]) -> str | None:
        """A tree holding ``<stage>/<path>`` for the unmerged paths among ``paths``."""
        lines = [
            index_info_line(f"{stage}/{p}", entry, self.fmt)
            for p in paths
            for stage, entry in self.stages.get(p, [])
        ]
        if not lines:
            return None
        assert self._tmp is not None
        self._counter += 1
        idx = self._tmp / f"stages{self._counter}"
        self._private(idx, ["update-index", "-z", "--index-info"], b"".join(lines))
        return self._write_tree(idx)

    def _missing_blobs(self, changes: dict[str, Change]) -> list[str]:
        """Paths whose staged blob does not exist (an index pointing at lost objects)."""
        staged = {
            p: c.new.oid
            for p, c in changes.items()
            if c.new is not None and c.new.mode != GITLINK and c.status != "U"
        }
        if not staged:
            return []
        query = "".join(f"{oid}\n" for oid in set(staged.values())).encode()
        res = self._git(["cat-file", "--batch-check=%(objectname)"], stdin=query)
        lines = res.stdout.splitlines()
        missing = {line.split()[0].decode() for line in lines if line.endswith(b" missing")}
        return sorted(p for p, oid in staged.items() if oid in missing)

    # -- helpers -------------------------------------------------------------------------

    @property
    def env(self) -> dict[str, str]:
        """What every git call that reads the capture's objects needs."""
        return self.quarantine.env if self.quarantine is not None else {}

    def migrate(self) -> None:
        """Move the capture's objects into the repository (packed), each checked there:
        the last step before a ref may name them."""
        if self.quarantine is None:
            return
        try:
            self.quarantine.migrate()
        except git.GitError as e:
            raise SnapshotError(f"snapshot failed: {e}") from e

    def _git(
        self, args: list[str], *, stdin: bytes | None = None, index: Path | None = None
    ) -> git.Result:
        return _run(self.repo, args, stdin=stdin, index=index, env=self.env)

    def _private(self, index: Path, args: list[str], stdin: bytes) -> git.Result:
        return self._git([*_PRIVATE, *args], stdin=stdin, index=index)

    def _write_tree(self, index: Path) -> str:
        # --missing-ok: write-tree would look up the object of every entry in the index
        # (100,000 files: most of its time, and all of it beyond the directories that
        # changed). Nothing is lost without it: what is not listed is HEAD's (or the
        # real index's, equal to HEAD), and every blob of a listed path is read back and
        # rehashed before any ref names the rescue (_check_blobs in rescue.verify).
        args = [*_PRIVATE, "write-tree", "--missing-ok"]
        return self._git(args, index=index).stdout.decode().strip()


def tree_entries(repo: Repo, treeish: str, paths: list[str]) -> dict[str, State]:
    """``treeish``'s entries for ``paths`` (None when absent), read in batches."""
    out: dict[str, State] = dict.fromkeys(paths)
    wanted = set(paths)
    for start in range(0, len(paths), 500):
        chunk = paths[start : start + 500]
        args = ["--literal-pathspecs", "ls-tree", "-r", "-z", "--full-tree", treeish, "--"]
        res = repo.run([*args, *chunk])
        for p, entry in tree_listing(res.stdout):
            if p in wanted:
                out[p] = entry
    return out


def displaced(path: str, listed: set[str]) -> bool:
    """``path`` gave way to a listed path: a file became a directory holding a listed path,
    or a directory became a listed file. Its change belongs to the listed path's state."""
    prefix = path + "/"
    if any(q.startswith(prefix) for q in listed):
        return True
    parts = path.split("/")
    return any("/".join(parts[:i]) in listed for i in range(1, len(parts)))


def _run(
    repo: Repo,
    args: list[str],
    *,
    stdin: bytes | None = None,
    index: Path | None = None,
    env: dict[str, str] | None = None,
) -> git.Result:
    """git for a snapshot: a failure is a failed snapshot, said in one line."""
    extra = dict(env or {})
    if index is not None:
        extra["GIT_INDEX_FILE"] = str(index)
    try:
        return git.run(
            args,
            cwd=repo.worktree,
            stdin=stdin,
            extra_env=extra or None,
            readonly=index is None,
        )
    except git.GitError as e:
        raise SnapshotError(f"snapshot failed: {e}") from e


def commit_tree(
    repo: Repo,
    tree: str,
    parents: list[str],
    message: str,
    identity: dict[str, str],
    env: dict[str, str] | None = None,
) -> str:
    """A commit without hooks, prompts or signatures, under a fixed identity if need be."""
    args = [*_NO_SIGN, "commit-tree", "--no-gpg-sign", tree]
    for p in parents:
        args += ["-p", p]
    args += ["-F", "-"]
    try:
        res = git.run(
            args,
            cwd=repo.worktree,
            stdin=message.encode("utf-8", "surrogateescape"),
            extra_env={**identity, **(env or {})},
        )
    except git.GitError as e:
        raise SnapshotError(f"snapshot failed: {e}") from e
    return res.stdout.decode().strip()


# -- verification -------------------------------------------------------------------------


def read_tree_changes(
    repo: Repo, base_tree: str, tree: str, env: dict[str, str] | None = None
) -> dict[str, Change]:
    res = _run(
        repo,
        ["diff-tree", "-r", "-z", "--no-renames", *_NO_SUBMODULE_CONFIG, base_tree, tree],
        env=env,
    )
    return parse_raw_diff(res.stdout)


def disk_states(
    repo: Repo,
    paths: list[str],
    filemode: bool,
    *,
    store: bool = False,
    on_file: Callable[[], object] | None = None,
) -> dict[str, State | str]:
    """What each path holds on disk now, as git would hash it.

    A directory comes back as :data:`DIRECTORY` (a nested repository), a FIFO, socket or
    device as :data:`SPECIAL` (never opened). ``store``: the regular files' raw bytes are
    written to the repository's store too, packed, as they are read (each read once).
    """
    base = os.fspath(repo.worktree) + os.sep
    fmt = repo.object_format
    out: dict[str, State | str] = {}
    regular: list[tuple[str, str, int]] = []
    for p in paths:
        absolute = base + p
        try:
            st = os.lstat(absolute)
        except (FileNotFoundError, NotADirectoryError):
            st = None
        if st is None:
            out[p] = None
        elif stat.S_ISLNK(st.st_mode):
            out[p] = Entry(SYMLINK, blob_oid(os.fsencode(os.readlink(absolute)), fmt))
        elif stat.S_ISDIR(st.st_mode):
            out[p] = DIRECTORY
        elif not stat.S_ISREG(st.st_mode):
            out[p] = SPECIAL
        else:
            mode = "100755" if filemode and st.st_mode & 0o100 else "100644"
            if store:
                regular.append((p, mode, st.st_size))
                out[p] = None  # filled in below, in order
                continue  # counted as it is read
            out[p] = Entry(mode, file_blob_oid(absolute, st.st_size, fmt))
        if on_file is not None:
            on_file()
    if regular:
        try:
            oids = write_blobs(
                repo.worktree, [(base + p, size) for p, _, size in regular], fmt, on_file
            )
        except git.GitError as e:
            raise SnapshotError(f"snapshot failed: {e}") from e
        for p, mode, _ in regular:
            out[p] = Entry(mode, oids[base + p])
    return out


def filtered_oids(repo: Repo, paths: list[str]) -> dict[str, str]:
    """Blob ids as ``git add`` would store them (clean filters, eol conversion), for the
    regular files among ``paths`` (git would follow a symlink, and opening a FIFO blocks).
    """
    out: dict[str, str] = {}
    top = os.fspath(repo.worktree) + os.sep
    paths = [p for p in paths if is_regular_file(top + p)]
    plain = [p for p in paths if "\n" not in p]
    if plain:
        res = _run(
            repo,
            ["hash-object", "--stdin-paths"],
            stdin=b"".join(os.fsencode(p) + b"\n" for p in plain),
        )
        out.update(zip(plain, res.stdout.decode().split(), strict=True))
    for p in paths:
        if "\n" in p:
            res = _run(repo, ["hash-object", "--path", p, "--", p])
            out[p] = res.stdout.decode().strip()
    return out


def raw_blobs(repo: Repo, paths: list[str], env: dict[str, str] | None = None) -> dict[str, str]:
    """Write each file's bytes as they are on disk (no clean filter, no eol conversion)
    as a blob; its id per path."""
    out: dict[str, str] = {}
    plain = [p for p in paths if "\n" not in p]
    if plain:
        res = _run(
            repo,
            ["hash-object", "-w", "--no-filters", "--stdin-paths"],
            stdin=b"".join(os.fsencode(p) + b"\n" for p in plain),
            env=env,
        )
        out.update(zip(plain, res.stdout.decode().split(), strict=True))
    for p in paths:
        if "\n" in p:
            res = _run(repo, ["hash-object", "-w", "--no-filters", "--", p], env=env)
            out[p] = res.stdout.decode().strip()
    return out


def check_objects(
    repo: Repo,
    oids: Iterable[str],
    env: dict[str, str] | None = None,
    on_read: Callable[[], object] | None = None,
) -> list[str]:
    """Read every blob back and rehash it, one at a time: the ids whose content is
    missing or corrupt. ``on_read`` runs after each."""
    bad = []
    for oid, content in read_back(repo.worktree, oids, repo.object_format, env):
        if content is None:
            bad.append(oid)
        if on_read is not None:
            on_read()
    return bad


@contextlib.contextmanager
def capture(repo: Repo, paths: list[str]) -> Iterator[Capture]:
    cap = Capture.take(repo, paths)
    try:
        yield cap
    finally:
        cap.close()
