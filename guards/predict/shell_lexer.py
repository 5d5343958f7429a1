"""Lexing a bash line: words as parts (literal text, variable, command substitution,
unknown), operators, redirections, here-documents.

:mod:`guards.predict.shell` reads the tokens as bash's grammar and finds the git calls.
"""

from __future__ import annotations

from guards.values import MutableValue, Value

#: What a variable name (``$NAME``, ``${NAME}``, ``NAME=value``) starts with and holds:
#: ASCII letters, digits and ``_``. Read without ``re``, which (with the ``enum`` it
#: imports) would be a fifth of the agent hook's start-up on every line that mentions git.
_NAME_START = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_")
_NAME_CHARS = _NAME_START | frozenset("0123456789")


def name_end(s: str, i: int = 0) -> int:
    """Where the variable name that starts at ``s[i]`` ends (``i``: none starts there)."""
    if i >= len(s) or s[i] not in _NAME_START:
        return i
    j = i + 1
    while j < len(s) and s[j] in _NAME_CHARS:
        j += 1
    return j


def is_name(s: str) -> bool:
    """Whether ``s`` is a variable name."""
    return s != "" and name_end(s) == len(s)


def assignment_name(word: str) -> tuple[str, int] | None:
    """``NAME=`` or ``NAME+=`` at the start of ``word``: (NAME, the length of that
    prefix); None when the word is not an assignment."""
    end = name_end(word)
    if end == 0:
        return None
    if word.startswith("=", end):
        return word[:end], end + 1
    if word.startswith("+=", end):
        return word[:end], end + 2
    return None


_OPERATORS = (
    ";;&",
    "<<<",
    "<<-",
    "&>>",
    ";;",
    ";&",
    "&&",
    "||",
    "|&",
    "<<",
    ">>",
    "<&",
    ">&",
    "<>",
    ">|",
    "&>",
    ";",
    "&",
    "|",
    "(",
    ")",
    "<",
    ">",
    "\n",
)
#: The operators that redirect input or output (their target is the next word).
REDIRECTS = frozenset({"<<<", "<<-", "&>>", "<<", ">>", "<&", ">&", "<>", ">|", "&>", "<", ">"})
_WORD_END = set(" \t\n;&|()<>")


class ShellSyntaxError(ValueError):
    """The line is not valid shell (bash would refuse it, or we cannot follow it)."""


class Part(Value):
    """A piece of a word: literal text, a variable, a command substitution, unknown."""

    __slots__ = ("kind", "quoted", "text")

    def __init__(self, kind: str, text: str, quoted: bool = False) -> None:
        #: "lit", "var", "sub" (command substitution: text is the program) or "unknown"
        self.kind = kind
        self.text = text
        self.quoted = quoted


class Word(Value):
    """A shell word as its parts, and as written."""

    __slots__ = ("parts", "raw")

    def __init__(self, parts: list[Part], raw: str) -> None:
        self.parts = parts
        self.raw = raw

    @property
    def plain(self) -> str | None:
        """The literal value when the word has no expansions at all."""
        if all(p.kind == "lit" for p in self.parts):
            return "".join(p.text for p in self.parts)
        return None

    @property
    def unquoted_literal(self) -> bool:
        return all(p.kind == "lit" and not p.quoted for p in self.parts)


class Token(Value):
    __slots__ = ("kind", "value", "word")

    def __init__(self, kind: str, value: str = "", word: Word | None = None) -> None:
        self.kind = kind  # "word", "op", "eof"
        self.value = value
        self.word = word


class Heredoc(MutableValue):
    """A here-document; its body is read after the line that opens it."""

    __slots__ = ("body", "delimiter", "quoted", "strip_tabs")

    def __init__(
        self, delimiter: str, strip_tabs: bool, quoted: bool, body: str | None = None
    ) -> None:
        self.delimiter = delimiter
        self.strip_tabs = strip_tabs
        self.quoted = quoted
        self.body = body


class Lexer:
    def __init__(self, text: str) -> None:
        self.s = text
        self.i = 0
        self.pending: list[Heredoc] = []

    def _skip_blanks(self) -> None:
        s = self.s
        while self.i < len(s):
            c = s[self.i]
            if c in " \t":
                self.i += 1
            elif c == "\\" and s.startswith("\\\n", self.i):
                self.i += 2
            elif c == "#":
                end = s.find("\n", self.i)
                self.i = len(s) if end < 0 else end
            else:
                return

    def next(self) -> Token:
        self._skip_blanks()
        s = self.s
        if self.i >= len(s):
            if self.pending:
                raise ShellSyntaxError("here-document without its end line")
            return Token("eof")
        c = s[self.i]
        if c in "<>" and s.startswith("(", self.i + 1):
            start = self.i
            self.i += 1
            program = self._balanced(self.i + 1, ")")
            return Token("word", word=Word([Part("sub", program)], s[start : self.i]))
        if c.isdigit():
            j = self.i
            while j < len(s) and s[j].isdigit():
                j += 1
            if j < len(s) and s[j] in "<>":
                self.i = j  # an IO number: part of the redirection operator
                return self.next()
        for op in _OPERATORS:
            if s.startswith(op, self.i):
                self.i += len(op)
                if op == "\n":
                    self._read_heredocs()
                return Token("op", op)
        return Token("word", word=self._word())

    def _read_heredocs(self) -> None:
        for doc in self.pending:
            lines = []
            s = self.s
            while True:
                if self.i >= len(s):
                    raise ShellSyntaxError(f"here-document without its end line {doc.delimiter}")
                end = s.find("\n", self.i)
                line = s[self.i :] if end < 0 else s[self.i : end]
                self.i = len(s) if end < 0 else end + 1
                check = line.lstrip("\t") if doc.strip_tabs else line
                if check == doc.delimiter:
                    break
                lines.append(check)
            doc.body = "\n".join(lines) + ("\n" if lines else "")
        self.pending = []

    def _balanced(self, start: int, close: str) -> str:
        """Text up to the ``close`` that balances (quotes and nesting respected)."""
        s = self.s
        depth = 1
        i = start
        opener = "(" if close == ")" else "{"
        while i < len(s):
            c = s[i]
            if c == "\\":
                i += 2
                continue
            if c == "'":
                end = s.find("'", i + 1)
                if end < 0:
                    raise ShellSyntaxError("unbalanced single quote")
                i = end + 1
                continue
            if c == '"':
                i = self._skip_double(i + 1)
                continue
            if c == "`":
                end = s.find("`", i + 1)
                if end < 0:
                    raise ShellSyntaxError("unbalanced backquote")
                i = end + 1
                continue
            if c == opener:
                depth += 1
            elif c == close:
                depth -= 1
                if depth == 0:
                    self.i = i + 1
                    return s[start:i]
            i += 1
        raise ShellSyntaxError(f"no closing {close!r}")

    def _skip_double(self, i: int) -> int:
        s = self.s
        while i < len(s):
            c = s[i]
            if c == "\\":
                i += 2
            elif c == '"':
                return i + 1
            elif s.startswith("$(", i):
                saved = self.i
                self._balanced(i + 2, ")")
                i, self.i = self.i, saved
            elif c == "`":
                end = s.find("`", i + 1)
                if end < 0:
                    raise ShellSyntaxError("unbalanced backquote")
                i = end + 1
            else:
                i += 1
        raise ShellSyntaxError("unbalanced double quote")

    def _word(self) -> Word:
        s = self.s
        start = self.i
        parts: list[Part] = []
        while self.i < len(s):
            c = s[self.i]
            if c in _WORD_END:
                break
            if c == "\\":
                if s.startswith("\\\n", self.i):
                    self.i += 2
                    continue
                parts.append(Part("lit", s[self.i + 1 : self.i + 2], True))
                self.i += 2
            elif c == "'":
                end = s.find("'", self.i + 1)
                if end < 0:
                    raise ShellSyntaxError("unbalanced single quote")
                parts.append(Part("lit", s[self.i + 1 : end], True))
                self.i = end + 1
            elif c == '"':
                self.i += 1
                parts.extend(self._double())
            elif c == "$":
                parts.extend(self._dollar(quoted=False))
            elif c == "`":
                parts.append(self._backquote())
            else:
                parts.append(Part("lit", c))
                self.i += 1
        return Word(parts, s[start : self.i])

    def _double(self) -> list[Part]:
        s = self.s
        parts: list[Part] = []
        while self.i < len(s):
            c = s[self.i]
            if c == '"':
                self.i += 1
                return parts
            if c == "\\":
                nxt = s[self.i + 1 : self.i + 2]
                if nxt == "\n":
                    pass
                elif nxt in ('"', "\\", "$", "`"):
                    parts.append(Part("lit", nxt, True))
                else:
                    parts.append(Part("lit", "\\" + nxt, True))
                self.i += 2
            elif c == "$":
                parts.extend(self._dollar(quoted=True))
            elif c == "`":
                parts.append(self._backquote())
            else:
                parts.append(Part("lit", c, True))
                self.i += 1
        raise ShellSyntaxError("unbalanced double quote")

    def _backquote(self) -> Part:
        s = self.s
        end = self.i + 1
        while end < len(s) and s[end] != "`":
            end += 2 if s[end] == "\\" else 1
        if end >= len(s):
            raise ShellSyntaxError("unbalanced backquote")
        program = s[self.i + 1 : end].replace("\\`", "`").replace("\\\\", "\\")
        self.i = end + 1
        return Part("sub", program)

    def _dollar(self, quoted: bool) -> list[Part]:
        s = self.s
        i = self.i
        nxt = s[i + 1 : i + 2]
        if s.startswith("$((", i):
            self._balanced(i + 2, ")")
            return [Part("unknown", s[i : self.i], quoted)]
        if nxt == "(":
            program = self._balanced(i + 2, ")")
            return [Part("sub", program)]
        if nxt == "{":
            body = self._balanced(i + 2, "}")
            if is_name(body):
                return [Part("var", body, quoted)]
            parts = [Part("unknown", s[i : self.i], quoted)]
            if "$(" in body or "`" in body:
                parts.append(Part("sub", body))  # a default value can run a command
            return parts
        if nxt == "'" and not quoted:
            end = i + 2
            out = []
            while end < len(s) and s[end] != "'":
                if s[end] == "\\" and end + 1 < len(s):
                    esc = s[end + 1]
                    out.append({"n": "\n", "t": "\t", "\\": "\\", "'": "'"}.get(esc, "\\" + esc))
                    end += 2
                else:
                    out.append(s[end])
                    end += 1
            if end >= len(s):
                raise ShellSyntaxError("unbalanced $'")
            self.i = end + 1
            return [Part("lit", "".join(out), True)]
        if nxt == '"' and not quoted:
            self.i += 2
            return self._double()
        end = name_end(s, i + 1)
        if end > i + 1:
            self.i = end
            return [Part("var", s[i + 1 : end], quoted)]
        if nxt and (nxt.isdigit() or nxt in "@*#?$!-"):
            self.i += 2
            return [Part("unknown", s[i : self.i], quoted)]
        self.i += 1
        return [Part("lit", "$", quoted)]
