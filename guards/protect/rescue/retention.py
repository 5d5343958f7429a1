"""Retention without loss: which rescues hold nothing that is not already elsewhere.

A rescue is *redundant* when every version it keeps is found somewhere else that git
or the checkout keeps:

- **pushed**: the ledger's log says this very commit was pushed to the rescue remote,
  and nothing of it was kept local-only (ignored files, secrets);
- **committed**: a kept commit (a stash entry, a branch tip) that a local branch or
  tag contains; or, for rescued paths, every rescued version (work tree and staged) is
  a version of that path in the history of a local branch or tag;
- **restored**: every rescued version equals what the work tree (or the index) holds
  now — restored and unchanged.

Those sources combine path by path. Anything guards cannot judge keeps the rescue: a
conflict's stages, a gitlink, a nested repository kept whole (unless pushed), a file
whose bytes differ from the blob only by a filter. Age never makes a rescue redundant
(``guards rescue prune --older-than`` is the explicit request for that).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from guards.git import process as git
from guards.git.entries import Entry, index_entries_of
from guards.git.objects import GITLINK, TREE
from guards.git.refs import for_each_ref
from guards.protect.rescue.catalog import Rescue, read_rescues
from guards.protect.rescue.push import PushOutcome
from guards.protect.snapshot import disk_states, tree_entries
from guards.state.workspace import Workspace

#: Reasons, as ``guards rescue prune --redundant`` and doctor name them.
PUSHED = "pushed to the rescue remote"
COMMITTED = "committed on a branch"
RESTORED = "restored and unchanged"


@dataclass(frozen=True)
class Redundant:
    rescue: Rescue
    #: where its content is (one or more of PUSHED, COMMITTED, RESTORED)
    where: tuple[str, ...]


def redundant_rescues(ws: Workspace, rescues: list[Rescue] | None = None) -> list[Redundant]:
    """The rescues (default: all) whose every version is already elsewhere."""
    rescues = read_rescues(ws) if rescues is None else rescues
    out = []
    for r in rescues:
        where = _elsewhere(ws, r)
        if where:
            out.append(Redundant(r, where))
    return out


def _elsewhere(ws: Workspace, r: Rescue) -> tuple[str, ...]:
    if _pushed(r):
        return (PUSHED,)
    if r.repository:
        return ()  # a whole repository: only a push keeps it elsewhere
    if r.kept_commit:
        return (COMMITTED,) if _on_a_branch(ws, r.commit) else ()
    if r.one("Conflict-Stages") or not r.paths:
        return ()
    return _paths_elsewhere(ws, r)


def _pushed(r: Rescue) -> bool:
    return (
        r.log.get("push") == PushOutcome.PUSHED
        and r.log.get("commit") in (None, r.commit)
        and not r.log.get("local_only")
    )


def _on_a_branch(ws: Workspace, commit: str) -> bool:
    patterns = ["refs/heads", "refs/tags"]
    return bool(
        for_each_ref(ws.repo.run, ("refname",), patterns, count=1, contains=commit, check=False)
    )


def _paths_elsewhere(ws: Workspace, r: Rescue) -> tuple[str, ...]:
    paths = list(r.paths)
    kept: dict[str, list[Entry]] = {p: [] for p in paths}
    for treeish in (r.commit, r.one("Index")):
        if treeish:
            for p, state in tree_entries(ws.repo, treeish, paths).items():
                if state is not None:
                    kept[p].append(state)
    if any(s.mode in (GITLINK, TREE) for states in kept.values() for s in states):
        return ()
    filemode = ws.repo.filemode()
    disk = disk_states(ws.repo, paths, filemode) if ws.repo.toplevel else {}
    index = _index_oids(ws, paths) if ws.repo.toplevel else {}
    committed: dict[str, set[str]] | None = None
    where: set[str] = set()
    for p, states in kept.items():
        for state in states:
            on_disk = disk.get(p)
            now = on_disk.oid if isinstance(on_disk, Entry) else None
            if state.oid in (now, index.get(p)):
                where.add(RESTORED)
                continue
            if committed is None:
                committed = _branch_versions(ws, paths)
            if state.oid in committed.get(p, set()):
                where.add(COMMITTED)
                continue
            return ()
    return tuple(sorted(where)) or (RESTORED,)


def _index_oids(ws: Workspace, paths: list[str]) -> dict[str, str]:
    return {
        item.path: item.entry.oid
        for item in index_entries_of(ws.repo.run, paths)
        if item.stage == 0
    }


def _branch_versions(ws: Workspace, paths: list[str]) -> dict[str, set[str]]:
    """Every blob each path has had in the history of local branches and tags."""
    out: dict[str, set[str]] = {}
    for start in range(0, len(paths), 500):
        chunk = paths[start : start + 500]
        res = ws.repo.run(
            ["--literal-pathspecs", "log", "--branches", "--tags", "--root", "--raw", "-z",
             "--no-renames", "--no-abbrev", "--format=", "--", *chunk],
            check=False,
        )  # fmt: skip
        if res.returncode != 0:
            continue  # no branch at all: nothing is committed
        fields = git.zsplit(res.stdout)
        i = 0
        while i + 1 < len(fields):
            meta = fields[i].strip(b"\n")
            if not meta.startswith(b":"):
                i += 1
                continue
            new_oid = meta.split(b" ")[3].decode()
            out.setdefault(os.fsdecode(fields[i + 1]), set()).add(new_oid)
            i += 2
    return out
