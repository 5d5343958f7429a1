"""The ledger: concurrent writers, a SIGKILLed lock holder, untrustworthy files, the
journal (records appended without a lock, compaction, torn records)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from guards.state.ledger import SCHEMA, Ledger, LedgerUnreadableError
from tests.helpers import git, ledger_doc, run_guards


def ledger_file(repo: Path) -> Path:
    """The snapshot file."""
    return repo / ".git" / "guards" / "ledger.json"


def write_schema_1(repo: Path, paths: dict[str, dict[str, object]] | None = None) -> None:
    """A ledger as guards wrote it before the journal (one JSON document)."""
    ledger_file(repo).parent.mkdir(exist_ok=True)
    doc = {"schema": 1, "sessions": {}, "paths": {str(repo.resolve()): paths or {}}}
    ledger_file(repo).write_text(json.dumps(doc))


def test_ledger_lives_in_common_dir_shared_by_linked_worktrees(repo: Path, tmp_path: Path) -> None:
    git(repo, "worktree", "add", "-q", str(tmp_path / "wt"))
    (tmp_path / "wt" / "new.txt").write_text("x")
    res = run_guards("record", "--session", "alice", "new.txt", cwd=tmp_path / "wt")
    assert res.returncode == 0, res.stderr
    assert (repo / ".git" / "guards" / "ledger.journal").exists()
    data = ledger_doc(repo)
    assert data["schema"] == SCHEMA
    assert "new.txt" in data["paths"][str((tmp_path / "wt").resolve())]


def test_ledger_files_are_owner_only(repo: Path) -> None:
    (repo / "a").write_text("x")
    assert run_guards("record", "--session", "s1", "a", cwd=repo).returncode == 0
    Ledger(ledger_file(repo).parent).compact()  # the snapshot too
    files = sorted(p.name for p in ledger_file(repo).parent.iterdir())
    assert files == ["ledger.journal", "ledger.json", "ledger.lock"]
    for p in ledger_file(repo).parent.iterdir():
        assert p.stat().st_mode & 0o077 == 0, p
    assert ledger_file(repo).parent.stat().st_mode & 0o077 == 0


def test_ledger_is_never_committed(repo: Path) -> None:
    (repo / "a").write_text("x")
    run_guards("record", "--session", "s1", "a", cwd=repo)
    assert "guards" not in git(repo, "status", "--porcelain", "--ignored")


_WRITER = """
import sys
from guards.state.workspace import Workspace
from guards.state.workspace import record_paths
ws = Workspace.open()
record_paths(ws, sys.argv[1], [f"{sys.argv[1]}/f{i}" for i in range(200)])
"""


def test_sixteen_concurrent_writers_lose_no_attribution(repo: Path) -> None:
    sessions = [f"writer{n}" for n in range(16)]
    for s in sessions:
        (repo / s).mkdir()
        for i in range(200):
            (repo / s / f"f{i}").write_text(f"{s} {i}\n")
    env = {**os.environ, "GUARDS_LEDGER_LOCK_TIMEOUT": "120"}
    procs = [
        subprocess.Popen([sys.executable, "-c", _WRITER, s], cwd=repo, env=env) for s in sessions
    ]
    assert [p.wait(timeout=180) for p in procs] == [0] * 16
    data = ledger_doc(repo)
    records = data["paths"][str(repo.resolve())]
    assert len(records) == 3200
    assert all(records[f"{s}/f{i}"]["session"] == s for s in sessions for i in range(200))
    assert set(data["sessions"]) == set(sessions)


_HOLDER = """
import sys, time
from pathlib import Path
from guards.state.ledger import Ledger
ledger = Ledger(Path(sys.argv[1]))
ledger._ensure_directory()
with ledger._lock():
    print("locked", flush=True)
    time.sleep(600)
"""


def _hold_lock(repo: Path) -> subprocess.Popen[str]:
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(repo / ".git" / "guards")],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout is not None
    assert holder.stdout.readline().strip() == "locked"
    return holder


def test_recording_never_waits_for_the_lock(repo: Path) -> None:
    (repo / "a").write_text("x")
    assert run_guards("record", "--session", "s", "a", cwd=repo).returncode == 0
    holder = _hold_lock(repo)
    try:
        start = time.monotonic()
        res = run_guards(
            "record", "--session", "s", "a", cwd=repo, env={"GUARDS_LEDGER_LOCK_TIMEOUT": "30"}
        )
        took = time.monotonic() - start
    finally:
        holder.kill()
        holder.wait()
    assert res.returncode == 0, res.stderr
    assert took < 10


def test_busy_lock_is_a_one_line_error_not_a_hang(repo: Path) -> None:
    """A writer that needs the lock (here: migrating a schema-1 ledger) waits no longer
    than the setting says."""
    (repo / "a").write_text("x")
    write_schema_1(repo)
    holder = _hold_lock(repo)
    try:
        res = run_guards(
            "record", "--session", "s", "a", cwd=repo, env={"GUARDS_LEDGER_LOCK_TIMEOUT": "0.5"}
        )
    finally:
        holder.kill()
        holder.wait()
    assert res.returncode == 4
    assert res.stderr.count("\n") == 1 and "lock" in res.stderr
    assert "Traceback" not in res.stderr


def test_lock_holder_killed_with_sigkill_does_not_block_next_caller(repo: Path) -> None:
    (repo / "a").write_text("x")
    write_schema_1(repo)  # the record migrates it: it needs the lock
    holder = _hold_lock(repo)
    os.kill(holder.pid, signal.SIGKILL)
    holder.wait()
    start = time.monotonic()
    res = run_guards(
        "record", "--session", "s", "a", cwd=repo, env={"GUARDS_LEDGER_LOCK_TIMEOUT": "5"}
    )
    assert res.returncode == 0, res.stderr
    assert time.monotonic() - start < 5
    assert "a" in ledger_doc(repo)["paths"][str(repo.resolve())]
    assert ledger_file(repo).read_bytes().startswith(b'{"schema":2,')  # migrated


@pytest.mark.parametrize(
    ("content", "why"),
    [
        (b'{"schema": 1, "sessions": {', "truncated"),
        (b"\x00\x01garbage", "corrupt"),
        (b'{"schema": 1, "sessions": []}', "wrong shape"),
        (b'{"sessions": {}}', "no schema"),
    ],
)
def test_untrustworthy_ledger_is_kept_aside_and_ownership_becomes_unknown(
    repo: Path, content: bytes, why: str
) -> None:
    (repo / "a").write_text("x")
    assert run_guards("record", "--session", "alice", "a", cwd=repo).returncode == 0
    ledger_file(repo).write_bytes(content)
    res = run_guards("status", "--json", cwd=repo, env={"GUARDS_SESSION": "alice"})
    assert res.returncode == 4, why
    assert res.stderr.count("\n") == 1 and "kept aside" in res.stderr
    assert "Traceback" not in res.stderr
    assert [p["class"] for p in json.loads(res.stdout)["paths"]] == ["unknown"]
    aside = list((repo / ".git" / "guards").glob("ledger.json.corrupt-*"))
    assert len(aside) == 1 and aside[0].read_bytes() == content
    # The next writer starts afresh; the kept-aside file is never overwritten.
    assert run_guards("record", "--session", "alice", "a", cwd=repo).returncode == 0
    assert aside[0].read_bytes() == content


def test_newer_schema_ledger_is_kept_aside_and_read_as_unknown(repo: Path) -> None:
    (repo / "a").write_text("x")
    newer = json.dumps({"schema": SCHEMA + 1, "sessions": {}, "future": True}).encode()
    ledger_file(repo).parent.mkdir()
    ledger_file(repo).write_bytes(newer)
    res = run_guards("status", "--json", cwd=repo)
    assert res.returncode == 4
    assert "newer guards" in res.stderr and "kept aside" in res.stderr
    assert res.stderr.count("\n") == 1 and "upgrade guards" in res.stderr
    assert json.loads(res.stdout)["paths"][0]["class"] == "unknown"
    (aside,) = (repo / ".git" / "guards").glob("ledger.json.corrupt-*")
    assert aside.read_bytes() == newer  # never replaced: its content is intact
    assert run_guards("record", "--session", "alice", "a", cwd=repo).returncode == 0
    assert aside.read_bytes() == newer


@pytest.mark.parametrize(
    "content",
    [
        b'{"schema": 1, "sessions": {',
        b"\x00\x01garbage",
        b'{"schema": 1, "sessions": []}',
        b'{"sessions": {}}',
        b"[" * 100_000 + b"]" * 100_000,
        json.dumps({"schema": SCHEMA + 1}).encode(),
        b'{"schema": 1, "sessions": {"s": {"id": "s"}}}',
    ],
    ids=["truncated", "corrupt", "wrong-shape", "no-schema", "deep", "newer", "good"],
)
def test_peek_and_read_judge_a_ledger_by_the_same_decode(tmp_path: Path, content: bytes) -> None:
    """The side-effect-free reader (frame, doctor) and the reader that keeps a corrupt
    file aside trust exactly the same files."""
    ledger = Ledger(tmp_path)
    ledger.path.write_bytes(content)
    data, problem = ledger.peek()
    assert ledger.path.read_bytes() == content  # peek never moves anything
    try:
        read: object = ledger.read()
    except LedgerUnreadableError as e:
        read = e
    if problem is None:
        assert read == data
        return
    assert data is None and isinstance(read, LedgerUnreadableError)
    assert problem.newer_schema == read.newer_schema
    assert not ledger.path.exists() and len(ledger.kept_aside()) == 1


def test_unreadable_ledger_is_reported_not_replaced(repo: Path) -> None:
    if os.geteuid() == 0:
        pytest.skip("root reads files regardless of their mode")
    ledger_file(repo).parent.mkdir()
    ledger_file(repo).write_text("{}")
    ledger_file(repo).chmod(0)
    with pytest.raises(LedgerUnreadableError):
        Ledger(ledger_file(repo).parent).read()


def test_failed_transaction_writes_nothing(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path / "guards")
    with ledger.transaction() as data:
        data.sessions["a"] = {"id": "a"}
    with pytest.raises(RuntimeError), ledger.transaction() as data:
        data.sessions["b"] = {"id": "b"}
        raise RuntimeError("boom")
    assert set(ledger.read().sessions) == {"a"}


def test_unknown_fields_survive_a_rewrite(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path / "guards")
    ledger.directory.mkdir()
    odd = {"session": "a", "fingerprint": {"deleted": True}, "recorded": 1, "why": "x"}
    ledger.path.write_text(
        json.dumps({"schema": 1, "sessions": {}, "later": [1], "paths": {"/w": {"p": odd}}})
    )
    with ledger.transaction() as data:
        data.sessions["a"] = {"id": "a"}
    assert ledger.read().extra["later"] == [1]
    ledger.compact()
    assert ledger.read().extra["later"] == [1]
    assert ledger.read().paths["/w"]["p"] == odd  # an odd record is kept as it is


# -- the journal ----------------------------------------------------------------------------


def _attribution(session: str, recorded: float = 1.5) -> dict[str, object]:
    fp = {"size": 1, "mtime_ns": 2, "mode": 0o100644, "inode": 3, "blob": "ab" * 20}
    return {"session": session, "fingerprint": fp, "recorded": recorded, "source": "record"}


def test_records_are_merged_in_order_and_survive_compaction(tmp_path: Path) -> None:
    from guards.state.ledger import op_attribute, op_drop_rescue, op_release, op_rescue

    ledger = Ledger(tmp_path / "guards")
    ledger.append([op_attribute("/w", "a", _attribution("s1", 1.0))])
    ledger.append([op_attribute("/w", "a", _attribution("s2", 2.0))])
    ledger.append([op_release("/w", "a", 1.0)])  # judged the older record: s2's stays
    ledger.append([op_attribute("/w", "b", _attribution("s1", 3.0)), op_release("/w", "b", 3.0)])
    ledger.append([op_rescue({"ref": "r1"}), op_rescue({"ref": "r2"}), op_drop_rescue("r1")])
    before = ledger.read()
    assert {p: r["session"] for p, r in before.paths["/w"].items()} == {"a": "s2"}
    assert before.rescues == [{"ref": "r2"}]
    assert ledger.compact()
    assert ledger.read() == before
    assert not ledger.journal_path.read_bytes().count(b"\x1e")  # folded: an empty journal


def test_a_claim_applies_only_over_the_attribution_it_judged(tmp_path: Path) -> None:
    """The observation's compare-and-set: a record made after it read the ledger wins,
    in the journal and once folded into the snapshot alike."""
    from guards.state.ledger import op_attribute, op_claim

    ledger = Ledger(tmp_path / "guards")
    ledger.append([op_attribute("/w", "a", _attribution("carol", 2.0))])  # after the read
    ledger.append(
        [
            op_claim("/w", "a", _attribution("bob", 3.0), None),  # judged: no record
            op_claim("/w", "b", _attribution("bob", 3.0), None),
            op_attribute("/w", "c", _attribution("carol", 1.0)),
            op_claim("/w", "c", _attribution("bob", 3.0), 1.0),  # judged carol's old one
        ]
    )
    owners = {"a": "carol", "b": "bob", "c": "bob"}
    assert {p: r["session"] for p, r in ledger.read().paths["/w"].items()} == owners
    assert ledger.compact()
    assert {p: r["session"] for p, r in ledger.read().paths["/w"].items()} == owners


def test_a_reader_reads_only_its_worktree(tmp_path: Path) -> None:
    from guards.state.ledger import op_attribute

    ledger = Ledger(tmp_path / "guards")
    with ledger.transaction() as data:
        for w in ("/a", "/b"):
            data.attributions(w).update({f"p{i}": _attribution("s") for i in range(3)})
    ledger.append([op_attribute("/b", "new", _attribution("s"))])
    mine = ledger.read("/a", rescues=False)
    assert mine.scope == "/a" and list(mine.paths) == ["/a"] and len(mine.paths["/a"]) == 3
    assert len(ledger.read("/b").paths["/b"]) == 4


def test_a_torn_record_is_skipped_and_later_records_count(tmp_path: Path) -> None:
    """A writer killed mid-write leaves bytes without their newline; the records
    appended after them are read, the torn one is not (it was never acknowledged)."""
    from guards.state.ledger import op_attribute

    ledger = Ledger(tmp_path / "guards")
    ledger.append([op_attribute("/w", "before", _attribution("s"))])
    with open(ledger.journal_path, "ab") as f:
        f.write(b'\x1e["a","/w","torn","s|1.0|rec')  # no newline: killed here
    assert set(ledger.read().paths["/w"]) == {"before"}
    ledger.append([op_attribute("/w", "after", _attribution("s"))])
    assert set(ledger.read().paths["/w"]) == {"before", "after"}
    assert ledger.compact()
    assert set(ledger.read().paths["/w"]) == {"before", "after"}


def test_a_zero_filled_tail_hides_no_record_and_is_no_corruption(tmp_path: Path) -> None:
    """What a machine crash can leave of appends never flushed: the journal grew, their
    bytes are zeros. The records before them count, the ledger stays trusted, and
    records appended after them count too."""
    from guards.state.ledger import op_attribute

    ledger = Ledger(tmp_path / "guards")
    ledger.append([op_attribute("/w", "before", _attribution("s"))])
    with open(ledger.journal_path, "ab") as f:
        f.write(b"\0" * 300)
    assert set(ledger.read().paths["/w"]) == {"before"}
    with open(ledger.journal_path, "ab") as f:
        f.write(b'\x1e["a","/w","half\0\0\0')  # a record's first bytes, then zeros
    ledger.append([op_attribute("/w", "after", _attribution("s"))])
    assert set(ledger.read().paths["/w"]) == {"before", "after"}
    assert ledger.compact()
    assert set(ledger.read().paths["/w"]) == {"before", "after"}


def test_everyday_records_are_not_flushed_and_the_rescue_log_is(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An agent's edits and prompts append without fdatasync (their own files are not
    flushed either; a record lost in a machine crash leaves a path unattributed, which
    counts as foreign); what a crash must not lose is flushed."""
    from guards.state.ledger import op_rescue
    from guards.state.workspace import Workspace, record_paths

    flushed: list[int] = []
    real = os.fdatasync
    monkeypatch.setattr(os, "fdatasync", lambda fd: (flushed.append(fd), real(fd)))
    (repo / "README").write_text("mine\n")
    ws = Workspace.open(repo)
    record_paths(ws, "alice", ["README"])  # creates the journal (its header is flushed)
    flushed.clear()
    record_paths(ws, "alice", ["README"])
    assert flushed == []
    ws.ledger.append([op_rescue({"ref": "refs/rescue/x"})])
    assert len(flushed) == 1
    assert ws.ledger.read().rescues == [{"ref": "refs/rescue/x"}]


def test_a_complete_record_that_does_not_decode_makes_the_ledger_untrusted(
    tmp_path: Path,
) -> None:
    from guards.state.ledger import op_attribute

    ledger = Ledger(tmp_path / "guards")
    ledger.append([op_attribute("/w", "a", _attribution("s"))])
    with open(ledger.journal_path, "ab") as f:
        f.write(b"\x1e[not json\n")
    data, problem = ledger.peek()
    assert data is None and problem is not None and "corrupt" in str(problem)
    with pytest.raises(LedgerUnreadableError, match="kept aside"):
        ledger.read()
    (aside,) = ledger.kept_aside()
    assert aside.name.startswith("ledger.journal.corrupt-")
    assert b"[not json" in aside.read_bytes()
    assert ledger.read().paths == {}  # rebuilt from what remains trustworthy
    ledger.append([op_attribute("/w", "b", _attribution("s"))])
    assert set(ledger.read().paths["/w"]) == {"b"}


def test_a_schema_1_ledger_is_read_and_migrated(repo: Path) -> None:
    (repo / "a").write_text("x\n")
    write_schema_1(repo, {"old": _attribution("alice")})
    assert set(ledger_doc(repo)["paths"][str(repo.resolve())]) == {"old"}
    assert run_guards("record", "--session", "bob", "a", cwd=repo).returncode == 0
    doc = ledger_doc(repo)["paths"][str(repo.resolve())]
    assert {p: r["session"] for p, r in doc.items()} == {"old": "alice", "a": "bob"}
    assert ledger_file(repo).read_bytes().startswith(b'{"schema":2,')


_BIG_WRITER = """
import sys, time
from guards.state.workspace import Workspace, record_paths
ws = Workspace.open()
me = sys.argv[1]
times = []
for i in range(int(sys.argv[2])):
    t = time.perf_counter()
    record_paths(ws, me, [f"{me}/f{i}"])
    times.append(time.perf_counter() - t)
print(max(times))
"""


def test_eight_concurrent_recorders_at_100k_attributions_lose_nothing(repo: Path) -> None:
    """Each record is one append; compactions fold a 100k-attribution worktree meanwhile
    (a small journal limit makes several happen). Timing is measured by
    benchmarks/bench_ledger.py; this checks correctness only."""
    from guards.state.attribution import Attribution, fingerprint

    top = str(repo.resolve())
    ledger = Ledger(repo / ".git" / "guards")
    fp = fingerprint(repo / "README")
    seeded = Attribution("seed", fp, 1.0).to_json()
    with ledger.transaction() as data:
        data.attributions(top).update({f"seed/{i}": seeded for i in range(100_000)})
    writers, each = 8, 60
    for w in range(writers):
        (repo / f"w{w}").mkdir()
        for i in range(each):
            (repo / f"w{w}" / f"f{i}").write_text(f"{w} {i}\n")
    env = {**os.environ, "GUARDS_LEDGER_COMPACT_BYTES": "20000"}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _BIG_WRITER, f"w{w}", str(each)],
            cwd=repo,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for w in range(writers)
    ]
    results = [p.communicate(timeout=600) for p in procs]
    assert [p.returncode for p in procs] == [0] * writers, [e[-2000:] for _, e in results]
    data = ledger.read()
    records = data.paths[top]
    assert len(records) == 100_000 + writers * each
    assert all(
        records[f"w{w}/f{i}"]["session"] == f"w{w}" for w in range(writers) for i in range(each)
    )
    assert records["seed/99999"]["session"] == "seed"
    assert {f"w{w}" for w in range(writers)} <= set(data.sessions)


def test_a_worktree_section_is_looked_up_without_decoding_it(tmp_path: Path) -> None:
    """A reader's lookups bisect the section's sorted lines (odd names included); the
    journal's records read after it sit in an overlay; iterating decodes it all."""
    from guards.state.ledger import op_attribute, op_release

    odd = ['a"b', "a\\b", "ab", "a!", "a b", "é", "new\nline", "x\x7f", "\udcff", '"', "\\"]
    names = [*odd, *(f"d{i // 50}/f{i}.txt" for i in range(1000))]
    ledger = Ledger(tmp_path / "guards")
    with ledger.transaction() as data:
        data.attributions("/w").update({n: _attribution("s", 1.0) for n in names})
    ledger.append([op_attribute("/w", "new", _attribution("t", 2.0)), op_release("/w", "ab", 1.0)])
    records = ledger.read("/w").paths["/w"]
    assert records._raw is None  # only the bytes are held
    few = [*odd, *names[len(odd) :: 20]]  # fewer than BISECTIONS_BEFORE_DECODING
    assert all(records.get(n)["session"] == "s" for n in few if n != "ab")
    assert "ab" not in records and records["new"]["session"] == "t" and "nope" not in records
    assert records._raw is None  # still: lookups decoded nothing else
    assert sorted(records) == sorted([*(n for n in names if n != "ab"), "new"])


def test_many_lookups_decode_the_section_once_with_the_same_answers(tmp_path: Path) -> None:
    """Past a share of the section's size, bisecting costs more than decoding it all
    (a guard classifying 50,000 dirty paths): the section is decoded once, the
    overlay kept on top."""
    from guards.state.ledger import op_attribute, op_release
    from guards.state.ledger.records import BISECTIONS_BEFORE_DECODING

    names = [f"d{i // 50}/f{i}.txt" for i in range(1000)]
    ledger = Ledger(tmp_path / "guards")
    with ledger.transaction() as data:
        data.attributions("/w").update({n: _attribution("s", 1.0) for n in names})
    ledger.append([op_attribute("/w", "new", _attribution("t", 2.0)),
                   op_release("/w", names[-1], 1.0)])  # fmt: skip
    records = ledger.read("/w").paths["/w"]
    for n in names[:BISECTIONS_BEFORE_DECODING]:
        assert records.get(n)["session"] == "s"
    assert records._raw is None
    answers = {n: (records.get(n) or {}).get("session") for n in [*names, "new", "nope"]}
    assert records._raw is not None  # decoded on the way
    assert answers == {**dict.fromkeys(names[:-1], "s"), names[-1]: None, "new": "t", "nope": None}
    assert len(records) == len(names)
