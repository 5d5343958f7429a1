"""Codex's trust in our hooks, read and (on the user's say-so) written.

Codex runs a hook only when ``$CODEX_HOME/config.toml`` (default ``~/.codex``) holds
``[hooks.state."<abs hooks.json path>:<event>:<group>:<handler>"] trusted_hash =
"sha256:…"`` equal to the hook's current hash, and reads a project's ``.codex/`` only
when it holds ``[projects."<root>"] trust_level = "trusted"``; anything else is skipped
without a word. The hash, as Codex 0.171 computes it (``codex-rs/hooks``,
``command_hook_hash`` and ``codex-rs/config`` ``version_for_toml``): SHA-256 of the
compact JSON, keys sorted, of ``{"event_name": <snake_case event>, "matcher": <matcher,
absent for events without one>, "hooks": [<the handler with its timeout filled in>]}``.
It covers the command, so a reinstall from another interpreter changes it.

Its shell commands run as ``bash -lc``: ``/etc/profile`` resets PATH and a git shim first
on PATH is gone, unless the top-level ``allow_login_shell = false``.

config.toml is the user's file, with their comments: we change it by a text edit of our
own tables only, parse the result and compare it with what the edit meant before an
atomic write; a file we cannot read or edit that way is refused with the lines to add.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from guards.errors import UsageError
from guards.fsutil import KEEP_MODE, atomic_write
from guards.integrations.installation import Step, read_manifest, user_manifest_path

#: Events whose matcher Codex ignores (it leaves them out of the hash too).
NO_MATCHER = frozenset({"UserPromptSubmit", "Stop", "StopFailure", "SessionEnd"})
#: Codex's default hook timeout, in seconds.
DEFAULT_TIMEOUT = 600


def codex_home() -> Path:
    """``$CODEX_HOME`` (Codex resolves it: symlinks followed) or ``~/.codex``."""
    env = os.environ.get("CODEX_HOME")
    return Path(os.path.realpath(env)) if env else Path.home() / ".codex"


def config_path() -> Path:
    return codex_home() / "config.toml"


def hook_hash(event: str, matcher: str | None, handler: dict[str, Any]) -> str:
    """The ``currentHash`` Codex gives a command hook of ``event`` in a group with
    ``matcher``."""
    timeout = handler.get("timeout")
    normalized: dict[str, Any] = {
        "type": "command",
        "command": handler.get("command"),
        "timeout": max(int(timeout) if isinstance(timeout, int) else DEFAULT_TIMEOUT, 1),
        "async": bool(handler.get("async", False)),
    }
    if isinstance(handler.get("statusMessage"), str):
        normalized["statusMessage"] = handler["statusMessage"]
    identity: dict[str, Any] = {"event_name": event_label(event), "hooks": [normalized]}
    if matcher is not None and event not in NO_MATCHER:
        identity["matcher"] = matcher
    text = json.dumps(identity, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def event_label(event: str) -> str:
    """``PreToolUse`` -> ``pre_tool_use``, as Codex names events in hook keys."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", event).lower()


@dataclass(frozen=True)
class OurHook:
    #: Codex's key for it under ``[hooks.state]``
    key: str
    #: the hash Codex will compare the trusted one with
    hash: str


def key_source(hooks_path: Path) -> str:
    """The path Codex puts in the keys of the hooks of ``hooks_path``."""
    if os.environ.get("CODEX_HOME") and hooks_path.parent == Path(os.environ["CODEX_HOME"]):
        return str(codex_home() / hooks_path.name)
    return str(hooks_path)


def our_hooks(doc: dict[str, Any], hooks_path: Path, *, exact: bool = False) -> list[OurHook]:
    """Our hooks in ``doc`` (the hooks.json read from ``hooks_path``), keyed and hashed
    as Codex does: by their event, group and handler positions. ``exact``: only those
    exactly as install writes them (a project's hooks.json comes with the repository:
    an entry that merely looks like ours, another command or ``async``, is never
    trusted on our say-so)."""
    from guards.integrations.harness_settings import is_ours

    if exact:
        from guards.integrations.harness_settings import installed_hook

        def fits(event: str, handler: object) -> bool:
            return handler == installed_hook("codex", event)

    else:

        def fits(event: str, handler: object) -> bool:
            return is_ours(handler)

    source = key_source(hooks_path)
    hooks = doc.get("hooks")
    found = []
    for event, groups in hooks.items() if isinstance(hooks, dict) else []:
        for g, group in enumerate(groups if isinstance(groups, list) else []):
            entries = group.get("hooks") if isinstance(group, dict) else None
            matcher = group.get("matcher") if isinstance(group, dict) else None
            for h, handler in enumerate(entries if isinstance(entries, list) else []):
                if fits(event, handler):
                    found.append(
                        OurHook(
                            f"{source}:{event_label(event)}:{g}:{h}",
                            hook_hash(
                                event, matcher if isinstance(matcher, str) else None, handler
                            ),
                        )
                    )
    return found


def trust_root(toplevel: Path, common_dir: Path) -> Path:
    """The path Codex looks up under ``[projects]``: a linked worktree counts as its main
    checkout (the folder holding the common git directory)."""
    if (toplevel / ".git").is_dir():
        return toplevel
    return Path(os.path.realpath(common_dir)).parent


# -- reading config.toml -------------------------------------------------------------------


def _tomllib() -> Any:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - exercised on 3.10 only
        import tomli as tomllib
    return tomllib


def read_config(path: Path) -> tuple[str, dict[str, Any]]:
    """The text of Codex's config.toml and what it says ("" and {} when there is none)."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return "", {}
    except (OSError, UnicodeDecodeError) as e:
        raise UsageError(f"cannot read {path}: {getattr(e, 'strerror', None) or e}") from e
    try:
        doc: dict[str, Any] = _tomllib().loads(text)
    except _tomllib().TOMLDecodeError as e:
        raise UsageError(f"{path} is not valid TOML ({e}); fix it first, guards will not") from e
    return text, doc


def _table(doc: dict[str, Any], *path: str) -> dict[str, Any]:
    for part in path:
        value = doc.get(part)
        if not isinstance(value, dict):
            return {}
        doc = value
    return doc


@dataclass(frozen=True)
class Trust:
    """How Codex will treat our hooks of one hooks.json."""

    hooks: list[OurHook]
    #: never trusted
    untrusted: list[OurHook]
    #: trusted once, changed since (another interpreter, another guards)
    changed: list[OurHook]
    #: turned off by the user (``enabled = false``): theirs to decide (install leaves
    #: them off), reported as the problem it is
    disabled: list[OurHook]
    #: the project whose .codex/ holds them is not trusted (None: user hooks)
    untrusted_project: Path | None
    #: a git shim is installed, and Codex's login shell would lose it
    login_shell_hides_shim: bool

    @property
    def inert(self) -> bool:
        return bool(self.untrusted or self.changed or self.untrusted_project)


def assess(
    doc: dict[str, Any],
    hooks_path: Path,
    project: Path | None,
    config: dict[str, Any],
    *,
    shim: bool = False,
    exact: bool = False,
) -> Trust:
    """``shim``: a git shim is being installed too; ``exact``: see :func:`our_hooks`."""
    hooks = our_hooks(doc, hooks_path, exact=exact)
    states = _table(config, "hooks", "state")
    untrusted, changed, disabled = [], [], []
    for hook in hooks:
        state = states.get(hook.key)
        state = state if isinstance(state, dict) else {}
        if state.get("enabled") is False:
            disabled.append(hook)
        trusted = state.get("trusted_hash")
        if trusted is None:
            untrusted.append(hook)
        elif trusted != hook.hash:
            changed.append(hook)
    untrusted_project = None
    if project is not None and hooks:
        level = _table(config, "projects", str(project)).get("trust_level")
        if level != "trusted":
            untrusted_project = project
    return Trust(
        hooks,
        untrusted,
        changed,
        disabled,
        untrusted_project,
        bool(hooks) and (shim or shim_installed()) and config.get("allow_login_shell") is not False,
    )


def shim_installed() -> bool:
    """A git shim written by ``guards install --shim`` is still there."""
    shims = read_manifest(user_manifest_path()).get("shims", [])
    return any(isinstance(d, str) and os.path.isfile(os.path.join(d, "git")) for d in shims)


def problems(trust: Trust, hooks_path: Path, fix: str) -> list[tuple[str, str, str]]:
    """Each reason Codex will not run our hooks of ``hooks_path`` (or not see the shim):
    (a check id, what is wrong, the step that fixes it)."""
    out = []
    n = len(trust.hooks)
    if trust.changed:
        out.append(
            (
                "codex-hooks-changed",
                f"Codex no longer trusts {len(trust.changed)} of guards' {n} hooks in "
                f"{hooks_path}: they changed since they were trusted (reinstalled from another "
                "interpreter?) and Codex skips them without a word",
                fix,
            )
        )
    if trust.untrusted:
        out.append(
            (
                "codex-hooks-untrusted",
                f"Codex does not trust {len(trust.untrusted)} of guards' {n} hooks in "
                f"{hooks_path} and skips them without a word",
                f"{fix} (or review them in Codex's /hooks)",
            )
        )
    if trust.untrusted_project is not None:
        out.append(
            (
                "codex-project-untrusted",
                f"Codex does not trust the project {trust.untrusted_project}: it reads none of "
                "its .codex/, guards' hooks included",
                fix,
            )
        )
    if trust.disabled:
        out.append(
            (
                "codex-hooks-disabled",
                f"{len(trust.disabled)} of guards' Codex hooks in {hooks_path} are turned off "
                f"(enabled = false in {config_path()}): Codex skips them",
                f"remove their enabled = false from {config_path()}",
            )
        )
    if trust.login_shell_hides_shim:
        out.append(
            (
                "codex-login-shell",
                "Codex runs shell commands as `bash -lc`, whose /etc/profile resets PATH: "
                "the git shim is not on it there",
                f"{fix} (it sets allow_login_shell = false in {config_path()})",
            )
        )
    return out


# -- writing config.toml --------------------------------------------------------------------

#: (table path, key, value): one assignment the edit makes
Change = tuple[tuple[str, ...], str, Any]


def trust_changes(trust: Trust) -> list[Change]:
    changes: list[Change] = [
        (("hooks", "state", hook.key), "trusted_hash", hook.hash)
        for hook in [*trust.untrusted, *trust.changed]
    ]
    if trust.untrusted_project is not None:
        changes.append((("projects", str(trust.untrusted_project)), "trust_level", "trusted"))
    if trust.login_shell_hides_shim:
        changes.append(((), "allow_login_shell", False))
    return changes


def describe(trust: Trust, path: Path) -> str:
    parts = []
    if trust.untrusted or trust.changed:
        again = " again" if trust.changed and not trust.untrusted else ""
        parts.append(
            f"trust guards' {len(trust.untrusted) + len(trust.changed)} Codex hooks{again}"
        )
    if trust.untrusted_project is not None:
        parts.append(f"trust the project {trust.untrusted_project}")
    if trust.login_shell_hides_shim:
        parts.append(
            "set allow_login_shell = false (Codex's `bash -lc` would reset PATH and lose "
            "the git shim)"
        )
    return f"{', '.join(parts)} in {path}"


def plan_trust(
    hooks_path: Path, project: Path | None, doc: dict[str, Any], *, shim: bool = False
) -> list[Step]:
    """Trust our hooks of ``hooks_path`` (``doc``: that file as install leaves it), the
    project, and keep the shim on PATH in Codex's shell; nothing of the user's."""
    path = config_path()
    _text, config = read_config(path)
    trust = assess(doc, hooks_path, project, config, shim=shim, exact=True)
    if not trust_changes(trust):
        return []

    def apply() -> None:
        from guards.integrations.harness_settings import read_settings

        # again: the hooks were just written, the config may have changed since the plan
        text, config = read_config(path)
        doc = read_settings(hooks_path)
        now = assess(doc, hooks_path, project, config, shim=shim, exact=True)
        write_config(path, text, config, trust_changes(now))

    return [Step(describe(trust, path), apply)]


def write_config(path: Path, text: str, config: dict[str, Any], changes: list[Change]) -> None:
    new_text = edit(text, changes)
    expected = copy.deepcopy(config)
    for table, key, value in changes:
        target = expected
        for part in table:
            target = target.setdefault(part, {})
        target[key] = value
    try:
        ok = _tomllib().loads(new_text) == expected
    except _tomllib().TOMLDecodeError:
        ok = False
    if not ok:
        lines = "; ".join(_assignment_lines(changes))
        raise UsageError(
            f"cannot add guards' Codex trust to {path} without rewriting what is there; "
            f"add it yourself: {lines}"
        )
    real = Path(os.path.realpath(path))  # a symlinked config stays a symlink
    real.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(real, new_text.encode("utf-8"), mode=KEEP_MODE)


def _assignment_lines(changes: list[Change]) -> list[str]:
    return [
        (f"{_header(table)} " if table else "(top level) ") + f"{key} = {_value(value)}"
        for table, key, value in changes
    ]


def edit(text: str, changes: list[Change]) -> str:
    """``text`` with each change made in place: the key's line replaced, or added to its
    table, or the table added at the end; every other line as it was."""
    lines = text.splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    for table, key, value in changes:
        _set(lines, table, key, value)
    return "".join(lines)


def _set(lines: list[str], table: tuple[str, ...], key: str, value: Any) -> None:
    assignment = f"{_key(key)} = {_value(value)}\n"
    headers = [(i, p) for i, p in ((i, _header_path(line)) for i, line in enumerate(lines)) if p]
    if table:
        starts = [i for i, p in headers if p == table]
        if not starts:
            if lines and lines[-1].strip():
                lines.append("\n")
            lines += [_header(table) + "\n", assignment]
            return
        start = starts[0] + 1
    else:
        start = 0
    end = next((i for i, _p in headers if i >= start), len(lines))
    pattern = re.compile(rf"\s*{re.escape(_key(key))}\s*=")
    for i in range(start, end):
        if pattern.match(lines[i]):
            lines[i] = assignment
            return
    if not table:
        # before the first table, after the user's top-level lines
        while end > start and not lines[end - 1].strip():
            end -= 1
    lines.insert(end if not table else start, assignment)


def _header_path(line: str) -> tuple[str, ...] | None:
    """The table a ``[header]`` line opens (``("[[",)`` for an array of tables: a
    boundary we never match); None for any other line."""
    stripped = line.strip()
    if not stripped.startswith("["):
        return None
    if stripped.startswith("[["):
        return ("[[",)
    try:
        doc = _tomllib().loads(stripped)
    except _tomllib().TOMLDecodeError:
        return None
    path: list[str] = []
    while isinstance(doc, dict) and len(doc) == 1:
        ((name, doc),) = doc.items()
        path.append(name)
    return tuple(path) if path and doc == {} else None


def _key(part: str) -> str:
    return part if re.fullmatch(r"[A-Za-z0-9_-]+", part) else _string(part)


def _header(table: tuple[str, ...]) -> str:
    return "[" + ".".join(_key(p) for p in table) + "]"


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return _string(str(value))


def _string(s: str) -> str:
    """A TOML basic string."""
    escapes = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\t": "\\t", "\r": "\\r"}
    out = []
    for ch in s:
        if ch in escapes:
            out.append(escapes[ch])
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


# -- uninstall: our trust goes with our hooks ---------------------------------------------


def plan_untrust(hooks_path: Path) -> list[Step]:
    """Take out the ``trusted_hash`` entries that trust our hooks of ``hooks_path`` (read
    now, before uninstall removes them); an entry the user changed since is theirs. The
    project's trust_level and allow_login_shell stay: the user may rely on them for more
    than guards (uninstall says so)."""
    from guards.integrations.harness_settings import read_settings

    if not hooks_path.is_file():
        return []
    path = config_path()
    _text, config = read_config(path)
    states = _table(config, "hooks", "state")
    ours = {
        h.key: h.hash
        for h in our_hooks(read_settings(hooks_path), hooks_path)
        if _table(states, h.key).get("trusted_hash") == h.hash
    }
    if not ours:
        return []

    def apply() -> None:
        text, config = read_config(path)
        states = _table(config, "hooks", "state")
        keys = [k for k, v in ours.items() if _table(states, k).get("trusted_hash") == v]
        if keys:
            drop_trust(path, text, config, keys)

    return [
        Step(
            f"remove Codex's trust in guards' {len(ours)} hooks from {path} (the project's "
            "trust_level and allow_login_shell stay)",
            apply,
        )
    ]


def drop_trust(path: Path, text: str, config: dict[str, Any], keys: list[str]) -> None:
    lines = text.splitlines(keepends=True)
    for key in keys:
        _unset(lines, ("hooks", "state", key), "trusted_hash")
    new_text = "".join(lines)
    expected = copy.deepcopy(config)
    for key in keys:
        state = expected["hooks"]["state"][key]
        del state["trusted_hash"]
    try:
        ok = _pruned(_tomllib().loads(new_text)) == _pruned(expected)
    except _tomllib().TOMLDecodeError:
        ok = False
    if not ok:
        raise UsageError(
            f"cannot take guards' Codex trust out of {path} without rewriting what is there; "
            f"remove trusted_hash from its [hooks.state] tables of {listing_keys(keys)} yourself"
        )
    atomic_write(Path(os.path.realpath(path)), new_text.encode("utf-8"), mode=KEEP_MODE)


def listing_keys(keys: list[str]) -> str:
    return ", ".join(_string(k) for k in keys)


def _unset(lines: list[str], table: tuple[str, ...], key: str) -> None:
    """Remove ``key`` from ``table``, and the table's header when nothing else is left
    in it (comments and blank lines are not left behind without their table)."""
    headers = [i for i, line in enumerate(lines) if _header_path(line)]
    starts = [i for i in headers if _header_path(lines[i]) == table]
    if not starts:
        return
    start = starts[0]
    end = next((i for i in headers if i > start), len(lines))
    pattern = re.compile(rf"\s*{re.escape(_key(key))}\s*=")
    body = [i for i in range(start + 1, end) if pattern.match(lines[i])]
    if not body:
        return
    rest = [
        line
        for i, line in enumerate(lines[start + 1 : end], start + 1)
        if i not in body and line.strip() and not line.strip().startswith("#")
    ]
    if rest:
        del lines[body[0]]
    else:
        del lines[start:end]


def _pruned(value: Any) -> Any:
    """``value`` without empty tables (a table we emptied may vanish or stay)."""
    if isinstance(value, dict):
        kept = {k: _pruned(v) for k, v in value.items()}
        return {k: v for k, v in kept.items() if v != {}}
    return value
