"""The decision: before a git command runs, what would it destroy, whose is it, and what now.

Policy ``rescue`` (default) snapshots foreign and unknown work to rescue refs and then lets
git run; ``block`` refuses; ``warn`` lets git run after saying what is about to be lost.
The caller's own work (``mine``) is destroyed as asked. Nothing at risk: nothing happens.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING

from guards import output
from guards.errors import OVERRIDE_HINT, RefusedError
from guards.git.dirty import read_dirty
from guards.predict.blast import BlastRadius
from guards.predict.cmdline import GitCommand
from guards.state.attribution import Ownership, classify
from guards.state.workspace import Workspace

if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any, Final

    from guards.protect.rescue import RescueResult


class Policy:
    """What the guard does with work at risk that is not provably the caller's
    (``GUARDS_POLICY``, ``policy`` in the config files).

    Plain strings, not an Enum: see :class:`guards.errors.ExitCode`."""

    #: Snapshot it to rescue refs, then let git run.
    RESCUE: Final = "rescue"
    #: Refuse the command.
    BLOCK: Final = "block"
    #: Let git run after saying what is about to be lost.
    WARN: Final = "warn"

    ALL: Final = (RESCUE, BLOCK, WARN)


#: How many commits the one-line summary names before "and N more".
SHOWN = 3


@dataclass(frozen=True)
class AtRisk:
    path: str
    owner: str | None
    ownership: Ownership


def describe(cmd: GitCommand) -> str:
    words = [cmd.subcommand or "git", *cmd.args]
    text = " ".join(words)
    return text if len(text) <= 60 else text[:57] + "..."


def classify_radius(ws: Workspace, radius: BlastRadius) -> list[AtRisk]:
    """Every path the command would destroy, with its owner relative to the caller."""
    data, problem = ws.read_ledger()
    if problem is not None:
        output.warn(f"{problem}; treating every owner as unknown")
    if radius.everything:
        paths = [d.path for d in read_dirty(ws.repo, ignored=True)]
    else:
        paths = [loss.path for loss in radius.losses]
    records: Mapping[str, Any] = data.paths.get(ws.repo.worktree_key, {}) if data else {}
    top = ws.repo.worktree
    fmt = ws.repo.object_format
    at_risk = []
    for path in paths:
        owner = classify(records.get(path), top / path, ws.caller, fmt)
        at_risk.append(AtRisk(path, owner.session, owner.ownership))
    return at_risk


def summary(foreign: list[AtRisk], commits: list[tuple[str, str]]) -> str:
    """``3 paths of other writers (alice: 2, owner unknown: 1)`` and commits."""
    parts = []
    if foreign:
        owners = Counter(a.owner or "owner unknown" for a in foreign)
        who = ", ".join(f"{name}: {n}" for name, n in sorted(owners.items()))
        noun = "path" if len(foreign) == 1 else "paths"
        parts.append(f"{len(foreign)} {noun} not provably yours ({who})")
    if commits:
        labels = output.listing([label for _, label in commits], SHOWN)
        parts.append(f"{len(commits)} commit(s) that would become unreachable ({labels})")
    return " and ".join(parts)


def protect(cmd: GitCommand, radius: BlastRadius, *, report: bool = True) -> list[RescueResult]:
    """Rescue, refuse or warn as the policy says; return when git may run.

    Returns what was rescued (empty when nothing was at risk or the policy is warn);
    ``report=False`` keeps the rescue lines off stderr (the agent hook returns them).
    """
    ws = Workspace.open(cwd=radius.worktree or cmd.cwd)
    at_risk = [a for a in classify_radius(ws, radius) if a.ownership is not Ownership.MINE]
    commits = list(radius.commits)
    if not at_risk and not commits:
        return []
    what = summary(at_risk, commits)
    verb = "move away" if radius.moves and not commits else "destroy"
    policy = ws.config.policy
    if policy == Policy.BLOCK:
        raise RefusedError(
            f"refused `git {describe(cmd)}`: it would {verb} {what}; policy is block "
            f"(GUARDS_POLICY=rescue rescues it first and runs; {OVERRIDE_HINT})"
        )
    if policy == Policy.WARN:
        output.warn(f"`git {describe(cmd)}` is about to {verb} {what} (policy warn: no rescue)")
        return []
    return _rescue(ws, cmd, at_risk, commits, report=report)


def _rescue(
    ws: Workspace,
    cmd: GitCommand,
    at_risk: list[AtRisk],
    commits: list[tuple[str, str]],
    *,
    report: bool = True,
) -> list[RescueResult]:
    from guards.protect.rescue import AtRiskPath, report_line, rescue_commits, rescue_paths

    label = describe(cmd)
    results: list[RescueResult] = []
    if at_risk:
        results += rescue_paths(ws, [AtRiskPath(a.path, a.owner) for a in at_risk], command=label)
    if commits:
        results += rescue_commits(ws, [(oid, name, None) for oid, name in commits], command=label)
    if report and not ws.config.quiet:
        for result in results:
            output.stderr_line(report_line(result))
    return results
