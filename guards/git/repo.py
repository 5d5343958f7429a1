"""Repository discovery: where the work tree, the git dir and the shared common dir are."""

from __future__ import annotations

import os

from guards.errors import ExitCode, GuardsError
from guards.git.names import ObjectId, RefName
from guards.values import Value

TYPE_CHECKING = False  # see guards.values: these imports cost start-up time
if TYPE_CHECKING:
    from pathlib import Path

    from guards.git.process import Result
    from guards.git.refs import Runner

_DISCOVERY_FLAGS = (
    "--is-bare-repository",
    "--is-inside-work-tree",
    "--show-object-format",
    "--absolute-git-dir",
    "--path-format=absolute",
    "--git-common-dir",
    "--show-prefix",
    "--show-toplevel",
)
#: How many lines the flags above print (``--path-format`` prints nothing).
_DISCOVERY_LINES = 7


class NotARepositoryError(GuardsError):
    exit_code = ExitCode.USAGE


class NoWorkTreeError(GuardsError):
    exit_code = ExitCode.USAGE


#: The ledger's directory inside the common git dir.
LEDGER_DIR = "guards"


class Repo(Value):
    """Where a repository is. Its directories are kept as text and made :class:`Path`
    objects on use: the frame works on the text alone and never imports pathlib."""

    __slots__ = (
        "common_dir_text",
        "git_dir_text",
        "is_bare",
        "object_format",
        "prefix",
        "toplevel_text",
    )

    def __init__(
        self,
        git_dir: str,
        common_dir: str,
        toplevel: str | None,
        prefix: str,
        is_bare: bool,
        object_format: str,
    ) -> None:
        self.git_dir_text = git_dir
        self.common_dir_text = common_dir
        #: None in a bare repository (or inside a .git dir).
        self.toplevel_text = toplevel
        self.prefix = prefix
        self.is_bare = is_bare
        self.object_format = object_format

    @property
    def git_dir(self) -> Path:
        return _path(self.git_dir_text)

    @property
    def common_dir(self) -> Path:
        return _path(self.common_dir_text)

    @property
    def toplevel(self) -> Path | None:
        return None if self.toplevel_text is None else _path(self.toplevel_text)

    @property
    def is_linked_worktree(self) -> bool:
        return self.git_dir != self.common_dir

    @property
    def ledger_dir_text(self) -> str:
        """Per repository, shared by every linked worktree, never committed."""
        return os.path.join(self.common_dir_text, LEDGER_DIR)

    @property
    def ledger_dir(self) -> Path:
        return _path(self.ledger_dir_text)

    @property
    def worktree_key(self) -> str:
        """The top level of the work tree, as the ledger names it; a clear error in a bare
        repository."""
        if self.toplevel_text is None:
            raise NoWorkTreeError(
                f"{self.git_dir_text} has no work tree (bare repository or .git dir)"
            )
        return self.toplevel_text

    @property
    def worktree(self) -> Path:
        """The top level of the work tree; a clear error in a bare repository."""
        return _path(self.worktree_key)

    def run(
        self,
        args: list[str],
        *,
        check: bool = True,
        stdin: bytes | None = None,
        extra_env: dict[str, str] | None = None,
        readonly: bool = True,
    ) -> Result:
        """git with this repository's work tree (or git dir, when bare) as cwd."""
        from guards.git import process as git  # (here: a record finds its repository without it)

        return git.run(
            args,
            cwd=self.toplevel_text or self.git_dir_text,  # text: no pathlib for a call
            check=check,
            stdin=stdin,
            extra_env=extra_env,
            readonly=readonly,
        )

    def index_file_text(self) -> str:
        """The index this work tree uses (its own in a linked worktree; honours
        ``GIT_INDEX_FILE``)."""
        if "GIT_INDEX_FILE" not in os.environ:
            # git's layout: the index is "index" in the (per-worktree) git dir; no git call.
            return os.path.join(self.git_dir_text, "index")
        from guards.git.process import strip_newline

        res = self.run(["rev-parse", "--path-format=absolute", "--git-path", "index"])
        return os.fsdecode(strip_newline(res.stdout))

    def head_tree_or_empty(self) -> str:
        """HEAD's tree, or the empty tree on an unborn branch."""
        from guards.git.objects import empty_tree

        res = self.run(["rev-parse", "-q", "--verify", "HEAD^{tree}"], check=False)
        return (
            res.stdout.decode().strip() if res.returncode == 0 else empty_tree(self.object_format)
        )

    def head(self) -> ObjectId | None:
        """HEAD's commit id, or None on an unborn branch."""
        res = self.run(["rev-parse", "--verify", "-q", "HEAD^{commit}"], check=False)
        if res.returncode != 0:
            return None
        return ObjectId(res.stdout.decode().strip())

    def head_ref(self) -> RefName | None:
        """The branch HEAD points at (``refs/heads/...``), or None when detached."""
        from guards.git.history import symbolic_head

        return symbolic_head(self.run)

    def filemode(self) -> bool:
        """Whether git keeps the executable bit in this repository (``core.fileMode``:
        yes unless set false)."""
        return config_bool(self.run, "core.filemode") is not False

    def symlinks(self) -> bool:
        """Whether git keeps symlinks as symlinks here (``core.symlinks``: yes unless set
        false; git init sets it false where the file system has none)."""
        return config_bool(self.run, "core.symlinks") is not False

    def hooks_dir(self) -> Path:
        """The hooks directory git reads for this repository (``core.hooksPath`` honoured)."""
        from guards.git.process import strip_newline

        res = self.run(["rev-parse", "--path-format=absolute", "--git-path", "hooks"])
        return _path(os.fsdecode(strip_newline(res.stdout)))

    def operations_in_progress(self) -> list[str]:
        """merge, rebase, cherry-pick, revert, am, bisect (see guards.git.operations)."""
        from guards.git.operations import in_progress

        return in_progress(self.git_dir_text)


def config_bool(run: Runner, key: str) -> bool | None:
    """A boolean setting as git reads it (``yes``, ``on``, ``1``...); None when it is
    unset or not a boolean."""
    res = run(["config", "-z", "--type=bool", "--get", key], check=False)
    return {b"true\0": True, b"false\0": False}.get(res.stdout)


def discover(cwd: str | os.PathLike[str] | None = None) -> Repo:
    """The repository containing ``cwd``: from its files in the common layouts
    (:func:`plain_layout`), else from one ``git rev-parse`` call."""
    return Discovery(cwd).repo()


class Discovery:
    """:func:`discover` started in the background, so that its git call overlaps the
    caller's next one (the frame asks ``git status`` meanwhile). The common layouts are
    found without git (:func:`plain_layout`): then nothing runs in the background."""

    __slots__ = ("_cwd", "_found", "_pending")

    def __init__(self, cwd: str | os.PathLike[str] | None = None) -> None:
        self._cwd = cwd
        self._found = plain_layout(cwd)
        self._pending = None
        if self._found is None:
            from guards.git import process as git  # (here: the common layouts need no git)

            self._pending = git.start(["rev-parse", *_DISCOVERY_FLAGS], cwd=cwd)

    def repo(self) -> Repo:
        """The repository; :class:`NotARepositoryError` when there is none."""
        if self._pending is None:
            assert self._found is not None
            return self._found
        return _from_rev_parse(self._pending.result(check=False), self._cwd)

    def finish(self) -> None:
        """Wait for git without reading its answer (nothing turned out to need it)."""
        if self._pending is not None:
            self._pending.result(check=False)


#: Variables that cannot change what discovery finds (identities, editors, transport,
#: traces, the seal of tests and tools: no system config, a template dir), by name or
#: by prefix. With any other ``GIT_*`` variable set (``GIT_DIR``, ``GIT_WORK_TREE``,
#: ``GIT_CEILING_DIRECTORIES``, ``GIT_CONFIG_*``, ``GIT_TEST_*``, ...), git is asked.
_INERT_ENV = frozenset(
    {
        "GIT_EDITOR",
        "GIT_SEQUENCE_EDITOR",
        "GIT_PAGER",
        "GIT_ASKPASS",
        "GIT_TERMINAL_PROMPT",
        "GIT_TEMPLATE_DIR",
        "GIT_CONFIG_NOSYSTEM",
        "GIT_OPTIONAL_LOCKS",
        "GIT_MERGE_AUTOEDIT",
    }
)
_INERT_ENV_PREFIXES = (
    "GIT_AUTHOR_",
    "GIT_COMMITTER_",
    "GIT_SSH",
    "GIT_SSL_",
    "GIT_HTTP_",
    "GIT_CURL_",
    "GIT_PROXY_",
    "GIT_TRACE",
)
#: Words of a repository's config that may change discovery's answer (``core.worktree``,
#: ``core.bare``, ``extensions.*`` such as ``objectFormat`` and ``worktreeConfig``,
#: ``include``/``includeIf``): with any of them in it, anywhere, git is asked. (A key's
#: name is never quoted nor escaped, so it cannot hide.)
_CONFIG_UNUSUAL = ("worktree", "bare", "extensions", "include")
#: What a plain repository's config says about the same (git init writes these).
_CONFIG_USUAL = ("bare = false", "bare=false")


def plain_layout(cwd: str | os.PathLike[str] | None = None) -> Repo | None:
    """The repository containing ``cwd`` as ``git rev-parse`` would find it, without
    starting git, for the common layouts only: the nearest ``.git`` up from the
    directory is a git dir, or a linked worktree's gitdir file; none of the directories
    on the way is a git dir itself or on another file system; every part is owned by
    this user (safe.directory); the config says nothing about work trees, bareness or
    extensions and includes nothing; no ``GIT_*`` variable that discovery reads is set.
    None whenever anything is else (a submodule, a bare repository, a symlinked
    ``.git``, no repository at all): then git answers (tests/test_repo.py compares the
    two on every layout it builds)."""
    for name in os.environ:
        if name.startswith("GIT_") and not (
            name in _INERT_ENV or name.startswith(_INERT_ENV_PREFIXES)
        ):
            return None
    if not hasattr(os, "geteuid") or (os.geteuid() == 0 and "SUDO_UID" in os.environ):
        return None  # no owners to compare; git's ownership rule for root has a twist
    try:
        start = os.path.realpath(os.getcwd() if cwd is None else os.fspath(cwd))
        device = os.stat(start).st_dev
        top = start
        while True:
            dotgit = os.path.join(top, ".git")
            try:
                st = os.lstat(dotgit)
                break
            except FileNotFoundError:
                pass
            parent = os.path.dirname(top)
            if (
                parent == top
                or os.path.lexists(os.path.join(top, "HEAD"))  # a git dir, or bare
                or os.stat(parent).st_dev != device
            ):
                return None
            top = parent
        return _plain_repo(top, dotgit, st, start)
    except (OSError, ValueError):
        return None


def _plain_repo(top: str, dotgit: str, st: os.stat_result, start: str) -> Repo | None:
    import stat

    uid = os.geteuid()
    if stat.S_ISDIR(st.st_mode):
        git_dir = common = dotgit
        if os.path.lexists(os.path.join(git_dir, "commondir")):
            return None
    elif stat.S_ISREG(st.st_mode):
        with open(dotgit, "rb") as f:
            line = f.read(4097)
        if not line.startswith(b"gitdir: ") or line.count(b"\n") != 1 or not line.endswith(b"\n"):
            return None
        git_dir = os.path.join(top, os.fsdecode(line[len(b"gitdir: ") : -1]))
        with open(os.path.join(git_dir, "commondir"), "rb") as f:  # a linked worktree's
            # (git trims every CR and LF at the end, as here: setup.c's get_common_dir)
            common = os.path.join(git_dir, os.fsdecode(f.read().rstrip(b"\r\n")))
    else:
        return None
    git_dir, common = os.path.realpath(git_dir), os.path.realpath(common)
    if st.st_uid != uid or any(os.stat(p).st_uid != uid for p in (top, git_dir, common)):
        return None
    if not (
        os.path.isdir(os.path.join(common, "objects"))
        and os.path.isdir(os.path.join(common, "refs"))
        and _plain_head(os.path.join(git_dir, "HEAD"))
        and not os.path.lexists(os.path.join(git_dir, "config.worktree"))
        and _plain_config(os.path.join(common, "config"))
    ):
        return None
    prefix = "" if start == top else start[len(top) :].lstrip("/") + "/"
    return Repo(git_dir, common, top, prefix, is_bare=False, object_format="sha1")


def _plain_head(path: str) -> bool:
    """HEAD is a file naming a branch or a commit (not a symlink, not something else)."""
    import stat

    if not stat.S_ISREG(os.lstat(path).st_mode):
        return False
    with open(path, "rb") as f:
        head = f.read(512)
    return head.startswith(b"ref: refs/") or (
        len(head) in (41, 65) and head.endswith(b"\n") and head[:-1].isalnum()
    )


def _plain_config(path: str) -> bool:
    with open(path, "rb") as f:
        text = f.read().decode("utf-8").lower()
    for usual in _CONFIG_USUAL:
        text = text.replace(usual, "")
    return not any(word in text for word in _CONFIG_UNUSUAL)


def _path(text: str) -> Path:
    from pathlib import Path  # here, not at the top: the frame never needs it

    return Path(text)


def _from_rev_parse(res: Result, cwd: str | os.PathLike[str] | None) -> Repo:
    from guards.git.process import check_git_version

    lines = res.stdout.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    if res.returncode != 0 and len(lines) < _DISCOVERY_LINES - 1:
        check_git_version()
        msg = res.stderr.decode("utf-8", "replace").strip().splitlines()
        raise NotARepositoryError(
            (msg[-1] if msg else "not a git repository").removeprefix("fatal: ")
        )
    if len(lines) not in (_DISCOVERY_LINES - 1, _DISCOVERY_LINES):
        # A path holding a newline: ask for each value on its own.
        check_git_version()
        lines = [
            _single(flag, cwd) for flag in _DISCOVERY_FLAGS if flag != "--path-format=absolute"
        ]
    bare, inside, fmt, git_dir, common_dir, prefix = lines[:6]
    toplevel = lines[6] if len(lines) == _DISCOVERY_LINES and inside == b"true" else None
    return Repo(
        git_dir=os.fsdecode(git_dir),
        common_dir=os.fsdecode(common_dir),
        toplevel=os.fsdecode(toplevel) if toplevel else None,
        prefix=os.fsdecode(prefix),
        is_bare=bare == b"true",
        object_format=fmt.decode() or "sha1",
    )


def _single(flag: str, cwd: str | os.PathLike[str] | None) -> bytes:
    from guards.git import process as git

    args = ["rev-parse", "--path-format=absolute", flag]
    res = git.run(args, cwd=cwd, check=False)
    return git.strip_newline(res.stdout) if res.returncode == 0 else b""
