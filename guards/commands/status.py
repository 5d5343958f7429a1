"""guards status: every dirty path with its owner, class and age."""

from __future__ import annotations

from guards import output
from guards.errors import ExitCode
from guards.git.dirty import finish_reading, start_reading
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


def run(args: argparse.Namespace) -> int:
    # git status (nearly all of the cost) scans while the repository is discovered and
    # the settings are read.
    started = start_reading(ignored=args.ignored)
    try:
        ws = Workspace.open()
    except BaseException:
        started.result(check=False)  # not left behind as a zombie
        raise
    rows, problem = collect(ws, ignored=args.ignored, dirty=finish_reading(started))
    if problem:
        output.error(problem)
    if args.json:
        output.dump_json(status_document(ws, rows, problem))
    elif rows:
        print(
            output.table(
                [
                    (
                        r.dirty.state,
                        r.owner.session or "-",
                        r.owner.ownership.value,
                        output.age(r.since),
                        output.show_path(r.dirty.path),
                    )
                    for r in rows
                ],
                ("ST", "OWNER", "CLASS", "AGE", "PATH"),
            )
        )
    else:
        print("nothing dirty")
    return ExitCode.UNKNOWN_STATE if problem else ExitCode.OK
