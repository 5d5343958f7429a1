"""Rescue: at-risk work committed to rescue refs, verified, logged and pushed.

A rescue is one commit per owner under ``<namespace>/<owner>/<UTC time>-<command>``
(default namespace ``refs/rescue``). Its tree is HEAD's tree with the owner's paths in
their checkout state (untracked and ignored files included), so that plain git gets
any file back (``git restore --source=<ref> -- <path>``). Its second parent holds the
index state of those paths; a third, when there was a conflict, holds stages 1-3 as
``<stage>/<path>``. Trailers name the owner, the caller, the command, the host, the
time, the commits and every path.

Nothing points at a rescue until every tree was read back and every blob re-read and
compared with the disk and the index; the refs are then created create-only, all in
one transaction. A push (``rescue.remote``) never undoes the local rescue, and
ignored files and files matching ``rescue.secret_patterns`` never reach the remote.

The package, lowest module first: :mod:`.result` (what a rescue takes and gives),
:mod:`.naming` (ref names, stamps, identity, messages and trailers), :mod:`.refs`
(creating and reading refs), :mod:`.verify` (reading everything back), :mod:`.push`
(the remote, and what never reaches it), :mod:`.log` (the ledger's log and the report
line), :mod:`.build` (the rescue itself, and kept commits), :mod:`.catalog` (the rescues
there are, as objects) and :mod:`.restore` (putting them back).
"""

from __future__ import annotations

from guards.git.process import NO_HOOKS
from guards.protect.rescue.build import (
    build_snapshots,
    dirty_at_risk,
    rescue_commits,
    rescue_paths,
)
from guards.protect.rescue.log import (
    LOG_LOCK_WAIT,
    LOGGED_PATHS,
    log_rescues,
    report_line,
    rescue_log_entries,
    restore_command,
)
from guards.protect.rescue.naming import (
    RAW_BYTES,
    UNKNOWN,
    command_slug,
    identity,
    namespace,
    namespace_patterns,
    owner_component,
    parse_trailers,
    safe_component,
    trailer_value,
    wip_ref,
)
from guards.protect.rescue.push import PushOutcome, classify_push, is_secret, push
from guards.protect.rescue.refs import create_refs, ref_values
from guards.protect.rescue.result import OVERRIDE, AtRiskPath, RescueFailedError, RescueResult

__all__ = [
    "LOGGED_PATHS",
    "LOG_LOCK_WAIT",
    "NO_HOOKS",
    "OVERRIDE",
    "RAW_BYTES",
    "UNKNOWN",
    "AtRiskPath",
    "PushOutcome",
    "RescueFailedError",
    "RescueResult",
    "build_snapshots",
    "classify_push",
    "command_slug",
    "create_refs",
    "dirty_at_risk",
    "identity",
    "is_secret",
    "log_rescues",
    "namespace",
    "namespace_patterns",
    "owner_component",
    "parse_trailers",
    "push",
    "ref_values",
    "report_line",
    "rescue_commits",
    "rescue_log_entries",
    "rescue_paths",
    "restore_command",
    "safe_component",
    "trailer_value",
    "wip_ref",
]
