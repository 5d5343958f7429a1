"""Rescue refs: created create-only in one transaction, read back, looked up."""

from __future__ import annotations

from guards import git
from guards.protect.rescue.result import OVERRIDE, RescueFailedError
from guards.state.workspace import Workspace

#: Our own refs are written without running anyone's hooks (reference-transaction too).
NO_HOOKS = ["-c", "core.hooksPath=/dev/null"]


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
