"""Who is writing: the caller's session id, harness sessions as guards sessions, and
this host's name.

The caller is ``GUARDS_SESSION``; in an agent harness's shell command without it, the
harness session the command runs for: a harness session ``<id>`` is the guards session
``<harness>-<id>``, and the harness puts its id in every shell command's environment
(Codex: ``CODEX_THREAD_ID``, GitHub Copilot CLI: ``COPILOT_AGENT_SESSION_ID``, Qwen
Code: ``QWEN_CODE_SESSION_ID``, Claude Code: ``CLAUDE_CODE_SESSION_ID``, each equal to the
hooks' session id; opencode: ``OPENCODE_SESSION_ID``, set by guards' own plugin, which
sets ``GUARDS_SESSION`` as well).

Kept apart from guards.state.session (liveness, with ``enum``) because ``guards record``
and the agent hook run on every agent edit and need only these: no regular expression,
no enum, no socket.
"""

from __future__ import annotations

import os

from guards.errors import UsageError

TYPE_CHECKING = False  # see guards.values: these imports cost start-up time
if TYPE_CHECKING:
    from collections.abc import Mapping

SESSION_ENV = "GUARDS_SESSION"
MAX_ID_LENGTH = 128
_FIRST = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
_REST = _FIRST | frozenset("._:@+=-")
#: harness -> the variable it sets, in every shell command it runs, to its session id.
#: Checked in this order (a Codex run inside a Claude Code shell inherits both: the
#: inner, Codex, is the one running the command).
HARNESS_SESSION_ENV = (
    ("codex", "CODEX_THREAD_ID"),
    ("copilot", "COPILOT_AGENT_SESSION_ID"),
    ("qwen", "QWEN_CODE_SESSION_ID"),
    ("opencode", "OPENCODE_SESSION_ID"),
    ("claude", "CLAUDE_CODE_SESSION_ID"),
)


def is_valid_id(session_id: str) -> bool:
    """1-128 characters of ASCII letters, digits and ``._:@+=-``, starting with a letter
    or digit."""
    return (
        0 < len(session_id) <= MAX_ID_LENGTH
        and session_id[0] in _FIRST
        and all(c in _REST for c in session_id)
    )


def validate_id(session_id: str, what: str = "session id") -> str:
    if not is_valid_id(session_id):
        shown = session_id if len(session_id) <= 40 else session_id[:37] + "..."
        raise UsageError(
            f"invalid {what} {shown!r}: use 1-{MAX_ID_LENGTH} letters, digits and ._:@+=- "
            f"(starting with a letter or digit)"
        )
    return session_id


def caller_id() -> str | None:
    """The calling session from ``GUARDS_SESSION``, else the harness session whose shell
    command this is; None when unidentified."""
    value = os.environ.get(SESSION_ENV, "").strip()
    if value:
        return validate_id(value, f"{SESSION_ENV} value")
    return harness_caller()


def session_for(harness: str, harness_session: str) -> str:
    """The guards session id of a harness session: ``<harness>-<id>``.

    Runs of characters a session id cannot hold become one ``-``; an id too long to fit
    keeps its beginning plus a digest of the whole, so that distinct ids stay distinct.
    """
    out: list[str] = []
    for c in harness_session.strip():
        if c in _REST:
            out.append(c)
        elif not out or out[-1] != "-":
            out.append("-")
    cleaned = "".join(out).strip("-") or "unnamed"
    candidate = f"{harness}-{cleaned}"
    if len(candidate) > MAX_ID_LENGTH:
        import hashlib

        digest = hashlib.sha256(harness_session.encode("utf-8", "surrogateescape")).hexdigest()
        candidate = f"{candidate[: MAX_ID_LENGTH - 17]}-{digest[:16]}"
    return candidate


def harness_caller(environ: Mapping[str, str] | None = None) -> str | None:
    """The guards session of the harness session whose shell command this is, from the
    harness's own variable; None outside a harness."""
    env = os.environ if environ is None else environ
    for harness, name in HARNESS_SESSION_ENV:
        value = env.get(name, "").strip()
        if value:
            return session_for(harness, value)
    return None


_hostname: str | None = None


def hostname() -> str:
    global _hostname
    if _hostname is None:
        # uname's node name is gethostname() (POSIX), without importing socket (and the
        # enum and selectors it pulls in).
        uname = getattr(os, "uname", None)
        if uname is not None:
            _hostname = uname().nodename
        else:  # pragma: no cover - not on POSIX
            import socket

            _hostname = socket.gethostname()
    return _hostname


def process_start_time(pid: int) -> str | None:
    """An identifier of when ``pid`` started, or None when no such process exists.

    Linux: field 22 of ``/proc/PID/stat`` (clock ticks since boot, plus the boot id so
    that a reboot never matches). Elsewhere: ``ps -o lstart=``. (Here, not in
    guards.state.session: the guarded git's barrier needs it without ``enum``.)
    """
    if pid <= 0:
        return None
    if not _HAS_PROC:
        return _ps_start_time(pid)
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except FileNotFoundError:
        return None
    except OSError:
        return _ps_start_time(pid)
    # The command name may hold spaces and parentheses: fields start after the last ')'.
    fields = stat[stat.rfind(b")") + 2 :].split()
    return f"{_boot_id()}:{fields[19].decode()}"


_HAS_PROC = os.path.exists("/proc/self/stat")
_boot: str | None = None


def _boot_id() -> str:
    global _boot
    if _boot is None:
        try:
            with open("/proc/sys/kernel/random/boot_id") as f:
                _boot = f.read().strip()
        except OSError:
            _boot = "noboot"
    return _boot


def _ps_start_time(pid: int) -> str | None:
    import subprocess  # lazily: only where there is no /proc (start-up time)

    try:
        res = subprocess.run(
            ["ps", "-o", "lstart=", "-p", str(pid)], capture_output=True, text=True, check=False
        )
    except OSError:
        return None
    return res.stdout.strip() or None
