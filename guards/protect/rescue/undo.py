"""Undo: bring back what one guarded command rescued (an entry of the decision log).

By default the entry is the caller's last rescue in this work tree. Each rescue ref the
entry names is restored the way ``guards rescue restore --index`` restores it (files
and, where they were rescued, staged versions): a path changed since the rescue is a
conflict, reported and left alone. With ``force`` those paths are first rescued
themselves (a new rescue ref, and a ``rescued`` entry in the decision log with ``via``
``undo``, so that the undo itself can be undone), then overwritten.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from guards.errors import GuardsError, UsageError
from guards.protect.rescue.build import rescue_paths
from guards.protect.rescue.catalog import Rescue, resolve, restore_commands
from guards.protect.rescue.log import decision_rescues
from guards.protect.rescue.restore import (
    Restored,
    RestoredRepository,
    restore_paths,
    restore_repository,
)
from guards.protect.rescue.result import AtRiskPath, RescueResult
from guards.state import decisions, identity
from guards.state.attribution import classify
from guards.state.workspace import Workspace

#: ``via`` of the decision log entry a forced undo writes for what it rescued first.
VIA_UNDO = "undo"


@dataclass
class UndoneRef:
    """What happened to one rescue ref of the entry."""

    ref: str
    rescue: Rescue | None = None
    paths: Restored | None = None
    repository: RestoredRepository | None = None
    #: why it was not restored (gone, a kept commit, in a submodule), with the command
    skipped: str | None = None


@dataclass
class Undone:
    entry: dict[str, Any]
    refs: list[UndoneRef] = field(default_factory=list)
    #: what a forced undo rescued before overwriting
    rescued_first: list[RescueResult] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        for u in self.refs:
            if u.skipped is not None:
                return False
            if u.paths is not None and (u.paths.conflicts or u.paths.index_conflicts):
                return False
            if u.repository is not None and u.repository.conflict:
                return False
        return True


def pick_entry(ws: Workspace, wanted: str | None) -> dict[str, Any]:
    """The log entry ``wanted`` (its id, or an unambiguous prefix), else the caller's
    last rescue in this work tree."""
    entries, _bad = decisions.read(ws.repo.ledger_dir_text)
    if wanted is not None:
        hits = [e for e in entries if str(e.get("id", "")).startswith(wanted)] if wanted else []
        if not hits:
            raise UsageError(f"no decision log entry {wanted!r} (see `guards log`)")
        if len({str(e.get("id")) for e in hits}) > 1:
            raise UsageError(f"{wanted!r} names several log entries; give more of the id")
        entry = hits[-1]
        if entry.get("kind") != decisions.Kind.RESCUED or not entry.get("rescues"):
            raise UsageError(
                f"log entry {wanted} is {entry.get('kind')}, not a rescue: nothing to bring back"
            )
        return entry
    here = ws.repo.worktree_key if ws.repo.toplevel else None
    mine = [
        e
        for e in entries
        if e.get("kind") == decisions.Kind.RESCUED
        and e.get("rescues")
        and e.get("session") == ws.caller
        and e.get("worktree") == here
    ]
    if not mine:
        who = f"session {ws.caller}" if ws.caller else "an unidentified caller"
        raise UsageError(
            f"nothing to undo: no rescue logged for {who} in this work tree "
            "(`guards log` lists every decision; `guards undo ID` picks one)"
        )
    return mine[-1]


def undo(ws: Workspace, entry: dict[str, Any], *, force: bool = False) -> Undone:
    """Restore every rescue ref of ``entry`` (see the module's docstring)."""
    here = ws.repo.worktree_key if ws.repo.toplevel else None
    if entry.get("worktree") not in (None, here):
        raise UsageError(
            f"log entry {entry.get('id')} rescued work of {entry.get('worktree')}; "
            "run guards undo there"
        )
    done = Undone(entry)
    for item in entry.get("rescues") or []:
        ref = str(item.get("ref") if isinstance(item, dict) else item)
        done.refs.append(_undo_ref(ws, ref, item, force, done))
    return done


def _undo_ref(ws: Workspace, ref: str, item: object, force: bool, done: Undone) -> UndoneRef:
    if isinstance(item, dict) and item.get("repository"):
        where = item["repository"]
        return UndoneRef(
            ref, skipped=f"in submodule {where}: cd {where} && guards rescue restore {ref}"
        )
    try:
        r = resolve(ws, ref)
    except UsageError:
        return UndoneRef(ref, skipped="the rescue ref is gone (dropped or pruned)")
    if r.repository:
        return UndoneRef(ref, r, repository=restore_repository(ws, r))
    if r.kept_commit:
        return UndoneRef(
            ref, r, skipped=f"it keeps a commit; bring it back with: {restore_commands(r)[0]}"
        )
    index = bool(r.one("Index"))
    restored = restore_paths(ws, r, [], index=index)
    in_the_way = [*restored.conflicts, *restored.index_conflicts]
    if not force or not in_the_way:
        return UndoneRef(ref, r, paths=restored)
    done.rescued_first += _rescue_first(
        ws, list(dict.fromkeys(in_the_way)), str(done.entry.get("id"))
    )
    again = restore_paths(ws, r, [], index=index, force=set(in_the_way))
    both = Restored(
        written=restored.written + again.written,  # the second pass writes forced paths only
        deleted=restored.deleted + again.deleted,
        already=restored.already,
        staged=restored.staged + again.staged,
        conflicts=again.conflicts,
        index_conflicts=again.index_conflicts,
        forced=again.forced + [p for p in restored.index_conflicts if p not in again.forced],
    )
    return UndoneRef(ref, r, paths=both)


def _rescue_first(ws: Workspace, paths: list[str], entry_id: str) -> list[RescueResult]:
    """The newer content in the way of a forced undo, to rescue refs, logged like a
    guarded command's rescue (so ``guards undo`` can bring it back)."""
    data, _problem = ws.read_ledger()  # unreadable: every owner is unknown
    records: Mapping[str, Any] = data.paths.get(ws.repo.worktree_key, {}) if data else {}
    top = ws.repo.worktree_key
    fmt = ws.repo.object_format
    at_risk = [
        AtRiskPath(p, classify(records.get(p), os.path.join(top, p), ws.caller, fmt).session)
        for p in paths
    ]
    command = f"guards undo --force {entry_id}"
    results = rescue_paths(ws, at_risk, command=command)
    entry = decisions.new_entry(
        decisions.Kind.RESCUED,
        via=VIA_UNDO,
        session=ws.caller,
        host=identity.hostname(),
        command=command,
        cwd=os.getcwd(),
        worktree=ws.repo.worktree_key if ws.repo.toplevel else None,
        policy=str(ws.config.policy),
        paths=[(a.path, a.owner) for a in at_risk],
        rescues=decision_rescues(results),
    )
    try:
        decisions.append(ws.repo.ledger_dir_text, entry, int(ws.config.get("log.max_bytes")))
    except GuardsError as e:
        from guards.output import warn

        warn(f"rescued first but not logged ({e}); `guards rescue list` shows it")
    return results
