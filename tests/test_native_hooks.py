"""Native hooks: installed where git reads them, chained with the user's, undone exactly."""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

import pytest

from guards.errors import GuardsError
from guards.git.repo import discover
from guards.integrations.native_hooks import (
    CHAINED_SUFFIX,
    HOOK_TYPES,
    install_native_hooks,
    installed_native_hooks,
    render_script,
    uninstall_native_hooks,
)
from tests.helpers import (
    attributed,
    commit_file,
    git,
    half_upgraded,
    head,
    make_repo,
    path_without_guards,
    record,
)

USER_HOOK = b"""#!/bin/sh
# the user's own hook
printf '%s\\n' "$(basename "$0") $*" >> "$(git rev-parse --git-dir)/user-hook.log"
cat >> "$(git rev-parse --git-dir)/user-hook.stdin"
exit "${USER_HOOK_EXIT:-0}"
"""


def snapshot(directory: Path) -> dict[str, tuple[bytes, int, bool]]:
    """Every entry: content (or link target), mode, is-symlink."""
    if not directory.exists():
        return {}
    out = {}
    for p in sorted(directory.iterdir()):
        st = os.lstat(p)
        data = os.readlink(p).encode() if p.is_symlink() else p.read_bytes()
        out[p.name] = (data, st.st_mode, p.is_symlink())
    return out


def run_git(repo: Path, *args: str, env: dict[str, str] | None = None, input: bytes = b""):
    return subprocess.run(
        ["git", *args],
        cwd=repo,
        env={**os.environ, **(env or {})},
        input=input,
        capture_output=True,
        check=False,
    )


def hooks_dir(repo: Path) -> Path:
    return Path(git(repo, "rev-parse", "--path-format=absolute", "--git-path", "hooks").strip())


def install(repo: Path) -> list[str]:
    return install_native_hooks(discover(repo))


def write_user_hook(repo: Path, name: str, mode: int = 0o750) -> Path:
    path = hooks_dir(repo) / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(USER_HOOK)
    path.chmod(mode)
    return path


# -- install / uninstall -------------------------------------------------------------------


def test_install_writes_every_hook_type_where_git_reads_and_uninstall_removes_exactly_that(
    repo: Path,
) -> None:
    before = snapshot(repo / ".git/hooks")

    lines = install(repo)

    assert len(lines) == len(HOOK_TYPES)
    for hook_type in HOOK_TYPES:
        path = repo / ".git/hooks" / hook_type
        assert path.read_bytes() == render_script(hook_type)
        assert os.access(path, os.X_OK)
    assert installed_native_hooks(discover(repo)) == list(HOOK_TYPES)

    uninstall_native_hooks(discover(repo))

    assert snapshot(repo / ".git/hooks") == before
    assert installed_native_hooks(discover(repo)) == []
    assert not (repo / ".git/guards/native-hooks.json").exists()


def test_install_honours_core_hooks_path_and_removes_the_directory_it_created(
    repo: Path,
) -> None:
    git(repo, "config", "core.hooksPath", ".githooks")

    lines = install(repo)

    assert all(str(repo / ".githooks") in line for line in lines)
    assert (repo / ".githooks/pre-commit").exists()
    assert not (repo / ".git/hooks/pre-commit").exists()
    uninstall_native_hooks(discover(repo))
    assert not (repo / ".githooks").exists()


def test_install_chains_an_existing_hook_and_uninstall_restores_it_byte_for_byte(
    repo: Path,
) -> None:
    user = write_user_hook(repo, "pre-commit", mode=0o750)
    before = snapshot(repo / ".git/hooks")

    lines = install(repo)

    assert any("kept as pre-commit" + CHAINED_SUFFIX in line for line in lines)
    chained = user.with_name("pre-commit" + CHAINED_SUFFIX)
    assert chained.read_bytes() == USER_HOOK
    uninstall_native_hooks(discover(repo))
    assert snapshot(repo / ".git/hooks") == before
    assert stat.S_IMODE(os.lstat(user).st_mode) == 0o750


def test_uninstall_restores_a_symlinked_hook_as_the_same_symlink(
    repo: Path, tmp_path: Path
) -> None:
    target = tmp_path / "shared-hook"
    target.write_bytes(USER_HOOK)
    target.chmod(0o755)
    (repo / ".git/hooks").mkdir(exist_ok=True)
    (repo / ".git/hooks/pre-push").symlink_to(target)
    before = snapshot(repo / ".git/hooks")

    install(repo)
    uninstall_native_hooks(discover(repo))

    assert snapshot(repo / ".git/hooks") == before
    assert target.read_bytes() == USER_HOOK


def test_dry_run_plans_without_changing_anything(repo: Path) -> None:
    write_user_hook(repo, "post-commit")
    before = snapshot(repo / ".git/hooks")

    plan = install_native_hooks(discover(repo), dry_run=True)

    assert any("post-commit" in line and CHAINED_SUFFIX in line for line in plan)
    assert snapshot(repo / ".git/hooks") == before
    assert not (repo / ".git/guards").exists()
    install(repo)
    during = snapshot(repo / ".git/hooks")
    assert uninstall_native_hooks(discover(repo), dry_run=True)
    assert snapshot(repo / ".git/hooks") == during


def test_installing_twice_neither_chains_guards_to_itself_nor_loses_the_user_hook(
    repo: Path,
) -> None:
    write_user_hook(repo, "pre-commit")
    before = snapshot(repo / ".git/hooks")
    install(repo)

    again = install(repo)

    assert again == []  # nothing to do, nothing said
    (repo / ".git/guards/native-hooks.json").unlink()  # a lost manifest: hooks are adopted
    adopted = install(repo)
    assert len(adopted) == len(HOOK_TYPES) and all("record" in line for line in adopted)
    assert (repo / ".git/hooks/pre-commit.guards-chained").read_bytes() == USER_HOOK
    uninstall_native_hooks(discover(repo))
    assert snapshot(repo / ".git/hooks") == before


def test_install_refuses_when_a_chained_hook_is_already_in_the_way(repo: Path) -> None:
    write_user_hook(repo, "pre-commit")
    write_user_hook(repo, "pre-commit" + CHAINED_SUFFIX)
    before = snapshot(repo / ".git/hooks")

    with pytest.raises(GuardsError, match="nothing was changed"):
        install(repo)

    assert snapshot(repo / ".git/hooks") == before


def test_uninstall_leaves_a_hook_someone_replaced_since(repo: Path) -> None:
    write_user_hook(repo, "pre-commit")
    install(repo)
    replaced = repo / ".git/hooks/pre-commit"
    replaced.write_bytes(b"#!/bin/sh\n# pre-commit framework, say\nexit 0\n")

    lines = uninstall_native_hooks(discover(repo))

    assert any(line.startswith("leave pre-commit hook") for line in lines)
    assert b"pre-commit framework" in replaced.read_bytes()
    assert (repo / ".git/hooks/pre-commit.guards-chained").read_bytes() == USER_HOOK
    assert installed_native_hooks(discover(repo)) == []


def test_script_quotes_the_python_path_safely() -> None:
    script = render_script("pre-commit", python="/opt/my python/$(touch x)/bin/python3")

    assert b"guards_python='/opt/my python/$(touch x)/bin/python3'\n" in script


# -- the hooks at work, through real git --------------------------------------------------------


def test_user_hook_still_runs_first_and_its_failure_still_blocks_the_commit(repo: Path) -> None:
    write_user_hook(repo, "pre-commit")
    install(repo)
    (repo / "README").write_text("change\n")
    git(repo, "add", "README")

    blocked = run_git(repo, "commit", "-q", "-m", "x", env={"USER_HOOK_EXIT": "7"})
    passed = run_git(repo, "commit", "-q", "-m", "x")

    assert blocked.returncode != 0
    assert passed.returncode == 0, passed.stderr
    assert (repo / ".git/user-hook.log").read_text().count("pre-commit.guards-chained") == 2


def test_native_pre_commit_refuses_a_foreign_path_and_respects_the_temporary_index(
    repo: Path,
) -> None:
    install(repo)
    (repo / "README").write_text("agent a's work\n")
    record(repo, "agent-a", "README")
    (repo / "mine.txt").write_text("b's work\n")
    git(repo, "add", "mine.txt")
    env = {"GUARDS_SESSION": "agent-b"}

    commit_all = run_git(repo, "commit", "-q", "-a", "-m", "everything", env=env)
    assert commit_all.returncode != 0
    assert b"README" in commit_all.stderr and b"agent-a" in commit_all.stderr

    git(repo, "add", "README")
    only_mine = run_git(repo, "commit", "-q", "-m", "mine only", "--", "mine.txt", env=env)
    assert only_mine.returncode == 0, only_mine.stderr
    assert git(repo, "show", "--name-only", "--format=", "HEAD").split() == ["mine.txt"]


def test_native_pre_commit_breaks_a_mass_deletion(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", {f"f{i}.txt": "x\n" for i in range(60)})
    install(repo)
    git(repo, "rm", "-q", "f*.txt")

    res = run_git(repo, "commit", "-q", "-m", "delete everything")

    assert res.returncode != 0
    assert b"deletes 60 of 60 tracked files" in res.stderr
    ok = run_git(repo, "commit", "-q", "-m", "x", env={"GUARDS_ALLOW_MASS_DELETION": "1"})
    assert ok.returncode == 0, ok.stderr


def test_native_post_hooks_release_paths_that_became_clean(repo: Path) -> None:
    install(repo)
    for name in ("README", "src/app.py", "n1.txt", "n2.txt"):
        (repo / name).write_text(f"{name} by a\n")
    record(repo, "agent-a", "README", "src/app.py", "n1.txt", "n2.txt")
    env = {"GUARDS_SESSION": "agent-a"}

    git(repo, "add", "README")
    assert run_git(repo, "commit", "-q", "-m", "readme", env=env).returncode == 0  # post-commit
    assert set(attributed(repo)) == {"src/app.py", "n1.txt", "n2.txt"}

    git(repo, "checkout", "-q", "--", "src/app.py")  # post-checkout
    assert set(attributed(repo)) == {"n1.txt", "n2.txt"}

    git(repo, "add", "n1.txt")
    git(repo, "commit", "-q", "--no-verify", "-m", "n1")
    assert run_git(repo, "commit", "-q", "--amend", "-m", "n1!").returncode == 0  # post-rewrite
    assert set(attributed(repo)) == {"n2.txt"}


def test_native_pre_push_sees_every_ref_and_the_user_hook_gets_the_same_input(
    tmp_path: Path,
) -> None:
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    local = make_repo(tmp_path / "local", {"a.txt": "a\n"})
    git(local, "remote", "add", "origin", str(remote))
    git(local, "branch", "topic")
    git(local, "push", "-q", "origin", "main", "topic")
    write_user_hook(local, "pre-push", mode=0o755)
    install(local)
    other = tmp_path / "other"
    git(tmp_path, "clone", "-q", str(remote), str(other))
    git(other, "checkout", "-q", "topic")
    unseen = commit_file(other, "theirs.txt", "theirs\n")
    git(other, "push", "-q", "origin", "topic")
    new_main = commit_file(local, "b.txt", "b\n")
    git(local, "checkout", "-q", "topic")
    commit_file(local, "mine.txt", "mine\n")

    # main fast-forwards, topic would drop a commit only the remote has: the second ref.
    res = run_git(local, "push", "--force", "origin", "main", "topic")

    assert res.returncode != 0
    assert b"refs/heads/topic" in res.stderr and unseen[:12].encode() in res.stderr
    assert head(remote, "main") != new_main  # the whole push was refused
    log = (local / ".git/user-hook.log").read_text()
    assert f"pre-push.guards-chained origin {remote}" in log
    stdin = (local / ".git/user-hook.stdin").read_text()
    assert f"refs/heads/main {new_main} refs/heads/main" in stdin
    assert f"refs/heads/topic {unseen}" in stdin

    deletion = run_git(local, "push", "origin", ":topic")
    assert deletion.returncode != 0
    assert b"deleting refs/heads/topic" in deletion.stderr
    assert head(remote, "topic") == unseen
    forced = run_git(local, "push", "-q", "origin", ":topic", env={"GUARDS_ALLOW_FORCE_PUSH": "1"})
    assert forced.returncode == 0, forced.stderr
    assert git(remote, "for-each-ref", "refs/heads/topic") == ""


def test_a_missing_guards_warns_and_never_blocks_git(repo: Path, tmp_path: Path) -> None:
    discover_repo = discover(repo)
    install_native_hooks(discover_repo)
    hook = repo / ".git/hooks/pre-commit"
    hook.write_text(half_upgraded(render_script("pre-commit").decode(), tmp_path))
    (repo / "README").write_text("agent a\n")
    record(repo, "agent-a", "README")  # would be refused if guards ran
    git(repo, "add", "README")
    env = {name: value for name, value in os.environ.items() if name != "PYTHONPATH"}

    res = subprocess.run(
        ["git", "commit", "-q", "-m", "x"], cwd=repo, env=env, capture_output=True, check=False
    )

    assert res.returncode == 0, res.stderr
    assert b"guards is not installed" in res.stderr
    hook.write_bytes(render_script("pre-commit", python=str(tmp_path / "no-such-python")))
    (repo / "README").write_text("again\n")
    git(repo, "add", "README")
    env["PATH"] = path_without_guards()
    gone = subprocess.run(
        ["git", "commit", "-q", "-m", "y"], cwd=repo, env=env, capture_output=True, check=False
    )
    assert gone.returncode == 0, gone.stderr
    assert b"guards is not installed" in gone.stderr
