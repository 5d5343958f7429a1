"""Commands that rewrite the index and the work tree: reset, checkout, switch, restore,
clean, stash, rm, mv.

Each handler reads the command's options and applies the rules of
:mod:`guards.predict.blast.rules` (docs/blast-radius.md, "Command by command").
"""

from __future__ import annotations

import os
import posixpath

from guards.errors import UnknownStateError
from guards.git import process as git
from guards.git.history import symbolic_head
from guards.git.objects import empty_tree
from guards.git.quoting import parse_clean_output
from guards.predict.blast.radius import BlastRadius, CannotTell, GitRefuses, LossKind, everything
from guards.predict.blast.rules import (
    TWO_WAY,
    Losses,
    branch_reset_loss,
    collisions,
    head_changes,
    head_move_loss,
    hidden_in_the_way,
    hidden_overwritten,
    ix,
    keep,
    merge_mode,
    moved,
    occupied_elsewhere,
    one_way_refused,
    operation_in_progress,
    r1,
    r3,
    r4,
    r5,
    r6,
    r7,
    recursed,
    stash_resets,
    switch_refused,
    tracked_entries,
    wi,
    wt,
)
from guards.predict.blast.state import (
    State,
    Target,
    command_options,
    files_under,
    pathspec_args,
    read_state,
    recurses_submodules,
)
from guards.predict.cmdline import applies, clean_force, stash_action
from guards.predict.options import parse_options

TYPE_CHECKING = False  # see guards.values: these imports cost start-up time
if TYPE_CHECKING:
    from collections.abc import Callable

    from guards.predict.blast.state import Context, Entry, State
    from guards.predict.options import Options


def _split_target(
    ctx: Context, opts: Options, peel: str = "commit"
) -> tuple[str | None, list[str]] | None:
    """(target, pathspec) of ``cmd [X] [--] [p...]``; None when X does not resolve."""
    pos = opts.positionals
    if opts.after_dashdash is not None:
        if len(pos) > 1:
            return None
        return (pos[0] if pos else None), opts.after_dashdash
    if pos and ctx.rev(pos[0], peel) is not None:
        return pos[0], pos[1:]
    return None, pos


def _reset(ctx: Context, args: list[str]) -> BlastRadius:
    o = command_options(ctx, "reset", args)
    if o.has("soft"):
        return BlastRadius(worktree=ctx.toplevel, losses=[])
    split = _split_target(ctx, o)
    if split is None:
        raise GitRefuses("reset")  # more than one revision before "--"
    name, pathspec = split
    head = ctx.head()
    if head is None and name is None and not pathspec and _head_is_broken(ctx):
        raise GitRefuses("reset")  # "Could not parse object 'HEAD'."
    x_oid = ctx.rev(name) if name else head
    if name and x_oid is None:
        x_oid = ctx.rev(name, "tree")
        if x_oid is None:
            return BlastRadius(worktree=ctx.toplevel, losses=[])  # git: unknown revision
    losses = Losses()
    moves_head = not pathspec and not o.given("pathspec-from-file") and x_oid != head
    # The commits HEAD leaves behind (reset HEAD~N), when no ref but a reflog keeps them.
    commits = head_move_loss(ctx, x_oid) if moves_head and name and ctx.rev(name) else []
    if o.has("hard") or o.has("merge") or o.has("keep"):
        if pathspec or o.given("pathspec-from-file"):
            return BlastRadius(worktree=ctx.toplevel, losses=[])  # git refuses
        target = Target(ctx, x_oid, head)
        state = read_state(ctx, target=target)
        if o.has("hard"):
            r1(ctx, state, target, losses)
        elif o.has("merge"):
            r5(state, target, losses)
        else:
            keep(state, target, losses)
        if _refused(o, state, target):
            commits = []
        elif not o.has("keep") and recurses_submodules(ctx, o, state):
            recursed(state, losses)
        return losses.radius(ctx, state, commits=commits)
    limit = pathspec_args(ctx, o, pathspec)
    state = read_state(ctx, limit, hash_work=False)  # R4 compares with the index only
    r4(state, Target(ctx, x_oid, head), losses)
    return losses.radius(ctx, commits=commits)


def _head_is_broken(ctx: Context) -> bool:
    """HEAD names no commit and is no unborn branch either (the zero id, say)."""
    return symbolic_head(ctx.run) is None


def _refused(o: Options, state: State, target: Target) -> bool:
    """Whether git refuses ``reset --hard/--merge/--keep`` (HEAD then stays)."""
    if o.has("hard"):
        return hidden_in_the_way(state, target)
    if o.has("merge"):
        return one_way_refused(state, target)
    slots = occupied_elsewhere(state, target, TWO_WAY)
    return switch_refused(state, target) or bool(collisions(state.untracked, slots))


def _checkout(ctx: Context, args: list[str]) -> BlastRadius:
    o = command_options(ctx, "checkout", args)
    head = ctx.head()
    pathmode = (
        bool(o.after_dashdash)  # `checkout X --` with no path switches branches
        or o.given("pathspec-from-file")
        or (o.has("patch") and not o.given("b") and not o.given("B"))
    )
    new_branch = o.value("b") or o.value("B") or o.value("orphan")
    if not pathmode and o.positionals and not new_branch:
        first = o.positionals[0]
        if len(o.positionals) > 1 or (ctx.rev(first) is None and _dwim_remote(ctx, first) is None):
            pathmode = True
    losses = Losses()
    if pathmode and (new_branch or o.has("detach") or o.given("track")):
        raise GitRefuses("checkout")  # "cannot be used with updating paths"
    if not pathmode and (o.has("ours") or o.has("theirs") or o.given("overlay")):
        raise GitRefuses("checkout")  # "cannot be used with switching branches"
    if new_branch and len(o.positionals) > 1:
        raise GitRefuses("checkout")  # "Cannot update paths and switch to branch"
    if pathmode:
        split = _split_target(ctx, o, "tree")
        if split is None:
            raise GitRefuses("checkout")  # "only one reference expected"
        name, pathspec = split
        limit = pathspec_args(ctx, o, pathspec)
        if name is None:
            state = read_state(ctx, limit)
            resolving = o.has("force") or o.has("ours") or o.has("theirs") or o.has("merge")
            if not resolving and any(e.unmerged for e in state.entries.values()):
                return BlastRadius(worktree=ctx.toplevel, losses=[])  # git refuses
            r3(state, losses, ignore_skip_worktree=o.has("ignore-skip-worktree-bits"))
            if o.has("ours") or o.has("theirs") or o.has("merge") or o.has("force"):
                for e in state.entries.values():
                    if e.unmerged and wt(e, e.head):
                        losses.add(e.path, LossKind.WORKTREE)
            _recursing(ctx, o, state, losses)
            return losses.radius(ctx, state)
        x_oid = ctx.rev(name, "tree")
        if x_oid is None:
            return BlastRadius(worktree=ctx.toplevel, losses=[])
        # Path mode compares with X's tree: a commit's tree or a bare tree alike.
        target = Target(ctx, ctx.rev(name) or x_oid, head)
        state = read_state(ctx, limit, target=target)
        r1(
            ctx,
            state,
            target,
            losses,
            only_in_x=not o.given("overlay") or o.has("overlay"),
            paths=True,
            ignore_skip_worktree=o.has("ignore-skip-worktree-bits"),
        )
        _recursing(ctx, o, state, losses)
        return losses.radius(ctx, state)
    # Branch mode: target is the start point (or the branch named).
    start = o.positionals[0] if o.positionals else None
    if start is None:
        x_oid = head
    else:
        x_oid = ctx.rev(start) or _dwim_remote(ctx, start)
        if x_oid is None:
            return BlastRadius(worktree=ctx.toplevel, losses=[])
    commits = branch_reset_loss(ctx, o.value("B"), x_oid) if o.given("B") and x_oid else []
    return _switch_to(ctx, o, x_oid, head, losses, commits, discard=False)


def _switch_to(
    ctx: Context,
    o: Options,
    x_oid: str | None,
    head: str | None,
    losses: Losses,
    commits: list[tuple[str, str]],
    *,
    discard: bool,
) -> BlastRadius:
    target = Target(ctx, x_oid, head)
    state = read_state(ctx, target=target)
    if o.has("force"):
        r1(ctx, state, target, losses)
        _recursing(ctx, o, state, losses)
    elif discard:
        slots = occupied_elsewhere(state, target)
        if not collisions(state.untracked, slots):
            r1(ctx, state, target, losses)
            _recursing(ctx, o, state, losses)
    elif o.has("merge"):
        merge_mode(state, target, losses)
    else:
        overwrite = not o.given("overwrite-ignore") or o.has("overwrite-ignore")
        r7(state, target, losses, overwrite_ignore=overwrite)
    return losses.radius(ctx, state, commits=commits)


def _recursing(ctx: Context, o: Options, state: State, losses: Losses) -> None:
    """A command that overwrites files loses the submodules' tracked changes too when it
    recurses into them (a path-mode command: those within its pathspec)."""
    if recurses_submodules(ctx, o, state):
        recursed(state, losses)


def _dwim_remote(ctx: Context, name: str) -> str | None:
    """``checkout foo`` / ``switch foo`` creating foo from the one ``<remote>/foo``."""
    from guards.git.refs import for_each_ref

    oids = for_each_ref(ctx.run, ("objectname",), [f"refs/remotes/*/{name}"])
    return oids[0][0] if len(oids) == 1 else None


def _switch(ctx: Context, args: list[str]) -> BlastRadius:
    o = command_options(ctx, "switch", args)
    if operation_in_progress(ctx):
        return BlastRadius(worktree=ctx.toplevel, losses=[])  # git: "cannot switch ... while"
    head = ctx.head()
    losses = Losses()
    if o.given("orphan"):
        x_oid: str | None = empty_tree(ctx.object_format)
        target_name = None
    else:
        target_name = o.positionals[0] if o.positionals else None
        if target_name is None:
            x_oid = head
        else:
            x_oid = ctx.rev(target_name)
            if x_oid is None:
                x_oid = _dwim_remote(ctx, target_name)
            if x_oid is None:
                return BlastRadius(worktree=ctx.toplevel, losses=[])
    commits: list[tuple[str, str]] = []
    if o.given("force-create") and x_oid:
        commits = branch_reset_loss(ctx, o.value("force-create"), x_oid)
    return _switch_to(ctx, o, x_oid, head, losses, commits, discard=o.has("discard-changes"))


def _restore(ctx: Context, args: list[str]) -> BlastRadius:
    o = command_options(ctx, "restore", args)
    pathspec = [*o.positionals, *(o.after_dashdash or [])]
    if not pathspec and not o.given("pathspec-from-file"):
        return BlastRadius(worktree=ctx.toplevel, losses=[])  # git: path(s) required
    staged = o.has("staged")
    worktree = o.has("worktree") or not staged
    source = o.value("source")
    head = ctx.head()
    if source is not None:
        x_oid = ctx.rev(source) or ctx.rev(source, "tree")
        if x_oid is None:
            return BlastRadius(worktree=ctx.toplevel, losses=[])
    else:
        x_oid = head
    target = Target(ctx, x_oid, head)
    state = read_state(ctx, pathspec_args(ctx, o, pathspec), target=target)
    losses = Losses()
    unmerged = [e for e in state.entries.values() if e.unmerged]
    if worktree and source is None and not staged and unmerged:
        # From the index, a conflicted path stops git, unless told what to do with it:
        # --ours/--theirs/-m rewrite the file (the resolution in progress goes),
        # --ignore-unmerged leaves it alone. (From a tree, git simply overwrites it.)
        if o.has("ours") or o.has("theirs") or o.has("merge"):
            for e in unmerged:
                if wt(e, e.head):
                    losses.add(e.path, LossKind.WORKTREE)
        elif not o.has("ignore-unmerged"):
            return BlastRadius(worktree=ctx.toplevel, losses=[])  # git refuses
    ignore_sw = o.has("ignore-skip-worktree-bits")
    if staged and worktree:
        r1(
            ctx,
            state,
            target,
            losses,
            only_in_x=o.has("overlay"),
            paths=True,
            ignore_skip_worktree=ignore_sw,
        )
    elif staged:
        r4(state, target, losses)
    elif source is None:
        r3(state, losses, ignore_skip_worktree=ignore_sw)
    else:
        r6(state, target, losses, ignore_skip_worktree=ignore_sw)
    if worktree:
        _recursing(ctx, o, state, losses)
    return losses.radius(ctx, state)


def _clean(ctx: Context, args: list[str]) -> BlastRadius:
    o = command_options(ctx, "clean", args)
    if not clean_force(ctx.cmd, o) or ctx.toplevel is None:
        return BlastRadius(worktree=ctx.toplevel, losses=[])
    dry = ["clean", "--dry-run"]
    if o.count("force") >= 2:
        dry += ["-f", "-f"]
    for flag in ("d", "x", "X"):
        if o.has(flag):
            dry.append(f"-{flag}")
    for v in o.values.get("exclude", []):
        if isinstance(v, str):
            dry.append(f"--exclude={v}")
    dry += ["--", *o.positionals, *(o.after_dashdash or [])]
    res = ctx.run(dry, at_prefix=True, check=False)
    if res.returncode in (128, 129):
        raise GitRefuses("clean")  # the same flags and pathspec: git refuses the real one too
    if res.returncode != 0:
        raise UnknownStateError(f"git clean --dry-run failed (exit {res.returncode})")
    removed, _skipped = parse_clean_output(res.stdout)
    paths: list[str] = []
    for shown in removed:
        rel = posixpath.normpath(posixpath.join(ctx.prefix, shown))
        # A directory goes as a whole (an empty one holds nothing to lose).
        paths.extend(files_under(ctx.toplevel, rel) if shown.endswith("/") else [rel])
    ignored: set[str] = set()
    if o.has("x") and paths:
        res = ctx.run(["check-ignore", "-z", "--stdin"], stdin=git.nul_join(paths), check=False)
        if res.returncode not in (0, 1):
            raise UnknownStateError("git check-ignore failed: " + res.stderr.decode().strip())
        ignored = {os.fsdecode(p) for p in git.zsplit(res.stdout)}
    losses = Losses()
    for p in paths:
        losses.add(p, LossKind.IGNORED if o.has("X") or p in ignored else LossKind.UNTRACKED)
    return losses.radius(ctx)


def _stash(ctx: Context, args: list[str]) -> BlastRadius:
    action, rest = stash_action(args)
    if action in ("list", "show", "apply", "create", "store"):
        return BlastRadius(worktree=ctx.toplevel, losses=[])
    if action in ("push", "save"):
        o = command_options(ctx, "stash-push", rest)
        pathspec = (
            (o.after_dashdash or [])
            if action == "save"
            else [
                *o.positionals,
                *(o.after_dashdash or []),
            ]
        )
        # Conflicts and intent-to-add entries anywhere make git refuse.
        full = read_state(ctx, hash_work=False)
        if any(e.unmerged or e.intent_to_add for e in full.entries.values()):
            return BlastRadius(worktree=ctx.toplevel, losses=[])
        limit = pathspec_args(ctx, o, pathspec)
        state = full if limit is None else read_state(ctx, limit, hash_work=False)
        if limit is not None and any(e.skip_worktree for e in state.entries.values()):
            raise GitRefuses("stash")  # its `git add` refuses paths outside the sparse cone
        losses = Losses()
        # stash records a submodule's commit but never touches the submodule's own work.
        if o.has("staged"):
            moved(state, losses, tracked=lambda e: e.xy[0] != "." and not e.gitlink)
        elif o.has("keep-index"):
            moved(state, losses, tracked=lambda e: e.xy[1] != "." and not e.gitlink)
        else:
            moved(state, losses, tracked=lambda e: not e.gitlink)
        if not pathspec and not o.given("pathspec-from-file"):
            stash_resets(
                state,
                losses,
                untracked=not (o.has("include-untracked") or o.has("all")),
                ignored=not o.has("all"),
            )
            hidden_overwritten(state, losses)
        if o.has("include-untracked") or o.has("all"):
            # A nested repository is not stashed: git records no gitlink for it.
            for p in (u for u in state.untracked if not u.endswith("/")):
                losses.add(p, LossKind.UNTRACKED)
        if o.has("all"):
            for p in state.ignored_files:
                losses.add(p, LossKind.IGNORED)
        return losses.radius(ctx, moves=bool(losses.kinds))
    if action in ("drop", "pop", "branch"):
        o = parse_options("stash-ref", rest)
        pos = o.positionals[1:] if action == "branch" else o.positionals
        entry = pos[0] if pos else "stash@{0}"
        if entry.isdigit():
            entry = f"stash@{{{entry}}}"
        oid = ctx.rev(entry)
        if oid is None:
            return BlastRadius(worktree=ctx.toplevel, losses=[])
        return BlastRadius(worktree=ctx.toplevel, losses=[], commits=[(oid, entry)])
    if action == "clear":
        return BlastRadius(worktree=ctx.toplevel, losses=[], commits=_stash_entries(ctx))
    return everything(ctx.toplevel)


def _stash_entries(ctx: Context) -> list[tuple[str, str]]:
    if ctx.rev("refs/stash") is None:
        return []
    out = ctx.out(["log", "-g", "-z", "--format=%H", "refs/stash", "--"])
    return [(oid.decode().strip(), f"stash@{{{n}}}") for n, oid in enumerate(git.zsplit(out))]


def _rm(ctx: Context, args: list[str]) -> BlastRadius:
    o = command_options(ctx, "rm", args)
    if o.has("dry-run"):
        return BlastRadius(worktree=ctx.toplevel, losses=[])
    pathspec = [*o.positionals, *(o.after_dashdash or [])]
    if not pathspec and not o.given("pathspec-from-file"):
        return BlastRadius(worktree=ctx.toplevel, losses=[])
    limit = pathspec_args(ctx, o, pathspec)
    if not o.has("r") and limit is not None and _matches_a_directory(ctx, limit[1:]):
        raise GitRefuses("rm")  # "not removing 'dir' recursively without -r"
    state = read_state(ctx, limit)
    losses = Losses()
    force = o.has("force")
    tracked = [
        e
        for e in tracked_entries(state)
        if (e.index is not None or e.intent_to_add or e.unmerged)
        and (o.has("sparse") or not e.skip_worktree)
    ]
    checked = [e for e in tracked if not e.unmerged]  # git never checks a conflicted path
    if o.has("cached"):
        # Staged content that matches neither the file nor HEAD: git refuses without -f.
        at_risk = [e for e in checked if ix(e, e.head) and wi(e)]
        if at_risk and not force:
            return losses.radius(ctx)
        for e in at_risk:
            losses.add(e.path, LossKind.STAGED)
        return losses.radius(ctx)
    # A submodule goes whole, its own changes and untracked files with it (git absorbs
    # its git dir first, so its history stays).
    submodules = [e for e in state.entries.values() if e.gitlink and e.submodule_dirty]
    if not force and (submodules or any(_local_change(e) for e in checked)):
        return losses.radius(ctx)  # git refuses anything with local changes
    for e in tracked:
        losses.add(e.path, *head_changes(e))
    for e in submodules:
        losses.add(e.path, LossKind.WORKTREE, LossKind.UNTRACKED)
    return losses.radius(ctx)


def _local_change(e: Entry) -> bool:
    """What makes ``rm`` without ``-f`` refuse: staged content, or a file that differs
    from its entry (a file already gone does not count)."""
    if e.intent_to_add:
        return e.work is not None
    return e.index != e.head or (e.work is not None and e.work != e.index)


def _matches_a_directory(ctx: Context, pathspec: list[str]) -> bool:
    """A plain pathspec element that names a directory of tracked files (or ``.``):
    ``rm`` without ``-r`` refuses the whole command. Elements with magic or wildcards
    are left to git (they never count here)."""
    plain = [p for p in pathspec if p and not p.startswith(":") and not any(c in p for c in "*?[")]
    if not plain:
        return False
    out = ctx.out(["--literal-pathspecs", "ls-files", "-z", "--", *plain], at_prefix=True)
    tracked = {os.fsdecode(p) for p in git.zsplit(out)}
    for p in plain:
        q = posixpath.normpath(p)
        if q == ".":
            if tracked:
                return True
        elif q not in tracked and any(t.startswith(q + "/") for t in tracked):
            return True
    return False


def _mv(ctx: Context, args: list[str]) -> BlastRadius:
    """``mv src dst``: with ``-f``, whatever dst holds; with or without it, the staged
    version of a dst whose file is gone from the work tree (git replaces the entry)."""
    o = command_options(ctx, "mv", args)
    if o.has("dry-run") or ctx.toplevel is None:
        return BlastRadius(worktree=ctx.toplevel, losses=[])
    operands = [*o.positionals, *(o.after_dashdash or [])]
    if len(operands) < 2:
        return BlastRadius(worktree=ctx.toplevel, losses=[])
    *sources, dest = operands
    dest_abs = ctx.abs_path(dest)
    targets: list[str] = []
    if os.path.isdir(dest_abs) and not os.path.islink(dest_abs):
        targets = [os.path.join(dest_abs, os.path.basename(ctx.abs_path(s))) for s in sources]
    elif len(sources) == 1:
        targets = [dest_abs]
    rels = [r for r in (ctx.rel(t) for t in targets) if r is not None]
    if not rels:
        return BlastRadius(worktree=ctx.toplevel, losses=[])
    on_disk = {r for r in rels if os.path.lexists(os.path.join(ctx.toplevel, r))}
    if on_disk and not o.has("force") and not o.has("k"):
        return BlastRadius(worktree=ctx.toplevel, losses=[])  # git: "destination exists"
    state = read_state(ctx)
    moving = {ctx.rel(ctx.abs_path(src)) for src in sources}
    if any(e.unmerged and e.path in moving for e in state.entries.values()):
        return BlastRadius(worktree=ctx.toplevel, losses=[])  # git: "conflicted"
    wanted = set(rels) if o.has("force") else set(rels) - on_disk
    losses = Losses()
    for e in tracked_entries(state):
        if e.path in wanted:
            losses.add(e.path, *head_changes(e))
    for kind, shown in ((LossKind.UNTRACKED, state.untracked), (LossKind.IGNORED, state.ignored)):
        for r in wanted & on_disk:
            if any(r == p or (p.endswith("/") and r.startswith(p)) for p in shown):
                losses.add(r, kind)
    return losses.radius(ctx)


def _checkout_index(ctx: Context, args: list[str]) -> BlastRadius:
    """``checkout-index -f`` writes index entries over their files: R3 for the paths
    named (``-a``: all; ``--stdin``: unreadable, so all). Without ``-f`` git never
    overwrites a file; ``--prefix`` writes elsewhere (cannot tell where: everything),
    ``--temp`` into new temporary files."""
    o = command_options(ctx, "checkout-index", args)
    if not o.has("force") or o.has("temp") or ctx.toplevel is None:
        return BlastRadius(worktree=ctx.toplevel, losses=[])
    if o.value("prefix"):
        raise CannotTell("checkout-index --prefix")
    paths = [*o.positionals, *(o.after_dashdash or [])]
    if not paths and not o.has("all") and not o.has("stdin"):
        return BlastRadius(worktree=ctx.toplevel, losses=[])
    limit = None if o.has("all") or o.has("stdin") else ["--", *(f":(literal){p}" for p in paths)]
    state = read_state(ctx, limit)
    losses = Losses()
    r3(state, losses, ignore_skip_worktree=o.has("ignore-skip-worktree-bits"))
    if o.has("no-create"):
        losses.kinds = {p: k for p, k in losses.kinds.items() if LossKind.WORKTREE in k}
    return losses.radius(ctx, state)


def _apply(ctx: Context, args: list[str]) -> BlastRadius:
    """``git apply`` rewrites the files its patch touches (``--cached``: their staged
    versions; ``--index``: both): their uncommitted content is not in the result as it
    was (``apply -R`` of the work tree's own diff removes it). The patch's paths are
    read by git itself (``--numstat`` with the same options); a patch on stdin cannot
    be read without stealing git's input, so every dirty path counts."""
    o = command_options(ctx, "apply", args)
    if not applies(o) or ctx.toplevel is None:
        return BlastRadius(worktree=ctx.toplevel, losses=[])
    patches = [*o.positionals, *(o.after_dashdash or [])]
    if not patches or "-" in patches:
        raise CannotTell("apply reads its patch from stdin")
    drop = {"--apply", "--check", "--stat", "--summary", "--numstat", "-z", "--reject"}
    query = [a for a in args if a not in drop]
    ancestor = o.value("build-fake-ancestor")
    import tempfile  # here: it imports re, which the guarded git's common case avoids

    with tempfile.TemporaryDirectory(prefix="guards-apply-") as aside:
        if ancestor is not None:
            # git writes that index file even when it only lists (--numstat): the query's
            # goes aside, after the command's own (the last one wins), before any "--".
            at = len(query) - (len(o.after_dashdash) + 1 if o.after_dashdash is not None else 0)
            query.insert(at, f"--build-fake-ancestor={os.path.join(aside, 'index')}")
        res = ctx.run(["apply", *query, "--numstat", "-z"], at_prefix=True, check=False)
    if res.returncode != 0:
        raise GitRefuses("apply")  # the patch does not parse: git says so, changing nothing
    touched: set[str] = set()
    records = git.zsplit(res.stdout)
    i = 0
    while i < len(records):
        rec = records[i]
        path = rec.split(b"\t", 2)[-1]
        if path:
            touched.add(os.fsdecode(path))
            i += 1
        else:  # a rename: "added\tdeleted\t", then the old and the new name
            touched.update(os.fsdecode(r) for r in records[i + 1 : i + 3])
            i += 3
    state = read_state(ctx)
    losses = Losses()
    cached, index = o.has("cached"), o.has("index")
    if index and any(e.path in touched and wi(e) for e in tracked_entries(state)):
        raise GitRefuses("apply")  # "does not match index"
    for e in tracked_entries(state):
        if e.path not in touched:
            continue
        # A version survives where the other side (index or file) still holds it.
        if not cached and wt(e, e.head) and (index or wi(e)):
            losses.add(e.path, LossKind.WORKTREE)
        if (cached or index) and ix(e, e.head) and (index or wi(e)):
            losses.add(e.path, LossKind.STAGED)
    if ancestor is not None:
        _overwritten_file(ctx, state, ancestor, losses)
    return losses.radius(ctx)


def _overwritten_file(ctx: Context, state: State, name: str, losses: Losses) -> None:
    """A file the command writes whole (named relative to where it runs): whatever
    uncommitted content the work tree has there is lost."""
    assert ctx.toplevel is not None
    full = os.path.normpath(os.path.join(ctx.toplevel, ctx.prefix, name))
    path = os.path.relpath(full, ctx.toplevel).replace(os.sep, "/")
    if path.startswith("../") or path in (".", ".."):
        return  # outside the work tree
    entry = state.entries.get(path)  # a dirty tracked path
    if entry is not None and wt(entry, entry.head) and wi(entry):  # neither HEAD nor index
        losses.add(path, LossKind.WORKTREE)
    elif path in state.untracked_files:
        losses.add(path, LossKind.UNTRACKED)
    elif path in state.ignored_files:
        losses.add(path, LossKind.IGNORED)


HANDLERS: dict[str, Callable[[Context, list[str]], BlastRadius]] = {
    "reset": _reset,
    "checkout": _checkout,
    "switch": _switch,
    "restore": _restore,
    "clean": _clean,
    "stash": _stash,
    "rm": _rm,
    "mv": _mv,
    "checkout-index": _checkout_index,
    "apply": _apply,
}
