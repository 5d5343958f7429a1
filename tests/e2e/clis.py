"""The real agent CLIs: installed from npm once, run headless against the fake model.

The npm cache lives outside the tests' sealed HOME: ``$GUARDS_E2E_NPM_CACHE``, else
``~/.cache/guards-e2e/npm-latest`` of the real HOME, both read when this module is
imported (before the seal replaces HOME). One ``npm install`` of each CLI's ``latest``
release fills it, under a file lock so that xdist workers never install at the same time;
later runs reuse it. A CLI that cannot be installed is skipped with npm's reason; a failed
install is not retried for a few minutes (the other workers of the same run skip at once).

A CLI whose release needs a newer Node.js than the machine's (Qwen Code 0.24 wants 22;
the machines have 20) runs on Node.js from the npm registry (``node-linux-<arch>``, a
binary inside a registry package) put first on its PATH: ``Cli.path_first``. npm on the
machine's Node.js would otherwise pick the newest release whose ``engines`` it meets
(0.15 for Qwen), not the one users get.
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import re
import shutil
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import filelock

#: The environment before the seal (npm needs its own HOME, config and cache).
REAL_ENV = dict(os.environ)
NPM_CACHE = Path(
    os.environ.get("GUARDS_E2E_NPM_CACHE") or Path.home() / ".cache" / "guards-e2e" / "npm-latest"
)
PACKAGES = {
    "claude": "@anthropic-ai/claude-code",
    "codex": "@openai/codex",
    "gemini": "@google/gemini-cli",
    "copilot": "@github/copilot",
    "qwen": "@qwen-code/qwen-code",
    "opencode": "opencode-ai",
    "droid": "@factory/cli",
}
#: Droid's binary is in a platform package, an optional dependency pinned to the CLI's own
#: version; when the registry has no such release of it (@factory/cli 0.225.1 pins
#: cli-linux-x64 0.225.1, and only 0.225.2 was published) npm skips it without a word:
#: the platform package's latest release is installed beside the CLI then.
DROID_PLATFORMS = {"x86_64": "linux-x64", "amd64": "linux-x64", "aarch64": "linux-arm64"}
#: An unreachable registry fails in seconds, not after npm's minutes of retries.
FAIL_FAST = [
    "--fetch-retries=1",
    "--fetch-retry-mintimeout=1000",
    "--fetch-retry-maxtimeout=5000",
]
NETWORK_ERRORS = (
    "ECONNREFUSED",
    "ENOTFOUND",
    "ETIMEDOUT",
    "EAI_AGAIN",
    "ECONNRESET",
    "ENETUNREACH",
)
#: Seconds a failed install is remembered before the next run tries again.
RETRY_AFTER = 600
INSTALL_TIMEOUT = 900
#: Variables of the caller's own agent setup that must not reach the CLIs under test.
FOREIGN_PREFIXES = (
    "ANTHROPIC_",
    "CLAUDE",
    "OPENAI_",
    "CODEX_",
    "GEMINI_",
    "GOOGLE_",
    "DISABLE_",
    "COPILOT_",
    "GH_",
    "GITHUB_",
    "QWEN_",
    "OPENCODE",
    "FACTORY_",
    "DROID_",
)


@dataclass(frozen=True)
class Cli:
    name: str
    #: the executable, or None when it could not be installed
    path: Path | None
    version: str = ""
    #: why it is missing
    problem: str = ""
    #: directories to put first on its PATH (a newer Node.js than the machine's)
    path_first: tuple[Path, ...] = ()


def _bin(name: str) -> Path:
    return NPM_CACHE / "node_modules" / ".bin" / name


def _version(name: str) -> tuple[str, str]:
    """(version, problem), from the package's own manifest (running ``gemini --version``
    costs seconds)."""
    exe = _bin(name)
    manifest = NPM_CACHE / "node_modules" / PACKAGES[name] / "package.json"
    if not exe.exists():
        return "", f"{exe} is missing"
    try:
        version = json.loads(manifest.read_text())["version"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        return "", f"{manifest} is unreadable ({e.__class__.__name__})"
    return str(version), ""


def _npm_install(packages: list[str], prefix: Path = NPM_CACHE) -> str:
    """npm's complaint, or "" on success."""
    npm = shutil.which("npm", path=REAL_ENV.get("PATH"))
    if npm is None:
        return "npm is not on PATH"
    prefix.mkdir(parents=True, exist_ok=True)
    cmd = [npm, "install", "--no-audit", "--no-fund", "--prefix", str(prefix), *FAIL_FAST]
    cmd += packages
    try:
        res = subprocess.run(
            cmd,
            capture_output=True,
            text=True,
            timeout=INSTALL_TIMEOUT,
            env=REAL_ENV,
            stdin=subprocess.DEVNULL,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"npm install failed: {e}"
    if res.returncode != 0:
        lines = [line for line in res.stderr.splitlines() if line.startswith("npm err")]
        said = "; ".join(line.strip() for line in (lines or res.stderr.splitlines())[:4])
        return f"npm install {' '.join(packages)} exited {res.returncode}: {said}"
    return ""


def _unreachable(problem: str) -> bool:
    """npm could not reach the registry at all (then one package is no better)."""
    return any(code in problem for code in NETWORK_ERRORS)


def install_clis() -> dict[str, Cli]:
    """Every CLI of :data:`PACKAGES`, installed into the cache if need be."""
    NPM_CACHE.parent.mkdir(parents=True, exist_ok=True)
    failures_file = NPM_CACHE.parent / f"{NPM_CACHE.name}.failed.json"
    with filelock.FileLock(str(NPM_CACHE.parent / f"{NPM_CACHE.name}.lock"), timeout=1800):
        found = {name: _version(name) for name in PACKAGES}
        missing = [name for name, (_v, problem) in found.items() if problem]
        failures = _recent_failures(failures_file)
        to_install = [name for name in missing if name not in failures]
        if to_install:
            problem = _npm_install([f"{PACKAGES[n]}@latest" for n in to_install])
            if problem and len(to_install) > 1 and not _unreachable(problem):
                # one bad package must not cost the others
                problems = {n: _npm_install([f"{PACKAGES[n]}@latest"]) for n in to_install}
            else:
                problems = dict.fromkeys(to_install, problem)
            for name in to_install:
                found[name] = _version(name)
                if found[name][1]:
                    failures[name] = {
                        "time": time.time(),
                        "problem": problems[name] or found[name][1],
                    }
            failures_file.write_text(json.dumps(failures))
        out = {}
        for name, (version, problem) in found.items():
            if problem and name in failures:
                problem = str(failures[name]["problem"])
            runtime: tuple[Path, ...] = ()
            if not problem:
                runtime, problem = _runtime_for(name)
            if not problem and name == "droid":
                version, problem = _droid_binary()
            out[name] = Cli(name, None if problem else _bin(name), version, problem, runtime)
    return out


def _droid_binary() -> tuple[str, str]:
    """(the binary's version, problem): Droid's platform package, installed if missing."""
    arch = DROID_PLATFORMS.get(platform.machine().lower())
    if arch is None:
        return "", f"@factory/cli has no binary for {platform.machine()}"
    package = f"@factory/cli-{arch}"
    exe = NPM_CACHE / "node_modules" / package / "bin" / "droid"
    if not exe.exists():
        problem = _npm_install([f"{package}@latest"])
        if problem or not exe.exists():
            return "", problem or f"{exe} is missing after npm install {package}"
    manifest = exe.parent.parent / "package.json"
    try:
        return str(json.loads(manifest.read_text())["version"]), ""
    except (OSError, ValueError, KeyError, TypeError) as e:
        return "", f"{manifest} is unreadable ({e.__class__.__name__})"


def _node_major(version: str) -> int:
    found = re.match(r"v?(\d+)", version.strip())
    return int(found.group(1)) if found else 0


def _runtime_for(name: str) -> tuple[tuple[Path, ...], str]:
    """(PATH directories, problem) for the Node.js the CLI's ``engines`` ask for: none when
    the machine's will do, else ``node-linux-<arch>@N`` installed beside the CLIs."""
    manifest = NPM_CACHE / "node_modules" / PACKAGES[name] / "package.json"
    try:
        wanted = str(json.loads(manifest.read_text()).get("engines", {}).get("node", ""))
    except (OSError, ValueError, AttributeError):
        return (), ""
    needed = re.match(r"\s*>=?\s*v?(\d+)", wanted)
    node = shutil.which("node", path=REAL_ENV.get("PATH"))
    try:
        have = subprocess.run(
            [node or "node", "--version"], capture_output=True, text=True, timeout=30, check=False
        ).stdout
    except OSError:
        have = ""
    if needed is None or _node_major(have) >= int(needed.group(1)):
        return (), ""
    major = needed.group(1)
    arch = {"x86_64": "x64", "amd64": "x64", "aarch64": "arm64"}.get(platform.machine().lower())
    if arch is None:
        return (), f"{name} needs Node.js {major}, and npm has none for {platform.machine()}"
    prefix = NPM_CACHE.parent / f"{NPM_CACHE.name}-node{major}"
    bindir = prefix / "node_modules" / ".bin"
    if not (bindir / "node").exists():
        problem = _npm_install([f"node-linux-{arch}@{major}"], prefix=prefix)
        if problem:
            return (), f"{name} needs Node.js {major}: {problem}"
    return (bindir,), ""


def _recent_failures(path: Path) -> dict[str, dict[str, Any]]:
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    now = time.time()
    return {
        name: entry
        for name, entry in (doc.items() if isinstance(doc, dict) else [])
        if isinstance(entry, dict) and now - float(entry.get("time", 0)) < RETRY_AFTER
    }


# -- running a CLI ---------------------------------------------------------------------------


def cli_env(extra: dict[str, str], path_first: list[Path] | None = None) -> dict[str, str]:
    """The sealed test environment without the caller's agent settings, plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(FOREIGN_PREFIXES)}
    env.update(extra)
    if path_first:
        env["PATH"] = os.pathsep.join([*map(str, path_first), env.get("PATH", "")])
    return env


@dataclass
class Run:
    """One headless CLI run: its exit status, its JSON event stream, its stderr."""

    returncode: int
    events: list[dict[str, Any]] = field(default_factory=list)
    stderr: str = ""

    @property
    def session_id(self) -> str:
        for event in self.events:
            sid = event.get("session_id")
            if isinstance(sid, str) and sid:
                return sid
        raise AssertionError(f"no session id in the CLI's events: {self.events[:3]}")

    def hooks_started(self) -> list[str]:
        """Claude's ``--include-hook-events``: the hook events, in order (one per hook)."""
        return [
            str(e.get("hook_event"))
            for e in self.events
            if e.get("type") == "system" and e.get("subtype") == "hook_started"
        ]

    def results(self) -> list[dict[str, Any]]:
        return [e for e in self.events if e.get("type") == "result"]


def claude_interactive(home: Path, project: Path, api_key: str) -> None:
    """What Claude Code's interactive UI asks before it works, answered in ``home``'s
    ``~/.claude.json``: onboarding done, the API key approved (by its last 20
    characters), ``project`` trusted (its hooks load only then)."""
    state = {
        "hasCompletedOnboarding": True,
        "theme": "dark",
        "customApiKeyResponses": {"approved": [api_key[-20:]], "rejected": []},
        "projects": {str(project): {"hasTrustDialogAccepted": True, "allowedTools": []}},
    }
    (home / ".claude.json").write_text(json.dumps(state))


def run_claude(
    exe: Path,
    cwd: Path,
    prompts: list[str],
    env: dict[str, str],
    *,
    timeout: float = 90,
) -> Run:
    """``claude -p`` with stream-json in and out: each prompt is sent after the previous
    one's result, then stdin is closed and the CLI exits (SessionEnd)."""
    args = [
        str(exe),
        "-p",
        "--input-format",
        "stream-json",
        "--output-format",
        "stream-json",
        "--verbose",
        "--include-hook-events",
        "--allowedTools",
        "Bash",
        "Write",
        "Edit",
        "Read",
    ]
    proc = subprocess.Popen(
        args,
        cwd=cwd,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    timer = _killer(proc, timeout)
    run = Run(returncode=-1)
    try:
        for prompt in prompts:
            message = {"type": "user", "message": {"role": "user", "content": prompt}}
            proc.stdin.write(json.dumps(message) + "\n")
            proc.stdin.flush()
            for line in proc.stdout:
                event = _json_line(line)
                run.events.append(event)
                if event.get("type") == "result":
                    break
            else:
                break  # the CLI ended early: its stderr says why
        proc.stdin.close()
        run.events += [_json_line(line) for line in proc.stdout]
        run.stderr = proc.stderr.read()
        run.returncode = proc.wait()
    finally:
        timer.cancel()
        if proc.poll() is None:
            _kill(proc)
            proc.wait()
    return run


def _json_line(line: str) -> dict[str, Any]:
    try:
        doc = json.loads(line)
    except ValueError:
        return {"type": "unparsed", "text": line}
    return doc if isinstance(doc, dict) else {"type": "unparsed", "text": line}


def _kill(proc: subprocess.Popen[str]) -> None:
    """The CLI and everything it started (hooks, shells): its own process group."""
    import signal

    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)


def _killer(proc: subprocess.Popen[str], timeout: float) -> threading.Timer:
    timer = threading.Timer(timeout, _kill, [proc])
    timer.daemon = True
    timer.start()
    return timer


def _headless(
    args: list[str], cwd: Path, env: dict[str, str], timeout: float
) -> tuple[int, str, str]:
    """Run a CLI headless in a process group of its own (killed whole after ``timeout``
    seconds): its exit status, stdout and stderr."""
    proc = subprocess.Popen(
        args,
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    timer = _killer(proc, timeout)
    try:
        out, err = proc.communicate()
    finally:
        timer.cancel()
    return proc.returncode, out, err


def run_codex(
    exe: Path,
    cwd: Path,
    prompts: list[str],
    env: dict[str, str],
    *,
    timeout: float = 90,
) -> Run:
    """``codex exec --json``: the first prompt starts the thread, each later one resumes it
    (``codex exec resume <thread>``), one process per prompt as a user would."""
    run = Run(returncode=0)
    thread: str | None = None
    for prompt in prompts:
        args = [str(exe), "exec", "--json", "--sandbox", "danger-full-access"]
        if thread is not None:
            args += ["resume", thread]
        returncode, out, err = _headless([*args, prompt], cwd, env, timeout)
        run.events += [_json_line(line) for line in out.splitlines() if line.strip()]
        run.stderr += err
        run.returncode = returncode
        if returncode != 0:
            break
        thread = thread or _thread_id(run)
    return run


def _thread_id(run: Run) -> str:
    for event in run.events:
        if event.get("type") == "thread.started":
            return str(event["thread_id"])
    raise AssertionError(f"codex announced no thread: {run.events[:3]}")


def codex_hook_hashes(exe: Path, cwd: Path, env: dict[str, str]) -> list[dict[str, Any]]:
    """The hooks codex sees for ``cwd`` (key, command, currentHash, trustStatus), from
    ``codex app-server``'s ``hooks/list`` (JSON-RPC on stdio)."""
    proc = subprocess.Popen(
        [str(exe), "app-server"],
        cwd=cwd,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        start_new_session=True,
    )
    assert proc.stdin is not None and proc.stdout is not None
    timer = _killer(proc, 60)
    try:
        for message in (
            {
                "id": 1,
                "method": "initialize",
                "params": {"clientInfo": {"name": "t", "version": "0"}},
            },
            {"method": "initialized"},
            {"id": 2, "method": "hooks/list", "params": {"cwds": [str(cwd)]}},
        ):
            proc.stdin.write(json.dumps(message) + "\n")
        proc.stdin.flush()
        for line in proc.stdout:
            answer = _json_line(line)
            if answer.get("id") == 2:
                hooks: list[dict[str, Any]] = []
                for entry in answer["result"]["data"]:
                    hooks += entry["hooks"]
                return hooks
        raise AssertionError("codex app-server ended without answering hooks/list")
    finally:
        timer.cancel()
        proc.stdin.close()
        _kill(proc)
        proc.wait()


def run_gemini(
    exe: Path,
    cwd: Path,
    prompt: str,
    env: dict[str, str],
    *,
    timeout: float = 120,
) -> Run:
    """``gemini -p --approval-mode yolo`` (headless, without yolo no shell or write tool),
    its events as stream-json."""
    args = [str(exe), "-p", prompt, "--approval-mode", "yolo", "--output-format", "stream-json"]
    returncode, out, err = _headless(args, cwd, env, timeout)
    events = [_json_line(line) for line in out.splitlines() if line.strip()]
    return Run(returncode=returncode, events=events, stderr=err)


def run_copilot(
    exe: Path,
    cwd: Path,
    prompt: str,
    env: dict[str, str],
    *,
    timeout: float = 120,
) -> Run:
    """``copilot -p PROMPT --allow-all`` (headless: all tools, and paths outside the
    folder such as the interpreter; ``COPILOT_ALLOW_ALL=true`` in ``env`` also trusts the
    folder, without which repository hooks do not load). Its output is text: the session
    id is read from the summary on stderr, ``copilot --resume=<id>``, into a
    ``session_id`` event."""
    args = [str(exe), "-p", prompt, "--allow-all"]
    returncode, out, err = _headless(args, cwd, env, timeout)
    events: list[dict[str, Any]] = [{"type": "text", "text": out}]
    for word in (out + err).split():
        if word.startswith("--resume="):
            events.append({"type": "session", "session_id": word.removeprefix("--resume=")})
    return Run(returncode=returncode, events=events, stderr=err)


def run_qwen(
    exe: Path,
    cwd: Path,
    prompts: list[str],
    env: dict[str, str],
    *,
    timeout: float = 90,
) -> Run:
    """``qwen -p --approval-mode yolo --auth-type anthropic`` (headless, without yolo no
    shell or write tool runs), its events as stream-json; each later prompt resumes the
    session (``--resume <id>``), one process per prompt as a user would."""
    run = Run(returncode=0)
    for prompt in prompts:
        args = [str(exe), "-p", prompt, "--approval-mode", "yolo", "--auth-type", "anthropic"]
        args += ["--model", "claude-sonnet-4-5", "--output-format", "stream-json"]
        if run.events:
            args += ["--resume", run.session_id]
        returncode, out, err = _headless(args, cwd, env, timeout)
        run.events += [_json_line(line) for line in out.splitlines() if line.strip()]
        run.stderr += err
        run.returncode = returncode
        if returncode != 0:
            break
    return run


def run_qwen_acp(
    exe: Path,
    cwd: Path,
    prompt: str,
    env: dict[str, str],
    *,
    timeout: float = 90,
) -> Run:
    """``qwen --acp`` (the Agent Client Protocol, JSON-RPC on stdio, as an editor runs it):
    one session, one prompt, then SIGTERM as an editor ends its agent: the only headless
    way Qwen sends SessionEnd (``qwen -p`` never does). Requests the agent makes of the
    client are answered "method not found"."""
    import signal

    args = [str(exe), "--acp", "--approval-mode", "yolo", "--auth-type", "anthropic"]
    args += ["--model", "claude-sonnet-4-5"]
    proc = subprocess.Popen(
        args,
        cwd=cwd,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    stdin, stdout = proc.stdin, proc.stdout
    timer = _killer(proc, timeout)
    run = Run(returncode=-1)

    def call(number: int, method: str, params: dict[str, Any]) -> dict[str, Any]:
        stdin.write(
            json.dumps({"jsonrpc": "2.0", "id": number, "method": method, "params": params})
        )
        stdin.write("\n")
        stdin.flush()
        for line in stdout:
            message = _json_line(line)
            run.events.append(message)
            if message.get("id") == number and "method" not in message:
                if "error" in message:
                    raise AssertionError(f"qwen --acp: {method}: {message['error']}")
                result = message.get("result")
                return result if isinstance(result, dict) else {}
            if "method" in message and "id" in message:
                error = {"code": -32601, "message": "method not found"}
                stdin.write(json.dumps({"jsonrpc": "2.0", "id": message["id"], "error": error}))
                stdin.write("\n")
                stdin.flush()
        raise AssertionError(f"qwen --acp ended before answering {method}")

    try:
        call(1, "initialize", {"protocolVersion": 1, "clientCapabilities": {}})
        session = call(2, "session/new", {"cwd": str(cwd), "mcpServers": []})["sessionId"]
        run.events.append({"type": "session", "session_id": session})
        prompt_parts = [{"type": "text", "text": prompt}]
        call(3, "session/prompt", {"sessionId": session, "prompt": prompt_parts})
        os.killpg(proc.pid, signal.SIGTERM)
        run.returncode = proc.wait(timeout=30)
        run.stderr = proc.stderr.read()
    finally:
        timer.cancel()
        if proc.poll() is None:
            _kill(proc)
            proc.wait()
    return run


#: opencode's own traffic off: no update check, no models.dev list, no sharing.
OPENCODE_OFFLINE = {
    "OPENCODE_DISABLE_AUTOUPDATE": "1",
    "OPENCODE_DISABLE_MODELS_FETCH": "1",
    "OPENCODE_DISABLE_SHARE": "1",
    "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
}


def opencode_config(base_url: str) -> dict[str, Any]:
    """An ``opencode.json`` whose model is the fake one: a provider of its own on
    ``@ai-sdk/anthropic`` (bundled in the binary) at ``base_url``, selected by
    ``"model"``; no update check, no sharing."""
    return {
        "$schema": "https://opencode.ai/config.json",
        "autoupdate": False,
        "share": "disabled",
        "provider": {
            "fake": {
                "npm": "@ai-sdk/anthropic",
                "name": "Fake",
                "options": {"baseURL": f"{base_url}/v1", "apiKey": "sk-fake"},
                "models": {"claude-fake": {"name": "claude-fake", "tool_call": True}},
            }
        },
        "model": "fake/claude-fake",
    }


def opencode_offline_plugin_deps(*config_dirs: Path) -> None:
    """opencode installs its plugin SDK (``@opencode-ai/plugin``, from npm) into every
    config directory when plugins are there, and waits for it; guards' plugin does not
    use it. A ``node_modules`` and a lock naming it make opencode skip that install (it
    compares the names only): no registry traffic, seconds saved."""
    lock = {"packages": {"": {"dependencies": {"@opencode-ai/plugin": "*"}}}}
    for folder in config_dirs:
        (folder / "node_modules").mkdir(parents=True, exist_ok=True)
        (folder / "package-lock.json").write_text(json.dumps(lock))
        # what opencode writes there itself (it ignores itself): never anyone's dirty work
        ignore = "node_modules\npackage.json\npackage-lock.json\nbun.lock\n.gitignore"
        (folder / ".gitignore").write_text(ignore)


def run_opencode(
    exe: Path,
    cwd: Path,
    prompts: list[str],
    env: dict[str, str],
    *,
    timeout: float = 120,
    options: tuple[str, ...] = (),
) -> Run:
    """``opencode run --format json [OPTIONS] PROMPT`` (headless: every tool allowed), its events as
    JSON lines (each with ``sessionID``, read into ``session_id``); each later prompt
    continues the session (``--session <id>``), one process per prompt as a user would.

    opencode takes its directory from ``$PWD`` before its real working directory: ``PWD``
    is set to ``cwd`` (an inherited one sent a test's ``git reset --hard`` to the
    checkout the tests ran from)."""
    run = Run(returncode=0)
    env = {**OPENCODE_OFFLINE, **env, "PWD": str(cwd)}
    for prompt in prompts:
        args = [str(exe), "run", "--format", "json", "--dir", str(cwd), *options]
        if run.events:
            args += ["--session", run.session_id]
        returncode, out, err = _headless([*args, prompt], cwd, env, timeout)
        for line in out.splitlines():
            if line.strip():
                event = _json_line(line)
                if isinstance(event.get("sessionID"), str):
                    event["session_id"] = event["sessionID"]
                run.events.append(event)
        run.stderr += err
        run.returncode = returncode
        if returncode != 0:
            break
    return run


#: Droid's own services (login, telemetry, settings sync, updates) pointed at nothing: its
#: only traffic is the fake model's. ``FACTORY_AIRGAP_ENABLED`` turns the rest off.
DROID_OFFLINE = "http://127.0.0.1:9"


def droid_env(home: Path) -> dict[str, str]:
    """What ``droid exec`` needs besides a custom model in ``~/.factory/settings.json``."""
    return {
        "HOME": str(home),
        "FACTORY_AIRGAP_ENABLED": "true",
        "FACTORY_API_BASE_URL": DROID_OFFLINE,
        "FACTORY_APP_BASE_URL": DROID_OFFLINE,
        "FACTORY_TELEMETRY_INGEST_BASE_URL": DROID_OFFLINE,
        "FACTORY_WORKOS_BASE_URL": DROID_OFFLINE,
        "FACTORY_DROID_AUTO_UPDATE_ENABLED": "false",
        "FACTORY_DISABLE_KEYRING": "true",
    }


def droid_model(home: Path, url: str, edit_tools: str | None = None) -> str:
    """A BYOK custom model on the fake server (Anthropic Messages) in ``home``'s
    ``~/.factory/settings.json``; returns its ``-m`` id. ``edit_tools``: its
    ``fileEditToolProfile`` (``apply-patch``: droid offers it ApplyPatch instead of Create
    and Edit, as it does GPT-family models)."""
    folder = home / ".factory"
    folder.mkdir(parents=True, exist_ok=True)
    model = {
        "model": "claude-sonnet-4-5",
        "displayName": "Fake",
        "baseUrl": url,
        "apiKey": "fake-key",
        "provider": "anthropic",
        "maxOutputTokens": 4096,
        **({"fileEditToolProfile": edit_tools} if edit_tools else {}),
    }
    chosen = "custom:Fake-0"
    # The interactive UI has no -m and, in 0.225, leaves --auto aside: it starts with
    # the session defaults (exec takes its options).
    defaults = {"model": chosen, "autonomyMode": "auto-high"}
    settings = {"customModels": [model], "sessionDefaultSettings": defaults}
    (folder / "settings.json").write_text(json.dumps(settings))
    return chosen


def run_droid(
    exe: Path,
    cwd: Path,
    prompts: list[str],
    env: dict[str, str],
    *,
    model: str,
    timeout: float = 90,
) -> Run:
    """``droid exec --auto high -m MODEL -o json PROMPT`` (without ``--auto`` exec is
    read-only); each later prompt continues the session (``-s <id>``), one process per
    prompt as a user would."""
    run = Run(returncode=0)
    for prompt in prompts:
        args = [str(exe), "exec", "--auto", "high", "-m", model, "-o", "json"]
        if run.events:
            args += ["-s", run.session_id]
        returncode, out, err = _headless([*args, prompt], cwd, env, timeout)
        run.events += [_json_line(line) for line in out.splitlines() if line.strip()]
        run.stderr += err
        run.returncode = returncode
        if returncode != 0:
            break
    return run
