"""guards doctor: audit a checkout; exit 0 when nothing is a problem, 1 otherwise."""

from __future__ import annotations

TYPE_CHECKING = False  # see guards.values: these imports cost start-up time
if TYPE_CHECKING:
    import argparse

    from guards.doctor import Finding

HELP = "audit hooks, ledger, sessions, dirty paths, stashes, rescues, worktrees and branches"


#: Every option is an on/off flag: guards.main runs the command without argparse.
FLAGS = {"--json": "machine-readable (see README)"}


def configure(parser: argparse.ArgumentParser) -> None:
    for flag, text in FLAGS.items():
        parser.add_argument(flag, action="store_true", help=text)


def run(args: argparse.Namespace) -> int:
    import os

    from guards import doctor, output
    from guards.errors import ExitCode

    ctx, findings = doctor.diagnose()
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
