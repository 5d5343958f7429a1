"""Read a git command line the way git does, before git runs it.

Global options, the subcommand (after alias resolution, chains included), the few
settings that turn a harmless command into a destructive one, and whether the command
could destroy anything at all. The subcommand's own options are read with git's option
tables (:mod:`guards.predict.options`). Everything here is read-only: aliases and
settings are asked of the real git with the same global options and environment the
command itself will see.
"""

from __future__ import annotations

import os

from guards.errors import UnknownStateError, UsageError
from guards.git import process as git
from guards.predict import DESTRUCTIVE_SUBCOMMANDS as DESTRUCTIVE_SUBCOMMANDS
from guards.predict.options import git_rejects, parse_options
from guards.values import Value

TYPE_CHECKING = False  # see guards.values: these imports cost start-up time
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from guards.predict.options import Options

#: git 2.39's built-in commands plus the scripted ones shipped with git: an alias can
#: never shadow them (git tries them before aliases).
_KNOWN = (
    "add am annotate apply archive bisect bisect--helper blame branch bugreport bundle "
    "cat-file check-attr check-ignore check-mailmap check-ref-format checkout "
    "checkout--worker checkout-index cherry cherry-pick citool clean clone column commit "
    "commit-graph commit-tree config count-objects credential credential-cache "
    "credential-cache--daemon credential-store describe diagnose diff diff-files "
    "diff-index diff-tree difftool env--helper fast-export fast-import fetch fetch-pack "
    "filter-branch fmt-merge-msg for-each-ref for-each-repo format-patch fsck fsck-objects "
    "fsmonitor--daemon gc get-tar-commit-id grep gui hash-object help hook index-pack init "
    "init-db instaweb interpret-trailers log ls-files ls-remote ls-tree mailinfo mailsplit "
    "maintenance merge merge-base merge-file merge-index merge-octopus merge-one-file "
    "merge-ours merge-recursive merge-recursive-ours merge-recursive-theirs merge-resolve "
    "merge-subtree merge-tree mergetool mktag mktree multi-pack-index mv name-rev notes "
    "pack-objects pack-redundant pack-refs patch-id pickaxe prune prune-packed pull push "
    "quiltimport range-diff read-tree rebase receive-pack reflog remote remote-ext "
    "remote-fd repack replace request-pull rerere reset restore rev-list rev-parse revert "
    "rm send-email send-pack sh-i18n--envsubst shortlog show show-branch show-index "
    "show-ref sparse-checkout stage stash status stripspace submodule submodule--helper "
    "switch symbolic-ref tag unpack-file unpack-objects update-index update-ref "
    "update-server-info upload-archive upload-archive--writer upload-pack var "
    "verify-commit verify-pack verify-tag version web--browse whatchanged worktree "
    "write-tree"
)
KNOWN_COMMANDS: frozenset[str] = frozenset(_KNOWN.split())

#: Settings that can make a command destructive (lower-case section and key, as
#: ``git config --get-regexp`` prints them; ``branch.<name>.rebase`` keeps the name).
_CONFIG_REGEX = (
    r"^(clean\.requireforce|rebase\.autostash|pull\.rebase|pull\.ff|merge\.autostash"
    r"|merge\.ff|branch\..*\.rebase|core\.sparsecheckout|core\.sparsecheckoutcone"
    r"|submodule\..*\.update)$"
)
_CONFIG_FOR = frozenset({"clean", "rebase", "pull", "merge", "sparse-checkout", "submodule"})


class GitCommand(Value):
    """One git command line, read the way git reads it."""

    __slots__ = (
        "aliases",
        "args",
        "argv",
        "config",
        "cwd",
        "env",
        "global_options",
        "opaque",
        "origin_cwd",
        "shell_alias",
        "subcommand",
    )

    def __init__(
        self,
        argv: list[str],
        global_options: list[str],
        cwd: str,
        subcommand: str | None,
        args: list[str],
        shell_alias: str | None = None,
        config: dict[str, str] | None = None,
        origin_cwd: str = "",
        env: dict[str, str] | None = None,
        aliases: list[str] | None = None,
        opaque: str | None = None,
    ) -> None:
        #: The original arguments after ``git``.
        self.argv = argv
        #: Global options as given, in order (reusable for read-only queries).
        self.global_options = global_options
        #: The directory git would run in (after every ``-C``).
        self.cwd = cwd
        #: Built-in name after alias resolution; None for ``git``, ``--version``, ...
        self.subcommand = subcommand
        #: The subcommand's arguments after alias expansion.
        self.args = args
        #: The text of a ``!`` alias: opaque, so everything it could destroy is at risk.
        self.shell_alias = shell_alias
        #: Effective settings that matter, lower-case keys as git prints them.
        self.config = {} if config is None else config
        #: The directory the command was started in (before any ``-C``).
        self.origin_cwd = origin_cwd
        #: The environment the command runs with (queries reuse it).
        self.env = {} if env is None else env
        #: The aliases expanded on the way to ``subcommand``, outermost first.
        self.aliases = [] if aliases is None else aliases
        #: Why the command's effect cannot be computed (a ``!`` alias, a global option
        #: guards does not know): everything it could reach is at risk. None: readable.
        self.opaque = opaque

    def _names(self) -> tuple[str, ...]:
        # The environment is neither compared nor shown: it is the caller's whole one.
        return tuple(name for name in self.__slots__ if name != "env")

    def query(
        self,
        args: Sequence[str],
        *,
        check: bool = True,
        stdin: bytes | None = None,
    ) -> git.Result:
        """A read-only git call in the same context (global options, env, directory)."""
        return git.run(
            [*query_options(self.global_options), *args],
            cwd=self.origin_cwd or self.cwd,
            env=self.env,
            check=check,
            stdin=stdin,
        )

    def config_bool(self, key: str, default: bool | None = None) -> bool | None:
        value = self.config.get(key)
        if value is None:
            return default
        parsed = parse_bool(value)
        return default if parsed is None else parsed


def query_options(global_options: Sequence[str]) -> list[str]:
    """The global options minus the pager ones (queries never page) and ``--super-prefix``
    (only a few plumbing commands accept it: any other git dies on it)."""
    kept: list[str] = []
    i = 0
    while i < len(global_options):
        o = global_options[i]
        if o == "--super-prefix":
            i += 2
            continue
        if o not in ("-p", "--paginate", "-P", "--no-pager") and not o.startswith(
            "--super-prefix="
        ):
            kept.append(o)
        i += 1
    return kept


#: The only commands git 2.39 runs with a super prefix (git.c ``SUPPORT_SUPER_PREFIX``):
#: any other dies "X doesn't support --super-prefix" before it touches anything.
_SUPER_PREFIX_COMMANDS = {"read-tree", "checkout--worker", "submodule--helper", "fsmonitor--daemon"}
_SUPER_PREFIX_ENV = "GIT_INTERNAL_SUPER_PREFIX"


def _has_super_prefix(global_options: Sequence[str], env: Mapping[str, str]) -> bool:
    return _SUPER_PREFIX_ENV in env or any(
        o == "--super-prefix" or o.startswith("--super-prefix=") for o in global_options
    )


def parse_bool(value: str) -> bool | None:
    """git's boolean values; None when the value is not a boolean."""
    v = value.strip().lower()
    if v in ("", "true", "yes", "on"):
        return True
    if v in ("false", "no", "off"):
        return False
    try:
        return int(v, 0) != 0
    except ValueError:
        return None


# ---------------------------------------------------------------------------
# Global options (git.c handle_options, git 2.39)

_GLOBAL_WITH_VALUE = {
    "-C",
    "-c",
    "--git-dir",
    "--work-tree",
    "--namespace",
    "--super-prefix",
    "--config-env",
    "--shallow-file",
}
_GLOBAL_EQ_VALUE = (
    "--git-dir=",
    "--work-tree=",
    "--namespace=",
    "--super-prefix=",
    "--config-env=",
    "--exec-path=",
)
_GLOBAL_FLAGS = {
    "-p",
    "--paginate",
    "-P",
    "--no-pager",
    "--no-replace-objects",
    "--bare",
    "--literal-pathspecs",
    "--no-literal-pathspecs",
    "--glob-pathspecs",
    "--noglob-pathspecs",
    "--icase-pathspecs",
    "--no-optional-locks",
}
#: Options after which git prints something and exits without a subcommand (git reads
#: ``--exec-path`` as a prefix: anything after it but ``=`` still prints the path).
_GLOBAL_EXITS = ("--html-path", "--man-path", "--info-path")
_GLOBAL_COMMANDS = {"-v": "version", "--version": "version", "-h": "help", "--help": "help"}


class _Globals:
    """What :func:`_split_globals` read: options, directory, where the subcommand is."""

    __slots__ = ("cwd", "exits", "implied", "index", "options", "unknown")

    def __init__(self, cwd: str) -> None:
        self.options: list[str] = []
        self.cwd = cwd
        #: Index of the subcommand's name in argv.
        self.index = 0
        #: ``version`` or ``help`` from ``--version``, ``-h`` & co.
        self.implied: str | None = None
        #: git prints something and exits (``--exec-path``, ``--list-cmds=``).
        self.exits = False
        #: Global options guards does not know, in order (see :func:`parse`).
        self.unknown: list[str] = []


def _split_globals(argv: Sequence[str], cwd: str) -> _Globals:
    """Read git's global options; raises UsageError when git would refuse them."""
    out = _Globals(cwd)
    i = 0
    while i < len(argv):
        a = argv[i]
        if not a.startswith("-"):
            break
        if a in _GLOBAL_COMMANDS:
            out.implied, out.index = _GLOBAL_COMMANDS[a], i + 1
            return out
        if (a.startswith("--exec-path") and not a.startswith("--exec-path=")) or (
            a in _GLOBAL_EXITS or a.startswith("--list-cmds=")
        ):
            out.exits, out.index = True, i + 1
            return out
        if a in _GLOBAL_WITH_VALUE:
            if i + 1 >= len(argv):
                raise UsageError(f"git: option {a} needs a value")
            value = argv[i + 1]
            out.options += [a, value]
            if a == "-C" and value:
                out.cwd = os.path.normpath(os.path.join(out.cwd, value))
                if not os.path.isdir(out.cwd):
                    raise UsageError(f"git: cannot change to '{value}'")  # git dies there
            i += 2
            continue
        if a.startswith(_GLOBAL_EQ_VALUE) or a in _GLOBAL_FLAGS:
            out.options.append(a)
            i += 1
            continue
        # Not an option of git 2.39's: a newer git's, or a typo git rejects. Read on as
        # if it were a flag (kept out of ``options``: guards' queries never repeat it);
        # :func:`parse` asks git which it is.
        out.unknown.append(a)
        i += 1
    out.index = i
    return out


#: The only global options an alias may carry: git dies on any other ("alias 'x' changes
#: environment variables").
_ALIAS_OPTIONS = ("-c", "--config-env", "-p", "--paginate")
_ALIAS_EQ_OPTIONS = ("--config-env=", "--exec-path=")


def _changes_environment(options: Sequence[str]) -> bool:
    i = 0
    while i < len(options):
        o = options[i]
        if o not in _ALIAS_OPTIONS and not o.startswith(_ALIAS_EQ_OPTIONS):
            return True
        i += 2 if o in _GLOBAL_WITH_VALUE else 1
    return False


def _git_rejects_globals(options: Sequence[str], env: Mapping[str, str], cwd: str) -> bool:
    """Whether git refuses these global options before running any command (asked with
    the harmless ``version``: an option that takes a value eats it, and git then runs no
    command at all, exiting 1)."""
    res = git.run(
        [*query_options(options), "version"],
        cwd=cwd,
        env=env,
        extra_env={"LC_ALL": "C", "LANGUAGE": "C"},
        check=False,
        readonly=False,
    )
    return res.returncode in (128, 129)


def _repository_env(options: Sequence[str], env: dict[str, str], start: str, cwd: str) -> None:
    """``--git-dir``, ``--work-tree`` and ``--bare`` as git itself applies them: into the
    environment, so that every later step, the rescue included, opens the repository
    git will act on. Values become absolute (guards' own git calls run elsewhere): git
    reads a relative one from ``cwd``, the directory after every ``-C``; ``--bare``
    takes the directory it was given in (``start`` and the ``-C`` before it)."""
    i = 0
    here = start
    while i < len(options):
        o = options[i]
        value: str | None = None
        name = ""
        if o in ("--git-dir", "--work-tree"):
            name, value = o, options[i + 1]
        elif o.startswith(("--git-dir=", "--work-tree=")):
            name, _, value = o.partition("=")
        if o in _GLOBAL_WITH_VALUE:
            if o == "-C" and options[i + 1]:
                here = os.path.normpath(os.path.join(here, options[i + 1]))
            i += 1
        i += 1
        if o == "--bare":
            env.setdefault("GIT_DIR", here)
            env["GIT_IMPLICIT_WORK_TREE"] = "0"
        elif value is not None:
            var = "GIT_DIR" if name == "--git-dir" else "GIT_WORK_TREE"
            env[var] = os.path.normpath(os.path.join(cwd, value)) if value else value


# ---------------------------------------------------------------------------
# Aliases


def split_cmdline(text: str) -> list[str]:
    """git's split_cmdline: whitespace-separated words, '' and "" quoting, backslash."""
    words: list[str] = []
    cur: list[str] = []
    has = False
    quote = ""
    i = 0
    while i < len(text):
        c = text[i]
        if quote:
            if c == quote:
                quote = ""
            elif c == "\\" and quote == '"' and i + 1 < len(text):
                i += 1
                cur.append(text[i])
            else:
                cur.append(c)
        elif c in " \t\n\r\f\v":
            if has:
                words.append("".join(cur))
                cur, has = [], False
        elif c in "'\"":
            quote, has = c, True
        elif c == "\\" and i + 1 < len(text):
            i += 1
            cur.append(text[i])
            has = True
        else:
            cur.append(c)
            has = True
        i += 1
    if quote:
        raise UsageError(f"bad alias string (unclosed quote): {text}")
    if has:
        words.append("".join(cur))
    return words


def _lookup_alias(
    name: str, global_options: Sequence[str], env: Mapping[str, str], cwd: str
) -> str | None:
    res = git.run(
        [*query_options(global_options), "config", "--get", f"alias.{name}"],
        cwd=cwd,
        env=env,
        check=False,
    )
    if res.returncode == 1:
        return None
    if res.returncode != 0:
        msg = res.stderr.decode("utf-8", "replace").strip().splitlines()
        raise UnknownStateError(
            f"cannot read alias.{name}: {msg[-1] if msg else 'git config failed'}"
        )
    return git.strip_newline(res.stdout).decode("utf-8", "surrogateescape")


def _autocorrected(
    name: str, global_options: Sequence[str], env: Mapping[str, str], cwd: str
) -> str | None:
    """The command git runs instead of ``name`` when help.autocorrect is on and ``name``
    is neither a command nor an alias: the one most similar command, as git itself
    names it (asked with autocorrection off, which only prints the suggestion)."""
    res = git.run(
        [*query_options(global_options), "config", "--get", "help.autocorrect"],
        cwd=cwd,
        env=env,
        check=False,
    )
    value = git.strip_newline(res.stdout).decode("utf-8", "replace")
    if res.returncode != 0 or value in ("never", "0", ""):
        return None
    if value == "prompt" and not (os.isatty(0) and os.isatty(2)):
        return None
    if value not in ("immediate", "prompt"):
        try:
            if int(value, 0) == 0:
                return None
        except ValueError:
            return None  # git dies on a bad value
    if _external_command(name, global_options, env, cwd):
        return None  # git runs git-<name>
    probe = git.run(
        [*query_options(global_options), "-c", "help.autocorrect=0", name],
        cwd=cwd,
        env=env,
        extra_env={"LC_ALL": "C", "LANGUAGE": "C"},
        check=False,
        readonly=False,
    )
    _, found, rest = probe.stderr.decode("utf-8", "replace").partition(
        "\nThe most similar command is\n\t"
    )
    return rest.strip() or None if found else None


def _external_command(
    name: str, global_options: Sequence[str], env: Mapping[str, str], cwd: str
) -> bool:
    """Whether ``git-<name>`` is an executable in git's exec-path or on PATH."""
    res = git.run([*query_options(global_options), "--exec-path"], cwd=cwd, env=env, check=False)
    dirs = [os.fsdecode(git.strip_newline(res.stdout)), *env.get("PATH", "").split(os.pathsep)]
    for directory in dirs:
        candidate = os.path.join(directory, f"git-{name}")
        if directory and os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return True
    return False


def _read_config(global_options: Sequence[str], env: Mapping[str, str], cwd: str) -> dict[str, str]:
    res = git.run(
        [*query_options(global_options), "config", "-z", "--get-regexp", _CONFIG_REGEX],
        cwd=cwd,
        env=env,
        check=False,
    )
    if res.returncode not in (0, 1):
        msg = res.stderr.decode("utf-8", "replace").strip().splitlines()
        raise UnknownStateError(f"cannot read git config: {msg[-1] if msg else 'failed'}")
    config: dict[str, str] = {}
    for rec in git.zsplit(res.stdout):
        key, _, value = rec.partition(b"\n")
        config[key.decode("utf-8", "surrogateescape")] = value.decode("utf-8", "surrogateescape")
    return config


def parse(argv: Sequence[str], env: Mapping[str, str], cwd: str) -> GitCommand:
    """Read ``git <argv>`` run in ``cwd`` with ``env``.

    Raises :class:`UsageError` only for what git itself rejects before running.
    """
    argv = list(argv)
    found = _split_globals(argv, cwd)
    global_options, eff_cwd, i, implied = found.options, found.cwd, found.index, found.implied
    env = dict(env)
    for name in ("GIT_DIR", "GIT_WORK_TREE"):
        # Relative to where git starts (after -C): guards' own queries run elsewhere.
        value = env.get(name)
        if value and not os.path.isabs(value):
            env[name] = os.path.normpath(os.path.join(eff_cwd, value))
    _repository_env(global_options, env, cwd, eff_cwd)
    opaque = None
    if found.unknown:
        if _git_rejects_globals([*global_options, *found.unknown], env, cwd):
            raise UsageError(f"git: unknown option: {found.unknown[0]}")
        # A newer git's option: what it does (and whether it takes the next word as its
        # value) is unknown, so everything the command could reach is at risk.
        opaque = f"global option {found.unknown[0]} unknown to guards"
        implied = None
    base = GitCommand(
        argv=argv,
        global_options=global_options,
        cwd=eff_cwd,
        subcommand=implied,
        args=argv[i:] if implied or opaque else [],
        origin_cwd=cwd,
        env=env,
        opaque=opaque,
    )
    if implied or opaque or i >= len(argv) or found.exits:
        return base
    name = argv[i]
    rest = argv[i + 1 :]
    seen: list[str] = []
    corrected = False
    while name not in KNOWN_COMMANDS:
        value = _lookup_alias(name, global_options, env, cwd)
        if value is None:
            assumed = None if corrected else _autocorrected(name, global_options, env, cwd)
            if assumed is None:
                break
            name, corrected = assumed, True  # git runs that instead (an alias, maybe)
            continue
        if name in seen:
            raise UsageError(f"recursive alias: {' -> '.join([*seen, name])}")
        seen.append(name)
        if value.startswith("!"):
            return GitCommand(
                argv=argv,
                global_options=global_options,
                cwd=eff_cwd,
                subcommand=None,
                args=rest,
                shell_alias=value[1:],
                origin_cwd=cwd,
                env=env,
                aliases=seen,
                opaque=f"shell alias {seen[0]}",
            )
        words = split_cmdline(value)
        # Global options inside an alias (``alias.x = -c k=v reset``) apply too.
        more = _split_globals(words, eff_cwd)
        if more.unknown or more.exits or _changes_environment(more.options):
            # git dies: "alias 'x' changes environment variables" (or an unknown option)
            raise UsageError(f"git: alias {seen[-1]} cannot be expanded")
        j, implied = more.index, more.implied
        global_options = [*global_options, *more.options]
        if implied:
            name, rest = implied, [*words[j:], *rest]
            break
        if j >= len(words):
            raise UsageError(f"empty alias for {seen[-1]}")
        name, rest = words[j], [*words[j + 1 :], *rest]
    if _has_super_prefix(global_options, env) and (seen or name not in _SUPER_PREFIX_COMMANDS):
        raise UsageError(f"git: {name} doesn't support --super-prefix")
    config = _read_config(global_options, env, cwd) if name in _CONFIG_FOR else {}
    return GitCommand(
        argv=argv,
        global_options=global_options,
        cwd=eff_cwd,
        subcommand=name,
        args=rest,
        config=config,
        origin_cwd=cwd,
        env=env,
        aliases=seen,
    )


# ---------------------------------------------------------------------------
# Subcommand arguments (the options themselves: guards.predict.options)


def stash_action(args: Sequence[str]) -> tuple[str, list[str]]:
    """``git stash``'s sub-action and its arguments (no sub-action = push)."""
    if not args or args[0].startswith("-"):
        return "push", list(args)
    return args[0], list(args[1:])


# ---------------------------------------------------------------------------
# Could it destroy at all? (syntactic, no git calls)

_SEQ_DESTRUCTIVE = ("abort", "skip")


def autostash(cmd: GitCommand, opts: Options) -> bool:
    """Whether rebase/pull/merge would stash local changes away and re-apply them."""
    sub = cmd.subcommand
    if opts.given("autostash"):
        return opts.has("autostash")
    if sub == "rebase":
        return bool(cmd.config_bool("rebase.autostash", False))
    if sub == "merge":
        return bool(cmd.config_bool("merge.autostash", False))
    if sub == "pull":
        if pull_rebases(cmd, opts):
            return bool(cmd.config_bool("rebase.autostash", False))
        return bool(cmd.config_bool("merge.autostash", False))
    return False


def pull_rebases(cmd: GitCommand, opts: Options) -> bool:
    if opts.given("rebase"):
        v = opts.values["rebase"][-1]
        if v is False:
            return False
        return v is True or parse_bool(str(v)) is not False
    values = [v for k, v in cmd.config.items() if _is_branch_rebase(k)]
    candidates = [cmd.config.get("pull.rebase"), *values]
    return any(c is not None and parse_bool(c) is not False for c in candidates)


def _is_branch_rebase(key: str) -> bool:
    """``branch.<name>.rebase`` (string tests: ``re`` costs the guarded git start-up)."""
    prefix, suffix = "branch.", ".rebase"
    return key.startswith(prefix) and key.endswith(suffix) and len(key) > len(prefix + suffix)


def clean_force(cmd: GitCommand, opts: Options) -> bool:
    """clean deletes (not a dry run, and forced or requireForce is off)."""
    if opts.has("dry-run"):
        return False
    if opts.has("force") or opts.has("interactive"):
        return True
    return cmd.config_bool("clean.requireforce", True) is False


def asks_for_help(args: Sequence[str]) -> bool:
    """``-h``, ``--help`` or ``--help-all`` before ``--``: git prints usage and stops."""
    for a in args:
        if a == "--":
            return False
        if a in ("-h", "--help", "--help-all"):
            return True
    return False


#: The option table each subcommand's arguments are read with (stash: per action).
SPEC_OF = {
    "reset": "reset",
    "checkout": "checkout",
    "switch": "switch",
    "restore": "restore",
    "clean": "clean",
    "rm": "rm",
    "mv": "mv",
    "branch": "branch",
    "rebase": "rebase",
    "pull": "pull",
    "merge": "merge",
    "cherry-pick": "sequencer",
    "revert": "sequencer",
    "am": "am",
}


def applies(o: Options) -> bool:
    """``git apply`` changes files or the index (not only --check, --stat & co)."""
    reports = any(o.has(x) for x in ("check", "stat", "numstat", "summary"))
    return o.has("apply") or not reports


def opaque_reason(cmd: GitCommand) -> str | None:
    """Why the command's effect cannot be computed, so that everything it could reach
    is at risk; None when it can be. Commands that run shell commands of their own are
    such: git puts its exec-path first on PATH for them, so a git inside never reaches
    a shim (rebase --exec, bisect run, submodule foreach, a submodule's ``update =
    !cmd``, filter-branch), and so is plumbing that rewrites the index and the work
    tree wholesale (read-tree)."""
    if cmd.opaque is not None:
        return cmd.opaque
    sub, args = cmd.subcommand, cmd.args
    if sub is None or asks_for_help(args):
        return None
    if sub == "rebase":
        o = parse_options("rebase", args)
        if o.given("exec") and not git_rejects("rebase", o):
            return "rebase --exec runs shell commands"
    elif sub == "bisect" and args[:1] == ["run"]:
        return "bisect run runs a shell command"
    elif sub == "submodule":
        words = [a for a in args if not a.startswith("-")]
        if words[:1] == ["foreach"]:
            return "submodule foreach runs a shell command"
        if words[:1] == ["update"] and _update_command(cmd):
            return "a submodule's update setting is a shell command"
    elif sub == "filter-branch":
        return "filter-branch runs shell commands and rewrites the work tree"
    elif (
        sub == "read-tree"
        and not any(a in ("-n", "--dry-run") or a.startswith("--index-output") for a in args)
        and not read_tree_index_only(args)
    ):
        return "read-tree rewrites the index (and with -u the work tree)"
    return None


#: read-tree's options that neither merge, nor reset, nor touch the work tree.
_READ_TREE_PLAIN = (
    "--empty",
    "--trivial",
    "--aggressive",
    "--dry-run",
    "--quiet",
    "--verbose",
    "--no-sparse-checkout",
    "--recurse-submodules",
    "--no-recurse-submodules",
)


def read_tree_index_only(args: Sequence[str]) -> bool:
    """``read-tree TREE...`` without -m, --reset, --prefix or -u: git replaces the index
    without reading it and leaves the work tree alone. Any option guards does not know
    (or a bundle holding another letter than n, v, q) counts as merging."""
    for a in args:
        if a == "--":
            break
        if a.startswith("--"):
            if a not in _READ_TREE_PLAIN and not a.startswith(
                ("--index-output=", "--exclude-per-directory=")
            ):
                return False
        elif a.startswith("-") and len(a) > 1 and set(a[1:]) - set("nvq"):
            return False
    return True


def _update_command(cmd: GitCommand) -> bool:
    """``submodule.<name>.update = !command`` (from git config: git refuses it from
    .gitmodules), unless the command line names a strategy itself."""
    if any(a in ("--checkout", "--merge", "--rebase") for a in cmd.args):
        return False
    return any(
        k.startswith("submodule.") and k.endswith(".update") and v.startswith("!")
        for k, v in cmd.config.items()
    )


def could_destroy(cmd: GitCommand) -> bool:
    """False for commands that can never destroy or move uncommitted work or commits,
    and for command lines git itself refuses before touching anything."""
    if opaque_reason(cmd) is not None:
        return True
    sub = cmd.subcommand
    if sub is None or sub not in DESTRUCTIVE_SUBCOMMANDS or asks_for_help(cmd.args):
        return False
    args = cmd.args
    spec = SPEC_OF.get(sub)
    if spec is not None:
        o = parse_options(spec, args)
        if git_rejects(spec, o):
            return False
        if o.unknown:
            return True  # git may know it: asked when the blast radius is computed
    if sub == "reset":
        return not o.has("soft")
    if sub == "checkout":
        if o.after_dashdash is not None or o.given("pathspec-from-file"):
            return True
        if o.has("patch") or o.has("force") or o.has("merge"):
            return True
        if o.given("B"):
            return True
        return bool(o.positionals)
    if sub == "switch":
        if o.given("force-create") or o.has("force") or o.has("discard-changes"):
            return True
        return bool(o.positionals) or o.has("merge") or o.given("orphan")
    if sub == "restore":
        return True
    if sub == "clean":
        return clean_force(cmd, o)
    if sub == "stash":
        action, rest = stash_action(args)
        pushed = parse_options("stash-push", rest) if action in ("push", "save") else None
        if pushed is not None and git_rejects("stash-push", pushed):
            return False
        return action not in ("list", "show", "apply", "create", "store")
    if sub == "rm":
        return not o.has("dry-run")  # without -f: a conflicted file goes unchecked
    if sub == "mv":
        return not o.has("dry-run")  # without -f: a staged dst whose file is gone
    if sub == "worktree":
        if args[:1] == ["add"]:
            return parse_options("worktree-add", args[1:]).given("B")
        return bool(args) and args[0] == "remove"
    if sub in ("fetch", "push"):
        o = parse_options(sub, args)
        if git_rejects(sub, o) or o.has("dry-run"):
            return False
        refspecs = [*o.positionals[1:], *(o.after_dashdash or [])]
        deletes = sub == "push" and o.has("delete")
        return deletes or o.has("stdin") or any(":" in r for r in refspecs)
    if sub == "reflog":
        return args[:1] in (["expire"], ["delete"])
    if sub == "read-tree":  # the index alone is replaced: see the read-tree handler
        return not any(a in ("-n", "--dry-run") or a.startswith("--index-output") for a in args)
    if sub in ("bisect", "filter-branch"):
        return False  # the forms that could destroy are opaque (above)
    if sub == "checkout-index":
        o = parse_options("checkout-index", args)
        return not git_rejects("checkout-index", o) and (o.has("force") or bool(o.unknown))
    if sub == "apply":
        o = parse_options("apply", args)
        if git_rejects("apply", o):
            return False
        return applies(o)
    if sub == "branch":
        if o.has("D") or o.has("M") or o.has("C"):
            return True
        if o.has("force") and (o.has("delete") or o.has("move") or o.has("copy")):
            return True
        listing = o.has("list") or o.given("contains") or o.given("merged")
        return o.has("force") and bool(o.positionals) and not listing
    if sub in ("rebase", "pull", "merge"):
        if o.has("abort") or o.has("skip"):
            return True
        if sub in ("merge", "rebase") and not (o.has("continue") or o.has("quit")):
            return True  # the switch to the new base overwrites ignored files in its way
        return autostash(cmd, o)
    if sub in ("cherry-pick", "revert") and o.positionals:
        return not any(o.has(x) for x in ("continue", "quit"))  # ignored files in the way
    if sub in ("cherry-pick", "revert", "am"):
        return any(o.has(x) for x in _SEQ_DESTRUCTIVE)
    if sub == "submodule":
        words = [a for a in args if not a.startswith("-")]
        action = words[0] if words else ""
        if action == "deinit":
            return True
        if action == "update":
            return parse_options("submodule-update", args[args.index("update") + 1 :]).has("force")
        return False
    if sub == "sparse-checkout":
        return bool(args) and args[0] in ("set", "add", "reapply", "init")
    return True


class command_environment:
    """``with command_environment(cmd):`` our own git queries see the repository the
    command will see (``--git-dir`` & co). (A class, not contextlib: start-up time.)"""

    def __init__(self, cmd: GitCommand) -> None:
        self._env = cmd.env
        self._saved: dict[str, str | None] = {}

    def __enter__(self) -> None:
        self._saved = {k: os.environ.get(k) for k in self._env}
        os.environ.update(self._env)

    def __exit__(self, *exc_info: object) -> None:
        for k, v in self._saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
