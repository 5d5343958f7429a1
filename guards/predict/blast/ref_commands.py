"""Commands that move or drop refs and reflog entries, leaving commits that nothing but
a reflog (or nothing at all) reaches: ``worktree add -B``, ``fetch`` and ``push`` into
this repository's branches, ``reflog expire|delete`` and ``gc`` (the stash's older
entries live in the reflog of ``refs/stash`` only).

See docs/blast-radius.md, "Command by command".
"""

from __future__ import annotations

import os

from guards.git import process as git
from guards.git.history import symbolic_head
from guards.git.names import HEADS, BranchName, RefName, branch_name, branch_ref
from guards.git.refs import for_each_ref
from guards.git.worktrees import LIST_ARGS, parse_worktree_list
from guards.predict.blast.radius import BlastRadius, CannotTell, GitRefuses
from guards.predict.blast.rules import branch_reset_loss, unreachable_from
from guards.predict.blast.state import command_options, context

TYPE_CHECKING = False  # see guards.values: these imports cost start-up time
if TYPE_CHECKING:
    from collections.abc import Callable

    from guards.predict.blast.state import Context
    from guards.predict.cmdline import GitCommand

Commits = list[tuple[str, str]]


def worktree_add(cmd: GitCommand) -> BlastRadius:
    """``worktree add -B b path [start]`` resets branch b to start: b's old tip goes
    when nothing else reaches it."""
    ctx = context(cmd)
    if ctx is None:
        return BlastRadius(worktree=None, losses=[])
    o = command_options(ctx, "worktree-add", cmd.args[1:])
    branch = o.value("B")
    operands = [*o.positionals, *(o.after_dashdash or [])]
    if branch is None or not operands:
        return BlastRadius(worktree=None, losses=[])
    start = ctx.rev(operands[1]) if len(operands) > 1 else ctx.head()
    if start is None:
        return BlastRadius(worktree=None, losses=[])  # git: invalid reference
    return BlastRadius(worktree=None, losses=[], commits=branch_reset_loss(ctx, branch, start))


# ---------------------------------------------------------------------------
# fetch and push into this repository's branches


def _checked_out(ctx: Context) -> set[str]:
    """The branches checked out in any worktree (git refuses to overwrite them)."""
    listed = parse_worktree_list(ctx.out(LIST_ARGS))
    return {w.branch for w in listed if w.branch is not None}


def _local_refs(ctx: Context, pattern: str) -> dict[str, str]:
    """Local refs matching a refspec side (``refs/heads/*`` globs allowed)."""
    rows = for_each_ref(ctx.run, ("refname", "objectname"), [pattern])
    return {name: oid for name, oid in rows if name and oid}


def _branch_ref(name: str) -> str:
    return name if name.startswith("refs/") else branch_ref(BranchName(name))


def _forced_losses(ctx: Context, updates: list[tuple[str, str | None]]) -> Commits:
    """Branches forced to new tips (None: a tip guards cannot know, or a deletion):
    their old tips, when no other ref and no new tip reaches them."""
    commits: Commits = []
    moved = [ref for ref, _ in updates]
    for ref, new in updates:
        old = ctx.rev(ref)
        if old is None or old == new:
            continue
        if unreachable_from(ctx, old, [new] if new else [], exclude=moved):
            commits.append((old, f"branch {branch_name(RefName(ref))}"))
    return commits


def _fetch(ctx: Context, args: list[str]) -> BlastRadius:
    """``fetch <remote> +src:dst`` (or ``--force``) may rewind a local branch dst; from
    another repository the new tip is unknown until it arrives, so the old tip counts
    unless another ref reaches it. Unforced updates must fast-forward (or are
    rejected); a branch checked out anywhere stops the whole fetch."""
    o = command_options(ctx, "fetch", args)
    if o.has("dry-run") or o.has("all") or o.has("multiple"):
        return BlastRadius(worktree=ctx.toplevel, losses=[])
    if o.has("stdin"):
        raise CannotTell("fetch --stdin")
    words = [*o.positionals, *(o.after_dashdash or [])]
    remote, refspecs = (words[0], words[1:]) if words else ("", [])
    here = remote == "."
    updates: list[tuple[str, str | None]] = []
    busy = _checked_out(ctx)
    for spec in refspecs:
        force = spec.startswith("+") or o.has("force")
        src, colon, dst = spec.lstrip("+").partition(":")
        if not colon or not dst:
            continue  # fetched into FETCH_HEAD only
        pattern = _branch_ref(dst)
        if not pattern.startswith(HEADS):
            continue
        for ref in list(_local_refs(ctx, pattern)) if "*" in pattern else [pattern]:
            if ref in busy and not o.has("update-head-ok") and ctx.rev(ref):
                raise GitRefuses("fetch")  # "refusing to fetch into branch ... checked out"
            if not force:
                continue
            new = ctx.rev(_source_for(src, dst, ref)) if here else None
            updates.append((ref, new))
    return BlastRadius(worktree=ctx.toplevel, losses=[], commits=_forced_losses(ctx, updates))


def _source_for(src: str, dst: str, ref: str) -> str:
    """The source ref a glob refspec maps onto ``ref`` (``a/*:b/*``)."""
    if "*" not in src:
        return src
    dst_prefix, _, dst_suffix = _branch_ref(dst).partition("*")
    middle = ref[len(dst_prefix) : len(ref) - len(dst_suffix)]
    return src.replace("*", middle)


def _push(ctx: Context, args: list[str]) -> BlastRadius:
    """``push . :b`` deletes branch b of this very repository and ``push . +a:b`` forces
    it: b's old tip goes when nothing else reaches it. (Pushing elsewhere changes
    another repository's refs, not this one's.)"""
    o = command_options(ctx, "push", args)
    words = [*o.positionals, *(o.after_dashdash or [])]
    if o.has("dry-run") or not words or not _is_here(ctx, words[0]):
        return BlastRadius(worktree=ctx.toplevel, losses=[])
    current = symbolic_head(ctx.run) or ""
    force = o.has("force") or o.given("force-with-lease")
    updates: list[tuple[str, str | None]] = []
    for spec in words[1:]:
        forced = force or spec.startswith("+")
        src, colon, dst = spec.lstrip("+").partition(":")
        if o.has("delete"):
            src, dst = "", src
        elif not colon:
            dst = src
        known = dst.startswith("refs/") or ctx.rev(branch_ref(BranchName(dst)))
        ref = _branch_ref(dst) if known else ""
        if not ref.startswith(HEADS) or ref == current:
            continue  # not a branch here; the current branch is refused by default
        if not src:
            updates.append((ref, None))  # deleted
        elif forced:
            updates.append((ref, ctx.rev(src)))
    return BlastRadius(worktree=ctx.toplevel, losses=[], commits=_forced_losses(ctx, updates))


def _is_here(ctx: Context, remote: str) -> bool:
    if remote == ".":
        return True
    path = ctx.abs_path(remote)
    return os.path.isdir(path) and os.path.realpath(path) in {
        os.path.realpath(ctx.toplevel or ctx.git_dir),
        os.path.realpath(ctx.git_dir),
    }


# ---------------------------------------------------------------------------
# reflog expire, reflog delete, gc: the stash's older entries


def _stash_entries(ctx: Context) -> list[str]:
    """The stash's commits, newest first (stash@{0} first)."""
    if ctx.rev("refs/stash") is None:
        return []
    out = ctx.out(["log", "-g", "-z", "--format=%H", "refs/stash", "--"])
    return [oid.decode().strip() for oid in git.zsplit(out)]


def _expired_stash(ctx: Context, options: list[str]) -> Commits:
    """The stash entries ``reflog expire <options> refs/stash`` drops, asked of git
    itself (``--dry-run --verbose`` says keep or prune for each entry, oldest first)."""
    entries = _stash_entries(ctx)
    if not entries:
        return []
    res = ctx.run(["reflog", "expire", *options, "--dry-run", "--verbose", "refs/stash"])
    verdicts = [
        not line.startswith(b"keep")
        for line in res.stdout.split(b"\n")
        if line.startswith((b"keep", b"prune", b"would prune"))
    ]
    if len(verdicts) != len(entries):
        raise CannotTell("reflog expire")
    # An entry gone from the reflog is gone from the stash list (even stash@{0}, whose
    # commit refs/stash still names until the next drop).
    dropped = zip(reversed(entries), verdicts, strict=True)
    gone = {oid for oid, pruned in dropped if pruned}
    return [(oid, f"stash@{{{n}}}") for n, oid in enumerate(entries) if oid in gone]


_EXPIRE_OPTIONS = ("expire", "expire-unreachable")


def _reflog(ctx: Context, args: list[str]) -> BlastRadius:
    action = args[0] if args else ""
    if action == "expire":
        o = command_options(ctx, "reflog-expire", args[1:])
        names = [*o.positionals, *(o.after_dashdash or [])]
        stash = o.has("all") or any(n in ("stash", "refs/stash") for n in names)
        if o.has("dry-run") or not stash:
            return BlastRadius(worktree=ctx.toplevel, losses=[])
        options = [f"--{k}={o.value(k)}" for k in _EXPIRE_OPTIONS if o.value(k) is not None]
        options += [f"--{k}" for k in ("rewrite", "updateref", "stale-fix") if o.has(k)]
        return BlastRadius(worktree=ctx.toplevel, losses=[], commits=_expired_stash(ctx, options))
    if action == "delete":
        o = command_options(ctx, "reflog-delete", args[1:])
        if o.has("dry-run"):
            return BlastRadius(worktree=ctx.toplevel, losses=[])
        entries = _stash_entries(ctx)
        commits: Commits = []
        for name in [*o.positionals, *(o.after_dashdash or [])]:
            ref, _, spec = name.partition("@{")
            if ref not in ("stash", "refs/stash") or not spec.rstrip("}").isdigit():
                continue
            n = int(spec.rstrip("}"))
            if n < len(entries):
                commits.append((entries[n], f"stash@{{{n}}}"))
        return BlastRadius(worktree=ctx.toplevel, losses=[], commits=commits)
    return BlastRadius(worktree=ctx.toplevel, losses=[])


def _gc(ctx: Context, args: list[str]) -> BlastRadius:
    """gc expires reflogs as ``reflog expire --all`` does with its settings
    (gc.reflogExpire, gc.reflogExpireUnreachable): old stash entries go."""
    command_options(ctx, "gc", args)
    return BlastRadius(worktree=ctx.toplevel, losses=[], commits=_expired_stash(ctx, []))


#: ``worktree add`` acts on a new work tree: see :func:`worktree_add`.
HANDLERS: dict[str, Callable[[Context, list[str]], BlastRadius]] = {
    "fetch": _fetch,
    "push": _push,
    "reflog": _reflog,
    "gc": _gc,
}
