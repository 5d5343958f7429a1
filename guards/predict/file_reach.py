"""Where a shell command that destroys files reaches: the paths whose content it can
destroy (:class:`Reach`), worked out from its operands before it runs. No git here: the
dirty paths inside the reach come from :func:`guards.predict.blast.files.file_radius`.

"I can't see it" is never "it isn't there": an operand only bash knows (a variable we
cannot read, ``$(...)``, ``xargs`` input, ``find -exec … {}`` feeding another shell)
widens the reach to everything under the command's directory.
"""

from __future__ import annotations

import itertools
import os

from guards.predict.shell_files import FIND_DESTROYERS, REDIRECT, FileCall
from guards.values import Value

TYPE_CHECKING = False  # see guards.values: these imports cost start-up time
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Sequence


class Reach(Value):
    """An absolute path a command can destroy; with ``subtree``, everything below it."""

    __slots__ = ("path", "subtree", "widened")

    def __init__(self, path: str, subtree: bool = False, widened: bool = False) -> None:
        self.path = path
        self.subtree = subtree
        #: The command's whole directory, because an operand is unknown: the work tree
        #: content below it, not the repository itself.
        self.widened = widened


def reach(call: FileCall) -> list[Reach] | None:
    """What ``call`` can destroy; None when the directory it runs in is unknown."""
    if call.cwd is None:
        return None
    if not call.known:
        return _unknown(call, call.cwd)
    handler = _HANDLERS.get(call.name)
    if handler is None:
        return []
    args = [a for a in call.args if a is not None]
    return [Reach(_abs(call.cwd, r.path), r.subtree) for r in handler(call.cwd, args)]


def moved(call: FileCall) -> list[Reach]:
    """What ``mv`` takes away from where it was: not lost by the move itself, but a later
    command of the same line may destroy it at its new place."""
    if call.name != "mv" or call.cwd is None:
        return []
    if not call.known:
        return _unknown(call, call.cwd)
    operands, _, target = _options(
        [a for a in call.args if a is not None], "St", long_values=("target-directory", "suffix")
    )
    sources = operands if target is not None else operands[:-1]
    return [Reach(_abs(call.cwd, s), subtree=True) for s in sources]


def _unknown(call: FileCall, cwd: str) -> list[Reach]:
    """An operand only bash knows: below everything it may name. With a known start
    (``/tmp/out-$$``), each existing path that starts so; with none, all of the command's
    directory. Its known operands count whole too: which one is what is not known."""
    found: list[Reach] = []
    if call.more_args or "" in call.prefixes or not call.prefixes:
        found.append(Reach(cwd, subtree=True, widened=True))
    for prefix in call.prefixes:
        if not prefix:
            continue
        start = _abs(cwd, prefix) + ("/" if prefix.endswith("/") else "")
        folder, head = os.path.split(start)
        try:
            names = os.listdir(folder or "/")
        except OSError:
            continue
        found += [Reach(os.path.join(folder, n), subtree=True) for n in names if n.startswith(head)]
    words = [a for a in call.args if a is not None and not a.startswith("-")]
    found += [Reach(_abs(cwd, a), subtree=True) for a in words if call.name != "find" or a]
    return found


def _abs(cwd: str, path: str) -> str:
    return os.path.normpath(os.path.join(cwd, path))


def _options(
    args: Sequence[str], with_value: Iterable[str], long_values: Iterable[str] = ()
) -> tuple[list[str], set[str], str | None]:
    """Operands, the flags given (short letters and long names, without dashes), and the
    value of ``-t``/``--target-directory`` (or None)."""
    with_value = set(with_value)
    operands: list[str] = []
    flags: set[str] = set()
    target: str | None = None
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--":
            operands += args[i + 1 :]
            break
        if a.startswith("--") and len(a) > 2:
            name, eq, value = a[2:].partition("=")
            flags.add(name)
            if name in long_values and not eq and i + 1 < len(args):
                value = args[i + 1]
                i += 1
            if name == "target-directory":
                target = value
        elif a.startswith("-") and len(a) > 1:
            for j, letter in enumerate(a[1:]):
                flags.add(letter)
                if letter in with_value:
                    value = a[j + 2 :] or (args[i + 1] if i + 1 < len(args) else "")
                    if not a[j + 2 :]:
                        i += 1
                    if letter == "t":
                        target = value
                    break
        else:
            operands.append(a)
        i += 1
    return operands, flags, target


def _rm(cwd: str, args: list[str]) -> list[Reach]:
    operands, flags, _ = _options(args, ())
    subtree = bool(flags & {"r", "R", "recursive"})
    return [Reach(p, subtree) for p in operands]


def _files(
    with_value: str, long_values: tuple[str, ...] = ()
) -> Callable[[str, list[str]], list[Reach]]:
    """Commands whose every operand is a file that loses its content."""

    def handler(cwd: str, args: list[str]) -> list[Reach]:
        operands, flags, _ = _options(args, with_value, long_values)
        if flags & {"a", "append"}:
            return []  # tee -a: appends
        return [Reach(p) for p in operands]

    return handler


def _truncate(cwd: str, args: list[str]) -> list[Reach]:
    sizes = [a for a in args if a.startswith(("-s+", "--size=+"))]
    if sizes or any(a == "-s" and b.startswith("+") for a, b in itertools.pairwise(args)):
        return []  # grows the file: nothing lost
    operands, _, _ = _options(args, "sro", ("size", "reference"))
    return [Reach(p) for p in operands]


def _copy(name: str) -> Callable[[str, list[str]], list[Reach]]:
    """``mv``, ``cp`` and ``ln -f``: the destination's existing files lose their content
    (an existing directory receives each source under its own name)."""

    def handler(cwd: str, args: list[str]) -> list[Reach]:
        operands, flags, target = _options(args, "St", ("target-directory", "suffix"))
        if flags & {"n", "no-clobber", "b", "backup"} or any(f.startswith("update") for f in flags):
            return []  # the old file is kept (or never replaced)
        if name == "ln" and not flags & {"f", "force"}:
            return []  # ln refuses an existing name
        recursive = name != "ln" and (
            name == "mv" or bool(flags & {"r", "R", "a", "recursive", "archive"})
        )
        if target is None:
            if len(operands) < 2:
                return []
            *sources, dest = operands
            dest_abs = _abs(cwd, dest)
            if "T" in flags or "no-target-directory" in flags or not os.path.isdir(dest_abs):
                if len(sources) != 1:
                    return []  # the command fails: more than one source needs a directory
                return [_landing(cwd, sources[0], dest_abs, recursive, name)]
            target = dest
        else:
            sources = operands
        into = _abs(cwd, target)
        return [
            _landing(cwd, s, os.path.join(into, os.path.basename(_abs(cwd, s))), recursive, name)
            for s in sources
        ]

    return handler


def _landing(cwd: str, source: str, dest: str, recursive: bool, name: str) -> Reach:
    """Where ``source`` lands: a directory copied (``cp -r``) merges into what is there
    (every file below can be overwritten); a moved directory only replaces an empty one."""
    is_dir = os.path.isdir(_abs(cwd, source))
    return Reach(dest, subtree=is_dir and recursive and name == "cp")


def _rsync(cwd: str, args: list[str]) -> list[Reach]:
    """The destination side: ``--delete`` removes what the source lacks, and files it
    brings overwrite what is there; everything under the landing place is in reach."""
    with_value = ("e", "f", "B", "T", "M")
    long_values = (
        "exclude", "include", "filter", "files-from", "rsh", "exclude-from", "include-from",
        "rsync-path", "temp-dir", "partial-dir", "compare-dest", "copy-dest", "link-dest",
        "backup-dir", "suffix", "chmod", "chown", "password-file", "log-file", "out-format",
    )  # fmt: skip
    operands, _, _ = _options(args, "".join(with_value), long_values)
    if len(operands) < 2:
        return []
    *sources, dest = operands
    if _remote(dest):
        return []
    dest_abs = _abs(cwd, dest)
    found = []
    for s in sources:
        src = _abs(cwd, s) if not _remote(s) else s
        if s.endswith("/") or (not os.path.isdir(src) and not os.path.isdir(dest_abs)):
            found.append(Reach(dest_abs, subtree=True))
        else:
            found.append(Reach(os.path.join(dest_abs, os.path.basename(src.rstrip("/"))), True))
    return found


def _remote(operand: str) -> bool:
    head = operand.split("/", 1)[0]
    return ":" in head or operand.startswith("rsync://")


def _redirect(cwd: str, args: list[str]) -> list[Reach]:
    return [Reach(p) for p in args]


#: find's actions that only print (dropped from the dry run).
_FIND_PRINTS = {"-print": 0, "-print0": 0, "-ls": 0, "-printf": 1}
#: find's tests and options that change nothing (kept in the dry run as they are).
_FIND_HARMLESS = frozenset(
    """-name -iname -path -ipath -wholename -iwholename -regex -iregex -lname -ilname
    -type -xtype -size -empty -mtime -mmin -atime -amin -ctime -cmin -newer -anewer
    -cnewer -used -user -group -uid -gid -nouser -nogroup -perm -links -inum -samefile
    -readable -writable -executable -true -false -not -and -or -a -o ! ( ) , -prune
    -maxdepth -mindepth -depth -d -xdev -mount -follow -noleaf -daystart -regextype
    -ignore_readdir_race -noignore_readdir_race -fstype -quit -nowarn -warn""".split()  # noqa: SIM905
)
_FIND_TAKES_VALUE = frozenset(
    """-name -iname -path -ipath -wholename -iwholename -regex -iregex -lname -ilname
    -type -xtype -size -mtime -mmin -atime -amin -ctime -cmin -newer -anewer -cnewer
    -used -user -group -uid -gid -perm -links -inum -samefile -maxdepth -mindepth
    -regextype -fstype""".split()  # noqa: SIM905
)


def _find(cwd: str, args: list[str]) -> list[Reach]:
    """Exactly what find would hand to ``-delete`` or ``rm``: the same find, run now with
    those actions replaced by ``-print0`` (as ``git clean -n`` stands in for ``clean``).
    An expression that could do anything else (another ``-exec``, ``-fprint``) cannot be
    dry-run: then everything under its starting points is in reach."""
    i = 0
    while i < len(args) and args[i] in ("-H", "-L", "-P"):
        i += 1
    options = args[:i]
    starts: list[str] = []
    while i < len(args) and not args[i].startswith("-") and args[i] not in ("(", "!", ","):
        starts.append(args[i])
        i += 1
    widest = [Reach(s, subtree=True) for s in (starts or ["."])]
    dry: list[str] = []
    subtree = False
    while i < len(args):
        a = args[i]
        if a == "-delete":
            dry.append("-print0")
        elif a in ("-exec", "-execdir", "-ok", "-okdir"):
            j = i + 1
            while j < len(args) and args[j] not in (";", "+"):
                j += 1
            program = args[i + 1 : j]
            if not program or os.path.basename(program[0]) not in FIND_DESTROYERS:
                return widest
            _, flags, _ = _options(program[1:], ())
            subtree = subtree or bool(flags & {"r", "R", "recursive"})
            dry.append("-print0")
            i = j
        elif a in _FIND_PRINTS:
            dry.append("-true")
            i += _FIND_PRINTS[a]
        elif a in _FIND_HARMLESS:
            dry.append(a)
            if a in _FIND_TAKES_VALUE and i + 1 < len(args):
                dry.append(args[i + 1])
                i += 1
        else:
            return widest  # an action or test we do not know: it could do anything
        i += 1
    import subprocess

    try:
        res = subprocess.run(
            ["find", *options, *starts, *dry],
            cwd=cwd,
            capture_output=True,
            timeout=30,
            check=False,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.TimeoutExpired):
        return widest
    if res.returncode != 0 and not res.stdout:
        return widest if res.returncode != 1 else []
    found = [os.fsdecode(p) for p in res.stdout.split(b"\0") if p]
    return [Reach(p, subtree) for p in found]


_HANDLERS: dict[str, Callable[[str, list[str]], list[Reach]]] = {
    "rm": _rm,
    "unlink": _files(""),
    "shred": _files("ns", ("iterations", "size", "random-source")),
    "tee": _files(""),
    "truncate": _truncate,
    "mv": _copy("mv"),
    "cp": _copy("cp"),
    "ln": _copy("ln"),
    "rsync": _rsync,
    "find": _find,
    REDIRECT: _redirect,
}
