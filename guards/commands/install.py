"""guards install: the safe-* aliases, the git shim, native git hooks."""

from __future__ import annotations

import argparse
from pathlib import Path

from guards.errors import ExitCode, UsageError
from guards.git.repo import NotARepositoryError, Repo, discover
from guards.integrations import installation
from guards.integrations.installation import Step

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


def add_harness_arguments(parser: argparse.ArgumentParser, verb: str) -> None:
    """``--claude`` / ``--codex`` with ``--project`` (default in a repository) or ``--user``."""
    parser.add_argument("--claude", action="store_true", help=f"{verb} Claude Code's settings.json")
    parser.add_argument("--codex", action="store_true", help=f"{verb} Codex CLI's hooks.json")
    scope = parser.add_mutually_exclusive_group()
    scope.add_argument(
        "--project",
        dest="harness_scope",
        action="store_const",
        const="project",
        help="the repository's .claude/ or .codex/ (default inside a repository)",
    )
    scope.add_argument(
        "--user",
        dest="harness_scope",
        action="store_const",
        const="user",
        help="the user's ~/.claude/ or ~/.codex/",
    )


def harness_steps(args: argparse.Namespace, repo: Repo | None, *, install: bool) -> list[Step]:
    """The Claude Code / Codex settings changes asked for (guards.integrations.harness_settings)."""
    from guards.integrations import harness_settings

    scope = getattr(args, "harness_scope", None) or ("project" if repo is not None else "user")
    project = Path(repo.toplevel) if repo is not None and repo.toplevel is not None else None
    steps: list[Step] = []
    for harness in ("claude", "codex"):
        if not getattr(args, harness, False):
            continue
        path = harness_settings.settings_path(harness, scope, project)
        change = harness_settings.plan_install if install else harness_settings.plan_uninstall
        steps += change(harness, path)
    return steps


def repo_or_none() -> Repo | None:
    try:
        return discover()
    except NotARepositoryError:
        return None


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
        elif args.shim is None and not (args.claude or args.codex):
            raise UsageError("not in a git repository: use --global for user-wide aliases")
    if args.shim is not None:
        steps += installation.plan_shim(args.shim, installation.user_manifest_path())
    if args.hooks:
        if repo is None:
            raise UsageError("--hooks needs a git repository")
        steps += _hook_steps(repo, install=True)
    steps += harness_steps(args, repo, install=True)
    return steps


def _hook_steps(repo: Repo, *, install: bool) -> list[Step]:
    """Native hooks plan themselves (integrations.native_hooks); one step applies them all."""
    from guards.integrations import native_hooks

    change = native_hooks.install_native_hooks if install else native_hooks.uninstall_native_hooks
    lines = change(repo, dry_run=True)
    if not lines:
        return []

    def apply() -> None:
        change(repo, dry_run=False)

    return [Step("\n".join(lines), apply)]


def execute(steps: list[Step], dry_run: bool) -> None:
    if not steps:
        print("nothing to do: already set up")
        return
    for step in steps:
        if not dry_run:
            step.apply()
        for line in step.description.splitlines():
            print(f"would {line}" if dry_run else line)


def run(args: argparse.Namespace) -> int:
    steps = plan(args)
    execute(steps, args.dry_run)
    if args.shim is not None and not args.dry_run:
        print(f'put the shim first on PATH: export PATH="{Path(args.shim).absolute()}:$PATH"')
    return ExitCode.OK
