"""The one error boundary: every error is one line and an exit status, never a traceback."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from guards.errors import OVERRIDE_HINT, ExitCode, RefusedError, UsageError, boundary


def fails(exc: BaseException) -> Callable[[], int]:
    def body() -> int:
        raise exc

    return body


def test_fail_closed_gives_the_errors_own_code_and_one_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert boundary(fails(UsageError("bad value"))) == ExitCode.USAGE
    assert capsys.readouterr().err == "guards: bad value\n"
    assert boundary(lambda: 7) == 7


def test_a_bug_fails_closed_with_exit_3_and_a_log(capsys: pytest.CaptureFixture[str]) -> None:
    assert boundary(fails(ZeroDivisionError("oops"))) == ExitCode.INTERNAL
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "internal error (ZeroDivisionError: oops)" in err
    assert "Traceback" not in err


def test_a_guarded_command_refuses_on_a_usage_error_and_names_the_override(
    capsys: pytest.CaptureFixture[str],
) -> None:
    status = boundary(fails(UsageError("cannot tell")), refusal=True, hint=OVERRIDE_HINT)
    assert status == ExitCode.REFUSED
    assert capsys.readouterr().err == f"guards: cannot tell ({OVERRIDE_HINT})\n"
    message = f"refused; {OVERRIDE_HINT}"
    assert boundary(fails(RefusedError(message)), refusal=True, hint=OVERRIDE_HINT) == 20
    assert capsys.readouterr().err == f"guards: {message}\n"  # the hint is not said twice
    assert boundary(fails(ValueError("bug")), refusal=True, hint=OVERRIDE_HINT) == 3
    assert OVERRIDE_HINT in capsys.readouterr().err


def test_fail_open_is_one_line_and_exit_0_whatever_happened(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert boundary(fails(UsageError("no\nsecond line")), fail_open=True, what="frame") == 0
    assert capsys.readouterr().err == "guards: frame: no\n"
    assert boundary(fails(KeyError("k")), fail_open=True, what="frame") == 0
    assert capsys.readouterr().err == "guards: frame: internal error (KeyError: 'k')\n"


def test_interrupt_and_a_closed_pipe(capsys: pytest.CaptureFixture[str]) -> None:
    assert boundary(fails(KeyboardInterrupt())) == 130
    assert boundary(fails(BrokenPipeError())) == 0
    assert capsys.readouterr().err == ""


def test_a_caller_may_answer_errors_its_own_way_and_decide_late_whether_to_fail_open(
    capsys: pytest.CaptureFixture[str],
) -> None:
    asked: list[tuple[bool, str]] = []

    def answer(fail_open: bool, line: str) -> int:
        asked.append((fail_open, line))
        return 1 if fail_open else 2

    assert boundary(lambda: 5, fail_open=lambda: 1 / 0 == 0, answer=answer) == 5  # not asked
    assert boundary(fails(UsageError("bad\nvalue")), fail_open=lambda: True, answer=answer) == 1
    assert boundary(fails(BrokenPipeError()), answer=answer) == 2  # maybe git's: no OK
    assert boundary(fails(ZeroDivisionError("oops")), answer=answer) == 2
    assert asked[0] == (True, "bad")
    assert asked[2][1].startswith("internal error (ZeroDivisionError: oops); details in ")
    assert capsys.readouterr().err == ""


def test_a_late_fail_open_is_asked_without_an_answer_too(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``fail_open`` as a function is its answer, not a true value, also when the
    boundary says the error itself."""
    assert boundary(fails(UsageError("bad")), fail_open=lambda: False) == ExitCode.USAGE
    assert boundary(fails(UsageError("bad")), fail_open=lambda: True, what="x") == ExitCode.OK
    assert capsys.readouterr().err.splitlines()[-1].endswith("x: bad")
