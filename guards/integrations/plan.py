"""What ``guards install`` and ``guards uninstall`` plan: the steps each integration
(aliases and shim, native hooks, harness settings) contributes, and applying them."""

from __future__ import annotations

from pathlib import Path

from guards.integrations.installation import Step

TYPE_CHECKING = False
if TYPE_CHECKING:
    from guards.git.repo import Repo


#: The agent harnesses whose settings guards installs into.
HARNESS_NAMES = ("claude", "codex", "gemini", "copilot", "qwen", "opencode", "droid")


def harness_steps(
    harnesses: list[str],
    scope: str | None,
    repo: Repo | None,
    *,
    install: bool,
    shared: bool = False,
) -> list[Step]:
    """The Claude Code / Codex / Gemini CLI / GitHub Copilot CLI / Qwen Code / Droid settings
    changes (opencode: its plugin file) asked for
    (integrations.harness_settings); ``scope`` None: the project's files inside a
    repository, else the user's. Installing into a project writes Claude Code's personal
    settings.local.json unless ``shared``; uninstalling takes our hooks out of both."""
    from guards.integrations import harness_settings

    scope = scope or ("project" if repo is not None else "user")
    project = Path(repo.toplevel) if repo is not None and repo.toplevel is not None else None
    steps: list[Step] = []
    for harness in harnesses:
        if install:
            path = harness_settings.settings_path(harness, scope, project, shared=shared)
            steps += harness_settings.plan_install(harness, path)
            continue
        for path in sorted(harness_settings.hook_files(harness, scope, project)):
            steps += uninstall_steps(harness, path)
    return steps


def uninstall_steps(harness: str, path: Path) -> list[Step]:
    """Our hooks out of ``path``; for Codex, its trust in them too."""
    from guards.integrations import codex_trust, harness_settings

    steps = codex_trust.plan_untrust(path) if harness == "codex" else []
    return steps + harness_settings.plan_uninstall(harness, path)


def harnesses(args: object) -> list[str]:
    """The harnesses a command line names (``--claude``, ``--codex``, ``--gemini``,
    ``--copilot``, ``--qwen``, ``--opencode``, ``--droid``)."""
    return [name for name in HARNESS_NAMES if getattr(args, name, False)]


def repo_or_none() -> Repo | None:
    from guards.git.repo import NotARepositoryError, discover

    try:
        return discover()
    except NotARepositoryError:
        return None


def hook_steps(repo: Repo, *, install: bool) -> list[Step]:
    """Native hooks plan themselves (integrations.native_hooks); one step applies them all."""
    from guards.integrations import native_hooks

    change = native_hooks.install_native_hooks if install else native_hooks.uninstall_native_hooks
    lines = change(repo, dry_run=True)
    if not lines:
        return []

    def apply() -> None:
        change(repo, dry_run=False)

    return [Step("\n".join(lines), apply)]


def execute(steps: list[Step], dry_run: bool) -> None:
    if not steps:
        print("nothing to do: already set up")
        return
    for step in steps:
        if not dry_run:
            step.apply()
        for line in step.description.splitlines():
            print(f"would {line}" if dry_run else line)
