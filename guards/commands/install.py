"""guards install: the safe-* aliases, the git shim, native git hooks."""

from __future__ import annotations

import argparse
from pathlib import Path

from guards.cli import add_harness_arguments
from guards.errors import ExitCode, UsageError
from guards.integrations import installation
from guards.integrations.installation import Step
from guards.integrations.plan import (
    execute,
    harness_steps,
    harnesses,
    hook_steps,
    repo_or_none,
)

HELP = "set up the safe-* git aliases, the git shim and native hooks (--dry-run shows the plan)"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--global",
        dest="global_",
        action="store_true",
        help="aliases in the user's git config instead of this repository's",
    )
    parser.add_argument("--no-aliases", action="store_true", help="skip the safe-* aliases")
    parser.add_argument(
        "--shim",
        metavar="DIR",
        type=Path,
        help="write the git shim as DIR/git (put DIR first on PATH)",
    )
    parser.add_argument(
        "--hooks",
        action="store_true",
        help="native git hooks in this repository (for people without pre-commit)",
    )
    add_harness_arguments(parser, "merge our hooks into")
    parser.add_argument("--dry-run", action="store_true", help="print the plan, change nothing")


def plan(args: argparse.Namespace) -> list[Step]:
    repo = repo_or_none()
    steps: list[Step] = []
    if not args.no_aliases:
        if args.global_:
            steps += installation.plan_aliases("global", None, installation.user_manifest_path())
        elif repo is not None:
            steps += installation.plan_aliases(
                "local", repo.toplevel or repo.git_dir, repo.ledger_dir / installation.MANIFEST
            )
        elif args.shim is None and not harnesses(args):
            raise UsageError("not in a git repository: use --global for user-wide aliases")
    if args.shim is not None:
        steps += installation.plan_shim(args.shim, installation.user_manifest_path())
    if args.hooks:
        if repo is None:
            raise UsageError("--hooks needs a git repository")
        steps += hook_steps(repo, install=True)
    steps += harness_steps(harnesses(args), args.harness_scope, repo, install=True)
    return steps


def run(args: argparse.Namespace) -> int:
    steps = plan(args)
    execute(steps, args.dry_run)
    if "gemini" in harnesses(args):
        _report_gemini_trust()
    if args.shim is not None and not args.dry_run:
        print(f'put the shim first on PATH: export PATH="{Path(args.shim).absolute()}:$PATH"')
    return ExitCode.OK


def _report_gemini_trust() -> None:
    """Gemini CLI runs no hooks in an untrusted folder: never leave them silently inert."""
    from guards.integrations.harness_settings import gemini_trust_problem
    from guards.output import warn

    repo = repo_or_none()
    if repo is None or repo.toplevel is None:
        return
    problem = gemini_trust_problem(Path(repo.toplevel))
    if problem is not None:
        warn(problem)
