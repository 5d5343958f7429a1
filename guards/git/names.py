"""Typed names for git's things, so that an object id, a ref name, a branch's short name
and a file mode are never mixed up (mypy tells them apart; at run time they are plain
``str``, at no cost: nothing is imported)."""

from __future__ import annotations

TYPE_CHECKING = False  # see guards.values: these imports cost start-up time
if TYPE_CHECKING:
    from typing import NewType

    #: A full hexadecimal object id (40 digits for sha1, 64 for sha256).
    ObjectId = NewType("ObjectId", str)
    #: A full ref name: ``refs/heads/main``, ``refs/rescue/alice/...``, ``HEAD``.
    RefName = NewType("RefName", str)
    #: A branch's short name, as people type it: ``main``, ``feature/x``.
    BranchName = NewType("BranchName", str)
    #: A file mode as git's machine formats write it: ``100644``, ``120000``, ``160000``.
    FileMode = NewType("FileMode", str)
else:
    ObjectId = RefName = BranchName = FileMode = str

#: Where branches live: a :data:`RefName` is ``HEADS + BranchName``.
HEADS = "refs/heads/"


def branch_ref(name: BranchName) -> RefName:
    return RefName(HEADS + name)


def branch_name(ref: RefName) -> BranchName:
    """``refs/heads/x`` -> ``x`` (any other ref comes back whole)."""
    return BranchName(ref.removeprefix(HEADS))
