"""What a git command would destroy, computed before it runs (shared/BLAST.md).

Every predictor is computed from read-only git calls that never rewrite the index
(``--no-optional-locks`` status, ``diff-tree``, ``ls-files``, ``hash-object`` of work
tree files, ``clean -n``). Notation as in BLAST.md: H = HEAD, I = index (stage 0),
W = work tree, X = the command's target; a version is ``(mode, oid)``.
"""

from __future__ import annotations

import os
import posixpath
import stat

from guards import git
from guards.errors import UnknownStateError
from guards.git import operations
from guards.git.history import commits_held_only_by
from guards.git.objects import GITLINK, ZERO_MODE, blob_oid, empty_tree
from guards.git.quoting import c_unquote, parse_clean_output
from guards.predict.cmdline import (
    GitCommand,
    Options,
    asks_for_help,
    autostash,
    clean_force,
    parse_options,
    stash_action,
)
from guards.values import MutableValue, Value

TYPE_CHECKING = False  # see guards.values: these imports cost start-up time
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Sequence

#: What a Loss can name: work tree content, a staged blob, an untracked or ignored file.
KINDS = frozenset({"worktree", "staged", "untracked", "ignored"})

Version = tuple[str, str]


class Loss(Value):
    """One path whose uncommitted content would be destroyed (or moved, see ``moves``)."""

    __slots__ = ("kinds", "path")

    def __init__(self, path: str, kinds: frozenset[str]) -> None:
        self.path = path
        self.kinds = kinds


class BlastRadius(Value):
    """Everything a command would destroy or move away, in one work tree."""

    __slots__ = ("commits", "everything", "losses", "moves", "worktree")

    def __init__(
        self,
        worktree: str | None,
        losses: list[Loss],
        commits: Sequence[tuple[str, str]] = (),
        moves: bool = False,
        everything: bool = False,
    ) -> None:
        self.worktree = worktree
        self.losses = losses
        #: Commits that would become unreachable or dangling: ``(oid, label)``.
        self.commits = commits
        #: Work moved away from its author (stash and autostash): nothing lost, but at risk.
        self.moves = moves
        #: Cannot be computed exactly: all dirty work (ignored files included) is at risk.
        self.everything = everything

    def empty(self) -> bool:
        return not self.losses and not self.commits and not self.everything

    @property
    def paths(self) -> list[str]:
        return [loss.path for loss in self.losses]


def _everything(worktree: str | None) -> BlastRadius:
    return BlastRadius(worktree=worktree, losses=[], everything=True)


# ---------------------------------------------------------------------------
# The repository as the command sees it


class Context:
    """Where the command runs: its git dir, work tree and prefix, and how to ask git."""

    __slots__ = ("_head", "cmd", "env", "git_dir", "object_format", "options", "prefix", "toplevel")

    def __init__(
        self,
        cmd: GitCommand,
        git_dir: str,
        toplevel: str | None,
        prefix: str,
        object_format: str,
        options: list[str],
        env: dict[str, str],
    ) -> None:
        self.cmd = cmd
        self.git_dir = git_dir
        self.toplevel = toplevel
        self.prefix = prefix
        self.object_format = object_format
        #: Global options that still apply when git dir and work tree are given explicitly.
        self.options = options
        self.env = env
        self._head: object = _UNSET

    def run(
        self,
        args: Sequence[str],
        *,
        at_prefix: bool = False,
        stdin: bytes | None = None,
        check: bool = True,
    ) -> git.Result:
        cwd = self.toplevel or self.git_dir
        if at_prefix and self.toplevel and self.prefix:
            cwd = os.path.join(self.toplevel, self.prefix)
        try:
            return git.run([*self.options, *args], cwd=cwd, env=self.env, stdin=stdin, check=check)
        except git.GitError as e:
            raise UnknownStateError(str(e)) from e

    def out(
        self, args: Sequence[str], *, at_prefix: bool = False, stdin: bytes | None = None
    ) -> bytes:
        return self.run(args, at_prefix=at_prefix, stdin=stdin).stdout

    def rev(self, name: str, peel: str = "commit") -> str | None:
        """The object id of ``name^{peel}``, or None if it does not resolve."""
        if name == "-":
            name = "@{-1}"  # checkout -, switch -, merge -: the previous branch
        res = self.run(
            ["rev-parse", "--verify", "-q", "--end-of-options", f"{name}^{{{peel}}}"],
            at_prefix=True,
            check=False,
        )
        if res.returncode != 0:
            return None
        return res.stdout.decode().strip() or None

    def known_head(self, oid: str | None) -> None:
        """HEAD's commit as discovery already found it (None: an unborn branch)."""
        self._head = oid

    def head(self) -> str | None:
        if self._head is _UNSET:
            self._head = self.rev("HEAD")
        return self._head  # type: ignore[return-value]

    def abs_path(self, user_path: str) -> str:
        return os.path.normpath(os.path.join(self.cmd.cwd, user_path))

    def rel(self, abs_path: str) -> str | None:
        """Repository-relative path of an absolute one; None outside the work tree."""
        if self.toplevel is None:
            return None
        rel = os.path.relpath(abs_path, self.toplevel)
        if rel == "." or rel.split("/")[0] == "..":
            return None
        return rel


_UNSET = object()
_KEEP_WITH_VALUE = {"-c", "--namespace"}
_KEEP_PREFIXES = ("--config-env=", "--namespace=")
_KEEP_FLAGS = {
    "--no-replace-objects",
    "--literal-pathspecs",
    "--glob-pathspecs",
    "--noglob-pathspecs",
    "--icase-pathspecs",
}


def _kept_options(global_options: Sequence[str]) -> list[str]:
    kept: list[str] = []
    i = 0
    while i < len(global_options):
        o = global_options[i]
        if o in _KEEP_WITH_VALUE:
            kept += global_options[i : i + 2]
            i += 2
            continue
        if o in ("-C", "--git-dir", "--work-tree", "--super-prefix"):
            i += 2
            continue
        if o.startswith(_KEEP_PREFIXES) or o in _KEEP_FLAGS:
            kept.append(o)
        i += 1
    return kept


_CONTEXT_FLAGS = (
    "--absolute-git-dir",
    "--show-object-format",
    "--is-inside-work-tree",
    "--show-prefix",
    "--show-toplevel",
)


def context(cmd: GitCommand, at: str | None = None) -> Context | None:
    """Discover the repository the command acts on; None outside any repository.

    ``at`` discovers the work tree containing another directory (``worktree remove``).
    """
    options = _kept_options(cmd.global_options)
    if at is None:
        env = dict(cmd.env)

        def ask(args: list[str]) -> git.Result:
            return cmd.query(args, check=False)
    else:
        env = {k: v for k, v in cmd.env.items() if k not in ("GIT_DIR", "GIT_WORK_TREE")}

        def ask(args: list[str]) -> git.Result:
            return git.run([*options, *args], cwd=at, env=env, check=False)

    # HEAD in the same call (the predictors nearly always need it): one git less.
    res = ask(["rev-parse", *_CONTEXT_FLAGS, "--verify", "-q", "--end-of-options", "HEAD^{commit}"])
    lines = res.stdout.split(b"\n")
    # Five answers and HEAD's id (exit 0), no id on an unborn branch (exit 1), four
    # answers when there is no work tree; each line ends in "\n", hence one more piece.
    expected = {0: 7, 1: 6}.get(res.returncode, 5)
    one_by_one = len(lines) > 4 and len(lines) != expected
    if one_by_one:
        # A path holding a newline: ask for each value on its own (HEAD later).
        lines = [git.strip_newline(ask(["rev-parse", flag]).stdout) for flag in _CONTEXT_FLAGS]
    if len(lines) < 4:
        if b"not a git repository" in res.stderr:
            return None
        from guards.git.repo import check_git_version

        check_git_version()
        raise UnknownStateError(
            "cannot find the repository: "
            + (res.stderr.decode("utf-8", "replace").strip().splitlines() or ["git failed"])[-1]
        )
    git_dir = os.fsdecode(lines[0])
    fmt = lines[1].decode() or "sha1"
    prefix = os.fsdecode(lines[3]).rstrip("/")
    # Outside the work tree but with GIT_WORK_TREE / --work-tree, git still acts on it.
    toplevel = os.fsdecode(lines[4]) if len(lines) > 4 and lines[4] else None
    env["GIT_DIR"] = git_dir
    if toplevel:
        env["GIT_WORK_TREE"] = toplevel
    else:
        env.pop("GIT_WORK_TREE", None)
    ctx = Context(cmd, git_dir, toplevel, prefix, fmt, options, env)
    if not one_by_one and res.returncode == 0 and len(lines) == 7:
        ctx.known_head(lines[5].decode() or None)
    elif not one_by_one and res.returncode == 1 and len(lines) == 6 and not res.stderr:
        ctx.known_head(None)  # an unborn branch: `--verify -q` says nothing, exits 1
    return ctx  # anything else (no work tree, a newline in a path): asked when needed


# ---------------------------------------------------------------------------
# The dirty state: H, I and W of every dirty tracked path, untracked and ignored files


class Entry(MutableValue):
    """A dirty tracked path: its (mode, oid) in HEAD, the index and the work tree."""

    __slots__ = ("gitlink", "head", "index", "path", "unmerged", "work", "xy")

    def __init__(
        self,
        path: str,
        xy: str,
        head: Version | None,
        index: Version | None,
        work: Version | None = None,
        unmerged: bool = False,
        gitlink: bool = False,
    ) -> None:
        self.path = path
        self.xy = xy
        self.head = head
        self.index = index
        self.work = work
        self.unmerged = unmerged
        self.gitlink = gitlink

    @property
    def intent_to_add(self) -> bool:
        return self.xy == ".A"


class State(MutableValue):
    """The dirty state of a work tree, as the predictors need it."""

    __slots__ = ("entries", "ignored", "toplevel", "untracked")

    def __init__(self, toplevel: str = "") -> None:
        self.entries: dict[str, Entry] = {}
        #: Untracked files; a nested repository as git shows it, ``dir/``.
        self.untracked: list[str] = []
        #: Ignored files and whole ignored directories (``dir/``), as git shows them.
        self.ignored: list[str] = []
        self.toplevel = toplevel

    def files(self, shown: Iterable[str]) -> list[str]:
        """Shown paths with each ``dir/`` replaced by the files under it (walked lazily:
        an ignored ``node_modules/`` is only walked when something reaches it)."""
        out: list[str] = []
        for p in shown:
            if p.endswith("/"):
                out.extend(files_under(self.toplevel, p.rstrip("/")))
            else:
                out.append(p)
        return out

    @property
    def untracked_files(self) -> list[str]:
        return self.files(self.untracked)

    @property
    def ignored_files(self) -> list[str]:
        return self.files(self.ignored)


def _ver(mode: bytes, oid: bytes) -> Version | None:
    m = mode.decode()
    return None if m == ZERO_MODE else (m, oid.decode())


def pathspec_args(ctx: Context, opts: Options, pathspec: Sequence[str]) -> list[str] | None:
    """Status arguments limiting it to the command's pathspec; None = the whole tree.

    ``--pathspec-from-file=-`` is stdin, which guards never reads: the exact set is
    unknowable, so the command's whole scope counts.
    """
    source = opts.value("pathspec-from-file")
    if source is not None:
        if source == "-":
            return None
        # git status has no --pathspec-from-file: read the file as git would.
        try:
            with open(ctx.abs_path(source), "rb") as f:
                data = f.read()
        except OSError:
            return None  # git will fail to read it too; count the whole scope
        if opts.has("pathspec-file-nul"):
            items = git.zsplit(data)
        else:
            items = [c_unquote(line.rstrip(b"\r")) for line in data.split(b"\n") if line]
        return ["--", *(os.fsdecode(i) for i in items)]
    if not pathspec:
        return None
    return ["--", *pathspec]


def read_state(
    ctx: Context,
    limit: list[str] | None = None,
    *,
    hash_work: bool = True,
    target: Target | None = None,
) -> State:
    """Dirty tracked entries, untracked and ignored files (all within ``limit``).

    A work tree file that differs from the index is hashed only when a predictor must
    compare it with something else than the index: where the index differs from HEAD,
    where ``target`` differs from HEAD, and for conflicts. Elsewhere its unknown id
    (``""``) already differs from both the index and HEAD, which is all that matters.
    """
    out = ctx.out([*git.status_args(ignored=True), *(limit or [])], at_prefix=True)
    state = State(toplevel=ctx.toplevel or "")
    records = git.zsplit(out)
    i = 0
    while i < len(records):
        rec = records[i]
        i += 1
        kind = rec[:1]
        if kind in (b"1", b"2"):
            n = 8 if kind == b"1" else 9
            f = rec.split(b" ", n)
            path = os.fsdecode(f[n])
            xy = f[1].decode()
            e = Entry(path, xy, _ver(f[3], f[6]), _ver(f[4], f[7]))
            e.gitlink = GITLINK in (f[3].decode(), f[4].decode(), f[5].decode())
            if xy[1] == ".":
                e.work = e.index
            elif f[5].decode() != ZERO_MODE:
                e.work = (f[5].decode(), "")  # hashed below
            if e.intent_to_add:
                e.index = None
            state.entries[path] = e
            if kind == b"2":
                i += 1
        elif kind == b"u":
            f = rec.split(b" ", 10)
            path = os.fsdecode(f[10])
            e = Entry(path, f[1].decode(), _ver(f[3], f[7]), None, unmerged=True)
            if f[6].decode() != ZERO_MODE:
                e.work = (f[6].decode(), "")
            state.entries[path] = e
        elif kind == b"?":
            state.untracked.append(os.fsdecode(rec[2:]))
        elif kind == b"!":
            state.ignored.append(os.fsdecode(rec[2:]))
    if hash_work:
        diff = target.diff if target is not None else {}
        _hash_work(
            ctx,
            [
                e
                for e in state.entries.values()
                if e.work and not e.work[1] and (e.unmerged or e.index != e.head or e.path in diff)
            ],
        )
    return state


def files_under(toplevel: str, rel_dir: str) -> Iterable[str]:
    """Every file and symlink below a directory (a nested repository's .git excluded).

    A *file* named ``.git`` is a gitdir link (a submodule's or worktree's pointer, or
    junk): git can never store that name, so it cannot be rescued as a path; the
    repository it points to is not deleted with it."""
    base = os.path.join(toplevel, rel_dir)
    for root, dirs, files in os.walk(base):
        if ".git" in dirs:
            dirs.remove(".git")
        rel_root = os.path.relpath(root, toplevel)
        for name in dirs[:]:
            if os.path.islink(os.path.join(root, name)):
                files.append(name)
                dirs.remove(name)
        for name in files:
            if name != ".git":
                yield posixpath.join(rel_root.replace(os.sep, "/"), name)


def _hash_work(ctx: Context, entries: list[Entry]) -> None:
    """Object ids of work tree files, hashed the way ``git add`` would (filters applied)."""
    if not entries or ctx.toplevel is None:
        return
    plain: list[Entry] = []
    for e in entries:
        full = os.path.join(ctx.toplevel, e.path)
        try:
            st = os.lstat(full)
        except OSError:
            e.work = None
            continue
        assert e.work is not None
        if e.gitlink or stat.S_ISDIR(st.st_mode):
            e.work = (e.work[0], "?")  # a gitlink's commit: not ours to hash
        elif stat.S_ISLNK(st.st_mode):
            e.work = (e.work[0], blob_oid(os.fsencode(os.readlink(full)), ctx.object_format))
        elif "\n" in e.path:
            with open(full, "rb") as f:
                data = f.read()
            res = ctx.out(["hash-object", "--stdin", f"--path={e.path}"], stdin=data)
            e.work = (e.work[0], res.decode().strip())
        else:
            plain.append(e)
    if plain:
        stdin = "".join(e.path + "\n" for e in plain).encode("utf-8", "surrogateescape")
        out = ctx.out(["hash-object", "--stdin-paths"], stdin=stdin)
        oids = out.decode().split()
        if len(oids) != len(plain):
            raise UnknownStateError("git hash-object gave an unexpected answer")
        for e, oid in zip(plain, oids, strict=True):
            assert e.work is not None
            e.work = (e.work[0], oid)


# ---------------------------------------------------------------------------
# The target X: its versions of the paths that differ from HEAD


class Target:
    """X's versions, as differences from HEAD (paths not listed are as in HEAD)."""

    def __init__(self, ctx: Context, oid: str | None, head: str | None) -> None:
        self.oid = oid
        self.diff: dict[str, tuple[Version | None, Version | None]] = {}
        if oid is None or oid == head:
            return
        empty = empty_tree(ctx.object_format)
        out = ctx.out(["diff-tree", "-r", "-z", "--no-renames", head or empty, oid])
        records = git.zsplit(out)
        for meta, path in zip(records[::2], records[1::2], strict=False):
            f = meta[1:].split(b" ")
            self.diff[os.fsdecode(path)] = (_ver(f[0], f[2]), _ver(f[1], f[3]))

    def version(self, e: Entry) -> Version | None:
        if e.path in self.diff:
            return self.diff[e.path][1]
        return e.head


def wt(e: Entry, x: Version | None) -> bool:
    """The work tree differs from ``x`` (pure deletions do not count)."""
    return e.work is not None and e.work != x


def ix(e: Entry, x: Version | None) -> bool:
    """The index differs from ``x`` (no stage-0 entry does not count)."""
    return e.index is not None and e.index != x


def wi(e: Entry) -> bool:
    return e.work != e.index


def _occupied_elsewhere(state: State, target: Target) -> set[str]:
    """X's paths whose work tree slot holds no tracked file: collisions happen there.

    A gitlink is never such a slot: git leaves a submodule's directory alone."""
    slots: set[str] = set()
    for path, (old, new) in target.diff.items():
        if new is None or new[0] == GITLINK:
            continue
        e = state.entries.get(path)
        if e is None:
            if old is None:
                slots.add(path)
        elif e.index is None or e.work is None:
            slots.add(path)
    for e in state.entries.values():
        if e.path in target.diff or e.head is None or e.gitlink:
            continue
        if e.index is None or e.work is None:
            slots.add(e.path)
    return slots


def collisions(paths: Iterable[str], slots: set[str]) -> list[str]:
    """C(S, X): paths equal to, containing or lying under a path of X's tree."""
    if not slots:
        return []
    ancestors: set[str] = set()
    for s in slots:
        parts = s.split("/")
        for n in range(1, len(parts)):
            ancestors.add("/".join(parts[:n]))
    hit: list[str] = []
    for p in paths:
        q = p.rstrip("/")
        parts = q.split("/")
        under = any("/".join(parts[:n]) in slots for n in range(1, len(parts)))
        if q in slots or q in ancestors or under:
            hit.append(p)
    return hit


# ---------------------------------------------------------------------------
# Predictors


class Losses:
    def __init__(self) -> None:
        self.kinds: dict[str, set[str]] = {}

    def add(self, path: str, *kinds: str) -> None:
        if kinds:
            self.kinds.setdefault(path, set()).update(kinds)

    def forgive(self, ctx: Context, state: State) -> None:
        """Drop versions an operation in progress brought from a commit (a merge's or a
        cherry-pick's result staged in the index is committed on the other side)."""
        incoming = _incoming_targets(ctx)
        if not incoming:
            return
        for path, kinds in list(self.kinds.items()):
            e = state.entries.get(path)
            if e is None:
                continue
            versions = {t.version(e) for t in incoming}
            if "staged" in kinds and e.index in versions:
                kinds.discard("staged")
            if "worktree" in kinds and e.work in versions:
                kinds.discard("worktree")
            if not kinds:
                del self.kinds[path]

    def radius(self, ctx: Context, state: State | None = None, **kw: object) -> BlastRadius:
        if state is not None:
            self.forgive(ctx, state)
        losses = [Loss(p, frozenset(k)) for p, k in sorted(self.kinds.items())]
        return BlastRadius(worktree=ctx.toplevel, losses=losses, **kw)  # type: ignore[arg-type]


def _incoming_targets(ctx: Context) -> list[Target]:
    return [Target(ctx, oid, ctx.head()) for oid in operations.incoming_heads(ctx.git_dir)]


def operation_in_progress(ctx: Context) -> bool:
    """An operation that makes git refuse to switch branches (bisect does not)."""
    return any(op != "bisect" for op in operations.in_progress(ctx.git_dir))


def _tracked(state: State) -> Iterable[Entry]:
    return (e for e in state.entries.values() if not e.gitlink)


def r1(
    ctx: Context,
    state: State,
    target: Target,
    losses: Losses,
    *,
    only_in_x: bool = False,
) -> None:
    """Index and work tree become X (R1; R2 with ``only_in_x``)."""
    for e in _tracked(state):
        x = target.version(e)
        if only_in_x and x is None:
            continue
        kinds = []
        if wt(e, e.head) and wt(e, x):
            kinds.append("worktree")
        if ix(e, e.head) and ix(e, x):
            kinds.append("staged")
        losses.add(e.path, *kinds)
    _add_collisions(state, target, losses, untracked=True, ignored=True)


def _add_collisions(
    state: State, target: Target, losses: Losses, *, untracked: bool, ignored: bool
) -> None:
    slots = _occupied_elsewhere(state, target)
    if untracked:
        for p in _colliding_files(state, state.untracked, slots):
            losses.add(p, "untracked")
    if ignored:
        for p in _colliding_files(state, state.ignored, slots):
            losses.add(p, "ignored")


def _colliding_files(state: State, shown: list[str], slots: set[str]) -> list[str]:
    """The files of C(S, X): a shown directory that collides is walked, then refiltered
    (a file of X deep inside an ignored directory hits only what lies at or under it)."""
    hits = collisions(shown, slots)
    return collisions(state.files(hits), slots) if hits else []


def r3(state: State, losses: Losses) -> None:
    """The work tree becomes the index: ``WI ∩ WT(HEAD)``."""
    for e in _tracked(state):
        if wi(e) and wt(e, e.head) and not e.unmerged:
            losses.add(e.path, "worktree")


def r4(state: State, target: Target, losses: Losses) -> None:
    """The index becomes X, the work tree stays: ``IX(HEAD) ∩ IX(X) ∩ WI``."""
    for e in _tracked(state):
        if ix(e, e.head) and ix(e, target.version(e)) and wi(e):
            losses.add(e.path, "staged")


def r5(state: State, target: Target, losses: Losses) -> None:
    """``reset --merge``: refuses on staged-then-modified, else ``IX(HEAD) ∩ IX(X)``."""
    if any(ix(e, e.head) and wi(e) for e in _tracked(state) if not e.unmerged):
        return
    for e in _tracked(state):
        if e.unmerged:
            if wt(e, e.head) and wt(e, target.version(e)):
                losses.add(e.path, "worktree")
            continue
        if ix(e, e.head) and ix(e, target.version(e)):
            losses.add(e.path, "staged", "worktree")


def r6(state: State, target: Target, losses: Losses) -> None:
    """``restore --source=X`` (work tree only): ``WT(HEAD)&WT(X)&WI | C(O,X)``."""
    for e in _tracked(state):
        if wt(e, e.head) and wt(e, target.version(e)) and wi(e):
            losses.add(e.path, "worktree")
    _add_collisions(state, target, losses, untracked=True, ignored=True)


def _switch_refused(state: State, target: Target) -> bool:
    """git's two-way merge refuses: local changes on paths the switch changes."""
    for e in _tracked(state):
        x = target.version(e)
        if x == e.head:
            continue
        if e.unmerged or e.work != e.index or (e.index != e.head and e.index != x):
            return True
    return False


def r7(state: State, target: Target, losses: Losses, *, overwrite_ignore: bool = True) -> None:
    """A branch switch without force: refuses on conflicts, else ignored collisions."""
    if _switch_refused(state, target):
        return
    slots = _occupied_elsewhere(state, target)
    if collisions(state.untracked, slots):
        return  # git refuses: untracked files would be overwritten
    if overwrite_ignore:
        for p in _colliding_files(state, state.ignored, slots):
            losses.add(p, "ignored")


def merge_mode(state: State, target: Target, losses: Losses) -> None:
    """``checkout -m X``: where the plain switch would refuse, git merges the local
    changes of the paths X changes; they survive only as a conflict (stage 3, markers).
    With any staged change git refuses instead."""
    if not _switch_refused(state, target):
        r7(state, target, losses)
        return
    if any(e.index != e.head for e in _tracked(state)):
        return
    for e in _tracked(state):
        if target.version(e) != e.head and wt(e, e.head):
            losses.add(e.path, "worktree")
    _add_collisions(state, target, losses, untracked=False, ignored=True)


def moved(state: State, losses: Losses, *, tracked: Callable[[Entry], bool]) -> None:
    for e in state.entries.values():
        if tracked(e):
            kinds = []
            if wt(e, e.head) or (e.work is None and e.head is not None):
                kinds.append("worktree")
            if ix(e, e.head) or (e.index is None and e.head is not None):
                kinds.append("staged")
            losses.add(e.path, *(kinds or ["worktree"]))


# ---------------------------------------------------------------------------
# Command by command


def blast_radius(cmd: GitCommand) -> BlastRadius:
    """What ``cmd`` would destroy or move away; raises UnknownStateError if git fails."""
    if cmd.shell_alias is not None:
        return _everything(None)
    sub = cmd.subcommand
    if sub is None or asks_for_help(cmd.args):
        return BlastRadius(worktree=None, losses=[])
    handler = _HANDLERS.get(sub)
    if handler is None:
        return BlastRadius(worktree=None, losses=[])
    if sub == "worktree":
        return _worktree(cmd)
    ctx = context(cmd)
    if ctx is None:
        return BlastRadius(worktree=None, losses=[])
    return handler(ctx, cmd.args)


def _split_target(
    ctx: Context, opts: Options, peel: str = "commit"
) -> tuple[str | None, list[str]] | None:
    """(target, pathspec) of ``cmd [X] [--] [p...]``; None when X does not resolve."""
    pos = opts.positionals
    if opts.after_dashdash is not None:
        if len(pos) > 1:
            return None
        return (pos[0] if pos else None), opts.after_dashdash
    if pos and ctx.rev(pos[0], peel) is not None:
        return pos[0], pos[1:]
    return None, pos


def _reset(ctx: Context, args: list[str]) -> BlastRadius:
    o = parse_options("reset", args)
    if o.unknown:
        return _everything(ctx.toplevel)
    if o.has("soft"):
        return BlastRadius(worktree=ctx.toplevel, losses=[])
    split = _split_target(ctx, o)
    if split is None:
        return _everything(ctx.toplevel)
    name, pathspec = split
    head = ctx.head()
    x_oid = ctx.rev(name) if name else head
    if name and x_oid is None:
        x_oid = ctx.rev(name, "tree")
        if x_oid is None:
            return BlastRadius(worktree=ctx.toplevel, losses=[])  # git: unknown revision
    losses = Losses()
    if o.has("hard") or o.has("merge") or o.has("keep"):
        if pathspec or o.given("pathspec-from-file"):
            return BlastRadius(worktree=ctx.toplevel, losses=[])  # git refuses
        if o.has("recurse-submodules") and o.has("hard"):
            return _everything(ctx.toplevel)
        target = Target(ctx, x_oid, head)
        state = read_state(ctx, target=target)
        if o.has("hard"):
            r1(ctx, state, target, losses)
        elif o.has("merge"):
            r5(state, target, losses)
        else:
            r4(state, target, losses)
        return losses.radius(ctx, state)
    limit = pathspec_args(ctx, o, pathspec)
    state = read_state(ctx, limit, hash_work=False)  # R4 compares with the index only
    r4(state, Target(ctx, x_oid, head), losses)
    return losses.radius(ctx)


def _checkout(ctx: Context, args: list[str]) -> BlastRadius:
    o = parse_options("checkout", args)
    if o.unknown:
        return _everything(ctx.toplevel)
    head = ctx.head()
    pathmode = (
        o.after_dashdash is not None
        or o.given("pathspec-from-file")
        or (o.has("patch") and not o.given("b") and not o.given("B"))
    )
    new_branch = o.value("b") or o.value("B") or o.value("orphan")
    if not pathmode and o.positionals and not new_branch:
        first = o.positionals[0]
        if len(o.positionals) > 1 or (ctx.rev(first) is None and _dwim_remote(ctx, first) is None):
            pathmode = True
    losses = Losses()
    if pathmode:
        split = _split_target(ctx, o, "tree")
        if split is None:
            return _everything(ctx.toplevel)
        name, pathspec = split
        limit = pathspec_args(ctx, o, pathspec)
        if name is None:
            state = read_state(ctx, limit)
            resolving = o.has("force") or o.has("ours") or o.has("theirs") or o.has("merge")
            if not resolving and any(e.unmerged for e in state.entries.values()):
                return BlastRadius(worktree=ctx.toplevel, losses=[])  # git refuses
            r3(state, losses)
            if o.has("ours") or o.has("theirs") or o.has("merge") or o.has("force"):
                for e in state.entries.values():
                    if e.unmerged and wt(e, e.head):
                        losses.add(e.path, "worktree")
            return losses.radius(ctx, state)
        x_oid = ctx.rev(name, "tree")
        if x_oid is None:
            return BlastRadius(worktree=ctx.toplevel, losses=[])
        # Path mode compares with X's tree: a commit's tree or a bare tree alike.
        target = Target(ctx, ctx.rev(name) or x_oid, head)
        state = read_state(ctx, limit, target=target)
        r1(ctx, state, target, losses, only_in_x=not o.given("overlay") or o.has("overlay"))
        return losses.radius(ctx, state)
    # Branch mode: target is the start point (or the branch named).
    start = o.positionals[0] if o.positionals else None
    if start is None:
        x_oid = head
    else:
        x_oid = ctx.rev(start) or _dwim_remote(ctx, start)
        if x_oid is None:
            return BlastRadius(worktree=ctx.toplevel, losses=[])
    commits = _branch_reset_loss(ctx, o.value("B"), x_oid) if o.given("B") and x_oid else []
    return _switch_to(ctx, o, x_oid, head, losses, commits, discard=False)


def _switch_to(
    ctx: Context,
    o: Options,
    x_oid: str | None,
    head: str | None,
    losses: Losses,
    commits: list[tuple[str, str]],
    *,
    discard: bool,
) -> BlastRadius:
    target = Target(ctx, x_oid, head)
    state = read_state(ctx, target=target)
    if o.has("force"):
        r1(ctx, state, target, losses)
    elif discard:
        slots = _occupied_elsewhere(state, target)
        if not collisions(state.untracked, slots):
            r1(ctx, state, target, losses)
    elif o.has("merge"):
        merge_mode(state, target, losses)
    else:
        overwrite = not o.given("overwrite-ignore") or o.has("overwrite-ignore")
        r7(state, target, losses, overwrite_ignore=overwrite)
    return losses.radius(ctx, state, commits=commits)


def _dwim_remote(ctx: Context, name: str) -> str | None:
    """``checkout foo`` / ``switch foo`` creating foo from the one ``<remote>/foo``."""
    out = ctx.out(["for-each-ref", "--format=%(objectname)", f"refs/remotes/*/{name}"])
    oids = out.decode().split()
    return oids[0] if len(oids) == 1 else None


def _switch(ctx: Context, args: list[str]) -> BlastRadius:
    o = parse_options("switch", args)
    if o.unknown:
        return _everything(ctx.toplevel)
    if operation_in_progress(ctx):
        return BlastRadius(worktree=ctx.toplevel, losses=[])  # git: "cannot switch ... while"
    head = ctx.head()
    losses = Losses()
    if o.given("orphan"):
        x_oid: str | None = empty_tree(ctx.object_format)
        target_name = None
    else:
        target_name = o.positionals[0] if o.positionals else None
        if target_name is None:
            x_oid = head
        else:
            x_oid = ctx.rev(target_name)
            if x_oid is None:
                x_oid = _dwim_remote(ctx, target_name)
            if x_oid is None:
                return BlastRadius(worktree=ctx.toplevel, losses=[])
    commits: list[tuple[str, str]] = []
    if o.given("force-create") and x_oid:
        commits = _branch_reset_loss(ctx, o.value("force-create"), x_oid)
    return _switch_to(ctx, o, x_oid, head, losses, commits, discard=o.has("discard-changes"))


def _restore(ctx: Context, args: list[str]) -> BlastRadius:
    o = parse_options("restore", args)
    if o.unknown:
        return _everything(ctx.toplevel)
    pathspec = [*o.positionals, *(o.after_dashdash or [])]
    if not pathspec and not o.given("pathspec-from-file"):
        return BlastRadius(worktree=ctx.toplevel, losses=[])  # git: path(s) required
    staged = o.has("staged")
    worktree = o.has("worktree") or not staged
    source = o.value("source")
    head = ctx.head()
    if source is not None:
        x_oid = ctx.rev(source) or ctx.rev(source, "tree")
        if x_oid is None:
            return BlastRadius(worktree=ctx.toplevel, losses=[])
    else:
        x_oid = head
    target = Target(ctx, x_oid, head)
    state = read_state(ctx, pathspec_args(ctx, o, pathspec), target=target)
    losses = Losses()
    resolving = o.has("ours") or o.has("theirs") or o.has("merge") or o.has("ignore-unmerged")
    if not resolving and worktree and any(e.unmerged for e in state.entries.values()):
        return BlastRadius(worktree=ctx.toplevel, losses=[])  # git refuses
    if worktree and resolving:
        # --ours/--theirs/-m rewrite a conflicted file: the resolution in progress goes.
        for e in state.entries.values():
            if e.unmerged and wt(e, e.head):
                losses.add(e.path, "worktree")
    if staged and worktree:
        r1(ctx, state, target, losses, only_in_x=o.has("overlay"))
    elif staged:
        r4(state, target, losses)
    elif source is None:
        r3(state, losses)
    else:
        r6(state, target, losses)
    return losses.radius(ctx, state)


def _clean(ctx: Context, args: list[str]) -> BlastRadius:
    o = parse_options("clean", args)
    if o.unknown:
        return _everything(ctx.toplevel)
    if not clean_force(ctx.cmd, o) or ctx.toplevel is None:
        return BlastRadius(worktree=ctx.toplevel, losses=[])
    dry = ["clean", "--dry-run"]
    if o.count("force") >= 2:
        dry += ["-f", "-f"]
    for flag in ("d", "x", "X"):
        if o.has(flag):
            dry.append(f"-{flag}")
    for v in o.values.get("exclude", []):
        if isinstance(v, str):
            dry.append(f"--exclude={v}")
    dry += ["--", *o.positionals, *(o.after_dashdash or [])]
    out = ctx.out(dry, at_prefix=True)
    removed, _skipped = parse_clean_output(out)
    paths: list[str] = []
    for shown in removed:
        rel = posixpath.normpath(posixpath.join(ctx.prefix, shown))
        # A directory goes as a whole (an empty one holds nothing to lose).
        paths.extend(files_under(ctx.toplevel, rel) if shown.endswith("/") else [rel])
    ignored: set[str] = set()
    if o.has("x") and paths:
        res = ctx.run(["check-ignore", "-z", "--stdin"], stdin=git.nul_join(paths), check=False)
        if res.returncode not in (0, 1):
            raise UnknownStateError("git check-ignore failed: " + res.stderr.decode().strip())
        ignored = {os.fsdecode(p) for p in git.zsplit(res.stdout)}
    losses = Losses()
    for p in paths:
        losses.add(p, "ignored" if o.has("X") or p in ignored else "untracked")
    return losses.radius(ctx)


def _stash(ctx: Context, args: list[str]) -> BlastRadius:
    action, rest = stash_action(args)
    if action in ("list", "show", "apply", "create", "store"):
        return BlastRadius(worktree=ctx.toplevel, losses=[])
    if action in ("push", "save"):
        o = parse_options("stash-push", rest)
        if o.unknown:
            return _everything(ctx.toplevel)
        pathspec = (
            (o.after_dashdash or [])
            if action == "save"
            else [
                *o.positionals,
                *(o.after_dashdash or []),
            ]
        )
        # Conflicts and intent-to-add entries anywhere make git refuse.
        full = read_state(ctx, hash_work=False)
        if any(e.unmerged or e.intent_to_add for e in full.entries.values()):
            return BlastRadius(worktree=ctx.toplevel, losses=[])
        limit = pathspec_args(ctx, o, pathspec)
        state = full if limit is None else read_state(ctx, limit, hash_work=False)
        losses = Losses()
        # stash records a submodule's commit but never touches the submodule's own work.
        if o.has("staged"):
            moved(state, losses, tracked=lambda e: e.xy[0] != "." and not e.gitlink)
        elif o.has("keep-index"):
            moved(state, losses, tracked=lambda e: e.xy[1] != "." and not e.gitlink)
        else:
            moved(state, losses, tracked=lambda e: not e.gitlink)
        if o.has("include-untracked") or o.has("all"):
            # A nested repository is not stashed: git records no gitlink for it.
            for p in (u for u in state.untracked if not u.endswith("/")):
                losses.add(p, "untracked")
        if o.has("all"):
            for p in state.ignored_files:
                losses.add(p, "ignored")
        return losses.radius(ctx, moves=bool(losses.kinds))
    if action in ("drop", "pop", "branch"):
        o = parse_options("stash-ref", rest)
        pos = o.positionals[1:] if action == "branch" else o.positionals
        entry = pos[0] if pos else "stash@{0}"
        if entry.isdigit():
            entry = f"stash@{{{entry}}}"
        oid = ctx.rev(entry)
        if oid is None:
            return BlastRadius(worktree=ctx.toplevel, losses=[])
        return BlastRadius(worktree=ctx.toplevel, losses=[], commits=[(oid, entry)])
    if action == "clear":
        return BlastRadius(worktree=ctx.toplevel, losses=[], commits=_stash_entries(ctx))
    return _everything(ctx.toplevel)


def _stash_entries(ctx: Context) -> list[tuple[str, str]]:
    if ctx.rev("refs/stash") is None:
        return []
    out = ctx.out(["log", "-g", "-z", "--format=%H", "refs/stash", "--"])
    return [(oid.decode().strip(), f"stash@{{{n}}}") for n, oid in enumerate(git.zsplit(out))]


def _rm(ctx: Context, args: list[str]) -> BlastRadius:
    o = parse_options("rm", args)
    if o.unknown:
        return _everything(ctx.toplevel)
    if o.has("dry-run"):
        return BlastRadius(worktree=ctx.toplevel, losses=[])
    pathspec = [*o.positionals, *(o.after_dashdash or [])]
    if not pathspec and not o.given("pathspec-from-file"):
        return BlastRadius(worktree=ctx.toplevel, losses=[])
    state = read_state(ctx, pathspec_args(ctx, o, pathspec))
    losses = Losses()
    force = o.has("force")
    tracked = [e for e in _tracked(state) if e.index is not None or e.intent_to_add]
    if o.has("cached"):
        # Staged content that matches neither the file nor HEAD: git refuses without -f.
        at_risk = [e for e in tracked if ix(e, e.head) and wi(e)]
        if at_risk and not force:
            return losses.radius(ctx)
        for e in at_risk:
            losses.add(e.path, "staged")
        return losses.radius(ctx)
    if not force:
        return losses.radius(ctx)  # git refuses anything with local changes
    for e in tracked:
        kinds = []
        if wt(e, e.head):
            kinds.append("worktree")
        if ix(e, e.head):
            kinds.append("staged")
        losses.add(e.path, *kinds)
    return losses.radius(ctx)


def _mv(ctx: Context, args: list[str]) -> BlastRadius:
    o = parse_options("mv", args)
    if o.unknown:
        return _everything(ctx.toplevel)
    if not o.has("force") or o.has("dry-run") or ctx.toplevel is None:
        return BlastRadius(worktree=ctx.toplevel, losses=[])
    operands = [*o.positionals, *(o.after_dashdash or [])]
    if len(operands) < 2:
        return BlastRadius(worktree=ctx.toplevel, losses=[])
    *sources, dest = operands
    dest_abs = ctx.abs_path(dest)
    targets: list[str] = []
    if os.path.isdir(dest_abs) and not os.path.islink(dest_abs):
        targets = [os.path.join(dest_abs, os.path.basename(ctx.abs_path(s))) for s in sources]
    elif len(sources) == 1:
        targets = [dest_abs]
    rels = [r for r in (ctx.rel(t) for t in targets) if r is not None]
    rels = [r for r in rels if os.path.lexists(os.path.join(ctx.toplevel, r))]
    if not rels:
        return BlastRadius(worktree=ctx.toplevel, losses=[])
    state = read_state(ctx)
    wanted = set(rels)
    losses = Losses()
    for e in _tracked(state):
        if e.path in wanted:
            kinds = []
            if wt(e, e.head):
                kinds.append("worktree")
            if ix(e, e.head):
                kinds.append("staged")
            losses.add(e.path, *kinds)
    for kind, shown in (("untracked", state.untracked), ("ignored", state.ignored)):
        for r in wanted:
            if any(r == p or (p.endswith("/") and r.startswith(p)) for p in shown):
                losses.add(r, kind)
    return losses.radius(ctx)


def _worktree(cmd: GitCommand) -> BlastRadius:
    args = cmd.args
    if not args or args[0] != "remove":
        return BlastRadius(worktree=None, losses=[])
    o = parse_options("worktree-remove", args[1:])
    operands = [*o.positionals, *(o.after_dashdash or [])]
    if o.unknown or len(operands) != 1:
        return _everything(None)
    main = context(cmd)
    if main is None:
        return BlastRadius(worktree=None, losses=[])
    path = main.abs_path(operands[0])
    if not os.path.isdir(path):
        return BlastRadius(worktree=None, losses=[])
    ctx = context(cmd, at=path)
    if ctx is None or ctx.toplevel is None:
        return BlastRadius(worktree=None, losses=[])
    if os.path.realpath(path) != os.path.realpath(ctx.toplevel):
        return BlastRadius(worktree=None, losses=[])  # not a worktree's top: git refuses
    if not os.path.exists(os.path.join(ctx.git_dir, "commondir")):
        return BlastRadius(worktree=ctx.toplevel, losses=[])  # the main worktree: git refuses
    force = o.count("force")
    if os.path.exists(os.path.join(ctx.git_dir, "locked")) and force < 2:
        return BlastRadius(worktree=ctx.toplevel, losses=[])
    state = read_state(ctx)
    losses = Losses()
    dirty = bool(state.entries) or bool(state.untracked)
    if dirty and not force:
        return losses.radius(ctx)
    for e in state.entries.values():
        kinds = []
        if wt(e, e.head):
            kinds.append("worktree")
        if ix(e, e.head):
            kinds.append("staged")
        losses.add(e.path, *(kinds or ["worktree"]))
    for p in state.untracked_files:
        losses.add(p, "untracked")
    for p in state.ignored_files:
        losses.add(p, "ignored")
    commits: list[tuple[str, str]] = []
    head = ctx.head()
    detached = ctx.run(["symbolic-ref", "-q", "HEAD"], check=False).returncode != 0
    if head and detached and _unreachable_from(ctx, head, [], exclude=()):
        commits.append((head, f"HEAD of {ctx.toplevel}"))
    return losses.radius(ctx, commits=commits)


def _branch_reset_loss(ctx: Context, name: str | None, new_tip: str) -> list[tuple[str, str]]:
    """A branch forced to another commit: its old tip, if nothing else reaches it."""
    if not name:
        return []
    ref = f"refs/heads/{name}"
    old = ctx.rev(ref)
    if old is None or old == new_tip:
        return []
    if _unreachable_from(ctx, old, [new_tip], exclude=(ref,)):
        return [(old, f"branch {name}")]
    return []


def _unreachable_from(ctx: Context, oid: str, extra: Sequence[str], exclude: Sequence[str]) -> bool:
    return bool(commits_held_only_by(ctx.run, oid, other_tips=extra, ignoring=exclude, limit=1))


def _branch(ctx: Context, args: list[str]) -> BlastRadius:
    o = parse_options("branch", args)
    if o.unknown:
        return _everything(ctx.toplevel)
    commits: list[tuple[str, str]] = []
    names = [*o.positionals, *(o.after_dashdash or [])]
    force = o.has("force")
    prefix = "refs/remotes/" if o.has("remotes") else "refs/heads/"
    if o.has("D") or (o.has("delete") and force):
        gone = [prefix + n for n in names]
        for n, ref in zip(names, gone, strict=True):
            oid = ctx.rev(ref)
            if oid and _unreachable_from(ctx, oid, [], exclude=gone):
                commits.append((oid, f"branch {n}"))
    elif o.has("M") or o.has("C") or ((o.has("move") or o.has("copy")) and force):
        if names:
            new = names[-1]
            old_oid = ctx.rev(names[0]) if len(names) == 2 else ctx.head()
            ref = f"refs/heads/{new}"
            oid = ctx.rev(ref)
            if oid and oid != old_oid:
                extra = [old_oid] if old_oid else []
                if _unreachable_from(ctx, oid, extra, exclude=(ref,)):
                    commits.append((oid, f"branch {new}"))
    elif force and names:
        start = ctx.rev(names[1]) if len(names) > 1 else ctx.head()
        if start:
            commits = _branch_reset_loss(ctx, names[0], start)
    return BlastRadius(worktree=ctx.toplevel, losses=[], commits=commits)


def _autostash_radius(ctx: Context) -> BlastRadius:
    state = read_state(ctx, hash_work=False)
    losses = Losses()
    moved(state, losses, tracked=lambda e: not e.gitlink)
    return losses.radius(ctx, moves=bool(losses.kinds))


def _sequencer_target(ctx: Context, sub: str) -> str | None:
    gd = ctx.git_dir
    candidates = {
        "cherry-pick": ["sequencer/head", "HEAD"],
        "revert": ["sequencer/head", "HEAD"],
        "am": ["rebase-apply/abort-safety", "ORIG_HEAD"],
        "merge": ["HEAD"],
    }[sub]
    for c in candidates:
        if "/" in c:
            try:
                with open(os.path.join(gd, c), encoding="ascii") as f:
                    oid = f.read().strip()
            except OSError:
                continue
            if oid:
                return oid
        else:
            found = ctx.rev(c)
            if found:
                return found
    return None


def _in_progress(ctx: Context, sub: str) -> bool:
    """Whether ``git <sub> --abort|--skip`` has something to act on."""
    ops = operations.in_progress(ctx.git_dir)
    if sub in ("cherry-pick", "revert"):
        return "cherry-pick" in ops or "revert" in ops  # git's sequencer stops either one
    return sub in ops


def _rebase_like(ctx: Context, args: list[str]) -> BlastRadius:
    sub = ctx.cmd.subcommand or ""
    spec = {"cherry-pick": "sequencer", "revert": "sequencer"}.get(sub, sub)
    o = parse_options(spec, args)
    head = ctx.head()
    if o.has("abort") or o.has("skip"):
        if not _in_progress(ctx, sub):
            return BlastRadius(worktree=ctx.toplevel, losses=[])  # git: nothing to abort
        losses = Losses()
        if sub == "rebase":
            orig = None
            for d in ("rebase-merge", "rebase-apply"):
                try:
                    with open(os.path.join(ctx.git_dir, d, "orig-head"), encoding="ascii") as f:
                        orig = f.read().strip()
                    break
                except OSError:
                    continue
            x = orig if o.has("abort") else head
            if x is None:
                return BlastRadius(worktree=ctx.toplevel, losses=[])
            target = Target(ctx, x, head)
            state = read_state(ctx, target=target)
            r1(ctx, state, target, losses)
        else:
            x = _sequencer_target(ctx, sub) if o.has("abort") else head
            target = Target(ctx, x, head)
            state = read_state(ctx, target=target)
            r5(state, target, losses)
        return losses.radius(ctx, state)
    if sub in ("rebase", "pull", "merge") and autostash(ctx.cmd, o):
        return _autostash_radius(ctx)
    if sub == "merge" and not (o.has("continue") or o.has("quit")):
        losses = Losses()
        heads = o.positionals or ["@{upstream}"]
        state = read_state(ctx, hash_work=False)
        for name in heads:
            oid = ctx.rev(name)
            if oid is None:
                return BlastRadius(worktree=ctx.toplevel, losses=[])
            overwrite = not o.given("overwrite-ignore") or o.has("overwrite-ignore")
            if overwrite:
                target = Target(ctx, oid, head)
                _add_collisions(state, target, losses, untracked=False, ignored=True)
        return losses.radius(ctx)
    if o.unknown:
        return _everything(ctx.toplevel)
    return BlastRadius(worktree=ctx.toplevel, losses=[])


def _submodule(ctx: Context, args: list[str]) -> BlastRadius:
    words = [a for a in args if not a.startswith("-")]
    action = words[0] if words else ""
    if action == "update":
        rest = args[args.index("update") + 1 :]
        if parse_options("submodule-update", rest).has("force"):
            return _everything(ctx.toplevel)
        return BlastRadius(worktree=ctx.toplevel, losses=[])
    if action != "deinit" or ctx.toplevel is None:
        return BlastRadius(worktree=ctx.toplevel, losses=[])
    rest = args[args.index("deinit") + 1 :]
    o = parse_options("submodule-deinit", rest)
    if o.unknown:
        return _everything(ctx.toplevel)
    pathspec = [*o.positionals, *(o.after_dashdash or [])]
    if not pathspec and not o.has("all"):
        return BlastRadius(worktree=ctx.toplevel, losses=[])
    out = ctx.out(["ls-files", "-s", "-z", "--full-name", "--", *pathspec], at_prefix=True)
    losses = Losses()
    for rec in git.zsplit(out):
        meta, _, path_b = rec.partition(b"\t")
        if not meta.startswith(GITLINK.encode()):
            continue
        sub_path = os.fsdecode(path_b)
        sub_dir = os.path.join(ctx.toplevel, sub_path)
        if not os.path.exists(os.path.join(sub_dir, ".git")):
            continue
        sub_ctx = context(ctx.cmd, at=sub_dir)
        if sub_ctx is None or sub_ctx.toplevel is None:
            continue
        state = read_state(sub_ctx, hash_work=False)
        dirty = bool(state.entries) or bool(state.untracked)
        if dirty and not o.has("force"):
            return BlastRadius(worktree=ctx.toplevel, losses=[])  # git refuses
        for e in state.entries.values():
            losses.add(posixpath.join(sub_path, e.path), "worktree")
        for p in state.untracked_files:
            losses.add(posixpath.join(sub_path, p), "untracked")
        for p in state.ignored_files:
            losses.add(posixpath.join(sub_path, p), "ignored")
    return losses.radius(ctx)


def _sparse_checkout(ctx: Context, args: list[str]) -> BlastRadius:
    if not args or args[0] not in ("set", "reapply", "init"):
        return BlastRadius(worktree=ctx.toplevel, losses=[])
    action = args[0]
    o = parse_options("sparse-checkout", args[1:])
    cone_cfg = ctx.cmd.config_bool("core.sparsecheckoutcone", None)
    cone = o.has("cone") if o.given("cone") else (cone_cfg is not False)
    if o.unknown or o.has("stdin") or not cone or ctx.toplevel is None:
        return _everything(ctx.toplevel)
    if action == "set":
        dirs = [d.strip("/") for d in o.positionals + (o.after_dashdash or [])]
    elif action == "init":
        dirs = []
    else:
        listed = ctx.run(["sparse-checkout", "list"], check=False)
        if listed.returncode != 0:
            return _everything(ctx.toplevel)
        dirs = [d.strip("/") for d in listed.stdout.decode("utf-8", "replace").splitlines()]
    state = read_state(ctx, hash_work=False)
    losses = Losses()
    tracked_dirs = _tracked_dirs(ctx)
    # A directory leaving the cone is deleted with its ignored files, unless it still
    # holds untracked files or local changes (then git keeps all of it and warns).
    leaving: dict[str, list[str]] = {}
    for p in state.ignored_files:
        parent = posixpath.dirname(p)
        if not parent or _in_cone(parent, dirs):
            continue
        top_dir = _leaving_dir(parent, dirs)
        if top_dir is not None and top_dir in tracked_dirs:
            leaving.setdefault(top_dir, []).append(p)
    keepers = [*state.untracked, *state.entries]
    for top_dir, ignored in leaving.items():
        if any(k.startswith(top_dir + "/") for k in keepers):
            continue
        for p in ignored:
            losses.add(p, "ignored")
    return losses.radius(ctx)


def _in_cone(directory: str, cone: Sequence[str]) -> bool:
    for c in cone:
        if directory == c or directory.startswith(c + "/") or c.startswith(directory + "/"):
            return True
    return False


def _leaving_dir(directory: str, cone: Sequence[str]) -> str | None:
    """The outermost directory of ``directory``'s chain that is out of the cone."""
    parts = directory.split("/")
    for n in range(1, len(parts) + 1):
        d = "/".join(parts[:n])
        if not _in_cone(d, cone):
            return d
    return None


def _tracked_dirs(ctx: Context) -> set[str]:
    out = ctx.out(["ls-files", "-z", "--full-name", "--sparse"])
    dirs: set[str] = set()
    for p in git.zsplit(out):
        parts = os.fsdecode(p).split("/")[:-1]
        for n in range(1, len(parts) + 1):
            dirs.add("/".join(parts[:n]))
    return dirs


_HANDLERS: dict[str, Callable[[Context, list[str]], BlastRadius]] = {
    "reset": _reset,
    "checkout": _checkout,
    "switch": _switch,
    "restore": _restore,
    "clean": _clean,
    "stash": _stash,
    "rm": _rm,
    "mv": _mv,
    "branch": _branch,
    "rebase": _rebase_like,
    "pull": _rebase_like,
    "merge": _rebase_like,
    "cherry-pick": _rebase_like,
    "revert": _rebase_like,
    "am": _rebase_like,
    "submodule": _submodule,
    "sparse-checkout": _sparse_checkout,
    "worktree": lambda ctx, args: BlastRadius(worktree=None, losses=[]),
}
