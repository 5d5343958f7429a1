"""What `guards install` sets up and `guards uninstall` takes away — exactly that.

Every change is recorded in a manifest (the repository's in the ledger directory, the
user's in platformdirs' data dir) so that uninstall removes what guards installed and
nothing else: a user's own alias or file with the same name is never touched.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from guards.errors import UsageError
from guards.fsutil import EXECUTABLE, PRIVATE, atomic_write
from guards.git import process as git

MANIFEST = "installed.json"
SHIM_MARKER_FILE = ".guards-shim"
#: alias name -> the git subcommand it guards
SAFE_ALIASES = {
    f"safe-{sub}": sub for sub in ("reset", "stash", "switch", "checkout", "restore", "clean")
}


@dataclass
class Step:
    """One planned change; ``apply`` performs it."""

    description: str
    apply: Callable[[], None]


# -- how installed artifacts find guards -------------------------------------------------
#
# Aliases, the shim, native hooks and harness settings outlive the interpreter that
# installed them (a venv recreated, a Python upgraded, pipx reinstalled). Each resolves
# guards when it runs, in POSIX sh and without starting Python to do it: the recorded
# interpreter while it is executable and the guards package it ran from is still there
# (one stat), else the `guards` command on PATH, else it fails loudly, never silently
# letting a destructive command through.


def recorded_python() -> str:
    """The interpreter that runs guards now, recorded in every installed artifact."""
    return sys.executable


def package_marker() -> str:
    """A file of the guards package that runs now; its absence means that the recorded
    interpreter no longer has this guards."""
    return str(Path(__file__).resolve().parents[1] / "main.py")


def recorded_is_usable(python: str, marker: str) -> bool:
    """What the artifacts' shell test says: the recorded interpreter still runs guards."""
    return os.access(python, os.X_OK) and os.path.isfile(python) and os.path.isfile(marker)


def sh_prefers_recorded(python: str | None = None, marker: str | None = None) -> str:
    """The shell test for the recorded interpreter (``[ -x PY ] && [ -f MARKER ]``)."""
    py = shlex.quote(python or recorded_python())
    mark = shlex.quote(marker or package_marker())
    return f"[ -x {py} ] && [ -f {mark} ]"


#: What an installed artifact's Python does first: take the current directory (``-c``'s
#: ``""``) off the module path. The artifacts run inside the user's project (git runs
#: aliases and hooks at the top of the work tree, the harnesses their hooks in the
#: project), so its json.py or enum.py would replace the standard library's: the agent
#: hook died with a traceback and exit 1, which the harnesses read as "go on".
_OFF_THE_PATH = "sys.path[:] = [p for p in sys.path if p]"
#: What guards imports at run time from outside the standard library: an installed
#: artifact's Python starts without ``site`` (``-S``) and is given their directories.
RUNTIME_DEPENDENCIES = ("filelock", "platformdirs", "tomli_w", "tomli")


def import_roots() -> tuple[list[str], list[str]]:
    """(the directories guards and its run-time dependencies are imported from now, in
    that order, each once; the file each dependency is imported from). An installed
    artifact's Python gets exactly these directories instead of ``site``'s processing of
    every ``.pth`` file in the environment (1 ms in a fresh venv, tens of ms in one whose
    ``.pth`` files import packages) on every hook call and guarded git command; an
    editable install's root is among them as the one it runs from. The artifact checks
    the files are still there before it starts guards: a dependency removed since would
    fail half-way (a lock not taken), so its absence refuses at once. A dependency that is
    not installed (tomli on Python >= 3.11) has neither."""
    from importlib.util import find_spec

    roots = [str(Path(__file__).resolve().parents[2])]
    files = []
    for name in RUNTIME_DEPENDENCIES:
        try:
            spec = find_spec(name)
        except (ImportError, ValueError):
            spec = None
        if spec is None or not spec.origin or spec.origin in ("built-in", "frozen"):
            continue
        origin = Path(spec.origin).resolve()
        # A package's origin is its __init__.py: the root is the folder above the package.
        root = origin.parents[1] if spec.submodule_search_locations else origin.parent
        files.append(str(origin))
        if str(root) not in roots:
            roots.append(str(root))
    return roots, files


#: The mark of an artifact that starts guards this way (doctor tells older ones).
LAUNCH_MARK = "guards: started by an installed artifact"


def launches_safely(text: str) -> bool:
    """Whether an installed artifact's text starts guards as :func:`python_launch` does
    (one an older guards wrote runs ``python -m``, the project's directory on the path)."""
    return LAUNCH_MARK in text


def python_launch(call: str, refusal: str, status: int, *, shim: bool = False) -> str:
    """The arguments after the interpreter that run ``call`` (``module:function``, given
    the artifact's arguments) as installed artifacts do: ``-E`` (the user's PYTHONPATH
    and other PYTHON* variables are the project's, not guards'), ``-S`` with
    :func:`import_roots` on the path instead, ``-c`` with the current directory off the
    path, begun by :func:`guards.errors.collect_rarely` and ended by
    :func:`guards.errors.exit_now` (no teardown to wait for); a guards
    that cannot start says so in one line (``refusal``, then why; nothing when it is
    empty) and exits ``status``. ``shim``: under
    GUARDS_DISABLE=1 the real git runs instead, and the line names that override."""
    module, function = call.split(":")
    bypass = (
        '    if os.environ.get("GUARDS_DISABLE") == "1":\n'
        '        git = os.environ["GUARDS_REAL_GIT"]\n'
        "        os.execv(git, [git] + sys.argv[1:])\n"
        if shim
        else ""
    )
    hint = "; to run git without guards: GUARDS_DISABLE=1 git ..." if shim else ""
    refusal = refusal.replace("\\", "\\\\").replace('"', '\\"')  # in a "..." literal
    say = (
        '    why = "%s: %s" % (type(e).__name__, e)\n'
        f'    sys.stderr.write("{refusal}: guards cannot run (%s){hint}\\n" % why)\n'
        if refusal
        else ""
    )
    roots, files = import_roots()
    code = (
        f"# {LAUNCH_MARK}\n"
        f"import sys\n"
        f"{_OFF_THE_PATH} + {roots!r}\n"
        f"import os\n"
        f"try:\n"
        f"    for f in {files!r}:\n"
        f"        os.stat(f)\n"
        f"    from guards.errors import collect_rarely, exit_now\n"
        f"    collect_rarely()\n"
        f"    from {module} import {function} as main\n"
        f"except Exception as e:\n"
        f"{bypass}"
        f"{say}"
        f"    sys.exit({status})\n"
        f"exit_now(main(sys.argv[1:]))\n"
    )
    return f"-E -S -c {shlex.quote(code)}"


def alias_value(subcommand: str) -> str:
    """``!f() {...}; f``: git runs it at the top level with the user's arguments, and
    ``--alias`` tells guards to go back to the user's directory (GIT_PREFIX) first."""
    py = shlex.quote(recorded_python())
    run = f'run --alias -- {subcommand} "$@"'
    refusal = f"guards: refusing git safe-{subcommand}"
    launch = python_launch("guards.main:main", refusal, 20)
    return (
        f"!f() {{ if {sh_prefers_recorded()}; then {py} {launch} {run}; "
        f"elif command -v guards >/dev/null 2>&1; then guards {run}; "
        f'else echo "guards: refusing git safe-{subcommand}: guards is not installed any '
        f"more ({py} is gone or lost it) and no guards is on PATH; reinstall git-guards, then "
        f'guards install" >&2; return 20; fi; }}; f'
    )


#: Our alias values as older guards wrote them (the recorded interpreter, nothing else).
_OLD_ALIAS = r"^!.+ -m guards run (?:--alias )?-- {sub}$"


def is_our_alias(value: str, subcommand: str) -> bool:
    """Whether an alias value is one guards wrote (this version's or an older one's)."""
    if re.match(_OLD_ALIAS.format(sub=re.escape(subcommand)), value):
        return True
    if not value.startswith("!f() { if [ -x "):
        return False
    if f"-m guards run --alias -- {subcommand} " in value:  # before python_launch
        return True
    return LAUNCH_MARK in value and f"' run --alias -- {subcommand} " in value


# -- manifests ---------------------------------------------------------------------------


def user_manifest_path() -> Path:
    from platformdirs import user_data_dir

    return Path(user_data_dir("guards")) / MANIFEST


def read_manifest(path: Path) -> dict[str, Any]:
    try:
        doc = json.loads(path.read_text())
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as e:
        raise UsageError(f"cannot read the install manifest {path}: {e}") from e
    return doc if isinstance(doc, dict) else {}


def write_manifest(path: Path, doc: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    atomic_write(path, (json.dumps(doc, indent=2, sort_keys=True) + "\n").encode(), mode=PRIVATE)


def update_manifest(path: Path, change: Callable[[dict[str, Any]], None]) -> None:
    doc = read_manifest(path)
    change(doc)
    write_manifest(path, doc)


# -- aliases -----------------------------------------------------------------------------


def _config_args(scope: str, cwd: Path | None) -> list[str]:
    return ["config", f"--{scope}"]


def current_alias(scope: str, name: str, cwd: Path | None) -> str | None:
    res = git.run([*_config_args(scope, cwd), "--get", f"alias.{name}"], cwd=cwd, check=False)
    if res.returncode != 0:
        return None
    return git.strip_newline(res.stdout).decode("utf-8", "surrogateescape")


def plan_aliases(scope: str, cwd: Path | None, manifest: Path) -> list[Step]:
    steps = []
    for name, sub in SAFE_ALIASES.items():
        value = alias_value(sub)
        existing = current_alias(scope, name, cwd)
        if existing == value:
            continue
        if existing is not None and not is_our_alias(existing, sub):
            steps.append(Step(f"keep your own alias.{name} ({scope}): {existing}", lambda: None))
            continue
        verb = "set" if existing is None else "update"
        steps.append(
            Step(
                f"{verb} alias.{name} ({scope} git config): `git {name} ...` runs "
                f"`guards run -- {sub} ...`",
                _set_alias(scope, name, value, cwd, manifest),
            )
        )
    return steps


def _set_alias(
    scope: str, name: str, value: str, cwd: Path | None, manifest: Path
) -> Callable[[], None]:
    def apply() -> None:
        git.run([*_config_args(scope, cwd), f"alias.{name}", value], cwd=cwd, readonly=False)
        update_manifest(
            manifest,
            lambda doc: doc.setdefault("aliases", {}).setdefault(scope, {}).update({name: value}),
        )

    return apply


def plan_remove_aliases(scope: str, cwd: Path | None, manifest: Path) -> list[Step]:
    ours = read_manifest(manifest).get("aliases", {}).get(scope, {})
    steps = []
    for name, value in sorted(ours.items()):
        existing = current_alias(scope, name, cwd)
        if existing != value:
            steps.append(
                Step(
                    f"leave alias.{name} ({scope}): it was changed since",
                    _forget_alias(scope, name, manifest),
                )
            )
            continue
        steps.append(
            Step(f"unset alias.{name} ({scope})", _unset_alias(scope, name, cwd, manifest))
        )
    return steps


def _forget_alias(scope: str, name: str, manifest: Path) -> Callable[[], None]:
    def apply() -> None:
        update_manifest(manifest, lambda doc: doc.get("aliases", {}).get(scope, {}).pop(name, None))

    return apply


def _unset_alias(scope: str, name: str, cwd: Path | None, manifest: Path) -> Callable[[], None]:
    def apply() -> None:
        git.run(
            [*_config_args(scope, cwd), "--unset", f"alias.{name}"],
            cwd=cwd,
            readonly=False,
            check=False,
        )
        _forget_alias(scope, name, manifest)()

    return apply


# -- the shim ----------------------------------------------------------------------------


def shim_text(directory: Path) -> str:
    # From a source checkout, the template beside the guards package that will run it
    # (an editable install elsewhere maps guards_hooks to *its* checkout).
    beside = Path(__file__).resolve().parents[2] / "hooks" / "git-shim.sh"
    if beside.is_file():
        template = beside.read_text()
    else:
        from importlib import resources  # only when installing: costs the doctor ~10 ms

        template = resources.files("guards_hooks").joinpath("git-shim.sh").read_text()
    return (
        template.replace("@GUARDS_PYTHON@", shlex.quote(recorded_python()))
        .replace("@GUARDS_PACKAGE@", shlex.quote(package_marker()))
        .replace("@GUARDS_SHIM_DIR@", shlex.quote(str(directory)))
        .replace("@GUARDS_LAUNCH@", _SHIM_LAUNCH)
    )


#: The shim's Python: guards run, refusing with the override named when it cannot start.
_SHIM_LAUNCH = python_launch(
    "guards.commands.run:main", "guards-shim: refusing this git command", 20, shim=True
)


def plan_shim(directory: Path, manifest: Path) -> list[Step]:
    directory = Path(os.path.abspath(directory))
    target = directory / "git"
    text = shim_text(directory)
    if target.exists() or target.is_symlink():
        if not git.is_shim(target):
            raise UsageError(f"{target} exists and is not a guards shim; choose another directory")
        if target.read_text() == text:
            return []
    return [Step(f"write the git shim {target}", _write_shim(directory, text, manifest))]


def _write_shim(directory: Path, text: str, manifest: Path) -> Callable[[], None]:
    def apply() -> None:
        directory.mkdir(parents=True, exist_ok=True)
        atomic_write(directory / "git", text.encode(), mode=EXECUTABLE)
        (directory / SHIM_MARKER_FILE).write_text("the git in this directory is a guards shim\n")
        update_manifest(
            manifest,
            lambda doc: doc.__setitem__(
                "shims", sorted(set(doc.get("shims", [])) | {str(directory)})
            ),
        )

    return apply


def plan_remove_shim(directory: Path, manifest: Path) -> list[Step]:
    directory = Path(os.path.abspath(directory))
    target = directory / "git"
    if not target.exists():
        return []
    if not git.is_shim(target):
        raise UsageError(f"{target} is not a guards shim; leaving it alone")

    def apply() -> None:
        target.unlink()
        marker = directory / SHIM_MARKER_FILE
        if marker.exists():
            marker.unlink()
        update_manifest(
            manifest,
            lambda doc: doc.__setitem__(
                "shims", [d for d in doc.get("shims", []) if d != str(directory)]
            ),
        )

    return [Step(f"remove the git shim {target}", apply)]


# -- what an installed artifact will run ----------------------------------------------------

_RECORDED = (
    re.compile(r"guards_python=(\S+)\nguards_package=(\S+)\n"),
    re.compile(
        r"\[ -x ('(?:[^']|'\"'\"')*'|[^\s\"]+) \] && \[ -f ('(?:[^']|'\"'\"')*'|[^\s\"]+) \]"
    ),
)
_OLD_RECORDED = re.compile(r"^!?(\S+) -m guards[. ]")


def artifact_runner(text: str) -> tuple[str, str | None]:
    """Which guards an installed artifact's text (alias value, shim, hook script, harness
    command) will run now: ``("recorded", python)`` when its recorded interpreter still
    has guards, ``("path", guards_on_path)`` when it falls back to PATH, ``("gone",
    python)`` when it will refuse; ``python`` is what it recorded (None: not found)."""
    python, marker = None, None
    for pattern in _RECORDED:
        m = pattern.search(text)
        if m:
            python, marker = (shlex.split(m.group(i))[0] for i in (1, 2))
            break
    if python is None:
        old = _OLD_RECORDED.search(text)
        if old:  # written by an older guards: no PATH fallback at all
            python = shlex.split(old.group(1))[0]
            ok = os.access(python, os.X_OK)
            return ("recorded", python) if ok else ("gone", python)
    if python is not None and marker is not None and recorded_is_usable(python, marker):
        return "recorded", python
    import shutil

    on_path = shutil.which("guards")
    if on_path is not None:
        return "path", on_path
    return "gone", python
