"""guards run -- <git args>: the guarded git.

Classify what the command would destroy, rescue (or refuse) as the policy says, then
``exec`` the real git with exactly the same arguments, environment, directory, stdin and
terminal, so that its exit status, output and signals are git's own. Never reads stdin.
"""

from __future__ import annotations

import os
import sys

from guards.errors import DISABLE_ENV, OVERRIDE_HINT, ExitCode, UsageError, boundary
from guards.git import process as git
from guards.output import error

TYPE_CHECKING = False  # see guards.values: these imports cost start-up time
if TYPE_CHECKING:
    import argparse
    from collections.abc import Sequence
    from typing import NoReturn

#: The first argument of guards' own safe-* aliases (see _enter_alias_prefix).
ALIAS_FLAG = "--alias"

HELP = "the guarded git: rescue foreign work, then run git with the same arguments"

USAGE = """usage: guards run [--] <git arguments>

Runs `git <git arguments>` after rescuing (or, with policy block, refusing to destroy)
uncommitted work that is not provably the caller's own. Exit status: git's own, or 20
when guards refused, 4 when it could not tell what is at risk. GUARDS_DISABLE=1 hands
the command to git untouched (what it put at risk is still written to `guards log`)."""


def configure(parser: argparse.ArgumentParser) -> None:
    import argparse

    parser.add_argument(
        "git_args",
        nargs=argparse.REMAINDER,
        metavar="GIT_ARGS",
        help="the git command line, as you would give it to git (after an optional --)",
    )


def run(args: argparse.Namespace) -> int:
    git_args = list(args.git_args)
    if git_args[:1] == ["--"]:
        git_args = git_args[1:]
    return main(git_args)


def main(argv: Sequence[str]) -> int:
    """Entry point used by ``guards run`` (without argparse: argv must stay exact)."""
    args = list(argv)
    if args[:1] in (["-h"], ["--help"]):
        print(USAGE)
        return ExitCode.OK
    from_alias = args[:1] == [ALIAS_FLAG]
    if from_alias:
        args = args[1:]
    if args[:1] == ["--"]:
        args = args[1:]
    if from_alias:
        _enter_alias_prefix()
    if os.environ.get(DISABLE_ENV) == "1":
        _note_bypass(args)
        exec_git(args)
    if args and not args[0].startswith("-"):
        # No global option: the guard's first query runs here, with this environment;
        # git answers it while the guard's modules are imported.
        git.ahead(git.CONTEXT_QUERY, cwd=os.getcwd())
    status = boundary(lambda: _guard(args), refusal=True, hint=OVERRIDE_HINT)
    git.finish_ahead()
    if status != ExitCode.OK:
        return status  # git does not run: guards refused, or could not decide
    exec_git(args)


def _guard(args: list[str]) -> int:
    from guards.predict import cmdline

    try:
        cmd = cmdline.parse(args, os.environ, os.getcwd())
    except UsageError:
        return ExitCode.OK  # git rejects this command line itself, before touching anything
    from guards.protect.guard import guard_command

    guard_command(cmd, announce=True)
    return ExitCode.OK


def _note_bypass(args: list[str]) -> None:
    """Log what a command run with GUARDS_DISABLE=1 puts at risk. Whatever happens
    here (a bug, a broken ledger, a crash of git), git then runs untouched and silently:
    the override must work when guards does not."""
    try:
        from guards.predict import cmdline
        from guards.protect.guard import note_bypass

        note_bypass(cmdline.parse(args, os.environ, os.getcwd()))
    except Exception:
        return


def _enter_alias_prefix() -> None:
    """git runs ``!`` aliases at the top level and says where the user was in GIT_PREFIX.

    Only guards' own aliases say ``--alias``: a ``git`` that git itself starts from the
    top level (an alias of the user's, a hook, ``rebase -x``) also sees GIT_PREFIX, and
    must run where it was started, exactly as plain git would. (A GIT_WORK_TREE that
    git passes on is the user's own words, relative to the user's directory: going back
    there keeps it right.)"""
    prefix = os.environ.get("GIT_PREFIX")
    if prefix and os.path.isdir(prefix):
        os.chdir(prefix)


def exec_git(args: Sequence[str]) -> NoReturn:
    real = git.real_git()
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        os.execv(real, [real, *args])
    except OSError as e:
        error(f"cannot run git ({real}): {e.strerror}")
        raise SystemExit(ExitCode.UNKNOWN_STATE) from e
