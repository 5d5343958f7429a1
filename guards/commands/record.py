"""guards record: attribute the current content of paths to a session.

Every agent edit runs it, so its common command line (``guards record [--session S]
[--source X] [--] PATH...``) skips argparse, the settings and pathlib, and writes one
journal record: its cost does not grow with the ledger (see guards.state.ledger).
"""

from __future__ import annotations

import os

from guards.errors import ExitCode, UsageError

TYPE_CHECKING = False  # see guards.values: these imports cost start-up time
if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable, Sequence

    from guards.git.repo import Repo
    from guards.output import Progress

HELP = "attribute the current content of paths to a session"
SOURCES = ("record", "turn", "observed")
_GLOB = frozenset("*?[")


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--session", help="default: $GUARDS_SESSION")
    parser.add_argument(
        "--source",
        default="record",
        choices=SOURCES,
        help="how the writer is known: named by it (record), a turn boundary, an observation",
    )
    parser.add_argument(
        "--since-start",
        action="store_true",
        help="also claim every dirty path changed since the session started that no other "
        "session owns",
    )
    parser.add_argument("-q", "--quiet", action="store_true", help="print nothing on success")
    parser.add_argument(
        "paths",
        nargs="*",
        metavar="PATH",
        help="relative to this directory; a directory: every dirty path below it; a quoted "
        "pattern ('src/*.py', '**/*.md'): the dirty paths it matches that no other session owns",
    )


def fast_main(argv: Sequence[str]) -> int | None:
    """``guards record ARGS`` without argparse; None when argparse must read them
    (``--help``, anything unusual, a usage error argparse words)."""
    session: str | None = None
    source = "record"
    quiet = False
    paths: list[str] = []
    rest = list(argv)
    while rest:
        arg = rest.pop(0)
        if arg == "--":
            paths.extend(rest)
            break
        if arg in ("-q", "--quiet"):
            quiet = True
            continue
        if arg in ("--session", "--source") and rest:
            value = rest.pop(0)
        elif arg.startswith(("--session=", "--source=")):
            arg, value = arg.split("=", 1)
        elif arg.startswith("-") and arg != "-":
            return None
        else:
            paths.append(arg)
            continue
        if arg == "--session":
            session = value
        elif value in SOURCES:
            source = value
        else:
            return None
    if not paths:
        return None
    return record(session, source, paths, quiet=quiet)


def run(args: argparse.Namespace) -> int:
    if not args.paths and not args.since_start:
        raise UsageError("record what? give paths, or --since-start")
    return record(
        args.session, args.source, args.paths, since_start=args.since_start, quiet=args.quiet
    )


def record(
    session: str | None,
    source: str,
    user_paths: list[str],
    *,
    since_start: bool = False,
    quiet: bool = False,
) -> int:
    from guards.git.repo import Discovery

    discovery = Discovery()  # git answers while the rest is imported
    from guards.state import identity
    from guards.state.ledger import Ledger
    from guards.state.workspace import attribute, repo_relative, typo_warning

    repo = discovery.repo()
    session_id = identity.validate_id(session) if session else identity.caller_id()
    if session_id is None:
        raise UsageError(f"which session? give --session or set {identity.SESSION_ENV}")
    ledger = Ledger(repo.ledger_dir_text, lock_timeout=_lock_timeout(repo))
    existing: list[str] = []
    patterns: list[str] = []
    missing: list[str] = []
    for user_path in user_paths:
        rel = repo_relative(repo, user_path)
        if os.path.lexists(os.path.join(repo.worktree_key, rel) if rel else repo.worktree_key):
            existing.append(rel)
        elif _GLOB & set(user_path):
            patterns.append(rel)
        else:
            missing.append(rel)
    files = _expand(repo, existing)
    if missing:
        files.extend(_deletions(repo, missing))
    notes: list[str] = []
    if patterns or since_start:
        claimed, notes = _claims(repo, session_id, patterns, since_start)
        files.extend(claimed)
    files = list(dict.fromkeys(files))
    warning = typo_warning(ledger, session_id, _setting(repo, "session.ttl"))
    if warning:
        from guards.output import warn

        warn(warning)
    if files:
        shown = _progress(repo, len(files), quiet)
        attribute(repo, ledger, session_id, files, source, on_path=shown.tick if shown else None)
        if shown:
            shown.done()
        from guards.state.repositories import remember

        remember(repo)  # for `guards doctor --all` and `guards reap --all`
    if not quiet:
        what = f"recorded {_count(len(files))} for session {session_id}" if files else (
            "nothing to record"
        )  # fmt: skip
        print("; ".join([what, *notes]))
    return ExitCode.OK


#: A record of fewer paths never takes a second: no progress, nothing more imported.
_PROGRESS_FROM = 500


def _progress(repo: Repo, total: int, quiet: bool) -> Progress | None:
    """Progress for a big record (on a terminal, not quiet: see :class:`Progress`)."""
    if total < _PROGRESS_FROM:
        return None
    from guards.config import Config
    from guards.output import Progress

    config = Config(repo.ledger_dir_text)
    return Progress("Recording", total, quiet=quiet or config.quiet, delay=config.progress_delay)


def _count(n: int) -> str:
    return f"{n} path" if n == 1 else f"{n} paths"


def _lock_timeout(repo: Repo) -> Callable[[], float]:
    """``ledger.lock_timeout``, read only if the lock is taken (a schema-1 ledger to
    migrate, a journal to fold): the settings cost start-up time."""
    return _setting(repo, "ledger.lock_timeout")


def _setting(repo: Repo, name: str) -> Callable[[], float]:
    """A duration setting, read only when asked for (the settings cost start-up time)."""

    def setting() -> float:
        from guards.config import Config

        return float(Config(repo.ledger_dir_text).get(name))

    return setting


def _expand(repo: Repo, relative: list[str]) -> list[str]:
    """A directory stands for every dirty path below it."""
    top = repo.worktree_key
    files: list[str] = []
    directories: list[str] = []
    for rel in relative:
        target = os.path.join(top, rel) if rel else top
        if os.path.isdir(target) and not os.path.islink(target):
            directories.append(rel or ".")
        else:
            files.append(rel)
    if directories:
        from guards.git.dirty import read_dirty

        files.extend(d.path for d in read_dirty(repo, pathspecs=directories))
    return list(dict.fromkeys(files))


def _deletions(repo: Repo, missing: list[str]) -> list[str]:
    """Paths that are not on disk: recorded when git sees them as dirty (a tracked file
    deleted, or a deleted directory's tracked files); anything else is a mistake."""
    from guards.git.dirty import read_dirty
    from guards.output import show_path

    dirty = [d.path for d in read_dirty(repo, pathspecs=missing)]
    found: list[str] = []
    for rel in missing:
        below = [p for p in dirty if p == rel or p.startswith(rel.rstrip("/") + "/")]
        if not below:
            raise UsageError(f"no such file: {show_path(rel)} (and git sees no deleted file there)")
        found.extend(below)
    return found


def _claims(
    repo: Repo, session_id: str, patterns: list[str], since_start: bool
) -> tuple[list[str], list[str]]:
    """The dirty paths that patterns match or (``since_start``) that changed since the
    session started, leaving out every path another session owns or last recorded while
    it is live; and notes on what was left out."""
    from guards.state.workspace import claimable

    return claimable(repo, session_id, patterns, since_start)
