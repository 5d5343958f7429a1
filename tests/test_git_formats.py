"""guards.git's knowledge of git's formats, checked against git itself."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from guards.git.objects import blob_oid, empty_tree, file_blob_oid, zero_oid
from guards.git.quoting import c_unquote, parse_clean_output, unquote_path
from tests.helpers import git


@pytest.mark.parametrize("object_format", ["sha1", "sha256"])
def test_empty_tree_zero_id_and_blob_ids_are_gits_own(tmp_path: Path, object_format: str) -> None:
    repo = tmp_path / object_format
    git(tmp_path, "init", "-q", f"--object-format={object_format}", str(repo))
    assert git(repo, "hash-object", "-t", "tree", "/dev/null").strip() == empty_tree(object_format)
    assert len(zero_oid(object_format)) == len(empty_tree(object_format))
    data = b"raw \r\n bytes \0 and more"
    (repo / "f").write_bytes(data)
    expected = git(repo, "hash-object", "--no-filters", "f").strip()
    assert blob_oid(data, object_format) == expected
    assert file_blob_oid(str(repo / "f"), len(data), object_format) == expected
    assert file_blob_oid(str(repo / "f"), len(data) + 1, object_format) == ""


def test_one_blob_id_for_small_data_without_hashlib() -> None:
    """guards record's fingerprint had its own blob hash (CPython's SHA modules, no
    OpenSSL at start-up); it is guards.git.objects.blob_oid now, and it stays light."""
    code = (
        "import sys; from guards.git.objects import blob_oid, object_oid\n"
        "for f in ('sha1', 'sha256'):\n"
        "    assert blob_oid(b'x\\0y', f) != ''\n"
        "assert 'hashlib' not in sys.modules, 'hashlib imported'\n"
        "for f in ('sha1', 'sha256'):\n"
        "    assert blob_oid(b'x\\0y', f) == object_oid(b'blob', b'x\\0y', f)\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_every_path_git_quotes_is_unquoted_back(tmp_path: Path) -> None:
    """One C-unquoting for git's output and guards' own trailers: the trailer reader used
    to miss git's \\a \\b \\v \\f escapes."""
    repo = tmp_path / "r"
    git(tmp_path, "init", "-q", str(repo))
    names = ["tab\there", "bell\a", "vt\vff\f", "bs\b", 'quote"', "back\\slash", "é", "cr\r"]
    for name in names:
        (repo / name).write_text("x")
    listed = subprocess.run(
        ["git", "ls-files", "--others"], cwd=repo, capture_output=True, check=True
    ).stdout
    quoted = [line for line in listed.split(b"\n") if line]
    assert sorted(os.fsdecode(c_unquote(q)) for q in quoted) == sorted(names)
    assert sorted(unquote_path(q.decode("ascii")) for q in quoted) == sorted(names)


def test_clean_dry_run_lines_keep_spaces_and_directory_slashes() -> None:
    out = b'Would remove  lead space\nWould remove dir/\nWould remove "a\\tb"\n'
    out += b"Would skip repository nested/\n"
    assert parse_clean_output(out) == ([" lead space", "dir/", "a\tb"], ["nested/"])
