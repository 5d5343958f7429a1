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

HELP = "attribute the current content of paths to a session"
SOURCES = ("record", "turn", "observed")


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--session", help="default: $GUARDS_SESSION")
    parser.add_argument(
        "--source",
        default="record",
        choices=SOURCES,
        help="how the writer is known: named by it (record), a turn boundary, an observation",
    )
    parser.add_argument("paths", nargs="+", metavar="PATH", help="relative to this directory")


def fast_main(argv: Sequence[str]) -> int | None:
    """``guards record ARGS`` without argparse; None when argparse must read them
    (``--help``, anything unusual, a usage error argparse words)."""
    session: str | None = None
    source = "record"
    paths: list[str] = []
    rest = list(argv)
    while rest:
        arg = rest.pop(0)
        if arg == "--":
            paths.extend(rest)
            break
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
    return record(session, source, paths)


def run(args: argparse.Namespace) -> int:
    return record(args.session, args.source, args.paths)


def record(session: str | None, source: str, user_paths: list[str]) -> int:
    from guards.git.repo import discover
    from guards.state import identity
    from guards.state.ledger import Ledger
    from guards.state.workspace import attribute, repo_relative

    repo = discover()
    session_id = identity.validate_id(session) if session else identity.caller_id()
    if session_id is None:
        raise UsageError(f"which session? give --session or set {identity.SESSION_ENV}")
    relative = _expand(repo, [repo_relative(repo, p) for p in user_paths])
    attribute(repo, Ledger(repo.ledger_dir_text, lock_timeout=_lock_timeout(repo)), session_id,
              relative, source)  # fmt: skip
    from guards.state.repositories import remember

    remember(repo)  # for `guards doctor --all` and `guards reap --all`
    return ExitCode.OK


def _lock_timeout(repo: Repo) -> Callable[[], float]:
    """``ledger.lock_timeout``, read only if the lock is taken (a schema-1 ledger to
    migrate, a journal to fold): the settings cost start-up time."""

    def setting() -> float:
        from guards.config import Config

        return float(Config(repo.ledger_dir_text).get("ledger.lock_timeout"))

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
