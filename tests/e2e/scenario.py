"""Throw-away projects for the end-to-end scenarios: a repository with guards' hooks for
one harness installed (and committed, so that they are nobody's dirty work), another
writer's uncommitted work, and readers for what guards left behind."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.helpers import git, make_repo, run_guards

#: The other writer whose uncommitted work the agent's commands meet.
ALICE = "alice"
FILES = {
    "README": "hello\n",
    "src/app.py": "print('hi')\n",
    "sub/notes.txt": "notes\n",
}
#: alice's work: a tracked file changed, an untracked file new.
ALICE_WORK = {
    "src/app.py": "print('alice was here')\n",
    "src/alice_new.py": "ALICE = 1\n",
}


def project(path: Path, *install: str) -> Path:
    """A repository with ``guards install <install...>`` done and committed."""
    repo = make_repo(path, FILES)
    res = run_guards("install", *install, cwd=repo)
    assert res.returncode == 0, res.stderr
    if git(repo, "status", "--porcelain"):  # the harness's settings
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "-m", "guards hooks")
    assert git(repo, "status", "--porcelain") == ""
    return repo


def write_work(repo: Path, files: dict[str, str], session: str | None = ALICE) -> None:
    """Another writer's uncommitted work (``session`` None: nobody recorded it)."""
    for name, content in files.items():
        target = repo / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content)
    if session is not None:
        res = run_guards("record", "--session", session, *files, cwd=repo)
        assert res.returncode == 0, res.stderr


def rescue_refs(repo: Path) -> list[str]:
    return git(repo, "for-each-ref", "--format=%(refname)", "refs/rescue").split()


def show(repo: Path, ref: str, path: str) -> str:
    return git(repo, "show", f"{ref}:{path}")


def status(repo: Path) -> dict[str, dict[str, Any]]:
    """``guards status --json``: dirty path -> its row (owner, class...)."""
    res = run_guards("status", "--json", cwd=repo)
    assert res.returncode in (0, 1), res.stderr
    return {row["path"]: row for row in json.loads(res.stdout)["paths"]}


def owners(repo: Path) -> dict[str, str | None]:
    return {path: row.get("owner") for path, row in status(repo).items()}


def sessions(repo: Path) -> dict[str, dict[str, Any]]:
    res = run_guards("session", "list", "--json", cwd=repo)
    assert res.returncode == 0, res.stderr
    return {s["id"]: s for s in json.loads(res.stdout)["sessions"]}


def observe_markers(repo: Path) -> list[str]:
    """Start markers of shell commands whose end the hook never saw."""
    folder = repo / ".git/guards/observe"
    return sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []
