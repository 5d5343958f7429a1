"""The rescues of a repository as objects: read, resolved by name, deleted.

A rescue is a ref under the rescue namespace (see :mod:`guards.protect.rescue`); its
commit's trailers say whose work it holds and how it was made, and the ledger's rescue
log adds what happened since (its push, a kept commit's label).
"""

from __future__ import annotations

import calendar
import os
import time
from dataclasses import dataclass, field
from typing import Any

from guards import output
from guards.errors import UsageError
from guards.git import process as git
from guards.git.objects import empty_tree
from guards.git.process import NO_HOOKS
from guards.git.quoting import unquote_path
from guards.git.refs import for_each_ref
from guards.git.repo import Repo
from guards.protect.rescue.log import rescue_log_entries
from guards.protect.rescue.naming import (
    PATH_COUNT,
    UNKNOWN,
    namespace,
    namespace_patterns,
    parse_trailers,
)
from guards.protect.rescue.refs import ref_values
from guards.protect.snapshot import read_tree_changes
from guards.state.ledger import op_drop_rescue
from guards.state.workspace import Workspace


@dataclass
class Rescue:
    ref: str
    commit: str
    created: float
    trailers: dict[str, list[str]]
    log: dict[str, Any] = field(default_factory=dict)
    #: where the rescue lives: a big rescue's paths are read from its trees
    repo: Repo | None = field(default=None, repr=False, compare=False)
    _from_trees: list[str] | None = field(default=None, repr=False, compare=False)

    def one(self, key: str) -> str | None:
        values = self.trailers.get(key)
        return values[0] if values else None

    @property
    def kept_commit(self) -> bool:
        """A kept stash entry or branch tip rather than a snapshot of paths."""
        return "Rescued-For" not in self.trailers

    @property
    def owner(self) -> str | None:
        owner = self.one("Rescued-For") if not self.kept_commit else self.log.get("owner")
        return None if owner in (None, UNKNOWN) else str(owner)

    @property
    def time(self) -> float:
        logged = self.log.get("time")
        if isinstance(logged, (int, float)):
            return float(logged)
        stamp = self.one("Time")
        if stamp:
            try:
                return float(calendar.timegm(time.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ")))
            except ValueError:
                pass
        return self.created

    @property
    def path_count(self) -> int:
        """How many paths it holds, without reading its trees."""
        counted = self.one(PATH_COUNT)
        return int(counted) if counted and counted.isdigit() else len(self.paths)

    @property
    def paths(self) -> list[str]:
        """Every path it holds: its ``Path`` trailers, or, when a big rescue left them out
        of its message (``Path-Count`` says more), what its trees change."""
        listed = self.trailers.get("Path", [])
        counted = self.one(PATH_COUNT)
        if counted is None or not counted.isdigit() or int(counted) == len(listed):
            return listed
        if self._from_trees is None:
            self._from_trees = self._paths_in_trees()
        return self._from_trees

    def _paths_in_trees(self) -> list[str]:
        """The paths whose worktree or staged state differs from the rescue's HEAD, and
        the conflicted ones (``<stage>/<path>`` in the stages commit)."""
        if self.repo is None:
            return []
        head = self.one("Head")
        base = head if head and head != "unborn" else empty_tree(self.repo.object_format)
        found: set[str] = set()
        for tree in (self.commit, self.one("Index")):
            if tree:
                found.update(read_tree_changes(self.repo, base, tree))
        stages = self.one("Conflict-Stages")
        if stages:
            res = self.repo.run(["ls-tree", "-r", "-z", "--name-only", "--full-tree", stages])
            for raw in git.zsplit(res.stdout):
                found.add(os.fsdecode(raw).split("/", 1)[1])
        return sorted(found)

    @property
    def repository(self) -> str | None:
        """The nested repository this rescue keeps whole (its directory), if it is one."""
        where = self.one("Repository")
        return unquote_path(where) if where else None

    def to_json(self) -> dict[str, Any]:
        return {
            "ref": self.ref,
            "commit": self.commit,
            "owner": self.owner,
            "caller": self.one("Rescued-By") or self.log.get("caller"),
            "command": self.one("Command") or self.log.get("command"),
            "host": self.one("Host") or self.log.get("host"),
            "time": output.iso(self.time),
            "head": self.one("Head"),
            "index_commit": self.one("Index"),
            "conflict_stages_commit": self.one("Conflict-Stages"),
            "kind": "repository" if self.repository else "commit" if self.kept_commit else "paths",
            "repository": self.repository,
            "label": self.log.get("label"),
            "paths": self.paths,
            "path_count": self.path_count,
            "push": self.log.get("push"),
            "push_detail": self.log.get("push_detail"),
            "remote": self.log.get("remote"),
            "local_only": self.log.get("local_only", []),
        }


def read_rescues(ws: Workspace, pattern: str | None = None) -> list[Rescue]:
    """Every ref under the rescue namespace, with its trailers and log entry, newest
    rescue first (by when it was rescued: a kept stash entry's commit is older)."""
    rows = for_each_ref(
        ws.repo.run,
        ("refname", "objectname", "creatordate:unix", "contents"),
        [pattern] if pattern else namespace_patterns(ws),
    )
    log = rescue_log_entries(ws)
    out = [
        Rescue(
            ref,
            commit,
            float(created or 0),
            parse_trailers(message),
            log.get(ref, {}),
            repo=ws.repo,
        )
        for ref, commit, created, message in rows
    ]
    out.sort(key=lambda r: (r.time, r.ref), reverse=True)
    return out


#: ``guards rescue show latest`` / ``@1`` (the newest), ``@2``, ...: as `rescue list` numbers them.
LATEST = "latest"


def shorthand_index(name: str) -> int | None:
    """The 1-based position ``latest`` / ``@N`` names in the newest-first list; None
    for any other name."""
    if name == LATEST:
        return 1
    if name.startswith("@") and name[1:].isdigit() and int(name[1:]) >= 1:
        return int(name[1:])
    return None


def resolve(ws: Workspace, name: str) -> Rescue:
    """A rescue by full ref name, by its name under the namespace, or by ``latest`` /
    ``@N`` (the Nth newest)."""
    index = shorthand_index(name)
    if index is not None:
        rescues = read_rescues(ws)
        if index > len(rescues):
            held = f"only {len(rescues)}" if rescues else "none"
            raise UsageError(f"no rescue {name}: there are {held} (see `guards rescue list`)")
        return rescues[index - 1]
    ns = namespace(ws)
    candidates = [name] if name.startswith("refs/") else [f"{ns}/{name}", name]
    found = ref_values(ws, candidates)
    for c in candidates:
        if c in found:
            rescues = [r for r in read_rescues(ws, c) if r.ref == c]
            if rescues:
                return rescues[0]
    raise UsageError(f"no rescue ref {name!r} (see `guards rescue list`)")


def restore_commands(r: Rescue) -> list[str]:
    if r.repository:
        return [f"guards rescue restore {r.ref}   (the repository {r.repository}/, anew)"]
    if r.kept_commit:
        label = str(r.log.get("label") or "")
        if label.startswith("stash"):
            return [f"git stash apply --index {r.ref}"]
        if label.startswith("branch "):
            return [f"git branch {label.split(' ', 1)[1]} {r.ref}"]
        return [f"git log {r.ref}"]
    return [
        f"guards rescue restore {r.ref}",
        f"guards rescue restore --index {r.ref}   (staged versions too)",
        f"git restore --source={r.ref} -- <path>",
        f"git show {r.ref}:<path>",
    ]


def delete_rescue(ws: Workspace, r: Rescue) -> None:
    ws.repo.run(
        [*NO_HOOKS, "update-ref", "-m", "guards rescue drop", "-d", r.ref, r.commit],
        readonly=False,
    )
    # The ledger's rescue log goes with the ref (a journal record: no lock, O(1)).
    ws.ledger.append([op_drop_rescue(r.ref)])
