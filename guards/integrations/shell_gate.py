"""The shell gate: the agent hook's answer to a shell line that needs no Python.

Most shell lines an agent runs (``ls``, ``npm test``, ``pytest -q``) neither mention
git nor name a command that destroys files: the hook only has to keep the line's start
(guards.integrations.agent_hooks: observed attribution), and a Python start-up costs
more than the rest of that answer. The hook command of a harness's tool-start event
therefore begins with a POSIX ``sh`` test of the event as the harness sent it. When it
is sure of the answer, the shell writes the line's start marker itself, exits 0 and no
Python runs; whenever it is not sure, the event goes to Python untouched.

The shell is sure only of a short (:data:`MAX_EVENT`), compact JSON event holding no
backslash at all (then no string in it holds an escaped quote, a newline or a ``\\u``
escape, so a value ends at the next quote), each key it reads in it once, naming the
harness's tool-start event and shell tool, whose command holds no ``git`` in any case,
no ``>`` and no word :func:`names_destroyer` would name (split on the same characters),
with an absolute ``cwd`` (no ``.`` or ``..`` part) inside a checkout whose ``.git`` is a
directory and whose ``<.git>/guards/observe`` exists, and no ``directory``,
``dir_path`` or ``workdir`` that would move the line elsewhere. The marker it writes is
the raw event, ``_shell.<pid>-<n>.json`` (no session id starts with ``_``); the line's
end (Python) reads such markers as the events they hold (:func:`pending`), and the
marker's change time is the line's start, as for the markers Python writes. (A file the
line changes within the marker's own clock tick, 4 ms at HZ=250, would stay unknown:
safe, and not seen in practice, where the real harnesses start the line 12-29 ms after
the hook answered, measured with the e2e suite's CLIs.)

The folder ``observe`` is made by the session's start and prompts (Python), so the
first line of a session already goes without Python.

The facts the shell tests are this package's own (the destroyers, the separators, the
event and tool names), written into the script when guards installs the hook.
"""

from __future__ import annotations

import os

from guards.predict.shell_files import DESTROYERS, SEPARATORS
from guards.state.observation import OBSERVE_DIR

#: harness -> (its tool-start event, its shell tool), as its payloads name them.
GATED = {
    "claude": ("PreToolUse", "Bash"),
    "codex": ("PreToolUse", "Bash"),
    "gemini": ("BeforeTool", "run_shell_command"),
    "qwen": ("PreToolUse", "run_shell_command"),
    "droid": ("PreToolUse", "Execute"),
}
#: The name of a start marker the shell wrote: ``_shell.<pid>-<n>.json``.
PENDING_PREFIX = "_shell."
#: Keys that move where a line runs (Qwen's, Gemini's, Codex's): Python reads those.
_ELSEWHERE = ("directory", "dir_path", "workdir")
#: The longest event (characters) the shell reads itself; a longer one goes to Python.
MAX_EVENT = 4096
#: Names the shell tries for its marker before it leaves the event to Python.
_TRIES = 8


def gated(harness: str, event: str) -> bool:
    """Whether ``harness``'s hook command for ``event`` starts with the gate."""
    return harness in GATED and GATED[harness][0] == event


def gate_script(harness: str, fallback: str) -> str:
    """The hook script with the gate: the event read from stdin, answered by the shell
    when it is sure, else handed to ``fallback`` (the ordinary script) on its stdin."""
    # Without cat (a harness's odd PATH) the event is still on stdin: for the script.
    return (
        f"{_gate_function(harness)} if _gp=$(cat); then if _guards_gate; then exit 0; fi; "
        f"printf '%s' \"$_gp\" | {{ {fallback}; }}; exit; fi; {fallback}"
    )


def _gate_function(harness: str) -> str:
    import shlex  # install time only: the hot path (pending) stays without re

    event, tool = GATED[harness]
    field = _field_pattern
    elsewhere = "|".join("*" + shlex.quote('"' + key + '":') + "*" for key in _ELSEWHERE)
    # A value, not empty and not starting with a blank (Python reads those as no session).
    session = "*" + shlex.quote('"session_id":"') + '[!\\"\\ ]*'
    destroyers = "|".join(sorted(DESTROYERS))
    # Split as names_destroyer does: its separators and whitespace, and nothing else.
    ifs = shlex.quote(" " + "".join(sorted(set(SEPARATORS) | {"\t", "\n"})))
    observe = shlex.quote(f"/.git/guards/{OBSERVE_DIR}")
    marker = f'"$_go/{PENDING_PREFIX}$$-$_gn.json"'
    # Each key the gate reads, once in the whole event (nested twice: Python decides).
    twice = "|".join(
        "*" + shlex.quote(f'"{k}":') + "*" + shlex.quote(f'"{k}":') + "*"
        for k in ("hook_event_name", "tool_name", "session_id")
    )
    return (
        "_guards_gate() { "
        '[ -z "${GUARDS_DISABLE-}" ] || return 1; '
        # dash's ${x#pattern} tries each prefix: quadratic in a long event (1 MB took 3 min).
        f'[ "${{#_gp}}" -le {MAX_EVENT} ] || return 1; '
        f"case $_gp in *\\\\*|{elsewhere}|{twice}) return 1;; esac; "
        f"case $_gp in {field('hook_event_name', event)}) ;; *) return 1;; esac; "
        f"case $_gp in {field('tool_name', tool)}) ;; *) return 1;; esac; "
        f"case $_gp in {session}) ;; *) return 1;; esac; "
        "case $_gp in *'}') ;; *) return 1;; esac; "
        f"{_value('_gc', 'command')} "
        "case $_gc in *[gG][iI][tT]*|*'>'*) return 1;; esac; "
        f"_gi=$IFS; IFS={ifs}; set -f; "
        f"for _gw in $_gc; do case ${{_gw##*/}} in {destroyers}) IFS=$_gi; set +f; return 1;; "
        "esac; done; IFS=$_gi; set +f; "
        f"{_value('_gd', 'cwd')} "
        # Absolute, and walked up as Python's abspath would (no . or .. part, no //).
        "case $_gd in /*) ;; *) return 1;; esac; "
        "case $_gd in */./*|*/.|*/../*|*/..|*//*) return 1;; esac; "
        'while :; do [ -d "$_gd/.git" ] && break; [ -e "$_gd/.git" ] && return 1; '
        '[ -n "$_gd" ] || return 0; _gd=${_gd%/*}; done; '
        '[ -f "$_gd/.git/commondir" ] && return 1; '
        f'_go=$_gd{observe}; [ -d "$_go" ] || return 1; '
        f"_gn=0; set -C; until {{ printf '%s' \"$_gp\" > {marker}; }} 2>/dev/null; do "
        f'_gn=$((_gn + 1)); [ "$_gn" -lt {_TRIES} ] || {{ set +C; return 1; }}; done; '
        "set +C; return 0; }; "
    )


def _field_pattern(key: str, value: str) -> str:
    """A ``case`` pattern for ``"key":"value"`` anywhere in the event."""
    import shlex

    return "*" + shlex.quote(f'"{key}":"{value}"') + "*"


def _value(var: str, key: str) -> str:
    """Shell code setting ``var`` to the string value of ``key``, the one such key of the
    event (else the gate steps aside): with no backslash in the event, it ends at the
    next quote."""
    import shlex

    opening = shlex.quote(f'"{key}":"')
    key_only = shlex.quote(f'"{key}":')
    return (
        # Twice anywhere (a list before a string, say): Python reads which one counts.
        f"case $_gp in *{key_only}*{key_only}*) return 1;; esac; "
        f"{var}=${{_gp#*{opening}}}; "
        f'[ "${var}" != "$_gp" ] || return 1; '
        f"{var}=${{{var}%%'\"'*}};"
    )


def pending(folder: str) -> list[tuple[int, str, bytes]]:
    """The markers the shell left in ``folder``: (change time in ns, path, the event),
    oldest first; a marker gone meanwhile (another line's end took it) is left out."""
    found = []
    try:
        names = [n for n in os.listdir(folder) if n.startswith(PENDING_PREFIX)]
    except OSError:
        return []
    for name in names:
        path = os.path.join(folder, name)
        try:
            with open(path, "rb") as f:
                raw = f.read()
                changed = os.fstat(f.fileno()).st_ctime_ns
        except OSError:
            continue
        found.append((changed, path, raw))
    return sorted(found)
