"""JSON on the hot paths without ``import json``.

``import json`` costs about 10 ms on a 2-core VM (``re`` and ``enum``, for the regular
expressions of its pure-Python fallbacks): a fifth of an agent hook, which runs on every
tool call and prompt. CPython's C accelerator ``_json``, which json itself runs on,
needs neither. :func:`loads` calls its scanner; :func:`dumps` writes the plain values
guards stores (str, int, float, bool, None, lists, dicts with str keys) and quotes
strings with its encoder. Anything else goes to json itself, so answers and errors stay
json's: an interpreter without ``_json``, a value of another type, a float json spells
its own way (NaN, Infinity), a malformed document (its error message).
"""

from __future__ import annotations

TYPE_CHECKING = False  # see guards.values: these imports cost start-up time
if TYPE_CHECKING:
    from collections.abc import Callable
    from types import ModuleType
    from typing import Any

try:
    import _json
except ImportError:  # pragma: no cover - an interpreter other than CPython
    _json = None  # type: ignore[assignment]

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


_scan = None if _json is None else _json.make_scanner(_Options())  # type: ignore[arg-type]
_quote = None if _json is None else _json.encode_basestring_ascii
_quote_unicode = None if _json is None else _json.encode_basestring


def loads(data: str | bytes | bytearray) -> Any:
    """``json.loads(data)``, the same value or the same error."""
    if _scan is None:  # pragma: no cover - an interpreter other than CPython
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
    quote = _quote if ensure_ascii else _quote_unicode
    if quote is not None:
        try:
            return _encode(value, quote)
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
