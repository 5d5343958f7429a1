"""guards explain: what a command would destroy, whose it is, and what guards would do.

Nothing is changed: the guard pipeline itself (:func:`guards.protect.guard.guard_command`
and :func:`~guards.protect.guard.guard_line`) runs with a *plan*, so every decision is
made exactly as a real run would make it and none is carried out. Explain therefore
cannot disagree with the guard (tests/test_explain.py checks it over the blast-radius
test matrix).

Exit status (for scripts): 0 guards would do nothing (nothing of anyone else's at
risk; the caller's own work may still be destroyed, as asked); 1 guards would step in
and git would then run (rescue first, or with policy warn say what is lost); 20 guards
would refuse; 4 guards cannot tell what is at risk (a real run refuses too); 2 bad usage.
"""

from __future__ import annotations

import argparse
import os

from guards import output
from guards.errors import DISABLE_ENV, ExitCode, GuardsError, UsageError

TYPE_CHECKING = False  # see guards.values: these imports cost start-up time
if TYPE_CHECKING:
    from typing import Any

    from guards.protect.decide import Decision

HELP = "what a git command or a shell line would destroy, and what guards would do (no changes)"

#: Exit status when guards would rescue (or, with policy warn, warn) and then run git.
STEPS_IN = ExitCode.FINDINGS


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="machine-readable (see README)")
    parser.add_argument("--line", metavar="LINE", help="a shell line, as an agent would run it")
    parser.add_argument(
        "git_args",
        nargs=argparse.REMAINDER,
        metavar="-- GIT_ARGS",
        help="a git command line, after --, as it would be given to git",
    )
    parser.epilog = (
        "exit status: 0 guards would do nothing, 1 it would rescue (or warn) then run, "
        "20 it would refuse, 4 it cannot tell (a real run refuses too), 2 bad usage"
    )


def run(args: argparse.Namespace) -> int:
    git_args = list(args.git_args)
    if git_args[:1] == ["--"]:
        git_args = git_args[1:]
    if args.line is not None and git_args:
        raise UsageError("give either --line '<shell line>' or -- <git arguments>, not both")
    if args.line is None and not git_args:
        raise UsageError("explain what? guards explain -- <git arguments> | --line '<line>'")
    report = _line(args.line) if args.line is not None else _git(git_args)
    if os.environ.get(DISABLE_ENV) == "1":
        from guards.protect.decide import Action

        report["disabled"] = True
        report["action"] = Action.NOTHING
        report["why"] = f"{DISABLE_ENV}=1: git would run untouched (the risk is logged)"
    if args.json:
        output.dump_json(report)
    else:
        _print(report)
    return _status(report)


def _git(git_args: list[str]) -> dict[str, Any]:
    from guards.predict import cmdline
    from guards.protect.decide import Action
    from guards.protect.guard import guard_command

    words = "git " + " ".join(git_args)
    try:
        cmd = cmdline.parse(git_args, os.environ, os.getcwd())
    except UsageError as e:
        return _report(words, [], None, note=f"git rejects this command line itself ({e})")
    plan: list[Decision] = []
    try:
        guard_command(cmd, report=False, plan=plan)
    except GuardsError as e:
        return _report(words, plan, str(e), code=int(e.exit_code))
    refusal = next((d.message for d in plan if d.action == Action.REFUSE), None)
    return _report(words, plan, refusal)


def _line(line: str) -> dict[str, Any]:
    from guards.protect.guard import guard_line

    verdict = guard_line(line, os.getcwd(), plan=True)
    return _report(line, verdict.decisions, verdict.deny)


def _report(
    command: str,
    plan: list[Decision],
    refusal: str | None,
    *,
    code: int | None = None,
    note: str | None = None,
) -> dict[str, Any]:
    from guards.protect.decide import Action

    commands = [_decision_json(d) for d in plan]
    if refusal is not None:
        action = Action.REFUSE
    elif any(c["action"] == Action.RESCUE for c in commands):
        action = Action.RESCUE
    elif any(c["action"] == Action.WARN for c in commands):
        action = Action.WARN
    else:
        action = Action.NOTHING
    if code is None or code == ExitCode.USAGE:
        code = ExitCode.REFUSED  # a guarded command that cannot be judged is refused
    return {
        "command": command,
        "action": action,
        "why": refusal if refusal is not None else note,
        "exit_code": code if refusal is not None else None,
        "commands": commands,
    }


def _decision_json(d: Decision) -> dict[str, Any]:
    kinds: dict[str, list[str]] = {loss.path: sorted(loss.kinds) for loss in d.radius.losses}
    rows = [*d.at_risk, *d.mine]
    at_risk = {a.path for a in d.at_risk}
    return {
        "command": "git " + " ".join(d.cmd.argv) if d.cmd.argv else " ".join(d.cmd.args),
        "worktree": d.ws.repo.worktree_key if d.ws.repo.toplevel else None,
        "policy": d.policy,
        "action": d.action,
        "caller": d.ws.caller,
        "everything": d.radius.everything,
        "moves": d.radius.moves,
        "paths": [
            {
                "path": a.path,
                "owner": a.owner,
                "ownership": a.ownership,
                "losses": kinds.get(a.path, ["everything"] if d.radius.everything else []),
                "guarded": a.path in at_risk,
            }
            for a in sorted(rows, key=lambda a: a.path)
        ],
        "commits": [{"commit": oid, "label": label} for oid, label in d.commits],
        "already_rescued": d.held,
        "left_out": [{"path": p, "kind": k} for p, k in d.hollow],
    }


def _status(report: dict[str, Any]) -> int:
    from guards.protect.decide import Action

    if report["action"] == Action.REFUSE:
        return int(report["exit_code"] or ExitCode.REFUSED)
    if report["action"] in (Action.RESCUE, Action.WARN):
        return STEPS_IN
    return ExitCode.OK


def _says(action: str) -> str:
    from guards.protect.decide import Action

    return {
        Action.NOTHING: "guards would do nothing; git runs as is",
        Action.RESCUE: "guards would rescue the work not provably yours, then run git",
        Action.WARN: "guards would run git and say what is lost (policy warn: no rescue)",
        Action.REFUSE: "guards would refuse: git would not run",
    }[action]


def _print(report: dict[str, Any]) -> None:
    from guards.protect.decide import Action

    print(f"{report['command']}:")
    any_path = False
    for c in report["commands"]:
        if len(report["commands"]) > 1 or c["command"] != report["command"]:
            print(f"  {c['command']} (in {output.show_path(c['worktree'] or '-')}):")
        rows = []
        for p in c["paths"]:
            owner = "you" if p["ownership"] == "mine" else p["owner"] or "owner unknown"
            if p["ownership"] == "foreign" and p["owner"]:
                owner = f"{p['owner']} (another session)"
            rows.append(
                (
                    f"    {output.show_path(p['path'])}",
                    owner,
                    ", ".join(p["losses"]) or "-",
                    "rescue" if p["guarded"] and c["action"] == Action.RESCUE else "",
                )
            )
        if rows:
            any_path = True
            print(output.table(rows, ("    PATH", "OWNER", "LOST", "")))
        for commit in c["commits"]:
            any_path = True
            print(
                f"    commit {commit['commit'][:12]} ({commit['label']}) would become unreachable"
            )
        for p in c["already_rescued"]:
            print(f"    {output.show_path(p)}: already rescued for this command")
        for p in c["left_out"]:
            print(f"    {output.show_path(p['path'])}: a {p['kind']}, no content to keep")
    if not any_path and report["action"] != Action.REFUSE:
        print("  nothing uncommitted would be destroyed")
    print(_says(report["action"]) + (f": {report['why']}" if report["why"] else ""))
