"""Attribution: "session S wrote path P, and P looked like F when that was recorded".

Ownership of a dirty path for a caller C is ``mine`` (attributed to C and the
fingerprint still matches), ``foreign`` (attributed to another session and still
matching) or ``unknown`` (no record, changed since recorded, or the ledger is
unreadable). A path that changed after it was recorded has no known owner.
"""

from __future__ import annotations

import os

from guards.state.fingerprint import (
    HASH_MAX_SIZE,
    Attribution,
    Fingerprint,
    _matches,
    fingerprint,
    still_matches,
)
from guards.values import Value

__all__ = [
    "HASH_MAX_SIZE",
    "UNKNOWN_OWNER",
    "Attribution",
    "Fingerprint",
    "Owner",
    "Ownership",
    "classify",
    "fingerprint",
    "still_matches",
]

TYPE_CHECKING = False  # see guards.values: these imports cost start-up time
if TYPE_CHECKING:
    from typing import Any, Final


class Ownership:
    """Whose a dirty path is, for a caller. Plain strings, not an Enum: ``enum`` costs
    the start-up of every hook that classifies (see :class:`guards.errors.ExitCode`)."""

    MINE: Final = "mine"
    FOREIGN: Final = "foreign"
    UNKNOWN: Final = "unknown"


class Owner(Value):
    """Who owns a dirty path, as far as guards can tell, relative to a caller."""

    __slots__ = ("ownership", "recorded", "session")

    def __init__(self, ownership: str, session: str | None, recorded: float | None) -> None:
        self.ownership = ownership
        #: The attributed session when the record still matches; None when unknown.
        self.session = session
        #: When the attribution was recorded (None when there is none that matches).
        self.recorded = recorded


UNKNOWN_OWNER = Owner(Ownership.UNKNOWN, None, None)


def classify(
    record: dict[str, Any] | None,
    path: str | os.PathLike[str],
    caller: str | None,
    object_format: str = "sha1",
    now: tuple[int, int, int, int] | None = None,
) -> Owner:
    """The owner of the dirty path at absolute ``path`` for ``caller``; ``now``: its
    (mode, size, mtime_ns, inode) when the caller took its ``lstat`` already."""
    if record is None:
        return UNKNOWN_OWNER
    try:
        session = record["session"]
        fp = record["fingerprint"]
        recorded = float(record["recorded"])
        if fp.get("deleted"):
            matches = _matches(True, 0, 0, 0, 0, None, path, object_format, now)
        else:
            matches = _matches(
                False, int(fp["size"]), int(fp["mtime_ns"]), int(fp["mode"]), int(fp["inode"]),
                fp.get("blob"), path, object_format, now,
            )  # fmt: skip
    except (KeyError, TypeError, ValueError, AttributeError):
        return UNKNOWN_OWNER  # a damaged record proves nothing
    if not session or not isinstance(session, str) or not matches:
        return UNKNOWN_OWNER
    ownership = Ownership.MINE if session == caller else Ownership.FOREIGN
    return Owner(ownership, session, recorded)
