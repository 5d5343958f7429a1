"""The one place that runs git: guards' git processes.

Every call goes to the *real* git (never the guards shim), reads use
``--no-optional-locks`` so that looking never rewrites the index's stat cache, and
output is parsed from git's NUL-separated machine formats only.
"""

from __future__ import annotations

import os

from guards.errors import ExitCode, GuardsError

TYPE_CHECKING = False  # see guards.values: these imports cost start-up time
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence

#: The environment variable that names the real git explicitly (the shim sets it).
REAL_GIT_ENV = "GUARDS_REAL_GIT"
#: A line every guards shim carries, so that the search for the real git skips it.
SHIM_MARKER = b"guards-shim: this is not the real git"

_real_git_cache: str | None = None


class GitError(GuardsError):
    """A git call failed; carries the command, exit status and git's own words."""

    exit_code = ExitCode.UNKNOWN_STATE

    def __init__(self, args: Sequence[str], returncode: int, stderr: bytes) -> None:
        self.args_ = list(args)
        self.returncode = returncode
        self.stderr = stderr
        first = _first_line(stderr) or "no message"
        shown = " ".join(a if len(a) < 60 else a[:57] + "..." for a in self.args_[:6])
        super().__init__(f"git {shown} failed (exit {returncode}): {first}")


class GitNotFoundError(GuardsError):
    exit_code = ExitCode.UNKNOWN_STATE


class GitTooOldError(GuardsError):
    exit_code = ExitCode.UNKNOWN_STATE


#: The oldest git guards works with (``rev-parse --path-format`` came in 2.31).
MIN_GIT = (2, 31)
#: git's exit status for a usage error, such as an option older gits do not know.
USAGE_ERROR = 129


def _first_line(data: bytes) -> str:
    for line in data.decode("utf-8", "replace").splitlines():
        line = line.strip()
        if line:
            return line
    return ""


def is_shim(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is a guards shim (it carries :data:`SHIM_MARKER` near its top)."""
    try:
        with open(path, "rb") as f:
            return SHIM_MARKER in f.read(4096)
    except OSError:
        return False


def find_real_git(path_env: str | None = None, skip_dirs: Iterable[str] = ()) -> str | None:
    """The first executable ``git`` on PATH that is not a guards shim."""
    skipped = {os.path.realpath(d) for d in skip_dirs}
    for directory in (path_env if path_env is not None else os.environ.get("PATH", "")).split(
        os.pathsep
    ):
        if not directory or os.path.realpath(directory) in skipped:
            continue
        candidate = os.path.join(directory, "git")
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK) and not is_shim(candidate):
            return candidate
    return None


def real_git() -> str:
    """Path of the real git: ``$GUARDS_REAL_GIT`` if set, else the first non-shim on PATH."""
    global _real_git_cache
    if _real_git_cache is None:
        explicit = os.environ.get(REAL_GIT_ENV)
        if explicit:
            if is_shim(explicit) or not os.access(explicit, os.X_OK):
                raise GitNotFoundError(
                    f"{REAL_GIT_ENV}={explicit} is not an executable real git; "
                    f"point it at git itself or unset it"
                )
            _real_git_cache = explicit
        else:
            found = find_real_git()
            if found is None:
                raise GitNotFoundError("git not found on PATH; install git or set GUARDS_REAL_GIT")
            _real_git_cache = found
    return _real_git_cache


class Result:
    """What a git call gave back. (A plain class: importing dataclasses costs the hot
    paths ~7 ms.)"""

    __slots__ = ("returncode", "stderr", "stdout")

    def __init__(self, returncode: int, stdout: bytes, stderr: bytes) -> None:
        self.returncode = returncode
        self.stdout = stdout
        self.stderr = stderr


def run(
    args: Sequence[str],
    *,
    cwd: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
    extra_env: Mapping[str, str] | None = None,
    stdin: bytes | None = None,
    check: bool = True,
    readonly: bool = True,
) -> Result:
    """Run the real git; raise :class:`GitError` on failure when ``check``.

    ``readonly`` adds ``--no-optional-locks``: git then never refreshes the index's stat
    cache, which would otherwise rewrite the very index guards promise not to touch.
    """
    run_env = _environment(env, extra_env)
    if stdin is None and _CAN_SPAWN:
        argv = _argv(args, readonly, cwd)
        early = _take_ahead(argv, run_env) if _AHEAD else None
        result = early.result(check=False) if early else _Child(argv, run_env).wait()
    else:
        result = _run_with_input(_argv(args, readonly), cwd, run_env, stdin or b"")
    if check and result.returncode != 0:
        raise _error(args, result)
    return result


def _error(args: Sequence[str], result: Result) -> GuardsError:
    """What a failed call raises: :class:`GitTooOldError` when git did not know an
    option because it is too old (the repository is found without git in the common
    layouts, so any call can be the first to meet an old git), else :class:`GitError`."""
    if result.returncode == USAGE_ERROR:
        check_git_version()
    return GitError(args, result.returncode, result.stderr)


def git_version() -> tuple[str, tuple[int, int] | None]:
    """git's own words (``git version 2.39.5``) and its (major, minor), None when they
    cannot be read (a vendor's build may add words around the number)."""
    import re

    res = run(["version"], check=False, readonly=False)
    text = res.stdout.decode("utf-8", "replace").strip()
    m = re.search(r"(\d+)\.(\d+)", text)
    return text, (int(m.group(1)), int(m.group(2))) if m is not None else None


def check_git_version() -> None:
    """Raise a clear error when git is older than :data:`MIN_GIT` (asked only when a
    call went wrong: an old git fails one of them)."""
    text, version = git_version()
    if version is not None and version < MIN_GIT:
        raise GitTooOldError(
            f"{text} ({real_git()}) is too old: guards needs git >= "
            f"{MIN_GIT[0]}.{MIN_GIT[1]}; upgrade git or point GUARDS_REAL_GIT at a newer one"
        )


def _run_with_input(
    argv: list[str], cwd: str | os.PathLike[str] | None, env: dict[str, str], stdin: bytes
) -> Result:
    # Feeding stdin while reading two pipes is what subprocess is for; the hot paths
    # (status, rev-parse, config) never send input, so they never pay for importing it.
    import subprocess

    try:
        proc = subprocess.run(argv, cwd=cwd, env=env, input=stdin, capture_output=True)
    except OSError as e:
        raise GitNotFoundError(f"cannot run git ({argv[0]}): {e.strerror}") from e
    return Result(proc.returncode, proc.stdout, proc.stderr)


#: ``os.posix_spawn`` runs git without importing ``subprocess`` (13 ms from a bare
#: interpreter: locale, re, enum, signal, threading, selectors), which was most of what
#: the guarded git and the frame cost on top of git itself.
_CAN_SPAWN = hasattr(os, "posix_spawn")


def _default_signals() -> list[int]:
    # Python ignores SIGPIPE and SIGXFSZ; git must get them back, as subprocess does.
    # _signal is the C module behind signal, without signal's enum wrappers (start-up).
    import _signal  # type: ignore[import-not-found]

    return [getattr(_signal, name) for name in ("SIGPIPE", "SIGXFSZ") if hasattr(_signal, name)]


class _Child:
    """git started with ``os.posix_spawn``: stdin from /dev/null, stdout and stderr
    captured through pipes that :meth:`wait` drains together (git never blocks on a
    full pipe while guards waits for the other one)."""

    __slots__ = ("_err", "_out", "_pid")

    def __init__(self, argv: list[str], env: dict[str, str]) -> None:
        opened: list[int] = []
        try:
            self._out, out_w = os.pipe()
            opened += [self._out, out_w]
            self._err, err_w = os.pipe()
            opened += [self._err, err_w]
            self._pid = os.posix_spawn(
                argv[0],
                argv,
                env,
                file_actions=[
                    (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
                    (os.POSIX_SPAWN_DUP2, out_w, 1),
                    (os.POSIX_SPAWN_DUP2, err_w, 2),
                ],
                setsigdef=_default_signals(),
            )
        except OSError as e:
            for fd in opened:
                os.close(fd)
            raise GitNotFoundError(f"cannot run git ({argv[0]}): {e.strerror}") from e
        os.close(out_w)  # git holds the write ends now: EOF comes when it exits
        os.close(err_w)

    def wait(self) -> Result:
        """Read both pipes to their end, then reap git."""
        import select

        chunks: dict[int, list[bytes]] = {self._out: [], self._err: []}
        poller = select.poll()
        for fd in chunks:
            poller.register(fd, select.POLLIN)
        try:
            still_open = len(chunks)
            while still_open:
                for fd, _event in poller.poll():
                    data = os.read(fd, 1 << 17)
                    if data:
                        chunks[fd].append(data)
                    else:
                        poller.unregister(fd)
                        still_open -= 1
        finally:
            os.close(self._out)
            os.close(self._err)
            _, status = os.waitpid(self._pid, 0)
        return Result(
            os.waitstatus_to_exitcode(status),
            b"".join(chunks[self._out]),
            b"".join(chunks[self._err]),
        )


class Pending:
    """A git call running in the background (see :func:`start`)."""

    __slots__ = ("_args", "_child", "_done")

    def __init__(
        self, args: Sequence[str], child: _Child | _Handed | None, done: Result | None
    ) -> None:
        self._args = args
        self._child = child
        self._done = done

    def result(self, *, check: bool = True) -> Result:
        """Wait for the call; raise :class:`GitError` on failure when ``check``."""
        if self._done is None:
            assert self._child is not None
            self._done = self._child.wait()
        if check and self._done.returncode != 0:
            raise _error(self._args, self._done)
        return self._done


def start(
    args: Sequence[str],
    *,
    cwd: str | os.PathLike[str] | None = None,
    readonly: bool = True,
    env: Mapping[str, str] | None = None,
) -> Pending:
    """Start the real git without waiting (stdin empty), so that other work overlaps
    it instead of following it. Its output waits in a pipe until :meth:`Pending.result`
    drains it (git pauses whenever the pipe is full): every started call must be
    waited for, also on the way out of an error."""
    if not _CAN_SPAWN:  # no overlap then, the same answer
        return Pending(args, None, run(args, cwd=cwd, check=False, readonly=readonly, env=env))
    return Pending(args, _Child(_argv(args, readonly, cwd), _environment(env, None)), None)


#: Read-only queries started before the caller knew it would ask them (:func:`ahead`),
#: each with the exact argv and environment it runs with.
_AHEAD: list[tuple[list[str], dict[str, str], Pending]] = []


def ahead(args: Sequence[str], *, cwd: str | os.PathLike[str]) -> None:
    """Start the read-only query ``args`` now, for a caller that is about to import what
    it needs and then ask exactly this (:func:`run` with the same arguments, directory
    and environment takes this answer instead of starting git again): git answers while
    Python imports. Anything else that differs (an option, a variable) starts its own
    git. Every query started here is reaped by :func:`finish_ahead`."""
    if not _CAN_SPAWN:
        return
    argv, env = _argv(args, True, cwd), _environment(None, None)
    try:
        child = _Child(argv, env)
    except GuardsError:
        return  # no git to run: the query asked later says so
    _AHEAD.append((argv, env, Pending(args, child, None)))


def _take_ahead(argv: list[str], env: dict[str, str]) -> Pending | None:
    for i, (started, started_env, pending) in enumerate(_AHEAD):
        if started == argv and started_env == env:
            del _AHEAD[i]
            return pending
    return None


def finish_ahead() -> None:
    """Wait for the queries :func:`ahead` started that nobody asked (before ``exec``)."""
    while _AHEAD:
        _AHEAD.pop()[2].result(check=False)


#: Reads never refresh the index's stat cache (see :func:`run`).
READONLY = "--no-optional-locks"


def _argv(
    args: Sequence[str], readonly: bool, cwd: str | os.PathLike[str] | None = None
) -> list[str]:
    argv = [real_git()]
    if cwd is not None:
        # posix_spawn cannot change directory: git does it (-C is git's own chdir).
        argv.extend(["-C", os.fspath(cwd)])
    if readonly:
        argv.append(READONLY)
    argv.extend(args)
    return argv


#: What the guard asks first about the repository a command acts on, in one call
#: (guards.predict.blast.state.context): its git dir, object format, whether the command
#: runs inside the work tree, its prefix and top level, then HEAD's commit.
CONTEXT_FLAGS = (
    "--absolute-git-dir",
    "--show-object-format",
    "--is-inside-work-tree",
    "--show-prefix",
    "--show-toplevel",
)
CONTEXT_QUERY = ("rev-parse", *CONTEXT_FLAGS, "--verify", "-q", "--end-of-options", "HEAD^{commit}")


#: guards' own git calls stay out of the user's traces (trace2 may also be switched on
#: in git config: a variable set to 0 overrides that).
_NO_TRACE = {"GIT_TRACE2": "0", "GIT_TRACE2_EVENT": "0", "GIT_TRACE2_PERF": "0"}


#: glibc's malloc gives freed memory at the top of the heap back to the system (``brk``)
#: once 128 KiB of it are free, and zlib allocates and frees about 256 KiB per object it
#: deflates: every object git writes (``fast-import``, ``pack-objects``, a loose object)
#: then costs two ``brk`` calls and page faults, 80 % of fast-import's time (50,000 small
#: blobs: 2.4 s, 1.9 s of it in the kernel; 0.45 s with the heap kept). Kept up to 4 MiB
#: here (peak memory is unchanged); other C libraries ignore the variable, and the
#: user's own setting wins.
_MALLOC = {"MALLOC_TRIM_THRESHOLD_": str(4 << 20)}


#: The variables guards' own git calls run without: traces (by prefix), and a super
#: prefix (``git --super-prefix``, set by git for submodule recursion), which makes
#: every git but a few plumbing commands die.
_DROPPED_PREFIX = "GIT_TRACE"
_DROPPED_NAME = "GIT_INTERNAL_SUPER_PREFIX"


def _dropped(name: str) -> bool:
    return name.startswith(_DROPPED_PREFIX) or name == _DROPPED_NAME


def _environment(
    env: Mapping[str, str] | None, extra_env: Mapping[str, str] | None
) -> dict[str, str]:
    source = os.environ if env is None else env
    run_env = {k: v for k, v in source.items() if not _dropped(k)}
    run_env.update(_NO_TRACE)
    for name, value in _MALLOC.items():
        run_env.setdefault(name, value)
    if extra_env:
        run_env.update(extra_env)
    return run_env


#: What git itself clears before it runs git in a submodule (``local_repo_env``): git
#: calls in a nested repository must not see the outer command's ``--git-dir`` & co.
LOCAL_REPO_ENV = (
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_CONFIG",
    "GIT_CONFIG_PARAMETERS",
    "GIT_CONFIG_COUNT",
    "GIT_OBJECT_DIRECTORY",
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_IMPLICIT_WORK_TREE",
    "GIT_GRAFT_FILE",
    "GIT_INDEX_FILE",
    "GIT_NO_REPLACE_OBJECTS",
    "GIT_REPLACE_REF_BASE",
    "GIT_PREFIX",
    "GIT_INTERNAL_SUPER_PREFIX",
    "GIT_SHALLOW_FILE",
    "GIT_COMMON_DIR",
)


#: git config for the refs and commits guards writes itself: nobody's hooks run (the
#: reference-transaction hook included).
NO_HOOKS = ["-c", "core.hooksPath=/dev/null"]


def is_local_repo_variable(name: str) -> bool:
    return name in LOCAL_REPO_ENV or name.startswith(("GIT_CONFIG_KEY_", "GIT_CONFIG_VALUE_"))


def status_args(*, ignored: bool = False) -> list[str]:
    """The one way guards asks for the dirty set: porcelain v2, NUL-separated, no rename
    detection (a rename is a deletion plus an addition: both are work), every untracked
    file listed on its own, submodules included. Paths come relative to the top level."""
    return [
        "status",
        "--porcelain=v2",
        "-z",
        "--no-renames",
        "--untracked-files=all",
        f"--ignored={'matching' if ignored else 'no'}",
        "--ignore-submodules=none",
    ]


#: The descriptor on which an installed prompt hook's shell hands its Python the
#: ``git status`` it started first (:func:`handed_status_script`).
HANDED_STATUS_FD = 4


def handed_status_script(git: str) -> str:
    """sh: :func:`status_args` run in the shell's directory as :func:`start` runs them
    (``git``: the real git, found at install), then git's exit status in digits (never
    a NUL: git's last record ends in one). A prompt's hook pipes this into its Python,
    which starts about 5 ms later and takes the answer (:func:`handed_status`) instead
    of waiting for a git it starts itself. The environment is :func:`_environment`'s;
    with a variable set that it drops, git does not run (status 1)."""
    import shlex

    assign = " ".join(
        [f"{k}={v}" for k, v in _NO_TRACE.items()]
        + [f'{k}="${{{k}-{v}}}"' for k, v in _MALLOC.items()]  # (the user's own wins)
    )
    call = shlex.join([git, READONLY, *status_args()])
    return (
        f"{{ case $(export -p) in *{_DROPPED_PREFIX}*|*{_DROPPED_NAME}*) false ;; "
        f'*) {assign} {call} ;; esac; printf %s "$?"; }} </dev/null 2>/dev/null'
    )


def handed_status(fd: int, git: str, cwd: str) -> Pending:
    """The ``git status`` of :func:`handed_status_script`, on ``fd``, when it is the call
    :func:`start` would make for ``cwd`` now: the same real git (``git``), directory and
    environment. Otherwise ``fd`` is closed and git starts here."""
    if _is_this_call(git, cwd):
        return Pending(status_args(), _Handed(fd, cwd), None)
    os.close(fd)
    return start(status_args(), cwd=cwd)


def _is_this_call(git: str, cwd: str) -> bool:
    if any(_dropped(name) for name in os.environ):
        return False
    try:
        return real_git() == git and os.path.samefile(cwd, os.curdir)
    except (GuardsError, OSError):
        return False


class _Handed:
    """A :func:`handed_status_script` being read: its answer when git succeeded; else
    git runs again here, for its own words (a failure is never read as a clean tree)."""

    __slots__ = ("_cwd", "_fd")

    def __init__(self, fd: int, cwd: str) -> None:
        self._fd = fd
        self._cwd = cwd

    def wait(self) -> Result:
        handed = _drain(self._fd)
        end = handed.rfind(b"\0") + 1 if handed is not None else 0
        if handed is not None and handed[end:] == b"0":
            return Result(0, handed[:end], b"")
        return _Child(_argv(status_args(), True, self._cwd), _environment(None, None)).wait()


def _drain(fd: int) -> bytes | None:
    """Everything ``fd`` gives until its end, then closed; None when it cannot be read."""
    chunks = []
    try:
        while data := os.read(fd, 1 << 17):
            chunks.append(data)
    except OSError:
        return None
    finally:
        os.close(fd)
    return b"".join(chunks)


def zsplit(data: bytes) -> list[bytes]:
    """Split NUL-terminated git output into its records."""
    if not data:
        return []
    parts = data.split(b"\0")
    if parts[-1] == b"":
        parts.pop()
    return parts


def nul_join(paths: Iterable[str]) -> bytes:
    """Paths as NUL-terminated bytes, for ``--pathspec-from-file=- --pathspec-file-nul``."""
    return b"".join(os.fsencode(p) + b"\0" for p in paths)


def strip_newline(data: bytes) -> bytes:
    """Remove exactly one trailing newline (never other whitespace: names may end in one)."""
    return data[:-1] if data.endswith(b"\n") else data
