"""What a plain (non-editable) install ships: every package of the source tree."""

from __future__ import annotations

import ast
import os
import re
import sys

from tests.helpers import PROJECT_ROOT

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


def test_every_package_directory_is_listed_in_pyproject() -> None:
    config = tomllib.loads((PROJECT_ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    listed = set(config["tool"]["setuptools"]["packages"])
    found = {
        ".".join(init.parent.relative_to(PROJECT_ROOT).parts)
        for init in (PROJECT_ROOT / "guards").rglob("__init__.py")
    }
    assert found - listed == set()
    assert "guards_hooks" in listed


def _runtime_imports() -> set[str]:
    """Top-level modules that the shipped code imports, besides the standard library."""
    found: set[str] = set()
    for source in [
        *(PROJECT_ROOT / "guards").rglob("*.py"),
        *(PROJECT_ROOT / "hooks").rglob("*.py"),
    ]:
        tree = ast.parse(source.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                found.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                found.add(node.module.split(".")[0])
    return {
        name
        for name in found
        if name not in sys.stdlib_module_names and name not in {"guards", "guards_hooks"}
    }


def test_runtime_dependencies_are_exactly_what_the_runtime_imports() -> None:
    config = tomllib.loads((PROJECT_ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    declared = {
        re.split(r"[<>=!~;\[ ]", dep, maxsplit=1)[0].replace("-", "_").lower()
        for dep in config["project"]["dependencies"]
    }

    assert declared == _runtime_imports()
    assert "pre_commit" not in declared
    assert any(
        d.startswith("pre-commit") for d in config["project"]["optional-dependencies"]["test"]
    )


def test_license_and_changelog_name_the_release() -> None:
    config = tomllib.loads((PROJECT_ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    version = config["project"]["version"]
    changelog = (PROJECT_ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    licence = (PROJECT_ROOT / "LICENSE").read_text(encoding="utf-8")

    assert config["project"]["license"] == "MIT"  # an SPDX expression (setuptools >= 77)
    assert config["project"]["license-files"] == ["LICENSE"]
    assert licence.startswith("MIT License") and "the guards authors" in licence
    assert re.search(rf"^## {re.escape(version)}\b", changelog, re.MULTILINE)
    assert f"v{version}" in changelog or "v<version>" in changelog


def test_distribution_name_is_git_guards_and_the_command_guards() -> None:
    config = tomllib.loads((PROJECT_ROOT / "pyproject.toml").read_text(encoding="utf-8"))

    assert config["project"]["name"] == "git-guards"
    assert config["tool"]["setuptools"]["script-files"] == ["bin/guards"]
    assert "scripts" not in config["project"]  # pip's entry-point wrapper imports re


def test_the_command_script_imports_only_guards_main_and_its_start_and_exit() -> None:
    """Every `guards ...` an agent or a hook runs starts this script: what it imports
    beyond guards' own dispatch is paid on every call (guards.errors is dispatch's own)."""
    import ast

    script = PROJECT_ROOT / "bin" / "guards"
    tree = ast.parse(script.read_text(encoding="utf-8"))
    imported = [
        alias.name if isinstance(node, ast.Import) else f"{node.module}:{alias.name}"
        for node in ast.walk(tree)
        if isinstance(node, (ast.Import, ast.ImportFrom))
        for alias in node.names
    ]
    assert imported == [
        "guards.errors:collect_rarely",
        "guards.errors:exit_now",
        "guards.main:main",
    ]
    assert script.read_text(encoding="utf-8").startswith("#!python\n")  # pip sets the path
    assert os.access(script, os.X_OK)


def _readme_setup_commands() -> list[str]:
    readme = (PROJECT_ROOT / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("## Set-up") : readme.index("## Concepts in one minute")]
    return re.findall(r"```sh\n(.*?)\n```", section, re.DOTALL)


def test_readme_set_up_never_installs_into_the_system_python() -> None:
    demo, tests = _readme_setup_commands()

    # PEP 668: a stock Debian/Ubuntu python3 refuses `pip install`; both commands make a
    # virtual environment first, and the demo leaves `guards` on PATH.
    assert demo.startswith("python3 -m venv ") and demo.endswith("&& guards demo")
    assert "ln -sf" in demo and "/.local/bin/guards" in demo
    assert tests.startswith("python3 -m venv .venv && . .venv/bin/activate && ")


def test_ci_runs_the_readme_test_command() -> None:
    _, tests = _readme_setup_commands()
    ci = (PROJECT_ROOT / ".ci" / "run").read_text(encoding="utf-8")
    install, _, runs = tests.partition(" && python3 -m pytest")
    pytest_commands = [f"python3 -m pytest{run}" for run in runs.split(" && python3 -m pytest")]

    # compat: a plain path in a .pth; setuptools' default editable finder costs every
    # Python the suite starts (the shim's, the aliases', the hooks') ~15 ms of imports.
    editable = "-e '.[test]' --config-settings editable_mode=compat"
    assert install.endswith(f"python3 -m pip install {editable}")
    assert editable in ci
    # The README's venv, made and entered as the README does, before the install.
    steps = [line.strip() for line in ci.splitlines()]
    venv, activate = install.split(" && ")[:2]
    assert (
        steps.index(venv)
        < steps.index(activate)
        < next(i for i, line in enumerate(steps) if editable in line)
    )
    # The hermetic suite, then the tests that need a package index (npm, pip), in order.
    assert pytest_commands == ["python3 -m pytest", "python3 -m pytest -m index"]
    lines = ci.splitlines()
    assert [line.strip() for line in lines if line.strip() in pytest_commands] == pytest_commands
