"""guards frame: what a new turn inherits (nothing at all when the tree is clean).

It runs before every agent turn, so it costs one ``git status`` (repository discovery
runs alongside it) and as few imports as possible: no argparse, typing or pathlib; the
ledger and the settings are read only when there is something to show. It never blocks
the turn it frames: every failure is one line on stderr and exit 0.
"""

from __future__ import annotations

from collections.abc import Sequence

TYPE_CHECKING = False  # see guards.values: these imports cost start-up time
if TYPE_CHECKING:
    import argparse

    from guards.git.repo import Discovery, Repo
    from guards.report.frame import Frame

HELP = "print the uncommitted work a new agent turn inherits (nothing when clean)"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--max",
        metavar="N",
        help="list at most N paths, then say how many more (default: config frame.max_paths)",
    )
    parser.add_argument("--json", action="store_true", help="machine-readable (see README)")


def fast_main(argv: Sequence[str]) -> int | None:
    """``guards frame ARGS`` without argparse; None when argparse must handle the
    arguments (``--help``, a usage error)."""
    max_value: str | None = None
    as_json = False
    rest = list(argv)
    while rest:
        arg = rest.pop(0)
        if arg == "--json":
            as_json = True
        elif arg == "--max" and rest and not rest[0].startswith("-"):
            max_value = rest.pop(0)
        elif arg.startswith("--max="):
            max_value = arg.removeprefix("--max=")
        else:
            return None
    return _guarded(max_value, as_json)


def run(args: argparse.Namespace) -> int:
    return _guarded(args.max, args.json)


def _guarded(max_value: str | None, as_json: bool) -> int:
    """The frame never breaks the turn it frames: any problem is one line, exit 0."""
    from guards.errors import boundary

    def frame() -> int:
        _frame(max_value, as_json)
        return 0

    return boundary(frame, fail_open=True, what="frame")


def _frame(max_value: str | None, as_json: bool) -> None:
    from guards.git import process as git
    from guards.git.repo import Discovery

    max_paths = _parse_max(max_value)
    # Where the repository is (for the ledger) is asked in the background: that call
    # overlaps git status instead of following it.
    discovery = Discovery()
    # Exactly what guards.git.dirty.read_dirty asks, without importing it for a clean tree.
    # Porcelain paths are relative to the top level.
    status_args = git.status_args()
    status = git.run(status_args, check=False)
    if status.returncode != 0:
        repo = _repo_or_none(discovery)
        if repo is None or repo.toplevel is None:
            if as_json:
                _dump(None, None, max_paths)
            return  # not a repository, or no work tree: nothing to frame
        raise git.GitError(status_args, status.returncode, status.stderr)
    if not status.stdout and not as_json:
        discovery.finish()
        return
    from guards.git.dirty import parse_porcelain_v2
    from guards.report import frame

    repo = discovery.repo()
    found = frame.attribute(repo, parse_porcelain_v2(status.stdout), _caller())
    if found.entries and max_paths is None:
        max_paths = frame.configured_max_paths(repo)
    if found.ledger_problem:
        from guards.output import error

        error(f"{found.ledger_problem}; owners shown as unknown")
    if as_json:
        _dump(repo, found, max_paths)
        return
    text = frame.render(found, max_paths or frame.configured_max_paths(None))
    if text:
        import sys

        # UTF-8 whatever the locale: the frame holds an em dash and quoted paths.
        sys.stdout.buffer.write(text.encode("utf-8", "surrogateescape"))
        sys.stdout.flush()


def _dump(repo: Repo | None, found: Frame | None, max_paths: int | None) -> None:
    from guards.output import dump_json
    from guards.report import frame

    dump_json(frame.as_json(repo, found, max_paths or frame.configured_max_paths(repo)))


def _repo_or_none(discovery: Discovery) -> Repo | None:
    from guards.git.repo import NotARepositoryError

    try:
        return discovery.repo()
    except NotARepositoryError:
        return None


def _parse_max(value: str | None) -> int | None:
    if value is None:
        return None
    try:
        number = int(value)
    except ValueError:
        number = 0
    if number < 1:
        from guards.output import error

        error(f"frame: --max wants a whole number >= 1, not {value!r}; using the default")
        return None
    return number


def _caller() -> str | None:
    import os

    if not os.environ.get("GUARDS_SESSION", "").strip():
        return None  # unidentified; guards.state.session (and its imports) not needed
    from guards.errors import GuardsError
    from guards.state.session import caller_id

    try:
        return caller_id()
    except GuardsError as e:
        from guards.output import error

        error(f"frame: {e}; treating the caller as unidentified")
        return None
