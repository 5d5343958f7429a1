"""Rescue refs: created create-only in one transaction, read back, looked up."""

from __future__ import annotations

from guards.git import process as git
from guards.protect.rescue.result import OVERRIDE, RescueFailedError
from guards.state.workspace import Workspace


def create_refs(ws: Workspace, wanted: list[tuple[str, str]], message: str) -> list[str]:
    """Create every ref create-only in one transaction; a taken name gets ``-2``, ``-3``.

    A stray ref where one of the name's directories should be (``refs/rescue/alice``
    beside ``refs/rescue/alice/<time>-...``, or a ref named like the namespace itself)
    would fail every rescue: that directory gets ``-2``, ``-3`` instead. No existing ref
    is ever touched."""
    names = [name for name, _ in wanted]
    for _attempt in range(20):
        payload = b"".join(
            b"create %s\0%s\0" % (name.encode(), oid.encode())
            for name, (_, oid) in zip(names, wanted, strict=True)
        )
        res = ws.repo.run(
            [*git.NO_HOOKS, "update-ref", "--create-reflog", "-m", message, "-z", "--stdin"],
            stdin=payload,
            check=False,
            readonly=False,
        )
        if res.returncode == 0:
            _verify_refs(ws, list(zip(names, [oid for _, oid in wanted], strict=True)))
            return names
        free = _free_names(ws, names)
        if free == names:
            raise RescueFailedError(
                f"cannot create rescue ref {names[0]}: "
                f"{git.GitError(['update-ref'], res.returncode, res.stderr)}; nothing was run "
                f"(override: {OVERRIDE})"
            )
        names = free
    raise RescueFailedError(f"cannot find a free rescue ref name near {names[0]}")


def _free_names(ws: Workspace, names: list[str]) -> list[str]:
    """Names that neither exist, nor hold refs below them, nor lie below a ref."""
    out: list[str] = []
    for name in names:
        base = name
        n = 2
        while True:
            blocked = _ref_above(ws, base)
            if blocked is not None:
                base = step_around(base, blocked)
                name = base
                continue
            if name in out or _taken(ws, name):
                name = f"{base}-{n}"
                n += 1
                continue
            break
        out.append(name)
    return out


def step_around(name: str, blocked: str) -> str:
    """``name`` with its directory ``blocked`` (a ref) renamed ``blocked-2``, ``-3``, ..."""
    head, sep, number = blocked.rpartition("-")
    stem, n = (head, int(number) + 1) if sep and number.isdigit() and head else (blocked, 2)
    return f"{stem}-{n}{name[len(blocked) :]}"


def _ref_above(ws: Workspace, name: str) -> str | None:
    """A ref that is one of ``name``'s directories (a D/F conflict), if any."""
    parts = name.split("/")
    for i in range(2, len(parts)):
        prefix = "/".join(parts[:i])
        res = ws.repo.run(["show-ref", "--verify", "-q", prefix], check=False)
        if res.returncode == 0:
            return prefix
    return None


def _taken(ws: Workspace, name: str) -> bool:
    """``name`` is a ref, or refs lie below it (or git cannot tell: not ours to take)."""
    from guards.git.process import GitError
    from guards.git.refs import for_each_ref

    try:
        return bool(for_each_ref(ws.repo.run, ("refname",), [name], count=1))
    except GitError:
        return True


def _verify_refs(ws: Workspace, pairs: list[tuple[str, str]]) -> None:
    current = ref_values(ws, [n for n, _ in pairs])
    for name, oid in pairs:
        if current.get(name) != oid:
            raise RescueFailedError(
                f"rescue ref {name} does not point at its rescue commit {oid} after creation"
            )


def ref_values(ws: Workspace, names: list[str]) -> dict[str, str]:
    """The exact refs among ``names`` that exist -> their object ids."""
    from guards.git.refs import for_each_ref

    wanted = set(names)
    rows = for_each_ref(ws.repo.run, ("objectname", "refname"), names, check=False)
    return {name: oid for oid, name in rows if name in wanted}
