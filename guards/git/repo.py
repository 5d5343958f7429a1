"""Repository discovery: where the work tree, the git dir and the shared common dir are."""

from __future__ import annotations

import os

from guards import git
from guards.errors import ExitCode, GuardsError
from guards.git.names import ObjectId, RefName
from guards.values import Value

TYPE_CHECKING = False  # see guards.values: these imports cost start-up time
if TYPE_CHECKING:
    from pathlib import Path

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
#: The oldest git guards works with (``rev-parse --path-format`` came in 2.31).
MIN_GIT = (2, 31)


class NotARepositoryError(GuardsError):
    exit_code = ExitCode.USAGE


class NoWorkTreeError(GuardsError):
    exit_code = ExitCode.USAGE


class GitTooOldError(GuardsError):
    exit_code = ExitCode.UNKNOWN_STATE


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
    ) -> git.Result:
        """git with this repository's work tree (or git dir, when bare) as cwd."""
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
        res = self.run(["rev-parse", "--path-format=absolute", "--git-path", "index"])
        return os.fsdecode(git.strip_newline(res.stdout))

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

    def hooks_dir(self) -> Path:
        """The hooks directory git reads for this repository (``core.hooksPath`` honoured)."""
        res = self.run(["rev-parse", "--path-format=absolute", "--git-path", "hooks"])
        return _path(os.fsdecode(git.strip_newline(res.stdout)))

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
    """The repository containing ``cwd``, from one ``git rev-parse`` call."""
    return Discovery(cwd).repo()


class Discovery:
    """:func:`discover` started in the background, so that its git call overlaps the
    caller's next one (the frame asks ``git status`` meanwhile)."""

    __slots__ = ("_cwd", "_pending")

    def __init__(self, cwd: str | os.PathLike[str] | None = None) -> None:
        self._cwd = cwd
        self._pending = git.start(["rev-parse", *_DISCOVERY_FLAGS], cwd=cwd)

    def repo(self) -> Repo:
        """The repository; :class:`NotARepositoryError` when there is none."""
        return _from_rev_parse(self._pending.result(check=False), self._cwd)

    def finish(self) -> None:
        """Wait for git without reading its answer (nothing turned out to need it)."""
        self._pending.result(check=False)


def _path(text: str) -> Path:
    from pathlib import Path  # here, not at the top: the frame never needs it

    return Path(text)


def _from_rev_parse(res: git.Result, cwd: str | os.PathLike[str] | None) -> Repo:
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


def git_version() -> tuple[str, tuple[int, int] | None]:
    """git's own words (``git version 2.39.5``) and its (major, minor), None when they
    cannot be read (a vendor's build may add words around the number)."""
    import re

    res = git.run(["version"], check=False, readonly=False)
    text = res.stdout.decode("utf-8", "replace").strip()
    m = re.search(r"(\d+)\.(\d+)", text)
    return text, (int(m.group(1)), int(m.group(2))) if m is not None else None


def check_git_version() -> None:
    """Raise a clear error when git is older than :data:`MIN_GIT` (checked only when
    discovery went wrong: an old git fails there first)."""
    text, version = git_version()
    if version is not None and version < MIN_GIT:
        raise GitTooOldError(
            f"{text} ({git.real_git()}) is too old: guards needs git >= "
            f"{MIN_GIT[0]}.{MIN_GIT[1]}; upgrade git or point GUARDS_REAL_GIT at a newer one"
        )


def _single(flag: str, cwd: str | os.PathLike[str] | None) -> bytes:
    args = ["rev-parse", "--path-format=absolute", flag]
    res = git.run(args, cwd=cwd, check=False)
    return git.strip_newline(res.stdout) if res.returncode == 0 else b""
