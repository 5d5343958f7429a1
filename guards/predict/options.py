"""git's option tables: each subcommand's options as git's parse-options reads them.

:data:`SPECS` names every option guards must recognise (anything else is *unknown*, and
an unknown option puts all dirty work at risk); :func:`parse_options` reads arguments
the way git does: unambiguous long prefixes, ``--no-`` negations, clustered short
flags, values attached or separate, ``--`` and ``--end-of-options``.
"""

from __future__ import annotations

from guards.values import MutableValue, Value

TYPE_CHECKING = False  # see guards.values: these imports cost start-up time
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence


# An option spec: "name" (flag), "name=" (required value), "name=?" (optional value,
# only as --name=value). Short options map a letter to a long name (or a pseudo one).


class Spec(Value):
    """A subcommand's options: long names, short letters, where parsing stops."""

    __slots__ = ("long", "short", "stop_at_non_option")

    def __init__(
        self, long: tuple[str, ...], short: Mapping[str, str], stop_at_non_option: bool = False
    ) -> None:
        self.long = long
        self.short = short
        #: Stop option parsing at the first non-option (stash's subcommands).
        self.stop_at_non_option = stop_at_non_option


class Options(MutableValue):
    """What parse_options found: values per long name, positionals, the pathspec."""

    __slots__ = ("after_dashdash", "missing", "positionals", "unknown", "values")

    def __init__(self) -> None:
        self.values: dict[str, list[str | bool]] = {}
        self.positionals: list[str] = []
        #: Arguments after ``--`` (None when there was no ``--``).
        self.after_dashdash: list[str] | None = None
        #: Options guards' table does not have (git may or may not know them).
        self.unknown: list[str] = []
        #: Options whose required value is missing: git refuses the whole command.
        self.missing: list[str] = []

    def has(self, name: str) -> bool:
        """The option was given and its last occurrence is not negated."""
        vals = self.values.get(name)
        return bool(vals) and vals[-1] is not False  # type: ignore[index]

    def count(self, name: str) -> int:
        n = 0
        for v in self.values.get(name, []):
            n = 0 if v is False else n + 1
        return n

    def value(self, name: str) -> str | None:
        vals = self.values.get(name)
        if not vals or vals[-1] is False or vals[-1] is True:
            return None
        return str(vals[-1])

    def given(self, name: str) -> bool:
        return name in self.values


def _spec(longs: str, short: Mapping[str, str] | None = None, stop: bool = False) -> Spec:
    return Spec(tuple(longs.split()), dict(short or {}), stop)


_COMMON = "quiet no-quiet progress verbose"

SPECS: dict[str, Spec] = {
    "reset": _spec(
        f"{_COMMON} soft mixed hard merge keep patch intent-to-add pathspec-from-file= "
        "pathspec-file-nul recurse-submodules=? refresh",
        {"q": "quiet", "p": "patch", "N": "intent-to-add"},
    ),
    "checkout": _spec(
        f"{_COMMON} force merge conflict= b= B= orphan= detach track=? guess overlay ours "
        "theirs patch ignore-skip-worktree-bits ignore-other-worktrees recurse-submodules=? "
        "pathspec-from-file= pathspec-file-nul overwrite-ignore auto-advance",
        {
            "q": "quiet",
            "f": "force",
            "m": "merge",
            "b": "b",
            "B": "B",
            "l": "l",
            "d": "detach",
            "t": "track",
            "2": "ours",
            "3": "theirs",
            "p": "patch",
        },
    ),
    "switch": _spec(
        f"{_COMMON} create= force-create= detach guess force discard-changes merge "
        "conflict= track=? orphan= ignore-other-worktrees recurse-submodules=? "
        "overwrite-ignore",
        {
            "c": "create",
            "C": "force-create",
            "d": "detach",
            "f": "force",
            "m": "merge",
            "q": "quiet",
            "t": "track",
        },
    ),
    "restore": _spec(
        f"{_COMMON} source= staged worktree ignore-unmerged overlay recurse-submodules=? "
        "patch ours theirs merge conflict= pathspec-from-file= pathspec-file-nul "
        "ignore-skip-worktree-bits",
        {
            "s": "source",
            "S": "staged",
            "W": "worktree",
            "p": "patch",
            "m": "merge",
            "q": "quiet",
            "2": "ours",
            "3": "theirs",
        },
    ),
    "clean": _spec(
        f"{_COMMON} force interactive dry-run exclude=",
        {
            "q": "quiet",
            "n": "dry-run",
            "f": "force",
            "i": "interactive",
            "d": "d",
            "e": "exclude",
            "x": "x",
            "X": "X",
        },
    ),
    "stash-push": _spec(
        f"{_COMMON} patch keep-index include-untracked all message= pathspec-from-file= "
        "pathspec-file-nul staged",
        {
            "p": "patch",
            "k": "keep-index",
            "u": "include-untracked",
            "a": "all",
            "m": "message",
            "q": "quiet",
            "S": "staged",
        },
    ),
    "stash-ref": _spec(f"{_COMMON} index", {"q": "quiet"}),
    "rm": _spec(
        f"{_COMMON} force dry-run cached ignore-unmatch sparse pathspec-from-file= "
        "pathspec-file-nul",
        {"f": "force", "n": "dry-run", "r": "r", "q": "quiet"},
    ),
    "mv": _spec(
        f"{_COMMON} force dry-run sparse",
        {"f": "force", "n": "dry-run", "k": "k", "v": "verbose"},
    ),
    "worktree-remove": _spec("force", {"f": "force"}),
    "branch": _spec(
        f"{_COMMON} delete force move copy remotes all list track=? set-upstream-to= "
        "unset-upstream edit-description contains=? no-contains=? merged=? no-merged=? "
        "column=? sort= points-at= format= color=? ignore-case create-reflog show-current "
        "abbrev=? omit-empty recurse-submodules set-upstream",
        {
            "d": "delete",
            "D": "D",
            "f": "force",
            "m": "move",
            "M": "M",
            "c": "copy",
            "C": "C",
            "r": "remotes",
            "a": "all",
            "l": "list",
            "v": "verbose",
            "q": "quiet",
            "t": "track",
            "u": "set-upstream-to",
            "i": "ignore-case",
        },
    ),
    "rebase": _spec(
        f"{_COMMON} onto= keep-base continue abort skip quit edit-todo show-current-patch "
        "apply merge=? interactive exec= root autosquash autostash update-refs fork-point "
        "strategy= strategy-option= rebase-merges=? rerere-autoupdate keep-empty empty= "
        "signoff gpg-sign=? stat committer-date-is-author-date ignore-date "
        "ignore-whitespace whitespace= context= reapply-cherry-picks "
        "reschedule-failed-exec preserve-merges no-ff force-rebase verify",
        {
            "q": "quiet",
            "v": "verbose",
            "i": "interactive",
            "x": "exec",
            "s": "strategy",
            "X": "strategy-option",
            "r": "rebase-merges",
            "m": "merge",
            "f": "force-rebase",
            "n": "no-stat",
            "S": "gpg-sign",
            "C": "context",
            "k": "keep-empty",
        },
    ),
    "pull": _spec(
        f"{_COMMON} recurse-submodules=? rebase=? autostash ff ff-only squash commit edit "
        "cleanup= stat summary log=? signoff strategy= strategy-option= verify-signatures "
        "gpg-sign=? allow-unrelated-histories all append upload-pack= force tags prune "
        "jobs= dry-run keep depth= shallow-since= shallow-exclude= deepen= unshallow "
        "update-shallow refmap= server-option= ipv4 ipv6 negotiation-tip= show-forced-updates "
        "set-upstream verify",
        {
            "q": "quiet",
            "v": "verbose",
            "r": "rebase",
            "n": "no-stat",
            "s": "strategy",
            "X": "strategy-option",
            "S": "gpg-sign",
            "a": "append",
            "f": "force",
            "t": "tags",
            "p": "prune",
            "j": "jobs",
            "k": "keep",
            "4": "ipv4",
            "6": "ipv6",
            "o": "server-option",
            "e": "edit",
        },
    ),
    "merge": _spec(
        f"{_COMMON} commit edit cleanup= ff ff-only squash stat summary log=? signoff "
        "strategy= strategy-option= verify-signatures gpg-sign=? allow-unrelated-histories "
        "abort continue quit autostash message= file= into-name= overwrite-ignore "
        "rerere-autoupdate verify",
        {
            "q": "quiet",
            "v": "verbose",
            "e": "edit",
            "n": "no-stat",
            "s": "strategy",
            "X": "strategy-option",
            "S": "gpg-sign",
            "m": "message",
            "F": "file",
        },
    ),
    "sequencer": _spec(
        f"{_COMMON} continue abort skip quit edit mainline= no-commit signoff strategy= "
        "strategy-option= gpg-sign=? rerere-autoupdate allow-empty allow-empty-message "
        "keep-redundant-commits ff cleanup= reference",
        {
            "e": "edit",
            "m": "mainline",
            "n": "no-commit",
            "s": "signoff",
            "x": "x",
            "S": "gpg-sign",
            "X": "strategy-option",
        },
    ),
    "am": _spec(
        f"{_COMMON} interactive 3way rerere-autoupdate signoff utf8 keep keep-non-patch "
        "keep-cr message-id scissors whitespace= ignore-space-change ignore-whitespace "
        "directory= exclude= include= patch-format= resolvemsg= continue resolved skip "
        "abort quit show-current-patch=? committer-date-is-author-date ignore-date "
        "gpg-sign=? empty= reject",
        {
            "i": "interactive",
            "3": "3way",
            "s": "signoff",
            "u": "utf8",
            "k": "keep",
            "m": "message-id",
            "c": "scissors",
            "p": "p",
            "C": "C",
            "r": "resolved",
            "q": "quiet",
            "S": "gpg-sign",
        },
    ),
    "submodule-deinit": _spec("force all quiet", {"f": "force", "q": "quiet"}),
    "submodule-update": _spec(
        "force init remote no-fetch checkout merge rebase recommend-shallow reference= "
        "recursive jobs= depth= single-branch filter= dissociate progress quiet",
        {"f": "force", "N": "no-fetch", "j": "jobs", "q": "quiet"},
    ),
    "sparse-checkout": _spec("cone sparse-index skip-checks stdin", {}),
    "worktree-add": _spec(
        "force b= B= detach checkout lock reason= quiet track guess-remote",
        {"f": "force", "b": "b", "B": "B", "d": "detach", "q": "quiet"},
    ),
    "fetch": _spec(
        f"{_COMMON} all set-upstream append atomic upload-pack= force multiple tags jobs= "
        "prefetch prune prune-tags recurse-submodules=? dry-run write-fetch-head keep "
        "update-head-ok depth= shallow-since= shallow-exclude= deepen= unshallow refetch "
        "update-shallow refmap= server-option= ipv4 ipv6 negotiation-tip= negotiate-only "
        "filter= auto-maintenance auto-gc show-forced-updates write-commit-graph stdin "
        "recurse-submodules-default= submodule-prefix=",
        {
            "v": "verbose",
            "q": "quiet",
            "a": "append",
            "f": "force",
            "m": "multiple",
            "t": "tags",
            "n": "n",
            "j": "jobs",
            "p": "prune",
            "P": "prune-tags",
            "k": "keep",
            "u": "update-head-ok",
            "o": "server-option",
            "4": "ipv4",
            "6": "ipv6",
        },
    ),
    "push": _spec(
        f"{_COMMON} repo= all mirror delete tags dry-run porcelain force force-with-lease=? "
        "force-if-includes recurse-submodules= thin receive-pack= exec= set-upstream prune "
        "verify follow-tags signed=? atomic push-option= ipv4 ipv6",
        {
            "v": "verbose",
            "q": "quiet",
            "d": "delete",
            "n": "dry-run",
            "f": "force",
            "u": "set-upstream",
            "o": "push-option",
            "4": "ipv4",
            "6": "ipv6",
        },
    ),
    "reflog-expire": _spec(
        "dry-run rewrite updateref verbose expire= expire-unreachable= stale-fix all "
        "single-worktree",
        {"n": "dry-run"},
    ),
    "reflog-delete": _spec("dry-run rewrite updateref verbose", {"n": "dry-run"}),
    "gc": _spec("quiet prune=? cruft aggressive auto force keep-largest-pack", {"q": "quiet"}),
    "checkout-index": _spec(
        "all ignore-skip-worktree-bits force quiet no-create index stdin temp prefix= stage=",
        {"a": "all", "f": "force", "q": "quiet", "n": "no-create", "u": "index", "z": "z"},
    ),
    "apply": _spec(
        "exclude= include= add stat allow-binary-replacement binary numstat summary check "
        "index intent-to-add cached unsafe-paths apply 3way build-fake-ancestor= whitespace= "
        "ignore-space-change ignore-whitespace reverse unidiff-zero reject allow-overlap "
        "verbose quiet inaccurate-eof recount directory= allow-empty",
        {
            "p": "p",
            "N": "intent-to-add",
            "3": "3way",
            "z": "z",
            "C": "C",
            "R": "reverse",
            "v": "verbose",
            "q": "quiet",
        },
    ),
}
_VALUE_SHORTS = {
    "checkout": "bB",
    "switch": "cC",
    "restore": "s",
    "clean": "e",
    "stash-push": "m",
    "branch": "u",
    "rebase": "xsXSC",
    "pull": "sXjo",
    "merge": "sXmF",
    "sequencer": "mXS",
    "am": "pC",
    "submodule-update": "j",
    "worktree-add": "bB",
    "fetch": "jo",
    "push": "o",
    "apply": "pC",
}


def parse_options(spec_name: str, args: Sequence[str]) -> Options:
    """Parse ``args`` like git's parse-options with the named spec."""
    spec = SPECS[spec_name]
    value_shorts = _VALUE_SHORTS.get(spec_name, "")
    table: dict[str, str] = {}  # bare name -> "", "=", "=?"
    for entry in spec.long:
        if entry.endswith("=?"):
            table[entry[:-2]] = "=?"
        elif entry.endswith("="):
            table[entry[:-1]] = "="
        else:
            table[entry] = ""
    out = Options()
    i = 0
    args = list(args)
    while i < len(args):
        a = args[i]
        i += 1
        if a == "--":
            out.after_dashdash = args[i:]
            break
        if a == "--end-of-options":
            out.positionals.extend(args[i:])
            break
        if a.startswith("--") and len(a) > 2:
            body, eq, val = a[2:].partition("=")
            resolved = _resolve_long(body, table)
            if resolved is None:
                out.unknown.append(a)
                continue
            name, negated = resolved
            kind = table[name]
            if negated:
                out.values.setdefault(name, []).append(False)
            elif kind == "=":
                if eq:
                    out.values.setdefault(name, []).append(val)
                elif i < len(args):
                    out.values.setdefault(name, []).append(args[i])
                    i += 1
                else:
                    out.missing.append(a)
            elif kind == "=?":
                out.values.setdefault(name, []).append(val if eq else True)
            else:
                if eq:
                    out.unknown.append(a)
                out.values.setdefault(name, []).append(True)
            continue
        if (a.startswith("-") and len(a) > 1 and not a[1:].isdigit()) or a in ("-2", "-3"):
            j = 1
            while j < len(a):
                c = a[j]
                j += 1
                short = spec.short.get(c)
                if short is None:
                    out.unknown.append(f"-{c}")
                    continue
                name = short
                if c in value_shorts:
                    if j < len(a):
                        out.values.setdefault(name, []).append(a[j:])
                    elif i < len(args):
                        out.values.setdefault(name, []).append(args[i])
                        i += 1
                    else:
                        out.missing.append(f"-{c}")
                    break
                out.values.setdefault(name, []).append(True)
            continue
        out.positionals.append(a)
        if spec.stop_at_non_option:
            out.positionals.extend(args[i:])
            break
    return out


def _resolve_long(body: str, table: Mapping[str, str]) -> tuple[str, bool] | None:
    """Exact name, ``no-`` negation, or an unambiguous prefix of either."""
    if body in table:
        return body, False
    if body.startswith("no-") and body[3:] in table:
        return body[3:], True
    candidates: set[tuple[str, bool]] = set()
    for name in table:
        if name.startswith(body):
            candidates.add((name, False))
        if body.startswith("no-") and name.startswith(body[3:]) and len(body) > 3:
            candidates.add((name, True))
        elif "no-".startswith(body):
            pass  # "--n", "--no": ambiguous between negations; git rejects these too
    if len(candidates) == 1:
        return candidates.pop()
    return None


#: Each subcommand's words for asking git its own option table (``<words>
#: --git-completion-helper-all``); None: git has no such table (a script).
GIT_WORDS: dict[str, tuple[str, ...] | None] = {
    "reset": ("reset",),
    "checkout": ("checkout",),
    "switch": ("switch",),
    "restore": ("restore",),
    "clean": ("clean",),
    "stash-push": ("stash", "push"),
    "stash-ref": ("stash", "drop"),
    "rm": ("rm",),
    "mv": ("mv",),
    "worktree-remove": ("worktree", "remove"),
    "branch": ("branch",),
    "rebase": ("rebase",),
    "pull": ("pull",),
    "merge": ("merge",),
    "sequencer": ("cherry-pick",),
    "am": ("am",),
    "submodule-deinit": None,
    "submodule-update": None,
    "sparse-checkout": ("sparse-checkout", "set"),
    "worktree-add": ("worktree", "add"),
    "fetch": ("fetch",),
    "push": ("push",),
    "reflog-expire": ("reflog", "expire"),
    "reflog-delete": ("reflog", "delete"),
    "gc": ("gc",),
    "checkout-index": ("checkout-index",),
    "apply": ("apply",),
}

_PATHSPEC_FILE = ("reset", "checkout", "restore", "rm", "stash-push")


def git_rejects(spec_name: str, o: Options) -> bool:
    """Whether git refuses these options before touching anything: a missing value, or
    a combination the command's own checks reject (git 2.39's ``die()``s ahead of any
    change). Path-dependent checks stay with the commands that know the paths."""
    if o.missing:
        return True
    has = o.has
    if spec_name in _PATHSPEC_FILE:
        from_file = o.given("pathspec-from-file") and o.value("pathspec-from-file") is not None
        if has("pathspec-file-nul") and not from_file:
            return True
        if from_file and (has("patch") or (spec_name == "stash-push" and has("staged"))):
            return True
        if from_file and o.after_dashdash and spec_name != "stash-push":
            return True
        pathspec = o.positionals or o.after_dashdash
        if from_file and spec_name in ("restore", "rm", "stash-push") and pathspec:
            return True
    if spec_name == "reset":
        modes = [m for m in ("soft", "mixed", "hard", "merge", "keep") if has(m)]
        if has("patch") and modes:
            return True
        if has("intent-to-add") and any(m != "mixed" for m in modes):
            return True
    elif spec_name == "checkout":
        if sum(o.given(b) and o.value(b) is not None for b in ("b", "B", "orphan")) > 1:
            return True
        if o.given("overlay") and has("overlay") and has("patch"):
            return True
        merge = has("merge") or o.value("conflict") is not None
        if (has("force") and merge) or ((has("ours") or has("theirs")) and (has("force") or merge)):
            return True
    elif spec_name == "switch":
        new = [b for b in ("create", "force-create", "orphan") if o.value(b) is not None]
        if len(new) > 1 or (has("detach") and new):
            return True
        if has("merge") and (has("force") or has("discard-changes")):
            return True
    elif spec_name == "restore":
        staged_only = has("staged") and not has("worktree")
        if staged_only and (has("ours") or has("theirs") or has("merge") or o.given("conflict")):
            return True
        if has("ignore-unmerged") and has("merge"):
            return True
    elif spec_name == "clean":
        return has("x") and has("X")
    return False
