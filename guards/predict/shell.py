"""Agent harnesses: read a shell line the way bash will, before bash runs it.

A harness hands its shell tool one line of bash. Before it runs, :func:`analyze` finds
every git invocation in it — behind ``VAR=v`` prefixes, ``env``/``command``/``nohup``
and other wrappers, ``\\git``, ``"git"``, ``/usr/bin/git``, in ``;``/``&&``/``||``/``|``
chains, subshells, braces, ``if``/``for``/``case``, ``bash -c`` strings, ``eval``,
``xargs git``, ``find -exec git``, command substitutions and heredocs fed to a shell —
each with the directory it will run in (``cd``/``pushd`` followed, subshells scoped,
pipeline elements scoped). Quoted arguments of commands that do not execute them
(``echo "git reset --hard"``, ``grep``, ``git commit -m``) are data. What cannot be read
but could run git (an unbalanced quote around "git", ``eval "$X"``, a command name made
by an expansion, a shell reading a pipe) is *opaque*: the hook treats it as destructive.

:func:`guards.protect.guard.guard_line` then applies the policy to each invocation that
could destroy work. :func:`patch_paths` reads the files an ``apply_patch`` body names.
Nothing here imports git machinery: a line without git costs no git call.
"""

from __future__ import annotations

import functools
import itertools
import os

from guards.predict.shell_files import (
    DESTROYERS,
    FIND_DESTROYERS,
    REDIRECT,
    TRUNCATING,
    FileCall,
    expand,
    names_destroyer,
)
from guards.predict.shell_lexer import (
    REDIRECTS,
    Heredoc,
    Lexer,
    Part,
    ShellSyntaxError,
    Token,
    Word,
    assignment_name,
    is_name,
)
from guards.values import MutableValue, Value

TYPE_CHECKING = False  # see guards.values: these imports cost start-up time
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping


#: Shells whose ``-c`` string or stdin is more shell.
SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "busybox"})
#: Interpreters whose inline program (``-c``/``-e``) could run git.
INTERPRETERS = frozenset(
    {"python", "python3", "python2", "perl", "ruby", "node", "deno", "bun", "php", "lua"}
)
#: Commands that run their arguments as a command: name -> (options taking a value, number
#: of leading operands before the command).
WRAPPERS: dict[str, tuple[frozenset[str], int]] = {
    "command": (frozenset(), 0),
    "builtin": (frozenset(), 0),
    "exec": (frozenset({"-a"}), 0),
    "nohup": (frozenset(), 0),
    "time": (frozenset({"-f", "-o", "--format", "--output"}), 0),
    "nice": (frozenset({"-n", "--adjustment"}), 0),
    "ionice": (frozenset({"-c", "-n", "-p", "--class", "--classdata"}), 0),
    "setsid": (frozenset(), 0),
    "stdbuf": (frozenset({"-i", "-o", "-e", "--input", "--output", "--error"}), 0),
    "timeout": (frozenset({"-s", "-k", "--signal", "--kill-after"}), 1),
    "sudo": (frozenset({"-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U", "-T"}), 0),
    "doas": (frozenset({"-u", "-C"}), 0),
    "chronic": (frozenset(), 0),
    "unbuffer": (frozenset(), 0),
    "caffeinate": (frozenset({"-t", "-w"}), 0),
    "taskset": (frozenset(), 1),
    "chrt": (frozenset(), 1),
    "watch": (frozenset({"-n", "--interval", "-d", "--differences"}), 0),
    "flock": (frozenset({"-w", "--timeout", "-E", "--conflict-exit-code"}), 1),
}
_RESERVED_PREFIX = frozenset({"if", "then", "elif", "else", "while", "until", "do", "!", "{"})
_RESERVED_END = frozenset({"fi", "done", "esac", "}"})


def _brace_expands(text: str) -> bool:
    """Whether bash would brace-expand unquoted ``text`` (``{a,b}``, ``{1..3}``)."""
    if "{" not in text:
        return False  # re stays unimported for the everyday line
    import re

    return re.search(r"\{[^{}]*(,|\.\.)[^{}]*\}", text) is not None


def _is_python3(name: str) -> bool:
    """``python3`` or ``python3.<digits>``."""
    return name == "python3" or (name.startswith("python3.") and name[8:].isdecimal())


# ---------------------------------------------------------------------------
# What the line does


class GitCall(Value):
    """One git invocation the line will make."""

    __slots__ = ("argv", "cwd", "env", "more_args")

    def __init__(
        self,
        argv: tuple[str | None, ...],
        cwd: str | None,
        env: tuple[tuple[str, str | None], ...],
        more_args: bool = False,
    ) -> None:
        #: Arguments after ``git``; an unknown word (an expansion we cannot see) is None.
        self.argv = argv
        #: The directory it runs in; None when a ``cd`` went somewhere we cannot tell.
        self.cwd = cwd
        #: Variables set for it (``VAR=v git``, ``export``); None values are unknown.
        self.env = env
        #: ``xargs``/``find -exec`` add arguments only known when it runs.
        self.more_args = more_args

    @property
    def known(self) -> bool:
        return None not in self.argv and not self.more_args

    def text(self) -> str:
        words = ["git", *(a if a is not None else "…" for a in self.argv)]
        if self.more_args:
            words.append("…")
        line = " ".join(words)
        return line if len(line) <= 80 else line[:77] + "..."


class Opaque(Value):
    """Something that could run git in a way the line does not show."""

    __slots__ = ("cwd", "reason")

    def __init__(self, reason: str, cwd: str | None) -> None:
        self.reason = reason
        self.cwd = cwd


class Analysis(MutableValue):
    """Every git call a line makes, what could run git unseen, where it works; when asked,
    the commands that destroy files (:mod:`guards.predict.shell_files`) and what could
    run one unseen."""

    __slots__ = ("blind", "calls", "dirs", "files", "opaque")

    def __init__(self, dirs: list[str] | None = None) -> None:
        self.calls: list[GitCall] = []
        self.opaque: list[Opaque] = []
        self.files: list[FileCall] = []
        #: Like ``opaque``, for a line that names a command destroying files.
        self.blind: list[Opaque] = []
        #: Every directory the line may work in (its start and each ``cd``).
        self.dirs = [] if dirs is None else dirs

    @property
    def runs_git(self) -> bool:
        return bool(self.calls or self.opaque)


class _State(MutableValue):
    __slots__ = ("cwd", "exported", "oldpwd", "stack", "vars")

    def __init__(
        self,
        cwd: str | None,
        vars: dict[str, str | None],
        exported: dict[str, str | None],
        stack: list[str | None] | None = None,
        oldpwd: str | None = None,
    ) -> None:
        self.cwd = cwd
        self.vars = vars
        self.exported = exported
        self.stack = [] if stack is None else stack
        self.oldpwd = oldpwd

    def copy(self) -> _State:
        return _State(self.cwd, dict(self.vars), dict(self.exported), list(self.stack), self.oldpwd)


class _Invocation(Value):
    """How one simple command runs, besides its words' values: the assignments before
    it, its words as written, its redirections, whether a pipe feeds it, and whether
    xargs or find add arguments only known when it runs."""

    __slots__ = ("assigns", "more_args", "piped", "redirects", "words")

    def __init__(
        self,
        assigns: list[tuple[str, str | None]],
        words: list[Word],
        redirects: list[tuple[str, Heredoc | Word]],
        piped: bool,
        more_args: bool = False,
    ) -> None:
        self.assigns = assigns
        self.words = words
        self.redirects = redirects
        self.piped = piped
        self.more_args = more_args


def mentions_git(text: str) -> bool:
    return "git" in text.lower()


def analyze(
    line: str, cwd: str, env: Mapping[str, str] | None = None, *, files: bool = False
) -> Analysis:
    """Every git invocation in ``line`` run by bash in ``cwd`` (never raises); with
    ``files``, every command destroying files as well."""
    env = os.environ if env is None else env
    result = Analysis(dirs=[cwd])
    if not mentions_git(line) and not files:
        return result  # nothing can name git: the common case costs a substring test
    state = _State(cwd=cwd, vars={}, exported={})
    _Parser(line, state, result, env, files=files).run()
    return result


class _Parser:
    def __init__(
        self,
        text: str,
        state: _State,
        result: Analysis,
        env: Mapping[str, str],
        depth: int = 0,
        files: bool = False,
    ) -> None:
        self.files = files
        self.lexer = Lexer(text)
        self.text = text
        self.state = state
        self.result = result
        self.env = env
        self.depth = depth
        self.tok: Token | None = None
        self.deferred: list[Callable[[], None]] = []

    # -- plumbing -------------------------------------------------------------

    def run(self) -> None:
        if self.depth > 20:
            self.opaque("shell nested too deeply to follow", self.state.cwd)
            return
        try:
            self.parse_list(self.state, ())
            if self.peek().kind != "eof":
                raise ShellSyntaxError(f"unexpected {self.peek().value!r}")
        except ShellSyntaxError as e:
            self.opaque(f"cannot read the shell line: {e}", self.state.cwd)
        except (IndexError, ValueError, RecursionError) as e:  # never waved through
            self.opaque(f"cannot read the shell line: {type(e).__name__}", self.state.cwd)
        for action in self.deferred:
            action()

    def peek(self) -> Token:
        if self.tok is None:
            self.tok = self.lexer.next()
        return self.tok

    def take(self) -> Token:
        tok = self.peek()
        self.tok = None
        return tok

    def is_op(self, *ops: str) -> bool:
        tok = self.peek()
        return tok.kind == "op" and tok.value in ops

    def is_word(self, *values: str) -> bool:
        tok = self.peek()
        return (
            tok.kind == "word"
            and tok.word is not None
            and tok.word.unquoted_literal
            and tok.word.plain in values
        )

    def opaque(self, reason: str, cwd: str | None) -> None:
        if mentions_git(self.text):
            self.result.opaque.append(Opaque(reason, cwd))
        if self.files and names_destroyer(self.text):
            self.result.blind.append(Opaque(reason, cwd))

    def nested(self, program: str, state: _State) -> None:
        _Parser(program, state, self.result, self.env, self.depth + 1, self.files).run()

    # -- grammar --------------------------------------------------------------

    def parse_list(self, state: _State, enders: tuple[str, ...]) -> None:
        while True:
            while self.is_op(";", "&", "\n"):
                self.take()
            tok = self.peek()
            if tok.kind == "eof" or self.is_op(")", ";;", ";&", ";;&") or self.is_word(*enders):
                return
            self.parse_and_or(state, enders)

    def parse_and_or(self, state: _State, enders: tuple[str, ...]) -> None:
        self.parse_pipeline(state, enders)
        while self.is_op("&&", "||"):
            self.take()
            while self.is_op("\n"):
                self.take()
            self.parse_pipeline(state, enders)

    def parse_pipeline(self, state: _State, enders: tuple[str, ...]) -> None:
        first = True
        while True:
            # bash runs each element of a multi-command pipeline in a subshell: a ``cd``
            # there changes nothing after it. Parse the first element on a copy until we
            # know whether a pipe follows.
            element = state.copy()
            self.parse_command(element, enders, piped=not first)
            if self.is_op("|", "|&"):
                self.take()
                while self.is_op("\n"):
                    self.take()
                first = False
                continue
            if first:
                # Not a pipeline after all: the command's effects (cd, variables) stand.
                state.cwd, state.vars, state.exported = element.cwd, element.vars, element.exported
                state.stack, state.oldpwd = element.stack, element.oldpwd
            return

    def parse_command(self, state: _State, enders: tuple[str, ...], piped: bool) -> None:
        if self.is_op("("):
            self.take()
            self.parse_list(state.copy(), ())
            if not self.is_op(")"):
                raise ShellSyntaxError("unbalanced (")
            self.take()
            self.redirections(state)
            return
        if self.is_word("{"):
            self.take()
            self.parse_list(state, ("}",))
            if not self.is_word("}"):
                raise ShellSyntaxError("unbalanced {")
            self.take()
            self.redirections(state)
            return
        if self.is_word(*(_RESERVED_PREFIX - {"{"})) or self.is_word("time"):
            self.take()
            if self.peek().kind == "eof" or self.is_op(";", "\n"):
                return
            self.parse_command(state, enders, piped)
            return
        if self.is_word("fi", "done", "esac"):
            self.take()
            self.redirections(state)
            return
        if self.is_word("for", "select"):
            self.take()
            name = self.take()
            if name.word is not None and name.word.plain:
                state.vars[name.word.plain] = None
            if self.is_word("in"):
                self.take()
                while self.peek().kind == "word":
                    self.resolve(self.take().word, state)
            return
        if self.is_word("case"):
            self.parse_case(state)
            return
        if self.is_word("function"):
            self.take()
            self.take()
            if self.is_op("("):
                self.take()
                if not self.is_op(")"):
                    raise ShellSyntaxError("bad function definition")
                self.take()
            while self.is_op("\n"):
                self.take()
            self.parse_command(state, enders, piped)
            return
        if self.is_word("[["):
            self.take()
            while not self.is_word("]]"):
                tok = self.take()
                if tok.kind == "eof":
                    raise ShellSyntaxError("unbalanced [[")
                if tok.word is not None:
                    self.resolve(tok.word, state)
            self.take()
            return
        self.simple_command(state, enders, piped)

    def parse_case(self, state: _State) -> None:
        self.take()
        subject = self.take()
        if subject.word is not None:
            self.resolve(subject.word, state)
        while self.is_op("\n"):
            self.take()
        if not self.is_word("in"):
            raise ShellSyntaxError("case without in")
        self.take()
        while True:
            while self.is_op("\n", ";"):
                self.take()
            if self.is_word("esac"):
                self.take()
                self.redirections(state)
                return
            if self.peek().kind == "eof":
                raise ShellSyntaxError("case without esac")
            if self.is_op("("):
                self.take()
            while not self.is_op(")"):
                tok = self.take()
                if tok.kind == "eof":
                    raise ShellSyntaxError("bad case pattern")
            self.take()
            self.parse_list(state, ("esac",))
            if self.is_op(";;", ";&", ";;&"):
                self.take()

    def redirections(self, state: _State) -> list[tuple[str, Heredoc | Word]]:
        found: list[tuple[str, Heredoc | Word]] = []
        while self.is_op(*REDIRECTS):
            found.append(self.redirection(state))
        return found

    def redirection(self, state: _State) -> tuple[str, Heredoc | Word]:
        op = self.take().value
        target = self.take()
        if target.word is None:
            raise ShellSyntaxError(f"{op} without a target")
        if op in ("<<", "<<-"):
            word = target.word
            quoted = any(p.quoted for p in word.parts) or word.plain is None
            delimiter = word.plain if word.plain is not None else word.raw.strip("'\"")
            doc = Heredoc(delimiter, op == "<<-", quoted)
            self.lexer.pending.append(doc)
            self.deferred.append(functools.partial(self._heredoc_data, doc, state.cwd))
            return op, doc
        value = self.resolve(target.word, state)
        if (
            self.files
            and op in TRUNCATING
            and not (op == ">&" and value is not None and (value.isdigit() or value == "-"))
        ):
            text = f"{op} {target.word.raw}"
            where = expand(target.word, value, state.cwd)
            prefixes = (self._known_prefix(target.word, state),) if value is None else ()
            call = FileCall(REDIRECT, tuple(where), state.cwd, text, prefixes=prefixes)
            self.result.files.append(call)
        return op, target.word

    def simple_command(self, state: _State, enders: tuple[str, ...], piped: bool) -> None:
        assigns: list[tuple[str, str | None]] = []
        words: list[Word] = []
        redirects: list[tuple[str, Heredoc | Word]] = []
        while True:
            tok = self.peek()
            if tok.kind == "op" and tok.value in REDIRECTS:
                redirects.append(self.redirection(state))
                continue
            if tok.kind != "word" or tok.word is None:
                break
            word = tok.word
            if not words:
                assigned = assignment_name(word.raw)
                if assigned and word.parts and not word.parts[0].quoted:
                    self.take()
                    var, prefix = assigned
                    assigns.append((var, self._assigned_value(word, prefix, state)))
                    continue
            self.take()
            words.append(word)
            if len(words) == 1 and self.is_op("("):
                # ``name() { ...; }``: a function; follow its body as if it ran here.
                self.take()
                if not self.is_op(")"):
                    raise ShellSyntaxError("bad function definition")
                self.take()
                while self.is_op("\n"):
                    self.take()
                self.parse_command(state, enders, piped)
                return
        if not words and not assigns and not redirects:
            tok = self.peek()
            raise ShellSyntaxError(f"unexpected {tok.value or tok.kind!r}")
        values = [self.resolve(w, state) for w in words]
        if not words:
            for name, value in assigns:
                state.vars[name] = value
                if name in state.exported:
                    state.exported[name] = value
            return
        self.execute(state, _Invocation(assigns, words, redirects, piped), values)

    def _assigned_value(self, word: Word, prefix_len: int, state: _State) -> str | None:
        """The value of ``NAME=value`` (the parts after the ``=``)."""
        consumed = 0
        rest: list[Part] = []
        for part in word.parts:
            if consumed >= prefix_len:
                rest.append(part)
            elif part.kind == "lit":
                take = prefix_len - consumed
                if len(part.text) > take:
                    rest.append(Part("lit", part.text[take:], part.quoted))
                consumed += min(len(part.text), take)
            else:
                consumed = prefix_len
                rest.append(part)
        return self.resolve(Word(rest, word.raw[prefix_len:]), state)

    def resolve(self, word: Word | None, state: _State) -> str | None:
        """The word's value after expansion; None when bash alone can tell.

        Command substitutions inside it run first, in a subshell: they are followed.
        """
        if word is None:
            return None
        out: list[str] = []
        known = True
        for i, part in enumerate(word.parts):
            if part.kind == "sub":
                self.nested(part.text, state.copy())
                known = False
            elif part.kind == "unknown":
                known = False
            elif part.kind == "var":
                value = state.vars.get(part.text, self._env_value(part.text, state))
                if value is None or (not part.quoted and value != value.strip()):
                    known = False
                else:
                    out.append(value)
            else:
                text = part.text
                if i == 0 and not part.quoted and text == "~":
                    nxt = word.parts[1].text if len(word.parts) > 1 else "/"
                    if nxt.startswith("/") or len(word.parts) == 1:
                        home = self._env_value("HOME", state)
                        if home is None:
                            known = False
                        text = home or ""
                    else:
                        known = False
                out.append(text)
        if not known:
            return None
        value = "".join(out)
        unquoted = "".join(p.text for p in word.parts if p.kind == "lit" and not p.quoted)
        if _brace_expands(unquoted):
            return None  # brace expansion: more (or other) words than written
        return value

    def _env_value(self, name: str, state: _State) -> str | None:
        if name in state.exported:
            return state.exported[name]
        return self.env.get(name)

    # -- meaning ----------------------------------------------------------------

    def execute(self, state: _State, how: _Invocation, values: list[str | None]) -> None:
        head = values[0]
        if head is None:
            self.opaque("a command name made by an expansion", state.cwd)
            return
        name = os.path.basename(head)
        args = values[1:]
        if name in ("git", "git.exe"):
            env = tuple(sorted({**state.exported, **dict(how.assigns)}.items()))
            self.result.calls.append(GitCall(tuple(args), state.cwd, env, how.more_args))
            return
        if self.files and name in DESTROYERS and name != "find":
            self._file_call(name, state, how, args)
            return
        if how.more_args and name in {"eval", "xargs", "find", "env"} | set(WRAPPERS):
            self.opaque(f"{name} with arguments only known when it runs", state.cwd)
            return
        if name == "cd" or name == "pushd":
            self._cd(state, args, push=name == "pushd")
        elif name == "popd":
            state.cwd = state.stack.pop() if state.stack else None
        elif name in ("export", "declare", "typeset", "local", "readonly"):
            for word, value in zip(how.words[1:], args, strict=False):
                assigned = assignment_name(word.raw)
                if assigned:
                    var, prefix = assigned
                    v = self._assigned_value(word, prefix, state)
                    state.vars[var] = v
                    if name == "export":
                        state.exported[var] = v
                elif value is not None and is_name(value) and name == "export":
                    state.exported[value] = state.vars.get(value, self.env.get(value))
        elif name in ("read", "mapfile", "readarray", "getopts"):
            for value in args:
                if value is not None and is_name(value):
                    state.vars[value] = None  # set from input: only bash will know
        elif name == "unset":
            for value in args:
                if value is not None:
                    state.vars.pop(value, None)
                    state.exported.pop(value, None)
        elif name == "eval":
            if any(a is None for a in args):
                self.opaque("eval of a string only known when it runs", state.cwd)
            else:
                self.nested(" ".join(a for a in args if a is not None), state)
        elif name in SHELLS:
            self._shell(state, args, how.redirects, how.piped)
        elif name in INTERPRETERS or _is_python3(name):
            for flag, code in itertools.pairwise(args):
                inline = flag in ("-c", "-e", "-E", "--eval", "-r")
                if inline and (code is None or mentions_git(code)):
                    self.opaque(f"{name} {flag} code that mentions git", state.cwd)
        elif name == "env":
            self._env(state, how, args)
        elif name == "xargs":
            self._xargs(state, how, args)
        elif name == "find":
            self._find(state, how, args)
        elif name in WRAPPERS:
            self._wrapper(name, state, how, args)

    def _cd(self, state: _State, args: list[str | None], push: bool) -> None:
        operands = [a for a in args if a is None or not (a.startswith("-") and a != "-")]
        if push:
            state.stack.append(state.cwd)
        previous = state.cwd
        if not operands:
            target = self.env.get("HOME")
        else:
            target = operands[0]
            if target == "-":
                target = state.oldpwd
            elif target is not None and state.cwd is not None:
                target = os.path.normpath(os.path.join(state.cwd, target))
            elif target is not None and not os.path.isabs(target):
                target = None
        state.oldpwd = previous
        state.cwd = target
        if target is not None and target not in self.result.dirs:
            self.result.dirs.append(target)

    def _shell(
        self,
        state: _State,
        args: list[str | None],
        redirects: list[tuple[str, Heredoc | Word]],
        piped: bool,
    ) -> None:
        i = 0
        while i < len(args):
            a = args[i]
            if a is None:
                self.opaque("a shell started with options only known when it runs", state.cwd)
                return
            if a in ("-o", "+o", "-O", "+O", "--rcfile", "--init-file"):
                i += 2
                continue
            if a.startswith("-") and len(a) > 1 and not a.startswith("--") and "c" in a[1:]:
                script = args[i + 1] if i + 1 < len(args) else None
                if script is None:
                    self.opaque("a shell -c string only known when it runs", state.cwd)
                else:
                    child = _State(state.cwd, {}, dict(state.exported))
                    self.nested(script, child)
                return
            if a in ("-s",) or (a.startswith(("-", "+")) and len(a) > 1):
                i += 1
                continue
            return  # a script file: what it runs is the shim's to see
        stdin_programs = [r for op, r in redirects if op in ("<<", "<<-", "<<<")]
        if stdin_programs:
            for target in stdin_programs:
                if isinstance(target, Heredoc):
                    doc = target
                    child = _State(state.cwd, {}, dict(state.exported))
                    self.deferred.append(functools.partial(self._heredoc_program, doc, child))
                else:
                    value = self.resolve(target, state)
                    if value is None:
                        self.opaque("a shell fed a string only known when it runs", state.cwd)
                    else:
                        self.nested(value, _State(state.cwd, {}, dict(state.exported)))
        elif piped or any(op == "<" for op, _ in redirects):
            self.opaque("a shell reading commands from a pipe or file", state.cwd)

    def _heredoc_data(self, doc: Heredoc, cwd: str | None) -> None:
        """An unquoted here-document runs its command substitutions, whoever reads it."""
        if doc.quoted or doc.body is None:
            return
        if "$(" in doc.body or "`" in doc.body:
            self.opaque("a here-document with command substitutions", cwd)

    def _heredoc_program(self, doc: Heredoc, state: _State) -> None:
        if doc.body is None:
            self.opaque("a here-document without its end line", state.cwd)
        elif doc.quoted:
            self.nested(doc.body, state)
        elif "$" in doc.body or "`" in doc.body:
            self.opaque("a shell fed a here-document with expansions", state.cwd)
        else:
            self.nested(doc.body, state)

    def _rest(self, state: _State, how: _Invocation, args: list[str | None]) -> None:
        """Run ``args`` (a tail of this command) as a command of its own."""
        if not args:
            if how.more_args:
                self.opaque("a command read from input", state.cwd)
            return
        tail = how.words[len(how.words) - len(args) :]
        self.execute(
            state, _Invocation(how.assigns, tail, how.redirects, how.piped, how.more_args), args
        )

    def _skip_options(
        self, what: str, state: _State, args: list[str | None], with_value: Iterable[str]
    ) -> int | None:
        """Where ``what``'s own options end (after ``--``, at the first operand); None,
        with the line marked opaque, when one of them is only known when it runs."""
        i = 0
        while i < len(args):
            a = args[i]
            if a is None:
                self.opaque(f"{what} with arguments only known when it runs", state.cwd)
                return None
            if a == "--":
                return i + 1
            if a in with_value:
                i += 2
            elif a.startswith("-") and len(a) > 1:
                i += 1
            else:
                break
        return i

    def _env(self, state: _State, how: _Invocation, args: list[str | None]) -> None:
        assigns = list(how.assigns)
        inner = state.copy()
        i = 0
        while i < len(args):
            a = args[i]
            if a is None:
                self.opaque("env with arguments only known when it runs", state.cwd)
                return
            if a in ("-i", "--ignore-environment", "-0", "--null", "-v", "--debug"):
                i += 1
            elif a in ("-u", "--unset"):
                i += 2
            elif a.startswith(("--unset=", "-u")):
                i += 1
            elif a in ("-C", "--chdir"):
                target = args[i + 1] if i + 1 < len(args) else None
                self._cd(inner, [target], push=False)
                i += 2
            elif a in ("-S", "--split-string") or a.startswith(("-S", "--split-string=")):
                self.opaque("env -S splits a string into a command", state.cwd)
                return
            elif a == "--":
                i += 1
            elif assignment_name(a):
                key, _, value = a.partition("=")
                assigns.append((key, value))
                i += 1
            elif a.startswith("-"):
                i += 1
            else:
                break
        self._rest(
            inner,
            _Invocation(assigns, how.words, how.redirects, how.piped, how.more_args),
            args[i:],
        )

    def _wrapper(self, name: str, state: _State, how: _Invocation, args: list[str | None]) -> None:
        with_value, operands = WRAPPERS[name]
        i = self._skip_options(name, state, args, with_value)
        if i is None:
            return
        if name == "command" and any(a in ("-v", "-V") for a in args[:i]):
            return  # a lookup, not a run
        self._rest(state, how, args[i + operands :])

    def _xargs(self, state: _State, how: _Invocation, args: list[str | None]) -> None:
        with_value = {"-a", "-d", "-E", "-e", "-I", "-i", "-L", "-l", "-n", "-P", "-s"}
        i = self._skip_options("xargs", state, args, with_value)
        if i is None:
            return
        tail = args[i:] or ["echo"]
        words = how.words if args[i:] else []
        self._rest(state, _Invocation(how.assigns, words, how.redirects, False, True), tail)

    def _file_call(
        self, name: str, state: _State, how: _Invocation, args: list[str | None]
    ) -> None:
        """Record a command that destroys files, its globs expanded as bash would."""
        aligned = len(how.words) == len(args) + 1
        words: list[Word | None] = list(how.words[1:]) if aligned else [None] * len(args)
        expanded: list[str | None] = []
        prefixes: list[str] = []
        for word, value in zip(words, args, strict=True):
            expanded += expand(word, value, state.cwd)
            if value is None:
                prefixes.append("" if word is None else self._known_prefix(word, state))
        text = " ".join(w.raw for w in how.words) if aligned else name
        call = FileCall(name, tuple(expanded), state.cwd, text, how.more_args, tuple(prefixes))
        self.result.files.append(call)

    def _known_prefix(self, word: Word, state: _State) -> str:
        """What a word only bash can resolve surely starts with (``/tmp/out-$$``:
        ``/tmp/out-``); "" when nothing is known."""
        out = []
        for part in word.parts:
            if part.kind == "lit":
                if not part.quoted and set(part.text) & set("*?[{"):
                    break
                out.append(part.text)
            elif part.kind == "var":
                value = state.vars.get(part.text, self._env_value(part.text, state))
                if value is None:
                    break
                out.append(value)
            else:
                break
        prefix = "".join(out)
        return "" if prefix.startswith("~") else prefix

    def _find(self, state: _State, how: _Invocation, args: list[str | None]) -> None:
        i = 0
        destroys = self.files and "-delete" in args
        while i < len(args):
            if args[i] in ("-exec", "-execdir", "-ok", "-okdir"):
                j = i + 1
                while j < len(args) and args[j] not in (";", "+"):
                    j += 1
                program = [a if a != "{}" else None for a in args[i + 1 : j]]
                head = program[0] if program else None
                if self.files and head is not None and os.path.basename(head) in FIND_DESTROYERS:
                    destroys = True  # find's own record below covers what it finds
                elif program:
                    tail_words = how.words[1 + i + 1 : 1 + j]
                    self.execute(state, _Invocation(how.assigns, tail_words, [], False), program)
                i = j + 1
            else:
                i += 1
        if destroys:
            self._file_call("find", state, how, args)


# ---------------------------------------------------------------------------
# apply_patch bodies (Codex)


def patch_paths(body: str) -> list[str]:
    """The files an ``apply_patch`` body edits, adds, deletes or moves to, in order."""
    import re  # Codex's patches only: not on every shell line

    patch_line = re.compile(
        r"^\*\*\* (?:Update|Add|Delete) File: (.+?)\s*$|^\*\*\* Move to: (.+?)\s*$"
    )
    found: list[str] = []
    for line in body.splitlines():
        m = patch_line.match(line)
        if m:
            path = m.group(1) or m.group(2)
            if path not in found:
                found.append(path)
    return found
