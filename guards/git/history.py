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

    from guards.git.process import Result

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


def symbolic_head(run: Runner) -> RefName | None:
    """The full name of the branch HEAD is on (``refs/heads/...``, bytes git does not
    require to be UTF-8 kept as ``os.fsdecode`` keeps them); None when detached, or
    when HEAD is no symbolic ref at all."""
    res = run(["symbolic-ref", "-q", "HEAD"], check=False)
    name = res.stdout.removesuffix(b"\n")
    return RefName(os.fsdecode(name)) if res.returncode == 0 and name else None


def ancestry(run: Runner, ancestor: str, descendant: str, *, strict: bool = False) -> bool | None:
    """Whether ``ancestor`` is an ancestor of (or is) ``descendant``; None when git
    cannot tell (an unknown object, a broken repository), which each caller judges for
    itself; ``strict``: that is an error (:class:`guards.git.GitError`, git's words)."""
    args = ["merge-base", "--is-ancestor", ancestor, descendant]
    res = run(args, check=False)
    if res.returncode not in (0, 1) and strict:
        from guards.git.process import GitError

        raise GitError(args, res.returncode, res.stderr)
    return {0: True, 1: False}.get(res.returncode)


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
