"""The one error boundary: every error is one line and an exit status, never a traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

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


# -- the end of a process ------------------------------------------------------------------

#: A process that ends through exit_now: an object whose teardown leaves a mark, output
#: written but not flushed, then ``setup`` (what else the process did), then the end.
#: Run with -E, as installed artifacts are: PYTHONUNBUFFERED would flush every write.
_ENDING = """
import os, sys
sys.path.insert(0, {root!r})
from guards.errors import exit_now
class Torn:
    def __del__(self, open=open):  # (a default: teardown empties builtins)
        open({torn!r}, "w").close()
kept = Torn()
sys.stdout.write("out" * {count})
sys.stderr.write("err\\n")
{setup}
exit_now({status})
"""


def _end(
    tmp_path: Path, setup: str, status: str = "7"
) -> tuple[subprocess.CompletedProcess[str], bool]:
    from tests.helpers import PROJECT_ROOT

    torn = tmp_path / "torn"
    code = _ENDING.format(
        root=str(PROJECT_ROOT), torn=str(torn), setup=setup, status=status, count=50000
    )
    res = subprocess.run(
        [sys.executable, "-E", "-S", "-c", code], capture_output=True, text=True, check=False
    )
    return res, torn.exists()


def test_a_process_ends_with_its_status_and_all_its_output_but_no_teardown(
    tmp_path: Path,
) -> None:
    res, torn = _end(tmp_path, "")
    assert (res.returncode, len(res.stdout), res.stderr) == (7, 150000, "err\n")
    assert not torn  # the interpreter's teardown (a millisecond per hook) was skipped
    res, _ = _end(tmp_path, "", status="None")
    assert res.returncode == 0


@pytest.mark.parametrize(
    "setup",
    [
        "import atexit; atexit.register(lambda: None)",
        "import tempfile; kept_dir = tempfile.TemporaryDirectory()",
        "import threading, time; threading.Thread(target=time.sleep, args=(0.2,)).start()",
    ],
    ids=["exit-handler", "temporary-directory", "thread"],
)
def test_a_process_with_work_left_at_exit_ends_the_usual_way(tmp_path: Path, setup: str) -> None:
    res, torn = _end(tmp_path, setup)
    assert (res.returncode, len(res.stdout), res.stderr) == (7, 150000, "err\n")
    assert torn  # the usual exit: its handlers, threads and finalizers ran


def test_output_that_cannot_be_written_is_never_an_exit_0(tmp_path: Path) -> None:
    """A reader gone before the output was flushed: Python's own exit (status 120), as
    without exit_now, never a silent success."""
    from tests.helpers import PROJECT_ROOT

    code = _ENDING.format(
        root=str(PROJECT_ROOT), torn=str(tmp_path / "t"), setup="", status="0", count=10
    )
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before anything is written
    try:
        res = subprocess.run(
            [sys.executable, "-E", "-S", "-c", code], stdout=write_end, stderr=subprocess.PIPE
        )
    finally:
        os.close(write_end)
    assert res.returncode == 120, res.stderr
    assert b"BrokenPipeError" in res.stderr
