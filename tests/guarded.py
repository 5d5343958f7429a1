"""Ways to run a git command in tests: plain git, `guards run`, a safe-* alias, the shim."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from guards.integrations.installation import SAFE_ALIASES, SHIM_MARKER_FILE, shim_text
from tests import warm

ALIASED = {sub: name for name, sub in SAFE_ALIASES.items()}


def install_shim(directory: Path) -> Path:
    """The shim as `guards install --shim` writes it."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "git").write_text(shim_text(directory))
    (directory / "git").chmod(0o755)
    (directory / SHIM_MARKER_FILE).write_text("shim\n")
    return directory


def install_aliases(repo: Path) -> None:
    from guards.integrations.installation import alias_value

    for name, sub in SAFE_ALIASES.items():
        subprocess.run(["git", "config", f"alias.{name}", alias_value(sub)], cwd=repo, check=True)


def run_via(
    way: str,
    args: list[str],
    cwd: Path,
    *,
    shim_dir: Path | None = None,
    env: dict[str, str] | None = None,
    input: bytes | None = None,
    timeout: float | None = None,
) -> subprocess.CompletedProcess[bytes]:
    """Run `git <args>` the given way: plain, guards-run, alias or shim."""
    full_env = {**os.environ, **(env or {})}
    if way == "guards-run":  # a process of its own, started warm (tests.warm)
        return warm.run(["run", "--", *args], cwd, full_env, input or b"", timeout)
    if way == "plain":
        argv = ["git", *args]
    elif way == "alias":
        sub = args[0]
        argv = ["git", ALIASED[sub], *args[1:]]
    elif way == "shim":
        assert shim_dir is not None
        full_env["PATH"] = f"{shim_dir}{os.pathsep}{full_env['PATH']}"
        argv = ["git", *args]
    else:
        raise ValueError(way)
    return subprocess.run(
        argv, cwd=cwd, env=full_env, input=input, capture_output=True, check=False, timeout=timeout
    )
