"""``python -m guards …`` as a real process, started warm.

Most of the suite's time went into starting interpreters: each guards command a test ran
paid for a fresh Python and its imports, hundreds of times per test file. Here a
multiprocessing *forkserver*, started once per test process, imports all of guards once;
each command is then a fork of it: a real process of its own (its own pid, exit status,
file descriptors, environment and working directory, killed by real signals), started
without the interpreter's start-up. What a fresh interpreter would decide differently at
start-up (``PYTHON*`` settings, the locale) sends the command to a fresh interpreter
instead, as do callers that need one (a pty, a process to keep running).
"""

from __future__ import annotations

import importlib
import io
import multiprocessing
import os
import pkgutil
import runpy
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import guards

#: Environment a fresh interpreter reads at start-up: where it differs from the
#: forkserver's own, the command gets a fresh interpreter.
_STARTUP_KEYS = ("LANG", "LC_ALL", "LC_CTYPE")
_MAIN = str(Path(guards.__file__).with_name("__main__.py"))

_context: Any = None
_started_with: dict[str, str] = {}


def preload() -> None:
    """Import every guards module (in the forkserver): a command then imports nothing."""
    for info in pkgutil.walk_packages(guards.__path__, "guards."):
        if not info.name.endswith("__main__"):
            importlib.import_module(info.name)


def _startup_env(env: Mapping[str, str]) -> dict[str, str]:
    return {k: v for k, v in env.items() if k.startswith("PYTHON") or k in _STARTUP_KEYS}


def _warm() -> Any:
    global _context
    if _context is None:
        _context = multiprocessing.get_context("forkserver")
        _context.set_forkserver_preload(["tests.warm"])
        _started_with.update(_startup_env(os.environ))
    return _context


def run(
    args: list[str],
    cwd: Path | str,
    env: dict[str, str],
    stdin: bytes,
    timeout: float | None,
    *,
    module: str = "guards",
) -> subprocess.CompletedProcess[bytes]:
    """``python -m <module> *args`` in ``cwd`` with exactly ``env``: forked warm when a
    fresh interpreter would start the same way, else a fresh one."""
    context = _warm()
    argv = [sys.executable, "-m", module, *args]
    if _startup_env(env) != _started_with:
        return subprocess.run(
            argv,
            cwd=cwd,
            env=env,
            input=stdin,
            capture_output=True,
            timeout=timeout,
            check=False,
        )
    with tempfile.TemporaryDirectory(prefix="guards-warm-") as tmp:
        paths = [os.path.join(tmp, name) for name in ("stdin", "stdout", "stderr")]
        Path(paths[0]).write_bytes(stdin)
        Path(paths[1]).touch()
        Path(paths[2]).touch()
        child = context.Process(target=_child, args=(module, args, str(cwd), env, paths))
        child.start()
        child.join(timeout)
        if child.exitcode is None:
            child.kill()
            child.join()
            raise subprocess.TimeoutExpired(argv, timeout or 0)
        out, err = Path(paths[1]).read_bytes(), Path(paths[2]).read_bytes()
    return subprocess.CompletedProcess(argv, child.exitcode, out, err)


def _child(module: str, args: list[str], cwd: str, env: dict[str, str], paths: list[str]) -> None:
    """In the forked process: become ``python -m <module> *args`` started in ``cwd``."""
    os.chdir(cwd)
    os.environ.clear()
    os.environ.update(env)
    for fd, path, flags in zip(
        (0, 1, 2), paths, (os.O_RDONLY, os.O_WRONLY, os.O_WRONLY), strict=True
    ):
        opened = os.open(path, flags)
        os.dup2(opened, fd)
        os.close(opened)
    # The streams a fresh interpreter would open on these descriptors, with the
    # encodings and error handlers this interpreter chose at its own start-up.
    sys.stdin = _stream(0, "r", sys.__stdin__)
    sys.stdout = _stream(1, "w", sys.__stdout__)
    sys.stderr = _stream(2, "w", sys.__stderr__, line_buffering=True)
    sys.argv = [_MAIN, *args]
    try:
        if module == "guards":
            from guards.main import main

            raise SystemExit(main(args))
        # As `python -m` does: the module runs as a fresh __main__, apart from the
        # preloaded copy (which runpy would warn about).
        sys.modules.pop(module, None)
        runpy.run_module(module, run_name="__main__", alter_sys=True)
    finally:
        sys.stdout.flush()
        sys.stderr.flush()


def _stream(fd: int, mode: str, like: Any, *, line_buffering: bool = False) -> io.TextIOWrapper:
    raw = io.FileIO(fd, mode, closefd=False)
    buffered: Any = io.BufferedReader(raw) if mode == "r" else io.BufferedWriter(raw)
    return io.TextIOWrapper(
        buffered,
        encoding=getattr(like, "encoding", None) or "utf-8",
        errors=getattr(like, "errors", None) or "strict",
        line_buffering=line_buffering,
    )


# Imported by the forkserver (its preload) and by the test processes: every guards
# module is imported once, so a forked command imports nothing.
preload()
