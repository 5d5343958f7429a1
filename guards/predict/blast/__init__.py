"""What a git command would destroy, computed before it runs (docs/blast-radius.md).

:func:`blast_radius` hands the command to the handler of its subcommand:

- :mod:`~guards.predict.blast.state`: where the command runs (:class:`Context`), the
  dirty state of its work tree (:class:`State`), its target X (:class:`Target`);
- :mod:`~guards.predict.blast.rules`: WT, IX, WI, collisions and the predictors R1-R7;
- :mod:`~guards.predict.blast.tree_commands`: reset, checkout, switch, restore, clean,
  stash, rm, mv;
- :mod:`~guards.predict.blast.history_commands`: worktree remove, branch, rebase & co,
  submodule, sparse-checkout;
- :mod:`~guards.predict.blast.ref_commands`: worktree add -B, fetch and push into this
  repository, reflog expire/delete, gc;
- :mod:`~guards.predict.blast.radius`: the answer, :class:`BlastRadius` and :class:`Loss`.

Every predictor is computed from read-only git calls that never rewrite the index
(``--no-optional-locks`` status, ``diff-tree``, ``ls-files``, ``hash-object`` of work
tree files, ``clean -n``). Notation as in docs/blast-radius.md: H = HEAD, I = index
(stage 0), W = work tree, X = the command's target; a version is ``(mode, oid)``.
"""

from __future__ import annotations

from guards.predict.blast.radius import (
    BlastRadius,
    CannotTell,
    GitRefuses,
    Loss,
    LossKind,
    everything,
)
from guards.predict.blast.rules import (
    Losses,
    collisions,
    ix,
    merge_mode,
    moved,
    operation_in_progress,
    r1,
    r3,
    r4,
    r5,
    r6,
    r7,
    wi,
    wt,
)
from guards.predict.blast.state import (
    Context,
    Entry,
    State,
    Target,
    Version,
    context,
    files_under,
    hidden_changes,
    pathspec_args,
    read_state,
)
from guards.predict.cmdline import asks_for_help, autostash, opaque_reason
from guards.predict.options import parse_options

TYPE_CHECKING = False  # see guards.values: these imports cost start-up time
if TYPE_CHECKING:
    from collections.abc import Callable

    from guards.predict.cmdline import GitCommand

__all__ = [
    "BlastRadius",
    "CannotTell",
    "Context",
    "Entry",
    "GitRefuses",
    "Loss",
    "LossKind",
    "Losses",
    "State",
    "Target",
    "Version",
    "all_dirty_work",
    "blast_radius",
    "collisions",
    "context",
    "files_under",
    "ix",
    "merge_mode",
    "moved",
    "operation_in_progress",
    "pathspec_args",
    "r1",
    "r3",
    "r4",
    "r5",
    "r6",
    "r7",
    "read_state",
    "wi",
    "wt",
]

#: subcommand -> the module whose ``HANDLERS`` predicts it, imported when asked: a
#: guarded reset loads none of the history and ref handlers (start-up time on every
#: guarded command). tests/test_blast.py keeps it equal to the modules' tables.
HANDLER_MODULES: dict[str, str] = {
    **dict.fromkeys(
        (
            *("reset", "checkout", "switch", "restore", "clean", "stash", "rm", "mv"),
            *("checkout-index", "apply"),
        ),
        "tree_commands",
    ),
    **dict.fromkeys(
        (
            *("branch", "rebase", "pull", "merge", "cherry-pick", "revert", "am"),
            *("submodule", "sparse-checkout", "worktree", "bisect", "filter-branch"),
            "read-tree",
        ),
        "history_commands",
    ),
    **dict.fromkeys(("fetch", "push", "reflog", "gc"), "ref_commands"),
}


def _handler(sub: str) -> Callable[[Context, list[str]], BlastRadius] | None:
    where = HANDLER_MODULES.get(sub)
    if where == "tree_commands":
        from guards.predict.blast.tree_commands import HANDLERS
    elif where == "history_commands":
        from guards.predict.blast.history_commands import HANDLERS
    elif where == "ref_commands":
        from guards.predict.blast.ref_commands import HANDLERS
    else:
        return None
    return HANDLERS[sub]


def blast_radius(cmd: GitCommand) -> BlastRadius:
    """What ``cmd`` would destroy or move away; raises UnknownStateError if git fails."""
    radius = _radius(cmd)
    if not radius.everything or radius.worktree is None:
        return radius
    return all_dirty_work(cmd, radius.worktree)


def all_dirty_work(cmd: GitCommand, worktree: str) -> BlastRadius:
    """Everything at risk in ``worktree``: what git's status shows (left to the reader of
    the radius) and the changes index flags hide from it (named here)."""
    ctx = context(cmd)
    if ctx is None or ctx.toplevel != worktree:
        ctx = context(cmd, at=worktree)
    state = State(toplevel=worktree)
    if ctx is not None:
        hidden_changes(ctx, state, None)
    kinds = frozenset({LossKind.WORKTREE})
    hidden = [Loss(path, kinds) for path in sorted(state.entries)]
    return BlastRadius(worktree=worktree, losses=hidden, everything=True)


def _refuses_local_changes(ctx: Context) -> bool:
    """``rebase`` (without autostash) and ``filter-branch`` stop before running anything
    when a tracked file has local changes."""
    cmd = ctx.cmd
    checks = cmd.subcommand == "filter-branch" or (
        cmd.subcommand == "rebase" and not autostash(cmd, parse_options("rebase", cmd.args))
    )
    if not checks:
        return False
    state = read_state(ctx, hash_work=False)
    return any(not e.hidden and not e.gitlink for e in state.entries.values())


def _radius(cmd: GitCommand) -> BlastRadius:
    ctx = None
    try:
        if opaque_reason(cmd) is not None:
            # Everything the command could reach: the dirty work of its work tree
            # (outside any repository, nothing of git's is there to lose).
            ctx = context(cmd)
            if ctx is None or ctx.toplevel is None or _refuses_local_changes(ctx):
                # (a bare repository has no work tree to lose: t7003)
                return BlastRadius(worktree=None, losses=[])
            return everything(ctx.toplevel)
        sub = cmd.subcommand
        if sub is None or asks_for_help(cmd.args):
            return BlastRadius(worktree=None, losses=[])
        handler = _handler(sub)
        if handler is None:
            return BlastRadius(worktree=None, losses=[])
        if sub == "worktree":
            if cmd.args[:1] == ["add"]:
                from guards.predict.blast.ref_commands import worktree_add

                return worktree_add(cmd)
            from guards.predict.blast.history_commands import worktree_remove

            return worktree_remove(cmd)
        ctx = context(cmd)
        if ctx is None:
            return BlastRadius(worktree=None, losses=[])
        return handler(ctx, cmd.args)
    except GitRefuses:
        return BlastRadius(worktree=None, losses=[])
    except CannotTell:
        ctx = ctx or context(cmd)
        return everything(None if ctx is None else ctx.toplevel)
