"""Attribution by observation: the files a shell line of a session changed, claimed for
that session when the line ends (the harness names no file for a shell command).

The agent hooks keep a start marker per shell line (guards.integrations.agent_hooks);
its change time is the threshold: a dirty file whose status changed after it is the
line's doing, unless another session recorded it meanwhile.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # see guards.values: these imports cost start-up time
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

    from guards.state.workspace import Workspace

#: ``<ledger>/observe``: the shell lines' start markers, the notices kept for a write's
#: end and the per-session flags of the harness hooks.
OBSERVE_DIR = "observe"


def observe(ws: Workspace, sid: str, threshold_ns: int) -> list[str]:
    """Attribute to ``sid`` the dirty files whose status changed after ``threshold_ns``.

    An observation claims only what nobody else recorded since the line started: a
    file another session recorded after the threshold stays theirs (a harness naming
    its edit beats an observation), even when it changed again since (their next
    write's record may still be on its way; unknown is rescued, a wrong "mine" is not).
    Each claim is conditional on the attribution read (a compare-and-set in the
    journal), so a record made between this read and this write wins as well. With an
    unreadable ledger nothing is claimed.
    """
    from guards.git.dirty import read_dirty
    from guards.state.ledger import recorded_at
    from guards.state.workspace import record_paths

    top = ws.repo.worktree_key
    join = os.path.join
    changed = []
    for d in read_dirty(ws.repo):
        try:
            st = os.lstat(join(top, d.path))
        except OSError:
            continue  # deleted: nothing to fingerprint but the deletion, leave it unknown
        if st.st_ctime_ns > threshold_ns:
            changed.append(d.path)
    if not changed:
        return []
    data, _problem = ws.read_ledger()
    if data is None:
        return []  # who recorded what since the line started cannot be told
    records: Mapping[str, Any] = data.paths.get(ws.repo.worktree_key, {})
    threshold_s = threshold_ns / 1e9
    seen: dict[str, object] = {}
    for path in changed:
        record = records.get(path)
        if isinstance(record, dict) and record.get("session") != sid:
            when = record.get("recorded")
            if not isinstance(when, (int, float)) or when >= threshold_s:
                continue  # recorded by someone else since the line started (or damaged)
        seen[path] = recorded_at(records, path) if record is not None else None  # type: ignore[arg-type]
    if seen:
        record_paths(ws, sid, list(seen), source="observed", expected=seen)
    return list(seen)
