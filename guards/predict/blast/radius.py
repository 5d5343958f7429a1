"""The answer: what a command would destroy or move away (one :class:`Loss` per path)."""

from __future__ import annotations

from guards.values import Value

TYPE_CHECKING = False  # see guards.values: these imports cost start-up time
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Final


class LossKind:
    """What a :class:`Loss` can name: the kinds of uncommitted content a command destroys.

    Plain strings, not an Enum: ``enum`` costs every start-up of the guarded git."""

    #: The file's content in the work tree.
    WORKTREE: Final = "worktree"
    #: The version staged in the index.
    STAGED: Final = "staged"
    #: An untracked file (not ignored).
    UNTRACKED: Final = "untracked"
    #: An ignored file.
    IGNORED: Final = "ignored"

    ALL: Final = frozenset({WORKTREE, STAGED, UNTRACKED, IGNORED})


class Loss(Value):
    """One path whose uncommitted content would be destroyed (or moved, see ``moves``)."""

    __slots__ = ("kinds", "path")

    def __init__(self, path: str, kinds: frozenset[str]) -> None:
        self.path = path
        #: Some of :attr:`LossKind.ALL`.
        self.kinds = kinds


class BlastRadius(Value):
    """Everything a command would destroy or move away, in one work tree."""

    __slots__ = ("commits", "everything", "losses", "moves", "worktree")

    def __init__(
        self,
        worktree: str | None,
        losses: list[Loss],
        commits: Sequence[tuple[str, str]] = (),
        moves: bool = False,
        everything: bool = False,
    ) -> None:
        self.worktree = worktree
        self.losses = losses
        #: Commits that would become unreachable or dangling: ``(oid, label)``.
        self.commits = commits
        #: Work moved away from its author (stash and autostash): nothing lost, but at risk.
        self.moves = moves
        #: Cannot be computed exactly: all dirty work (ignored files included) is at risk.
        self.everything = everything

    def empty(self) -> bool:
        return not self.losses and not self.commits and not self.everything

    @property
    def paths(self) -> list[str]:
        return [loss.path for loss in self.losses]


def everything(worktree: str | None) -> BlastRadius:
    """The effect cannot be computed: all dirty work of ``worktree`` is at risk."""
    return BlastRadius(worktree=worktree, losses=[], everything=True)


class GitRefuses(Exception):
    """Raised while computing a blast radius: git itself refuses this command before
    touching anything (a missing value, options that cannot go together, a pathspec
    file that does not exist), so nothing is at risk."""


class CannotTell(Exception):
    """Raised while computing a blast radius: its effect cannot be computed (an option
    git knows and guards does not), so everything the command could reach is at risk."""
