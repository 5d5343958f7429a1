"""A prompt's frame from an agent hook's first moments: its git calls, started before
the rest of guards loads, and its text (:func:`frame_text`).

A prompt's frame waits for one ``git status`` of the checkout, the longest part of its
answer, and for the repository's discovery. Started here, as soon as the event is read,
both run while Python imports the event handlers (guards.integrations.agent_hooks), the
ledger and the frame, instead of after. Only payloads that already have Claude Code's
shape are read this early (Claude Code, Codex, Gemini CLI: :func:`read_event`, once for
every handler); the other harnesses' prompts start the same calls a little later, in
the handler.
"""

from __future__ import annotations

import os

from guards import jsontext
from guards.errors import GuardsError

TYPE_CHECKING = False  # see guards.values: these imports cost start-up time
if TYPE_CHECKING:
    from typing import Any

    from guards.git.process import Pending
    from guards.git.repo import Discovery, Repo

HARNESSES = ("claude", "codex", "gemini", "copilot", "qwen", "opencode", "droid")
#: A prompt's turn begins (Claude, Codex; Gemini).
PROMPTS = frozenset({"UserPromptSubmit", "BeforeAgent"})
#: The harnesses whose payloads are read as they come (see agent_hooks.as_claude).
_CLAUDE_SHAPED = frozenset({"claude", "codex", "gemini"})
#: ``claude --handed-status GIT``: the prompt hook's shell started the frame's git status
#: (guards.integrations.harness_settings.prompt_script, guards.git.process.handed_status).
HANDED = "--handed-status"


def hands_status(harness: str, event: str) -> bool:
    """Whether ``harness``'s hook for ``event`` starts the frame's git status in its shell:
    a prompt's, read here as soon as it comes."""
    return harness in _CLAUDE_SHAPED and event in PROMPTS


class Started:
    """A prompt event, read, and its frame's git calls, running: ``git status`` and the
    repository's discovery in the event's directory."""

    __slots__ = ("discovery", "event", "status")

    def __init__(self, event: dict[str, Any], status: Pending, discovery: Discovery) -> None:
        self.event = event
        self.status = status
        self.discovery = discovery

    def finish(self) -> None:
        """Wait for both (again, when they were used: the same answers)."""
        self.status.result(check=False)
        self.discovery.finish()


def event_cwd(event: dict[str, Any]) -> str:
    """The directory an event happened in: its absolute ``cwd``, else this process's."""
    cwd = event.get("cwd")
    return cwd if isinstance(cwd, str) and os.path.isabs(cwd) else os.getcwd()


def read_event(harness: str, raw: bytes) -> dict[str, Any] | None:
    """``raw`` read, when ``harness`` sends payloads of Claude Code's shape and it is a
    JSON object; None otherwise (the handler reads it, and answers a malformed one)."""
    if harness not in _CLAUDE_SHAPED:
        return None
    try:
        event = jsontext.loads(raw)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None
    return event if isinstance(event, dict) else None


def start(event: dict[str, Any] | None, handed: str | None = None) -> Started | None:
    """The frame's git calls started, when ``event`` (read by :func:`read_event`) is a
    prompt; None otherwise, or when git cannot be started (the handler then says why).
    ``handed``: the real git whose status the hook's shell started (:data:`HANDED`)."""
    if event is None or event.get("hook_event_name") not in PROMPTS:
        if handed is not None:  # (not a prompt after all: git stops at its first write)
            from guards.git.process import HANDED_STATUS_FD

            os.close(HANDED_STATUS_FD)
        return None
    try:
        return start_calls(event, handed)
    except GuardsError:
        return None


def start_calls(event: dict[str, Any], handed: str | None = None) -> Started:
    """The frame's git calls for ``event`` (read as Claude Code's), started in its
    directory: git status first, the longer of the two (``handed``: the one the hook's
    shell started with that git, when it is the same call). Raises when git cannot
    start."""
    from guards.git import process as git

    cwd = event_cwd(event)
    # What guards.git.dirty.start_reading asks, without loading that module yet.
    if handed is None:
        status = git.start(git.status_args(), cwd=cwd)
    else:
        status = git.handed_status(git.HANDED_STATUS_FD, handed, cwd)
    from guards.git.repo import Discovery

    try:
        discovery = Discovery(cwd)
    except GuardsError:
        status.result(check=False)
        raise
    return Started(event, status, discovery)


def frame_text(
    cwd: str, caller: str | None, repo: Repo | None = None, started: Started | None = None
) -> str:
    """The frame for a turn starting in ``cwd`` ("" when clean or not a repository);
    ``repo``: its repository, found already; ``started``: its git calls, running."""
    from guards.git.repo import NotARepositoryError, discover
    from guards.report import frame

    try:
        if repo is None:
            repo = discover(cwd) if started is None else started.discovery.repo()
    except NotARepositoryError:
        return ""
    if repo.toplevel_text is None:  # (text: no pathlib before every prompt)
        return ""
    found = frame.collect(repo, caller, started.status if started else None)
    if not found.entries:
        return ""
    return frame.render(found, frame.configured_max_paths(repo))
