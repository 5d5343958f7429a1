"""guards demo tells the whole story and leaves nothing behind."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import run_guards


def test_demo_shows_rescue_and_restore(tmp_path: Path) -> None:
    res = run_guards("demo", "--dir", str(tmp_path), cwd=tmp_path)
    assert res.returncode == 0, res.stdout + res.stderr
    out = res.stdout
    assert "[bob] $ git safe-reset --hard" in out
    assert "guards: rescued 2 paths of session alice to refs/rescue/alice/" in out
    assert "[alice] $ guards rescue restore --index refs/rescue/alice/" in out
    assert "Discounts: agreed with finance" in out.split("cat NOTES.md", 1)[1]
    assert list(tmp_path.iterdir()) == []  # the scratch repository is gone


def test_demo_keep_leaves_the_repository(tmp_path: Path) -> None:
    res = run_guards("demo", "--keep", "--dir", str(tmp_path), cwd=tmp_path)
    assert res.returncode == 0
    (scratch,) = tmp_path.iterdir()
    assert (scratch / "shop" / "NOTES.md").exists()
