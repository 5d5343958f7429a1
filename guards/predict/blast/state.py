"""The repository as the command sees it: where it runs (:class:`Context`), the dirty
state of its work tree (:class:`State`), and its target X (:class:`Target`).

Everything is read with git calls that never rewrite the index (``--no-optional-locks``
status, ``diff-tree``, ``hash-object`` of work tree files). Notation as in
docs/blast-radius.md: H = HEAD, I = index (stage 0), W = work tree, X = the command's
target; a version is ``(mode, oid)``.
"""

from __future__ import annotations

import os
import stat

from guards.errors import UnknownStateError
from guards.git import process as git
from guards.git.dirty import parse_porcelain_v2, read_status
from guards.git.entries import index_entries, parse_raw_diff
from guards.git.files import walk_files
from guards.git.objects import GITLINK, SYMLINK, ZERO_MODE, blob_oid, empty_tree
from guards.git.quoting import c_unquote
from guards.git.repo import config_bool
from guards.predict.blast.radius import CannotTell, GitRefuses
from guards.predict.options import GIT_WORDS, git_rejects, parse_options
from guards.values import MutableValue

TYPE_CHECKING = False  # see guards.values: these imports cost start-up time
if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    from guards.git.entries import Entry as TreeEntry
    from guards.predict.cmdline import GitCommand
    from guards.predict.options import Options

Version = tuple[str, str]


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
        extra_env: dict[str, str] | None = None,
    ) -> git.Result:
        try:
            return git.run(
                [*self.options, *args],
                cwd=self._cwd(at_prefix),
                env=self.env,
                stdin=stdin,
                check=check,
                extra_env=extra_env,
            )
        except git.GitError as e:
            raise UnknownStateError(str(e)) from e

    def out(
        self, args: Sequence[str], *, at_prefix: bool = False, stdin: bytes | None = None
    ) -> bytes:
        return self.run(args, at_prefix=at_prefix, stdin=stdin).stdout

    def start(self, args: Sequence[str], *, at_prefix: bool = False) -> git.Pending:
        """:meth:`run` started in the background (see :func:`guards.git.start`)."""
        return git.start([*self.options, *args], cwd=self._cwd(at_prefix), env=self.env)

    def finish(self, pending: git.Pending) -> bytes:
        """The output of a call :meth:`start` began; its failure as :meth:`run`'s."""
        try:
            return pending.result().stdout
        except git.GitError as e:
            raise UnknownStateError(str(e)) from e

    def _cwd(self, at_prefix: bool) -> str:
        if at_prefix and self.toplevel and self.prefix:
            return os.path.join(self.toplevel, self.prefix)
        return self.toplevel or self.git_dir

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


def context(cmd: GitCommand, at: str | None = None) -> Context | None:
    """Discover the repository the command acts on; None outside any repository.

    ``at`` discovers the work tree containing another directory (``worktree remove``).
    """
    options = _kept_options(cmd.global_options)
    work_tree = cmd.env.get("GIT_WORK_TREE")
    if at is None and work_tree and not os.path.isdir(work_tree):
        raise GitRefuses("work tree")  # git dies: "cannot change to '...'"
    if at is None:
        env = dict(cmd.env)

        def ask(args: list[str]) -> git.Result:
            return cmd.query(args, check=False)
    else:
        env = {k: v for k, v in cmd.env.items() if k not in ("GIT_DIR", "GIT_WORK_TREE")}

        def ask(args: list[str]) -> git.Result:
            return git.run([*options, *args], cwd=at, env=env, check=False)

    # HEAD in the same call (the predictors nearly always need it): one git less.
    res = ask(list(git.CONTEXT_QUERY))
    lines = res.stdout.split(b"\n")
    # Five answers and HEAD's id (exit 0), no id on an unborn branch (exit 1), four
    # answers when there is no work tree; each line ends in "\n", hence one more piece.
    expected = {0: 7, 1: 6}.get(res.returncode, 5)
    one_by_one = len(lines) > 4 and len(lines) != expected
    if one_by_one:
        # A path holding a newline: ask for each value on its own (HEAD later).
        lines = [git.strip_newline(ask(["rev-parse", flag]).stdout) for flag in git.CONTEXT_FLAGS]
    if len(lines) < 4:
        if b"not a git repository" in res.stderr:
            return None
        from guards.git.process import check_git_version

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

    __slots__ = (
        "assume_unchanged",
        "gitlink",
        "head",
        "index",
        "path",
        "skip_worktree",
        "submodule",
        "unmerged",
        "work",
        "xy",
    )

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
        #: The index entry is marked ``assume-unchanged`` / ``skip-worktree``: git's
        #: status (and much of git) does not look at its file, which differs from it.
        self.assume_unchanged = False
        self.skip_worktree = False
        #: porcelain v2's ``<sub>`` field: ``N...``, or ``S<c><m><u>`` for a submodule
        #: (``m``: its tracked files changed, ``u``: it has untracked files).
        self.submodule = "N..."

    @property
    def intent_to_add(self) -> bool:
        return self.xy == ".A"

    @property
    def submodule_modified(self) -> bool:
        """A submodule whose own tracked files have changes."""
        return self.submodule[2:3] == "M"

    @property
    def submodule_dirty(self) -> bool:
        """A submodule with changed tracked files or untracked files of its own."""
        return self.submodule_modified or self.submodule[3:4] == "U"

    @property
    def hidden(self) -> bool:
        """A change ``git status`` does not show (an index flag hides it)."""
        return self.assume_unchanged or self.skip_worktree


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


def _ver(mode: str, oid: str) -> Version | None:
    return None if mode == ZERO_MODE else (mode, oid)


def _version(entry: TreeEntry | None) -> Version | None:
    return None if entry is None else (entry.mode, entry.oid)


def recurses_submodules(ctx: Context, o: Options, state: State) -> bool:
    """Whether a command that can recurse (``--recurse-submodules``, else the
    ``submodule.recurse`` setting) does, asked only where it matters: when a submodule in
    ``state`` has changes of its own."""
    if not any(e.gitlink and e.submodule_dirty for e in state.entries.values()):
        return False
    if o.given("recurse-submodules"):
        return o.has("recurse-submodules")
    return config_bool(ctx.run, "submodule.recurse") is True


def command_options(ctx: Context, spec_name: str, args: Sequence[str]) -> Options:
    """The command's options read with git's table; raises :class:`GitRefuses` when git
    refuses them, :class:`CannotTell` for an option git knows and guards does not."""
    o = parse_options(spec_name, args)
    if git_rejects(spec_name, o):
        raise GitRefuses(spec_name)
    if o.unknown:
        words = GIT_WORDS.get(spec_name)
        if spec_name == "sequencer" and ctx.cmd.subcommand:
            words = (ctx.cmd.subcommand,)
        if words is None or not git_rejects_options(ctx, words, o.unknown):
            raise CannotTell(" ".join(o.unknown))
        raise GitRefuses(spec_name)
    return o


def git_rejects_options(ctx: Context, words: Sequence[str], unknown: Sequence[str]) -> bool:
    """Whether git's own option table for ``git <words>`` surely lacks each of these
    options (a typo such as ``reset --hadr``: git refuses the command). Asked with
    ``--git-completion-helper-all`` (long options) and ``-h`` (short ones), which print
    the table and exit; anything unclear counts as "git may know it"."""
    longs: list[str] = []
    shorts: set[str] = set()
    if any(u.startswith("--") for u in unknown):
        res = ctx.run([*words, "--git-completion-helper-all"], at_prefix=True, check=False)
        longs = [w.rstrip("=")[2:] for w in res.stdout.decode("utf-8", "replace").split()]
        longs = [w for w in longs if w]
        if res.returncode != 0 or not longs:
            return False
    if any(not u.startswith("--") for u in unknown):
        res = ctx.run([*words, "-h"], at_prefix=True, check=False, extra_env=_C_LOCALE)
        for line in res.stdout.decode("utf-8", "replace").splitlines():
            word = line.strip().split(",")[0].split(" ")[0]
            if len(word) == 2 and word[0] == "-" and word[1] != "-":
                shorts.add(word[1])
        if res.returncode != 129 or not shorts:
            return False
    for u in unknown:
        if u.startswith("--"):
            body = u[2:].partition("=")[0]
            if not body or any(name.startswith(body) for name in longs):
                return False
            if body.startswith("no-") and any(name.startswith(body[3:]) for name in longs):
                return False
        elif len(u) != 2 or u[1] in shorts:
            return False
    return True


_C_LOCALE = {"LC_ALL": "C", "LANGUAGE": "C"}


def pathspec_args(ctx: Context, opts: Options, pathspec: Sequence[str]) -> list[str] | None:
    """Status arguments limiting it to the command's pathspec; None = the whole tree.

    ``--pathspec-from-file=-`` is stdin, which guards never reads: the exact set is
    unknowable, so the command's whole scope counts.
    """
    source = opts.value("pathspec-from-file")
    if source is not None:
        if source == "-":
            return None
        # git status has no --pathspec-from-file: read the file as git would. A pipe
        # (`<(...)`), FIFO or device is never read: what guards read, git would not get.
        try:
            if not stat.S_ISREG(os.stat(ctx.abs_path(source)).st_mode):
                return None
            with open(ctx.abs_path(source), "rb") as f:
                data = f.read()
        except OSError:
            raise GitRefuses(f"cannot read {source}") from None  # git cannot either
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
    # The index flags status never shows, asked meanwhile (see hidden_changes).
    flags = ctx.start(_FLAGS_QUERY + (limit or []), at_prefix=True) if ctx.toplevel else None
    try:
        return _read_state(ctx, limit, hash_work, target, flags)
    finally:
        if flags is not None:
            flags.result(check=False)  # waited for on every way out (once read: at once)


def _read_state(
    ctx: Context,
    limit: list[str] | None,
    hash_work: bool,
    target: Target | None,
    flags: git.Pending | None,
) -> State:
    try:
        out = read_status(lambda args: _run_status(ctx, args), ignored=True, limit=limit)
    except git.GitError as failed:
        raise UnknownStateError(str(failed)) from failed
    state = State(toplevel=ctx.toplevel or "")
    for d in parse_porcelain_v2(out):
        if d.untracked:
            state.untracked.append(d.path)
        elif d.ignored:
            state.ignored.append(d.path)
        elif d.unmerged:  # the base (stage 1) stands for HEAD's side; no index entry
            e = Entry(d.path, d.xy, _ver(d.head_mode, d.head_oid), None, unmerged=True)
            if d.worktree_mode != ZERO_MODE:
                e.work = (d.worktree_mode, "")
            state.entries[d.path] = e
        else:
            e = Entry(d.path, d.xy, _ver(d.head_mode, d.head_oid), _ver(d.index_mode, d.index_oid))
            e.gitlink = GITLINK in (d.head_mode, d.index_mode, d.worktree_mode)
            e.submodule = d.submodule
            if d.xy[1] == ".":
                e.work = e.index
            elif d.worktree_mode != ZERO_MODE:
                e.work = (d.worktree_mode, "")  # hashed below
            if e.intent_to_add:
                e.index = None
            state.entries[d.path] = e
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
    hidden_changes(ctx, state, limit, flags)
    return state


#: ``ls-files`` with each entry's tag: lower case for assume-unchanged, ``S`` skip-worktree.
_FLAGS_QUERY = ["ls-files", "-v", "-z", "--full-name"]


def hidden_changes(
    ctx: Context, state: State, limit: list[str] | None, started: git.Pending | None = None
) -> None:
    """Files whose index entry is marked assume-unchanged or skip-worktree and differs
    from it: ``git status`` never lists them, yet ``reset --hard``, ``checkout -- p``,
    ``rm -f`` or ``stash`` overwrite them. Found from ``ls-files -v`` (a lower-case tag:
    assume-unchanged; ``S``: skip-worktree) and hashed; a skip-worktree path absent
    from the work tree holds nothing to lose."""
    if ctx.toplevel is None:
        return
    if started is None:
        started = ctx.start(_FLAGS_QUERY + (limit or []), at_prefix=True)
    out = ctx.finish(started)
    flags: dict[str, tuple[bool, bool]] = {}
    for rec in git.zsplit(out):
        tag = rec[:1]
        if tag == b"H" or not tag:
            continue
        assume_unchanged, skip_worktree = tag.islower(), tag in (b"S", b"s")
        if assume_unchanged or skip_worktree:
            path = os.fsdecode(rec[2:])
            if os.path.lexists(os.path.join(ctx.toplevel, path)):
                flags[path] = (assume_unchanged, skip_worktree)
    if not flags:
        return
    listed = ctx.out(["--literal-pathspecs", "ls-files", "-s", "-z", "--full-name", "--", *flags])
    entries: list[Entry] = []
    for item in index_entries(listed):
        path, mode = item.path, item.entry.mode
        if item.stage != 0 or path not in flags:
            continue
        ver = (mode, item.entry.oid)
        e = state.entries.get(path) or Entry(path, ".M", ver, ver)
        e.assume_unchanged, e.skip_worktree = flags[path]
        full = os.path.join(ctx.toplevel, path)
        st = os.lstat(full)
        if stat.S_ISLNK(st.st_mode):
            e.work = (SYMLINK, "")
        elif stat.S_ISDIR(st.st_mode):
            e.work = (mode, "?")  # a directory where the index has a file
        else:
            e.work = ("100755" if st.st_mode & stat.S_IXUSR else "100644", "")
        entries.append(e)
    _hash_work(ctx, [e for e in entries if not e.work or not e.work[1]])
    for e in entries:
        if e.work != e.index:
            state.entries[e.path] = e


def _run_status(ctx: Context, args: list[str]) -> git.Result:
    """``git status`` as the command sees it. With HEAD naming no commit at all (the zero
    id: git then switches branches as if HEAD were unborn), status fails ("bad object
    HEAD"); it is asked again through a private git dir whose HEAD is unborn and which
    shares everything else (objects, refs, config, the real index, read-only)."""
    res = ctx.run(args, at_prefix=True, check=False)
    if res.returncode == 0 or ctx.head() is not None or not ctx.toplevel:
        return res
    if b"HEAD" not in res.stderr:
        return res
    import tempfile

    with tempfile.TemporaryDirectory(prefix="guards-head-") as private:
        with open(os.path.join(private, "HEAD"), "w", encoding="ascii") as f:
            f.write("ref: refs/heads/guards-unborn-head\n")
        common = ctx.run(["rev-parse", "--git-common-dir"]).stdout.decode().strip()
        with open(os.path.join(private, "commondir"), "w", encoding="utf-8") as f:
            f.write(os.path.join(ctx.toplevel, common) + "\n")
        index = ctx.env.get("GIT_INDEX_FILE") or os.path.join(ctx.git_dir, "index")
        env = {**ctx.env, "GIT_DIR": private, "GIT_INDEX_FILE": index}
        cwd = os.path.join(ctx.toplevel, ctx.prefix) if ctx.prefix else ctx.toplevel
        again = git.run(args, cwd=cwd, env=env, check=False)
    return again if again.returncode == 0 else res


def files_under(toplevel: str, rel_dir: str) -> Iterable[str]:
    """Every file and symlink below a directory, those of nested repositories too (their
    ``.git`` left out: a gitdir link cannot be rescued as a path, and the repository it
    points to is not deleted with it)."""
    return (
        p
        for p, repository in walk_files(toplevel, rel_dir, enter_repositories=True)
        if not repository
    )


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
        elif not (stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode)):
            e.work = (e.work[0], "?")  # a FIFO, socket or device: never opened
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
        # "--": an untracked file may be named like a commit id (git would say ambiguous).
        # No submodule config either: diffing a gitlink reads .gitmodules (t7406).
        diff = ["diff-tree", "-r", "-z", "--no-renames", "--ignore-submodules=none"]
        out = ctx.out([*diff, head or empty, oid, "--"])
        for path, change in parse_raw_diff(out).items():
            self.diff[path] = (_version(change.old), _version(change.new))

    def version(self, e: Entry) -> Version | None:
        if e.path in self.diff:
            return self.diff[e.path][1]
        return e.head
