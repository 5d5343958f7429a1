"""The rule algebra: WT, IX, WI, collisions C(S, X), and the predictors R1-R7 that turn
a :class:`~guards.predict.blast.state.State` and a target into :class:`Losses`.

Notation and rules: docs/blast-radius.md ("Notation", "The predictors").
"""

from __future__ import annotations

from guards.git import operations
from guards.git.history import commits_held_only_by, symbolic_head
from guards.git.names import branch_name
from guards.git.objects import GITLINK
from guards.predict.blast.radius import BlastRadius, Loss, LossKind
from guards.predict.blast.state import Target

TYPE_CHECKING = False  # see guards.values: these imports cost start-up time
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Sequence

    from guards.predict.blast.state import Context, Entry, State, Version


def wt(e: Entry, x: Version | None) -> bool:
    """The work tree differs from ``x`` (pure deletions do not count)."""
    return e.work is not None and e.work != x


def ix(e: Entry, x: Version | None) -> bool:
    """The index differs from ``x`` (no stage-0 entry does not count)."""
    return e.index is not None and e.index != x


def wi(e: Entry) -> bool:
    return e.work != e.index


def head_changes(e: Entry) -> list[str]:
    """What ``e`` holds that HEAD does not: its file's changes, its staged ones."""
    kinds = [LossKind.WORKTREE] if wt(e, e.head) else []
    return [*kinds, LossKind.STAGED] if ix(e, e.head) else kinds


#: How git writes the target: R1 commands write every path of X (``reset --hard``); a
#: branch switch and ``reset --keep`` merge HEAD, index and X (two-way) and write only
#: what X changes; ``reset --merge`` merges index and X (one-way).
WRITES_ALL, TWO_WAY, ONE_WAY = "all", "two-way", "one-way"


def occupied_elsewhere(state: State, target: Target, how: str = WRITES_ALL) -> set[str]:
    """X's paths where git writes a file although no tracked file is there (the index
    has no entry, or its file is gone): collisions happen there.

    A gitlink is never such a slot: git leaves a submodule's directory alone."""
    slots: set[str] = set()
    for path, (old, new) in target.diff.items():
        if new is None or new[0] == GITLINK:
            continue
        e = state.entries.get(path)
        if e is None:
            if old is None:
                slots.add(path)
        elif e.index is None or (e.work is None and how != ONE_WAY):
            slots.add(path)
    if how == TWO_WAY:
        return slots  # a path X does not change is not written
    for e in state.entries.values():
        if e.path in target.diff or e.head is None or e.gitlink:
            continue
        if e.index is None or (e.work is None and how == WRITES_ALL):
            slots.add(e.path)
    return slots


def collisions(paths: Iterable[str], slots: set[str]) -> list[str]:
    """C(S, X): paths equal to, containing or lying under a path of X's tree."""
    if not slots:
        return []
    ancestors: set[str] = set()
    for s in slots:
        parts = s.split("/")
        for n in range(1, len(parts)):
            ancestors.add("/".join(parts[:n]))
    hit: list[str] = []
    for p in paths:
        q = p.rstrip("/")
        parts = q.split("/")
        under = any("/".join(parts[:n]) in slots for n in range(1, len(parts)))
        if q in slots or q in ancestors or under:
            hit.append(p)
    return hit


# ---------------------------------------------------------------------------
# Predictors


class Losses:
    def __init__(self) -> None:
        self.kinds: dict[str, set[str]] = {}

    def add(self, path: str, *kinds: str) -> None:
        if kinds:
            self.kinds.setdefault(path, set()).update(kinds)

    def forgive(self, ctx: Context, state: State) -> None:
        """Drop versions an operation in progress brought from a commit (a merge's or a
        cherry-pick's result staged in the index is committed on the other side)."""
        incoming = _incoming_targets(ctx)
        if not incoming:
            return
        for path, kinds in list(self.kinds.items()):
            e = state.entries.get(path)
            if e is None:
                continue
            versions = {t.version(e) for t in incoming}
            if LossKind.STAGED in kinds and e.index in versions:
                kinds.discard(LossKind.STAGED)
            if LossKind.WORKTREE in kinds and e.work in versions:
                kinds.discard(LossKind.WORKTREE)
            if not kinds:
                del self.kinds[path]

    def radius(self, ctx: Context, state: State | None = None, **kw: object) -> BlastRadius:
        if state is not None:
            self.forgive(ctx, state)
        losses = [Loss(p, frozenset(k)) for p, k in sorted(self.kinds.items())]
        return BlastRadius(worktree=ctx.toplevel, losses=losses, **kw)  # type: ignore[arg-type]


def _incoming_targets(ctx: Context) -> list[Target]:
    return [Target(ctx, oid, ctx.head()) for oid in operations.incoming_heads(ctx.git_dir)]


def operation_in_progress(ctx: Context) -> bool:
    """An operation that makes git refuse to switch branches (bisect does not)."""
    return any(op != "bisect" for op in operations.in_progress(ctx.git_dir))


def tracked_entries(state: State) -> Iterable[Entry]:
    return (e for e in state.entries.values() if not e.gitlink)


def hidden_in_the_way(state: State, target: Target) -> bool:
    """A file an index flag hides (assume-unchanged, skip-worktree) differs from its
    entry, and the entry would change: git's merge of trees checks that file after all
    ("Entry 'f' not uptodate. Cannot merge.") and refuses the whole command."""
    return any(e.hidden and target.version(e) != e.index for e in tracked_entries(state))


def touched(e: Entry, x: Version | None, *, ignore_skip_worktree: bool = False) -> bool:
    """Whether a path-mode command (``checkout [X] -- p``, ``restore``) writes this
    entry's file: a skip-worktree entry only when X changes it (or when told to)."""
    return not e.skip_worktree or ignore_skip_worktree or x != e.index


def r1(
    ctx: Context,
    state: State,
    target: Target,
    losses: Losses,
    *,
    only_in_x: bool = False,
    paths: bool = False,
    ignore_skip_worktree: bool = False,
) -> None:
    """Index and work tree become X (R1; R2 with ``only_in_x``). ``paths``: the path
    mode of checkout and restore, which writes files one by one; otherwise git merges
    trees, which refuses when a hidden change is in the way and leaves skip-worktree
    files alone."""
    if not paths and hidden_in_the_way(state, target):
        return
    for e in tracked_entries(state):
        x = target.version(e)
        if only_in_x and x is None:
            continue
        if e.skip_worktree and (
            not paths or not touched(e, x, ignore_skip_worktree=ignore_skip_worktree)
        ):
            continue
        kinds = []
        if wt(e, e.head) and wt(e, x):
            kinds.append(LossKind.WORKTREE)
        if ix(e, e.head) and ix(e, x):
            kinds.append(LossKind.STAGED)
        losses.add(e.path, *kinds)
    add_collisions(state, target, losses, untracked=True, ignored=True)


def add_collisions(
    state: State,
    target: Target,
    losses: Losses,
    *,
    untracked: bool,
    ignored: bool,
    how: str = WRITES_ALL,
) -> None:
    slots = occupied_elsewhere(state, target, how)
    _add_colliding(state, slots, losses, untracked=untracked, ignored=ignored)


def _add_colliding(
    state: State, slots: set[str], losses: Losses, *, untracked: bool, ignored: bool
) -> None:
    """The untracked (``untracked``) and ignored (``ignored``) files in the way of the
    paths ``slots`` that git writes are lost."""
    if untracked:
        for p in _colliding_files(state, state.untracked, slots):
            losses.add(p, LossKind.UNTRACKED)
    if ignored:
        for p in _colliding_files(state, state.ignored, slots):
            losses.add(p, LossKind.IGNORED)


def _colliding_files(state: State, shown: list[str], slots: set[str]) -> list[str]:
    """The files of C(S, X): a shown directory that collides is walked, then refiltered
    (a file of X deep inside an ignored directory hits only what lies at or under it)."""
    hits = collisions(shown, slots)
    return collisions(state.files(hits), slots) if hits else []


def recursed(state: State, losses: Losses) -> None:
    """A command that recurses into submodules and overwrites (``reset --hard|--merge``,
    ``checkout -f``, path-mode ``checkout``/``restore``) resets each submodule's files as
    it does the outer work tree: their tracked changes go, untracked files stay."""
    for e in state.entries.values():
        if e.gitlink and e.submodule_modified:
            losses.add(e.path, LossKind.WORKTREE)


def r3(state: State, losses: Losses, *, ignore_skip_worktree: bool = False) -> None:
    """The work tree becomes the index: ``WI ∩ WT(HEAD)``, and what stands where a file
    deleted from the work tree comes back (a directory of new files where the file
    was, a file where a directory of tracked files was)."""
    slots: set[str] = set()
    for e in tracked_entries(state):
        if e.skip_worktree and not ignore_skip_worktree:
            continue
        if wi(e) and wt(e, e.head) and not e.unmerged:
            losses.add(e.path, LossKind.WORKTREE)
        if e.index is not None and e.work is None:
            slots.add(e.path)
    for p in _colliding_files(state, state.untracked, slots):
        losses.add(p, LossKind.UNTRACKED)
    for p in _colliding_files(state, state.ignored, slots):
        losses.add(p, LossKind.IGNORED)


def r4(state: State, target: Target, losses: Losses) -> None:
    """The index becomes X, the work tree stays: ``IX(HEAD) ∩ IX(X) ∩ WI``."""
    for e in tracked_entries(state):
        if ix(e, e.head) and ix(e, target.version(e)) and wi(e):
            losses.add(e.path, LossKind.STAGED)


def r5(state: State, target: Target, losses: Losses) -> None:
    """``reset --merge X`` (git's one-way merge of the index with X): refuses when a path
    whose entry changes has a file that differs from it, or when untracked files are
    in X's way; else a staged version that matches neither HEAD nor X goes, with its
    file (git removes or rewrites it), and ignored files in X's way are overwritten."""
    if one_way_refused(state, target):
        return
    for e in tracked_entries(state):
        x = target.version(e)
        if e.unmerged:
            if wt(e, e.head) and wt(e, x):
                losses.add(e.path, LossKind.WORKTREE)
            continue
        if e.index == x or not ix(e, e.head):
            continue
        losses.add(e.path, LossKind.STAGED)
        if e.work is not None:
            losses.add(e.path, LossKind.WORKTREE)
    add_collisions(state, target, losses, untracked=False, ignored=True, how=ONE_WAY)


def one_way_refused(state: State, target: Target) -> bool:
    for e in tracked_entries(state):
        changes = e.index is not None and e.index != target.version(e)
        if changes and not e.unmerged and e.work is not None and e.work != e.index:
            return True  # "Entry 'f' not uptodate. Cannot merge."
    slots = occupied_elsewhere(state, target, ONE_WAY)
    return bool(collisions(state.untracked, slots))


def keep(state: State, target: Target, losses: Losses) -> None:
    """``reset --keep X``: the refusals and ignored collisions of a branch switch (git
    merges HEAD, index and X), and the index becomes X (R4)."""
    if switch_refused(state, target):
        return
    slots = occupied_elsewhere(state, target, TWO_WAY)
    if collisions(state.untracked, slots):
        return
    r4(state, target, losses)
    for p in _colliding_files(state, state.ignored, slots):
        losses.add(p, LossKind.IGNORED)


def r6(state: State, target: Target, losses: Losses, *, ignore_skip_worktree: bool = False) -> None:
    """``restore --source=X`` (work tree only): ``WT(HEAD)&WT(X)&WI | C(O,X)``."""
    for e in tracked_entries(state):
        x = target.version(e)
        if not touched(e, x, ignore_skip_worktree=ignore_skip_worktree):
            continue
        if wt(e, e.head) and wt(e, x) and wi(e):
            losses.add(e.path, LossKind.WORKTREE)
    add_collisions(state, target, losses, untracked=True, ignored=True)


def switch_refused(state: State, target: Target) -> bool:
    """git's two-way merge refuses: local changes on paths the switch changes (a file
    deleted from the work tree is no change git minds: it writes X's version)."""
    for e in tracked_entries(state):
        x = target.version(e)
        if x == e.head:
            continue
        if e.unmerged or (e.work is not None and e.work != e.index):
            return True
        if e.index != e.head and e.index != x:
            return True
    return False


def r7(state: State, target: Target, losses: Losses, *, overwrite_ignore: bool = True) -> None:
    """A branch switch without force: refuses on conflicts, else ignored collisions."""
    if switch_refused(state, target):
        return
    slots = occupied_elsewhere(state, target, TWO_WAY)
    if collisions(state.untracked, slots):
        return  # git refuses: untracked files would be overwritten
    if overwrite_ignore:
        for p in _colliding_files(state, state.ignored, slots):
            losses.add(p, LossKind.IGNORED)


def merge_mode(state: State, target: Target, losses: Losses) -> None:
    """``checkout -m X``: where the plain switch would refuse, git merges the local
    changes of the paths X changes; they survive only as a conflict (stage 3, markers).
    With any staged change git refuses instead."""
    if not switch_refused(state, target):
        r7(state, target, losses)
        return
    if any(e.index != e.head for e in tracked_entries(state)) or hidden_in_the_way(state, target):
        return
    for e in tracked_entries(state):
        if target.version(e) != e.head and wt(e, e.head):
            losses.add(e.path, LossKind.WORKTREE)
    add_collisions(state, target, losses, untracked=False, ignored=True, how=TWO_WAY)


def moved(state: State, losses: Losses, *, tracked: Callable[[Entry], bool]) -> None:
    """What ``stash`` (and autostash) takes away. Changes an index flag hides are not
    taken: the ``reset --hard`` that follows overwrites assume-unchanged files (a loss),
    and leaves skip-worktree ones alone."""
    for e in state.entries.values():
        if e.hidden:
            continue
        if tracked(e):
            kinds = []
            if wt(e, e.head) or (e.work is None and e.head is not None):
                kinds.append(LossKind.WORKTREE)
            if ix(e, e.head) or (e.index is None and e.head is not None):
                kinds.append(LossKind.STAGED)
            losses.add(e.path, *(kinds or [LossKind.WORKTREE]))


# ---------------------------------------------------------------------------
# Commits


def branch_reset_loss(ctx: Context, name: str | None, new_tip: str) -> list[tuple[str, str]]:
    """A branch forced to another commit: its old tip, if nothing else reaches it."""
    if not name:
        return []
    ref = f"refs/heads/{name}"
    old = ctx.rev(ref)
    if old is None or old == new_tip:
        return []
    if unreachable_from(ctx, old, [new_tip], exclude=(ref,)):
        return [(old, f"branch {name}")]
    return []


def head_move_loss(ctx: Context, new_tip: str | None) -> list[tuple[str, str]]:
    """HEAD (and the branch it is on) moved to ``new_tip``: the commits left behind, if
    nothing but a reflog would reach them (``reset HEAD~N``)."""
    old = ctx.head()
    if old is None or old == new_tip:
        return []
    ref = symbolic_head(ctx.run)
    exclude = (ref,) if ref else ()
    if unreachable_from(ctx, old, [new_tip] if new_tip else [], exclude):
        name = branch_name(ref) if ref else "HEAD"
        return [(old, f"{name} before the reset")]
    return []


def unreachable_from(ctx: Context, oid: str, extra: Sequence[str], exclude: Sequence[str]) -> bool:
    return bool(commits_held_only_by(ctx.run, oid, other_tips=extra, ignoring=exclude, limit=1))


def stash_resets(state: State, losses: Losses, *, untracked: bool, ignored: bool) -> None:
    """After stashing, git resets the work tree to HEAD: untracked (``untracked``) and
    ignored (``ignored``) files the stash did not take are deleted where a tracked file
    comes back (a directory of new files where a deleted file was, and the reverse)."""
    if not losses.kinds:
        return  # nothing to stash: git stops ("No local changes to save")
    slots = {
        e.path
        for e in tracked_entries(state)
        if e.head is not None and (e.index is None or e.work is None) and not e.hidden
    }
    _add_colliding(state, slots, losses, untracked=untracked, ignored=ignored)


def hidden_overwritten(state: State, losses: Losses) -> None:
    """After stashing, git resets the work tree: an assume-unchanged file that differs
    from its entry is overwritten with it (git's status never showed it to the stash)."""
    if not losses.kinds:
        return  # nothing to stash: git stops ("No local changes to save")
    for e in tracked_entries(state):
        if e.assume_unchanged and not e.skip_worktree and e.work is not None:
            losses.add(e.path, LossKind.WORKTREE)
