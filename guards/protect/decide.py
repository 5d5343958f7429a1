"""The decision: before a git command runs, what would it destroy, whose is it, and what now.

Policy ``rescue`` (default) snapshots foreign and unknown work to rescue refs and then lets
git run; ``block`` refuses; ``warn`` lets git run after saying what is about to be lost.
The caller's own work (``mine``) is destroyed as asked. Nothing at risk: nothing happens.
"""

from __future__ import annotations

import os
from collections import Counter

from guards import output
from guards.errors import OVERRIDE_HINT, RefusedError
from guards.git.dirty import read_dirty
from guards.predict.blast import BlastRadius, LossKind
from guards.predict.cmdline import GitCommand
from guards.state.attribution import Ownership, classify
from guards.state.workspace import Workspace
from guards.values import MutableValue, Value

TYPE_CHECKING = False  # see guards.values: typing and dataclasses cost start-up time
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any, Final

    from guards.git.entries import Change
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


class AtRisk(Value):
    __slots__ = ("looked", "owner", "ownership", "path")

    def __init__(
        self,
        path: str,
        owner: str | None,
        ownership: str,
        looked: tuple[int, int, int, int] | None = None,
    ) -> None:
        self.path = path
        self.owner = owner
        self.ownership = ownership
        #: (mode, size, mtime_ns, inode) of the ``lstat`` it was judged by; None: none
        #: was kept (absent or unreadable then, or judged without one)
        self.looked = looked


def describe(cmd: GitCommand) -> str:
    words = [cmd.subcommand or "git", *cmd.args]
    text = " ".join(words)
    return text if len(text) <= 60 else text[:57] + "..."


def radius_paths(ws: Workspace, radius: BlastRadius) -> list[str]:
    """The paths of a radius; for "everything": all that git's status shows, and the
    losses it does not show (hidden by index flags) that the radius names."""
    paths = [loss.path for loss in radius.losses]
    if radius.everything:
        paths = list(dict.fromkeys([*(d.path for d in read_dirty(ws.repo, ignored=True)), *paths]))
    return paths


def classify_radius(
    ws: Workspace, radius: BlastRadius, seen: dict[str, object] | None = None
) -> list[AtRisk]:
    """Every path the command would destroy, with its owner relative to the caller
    (``seen`` gets each path's metadata first, before anything of it is read)."""
    data, problem = ws.read_ledger()
    if problem is not None:
        output.warn(f"{problem}; treating every owner as unknown")
    paths = radius_paths(ws, radius)
    now: dict[str, tuple[int, int, int, int] | None] = {}
    if seen is not None:
        from guards.protect.receipts import signatures, stat_key

        taken = signatures(ws, paths)
        seen.update(taken)
        now = {p: stat_key(taken.get(p)) for p in paths}  # judged by the same lstat
    records: Mapping[str, Any] = data.paths.get(ws.repo.worktree_key, {}) if data else {}
    top = ws.repo.worktree_key + os.sep  # text: no Path object per path (nor pathlib)
    fmt = ws.repo.object_format
    at_risk = []
    for path in paths:
        owner = classify(records.get(path), top + path, ws.caller, fmt, now.get(path))
        at_risk.append(AtRisk(path, owner.session, owner.ownership, now.get(path)))
    mine = [a.path for a in at_risk if a.ownership == Ownership.MINE]
    if not radius.everything:
        staged = {loss.path for loss in radius.losses if LossKind.STAGED in loss.kinds}
        mine = [p for p in mine if p in staged]
    unproven = staged_not_proven(ws, mine, records)
    if unproven:
        at_risk = [
            AtRisk(a.path, None, Ownership.UNKNOWN, a.looked) if a.path in unproven else a
            for a in at_risk
        ]
    return at_risk


def staged_not_proven(ws: Workspace, paths: list[str], records: Mapping[str, Any]) -> set[str]:
    """The caller's paths whose staged version is work of its own that the caller's
    attribution does not cover: it differs from HEAD, from the file on disk and from the
    content the caller recorded. Whoever staged it, that is not proven to be the caller.
    """
    if not paths:
        return set()
    from guards.git.entries import parse_raw_diff
    from guards.git.files import is_regular_file
    from guards.protect.snapshot import filtered_oids

    base = ws.repo.head_tree_or_empty()
    changes: dict[str, Change] = {}
    for start in range(0, len(paths), 500):
        args = ["--literal-pathspecs", "diff-index", "--cached", "-z", "--no-renames", base]
        res = ws.repo.run([*args, "--", *paths[start : start + 500]])
        changes.update(parse_raw_diff(res.stdout))
    staged: dict[str, str] = {}
    for path, change in changes.items():
        if change.new is None or change.status == "U":
            continue  # nothing staged beyond HEAD (conflict stages come from commits)
        record = records.get(path)
        fp = record.get("fingerprint") if isinstance(record, dict) else None
        if not isinstance(fp, dict) or change.new.oid != fp.get("blob"):
            staged[path] = change.new.oid
    # A staged version equal to the file on disk (git's filters applied) is that file's.
    top = ws.repo.worktree_key + os.sep
    files = [p for p in staged if is_regular_file(top + p)]
    on_disk = filtered_oids(ws.repo, files) if files else {}
    return {p for p, oid in staged.items() if on_disk.get(p) != oid}


def without_special_files(
    ws: Workspace, at_risk: list[AtRisk]
) -> tuple[list[AtRisk], list[tuple[str, str]]]:
    """FIFOs, sockets and devices hold no content to keep (and opening one can block
    forever): they leave the list unless the index holds a staged version of the path.
    Returns the rest, and (path, kind) for each one left out."""
    from guards.git.entries import parse_raw_diff
    from guards.git.files import special_kind, special_mode_kind

    top = ws.repo.worktree_key + os.sep
    kinds = {
        a.path: kind
        for a in at_risk
        if (
            kind := special_mode_kind(a.looked[0])
            if a.looked is not None
            else special_kind(top + a.path)
        )
        is not None
    }
    if not kinds:
        return at_risk, []
    args = ["--literal-pathspecs", "diff-index", "--cached", "-z", "--no-renames"]
    res = ws.repo.run([*args, ws.repo.head_tree_or_empty(), "--", *kinds])
    staged = parse_raw_diff(res.stdout)
    hollow = [(p, kind) for p, kind in kinds.items() if p not in staged]
    gone = {p for p, _ in hollow}
    return [a for a in at_risk if a.path not in gone], hollow


def special_files_note(hollow: list[tuple[str, str]]) -> str:
    shown = output.listing(
        [f"{output.show_path(p)} (a {kind})" for p, kind in hollow], output.SHOWN
    )
    return f"left out of the rescue, no content to keep: {shown}"


def asked_quiet(cmd: GitCommand) -> bool:
    """The command was given its own ``-q``/``--quiet`` (git's option tables): the rescue
    line then stays off stderr, as git's own output does (the rescue is still listed
    and logged)."""
    from guards.predict.cmdline import stash_action
    from guards.predict.options import SPECS, parse_options

    sub, args = cmd.subcommand, cmd.args
    if sub == "stash":
        action, args = stash_action(args)
        spec = "stash-push" if action in ("push", "save") else "stash-ref"
    elif sub == "submodule":
        words = [i for i, a in enumerate(args) if not a.startswith("-")]
        if words and any(a in ("-q", "--quiet") for a in args[: words[0]]):
            return True
        spec = f"submodule-{args[words[0]]}" if words else ""
        args = args[words[0] + 1 :] if words else []
    elif sub in ("cherry-pick", "revert"):
        spec = "sequencer"
    elif sub == "read-tree":  # no table of its own (see cmdline.read_tree_index_only)
        options = args[: args.index("--")] if "--" in args else args
        return any(
            a == "--quiet" or (a[:1] == "-" and a[1:2] != "-" and "q" in a[1:]) for a in options
        )
    else:
        spec = sub or ""
    if spec not in SPECS:
        return False
    found = parse_options(spec, args)
    return found.has("quiet") and not found.has("no-quiet")


def summary(foreign: list[AtRisk], commits: list[tuple[str, str]]) -> str:
    """``4 paths not provably yours (alice: 3, owner unknown: 1): a, b, c and 1 more``
    and commits."""
    parts = []
    if foreign:
        owners = Counter(a.owner or "owner unknown" for a in foreign)
        who = ", ".join(f"{name}: {n}" for name, n in sorted(owners.items()))
        noun = "path" if len(foreign) == 1 else "paths"
        names = output.listing([output.show_path(a.path) for a in foreign])
        parts.append(f"{len(foreign)} {noun} not provably yours ({who}): {names}")
    if commits:
        labels = output.listing([label for _, label in commits])
        parts.append(f"{len(commits)} commit(s) that would become unreachable ({labels})")
    return " and ".join(parts)


class Action:
    """What the guard does about a command (plain strings: they are the JSON's)."""

    #: Nothing of anyone else's at risk: git runs untouched.
    NOTHING: Final = "nothing"
    #: Rescue first, then git runs.
    RESCUE: Final = "rescue"
    #: The command does not run (policy block).
    REFUSE: Final = "refuse"
    #: Git runs; the work at risk is lost (policy warn).
    WARN: Final = "warn"


class Decision(MutableValue):
    """What the guard decided for one command, before doing any of it.

    :func:`decide` changes nothing (``guards explain`` shows it); :func:`carry_out`
    does it. ``at_risk``: what is not provably the caller's (the rescue's paths);
    ``mine``: the caller's own work the command destroys as asked; ``hollow``: special
    files (FIFOs, sockets, devices) left out, nothing to keep; ``held``: paths the
    caller's harness hook already rescued for this very command; ``what``: one line,
    what would be destroyed ("" when nothing); ``message``: the refusal, or the
    warning, as the user reads it; ``report``: the rescue line goes to stderr;
    ``label``: how messages name the command (a shell line's ``rm -rf src``; None:
    git's)."""

    __slots__ = (
        "action",
        "at_risk",
        "cmd",
        "commits",
        "held",
        "hollow",
        "label",
        "message",
        "mine",
        "policy",
        "radius",
        "report",
        "what",
        "ws",
    )

    def __init__(
        self,
        cmd: GitCommand,
        ws: Workspace,
        radius: BlastRadius,
        action: str,
        policy: str,
        at_risk: list[AtRisk],
        mine: list[AtRisk],
        commits: list[tuple[str, str]],
        hollow: list[tuple[str, str]],
        held: list[str],
        what: str,
        message: str,
        report: bool,
        label: str | None = None,
    ) -> None:
        self.cmd = cmd
        self.ws = ws
        self.radius = radius
        self.action = action
        self.policy = policy
        self.at_risk = at_risk
        self.mine = mine
        self.commits = commits
        self.hollow = hollow
        self.held = held
        self.what = what
        self.message = message
        self.report = report
        self.label = label


def decide(
    cmd: GitCommand,
    radius: BlastRadius,
    *,
    report: bool = True,
    label: str | None = None,
    rescuable: bool = True,
    prior: list[RescueResult] | None = None,
    seen: dict[str, object] | None = None,
) -> Decision:
    """What the policy says about ``radius``, changing nothing.

    ``label`` names a command that is not git (a shell line's ``rm -rf src``);
    ``rescuable`` False: the command would destroy the repository that would hold the
    rescue as well, so work at risk refuses it whatever the policy. ``prior``: rescues
    this command made already (a second look before git runs): a path they hold as it
    is now is not rescued again. ``seen`` gets the metadata of every path in the
    radius, taken before it is judged (see :mod:`.guard`)."""
    ws = Workspace.open(cwd=radius.worktree or cmd.cwd)
    classified = classify_radius(ws, radius, seen)
    at_risk = [a for a in classified if a.ownership != Ownership.MINE]
    mine = [a for a in classified if a.ownership == Ownership.MINE]
    report = report and not ws.config.quiet and not asked_quiet(cmd)
    at_risk, hollow = without_special_files(ws, at_risk)
    held: list[str] = []
    if at_risk:
        # The caller's harness hook may have rescued this very content for the command
        # that runs us (the shim inside an agent's shell line): not twice.
        from guards.protect.receipts import already_rescued

        kept = already_rescued(ws, [a.path for a in at_risk])
        if prior:
            from guards.protect.receipts import still_held

            kept |= still_held(ws, [a.path for a in at_risk if a.path not in kept], prior)
        held = [a.path for a in at_risk if a.path in kept]
        at_risk = [a for a in at_risk if a.path not in kept]
    commits = list(radius.commits)
    policy = ws.config.policy
    decision = Decision(
        cmd, ws, radius, Action.NOTHING, policy, at_risk, mine, commits, hollow, held, "", "",
        report, label,
    )  # fmt: skip
    if not at_risk and not commits:
        return decision
    decision.what = what = summary(at_risk, commits)
    verb = "move away" if radius.moves and not commits else "destroy"
    shown = label if label is not None else f"git {describe(cmd)}"
    if not rescuable:
        decision.action = Action.REFUSE
        decision.message = (
            f"refused `{shown}`: it would {verb} {what}, and the repository that would "
            f"hold their rescue with them; commit or move that work first ({OVERRIDE_HINT})"
        )
    elif policy == Policy.BLOCK:
        decision.action = Action.REFUSE
        decision.message = (
            f"refused `{shown}`: it would {verb} {what}; policy is block "
            f"(GUARDS_POLICY=rescue rescues it first and runs; {OVERRIDE_HINT})"
        )
    elif policy == Policy.WARN:
        decision.action = Action.WARN
        decision.message = f"`{shown}` is about to {verb} {what} (policy warn: no rescue)"
    else:
        decision.action = Action.RESCUE
    return decision


def carry_out(decision: Decision) -> list[RescueResult]:
    """Do what :func:`decide` decided; return when git may run (raises when refused)."""
    if decision.hollow and decision.report:
        output.warn(special_files_note(decision.hollow))
    if decision.action == Action.REFUSE:
        raise RefusedError(decision.message)
    if decision.action == Action.WARN:
        output.warn(decision.message)
        return []
    if decision.action == Action.NOTHING:
        return []
    return _rescue(
        decision.ws,
        decision.cmd,
        decision.at_risk,
        decision.commits,
        report=decision.report,
        label=decision.label,
    )


def _rescue(
    ws: Workspace,
    cmd: GitCommand,
    at_risk: list[AtRisk],
    commits: list[tuple[str, str]],
    *,
    report: bool = True,
    label: str | None = None,
) -> list[RescueResult]:
    from guards.protect.rescue import AtRiskPath, report_line, rescue_commits, rescue_paths

    label = label if label is not None else describe(cmd)
    if len(label) > 60:
        label = label[:57] + "..."
    results: list[RescueResult] = []
    if at_risk:
        results += rescue_paths(
            ws,
            [AtRiskPath(a.path, a.owner, a.looked) for a in at_risk],
            command=label,
            progress=report,
        )
    if commits:
        results += rescue_commits(ws, [(oid, name, None) for oid, name in commits], command=label)
    if report:
        for result in results:
            output.stderr_line(report_line(result))
    return results
