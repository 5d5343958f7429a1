"""Rescue names: ref-name components, stamps, the commit identity, messages and trailers."""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterable

from guards.git.quoting import unquote_path
from guards.output import show_path
from guards.state import session as sessions
from guards.state.workspace import Workspace

UNKNOWN = "unknown"
#: The trailer that counts a rescue's paths (rescues before it list every path).
PATH_COUNT = "Path-Count"
#: How a kept nested repository is labelled (``repository vendor/lib/``).
REPOSITORY_LABEL = "repository "
#: The ``Bytes`` trailer of a rescue whose tree holds the raw bytes of its files.
RAW_BYTES = "raw"
#: The most bytes a rescue commit's message holds: past it, the ``Path`` trailers are
#: left out (``Path-Count`` says how many; the commit's trees are the list).
MAX_MESSAGE = 4096


# -- names -------------------------------------------------------------------------------

_SAFE = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_+=@-.")


def safe_component(text: str, fallback: str = UNKNOWN) -> str:
    """One ref-name component from any text, valid for ``git check-ref-format``.

    Characters git forbids (and ``%``) become ``%XX``, so distinct ids stay distinct.
    """
    out = []
    for ch in text:
        if ch in _SAFE:
            out.append(ch)
        else:
            out.extend(f"%{b:02X}" for b in ch.encode("utf-8", "surrogateescape"))
    name = "".join(out)
    name = name.replace("..", ".%2E")
    if name.startswith("."):
        name = "%2E" + name[1:]
    if name.endswith("."):
        name = name[:-1] + "%2E"
    if name.endswith(".lock"):
        name = name[: -len(".lock")] + "%2Elock"
    if name == "@":
        name = "%40"
    return name or fallback


def command_slug(command: str, limit: int = 40) -> str:
    """``"git reset --hard HEAD~1"`` -> ``"reset-hard-HEAD_1"``."""
    words = command.split()
    if words and os.path.basename(words[0]) == "git":
        words = words[1:]
    parts = []
    for w in words[:4]:
        w = w.lstrip("-")
        cleaned = "".join(
            ch if ch.isascii() and (ch.isalnum() or ch in "._+=-") else "_" for ch in w
        )
        if cleaned.strip("_."):
            parts.append(cleaned.strip("."))
    slug = "-".join(parts)[:limit].strip("-.") or "command"
    return safe_component(slug, "command")


def owner_component(owner: str | None) -> str:
    return safe_component(owner) if owner else UNKNOWN


def namespace(ws: Workspace) -> str:
    return str(ws.config.get("rescue.namespace"))


def namespace_patterns(ws: Workspace) -> list[str]:
    """``for-each-ref`` patterns for every rescue ref: the namespace, and the stand-ins
    ``<namespace>-2``, ``-3``, ... used when a stray ref is named like the namespace."""
    ns = namespace(ws)
    return [ns, f"{ns}-[0-9]*/**"]


def wip_ref(ws: Workspace, owner: str) -> str:
    """The session's own checkpoint ref: ``refs/wip/<owner>`` beside ``refs/rescue``."""
    parent = namespace(ws).rsplit("/", 1)[0]
    return f"{parent}/wip/{owner_component(owner)}"


def _stamp(now: float) -> str:
    return time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(now))


def _iso(now: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now))


def identity() -> dict[str, str]:
    """Commits guards writes work without any ``user.name``/``user.email`` configured."""
    email = f"guards@{safe_component(sessions.hostname(), 'localhost')}"
    return {
        "GIT_AUTHOR_NAME": "guards",
        "GIT_AUTHOR_EMAIL": email,
        "GIT_COMMITTER_NAME": "guards",
        "GIT_COMMITTER_EMAIL": email,
    }


# -- messages and trailers -----------------------------------------------------------------


_PLAIN = re.compile(r"[ -!#-\[\]-~]*")


def trailer_value(text: str) -> str:
    """A value that stays on one trailer line whatever the path holds."""
    return text if _PLAIN.fullmatch(text) else show_path(text)


def head_trailer(head: str) -> str:
    """``Repository-Head``'s value for a nested repository's HEAD (``name`` or ``name
    (unborn)``): the branch name quoted as a path is (a branch name may hold what a
    trailer line cannot), then `` (unborn)`` when it is. Read back by :func:`head_of`."""
    name, unborn, rest = head.partition(" ")  # a ref name holds no space
    return trailer_value(name) + unborn + rest


def head_of(value: str | None) -> str:
    """The branch a ``Repository-Head`` value names (``unborn`` without one)."""
    return unquote_path((value or "unborn").removesuffix(" (unborn)"))


def parse_trailers(message: str) -> dict[str, list[str]]:
    """Our ``Key: value`` lines (values of ``Path`` C-unquoted back to names)."""
    out: dict[str, list[str]] = {}
    for line in message.splitlines():
        key, sep, value = line.partition(": ")
        if sep and key and " " not in key and key[0].isupper():
            if key == "Path":
                value = unquote_path(value)
            out.setdefault(key, []).append(value)
    return out


def _message(
    subject: str, trailers: list[tuple[str, str]], paths: Iterable[str], body: str = ""
) -> str:
    """The message of a rescue commit: ``Path`` trailers while they fit in
    :data:`MAX_MESSAGE` bytes with the rest, and ``Path-Count`` whenever there are paths."""
    lines = [subject, ""]
    if body:
        lines += [body, ""]
    lines += [f"{k}: {v}" for k, v in trailers]
    named = list(paths)
    if named:
        lines.append(f"{PATH_COUNT}: {len(named)}")
    head = "\n".join(lines) + "\n"
    listed = "".join(f"Path: {trailer_value(p)}\n" for p in named)
    if len((head + listed).encode("utf-8", "surrogateescape")) <= MAX_MESSAGE:
        return head + listed
    return head


def _who(owner: str | None) -> str:
    return f"session {owner}" if owner else "unknown owner"
