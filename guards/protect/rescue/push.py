"""Pushing rescues (never a plain force), what a push answered, and what never leaves the
machine (ignored files, secret-looking names)."""

from __future__ import annotations

import fnmatch
import os

from guards.git import process as git
from guards.git.process import NO_HOOKS
from guards.state.workspace import Workspace

TYPE_CHECKING = False  # see guards.values: these imports cost start-up time
if TYPE_CHECKING:
    from typing import Final


class PushOutcome:
    """What pushing one ref came to (``RescueResult.push``, the rescue log, ``--json``).

    Plain strings, not an Enum: see :class:`guards.errors.ExitCode`."""

    PUSHED: Final = "pushed"
    #: The remote refused it (the ref exists there, or a lease no longer holds).
    REJECTED: Final = "rejected"
    AUTH_DENIED: Final = "auth-denied"
    NETWORK: Final = "network"
    #: Anything else: git's words are in the detail.
    UNKNOWN: Final = "unknown"

    ALL: Final = (PUSHED, REJECTED, AUTH_DENIED, NETWORK, UNKNOWN)


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
        return {ref: (PushOutcome.UNKNOWN, str(e)) for _, ref in pairs}
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
                out[ref] = (PushOutcome.PUSHED, summary)
            elif flag == "!":
                out[ref] = (PushOutcome.REJECTED, summary)
            else:
                out[ref] = (PushOutcome.UNKNOWN, summary)
            continue
        low = err.lower()
        if res.returncode == 0:
            out[ref] = (PushOutcome.UNKNOWN, "git push did not report this ref")
        elif any(k in low for k in _AUTH):
            out[ref] = (PushOutcome.AUTH_DENIED, first)
        elif any(k in low for k in _NETWORK):
            out[ref] = (PushOutcome.NETWORK, first)
        else:
            out[ref] = (PushOutcome.UNKNOWN, first or f"git push exited {res.returncode}")
    return out


# -- what stays local ------------------------------------------------------------------------


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
