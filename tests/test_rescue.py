"""Rescue refs: names, create-only, verification, caps, push, secrets, the log, the report."""

from __future__ import annotations

import os
import zlib
from pathlib import Path

import pytest

from guards.git.objects import blob_oid
from guards.git.quoting import unquote_path
from guards.output import show_path
from guards.protect.rescue import (
    AtRiskPath,
    PushOutcome,
    RescueFailedError,
    RescueResult,
    command_slug,
    parse_trailers,
    push,
    report_line,
    rescue_commits,
    rescue_paths,
    safe_component,
)
from guards.state.workspace import Workspace
from tests.helpers import git, make_repo, observe


def rescue(
    repo: Path, paths: list[str], owner: str | None = "alice", command: str = "reset --hard"
) -> list[RescueResult]:
    return rescue_paths(
        Workspace.open(repo), [AtRiskPath(p, owner) for p in paths], command=command
    )


@pytest.mark.parametrize(
    "session_id",
    ["alice", "a:b", "x..y", ".hidden", "end.", "name.lock", "@", "sp ace", "ünï", "a/b", "a@{1}"],
)
def test_ref_names_are_valid_for_any_session_id(repo: Path, session_id: str) -> None:
    component = safe_component(session_id)
    git(repo, "check-ref-format", f"refs/rescue/{component}/20261130T000000Z-reset-hard")
    assert "/" not in component


def test_distinct_session_ids_get_distinct_ref_components() -> None:
    assert safe_component("a:b") != safe_component("a_b")
    assert safe_component("a%3Ab") != safe_component("a:b")


def test_command_slug_names_the_subcommand() -> None:
    assert command_slug("git reset --hard HEAD~1") == "reset-hard-HEAD_1"
    assert command_slug("clean -fdx") == "clean-fdx"
    assert command_slug("") == "command"


def test_rescues_within_one_second_get_unique_refs_and_reflogs(repo: Path) -> None:
    (repo / "README").write_text("one\n")
    first = rescue(repo, ["README"])[0].ref
    second = rescue(repo, ["README"])[0].ref
    third = rescue(repo, ["README"])[0].ref
    assert len({first, second, third}) == 3
    for ref in (first, second, third):
        assert ref.startswith("refs/rescue/alice/")
        assert git(repo, "reflog", "show", "--format=%gs", ref).strip() == (
            "guards rescue: reset --hard"
        )


def test_existing_refs_are_never_overwritten(repo: Path) -> None:
    (repo / "README").write_text("one\n")
    ref = rescue(repo, ["README"])[0].ref
    # Someone else creates the next candidate names by hand: they stay as they are.
    head = git(repo, "rev-parse", "HEAD").strip()
    git(repo, "update-ref", f"{ref}-2", head)
    again = rescue(repo, ["README"])[0].ref
    assert again not in (ref, f"{ref}-2")
    assert git(repo, "rev-parse", f"{ref}-2").strip() == head


def test_rescue_message_and_trailers_name_everyone(repo: Path) -> None:
    (repo / "README").write_text("one\n")
    os.environ["GUARDS_SESSION"] = "bob"
    try:
        result = rescue(repo, ["README"], owner="alice", command="checkout -- README")[0]
    finally:
        del os.environ["GUARDS_SESSION"]
    trailers = parse_trailers(git(repo, "log", "-1", "--format=%B", result.ref))
    assert trailers["Rescued-For"] == ["alice"]
    assert trailers["Rescued-By"] == ["bob"]
    assert trailers["Command"] == ["checkout -- README"]
    assert trailers["Path"] == ["README"]
    assert trailers["Host"] and trailers["Time"]
    assert trailers["Index"] == [result.index_commit]


def test_works_without_identity_signing_or_hooks(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in (
        "GIT_AUTHOR_NAME",
        "GIT_AUTHOR_EMAIL",
        "GIT_COMMITTER_NAME",
        "GIT_COMMITTER_EMAIL",
    ):
        monkeypatch.delenv(name)
    (Path(os.environ["HOME"]) / ".gitconfig").write_text(
        "[user]\n\tuseConfigOnly = true\n[commit]\n\tgpgSign = true\n[gpg]\n\tprogram = false\n"
    )
    hooks = repo / ".git" / "hooks"
    hooks.mkdir(exist_ok=True)
    for hook in ("pre-commit", "commit-msg", "post-commit", "reference-transaction"):
        (hooks / hook).write_text("#!/bin/sh\nexit 1\n")
        (hooks / hook).chmod(0o755)
    (repo / "README").write_text("one\n")
    result = rescue(repo, ["README"])[0]
    assert git(repo, "log", "-1", "--format=%an", result.ref).strip() == "guards"
    # the reference-transaction hook would have vetoed; update-ref runs it, so check the ref
    assert git(repo, "rev-parse", result.ref).strip() == result.commit


def test_verification_catches_a_corrupted_object(repo: Path) -> None:
    content = b"precious work\n"
    (repo / "README").write_bytes(content)
    oid = blob_oid(content)
    # A corrupt loose object already sits where git would store this blob: git trusts
    # it exists and writes nothing, so only reading it back can tell.
    path = repo / ".git" / "objects" / oid[:2] / oid[2:]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(zlib.compress(b"blob %d\0" % len(content) + b"X" * len(content)))
    before = observe(repo)
    with pytest.raises(RescueFailedError, match="missing or corrupt"):
        rescue(repo, ["README"])
    assert observe(repo) == before
    assert not git(repo, "for-each-ref", "refs/rescue")


def test_a_file_over_the_size_cap_fails_naming_file_and_override(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GUARDS_RESCUE_MAX_FILE_SIZE", "1KiB")
    (repo / "big.bin").write_bytes(b"x" * 4096)
    (repo / "README").write_text("small\n")
    with pytest.raises(RescueFailedError) as info:
        rescue(repo, ["README", "big.bin"])
    message = str(info.value)
    assert "big.bin" in message and "GUARDS_RESCUE_MAX_FILE_SIZE=" in message
    assert "\n" not in message
    assert not git(repo, "for-each-ref", "refs/rescue")
    monkeypatch.setenv("GUARDS_RESCUE_MAX_FILE_SIZE", "4096")
    result = rescue(repo, ["README", "big.bin"])[0]
    assert "big.bin" in result.paths


def test_files_over_the_size_cap_are_named_biggest_first_then_counted(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GUARDS_RESCUE_MAX_FILE_SIZE", "1KiB")
    for i in range(5):
        (repo / f"f{i}").write_bytes(b"z" * 1024 * (i + 2))
    with pytest.raises(RescueFailedError) as info:
        rescue(repo, [f"f{i}" for i in range(5)])
    assert str(info.value) == (
        "rescue refused: f4 (6.0KiB), f3 (5.0KiB), f2 (4.0KiB) and 2 more over "
        "rescue.max_file_size (1.0KiB); nothing was run; raise it with "
        "GUARDS_RESCUE_MAX_FILE_SIZE=6144 or accept the loss with GUARDS_POLICY=warn"
    )


def test_the_total_size_cap_fails_naming_the_override(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GUARDS_RESCUE_MAX_TOTAL_SIZE", "3000")
    for i in range(3):
        (repo / f"f{i}").write_bytes(b"y" * 1500)
    with pytest.raises(RescueFailedError, match="GUARDS_RESCUE_MAX_TOTAL_SIZE=4500"):
        rescue(repo, ["f0", "f1", "f2"])


def test_rescue_log_records_each_rescue(repo: Path) -> None:
    (repo / "README").write_text("one\n")
    result = rescue(repo, ["README"])[0]
    data = Workspace.open(repo).ledger.read()
    entry = data.rescues[-1]
    assert entry["ref"] == result.ref and entry["owner"] == "alice"
    assert entry["paths"] == ["README"] and entry["command"] == "reset --hard"


def test_report_line_names_owner_ref_and_restore_command(repo: Path) -> None:
    (repo / "README").write_text("one\n")
    (repo / "x").write_text("two\n")
    result = rescue(repo, ["README", "x"])[0]
    line = report_line(result)
    assert line.startswith("guards: rescued 2 paths of session alice to refs/rescue/alice/")
    assert f"restore: guards rescue restore {result.ref}" in line
    assert "\n" not in line
    unknown = rescue(repo, ["README"], owner=None)[0]
    assert "of unknown owner to refs/rescue/unknown/" in report_line(unknown)


def test_rescue_commits_keeps_a_stash_entry_reachable(repo: Path) -> None:
    (repo / "README").write_text("stashed\n")
    git(repo, "stash", "-q")
    oid = git(repo, "rev-parse", "stash@{0}").strip()
    results = rescue_commits(
        Workspace.open(repo), [(oid, "stash@{0}", "alice")], command="stash drop"
    )
    assert results[0].commit == oid
    assert git(repo, "rev-parse", results[0].ref).strip() == oid
    assert "stash-drop-stash-0" in results[0].ref
    git(repo, "stash", "drop", "-q")
    git(repo, "stash", "apply", "-q", results[0].ref)
    assert (repo / "README").read_text() == "stashed\n"
    assert "git stash apply --index" in report_line(results[0])


def test_rescue_commits_refuses_an_unreadable_commit(repo: Path) -> None:
    with pytest.raises(RescueFailedError, match="cannot keep branch gone"):
        rescue_commits(Workspace.open(repo), [("0" * 40, "branch gone", None)], command="branch -D")


def test_trailer_paths_round_trip() -> None:
    for name in ["plain", "new\nline", 'q"uote', "back\\slash", os.fsdecode(b"\xe9t\xe9")]:
        assert unquote_path(show_path(name)) == name


# -- push ---------------------------------------------------------------------------------------


@pytest.fixture
def remote(tmp_path: Path, repo: Path) -> Path:
    bare = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(bare))
    git(repo, "remote", "add", "origin", f"file://{bare}")
    return bare


def test_push_to_a_file_remote_creates_the_ref(
    repo: Path, remote: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GUARDS_RESCUE_REMOTE", "origin")
    (repo / "README").write_text("pushed\n")
    result = rescue(repo, ["README"])[0]
    assert result.push == "pushed"
    assert git(remote, "rev-parse", result.ref).strip() == result.commit
    assert "pushed to origin" in report_line(result)


def test_push_rejected_when_remote_ref_exists_keeps_local_rescue(
    repo: Path, remote: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (repo / "README").write_text("pushed\n")
    result = rescue(repo, ["README"])[0]
    # The same name already exists on the remote, pointing elsewhere: create-only says no.
    head = git(repo, "rev-parse", "HEAD").strip()
    git(repo, "push", "-q", "origin", f"{head}:{result.ref}")
    outcome = push(Workspace.open(repo), "origin", [(result.commit, result.ref)])
    assert outcome[result.ref][0] == "rejected"
    assert git(remote, "rev-parse", result.ref).strip() == head
    assert git(repo, "rev-parse", result.ref).strip() == result.commit


def test_push_rejected_by_the_remote_is_reported_typed(
    repo: Path, remote: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    hook = remote / "hooks" / "pre-receive"
    hook.parent.mkdir(exist_ok=True)
    hook.write_text("#!/bin/sh\necho nope >&2\nexit 1\n")
    hook.chmod(0o755)
    monkeypatch.setenv("GUARDS_RESCUE_REMOTE", "origin")
    (repo / "README").write_text("pushed\n")
    result = rescue(repo, ["README"])[0]
    assert result.push == "rejected"
    assert git(repo, "rev-parse", result.ref).strip() == result.commit
    assert "push to origin failed (rejected" in report_line(result)


def test_push_to_an_unreachable_remote_is_network(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    git(repo, "remote", "add", "gone", f"file://{tmp_path}/nowhere.git")
    monkeypatch.setenv("GUARDS_RESCUE_REMOTE", "gone")
    (repo / "README").write_text("x\n")
    result = rescue(repo, ["README"])[0]
    assert result.push == "network"
    assert git(repo, "rev-parse", result.ref).strip() == result.commit


def test_secrets_and_ignored_files_never_reach_the_remote(
    repo: Path, remote: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GUARDS_RESCUE_REMOTE", "origin")
    (repo / ".gitignore").write_text("*.log\n")
    git(repo, "add", ".gitignore")
    git(repo, "commit", "-qm", "ignore")
    (repo / ".env.local").write_text("TOKEN=secret\n")
    (repo / "deploy.pem").write_text("-----BEGIN KEY-----\n")
    (repo / "trace.log").write_text("ignored\n")
    (repo / "README").write_text("shareable\n")
    paths = [".env.local", "deploy.pem", "trace.log", "README"]
    result = rescue(repo, paths)[0]
    assert result.push == "pushed"
    assert sorted(result.local_only) == [".env.local", "deploy.pem", "trace.log"]
    assert "3 secret/ignored paths kept local only" in report_line(result)
    # Locally everything is there ...
    for p in paths:
        git(repo, "cat-file", "-e", f"{result.ref}:{p}")
    # ... and the remote holds no secret blob at all.
    remote_tip = git(remote, "rev-parse", result.ref).strip()
    assert remote_tip != result.commit
    assert git(remote, "show", f"{remote_tip}:README") == "shareable\n"
    all_objects = git(remote, "cat-file", "--batch-all-objects", "--batch-check=%(objectname)")
    for p in [".env.local", "deploy.pem", "trace.log"]:
        assert blob_oid((repo / p).read_bytes()) not in all_objects


def test_no_remote_means_no_push(repo: Path) -> None:
    (repo / "README").write_text("x\n")
    result = rescue(repo, ["README"])[0]
    assert result.push is None and result.remote is None


def test_bare_make_repo_helper_is_unaffected(tmp_path: Path) -> None:
    # A rescue in one repository never writes refs into another.
    a = make_repo(tmp_path / "a")
    b = make_repo(tmp_path / "b")
    (a / "README").write_text("a\n")
    rescue(a, ["README"])
    assert not git(b, "for-each-ref", "refs/rescue")


def test_a_stash_with_untracked_files_is_kept_but_never_pushed(
    repo: Path, remote: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GUARDS_RESCUE_REMOTE", "origin")
    (repo / ".env").write_text("TOKEN=1\n")
    git(repo, "stash", "-q", "-u")
    oid = git(repo, "rev-parse", "stash@{0}").strip()
    [kept] = rescue_commits(Workspace.open(repo), [(oid, "stash@{0}", None)], command="stash drop")
    assert kept.push is None and kept.local_only == [".env"]
    assert "not pushed" in report_line(kept)
    assert not git(remote, "for-each-ref")
    (repo / "README").write_text("tracked change\n")
    git(repo, "stash", "-q")
    plain = git(repo, "rev-parse", "stash@{0}").strip()
    [pushed] = rescue_commits(Workspace.open(repo), [(plain, "stash@{0}", None)], command="stash")
    assert pushed.push == "pushed"
    assert git(remote, "rev-parse", pushed.ref).strip() == plain


def test_push_outcomes_are_typed_from_git_words() -> None:
    from guards.git.process import Result
    from guards.protect.rescue import classify_push

    ref = "refs/rescue/a/1-x"

    def outcome(rc: int, out: str, err: str) -> str:
        return classify_push(Result(rc, out.encode(), err.encode()), [ref])[ref][0]

    assert outcome(0, f"To x\n*\t1:{ref}\t[new reference]\nDone\n", "") == "pushed"
    assert outcome(1, f"To x\n!\t1:{ref}\t[rejected] (stale info)\n", "") == "rejected"
    assert outcome(128, "", "fatal: Authentication failed for 'https://h/r'") == "auth-denied"
    assert outcome(128, "", "git@h: Permission denied (publickey).") == "auth-denied"
    assert outcome(128, "", "fatal: unable to access 'https://h/': Could not resolve host") == (
        "network"
    )
    assert outcome(1, "", "something odd") == "unknown"
    assert PushOutcome.ALL == ("pushed", "rejected", "auth-denied", "network", "unknown")


def test_all_dirty_work_can_be_rescued_by_owner(repo: Path) -> None:
    from guards.protect.rescue import dirty_at_risk

    (repo / "README").write_text("x\n")
    (repo / "new").write_text("y\n")
    (repo / ".gitignore").write_text("*.tmp\n")
    (repo / "a.tmp").write_text("ignored\n")
    ws = Workspace.open(repo)
    at_risk = dirty_at_risk(ws, ignored=True)
    assert {a.path for a in at_risk} == {"README", "new", ".gitignore", "a.tmp"}
    assert {a.owner for a in at_risk} == {None}
    [result] = rescue_paths(ws, at_risk, command="clean -fdx")
    assert sorted(result.paths) == [".gitignore", "README", "a.tmp", "new"]
    assert git(repo, "show", f"{result.ref}:a.tmp") == "ignored\n"


def test_nothing_at_risk_means_no_rescue(repo: Path) -> None:
    assert rescue_paths(Workspace.open(repo), [], command="reset --hard") == []
    assert not git(repo, "for-each-ref", "refs/rescue")


def test_an_unreadable_file_fails_the_rescue_in_one_line(repo: Path) -> None:
    if os.geteuid() == 0:
        pytest.skip("root reads every file")
    (repo / "README").write_text("secret\n")
    (repo / "README").chmod(0)
    try:
        with pytest.raises(RescueFailedError) as info:
            rescue(repo, ["README"])
    finally:
        (repo / "README").chmod(0o644)
    assert "\n" not in str(info.value) and "GUARDS_POLICY=warn" in str(info.value)
    assert not git(repo, "for-each-ref", "refs/rescue")


def test_rescue_namespace_can_make_branches(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GUARDS_RESCUE_NAMESPACE", "refs/heads/rescue")
    (repo / "README").write_text("as a branch\n")
    result = rescue(repo, ["README"])[0]
    assert result.ref.startswith("refs/heads/rescue/alice/")
    short = result.ref.removeprefix("refs/heads/")
    assert git(repo, "branch", "--list", "rescue/*").split() == [short]
    assert git(repo, "show", f"{short}:README") == "as a branch\n"
