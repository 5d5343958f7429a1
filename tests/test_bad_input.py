"""Bad-input suite: every broken state, hostile name or malformed input gets one line.

Each case checks: no traceback; one line on stderr starting with ``guards`` (or git's
own words where git itself answers); a non-zero exit where something was refused; and
nothing lost (the files at risk are still on disk, or in a rescue ref).

Cases that root makes impossible (an unwritable directory, a read-only ``.git``: root
writes anyway) are skipped with that reason when the suite runs as root; an
unwritable ledger directory is also covered by a file standing where it should be.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from guards.state.ledger import CORRUPT_SUFFIX, Ledger
from tests.helpers import git, ledger_doc, make_repo, run_guards

ROOT = os.geteuid() == 0
CALLER = {"GUARDS_SESSION": "bob"}


# -- helpers -----------------------------------------------------------------------------


def lines_of(res: subprocess.CompletedProcess[str]) -> list[str]:
    assert "Traceback" not in res.stderr, res.stderr
    assert "internal error" not in res.stderr, res.stderr
    return [line for line in res.stderr.splitlines() if line.strip()]


def one_line(res: subprocess.CompletedProcess[str], *, refused: bool = True) -> str:
    """Exactly one line on stderr, no traceback; non-zero when something was refused."""
    lines = lines_of(res)
    assert len(lines) == 1, res.stderr
    assert len(lines[0]) < 600, lines[0]
    if refused:
        assert res.returncode != 0, res
    return lines[0]


def run_bytes(args: list[str], cwd: Path, stdin: bytes) -> subprocess.CompletedProcess[str]:
    """The guards CLI with raw bytes on stdin."""
    return run_guards(*args, cwd=cwd, input=stdin)


def guards_lines(res: subprocess.CompletedProcess[str]) -> list[str]:
    """Several lines are fine (one per rescue); each must be guards' own, one-line."""
    lines = lines_of(res)
    assert all(line.startswith("guards") for line in lines), res.stderr
    return lines


def tree_bytes(top: Path) -> dict[str, bytes]:
    """Every file of the work tree (not .git), as bytes (symlinks: their target)."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(top):
        if ".git" in dirnames:
            dirnames.remove(".git")
        for name in filenames + [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]:
            full = os.path.join(dirpath, name)
            rel = os.path.relpath(full, top)
            out[rel] = (
                os.fsencode(os.readlink(full)) if os.path.islink(full) else Path(full).read_bytes()
            )
    return out


def rescued(repo: Path, path: str | bytes) -> set[bytes]:
    """The versions of ``path`` held by rescue refs (their commits' trees)."""
    refs = git(repo, "for-each-ref", "--format=%(refname)", "refs/rescue").split()
    out = set()
    name = os.fsencode(path) if isinstance(path, str) else path
    for ref in refs:
        proc = subprocess.run(
            ["git", "cat-file", "blob", b"%s:%s" % (ref.encode(), name)],
            cwd=repo,
            capture_output=True,
        )
        if proc.returncode == 0:
            out.add(proc.stdout)
    return out


def guarded(
    repo: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return run_guards("run", "--", *args, cwd=repo, env={**CALLER, **(env or {})})


@pytest.fixture
def world(repo: Path) -> Path:
    """``repo`` with alice's recorded edit and an unrecorded new file: work at risk."""
    (repo / "README").write_text("alice's edit\n")
    (repo / "notes.txt").write_text("nobody's notes\n")
    res = run_guards("record", "--session", "alice", "README", cwd=repo)
    assert res.returncode == 0, res.stderr
    return repo


def ledger_file(repo: Path) -> Path:
    return repo / ".git" / "guards" / "ledger.json"


def as_schema_1(repo: Path) -> dict[str, Any]:
    """Turn the ledger into one schema-1 document (as guards wrote before the journal);
    returns the document."""
    doc = ledger_doc(repo)
    doc["schema"] = 1
    for name in os.listdir(ledger_file(repo).parent):
        if name.startswith("ledger."):
            os.unlink(ledger_file(repo).parent / name)
    ledger_file(repo).write_text(json.dumps(doc))
    return doc


# -- the ledger ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "content",
    [
        b"{not json",
        b'{"schema": 1, "sessions": {"alice": {',
        b"[]",
        b'{"schema": 1, "paths": []}',
        b'{"schema": "1"}',
        b"\xff\xfe\x00garbage",
        b"",
        b"[" * 100000 + b"]" * 100000,
    ],
    ids=[
        "garbage",
        "truncated",
        "a-list",
        "wrong-section-type",
        "schema-string",
        "binary",
        "empty",
        "deep-nesting",
    ],
)
def test_a_corrupt_ledger_is_kept_aside_and_reported_in_one_line(
    world: Path, content: bytes
) -> None:
    ledger_file(world).write_bytes(content)
    res = run_guards("status", cwd=world, env=CALLER)
    line = one_line(res)
    assert res.returncode == 4 and "corrupt" in line
    aside = [p for p in ledger_file(world).parent.iterdir() if CORRUPT_SUFFIX in p.name]
    assert len(aside) == 1 and aside[0].read_bytes() == content  # kept, byte for byte


def test_a_truncated_real_ledger_is_kept_aside(world: Path) -> None:
    Ledger(ledger_file(world).parent).compact()  # the record is in the snapshot now
    raw = ledger_file(world).read_bytes()
    ledger_file(world).write_bytes(raw[: len(raw) // 2])
    res = run_guards("record", "--session", "carol", "notes.txt", cwd=world)
    assert res.returncode == 4 and "kept aside" in one_line(res)
    res = run_guards("record", "--session", "carol", "notes.txt", cwd=world)
    assert res.returncode == 0 and lines_of(res) == []  # the next record starts afresh
    aside = [p for p in ledger_file(world).parent.iterdir() if CORRUPT_SUFFIX in p.name]
    assert [p.read_bytes() for p in aside] == [raw[: len(raw) // 2]]


def test_a_newer_schema_ledger_is_kept_aside_intact(world: Path) -> None:
    newer = json.dumps({"schema": 99, "future": {"x": 1}}).encode()
    ledger_file(world).write_bytes(newer)
    res = run_guards("status", cwd=world, env=CALLER)
    line = one_line(res)
    assert res.returncode == 4 and "newer guards" in line and "kept aside" in line
    (aside,) = ledger_file(world).parent.glob("ledger.json.corrupt-*")
    assert aside.read_bytes() == newer


def test_a_corrupt_ledger_makes_every_owner_unknown_and_a_reset_rescues_everything(
    world: Path,
) -> None:
    ledger_file(world).write_bytes(b"{corrupt")
    res = guarded(world, "reset", "--hard")
    lines = guards_lines(res)
    assert res.returncode == 0
    assert any("treating every owner as unknown" in line for line in lines)
    assert rescued(world, "README") == {b"alice's edit\n"}


def test_a_file_where_the_ledger_directory_should_be_refuses_writes_in_one_line(
    world: Path,
) -> None:
    shutil.rmtree(world / ".git" / "guards")
    (world / ".git" / "guards").write_text("not a directory\n")
    res = run_guards("record", "--session", "bob", "notes.txt", cwd=world)
    assert res.returncode == 4 and "ledger" in one_line(res)


def test_an_unusable_ledger_directory_refuses_a_reset_in_one_line(world: Path) -> None:
    """Its settings cannot be read either: guards cannot tell the policy, git does not run."""
    shutil.rmtree(world / ".git" / "guards")
    (world / ".git" / "guards").write_text("not a directory\n")
    before = tree_bytes(world)
    res = guarded(world, "reset", "--hard")
    line = one_line(res)
    assert res.returncode == 4 and "GUARDS_DISABLE=1" in line, line
    assert tree_bytes(world) == before


def test_a_directory_where_the_ledger_file_should_be_is_reported(world: Path) -> None:
    ledger_file(world).unlink(missing_ok=True)
    ledger_file(world).mkdir()
    res = run_guards("status", cwd=world, env=CALLER)
    assert res.returncode == 4 and "ledger" in one_line(res)


def test_a_busy_ledger_lock_times_out_with_one_line(world: Path) -> None:
    """Records need no lock; migrating a schema-1 ledger does."""
    import filelock

    as_schema_1(world)

    with filelock.FileLock(str(world / ".git" / "guards" / "ledger.lock")):
        res = run_guards(
            "record",
            "--session",
            "bob",
            "notes.txt",
            cwd=world,
            env={"GUARDS_LEDGER_LOCK_TIMEOUT": "0.3s"},
        )
    assert res.returncode == 4 and "busy" in one_line(res)


@pytest.mark.skipif(ROOT, reason="root writes into a mode-0500 directory anyway")
def test_an_unwritable_ledger_directory_refuses_writes_in_one_line(world: Path) -> None:
    directory = world / ".git" / "guards"
    directory.chmod(0o500)
    try:
        res = run_guards("record", "--session", "bob", "notes.txt", cwd=world)
        assert res.returncode == 4 and "ledger" in one_line(res)
    finally:
        directory.chmod(0o700)


@pytest.mark.skipif(ROOT, reason="root writes into a read-only .git anyway")
def test_a_read_only_git_dir_refuses_the_rescue_and_git_does_not_run(world: Path) -> None:
    before = tree_bytes(world)
    subprocess.run(["chmod", "-R", "a-w", str(world / ".git")], check=True)
    try:
        res = guarded(world, "reset", "--hard")
        assert res.returncode == 20 and "rescue" in one_line(res)
    finally:
        subprocess.run(["chmod", "-R", "u+w", str(world / ".git")], check=True)
    assert tree_bytes(world) == before


def test_an_object_store_git_cannot_write_to_refuses_the_rescue(world: Path) -> None:
    """What a read-only ``.git`` does, in a way that holds for root too: every loose
    object directory is a plain file, so git cannot store the rescued blobs."""
    objects = world / ".git" / "objects"
    git(world, "repack", "-a", "-d", "-q")
    git(world, "prune-packed")
    for i in range(256):
        d = objects / f"{i:02x}"
        if d.is_dir():
            d.rmdir()
        d.write_text("not a directory\n")
    before = tree_bytes(world)
    res = guarded(world, "reset", "--hard")
    line = one_line(res)
    assert res.returncode == 20 and "GUARDS_POLICY=warn" in line, line
    assert tree_bytes(world) == before


# -- the disk ------------------------------------------------------------------------------


def test_a_full_disk_during_the_snapshot_refuses_and_git_does_not_run(world: Path) -> None:
    """RLIMIT_FSIZE: git cannot write the rescued blob (SIGXFSZ/EFBIG) - a full disk."""
    (world / "big.bin").write_bytes(os.urandom(2 * 1024 * 1024))
    run_guards("record", "--session", "alice", "big.bin", cwd=world)
    before = tree_bytes(world)

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (256 * 1024, 256 * 1024))

    res = subprocess.run(
        [sys.executable, "-m", "guards", "run", "--", "clean", "-fd"],
        cwd=world,
        env={**os.environ, **CALLER},
        capture_output=True,
        text=True,
        preexec_fn=limit,
    )
    line = one_line(res)
    assert res.returncode == 20 and "GUARDS_POLICY=warn" in line, line
    assert tree_bytes(world) == before
    assert git(world, "for-each-ref", "refs/rescue") == ""


# -- git itself ----------------------------------------------------------------------------


def _fake_git(tmp_path: Path, script: str) -> Path:
    bindir = tmp_path / "fakebin"
    bindir.mkdir(exist_ok=True)
    (bindir / "git").write_text("#!/bin/sh\n" + script)
    (bindir / "git").chmod(0o755)
    return bindir


@pytest.mark.parametrize("command", [["status"], ["run", "--", "reset", "--hard"]])
def test_no_git_on_path_is_one_line(world: Path, tmp_path: Path, command: list[str]) -> None:
    before = tree_bytes(world)
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    res = run_guards(*command, cwd=world, env={**CALLER, "PATH": str(empty)})
    line = one_line(res)
    assert res.returncode == 4 and "git not found" in line
    assert tree_bytes(world) == before


@pytest.mark.parametrize("command", [["status"], ["run", "--", "reset", "--hard"]])
def test_a_git_older_than_2_31_is_named_in_one_line(
    world: Path, tmp_path: Path, command: list[str]
) -> None:
    before = tree_bytes(world)
    bindir = _fake_git(
        tmp_path,
        'case "$1" in version|--version) echo "git version 2.20.0"; exit 0;; esac\n'
        'echo "error: unknown option \\`path-format=absolute\'" >&2; exit 129\n',
    )
    res = run_guards(*command, cwd=world, env={**CALLER, "PATH": f"{bindir}:{os.environ['PATH']}"})
    line = one_line(res)
    assert res.returncode == 4 and "git version 2.20.0" in line and ">= 2.31" in line, line
    assert tree_bytes(world) == before


@pytest.mark.parametrize("target", ["missing", "not-executable", "a-shim"])
def test_a_bad_guards_real_git_is_one_line(world: Path, tmp_path: Path, target: str) -> None:
    before = tree_bytes(world)
    path = tmp_path / "real-git"
    if target == "not-executable":
        path.write_text("#!/bin/sh\nexit 0\n")
    elif target == "a-shim":
        path.write_text("#!/bin/sh\n# guards-shim: this is not the real git\nexit 0\n")
        path.chmod(0o755)
    res = guarded(world, "reset", "--hard", env={"GUARDS_REAL_GIT": str(path)})
    line = one_line(res)
    assert res.returncode == 4 and "GUARDS_REAL_GIT" in line
    assert tree_bytes(world) == before


# -- repository shapes ---------------------------------------------------------------------


def test_a_bare_repository_is_one_line(tmp_path: Path, repo: Path) -> None:
    bare = tmp_path / "bare.git"
    git(tmp_path, "clone", "-q", "--bare", str(repo), str(bare))
    res = run_guards("status", cwd=bare, env=CALLER)
    assert res.returncode != 0 and "work tree" in one_line(res)
    res = run_guards("record", "x", cwd=bare, env=CALLER)
    assert res.returncode != 0 and one_line(res)
    res = guarded(bare, "reset", "--hard")
    assert res.returncode != 0 and "work tree" in one_line(res)  # git's own answer


def test_outside_any_repository_is_one_line(tmp_path: Path) -> None:
    nowhere = tmp_path / "nowhere"
    nowhere.mkdir()
    res = run_guards("status", cwd=nowhere, env=CALLER)
    assert res.returncode == 2 and "not a git repository" in one_line(res)
    res = guarded(nowhere, "reset", "--hard")
    assert res.returncode != 0 and "not a git repository" in one_line(res)  # git's own


def test_git_dir_pointing_nowhere_is_one_line(world: Path, tmp_path: Path) -> None:
    before = tree_bytes(world)
    env = {"GIT_DIR": str(tmp_path / "no-such-dir")}
    res = run_guards("status", cwd=world, env={**CALLER, **env})
    assert res.returncode != 0 and one_line(res)
    res = guarded(world, "reset", "--hard", env=env)
    assert res.returncode != 0 and one_line(res)
    assert tree_bytes(world) == before


def test_git_dir_pointing_at_another_repository_rescues_what_git_would_overwrite(
    world: Path, tmp_path: Path
) -> None:
    """GIT_DIR=other/.git with the work tree here: git resets *these* files to the other
    repository's HEAD; everything here that differs is unknown work and rescued there."""
    other = make_repo(tmp_path / "other", {"README": "other readme\n"})
    res = guarded(world, "reset", "--hard", env={"GIT_DIR": str(other / ".git")})
    guards_lines(res)
    assert res.returncode == 0
    assert (world / "README").read_text() == "other readme\n"  # git did as asked
    assert rescued(other, "README") == {b"alice's edit\n"}


# -- names ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    [b"new\nline.txt", b"caf\xe9.txt", b"tab\there.txt", b'quote"back\\slash.txt', b"-rf"],
    ids=["newline", "invalid-utf8", "tab", "quote-backslash", "dash-rf"],
)
def test_hostile_file_names_are_rescued_and_restored_byte_exact(repo: Path, name: bytes) -> None:
    path = os.fsdecode(name)
    (repo / path).write_bytes(b"foreign " + name)
    res = guarded(repo, "clean", "-fd")
    guards_lines(res)
    assert res.returncode == 0
    assert not (repo / path).exists()
    assert rescued(repo, name) == {b"foreign " + name}
    ref = git(repo, "for-each-ref", "--format=%(refname)", "refs/rescue").split()[0]
    res = run_guards("rescue", "restore", ref, cwd=repo, env=CALLER)
    assert res.returncode == 0, res.stderr
    assert (repo / path).read_bytes() == b"foreign " + name


def test_a_symlink_loop_is_rescued_as_a_link(repo: Path) -> None:
    os.symlink("loop", repo / "loop")
    os.symlink("b", repo / "a")
    os.symlink("a", repo / "b")
    res = guarded(repo, "clean", "-fd")
    guards_lines(res)
    assert res.returncode == 0
    assert rescued(repo, "loop") == {b"loop"} and rescued(repo, "a") == {b"b"}
    res = run_guards("status", cwd=repo, env=CALLER)
    assert res.returncode == 0 and lines_of(res) == []


def test_a_directory_symlink_loop_does_not_hang_the_rescue(repo: Path) -> None:
    (repo / "d").mkdir()
    (repo / "d" / "file.txt").write_text("foreign\n")
    os.symlink("..", repo / "d" / "up")
    res = guarded(repo, "clean", "-fd")
    guards_lines(res)
    assert res.returncode == 0
    assert rescued(repo, "d/file.txt") == {b"foreign\n"}
    assert rescued(repo, "d/up") == {b".."}


@pytest.mark.parametrize("how", ["changes", "vanishes"])
def test_a_file_changing_during_the_snapshot_is_never_half_rescued(repo: Path, how: str) -> None:
    """A writer hammers a file while a reset rescues it: the rescue holds a version that
    was really there, or guards refuses in one line and git does not run. (When git runs,
    it may fail on its own: the file keeps reappearing under it.)"""
    target = repo / "src" / "app.py"
    versions = [f"version {i}\n".encode() * 200 for i in range(50)]
    stop = threading.Event()

    def hammer() -> None:
        i = 0
        while not stop.is_set():
            tmp = repo / ".." / "hammer.tmp"
            tmp.write_bytes(versions[i % len(versions)])
            os.replace(tmp, target)
            if how == "vanishes" and i % 2:
                target.unlink(missing_ok=True)  # git may have just removed it
            i += 1

    thread = threading.Thread(target=hammer)
    thread.start()
    try:
        res = guarded(repo, "reset", "--hard")
    finally:
        stop.set()
        thread.join()
    lines = lines_of(res)  # git itself may fail too: the file keeps reappearing under it
    assert res.returncode != 3, lines
    if res.returncode in (4, 20):  # guards refused: one line, git did not run
        # (after the rescues its first look made, each reported in its line: the second
        # look, right before git, found the file changing still and refused)
        *reports, refusal = lines
        assert refusal.startswith("guards:"), lines
        assert not refusal.startswith("guards: rescued "), lines
        assert all(line.startswith("guards: rescued ") for line in reports), lines
    for ref in git(repo, "for-each-ref", "--format=%(refname)", "refs/rescue").split():
        listed = git(repo, "ls-tree", "-r", "--name-only", ref).split()
        blob = subprocess.run(
            ["git", "cat-file", "-p", f"{ref}:src/app.py"], cwd=repo, capture_output=True
        )
        if "src/app.py" in listed:
            assert blob.stdout in versions


@pytest.mark.parametrize(
    ("env", "size"),
    [
        ({"GUARDS_RESCUE_MAX_FILE_SIZE": "1KiB"}, 4096),
        ({"GUARDS_RESCUE_MAX_TOTAL_SIZE": "2KiB"}, 1500),
    ],
    ids=["file-cap", "total-cap"],
)
def test_files_over_the_caps_refuse_in_one_line_naming_the_override(
    world: Path, env: dict[str, str], size: int
) -> None:
    for name in ("big1.bin", "big2.bin"):
        (world / name).write_bytes(b"x" * size)
    before = tree_bytes(world)
    res = guarded(world, "clean", "-fd", env=env)
    line = one_line(res)
    assert res.returncode == 20
    assert next(iter(env)) in line or "GUARDS_POLICY=warn" in line, line
    assert tree_bytes(world) == before
    assert git(world, "for-each-ref", "refs/rescue") == ""


# -- session ids ---------------------------------------------------------------------------

BAD_IDS = {
    "shell": "$(touch pwned); `touch pwned2` | rm -rf x",
    "ref-illegal": "a b~c^d:e?*[f\\g",
    "ten-kb": "s" * 10240,
    "newline": "alice\nbob",
    "leading-dash": "-rf",
    "empty-ish": " ",
}


@pytest.mark.parametrize("which", [k for k in BAD_IDS if k != "empty-ish"])
def test_a_bad_guards_session_refuses_a_guarded_command_in_one_line(
    world: Path, which: str
) -> None:
    before = tree_bytes(world)
    res = guarded(world, "reset", "--hard", env={"GUARDS_SESSION": BAD_IDS[which]})
    line = one_line(res)
    assert res.returncode == 20 and "GUARDS_SESSION" in line
    assert len(line) < 400
    assert tree_bytes(world) == before
    assert not list(world.rglob("pwned*")) and not list(Path.cwd().glob("pwned*"))


@pytest.mark.parametrize("which", list(BAD_IDS))
def test_a_bad_session_id_is_refused_by_record_and_session_start(world: Path, which: str) -> None:
    res = run_guards("record", "--session", BAD_IDS[which], "notes.txt", cwd=world)
    assert res.returncode == 2 and len(one_line(res)) < 400
    res = run_guards("session", "start", "--id", BAD_IDS[which], cwd=world)
    assert res.returncode == 2 and len(one_line(res)) < 400
    assert not list(world.rglob("pwned*"))


def test_session_ids_git_forbids_in_ref_names_still_make_valid_rescue_refs(
    world: Path,
) -> None:
    ids = ["a..b", "x.lock", "c:d@e", "v=1+2", "9.", "u@"]
    for i, sid in enumerate(ids):
        (world / f"f{i}.txt").write_text(f"work of {sid}\n")
        res = run_guards("record", "--session", sid, f"f{i}.txt", cwd=world)
        assert res.returncode == 0, res.stderr
    res = guarded(world, "clean", "-fd")
    guards_lines(res)
    assert res.returncode == 0
    refs = git(world, "for-each-ref", "--format=%(refname)", "refs/rescue").split()
    for ref in refs:
        git(world, "check-ref-format", ref)
    for i, sid in enumerate(ids):
        assert rescued(world, f"f{i}.txt") == {f"work of {sid}\n".encode()}
    owners = {
        json.loads(run_guards("rescue", "show", r, "--json", cwd=world).stdout)["rescue"]["owner"]
        for r in refs
    }
    assert set(ids) <= owners


# -- hook input ----------------------------------------------------------------------------

MALFORMED_EVENTS = {
    "not-json": b"{not json",
    "a-list": b'["PreToolUse", "git reset --hard"]',
    "no-event-name": b'{"tool_name": "Bash", "tool_input": {"command": "git reset --hard"}}',
    "invalid-utf8": b'{"hook_event_name": "PreToolUse", "x": "\xff\xfe git"}',
    "tool-input-not-object": b'{"hook_event_name": "PreToolUse", "tool_name": "Bash", '
    b'"session_id": "s1", "tool_input": 5}',
    "command-a-number": b'{"hook_event_name": "PreToolUse", "tool_name": "Bash", '
    b'"session_id": "s1", "tool_input": {"command": 42, "description": "git reset --hard"}}',
    "empty": b"",
    "deep-nesting": b"[" * 100000 + b"]" * 100000,
}


@pytest.mark.parametrize("which", list(MALFORMED_EVENTS))
def test_malformed_agent_hook_json_is_one_line(world: Path, which: str) -> None:
    before = tree_bytes(world)
    res = run_bytes(["agent-hook", "claude"], world, MALFORMED_EVENTS[which])
    if res.returncode == 0:  # answered on stdout (a decision), nothing on stderr
        assert lines_of(res) == []
    else:
        one_line(res)
    raw = MALFORMED_EVENTS[which]
    if b"git" in raw and (b"PreToolUse" in raw or b"hook_event_name" not in raw):
        # could run git: refused (exit 2 on stderr, or a deny decision on stdout)
        assert res.returncode == 2 or '"deny"' in res.stdout or '"block"' in res.stdout, res
    assert tree_bytes(world) == before


@pytest.mark.parametrize(
    "stdin",
    [
        b"garbage\n",
        b"refs/heads/main zzzz refs/heads/main 0000\n",
        b"refs/heads/main " + b"a" * 40 + b"\n",
        b"\xff\xfe " * 10 + b"\n",
    ],
    ids=["garbage", "non-hex", "three-fields", "binary"],
)
def test_malformed_push_breaker_input_is_one_line(world: Path, stdin: bytes) -> None:
    res = run_bytes(["hook", "push-breaker", "origin", "url"], world, stdin)
    line = one_line(res)
    assert res.returncode == 2 and "pre-push input" in line


# -- settings ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "env",
    [
        {"GUARDS_POLICY": "nonsense"},
        {"GUARDS_RESCUE_MAX_FILE_SIZE": "lots"},
        {"GUARDS_LEDGER_LOCK_TIMEOUT": "-5x"},
    ],
    ids=["policy", "size", "duration"],
)
def test_a_bad_setting_refuses_a_guarded_command_in_one_line(
    world: Path, env: dict[str, str]
) -> None:
    before = tree_bytes(world)
    res = guarded(world, "reset", "--hard", env=env)
    line = one_line(res)
    assert res.returncode == 20 and next(iter(env)) in line, line
    assert tree_bytes(world) == before


def test_a_corrupt_repository_config_file_is_one_line(world: Path) -> None:
    before = tree_bytes(world)
    (world / ".git" / "guards" / "config.toml").write_text("policy = [unclosed\n")
    res = guarded(world, "reset", "--hard")
    assert res.returncode == 20 and "config" in one_line(res)
    res = run_guards("config", "list", cwd=world)
    assert res.returncode != 0 and one_line(res)
    assert tree_bytes(world) == before


def test_a_path_outside_the_repository_is_one_line(world: Path, tmp_path: Path) -> None:
    res = run_guards("record", "--session", "bob", str(tmp_path), cwd=world)
    assert res.returncode == 2 and "outside" in one_line(res)


def test_restoring_a_ref_that_does_not_exist_is_one_line(world: Path) -> None:
    res = run_guards("rescue", "restore", "refs/rescue/nobody/nothing", cwd=world)
    assert res.returncode != 0 and one_line(res)
    res = run_guards("rescue", "show", "HEAD", cwd=world)
    assert res.returncode != 0 and one_line(res)


def test_a_hostile_ledger_record_is_treated_as_unknown(world: Path) -> None:
    doc = as_schema_1(world)
    key = next(iter(doc["paths"]))
    doc["paths"][key]["README"] = {"session": ["x"], "fingerprint": "nope", "time": "soon"}
    doc["paths"][key]["../../etc/passwd"] = {"session": "alice"}
    doc["sessions"]["alice"] = {"pid": "not a pid", "ended": "maybe"}
    ledger_file(world).write_text(json.dumps(doc))
    res = run_guards("status", "--json", cwd=world, env=CALLER)
    lines_of(res)
    assert res.returncode in (0, 4)
    res = guarded(world, "reset", "--hard")
    guards_lines(res)
    assert res.returncode == 0
    assert rescued(world, "README") == {b"alice's edit\n"}
    assert time.time() > 0
