"""Is each installed guard effective? Never assume it: the interpreter each alias, the
shim, each native hook and each harness setting will run; the pre-commit framework's
config entries and installed hook types; a shim that is installed but not on PATH;
dirty work in linked worktrees."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from guards.doctor.findings import Context, Finding, Level, listing, plural
from guards.integrations.installation import (
    artifact_runner,
    launches_safely,
    read_manifest,
    user_manifest_path,
)

#: hook id -> the git hook types its stages need (.pre-commit-hooks.yaml)
FRAMEWORK_HOOKS: dict[str, tuple[str, ...]] = {
    "guards-foreign-commit": ("pre-commit",),
    "guards-mass-deletion": ("pre-commit",),
    "guards-ledger-sync": ("post-commit", "post-checkout", "post-merge", "post-rewrite"),
    "guards-push-breaker": ("pre-push",),
}


def _runner_finding(check: str, what: str, text: str, fix: str) -> Finding | None:
    """A warning or problem when ``what`` (an installed artifact) will not run the guards
    it recorded; None when it will."""
    how, where = artifact_runner(text)
    if how == "recorded" and launches_safely(text):
        return None
    if how == "recorded":
        return Finding(
            Level.WARN,
            "setup",
            check,
            f"{what}: an older guards wrote it, and it starts Python with the project's "
            "directory first on the module path: a json.py or enum.py in the project "
            "stops it (a harness then runs the command unchecked)",
            fix,
            {"runs": "recorded", "launch": "python -m"},
        )
    if how == "path":
        return Finding(
            Level.WARN,
            "setup",
            check,
            f"{what}: the interpreter it recorded ({where or '?'}) no longer has guards; it "
            f"runs the guards on PATH instead",
            fix,
            {"runs": "path"},
        )
    return Finding(
        Level.PROBLEM,
        "setup",
        check,
        f"{what}: guards is gone (the interpreter it recorded, {where or '?'}, no longer "
        f"has it, and no guards is on PATH): it refuses or checks nothing",
        f"reinstall git-guards, then {fix}",
        {"runs": None},
    )


def check_artifacts(ctx: Context) -> list[Finding]:
    """Aliases, the shim on PATH, native hooks and harness settings: what each runs."""
    from guards.git import process as git

    findings: list[Finding] = []
    args = ["config", "-z", "--get-regexp", r"^alias\.safe-"]
    run = ctx.repo.run if ctx.repo is not None else git.run
    out = run(args, check=False).stdout
    for record in git.zsplit(out):
        key, _, value = os.fsdecode(record).partition("\n")
        name = key.removeprefix("alias.")
        if "guards" in value:
            f = _runner_finding("aliases-runner", f"alias {name}", value, "guards install")
            if f:
                findings.append(f)
                break  # one line for the six: they were written together
    from guards.doctor.setup import first_git_on_path

    first = first_git_on_path()
    if first is not None and git.is_shim(first):
        text = Path(first).read_text(errors="replace")
        fix = f"guards install --shim {os.path.dirname(first)}"
        f = _runner_finding("shim-runner", f"the git shim {first}", text, fix)
        if f:
            findings.append(f)
    if ctx.repo is not None:
        from guards.integrations.native_hooks import installed_native_hooks

        hooks_dir = ctx.repo.hooks_dir()
        for hook in installed_native_hooks(ctx.repo):
            text = (hooks_dir / hook).read_text(errors="replace")
            f = _runner_finding(
                "hooks-runner", f"the native {hook} hook", text, "guards install --hooks"
            )
            if f:
                findings.append(f)
                break
    findings += _harness_findings(ctx)
    return findings


def _harness_findings(ctx: Context) -> list[Finding]:
    from guards.integrations import harness_settings

    project = Path(ctx.repo.toplevel) if ctx.repo is not None and ctx.repo.toplevel else None
    paths: list[tuple[str, Path]] = []
    for harness in ("claude", "codex", "gemini", "copilot", "qwen", "droid"):
        if harness != "copilot":  # Copilot's hooks are the repository's only
            paths += [(harness, p) for p in harness_settings.hook_files(harness, "user", None)]
        if project is not None:
            files = harness_settings.hook_files(harness, "project", project)
            paths += [(harness, p) for p in files]
    findings: list[Finding] = _opencode_findings(project)
    for harness, path in dict.fromkeys(paths):
        if not path.is_file():
            continue
        try:
            doc = harness_settings.read_hooks(harness, path)
        except Exception:
            continue
        commands = harness_settings.our_commands(doc)
        if commands:
            fix = f"guards install --{harness}" + (
                " --user"
                if path.is_relative_to(Path.home())
                and (project is None or not path.is_relative_to(project))
                else ""
            )
            f = _runner_finding(
                "harness-runner", f"the {harness} hooks in {path}", commands[0], fix
            )
            if f:
                findings.append(f)
            findings += _coverage_findings(harness, doc, path, fix)
            findings += _timeout_findings(harness, doc, path, fix)
            if harness == "codex":
                findings += _codex_trust_findings(ctx, doc, path, project, fix)
            if project is not None and path.is_relative_to(project):
                findings += _folder_trust_findings(harness, project)
    return findings


def _coverage_findings(harness: str, doc: dict[str, Any], path: Path, fix: str) -> list[Finding]:
    """A problem when our hooks in ``path`` miss an event install hooks (or hook it under
    another matcher): that event's tools run unguarded."""
    from guards.integrations import harness_settings

    missing = harness_settings.uncovered_events(harness, doc)
    if not missing:
        return []
    return [
        Finding(
            Level.PROBLEM,
            "setup",
            "harness-events",
            f"the {harness} hooks in {path} leave out {listing(missing)}, or hook it for "
            f"fewer tools than guards watches (an older guards installed them, or they were "
            f"edited): what {harness} sends there reaches no guard, and it says nothing",
            fix,
            {"missing": missing},
        )
    ]


def _timeout_findings(harness: str, doc: dict[str, Any], path: Path, fix: str) -> list[Finding]:
    """A problem when one of our hooks in ``path`` may time out before its guard is done:
    the harness then gives up on it and runs the tool without waiting (Gemini CLI 0.61,
    seen in tests/e2e/test_gemini.py)."""
    from guards.integrations import harness_settings

    short = harness_settings.short_timeouts(harness, doc)
    if not short:
        return []
    return [
        Finding(
            Level.PROBLEM,
            "setup",
            "harness-timeouts",
            f"the {harness} hooks in {path} time out too soon for a guard: "
            f"{listing(short)}; {harness} then runs the tool without waiting for the "
            f"guard, whose rescue races it",
            fix,
            {"short": short},
        )
    ]


def _opencode_findings(project: Path | None) -> list[Finding]:
    """guards' opencode plugin (the project's, the user's): what its hook command runs, and
    a plugin install wrote that is gone."""
    from guards.integrations import opencode_plugin

    findings: list[Finding] = []
    places = [("user", opencode_plugin.plugin_path("user", None))]
    if project is not None:
        places.append(("project", opencode_plugin.plugin_path("project", project)))
    installed = {str(p) for p in opencode_plugin.installed_plugins()}
    for scope, path in places:
        fix = "guards install --opencode" + (" --user" if scope == "user" else "")
        script = opencode_plugin.hook_script_of(path)
        if script is None:
            if str(path.absolute()) in installed:
                findings.append(
                    Finding(
                        Level.PROBLEM,
                        "setup",
                        "opencode-plugin-missing",
                        f"guards installed its opencode plugin as {path}, and it is gone (or "
                        "replaced): opencode runs no guards hook there, and says nothing",
                        fix,
                        {"plugin": str(path)},
                    )
                )
            continue
        f = _runner_finding("harness-runner", f"the opencode plugin {path}", script, fix)
        if f:
            findings.append(f)
    return findings


def _folder_trust_findings(harness: str, project: Path) -> list[Finding]:
    """Gemini CLI, Qwen Code (with its folder trust on) and GitHub Copilot CLI ignore a
    project's hooks, ours included, in a folder they do not trust, without a word (Copilot
    headless still runs the model's shell commands there): an error with its fix, never
    "ok". (Hooks in the user's settings: the harness asks about trust when it starts.)"""
    from guards.integrations import harness_settings

    problem_of = {
        "gemini": harness_settings.gemini_trust_problem,
        "qwen": harness_settings.qwen_trust_problem,
        "copilot": harness_settings.copilot_trust_problem,
    }.get(harness)
    problem = None if problem_of is None else problem_of(project)
    if problem is None:
        return []
    return [_trust_finding(f"{harness}-untrusted", problem, project)]


def _trust_finding(check: str, problem: str, project: Path) -> Finding:
    """A harness's "<why>. Trust it: <step>" as a problem finding."""
    message, _, step = problem.partition(". Trust it: ")
    return Finding(
        Level.PROBLEM, "setup", check, message, f"trust it: {step}", {"project": str(project)}
    )


def _codex_trust_findings(
    ctx: Context, doc: dict[str, Any], path: Path, project: Path | None, fix: str
) -> list[Finding]:
    """Codex skips hooks it does not trust, in a project it does not trust, without a
    word: each is an error with its fix, never "ok"."""
    from guards.errors import UsageError
    from guards.integrations import codex_trust

    config = codex_trust.config_path()
    try:
        _text, settings = codex_trust.read_config(config)
    except UsageError as e:
        return [Finding(Level.PROBLEM, "setup", "codex-config", str(e), f"fix {config}")]
    root = None
    if project is not None and ctx.repo is not None and path.is_relative_to(project):
        root = codex_trust.trust_root(project, ctx.repo.common_dir)
    trust = codex_trust.assess(doc, path, root, settings)
    return [
        Finding(
            Level.PROBLEM,  # turned off by the user too: nothing is guarded there
            "setup",
            check,
            message,
            step,
            {"hooks": str(path), "config": str(config)},
        )
        for check, message, step in codex_trust.problems(trust, path, f"{fix} --trust")
    ]


def _framework_config(toplevel: Path) -> str | None:
    try:
        return (toplevel / ".pre-commit-config.yaml").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def check_framework(ctx: Context) -> list[Finding]:
    """A hook written by the pre-commit framework guards nothing unless the config lists
    guards' hooks and the hook types they need are installed."""
    repo = ctx.repo
    if repo is None or repo.toplevel is None:
        return []
    from guards.doctor.setup import classify_hook

    hooks_dir = repo.hooks_dir()
    framework = {
        name
        for name in (
            "pre-commit",
            "post-commit",
            "post-checkout",
            "post-merge",
            "post-rewrite",
            "pre-push",
        )
        if (hooks_dir / name).is_file() and classify_hook(hooks_dir / name) == "pre-commit"
    }
    if not framework:
        return []
    config = _framework_config(Path(repo.toplevel))
    listed = [
        hook_id
        for hook_id in FRAMEWORK_HOOKS
        if config is not None
        and re.search(rf"^\s*-?\s*id:\s*['\"]?{hook_id}['\"]?\s*$", config, re.MULTILINE)
    ]
    if not listed:
        return [
            Finding(
                Level.WARN,
                "setup",
                "framework-config",
                "the pre-commit framework's hooks are installed, but .pre-commit-config.yaml "
                "lists none of guards' hooks: they check nothing",
                'add guards\' hooks to .pre-commit-config.yaml (README, "With pre-commit")',
                {"listed": []},
            )
        ]
    missing = {
        hook_id: [t for t in FRAMEWORK_HOOKS[hook_id] if t not in framework] for hook_id in listed
    }
    missing = {k: v for k, v in missing.items() if v}
    if missing:
        types = sorted({t for v in missing.values() for t in v})
        return [
            Finding(
                Level.WARN,
                "setup",
                "framework-hook-types",
                f"{listing(sorted(missing))} never run{'s' if len(missing) == 1 else ''}: "
                f"hook type{'s' if len(types) != 1 else ''} {listing(types)} not installed",
                "pre-commit install "
                + " ".join(f"-t {t}" for t in types)
                + " (or list them in default_install_hook_types)",
                {"missing": missing},
            )
        ]
    return [
        Finding(
            Level.OK,
            "setup",
            "framework-config",
            f"the pre-commit framework runs {listing(listed)}",
            data={"listed": listed},
        )
    ]


def check_shim_on_path(ctx: Context) -> list[Finding]:
    """A shim that `guards install --shim` wrote but that is not the `git` on PATH guards
    nothing."""
    from guards.doctor.setup import first_git_on_path
    from guards.git import process as git

    shims = [d for d in read_manifest(user_manifest_path()).get("shims", []) if isinstance(d, str)]
    first = first_git_on_path()
    idle = [
        d
        for d in shims
        if os.path.isfile(os.path.join(d, "git")) and (first is None or os.path.dirname(first) != d)
    ]
    if not idle or (first is not None and git.is_shim(first)):
        return []
    return [
        Finding(
            Level.WARN,
            "setup",
            "shim-not-on-path",
            f"the git shim in {idle[0]} is installed but `git` on PATH is {first}: plain git "
            f"is not guarded",
            f'export PATH="{idle[0]}:$PATH" (in your shell\'s profile)',
            {"shims": idle, "git": first},
        )
    ]


def _dirty_counts(worktrees: list[str]) -> tuple[dict[str, int], list[str]]:
    """(worktree -> dirty paths where there are any, worktrees whose status cannot be
    read). A few ``git status`` run at a time (hundreds of worktrees of 100,000 files
    each are a fleet's normal), each only counted; one that fails is read again the
    careful way (:func:`read_dirty`, which steps around a submodule git cannot read)."""
    from guards.git import process as git
    from guards.git.dirty import count_porcelain_v2, read_dirty
    from guards.git.repo import discover

    at_once = max(2, os.cpu_count() or 2)
    dirty: dict[str, int] = {}
    unreadable: list[str] = []
    pending: list[tuple[str, git.Pending]] = []

    def finish(path: str, started: git.Pending) -> None:
        res = started.result(check=False)
        try:
            count = (
                count_porcelain_v2(res.stdout)
                if res.returncode == 0
                else len(read_dirty(discover(path)))
            )
        except Exception:
            unreadable.append(path)
            return
        if count:
            dirty[path] = count

    for path in worktrees:
        if len(pending) >= at_once:
            finish(*pending.pop(0))
        pending.append((path, git.start(git.status_args(), cwd=path)))
    for path, started in pending:
        finish(path, started)
    return {p: dirty[p] for p in worktrees if p in dirty}, unreadable


def check_worktrees_dirty(ctx: Context) -> list[Finding]:
    """Dirty work in the other worktrees of this repository (doctor's `dirty` looks at
    this one only)."""
    repo = ctx.repo
    if repo is None:
        return []
    here = os.path.realpath(repo.toplevel) if repo.toplevel else None
    others = [
        w.path
        for w in ctx.git_worktrees()
        if not w.bare and w.prunable is None and os.path.realpath(w.path) != here
    ]
    dirty, unreadable = _dirty_counts(others)
    findings = []
    if dirty:
        first = next(iter(dirty))
        findings.append(
            Finding(
                Level.WARN,
                "worktrees",
                "worktrees-dirty",
                f"{plural(len(dirty), 'other worktree')} hold{'s' if len(dirty) == 1 else ''} "
                f"uncommitted work: "
                + ", ".join(f"{p} ({plural(n, 'dirty path')})" for p, n in dirty.items()),
                f"cd {first} && guards status",
                {"worktrees": dirty},
            )
        )
    if unreadable:
        findings.append(
            Finding(
                Level.PROBLEM,
                "worktrees",
                "worktrees-dirty",
                f"could not read the status of {listing(unreadable)}",
                f"cd {unreadable[0]} && git status",
                {"unreadable": unreadable},
            )
        )
    return findings
