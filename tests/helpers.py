"""What the tests share: running git and guards as a user would, throw-away
repositories, and looking at what a snapshot promises not to touch. (Fixtures live in
conftest.py; tests import helpers from here, never from each other.)"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import guards
from guards.git.process import find_real_git
from guards.state.workspace import Workspace, record_paths
from tests import warm

PROJECT_ROOT = Path(guards.__file__).resolve().parent.parent
LEDGER = Path(".git/guards/ledger.json")


def git(cwd: Path | str, *args: str, check: bool = True, input: bytes | None = None) -> str:
    """Run the real git in ``cwd``; its stdout as text."""
    proc = subprocess.run(["git", *args], cwd=cwd, input=input, capture_output=True, check=False)
    if check and proc.returncode != 0:
        raise AssertionError(
            f"git {' '.join(args)} failed ({proc.returncode}): {proc.stderr.decode()}"
        )
    return proc.stdout.decode("utf-8", "surrogateescape")


def run_guards(
    *args: str,
    cwd: Path | str,
    env: dict[str, str] | None = None,
    input: bytes | None = None,
    timeout: float = 120,
) -> subprocess.CompletedProcess[str]:
    """Run the guards CLI in a real process of its own, as a user would (started warm:
    :mod:`tests.warm`); stdout and stderr as text."""
    full_env = dict(os.environ)
    if env:
        full_env.update(env)
    return text_of(warm.run(list(args), cwd, full_env, input or b"", timeout))


def run_agent_hook(
    harness: str,
    cwd: Path | str,
    body: bytes,
    env: dict[str, str] | None = None,
    event: str | None = None,
) -> subprocess.CompletedProcess[str]:
    """The agent hook as the harnesses run it: ``python -m guards.commands.agent_hook
    <harness> [<event>]`` in a process of its own, the event on stdin (``event``: for
    Copilot, whose payloads name none)."""
    full_env = {**os.environ, **(env or {})}
    args = [harness] if event is None else [harness, event]
    return text_of(warm.run(args, cwd, full_env, body, 60, module=AGENT_HOOK))


def doctor_findings(repo: Path, **env: str) -> dict[str, list[dict[str, object]]]:
    """``guards doctor --json`` in ``repo``: its findings by check."""
    res = run_guards("doctor", "--json", cwd=repo, env=env or None)
    assert res.returncode in (0, 1), res.stderr
    found: dict[str, list[dict[str, object]]] = {}
    for f in json.loads(res.stdout)["findings"]:
        found.setdefault(str(f["check"]), []).append(f)
    return found


AGENT_HOOK = "guards.commands.agent_hook"


def text_of(proc: subprocess.CompletedProcess[bytes]) -> subprocess.CompletedProcess[str]:
    """A finished process with its output as text (undecodable bytes kept as surrogates)."""
    return subprocess.CompletedProcess(
        proc.args,
        proc.returncode,
        proc.stdout.decode("utf-8", "surrogateescape"),
        proc.stderr.decode("utf-8", "surrogateescape"),
    )


def run_on_a_terminal(
    *args: str, cwd: Path, env: dict[str, str] | None = None, timeout: float = 120
) -> tuple[int, bytes]:
    """Run the guards CLI with its stderr on a pseudo-terminal (stdout a pipe, stdin
    empty); its exit code and everything the terminal showed."""
    import pty

    leader, follower = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "guards", *args],
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=follower,
        env={**os.environ, "PYTHONPATH": str(PROJECT_ROOT), **(env or {})},
    )
    os.close(follower)
    seen = b""
    while True:
        try:
            chunk = os.read(leader, 4096)
        except OSError:  # EIO: the last writer closed the terminal
            break
        if not chunk:
            break
        seen += chunk
    os.close(leader)
    return proc.wait(timeout=timeout), seen


def make_repo(path: Path, files: dict[str, str] | None = None) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q")
    for name, content in (files or {"README": "hello\n"}).items():
        target = path / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content)
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "initial")
    return path


def observe(repo: Path) -> dict[str, Any]:
    """Everything a snapshot promises not to touch."""
    index = Path(git(repo, "rev-parse", "--path-format=absolute", "--git-path", "index").strip())
    st = os.stat(index) if index.exists() else None
    files = {}
    for dirpath, dirnames, filenames in os.walk(repo):
        if ".git" in dirnames:
            dirnames.remove(".git")
        for name in filenames + [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]:
            full = os.path.join(dirpath, name)
            lst = os.lstat(full)
            body = os.readlink(full) if os.path.islink(full) else Path(full).read_bytes()
            files[os.path.relpath(full, repo)] = (lst.st_mode, lst.st_mtime_ns, body)
    refs = git(repo, "for-each-ref", "--format=%(refname) %(objectname)")
    return {
        "index": (index.read_bytes(), st.st_mtime_ns, st.st_mode) if st else None,
        "head": git(repo, "rev-parse", "-q", "--verify", "HEAD", check=False),
        "head_ref": git(repo, "symbolic-ref", "-q", "HEAD", check=False),
        "stash": git(repo, "stash", "list", "--format=%H"),
        "refs": [r for r in refs.splitlines() if not r.startswith(("refs/rescue/", "refs/wip/"))],
        "files": files,
    }


def record(repo: Path, session: str, *paths: str) -> None:
    """Attribute the current content of ``paths`` to ``session`` (a live session)."""
    ws = Workspace.open(repo)
    record_paths(ws, session, list(paths))


def ledger_doc(repo: Path) -> dict[str, Any]:
    """The whole ledger as one JSON document (its snapshot and journal merged), read
    without side effects."""
    from guards.state.ledger import Ledger

    data, problem = Ledger(repo / ".git" / "guards").peek()
    assert data is not None, problem
    doc: dict[str, Any] = json.loads(json.dumps(data.to_json()))
    return doc


def attributed(repo: Path) -> dict[str, str]:
    doc = ledger_doc(repo)
    return {p: r["session"] for p, r in doc["paths"].get(str(repo), {}).items()}


def head(repo: Path, rev: str = "HEAD") -> str:
    return git(repo, "rev-parse", rev).strip()


def commit_file(repo: Path, name: str, content: str) -> str:
    (repo / name).write_text(content)
    git(repo, "add", name)
    git(repo, "commit", "-q", "-m", name)
    return head(repo)


def path_without_guards(path: str | None = None) -> str:
    """PATH without the directories that hold a ``guards`` command: installed artifacts
    fall back to ``guards`` on PATH when their recorded interpreter is gone, so a test
    of "guards is gone" must hide every installed one."""
    dirs = (os.environ["PATH"] if path is None else path).split(os.pathsep)
    return os.pathsep.join(
        d for d in dirs if d and not os.access(os.path.join(d, "guards"), os.X_OK)
    )


def half_upgraded(text: str, tmp_path: Path) -> str:
    """An installed artifact's ``text`` whose recorded guards package is there (its
    marker file, for the shell's test) but cannot be imported, as in a venv recreated
    without guards or a package half-replaced by an upgrade: the artifacts start Python
    with the recorded import roots (installation.import_roots), so only a broken package
    at the root stops the import."""
    import shlex

    from guards.integrations.installation import import_roots, package_marker

    fake = tmp_path / "half-upgraded"
    (fake / "guards").mkdir(parents=True)
    (fake / "guards" / "__init__.py").write_text("")
    (fake / "guards" / "main.py").write_text("")
    root = import_roots()[0][0]
    in_quotes = "+ [" + repr(root).replace("'", "'\"'\"'")  # repr inside sh's '...'
    assert in_quotes in text and shlex.quote(package_marker()) in text
    fake_root = "+ [" + repr(str(fake)).replace("'", "'\"'\"'")
    return text.replace(in_quotes, fake_root).replace(
        shlex.quote(package_marker()), shlex.quote(str(fake / "guards" / "main.py"))
    )


def disposable_python(venv: Path) -> Path:
    """A venv at ``venv`` whose ``bin/python3`` (a symlink to this Python) a test can
    delete, and that finds guards and its dependencies as this one does: the installed
    artifacts run their interpreter with ``-E``, so PYTHONPATH cannot lend them."""
    import site
    import sysconfig

    bin_dir = venv / "bin"
    bin_dir.mkdir(parents=True)
    base = os.path.dirname(os.path.realpath(sys.executable))
    (venv / "pyvenv.cfg").write_text(f"home = {base}\ninclude-system-site-packages = false\n")
    version = f"python{sys.version_info[0]}.{sys.version_info[1]}"
    own = venv / "lib" / version / "site-packages"
    own.mkdir(parents=True)
    lend = [*site.getsitepackages(), sysconfig.get_paths()["purelib"]]
    lines = [f"import site; site.addsitedir({d!r})" for d in dict.fromkeys(lend)]
    (own / "borrowed.pth").write_text("\n".join([str(PROJECT_ROOT), *lines]) + "\n")
    python = bin_dir / "python3"
    python.symlink_to(sys.executable)
    return python


def install_with_disposable_python(repo: Path, tmp_path: Path) -> tuple[Path, Path]:
    """``guards install --shim --hooks --claude`` run by a :func:`disposable_python`;
    returns (that python, shim dir)."""
    python = disposable_python(tmp_path / "venv")
    shim_dir = tmp_path / "shim"
    res = subprocess.run(
        [str(python), "-m", "guards", "install", "--shim", str(shim_dir), "--hooks", "--claude"],
        cwd=repo,
        capture_output=True,
        text=True,
        check=False,
    )
    assert res.returncode == 0, res.stderr
    return python, shim_dir


def guards_command_dir(directory: Path) -> Path:
    """A directory holding a ``guards`` command that runs this checkout's guards (as a
    pipx or venv install on PATH would), for tests of the PATH fallback."""
    directory.mkdir(parents=True, exist_ok=True)
    script = directory / "guards"
    script.write_text(
        f'#!/bin/sh\nPYTHONPATH={PROJECT_ROOT} exec "{sys.executable}" -m guards "$@"\n'
    )
    script.chmod(0o755)
    return directory


def counting_git(tmp_path: Path) -> tuple[Path, Path]:
    """The real git behind a script that logs each call's arguments (one line each)."""
    log = tmp_path / "calls.log"
    wrapper = tmp_path / "counting-git"
    real = find_real_git()
    wrapper.write_text(f"#!/bin/sh\nprintf '%s\\n' \"$*\" >> '{log}'\nexec '{real}' \"$@\"\n")
    wrapper.chmod(0o755)
    return wrapper, log
