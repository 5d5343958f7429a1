"""Native git hooks, for people without the pre-commit framework.

``install_native_hooks`` writes one small POSIX ``sh`` script per hook type into the
directory git really reads (``git rev-parse --git-path hooks``, which honours
``core.hooksPath``). A hook that is already there is never replaced: it is renamed to
``<type>.guards-chained`` (bytes, mode and symlink-ness kept by the rename) and our script
runs it first, with the same arguments and the same stdin, and keeps its exit status.
``uninstall_native_hooks`` removes exactly what the manifest (``native-hooks.json`` in
the ledger directory) says was installed and renames the chained hook back.

The script records ``sys.executable`` and a file of the guards package it ran from at
install time and runs ``<python> -m guards.commands.hook run <type>`` while both are
there, else ``guards hook run <type>`` from PATH (installation: how installed artifacts
find guards). If guards cannot be found, or is no longer importable there, a commit
hook prints one warning and lets git go on (a removed tool must not hold every commit
hostage; committing destroys nothing), while the pre-push hook refuses, naming
``git push --no-verify``. ``guards hook`` itself never exits 1, so exit 1 (Python's "No
module named ...") and 126/127 (no such interpreter) mean "guards is missing"; every
other non-zero status from a pre-* hook blocks.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from guards.errors import GuardsError, UnknownStateError
from guards.fsutil import EXECUTABLE, PRIVATE, atomic_write
from guards.git.repo import Repo
from guards.integrations.installation import package_marker, python_launch, recorded_python

#: git hook type -> what ``guards hook run`` does for it
NATIVE_CHECKS: dict[str, str] = {
    "pre-commit": "foreign commit + mass deletion",
    "pre-merge-commit": "foreign commit",
    "post-commit": "ledger sync",
    "post-checkout": "ledger sync",
    "post-merge": "ledger sync",
    "post-rewrite": "ledger sync",
    "pre-push": "push breaker",
}
#: hook types whose stdin carries data for the hook
STDIN_HOOKS = frozenset({"pre-push", "post-rewrite"})


HOOK_TYPES: tuple[str, ...] = tuple(NATIVE_CHECKS)
CHAINED_SUFFIX = ".guards-chained"
MANIFEST_FILE = "native-hooks.json"
MANIFEST_SCHEMA = 1
#: The line that marks a hook script as written by guards.
MARKER = "# guards-native-hook:"

_TEMPLATE = """\
#!/bin/sh
{marker} {hook_type} (written by `guards install --hooks`; `guards uninstall` removes it)
# Runs {checks}. A previous {hook_type} hook, kept as {hook_type}{suffix},
# runs first with the same arguments and input; its exit status is kept.
# guards: the recorded interpreter while the guards package it ran from is still there,
# else `guards` on PATH. If guards is gone, a commit hook warns and lets git go on; the
# pre-push hook refuses (a push can drop remote commits): git push --no-verify skips it.
guards_python={python}
guards_package={package}
hook_type={hook_type}
chained="$(dirname -- "$0")/$hook_type{suffix}"
feeds_stdin={feeds_stdin}
input=
if [ "$feeds_stdin" = yes ]; then input=$(cat); fi
run_with_input() {{
    if [ -n "$input" ]; then printf '%s\\n' "$input" | "$@"; else "$@" </dev/null; fi
}}
status=0
if [ -f "$chained" ] && [ -x "$chained" ]; then
    run_with_input "$chained" "$@"
    status=$?
    case "$hook_type" in pre-*) [ "$status" -eq 0 ] || exit "$status" ;; esac
fi
guards_cmd=$(command -v guards 2>/dev/null) || guards_cmd=
if [ -x "$guards_python" ] && [ -f "$guards_package" ]; then
    run_with_input "$guards_python" {launch} run "$hook_type" "$@"
    guards_status=$?
elif [ -n "$guards_cmd" ]; then
    run_with_input "$guards_cmd" hook run "$hook_type" "$@"
    guards_status=$?
else
    guards_status=127
fi
case "$guards_status" in
0) ;;
1|126|127)
    if [ "$hook_type" = pre-push ]; then
        echo "guards: refusing the push: guards is not installed any more ($guards_python," \\
            "and no guards on PATH), so the push breaker cannot check it; reinstall" \\
            "git-guards, or push without the check: git push --no-verify" >&2
        exit 20
    fi
    echo "guards: warning: guards is not installed for $guards_python any more;" \\
        "the $hook_type hook checked nothing (reinstall git-guards, or run" \\
        "'guards uninstall' / remove $0)" >&2 ;;
*) case "$hook_type" in pre-*) exit "$guards_status" ;; esac ;;
esac
exit "$status"
"""


def render_script(hook_type: str, python: str | None = None, package: str | None = None) -> bytes:
    """The native hook script for ``hook_type``, running guards with ``python`` (while
    ``package``, a file of its guards package, exists; else ``guards`` on PATH)."""
    python = python or recorded_python()
    if not python:
        raise UnknownStateError("cannot tell which Python runs guards (sys.executable is empty)")
    return _TEMPLATE.format(
        marker=MARKER,
        hook_type=hook_type,
        checks=NATIVE_CHECKS[hook_type],
        suffix=CHAINED_SUFFIX,
        python=shlex.quote(python),
        package=shlex.quote(package or package_marker()),
        feeds_stdin="yes" if hook_type in STDIN_HOOKS else "no",
        # 1 when guards cannot start: the script's own warning (a push: its refusal).
        launch=python_launch("guards.commands.hook:main", "", 1),
    ).encode()


def is_native_hook(path: Path) -> bool:
    """Whether ``path`` is a hook script written by ``guards install --hooks``."""
    try:
        if path.is_symlink() or not path.is_file():
            return False
        with open(path, "rb") as f:
            return MARKER.encode() in f.read(256)
    except OSError:
        return False


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _file_sha256(path: Path) -> str | None:
    try:
        return _sha256(path.read_bytes())
    except OSError:
        return None


# -- the manifest ----------------------------------------------------------------------


def _manifest_path(repo: Repo) -> Path:
    return repo.ledger_dir / MANIFEST_FILE


def _read_manifest(repo: Repo) -> dict[str, Any]:
    path = _manifest_path(repo)
    try:
        doc = json.loads(path.read_bytes())
    except FileNotFoundError:
        return {"schema": MANIFEST_SCHEMA, "hooks": {}}
    except (OSError, ValueError) as e:
        raise UnknownStateError(
            f"the native hook manifest {path} is unreadable ({e}); "
            f"check the hooks by hand and remove it"
        ) from None
    if not isinstance(doc, dict) or not isinstance(doc.get("hooks"), dict):
        raise UnknownStateError(f"the native hook manifest {path} is malformed; remove it")
    if doc.get("schema") != MANIFEST_SCHEMA:
        raise UnknownStateError(
            f"the native hook manifest {path} has schema {doc.get('schema')!r}; "
            f"this guards reads {MANIFEST_SCHEMA}: upgrade guards"
        )
    return doc


def _write_manifest(repo: Repo, doc: dict[str, Any]) -> None:
    path = _manifest_path(repo)
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        if not doc["hooks"]:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
            return
        atomic_write(path, json.dumps(doc, indent=2, sort_keys=True).encode() + b"\n", mode=PRIVATE)
    except OSError as e:
        raise UnknownStateError(f"cannot write {path}: {e.strerror}") from e


# -- install ---------------------------------------------------------------------------


@dataclass(frozen=True)
class _Step:
    hook_type: str
    path: Path
    script: bytes
    #: "write" (nothing there), "chain" (move the existing hook aside), "update" (ours,
    #: outdated), "keep" (ours, current), "adopt" (ours, current, missing from the manifest)
    action: str


def _plan_install(hooks_dir: Path, manifest: dict[str, Any]) -> list[_Step]:
    steps: list[_Step] = []
    conflicts: list[str] = []
    for hook_type in HOOK_TYPES:
        path = hooks_dir / hook_type
        chained = hooks_dir / (hook_type + CHAINED_SUFFIX)
        script = render_script(hook_type)
        if is_native_hook(path):
            current = _file_sha256(path) == _sha256(script)
            action = (
                "update" if not current else "keep" if hook_type in manifest["hooks"] else "adopt"
            )
            steps.append(_Step(hook_type, path, script, action))
        elif os.path.lexists(path):
            if os.path.lexists(chained):
                conflicts.append(f"{path} exists and so does {chained.name}")
            else:
                steps.append(_Step(hook_type, path, script, "chain"))
        elif os.path.lexists(chained) and hook_type not in manifest["hooks"]:
            conflicts.append(
                f"{chained} is left from an earlier install; rename it back or remove it"
            )
        else:
            steps.append(_Step(hook_type, path, script, "write"))
    if conflicts:
        raise GuardsError(
            "cannot install native hooks: " + "; ".join(conflicts) + " (nothing was changed)"
        )
    return steps


#: One imperative line per action (``guards install --dry-run`` prefixes "would").
_DESCRIBE = {
    "adopt": "record {hook} hook (already in place) in the manifest: {path}",
    "update": "update {hook} hook: {path}",
    "write": "write {hook} hook: {path}",
    "chain": "write {hook} hook: {path} (the existing hook is kept as {chained} and runs first)",
}


def install_native_hooks(repo: Repo, *, dry_run: bool = False) -> list[str]:
    """Install guards' native hooks; one human line per action (planned when ``dry_run``)."""
    hooks_dir = repo.hooks_dir()
    manifest = _read_manifest(repo)
    steps = _plan_install(hooks_dir, manifest)
    lines = [
        _DESCRIBE[s.action].format(
            hook=s.hook_type, path=s.path, chained=s.path.name + CHAINED_SUFFIX
        )
        for s in steps
        if s.action != "keep"  # nothing to do: no line (all installed: no lines at all)
    ]
    if dry_run:
        return lines
    try:
        if not hooks_dir.is_dir():
            hooks_dir.mkdir(parents=True)
            manifest.setdefault("created_dirs", []).append(str(hooks_dir))
        manifest["hooks_dir"] = str(hooks_dir)
        for s in steps:
            chained = s.path.with_name(s.path.name + CHAINED_SUFFIX)
            if s.action == "keep":
                continue
            entry = manifest["hooks"].get(s.hook_type, {})
            entry.update({"path": str(s.path), "sha256": _sha256(s.script)})
            entry.setdefault("chained", None)
            if s.action == "chain" or os.path.lexists(chained):
                entry["chained"] = str(chained)
            manifest["hooks"][s.hook_type] = entry
            # The manifest first: an interrupted install is still undone by uninstall.
            _write_manifest(repo, manifest)
            if s.action == "chain":
                os.rename(s.path, chained)
            if s.action != "adopt":
                atomic_write(s.path, s.script, mode=EXECUTABLE)
    except OSError as e:
        raise UnknownStateError(
            f"installing native hooks in {hooks_dir} failed: {e.strerror} "
            f"({e.filename}); run 'guards uninstall' to undo the part that was done"
        ) from e
    return lines


# -- uninstall -------------------------------------------------------------------------


def uninstall_native_hooks(repo: Repo, *, dry_run: bool = False) -> list[str]:
    """Remove what the manifest says guards installed and put chained hooks back."""
    manifest = _read_manifest(repo)
    remaining: dict[str, Any] = dict(manifest["hooks"])
    lines: list[str] = []
    for hook_type, entry in sorted(manifest["hooks"].items()):
        path = Path(entry["path"])
        chained = Path(entry["chained"]) if entry.get("chained") else None
        has_chained = chained is not None and os.path.lexists(chained)
        if os.path.lexists(path) and not is_native_hook(path):
            # Someone replaced our script (pre-commit install moves it to .legacy, say):
            # restoring the chained hook now would clobber theirs. Keep it on record.
            lines.append(
                f"leave {hook_type} hook {path}: it was replaced since guards installed it"
                + (f"; the earlier hook is still at {chained}" if has_chained else "")
            )
            continue
        if has_chained:
            lines.append(f"restore {hook_type} hook: {chained} -> {path}")
        elif os.path.lexists(path):
            lines.append(f"remove {hook_type} hook: {path}")
        else:
            lines.append(f"forget {hook_type} hook (already gone): {path}")
        if dry_run:
            continue
        try:
            if os.path.lexists(path):
                os.unlink(path)
            if has_chained and chained is not None:
                os.rename(chained, path)
        except OSError as e:
            raise UnknownStateError(
                f"uninstalling the {hook_type} hook failed: {e.strerror} ({e.filename})"
            ) from e
        del remaining[hook_type]
        _write_manifest(repo, {**manifest, "hooks": remaining})
    if not dry_run and not remaining:
        for directory in manifest.get("created_dirs", []):
            with contextlib.suppress(OSError):
                os.rmdir(directory)  # only when empty: never anything we did not write
    return lines


def installed_native_hooks(repo: Repo) -> list[str]:
    """Hook types whose guards script is in place (per the manifest), in git's order."""
    try:
        manifest = _read_manifest(repo)
    except GuardsError:
        return []
    hooks = manifest["hooks"]
    return [h for h in HOOK_TYPES if h in hooks and is_native_hook(Path(hooks[h]["path"]))]
