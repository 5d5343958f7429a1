"""guards.jsontext reads and writes exactly what json does, without importing it."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import pytest

from guards import jsontext

DOCUMENTS = [
    {},
    [],
    "",
    0,
    -1,
    10**30,
    1.5,
    -0.0,
    1e300,
    1.7976931348623157e308,
    5e-324,
    True,
    False,
    None,
    "plain",
    "plain/path with spaces ~ and {json} [chars]: 'quoted', #1",
    "del \x7f",
    'a "quoted" \\ back\\slash',
    "tab\tnew\nline\rcarriage\x00nul\x1f",
    "é ü ß 日本 \U0001f600",
    "lone \udc80 surrogate",
    {"session": "claude-1", "paths": ["a", "b/c d"], "n": 3, "ok": True, "x": None},
    {"nested": [[1, [2, [3, {"k": [{}]}]]]], "": ""},
    ["mixed", 1, 2.25, False, None, {"a": []}],
    ("a", "tuple"),
]


@pytest.mark.parametrize("value", DOCUMENTS, ids=repr)
def test_dumps_writes_what_json_writes(value: object) -> None:
    assert jsontext.dumps(value) == json.dumps(value, separators=(",", ":"))


@pytest.mark.parametrize("value", DOCUMENTS, ids=repr)
def test_dumps_without_ascii_escapes_writes_what_json_writes(value: object) -> None:
    expected = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    assert jsontext.dumps(value, ensure_ascii=False) == expected


@pytest.mark.parametrize("value", DOCUMENTS, ids=repr)
def test_loads_reads_what_json_reads(value: object) -> None:
    for text in (json.dumps(value), json.dumps(value, indent=2), f" \n\t{json.dumps(value)}\r\n"):
        assert repr(jsontext.loads(text)) == repr(json.loads(text))
        raw = text.encode("utf-8", "surrogatepass")
        assert repr(jsontext.loads(raw)) == repr(json.loads(raw))


@pytest.mark.parametrize(
    "value",
    [float("nan"), float("inf"), -float("inf"), {1: "int key"}, {"set": {1, 2}}, b"bytes"],
    ids=repr,
)
def test_values_json_spells_its_own_way_go_to_json(value: object) -> None:
    _same_as_json(jsontext.dumps, lambda v: json.dumps(v, separators=(",", ":")), value)


@pytest.mark.parametrize("text", ["NaN", "[Infinity, -Infinity]", "1e400", "-0", "1.0e-400"])
def test_numbers_json_reads_its_own_way_are_read_the_same(text: str) -> None:
    assert repr(jsontext.loads(text)) == repr(json.loads(text))


def test_a_circular_value_is_json_s_error() -> None:
    loop: list[object] = []
    loop.append(loop)
    with pytest.raises(ValueError, match="Circular reference"):
        jsontext.dumps(loop)


@pytest.mark.parametrize(
    "text",
    [
        "",
        " ",
        "{",
        '{"a":}',
        "[1,]",
        "[1] [2]",
        "nul",
        '"unterminated',
        '"bad \\x escape"',
        '{"a": 1} x',
        "\ufeff{}",
        '"ctl \x01"',
        "[" * 100_000,
    ],
    ids=repr,
)
def test_malformed_documents_raise_json_s_errors(text: str) -> None:
    with pytest.raises((ValueError, RecursionError)) as theirs:
        json.loads(text)
    with pytest.raises(type(theirs.value)) as ours:
        jsontext.loads(text)
    assert str(ours.value) == str(theirs.value)


@pytest.mark.parametrize(
    "raw",
    ['{"a": "é"}'.encode("utf-8-sig"), '{"a": 1}'.encode("utf-16"), b'{"a": "\xff"}', b"\x00\x00"],
    ids=repr,
)
def test_bytes_json_decodes_its_own_way_go_to_json(raw: bytes) -> None:
    _same_as_json(jsontext.loads, json.loads, raw)


def _same_as_json(ours: Callable[[Any], object], theirs: Callable[[Any], object], arg: Any) -> None:
    """``ours(arg)`` gives what ``theirs(arg)`` gives: the same value, or the same error."""
    try:
        expected = theirs(arg)
    except (TypeError, ValueError) as e:
        with pytest.raises(type(e)) as raised:
            ours(arg)
        assert str(raised.value) == str(e)
        return
    assert ours(arg) == expected


def test_writing_plain_strings_loads_no_accelerator() -> None:
    """An edit's record writes only strings json leaves as they are: no ``_json`` (a
    shared library) is loaded for them, and what is written is json's own text."""
    code = (
        "import sys; from guards import jsontext; "
        "print(jsontext.dumps(['a', 'src/x y.py', 1, {'k': None}]), '_json' in sys.modules, "
        "jsontext.dumps('\\u00e9'), '_json' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == [
        '["a","src/x',
        'y.py",1,{"k":null}]',
        "False",
        '"\\u00e9"',
        "True",
    ]


def test_reading_and_writing_never_import_json() -> None:
    code = (
        "import sys; from guards import jsontext; "
        'v = jsontext.loads(b\'{"a": [1, 2.5, null, true, "\\\\u00e9"]}\'); '
        "jsontext.dumps(v); print(sorted(m for m in ('json', 're', 'enum') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
