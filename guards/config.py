"""Settings: defaults < user file < repository file < ``GUARDS_*`` environment.

Tools and test suites run git with their own ``HOME`` and strip ``GIT_*`` variables, so
every key can also come from the environment: ``rescue.max_file_size`` is
``GUARDS_RESCUE_MAX_FILE_SIZE``.
"""

from __future__ import annotations

import os
import sys

from guards.errors import UnknownStateError, UsageError
from guards.values import Value

TYPE_CHECKING = False  # see guards.values: these imports cost start-up time
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from pathlib import Path
    from typing import Any

CONFIG_FILE = "config.toml"

_SIZE_UNITS = {
    "": 1,
    "b": 1,
    "k": 1024,
    "kb": 1024,
    "kib": 1024,
    "m": 1024**2,
    "mb": 1024**2,
    "mib": 1024**2,
    "g": 1024**3,
    "gb": 1024**3,
    "gib": 1024**3,
}
_DURATION_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def parse_size(value: object) -> int:
    """``1048576``, ``"512KiB"``, ``"50MB"``, ``"2g"`` -> bytes."""
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    import re  # lazily: re costs start-up time and few settings need it

    m = re.fullmatch(r"\s*(\d+)\s*([a-zA-Z]*)\s*", str(value))
    if not m or m.group(2).lower() not in _SIZE_UNITS:
        raise ValueError("a size such as 1048576, 512KiB, 50MiB or 2GiB")
    return int(m.group(1)) * _SIZE_UNITS[m.group(2).lower()]


def parse_duration(value: object, unit_required: bool = False) -> float:
    """``90`` (seconds), ``"30m"``, ``"2h"``, ``"14d"``, ``"1w"`` -> seconds.

    ``unit_required``: a bare number other than 0 is refused (a command-line option
    such as ``rescue prune --older-than 30`` must not guess that 30 means seconds)."""
    if unit_required:
        import re  # lazily: re costs start-up time and few settings need it

        if not re.fullmatch(r"\s*(\d+(?:\.\d+)?\s*[smhdw]|0)\s*", str(value)):
            raise ValueError("a duration with its unit: 90s, 30m, 2h, 14d or 1w")
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0:
        return float(value)
    import re  # lazily: re costs start-up time and few settings need it

    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smhdw]?)\s*", str(value))
    if not m:
        raise ValueError("a duration such as 90, 90s, 30m, 2h, 14d or 1w")
    return float(m.group(1)) * _DURATION_UNITS[m.group(2) or "s"]


def parse_bool(value: object) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in {"1", "true", "yes", "on"}:
        return True
    if text in {"0", "false", "no", "off", ""}:
        return False
    raise ValueError("true or false")


def parse_list(value: object) -> list[str]:
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return list(value)
    if isinstance(value, str):
        return [v.strip() for v in value.split(",") if v.strip()]
    raise ValueError("a list of strings (comma-separated in the environment)")


def _choice(*choices: str) -> Callable[[object], str]:
    def parse(value: object) -> str:
        text = str(value).strip()
        if text not in choices:
            raise ValueError(" | ".join(choices))
        return text

    return parse


def _ref_namespace(value: object) -> str:
    import re  # lazily: re costs start-up time and few settings need it

    text = str(value).strip().rstrip("/")
    if not re.fullmatch(r"refs/[A-Za-z0-9._/-]+", text) or ".." in text or "//" in text:
        raise ValueError("a ref prefix such as refs/rescue or refs/heads/rescue")
    return text


def _string(value: object) -> str:
    if not isinstance(value, str):
        raise ValueError("a string")
    return value


def _branch_name(value: object) -> str:
    import re  # lazily: re costs start-up time and few settings need it

    text = str(value).strip().removeprefix("refs/heads/")
    if text and (
        not re.fullmatch(r"[^\s~^:?*\[\\]+", text)
        or ".." in text
        or text.startswith(("-", "/"))
        or text.endswith(("/", ".lock", "."))
        or "//" in text
        or "@{" in text
    ):
        raise ValueError("a local branch name such as main or develop (or empty)")
    return text


def _positive_int(value: object) -> int:
    try:
        number = int(str(value))
    except ValueError:
        raise ValueError("a whole number >= 1") from None
    if number < 1:
        raise ValueError("a whole number >= 1")
    return number


class Key(Value):
    """A setting: its name, default, parser (raises ValueError) and one-line doc."""

    __slots__ = ("default", "doc", "name", "parse")

    def __init__(self, name: str, default: Any, parse: Callable[[object], Any], doc: str) -> None:
        self.name = name
        self.default = default
        self.parse = parse
        self.doc = doc

    @property
    def env(self) -> str:
        return "GUARDS_" + self.name.upper().replace(".", "_")


KEYS: dict[str, Key] = {
    k.name: k
    for k in (
        Key(
            "policy",
            "rescue",
            _choice("rescue", "block", "warn"),
            "what a guarded command does when foreign or unknown work is at risk: "
            "rescue (snapshot it, then run), block (refuse), warn (run, and say what was lost)",
        ),
        Key(
            "quiet",
            False,
            parse_bool,
            "keep the one-line rescue report off stderr (the rescue still happens and is listed)",
        ),
        Key(
            "progress.delay",
            1.0,
            parse_duration,
            "how long a rescue, a big record, reap --apply or rescue restore runs before it "
            "shows progress on stderr (a terminal only, never when quiet)",
        ),
        Key(
            "rescue.namespace",
            "refs/rescue",
            _ref_namespace,
            "where rescue refs live; refs/heads/rescue makes them branches",
        ),
        Key(
            "rescue.remote",
            "",
            _string,
            "a remote to push new rescue refs to (create-only); empty: keep them local",
        ),
        Key(
            "rescue.max_file_size",
            100 * 1024**2,
            parse_size,
            "a rescue fails (never drops the file) when one file is larger than this",
        ),
        Key(
            "rescue.max_total_size",
            2 * 1024**3,
            parse_size,
            "a rescue fails when the files it must hold add up to more than this",
        ),
        Key(
            "log.max_bytes",
            1024**2,
            parse_size,
            "the decision log (guards log) is rotated when it grows past this; one older "
            "file is kept",
        ),
        Key(
            "rescue.secret_patterns",
            [".env*", "*.pem", "*.key", "id_rsa*"],
            parse_list,
            "file-name patterns that are rescued locally but never pushed",
        ),
        Key(
            "persist.on_stop",
            False,
            parse_bool,
            "also persist a session's own dirty work (its WIP ref, pushed to rescue.remote "
            "when set) at the end of every agent turn (the harness's Stop or AfterAgent "
            "event), not only when the session ends",
        ),
        Key(
            "session.ttl",
            30 * 60.0,
            parse_duration,
            "a session without a pid counts as live this long after its last activity",
        ),
        Key(
            "ledger.lock_timeout",
            10.0,
            parse_duration,
            "how long to wait for another guards to finish writing the ledger",
        ),
        Key(
            "frame.max_paths",
            20,
            _positive_int,
            "how many paths `guards frame` lists before it says how many more",
        ),
        Key(
            "worktree.include",
            [],
            parse_list,
            "gitignore-style patterns of ignored artifacts (virtualenvs, node_modules, .env) "
            "that `guards worktree add` links or copies into a new worktree, besides "
            ".worktreeinclude",
        ),
        Key(
            "worktree.include_mode",
            "auto",
            _choice("auto", "link", "copy"),
            "how included artifacts reach a new worktree: auto (link directories, copy "
            "files), link or copy",
        ),
        Key(
            "worktree.lock_timeout",
            120.0,
            parse_duration,
            "how long `guards worktree add` and `guards reap --apply` wait for each other",
        ),
        Key(
            "land.into",
            "",
            _branch_name,
            "the branch `guards land` merges into; empty: the branch the worktree was cut "
            "from (recorded by `guards worktree add`), else the default branch",
        ),
        Key(
            "land.timeout",
            15 * 60.0,
            parse_duration,
            "how long `guards land` waits for the landings queued before it",
        ),
        Key(
            "sweep.timeout",
            120.0,
            parse_duration,
            "how long `guards doctor --all` and `guards reap --all` give each repository",
        ),
        Key(
            "doctor.stale_after",
            14 * 86400.0,
            parse_duration,
            "dirty paths, rescues and branches untouched this long are reported by doctor",
        ),
    )
}


def user_config_file() -> str:
    """The user's settings file: ``platformdirs.user_config_dir("guards")``/config.toml.

    On Linux it is computed the way platformdirs does it ($XDG_CONFIG_HOME, else
    ~/.config): importing platformdirs (and the tempfile and random it pulls in) would
    cost every command that reads settings several milliseconds.
    """
    if sys.platform.startswith("linux"):
        base = os.environ.get("XDG_CONFIG_HOME", "")
        if not base.strip():
            base = os.path.expanduser("~/.config")
        return os.path.join(base, "guards", CONFIG_FILE)
    from platformdirs import user_config_dir

    return os.path.join(user_config_dir("guards"), CONFIG_FILE)


def user_config_path() -> Path:
    from pathlib import Path

    return Path(user_config_file())


def repo_config_path(ledger_dir: Path) -> Path:
    return ledger_dir / CONFIG_FILE


def _load_toml(path: str | os.PathLike[str]) -> dict[str, Any]:
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        return {}
    except OSError as e:
        raise UnknownStateError(f"cannot read config file {path}: {e.strerror}") from e
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - exercised on 3.10 only
        import tomli as tomllib
    try:
        parsed: dict[str, Any] = tomllib.loads(data.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise UsageError(f"config file {path} is not valid TOML: {e}") from e
    return parsed


def flatten(table: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """``{"rescue": {"remote": "x"}}`` -> ``{"rescue.remote": "x"}``."""
    flat: dict[str, Any] = {}
    for key, value in table.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            flat.update(flatten(value, name + "."))
        else:
            flat[name] = value
    return flat


def unflatten(flat: Mapping[str, Any]) -> dict[str, Any]:
    table: dict[str, Any] = {}
    for name, value in sorted(flat.items()):
        *parents, leaf = name.split(".")
        node = table
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = value
    return table


def key(name: str) -> Key:
    try:
        return KEYS[name]
    except KeyError:
        raise UsageError(f"unknown config key {name!r}; valid keys: {', '.join(KEYS)}") from None


def validate(name: str, value: object, origin: str = "") -> Any:
    """The parsed value; a bad one is a UsageError naming ``origin`` (when given)."""
    k = key(name)
    try:
        return k.parse(value)
    except ValueError as e:
        where = f"{origin}: " if origin else ""
        raise UsageError(f"{where}bad value {value!r} for {name}: expected {e}") from None


def show_size(size: int) -> str:
    """``104857600`` -> ``"100 MiB"`` (exact: a size that is no whole number of a unit
    stays in bytes), readable back by :func:`parse_size`."""
    for unit, factor in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if size >= factor and size % factor == 0:
            return f"{size // factor} {unit}"
    return str(size)


def show_duration(seconds: float) -> str:
    """``1209600`` -> ``"14d"``, ``1800`` -> ``"30m"``: the largest unit that is exact,
    readable back by :func:`parse_duration`."""
    if seconds > 0 and float(seconds).is_integer():
        whole = int(seconds)
        for unit in ("d", "h", "m"):
            if whole % _DURATION_UNITS[unit] == 0:
                return f"{whole // _DURATION_UNITS[unit]}{unit}"
    return f"{seconds:g}s"


def show(name: str, value: Any) -> str:
    """A setting's value for people: sizes in KiB/MiB/GiB, durations with a unit, lists
    comma-separated, booleans true/false."""
    parse = key(name).parse
    if parse is parse_size and isinstance(value, int):
        return show_size(value)
    if parse is parse_duration and isinstance(value, (int, float)):
        return show_duration(float(value))
    return show_raw(value)


def show_raw(value: Any) -> str:
    """A setting's value for scripts: numbers as plain numbers."""
    if isinstance(value, list):
        return ",".join(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def read_file(path: str | os.PathLike[str]) -> dict[str, Any]:
    """A config file's settings, flattened and validated."""
    flat = flatten(_load_toml(path))
    for name, value in flat.items():
        if name not in KEYS:
            raise UsageError(f"{path}: unknown config key {name!r}; valid keys: {', '.join(KEYS)}")
        validate(name, value, str(path))
    return flat


def write_file(path: Path, flat: Mapping[str, Any]) -> None:
    import tomli_w

    from guards.fsutil import PRIVATE, atomic_write

    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    atomic_write(path, tomli_w.dumps(unflatten(flat)).encode("utf-8"), mode=PRIVATE)


class Config:
    """Resolved settings for one repository (or none, outside a repository)."""

    def __init__(
        self, ledger_dir: str | os.PathLike[str] | None, env: Mapping[str, str] | None = None
    ) -> None:
        # The files as text: reading settings never needs pathlib (start-up time).
        self._repo_file = (
            None if ledger_dir is None else os.path.join(os.fspath(ledger_dir), CONFIG_FILE)
        )
        self._env = os.environ if env is None else env
        self._files: dict[str, Any] | None = None

    def _file_values(self) -> dict[str, Any]:
        if self._files is None:
            values = read_file(user_config_file())
            if self._repo_file is not None:
                values.update(read_file(self._repo_file))
            self._files = values
        return self._files

    def origin(self, name: str) -> str:
        k = key(name)
        if k.env in self._env:
            return f"env {k.env}"
        if self._repo_file is not None and name in read_file(self._repo_file):
            return "repo"
        if name in read_file(user_config_file()):
            return "user"
        return "default"

    def get(self, name: str) -> Any:
        k = key(name)
        if k.env in self._env:
            return validate(name, self._env[k.env], f"environment {k.env}")
        values = self._file_values()
        if name in values:
            return k.parse(values[name])
        return k.default

    @property
    def policy(self) -> str:
        return str(self.get("policy"))

    @property
    def quiet(self) -> bool:
        return bool(self.get("quiet"))

    @property
    def progress_delay(self) -> float:
        return float(self.get("progress.delay"))
