"""Small record types for the paths that run on every agent turn and git command.

Importing ``dataclasses`` costs a bare interpreter about 18 ms and ``typing`` (for
``NamedTuple``) about 11 ms on a small VM (benchmarks/README.md), paid at every start-up;
``guards frame``, ``guards run`` and the agent and git hooks start often enough for that
to be most of their cost. A :class:`Value` subclass lists its fields in
``__slots__`` and sets them in ``__init__``; it gets equality, hashing and a
readable repr from here, and its fields are never reassigned after ``__init__``. A
record that is filled in after construction is a :class:`MutableValue` instead: equal by
fields, never hashable (as a non-frozen dataclass).

Modules on those paths also spell ``TYPE_CHECKING = False`` instead of importing it from
``typing``: type checkers treat that name as true, so annotation-only imports stay free.
"""

from __future__ import annotations


class Value:
    """An immutable-by-convention record compared by its fields."""

    __slots__ = ()

    def _names(self) -> tuple[str, ...]:
        names: tuple[str, ...] = self.__slots__
        return names

    def _fields(self) -> tuple[object, ...]:
        return tuple(getattr(self, name) for name in self._names())

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Value) or type(other) is not type(self):
            return NotImplemented
        return self._fields() == other._fields()

    def __hash__(self) -> int:
        return hash(self._fields())

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in self._names())
        return f"{type(self).__name__}({shown})"


class MutableValue(Value):
    """A record whose fields change after construction: compared, never hashed."""

    __slots__ = ()
    __hash__ = None  # type: ignore[assignment]
