"""Throw-away repositories full of dirty state, and an oracle of what a command destroyed.

``dirty_repo`` builds docs/blast-radius.md's list (unstaged, staged, staged-then-modified,
staged-then-reverted, added, added-then-modified, intent-to-add, deleted, ``git rm``'d,
exec-bit, symlink, names with spaces/newlines/quotes/unicode/leading dash, untracked
files and directories, ignored files and directories, collisions with a target branch
``other``). Every file's content is unique, so a version is found again wherever it went.

``observe`` compares before and after: a version (mode, blob id) of a
work tree file or an index entry is destroyed when it is found nowhere afterwards (work
tree, index) and was not committed (HEAD before, the target branch).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from tests.helpers import git, make_repo

EMPTY_BLOB = "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391"
Version = tuple[str, str]

#: path -> content in the base commit (HEAD); every content unique.
BASE: dict[str, str] = {
    "clean.txt": "clean\n",
    "unstaged.txt": "unstaged base\n",
    "staged.txt": "staged base\n",
    "staged_mod.txt": "staged_mod base\n",
    "staged_reverted.txt": "staged_reverted base\n",
    "staged_eq_x.txt": "staged_eq_x base\n",
    "deleted.txt": "deleted base\n",
    "rmd.txt": "rmd base\n",
    "exec.sh": "#!/bin/sh\necho exec\n",
    "with space.txt": "space base\n",
    "new\nline.txt": "newline base\n",
    'quote".txt': "quote base\n",
    "ünï.txt": "unicode base\n",
    "-dash.txt": "dash base\n",
    "dir/sub/deep.txt": "deep base\n",
    "dir/keep.txt": "dir keep\n",
    "changes_in_x.txt": "changes_in_x base\n",
    "dirty_both.txt": "dirty_both base\n",
    ".gitignore": "*.log\nbuild/\n",
}
#: The target branch ``other``: changed, added and deleted paths.
OTHER: dict[str, str | None] = {
    "changes_in_x.txt": "changes_in_x other\n",
    "dirty_both.txt": "dirty_both other\n",
    "staged_eq_x.txt": "staged_eq_x other\n",
    "uncoll.txt": "uncoll other\n",
    "icoll.log": "icoll other\n",
    "udir2": "udir2 is a file in other\n",
    "dir/keep.txt": None,
}


def write(root: Path, rel: str, content: str) -> None:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_bytes(content.encode())


def base_repo(path: Path) -> Path:
    """The committed base with branch ``other``, checked out on ``main``."""
    make_repo(path, BASE)
    os.symlink("clean.txt", path / "link")
    git(path, "add", "link")
    git(path, "commit", "-q", "-m", "link")
    git(path, "checkout", "-q", "-b", "other")
    for rel, content in OTHER.items():
        if content is None:
            git(path, "rm", "-q", "--", rel)
        else:
            write(path, rel, content)
            git(path, "add", "-f", "--", rel)
    git(path, "commit", "-q", "-m", "other")
    git(path, "checkout", "-q", "main")
    return path


def make_dirty(
    path: Path, *, conflicts: bool = True, untracked_collisions: bool = True, ita: bool = True
) -> None:
    """Every kind of dirty state, on top of :func:`base_repo`."""
    w = path
    write(w, "unstaged.txt", "unstaged edit\n")
    write(w, "staged.txt", "staged edit\n")
    git(w, "add", "staged.txt")
    write(w, "staged_mod.txt", "staged_mod staged\n")
    git(w, "add", "staged_mod.txt")
    write(w, "staged_mod.txt", "staged_mod worktree\n")
    write(w, "staged_reverted.txt", "staged_reverted staged\n")
    git(w, "add", "staged_reverted.txt")
    write(w, "staged_reverted.txt", BASE["staged_reverted.txt"])
    write(w, "staged_eq_x.txt", OTHER["staged_eq_x.txt"] or "")
    if conflicts:
        git(w, "add", "staged_eq_x.txt")
        write(w, "dirty_both.txt", "dirty_both edit\n")
    else:
        write(w, "staged_eq_x.txt", BASE["staged_eq_x.txt"])
    (w / "deleted.txt").unlink()
    git(w, "rm", "-q", "rmd.txt")
    os.chmod(w / "exec.sh", 0o755)
    os.unlink(w / "link")
    os.symlink("unstaged.txt", w / "link")
    write(w, "with space.txt", "space edit\n")
    write(w, "new\nline.txt", "newline edit\n")
    write(w, 'quote".txt', "quote edit\n")
    write(w, "ünï.txt", "unicode edit\n")
    write(w, "-dash.txt", "dash edit\n")
    write(w, "dir/sub/deep.txt", "deep edit\n")
    write(w, "added.txt", "added staged\n")
    git(w, "add", "added.txt")
    write(w, "added_mod.txt", "added_mod staged\n")
    git(w, "add", "added_mod.txt")
    write(w, "added_mod.txt", "added_mod worktree\n")
    if ita:
        write(w, "ita.txt", "intent to add\n")
        git(w, "add", "-N", "ita.txt")
    write(w, "untracked.txt", "untracked\n")
    write(w, "udir/a.txt", "udir a\n")
    write(w, "udir/b c.txt", "udir b c\n")
    write(w, "dir/sub/unt.txt", "dir sub untracked\n")
    for name in ("u\nnl.txt", " lead space.txt", "trail space.txt ", 'u"q.txt', "ü.txt"):
        write(w, name, f"untracked {name}\n")
        write(w, f"odd dir/{name}", f"untracked in dir {name}\n")
    write(w, "nested/inner.txt", "nested repo work\n")
    git(w / "nested", "init", "-q")
    write(w, "x.log", "ignored log\n")
    write(w, "dir/y.log", "ignored dir log\n")
    write(w, "build/out.bin", "ignored build out\n")
    write(w, "build/deep/more.bin", "ignored build deep\n")
    write(w, "icoll.log", "ignored collision\n")
    if untracked_collisions:
        write(w, "uncoll.txt", "untracked collision\n")
        write(w, "udir2/inside.txt", "untracked dir collision\n")


def dirty_repo(path: Path, **kw: bool) -> Path:
    """:func:`base_repo` plus :func:`make_dirty`."""
    base_repo(path)
    make_dirty(path, **kw)
    return path


_TEMPLATES: dict[tuple[bool, bool, bool], Path] = {}


def cached_dirty_repo(
    tmp: Path,
    factory: Path,
    *,
    conflicts: bool = True,
    untracked_collisions: bool = True,
    ita: bool = True,
) -> Path:
    """A copy of a dirty repository built once per session (building is the slow part)."""
    key = (conflicts, untracked_collisions, ita)
    if key not in _TEMPLATES or not _TEMPLATES[key].exists():
        _TEMPLATES[key] = dirty_repo(
            factory / ("tpl-" + "".join(str(int(k)) for k in key)),
            conflicts=conflicts,
            untracked_collisions=untracked_collisions,
            ita=ita,
        )
    dest = tmp / "repo"
    shutil.copytree(_TEMPLATES[key], dest, symlinks=True)
    return dest


# ---------------------------------------------------------------------------
# The oracle


def blob_id(data: bytes) -> str:
    h = hashlib.sha1()
    h.update(b"blob %d\0" % len(data))
    h.update(data)
    return h.hexdigest()


@dataclass
class Snapshot:
    work: dict[str, Version] = field(default_factory=dict)
    index: dict[str, Version] = field(default_factory=dict)
    untracked: set[str] = field(default_factory=set)
    committed: set[Version] = field(default_factory=set)


def _git_bytes(cwd: Path, *args: str) -> bytes:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, check=True).stdout


def work_versions(top: Path, skip_nested: bool = True) -> dict[str, Version]:
    out: dict[str, Version] = {}
    for root, dirs, files in os.walk(top):
        if ".git" in dirs:
            dirs.remove(".git")
        for d in dirs[:]:
            if os.path.islink(os.path.join(root, d)):
                files.append(d)
                dirs.remove(d)
        for name in files:
            full = os.path.join(root, name)
            rel = os.path.relpath(full, top)
            st = os.lstat(full)
            if stat.S_ISLNK(st.st_mode):
                out[rel] = ("120000", blob_id(os.fsencode(os.readlink(full))))
            else:
                mode = "100755" if st.st_mode & 0o100 else "100644"
                with open(full, "rb") as f:
                    out[rel] = (mode, blob_id(f.read()))
    return out


def tree_versions(top: Path, rev: str) -> dict[str, Version]:
    res = subprocess.run(
        ["git", "ls-tree", "-r", "-z", "--full-tree", rev], cwd=top, capture_output=True
    )
    out: dict[str, Version] = {}
    if res.returncode != 0:
        return out
    for rec in res.stdout.split(b"\0"):
        if not rec:
            continue
        meta, _, path = rec.partition(b"\t")
        mode, _typ, oid = meta.decode().split()
        out[os.fsdecode(path)] = (mode, oid)
    return out


def snapshot(top: Path, targets: tuple[str, ...] = ("HEAD", "other")) -> Snapshot:
    snap = Snapshot(work=work_versions(top))
    for rec in _git_bytes(top, "ls-files", "-s", "-z").split(b"\0"):
        if not rec:
            continue
        meta, _, path = rec.partition(b"\t")
        mode, oid, stage = meta.decode().split()
        if stage == "0" and oid != EMPTY_BLOB:
            snap.index[os.fsdecode(path)] = (mode, oid)
    tracked = {os.fsdecode(p) for p in _git_bytes(top, "ls-files", "-z").split(b"\0") if p}
    snap.untracked = {p for p in snap.work if p not in tracked}
    for rev in targets:
        snap.committed.update(tree_versions(top, rev).values())
    return snap


def observe(
    top: Path,
    argv: list[str],
    targets: tuple[str, ...] = ("HEAD",),
    cwd: Path | None = None,
    stdin: bytes | None = None,
) -> tuple[dict[str, set[str]], subprocess.CompletedProcess[bytes]]:
    """Run the real ``git argv`` in ``cwd`` (default ``top``); what it destroyed."""
    # Ignored status must be read before the command (the files may be gone after).
    before = snapshot(top, targets)
    ignored_before = {
        os.fsdecode(p)
        for p in _git_bytes(top, "ls-files", "-z", "-o", "-i", "--exclude-standard").split(b"\0")
        if p
    }
    proc = subprocess.run(
        ["git", *argv], cwd=cwd or top, capture_output=True, check=False, input=stdin or b""
    )
    after = snapshot(top, targets)
    anywhere = set(after.work.values()) | set(after.index.values()) | before.committed
    out: dict[str, set[str]] = {}
    for path, ver in before.work.items():
        if ver in anywhere:
            continue
        if path in before.untracked:
            kind = "ignored" if path in ignored_before else "untracked"
        else:
            kind = "worktree"
        out.setdefault(path, set()).add(kind)
    for path, ver in before.index.items():
        if ver not in anywhere:
            out.setdefault(path, set()).add("staged")
    return out, proc


FULL = "full"  # conflicts with `other` and untracked collisions
CALM = "calm"  # no conflicting local changes, no untracked collisions (switches succeed)
NO_ITA = "no-ita"  # no intent-to-add entry (stash refuses those)

# (variant, argv): every form of docs/blast-radius.md's tables the dirty repository can
# exercise.
CASES: list[tuple[str, list[str]]] = [
    # reset: R1 / R4 / R5
    (FULL, ["reset", "--hard"]),
    (FULL, ["reset", "--hard", "other"]),
    (FULL, ["reset", "--ha"]),
    (FULL, ["reset"]),
    (FULL, ["reset", "other"]),
    (FULL, ["reset", "-q", "--mixed", "other", "--", "."]),
    (FULL, ["reset", "--", "dir", "unstaged.txt", "staged.txt"]),
    (FULL, ["reset", "--keep"]),
    (FULL, ["reset", "--merge"]),
    (FULL, ["reset", "--soft", "other"]),
    # checkout: R3, R2, R1, R7
    (FULL, ["checkout", "--", "."]),
    (FULL, ["checkout", "--", "dir", "with space.txt", "-dash.txt"]),
    (FULL, ["checkout", "other", "--", "."]),
    (FULL, ["checkout", "other", "dir"]),
    (FULL, ["checkout", "--no-overlay", "other", "--", "dir"]),
    (FULL, ["checkout", "-f", "other"]),
    (FULL, ["checkout", "--forc", "other"]),
    (FULL, ["checkout", "-f"]),
    (FULL, ["checkout", "other"]),
    (CALM, ["checkout", "other"]),
    (CALM, ["checkout", "other", "--"]),
    (CALM, ["checkout", "--no-overwrite-ignore", "other"]),
    (CALM, ["checkout", "-m", "other"]),
    (CALM, ["checkout", "-b", "topic", "other"]),
    (CALM, ["checkout", "--detach", "other"]),
    # switch
    (FULL, ["switch", "-f", "other"]),
    (FULL, ["switch", "--discard-changes", "other"]),
    (FULL, ["switch", "--disc", "other"]),
    (CALM, ["switch", "--discard-changes", "other"]),
    (CALM, ["switch", "other"]),
    (CALM, ["switch", "-c", "topic", "other"]),
    (CALM, ["switch", "-m", "other"]),
    (CALM, ["switch", "--orphan", "void"]),
    # restore: R3, R4, R1, R6
    (FULL, ["restore", "."]),
    (FULL, ["restore", "dir", "link", "exec.sh"]),
    (FULL, ["restore", "--staged", "."]),
    (FULL, ["restore", "-SW", "."]),
    (FULL, ["restore", "--source=other", "."]),
    (FULL, ["restore", "--sour=other", "--", "dir"]),
    (FULL, ["restore", "-s", "other", "--staged", "dir"]),
    (FULL, ["restore", "--source", "other", "--staged", "--worktree", "."]),
    (FULL, ["restore", "--overlay", "--source=other", "-SW", "."]),
    # clean: from `clean -n`
    (FULL, ["clean", "-f"]),
    (FULL, ["clean", "-fd"]),
    (FULL, ["clean", "-fdx"]),
    (FULL, ["clean", "-fX"]),
    (FULL, ["clean", "-ffdx"]),
    (FULL, ["clean", "-f", "-d", "-e", "*.txt"]),
    (FULL, ["clean", "--forc", "-x", "--", "dir", "odd dir"]),
    (FULL, ["clean", "-d"]),
    (FULL, ["-c", "clean.requireForce=false", "clean", "-d"]),
    (FULL, ["clean", "-n", "-fd"]),
    # rm, mv
    (FULL, ["rm", "-rf", "--cached", "."]),
    (FULL, ["rm", "-r", "--cached", "."]),
    (FULL, ["rm", "-rf", "dir"]),
    (FULL, ["rm", "-f", "--", "-dash.txt", "staged.txt", "staged_mod.txt", "added_mod.txt"]),
    (FULL, ["rm", "staged.txt"]),
    (FULL, ["mv", "-f", "unstaged.txt", "staged.txt"]),
    (FULL, ["mv", "-f", "clean.txt", "untracked.txt"]),
    (FULL, ["mv", "-f", "clean.txt", "x.log"]),
    (FULL, ["mv", "clean.txt", "x.log"]),
    # merge (fast-forward): ignored collisions
    (CALM, ["merge", "other"]),
    (CALM, ["merge", "--ff-only", "other"]),
    # global options and aliases reach the same command
    (FULL, ["-c", "alias.nuke=reset --hard", "nuke"]),
    (FULL, ["-c", "alias.n1=n2", "-c", "alias.n2=checkout -f", "n1", "other"]),
    (FULL, ["--git-dir=.git", "--work-tree=.", "--no-pager", "reset", "--hard", "other"]),
    (FULL, ["-C", "dir", "-C", "..", "--literal-pathspecs", "checkout", "--", "."]),
]

#: Stash forms (in the no-ita variant: stash refuses intent-to-add entries).
STASH_CASES = [
    ["stash"],
    ["stash", "-u"],
    ["stash", "push", "--include-u"],
    ["stash", "-a"],
    ["stash", "--keep-index"],
    ["stash", "push", "--", "dir", "staged.txt"],
    ["stash", "save", "-u", "message"],
    ["-c", "alias.st=stash -a", "st"],
]
