"""Commands that act on history, refs and other work trees: worktree remove, branch,
rebase/pull/merge/cherry-pick/revert/am (autostash, --abort, --skip, fast-forwards),
submodule, sparse-checkout.

See docs/blast-radius.md, "Command by command".
"""

from __future__ import annotations

import os
import posixpath

from guards.git import operations
from guards.git import process as git
from guards.git.entries import index_entries
from guards.git.history import ancestry, symbolic_head
from guards.git.objects import GITLINK
from guards.predict.blast.radius import BlastRadius, GitRefuses, LossKind, everything
from guards.predict.blast.rules import (
    TWO_WAY,
    Losses,
    add_collisions,
    branch_reset_loss,
    collisions,
    head_changes,
    hidden_overwritten,
    moved,
    occupied_elsewhere,
    r1,
    r5,
    stash_resets,
    unreachable_from,
)
from guards.predict.blast.state import Target, command_options, context, files_under, read_state
from guards.predict.cmdline import autostash
from guards.predict.options import parse_options

TYPE_CHECKING = False  # see guards.values: these imports cost start-up time
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from guards.predict.blast.state import Context
    from guards.predict.cmdline import GitCommand
    from guards.predict.options import Options


def worktree_remove(cmd: GitCommand) -> BlastRadius:
    args = cmd.args
    if not args or args[0] != "remove":
        return BlastRadius(worktree=None, losses=[])
    main = context(cmd)
    if main is None:
        return BlastRadius(worktree=None, losses=[])
    o = command_options(main, "worktree-remove", args[1:])
    operands = [*o.positionals, *(o.after_dashdash or [])]
    if len(operands) != 1:
        return BlastRadius(worktree=None, losses=[])  # git: usage
    path = main.abs_path(operands[0])
    if not os.path.isdir(path):
        return BlastRadius(worktree=None, losses=[])
    ctx = context(cmd, at=path)
    if ctx is None or ctx.toplevel is None:
        return BlastRadius(worktree=None, losses=[])
    if os.path.realpath(path) != os.path.realpath(ctx.toplevel):
        return BlastRadius(worktree=None, losses=[])  # not a worktree's top: git refuses
    if not os.path.exists(os.path.join(ctx.git_dir, "commondir")):
        return BlastRadius(worktree=ctx.toplevel, losses=[])  # the main worktree: git refuses
    force = o.count("force")
    if os.path.exists(os.path.join(ctx.git_dir, "locked")) and force < 2:
        return BlastRadius(worktree=ctx.toplevel, losses=[])
    state = read_state(ctx)
    losses = Losses()
    # git judges "dirty" by its status, which never shows changes an index flag hides.
    dirty = any(not e.hidden for e in state.entries.values()) or bool(state.untracked)
    if dirty and not force:
        return losses.radius(ctx)
    for e in state.entries.values():
        losses.add(e.path, *(head_changes(e) or [LossKind.WORKTREE]))
    for p in state.untracked_files:
        losses.add(p, LossKind.UNTRACKED)
    for p in state.ignored_files:
        losses.add(p, LossKind.IGNORED)
    commits: list[tuple[str, str]] = []
    head = ctx.head()
    detached = symbolic_head(ctx.run) is None
    if head and detached and unreachable_from(ctx, head, [], exclude=()):
        commits.append((head, f"HEAD of {ctx.toplevel}"))
    return losses.radius(ctx, commits=commits)


def _branch(ctx: Context, args: list[str]) -> BlastRadius:
    o = command_options(ctx, "branch", args)
    commits: list[tuple[str, str]] = []
    names = [*o.positionals, *(o.after_dashdash or [])]
    force = o.has("force")
    prefix = "refs/remotes/" if o.has("remotes") else "refs/heads/"
    if o.has("D") or (o.has("delete") and force):
        gone = [prefix + n for n in names]
        for n, ref in zip(names, gone, strict=True):
            oid = ctx.rev(ref)
            if oid and unreachable_from(ctx, oid, [], exclude=gone):
                commits.append((oid, f"branch {n}"))
    elif o.has("M") or o.has("C") or ((o.has("move") or o.has("copy")) and force):
        if names:
            new = names[-1]
            old_oid = ctx.rev(names[0]) if len(names) == 2 else ctx.head()
            ref = f"refs/heads/{new}"
            oid = ctx.rev(ref)
            if oid and oid != old_oid:
                extra = [old_oid] if old_oid else []
                if unreachable_from(ctx, oid, extra, exclude=(ref,)):
                    commits.append((oid, f"branch {new}"))
    elif force and names:
        start = ctx.rev(names[1]) if len(names) > 1 else ctx.head()
        if start:
            commits = branch_reset_loss(ctx, names[0], start)
    return BlastRadius(worktree=ctx.toplevel, losses=[], commits=commits)


def _autostash_radius(ctx: Context) -> BlastRadius:
    state = read_state(ctx, hash_work=False)
    losses = Losses()
    moved(state, losses, tracked=lambda e: not e.gitlink)
    stash_resets(state, losses, untracked=True, ignored=True)
    hidden_overwritten(state, losses)
    return losses.radius(ctx, moves=bool(losses.kinds))


def _sequencer_target(ctx: Context, sub: str) -> str | None:
    gd = ctx.git_dir
    candidates = {
        "cherry-pick": ["sequencer/head", "HEAD"],
        "revert": ["sequencer/head", "HEAD"],
        "am": ["rebase-apply/abort-safety", "ORIG_HEAD"],
        "merge": ["HEAD"],
    }[sub]
    for c in candidates:
        if "/" in c:
            try:
                with open(os.path.join(gd, c), encoding="ascii") as f:
                    oid = f.read().strip()
            except OSError:
                continue
            if oid:
                return oid
        else:
            found = ctx.rev(c)
            if found:
                return found
    return None


def _in_progress(ctx: Context, sub: str) -> bool:
    """Whether ``git <sub> --abort|--skip`` has something to act on."""
    ops = operations.in_progress(ctx.git_dir)
    if sub in ("cherry-pick", "revert"):
        return "cherry-pick" in ops or "revert" in ops  # git's sequencer stops either one
    return sub in ops


def _rebase_like(ctx: Context, args: list[str]) -> BlastRadius:
    sub = ctx.cmd.subcommand or ""
    spec = {"cherry-pick": "sequencer", "revert": "sequencer"}.get(sub, sub)
    o = command_options(ctx, spec, args)
    head = ctx.head()
    if o.has("abort") or o.has("skip"):
        if not _in_progress(ctx, sub):
            return BlastRadius(worktree=ctx.toplevel, losses=[])  # git: nothing to abort
        losses = Losses()
        if sub == "rebase":
            orig = operations.rebase_file(ctx.git_dir, "orig-head")
            x = orig if o.has("abort") else head
            if x is None:
                return BlastRadius(worktree=ctx.toplevel, losses=[])
            target = Target(ctx, x, head)
            state = read_state(ctx, target=target)
            r1(ctx, state, target, losses)
        else:
            x = _sequencer_target(ctx, sub) if o.has("abort") else head
            target = Target(ctx, x, head)
            state = read_state(ctx, target=target)
            r5(state, target, losses)
        return losses.radius(ctx, state)
    if sub in ("rebase", "pull", "merge") and autostash(ctx.cmd, o):
        return _autostash_radius(ctx)
    if sub == "rebase" and not _sequencer_control(o) and not o.has("edit-todo"):
        return _rebase_checkout(ctx, o)
    if sub in ("cherry-pick", "revert") and o.positionals and not _sequencer_control(o):
        return _pick(ctx, o.positionals, revert=sub == "revert", commits=not o.has("no-commit"))
    if sub == "merge" and not (o.has("continue") or o.has("quit")):
        losses = Losses()
        heads = o.positionals or ["@{upstream}"]
        state = read_state(ctx, hash_work=False)
        for name in heads:
            oid = ctx.rev(name)
            if oid is None:
                return BlastRadius(worktree=ctx.toplevel, losses=[])
            overwrite = not o.given("overwrite-ignore") or o.has("overwrite-ignore")
            if overwrite:
                target = Target(ctx, oid, head)
                add_collisions(state, target, losses, untracked=False, ignored=True)
        return losses.radius(ctx)
    return BlastRadius(worktree=ctx.toplevel, losses=[])


def _rebase_checkout(ctx: Context, o: Options) -> BlastRadius:
    """A rebase starts by checking out its base (after the branch it was given): the
    ignored files in the way of each switch are overwritten, as with ``checkout``. git
    refuses local changes (without autostash) and untracked files in the way; a branch
    already based on its upstream is left alone (unless forced)."""
    pos = o.positionals
    upstream = pos[0] if pos else "@{upstream}"
    onto = o.value("onto") or (None if o.has("root") else upstream)
    if onto is None:
        return BlastRadius(worktree=ctx.toplevel, losses=[])
    head = ctx.head()
    branch = ctx.rev(pos[1]) if len(pos) > 1 else head
    onto_oid = ctx.rev(onto)
    if onto_oid is None or branch is None or head is None:
        return BlastRadius(worktree=ctx.toplevel, losses=[])  # git: invalid upstream
    state = read_state(ctx, hash_work=False)
    if any(not e.hidden and not e.gitlink for e in state.entries.values()):
        return BlastRadius(worktree=ctx.toplevel, losses=[])  # "cannot rebase: ..."
    forced = o.has("force-rebase") or o.has("interactive") or o.given("exec")
    based = ancestry(ctx.run, onto_oid, branch)
    if based is True and not forced and not o.value("onto"):
        up_to_date = ctx.run(["merge-base", onto_oid, branch]).stdout.decode().strip()
        if up_to_date == onto_oid:
            return BlastRadius(worktree=ctx.toplevel, losses=[])  # "is up to date"
    losses = Losses()
    for before, after in ((head, branch), (branch, onto_oid)):
        target = Target(ctx, after, before)
        slots = occupied_elsewhere(state, target, TWO_WAY)
        if collisions(state.untracked, slots):
            return BlastRadius(worktree=ctx.toplevel, losses=[])  # git refuses
        add_collisions(state, target, losses, untracked=False, ignored=True, how=TWO_WAY)
    # Then each commit is replayed: one that adds a file a later one deletes writes it
    # too (over an ignored file there), though neither tip has it.
    # As rebase picks them: its todo list is upstream..branch without merges; a commit
    # whose patch the new base already has becomes empty and is dropped.
    upstream_oid = ctx.rev(upstream) if pos or not o.has("root") else None
    todo = (
        ctx.run(
            ["rev-list", "--reverse", "--no-merges", f"{upstream_oid or onto_oid}..{branch}", "--"],
            check=False,
        )
        .stdout.decode()
        .split()
    )
    if not o.has("reapply-cherry-picks"):
        fresh = set(
            ctx.run(
                ["rev-list", "--cherry-pick", "--right-only", f"{onto_oid}...{branch}", "--"],
                check=False,
            )
            .stdout.decode()
            .split()
        )
        todo = [c for c in todo if c in fresh]
    for commit in todo:
        found = _brought_by(ctx, commit, onto_oid)
        if found is not None:
            add_collisions(state, found[0], losses, untracked=False, ignored=True, how=TWO_WAY)
    return losses.radius(ctx)


def _sequencer_control(o: Options) -> bool:
    return any(o.has(x) for x in ("continue", "quit", "abort", "skip"))


def _pick(ctx: Context, revisions: list[str], *, revert: bool, commits: bool) -> BlastRadius:
    """``cherry-pick C`` writes the files C adds, ``revert C`` those C deleted: an
    ignored file where such a file lands is overwritten without a word. git refuses
    when an untracked file is in the way, when a file the commit changes has local
    changes, and (unless ``--no-commit``) when anything is staged."""
    res = ctx.run(["rev-list", "--no-walk=unsorted", *revisions, "--"], at_prefix=True, check=False)
    if res.returncode != 0:
        return BlastRadius(worktree=ctx.toplevel, losses=[])  # git: bad revision
    head = ctx.head()
    state = read_state(ctx, hash_work=False)
    if commits and any(e.index != e.head for e in state.entries.values()):
        return BlastRadius(worktree=ctx.toplevel, losses=[])  # "commit your changes"
    losses = Losses()
    for n, commit in enumerate(res.stdout.decode().split()):
        found = _brought_by(ctx, commit, head, revert=revert)
        if found is None:
            continue
        target, brings = found
        slots = occupied_elsewhere(state, target, TWO_WAY)
        local = brings is not None and any(
            p in brings.diff and e.work != e.index for p, e in state.entries.items()
        )
        if n == 0 and (local or collisions(state.untracked, slots)):
            return BlastRadius(worktree=ctx.toplevel, losses=[])  # git refuses
        add_collisions(state, target, losses, untracked=False, ignored=True, how=TWO_WAY)
    return losses.radius(ctx)


def _brought_by(
    ctx: Context, commit: str, head: str | None, *, revert: bool = False
) -> tuple[Target, Target | None] | None:
    """(the files a commit adds — a revert: those it deleted — as a target relative to
    HEAD, everything the commit changes); None for a revert of a root commit."""
    parent = ctx.rev(f"{commit}^")
    before, after = (commit, parent) if revert else (parent, commit)
    if after is None:
        return None
    target = Target(ctx, after, head)
    brings = Target(ctx, after, before) if before else None
    target.diff = {
        p: change
        for p, change in target.diff.items()
        if brings is None or (p in brings.diff and brings.diff[p][0] is None)
    }
    return target, brings


def _submodule(ctx: Context, args: list[str]) -> BlastRadius:
    words = [a for a in args if not a.startswith("-")]
    action = words[0] if words else ""
    if action == "update":
        rest = args[args.index("update") + 1 :]
        if parse_options("submodule-update", rest).has("force"):
            return everything(ctx.toplevel)
        return BlastRadius(worktree=ctx.toplevel, losses=[])
    if action != "deinit" or ctx.toplevel is None:
        return BlastRadius(worktree=ctx.toplevel, losses=[])
    rest = args[args.index("deinit") + 1 :]
    o = command_options(ctx, "submodule-deinit", rest)
    pathspec = [*o.positionals, *(o.after_dashdash or [])]
    if not pathspec and not o.has("all"):
        return BlastRadius(worktree=ctx.toplevel, losses=[])
    out = ctx.out(["ls-files", "-s", "-z", "--full-name", "--", *pathspec], at_prefix=True)
    losses = Losses()
    for item in index_entries(out):
        if item.entry.mode != GITLINK:
            continue
        sub_path = item.path
        sub_dir = os.path.join(ctx.toplevel, sub_path)
        if not os.path.exists(os.path.join(sub_dir, ".git")):
            continue
        sub_ctx = context(ctx.cmd, at=sub_dir)
        if sub_ctx is None or sub_ctx.toplevel is None:
            # git cannot read it (its .git points nowhere): deinit -f empties it all the
            # same, and what cannot be read is never taken for clean.
            for p in files_under(ctx.toplevel, sub_path):
                losses.add(p, LossKind.UNTRACKED)
            continue
        state = read_state(sub_ctx, hash_work=False)
        dirty = any(not e.hidden for e in state.entries.values()) or bool(state.untracked)
        if dirty and not o.has("force"):
            return BlastRadius(worktree=ctx.toplevel, losses=[])  # git refuses
        for e in state.entries.values():
            losses.add(posixpath.join(sub_path, e.path), LossKind.WORKTREE)
        for p in state.untracked_files:
            losses.add(posixpath.join(sub_path, p), LossKind.UNTRACKED)
        for p in state.ignored_files:
            losses.add(posixpath.join(sub_path, p), LossKind.IGNORED)
    return losses.radius(ctx)


def _sparse_checkout(ctx: Context, args: list[str]) -> BlastRadius:
    """What a sparse-checkout update destroys: in cone mode, after the new patterns are
    applied, each tracked directory wholly outside the cone that still exists is
    deleted with its ignored files, unless it holds untracked files (git keeps it and
    warns) or a file with local changes (git leaves it "despite sparse patterns").
    Tracked files that leave are committed content; files that come back never
    overwrite what is there. Non-cone patterns delete no directory at all."""
    action = args[0] if args else ""
    if action not in ("set", "add", "reapply", "init"):
        return BlastRadius(worktree=ctx.toplevel, losses=[])  # list, disable, check-rules
    o = command_options(ctx, "sparse-checkout", args[1:])
    cone = ctx.cmd.config_bool("core.sparsecheckoutcone", None) is not False
    if action in ("set", "init") and o.given("cone"):
        cone = o.has("cone")
    if not cone or ctx.toplevel is None:
        if action in ("add", "reapply") and not ctx.cmd.config_bool("core.sparsecheckout"):
            raise GitRefuses("sparse-checkout")  # "no sparse-checkout to add to"
        return BlastRadius(worktree=ctx.toplevel, losses=[])
    named = [
        posixpath.normpath(posixpath.join(ctx.prefix, d)).strip("/")
        for d in o.positionals + (o.after_dashdash or [])
    ]
    current = _cone(ctx)
    if action in ("add", "reapply") and not ctx.cmd.config_bool("core.sparsecheckout"):
        raise GitRefuses("sparse-checkout")  # "must be in a sparse-checkout"
    if action == "set":
        dirs = [] if o.has("stdin") else named  # from stdin: as if every directory left
    elif action == "add":
        dirs = [] if o.has("stdin") else [*(current or []), *named]
    elif action == "init":
        dirs = current or []
    else:
        dirs = current or []
    state = read_state(ctx, hash_work=False)
    if any(e.unmerged for e in state.entries.values()):
        return BlastRadius(worktree=ctx.toplevel, losses=[])  # git deletes no directory
    losses = Losses()
    tracked_dirs = _tracked_dirs(ctx)
    leaving: dict[str, list[str]] = {}
    for p in state.ignored_files:
        parent = posixpath.dirname(p)
        if not parent or _in_cone(parent, dirs):
            continue
        top_dir = _leaving_dir(parent, dirs)
        if top_dir is not None and top_dir in tracked_dirs:
            leaving.setdefault(top_dir, []).append(p)
    keepers = [*state.untracked, *state.entries]
    for top_dir, ignored in leaving.items():
        if any(k.startswith(top_dir + "/") for k in keepers):
            continue
        for p in ignored:
            losses.add(p, LossKind.IGNORED)
    return losses.radius(ctx)


def _cone(ctx: Context) -> list[str] | None:
    """The directories of the cone in the work tree's sparse-checkout file (which
    ``init`` reuses even after ``disable``); None when there is no such file."""
    try:
        with open(os.path.join(ctx.git_dir, "info", "sparse-checkout"), "rb") as f:
            lines = [os.fsdecode(line.strip()) for line in f]
    except OSError:
        return None
    dirs = {line.strip("/") for line in lines if line.startswith("/") and line.endswith("/")}
    parents = {line[2:-3] for line in lines if line.startswith("!/") and line.endswith("/*/")}
    return sorted(d for d in dirs - parents if d and d != "*")


def _in_cone(directory: str, cone: Sequence[str]) -> bool:
    for c in cone:
        if directory == c or directory.startswith(c + "/") or c.startswith(directory + "/"):
            return True
    return False


def _leaving_dir(directory: str, cone: Sequence[str]) -> str | None:
    """The outermost directory of ``directory``'s chain that is out of the cone."""
    parts = directory.split("/")
    for n in range(1, len(parts) + 1):
        d = "/".join(parts[:n])
        if not _in_cone(d, cone):
            return d
    return None


def _tracked_dirs(ctx: Context) -> set[str]:
    out = ctx.out(["ls-files", "-z", "--full-name", "--sparse"])
    dirs: set[str] = set()
    for p in git.zsplit(out):
        parts = os.fsdecode(p).split("/")[:-1]
        for n in range(1, len(parts) + 1):
            dirs.add("/".join(parts[:n]))
    return dirs


def _read_tree(ctx: Context, args: list[str]) -> BlastRadius:
    """``read-tree TREE`` without -m, --reset, --prefix or -u (the other forms are opaque):
    the index is replaced without being read, so the staged work it holds is at risk.
    An empty index file holds none (git reads no such file: t1009), and neither does a
    dry run."""
    if any(a in ("-n", "--dry-run") or a.startswith("--index-output") for a in args):
        return BlastRadius(worktree=ctx.toplevel, losses=[])
    res = ctx.run(["rev-parse", "--path-format=absolute", "--git-path", "index"], at_prefix=True)
    index = os.fsdecode(git.strip_newline(res.stdout))
    try:
        empty = os.stat(index).st_size == 0
    except FileNotFoundError:
        empty = True
    return BlastRadius(worktree=ctx.toplevel, losses=[]) if empty else everything(ctx.toplevel)


#: ``worktree`` acts on another work tree than the command's: see :func:`worktree_remove`.
HANDLERS: dict[str, Callable[[Context, list[str]], BlastRadius]] = {
    "branch": _branch,
    "rebase": _rebase_like,
    "pull": _rebase_like,
    "merge": _rebase_like,
    "cherry-pick": _rebase_like,
    "revert": _rebase_like,
    "am": _rebase_like,
    "submodule": _submodule,
    "sparse-checkout": _sparse_checkout,
    "worktree": lambda ctx, args: BlastRadius(worktree=None, losses=[]),
    # Their destructive forms are opaque (cmdline.opaque_reason); the others destroy nothing.
    "bisect": lambda ctx, args: BlastRadius(worktree=ctx.toplevel, losses=[]),
    "filter-branch": lambda ctx, args: BlastRadius(worktree=ctx.toplevel, losses=[]),
    "read-tree": _read_tree,
}
