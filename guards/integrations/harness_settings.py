"""Our hooks in the harnesses' settings files, merged in and taken out without touching
anything else.

Claude Code reads hooks from ``.claude/settings.json`` (project) and
``~/.claude/settings.json`` (user); Codex CLI from ``.codex/hooks.json`` (project) and
``~/.codex/hooks.json`` (user); Gemini CLI from ``.gemini/settings.json`` (project) and
``~/.gemini/settings.json`` (user, under ``$GEMINI_CLI_HOME`` when set); Qwen Code from
``.qwen/settings.json`` and ``~/.qwen/settings.json`` (``$QWEN_HOME/settings.json`` when
set). All use the same shape (Gemini: other event names, timeouts in milliseconds)::

    {"hooks": {"PreToolUse": [{"matcher": "Bash",
                               "hooks": [{"type": "command", "command": "..."}]}]}}

Install appends one matcher group per event holding only our hook; the user's groups,
hooks and other settings are never modified (our own hook, installed by an older guards
with another matcher, is taken out of its group first, so it never runs twice).
Uninstall removes only hook entries whose command is ours (it runs
``guards.commands.agent_hook``), and a group or event list only when that left it empty.

GitHub Copilot CLI reads every ``.github/hooks/*.json`` of the project (in a folder it
trusts), flat lists without matchers, one command per event (its payloads name no
event, so the command does)::

    {"version": 1, "hooks": {"preToolUse": [{"type": "command", "bash": "...",
                                             "timeoutSec": 60}]}}

guards writes its own file there, ``.github/hooks/guards.json``, and never touches the
others; uninstall takes our entries out of it and removes it when nothing else is left.

Factory Droid reads ``.factory/hooks.json`` and ``~/.factory/hooks.json``: Claude's
groups with the event names at the top level (no ``"hooks"`` wrapper). Only where that
file is absent does it read the ``hooks`` key of the ``settings.json`` beside it: guards
writes into that key when it already holds hooks (a new hooks.json would silence them),
else into hooks.json, which uninstall removes when nothing is left in it.

opencode has no command hooks, only JavaScript plugins: guards writes its own plugin
file, ``.opencode/plugins/guards.js`` (guards.integrations.opencode_plugin).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
from collections.abc import Callable
from pathlib import Path
from typing import Any

from guards.errors import UsageError
from guards.fsutil import KEEP_MODE, atomic_write
from guards.git import process
from guards.integrations import hook_start, shell_gate
from guards.integrations.installation import (
    Step,
    python_launch,
    recorded_python,
    sh_prefers_recorded,
)

#: Recognises our hook commands, whichever python or spelling installed them.
OURS = re.compile(
    r'(?:guards\.commands\.agent_hook|guards agent-hook|"\$g" agent-hook) '
    r"(?:claude|codex|gemini|copilot|qwen|opencode|droid)\b"
)

#: event -> matcher (None: the event takes no matcher)
CLAUDE_EVENTS: dict[str, str | None] = {
    # Write tools too: a write over another writer's uncommitted file rescues it first.
    "PreToolUse": "Bash|Write|Edit|MultiEdit|NotebookEdit",
    "PostToolUse": "Bash|Write|Edit|MultiEdit|NotebookEdit",
    # Sent instead of PostToolUse after a failing command: its files still get attributed.
    "PostToolUseFailure": "Bash",
    "SessionStart": None,
    "UserPromptSubmit": None,
    # The end of each turn: persists the session's work when persist.on_stop is set.
    "Stop": None,
    "SessionEnd": None,
}
CODEX_EVENTS: dict[str, str | None] = {
    "PreToolUse": "Bash|apply_patch",
    "PostToolUse": "Bash|apply_patch",
    "SessionStart": None,
    "UserPromptSubmit": None,
    "Stop": None,
    "SessionEnd": None,
}
#: Gemini's matchers are regular expressions searched in the tool name: anchored.
GEMINI_EVENTS: dict[str, str | None] = {
    "BeforeTool": "^(run_shell_command|write_file|replace)$",
    "AfterTool": "^(run_shell_command|write_file|replace)$",
    "SessionStart": None,
    "BeforeAgent": None,
    "AfterAgent": None,
    "SessionEnd": None,
}
#: Copilot runs every hook for every tool (no matchers); the hook tells the tools apart.
COPILOT_EVENTS = (
    "preToolUse",
    "postToolUse",
    "sessionStart",
    "userPromptSubmitted",
    "agentStop",
    "sessionEnd",
)
#: Qwen Code: Claude's shape with its own tools (a matcher with ``^`` is a regex as is).
#: A tool that fails gets PostToolUseFailure instead of PostToolUse.
QWEN_TOOLS_MATCHER = "^(run_shell_command|write_file|edit)$"
QWEN_EVENTS: dict[str, str | None] = {
    "PreToolUse": QWEN_TOOLS_MATCHER,
    "PostToolUse": QWEN_TOOLS_MATCHER,
    "PostToolUseFailure": QWEN_TOOLS_MATCHER,
    "SessionStart": None,
    "UserPromptSubmit": None,
    "Stop": None,
    "SessionEnd": None,
}
#: Factory Droid: Claude's events (no PostToolUseFailure: a failing command gets no
#: PostToolUse either) with its own tools.
DROID_TOOLS_MATCHER = "Execute|Create|Edit|ApplyPatch"
DROID_EVENTS: dict[str, str | None] = {
    "PreToolUse": DROID_TOOLS_MATCHER,
    "PostToolUse": DROID_TOOLS_MATCHER,
    "SessionStart": None,
    "UserPromptSubmit": None,
    "Stop": None,
    "SessionEnd": None,
}
EVENTS = {
    "claude": CLAUDE_EVENTS,
    "codex": CODEX_EVENTS,
    "gemini": GEMINI_EVENTS,
    "qwen": QWEN_EVENTS,
    "droid": DROID_EVENTS,
}
#: Seconds the harness waits for us (a rescue of a large tree takes a while).
TIMEOUT = 60
#: Gemini counts hook timeouts in milliseconds.
TIMEOUT_UNIT = {"gemini": 1000}
#: Codex clamps a SessionEnd hook's timeout to 3 s, and says so as an error item.
EVENT_TIMEOUTS = {("codex", "SessionEnd"): 3}
FOLDERS = {
    "claude": (".claude", "settings.json"),
    "codex": (".codex", "hooks.json"),
    "gemini": (".gemini", "settings.json"),
    "copilot": (".github/hooks", "guards.json"),
    "qwen": (".qwen", "settings.json"),
    "opencode": (".opencode/plugins", "guards.js"),
    "droid": (".factory", "hooks.json"),
}
#: Droid's settings file, whose ``hooks`` key it reads when hooks.json is absent.
DROID_SETTINGS = "settings.json"


def hook_command(harness: str, event: str | None = None) -> str:
    """The command the harness runs: :func:`hook_script` wrapped in ``sh -c`` so that a
    harness that splits the command itself runs the same script as one that hands it to
    a shell. ``event``: Copilot's, named on the command line (its payloads name none)."""
    return f"sh -c {shlex.quote(hook_script(harness, event))}"


def event_command(harness: str, event: str) -> str:
    """The command of our entry for ``event``: the harness's tool-start event runs the
    shell gate first (guards.integrations.shell_gate: most shell lines need no Python); a
    prompt's starts the frame's git status (:func:`prompt_script`)."""
    if hook_start.hands_status(harness, event):
        return f"sh -c {shlex.quote(prompt_script(harness))}"
    if not shell_gate.gated(harness, event):
        return hook_command(harness)
    return f"sh -c {shlex.quote(shell_gate.gate_script(harness, hook_script(harness)))}"


def hook_script(harness: str, event: str | None = None) -> str:
    """The hook's shell script: the recorded python and our module (no argparse on the
    way) while that python still has this guards, else ``guards`` on PATH, else exit 2
    with one line (the harnesses block a tool call on 2 and show the line): never a
    silent pass."""
    py = shlex.quote(recorded_python())
    target = harness if event is None else f"{harness} {event}"
    return _with_fallback(harness, target, f"exec {py} {_launch(harness)} {target}")


def prompt_script(harness: str) -> str:
    """A prompt's hook script: as :func:`hook_script`, but its shell starts the frame's
    ``git status`` and pipes it to the Python on another descriptor (the event stays on
    stdin), so that git answers while Python starts instead of after
    (guards.git.process.handed_status). Without a real git to name, :func:`hook_script`."""
    try:
        git = process.real_git()
    except process.GitNotFoundError:
        return hook_script(harness)
    py = shlex.quote(recorded_python())
    fd = process.HANDED_STATUS_FD
    # The event's stdin goes round the pipe through descriptor 3 (a group's redirection
    # that fails is that group's error, not the shell's end).
    run = (
        f"{{ {process.handed_status_script(git)} 3<&- | {py} {_launch(harness)} "
        f"{harness} {hook_start.HANDED} {shlex.quote(git)} {fd}<&0 0<&3 3<&-; }} 3<&0; exit"
    )
    return _with_fallback(harness, harness, run)


def _launch(harness: str) -> str:
    # Exit 2 when guards cannot start: the harnesses block the tool call and show why.
    return python_launch("guards.commands.agent_hook:fast_main", f"guards: the {harness} hook", 2)


def _with_fallback(harness: str, target: str, run: str) -> str:
    """``run`` while the recorded python still has this guards, else ``guards`` on PATH
    with ``target``, else exit 2 with one line: never a silent pass."""
    py = shlex.quote(recorded_python())
    return (
        f"if {sh_prefers_recorded()}; then {run}; "
        f'fi; g=$(command -v guards) && exec "$g" agent-hook {target}; '
        f'echo "guards: the {harness} hook cannot run: guards is not installed any more '
        f"({py} is gone or lost it) and no guards is on PATH; reinstall git-guards, or "
        f'guards uninstall --{harness}" >&2; exit 2'
    )


#: Claude Code's personal project settings: read like settings.json, but never meant to be
#: committed (the hook command holds one person's interpreter path).
CLAUDE_LOCAL = "settings.local.json"


def settings_path(
    harness: str, scope: str, project_dir: Path | None, *, shared: bool = False
) -> Path:
    """Where ``harness`` reads hooks for ``scope`` ("project" or "user"). In a project,
    Claude Code's personal ``settings.local.json`` unless ``shared`` (the team's
    ``settings.json``); Codex and Gemini CLI have one project file."""
    folder, name = FOLDERS[harness]
    if harness == "claude" and scope == "project" and not shared:
        name = CLAUDE_LOCAL
    if scope == "user":
        if harness == "copilot":
            raise UsageError(
                "GitHub Copilot CLI hooks are installed per repository "
                "(.github/hooks/guards.json): leave out --user"
            )
        if harness == "codex" and os.environ.get("CODEX_HOME"):
            return Path(os.environ["CODEX_HOME"]) / name
        if harness == "gemini" and os.environ.get("GEMINI_CLI_HOME"):
            return Path(os.environ["GEMINI_CLI_HOME"]) / folder / name
        if harness == "qwen":
            return qwen_dir() / name
        if harness == "opencode":
            from guards.integrations.opencode_plugin import plugin_path

            return plugin_path("user", None)
        if harness == "droid":
            return droid_path(Path.home() / folder)
        return Path.home() / folder / name
    if project_dir is None:
        raise UsageError(f"--project needs a git repository (or use --user) for {harness}")
    if harness == "droid":
        return droid_path(project_dir / folder)
    return project_dir / folder / name


def droid_path(folder: Path) -> Path:
    """The file Droid reads hooks from in ``folder``: hooks.json, else a settings.json
    that holds hooks, else hooks.json (to be written)."""
    hooks_json = folder / FOLDERS["droid"][1]
    settings = folder / DROID_SETTINGS
    if hooks_json.exists() or not settings.is_file():
        return hooks_json
    with contextlib.suppress(UsageError):
        if read_settings(settings).get("hooks"):
            return settings
    return hooks_json


def hook_files(harness: str, scope: str, project_dir: Path | None) -> list[Path]:
    """Every file of ``scope`` that may hold our hooks (for uninstall and doctor): Claude
    Code's two project files, Droid's hooks.json and settings.json."""
    if harness == "droid":
        chosen = settings_path(harness, scope, project_dir)
        return [chosen.parent / FOLDERS["droid"][1], chosen.parent / DROID_SETTINGS]
    paths = [settings_path(harness, scope, project_dir, shared=flag) for flag in (False, True)]
    return list(dict.fromkeys(paths))


def is_flat(harness: str, path: Path) -> bool:
    """Whether ``path`` holds hook events at its top level (Droid's hooks.json)."""
    return harness == "droid" and path.name == FOLDERS["droid"][1]


def read_hooks(harness: str, path: Path) -> dict[str, Any]:
    """``path``'s document in the settings shape (``{"hooks": {...}}``)."""
    doc = read_settings(path)
    return {"hooks": doc} if is_flat(harness, path) else doc


def _flat(change: Callable[[dict[str, Any]], list[str]]) -> Callable[[dict[str, Any]], list[str]]:
    """``change`` of a settings document applied to a flat hooks document, in place."""

    def apply(doc: dict[str, Any]) -> list[str]:
        box: dict[str, Any] = {"hooks": dict(doc)}
        done = change(box)
        doc.clear()
        doc.update(box.get("hooks") or {})
        return done

    return apply


def is_ours(hook: object) -> bool:
    """Whether a hook entry runs our agent hook (Copilot's command is under ``bash``)."""
    if not isinstance(hook, dict):
        return False
    command = hook.get("command", hook.get("bash"))
    return isinstance(command, str) and bool(OURS.search(command))


def our_commands(doc: dict[str, Any]) -> list[str]:
    """The commands of our hook entries in a settings document, either shape."""
    hooks = doc.get("hooks")
    found: list[str] = []
    for entries in hooks.values() if isinstance(hooks, dict) else []:
        for entry in entries if isinstance(entries, list) else []:
            inner = entry.get("hooks") if isinstance(entry, dict) else None
            for h in inner if isinstance(inner, list) else [entry]:
                if is_ours(h):
                    found.append(str(h.get("command", h.get("bash"))))
    return found


def copilot_hook(event: str) -> dict[str, Any]:
    """Our Copilot hook entry for ``event``, exactly as install writes it."""
    return {"type": "command", "bash": hook_command("copilot", event), "timeoutSec": TIMEOUT}


def merge_copilot(doc: dict[str, Any]) -> list[str]:
    """Our hooks into our Copilot hooks file ``doc``, in place; returns the events that
    changed (entries of ours that differ are replaced, anything else is kept)."""
    doc.setdefault("version", 1)
    hooks = doc.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise UsageError('the hooks file has a "hooks" entry that is not an object')
    changed = []
    for event in COPILOT_EVENTS:
        entries = hooks.setdefault(event, [])
        if not isinstance(entries, list):
            raise UsageError(f'the hooks file has a "hooks.{event}" entry that is not a list')
        want = copilot_hook(event)
        if [h for h in entries if is_ours(h)] == [want]:
            continue
        entries[:] = [h for h in entries if not is_ours(h)] + [want]
        changed.append(event)
    return changed


def remove_copilot(doc: dict[str, Any]) -> list[str]:
    """Our hooks out of a Copilot hooks file ``doc``, in place; returns their events."""
    hooks = doc.get("hooks")
    if not isinstance(hooks, dict):
        return []
    removed = []
    for event in list(hooks):
        entries = hooks[event]
        if not isinstance(entries, list) or not any(is_ours(h) for h in entries):
            continue
        removed.append(event)
        rest = [h for h in entries if not is_ours(h)]
        if rest:
            hooks[event] = rest
        else:
            del hooks[event]
    if removed and not hooks:
        del doc["hooks"]
    return removed


def merge(doc: dict[str, Any], harness: str) -> list[str]:
    """Add our hooks to ``doc`` in place; returns the events it added to (or repaired)."""
    hooks = doc.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise UsageError('the settings file has a "hooks" entry that is not an object')
    added = []
    for event, matcher in EVENTS[harness].items():
        command = event_command(harness, event)
        groups = hooks.setdefault(event, [])
        if not isinstance(groups, list):
            raise UsageError(f'the settings file has a "hooks.{event}" entry that is not a list')
        ours = _ours_under(groups, matcher)
        if ours:
            # An older install's command (another interpreter, the old form), or a timeout
            # too short for a guard (a longer one is the user's choice): repaired.
            stale = [h for h in ours if h.get("command") != command]
            for h in stale:
                h["command"] = command
            short = [h for h in ours if _timeout_too_short(harness, event, h) is not None]
            for h in short:
                h["timeout"] = installed_hook(harness, event)["timeout"]
            if stale or short:
                added.append(event)
            continue
        # An older guards hooked this event with another matcher: ours moves, once.
        kept = []
        for g in groups:
            entries = g.get("hooks") if isinstance(g, dict) else None
            if not isinstance(entries, list) or not any(is_ours(h) for h in entries):
                kept.append(g)
                continue
            rest = [h for h in entries if not is_ours(h)]
            if rest:
                kept.append({**g, "hooks": rest})
        groups[:] = kept
        group: dict[str, Any] = {} if matcher is None else {"matcher": matcher}
        group["hooks"] = [installed_hook(harness, event)]
        groups.append(group)
        added.append(event)
    return added


def _ours_under(groups: list[Any], matcher: str | None) -> list[dict[str, Any]]:
    """Our hook entries in the matcher groups of one event whose matcher is ``matcher``."""
    return [
        h
        for g in groups
        if isinstance(g, dict) and g.get("matcher") == matcher
        for h in g.get("hooks") or []
        if is_ours(h)
    ]


def uncovered_events(harness: str, doc: dict[str, Any]) -> list[str]:
    """The events install hooks that ``doc`` (the settings shape) runs no hook of ours for
    under install's matcher: an older guards' install (Droid's before ApplyPatch), or one
    edited by hand. The tools such an event carries reach no guard, and the harness says
    nothing; install puts them right."""
    hooks = doc.get("hooks")
    hooks = hooks if isinstance(hooks, dict) else {}

    def listed(event: str) -> list[Any]:
        entries = hooks.get(event)
        return entries if isinstance(entries, list) else []

    if harness == "copilot":  # no matchers: hook entries straight under the event
        return [e for e in COPILOT_EVENTS if not any(is_ours(h) for h in listed(e))]
    return [e for e, matcher in EVENTS[harness].items() if not _ours_under(listed(e), matcher)]


#: Seconds below which a timeout of ours is too short for a guard to finish: the harness
#: gives up on the hook and runs the tool without waiting for it (seen with Gemini CLI
#: 0.61, whose ``hooks migrate --from-claude`` turns Claude's 60 s into 60 ms).
MIN_TIMEOUT = 10


def short_timeouts(harness: str, doc: dict[str, Any]) -> list[str]:
    """Our hook entries in ``doc`` whose timeout is shorter than a guard may need, as
    ``"EVENT (N ms)"`` or ``"EVENT (N s)"`` in the harness's own unit."""
    hooks = doc.get("hooks")
    short = []
    for event, groups in hooks.items() if isinstance(hooks, dict) else ():
        if not isinstance(groups, list):
            continue
        entries = [h for g in groups if isinstance(g, dict) for h in g.get("hooks") or []]
        if harness == "copilot":  # no matchers: hook entries straight under the event
            entries = groups
        for hook in entries:
            said = _timeout_too_short(harness, event, hook)
            if said is not None:
                short.append(f"{event} ({said})")
    return short


def _timeout_too_short(harness: str, event: str, hook: object) -> str | None:
    """``"N ms"`` / ``"N s"`` when ``hook`` is ours and times out below
    :data:`MIN_TIMEOUT` (or below what install writes, where that is less); None when it
    is long enough, or has none (the harness's default is long enough)."""
    if not is_ours(hook):
        return None
    assert isinstance(hook, dict)
    unit = TIMEOUT_UNIT.get(harness, 1)
    timeout = hook.get("timeoutSec" if harness == "copilot" else "timeout")
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)):
        return None
    floor = min(EVENT_TIMEOUTS.get((harness, event), TIMEOUT), MIN_TIMEOUT) * unit
    return f"{timeout:g} {'ms' if unit == 1000 else 's'}" if timeout < floor else None


def installed_hook(harness: str, event: str) -> dict[str, Any]:
    """Our hook entry for ``event``, exactly as install writes it."""
    timeout = EVENT_TIMEOUTS.get((harness, event), TIMEOUT) * TIMEOUT_UNIT.get(harness, 1)
    return {"type": "command", "command": event_command(harness, event), "timeout": timeout}


def remove(doc: dict[str, Any]) -> list[str]:
    """Take our hooks out of ``doc`` in place; returns the events they were in."""
    hooks = doc.get("hooks")
    if not isinstance(hooks, dict):
        return []
    removed = []
    for event in list(hooks):
        groups = hooks[event]
        if not isinstance(groups, list):
            continue
        kept_groups = []
        for group in groups:
            entries = group.get("hooks") if isinstance(group, dict) else None
            if not isinstance(entries, list) or not any(is_ours(h) for h in entries):
                kept_groups.append(group)
                continue
            removed.append(event)
            rest = [h for h in entries if not is_ours(h)]
            if rest:
                kept_groups.append({**group, "hooks": rest})
        if kept_groups:
            hooks[event] = kept_groups
        else:
            del hooks[event]
    if removed and not hooks:
        del doc["hooks"]
    return sorted(set(removed), key=removed.index)


def read_settings(path: Path, *, comment_lines: bool = False) -> dict[str, Any]:
    """A settings file's JSON object ({} when absent or empty); ``comment_lines``: lines
    starting with ``//`` are left out first (Copilot's config.json)."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except OSError as e:
        raise UsageError(f"cannot read {path}: {e.strerror}") from e
    if comment_lines:
        text = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("//"))
    if not text.strip():
        return {}
    try:
        doc = json.loads(text)
    except ValueError as e:
        raise UsageError(f"{path} is not valid JSON ({e}); fix it first, guards will not") from e
    if not isinstance(doc, dict):
        raise UsageError(f"{path} does not hold a JSON object; guards leaves it alone")
    return doc


def write_settings(path: Path, doc: dict[str, Any]) -> None:
    """Atomically, keeping the file's permissions (the user's file, not guards')."""
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, (json.dumps(doc, indent=2) + "\n").encode("utf-8"), mode=KEEP_MODE)


#: Qwen Code 0.24 writes ``"$version": 4`` into a settings file that has none when it
#: starts (a committed project file would turn dirty, of unknown owner): written at once.
QWEN_SETTINGS_VERSION = 4


def _merge_for(harness: str) -> Callable[[dict[str, Any]], list[str]]:
    def change(doc: dict[str, Any]) -> list[str]:
        events = merge(doc, harness)
        if harness == "qwen" and events:
            doc.setdefault("$version", QWEN_SETTINGS_VERSION)
        return events

    return change


def plan_install(harness: str, path: Path) -> list[Step]:
    if is_flat(harness, path):
        return _plan_flat(harness, path, install=True)
    if harness == "copilot":
        return _plan_copilot(path, install=True)
    if harness == "opencode":
        from guards.integrations import opencode_plugin

        text = opencode_plugin.plugin_text(hook_script("opencode"), TIMEOUT)
        return opencode_plugin.plan_install(path, text)
    doc = read_settings(path)
    events = _merge_for(harness)(doc)
    if not events:
        return []
    return [
        Step(
            f"add the guards {harness} hooks ({', '.join(events)}) to {path}",
            _writer(path, _merge_for(harness)),
        )
    ]


def plan_uninstall(harness: str, path: Path) -> list[Step]:
    if is_flat(harness, path):
        return _plan_flat(harness, path, install=False)
    if harness == "copilot":
        return _plan_copilot(path, install=False)
    if harness == "opencode":
        from guards.integrations import opencode_plugin

        return opencode_plugin.plan_uninstall(path)
    doc = read_settings(path) if path.exists() else {}
    events = remove(doc)
    if not events:
        return []
    return [
        Step(
            f"remove the guards {harness} hooks ({', '.join(events)}) from {path}",
            _writer(path, remove),
        )
    ]


def _plan_copilot(path: Path, *, install: bool) -> list[Step]:
    """Our own ``.github/hooks/guards.json``: written, or our entries taken out of it and
    the file removed when nothing but its version is left."""
    change = merge_copilot if install else remove_copilot
    doc = read_settings(path) if install or path.exists() else {}
    events = change(doc)
    if not events:
        return []

    def apply() -> None:
        doc = read_settings(path)  # again: the file may have changed since the plan
        change(doc)
        if install or set(doc) - {"version"}:
            write_settings(path, doc)
        else:
            path.unlink(missing_ok=True)
            with contextlib.suppress(OSError):  # the folders install made, if now empty
                path.parent.rmdir()
                path.parent.parent.rmdir()

    if install:
        what = f"add the guards copilot hooks ({', '.join(events)}) to {path}"
    else:
        what = f"remove the guards copilot hooks ({', '.join(events)}) from {path}"
    return [Step(what, apply)]


def _plan_flat(harness: str, path: Path, *, install: bool) -> list[Step]:
    """Droid's hooks.json: our groups merged in, or taken out and the file removed when
    nothing is left (an empty hooks.json would still hide settings.json's hooks)."""
    change = _flat(_merge_for(harness) if install else remove)
    doc = read_settings(path) if install or path.exists() else {}
    events = change(doc)
    if not events:
        return []

    def apply() -> None:
        doc = read_settings(path)  # again: the file may have changed since the plan
        change(doc)
        if doc or install:
            write_settings(path, doc)
        else:
            path.unlink(missing_ok=True)

    if install:
        what = f"add the guards {harness} hooks ({', '.join(events)}) to {path}"
    else:
        what = f"remove the guards {harness} hooks ({', '.join(events)}) from {path}"
    return [Step(what, apply)]


def _writer(path: Path, change: Callable[[dict[str, Any]], object]) -> Callable[[], None]:
    def apply() -> None:
        doc = read_settings(path)  # again: the file may have changed since the plan
        change(doc)
        write_settings(path, doc)

    return apply


# -- Gemini CLI's folder trust ------------------------------------------------------------

#: Gemini CLI runs no settings hooks at all (the user's neither) in an untrusted folder,
#: and headless it refuses to start there.
TRUST_LEVELS = ("TRUST_FOLDER", "TRUST_PARENT", "DO_NOT_TRUST")


def gemini_home() -> Path:
    return Path(os.environ.get("GEMINI_CLI_HOME") or Path.home())


def trusted_folders_path() -> Path:
    override = os.environ.get("GEMINI_CLI_TRUSTED_FOLDERS_PATH")
    return Path(override) if override else gemini_home() / ".gemini" / "trustedFolders.json"


def gemini_trusts(project: Path) -> bool | None:
    """Whether Gemini CLI trusts ``project`` as its rules say (the user's
    ``security.folderTrust.enabled`` false: every folder; else the longest matching rule
    of trustedFolders.json); None: no rule, so untrusted."""
    try:
        settings = read_settings(gemini_home() / ".gemini" / "settings.json")
    except UsageError:
        settings = {}
    security = settings.get("security")
    folder_trust = security.get("folderTrust") if isinstance(security, dict) else None
    if isinstance(folder_trust, dict) and folder_trust.get("enabled") is False:
        return True
    try:
        rules = read_settings(trusted_folders_path())
    except UsageError:
        return None
    return _rules_verdict(rules, project)


def _rules_verdict(rules: dict[str, Any], project: Path) -> bool | None:
    """Gemini's and Qwen's trustedFolders.json: the longest rule that holds ``project``
    decides (``TRUST_PARENT``: the rule's parent folder); None: no rule holds it."""
    target = os.path.realpath(project)
    best, verdict = -1, None
    for rule, level in rules.items():
        if level not in TRUST_LEVELS:
            continue
        base = os.path.dirname(rule) if level == "TRUST_PARENT" else rule
        base = os.path.realpath(os.path.expanduser(base))
        inside = target == base or target.startswith(base.rstrip(os.sep) + os.sep)
        if inside and len(rule) > best:
            best, verdict = len(rule), level != "DO_NOT_TRUST"
    return verdict


def gemini_trust_problem(project: Path) -> str | None:
    """What stops Gemini CLI from running our hooks in ``project``, with the one step that
    fixes it; None when the folder is trusted."""
    if gemini_trusts(project):
        return None
    return (
        f"Gemini CLI does not trust {project}: it runs no hooks there (and headless it will "
        f'not start). Trust it: add "{project}": "TRUST_FOLDER" to {trusted_folders_path()} '
        "(or answer the trust prompt of an interactive `gemini` there; headless runs can "
        "set GEMINI_CLI_TRUST_WORKSPACE=true)"
    )


# -- Qwen Code's folder trust ---------------------------------------------------------------

#: Qwen Code's folder trust is off unless ``security.folderTrust.enabled`` is true in the
#: system or user settings; when on, an untrusted folder's ``.qwen/settings.json`` is
#: ignored (the user's hooks still run).
QWEN_SYSTEM_SETTINGS = "/etc/qwen-code/settings.json"


def qwen_dir() -> Path:
    """``$QWEN_HOME`` (the folder itself), else ``~/.qwen``."""
    home = os.environ.get("QWEN_HOME")
    return Path(os.path.expanduser(home)).absolute() if home else Path.home() / ".qwen"


def qwen_trusted_folders_path() -> Path:
    override = os.environ.get("QWEN_CODE_TRUSTED_FOLDERS_PATH")
    return Path(override) if override else qwen_dir() / "trustedFolders.json"


def _qwen_folder_trust_on() -> bool:
    enabled: object = None
    system = os.environ.get("QWEN_CODE_SYSTEM_SETTINGS_PATH") or QWEN_SYSTEM_SETTINGS
    for path in (Path(system), qwen_dir() / "settings.json"):  # the system's wins
        try:
            settings = read_settings(path)
        except UsageError:
            continue
        security = settings.get("security")
        trust = security.get("folderTrust") if isinstance(security, dict) else None
        if enabled is None and isinstance(trust, dict) and "enabled" in trust:
            enabled = trust["enabled"]
    return enabled is True


def qwen_trust_problem(project: Path) -> str | None:
    """What stops Qwen Code from reading our hooks in ``project``'s ``.qwen/settings.json``,
    with the one step that fixes it; None when it reads them."""
    if not _qwen_folder_trust_on():
        return None
    try:
        rules = read_settings(qwen_trusted_folders_path())
    except UsageError:
        rules = {}
    if _rules_verdict(rules, project):
        return None
    return (
        f"Qwen Code's folder trust is on and it does not trust {project}: it ignores "
        f"{project / '.qwen' / 'settings.json'} there, guards' hooks included. Trust it: add "
        f'"{project}": "TRUST_FOLDER" to {qwen_trusted_folders_path()} (or answer the trust '
        "prompt of an interactive `qwen` there), or install with --user"
    )


# -- GitHub Copilot CLI's folder trust ------------------------------------------------------

#: Copilot CLI 1.0.102, observed: in a folder it does not trust it loads no repository
#: hooks and, headless with ``--allow-all``, still runs every shell command: a
#: ``git reset --hard`` there destroys other writers' work without a word. Trust is
#: ``trustedFolders`` in ``$COPILOT_HOME/config.json`` (``~/.copilot``; not under
#: ``$XDG_CONFIG_HOME``, whatever its documentation says); a folder trusts everything
#: below it. Copilot still reads the documented ``trusted_folders`` (and rewrites it as
#: ``trustedFolders``), and ignores both in ``settings.json``.
COPILOT_TRUST_KEYS = ("trustedFolders", "trusted_folders")


def copilot_dir() -> Path:
    """``$COPILOT_HOME`` (the folder itself), else ``~/.copilot``."""
    home = os.environ.get("COPILOT_HOME")
    return Path(os.path.expanduser(home)).absolute() if home else Path.home() / ".copilot"


def copilot_config_path() -> Path:
    return copilot_dir() / "config.json"


def copilot_trusts(project: Path) -> bool:
    """Whether a folder of Copilot's ``trustedFolders`` holds ``project`` (or
    ``COPILOT_ALLOW_ALL=true``, which trusts every folder, is set here)."""
    if os.environ.get("COPILOT_ALLOW_ALL") == "true":
        return True
    target = os.path.realpath(project)
    for key in COPILOT_TRUST_KEYS:
        # below the "//" lines Copilot writes ("This file is managed automatically")
        folders = read_settings(copilot_config_path(), comment_lines=True).get(key)
        for folder in folders if isinstance(folders, list) else ():
            if not isinstance(folder, str) or not folder:
                continue
            base = os.path.realpath(os.path.expanduser(folder))
            if target == base or target.startswith(base.rstrip(os.sep) + os.sep):
                return True
    return False


def copilot_trust_problem(project: Path) -> str | None:
    """What stops GitHub Copilot CLI from running our hooks in ``project``, with the one
    step that fixes it; None when it trusts the folder. A config.json guards cannot read
    is a problem too: it cannot tell that the hooks will run."""
    config = copilot_config_path()
    try:
        if copilot_trusts(project):
            return None
        why = f"GitHub Copilot CLI does not trust {project}"
    except UsageError as e:
        why = f"cannot tell whether GitHub Copilot CLI trusts {project} ({e})"
    return (
        f"{why}: there it loads no repository hooks, guards' included, and still runs the "
        "model's shell commands (a `git reset --hard` destroys other writers' work without "
        f'a word). Trust it: add "{project}" to "trustedFolders" in {config} (or answer '
        'the trust prompt of an interactive `copilot` there with "this and future '
        'sessions"; headless runs can set COPILOT_ALLOW_ALL=true)'
    )
