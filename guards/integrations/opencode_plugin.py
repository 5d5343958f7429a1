"""guards' opencode plugin file, written and removed without touching anyone else's.

opencode (``opencode-ai``) has no command hooks in a settings file: it loads every
``{plugin,plugins}/*.{js,ts}`` of its config directories (the project's ``.opencode/``,
the user's ``$XDG_CONFIG_HOME/opencode/``, ``$OPENCODE_CONFIG_DIR``) as plugins, whose
functions are its hooks. guards writes its own plugin there, ``plugins/guards.js``, from
the template ``hooks/opencode-plugin.js`` (package data, as the git shim), with the
hook command (the interpreter recorded at install, else ``guards`` on PATH) inside it.

The file is ours when its first line is :data:`MARKER`: install never overwrites a file
of that name that is not ours, uninstall removes only ours (and ``plugins/`` when that
left it empty).

opencode installs its plugin SDK (``@opencode-ai/plugin``, from npm) into each config
directory that has plugins when it starts, and waits for it (offline it gives up and
loads the plugins all the same); the files it writes there are ignored by the
``.gitignore`` it writes beside them.
"""

from __future__ import annotations

import contextlib
import json
import os
from importlib import resources
from pathlib import Path

from guards.errors import UsageError
from guards.fsutil import KEEP_MODE, atomic_write
from guards.integrations.installation import Step, update_manifest, user_manifest_path

#: The first line of our plugin file.
MARKER = "// guards-opencode-plugin"
#: The user's install manifest lists each plugin file install wrote (doctor reports one
#: that is gone: opencode then runs no guards hook, and says nothing).
MANIFEST_KEY = "opencode_plugins"
TEMPLATE = "opencode-plugin.js"
PLUGIN_DIR = "plugins"
PLUGIN_NAME = "guards.js"


def config_dir() -> Path:
    """opencode's user config directory: ``$XDG_CONFIG_HOME/opencode`` (``~/.config``)."""
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(Path.home(), ".config")
    return Path(base) / "opencode"


def plugin_path(scope: str, project_dir: Path | None) -> Path:
    if scope == "user":
        return config_dir() / PLUGIN_DIR / PLUGIN_NAME
    if project_dir is None:
        raise UsageError("--project needs a git repository (or use --user) for opencode")
    return project_dir / ".opencode" / PLUGIN_DIR / PLUGIN_NAME


def plugin_text(script: str, timeout: int) -> str:
    """Our plugin, as install writes it: ``script`` the hook command (see
    guards.integrations.harness_settings.hook_script), ``timeout`` in seconds."""
    beside = Path(__file__).resolve().parents[2] / "hooks" / TEMPLATE
    if beside.is_file():  # a source checkout (see installation.shim_text)
        template = beside.read_text(encoding="utf-8")
    else:
        template = resources.files("guards_hooks").joinpath(TEMPLATE).read_text(encoding="utf-8")
    return template.replace("@GUARDS_HOOK_SCRIPT@", json.dumps(script)).replace(
        "@GUARDS_TIMEOUT_MS@", str(timeout * 1000)
    )


def is_ours(path: Path) -> bool:
    try:
        with path.open(encoding="utf-8", errors="replace") as f:
            return f.readline().startswith(MARKER)
    except OSError:
        return False


def hook_script_of(path: Path) -> str | None:
    """The hook command inside our plugin file (None: not ours, or unreadable)."""
    if not is_ours(path):
        return None
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith("const SCRIPT = "):
            with contextlib.suppress(ValueError):
                found = json.loads(line.removeprefix("const SCRIPT = ").rstrip(";"))
                return found if isinstance(found, str) else None
    return None


def plan_install(path: Path, text: str) -> list[Step]:
    """Write ``text`` (:func:`plugin_text`) as ``path``, never over a file not ours."""
    if path.exists() or path.is_symlink():
        if not is_ours(path):
            raise UsageError(f"{path} exists and is not guards' opencode plugin; leaving it alone")
        if path.read_text(encoding="utf-8", errors="replace") == text:
            return []

    def apply() -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, text.encode("utf-8"), mode=KEEP_MODE)
        _remember(path, keep=True)

    return [Step(f"write the guards opencode plugin {path}", apply)]


def plan_uninstall(path: Path) -> list[Step]:
    if not is_ours(path):
        return []  # absent, or someone else's file: never touched

    def apply() -> None:
        if is_ours(path):  # again: the file may have changed since the plan
            path.unlink()
        _remember(path, keep=False)
        with contextlib.suppress(OSError):  # the folder install made, if now empty
            path.parent.rmdir()

    return [Step(f"remove the guards opencode plugin {path}", apply)]


def _remember(path: Path, *, keep: bool) -> None:
    where = str(path.absolute())

    def change(doc: dict[str, object]) -> None:
        known = doc.get(MANIFEST_KEY)
        listed = {str(p) for p in known} if isinstance(known, list) else set()
        doc[MANIFEST_KEY] = sorted(listed | {where} if keep else listed - {where})

    update_manifest(user_manifest_path(), change)


def installed_plugins() -> list[Path]:
    """The plugin files install wrote, as the user's install manifest lists them."""
    from guards.integrations.installation import read_manifest

    try:
        known = read_manifest(user_manifest_path()).get(MANIFEST_KEY)
    except UsageError:
        return []
    return [Path(p) for p in known if isinstance(p, str)] if isinstance(known, list) else []
