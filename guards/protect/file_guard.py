"""Rescue first before shell commands that destroy files without git (``rm -rf src``,
``find . -delete``, ``cp x y`` onto a file, ``> file``, ...), for the agent hooks.

:func:`guard_files` takes what :func:`guards.predict.shell.analyze` found in a line, works
out each command's reach (:mod:`guards.predict.file_reach`), finds the work trees inside
or around it, and hands each one's dirty paths in reach (its blast radius,
:func:`guards.predict.blast.files.file_radius`) to the same decision as git commands
(:func:`guards.protect.decide.decide`, carried out by the guard): other writers' work
is rescued, then the line runs. Nothing here runs git unless an existing path of some
work tree is in reach.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # see guards.values: these imports cost start-up time
if TYPE_CHECKING:
    from guards.predict.file_reach import Reach
    from guards.predict.shell import Analysis
    from guards.protect.decide import Decision


class Refused(Exception):
    """The line must not run (the message says why)."""


def plan_files(
    found: Analysis, env: dict[str, str], guarded: set[str]
) -> list[tuple[str, Decision]]:
    """The policy's decision about the dirty work the line's file-destroying commands
    reach, one per work tree (with it), changing nothing: the guard carries them out
    (and logs them), ``guards explain`` shows them. ``guarded`` holds the work trees
    already guarded whole. Raises :class:`Refused` for a reach it cannot tell."""
    reaches, labels = _line_reach(found)
    live = [r for r in reaches if _exists(r)]
    if not live:
        return []  # the common case: nothing in reach exists (or only directories rm skips)
    label = "; ".join(dict.fromkeys(labels))
    done: list[tuple[str, Decision]] = []
    for top in _worktrees(live, found.dirs):
        key = os.path.realpath(top)
        if key in guarded:
            continue
        guarded.add(key)
        decision = _decide_worktree(top, live, env, label)
        if decision is not None:
            done.append((top, decision))
    return done


def _line_reach(found: Analysis) -> tuple[list[Reach], list[str]]:
    """Every path the line's commands can destroy, and their texts. What an earlier
    ``mv`` moves counts for every later command: it may be destroyed at its new place."""
    from guards.predict.file_reach import Reach, moved, reach

    reaches: list[Reach] = []
    labels: list[str] = []
    movers: list[Reach] = []
    for call in found.files:
        found_reach = reach(call)
        if found_reach is None:
            raise Refused(
                f"refused `{call.text}`: it runs after a `cd` to a directory the line does "
                "not show, so guards cannot tell whose work it would destroy"
            )
        if found_reach:
            reaches += found_reach + movers
            labels.append(call.text)
        movers += moved(call)
    for item in found.blind:
        if item.cwd is None:
            raise Refused(f"refused: {item.reason}, in a directory the line does not show")
        reaches.append(Reach(item.cwd, subtree=True, widened=True))
        labels.append(f"({item.reason})")
    return reaches, labels


def _exists(r: Reach) -> bool:
    """Whether the path holds something to lose: a directory counts only for a command
    that reaches below it (``rm`` without ``-r``, ``> dir``, ``truncate dir`` fail)."""
    if not os.path.lexists(r.path):
        return False
    return r.subtree or os.path.islink(r.path) or not os.path.isdir(r.path)


def _worktree_of(path: str) -> str | None:
    """The work tree holding ``path`` (a ``.git`` found walking up; no git call)."""
    here = path if os.path.isdir(path) and not os.path.islink(path) else os.path.dirname(path)
    while True:
        if os.path.lexists(os.path.join(here, ".git")):
            return here
        parent = os.path.dirname(here)
        if parent == here:
            return None
        here = parent


def _worktrees(live: list[Reach], dirs: list[str]) -> list[str]:
    """The work trees in reach: around each path, and inside each reached directory
    (the line's own directories' work trees, every repository guards knows of on this
    machine and their linked worktrees)."""
    from guards.predict.blast.files import inside

    tops: dict[str, None] = {}
    for r in live:
        top = _worktree_of(r.path)
        if top is not None:
            tops[top] = None
    subtrees = [r.path for r in live if r.subtree]
    if subtrees:
        candidates = [t for d in dirs if (t := _worktree_of(d)) is not None]
        candidates += _known_worktrees()
        for top in candidates:
            if any(inside(top, s) is not None for s in subtrees):
                tops[top] = None
    return list(tops)


def _known_worktrees() -> list[str]:
    """Work trees of the repositories guards has been used in (read from files only)."""
    from guards.state.repositories import known

    found = []
    for repo in known():
        common = repo.git_dir
        if os.path.basename(common) == ".git":
            found.append(os.path.dirname(common))
        try:
            names = os.listdir(os.path.join(common, "worktrees"))
        except OSError:
            continue
        for name in names:
            try:
                with open(os.path.join(common, "worktrees", name, "gitdir"), "rb") as f:
                    link = os.fsdecode(f.read().strip())
            except OSError:
                continue
            found.append(os.path.dirname(link))
    return found


def _decide_worktree(
    top: str, live: list[Reach], env: dict[str, str], label: str
) -> Decision | None:
    from guards.git.repo import NotARepositoryError, discover
    from guards.predict.blast.files import file_radius, inside
    from guards.predict.cmdline import GitCommand
    from guards.protect import decide

    try:
        repo = discover(top)
    except NotARepositoryError:
        return None  # a `.git` that is no repository: nothing of git's to lose
    if repo.toplevel_text is None:
        return None
    radius = file_radius(repo, live)
    if radius.empty():
        return None
    # The rescue lives in the repository's own directory: gone with it, it saves nothing.
    holders = {os.path.realpath(repo.common_dir_text), os.path.realpath(repo.git_dir_text)}
    rescuable = not any(
        r.subtree and not r.widened and inside(h, os.path.realpath(r.path)) is not None
        for r in live
        for h in holders
    )
    cmd = GitCommand(
        argv=[],
        global_options=[],
        cwd=repo.toplevel_text,
        subcommand=None,
        args=[],
        origin_cwd=top,
        env=dict(env),
    )
    return decide.decide(cmd, radius, report=False, label=label, rescuable=rescuable)
