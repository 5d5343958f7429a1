"""guards demo: the whole story on a scratch repository, as a transcript.

Two sessions share one checkout; one has uncommitted work, the other runs
`git safe-reset --hard`; guards rescues the work first, and the owner restores it.
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from guards import output
from guards.errors import ExitCode, GuardsError
from guards.git import process as git

HELP = "a self-contained tour on a scratch repository: two sessions, a reset, the rescue"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--keep", action="store_true", help="keep the scratch repository")
    parser.add_argument("--dir", type=Path, help="where to create it (default: a temp dir)")


class Transcript:
    def __init__(self, repo: Path, env: dict[str, str]) -> None:
        self.repo = repo
        self.env = env

    def say(self, text: str) -> None:
        print(f"\n{output.paint(text, '1')}")

    def run(self, shown: str, argv: list[str], session: str | None = None) -> str:
        who = f"[{session}] " if session else ""
        print(output.paint(f"{who}$ {shown}", "36"))
        env = dict(self.env)
        if session:
            env["GUARDS_SESSION"] = session
        proc = subprocess.run(
            argv, cwd=self.repo, env=env, capture_output=True, text=True, check=False
        )
        for line in (proc.stderr + proc.stdout).splitlines():
            print(f"  {line}")
        if proc.returncode != 0:
            raise GuardsError(
                f"demo step `{shown}` failed (exit {proc.returncode})", exit_code=ExitCode.FINDINGS
            )
        return proc.stdout

    def quiet(self, argv: list[str]) -> str:
        """A step the reader need not see (machine-readable look-ups)."""
        proc = subprocess.run(
            argv, cwd=self.repo, env=self.env, capture_output=True, text=True, check=False
        )
        if proc.returncode != 0:
            raise GuardsError(
                f"demo look-up failed: {proc.stderr.strip()}", exit_code=ExitCode.FINDINGS
            )
        return proc.stdout

    def guards(self, args: str, session: str | None = None) -> str:
        argv = [sys.executable, "-m", "guards", *shlex.split(args)]
        return self.run(f"guards {args}", argv, session)

    def git(self, args: str, session: str | None = None) -> str:
        return self.run(f"git {args}", [git.real_git(), *shlex.split(args)], session)


def _environment() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "GUARDS_"))}
    env.update(
        GIT_AUTHOR_NAME="guards demo",
        GIT_AUTHOR_EMAIL="demo@example.invalid",
        GIT_COMMITTER_NAME="guards demo",
        GIT_COMMITTER_EMAIL="demo@example.invalid",
        GIT_CONFIG_NOSYSTEM="1",
        GIT_CONFIG_GLOBAL=os.devnull,
        GUARDS_POLICY="rescue",
        GUARDS_QUIET="0",
    )
    return env


def run(args: argparse.Namespace) -> int:
    scratch = Path(tempfile.mkdtemp(prefix="guards-demo-", dir=args.dir))
    repo = scratch / "shop"
    try:
        tour(Transcript(repo, _environment()), repo)
    finally:
        if args.keep:
            print(f"\nThe scratch repository stays at {repo}")
        else:
            shutil.rmtree(scratch, ignore_errors=True)
    return ExitCode.OK


def tour(t: Transcript, repo: Path) -> None:
    print(output.paint("guards demo: two writers, one checkout, one tidy reset", "1"))
    repo.mkdir(parents=True)
    t.say("A project with one commit; guards' safe-* aliases installed.")
    t.git("init -q -b main")
    (repo / "app.py").write_text("def price(total):\n    return total\n")
    t.git("add app.py")
    t.git("commit -q -m 'first version'")
    t.guards("install")

    t.say("Two sessions share the checkout: alice (an agent) and bob (another agent).")
    t.guards("session start --id alice --label 'agent A'")
    t.guards("session start --id bob --label 'agent B'")

    t.say("alice works for an afternoon and records what she wrote (harness hooks do this).")
    (repo / "app.py").write_text(
        "def price(total, discount=0):\n    return round(total * (1 - discount), 2)\n"
    )
    (repo / "NOTES.md").write_text("Discounts: agreed with finance, max 30%.\n")
    t.git("add NOTES.md", session="alice")
    t.guards("record app.py NOTES.md", session="alice")
    t.guards("status", session="bob")

    t.say("bob wants a clean tree and resets. Plain git would delete alice's work silently.")
    t.git("safe-reset --hard", session="bob")
    t.git("status --short", session="bob")
    print("  (clean: alice's edit and her new file are gone from the checkout)")

    t.say("Nothing was lost: the rescue ref holds alice's work.")
    t.guards("rescue list", session="alice")
    ref = _first_ref(t.quiet([sys.executable, "-m", "guards", "rescue", "list", "--json"]))
    t.guards(f"rescue show {ref}", session="alice")

    t.say("alice gets her work back.")
    t.guards(f"rescue restore --index {ref}", session="alice")
    t.git("status --short", session="alice")
    t.run("cat NOTES.md", ["cat", "NOTES.md"], session="alice")
    print(
        "\nThat is guards: bob's command ran as asked, and alice's afternoon survived it.\n"
        "Next: `guards install --shim ~/.local/guards-bin` guards plain `git` too; "
        "`guards doctor` audits a checkout."
    )


def _first_ref(listing: str) -> str:
    import json

    rescues = json.loads(listing).get("rescues", [])
    if not rescues:
        raise GuardsError("demo: no rescue was listed", exit_code=ExitCode.FINDINGS)
    return str(rescues[0]["ref"])
