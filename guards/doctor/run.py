"""Running the checks: open the context once, run each check, never let one hide the rest."""

from __future__ import annotations

import os
import time
from collections.abc import Iterable

from guards.config import Config
from guards.doctor.effective import (
    check_artifacts,
    check_framework,
    check_shim_on_path,
    check_worktrees_dirty,
)
from guards.doctor.findings import Check, Context, Finding, Level
from guards.doctor.ledger import (
    check_checkpoints,
    check_kept_aside,
    check_ledger,
    check_ledger_lock,
    check_sessions,
    session_states,
)
from guards.doctor.setup import (
    check_aliases,
    check_config,
    check_git_version,
    check_hooks,
    check_hooks_path,
    check_shim,
)
from guards.doctor.work import check_dirty, check_operations, check_rescues, check_stashes
from guards.doctor.worktrees import check_graveyard, check_worktrees
from guards.errors import GuardsError
from guards.git import process as git
from guards.git.repo import NotARepositoryError, Repo, discover
from guards.state.ledger import Ledger

SETUP_CHECKS: tuple[Check, ...] = (
    check_git_version,
    check_hooks,
    check_hooks_path,
    check_aliases,
    check_shim,
    check_shim_on_path,
    check_artifacts,
    check_framework,
    check_config,
)
REPO_CHECKS: tuple[Check, ...] = (
    check_ledger,
    check_ledger_lock,
    check_kept_aside,
    check_sessions,
    check_checkpoints,
    check_dirty,
    check_stashes,
    check_rescues,
    check_operations,
    check_worktrees,
    check_worktrees_dirty,
    check_graveyard,
)


def _area_of(check: Check) -> str:
    areas: dict[Check, str] = {
        check_ledger: "ledger",
        check_ledger_lock: "ledger",
        check_kept_aside: "ledger",
        check_sessions: "sessions",
        check_checkpoints: "sessions",
        check_dirty: "paths",
        check_stashes: "stashes",
        check_rescues: "rescues",
        check_operations: "operations",
        check_worktrees: "worktrees",
        check_worktrees_dirty: "worktrees",
        check_graveyard: "branches",
    }
    return areas.get(check, "setup")


def open_context(cwd: str | os.PathLike[str] | None = None) -> tuple[Context, list[Finding]]:
    """Find the repository (if any) and read the ledger once, without side effects."""
    now = time.time()
    findings: list[Finding] = []
    try:
        repo: Repo | None = discover(cwd)
    except NotARepositoryError:
        repo = None
        findings.append(
            Finding(
                Level.OK,
                "repository",
                "repository",
                "not inside a git repository: only the setup checks ran",
            )
        )
    except GuardsError as e:
        repo = None
        findings.append(
            Finding(
                Level.PROBLEM,
                "repository",
                "repository",
                f"cannot look at the repository: {e}",
                "make git runnable (PATH or GUARDS_REAL_GIT), then run guards doctor again",
            )
        )
    ctx = Context(repo=repo, config=Config(repo.ledger_dir if repo else None), now=now)
    if repo is None:
        return ctx, findings
    where = f"work tree {repo.toplevel}" if repo.toplevel else f"git dir {repo.git_dir}"
    if repo.is_bare:
        findings.append(
            Finding(
                Level.OK,
                "repository",
                "repository",
                f"bare repository {repo.git_dir}: no work tree, so no dirty "
                f"paths or operations to check",
                data={"bare": True},
            )
        )
    else:
        findings.append(
            Finding(
                Level.OK, "repository", "repository", f"repository {where}", data={"bare": False}
            )
        )
    ctx.ledger = Ledger(repo.ledger_dir)
    # Never moves a corrupt ledger aside; reads this worktree's attributions only.
    ctx.data, ctx.ledger_problem = ctx.ledger.peek(repo.toplevel_text)
    if ctx.data is not None:
        ctx.sessions = session_states(ctx.data, float(ctx.setting("session.ttl")), now)
    return ctx, findings


def run_checks(ctx: Context, checks: Iterable[Check]) -> list[Finding]:
    findings: list[Finding] = []
    for check in checks:
        try:
            findings.extend(check(ctx))
        except Exception as e:  # one check failing must not hide the others
            name = check.__name__.removeprefix("check_").replace("_", "-")
            findings.append(
                Finding(
                    Level.PROBLEM,
                    _area_of(check),
                    name,
                    f"could not check {name}: {str(e).splitlines()[0]}",
                    "fix the cause above and run guards doctor again",
                )
            )
    return findings


def diagnose(
    cwd: str | os.PathLike[str] | None = None, started_status: git.Pending | None = None
) -> tuple[Context, list[Finding]]:
    """Every finding for the checkout at ``cwd`` (or outside any repository);
    ``started_status``: :func:`guards.git.dirty.start_reading` run there already."""
    ctx, findings = open_context(cwd)
    ctx.started_status = started_status
    findings += run_checks(ctx, SETUP_CHECKS)
    if ctx.repo is not None:
        findings += run_checks(ctx, REPO_CHECKS)
    return ctx, findings
