"""guards config get/set/unset/list."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from guards import config as cfg
from guards import output
from guards.errors import ExitCode, UsageError
from guards.git.repo import NotARepositoryError, discover

HELP = "read and change settings (user file, repository file, GUARDS_* environment)"


def configure(parser: argparse.ArgumentParser) -> None:
    scope = argparse.ArgumentParser(add_help=False)
    group = scope.add_mutually_exclusive_group()
    group.add_argument("--user", action="store_true", help="the user's file")
    group.add_argument("--repo", action="store_true", help="this repository's file (default)")
    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    keys = ", ".join(cfg.KEYS)
    get = sub.add_parser(
        "get",
        help="the effective value of a key (exit 1 when it has none)",
        parents=[scope],
    )
    get.add_argument("key", metavar="KEY", help=f"one of: {keys}")
    put = sub.add_parser("set", help="set a key", parents=[scope])
    put.add_argument("key", metavar="KEY", help=f"one of: {keys}")
    put.add_argument("value", metavar="VALUE", help="sizes as 50MiB, durations as 30m, 2h, 14d")
    unset = sub.add_parser(
        "unset", help="remove a key from a file (exit 1 when it was not set)", parents=[scope]
    )
    unset.add_argument("key", metavar="KEY", help=f"one of: {keys}")
    lst = sub.add_parser("list", help="every key with its value and origin", parents=[scope])
    lst.add_argument(
        "--json", action="store_true", help="machine-readable; sizes in bytes, durations in seconds"
    )


def run(args: argparse.Namespace) -> int:
    actions = {"get": _get, "set": _set, "unset": _unset, "list": _list}
    return actions[args.action](args)


def _ledger_dir(required: bool) -> Path | None:
    try:
        return discover().ledger_dir
    except NotARepositoryError:
        if required:
            raise UsageError("not in a git repository: use --user for the user's file") from None
        return None


def _target(args: argparse.Namespace) -> Path:
    if args.user:
        return cfg.user_config_path()
    ledger_dir = _ledger_dir(required=True)
    assert ledger_dir is not None
    return cfg.repo_config_path(ledger_dir)


def _get(args: argparse.Namespace) -> int:
    cfg.key(args.key)
    if args.user or args.repo:
        values = cfg.read_file(_target(args))
        if args.key not in values:
            return ExitCode.FINDINGS
        print(cfg.show_raw(cfg.validate(args.key, values[args.key], "file")))
        return ExitCode.OK
    value = cfg.Config(_ledger_dir(required=False)).get(args.key)
    if value == "" or value == []:
        return ExitCode.FINDINGS  # no value: set nowhere, and no default (as git config)
    print(cfg.show_raw(value))
    return ExitCode.OK


def _scope_name(args: argparse.Namespace, path: Path) -> str:
    return f"{'user' if args.user else 'repository'} file {path}"


def _set(args: argparse.Namespace) -> int:
    key = cfg.key(args.key)
    parsed = cfg.validate(args.key, args.value)
    # Store what the user wrote for sizes and durations ("50MiB" stays readable).
    stored: Any = parsed if isinstance(parsed, (bool, list)) else args.value
    if isinstance(key.default, int) and not isinstance(key.default, bool) and args.value.isdigit():
        stored = int(args.value)
    path = _target(args)
    values = cfg.read_file(path)
    values[args.key] = stored
    cfg.write_file(path, values)
    print(f"{args.key} = {cfg.show(args.key, parsed)} ({_scope_name(args, path)})")
    _say_overridden(args, key)
    return ExitCode.OK


def _say_overridden(args: argparse.Namespace, key: cfg.Key) -> None:
    """A value that is set but not in effect deserves a word."""
    import os

    if key.env in os.environ:
        output.warn(f"{key.env} in the environment overrides {key.name}")
        return
    ledger_dir = _ledger_dir(required=False) if args.user else None
    if ledger_dir is not None:
        repo_file = cfg.repo_config_path(ledger_dir)
        if key.name in cfg.read_file(repo_file):
            output.warn(f"this repository's file {repo_file} overrides {key.name}")


def _unset(args: argparse.Namespace) -> int:
    cfg.key(args.key)
    path = _target(args)
    values = cfg.read_file(path)
    if args.key not in values:
        return ExitCode.FINDINGS
    del values[args.key]
    cfg.write_file(path, values)
    print(f"{args.key} unset ({_scope_name(args, path)})")
    return ExitCode.OK


def _list(args: argparse.Namespace) -> int:
    if args.user or args.repo:
        values = cfg.read_file(_target(args))
        parsed = {name: cfg.validate(name, values[name]) for name in values}
        rows = [(name, parsed[name], "user" if args.user else "repo") for name in values]
    else:
        config = cfg.Config(_ledger_dir(required=False))
        rows = [(name, config.get(name), config.origin(name)) for name in cfg.KEYS]
    if args.json:
        output.dump_json(
            {
                "settings": [
                    {
                        "key": n,
                        "value": cfg.show_raw(v),
                        "origin": o,
                        "env": cfg.KEYS[n].env,
                        "doc": cfg.KEYS[n].doc,
                    }
                    for n, v, o in rows
                ]
            }
        )
        return ExitCode.OK
    shown = [(n, cfg.show(n, v), o) for n, v, o in rows]
    print(output.table(shown, ("KEY", "VALUE", "ORIGIN")))
    return ExitCode.OK
