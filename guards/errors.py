"""Exit codes and the exceptions that carry a one-line message to the user."""

from __future__ import annotations

TYPE_CHECKING = False  # see guards.values: these imports cost start-up time
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Final, NoReturn

#: Setting this to 1 makes the shim and ``guards run`` hand every command to git untouched.
DISABLE_ENV = "GUARDS_DISABLE"
#: The last-resort override every refusal of a guarded git command names.
OVERRIDE_HINT = f"to run git without guards: {DISABLE_ENV}=1"


class ExitCode:
    """Every exit status guards itself chooses (a guarded git passes git's own through).

    Plain ints, not an IntEnum: ``enum`` costs every start-up of the guarded git."""

    OK: Final = 0
    #: `doctor` found problems, `rescue restore` left conflicts, a check answered "no".
    FINDINGS: Final = 1
    #: A usage error: unknown option, bad value, path outside the repository.
    USAGE: Final = 2
    #: An internal error (a bug): reported with a pointer to the log, never a traceback.
    INTERNAL: Final = 3
    #: Guards cannot give a trustworthy answer (unreadable ledger, failed git call, ...).
    UNKNOWN_STATE: Final = 4
    #: A guarded command was refused: foreign or unknown work at risk under policy
    #: `block`, or a rescue failed or could not be verified.
    REFUSED: Final = 20
    #: ``guards land``: the merge conflicts; nothing changed, both branches kept.
    CONFLICT: Final = 21

    ALL: Final = (OK, FINDINGS, USAGE, INTERNAL, UNKNOWN_STATE, REFUSED, CONFLICT)


class GuardsError(Exception):
    """A problem the user can fix; printed as one line, never as a traceback."""

    exit_code: int = ExitCode.USAGE

    def __init__(self, message: str, *, exit_code: int | None = None) -> None:
        super().__init__(message)
        if exit_code is not None:
            self.exit_code = exit_code


class UsageError(GuardsError):
    exit_code = ExitCode.USAGE


class UnknownStateError(GuardsError):
    """Guards could not see something it needs; principle 2 says: refuse, never guess."""

    exit_code = ExitCode.UNKNOWN_STATE


class RefusedError(GuardsError):
    exit_code = ExitCode.REFUSED


def report_internal_error(exc: BaseException, hint: str = "") -> int:
    """A bug: one line for the user, the traceback in guards' log file; exit 3."""
    import sys

    where = log_internal_error(exc)
    extra = f"; {hint}" if hint else ""
    print(f"guards: internal error ({type(exc).__name__}: {exc}); {where}{extra}", file=sys.stderr)
    return int(ExitCode.INTERNAL)


def log_internal_error(exc: BaseException) -> str:
    """Append the traceback of a bug to guards' log file; says where ("details in ...")."""
    import sys
    import traceback

    from guards import __version__

    try:
        from pathlib import Path

        from platformdirs import user_log_dir

        log = Path(user_log_dir("guards")) / "guards.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        with open(log, "a", encoding="utf-8") as f:
            f.write(f"guards {__version__} python {sys.version.split()[0]} argv {sys.argv!r}\n")
            f.write("".join(traceback.format_exception(exc)))
        return f"details in {log}"
    except Exception:
        return "no log written"


def boundary(
    body: Callable[[], int],
    *,
    fail_open: bool | Callable[[], bool] = False,
    what: str = "",
    hint: str = "",
    refusal: bool = False,
    answer: Callable[[bool, str], int] | None = None,
) -> int:
    """The one place where an error becomes an exit status and one line on stderr.

    ``fail_open=False`` (fail closed): a :class:`GuardsError` exits with its own code, a
    bug with :data:`ExitCode.INTERNAL` and a log; with ``refusal`` (a guarded git
    command, which must not run when guards cannot decide) a usage error counts as a
    refusal, and every message names ``hint`` (the override). ``fail_open=True``: the
    surrounding operation must go on whatever happened (the frame before a turn, a
    hook after git already acted): one line starting with ``what``, exit 0.

    ``answer``: the caller tells the error its own way (an agent hook answers in its
    harness's shape: a denied tool call, or one line and exit 1). It is given whether
    the boundary fails open and the error's one line (a bug's names the log it was
    written to first) and returns the exit status; every error goes to it, a broken
    pipe too (it may be git's, in the middle of a check). ``fail_open`` may then be a
    function, asked only when an error came (an agent hook fails closed only for a
    tool call that could run git, which costs a look at the call it need not pay on
    every event).
    """
    import sys

    try:
        return body()
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError as e:
        if answer is not None:
            return _answered(answer, fail_open, e)
        return ExitCode.OK
    except GuardsError as e:
        if answer is not None:
            return _answered(answer, fail_open, e)
        if _opens(fail_open):
            _say(f"{what}: {first_line(e)}" if what else first_line(e))
            return ExitCode.OK
        code = int(e.exit_code)
        message = str(e)
        if refusal:
            code = ExitCode.REFUSED if code == ExitCode.USAGE else code
            if hint and hint not in message:
                message = f"{message} ({hint})"
        _say(message)
        return code
    except Exception as e:  # a bug: one line for the user, the traceback in a log
        if answer is not None:
            return _answered(answer, fail_open, e)
        if _opens(fail_open):
            _say(f"{what}: internal error ({type(e).__name__}: {first_line(e)})")
            return ExitCode.OK
        sys.stdout.flush()
        return report_internal_error(e, hint=hint)


def _opens(fail_open: bool | Callable[[], bool]) -> bool:
    """Whether the boundary fails open: ``fail_open`` itself, or its answer, asked now."""
    return fail_open() if callable(fail_open) else fail_open


def _answered(
    answer: Callable[[bool, str], int], fail_open: bool | Callable[[], bool], e: Exception
) -> int:
    line = first_line(e)
    if not isinstance(e, GuardsError):  # a bug: logged like every other
        line = f"internal error ({type(e).__name__}: {line}); {log_internal_error(e)}"
    return answer(_opens(fail_open), line)


def _say(message: str) -> None:
    from guards.output import error

    error(message)


def first_line(e: BaseException) -> str:
    """An error in one line: its message's first, else its type's name."""
    lines = str(e).strip().splitlines()
    return lines[0] if lines else type(e).__name__


#: Allocations between two collections of the youngest generation in a guards process
#: (Python's default is 700; see :func:`collect_rarely`).
COLLECT_EVERY = 20_000


def collect_rarely() -> None:
    """Every command's first step: Python's cycle collector runs every
    :data:`COLLECT_EVERY` allocations instead of every 700. Importing a hook's modules
    allocates tens of thousands of objects, none of them garbage, and the default ran the
    collector over them dozens of times: about half a millisecond of every hook. The
    garbage a cycle leaves is still collected, only in larger steps."""
    import gc

    gc.set_threshold(COLLECT_EVERY, *gc.get_threshold()[1:])


def exit_now(status: int | None) -> NoReturn:
    """End the process with ``status``, as ``sys.exit`` does, but without the
    interpreter's teardown when nothing needs it: every command's last step.

    Tearing down the modules a hook or a record loaded costs about a millisecond, a
    sixth of the interpreter's start-up, on every tool call of every agent. It is
    skipped only when it would do nothing that matters: no thread started, no exit
    handler registered (a temporary directory's removal, a lock's release), not asked
    to stay (``python -i``), and the standard streams flushed without error; anything
    else exits the usual way (a broken pipe is then reported as Python does)."""
    import sys

    if _nothing_left_at_exit():
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except Exception:
            pass  # the usual exit says what went wrong
        else:
            import os

            os._exit(0 if status is None else status)
    sys.exit(status)


def _nothing_left_at_exit() -> bool:
    """Whether the interpreter's teardown would run nothing of ours: no thread left
    (threading.active_count() counts the main one), no exit handler, no ``-i``."""
    import atexit
    import sys

    threading = sys.modules.get("threading")
    callbacks = getattr(atexit, "_ncallbacks", None)  # CPython's; elsewhere: assume some
    return (
        (threading is None or threading.active_count() == 1)
        and callbacks is not None
        and callbacks() == 0
        and not sys.flags.inspect
    )
