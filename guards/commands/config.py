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
    get = sub.add_parser("get", help="the effective value of a key", parents=[scope])
    get.add_argument("key")
    put = sub.add_parser("set", help="set a key", parents=[scope])
    put.add_argument("key")
    put.add_argument("value")
    unset = sub.add_parser("unset", help="remove a key from a file", parents=[scope])
    unset.add_argument("key")
    lst = sub.add_parser("list", help="every key with its value and origin", parents=[scope])
    lst.add_argument("--json", action="store_true")


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


def _shown(value: Any) -> str:
    if isinstance(value, list):
        return ",".join(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _get(args: argparse.Namespace) -> int:
    cfg.key(args.key)
    if args.user or args.repo:
        values = cfg.read_file(_target(args))
        if args.key not in values:
            return ExitCode.FINDINGS
        print(_shown(cfg.validate(args.key, values[args.key], "file")))
        return ExitCode.OK
    print(_shown(cfg.Config(_ledger_dir(required=False)).get(args.key)))
    return ExitCode.OK


def _set(args: argparse.Namespace) -> int:
    key = cfg.key(args.key)
    parsed = cfg.validate(args.key, args.value, "guards config set")
    # Store what the user wrote for sizes and durations ("50MiB" stays readable).
    stored: Any = parsed if isinstance(parsed, (bool, list)) else args.value
    if isinstance(key.default, int) and not isinstance(key.default, bool) and args.value.isdigit():
        stored = int(args.value)
    path = _target(args)
    values = cfg.read_file(path)
    values[args.key] = stored
    cfg.write_file(path, values)
    return ExitCode.OK


def _unset(args: argparse.Namespace) -> int:
    cfg.key(args.key)
    path = _target(args)
    values = cfg.read_file(path)
    if args.key not in values:
        return ExitCode.FINDINGS
    del values[args.key]
    cfg.write_file(path, values)
    return ExitCode.OK


def _list(args: argparse.Namespace) -> int:
    if args.user or args.repo:
        values = cfg.read_file(_target(args))
        rows = [(name, _shown(values[name]), "user" if args.user else "repo") for name in values]
    else:
        config = cfg.Config(_ledger_dir(required=False))
        rows = [(name, _shown(config.get(name)), config.origin(name)) for name in cfg.KEYS]
    if args.json:
        output.dump_json(
            {
                "settings": [
                    {
                        "key": n,
                        "value": v,
                        "origin": o,
                        "env": cfg.KEYS[n].env,
                        "doc": cfg.KEYS[n].doc,
                    }
                    for n, v, o in rows
                ]
            }
        )
        return ExitCode.OK
    print(output.table(rows, ("KEY", "VALUE", "ORIGIN")))
    return ExitCode.OK
