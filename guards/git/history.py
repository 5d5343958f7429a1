"""Questions about commits and the refs that keep them: which commits nothing else
holds (what a branch deletion, a forced reset or a force push would leave dangling),
and which branch work is merged into."""

from __future__ import annotations

import os

from guards.git.names import BranchName, ObjectId, RefName, branch_ref
from guards.git.refs import for_each_ref

TYPE_CHECKING = False  # see guards.values: these imports cost start-up time
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from guards.git import Result

    #: How a question reaches git: a repository's ``run`` (argv, stdin) -> result.
    Runner = Callable[..., Result]


def commits_held_only_by(
    run: Runner,
    tip: str,
    *,
    other_tips: Sequence[str] = (),
    ignoring: Sequence[str] = (),
    refs: Sequence[str] = ("refs/",),
    limit: int | None = None,
) -> list[ObjectId]:
    """The commits reachable from ``tip`` that no ref under ``refs`` (but those in
    ``ignoring``, full names) and none of ``other_tips`` reaches; newest first, at most
    ``limit``. Ref names are compared exactly (never as patterns), and the tips reach
    git on stdin, so thousands of refs cost no command line."""
    skip = set(ignoring)
    tips = list(other_tips)
    for oid, ref in for_each_ref(run, ("objectname", "refname"), refs):
        if oid and ref not in skip:
            tips.append(oid)
    args = ["rev-list", "--stdin", tip, "--"]  # a file may be named like the tip's id
    if limit is not None:
        args.insert(1, f"--max-count={limit}")
    stdin = "".join(f"^{t}\n" for t in dict.fromkeys(tips)).encode("ascii")
    return [ObjectId(o) for o in run(args, stdin=stdin).stdout.decode("ascii").split()]


def default_branch(run: Runner) -> RefName | None:
    """The full name of the branch work is merged into: ``origin/HEAD``'s target when
    the clone knows it, else a local ``main`` or ``master``; None when there is none."""
    res = run(["symbolic-ref", "-q", "refs/remotes/origin/HEAD"], check=False)
    target = res.stdout.rstrip(b"\n")
    if res.returncode == 0 and target.strip():
        return RefName(os.fsdecode(target))
    for candidate in (BranchName("main"), BranchName("master")):
        ref = branch_ref(candidate)
        if run(["rev-parse", "-q", "--verify", ref], check=False).returncode == 0:
            return ref
    return None
