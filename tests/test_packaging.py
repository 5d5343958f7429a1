"""What a plain (non-editable) install ships: every package of the source tree."""

from __future__ import annotations

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
