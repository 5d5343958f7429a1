"""Who is writing: the caller's session id (``GUARDS_SESSION``) and this host's name.

Kept apart from guards.state.session (liveness, with ``enum`` and ``re``) because
``guards record`` runs on every agent edit and needs only these: no regular expression,
no enum, no socket.
"""

from __future__ import annotations

import os

from guards.errors import UsageError

SESSION_ENV = "GUARDS_SESSION"
MAX_ID_LENGTH = 128
_FIRST = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
_REST = _FIRST | frozenset("._:@+=-")


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
    """The calling session from ``GUARDS_SESSION``; None when unidentified."""
    value = os.environ.get(SESSION_ENV, "").strip()
    return validate_id(value, f"{SESSION_ENV} value") if value else None


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
