"""Ways other writers' work used to be lost through the guarded git, each reproduced
through ``guards run``, the shim and (where one exists) the safe-* alias: after the
command, what it destroyed must be held by a rescue ref. And where git itself rejects a
command, the guarded git must be git: same exit code, same output, no rescue."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.guarded import ALIASED, install_aliases, install_shim, run_via
from tests.helpers import git, make_repo

BOB = {"GUARDS_SESSION": "bob"}


@pytest.fixture
def shim(tmp_path: Path) -> Path:
    return install_shim(tmp_path / "shim")


def ways(args: list[str]) -> list[str]:
    """guards run and the shim always; the alias when one exists for the subcommand."""
    found = ["guards-run", "shim"]
    if args and args[0] in ALIASED:
        found.append("alias")
    return found


def rescue_refs(repo: Path) -> list[str]:
    return git(repo, "for-each-ref", "--format=%(refname)", "refs/rescue").split()


def rescued(repo: Path, path: str) -> list[bytes]:
    """Every version of ``path`` the rescue refs hold (their commits' parents too)."""
    found = []
    for ref in rescue_refs(repo):
        for rev in (ref, f"{ref}^2"):
            res = subprocess.run(
                ["git", "cat-file", "blob", f"{rev}:{path}"], cwd=repo, capture_output=True
            )
            if res.returncode == 0:
                found.append(res.stdout)
    return found


def rescued_commits(repo: Path) -> set[str]:
    return {git(repo, "rev-parse", ref).strip() for ref in rescue_refs(repo)}


def held_by_rescue(repo: Path, commit: str) -> bool:
    refs = rescue_refs(repo)
    return any(
        subprocess.run(["git", "merge-base", "--is-ancestor", commit, r], cwd=repo).returncode == 0
        for r in refs
    )


def run_way(
    way: str, args: list[str], cwd: Path, shim: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[bytes]:
    if way == "alias":
        install_aliases(cwd)
    return run_via(way, args, cwd, shim_dir=shim, env={**BOB, **(env or {})})


def same_as_plain(
    repo: Path, args: list[str], way: str, shim: Path, tmp_path: Path, cwd: Path | None = None
) -> None:
    """The guarded command behaves exactly as plain git (run on a copy) and writes no
    rescue ref."""
    twin = tmp_path / "plain-twin"
    shutil.copytree(repo, twin, symlinks=True)
    rel = (cwd or repo).relative_to(repo)
    plain = run_via("plain", args, twin / rel)
    if way == "alias":
        install_aliases(repo)
    guarded = run_via(way, args, cwd or repo, shim_dir=shim, env=BOB)
    assert guarded.returncode == plain.returncode, guarded.stderr
    assert guarded.stdout == plain.stdout
    assert guarded.stderr == plain.stderr
    assert rescue_refs(repo) == []


# ---------------------------------------------------------------------------
# Global options guards did not know: the parser gave up and git ran unchecked


GLOBAL_SPELLINGS = [
    ["--no-literal-pathspecs", "reset", "--hard"],
    ["--shallow-file", "nowhere", "reset", "--hard"],
    ["--config-env", "user.name=HOME", "reset", "--hard"],
    ["--exec-path=EXEC", "reset", "--hard"],
]


@pytest.mark.parametrize("args", GLOBAL_SPELLINGS, ids=lambda a: a[0])
@pytest.mark.parametrize("way", ["guards-run", "shim"])
def test_every_global_option_of_git_reaches_the_guard(
    repo: Path, shim: Path, args: list[str], way: str
) -> None:
    exec_path = git(repo, "--exec-path").strip()
    args = [a.replace("EXEC", exec_path) for a in args]
    (repo / "README").write_text("unknown writer's edit\n")
    res = run_way(way, args, repo, shim)
    assert res.returncode == 0, res.stderr
    assert (repo / "README").read_text() == "hello\n"
    assert b"unknown writer's edit\n" in rescued(repo, "README")


@pytest.mark.parametrize("way", ["guards-run", "shim"])
def test_a_global_option_git_rejects_is_left_to_git(
    repo: Path, shim: Path, tmp_path: Path, way: str
) -> None:
    (repo / "README").write_text("unknown writer's edit\n")
    same_as_plain(repo, ["--no-pagr", "reset", "--hard"], way, shim, tmp_path)
    assert (repo / "README").read_text() == "unknown writer's edit\n"


# ---------------------------------------------------------------------------
# --git-dir / --work-tree as options mean what GIT_DIR / GIT_WORK_TREE mean


def _separate_git_dir(git_dir: Path, work: Path) -> None:
    """A repository whose git dir and work tree are given explicitly (the dotfiles way)."""
    work.mkdir(parents=True, exist_ok=True)
    git(work, "init", "-q", "--bare", str(git_dir))
    opts = [f"--git-dir={git_dir}", f"--work-tree={work}"]
    (work / "conf.txt").write_text("committed\n")
    git(work, *opts, "add", "conf.txt")
    git(work, *opts, "commit", "-qm", "conf")
    (work / "conf.txt").write_text("someone's edit\n")


SPELLINGS = ["options", "options-relative", "environment"]


def held_in(git_dir: Path, path: str) -> list[str]:
    """What the rescue refs of the repository at ``git_dir`` hold of ``path``."""
    refs = git(git_dir, "for-each-ref", "--format=%(objectname)", "refs/rescue").split()
    return [git(git_dir, "show", f"{r}:{path}") for r in refs]


def _spelled(spelling: str, git_dir: Path, work: Path, args: list[str]) -> tuple[list, dict]:
    if spelling == "options":
        return [f"--git-dir={git_dir}", "--work-tree", str(work), *args], {}
    if spelling == "options-relative":
        return ["--git-dir", os.path.relpath(git_dir, work), "--work-tree=.", *args], {}
    return args, {"GIT_DIR": str(git_dir), "GIT_WORK_TREE": str(work)}


@pytest.mark.parametrize("spelling", SPELLINGS)
@pytest.mark.parametrize("way", ["guards-run", "shim", "alias"])
def test_a_work_tree_inside_another_repository_is_guarded_in_its_own(
    tmp_path: Path, shim: Path, spelling: str, way: str
) -> None:
    outer = make_repo(tmp_path / "outer", {"outer.txt": "outer\n", ".gitignore": "inner/\n"})
    (outer / "outer.txt").write_text("outer's own dirty work\n")
    git_dir, work = tmp_path / "inner.git", outer / "inner"
    _separate_git_dir(git_dir, work)
    args, env = _spelled(spelling, git_dir, work, ["reset", "--hard"])
    if way == "alias":
        install_aliases(git_dir)
        args[args.index("reset")] = ALIASED["reset"]
        res = subprocess.run(["git", *args], cwd=work, env={**os.environ, **BOB, **env})
    else:
        res = run_way(way, args, work, shim, env=env)
    assert res.returncode == 0
    assert (work / "conf.txt").read_text() == "committed\n"
    assert held_in(git_dir, "conf.txt") == ["someone's edit\n"]
    assert rescue_refs(outer) == []  # nothing "rescued" in the wrong repository
    assert (outer / "outer.txt").read_text() == "outer's own dirty work\n"


@pytest.mark.parametrize("spelling", SPELLINGS)
@pytest.mark.parametrize("way", ["guards-run", "shim"])
def test_a_bare_repository_with_a_separate_work_tree_is_guarded(
    tmp_path: Path, shim: Path, spelling: str, way: str
) -> None:
    home = tmp_path / "home"
    git_dir = home / ".dotfiles"
    _separate_git_dir(git_dir, home)
    args, env = _spelled(spelling, git_dir, home, ["checkout", "--", "."])
    res = run_way(way, args, home, shim, env=env)
    assert res.returncode == 0, res.stderr
    assert (home / "conf.txt").read_text() == "committed\n"
    assert held_in(git_dir, "conf.txt") == ["someone's edit\n"]


# ---------------------------------------------------------------------------
# A command git rejects is git's own business: no rescue, no output, no ref


REJECTED = [
    ["checkout", "-B"],
    ["stash", "push", "-m"],
    ["worktree", "remove"],
    ["worktree", "remove", "nowhere"],
    ["reset", "--hadr"],
    ["reset", "--hard", "-Z"],
    ["restore", "--pathspec-from-file=missing"],
    ["rm", "-f", "--pathspec-from-file=missing"],
    ["checkout", "-b", "x", "-B", "y"],
    ["checkout", "-b", "x", "main", "README"],
    ["checkout", "--detach", "--", "README"],
    ["checkout", "-f", "-m", "main"],
    ["checkout", "main", "HEAD", "--", "README"],
    ["switch", "-c", "x", "-C", "y"],
    ["reset", "--patch", "--hard"],
    ["reset", "--pathspec-file-nul"],
    ["restore", "--staged", "--ours", "README"],
    ["clean", "-fxX"],
    ["rm", "-f", "src"],
    ["stash", "push", "--pathspec-from-file=list", "--", "README"],
    ["-C", "nowhere", "reset", "--hard"],
    ["--work-tree=nowhere", "reset", "--hard"],
    ["--no-advice", "reset", "--hard"],
]


@pytest.mark.parametrize("args", REJECTED, ids=lambda a: " ".join(a))
def test_a_command_git_rejects_gets_no_rescue_and_no_output(
    repo: Path, shim: Path, tmp_path: Path, args: list[str]
) -> None:
    (repo / "README").write_text("unknown writer's edit\n")
    (repo / "src" / "app.py").write_text("another edit\n")
    (repo / "list").write_text("README\n")
    for way in ways(args):
        same_as_plain(repo, args, way, shim, tmp_path / f"via-{way}")
    assert (repo / "README").read_text() == "unknown writer's edit\n"


# ---------------------------------------------------------------------------
# Index flags that hide changes from `git status`


HIDDEN = [
    ("--assume-unchanged", ["reset", "--hard"]),
    ("--assume-unchanged", ["checkout", "--", "."]),
    ("--assume-unchanged", ["restore", "."]),
    ("--assume-unchanged", ["rm", "-f", "README"]),
    ("--assume-unchanged", ["stash"]),
    ("--assume-unchanged", ["-c", "alias.wipe=!git reset --hard", "wipe"]),
    ("--skip-worktree", ["checkout", "--ignore-skip-worktree-bits", "--", "."]),
    ("--skip-worktree", ["restore", "--ignore-skip-worktree-bits", "."]),
    ("--skip-worktree", ["checkout", "other", "--", "README"]),
]


@pytest.mark.parametrize(
    ("flag", "args"), HIDDEN, ids=lambda v: " ".join(v) if isinstance(v, list) else v
)
def test_a_change_an_index_flag_hides_is_rescued(
    repo: Path, shim: Path, tmp_path: Path, flag: str, args: list[str]
) -> None:
    git(repo, "branch", "other")
    git(repo, "checkout", "-q", "other")
    (repo / "README").write_text("README in other\n")
    git(repo, "commit", "-qam", "other")
    git(repo, "checkout", "-q", "main")
    git(repo, "update-index", flag, "README")
    start = tmp_path / "start"
    shutil.copytree(repo, start, symlinks=True)
    for way in ways(args):
        work = tmp_path / f"via-{way}"
        shutil.copytree(start, work, symlinks=True)
        (work / "README").write_text("someone's hidden edit\n")
        (work / "src" / "app.py").write_text("a visible edit\n")  # something to stash
        res = run_way(way, args, work, shim)
        assert res.returncode == 0, (way, res.stderr)
        assert not (work / "README").exists() or (work / "README").read_text() != (
            "someone's hidden edit\n"
        )
        assert b"someone's hidden edit\n" in rescued(work, "README"), (way, res.stderr)


# ---------------------------------------------------------------------------
# Ignored files in the way of a switch (with a tracked file deleted), reset --keep,
# reset --merge, cherry-pick and revert


def _ignored_in_the_way(repo: Path) -> None:
    (repo / ".gitignore").write_text("*.log\n")
    git(repo, "add", ".gitignore")
    git(repo, "commit", "-qm", "ignore logs")
    git(repo, "checkout", "-q", "-b", "other")
    (repo / "build.log").write_text("build.log as committed in other\n")
    (repo / "README").write_text("README in other\n")
    git(repo, "add", "-f", "build.log", "README")
    git(repo, "commit", "-qm", "other tracks build.log")
    git(repo, "checkout", "-q", "main")
    (repo / "build.log").write_text("someone's ignored build log\n")
    (repo / "README").unlink()  # a tracked file other changes, deleted from the work tree


IN_THE_WAY = [
    ["checkout", "other"],
    ["switch", "other"],
    ["reset", "--keep", "other"],
    ["reset", "--merge", "other"],
    ["cherry-pick", "other"],
    ["merge", "--no-edit", "other"],
    ["rebase", "other"],
]


def fresh_repo(where: Path) -> Path:
    """The ``repo`` fixture's repository, built anew (a copy's index has stale stat
    data, which makes reset --keep and --merge refuse)."""
    return make_repo(where, {"README": "hello\n", "src/app.py": "print('hi')\n"})


@pytest.mark.parametrize("args", IN_THE_WAY, ids=lambda a: " ".join(a))
def test_an_ignored_file_in_the_targets_way_is_rescued(
    shim: Path, tmp_path: Path, args: list[str]
) -> None:
    for way in ways(args):
        work = fresh_repo(tmp_path / f"via-{way}")
        _ignored_in_the_way(work)
        if args[0] in ("cherry-pick", "merge", "rebase"):
            git(work, "checkout", "-q", "--", "README")  # these refuse a missing file
        res = run_way(way, args, work, shim)
        assert res.returncode == 0, (way, res.stderr)
        assert (work / "build.log").read_text() == "build.log as committed in other\n"
        assert b"someone's ignored build log\n" in rescued(work, "build.log"), way


def test_reverting_a_deletion_rescues_the_ignored_file_it_overwrites(
    shim: Path, tmp_path: Path
) -> None:
    for way in ways(["revert"]):
        work = fresh_repo(tmp_path / f"via-{way}")
        (work / ".gitignore").write_text("*.log\n")
        (work / "kept.log").write_text("kept.log as committed\n")
        git(work, "add", "-f", ".gitignore", "kept.log")
        git(work, "commit", "-qm", "track kept.log")
        git(work, "rm", "-q", "kept.log")
        git(work, "commit", "-qm", "drop kept.log")
        (work / "kept.log").write_text("someone's ignored kept.log\n")
        res = run_way(way, ["revert", "--no-edit", "HEAD"], work, shim)
        assert res.returncode == 0, (way, res.stderr)
        assert (work / "kept.log").read_text() == "kept.log as committed\n"
        assert b"someone's ignored kept.log\n" in rescued(work, "kept.log"), way


# ---------------------------------------------------------------------------
# A directory where a tracked file was (and the reverse): deleted when the file returns


SWAPPED = [["checkout", "--", "."], ["restore", "."], ["stash"]]


@pytest.mark.parametrize("args", SWAPPED, ids=lambda a: " ".join(a))
def test_work_standing_where_a_tracked_file_returns_is_rescued(
    shim: Path, tmp_path: Path, args: list[str]
) -> None:
    for way in ways(args):
        work = fresh_repo(tmp_path / f"via-{way}")
        (work / "README").unlink()
        (work / "README").mkdir()
        (work / "README" / "notes.txt").write_text("someone's notes\n")
        (work / "src" / "app.py").unlink()  # src/app.py comes back over a file named so
        (work / "src").rmdir()
        (work / "src").write_text("someone's file where src/ was\n")
        res = run_way(way, args, work, shim)
        assert res.returncode == 0, (way, res.stderr)
        assert (work / "README").read_text() == "hello\n"
        assert b"someone's notes\n" in rescued(work, "README/notes.txt"), way
        assert b"someone's file where src/ was\n" in rescued(work, "src"), way


# ---------------------------------------------------------------------------
# A conflict half resolved: restore from a tree, rm, rm -f discard the resolution


def _half_resolved(where: Path) -> Path:
    work = fresh_repo(where)
    git(work, "checkout", "-q", "-b", "side")
    (work / "README").write_text("side\n")
    git(work, "commit", "-qam", "side")
    git(work, "checkout", "-q", "main")
    (work / "README").write_text("main\n")
    git(work, "commit", "-qam", "main")
    git(work, "merge", "side", check=False)
    (work / "README").write_text("someone's resolution in progress\n")
    return work


HALF_RESOLVED = [
    ["restore", "--source=HEAD", "README"],
    ["restore", "-S", "-W", "README"],
    ["rm", "-f", "README"],
    ["rm", "README"],
]


@pytest.mark.parametrize("args", HALF_RESOLVED, ids=lambda a: " ".join(a))
def test_a_half_resolved_conflict_is_rescued(shim: Path, tmp_path: Path, args: list[str]) -> None:
    for way in ways(args):
        work = _half_resolved(tmp_path / f"via-{way}")
        res = run_way(way, args, work, shim)
        assert res.returncode == 0, (way, res.stderr)
        assert b"someone's resolution in progress\n" in rescued(work, "README"), way


# ---------------------------------------------------------------------------
# mv without -f onto a path that is staged but gone from the work tree


def test_mv_onto_a_staged_path_whose_file_is_gone_rescues_the_staged_version(
    shim: Path, tmp_path: Path
) -> None:
    for way in ways(["mv"]):
        work = fresh_repo(tmp_path / f"via-{way}")
        (work / "notes.txt").write_text("someone's staged notes\n")
        git(work, "add", "notes.txt")
        (work / "notes.txt").unlink()
        res = run_way(way, ["mv", "README", "notes.txt"], work, shim)
        assert res.returncode == 0, (way, res.stderr)
        assert b"someone's staged notes\n" in rescued(work, "notes.txt"), way


# ---------------------------------------------------------------------------
# sparse-checkout add/reapply delete directories left outside the cone


@pytest.mark.parametrize(
    "args", [["sparse-checkout", "add", "src"], ["sparse-checkout", "reapply"]], ids=" ".join
)
def test_sparse_checkout_rescues_ignored_work_in_directories_outside_the_cone(
    shim: Path, tmp_path: Path, args: list[str]
) -> None:
    for way in ways(args):
        work = make_repo(
            tmp_path / f"via-{way}", {".gitignore": "*.log\n", "docs/a.md": "a\n", "src/x": "x\n"}
        )
        git(work, "sparse-checkout", "set", "src")
        (work / "docs").mkdir()
        (work / "docs" / "draft.log").write_text("someone's ignored draft\n")
        res = run_way(way, args, work, shim)
        assert res.returncode == 0, (way, res.stderr)
        assert not (work / "docs").exists()
        assert b"someone's ignored draft\n" in rescued(work, "docs/draft.log"), way


@pytest.mark.parametrize("way", ["guards-run", "shim"])
def test_sparse_checkout_in_non_cone_mode_is_transparent(
    repo: Path, shim: Path, tmp_path: Path, way: str
) -> None:
    (repo / "README").write_text("someone's edit\n")
    same_as_plain(repo, ["sparse-checkout", "set", "--no-cone", "/src/"], way, shim, tmp_path)


# ---------------------------------------------------------------------------
# History only a reflog would keep


def _with_history(where: Path) -> tuple[Path, str, str]:
    """main: initial - two - three (HEAD); side: initial - side-only. Returns the repo,
    three's id and side-only's id."""
    work = fresh_repo(where)
    for n in ("two", "three"):
        (work / "README").write_text(f"{n}\n")
        git(work, "commit", "-qam", n)
    git(work, "checkout", "-q", "-b", "side", "HEAD~2")
    (work / "side.txt").write_text("side only\n")
    git(work, "add", "side.txt")
    git(work, "commit", "-qm", "side-only")
    git(work, "checkout", "-q", "main")
    return work, git(work, "rev-parse", "main").strip(), git(work, "rev-parse", "side").strip()


LEFT_TO_THE_REFLOG = [
    (["reset", "--hard", "HEAD~2"], "main"),
    (["reset", "--keep", "HEAD~1"], "main"),
    (["reset", "--mixed", "HEAD~1"], "main"),
    (["worktree", "add", "-B", "side", "../elsewhere", "main"], "side"),
    (["fetch", ".", "+main:side"], "side"),
    (["push", ".", ":side"], "side"),
    (["push", ".", "+main:side"], "side"),
]


@pytest.mark.parametrize(
    ("args", "loser"), LEFT_TO_THE_REFLOG, ids=[" ".join(a) for a, _ in LEFT_TO_THE_REFLOG]
)
def test_commits_left_to_the_reflog_are_kept_under_rescue_refs(
    shim: Path, tmp_path: Path, args: list[str], loser: str
) -> None:
    for way in ways(args):
        work, main, side = _with_history(tmp_path / f"via-{way}" / "repo")
        res = run_way(way, args, work, shim)
        assert res.returncode == 0, (way, res.stderr)
        assert held_by_rescue(work, main if loser == "main" else side), (way, res.stderr)


@pytest.mark.parametrize(
    "args",
    [
        ["reflog", "expire", "--expire=now", "--all"],
        ["reflog", "delete", "stash@{1}"],
        ["-c", "gc.refs/stash.reflogExpireUnreachable=now", "gc", "--prune=now"],
    ],
    ids=" ".join,
)
def test_stash_entries_a_reflog_command_drops_are_kept(
    shim: Path, tmp_path: Path, args: list[str]
) -> None:
    for way in ways(args):
        work = fresh_repo(tmp_path / f"via-{way}")
        for n in range(3):
            (work / "README").write_text(f"someone's stashed work {n}\n")
            git(work, "stash", "-q")
        entries = git(work, "log", "-g", "--format=%H", "refs/stash", "--").split()
        res = run_way(way, args, work, shim)
        assert res.returncode == 0, (way, res.stderr)
        remaining = git(work, "log", "-g", "--format=%H", "refs/stash", "--", check=False).split()
        dropped = [e for e in entries if e not in remaining]
        assert dropped, way
        assert all(held_by_rescue(work, e) for e in dropped), way


# ---------------------------------------------------------------------------
# Commands that run shell commands of their own (a git inside never reaches the shim)


def _notes(work: Path) -> None:
    (work / ".gitignore").write_text("*.log\n")
    git(work, "add", ".gitignore")
    git(work, "commit", "-qm", "ignore logs")
    (work / "notes.txt").write_text("someone's untracked notes\n")
    (work / "build.log").write_text("someone's ignored log\n")


SHELL_RUNNERS = [
    ["rebase", "-x", "git clean -fdx", "HEAD~1"],
    ["bisect", "run", "sh", "-c", "git clean -fdx; exit 0"],
    ["submodule", "foreach", "git -C .. clean -fdx"],
    ["filter-branch", "-f", "--tree-filter", "true", "HEAD~1..HEAD"],
]


@pytest.mark.parametrize("args", SHELL_RUNNERS, ids=lambda a: " ".join(a[:2]))
def test_commands_running_shell_commands_rescue_everything_they_could_reach(
    shim: Path, tmp_path: Path, args: list[str]
) -> None:
    upstream = make_repo(tmp_path / "upstream", {"s": "sub\n"})
    for way in ways(args):
        work = fresh_repo(tmp_path / f"via-{way}")
        _notes(work)
        if args[0] == "bisect":
            (work / "README").write_text("another commit\n")
            git(work, "commit", "-qam", "another")
            git(work, "bisect", "start", "HEAD", "HEAD~2")
        if args[0] == "submodule":
            git(
                work,
                "-c",
                "protocol.file.allow=always",
                "submodule",
                "add",
                "-q",
                str(upstream),
                "sub",
            )
            git(work, "commit", "-qm", "sub")
        res = run_way(way, args, work, shim, env={"FILTER_BRANCH_SQUELCH_WARNING": "1"})
        assert res.returncode == 0, (way, res.stderr)
        assert b"someone's untracked notes\n" in rescued(work, "notes.txt"), way
        assert b"someone's ignored log\n" in rescued(work, "build.log"), way


def test_a_nested_clone_with_submodules_settles_after_its_rescue(
    shim: Path, tmp_path: Path
) -> None:
    """git's t7407: a command that reaches everything, over an untracked clone whose
    submodule keeps its git directory in the clone's ``.git/modules``. The rescue of that
    submodule writes there; the second look took it for another writer's change, rescued
    again and again, and refused ("kept changing") where git would have run."""
    upstream = make_repo(tmp_path / "upstream", {"s": "sub\n"})
    outer = make_repo(tmp_path / "outer", {"o": "outer\n"})
    add = ["-c", "protocol.file.allow=always", "submodule", "add", "-q", str(upstream), "sub"]
    git(outer, *add)
    git(outer, "commit", "-qm", "sub")
    for way in ways(["submodule"]):
        work = fresh_repo(tmp_path / f"via-{way}")
        clone = ["-c", "protocol.file.allow=always", "clone", "-q", "--recurse-submodules"]
        git(work, *clone, str(outer), "clone")
        (work / "clone/sub/notes.txt").write_text("someone's notes in the clone's submodule\n")
        res = run_way(way, ["submodule", "foreach", "true"], work, shim)
        assert res.returncode == 0, (way, res.stderr)
        assert (work / "clone/sub/notes.txt").exists(), way  # foreach true destroys nothing


# ---------------------------------------------------------------------------
# Plumbing, apply and autocorrect


PLUMBING = [
    ["read-tree", "-u", "--reset", "HEAD"],
    ["checkout-index", "-f", "-a"],
    ["apply", "-R", "work.patch"],
    ["-c", "help.autocorrect=-1", "rset", "--hard"],
]


@pytest.mark.parametrize("args", PLUMBING, ids=" ".join)
def test_plumbing_apply_and_autocorrect_rescue_what_they_overwrite(
    shim: Path, tmp_path: Path, args: list[str]
) -> None:
    for way in ways(args):
        work = fresh_repo(tmp_path / f"via-{way}")
        (work / "README").write_text("someone's edit\n")
        patch = subprocess.run(["git", "diff"], cwd=work, capture_output=True).stdout
        (work / "work.patch").write_bytes(patch)
        res = run_way(way, args, work, shim)
        assert res.returncode == 0, (way, res.stderr)
        assert (work / "README").read_text() == "hello\n", way
        assert b"someone's edit\n" in rescued(work, "README"), way


# ---------------------------------------------------------------------------
# Found by git's own test scripts: guards' read-only queries must not fail where git's
# command does not (t7003, t2011, t7406)


@pytest.mark.parametrize("way", ["guards-run", "shim"])
def test_a_file_named_like_a_commit_id_does_not_make_guards_queries_ambiguous(
    repo: Path, shim: Path, tmp_path: Path, way: str
) -> None:
    git(repo, "checkout", "-q", "-b", "other")
    (repo / "README").write_text("other\n")
    git(repo, "commit", "-qam", "other")
    git(repo, "checkout", "-q", "main")
    for rev in ("main", "other"):
        (repo / git(repo, "rev-parse", rev).strip()).write_text("named like a commit\n")
    (repo / "src" / "app.py").write_text("someone's edit\n")
    res = run_way(way, ["checkout", "-f", "other"], repo, shim)
    assert res.returncode == 0, res.stderr
    assert b"someone's edit\n" in rescued(repo, "src/app.py")
    git(repo, "checkout", "-q", "main")
    other = git(repo, "rev-parse", "other").strip()
    res = run_way(way, ["branch", "-D", "other"], repo, shim)
    assert res.returncode == 0, res.stderr
    assert held_by_rescue(repo, other)


ZERO_HEAD = [
    ["checkout", "main", "--"],
    ["checkout", "main"],
    ["switch", "main"],
    ["reset", "--hard"],
]


@pytest.mark.parametrize("args", ZERO_HEAD, ids=" ".join)
def test_head_holding_the_zero_id_is_left_to_git(
    repo: Path, shim: Path, tmp_path: Path, args: list[str]
) -> None:
    (repo / ".git" / "HEAD").write_text("0" * 40 + "\n")
    for way in ways(args):
        same_as_plain(repo, args, way, shim, tmp_path / f"via-{way}")
        (repo / ".git" / "HEAD").write_text("0" * 40 + "\n")


def _super_with_submodule(tmp_path: Path) -> Path:
    upstream = make_repo(tmp_path / "upstream", {"s": "one\n"})
    (upstream / "s").write_text("two\n")
    git(upstream, "commit", "-qam", "two")
    top = fresh_repo(tmp_path / "super")
    git(top, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(upstream), "sub")
    git(top, "commit", "-qm", "add sub")
    git(top, "config", "-f", ".gitmodules", "submodule.sub.update", "!false")
    git(top, "commit", "-qam", "a command in .gitmodules")
    git(top / "sub", "reset", "-q", "--hard", "HEAD^")
    return top


@pytest.mark.parametrize(
    "args", [["submodule", "update", "sub"], ["reset", "--hard"]], ids=" ".join
)
@pytest.mark.parametrize("way", ["guards-run", "shim"])
def test_a_command_in_gitmodules_is_left_to_git(
    shim: Path, tmp_path: Path, args: list[str], way: str
) -> None:
    top = _super_with_submodule(tmp_path)
    same_as_plain(top, args, way, shim, tmp_path / "plain")


def test_a_submodule_update_command_from_git_config_is_opaque(shim: Path, tmp_path: Path) -> None:
    top = _super_with_submodule(tmp_path)
    git(top, "config", "submodule.sub.update", "!false")
    (top / "notes.txt").write_text("someone's notes\n")
    res = run_way("shim", ["submodule", "update", "sub"], top, shim)
    assert res.returncode not in (0, 20), res.stderr  # git runs `false`
    assert b"someone's notes\n" in rescued(top, "notes.txt")


# ---------------------------------------------------------------------------
# Submodule recursion: a setting, an option or `rm -f` resets a submodule's files


def _dirty_submodule(tmp_path: Path) -> Path:
    upstream = make_repo(tmp_path / "upstream", {"s": "one\n"})
    top = fresh_repo(tmp_path / "super")
    git(top, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(upstream), "sub")
    git(top, "commit", "-qm", "add sub")
    (top / "sub" / "s").write_text("carol's change inside the submodule\n")
    return top


def _held_in_the_submodule(top: Path) -> bool:
    gitdir = top / ".git" / "modules" / "sub"
    refs = git(gitdir, "--work-tree", ".", "for-each-ref", "--format=%(refname)", "refs/rescue")
    return any(
        git(gitdir, "--work-tree", ".", "show", f"{ref}:s", check=False)
        == "carol's change inside the submodule\n"
        for ref in refs.split()
    )


@pytest.mark.parametrize(
    ("setting", "args"),
    [
        ("true", ["reset", "--hard"]),
        ("true", ["checkout", "--", "."]),
        ("false", ["checkout", "-f", "--recurse-submodules", "HEAD"]),
        ("false", ["rm", "-f", "sub"]),
    ],
    ids=lambda x: " ".join(x) if isinstance(x, list) else f"submodule.recurse={x}",
)
def test_recursing_into_a_dirty_submodule_rescues_its_work_first(
    shim: Path, tmp_path: Path, setting: str, args: list[str]
) -> None:
    for way in ways(args):
        top = _dirty_submodule(tmp_path / way)
        git(top, "config", "submodule.recurse", setting)
        res = run_way(way, args, top, shim)
        assert res.returncode == 0, (way, res.stderr)
        assert _held_in_the_submodule(top), (way, res.stderr)


# ---------------------------------------------------------------------------
# Found by git's own test scripts: global options and variables that only some commands
# accept must not reach guards' own queries (t1001)


@pytest.mark.parametrize(
    "spelling",
    [["--super-prefix", "fictional/"], ["--super-prefix=fictional/"], []],
    ids=["option", "option=", "variable"],
)
@pytest.mark.parametrize("way", ["guards-run", "shim"])
def test_a_super_prefix_does_not_break_guards_queries(
    repo: Path, shim: Path, way: str, spelling: list[str]
) -> None:
    (repo / "README").write_text("someone's edit\n")
    env = {} if spelling else {"GIT_INTERNAL_SUPER_PREFIX": "fictional/"}
    args = [*spelling, "read-tree", "-u", "--reset", "HEAD"]
    res = run_way(way, args, repo, shim, env=env)
    assert res.returncode == 0, res.stderr
    assert (repo / "README").read_text() == "hello\n"
    assert b"someone's edit\n" in rescued(repo, "README")


@pytest.mark.parametrize("way", ["guards-run", "shim"])
def test_a_super_prefix_the_command_does_not_support_is_left_to_git(
    repo: Path, shim: Path, tmp_path: Path, way: str
) -> None:
    (repo / "README").write_text("someone's edit\n")
    same_as_plain(repo, ["--super-prefix", "x/", "reset", "--hard"], way, shim, tmp_path)


@pytest.mark.parametrize("way", ["guards-run", "shim"])
def test_read_tree_into_an_empty_index_file_is_left_to_git(
    repo: Path, shim: Path, tmp_path: Path, way: str
) -> None:
    # t1009: read-tree without -m never reads the index it replaces; git reads no empty one
    (repo / "new-index").write_bytes(b"")
    (repo / "README").write_text("someone's edit\n")
    twin = tmp_path / "plain-twin"
    shutil.copytree(repo, twin, symlinks=True)
    env = {"GIT_INDEX_FILE": "new-index"}
    plain = run_via("plain", ["read-tree", "main"], twin, env=env)
    guarded = run_way(way, ["read-tree", "main"], repo, shim, env=env)
    assert (guarded.returncode, guarded.stdout, guarded.stderr) == (0, b"", b"")
    assert plain.returncode == 0
    assert rescue_refs(repo) == []
    assert (repo / "new-index").read_bytes() == (twin / "new-index").read_bytes()


@pytest.mark.parametrize("way", ["guards-run", "shim"])
def test_read_tree_keeps_the_staged_work_of_the_index_it_replaces(
    repo: Path, shim: Path, way: str
) -> None:
    (repo / "README").write_text("someone's staged version\n")
    git(repo, "add", "README")
    (repo / "README").write_text("hello\n")
    res = run_way(way, ["read-tree", "HEAD"], repo, shim)
    assert res.returncode == 0, res.stderr
    assert b"someone's staged version\n" in rescued(repo, "README")


@pytest.mark.parametrize("way", ["guards-run", "shim"])
def test_a_file_an_attribute_now_filters_differently_is_rescued_raw(
    tmp_path: Path, shim: Path, way: str
) -> None:
    # t1051: added under eol=crlf, then ident is set: git finds the file unchanged by its
    # stat data, yet the filters now in force give another blob than the index's
    repo = make_repo(tmp_path / "r", {"README": "hello\n"})
    (repo / "small").write_bytes(b"$Id: foo$\r\n")
    os.utime(repo / "small", (1, 1))  # older than the index will be: never racy
    (repo / ".gitattributes").write_text("* eol=crlf\n")
    git(repo, "add", "small")
    (repo / ".gitattributes").write_text("* ident\n")
    res = run_way(way, ["read-tree", "--empty"], repo, shim)
    assert res.returncode == 0, res.stderr
    assert b"$Id: foo$\r\n" in rescued(repo, "small")


@pytest.mark.parametrize("args", [["stash", "-u"], ["clean", "-fdx"]], ids=" ".join)
@pytest.mark.parametrize("way", ["guards-run", "shim"])
def test_guards_writes_nothing_into_a_work_tree_that_is_home(
    tmp_path: Path, shim: Path, way: str, args: list[str]
) -> None:
    # t3905: HOME is the work tree (the dotfiles pattern): guards' registry of repositories
    # must not appear there as untracked work for stash -u to take or clean to delete
    repo = make_repo(tmp_path / "home", {"README": "hello\n"})
    (repo / "notes.txt").write_text("someone's notes\n")
    env = {"HOME": str(repo), "XDG_DATA_HOME": "", "XDG_STATE_HOME": ""}
    res = run_way(way, args, repo, shim, env=env)
    assert res.returncode == 0, res.stderr
    assert not (repo / ".local").exists()
    assert git(repo, "status", "--porcelain", "--ignored") == ""
    if args[0] == "stash":
        listed = git(repo, "show", "--name-only", "--format=", "stash@{0}^3")
        assert listed.split() == ["notes.txt"]


@pytest.mark.parametrize("way", ["guards-run", "shim"])
def test_filter_branch_in_a_bare_repository_is_left_to_git(
    repo: Path, shim: Path, way: str
) -> None:
    # t7003: guards asked a bare repository for its status, which git refuses
    git(repo, "config", "core.bare", "true")
    env = {"FILTER_BRANCH_SQUELCH_WARNING": "1"}
    res = run_way(way, ["filter-branch", "main"], repo / ".git", shim, env=env)
    assert res.returncode == 0, res.stderr
    assert b"fatal" not in res.stderr


def test_a_branch_name_that_is_not_utf8_is_read_as_git_keeps_it(tmp_path: Path) -> None:
    """git takes any bytes in a branch name: HEAD on `caf\\xe9` (Latin-1) is read with
    os.fsdecode, never str.decode (the push predictor's own read of HEAD died on it:
    exit 3, and git did not run)."""
    repo = make_repo(tmp_path / "r", {"f": "x\n"})
    name = os.fsdecode(b"caf\xe9")
    git(repo, "checkout", "-q", "-b", name)
    res = run_via("guards-run", ["push", ".", "HEAD:refs/heads/other"], repo)
    assert res.returncode == 0, res.stderr
    assert git(repo, "rev-parse", "other") == git(repo, "rev-parse", "HEAD")
    res = run_via("guards-run", ["reset", "-q", "--hard", "HEAD"], repo)
    assert res.returncode == 0 and res.stderr == b"", res.stderr
