"""Throw-away projects for the end-to-end scenarios: a repository with guards' hooks for
one harness installed (and committed, so that they are nobody's dirty work), another
writer's uncommitted work, and readers for what guards left behind."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from guards.git.process import find_real_git, status_args
from tests.e2e.model_server import ModelServer, Step, edit, read, say, shell, write
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


def project(path: Path, *install: str, env: dict[str, str] | None = None) -> Path:
    """A repository with ``guards install <install...>`` done (in ``env``) and committed."""
    repo = make_repo(path, FILES)
    res = run_guards("install", *install, cwd=repo, env=env)
    assert res.returncode == 0, res.stderr
    if git(repo, "status", "--porcelain"):  # the harness's settings
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "-m", "guards hooks")
    assert git(repo, "status", "--porcelain") == ""
    return repo


def counted_project(path: Path, *install: str) -> tuple[Path, Path, dict[str, str]]:
    """:func:`project` installed where the real git logs each call a prompt's hook
    makes (its arguments, a line each, in the returned log; Linux: the caller is read
    in /proc): the prompt's installed command names that git. The environment the
    harness must run with to use it comes third."""
    if not Path("/proc/self/cmdline").exists():
        pytest.skip("the caller of git is read in /proc (Linux)")
    real = find_real_git()
    assert real is not None
    log = path.parent / "prompt-git.log"
    wrapper = path.parent / "prompt-git"
    # A prompt's hook: its shell and its Python both carry --handed-status in argv.
    wrapper.write_text(
        "#!/bin/sh\n"
        "case \"$(tr '\\000' ' ' < /proc/$PPID/cmdline)\" in *--handed-status*) "
        f"printf '%s\\n' \"$*\" >> '{log}' ;; esac\n"
        f"exec '{real}' \"$@\"\n"
    )
    wrapper.chmod(0o755)
    env = {"GUARDS_REAL_GIT": str(wrapper)}
    return project(path, *install, env=env), log, env


def check_prompt_status_from_the_shell(log: Path, prompts: int) -> None:
    """Each prompt's frame took the ``git status`` its hook's shell started (run in the
    hook's directory: no ``-C``), and the hook's Python asked git for none of its own."""
    calls = log.read_text().splitlines()
    status = " ".join(["--no-optional-locks", *status_args()])
    assert sum(c == status for c in calls) == prompts, calls
    assert not [c for c in calls if c.endswith(status) and c != status], calls


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


#: What the attribution tour's script writes: a Write, an Edit, a shell line, a failing one.
TOUR_PATHS = ("new.txt", "src/app.py", "made.txt", "failed.txt")


def attributed_after_the_tour(repo: Path) -> dict[str, str | None]:
    """Owners after the tour (alice's README beside it), with every shell line's start
    marker consumed by its end: what each CLI's attribution test expects of its session."""
    assert observe_markers(repo) == []
    return owners(repo)


def observe_markers(repo: Path) -> list[str]:
    """Start markers of shell commands whose end the hook never saw."""
    folder = repo / ".git/guards/observe"
    return sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []


# -- each destructive form in turn, in one session -----------------------------------------

#: command -> (alice's paths it destroys, the work tree it leaves: path -> content or None)
DESTRUCTIVE: dict[str, tuple[list[str], dict[str, str | None]]] = {
    "git reset --hard": (["src/app.py"], {"src/app.py": FILES["src/app.py"]}),
    "git checkout -- .": (["src/app.py"], {"src/app.py": FILES["src/app.py"]}),
    "git clean -fd": (["src/alice_new.py"], {"src/alice_new.py": None}),
    "git stash -u": (
        ["src/alice_new.py", "src/app.py"],
        {"src/app.py": FILES["src/app.py"], "src/alice_new.py": None},
    ),
}
RESCUED = "guards: rescued"


class Tour:
    """The agent runs each destructive form in turn, in one session (one CLI start).

    Before each command alice's work is written (again); once the command ran, what it
    left is checked and the rescue ref it made is noted: all while the CLI waits for the
    model's next answer.
    """

    def __init__(self, repo: Path) -> None:
        self.repo = repo
        self.commands = list(DESTRUCTIVE)
        #: command -> the rescue refs that appeared while it ran
        self.refs: dict[str, list[str]] = {}
        self._known: set[str] = set()

    def script(self) -> list[Step]:
        return [*([shell(c)] for c in self.commands), say("done")]

    def before_step(self) -> dict[int, Callable[[], object]]:
        return {i: (lambda i=i: self._between(i)) for i in range(len(self.commands) + 1)}

    def _between(self, step: int) -> None:
        if step > 0:
            self._ran(self.commands[step - 1])
        if step < len(self.commands):
            write_work(self.repo, ALICE_WORK)

    def _ran(self, command: str) -> None:
        refs = set(rescue_refs(self.repo))
        self.refs[command] = sorted(refs - self._known)
        self._known = refs
        for path, content in DESTRUCTIVE[command][1].items():
            now = (self.repo / path).read_text() if (self.repo / path).exists() else None
            assert now == content, f"after `{command}`, {path} holds {now!r}"

    def check(self, server: ModelServer) -> None:
        """Every command ran after its own rescue, and the model heard of each once."""
        assert server.errors == [], server.errors
        assert list(self.refs) == self.commands, f"the agent stopped early: {self.refs}"
        for step, command in enumerate(self.commands):
            [ref] = self.refs[command]
            assert ref.startswith(f"refs/rescue/{ALICE}/"), ref
            for path in DESTRUCTIVE[command][0]:
                assert show(self.repo, ref, path) == ALICE_WORK[path], (command, path)
            news = server.at_step(step + 1).news()
            assert news.count(RESCUED) == 1 and ref in news, (command, news[-2000:])
        assert git(self.repo, "stash", "list") != ""


# -- hooks and the shim together ----------------------------------------------------------

#: A line whose git is the shim first on PATH (``command -v`` shows it met the shim).
THROUGH_THE_SHIM: list[Step] = [[shell("command -v git; git reset --hard")], say("done")]


def check_hook_and_shim(repo: Path, server: ModelServer, shim: Path) -> None:
    """After :data:`THROUGH_THE_SHIM` over :data:`ALICE_WORK`: the hook and the shim in
    the line rescued alice's work once (one ref, one notice), and the hook took its
    receipt back when the line ended."""
    news = server.at_step(1).news()
    assert str(shim / "git") in news  # the harness's shell kept PATH: the line met the shim
    assert (repo / "src/app.py").read_text() == FILES["src/app.py"]
    [ref] = rescue_refs(repo)
    assert show(repo, ref, "src/app.py") == ALICE_WORK["src/app.py"]
    assert news.count(RESCUED) == 1
    receipts = repo / ".git/guards/receipts"
    assert not receipts.exists() or not any(receipts.iterdir())


# -- a command run in another directory ---------------------------------------------------

#: Alice's work at the top and in sub/: a line told to run in sub/ reaches sub/ only.
IN_SUB_WORK = {**ALICE_WORK, "sub/notes.txt": "alice's notes\n"}


def in_sub(repo: Path) -> list[Step]:
    """`git checkout -- .` given sub/ as the directory it runs in (the tool's own
    argument: Codex's workdir, Gemini's dir_path, Qwen's directory, opencode's workdir)."""
    return [[shell("git checkout -- .", directory=str(repo / "sub"))], say("done")]


def check_in_sub(repo: Path, server: ModelServer) -> None:
    """After :func:`in_sub` over :data:`IN_SUB_WORK`: judged where it ran, it destroyed
    (and so rescued) alice's work in sub/ only, and the model heard of it."""
    assert (repo / "sub/notes.txt").read_text() == FILES["sub/notes.txt"]
    assert (repo / "src/app.py").read_text() == ALICE_WORK["src/app.py"]
    [ref] = rescue_refs(repo)
    assert show(repo, ref, "sub/notes.txt") == "alice's notes\n"
    assert "src/app.py" not in git(repo, "show", "--format=%B", "-s", ref)
    assert RESCUED in server.at_step(1).news()


def check_write_over_alice(
    repo: Path, server: ModelServer, step: int, session: str, text: str
) -> None:
    """After a write tool wrote ``text`` over alice's uncommitted README: her version was
    rescued first, the write went ahead, the file is ``session``'s now, and the model
    heard of the rescue once, in the request that followed step ``step``."""
    [ref] = rescue_refs(repo)
    assert ref.startswith(f"refs/rescue/{ALICE}/")
    assert show(repo, ref, "README") == "alice's readme\n"
    assert (repo / "README").read_text() == text
    assert owners(repo) == {"README": session}
    news = server.at_step(step).news()
    assert news.count(RESCUED) == 1 and ref in news, news


def attribution_tour(
    who: str, base: Path | None, *, read_first: bool = False, failing: bool = True
) -> list[Step]:
    """The attribution tour's steps: ``new.txt`` written, ``src/app.py`` edited to print
    ``who`` (read first where the CLI edits only a file the session read), ``made.txt``
    made by a plain shell line (answered by the hook's shell gate, without Python:
    guards.integrations.shell_gate) and, with ``failing``, ``failed.txt`` by a line that
    fails (with a ``>``: through Python).
    Paths are absolute under ``base`` (None: relative, as Codex's patches name them)."""

    def at(rel: str) -> str:
        return rel if base is None else str(base / rel)

    steps: list[Step] = [[write(at("new.txt"), f"written by {who}\n")]]
    if read_first:
        steps.append([read(at("src/app.py"))])
    steps += [
        [edit(at("src/app.py"), "print('hi')", f"print('{who}')")],
        [shell("touch made.txt")],
    ]
    if failing:
        steps.append([shell("echo failing > failed.txt; exit 3")])
    return [*steps, say("done")]


# -- the interactive UIs ------------------------------------------------------------------

#: Two turns in an interactive UI: a shell command's file, then a text; a second prompt.
INTERACTIVE: list[Step] = [[shell("touch made.txt")], say("first turn over"), say("second over")]


def check_interactive(
    repo: Path, loop: list[Any], harness: str, *, ended: bool = True, frame: str = "[Workspace:"
) -> None:
    """After :data:`INTERACTIVE` with alice's README dirty: the agent loop's requests
    ``loop`` carry the frame once per prompt (the first prompt's stays in the history),
    naming alice; ``made.txt`` is the session's; the session ended when the UI quit."""
    assert [r.step for r in loop] == [0, 1, 2]
    assert [r.text().count(frame) for r in loop] == [1, 1, 2]
    assert f"session {ALICE}" in loop[0].text()
    [mine] = [s for s in sessions(repo) if s.startswith(f"{harness}-")]
    assert owners(repo) == {"README": ALICE, "made.txt": mine}
    assert sessions(repo)[mine]["liveness"] == ("ended" if ended else "live")
