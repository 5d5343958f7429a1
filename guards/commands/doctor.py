"""guards doctor: audit a checkout; exit 0 when nothing is a problem, 1 otherwise."""

from __future__ import annotations

TYPE_CHECKING = False  # see guards.values: these imports cost start-up time
if TYPE_CHECKING:
    import argparse

    from guards.doctor import Finding

HELP = "audit hooks, ledger, sessions, dirty paths, stashes, rescues, worktrees and branches"


#: Every option is an on/off flag: guards.main runs the command without argparse.
FLAGS = {
    "--json": "machine-readable (see README)",
    "--all": "every repository guards has been used in on this machine (one line each)",
}


def configure(parser: argparse.ArgumentParser) -> None:
    for flag, text in FLAGS.items():
        parser.add_argument(flag, action="store_true", help=text)


def run(args: argparse.Namespace) -> int:
    import os

    from guards.git.dirty import start_reading

    # git status (most of the cost in a big work tree) scans while the checks' modules
    # load and their other git calls run.
    started = None if args.all else start_reading()
    from guards import doctor, output
    from guards.errors import ExitCode

    if args.all:
        return _all(args.json)
    ctx, findings = doctor.diagnose(started_status=started)
    problems = sum(f.level == doctor.Level.PROBLEM for f in findings)
    warnings = sum(f.level == doctor.Level.WARN for f in findings)
    if args.json:
        repo = ctx.repo
        output.dump_json(
            {
                "repository": os.fsdecode(repo.common_dir) if repo else None,
                "worktree": repo.worktree_key if repo and repo.toplevel else None,
                "bare": repo.is_bare if repo else None,
                "healthy": problems == 0,
                "counts": {
                    level: sum(f.level == level for f in findings) for level in doctor.Level.ALL
                },
                "findings": [f.to_json() for f in findings],
            }
        )
    else:
        print(_render(findings, problems, warnings))
    return ExitCode.FINDINGS if problems else ExitCode.OK


def _render(findings: list[Finding], problems: int, warnings: int) -> str:
    from guards import output
    from guards.doctor import Level

    colors = {Level.OK: "32", Level.WARN: "33", Level.PROBLEM: "31"}
    lines = []
    area = None
    for f in findings:
        if f.area != area:
            area = f.area
            lines.append(area)
        lines.append(f"  {output.paint(f.level.ljust(7), colors[f.level])}  {f.message}")
        if f.fix and f.level != Level.OK:
            lines.append(f"  {'':7}  fix: {f.fix}")
    lines.append(
        f"{problems} problem{'s' if problems != 1 else ''}, "
        f"{warnings} warning{'s' if warnings != 1 else ''}"
    )
    return "\n".join(lines)


def _all(as_json: bool) -> int:
    """``guards doctor --all``: one line per repository; the worst exit status."""
    from guards import output
    from guards.config import Config
    from guards.doctor.sweep import SweepStatus, Swept, sweep, worst_exit

    def line(s: Swept) -> None:
        if as_json:
            return
        where = output.show_path(s.path or s.git_dir)
        if s.status == SweepStatus.GONE:
            print(f"{'gone':8} {where}: dropped from the registry ({s.detail})")
        elif s.status != SweepStatus.RAN or s.report is None:
            print(f"{s.status:8} {where}: {s.detail}")
        else:
            print(f"{_level(s.report):8} {where}: {_counts(s.report)}")

    timeout = float(Config(None).get("sweep.timeout"))
    results = sweep(["doctor"], timeout, line)
    status = worst_exit(results)
    if as_json:
        output.dump_json({"exit": status, "repositories": [r.to_json() for r in results]})
    elif not results:
        print("no repositories registered yet (guards registers one when a session starts")
        print("or a path is recorded or rescued there)")
    return status


def _level(report: dict[str, object]) -> str:
    counts = report.get("counts")
    if isinstance(counts, dict) and counts.get("problem"):
        return "problem"
    if isinstance(counts, dict) and counts.get("warn"):
        return "warn"
    return "ok"


def _counts(report: dict[str, object]) -> str:
    counts = report.get("counts")
    if not isinstance(counts, dict):
        counts = {}
    problems, warnings = int(counts.get("problem") or 0), int(counts.get("warn") or 0)
    text = (
        f"{problems} problem{'s' if problems != 1 else ''}, "
        f"{warnings} warning{'s' if warnings != 1 else ''}"
    )
    findings = report.get("findings")
    worst = "problem" if problems else ("warn" if warnings else None)
    if worst and isinstance(findings, list):
        first = next((f for f in findings if isinstance(f, dict) and f.get("level") == worst), None)
        if first is not None:
            text += f" (first: {first.get('message')})"
    return text
