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

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

    from guards.git.repo import Repo

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
    parser.add_argument(
        "--shared",
        action="store_true",
        help="with --claude in a project: the team's .claude/settings.json (committed) "
        "instead of your personal .claude/settings.local.json",
    )
    parser.add_argument(
        "--trust",
        action="store_true",
        help="with --codex: trust guards' own Codex hooks (and, in a project, the project) "
        "in $CODEX_HOME/config.toml, and with a git shim set allow_login_shell = false; "
        "nothing else of the file changes",
    )
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
    steps += harness_steps(
        harnesses(args), args.harness_scope, repo, install=True, shared=args.shared
    )
    if args.trust:
        if "codex" not in harnesses(args):
            raise UsageError("--trust goes with --codex (Codex's trust in guards' hooks)")
        steps += _codex_trust_steps(args, repo)
    return steps


def _codex_hooks(args: argparse.Namespace, repo: Repo | None) -> tuple[Path, Path | None]:
    """Codex's hooks.json that install writes, and the project Codex must trust for it
    (None: the user's hooks, read in every project)."""
    from guards.integrations.codex_trust import trust_root
    from guards.integrations.harness_settings import settings_path

    scope = args.harness_scope or ("project" if repo is not None else "user")
    if scope == "user" or repo is None or repo.toplevel is None:
        return settings_path("codex", "user", None), None
    toplevel = Path(repo.toplevel)
    return settings_path("codex", "project", toplevel), trust_root(toplevel, repo.common_dir)


def _codex_trust_steps(args: argparse.Namespace, repo: Repo | None) -> list[Step]:
    from guards.integrations import codex_trust, harness_settings

    hooks_path, project = _codex_hooks(args, repo)
    doc = harness_settings.read_settings(hooks_path)
    harness_settings.merge(doc, "codex")
    return codex_trust.plan_trust(hooks_path, project, doc, shim=args.shim is not None)


def run(args: argparse.Namespace) -> int:
    from guards.integrations import harness_settings

    steps = plan(args)
    execute(steps, args.dry_run)
    if "claude" in harnesses(args) and not args.dry_run:
        _report_personal_settings(args)
    if "gemini" in harnesses(args):
        _report_folder_trust(harness_settings.gemini_trust_problem)
    if "copilot" in harnesses(args):
        _report_folder_trust(harness_settings.copilot_trust_problem)
    if "qwen" in harnesses(args):
        _report_qwen_trust(args)
    if "codex" in harnesses(args) and not args.dry_run and not args.trust:
        _report_codex_trust(args)
    if args.shim is not None and not args.dry_run:
        print(f'put the shim first on PATH: export PATH="{Path(args.shim).absolute()}:$PATH"')
    return ExitCode.OK


def _report_folder_trust(problem_of: Callable[[Path], str | None]) -> None:
    """Gemini CLI runs no hooks in a folder it does not trust, GitHub Copilot CLI loads no
    repository hooks there (and headless still runs shell commands): never leave them
    silently inert."""
    from guards.output import warn

    repo = repo_or_none()
    if repo is None or repo.toplevel is None:
        return
    problem = problem_of(Path(repo.toplevel))
    if problem is not None:
        warn(problem)


def _report_qwen_trust(args: argparse.Namespace) -> None:
    """With its folder trust on, Qwen Code ignores an untrusted project's settings: never
    leave our project hooks silently inert."""
    from guards.integrations.harness_settings import qwen_trust_problem
    from guards.output import warn

    repo = repo_or_none()
    if args.harness_scope == "user" or repo is None or repo.toplevel is None:
        return
    problem = qwen_trust_problem(Path(repo.toplevel))
    if problem is not None:
        warn(problem)


def _report_codex_trust(args: argparse.Namespace) -> None:
    """Codex skips untrusted hooks without a word: never leave them silently inert. Says
    the one step still needed (trust lost by a reinstall included)."""
    from guards.integrations import codex_trust, harness_settings
    from guards.output import warn

    hooks_path, project = _codex_hooks(args, repo_or_none())
    try:
        _text, config = codex_trust.read_config(codex_trust.config_path())
    except UsageError as e:
        warn(f"cannot tell whether Codex trusts guards' hooks: {e}")
        return
    doc = harness_settings.read_settings(hooks_path)
    trust = codex_trust.assess(doc, hooks_path, project, config, shim=args.shim is not None)
    fix = "guards install --codex" + (" --user" if project is None else "") + " --trust"
    for _check, problem, step in codex_trust.problems(trust, hooks_path, fix):
        warn(f"{problem}; {step}")


def _report_personal_settings(args: argparse.Namespace) -> None:
    """Personal settings hold one person's interpreter path: say so when git would let
    them be committed."""
    from guards.integrations.harness_settings import settings_path
    from guards.output import warn

    repo = repo_or_none()
    if args.shared or args.harness_scope == "user" or repo is None or repo.toplevel is None:
        return
    path = settings_path("claude", "project", Path(repo.toplevel))
    res = repo.run(["check-ignore", "-q", "--", str(path)], check=False)
    if res.returncode == 1:
        warn(
            f"{path} is not ignored by git: add .claude/settings.local.json to .gitignore "
            "so that your personal settings are never committed"
        )
