"""Harness sessions as guards sessions, and who a harness's shell command runs for.

A harness session ``<id>`` is the guards session ``<harness>-<id>``. The agent hook
acts as it; the session's shell commands (and the shim or git hooks inside them) are
identified by ``GUARDS_SESSION`` when the harness lets the hook export it (Claude
Code's env file), else by the id the harness itself puts in every shell command's
environment (Codex: ``CODEX_THREAD_ID``, Claude Code: ``CLAUDE_CODE_SESSION_ID``,
both equal to the hooks' ``session_id``).

Standard library only, nothing imported at start: the agent hook's hot path uses it.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # see guards.values: these imports cost start-up time
if TYPE_CHECKING:
    from collections.abc import Mapping

MAX_ID_LENGTH = 128
_ID_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._:@+=-")
#: harness -> the variable it sets, in every shell command it runs, to its session id.
#: Checked in this order (a Codex run inside a Claude Code shell inherits both: the
#: inner, Codex, is the one running the command).
HARNESS_SESSION_ENV = (("codex", "CODEX_THREAD_ID"), ("claude", "CLAUDE_CODE_SESSION_ID"))


def session_for(harness: str, harness_session: str) -> str:
    """The guards session id of a harness session: ``<harness>-<id>``.

    Runs of characters a session id cannot hold become one ``-``; an id too long to fit
    keeps its beginning plus a digest of the whole, so that distinct ids stay distinct.
    """
    out: list[str] = []
    for c in harness_session.strip():
        if c in _ID_CHARS:
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
