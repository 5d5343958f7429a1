"""guards rescue list/show/restore/drop/prune: browse rescues, put work back, delete on request."""

from __future__ import annotations

import argparse
import calendar
import os
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from guards import git, output
from guards.config import parse_duration
from guards.errors import ExitCode, GuardsError, UsageError
from guards.git.objects import EXECUTABLE, GITLINK, SYMLINK, TREE
from guards.git.quoting import unquote_path
from guards.protect.rescue import (
    NO_HOOKS,
    RAW_BYTES,
    UNKNOWN,
    namespace,
    namespace_patterns,
    parse_trailers,
    ref_values,
    rescue_log_entries,
)
from guards.protect.snapshot import (
    Entry,
    State,
    disk_states,
    filtered_oids,
    index_info_line,
    read_objects,
    tree_entries,
)
from guards.state.ledger import op_drop_rescue
from guards.state.workspace import Workspace

HELP = "list, show, restore and delete rescues (work saved before a destructive command)"


def configure(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    lst = sub.add_parser("list", help="rescue refs, newest first")
    lst.add_argument("--json", action="store_true", help="machine-readable (see README)")
    lst.add_argument("--owner", metavar="SESSION", help="only rescues of this session")
    show = sub.add_parser("show", help="what a rescue holds and how to restore it")
    show.add_argument("ref")
    show.add_argument("--json", action="store_true")
    restore = sub.add_parser(
        "restore", help="put rescued files back; newer edits are left alone (conflicts)"
    )
    restore.add_argument("ref")
    restore.add_argument("paths", nargs="*", metavar="PATH", help="default: every rescued path")
    restore.add_argument("--index", action="store_true", help="restore staged versions too")
    drop = sub.add_parser("drop", help="delete one rescue ref")
    drop.add_argument("ref")
    prune = sub.add_parser("prune", help="delete rescue refs older than a duration")
    prune.add_argument("--older-than", required=True, metavar="D", help="e.g. 30d, 2w, 12h")
    prune.add_argument("--owner", metavar="SESSION")
    prune.add_argument("--dry-run", action="store_true", help="only say what would go")


def run(args: argparse.Namespace) -> int:
    actions = {
        "list": _list,
        "show": _show,
        "restore": _restore,
        "drop": _drop,
        "prune": _prune,
    }
    return actions[args.action](args)


# -- reading rescues -----------------------------------------------------------------------


@dataclass
class Rescue:
    ref: str
    commit: str
    created: float
    trailers: dict[str, list[str]]
    log: dict[str, Any] = field(default_factory=dict)

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
    def paths(self) -> list[str]:
        return self.trailers.get("Path", [])

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
            "push": self.log.get("push"),
            "push_detail": self.log.get("push_detail"),
            "remote": self.log.get("remote"),
            "local_only": self.log.get("local_only", []),
        }


def read_rescues(ws: Workspace, pattern: str | None = None) -> list[Rescue]:
    """Every ref under the rescue namespace, with its trailers and log entry."""
    res = ws.repo.run(
        [
            "for-each-ref",
            "--sort=-creatordate",
            "--format=%(refname)%00%(objectname)%00%(creatordate:unix)%00%(contents)%00",
            *([pattern] if pattern else namespace_patterns(ws)),
        ]
    )
    fields = res.stdout.split(b"\0")
    log = rescue_log_entries(ws)
    out = []
    for i in range(0, len(fields) - 4, 4):
        ref = fields[i].lstrip(b"\n").decode("utf-8", "surrogateescape")
        created = float(fields[i + 2] or 0)
        message = fields[i + 3].decode("utf-8", "surrogateescape")
        out.append(
            Rescue(ref, fields[i + 1].decode(), created, parse_trailers(message), log.get(ref, {}))
        )
    return out


def resolve(ws: Workspace, name: str) -> Rescue:
    """A rescue by full ref name or by its name under the namespace."""
    ns = namespace(ws)
    candidates = [name] if name.startswith("refs/") else [f"{ns}/{name}", name]
    found = ref_values(ws, candidates)
    for c in candidates:
        if c in found:
            rescues = [r for r in read_rescues(ws, c) if r.ref == c]
            if rescues:
                return rescues[0]
    raise UsageError(f"no rescue ref {name!r} (see `guards rescue list`)")


# -- list / show ------------------------------------------------------------------------------


def _list(args: argparse.Namespace) -> int:
    ws = Workspace.open()
    rescues = read_rescues(ws)
    if args.owner:
        rescues = [r for r in rescues if r.owner == args.owner]
    if args.json:
        output.dump_json({"rescues": [r.to_json() for r in rescues]})
        return ExitCode.OK
    if not rescues:
        print("no rescues")
        return ExitCode.OK
    rows = [
        (
            r.ref,
            r.owner or UNKNOWN,
            str(r.one("Command") or r.log.get("command") or "-"),
            output.age(r.time),
            str(r.log.get("label") or f"{len(r.paths)} path{'s' if len(r.paths) != 1 else ''}"),
            str(r.log.get("push") or "local"),
        )
        for r in rescues
    ]
    print(output.table(rows, ("REF", "OWNER", "COMMAND", "AGE", "HOLDS", "PUSH")))
    return ExitCode.OK


def _show(args: argparse.Namespace) -> int:
    ws = Workspace.open()
    r = resolve(ws, args.ref)
    if args.json:
        output.dump_json({"rescue": r.to_json(), "restore": _restore_commands(r)})
        return ExitCode.OK
    doc = r.to_json()
    rows = [
        ("ref", r.ref),
        ("commit", r.commit),
        ("owner", r.owner or "unknown"),
        ("caller", str(doc["caller"] or "-")),
        ("command", str(doc["command"] or "-")),
        ("time", f"{doc['time']} ({output.age(r.time)})"),
        ("host", str(doc["host"] or "-")),
    ]
    if r.kept_commit:
        rows.append(("holds", str(doc["label"] or "a commit")))
    else:
        rows.append(("head", str(doc["head"] or "-")))
    if doc["push"]:
        rows.append(("push", f"{doc['push']} ({doc['remote']}) {doc['push_detail'] or ''}".strip()))
    if doc["local_only"]:
        rows.append(("local only", ", ".join(output.show_path(p) for p in doc["local_only"])))
    print(output.table(rows))
    if r.paths:
        print(f"paths ({len(r.paths)}):")
        for p in r.paths:
            print(f"  {output.show_path(p)}")
    print("restore:")
    for c in _restore_commands(r):
        print(f"  {c}")
    return ExitCode.OK


def _restore_commands(r: Rescue) -> list[str]:
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


# -- restore ----------------------------------------------------------------------------------


def _tree_states(ws: Workspace, treeish: str | None, paths: list[str]) -> dict[str, State]:
    if treeish is None or not paths:
        return dict.fromkeys(paths)
    return tree_entries(ws.repo, treeish, paths)


def _index_states(ws: Workspace, paths: list[str]) -> dict[str, State]:
    out: dict[str, State] = dict.fromkeys(paths)
    wanted = set(paths)
    for start in range(0, len(paths), 500):
        chunk = paths[start : start + 500]
        res = ws.repo.run(["--literal-pathspecs", "ls-files", "-s", "-z", "--", *chunk])
        for rec in git.zsplit(res.stdout):
            meta, _, raw = rec.partition(b"\t")
            p = os.fsdecode(raw)
            mode, oid, stage = meta.decode().split(" ")
            if p in wanted and stage == "0":
                out[p] = Entry(mode, oid)
    return out


def _same(ws: Workspace, p: str, disk: State | str, want: State, filemode: bool) -> bool:
    if isinstance(disk, str) or disk is None or want is None:
        return disk == want
    if (disk.mode if filemode else disk.mode[:3]) != (want.mode if filemode else want.mode[:3]):
        return False
    if disk.oid == want.oid:
        return True
    # The raw bytes differ from the blob: maybe a clean filter or eol conversion.
    return filtered_oids(ws.repo, [p]).get(p) == want.oid


def _select(ws: Workspace, r: Rescue, user_paths: list[str]) -> list[str]:
    if not user_paths:
        return list(r.paths)
    chosen: list[str] = []
    for raw in user_paths:
        rel = ws.repo_relative(raw)
        hits = [p for p in r.paths if not rel or p == rel or p.startswith(rel.rstrip("/") + "/")]
        if not hits:
            raise UsageError(f"{raw!r} is not among the paths of {r.ref}")
        chosen += [p for p in hits if p not in chosen]
    return chosen


def _restore(args: argparse.Namespace) -> int:
    ws = Workspace.open()
    r = resolve(ws, args.ref)
    if r.repository:
        return _restore_repository(ws, r)
    if r.kept_commit:
        raise UsageError(
            f"{r.ref} keeps a commit, not paths; restore it with: {_restore_commands(r)[0]}"
        )
    paths = _select(ws, r, args.paths)
    filemode = (
        ws.repo.run(["config", "--type=bool", "--get", "core.filemode"], check=False).stdout.strip()
        != b"false"
    )
    rescued = _tree_states(ws, r.commit, paths)
    head = _tree_states(ws, "HEAD" if ws.repo.head() else None, paths)
    disk = disk_states(ws.repo, paths, filemode)
    write: list[str] = []
    delete: list[str] = []
    conflicts: list[str] = []
    already = 0
    for p in paths:
        if _same(ws, p, disk[p], rescued[p], filemode):
            already += 1
        elif _same(ws, p, disk[p], head[p], filemode):
            (write if rescued[p] is not None else delete).append(p)
        else:
            conflicts.append(p)
    index_conflicts: list[str] = []
    index_updates: list[bytes] = []
    index_commit = r.one("Index")
    if args.index and index_commit:
        staged = _tree_states(ws, index_commit, paths)
        current = _index_states(ws, paths)
        for p in paths:
            if current[p] == staged[p]:
                continue
            if current[p] == head[p]:
                index_updates.append(index_info_line(p, staged[p], ws.repo.object_format))
            else:
                index_conflicts.append(p)
    if r.one("Bytes") == RAW_BYTES:
        _write_raw(ws, {p: rescued[p] for p in write})
    else:  # rescues of older guards hold what git's clean filters made of the files
        _checkout(ws, {p: rescued[p] for p in write})
    for p in delete:
        os.unlink(ws.repo.worktree / p)
    if index_updates:
        ws.repo.run(
            [*NO_HOOKS, "update-index", "-z", "--index-info"],
            stdin=b"".join(index_updates),
            readonly=False,
        )
    done = len(write) + len(delete)
    print(
        f"restored {done} path{'s' if done != 1 else ''} from {r.ref}"
        + (f" ({already} already as rescued)" if already else "")
        + (f"; {len(index_updates)} staged versions restored" if index_updates else "")
    )
    for p in conflicts:
        print(
            f"conflict: {output.show_path(p)} changed since the rescue; left alone "
            f"(compare: git diff {r.ref} -- {output.show_path(p)})"
        )
    for p in index_conflicts:
        print(f"conflict: staged {output.show_path(p)} changed since the rescue; index left alone")
    return ExitCode.FINDINGS if conflicts or index_conflicts else ExitCode.OK


def _write_raw(ws: Workspace, entries: dict[str, State], top: Path | None = None) -> None:
    """Write rescued files byte for byte: no smudge filter, no eol conversion (the rescue
    holds the bytes that were on disk). Each file is written aside and renamed into place.
    """
    blobs = {p: s for p, s in entries.items() if s is not None and s.mode not in (GITLINK, TREE)}
    contents = read_objects(ws.repo, [s.oid for s in blobs.values()])
    missing = [p for p, s in blobs.items() if s.oid not in contents]
    if missing:
        raise GuardsError(
            f"cannot restore {output.show_path(missing[0])}: its rescued blob does not read "
            f"back (run git fsck)"
        )
    top = ws.repo.worktree if top is None else top
    for p, state in entries.items():
        if state is None:
            continue
        target = top / p
        target.parent.mkdir(parents=True, exist_ok=True)
        if state.mode == GITLINK:
            target.mkdir(exist_ok=True)  # a submodule's directory, as git checks it out
            continue
        data = contents[state.oid]
        aside = target.parent / f".{target.name}.guards-restore-{os.getpid()}"
        if state.mode == SYMLINK:
            os.symlink(os.fsdecode(data), aside)
        else:
            mode = 0o777 if state.mode == EXECUTABLE else 0o666  # the umask applies
            fd = os.open(aside, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
            try:
                with os.fdopen(fd, "wb") as f:
                    f.write(data)
            except BaseException:
                os.unlink(aside)
                raise
        os.replace(aside, target)


def _restore_repository(ws: Workspace, r: Rescue) -> int:
    """A kept nested repository, anew where it was: its refs and HEAD, its index as
    rescued, and the rescued files that are missing on disk (newer files stay)."""
    from guards.protect.rescue.nested import own_environment

    assert r.repository is not None
    target = ws.repo.worktree / r.repository
    shown = output.show_path(r.repository + "/")
    if os.path.lexists(target / ".git"):
        print(f"conflict: {shown} holds a repository again; left alone (compare: git log {r.ref})")
        return ExitCode.FINDINGS
    refs = [v.rsplit(" ", 1) for v in r.trailers.get("Repository-Ref", [])]
    head = (r.one("Repository-Head") or "unborn").removesuffix(" (unborn)")
    scratch = "refs/guards/restoring"
    target.mkdir(parents=True, exist_ok=True)
    with own_environment():

        def run(*args: str, stdin: bytes | None = None) -> None:
            git.run(list(args), cwd=target, stdin=stdin, readonly=False)

        run("init", "-q")
        source = os.fspath(ws.repo.common_dir)
        run("fetch", "-q", "--no-tags", "--no-write-fetch-head", source, f"+{r.ref}:{scratch}")
        objects = r.one("Repository-Objects")
        if objects:  # tag objects, kept as blobs of their raw content
            for tag in _all_entries(ws, objects):
                if tag.startswith("tag/"):
                    raw = ws.repo.run(["cat-file", "blob", f"{objects}:{tag}"]).stdout
                    run("hash-object", "-t", "tag", "-w", "--stdin", stdin=raw)
        payload = b"".join(
            b"create %s\0%s\0" % (os.fsencode(unquote_path(name)), oid.encode())
            for name, oid in refs
            if name != "refs/stash"  # the stash is its reflog: stored entry by entry
        )
        run("update-ref", "-z", "--stdin", stdin=payload)
        for entry in reversed(r.trailers.get("Repository-Stash", [])):
            subject = ws.repo.run(["log", "-1", "--format=%s", entry]).stdout.decode().strip()
            run("stash", "store", "-q", "-m", subject, entry)
        if head.startswith("refs/"):
            run("symbolic-ref", "HEAD", head)
        elif head != "unborn":
            run("update-ref", "--no-deref", "HEAD", head)
        index = r.one("Index")
        if index or head != "unborn":
            run("read-tree", index or "HEAD")
        run("update-ref", "-d", scratch)
    files = _all_entries(ws, r.commit)
    missing = {p: e for p, e in files.items() if not os.path.lexists(target / p)}
    _write_raw(ws, missing, target)
    print(
        f"restored the repository {shown} from {r.ref}: {len(refs)} refs, HEAD {head}, "
        f"{len(missing)} files written ({len(files) - len(missing)} already on disk)"
    )
    return ExitCode.OK


def _all_entries(ws: Workspace, treeish: str) -> dict[str, State]:
    """Every file entry of ``treeish``."""
    res = ws.repo.run(["ls-tree", "-r", "-z", "--full-tree", treeish])
    out: dict[str, State] = {}
    for rec in git.zsplit(res.stdout):
        meta, _, raw = rec.partition(b"\t")
        mode, _kind, oid = meta.decode().split(" ")
        out[os.fsdecode(raw)] = Entry(mode, oid)
    return out


def _checkout(ws: Workspace, entries: dict[str, State]) -> None:
    """Write rescued blobs to the work tree through a private index (filters and modes apply)."""
    if not entries:
        return
    tmp = Path(tempfile.mkdtemp(prefix="guards-restore-"))
    try:
        env = {"GIT_INDEX_FILE": str(tmp / "index")}
        fmt = ws.repo.object_format
        info = b"".join(index_info_line(p, s, fmt) for p, s in entries.items())
        git.run(["update-index", "-z", "--index-info"], cwd=ws.repo.worktree, stdin=info,
                extra_env=env, readonly=False)  # fmt: skip
        git.run(
            ["checkout-index", "-f", "-z", "--stdin"],
            cwd=ws.repo.worktree,
            stdin=git.nul_join(entries),
            extra_env=env,
            readonly=False,
        )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


# -- drop / prune -----------------------------------------------------------------------------


def _delete(ws: Workspace, r: Rescue) -> None:
    ws.repo.run(
        [*NO_HOOKS, "update-ref", "-m", "guards rescue drop", "-d", r.ref, r.commit],
        readonly=False,
    )
    # The ledger's rescue log goes with the ref (a journal record: no lock, O(1)).
    ws.ledger.append([op_drop_rescue(r.ref)])


def _drop(args: argparse.Namespace) -> int:
    ws = Workspace.open()
    r = resolve(ws, args.ref)
    _delete(ws, r)
    print(f"dropped {r.ref} (was {r.commit[:12]}; `git branch keep {r.commit}` while it lasts)")
    return ExitCode.OK


def _prune(args: argparse.Namespace) -> int:
    ws = Workspace.open()
    try:
        age = parse_duration(args.older_than)
    except ValueError as e:
        raise UsageError(f"bad --older-than {args.older_than!r}: expected {e}") from None
    cutoff = time.time() - age
    doomed = [
        r for r in read_rescues(ws) if r.time < cutoff and (not args.owner or r.owner == args.owner)
    ]
    for r in doomed:
        if not args.dry_run:
            _delete(ws, r)
        verb = "would drop" if args.dry_run else "dropped"
        print(f"{verb} {r.ref} ({output.age(r.time)})")
    if not doomed:
        print("nothing to prune")
    return ExitCode.OK
