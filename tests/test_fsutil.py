"""One atomic write and one file lock (guards.fsutil), and every writer of guards' files
going through them: exact permission bits, the file and its directory flushed, nothing
left behind when a write fails, one line naming the lock file and its setting.

Tests run as root, for whom permission bits stop nothing: a write is made to fail by a
target that is a directory (a file cannot be renamed over one) or whose parent is a file.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from guards import fsutil
from guards.errors import ExitCode, UnknownStateError


@contextlib.contextmanager
def umask(mask: int) -> Iterator[None]:
    old = os.umask(mask)
    try:
        yield
    finally:
        os.umask(old)


@contextlib.contextmanager
def held(lock_file: Path) -> Iterator[None]:
    """The lock held as another guards would hold it (an OS lock on its own descriptor)."""
    lock_file.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(lock_file, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def mode_of(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def leftovers(directory: Path) -> list[str]:
    """Temporary files: ``.<name>.guards-tmp-*`` now, ``.<name>.tmp-<pid>`` before."""
    return sorted(p.name for p in directory.iterdir() if "tmp-" in p.name)


def a_directory_at(path: Path) -> None:
    """Make ``path`` a non-empty directory: renaming a file over it fails, also for root."""
    path.mkdir(parents=True)
    (path / "keep").write_text("kept\n")


@pytest.fixture
def fsyncs(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """What each ``os.fsync`` flushed, in order: "file" or "dir"."""
    calls: list[str] = []
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        calls.append("dir" if stat.S_ISDIR(os.fstat(fd).st_mode) else "file")
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    return calls


# -- atomic_write ---------------------------------------------------------------------------


@pytest.mark.parametrize("mask", [0o000, 0o022, 0o277])
@pytest.mark.parametrize("mode", [fsutil.PRIVATE, fsutil.EXECUTABLE])
def test_atomic_write_gives_the_exact_mode_whatever_the_umask(
    tmp_path: Path, mask: int, mode: int
) -> None:
    target = tmp_path / "file"
    target.write_text("old\n")
    target.chmod(0o644)
    with umask(mask):
        fsutil.atomic_write(target, b"new\n", mode=mode)
    assert target.read_bytes() == b"new\n"
    assert mode_of(target) == mode
    assert leftovers(tmp_path) == []


def test_keep_mode_keeps_a_files_bits_and_gives_a_new_file_what_open_gives(
    tmp_path: Path,
) -> None:
    mine = tmp_path / "mine"
    mine.write_text("old\n")
    mine.chmod(0o640)
    fresh = tmp_path / "fresh"
    with umask(0o027):
        fsutil.atomic_write(mine, b"new\n", mode=fsutil.KEEP_MODE)
        fsutil.atomic_write(fresh, b"new\n", mode=fsutil.KEEP_MODE)
    assert (mode_of(mine), mode_of(fresh)) == (0o640, 0o640)
    assert mine.read_bytes() == fresh.read_bytes() == b"new\n"


def test_a_write_flushes_the_file_then_its_directory(tmp_path: Path, fsyncs: list[str]) -> None:
    fsutil.atomic_write(tmp_path / "file", b"data")
    assert fsyncs == ["file", "dir"]


def test_a_write_that_need_not_last_flushes_nothing_and_leaves_no_temporary_file(
    tmp_path: Path, fsyncs: list[str]
) -> None:
    fsutil.atomic_write(tmp_path / "file", b"data", durable=False)
    assert fsyncs == [] and (tmp_path / "file").read_bytes() == b"data"
    assert leftovers(tmp_path) == []


def test_the_barrier_announces_through_the_one_atomic_write_unflushed(
    tmp_path: Path, fsyncs: list[str]
) -> None:
    # (it had a write of its own: a fixed temporary name, truncated in place)
    from guards.state import barrier

    ledger = tmp_path / "guards"
    path = barrier.announce_write(str(ledger), str(tmp_path), "claude-s", "t1")
    assert path is not None and oct(mode_of(Path(path))) == oct(fsutil.PRIVATE)
    assert barrier.pending_writes(str(ledger), str(tmp_path)) == ["claude-s"]
    assert fsyncs == [] and leftovers(ledger / barrier.BARRIER_DIR) == []


def test_a_failed_rename_leaves_the_target_and_no_temporary_file(tmp_path: Path) -> None:
    target = tmp_path / "file"
    a_directory_at(target)
    with pytest.raises(OSError) as e:
        fsutil.atomic_write(target, b"new\n")
    assert e.value.filename == str(target)  # not the temporary name
    assert (target / "keep").read_text() == "kept\n"
    assert leftovers(tmp_path) == []


def test_a_target_whose_parent_is_a_file_fails_and_writes_nothing(tmp_path: Path) -> None:
    (tmp_path / "parent").write_text("a file\n")
    with pytest.raises(NotADirectoryError) as e:
        fsutil.atomic_write(tmp_path / "parent" / "file", b"new\n")
    assert e.value.filename == str(tmp_path / "parent" / "file")
    assert (tmp_path / "parent").read_text() == "a file\n"
    assert leftovers(tmp_path) == []


def test_an_interrupted_write_removes_its_temporary_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "file"
    target.write_text("old\n")

    def interrupted(fd: int) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "fsync", interrupted)
    with pytest.raises(KeyboardInterrupt):
        fsutil.atomic_write(target, b"new\n")
    assert target.read_text() == "old\n"
    assert leftovers(tmp_path) == []


# -- locked ---------------------------------------------------------------------------------


def ledger_lock(path: Path, timeout: float) -> fsutil.locked:
    return fsutil.locked(
        path, timeout, what="the ledger", holder="writing", setting="ledger.lock_timeout"
    )


def test_locked_creates_a_private_lock_file_and_releases_it(tmp_path: Path) -> None:
    lock_file = tmp_path / "x.lock"
    with umask(0o000), ledger_lock(lock_file, 1):
        assert mode_of(lock_file) == 0o600
        fd = os.open(lock_file, os.O_RDONLY)
        try:
            with pytest.raises(BlockingIOError):
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        finally:
            os.close(fd)
    with held(lock_file):
        pass  # free again: this would wait forever otherwise


def test_a_busy_lock_is_one_line_naming_the_file_and_the_setting(tmp_path: Path) -> None:
    lock_file = tmp_path / "x.lock"
    with held(lock_file), pytest.raises(fsutil.LockTimeoutError) as e, ledger_lock(lock_file, 0.2):
        pytest.fail("got a lock someone else holds")
    assert str(e.value) == (
        f"the ledger lock {lock_file} stayed busy for 0.2s; another guards is writing "
        f"(raise ledger.lock_timeout to wait longer)"
    )
    assert e.value.exit_code == ExitCode.UNKNOWN_STATE


def test_a_lock_file_that_cannot_be_made_is_one_line_naming_it(tmp_path: Path) -> None:
    (tmp_path / "parent").write_text("a file\n")
    lock_file = tmp_path / "parent" / "x.lock"
    with pytest.raises(UnknownStateError) as e, ledger_lock(lock_file, 0.2):
        pytest.fail("locked a file in a file")
    assert str(e.value).startswith(f"cannot take the ledger lock {lock_file}: ")
    assert "\n" not in str(e.value) and e.value.exit_code == ExitCode.UNKNOWN_STATE


# -- the ledger -----------------------------------------------------------------------------


def test_the_ledger_is_0600_even_under_a_umask_that_would_narrow_it(tmp_path: Path) -> None:
    from guards.state.ledger import Ledger

    ledger = Ledger(tmp_path / "guards")
    with umask(0o277), ledger.transaction() as data:  # it used to come out 0400
        data.sessions["s"] = {}
    assert mode_of(ledger.path) == 0o600
    assert leftovers(ledger.directory) == []


def test_a_busy_ledger_names_its_lock_file_and_setting(tmp_path: Path) -> None:
    from guards.state.ledger import Ledger

    ledger = Ledger(tmp_path / "guards", lock_timeout=0.2)
    with held(ledger.lock_path), pytest.raises(fsutil.LockTimeoutError) as e, ledger.transaction():
        pytest.fail("wrote the ledger under someone else's lock")
    assert str(e.value) == (
        f"the ledger lock {ledger.lock_path} stayed busy for 0.2s; another guards is writing "
        f"(raise ledger.lock_timeout to wait longer)"
    )


# -- worktrees: the registry lock and the exclude block ---------------------------------------


def test_a_busy_worktree_lock_names_its_file_and_setting(repo: Path) -> None:
    from guards.git.repo import discover
    from guards.protect.worktrees import LOCK_FILE, serialize

    lock_file = discover(repo).ledger_dir / LOCK_FILE
    with (
        held(lock_file),
        pytest.raises(fsutil.LockTimeoutError) as e,
        serialize(discover(repo), 0.2),
    ):
        pytest.fail("created a worktree under someone else's lock")
    # It said "another guards is creating or reaping worktrees (<file> busy for 0.2s);
    # try again, or raise worktree.lock_timeout": now worded as the ledger's.
    assert str(e.value) == (
        f"the worktrees lock {lock_file} stayed busy for 0.2s; another guards is creating or "
        f"reaping worktrees (raise worktree.lock_timeout to wait longer)"
    )
    assert e.value.exit_code == ExitCode.UNKNOWN_STATE


def test_the_exclude_block_keeps_the_exclude_files_mode(repo: Path) -> None:
    from guards.protect.worktrees import EXCLUDE_BEGIN, record_excludes

    exclude = repo / ".git" / "info" / "exclude"
    exclude.parent.mkdir(exist_ok=True)
    exclude.write_text("# the user's own\n")
    exclude.chmod(0o640)  # it used to come out 0666 less the umask
    assert record_excludes(repo, ["node_modules"]) == exclude
    assert mode_of(exclude) == 0o640
    assert exclude.read_text().startswith(f"# the user's own\n{EXCLUDE_BEGIN}\n/node_modules\n")
    assert leftovers(exclude.parent) == []


def test_a_new_exclude_file_gets_what_git_would_give_it(repo: Path) -> None:
    from guards.protect.worktrees import record_excludes

    with umask(0o027):
        exclude = record_excludes(repo, ["node_modules"])
    assert exclude is not None and mode_of(exclude) == 0o640


# -- settings -------------------------------------------------------------------------------


def test_a_settings_file_is_0600_flushed_and_a_failed_write_leaves_nothing(
    tmp_path: Path, fsyncs: list[str]
) -> None:
    from guards import config

    path = tmp_path / "config.toml"
    with umask(0o000):
        config.write_file(path, {"policy": "block"})
    assert config.read_file(path) == {"policy": "block"}
    assert mode_of(path) == 0o600
    assert fsyncs == ["file", "dir"]  # it flushed the file only
    path.unlink()
    a_directory_at(path)
    with pytest.raises(OSError):
        config.write_file(path, {"policy": "block"})
    assert leftovers(tmp_path) == []  # it left its temporary file behind


# -- install: manifests, the shim, native hooks ----------------------------------------------


def test_an_install_manifest_is_0600_flushed_and_a_failed_write_leaves_nothing(
    tmp_path: Path, fsyncs: list[str]
) -> None:
    from guards.integrations.installation import read_manifest, write_manifest

    path = tmp_path / "installed.json"
    with umask(0o000):
        write_manifest(path, {"shims": []})
    assert read_manifest(path) == {"shims": []}
    assert mode_of(path) == 0o600
    assert fsyncs == ["file", "dir"]  # it flushed nothing
    path.unlink()
    a_directory_at(path)
    with pytest.raises(OSError):
        write_manifest(path, {"shims": []})
    assert leftovers(tmp_path) == []  # it left its temporary file behind


def test_the_shim_is_0755_whatever_the_umask(tmp_path: Path) -> None:
    from guards.git import process as git
    from guards.integrations.installation import plan_shim

    bindir = tmp_path / "bin"
    with umask(0o077):  # it came out 0711: its bits were the umask's plus x for all
        for step in plan_shim(bindir, tmp_path / "installed.json"):
            step.apply()
    assert git.is_shim(bindir / "git")
    assert mode_of(bindir / "git") == 0o755  # as the native hooks are
    assert leftovers(bindir) == []


def test_a_failed_shim_write_leaves_nothing_behind(tmp_path: Path) -> None:
    from guards.integrations.installation import plan_shim

    bindir = tmp_path / "bin"
    (step,) = plan_shim(bindir, tmp_path / "installed.json")
    a_directory_at(bindir / "git")  # made between the plan and its step
    with pytest.raises(OSError):
        step.apply()
    assert leftovers(bindir) == []  # it left .git.guards-tmp-<pid> behind
    assert not (tmp_path / "installed.json").exists()


def test_native_hooks_are_0755_their_manifest_0600_each_flushed(
    repo: Path, fsyncs: list[str]
) -> None:
    from guards.git.repo import discover
    from guards.integrations.native_hooks import HOOK_TYPES, MANIFEST_FILE, install_native_hooks

    r = discover(repo)
    with umask(0o077):
        install_native_hooks(r)
    hooks = r.hooks_dir()
    assert {mode_of(hooks / h) for h in HOOK_TYPES} == {0o755}
    assert mode_of(r.ledger_dir / MANIFEST_FILE) == 0o600
    assert leftovers(hooks) == leftovers(r.ledger_dir) == []
    # Manifest, hook, manifest, hook, ...: each file, then its directory (it was never).
    assert fsyncs == ["file", "dir"] * (2 * len(HOOK_TYPES))


# -- harness settings (the user's files) ------------------------------------------------------


def test_harness_settings_keep_their_mode_and_are_flushed(
    tmp_path: Path, fsyncs: list[str]
) -> None:
    from guards.integrations.harness_settings import read_settings, write_settings

    mine = tmp_path / ".claude" / "settings.json"
    mine.parent.mkdir()
    mine.write_text('{"model": "opus"}\n')
    mine.chmod(0o640)
    fresh = tmp_path / ".codex" / "hooks.json"
    with umask(0o027):
        write_settings(mine, {"model": "opus", "hooks": {}})
        write_settings(fresh, {"hooks": {}})
    assert read_settings(mine) == {"model": "opus", "hooks": {}}
    assert (mode_of(mine), mode_of(fresh)) == (0o640, 0o640)
    assert fsyncs == ["file", "dir"] * 2  # they were not flushed


def test_a_failed_harness_settings_write_leaves_nothing_behind(tmp_path: Path) -> None:
    from guards.integrations.harness_settings import write_settings

    path = tmp_path / "settings.json"
    a_directory_at(path)
    with pytest.raises(OSError):
        write_settings(path, {"hooks": {}})
    assert leftovers(tmp_path) == []  # it left .settings.json.guards-tmp-<pid> behind
