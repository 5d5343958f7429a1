"""Who is writing: the caller's session id, harness sessions as guards sessions, and
this host's name.

The caller is ``GUARDS_SESSION``; in an agent harness's shell command without it, the
harness session the command runs for: a harness session ``<id>`` is the guards session
``<harness>-<id>``, and the harness puts its id in every shell command's environment
(Codex: ``CODEX_THREAD_ID``, GitHub Copilot CLI: ``COPILOT_AGENT_SESSION_ID``, Qwen
Code: ``QWEN_CODE_SESSION_ID``, Claude Code: ``CLAUDE_CODE_SESSION_ID``, each equal to the
hooks' session id; opencode: ``OPENCODE_SESSION_ID``, set by guards' own plugin, which
sets ``GUARDS_SESSION`` as well).

Gemini CLI puts no session id in its shell commands' environment. Its session start hook
registers the harness's process instead (:func:`register_harness_process`: the hook's
nearest ancestor that is not a shell, with that process's start time), and a command
run anywhere below that process in the process tree is that session's
(:func:`ancestral_caller`). Only where ``/proc`` shows the process tree (Linux);
elsewhere such a command stays unidentified, which owns nothing: the safe side.

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


def caller_id(ledger_dir: str | None = None) -> str | None:
    """The calling session from ``GUARDS_SESSION``, else the harness session whose shell
    command this is (by its variable, or, given the repository's ``ledger_dir``, by a
    registered harness process above this one); None when unidentified."""
    value = os.environ.get(SESSION_ENV, "").strip()
    if value:
        return validate_id(value, f"{SESSION_ENV} value")
    found = harness_caller()
    if found is None and ledger_dir is not None:
        found = ancestral_caller(ledger_dir)
    return found


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


#: The ledger's folder of registered harness processes: a file per process, named by its
#: pid, holding its start time and the session on two lines.
HARNESS_PROCESSES = "harnesses"
#: Processes between a harness and its hook or shell command that are not the harness.
_SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ash", "ksh", "mksh", "busybox", "env"})
#: How far up the process tree a command looks for its harness.
_MAX_DEPTH = 64


def _parent_and_name(pid: int) -> tuple[int, str] | None:
    """``pid``'s parent and command name, from ``/proc``; None when unreadable."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return None
    close = stat.rfind(b")")
    name = stat[stat.find(b"(") + 1 : close].decode("utf-8", "replace")
    try:
        return int(stat[close + 2 :].split()[1]), name
    except (IndexError, ValueError):
        return None


def harness_process() -> int | None:
    """The process that started this one through shells only (the harness running a hook
    command), or None without ``/proc`` or when there is none above init."""
    if not _HAS_PROC:
        return None
    pid = os.getppid()
    for _ in range(_MAX_DEPTH):
        found = _parent_and_name(pid)
        if found is None or pid <= 1:
            return None
        parent, name = found
        if name not in _SHELLS:
            return pid
        pid = parent
    return None


def register_harness_process(ledger_dir: str, session: str) -> int | None:
    """Record that the harness process above this hook runs ``session`` (Gemini CLI:
    its shell commands carry no session id); returns its pid, None when it cannot be
    found. Registrations of processes that are gone are swept."""
    pid = harness_process()
    started = process_start_time(pid) if pid is not None else None
    if pid is None or started is None:
        return None
    from guards import fsutil

    folder = os.path.join(ledger_dir, HARNESS_PROCESSES)
    os.makedirs(folder, mode=0o700, exist_ok=True)
    fsutil.atomic_write(os.path.join(folder, str(pid)), f"{started}\n{session}\n".encode())
    for name in os.listdir(folder):
        if name.isdigit() and _registered(folder, int(name)) is None:
            fsutil.remove(os.path.join(folder, name))
    return pid


def unregister_harness_process(ledger_dir: str, session: str) -> None:
    """The session ended: its harness process no longer speaks for it."""
    pid = harness_process()
    folder = os.path.join(ledger_dir, HARNESS_PROCESSES)
    if pid is not None and _registered(folder, pid) == session:
        from guards import fsutil

        fsutil.remove(os.path.join(folder, str(pid)))


def _registered(folder: str, pid: int) -> str | None:
    """The session registered for ``pid`` if that very process (same start time) is still
    running; None otherwise."""
    try:
        with open(os.path.join(folder, str(pid)), encoding="utf-8") as f:
            started, session = f.read().split("\n")[:2]
    except (OSError, ValueError, UnicodeDecodeError):
        return None
    if not is_valid_id(session) or not process_alive(pid, started):
        return None
    return session


def ancestral_caller(ledger_dir: str) -> str | None:
    """The session of the nearest registered harness process above this one, None when
    there is none (or no ``/proc`` to see the process tree)."""
    folder = os.path.join(ledger_dir, HARNESS_PROCESSES)
    if not _HAS_PROC or not os.path.isdir(folder):
        return None
    pid = os.getppid()
    for _ in range(_MAX_DEPTH):
        if pid <= 1:
            return None
        if os.path.exists(os.path.join(folder, str(pid))):
            session = _registered(folder, pid)
            if session is not None:
                return session
        found = _parent_and_name(pid)
        if found is None:
            return None
        pid = found[0]
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
    found = _process(pid)
    return None if found is None else found[0]


#: What :func:`process_liveness` finds of a process recorded with its start time.
PROCESS_LIVE = "live"
#: No process has the pid, or the recorded one exited (a zombie: its work is over).
PROCESS_GONE = "gone"
#: Another process has the pid now.
PROCESS_REUSED = "reused"


def process_liveness(pid: int, started: object) -> str:
    """The one liveness rule for a process on this host: live while a process with
    ``pid`` runs and started at ``started`` (:func:`process_start_time` when it was
    recorded). A zombie counts as gone: it has exited, and only its parent has not
    read its status yet."""
    found = _process(pid)
    if found is None:
        return PROCESS_GONE
    now, zombie = found
    if now != started:
        return PROCESS_REUSED
    return PROCESS_GONE if zombie else PROCESS_LIVE


def process_alive(pid: int, started: object) -> bool:
    """:func:`process_liveness` says live."""
    return process_liveness(pid, started) == PROCESS_LIVE


def _process(pid: int) -> tuple[str, bool] | None:
    """(start time identifier, whether a zombie) of ``pid``; None: no such process.
    Without ``/proc`` no process counts as a zombie."""
    if pid <= 0:
        return None
    if not _HAS_PROC:
        started = _ps_start_time(pid)
        return None if started is None else (started, False)
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except FileNotFoundError:
        return None
    except OSError:
        started = _ps_start_time(pid)
        return None if started is None else (started, False)
    # The command name may hold spaces and parentheses: fields start after the last ')'.
    fields = stat[stat.rfind(b")") + 2 :].split()
    return f"{_boot_id()}:{fields[19].decode()}", fields[0] == b"Z"


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
