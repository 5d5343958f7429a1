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
"""

from __future__ import annotations

import fnmatch
import os
import re
import stat
import threading
import time
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from guards import git
from guards.errors import GuardsError, RefusedError
from guards.git.objects import GITLINK
from guards.git.quoting import unquote_path
from guards.output import show_path
from guards.protect.snapshot import (
    Capture,
    Entry,
    SnapshotError,
    State,
    check_objects,
    commit_tree,
    disk_states,
    filtered_oids,
    read_tree_changes,
)
from guards.state import session as sessions
from guards.state.ledger import Ledger
from guards.state.workspace import Workspace

#: The override named when a rescue cannot be completed: run, saying what was lost.
OVERRIDE = "GUARDS_POLICY=warn"
UNKNOWN = "unknown"
#: Our own refs are written without running anyone's hooks (reference-transaction too).
NO_HOOKS = ["-c", "core.hooksPath=/dev/null"]
#: How many paths of one rescue the ledger's log keeps (the commit names them all).
LOGGED_PATHS = 100
#: seconds a rescue waits for the ledger lock to log itself before it moves on
LOG_LOCK_WAIT = 1.0
#: How many names a one-line message shows before "and N more".
SHOWN = 3


@dataclass(frozen=True)
class AtRiskPath:
    #: repository-relative path in the work tree (tracked, untracked or ignored; may be
    #: deleted on disk). A directory stands for every file under it.
    path: str
    #: owning session id; None = unknown owner
    owner: str | None


class RescueFailedError(RefusedError):
    """A rescue could not be completed and verified: nothing points at it."""


@dataclass(frozen=True)
class RescueResult:
    ref: str
    commit: str
    owner: str | None
    paths: list[str]
    #: None when no remote is configured; else pushed, auth-denied, rejected, network, unknown
    push: str | None
    push_detail: str = ""
    remote: str | None = None
    #: paths kept out of what was pushed (ignored files, secrets): local-only
    local_only: list[str] = field(default_factory=list)
    #: for a kept commit: what it was ("stash@{0}", "branch topic")
    label: str | None = None
    #: the commit holding the index state (second parent), when paths were rescued
    index_commit: str | None = None


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
    lines = [subject, ""]
    if body:
        lines += [body, ""]
    lines += [f"{k}: {v}" for k, v in trailers]
    lines += [f"Path: {trailer_value(p)}" for p in paths]
    return "\n".join(lines) + "\n"


def _who(owner: str | None) -> str:
    return f"session {owner}" if owner else "unknown owner"


# -- the rescue --------------------------------------------------------------------------


@dataclass
class _Built:
    owner: str | None
    paths: list[str]
    commit: str
    index_commit: str
    #: what a push sends: the commit itself, or a copy without local-only paths
    pushable: str
    local_only: list[str]


def rescue_paths(ws: Workspace, at_risk: list[AtRiskPath], *, command: str) -> list[RescueResult]:
    """Commit at-risk paths to one verified rescue ref per owner (see module docs)."""
    if not at_risk:
        return []
    now = time.time()
    groups = _group(ws, at_risk)
    remote = str(ws.config.get("rescue.remote")) or None
    try:
        built = build_snapshots(
            ws, groups, command=command, now=now, split_local_only=remote is not None
        )
    except SnapshotError as e:
        raise RescueFailedError(f"{e}; nothing was run (override: {OVERRIDE})") from None
    except RescueFailedError:
        raise
    except GuardsError as e:
        raise RescueFailedError(
            f"rescue failed: {e}; nothing was run (override: {OVERRIDE})"
        ) from None
    except OSError as e:
        raise RescueFailedError(
            f"rescue failed: cannot read {e.filename or 'a file'}: {e.strerror}; "
            f"nothing was run (override: {OVERRIDE})"
        ) from None
    ns = namespace(ws)
    stamp = _stamp(now)
    slug = command_slug(command)
    wanted = [(f"{ns}/{owner_component(b.owner)}/{stamp}-{slug}", b.commit) for b in built]
    refs = create_refs(ws, wanted, f"guards rescue: {command}")
    pushes = push(ws, remote, [(b.pushable, ref) for b, ref in zip(built, refs, strict=True)])
    results = [
        RescueResult(
            ref=ref,
            commit=b.commit,
            owner=b.owner,
            paths=b.paths,
            push=pushes[ref][0] if remote else None,
            push_detail=pushes[ref][1] if remote else "",
            remote=remote,
            local_only=b.local_only,
            index_commit=b.index_commit,
        )
        for b, ref in zip(built, refs, strict=True)
    ]
    log_rescues(ws, results, command=command, now=now)
    return results


def dirty_at_risk(ws: Workspace, *, ignored: bool = False) -> list[AtRiskPath]:
    """All dirty work of the work tree with its owners (unknown when unprovable)."""
    from guards.git.dirty import read_dirty

    dirty = read_dirty(ws.repo, ignored=ignored)
    data, _problem = ws.read_ledger()
    owners = ws.owners(dirty, data)
    return [AtRiskPath(d.path, o.session) for d, o in zip(dirty, owners, strict=True)]


def _group(ws: Workspace, at_risk: list[AtRiskPath]) -> dict[str | None, list[str]]:
    groups: dict[str | None, list[str]] = {}
    for item in at_risk:
        groups.setdefault(item.owner, []).append(item.path)
    return groups


def build_snapshots(
    ws: Workspace,
    groups: dict[str | None, list[str]],
    *,
    command: str,
    now: float,
    split_local_only: bool,
    extra_parents: dict[str | None, list[str]] | None = None,
    subject: str = "guards rescue",
    body: str = "",
) -> list[_Built]:
    """The commits for each owner's paths, verified; no ref is created here."""
    repo = ws.repo
    top = repo.worktree
    owner_of: dict[str, str | None] = {}
    repos: list[str] = []
    from guards.protect.snapshot import expand_paths

    expanded: dict[str | None, list[str]] = {}
    for owner, paths in groups.items():
        found, nested = expand_paths(top, paths)
        repos += nested
        for p in found:
            if p not in owner_of:
                owner_of[p] = owner
                expanded.setdefault(owner, []).append(p)
    all_paths = list(owner_of)
    _check_nested(ws, repos)
    _check_caps(ws, all_paths)
    # Verification overlaps the capture: the files are rehashed here while git hashes
    # them, and their blobs are re-read while git writes and reads back the trees.
    hashed = threading.Event()

    def early_check() -> tuple[dict[str, State | str], set[str], set[str]]:
        disk = disk_states(repo, all_paths, True)
        oids = {s.oid for s in disk.values() if isinstance(s, Entry) and s.mode != GITLINK}
        hashed.wait()
        return disk, oids, set(check_objects(repo, oids))

    with ThreadPoolExecutor(max_workers=1) as pool:
        early = pool.submit(early_check)
        try:
            cap = Capture.take(repo, all_paths, on_hashed=hashed.set)
        finally:
            hashed.set()  # never leave the checker waiting
        with cap:
            disk, checked, bad = early.result()
            _verify_capture(ws, cap, disk, checked, bad)
            return _build_all(
                ws,
                cap,
                expanded,
                all_paths,
                command=command,
                now=now,
                split_local_only=split_local_only,
                extra_parents=extra_parents,
                subject=subject,
                body=body,
            )


def _build_all(
    ws: Workspace,
    cap: Capture,
    expanded: dict[str | None, list[str]],
    all_paths: list[str],
    *,
    command: str,
    now: float,
    split_local_only: bool,
    extra_parents: dict[str | None, list[str]] | None,
    subject: str,
    body: str,
) -> list[_Built]:
    local_only: set[str] = set()
    if split_local_only:
        local_only = _local_only(ws, all_paths)
    built = []
    for owner, paths in expanded.items():
        built.append(
            _commit_owner(
                ws,
                cap,
                owner,
                paths,
                command=command,
                now=now,
                local_only=[p for p in paths if p in local_only],
                extra_parents=(extra_parents or {}).get(owner, []),
                subject=subject,
                body=body,
                split=split_local_only,
            )
        )
    return built


def _commit_owner(
    ws: Workspace,
    cap: Capture,
    owner: str | None,
    paths: list[str],
    *,
    command: str,
    now: float,
    local_only: list[str],
    extra_parents: list[str],
    subject: str,
    body: str,
    split: bool,
) -> _Built:
    repo = ws.repo
    ident = identity()
    caller = ws.caller or "unidentified"
    head_parents = [cap.head] if cap.head else []

    def make(subset: list[str], withheld: list[str], extra: list[str]) -> tuple[str, str]:
        wt_tree = cap.tree(subset, "worktree")
        ix_tree = cap.tree(subset, "index")
        # The capture already read back its own tree and HEAD's needs no check.
        if wt_tree != cap.all_tree:
            _verify_tree(cap, wt_tree, subset, "worktree")
        if ix_tree != cap.head_tree:
            _verify_tree(cap, ix_tree, subset, "index")
        base = [
            ("Rescued-For", owner or UNKNOWN),
            ("Rescued-By", caller),
            ("Command", command.replace("\n", " ")),
            ("Host", sessions.hostname()),
            ("Time", _iso(now)),
            ("Head", cap.head or "unborn"),
        ]
        index_commit = commit_tree(
            repo,
            ix_tree,
            head_parents,
            _message(f"{subject}: index state for {_who(owner)}", base, subset),
            ident,
        )
        parents = [*head_parents, index_commit]
        trailers = [*base, ("Index", index_commit)]
        stages = cap.stages_tree(subset)
        if stages is not None:
            stages_commit = commit_tree(
                repo,
                stages,
                [],
                _message(f"{subject}: conflict stages for {_who(owner)}", base, subset),
                ident,
            )
            parents.append(stages_commit)
            trailers.append(("Conflict-Stages", stages_commit))
        parents += extra
        if withheld:
            trailers.append(("Withheld", f"{len(withheld)} local-only paths (secret or ignored)"))
        n = len(subset)
        commit = commit_tree(
            repo,
            wt_tree,
            parents,
            _message(
                f"{subject}: {n} path{'s' if n != 1 else ''} of {_who(owner)} "
                f"before `{command.splitlines()[0] if command else ''}`",
                trailers,
                subset,
                body,
            ),
            ident,
        )
        return commit, index_commit

    commit, index_commit = make(paths, [], extra_parents)
    pushable = commit
    if split and (local_only or extra_parents):
        # What leaves the machine holds no local-only path and no local history that
        # might (an earlier checkpoint's secrets live in its parents).
        keep = [p for p in paths if p not in set(local_only)]
        pushable, _ = make(keep, local_only, [])
    return _Built(owner, paths, commit, index_commit, pushable, local_only)


# -- checks before and after --------------------------------------------------------------


def _check_nested(ws: Workspace, repos: list[str]) -> None:
    """A nested repository's files are not in a gitlink: only a clean submodule passes."""
    for r in repos:
        absolute = ws.repo.worktree / r
        res = git.run(
            ["status", "--porcelain", "-z", "--untracked-files=all", "--ignore-submodules=none"],
            cwd=absolute,
            check=False,
        )
        if res.returncode != 0:
            raise RescueFailedError(
                f"cannot rescue {show_path(r + '/')}: git cannot read this nested repository "
                f"({git.GitError([], res.returncode, res.stderr)}); nothing was run "
                f"(override: {OVERRIDE})"
            )
        if res.stdout:
            raise RescueFailedError(
                f"cannot rescue {show_path(r + '/')}: a submodule or nested repository with "
                f"uncommitted files (a gitlink does not hold them); commit them inside it "
                f"first; nothing was run (override: {OVERRIDE})"
            )
        tracked = ws.repo.run(["--literal-pathspecs", "ls-files", "-s", "-z", "--", r]).stdout
        if not tracked.startswith(GITLINK.encode()):
            raise RescueFailedError(
                f"cannot rescue {show_path(r + '/')}: an untracked nested repository (its "
                f"history lives in its own .git, which no commit here can hold); move it out "
                f"of the checkout or push it; nothing was run (override: {OVERRIDE})"
            )


def _human(size: int) -> str:
    for unit, factor in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if size >= factor:
            return f"{size / factor:.1f}{unit}"
    return f"{size}B"


def _check_caps(ws: Workspace, paths: list[str]) -> None:
    """Over a cap, the rescue fails naming the files and the override; nothing is dropped."""
    max_file = int(ws.config.get("rescue.max_file_size"))
    max_total = int(ws.config.get("rescue.max_total_size"))
    base = os.fspath(ws.repo.worktree) + os.sep
    total = 0
    over: list[tuple[str, int]] = []
    for p in paths:
        try:
            st = os.lstat(base + p)
        except OSError:
            continue
        if not stat.S_ISREG(st.st_mode):
            continue
        total += st.st_size
        if st.st_size > max_file:
            over.append((p, st.st_size))
    if over:
        over.sort(key=lambda item: -item[1])
        shown = ", ".join(f"{show_path(p)} ({_human(s)})" for p, s in over[:SHOWN])
        more = f" and {len(over) - SHOWN} more" if len(over) > SHOWN else ""
        raise RescueFailedError(
            f"rescue refused: {shown}{more} over rescue.max_file_size ({_human(max_file)}); "
            f"nothing was run; raise it with GUARDS_RESCUE_MAX_FILE_SIZE={over[0][1]} "
            f"or accept the loss with {OVERRIDE}"
        )
    if total > max_total:
        raise RescueFailedError(
            f"rescue refused: {len(paths)} paths hold {_human(total)}, over "
            f"rescue.max_total_size ({_human(max_total)}); nothing was run; raise it with "
            f"GUARDS_RESCUE_MAX_TOTAL_SIZE={total} or accept the loss with {OVERRIDE}"
        )


def _filemode(ws: Workspace) -> bool:
    res = ws.repo.run(["config", "--type=bool", "--get", "core.filemode"], check=False)
    return res.stdout.strip() != b"false"


def _verify_capture(
    ws: Workspace,
    cap: Capture,
    on_disk: dict[str, State | str],
    checked: set[str],
    bad_checked: set[str],
) -> None:
    """Every listed path in the snapshot equals the disk, and every blob reads back whole.

    ``checked`` blob ids were already re-read (``bad_checked`` of them failed).
    """
    filemode: bool | None = None  # read only when an exec bit disagrees
    mismatched: list[str] = []
    refilter: list[str] = []
    for p in cap.paths:
        want = cap.worktree_state(p)
        got = on_disk[p]
        if got == "directory":
            if want is None or want.mode != GITLINK or want.oid != _nested_head(ws, p):
                mismatched.append(p)
            continue
        if p in cap.skip_worktree:
            continue  # not checked out: the index entry is its state
        if got is None or want is None or isinstance(got, str):
            if got != want:
                mismatched.append(p)
            continue
        same_kind = got.mode == want.mode
        if not same_kind and got.mode[:3] == want.mode[:3]:
            if filemode is None:
                filemode = _filemode(ws)
            same_kind = not filemode  # core.filemode=false: git keeps the index's bit
        if not same_kind:
            mismatched.append(p)
        elif got.oid != want.oid:
            refilter.append(p)
    if refilter:
        hashed = filtered_oids(ws.repo, refilter)
        for p in refilter:
            want = cap.worktree_state(p)
            if want is None or hashed.get(p) != want.oid:
                mismatched.append(p)
    if mismatched:
        raise SnapshotError(
            f"rescue could not be verified: {_names(mismatched)} changed while being rescued "
            f"(or git stored something else); retry"
        )
    blobs: set[str] = set()
    for p in cap.paths:
        states: list[State] = [cap.worktree_state(p)]
        if p in cap.index_changes:  # a staged version (HEAD's own blobs are not at risk)
            states.append(cap.index_state(p))
        states += [e for _, e in cap.stages.get(p, [])]
        blobs.update(s.oid for s in states if s is not None and s.mode != GITLINK)
    bad = sorted(blobs & bad_checked)
    bad += check_objects(ws.repo, blobs - checked)
    if bad:
        raise SnapshotError(
            f"rescue could not be verified: object {bad[0]} is missing or corrupt "
            f"({len(bad)} bad objects; run git fsck)"
        )


def _nested_head(ws: Workspace, path: str) -> str | None:
    res = git.run(["rev-parse", "-q", "--verify", "HEAD"], cwd=ws.repo.worktree / path, check=False)
    return res.stdout.decode().strip() if res.returncode == 0 else None


def _verify_tree(cap: Capture, tree: str, paths: list[str], kind: str) -> None:
    """Read the tree back: exactly the wanted paths differ from HEAD, as captured."""
    changes = read_tree_changes(cap.repo, cap.head_tree, tree)
    wanted = set(paths)
    bad = [p for p in changes if p not in wanted]
    for p in paths:
        expect = cap.index_state(p) if kind == "index" else cap.worktree_state(p)
        got = changes[p].new if p in changes else cap.head_state(p)
        touched = p in changes or p in cap.worktree_changes or p in cap.index_changes
        if touched and got != expect:
            bad.append(p)
    if bad:
        raise SnapshotError(f"rescue could not be verified: {kind} tree is wrong at {_names(bad)}")


def _names(paths: list[str]) -> str:
    shown = ", ".join(show_path(p) for p in paths[:SHOWN])
    return shown + (f" and {len(paths) - SHOWN} more" if len(paths) > SHOWN else "")


def is_secret(path: str, patterns: list[str]) -> bool:
    """Does the file name (or the whole path) match a secret pattern such as ``.env*``?"""
    name = path.rsplit("/", 1)[-1]
    return any(fnmatch.fnmatchcase(name, p) or fnmatch.fnmatchcase(path, p) for p in patterns)


def _local_only(ws: Workspace, paths: list[str]) -> set[str]:
    """Paths that must never reach a remote: ignored files and secret-looking names."""
    patterns = list(ws.config.get("rescue.secret_patterns"))
    out = {p for p in paths if is_secret(p, patterns)}
    res = ws.repo.run(["check-ignore", "-z", "--stdin"], stdin=git.nul_join(paths), check=False)
    if res.returncode not in (0, 1):
        return set(paths)  # cannot tell: keep everything local
    out.update(os.fsdecode(p) for p in git.zsplit(res.stdout))
    return out


# -- refs ----------------------------------------------------------------------------------


def create_refs(ws: Workspace, wanted: list[tuple[str, str]], message: str) -> list[str]:
    """Create every ref create-only in one transaction; a taken name gets ``-2``, ``-3``."""
    names = [name for name, _ in wanted]
    for _attempt in range(20):
        payload = b"".join(
            b"create %s\0%s\0" % (name.encode(), oid.encode())
            for name, (_, oid) in zip(names, wanted, strict=True)
        )
        res = ws.repo.run(
            [*NO_HOOKS, "update-ref", "--create-reflog", "-m", message, "-z", "--stdin"],
            stdin=payload,
            check=False,
            readonly=False,
        )
        if res.returncode == 0:
            _verify_refs(ws, list(zip(names, [oid for _, oid in wanted], strict=True)))
            return names
        taken = [_exists(ws, n) for n in names]
        if not any(taken) and len(set(names)) == len(names):
            raise RescueFailedError(
                f"cannot create rescue ref {names[0]}: "
                f"{git.GitError(['update-ref'], res.returncode, res.stderr)}; nothing was run "
                f"(override: {OVERRIDE})"
            )
        seen: set[str] = set()
        for i, (name, (base, _)) in enumerate(zip(names, wanted, strict=True)):
            n = 2
            candidate = name
            while taken[i] or candidate in seen:
                candidate = f"{base}-{n}"
                n += 1
                taken[i] = _exists(ws, candidate)
            names[i] = candidate
            seen.add(candidate)
    raise RescueFailedError(f"cannot find a free rescue ref name near {names[0]}")


def _exists(ws: Workspace, ref: str) -> bool:
    return ws.repo.run(["rev-parse", "--verify", "-q", ref], check=False).returncode == 0


def _verify_refs(ws: Workspace, pairs: list[tuple[str, str]]) -> None:
    current = ref_values(ws, [n for n, _ in pairs])
    for name, oid in pairs:
        if current.get(name) != oid:
            raise RescueFailedError(
                f"rescue ref {name} does not point at its rescue commit {oid} after creation"
            )


def ref_values(ws: Workspace, names: list[str]) -> dict[str, str]:
    """The exact refs among ``names`` that exist -> their object ids."""
    res = ws.repo.run(["for-each-ref", "--format=%(objectname) %(refname)", *names], check=False)
    wanted = set(names)
    out = {}
    for line in res.stdout.decode("utf-8", "surrogateescape").splitlines():
        oid, _, name = line.partition(" ")
        if name in wanted:
            out[name] = oid
    return out


# -- kept commits -----------------------------------------------------------------------------


def rescue_commits(
    ws: Workspace, commits: list[tuple[str, str, str | None]], *, command: str
) -> list[RescueResult]:
    """Keep existing commits (stash entries, branch tips) reachable under rescue refs."""
    if not commits:
        return []
    now = time.time()
    ns = namespace(ws)
    stamp = _stamp(now)
    slug = command_slug(command)
    wanted = []
    for oid, label, owner in commits:
        res = ws.repo.run(["rev-parse", "--verify", "-q", f"{oid}^{{commit}}"], check=False)
        if res.returncode != 0:
            raise RescueFailedError(
                f"cannot keep {label}: commit {oid} is not readable; nothing was run "
                f"(override: {OVERRIDE})"
            )
        full = res.stdout.decode().strip()
        what = command_slug(label.replace("@{", "-").replace("}", ""), 30)
        name = f"{ns}/{owner_component(owner)}/{stamp}-{slug}-{what}"
        wanted.append((name, full))
    refs = create_refs(ws, wanted, f"guards rescue: {command}")
    remote = str(ws.config.get("rescue.remote")) or None
    withheld = {
        ref: _stash_local_only(ws, oid) if remote else []
        for ref, (_, oid) in zip(refs, wanted, strict=True)
    }
    pushes = push(
        ws,
        remote,
        [(oid, ref) for ref, (_, oid) in zip(refs, wanted, strict=True) if not withheld[ref]],
    )
    results = [
        RescueResult(
            ref=ref,
            commit=oid,
            owner=owner,
            paths=[],
            push=pushes[ref][0] if ref in pushes else None,
            push_detail=pushes[ref][1] if ref in pushes else "",
            remote=remote,
            label=label,
            local_only=withheld[ref],
        )
        for ref, (_, oid), (_, label, owner) in zip(refs, wanted, commits, strict=True)
    ]
    log_rescues(ws, results, command=command, now=now)
    return results


def _stash_local_only(ws: Workspace, oid: str) -> list[str]:
    """Paths that keep a kept stash entry off the remote: its untracked (maybe ignored)
    files, and secret-looking names among its changes. A commit of other kinds: none."""
    res = ws.repo.run(["rev-list", "--parents", "-n", "1", oid])
    parents = res.stdout.decode().split()[1:]
    if len(parents) < 2:
        return []  # not a stash entry: committed history, pushed like any branch
    names: list[str] = []
    if len(parents) >= 3:
        listing = ws.repo.run(["ls-tree", "-r", "-z", "--name-only", parents[2]]).stdout
        names += [os.fsdecode(p) for p in git.zsplit(listing)]
    for a, b in ((parents[0], oid), (parents[0], parents[1])):
        diff = ws.repo.run(["diff-tree", "-r", "-z", "--name-only", "--no-renames", a, b]).stdout
        names += [os.fsdecode(p) for p in git.zsplit(diff)]
    if len(parents) >= 3:
        return sorted(set(names))  # untracked or ignored content: never pushed
    patterns = list(ws.config.get("rescue.secret_patterns"))
    return sorted({p for p in names if is_secret(p, patterns)})


# -- push ------------------------------------------------------------------------------------

_AUTH = (
    "authentication failed",
    "permission denied",
    "could not read username",
    "could not read password",
    "terminal prompts disabled",
    "access denied",
    "403",
    "401",
)
_NETWORK = (
    "could not resolve host",
    "connection refused",
    "connection timed out",
    "network is unreachable",
    "operation timed out",
    "no route to host",
    "unable to access",
    "could not read from remote repository",
    "connection reset",
    "does not appear to be a git repository",
)


def push(
    ws: Workspace,
    remote: str | None,
    pairs: list[tuple[str, str]],
    *,
    leases: dict[str, str] | None = None,
) -> dict[str, tuple[str, str]]:
    """Push ``commit:ref`` pairs; each ref -> (outcome, detail). Never a plain force.

    A ref is created only if the remote has none (``--force-with-lease=<ref>:``), unless
    ``leases`` names the value the remote must still hold (a session's own WIP ref).
    """
    if remote is None or not pairs:
        return {}
    leases = leases or {}
    args = [*NO_HOOKS, "push", "--porcelain", "--no-verify"]
    for _, ref in pairs:
        args.append(f"--force-with-lease={ref}:{leases.get(ref, '')}")
    args.append(remote)
    args += [f"{commit}:{ref}" for commit, ref in pairs]
    try:
        res = ws.repo.run(
            args,
            check=False,
            readonly=False,
            extra_env={"GIT_TERMINAL_PROMPT": "0", "GCM_INTERACTIVE": "never"},
        )
    except git.GitNotFoundError as e:
        return {ref: ("unknown", str(e)) for _, ref in pairs}
    return classify_push(res, [ref for _, ref in pairs])


def classify_push(res: git.Result, refs: list[str]) -> dict[str, tuple[str, str]]:
    lines: dict[str, tuple[str, str]] = {}
    for raw in res.stdout.decode("utf-8", "replace").splitlines():
        parts = raw.split("\t")
        if len(parts) >= 3 and ":" in parts[1]:
            dst = parts[1].split(":", 1)[1]
            lines[dst] = (parts[0], parts[2])
    err = res.stderr.decode("utf-8", "replace")
    first = next((ln.strip() for ln in err.splitlines() if ln.strip()), "")
    out: dict[str, tuple[str, str]] = {}
    for ref in refs:
        if ref in lines:
            flag, summary = lines[ref]
            if flag in ("*", " ", "+", "="):
                out[ref] = ("pushed", summary)
            elif flag == "!":
                out[ref] = ("rejected", summary)
            else:
                out[ref] = ("unknown", summary)
            continue
        low = err.lower()
        if res.returncode == 0:
            out[ref] = ("unknown", "git push did not report this ref")
        elif any(k in low for k in _AUTH):
            out[ref] = ("auth-denied", first)
        elif any(k in low for k in _NETWORK):
            out[ref] = ("network", first)
        else:
            out[ref] = ("unknown", first or f"git push exited {res.returncode}")
    return out


# -- the rescue log and the report -------------------------------------------------------------


def log_rescues(ws: Workspace, results: list[RescueResult], *, command: str, now: float) -> None:
    """Append to the ledger's rescue log; the refs are the truth, so a busy ledger only warns."""
    from guards.output import warn

    entries = [
        {
            "ref": r.ref,
            "commit": r.commit,
            "index_commit": r.index_commit,
            "owner": r.owner,
            "caller": ws.caller,
            "command": command,
            "host": sessions.hostname(),
            "time": now,
            "worktree": ws.repo.worktree_key if ws.repo.toplevel else None,
            # The commit's trailers hold every path; the log keeps the ledger small.
            "paths": r.paths[:LOGGED_PATHS],
            "path_count": len(r.paths),
            "label": r.label,
            "remote": r.remote,
            "push": r.push,
            "push_detail": r.push_detail,
            "local_only": r.local_only,
        }
        for r in results
    ]
    # The refs hold everything (their trailers); the log only helps doctor and friends.
    # Waiting long for a busy lock here would hold back the command the user asked for and
    # widen the window in which another writer's fresh save meets it: wait briefly only.
    log = Ledger(ws.ledger.directory, lock_timeout=min(ws.ledger.lock_timeout, LOG_LOCK_WAIT))
    try:
        with log.transaction() as data:
            data.rescues.extend(entries)
    except GuardsError as e:
        warn(f"rescue done but not logged in the ledger ({e}); `guards rescue list` shows it")


def restore_command(result: RescueResult) -> str:
    if result.label and result.label.startswith("stash"):
        return f"git stash apply --index {result.ref}"
    if result.label and result.label.startswith("branch "):
        return f"git branch {result.label.split(' ', 1)[1]} {result.ref}"
    if result.label:
        return f"git log {result.ref}"
    return f"guards rescue restore {result.ref}"


def report_line(result: RescueResult) -> str:
    """Principle 5: whose work, which ref, the command that restores it, what was pushed."""
    who = _who(result.owner)
    if result.label:
        what = f"kept {result.label} ({result.commit[:12]}) of {who}"
    else:
        n = len(result.paths)
        what = f"rescued {n} path{'s' if n != 1 else ''} of {who}"
    line = f"guards: {what} to {result.ref}; restore: {restore_command(result)}"
    if result.push is not None:
        if result.push == "pushed":
            line += f"; pushed to {result.remote}"
        else:
            detail = f": {result.push_detail}" if result.push_detail else ""
            line += f"; push to {result.remote} failed ({result.push}{detail}), kept locally"
    if result.local_only:
        n = len(result.local_only)
        if result.label:
            line += f"; not pushed: holds {n} untracked or secret path{'s' if n != 1 else ''}"
        else:
            line += f"; {n} secret/ignored path{'s' if n != 1 else ''} kept local only"
    return line


def rescue_log_entries(ws: Workspace) -> dict[str, dict[str, Any]]:
    """The ledger's rescue log by ref (the newest entry wins); empty when unreadable."""
    data, _problem = ws.read_ledger()
    if data is None:
        return {}
    return {str(e.get("ref")): e for e in data.rescues if isinstance(e, dict)}
