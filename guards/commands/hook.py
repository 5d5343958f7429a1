"""guards hook: the checks git hooks run, for the pre-commit framework and native hooks.

    guards hook foreign-commit [--warn]      pre-commit, pre-merge-commit
    guards hook mass-deletion [--max-files N] [--max-percent P]   pre-commit
    guards hook ledger-sync [ARGS...]        post-commit, post-checkout, post-merge, post-rewrite
    guards hook push-breaker [REMOTE URL]    pre-push (stdin: git's ref lines)
    guards hook run HOOK-TYPE [ARGS...]      every check of one git hook type (native hooks)

Under the pre-commit framework the push breaker reads ``PRE_COMMIT_*`` variables (the
framework passes only the first pushed ref, and never a deletion) and asks the remote
for its tip; the native pre-push hook reads every ref from stdin.

Native hooks run ``python -m guards.commands.hook run <type>``: that skips building the
parser of every other subcommand, and the checks are imported only when needed, so a
post-* hook in a repository without attributions costs a Python start and one git call.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from guards.errors import ExitCode, GuardsError
from guards.output import error, warn

if TYPE_CHECKING:
    from guards.git.repo import Repo
    from guards.integrations.githooks import Verdict
    from guards.state.workspace import Workspace

HELP = "the checks git hooks run (pre-commit framework and native hooks)"


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0: {text!r}")
    return value


def _percent(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0.0 <= value <= 100.0:
        raise argparse.ArgumentTypeError(f"must be between 0 and 100: {text!r}")
    return value


def configure(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", metavar="CHECK", required=True)
    foreign = sub.add_parser(
        "foreign-commit",
        help="refuse staged paths attributed to another live session "
        "(override: GUARDS_ALLOW_FOREIGN_COMMIT=1)",
    )
    foreign.add_argument("--warn", action="store_true", help="warn instead of refusing")
    mass = sub.add_parser(
        "mass-deletion",
        help="refuse a commit deleting more than max(N files, P%% of tracked files) "
        "(override: GUARDS_ALLOW_MASS_DELETION=1)",
    )
    mass.add_argument("--max-files", type=_count, metavar="N", help="default: 50")
    mass.add_argument("--max-percent", type=_percent, metavar="P", help="default: 20")
    sync = sub.add_parser(
        "ledger-sync", help="release attributions of paths that are clean now (never fails)"
    )
    sync.add_argument("hook_args", nargs="*", metavar="ARG", help="ignored (git's hook args)")
    push = sub.add_parser(
        "push-breaker",
        help="refuse a push dropping remote commits nobody here has seen "
        "(override: GUARDS_ALLOW_FORCE_PUSH=1)",
    )
    push.add_argument("remote", nargs="?", default="", help="git's first pre-push argument")
    push.add_argument("url", nargs="?", default="", help="git's second pre-push argument")
    run_ = sub.add_parser("run", help="every check of one git hook type (what native hooks call)")
    from guards.integrations.native_hooks import NATIVE_CHECKS

    run_.add_argument(
        "hook_type",
        choices=sorted(NATIVE_CHECKS),
        metavar="HOOK-TYPE",
        help="the git hook type: " + ", ".join(sorted(NATIVE_CHECKS)),
    )
    run_.add_argument(
        "hook_args", nargs=argparse.REMAINDER, metavar="ARG", help="the arguments git gave the hook"
    )


def run(args: argparse.Namespace) -> int:
    _absolute_git_env()
    if args.action == "ledger-sync":
        return _ledger_sync()
    if args.action == "run":
        return _run_native(args.hook_type, list(args.hook_args))
    from guards.integrations import githooks

    if args.action == "foreign-commit":
        return _report(githooks.check_foreign_commit(_workspace(), warn_only=args.warn))
    if args.action == "mass-deletion":
        limits = {"max_files": args.max_files, "max_percent": args.max_percent}
        verdict = githooks.check_mass_deletion(
            _workspace().repo, **{k: v for k, v in limits.items() if v is not None}
        )
        return _report(verdict)
    return _push_breaker(args.remote, args.url)


def _workspace(repo: Repo | None = None) -> Workspace:
    from guards.state.workspace import Workspace

    if repo is None:
        return Workspace.open()
    # Workspace.open() without a second discovery: the same parts, from this repo.
    from guards.config import Config
    from guards.state import session
    from guards.state.ledger import Ledger

    config = Config(repo.ledger_dir)
    ledger = Ledger(repo.ledger_dir, lock_timeout=float(config.get("ledger.lock_timeout")))
    caller = session.caller_id(repo.ledger_dir_text)
    return Workspace(repo=repo, config=config, ledger=ledger, caller=caller)


def _absolute_git_env() -> None:
    """A hook may inherit relative GIT_DIR/GIT_INDEX_FILE; guards runs git from the top."""
    for name in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR"):
        value = os.environ.get(name)
        if value and not os.path.isabs(value):
            os.environ[name] = os.path.abspath(value)


def _report(verdict: Verdict) -> int:
    for line in verdict.lines:
        if line.startswith("  "):
            print(line, file=sys.stderr)
        elif line.startswith("warning: "):
            warn(line.removeprefix("warning: "))
        else:
            error(line)
    return int(verdict.exit_code) if verdict.refused else int(ExitCode.OK)


def _ledger_sync() -> int:
    """Housekeeping after git moved: one warning line at most, exit 0 always (never fail
    the git operation that already happened)."""
    from guards.errors import boundary

    return boundary(_sync, fail_open=True, what="warning: ledger sync skipped")


def _sync() -> int:
    problem = _sync_if_attributed()
    if problem:
        warn(f"ledger sync skipped: {problem}")
    return int(ExitCode.OK)


def _sync_if_attributed() -> str | None:
    from guards.git.repo import discover
    from guards.state.ledger import Ledger, LedgerUnreadableError

    repo = discover()
    if repo.toplevel is None:
        return None
    try:
        data = Ledger(repo.ledger_dir).read(repo.worktree_key, rescues=False)
    except LedgerUnreadableError as e:
        return str(e)
    if not data.paths.get(repo.worktree_key):
        return None  # the common case: no attribution here, nothing to release
    from guards.integrations import githooks

    hidden = os.environ.get("PRE_COMMIT") == "1"  # the framework stashed unstaged work
    return githooks.sync_ledger(_workspace(repo), unstaged_hidden=hidden)


def _read_stdin() -> bytes:
    if sys.stdin is None or sys.stdin.isatty():
        return b""
    return sys.stdin.buffer.read()


def _push_breaker(remote: str, url: str) -> int:
    from guards.integrations import githooks

    env = os.environ
    repo = _workspace().repo
    if env.get("PRE_COMMIT_REMOTE_BRANCH") and env.get("PRE_COMMIT_TO_REF"):
        return _framework_push(repo)
    if env.get("PRE_COMMIT") == "1":
        return int(ExitCode.OK)  # run by hand through the framework: nothing is being pushed
    updates = githooks.parse_push_lines(_read_stdin())
    named = bool(remote) and remote != url
    return _report(githooks.check_push(repo, remote, updates, named_remote=named))


def _framework_push(repo: Repo) -> int:
    """The framework hands over only the first ref, without the remote's tip: ask for it."""
    from guards.integrations import githooks

    env = os.environ
    remote_ref = env["PRE_COMMIT_REMOTE_BRANCH"]
    name = env.get("PRE_COMMIT_REMOTE_NAME", "")
    url = env.get("PRE_COMMIT_REMOTE_URL", "") or name
    try:
        tip = githooks.remote_tip(repo, url, remote_ref)
    except GuardsError as e:
        if githooks.allowed(githooks.ALLOW_FORCE_PUSH):
            return int(ExitCode.OK)
        raise GuardsError(
            f"cannot read the tip of {remote_ref} from {url} to check the push ({e}); "
            f"set {githooks.ALLOW_FORCE_PUSH}=1 to push unchecked",
            exit_code=ExitCode.UNKNOWN_STATE,
        ) from None
    if tip is None:
        return int(ExitCode.OK)  # a new branch there
    update = githooks.PushUpdate(
        env.get("PRE_COMMIT_LOCAL_BRANCH", "HEAD"), env["PRE_COMMIT_TO_REF"], remote_ref, tip
    )
    verdict = githooks.check_push(repo, name, [update], named_remote=bool(name) and name != url)
    return _report(verdict)


def _run_native(hook_type: str, hook_args: list[str]) -> int:
    if hook_type.startswith("post-"):
        return _ledger_sync()
    from guards.integrations import githooks

    if hook_type == "pre-commit":
        ws = _workspace()
        changes = githooks.staged_changes(ws.repo) if ws.repo.toplevel is not None else []
        foreign = githooks.check_foreign_commit(ws, changes=changes)
        mass = githooks.check_mass_deletion(ws.repo, changes=changes)
        codes = [_report(foreign), _report(mass)]
        return max(codes)
    if hook_type == "pre-merge-commit":
        return _report(githooks.check_foreign_commit(_workspace()))
    if hook_type == "pre-push":
        remote = hook_args[0] if hook_args else ""
        url = hook_args[1] if len(hook_args) > 1 else ""
        return _push_breaker(remote, url)
    return _ledger_sync()  # not reached: every hook type is handled above


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m guards.commands.hook``: this subcommand alone, errors as in guards.main."""
    from guards.cli import Parser
    from guards.errors import boundary

    parser = Parser(prog="guards hook", description=HELP)
    configure(parser)
    return boundary(lambda: run(parser.parse_args(list(sys.argv[1:] if argv is None else argv))))


if __name__ == "__main__":
    raise SystemExit(main())
