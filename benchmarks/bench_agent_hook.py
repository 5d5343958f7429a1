"""The agent hook's latency on every shell command an agent runs, against Python start-up.

The harness starts the hook before each shell command, so its floor is what any Python
hook pays: start the interpreter and read the event JSON. Measured side by side, in
rotation: a line without git (target: <= 1.5x that floor), the same line without its
``| tee`` (no command that destroys files either: answered by the installed command's
shell gate without Python, target: below Python's start-up; and, for comparison, by
the hook's Python as an event the gate leaves alone is), ``git status`` (a git
call that cannot destroy anything), a destructive git line with nothing at risk, and
destructive non-git lines: ``rm -rf`` of a directory outside the repository (parsed, no
git call) and inside it with nothing dirty there (one ``git status`` for the reach).
Then the other everyday events, against bare start-up, with 5,000 attributions in the
ledger and 30 files of another writer dirty: a Write's PostToolUse (the file recorded)
and a prompt (the session touched, the frame built; target for both: <= 1.5x). The
prompt is also given against start-up plus the ``git status`` it must read, for
comparison.

Bytecode is cached in a temporary directory (the sandbox sets PYTHONDONTWRITEBYTECODE,
which an installed guards never suffers from).
Usage: python benchmarks/bench_agent_hook.py [--files 2000] [--repeat 21]
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import env, fill_ledger, generate_repo, report
from guards.git.process import READONLY, status_args
from guards.integrations.harness_settings import hook_script, installed_hook
from guards.state.attribution import Attribution, fingerprint

#: Exactly what the harness runs: the installed PreToolUse command (the shell gate, then
#: this Python), run by a shell as Claude Code runs it.
HOOK = ["sh", "-c", installed_hook("claude", "PreToolUse")["command"]]
#: The other events' command (the hook's Python: no gate).
OTHER_HOOK = ["sh", "-c", installed_hook("claude", "PostToolUse")["command"]]
#: A prompt's command (its shell starts the frame's git status and hands it to Python).
PROMPT_HOOK = ["sh", "-c", installed_hook("claude", "UserPromptSubmit")["command"]]
#: Attributions in the ledger for the rows that write it (issue 16's table: 5k).
LEDGER_SIZE = 5000
#: The hook's Python alone (what the gate hands an event it is not sure of).
PYTHON_HOOK = ["sh", "-c", hook_script("claude")]
CLI = [sys.executable, "-m", "guards", "agent-hook", "claude"]


#: The harnesses send compact JSON (Node's JSON.stringify, Rust's serde_json).
COMPACT = (",", ":")


def write_event(repo: Path, target: str) -> bytes:
    """A Write tool's PreToolUse (issue 17: a write over someone else's work is rescued
    first; a writer waits while a destructive command runs)."""
    return json.dumps(
        {
            "session_id": "bench-session",
            "cwd": str(repo),
            "hook_event_name": "PreToolUse",
            "tool_name": "Write",
            "tool_use_id": "toolu_bench_w",
            "tool_input": {"file_path": str(repo / target), "content": "x"},
        },
        separators=COMPACT,
    ).encode()


def post_write_event(repo: Path, target: str) -> bytes:
    """A Write tool's PostToolUse: the written file is recorded for the session."""
    return json.dumps(
        {
            "session_id": "bench-session",
            "cwd": str(repo),
            "hook_event_name": "PostToolUse",
            "tool_name": "Write",
            "tool_use_id": "toolu_bench_w",
            "tool_input": {"file_path": str(repo / target), "content": "x"},
            "tool_response": {"filePath": str(repo / target), "success": True},
        },
        separators=COMPACT,
    ).encode()


def prompt_event(repo: Path) -> bytes:
    """A prompt: the session is touched and framed (what others left dirty)."""
    return json.dumps(
        {
            "session_id": "bench-session",
            "cwd": str(repo),
            "hook_event_name": "UserPromptSubmit",
            "prompt": "go on",
        },
        separators=COMPACT,
    ).encode()


def event(repo: Path, line: str) -> bytes:
    return json.dumps(
        {
            "session_id": "bench-session",
            "transcript_path": "/dev/null",
            "cwd": str(repo),
            "hook_event_name": "PreToolUse",
            "tool_name": "Bash",
            "tool_use_id": "toolu_bench",
            "tool_input": {"command": line, "description": "bench"},
        },
        separators=COMPACT,
    ).encode()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=2000)
    ap.add_argument("--repeat", type=int, default=21)
    opts = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        repo = Path(tmp) / "repo"
        print(f"generating {opts.files} files ...", flush=True)
        names = generate_repo(repo, opts.files)
        own = names[0]
        (repo / own).write_text("the session's own edit\n")
        # The other events in a checkout of their own (the rows above keep nothing at
        # risk): another writer's 30 dirty files, which the frame names, and the ledger.
        fleet = Path(tmp) / "fleet"
        fleet_names = generate_repo(fleet, opts.files)
        for other in fleet_names[1:31]:
            (fleet / other).write_text("someone else's edit\n")
        fp = Attribution("s1", fingerprint(fleet / fleet_names[1]), time.time()).to_json()
        seed: dict[str, object] = {f"seed/{i}": fp for i in range(LEDGER_SIZE)}
        fill_ledger(fleet / ".git" / "guards", str(fleet.resolve()), seed, 0, 1)
        subprocess.run(
            [*CLI[:3], "record", "--session", "claude-bench-session", own],
            cwd=repo,
            env=env(),
            check=True,
        )
        run_env = env(PYTHONPYCACHEPREFIX=str(Path(tmp) / "pycache"))
        run_env.pop("PYTHONDONTWRITEBYTECODE", None)
        floor = "import json, sys; json.load(sys.stdin)"
        no_git = event(repo, "ls -la && npm test -- --watch=false | tee test.log")
        plain = event(repo, "ls -la && npm test -- --watch=false")
        rm_outside = event(repo, f"rm -rf {tmp}/scratch && mkdir {tmp}/scratch")
        rm_inside = event(repo, "rm -rf d0000 build")
        status = event(repo, "git status")
        reset = event(repo, "git reset --hard")
        commands: dict[str, tuple[list[str], bytes]] = {
            "python start-up": ([sys.executable, "-c", "pass"], b""),
            "python start-up + read JSON (floor)": ([sys.executable, "-c", floor], no_git),
            "git status": (["git", "status"], b""),
            "the prompt's git status (fleet)": (["git", READONLY, *status_args()], b""),
            "agent-hook: line without git": (HOOK, no_git),
            "agent-hook: line without git (guards CLI)": (CLI, no_git),
            "agent-hook: no git, no destroyer (shell gate)": (HOOK, plain),
            "agent-hook: no git, no destroyer (the hook's Python)": (PYTHON_HOOK, plain),
            "agent-hook: rm -rf outside the repository": (HOOK, rm_outside),
            "agent-hook: rm -rf in the repository, nothing at risk": (HOOK, rm_inside),
            "agent-hook: git status": (HOOK, status),
            "agent-hook: git reset --hard, nothing at risk": (HOOK, reset),
            "agent-hook: Write, a new file": (HOOK, write_event(repo, "brand-new.txt")),
            "agent-hook: Write, the session's own file": (HOOK, write_event(repo, own)),
            f"agent-hook: PostToolUse Write ({LEDGER_SIZE} attributions)": (
                OTHER_HOOK,
                post_write_event(fleet, fleet_names[0]),
            ),
            "agent-hook: UserPromptSubmit (frame + session touch)": (
                PROMPT_HOOK,
                prompt_event(fleet),
            ),
        }
        # The fleet's events run in the fleet's checkout, as a harness runs its hooks in
        # the session's directory (a prompt's shell starts git status there).
        in_fleet = {
            name: fleet
            for name in commands
            if "PostToolUse" in name or "Prompt" in name or "fleet" in name
        }
        times, cpu = _interleaved(commands, repo, run_env, opts.repeat, in_fleet)
    report(f"agent hook (PreToolUse), {opts.files} tracked files", list(times.items()))
    base = times["python start-up + read JSON (floor)"]
    for name in (
        "agent-hook: line without git",
        "agent-hook: line without git (guards CLI)",
        "agent-hook: no git, no destroyer (shell gate)",
        "agent-hook: no git, no destroyer (the hook's Python)",
        "agent-hook: rm -rf outside the repository",
        "agent-hook: rm -rf in the repository, nothing at risk",
        "agent-hook: git status",
        "agent-hook: git reset --hard, nothing at risk",
        "agent-hook: Write, a new file",
        "agent-hook: Write, the session's own file",
    ):
        print(f"  {name} / floor = {times[name] / base:.2f}x")
    print("  (target: line without git <= 1.5x the floor)")
    start_up = times["python start-up"]
    for name, target in (
        ("agent-hook: no git, no destroyer (shell gate)", "< 1.0x"),
        (f"agent-hook: PostToolUse Write ({LEDGER_SIZE} attributions)", "<= 1.5x"),
        ("agent-hook: UserPromptSubmit (frame + session touch)", "<= 1.5x"),
        ("agent-hook: Write, a new file", "report"),
    ):
        print(f"  {name} / python start-up = {times[name] / start_up:.2f}x (target: {target})")
    # For comparison: a prompt's hook must at least start Python and read git's status;
    # its shell runs the two side by side.
    prompt = times["agent-hook: UserPromptSubmit (frame + session touch)"]
    its_floor = start_up + times["the prompt's git status (fleet)"]
    print(f"  (the prompt / (python start-up + its git status) = {prompt / its_floor:.2f}x)")
    cpu_ratio = cpu["agent-hook: line without git"] / cpu["python start-up + read JSON (floor)"]
    print(f"  CPU time: line without git / floor = {cpu_ratio:.2f}x")


def _interleaved(
    commands: dict[str, tuple[list[str], bytes]],
    cwd: Path,
    run_env: dict[str, str],
    repeat: int,
    elsewhere: dict[str, Path],
) -> tuple[dict[str, float], dict[str, float]]:
    """Median wall and CPU time of each command, run in rotation (first round warms up),
    in ``cwd`` or the directory ``elsewhere`` names for it."""
    wall: dict[str, list[float]] = {name: [] for name in commands}
    cpu: dict[str, list[float]] = {name: [] for name in commands}
    for round_ in range(repeat + 1):
        for name, (args, stdin) in commands.items():
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            start = time.perf_counter()
            subprocess.run(
                args,
                cwd=elsewhere.get(name, cwd),
                env=run_env,
                input=stdin,
                check=True,
                stdout=subprocess.DEVNULL,
            )
            elapsed = time.perf_counter() - start
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            if round_:
                wall[name].append(elapsed)
                cpu[name].append(
                    after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
                )
    return (
        {name: statistics.median(v) for name, v in wall.items()},
        {name: statistics.median(v) for name, v in cpu.items()},
    )


if __name__ == "__main__":
    main()
