"""guards doctor: make a checkout's state loud, without touching any of it.

Every check is one small function that reads (git with ``--no-optional-locks``, the
ledger without its lock, files in the git dir) and returns :class:`Finding` objects: a
level, an area, one line saying what is so and one line saying how to fix it. A check
that cannot see what it needs reports that as a problem rather than as "fine".

The checks live by area: :mod:`.setup` (git, hooks, aliases, shim, settings),
:mod:`.ledger` (the ledger, its lock, the sessions), :mod:`.work` (dirty paths, stashes,
rescue refs, operations) and :mod:`.worktrees` (worktrees and the branch graveyard);
:mod:`.run` runs them.
"""

from __future__ import annotations

from guards.doctor.findings import Check, Context, Finding, Level, worst
from guards.doctor.run import REPO_CHECKS, SETUP_CHECKS, diagnose, open_context, run_checks
from guards.doctor.setup import check_git_version, check_shim

__all__ = [
    "REPO_CHECKS",
    "SETUP_CHECKS",
    "Check",
    "Context",
    "Finding",
    "Level",
    "check_git_version",
    "check_shim",
    "diagnose",
    "open_context",
    "run_checks",
    "worst",
]
