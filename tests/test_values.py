"""guards.values: the record types that replace dataclasses on the hot paths."""

from __future__ import annotations

import pytest

from guards.git.dirty import DirtyPath
from guards.predict.blast import State
from guards.state.attribution import Fingerprint, Owner, Ownership


def test_equal_by_fields_and_type() -> None:
    assert DirtyPath("a", "??") == DirtyPath(path="a", xy="??")
    assert DirtyPath("a", "??") != DirtyPath("a", ".M")
    assert Fingerprint(size=1) != Fingerprint(size=2)
    # Another type with the same field values is not equal (a tuple would be).
    assert Owner(Ownership.UNKNOWN, None, None) != (Ownership.UNKNOWN, None, None)


def test_hashable_like_the_frozen_types_they_replace() -> None:
    assert len({DirtyPath("a", "??"), DirtyPath("a", "??"), DirtyPath("b", "??")}) == 2
    assert {Fingerprint(deleted=True): 1}[Fingerprint(deleted=True)] == 1


def test_repr_names_every_field() -> None:
    text = repr(Owner(Ownership.FOREIGN, "s1", 12.5))
    assert text.startswith("Owner(") and "session='s1'" in text and "recorded=12.5" in text


def test_a_mutable_record_compares_but_never_hashes() -> None:
    a, b = State("/top"), State("/top")
    assert a == b
    a.untracked.append("x")
    assert a != b
    with pytest.raises(TypeError):
        hash(a)
