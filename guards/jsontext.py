"""JSON on the hot paths without ``import json``.

``import json`` costs about 10 ms on a 2-core VM (``re`` and ``enum``, for the regular
expressions of its pure-Python fallbacks): a fifth of an agent hook, which runs on every
tool call and prompt. CPython's C accelerator ``_json``, which json itself runs on,
needs neither. :func:`loads` calls its scanner; :func:`dumps` writes the plain values
guards stores (str, int, float, bool, None, lists, dicts with str keys) and quotes
strings with its encoder, or itself where no character needs escaping (``_json`` is a
shared library to load: an edit's record writes only such strings, and reads no JSON).
Anything else goes to json itself, so answers and errors stay json's: an interpreter
without ``_json``, a value of another type, a float json spells its own way (NaN,
Infinity), a malformed document (its error message).
"""

from __future__ import annotations

TYPE_CHECKING = False  # see guards.values: these imports cost start-up time
if TYPE_CHECKING:
    from collections.abc import Callable
    from types import ModuleType
    from typing import Any

#: JSON's white space (RFC 8259), which may stand around a document.
_WHITESPACE = " \t\n\r"
#: The separators guards writes with: no spaces.
COMPACT = (",", ":")


def module() -> ModuleType:
    """The json module, imported on first use (files that are written rarely, errors)."""
    import json

    return json


_INFINITY = float("inf")
_CONSTANTS = {"NaN": float("nan"), "Infinity": _INFINITY, "-Infinity": -_INFINITY}


class _Options:
    """What ``_json.make_scanner`` reads: json.JSONDecoder's defaults."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = staticmethod(_CONSTANTS.__getitem__)


_accelerated: ModuleType | None = None


def _accelerator() -> ModuleType | None:
    """CPython's ``_json``, loaded on first use; None on another interpreter."""
    global _accelerated
    if _accelerated is None:
        try:
            import _json  # type: ignore[import-not-found,unused-ignore]
        except ImportError:  # pragma: no cover - an interpreter other than CPython
            return None
        _accelerated = _json
    return _accelerated


_scanner: Callable[[str, int], tuple[Any, int]] | None = None


def _scan(text: str, start: int) -> tuple[Any, int]:
    global _scanner
    if _scanner is None:
        accelerator = _accelerator()
        assert accelerator is not None
        _scanner = accelerator.make_scanner(_Options())
    return _scanner(text, start)


def _plain(text: str) -> bool:
    """Whether json writes ``text`` as it is, between quotes (either way: ASCII only)."""
    return text.isascii() and text.isprintable() and '"' not in text and "\\" not in text


def _quote(text: str) -> str:
    """``json.dumps(text)`` (ASCII only)."""
    if _plain(text):
        return '"' + text + '"'
    quoted: str = _encoder().encode_basestring_ascii(text)
    return quoted


def _quote_unicode(text: str) -> str:
    """``json.dumps(text, ensure_ascii=False)``."""
    if _plain(text):
        return '"' + text + '"'
    quoted: str = _encoder().encode_basestring(text)
    return quoted


def _encoder() -> ModuleType:
    accelerator = _accelerator()
    if accelerator is None:  # pragma: no cover - an interpreter other than CPython
        raise _NotPlain
    return accelerator


def loads(data: str | bytes | bytearray) -> Any:
    """``json.loads(data)``, the same value or the same error."""
    if _accelerator() is None:  # pragma: no cover - an interpreter other than CPython
        return module().loads(data)
    if isinstance(data, (bytes, bytearray)):
        if data[:3] == b"\xef\xbb\xbf" or b"\x00" in data[:4]:
            return module().loads(data)  # a BOM, UTF-16 or UTF-32: json tells them apart
        try:
            text = data.decode("utf-8", "surrogatepass")  # as json decodes UTF-8
        except UnicodeDecodeError:
            return module().loads(data)
    else:
        text = data
    start = len(text) - len(text.lstrip(_WHITESPACE))
    try:
        value, end = _scan(text, start)
    except StopIteration:
        return module().loads(text)  # no value where one must be: json's error
    if end != len(text) and text[end:].strip(_WHITESPACE):
        return module().loads(text)  # something after the value: json's error
    return value


class _NotPlain(Exception):
    """A value :func:`dumps` leaves to json."""


def dumps(value: object, *, ensure_ascii: bool = True) -> str:
    """``json.dumps(value, separators=COMPACT, ensure_ascii=...)``: the same text."""
    try:
        return _encode(value, _quote if ensure_ascii else _quote_unicode)
    except (_NotPlain, RecursionError):  # json: "Circular reference detected", or deep
        pass
    text: str = module().dumps(value, separators=COMPACT, ensure_ascii=ensure_ascii)
    return text


def _encode(value: object, quote: Callable[[str], str]) -> str:
    # type() and not isinstance(): a str or int subclass may print itself its own way.
    if type(value) is str:
        return quote(value)
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if type(value) is int:
        return int.__repr__(value)
    if type(value) is float and -_INFINITY < value < _INFINITY:
        return float.__repr__(value)
    if type(value) is list or type(value) is tuple:
        return "[" + ",".join([_encode(v, quote) for v in value]) + "]"
    if type(value) is dict and all(type(k) is str for k in value):
        return "{" + ",".join([quote(k) + ":" + _encode(v, quote) for k, v in value.items()]) + "}"
    raise _NotPlain
