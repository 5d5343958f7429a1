"""guards status: every dirty path with its owner, class and age."""

from __future__ import annotations

from guards import output
from guards.errors import ExitCode, UsageError
from guards.git.dirty import finish_reading, start_reading
from guards.git.process import GitError
from guards.report.status import collect, status_document
from guards.state.workspace import Workspace

TYPE_CHECKING = False  # see guards.values: these imports cost start-up time
if TYPE_CHECKING:
    import argparse

HELP = "dirty paths with owner, class (mine/foreign/unknown) and age"


#: Every option is an on/off flag: guards.main runs the command without argparse.
FLAGS = {"--json": "machine-readable (see README)", "--ignored": "list ignored files too"}


def configure(parser: argparse.ArgumentParser) -> None:
    for flag, text in FLAGS.items():
        parser.add_argument(flag, action="store_true", help=text)
    parser.add_argument(
        "--owner",
        metavar="SESSION",
        help="only paths this session owns (`unknown`: paths nobody provably owns)",
    )
    parser.add_argument(
        "paths",
        nargs="*",
        metavar="PATH",
        help="only these paths (git pathspecs relative to this directory, as git status)",
    )


def run(args: argparse.Namespace) -> int:
    # git status (nearly all of the cost) scans while the repository is discovered and
    # the settings are read.
    pathspecs = list(getattr(args, "paths", None) or [])
    owner = getattr(args, "owner", None)
    started = start_reading(ignored=args.ignored, pathspecs=pathspecs)
    try:
        ws = Workspace.open()
    except BaseException:
        started.result(check=False)  # not left behind as a zombie
        raise
    try:
        dirty = finish_reading(started)
    except GitError as e:
        if pathspecs and e.returncode == 128:  # git refused a pathspec (outside the repo)
            said = e.stderr.decode("utf-8", "replace").strip().splitlines()
            raise UsageError(said[0].removeprefix("fatal: ") if said else str(e)) from None
        raise
    rows, problem = collect(ws, ignored=args.ignored, dirty=dirty, partial=bool(pathspecs))
    if owner is not None:
        rows = [r for r in rows if (r.owner.session or "unknown") == owner]
    if problem:
        output.error(problem)
    if args.json:
        output.dump_json(status_document(ws, rows, problem))
    elif rows:
        output.page(
            output.table(
                [
                    (
                        r.dirty.state,
                        r.owner.session or "-",
                        r.owner.ownership,
                        output.age(r.since),
                        output.show_path(r.dirty.path),
                    )
                    for r in rows
                ],
                ("ST", "OWNER", "CLASS", "AGE", "PATH"),
            )
        )
    elif pathspecs or owner is not None:
        print("no dirty path matches")
    else:
        print("nothing dirty")
    return ExitCode.UNKNOWN_STATE if problem else ExitCode.OK
