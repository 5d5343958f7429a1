"""The one guard pipeline: before git runs, what would it destroy, and rescue or refuse.

:func:`guard_command` is used by ``guards run`` (the shim and the aliases) and, through
:func:`guard_line`, by the agent hooks for every git invocation in a shell line; a
difference between the two is a bug. ``guards explain`` runs the same two functions with
a ``plan``: every decision is made and collected, none is carried out, so explain cannot
disagree with the guard. It imports the decision machinery (:mod:`guards.protect.decide`)
only when something is at risk: the common case stays cheap.

Every decision where something was at risk is written to the decision log
(:mod:`guards.state.decisions`) here, once: rescued, refused, warned, bypassed
(``GUARDS_DISABLE=1``, :func:`note_bypass`) and denied (a shell line of an agent hook).
"""

from __future__ import annotations

import os

from guards.fsutil import nearest_directory
from guards.values import MutableValue

TYPE_CHECKING = False  # see guards.values: these imports cost start-up time
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

    from guards.predict.cmdline import GitCommand
    from guards.predict.shell import Analysis, GitCall
    from guards.protect.decide import Decision
    from guards.protect.rescue import RescueResult
    from guards.state.workspace import Workspace

#: ``via`` of a decision log entry: ``guards run`` (the shim, the aliases).
VIA_RUN = "run"
#: ``via`` of a decision log entry: a shell line of an agent harness's hook.
VIA_HOOK = "agent-hook"


def guard_command(
    cmd: GitCommand,
    *,
    report: bool = True,
    via: str = VIA_RUN,
    line: str | None = None,
    plan: list[Decision] | None = None,
    announce: bool = False,
) -> list[RescueResult]:
    """Rescue (or refuse, as the policy says) what ``cmd`` would destroy; return when git
    may run. A command git itself rejects before touching anything passes untouched.

    ``line``: the shell line ``cmd`` is part of (for the log). With ``plan``, nothing is
    done and nothing logged: the decision is appended to it (``guards explain``).
    ``announce``: this process becomes git when this returns (``guards run``): it
    announces itself to the writers of its work tree first, and waits for the writes
    they announced (guards.state.barrier)."""
    from guards.predict import cmdline

    if not cmdline.could_destroy(cmd):
        return []
    announced = _enter_destroy(cmd) if announce and plan is None else None
    try:
        with _no_cycle_collection():
            return _guard_command(cmd, report=report, via=via, line=line, plan=plan)
    except BaseException:
        if announced is not None:
            from guards import fsutil

            fsutil.remove(announced)  # git will not run: writers need not wait
        raise


class _no_cycle_collection:
    """Python's cycle collector off while a command is guarded. A guard makes a few
    objects per path in reach (50,000 paths: a few hundred thousand), and reference
    counting frees them; the collector, run every few hundred allocations, walks every
    live object again and again: a fifth of a 50,000-file guarded reset (3.2 s -> 2.5 s
    without it). The guard's process ends soon after, or turns it back on here."""

    def __enter__(self) -> None:
        import gc

        self._was = gc.isenabled()
        gc.disable()

    def __exit__(self, *exc: object) -> None:
        import gc

        if self._was:
            gc.enable()


def _enter_destroy(cmd: GitCommand) -> str | None:
    """Announce the command in the barrier, then wait (bounded) for announced writes."""
    if any(o.startswith(("--git-dir", "--work-tree")) for o in cmd.global_options) or any(
        k in cmd.env for k in ("GIT_DIR", "GIT_WORK_TREE")
    ):
        return None  # the walk to .git would find another checkout: no announcement
    from guards.state import barrier

    found = barrier.locate(cmd.cwd)
    if found is None:
        return None
    worktree, ledger_dir = found
    label = " ".join(["git", *cmd.argv])
    announced = barrier.announce_destroyer(ledger_dir, worktree, label[:100])
    if announced is not None:
        late = barrier.wait_for_writes(ledger_dir, worktree)
        if late:
            from guards import output

            output.warn(
                f"went ahead after waiting {barrier.destroy_wait():g} s for writes announced "
                f"by {', '.join(sorted(set(late)))} in this checkout"
            )
    return announced


def _guard_command(
    cmd: GitCommand, *, report: bool, via: str, line: str | None, plan: list[Decision] | None
) -> list[RescueResult]:
    from guards.errors import GuardsError
    from guards.predict import cmdline

    with cmdline.command_environment(cmd):
        seen: dict[str, object] = {}
        try:
            decision = _assess(cmd, report=report, seen=seen)
        except GuardsError as e:  # guards cannot tell what is at risk: refused
            if plan is None:
                _log_refusal(cmd.cwd, str(e), via=via, command=line or _command_text(cmd))
            raise
        if decision is None:
            return []
        if plan is not None:
            plan.append(decision)
            return []
        from guards.output import Held

        with Held():  # the notices come after the last look (see Held)
            results = act(decision, via=via, line=line)
            if results:
                results += _look_again(
                    cmd, results, seen, report=report, via=via, line=line, ws=decision.ws
                )
        return results


def _assess(cmd: GitCommand, *, report: bool, seen: dict[str, object]) -> Decision | None:
    """The decision for ``cmd`` (None: nothing at risk), in the command's environment;
    ``seen`` gets the metadata of every path judged (for :func:`_look_again`)."""
    from guards.errors import GuardsError
    from guards.predict import blast

    try:
        radius = blast.blast_radius(cmd)
    except GuardsError as e:  # a failed read-only query (git's words are in the message)
        if rejected_pathspec(str(e)):
            return None  # git rejects the same pathspec itself, before touching anything
        raise
    if radius.empty():
        return None  # the common case: the decision machinery is never even imported
    from guards.protect import decide

    return decide.decide(cmd, radius, report=report, seen=seen)


#: How many times guards looks again, after rescuing, for work written meanwhile.
REVERIFY_ROUNDS = 4


def _look_again(
    cmd: GitCommand,
    done: list[RescueResult],
    seen: dict[str, object],
    *,
    report: bool,
    via: str,
    line: str | None,
    ws: Workspace,
) -> list[RescueResult]:
    """Right before git runs, look again: a rescue takes a while, and work written
    meanwhile in the command's reach (a path changed since it was judged, a path dirty
    since the first look) is judged and rescued too.

    A look is one blast radius (a git status) and an ``lstat`` of each path in it: a
    path whose metadata (``seen``, taken before it was judged) is unchanged, and not too
    recent to prove anything, is settled; only the others are judged again. Rounds until
    one finds nothing new, so git runs right after a look that found every path as it
    was judged; bounded: a checkout that never settles is refused with the reason."""
    from guards.errors import RefusedError
    from guards.predict import blast
    from guards.predict.blast.radius import BlastRadius, Loss, LossKind
    from guards.protect import decide
    from guards.protect.receipts import unchanged
    from guards.state.workspace import Workspace

    added: list[RescueResult] = []
    for _ in range(REVERIFY_ROUNDS):
        radius = blast.blast_radius(cmd)
        if not radius.losses and not radius.everything:
            return added  # nothing in reach any more (commits were kept by the first look)
        if radius.worktree != ws.repo.toplevel_text:  # the first look's, else found again
            ws = Workspace.open(cwd=radius.worktree or cmd.cwd)
        paths = decide.radius_paths(ws, radius)
        changed = set(paths) - unchanged(ws, paths, seen)
        if not changed:
            return added
        kinds = {loss.path: loss.kinds for loss in radius.losses}
        every = frozenset(LossKind.ALL)
        again = BlastRadius(
            worktree=radius.worktree,
            losses=[Loss(p, kinds.get(p, every)) for p in paths if p in changed],
            moves=radius.moves,
        )
        decision = decide.decide(cmd, again, report=report, prior=done + added, seen=seen)
        more = act(decision, via=via, line=line)
        if not more:
            continue  # judged again (seen now holds it as judged): look once more
        added += more
    raise RefusedError(
        f"refused `git {decide.describe(cmd)}`: work in its reach kept changing while "
        f"guards rescued it ({len(done) + len(added)} rescues, the last to "
        f"{(added or done)[-1].ref}); everything seen is rescued, nothing was destroyed: "
        "run it again when the writers pause"
    )


def act(decision: Decision, *, via: str, line: str | None = None) -> list[RescueResult]:
    """Carry ``decision`` out and log it (when something was at risk)."""
    from guards.errors import GuardsError
    from guards.protect.decide import Action, carry_out
    from guards.state.decisions import Kind

    if decision.action == Action.NOTHING:
        return carry_out(decision)
    command = line or _command_text(decision.cmd)
    try:
        results = carry_out(decision)
    except GuardsError as e:  # refused by the policy, or the rescue failed
        kind = Kind.DENIED if via == VIA_HOOK else Kind.REFUSED
        _log_decision(decision, kind, via=via, command=command, why=str(e))
        raise
    kind = Kind.WARNED if decision.action == Action.WARN else Kind.RESCUED
    _log_decision(decision, kind, via=via, command=command, results=results)
    return results


def note_bypass(cmd: GitCommand) -> None:
    """``GUARDS_DISABLE=1``: log what the command puts at risk (nothing is done about
    it). Raises on any problem; the caller runs git whatever happens."""
    from guards.predict import blast, cmdline

    if not cmdline.could_destroy(cmd):
        return
    with cmdline.command_environment(cmd):
        radius = blast.blast_radius(cmd)
        if radius.empty():
            return
        from guards.protect.decide import Action, decide
        from guards.state.decisions import Kind

        decision = decide(cmd, radius, report=False)
        if decision.action != Action.NOTHING:
            command = _command_text(cmd)
            _log_decision(decision, Kind.BYPASSED, via=VIA_RUN, command=command, quiet=True)


def _command_text(cmd: GitCommand) -> str:
    import shlex

    return shlex.join(["git", *cmd.argv])


def _log_decision(
    decision: Decision,
    kind: str,
    *,
    via: str,
    command: str,
    why: str | None = None,
    results: list[RescueResult] | None = None,
    quiet: bool = False,
) -> None:
    from guards.state import decisions, identity

    ws = decision.ws
    from guards.protect.rescue.log import decision_rescues

    rescues = decision_rescues(results or [])
    entry = decisions.new_entry(
        kind,
        via=via,
        session=ws.caller,
        host=identity.hostname(),
        command=command,
        cwd=decision.cmd.origin_cwd or decision.cmd.cwd,
        worktree=ws.repo.worktree_key if ws.repo.toplevel else None,
        policy=decision.policy,
        why=why,
        paths=[(a.path, a.owner) for a in decision.at_risk],
        commits=[label for _, label in decision.commits],
        rescues=rescues,
    )
    _write(ws.repo.ledger_dir_text, entry, int(ws.config.get("log.max_bytes")), quiet=quiet)


def _log_refusal(cwd: str, why: str, *, via: str, command: str) -> None:
    """A refusal made before any decision (guards could not tell what is at risk)."""
    from guards.config import Config
    from guards.errors import GuardsError
    from guards.git.repo import discover
    from guards.state import decisions, identity
    from guards.state.decisions import Kind

    try:
        repo = discover(nearest_directory(cwd))
        max_bytes = int(Config(repo.ledger_dir_text).get("log.max_bytes"))
    except GuardsError:
        return  # not a repository (or its settings are unreadable): nowhere to log it
    entry = decisions.new_entry(
        Kind.DENIED if via == VIA_HOOK else Kind.REFUSED,
        via=via,
        session=identity.caller_id(),
        host=identity.hostname(),
        command=command,
        cwd=cwd,
        worktree=repo.worktree_key if repo.toplevel else None,
        why=why,
    )
    _write(repo.ledger_dir_text, entry, max_bytes)


def _write(
    directory: str, entry: dict[str, object], max_bytes: int, *, quiet: bool = False
) -> None:
    from guards.errors import GuardsError
    from guards.output import warn
    from guards.state import decisions

    try:
        decisions.append(directory, entry, max_bytes)
    except GuardsError as e:  # the decision stands; only its record is missing
        if not quiet:
            warn(f"decision not logged ({e})")


#: git's words for a pathspec it refuses to parse (it does so before doing anything).
_PATHSPEC_SYNTAX_ERRORS = (
    "is not a valid pathspec",
    "Unimplemented pathspec magic",
    "Invalid pathspec magic",
)


def rejected_pathspec(message: str) -> bool:
    return any(words in message for words in _PATHSPEC_SYNTAX_ERRORS)


#: Stand-in for a word whose value only bash knows; no git command is named like this.
UNKNOWN_WORD = "guards-unknown-word"


class Verdict(MutableValue):
    """What the hook answers for a shell line."""

    __slots__ = ("decisions", "deny", "dirs", "logged", "rescued", "rescues")

    def __init__(self, dirs: list[str] | None = None) -> None:
        #: Why the line must not run (None: it may run).
        self.deny: str | None = None
        #: One line per rescue (``guards: rescued ... to <ref>; restore: ...``).
        self.rescued: list[str] = []
        #: The rescues themselves, each with a directory of the repository it was made in.
        self.rescues: list[tuple[str, RescueResult]] = []
        #: The directories the line works in (its start and each ``cd``).
        self.dirs = [] if dirs is None else dirs
        #: The denial is in the decision log already.
        self.logged = False
        #: With a plan (``guards explain``): every decision, none carried out.
        self.decisions: list[Decision] = []


def _env_for(call: GitCall, base: Mapping[str, str]) -> tuple[dict[str, str], bool]:
    """The command's environment, and whether a git setting in it is unknown."""
    env = dict(base)
    unknown = False
    for key, value in call.env:
        if value is None:
            env.pop(key, None)
            unknown = unknown or key.startswith("GIT_")
        else:
            env[key] = value
    return env, unknown


def guard_line(
    line: str, cwd: str, env: Mapping[str, str] | None = None, *, plan: bool = False
) -> Verdict:
    """Apply the policy to every git invocation in ``line`` that could destroy work.

    ``env`` is the environment the line runs with (the caller's ``GUARDS_SESSION`` in it
    decides what is *mine*). Rescues happen here, before the line runs, and a denial is
    logged. With ``plan`` (``guards explain``) nothing is done and nothing logged: the
    verdict holds the decisions (and the denial) the guard would make.
    """
    from guards.predict.shell import analyze
    from guards.predict.shell_files import could_destroy_files

    env = dict(os.environ if env is None else env)
    files = could_destroy_files(line)
    found = analyze(line, cwd, env, files=files)
    verdict = Verdict(dirs=found.dirs)
    if not found.runs_git and not found.files and not found.blind:
        return verdict
    _judge_line(found, line, env, verdict, plan=plan)
    if verdict.deny and not verdict.logged and not plan:
        _log_refusal(cwd, verdict.deny, via=VIA_HOOK, command=line)
    return verdict


def _judge_line(
    found: Analysis, line: str, env: dict[str, str], verdict: Verdict, *, plan: bool
) -> None:
    from guards.errors import GuardsError

    guarded_everything: set[str] = set()
    changed = False
    try:
        for call in found.calls:
            changed = _guard_call(call, env, verdict, guarded_everything, changed, line, plan)
            if verdict.deny:
                return
        for item in found.opaque:
            if item.cwd is None:
                verdict.deny = f"refused: {item.reason}, in a directory the line does not show"
                return
            label = f"({item.reason})"
            _guard_everything(item.cwd, env, label, verdict, guarded_everything, line, plan)
        if found.files or found.blind:
            _guard_files(found, env, verdict, guarded_everything, line, plan)
    except GuardsError as e:
        verdict.deny = str(e)


#: Subcommands that change nothing a later command of the same line could meet.
READ_ONLY_SUBCOMMANDS = frozenset(
    [
        "status",
        "log",
        "diff",
        "show",
        "rev-parse",
        "ls-files",
        "ls-tree",
        "cat-file",
        "describe",
        "blame",
        "shortlog",
        "grep",
        "version",
        "help",
        "for-each-ref",
        "show-ref",
        "rev-list",
        "merge-base",
        "name-rev",
        "whatchanged",
        "var",
        "check-ignore",
        "check-attr",
        "count-objects",
        "diff-files",
        "diff-index",
        "diff-tree",
        "cherry",
    ]
)


def _guard_call(
    call: GitCall,
    env: dict[str, str],
    verdict: Verdict,
    guarded_everything: set[str],
    changed_before: bool,
    line: str,
    plan: bool,
) -> bool:
    """Guard one invocation; returns whether the state may have changed by its end.

    After an earlier git command that may change the repository (``git add -A &&
    git reset --hard``), the state a command meets is not the one visible now: every
    dirty path of its work tree counts as at risk.
    """
    from guards.errors import UsageError
    from guards.predict import cmdline

    argv = [a if a is not None else UNKNOWN_WORD for a in call.argv]
    if call.cwd is None:
        if _surely_harmless(argv):
            return changed_before
        verdict.deny = (
            f"refused `{call.text()}`: it runs after a `cd` to a directory the line "
            "does not show, so guards cannot tell whose work it would destroy"
        )
        return True
    cmd_env, env_unknown = _env_for(call, env)
    cwd = nearest_directory(call.cwd)
    try:
        cmd = cmdline.parse(argv, cmd_env, cwd)
    except UsageError:
        return changed_before  # git itself rejects this before touching anything
    changes = changed_before or cmd.subcommand not in READ_ONLY_SUBCOMMANDS
    unknown_where = env_unknown or UNKNOWN_WORD in cmd.global_options
    unknown_what = not call.known or cmd.subcommand == UNKNOWN_WORD or UNKNOWN_WORD in cmd.aliases
    if cmd.subcommand is not None and cmd.subcommand in cmdline.KNOWN_COMMANDS:
        maybe = cmd.subcommand in cmdline.DESTRUCTIVE_SUBCOMMANDS and (
            unknown_what or cmdline.could_destroy(cmd)
        )
    else:
        maybe = cmd.shell_alias is not None or unknown_what or cmdline.could_destroy(cmd)
    if not maybe:
        return changes
    if unknown_where:
        verdict.deny = (
            f"refused `{call.text()}`: the repository it works on is only known when it runs"
        )
        return True
    if unknown_what or changed_before or cmd.shell_alias is not None:
        # Its arguments, or the state it will meet, cannot be read now: every dirty path
        # of that work tree is at risk.
        _guard_everything(
            cmd.cwd, cmd_env, call.text(), verdict, guarded_everything, line, plan, cmd=cmd
        )
        return True
    from guards.errors import GuardsError

    decisions = verdict.decisions if plan else None
    before = len(verdict.decisions)
    try:
        results = guard_command(cmd, report=False, via=VIA_HOOK, line=line, plan=decisions)
    except GuardsError as e:  # guard_command logged it
        verdict.deny, verdict.logged = str(e), not plan
        return True
    if plan and len(verdict.decisions) > before:
        _planned_refusal(verdict.decisions[-1], verdict)
    _report(results, verdict, cmd.cwd)
    return True


def _planned_refusal(decision: Decision, verdict: Verdict) -> None:
    """In a plan, a decision to refuse denies the line, as carrying it out would."""
    from guards.protect.decide import Action

    if decision.action == Action.REFUSE:
        verdict.deny = decision.message


def _surely_harmless(argv: list[str]) -> bool:
    from guards.predict import cmdline

    for a in argv:
        if a.startswith("-"):
            continue
        return a in cmdline.KNOWN_COMMANDS and a not in cmdline.DESTRUCTIVE_SUBCOMMANDS
    return True


def _guard_everything(
    cwd: str,
    env: Mapping[str, str],
    label: str,
    verdict: Verdict,
    guarded: set[str],
    line: str,
    plan: bool,
    *,
    cmd: GitCommand | None = None,
) -> None:
    """Rescue all dirty work of the repository at ``cwd`` not provably the caller's."""
    from guards.git.repo import NotARepositoryError, discover
    from guards.predict import cmdline
    from guards.predict.blast import all_dirty_work
    from guards.predict.cmdline import GitCommand
    from guards.protect import decide

    where = nearest_directory(cwd)
    if cmd is not None:
        from guards.predict.blast import GitRefuses, context

        try:
            ctx = context(cmd)  # honours --git-dir, --work-tree and -C
        except GitRefuses:
            return  # git refuses this command line itself
        if ctx is None or ctx.toplevel is None:
            return  # no work tree: no uncommitted work to lose
        toplevel = ctx.toplevel
    else:
        try:
            repo = discover(where)
        except NotARepositoryError:
            return  # nothing of git's here to lose
        if repo.toplevel is None:
            return
        toplevel = str(repo.toplevel)
    key = os.path.realpath(toplevel)
    if key in guarded:
        return
    guarded.add(key)
    if cmd is None:
        cmd = GitCommand(
            argv=[],
            global_options=[],
            cwd=toplevel,
            subcommand=None,
            args=[label],
            origin_cwd=where,
            env=dict(env),
        )
    with cmdline.command_environment(cmd):
        radius = all_dirty_work(cmd, toplevel)
        _settle(decide.decide(cmd, radius, report=False), verdict, toplevel, line, plan)


def _guard_files(
    found: Analysis,
    env: dict[str, str],
    verdict: Verdict,
    guarded: set[str],
    line: str,
    plan: bool,
) -> None:
    """The line's commands that destroy files without git (``rm``, ``> file``, ...)."""
    from guards.protect.file_guard import Refused, plan_files

    try:
        decisions = plan_files(found, env, guarded)
    except Refused as e:
        verdict.deny = str(e)
        return
    for where, decision in decisions:
        if not _settle(decision, verdict, where, line, plan):
            return


def _settle(decision: Decision, verdict: Verdict, where: str, line: str, plan: bool) -> bool:
    """A decision about a shell line's command: planned (``guards explain``) or carried
    out and logged. False when the line must not run (``verdict.deny`` says why)."""
    from guards.errors import GuardsError

    if plan:
        verdict.decisions.append(decision)
        _planned_refusal(decision, verdict)
        return verdict.deny is None
    try:
        results = act(decision, via=VIA_HOOK, line=line)
    except GuardsError as e:  # act logged it
        verdict.deny, verdict.logged = str(e), True
        return False
    _report(results, verdict, where)
    return True


def _report(results: list[RescueResult], verdict: Verdict, where: str) -> None:
    if not results:
        return  # nothing rescued: the rescue package (its builder) stays unloaded
    from guards.protect.rescue import report_line

    verdict.rescued += [report_line(result) for result in results]
    verdict.rescues += [(where, result) for result in results]


def guard_write(files: list[str], tool: str) -> Verdict:
    """Before a write tool (Write, Edit, ``apply_patch``, ``write_file`` ...) changes
    ``files`` (absolute paths): uncommitted content of them that is not provably the
    caller's is rescued first (policy block: the write is refused). A write is
    destruction like any other; the index is not touched by it, so only the files'
    content (dirty, untracked or ignored) is at risk.

    Cheap when nothing is at risk: a new file costs one ``lstat``; a file the caller
    recorded and that still matches costs a lock-free ledger read, and no git status.
    """
    verdict = Verdict()
    # A new file: nobody's content to lose. The caller's own: no git at all.
    existing = [p for p in files if os.path.lexists(p)]
    existing = [p for p in existing if not _surely_mine(p)]
    if not existing:
        return verdict
    from guards.errors import GuardsError, RefusedError, UsageError
    from guards.git.repo import NotARepositoryError, discover
    from guards.state.workspace import repo_relative

    by_top: dict[str, tuple[str, list[str]]] = {}
    for path in existing:
        try:
            repo = discover(nearest_directory(os.path.dirname(path)))
            if repo.toplevel_text is None:
                continue
            rel = repo_relative(repo, path)
        except (NotARepositoryError, UsageError):
            continue  # outside any work tree, or inside .git: not work guards keeps
        if rel:
            by_top.setdefault(repo.worktree_key, (repo.toplevel_text, []))[1].append(rel)
    try:
        for top, rels in by_top.values():
            _guard_write_in(top, rels, tool, verdict)
    except RefusedError as e:
        verdict.deny = str(e).replace("`git ", "`", 1)
    except GuardsError as e:
        verdict.deny = f"guards could not check this write ({e})"
    return verdict


def _surely_mine(path: str) -> bool:
    """Is ``path`` the caller's recorded content, as far as a look without git can tell
    (the checkout found by walking up to ``.git``, its ledger read without a lock)?
    False whenever anything is unsure: the full check (with git) then decides."""
    from guards.state import identity
    from guards.state.barrier import locate

    try:
        caller = identity.caller_id()
    except Exception:  # an invalid id: the full check says so
        return False
    head, name = os.path.split(os.path.abspath(path))
    found = locate(head) if caller else None
    if found is None or not name:
        return False
    worktree, ledger_dir = found
    rel = os.path.relpath(os.path.join(os.path.realpath(head), name), worktree)
    if rel == os.pardir or rel.startswith(os.pardir + os.sep) or rel.split(os.sep)[0] == ".git":
        return False
    from guards.state.attribution import Ownership, classify
    from guards.state.ledger import Ledger, LedgerUnreadableError

    try:
        data = Ledger(ledger_dir).peek(worktree, rescues=False)[0]
    except (LedgerUnreadableError, OSError):
        return False
    if data is None:
        return False
    records = data.paths.get(worktree)
    if records is None:
        return False
    return classify(records.get(rel), path, caller).ownership == Ownership.MINE


def _guard_write_in(top: str, rels: list[str], tool: str, verdict: Verdict) -> None:
    from guards.git.dirty import read_dirty
    from guards.predict.blast.radius import BlastRadius, Loss, LossKind
    from guards.predict.cmdline import GitCommand
    from guards.state.attribution import Ownership
    from guards.state.workspace import Workspace

    ws = Workspace.open(cwd=top)
    data, problem = ws.read_ledger()
    if problem is None and data is not None:
        from guards.state.attribution import classify

        records: Mapping[str, Any] = data.paths.get(ws.repo.worktree_key, {})
        join = os.path.join
        rels = [
            r
            for r in rels
            if classify(records.get(r), join(top, r), ws.caller, ws.repo.object_format).ownership
            != Ownership.MINE
        ]
        if not rels:
            return  # the caller's own recorded content: the common case
    wanted = set(rels)
    dirty = [d.path for d in read_dirty(ws.repo, ignored=True, pathspecs=rels)]
    losses = [Loss(p, frozenset({LossKind.WORKTREE})) for p in dirty if p in wanted]
    if not losses:
        return
    from guards.protect import decide

    cmd = GitCommand(
        argv=[], global_options=[], cwd=top, subcommand=tool, args=rels[:3], origin_cwd=top
    )
    radius = BlastRadius(worktree=top, losses=losses)
    decision = decide.decide(cmd, radius, report=False)
    line = f"({tool}) {' '.join(rels[:3])}{' ...' if len(rels) > 3 else ''}"
    _report(act(decision, via=VIA_HOOK, line=line), verdict, top)
