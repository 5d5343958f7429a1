"""guards uninstall: remove exactly what guards install set up."""

from __future__ import annotations

import argparse
from pathlib import Path

from guards.cli import add_harness_arguments
from guards.errors import ExitCode, UsageError
from guards.git.repo import Repo
from guards.integrations import installation
from guards.integrations.installation import Step
from guards.integrations.plan import (
    HARNESS_NAMES,
    execute,
    harness_steps,
    harnesses,
    hook_steps,
    repo_or_none,
    uninstall_steps,
)

HELP = "remove exactly what `guards install` set up (--dry-run shows the plan)"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--global",
        dest="global_",
        action="store_true",
        help="the user-wide aliases instead of this repository's",
    )
    parser.add_argument("--shim", metavar="DIR", type=Path, help="remove the shim DIR/git")
    parser.add_argument("--hooks", action="store_true", help="only the native hooks")
    add_harness_arguments(parser, "remove our hooks from")
    parser.add_argument("--dry-run", action="store_true", help="print the plan, change nothing")


def run(args: argparse.Namespace) -> int:
    repo = repo_or_none()
    steps: list[Step] = []
    if args.global_:
        steps += installation.plan_remove_aliases("global", None, installation.user_manifest_path())
    if args.shim is not None:
        steps += installation.plan_remove_shim(args.shim, installation.user_manifest_path())
    harness_only = bool(harnesses(args))
    steps += harness_steps(harnesses(args), args.harness_scope, repo, install=False)
    if not args.global_ and args.shim is None and not harness_only:
        if repo is None:
            raise UsageError("not in a git repository: use --global or --shim DIR")
        manifest = repo.ledger_dir / installation.MANIFEST
        if not args.hooks:
            steps += installation.plan_remove_aliases(
                "local", repo.toplevel or repo.git_dir, manifest
            )
            steps += _project_harness_hooks(repo)
        steps += hook_steps(repo, install=False)
    if not steps:
        print("nothing to remove: guards installed nothing here")
        return ExitCode.OK
    execute(steps, args.dry_run)
    return ExitCode.OK


def _project_harness_hooks(repo: Repo) -> list[Step]:
    """Our hooks in this repository's .claude/settings.local.json, .claude/settings.json,
    .codex/hooks.json, .gemini/settings.json, .github/hooks/guards.json,
    .qwen/settings.json, .opencode/plugins/guards.js and .factory/hooks.json (or
    .factory/settings.json)."""
    from guards.integrations import harness_settings

    if repo.toplevel is None:
        return []
    steps: list[Step] = []
    for harness in HARNESS_NAMES:
        for path in harness_settings.hook_files(harness, "project", Path(repo.toplevel)):
            if path.exists():
                steps += uninstall_steps(harness, path)
    return steps
