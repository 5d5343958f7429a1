"""Shell commands that destroy files without git: which ones a line runs, and with which
operands (globs expanded against the disk, as bash would).

:mod:`guards.predict.shell` finds them while it reads the line (:class:`FileCall`: ``rm``,
``unlink``, ``shred``, ``truncate``, ``tee``, ``mv``, ``cp``, ``ln -f``, ``rsync``,
``find -delete`` / ``-exec rm``, and ``>`` redirections); :mod:`guards.predict.file_reach`
turns each into the paths it can reach. :func:`could_destroy_files` is the hot path's
test: a line that names none of them (and has no ``>``) is never parsed for them.
"""

from __future__ import annotations

import os

from guards.values import Value

TYPE_CHECKING = False  # see guards.values: these imports cost start-up time
if TYPE_CHECKING:
    from guards.predict.shell_lexer import Word

#: Commands whose operands (or destination) lose their content.
DESTROYERS = frozenset(
    {"rm", "unlink", "shred", "truncate", "tee", "mv", "cp", "ln", "rsync", "find"}
)
#: What ``find`` can run on what it found that destroys it.
FIND_DESTROYERS = frozenset({"rm", "unlink", "shred", "truncate"})
#: The redirection operators that truncate their target (``>>`` appends, ``<>`` keeps it).
TRUNCATING = frozenset({">", ">|", "&>", ">&"})
#: Label of a :class:`FileCall` made by a redirection.
REDIRECT = ">"
#: What sets words apart for :func:`names_destroyer` besides whitespace (the agent hooks'
#: shell gate splits on the same characters: guards.integrations.shell_gate).
SEPARATORS = ";&|()<>`$\"'\\\n\t{}="
_SEPARATORS = str.maketrans({c: " " for c in SEPARATORS})
_GLOB = frozenset("*?[")


def names_destroyer(line: str) -> bool:
    """Whether a word of ``line`` (quotes and shell punctuation set aside) names one of
    :data:`DESTROYERS`, as a command or a path to one (``/bin/rm``)."""
    for word in line.translate(_SEPARATORS).split():
        if word.rsplit("/", 1)[-1] in DESTROYERS:
            return True
    return False


def could_destroy_files(line: str) -> bool:
    """The cheap test before parsing: a destroyer's name, or a ``>`` that may truncate."""
    return ">" in line.replace(">>", "") or names_destroyer(line)


class FileCall(Value):
    """One command of the line that can destroy files: its name (``>`` for a
    redirection), its arguments after expansion (a glob gives its matches; None: only
    bash knows), the directory it runs in (None: a ``cd`` the line does not show)."""

    __slots__ = ("args", "cwd", "more_args", "name", "prefixes", "text")

    def __init__(
        self,
        name: str,
        args: tuple[str | None, ...],
        cwd: str | None,
        text: str,
        more_args: bool = False,
        prefixes: tuple[str, ...] = (),
    ) -> None:
        self.name = name
        self.args = args
        self.cwd = cwd
        #: The command as written (for messages and the rescue's label).
        self.text = text
        #: ``xargs``/``find -exec`` add operands only known when it runs.
        self.more_args = more_args
        #: What each unknown argument surely starts with ("": nothing known).
        self.prefixes = prefixes

    @property
    def known(self) -> bool:
        return None not in self.args and not self.more_args


def glob_pattern(word: Word, value: str | None) -> str | None:
    """The word as a glob pattern when bash would expand it (an unquoted ``*``, ``?`` or
    ``[``), its quoted parts escaped; None when it is no pattern. A variable's value is
    taken as written (its own glob characters are then unknown: see :func:`expand`)."""
    if value is None or not any(
        p.kind == "lit" and not p.quoted and _GLOB & set(p.text) for p in word.parts
    ):
        return None  # the everyday word: glob (re, fnmatch, contextlib) stays unimported
    import glob

    out = []
    for part in word.parts:
        if part.kind == "lit" and not part.quoted:
            out.append(part.text)
        elif part.kind == "lit":
            out.append(glob.escape(part.text))
        else:
            return None  # a variable in a pattern: expand() widens
    return "".join(out)


def expand(word: Word | None, value: str | None, cwd: str | None) -> list[str | None]:
    """The words bash makes of ``word`` (resolved to ``value``): the glob's matches
    relative to ``cwd`` (hidden files only for a pattern starting with a dot), the word
    itself when nothing matches (bash's default), ``[None]`` when only bash knows."""
    if value is None:
        return [None]
    if word is None:
        return [None] if _GLOB & set(value) else [value]
    pattern = glob_pattern(word, value)
    if pattern is None:
        if any(p.kind == "var" and not p.quoted for p in word.parts) and _GLOB & set(value):
            return [None]  # a variable's value that bash may expand as a glob
        return [value]
    if cwd is None:
        return [None]
    import glob

    base = pattern if os.path.isabs(pattern) else os.path.join(glob.escape(cwd), pattern)
    found = sorted(glob.glob(base))
    if not found:
        return [value]
    if os.path.isabs(pattern):
        return list(found)
    return [os.path.relpath(f, cwd) for f in found]
