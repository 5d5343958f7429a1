"""Receipts: what a harness hook already rescued for one shell command, so that the same
command's own guard does not rescue it a second time.

The agent hook guards a shell line before the harness runs it. When the line's ``git``
is the shim (or an alias), ``guards run`` then guards the same git command again, from
inside the line: it finds the same foreign work still in place, and without a receipt
rescues it again (a second ref, and a second notice to the agent, for the same bytes).

A receipt states a fact, it grants nothing: "session S's command K rescued these paths
to rescue ref R, commit C (their work-tree state), index commit I (their index state)".
A guard running as session S (the shim runs in the harness's environment, where the
hook exported ``GUARDS_SESSION``) counts an at-risk path as already rescued only when

- a receipt of S itself, for this work tree, names the path (an unidentified guard, the
  shim inside a harness that gives its shell commands no session id, such as Gemini
  CLI, takes any session's receipt: the checks below prove the bytes held whoever
  rescued them, and it owns nothing a receipt could have left out);
- R still points at C; and
- the path holds now exactly what C holds (mode and blob id, or absent), and the index
  exactly what I holds (a conflicted path never counts).

Anything written since (a third writer, an earlier command of the same line) makes the
path at risk again and it is rescued as usual. Ownership is untouched: the path stays
the other writer's in the ledger. The hook removes its receipts when the command ends;
the receipts of a command whose end never came are swept after a day.
"""

from __future__ import annotations

import hashlib
import os
import time

from guards import fsutil, jsontext
from guards.state.workspace import Workspace

TYPE_CHECKING = False  # see guards.values: these imports cost start-up time
if TYPE_CHECKING:
    from guards.git.entries import State
    from guards.protect.rescue import RescueResult

RECEIPTS_DIR = "receipts"
#: Receipts of commands whose end was never reported are removed after this long.
MAX_AGE = 24 * 3600


def _file_name(session: str, key: str) -> str:
    safe = "".join(c if c.isalnum() or c in "-_.=@+" else "_" for c in f"{session}.{key}")
    return safe[:200] + ".json"


def write(session: str, key: str, rescues: list[tuple[str, RescueResult]]) -> list[str]:
    """Leave the receipts of ``rescues`` (each with a directory of the repository it was
    made in) for command ``key`` of ``session``: one file per repository; returns them."""
    by_repo: dict[str, tuple[Workspace, list[dict[str, object]]]] = {}
    opened: dict[str, Workspace] = {}
    for where, r in rescues:
        if r.index_commit is None or not r.paths:
            continue  # a kept commit, not paths: nothing a path check could use
        ws = opened.get(where) or opened.setdefault(where, Workspace.open(cwd=where))
        if ws.repo.toplevel is None:
            continue
        entry = by_repo.setdefault(ws.repo.worktree_key, (ws, []))
        entry[1].append(
            {"ref": r.ref, "commit": r.commit, "index": r.index_commit, "paths": r.paths}
        )
    files = []
    for worktree, (ws, receipts) in by_repo.items():
        folder = ws.repo.ledger_dir / RECEIPTS_DIR
        folder.mkdir(parents=True, exist_ok=True)
        # One ledger directory serves every linked worktree: the name says which.
        digest = hashlib.sha256(worktree.encode("utf-8", "surrogateescape")).hexdigest()[:12]
        path = folder / _file_name(session, f"{key}.{digest}")
        doc = {"session": session, "worktree": worktree, "time": time.time(), "rescues": receipts}
        fsutil.atomic_write(path, jsontext.dumps(doc).encode())
        files.append(str(path))
    return files


def discard(files: list[str]) -> None:
    """The command ended: its receipts go (and any a day old, whoever left them)."""
    folders = set()
    for name in files:
        folder = os.path.dirname(name)
        if os.path.basename(folder) != RECEIPTS_DIR or not name.endswith(".json"):
            continue  # not a receipt: never delete anything else
        fsutil.remove(name)
        folders.add(folder)
    limit = time.time() - MAX_AGE
    for folder in folders:
        try:
            with os.scandir(folder) as entries:
                old = [e.path for e in entries if _modified(e) < limit]
        except OSError:
            continue
        for path in old:
            fsutil.remove(path)


def _modified(entry: os.DirEntry[str]) -> float:
    """When an entry changed last; never for one gone meanwhile (nothing to sweep)."""
    try:
        return entry.stat().st_mtime
    except OSError:
        return float("inf")


def _receipts(ws: Workspace) -> list[dict[str, object]]:
    """The caller's receipts for this work tree (an unidentified caller's: every
    session's)."""
    if ws.repo.toplevel is None:
        return []
    folder = ws.repo.ledger_dir / RECEIPTS_DIR
    found: list[dict[str, object]] = []
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return []
    for entry in entries:
        if not entry.name.endswith(".json") or entry.name.startswith("."):
            continue
        try:
            with open(entry.path, encoding="utf-8") as f:
                doc = jsontext.loads(f.read())
        except (OSError, ValueError):
            continue  # unreadable: proves nothing
        if (
            isinstance(doc, dict)
            and (ws.caller is None or doc.get("session") == ws.caller)
            and doc.get("worktree") == ws.repo.worktree_key
            and isinstance(doc.get("rescues"), list)
        ):
            found += [r for r in doc["rescues"] if isinstance(r, dict)]
    return found


def already_rescued(ws: Workspace, paths: list[str]) -> set[str]:
    """The ``paths`` (at risk, not the caller's) whose current work-tree and index state a
    receipt of the caller (of anyone, for an unidentified caller) proves held by a rescue
    ref already (a directory: every file under it)."""
    receipts = _receipts(ws)
    if not receipts or not paths:
        return set()
    from guards.protect.rescue import ref_values

    refs = ref_values(ws, [str(r.get("ref")) for r in receipts])
    sources: list[tuple[str, str, list[str]]] = []
    for r in receipts:
        commit, index, listed = r.get("commit"), r.get("index"), r.get("paths")
        if not isinstance(commit, str) or not isinstance(index, str):
            continue
        if refs.get(str(r.get("ref"))) != commit or not isinstance(listed, list):
            continue  # the ref moved or is gone: the receipt proves nothing any more
        sources.append((commit, index, [str(f) for f in listed]))
    return held_in(ws, paths, sources)


def still_held(ws: Workspace, paths: list[str], results: list[RescueResult]) -> set[str]:
    """The ``paths`` whose current work-tree and index state one of ``results`` (rescues
    just made) holds: unchanged since they were rescued. A submodule among the paths is
    held when every dirty path inside it is, by the rescues made in its own repository."""

    def sources_in(repository: str | None) -> list[tuple[str, str, list[str]]]:
        return [
            (r.commit, r.index_commit, r.paths)
            for r in results
            if r.index_commit is not None and r.paths and r.repository == repository
        ]

    here = sources_in(None)
    held = held_in(ws, paths, here) if here and paths else set()
    for path in paths:
        inside = sources_in(path.rstrip("/")) if path not in held else []
        if inside and _submodule_held(ws, path.rstrip("/"), inside):
            held.add(path)
    return held


def _submodule_held(ws: Workspace, path: str, sources: list[tuple[str, str, list[str]]]) -> bool:
    """Whether the submodule at ``path`` has dirty work and ``sources`` (rescues made in
    its repository) hold all of it as it is now."""
    from guards.errors import GuardsError
    from guards.git.dirty import read_dirty

    top = os.path.join(ws.repo.worktree_key, path)
    try:
        inner = Workspace.open(cwd=top)
        if inner.repo.toplevel_text is None:
            return False
        if os.path.realpath(inner.repo.toplevel_text) != os.path.realpath(top):
            return False  # not a repository of its own there (any more)
        # Ignored files too: one the rescue does not hold means "not held" (rescued again).
        dirty = [d.path for d in read_dirty(inner.repo, ignored=True)]
        return bool(dirty) and held_in(inner, dirty, sources) == set(dirty)
    except GuardsError:
        return False  # cannot tell: judged (and rescued) again


#: Key of the index file's own signature among the path signatures.
INDEX_KEY = "\0index"
#: A file changed this close to when its signature was taken may change again without
#: a visible difference (the clocks stamp in coarse steps): its content decides.
RACY_NS = 20_000_000


def signatures(ws: Workspace, paths: list[str]) -> dict[str, object]:
    """What each path (and the index) looks like now, by metadata: taken right before a
    rescue hashes them, compared by :func:`unchanged` before git runs."""
    import time

    taken = time.time_ns()  # before the stats: a write after them shows a later time
    top = ws.repo.worktree_key + os.sep
    own = _rescues_write(ws)
    out: dict[str, object] = {p: _signature(top + p, own) for p in paths}
    out[INDEX_KEY] = _signature(_index_file(ws))
    out["\0taken"] = taken
    return out


def unchanged(ws: Workspace, paths: list[str], seen: dict[str, object]) -> set[str]:
    """The ``paths`` whose metadata (and the index's) is what :func:`signatures` saw,
    and not racily so: the rescue made then holds them as they are."""
    if not seen or _signature(_index_file(ws)) != seen.get(INDEX_KEY):
        return set()
    import time

    taken = seen.get("\0taken")
    # Racy: stamped between just before the signature and now, so a write since may have
    # left the same stamp. A stamp ahead of the clock (skew: a network file system, a
    # tar from another machine) is not: a write now would stamp it now, visibly.
    racy_from = (taken if isinstance(taken, int) else 0) - RACY_NS
    racy_to = time.time_ns() + RACY_NS
    top = ws.repo.worktree_key + os.sep
    own = _rescues_write(ws)
    found = set()
    for p in paths:
        if p not in seen:
            continue
        sig = _signature(top + p, own)
        if sig == seen[p] and not any(racy_from <= t <= racy_to for t in _times(sig)):
            found.add(p)
    return found


def _index_file(ws: Workspace) -> str:
    return ws.repo.index_file_text()


def _rescues_write(ws: Workspace) -> frozenset[str]:
    """What a rescue writes inside a nested repository's or submodule's ``.git``
    (relative to it): objects, refs (with their logs) in the rescue namespace, and its
    log in guards' ledger there. A signature leaves them out: they are guards' own
    writes, not another writer's."""
    from guards.git.repo import LEDGER_DIR

    namespace = str(ws.config.get("rescue.namespace"))
    return frozenset({"objects", namespace, f"logs/{namespace}", LEDGER_DIR})


def stat_key(signature: object) -> tuple[int, int, int, int] | None:
    """The (mode, size, mtime_ns, inode) of the ``lstat`` a :func:`signatures` entry was
    taken from, for judging the path without another one; None when there was none
    (absent or unreadable: the judge looks for itself, and tells the two apart)."""
    if not isinstance(signature, tuple) or not signature:
        return None
    entry = signature[0] if isinstance(signature[0], tuple) else signature  # a directory
    mode, size, mtime_ns, _ctime_ns, inode = entry
    return (mode, size, mtime_ns, inode)


def _signature(path: str, own: frozenset[str] = frozenset()) -> object:
    """(mode, size, mtime, ctime, inode) of ``path``, None when absent; a directory
    (a nested repository, a submodule) with every entry under it but what ``own``
    names inside a ``.git`` (see :func:`_rescues_write`)."""
    import stat

    try:
        st = os.lstat(path)
    except OSError:
        return None
    entry = (st.st_mode, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)
    if not stat.S_ISDIR(st.st_mode):
        return entry
    inside: list[object] = [entry]
    marker = os.sep + ".git" + os.sep
    git_dirs: list[str] = []  # the .git directories met, and the git directories in them
    for dirpath, dirnames, filenames in os.walk(path):
        if (dirpath + os.sep).rfind(marker) >= 0:  # inside a .git: leave out guards' writes
            if "HEAD" in filenames and "objects" in dirnames:
                # a git directory: the .git itself, or a submodule's in its modules/
                # (a rescue of that submodule writes there)
                git_dirs.append(dirpath + os.sep)
            here = dirpath + os.sep
            holders = [g for g in git_dirs if here.startswith(g)]
            # (a .git without HEAD or objects: relative to it, as git would not read it)
            root = max(holders, key=len) if holders else here[: here.rfind(marker) + len(marker)]
            within = here[len(root) :].rstrip(os.sep).replace(os.sep, "/")
            prefix = f"{within}/" if within else ""
            dirnames[:] = [d for d in dirnames if prefix + d not in own]
        dirnames.sort()
        for name in sorted(filenames):
            full = os.path.join(dirpath, name)
            try:
                s = os.lstat(full)
            except OSError:
                continue
            inside.append((full, s.st_mode, s.st_size, s.st_mtime_ns, s.st_ctime_ns, s.st_ino))
        # A directory by name only: its times change with any entry made in it (a
        # rescue ref's directory), and what changes inside shows as its entries.
        inside += [(os.path.join(dirpath, name),) for name in dirnames]
    return tuple(inside)


def _times(sig: object) -> list[int]:
    """The modification and change times in a signature (every entry of a directory)."""
    if not isinstance(sig, tuple):
        return []
    if sig and isinstance(sig[0], tuple):
        return [t for entry in sig if len(entry) > 1 for t in entry[-3:-1]]
    return [sig[2], sig[3]]


def held_in(ws: Workspace, paths: list[str], sources: list[tuple[str, str, list[str]]]) -> set[str]:
    """The ``paths`` (a directory: every file under it) whose current work-tree and index
    state a rescue commit holds; ``sources``: (commit, index commit, paths it lists)."""
    from guards.protect.snapshot import expand_paths

    parts: dict[str, list[str]] = {}
    for p in paths:
        files, nested = expand_paths(ws.repo.worktree, [p])
        if files and not nested:
            parts[p] = files
    wanted = {f for files in parts.values() for f in files}
    held: dict[str, tuple[str, str]] = {}  # file -> (commit, index commit)
    for commit, index, listed in reversed(sources):  # the newest holds the latest state
        for f in listed:
            if f in wanted:
                held.setdefault(f, (commit, index))
    if not held:
        return set()
    same = _same_state(ws, held)
    return {p for p, files in parts.items() if all(f in same for f in files)}


def _same_state(ws: Workspace, held: dict[str, tuple[str, str]]) -> set[str]:
    from guards.protect.snapshot import SPECIAL, disk_states, tree_entries

    repo = ws.repo
    paths = sorted(held)
    disk = disk_states(repo, paths, repo.filemode())
    index = _index_states(ws, paths)
    by_commit: dict[tuple[str, str], list[str]] = {}
    for p in paths:
        by_commit.setdefault(held[p], []).append(p)
    same: set[str] = set()
    for (commit, index_commit), group in by_commit.items():
        in_tree = tree_entries(repo, commit, group)
        in_index = tree_entries(repo, index_commit, group)
        for p in group:
            if p not in index or index[p] != in_index[p]:
                continue
            # A FIFO, socket or device has no content to keep: its index entry is all a
            # rescue holds of it (and all one made now would).
            if disk.get(p) == in_tree[p] or disk.get(p) == SPECIAL:
                same.add(p)
    return same


def _index_states(ws: Workspace, paths: list[str]) -> dict[str, State]:
    """Each path's stage-0 index entry (None: not in the index); conflicted paths are
    left out (they never count as held)."""
    from guards.git.entries import index_entries_of

    out: dict[str, State] = dict.fromkeys(paths)
    conflicted = set()
    for item in index_entries_of(ws.repo.run, paths):
        if item.stage != 0:
            conflicted.add(item.path)
        elif item.path in out:
            out[item.path] = item.entry
    for p in conflicted:
        out.pop(p, None)
    return out
