"""Security suite: no injection, owner-only files, committed files run nothing, no leaks.

- File names, branch names, session ids, messages and shim arguments are fuzzed with
  hypothesis (alphabets holding ``$(touch pwned)``, ``;``, backticks, ``-rf``, quotes,
  newlines and bytes that are not UTF-8): names round-trip byte-exact through
  ``record``/``status --json`` and through a rescue and a restore, arguments reach git
  byte-exact through the shim and ``guards run``, and no marker file is ever created.
- The ledger, its lock, its directory and the settings files are owner-only even under
  ``umask 000``.
- Nothing committed in a repository (``.guards.toml``, ``.worktreeinclude`` escaping the
  repository, ``.pre-commit-config.yaml``, ``.gitmodules`` with ``update = !cmd``,
  ``.gitattributes`` filters) makes guards run a command, read settings or copy files
  from outside; rescues run no hooks.
- Rescue and checkpoint pushes to a remote never carry ignored or secret-pattern files:
  every blob the remote holds is read back.

Examples run 8 per property in CI, 60 with ``pytest -m slow``.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.guarded import install_shim
from tests.helpers import git, make_repo, run_guards

#: what ``touch pwned`` (and the hooks below) would create: names are matched exactly,
#: since the file names under test spell the command themselves
MARKERS = ("pwned", "pwned2")
HOSTILE_WORDS = [
    "$(touch pwned)",
    "`touch pwned`",
    ";touch pwned;",
    "|touch pwned",
    "&& touch pwned",
    "-rf",
    "--exec=touch pwned",
    "'",
    '"',
    "\\",
    "\n",
    "\t",
    " ",
    "*",
    "?",
    "[a]",
    "~",
    "${IFS}",
    "%s",
    "\udcff",  # the byte 0xff (not UTF-8), as surrogateescape spells it
    "\udce9",
    "é",
    "..",
    "@{0}",
    ":",
    "^",
    "-",
]
FAST = settings(
    max_examples=8,
    deadline=None,
    database=None,  # nothing written into the checkout; failures print a reproduce blob
    print_blob=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
SLOW = settings(FAST, max_examples=60)


def hostile_text(min_size: int = 1, max_size: int = 4) -> st.SearchStrategy[str]:
    """Concatenations of hostile words and plain characters."""
    piece = st.one_of(
        st.sampled_from(HOSTILE_WORDS),
        st.text(alphabet="abcXYZ019._-", min_size=1, max_size=3),
    )
    return st.lists(piece, min_size=min_size, max_size=max_size).map("".join)


def file_names() -> st.SearchStrategy[str]:
    def ok(name: str) -> bool:
        parts = name.split("/")
        return (
            all(p not in ("", ".", "..", ".git") for p in parts)
            and len(os.fsencode(name)) < 200
            and "\0" not in name
        )

    return hostile_text().filter(lambda s: "/" not in s).filter(ok)


def no_markers(*roots: Path) -> None:
    for root in roots:
        found = [p for p in root.rglob("*") if p.name in MARKERS or p.name.startswith("PWNED-")]
        assert not found, f"a command ran: {found}"


@pytest.fixture
def sandbox(tmp_path: Path) -> Iterator[Path]:
    """A working directory for the whole test, so that a marker would land here."""
    cwd = Path.cwd()
    os.chdir(tmp_path)
    try:
        yield tmp_path
    finally:
        os.chdir(cwd)
        no_markers(tmp_path)


def fresh_repo(base: Path, name: str) -> Path:
    target = base / name
    if target.exists():
        shutil.rmtree(target)
    return make_repo(target, {"README": "hello\n"})


# -- names ---------------------------------------------------------------------------------


def _record_and_list(tmp: Path, name: str, session: str) -> None:
    repo = fresh_repo(tmp, "names")
    data = b"content of " + os.fsencode(name)
    (repo / name).write_bytes(data)
    res = run_guards("record", "--session", session, "--", name, cwd=repo)
    assert res.returncode == 0, res.stderr
    res = run_guards("status", "--json", cwd=repo, env={"GUARDS_SESSION": session})
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    [entry] = [p for p in doc["paths"] if p["path"] == name]
    assert entry["owner"] == session and entry["class"] == "mine"
    assert os.fsencode(entry["path"]) == os.fsencode(name)
    no_markers(tmp)


def _rescue_and_restore(tmp: Path, name: str, session: str) -> None:
    repo = fresh_repo(tmp, "rescue")
    data = b"foreign " + os.fsencode(name)
    (repo / name).write_bytes(data)
    res = run_guards("record", "--session", session, "--", name, cwd=repo)
    assert res.returncode == 0, res.stderr
    res = run_guards("run", "--", "clean", "-fd", cwd=repo, env={"GUARDS_SESSION": "other"})
    assert res.returncode == 0, res.stderr
    assert not (repo / name).exists()
    [ref] = git(repo, "for-each-ref", "--format=%(refname)", "refs/rescue").split()
    git(repo, "check-ref-format", ref)
    shown = json.loads(run_guards("rescue", "show", ref, "--json", cwd=repo).stdout)["rescue"]
    assert shown["owner"] == session and [os.fsencode(p) for p in shown["paths"]] == [
        os.fsencode(name)
    ]
    res = run_guards("rescue", "restore", ref, cwd=repo, env={"GUARDS_SESSION": "other"})
    assert res.returncode == 0, res.stderr
    assert (repo / name).read_bytes() == data
    no_markers(tmp)


SESSION_IDS = st.text(alphabet="abcXYZ019._:@+=-", min_size=1, max_size=30).filter(
    lambda s: s[0].isalnum()
)


@FAST
@given(name=file_names(), session=SESSION_IDS)
def test_hostile_file_names_round_trip_through_record_and_status_json(
    sandbox: Path, name: str, session: str
) -> None:
    _record_and_list(sandbox, name, session)


@FAST
@given(name=file_names(), session=SESSION_IDS)
def test_hostile_file_names_round_trip_through_a_rescue_and_a_restore(
    sandbox: Path, name: str, session: str
) -> None:
    _rescue_and_restore(sandbox, name, session)


@pytest.mark.slow
@SLOW
@given(name=file_names(), session=SESSION_IDS)
def test_hostile_names_round_trip_slow(sandbox: Path, name: str, session: str) -> None:
    _record_and_list(sandbox, name, session)
    _rescue_and_restore(sandbox, name, session)


# -- arguments through the shim and guards run -----------------------------------------------

#: a git alias that prints its arguments, NUL-terminated, exactly as it got them
ECHO = ["-c", 'alias.echo=!printf "%s\\0"']


def _echo(tmp: Path, way: str, args: list[str]) -> bytes:
    repo = tmp / "echo"
    if not repo.exists():
        make_repo(repo, {"README": "hello\n"})
        (repo / "dirty.txt").write_text("foreign work: the guard really looks\n")
    shim = install_shim(tmp / "shim")
    env = {**os.environ, "GUARDS_SESSION": "bob", "GUARDS_QUIET": "1"}
    if way == "shim":
        env["PATH"] = f"{shim}{os.pathsep}{env['PATH']}"
        argv = ["git", *ECHO, "echo", *args]
    else:
        argv = [sys.executable, "-m", "guards", "run", "--", *ECHO, "echo", *args]
    proc = subprocess.run(
        [os.fsencode(a) for a in argv], cwd=repo, env=env, capture_output=True, check=False
    )
    assert proc.returncode == 0, proc.stderr
    assert b"Traceback" not in proc.stderr
    return proc.stdout


ARGS = st.lists(hostile_text(min_size=0).filter(lambda s: "\0" not in s), max_size=5)


def _args_pass_through(tmp: Path, args: list[str]) -> None:
    # (printf applies its format once even without arguments)
    expected = b"".join(os.fsencode(a) + b"\0" for a in args) or b"\0"
    for way in ("shim", "guards-run"):
        assert _echo(tmp, way, args) == expected, way
    no_markers(tmp)


@FAST
@given(args=ARGS)
def test_shim_and_guards_run_pass_arguments_to_git_byte_exact(
    sandbox: Path, args: list[str]
) -> None:
    _args_pass_through(sandbox, args)


@pytest.mark.slow
@SLOW
@given(args=ARGS)
def test_shim_and_guards_run_pass_arguments_byte_exact_slow(sandbox: Path, args: list[str]) -> None:
    _args_pass_through(sandbox, args)


BRANCHES = hostile_text().filter(
    lambda s: (
        subprocess.run(
            ["git", "check-ref-format", "--branch", s.encode("utf-8", "surrogateescape")],
            capture_output=True,
        ).returncode
        == 0
        and not s.startswith("-")
    )
)


@FAST
@given(branch=BRANCHES, message=hostile_text())
def test_hostile_branch_names_and_messages_are_data_only(
    sandbox: Path, branch: str, message: str
) -> None:
    repo = fresh_repo(sandbox, "branches")
    shim = install_shim(sandbox / "shim")
    b = os.fsencode(branch)
    git(repo, "branch", "--", branch)
    subprocess.run([b"git", b"switch", b"-q", b], cwd=repo, check=True)
    (repo / "f.txt").write_text("unmerged work\n")
    git(repo, "add", "f.txt")
    subprocess.run(
        [b"git", b"commit", b"-q", b"-m", b"msg " + os.fsencode(message)], cwd=repo, check=True
    )
    tip = git(repo, "rev-parse", "HEAD").strip()
    git(repo, "switch", "-q", "main")
    env = {**os.environ, "PATH": f"{shim}{os.pathsep}{os.environ['PATH']}"}
    proc = subprocess.run([b"git", b"branch", b"-D", b], cwd=repo, env=env, capture_output=True)
    assert proc.returncode == 0, proc.stderr
    assert b"Traceback" not in proc.stderr
    kept = git(repo, "for-each-ref", "--format=%(objectname) %(refname)", "refs/rescue")
    assert tip in kept, kept  # the commits the deletion dropped were kept
    for line in kept.splitlines():
        git(repo, "check-ref-format", line.split(" ", 1)[1])
    (repo / "g.txt").write_text("mine\n")
    # --message=: argparse (unlike git) reads a separate "-x" as an option, not a value
    res = run_guards("checkpoint", f"--message={message}", cwd=repo, env={"GUARDS_SESSION": "bob"})
    assert res.returncode == 0, res.stderr
    no_markers(sandbox)


# -- modes ---------------------------------------------------------------------------------


def _umask_zero() -> None:
    os.umask(0)


def test_ledger_and_settings_files_are_owner_only_even_under_umask_000(
    repo: Path, hermetic_seal: Path
) -> None:
    def guards(*args: str) -> None:
        proc = subprocess.run(
            [sys.executable, "-m", "guards", *args],
            cwd=repo,
            # Fold every record into the snapshot: both ledger files get written.
            env={**os.environ, "GUARDS_SESSION": "bob", "GUARDS_LEDGER_COMPACT_BYTES": "1"},
            capture_output=True,
            text=True,
            preexec_fn=_umask_zero,
        )
        assert proc.returncode == 0, proc.stderr

    (repo / "README").write_text("edit\n")
    guards("record", "README")
    guards("config", "set", "--repo", "policy", "rescue")
    guards("config", "set", "--user", "quiet", "false")
    guards("run", "--", "stash", "list")
    (repo / "other.txt").write_text("foreign\n")
    subprocess.run(
        [sys.executable, "-m", "guards", "run", "--", "clean", "-fd"],
        cwd=repo,
        check=True,
        capture_output=True,
        preexec_fn=_umask_zero,
    )
    ledger_dir = repo / ".git" / "guards"
    user_config = hermetic_seal / ".xdg-config" / "guards" / "config.toml"
    checked = [ledger_dir, *ledger_dir.iterdir(), user_config]
    assert ledger_dir / "ledger.json" in checked and ledger_dir / "config.toml" in checked
    for path in checked:
        mode = stat.S_IMODE(path.stat().st_mode)
        assert mode & 0o022 == 0, f"{path} is writable by others: {oct(mode)}"
    for name in ("ledger.json", "ledger.journal", "config.toml"):
        mode = stat.S_IMODE((ledger_dir / name).stat().st_mode)
        assert mode & 0o077 == 0, f"{name} is readable by others: {oct(mode)}"


# -- committed files -------------------------------------------------------------------------


def test_nothing_committed_in_a_repository_makes_guards_run_a_command(
    sandbox: Path,
) -> None:
    outside = sandbox / "outside-secret.txt"
    outside.write_text("must never be copied\n")
    hostile = {
        ".guards.toml": 'policy = "warn"\n[rescue]\nremote = "../pwned-remote"\n',
        "guards.toml": 'policy = "warn"\n',
        ".guards/config.toml": 'policy = "warn"\n',
        ".worktreeinclude": "../outside-secret.txt\n../../*\n/etc/passwd\n../*\n*\n",
        ".pre-commit-config.yaml": (
            "repos:\n- repo: local\n  hooks:\n  - id: x\n    name: x\n"
            "    entry: touch pwned\n    language: system\n"
        ),
        ".gitmodules": '[submodule "s"]\n\tpath = s\n\turl = ./s\n\tupdate = !touch pwned\n',
        ".gitattributes": "* filter=evil diff=evil merge=evil\n",
        ".claude/settings.json": json.dumps(
            {"hooks": {"PreToolUse": [{"hooks": [{"type": "command", "command": "touch pwned"}]}]}}
        ),
        "README": "hello\n",
    }
    repo = make_repo(sandbox / "repo", hostile)
    (repo / ".gitignore").write_text("build/\n")
    (repo / "build").mkdir()
    (repo / "build" / "artifact.o").write_text("ignored artifact\n")
    (repo / "README").write_text("alice's edit\n")
    (repo / "new.txt").write_text("nobody's\n")
    run_guards("record", "--session", "alice", "README", cwd=repo)
    env = {"GUARDS_SESSION": "bob"}
    for args in (
        ["status", "--json"],
        ["frame"],
        ["doctor"],
        ["run", "--", "stash", "-u"],
        ["run", "--", "stash", "pop"],
        ["run", "--", "reset", "--hard"],
        ["rescue", "list"],
        ["checkpoint"],
        ["worktree", "add", "../wt", "-b", "wt-branch"],
        ["hook", "ledger-sync"],
    ):
        res = run_guards(*args, cwd=repo, env=env)
        assert "Traceback" not in res.stderr, res.stderr
        assert res.returncode in (0, 1), (args, res.stderr)
    # the committed "policy = warn" was not read: alice's edit was rescued
    rescued = git(repo, "for-each-ref", "--format=%(refname)", "refs/rescue/alice")
    assert rescued.strip(), "a committed .guards.toml changed the policy"
    assert not (sandbox / "pwned-remote").exists()
    # .worktreeinclude copied only what the repository ignores, never anything outside
    wt = sandbox / "wt"
    assert (wt / "build").exists()
    copied = {p.relative_to(wt).as_posix() for p in wt.rglob("*") if ".git" not in p.parts}
    assert not any("outside-secret" in c or "passwd" in c for c in copied), copied
    assert sorted(p.name for p in sandbox.iterdir()) == sorted(["outside-secret.txt", "repo", "wt"])
    assert outside.read_text() == "must never be copied\n"
    no_markers(sandbox)


def test_rescues_run_no_hooks_even_when_the_repository_has_them(repo: Path) -> None:
    hooks = repo / ".git" / "hooks"
    hooks.mkdir(exist_ok=True)
    for name in ("reference-transaction", "post-commit", "pre-commit", "post-checkout"):
        (hooks / name).write_text(f"#!/bin/sh\ntouch '{repo.parent}/PWNED-{name}'\n")
        (hooks / name).chmod(0o755)
    (repo / "README").write_text("foreign\n")
    res = run_guards("run", "--", "reset", "--hard", cwd=repo, env={"GUARDS_SESSION": "bob"})
    assert res.returncode == 0, res.stderr
    assert git(repo, "for-each-ref", "refs/rescue").strip()
    # git's own reset runs reference-transaction itself (HEAD's reflog): only our
    # rescue-ref transactions matter, so look for the marker before git ran
    res = run_guards("checkpoint", cwd=repo, env={"GUARDS_SESSION": "bob"})
    made = sorted(p.name for p in repo.parent.glob("PWNED-*"))
    assert "PWNED-post-commit" not in made and "PWNED-pre-commit" not in made, made


# -- pushes ----------------------------------------------------------------------------------

SECRETS = {
    ".env": b"API_KEY=hunter2-env\n",
    ".env.local": b"TOKEN=hunter2-env-local\n",
    "deploy/key.pem": b"-----BEGIN PRIVATE KEY----- hunter2-pem\n",
    "ssh/id_rsa": b"hunter2-id-rsa\n",
    "ssh/id_rsa.pub": b"hunter2-id-rsa-pub\n",
    "server.key": b"hunter2-key\n",
    "build/secret.log": b"hunter2-ignored\n",
    "custom.secret": b"hunter2-custom-pattern\n",
}
PLAIN = {"notes.txt": b"plain foreign work\n", "src/new.py": b"print('new')\n"}


def remote_blobs(remote: Path) -> set[bytes]:
    listing = git(remote, "rev-list", "--objects", "--all")
    oids = [line.split()[0] for line in listing.splitlines() if line.strip()]
    out = subprocess.run(
        ["git", "cat-file", "--batch"],
        cwd=remote,
        input="\n".join(oids).encode() + b"\n",
        capture_output=True,
        check=True,
    ).stdout
    blobs = set()
    i = 0
    while i < len(out):
        nl = out.index(b"\n", i)
        _oid, kind, size = out[i:nl].split()
        n = int(size)
        if kind == b"blob":
            blobs.add(out[nl + 1 : nl + 1 + n])
        i = nl + 1 + n + 1
    return blobs


def test_rescue_and_checkpoint_pushes_never_carry_ignored_or_secret_files(
    tmp_path: Path, repo: Path
) -> None:
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    (repo / ".gitignore").write_text("build/\n")
    git(repo, "add", ".gitignore")
    git(repo, "commit", "-q", "-m", "ignore build")
    for rel, data in {**SECRETS, **PLAIN}.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_bytes(data)
    env = {
        "GUARDS_RESCUE_REMOTE": str(remote),
        "GUARDS_RESCUE_SECRET_PATTERNS": ".env*,*.pem,*.key,id_rsa*,*.secret",
    }
    run_guards("record", "--session", "alice", "notes.txt", "deploy", ".env", cwd=repo)
    res = run_guards("run", "--", "clean", "-fdx", cwd=repo, env={**env, "GUARDS_SESSION": "bob"})
    assert res.returncode == 0, res.stderr
    assert "pushed to" in res.stderr and "kept local only" in res.stderr, res.stderr
    local = git(repo, "for-each-ref", "--format=%(refname)", "refs/rescue").split()
    pushed = git(remote, "for-each-ref", "--format=%(refname)", "refs/rescue").split()
    assert sorted(local) == sorted(pushed) and pushed
    # the local rescue holds everything; the remote nothing secret or ignored
    for rel, data in SECRETS.items():
        held = {
            subprocess.run(
                ["git", "cat-file", "blob", f"{ref}:{rel}"], cwd=repo, capture_output=True
            ).stdout
            for ref in local
        }
        assert data in held, rel
    blobs = remote_blobs(remote)
    for rel, data in SECRETS.items():
        assert data not in blobs, f"{rel} reached the remote"
    for rel, data in PLAIN.items():
        assert data in blobs, f"{rel} did not reach the remote"
    # a checkpoint of the caller's own work, secrets included, pushes none of them
    for rel, data in {**SECRETS, **PLAIN}.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_bytes(data + b"v2\n")
    res = run_guards("record", "--session", "bob", *SECRETS, *PLAIN, cwd=repo)
    assert res.returncode == 0, res.stderr
    res = run_guards("checkpoint", cwd=repo, env={**env, "GUARDS_SESSION": "bob"})
    assert res.returncode == 0 and "pushed to" in res.stdout, res.stdout + res.stderr
    blobs = remote_blobs(remote)
    assert any(ref.startswith("refs/wip/") for ref in git(remote, "for-each-ref").split())
    for rel, data in SECRETS.items():
        assert data + b"v2\n" not in blobs, f"{rel} reached the remote in a checkpoint"
    # a dropped stash holding secrets is kept locally, never pushed
    (repo / ".env").write_bytes(b"API_KEY=hunter2-stash\n")
    git(repo, "stash", "push", "-u", "-q")
    res = run_guards("run", "--", "stash", "drop", cwd=repo, env={**env, "GUARDS_SESSION": "bob"})
    assert res.returncode == 0, res.stderr
    assert b"API_KEY=hunter2-stash\n" not in remote_blobs(remote)
