"""A scripted fake model on 127.0.0.1 for the real agent CLIs.

It speaks the three wire formats the CLIs use (read from each CLI's requests): Anthropic Messages
(``POST /v1/messages``, SSE), OpenAI Responses (``POST /v1/responses``, SSE) and Gemini
(``:generateContent``, JSON, for routers; ``:streamGenerateContent?alt=sse`` for the
main loop). It answers from a script written in neutral actions (:func:`shell`,
:func:`write`, :func:`edit`, :func:`say`), translated to each CLI's own tools:

- step ``i`` of the script answers a request whose conversation already holds ``i``
  assistant turns; past the end of the script the answer is a short text;
- a request that does not offer the CLI's shell tool is a side call (a title, a router)
  and gets a short text (or, for Gemini's JSON calls, an object of the requested schema).

Every request body is logged (:attr:`ModelServer.requests`): that is where a test sees
what the CLI's hooks put in front of the model. ``before_step`` runs a test's function
once before step ``i`` is answered, while the CLI waits: the world between two tool
calls (another writer's edit, a check of what the last command left). The server runs
in a daemon thread of the test process and stops itself after ``lifetime`` seconds at
the latest.
"""

from __future__ import annotations

import json
import shlex
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

ANTHROPIC = "anthropic"
OPENAI = "openai"
GEMINI = "gemini"
#: GitHub Copilot CLI: the Anthropic wire format with its own tools (bash, create, edit).
COPILOT = "copilot"
#: Qwen Code (``--auth-type anthropic``): the Anthropic wire format with its own tools
#: (run_shell_command, write_file, edit; Claude's input fields).
QWEN = "qwen"

#: opencode (a provider on ``@ai-sdk/anthropic``): the Anthropic wire format with its own
#: tools (bash; write and edit with ``filePath``, ``oldString``, ``newString``).
OPENCODE = "opencode"

#: Factory Droid (a BYOK ``anthropic`` custom model): the Anthropic wire format with its own
#: tools (Execute with a summary and a risk level; Create, Edit with ``old_str``/``new_str``).
DROID = "droid"

#: What the model says when it has nothing left to do.
DONE = "done"


@dataclass(frozen=True)
class Action:
    """One tool call, in neutral terms (``kind``: shell, write, edit)."""

    kind: str
    args: dict[str, str]


def shell(command: str, directory: str | None = None) -> Action:
    """A shell line (``directory``: where it runs, for the CLIs whose tool takes one:
    Codex's ``workdir``, Gemini's ``dir_path``, Qwen's ``directory``, opencode's
    ``workdir``)."""
    args = {"command": command}
    if directory is not None:
        args["directory"] = directory
    return Action("shell", args)


def write(path: str, content: str) -> Action:
    """Write a whole file (``path`` absolute: Claude's and Gemini's tools demand it)."""
    return Action("write", {"path": path, "content": content})


def edit(path: str, old: str, new: str) -> Action:
    return Action("edit", {"path": path, "old": old, "new": new})


def patch(change: Action | str) -> Action:
    """A patch in the ``*** Begin Patch`` grammar (Droid's ApplyPatch): a write or an
    edit as Codex's patches spell it, or the patch's text itself."""
    return Action("patch", {"patch": change if isinstance(change, str) else _patch(change)})


def read(path: str) -> Action:
    """Read a file with the CLI's own tool (Claude's Edit wants one first)."""
    return Action("read", {"path": path})


def say(text: str) -> str:
    """A turn that only talks (it ends the agent's loop for this prompt)."""
    return text


#: One step: the tool calls of one assistant turn, or a final text.
Step = Sequence[Action] | str


@dataclass
class Request:
    method: str
    path: str
    dialect: str
    body: dict[str, Any]
    #: The script step this request was answered with (None: a side call).
    step: int | None = None
    answer: Any = None
    #: Whether it offers the CLI's shell tool: the agent loop does; a side call (a
    #: title, a router) offers none or only some other tool (Codex's TUI titles offer
    #: apply_patch).
    offers_tools: bool = False

    def text(self) -> str:
        """The whole body as one string (for "did the model see X" checks)."""
        return json.dumps(self.body, ensure_ascii=False)

    def news(self) -> str:
        """What the conversation gained since the model's last turn (tool results, hook
        context), as one string."""
        return json.dumps(latest_input(self.dialect, self.body), ensure_ascii=False)


@dataclass
class ModelServer:
    script: list[Step]
    lifetime: float = 120.0
    before_step: dict[int, Callable[[], object]] = field(default_factory=dict)
    #: The CLI whose own tools a wire format carries ("" : the wire format's usual CLI).
    flavour: str = ""
    requests: list[Request] = field(default_factory=list)
    #: Problems seen while answering (a tool the CLI did not offer, an unknown path...).
    errors: list[str] = field(default_factory=list)
    _server: ThreadingHTTPServer | None = None
    _timer: threading.Timer | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _ids: int = 0
    _prepared: set[int] = field(default_factory=set)

    # -- life ------------------------------------------------------------------------

    def start(self) -> ModelServer:
        server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        server.daemon_threads = True
        self._server = server
        threading.Thread(target=server.serve_forever, name="fake-model", daemon=True).start()
        self._timer = threading.Timer(self.lifetime, self.stop)
        self._timer.daemon = True
        self._timer.start()
        return self

    def stop(self) -> None:
        server, self._server = self._server, None
        if self._timer is not None:
            self._timer.cancel()
        if server is not None:
            server.shutdown()
            server.server_close()

    def __enter__(self) -> ModelServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        assert self._server is not None, "the server is not running"
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    # -- what the CLI sent -------------------------------------------------------------

    @property
    def main_requests(self) -> list[Request]:
        """The agent loop's requests (those offering tools), in order."""
        return [r for r in self.requests if r.offers_tools]

    def answered_steps(self) -> list[int]:
        return [r.step for r in self.main_requests if r.step is not None]

    def at_step(self, step: int) -> Request:
        """The first request answered with script step ``step``."""
        for r in self.main_requests:
            if r.step == step:
                return r
        raise AssertionError(f"no request reached step {step}: {self.answered_steps()}")

    # -- answering ---------------------------------------------------------------------

    def _prepare(self, step: int) -> None:
        with self._lock:
            todo = step in self.before_step and step not in self._prepared
            self._prepared.add(step)
        if todo:
            try:
                self.before_step[step]()
            except Exception as e:  # the CLI is still waiting: report, answer anyway
                self.errors.append(f"before step {step}: {e.__class__.__name__}: {e}")

    def next_id(self, prefix: str) -> str:
        with self._lock:
            self._ids += 1
            return f"{prefix}_{self._ids:04d}"

    def answer(self, method: str, path: str, body: dict[str, Any]) -> tuple[int, str, bytes]:
        """(status, content type, body) for one request; logs it."""
        dialect = dialect_of(path)
        request = Request(method, path, dialect or "?", body)
        if dialect is not None:
            shell_tool = TOOLS[self.flavour or dialect]["shell"]
            request.offers_tools = shell_tool in tool_names(dialect, body)
        with self._lock:
            self.requests.append(request)
        if dialect is None:
            self.errors.append(f"unexpected request {method} {path}")
            return 404, "application/json", b'{"error": "not found"}'
        if request.offers_tools:
            step = assistant_turns(dialect, body)
            request.step = step
            self._prepare(step)
            reply: Step = self.script[step] if step < len(self.script) else DONE
            offered = tool_names(dialect, body)
            if not isinstance(reply, str):
                for action in reply:
                    name = tool_for(self.flavour or dialect, action)
                    if name not in offered:
                        self.errors.append(f"step {step}: {name} not offered ({sorted(offered)})")
        else:
            reply = DONE
        request.answer = reply
        if dialect == ANTHROPIC:
            return anthropic_reply(self, body, reply)
        if dialect == OPENAI:
            return openai_reply(self, body, reply)
        return gemini_reply(self, path, body, reply)


def _handler(server: ModelServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass  # the request log is server.requests

        def do_GET(self) -> None:
            self._reply(*server.answer("GET", self.path, {}))

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                body = json.loads(raw) if raw else {}
            except ValueError:
                body = {"unparsed": raw.decode("utf-8", "replace")}
            self._reply(*server.answer("POST", self.path, body))

        def _reply(self, status: int, content_type: str, payload: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(payload)))
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(payload)
            self.wfile.flush()
            self.close_connection = True

    return Handler


# -- the dialects ----------------------------------------------------------------------


def dialect_of(path: str) -> str | None:
    bare = path.split("?", 1)[0]
    if bare.endswith("/messages"):
        return ANTHROPIC
    if bare.endswith("/responses"):
        return OPENAI
    if bare.endswith((":generateContent", ":streamGenerateContent")):
        return GEMINI
    return None


#: The neutral actions as each CLI's tools name them.
TOOLS = {
    ANTHROPIC: {"shell": "Bash", "write": "Write", "edit": "Edit", "read": "Read"},
    COPILOT: {"shell": "bash", "write": "create", "edit": "edit", "read": "view"},
    QWEN: {
        "shell": "run_shell_command",
        "write": "write_file",
        "edit": "edit",
        "read": "read_file",
    },
    OPENCODE: {"shell": "bash", "write": "write", "edit": "edit", "read": "read"},
    DROID: {
        "shell": "Execute",
        "write": "Create",
        "edit": "Edit",
        "read": "Read",
        "patch": "ApplyPatch",
    },
    OPENAI: {
        "shell": "exec_command",
        "write": "apply_patch",
        "edit": "apply_patch",
        "read": "exec_command",
    },
    GEMINI: {
        "shell": "run_shell_command",
        "write": "write_file",
        "edit": "replace",
        "read": "read_file",
    },
}


def tool_for(dialect: str, action: Action) -> str:
    return TOOLS[dialect][action.kind]


def tool_names(dialect: str, body: dict[str, Any]) -> set[str]:
    tools = body.get("tools") or []
    names: set[str] = set()
    for tool in tools if isinstance(tools, list) else []:
        if not isinstance(tool, dict):
            continue
        if dialect == GEMINI:
            for decl in tool.get("functionDeclarations") or []:
                names.add(str(decl.get("name")))
        else:
            name = tool.get("name")
            if name is None and isinstance(tool.get("function"), dict):
                name = tool["function"].get("name")
            if name is not None:
                names.add(str(name))
    return names


def assistant_turns(dialect: str, body: dict[str, Any]) -> int:
    """How many assistant turns the conversation in ``body`` already holds."""
    if dialect == ANTHROPIC:
        return sum(1 for m in body.get("messages") or [] if m.get("role") == "assistant")
    if dialect == GEMINI:
        return sum(1 for c in body.get("contents") or [] if c.get("role") == "model")
    turns = 0
    previous = False
    for item in body.get("input") or []:
        ours = isinstance(item, dict) and (
            item.get("role") == "assistant"
            or item.get("type") in ("function_call", "custom_tool_call", "reasoning")
        )
        if ours and not previous:
            turns += 1
        previous = ours
    return turns


def latest_input(dialect: str, body: dict[str, Any]) -> list[Any]:
    """The conversation's entries after the last assistant turn."""
    if dialect == ANTHROPIC:
        entries, ours = body.get("messages") or [], ("assistant",)
        key = "role"
    elif dialect == GEMINI:
        entries, ours, key = body.get("contents") or [], ("model",), "role"
    else:
        entries = body.get("input") or []
        tail: list[Any] = []
        for item in reversed(entries):
            if isinstance(item, dict) and (
                item.get("role") == "assistant"
                or item.get("type") in ("function_call", "custom_tool_call", "reasoning")
            ):
                break
            tail.insert(0, item)
        return tail
    tail = []
    for entry in reversed(entries):
        if isinstance(entry, dict) and entry.get(key) in ours:
            break
        tail.insert(0, entry)
    return tail


def _sse(events: Iterator[tuple[str | None, dict[str, Any]]]) -> bytes:
    out = []
    for name, data in events:
        head = f"event: {name}\n" if name else ""
        out.append(f"{head}data: {json.dumps(data)}\n\n")
    return "".join(out).encode()


# Anthropic Messages ---------------------------------------------------------------------


def _anthropic_input(action: Action, flavour: str = "") -> dict[str, str]:
    a = action.args
    if flavour == COPILOT:
        return _copilot_input(action)
    if flavour == OPENCODE:
        return _opencode_input(action)
    if flavour == DROID:
        return _droid_input(action)
    if action.kind == "shell":
        where = {"directory": a["directory"]} if "directory" in a and flavour == QWEN else {}
        return {"command": a["command"], "description": "run a command", **where}
    if action.kind == "write":
        return {"file_path": a["path"], "content": a["content"]}
    if action.kind == "read":
        return {"file_path": a["path"]}
    return {"file_path": a["path"], "old_string": a["old"], "new_string": a["new"]}


def _copilot_input(action: Action) -> dict[str, str]:
    a = action.args
    if action.kind == "shell":
        return {"command": a["command"], "description": "run a command", "mode": "sync"}
    if action.kind == "write":
        return {"path": a["path"], "file_text": a["content"]}
    if action.kind == "read":
        return {"path": a["path"]}
    return {"path": a["path"], "old_str": a["old"], "new_str": a["new"]}


def _opencode_input(action: Action) -> dict[str, str]:
    a = action.args
    if action.kind == "shell":
        where = {"workdir": a["directory"]} if "directory" in a else {}
        return {"command": a["command"], "description": "run a command", **where}
    if action.kind == "write":
        return {"filePath": a["path"], "content": a["content"]}
    if action.kind == "read":
        return {"filePath": a["path"]}
    return {"filePath": a["path"], "oldString": a["old"], "newString": a["new"]}


def _droid_input(action: Action) -> dict[str, str]:
    a = action.args
    if action.kind == "shell":
        return {
            "command": a["command"],
            "summary": "Run a shell command here",
            "riskLevel": "low",
            "riskLevelReason": "a test command in a scratch repository",
        }
    if action.kind == "write":
        return {"file_path": a["path"], "content": a["content"]}
    if action.kind == "read":
        return {"file_path": a["path"]}
    if action.kind == "patch":
        return {"input": a["patch"]}
    return {"file_path": a["path"], "old_str": a["old"], "new_str": a["new"]}


def _streamed_input(block: dict[str, Any]) -> str:
    """A tool call's input as streamed. Droid (0.225) reads its ApplyPatch as a freeform
    tool with any provider: the streamed input, whole, is the patch (JSON there would be
    taken for the patch and rejected), as a GPT model's custom tool call sends it."""
    if block["name"] == "ApplyPatch":
        return str(block["input"]["input"])
    return json.dumps(block["input"])


def anthropic_reply(
    server: ModelServer, body: dict[str, Any], reply: Step
) -> tuple[int, str, bytes]:
    blocks: list[dict[str, Any]] = []
    if isinstance(reply, str):
        blocks.append({"type": "text", "text": reply})
    else:
        for action in reply:
            blocks.append(
                {
                    "type": "tool_use",
                    "id": server.next_id("toolu"),
                    "name": tool_for(server.flavour or ANTHROPIC, action),
                    "input": _anthropic_input(action, server.flavour),
                }
            )
    stop = "end_turn" if isinstance(reply, str) else "tool_use"
    message = {
        "id": server.next_id("msg"),
        "type": "message",
        "role": "assistant",
        "model": body.get("model", "claude"),
        "content": blocks,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 5},
    }
    if not body.get("stream"):
        return 200, "application/json", json.dumps(message).encode()

    def events() -> Iterator[tuple[str | None, dict[str, Any]]]:
        start = {**message, "content": [], "stop_reason": None}
        yield "message_start", {"type": "message_start", "message": start}
        for index, block in enumerate(blocks):
            if block["type"] == "text":
                empty: dict[str, Any] = {"type": "text", "text": ""}
                delta = {"type": "text_delta", "text": block["text"]}
            else:
                empty = {**block, "input": {}}
                delta = {"type": "input_json_delta", "partial_json": _streamed_input(block)}
            yield (
                "content_block_start",
                {
                    "type": "content_block_start",
                    "index": index,
                    "content_block": empty,
                },
            )
            yield (
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": index,
                    "delta": delta,
                },
            )
            yield "content_block_stop", {"type": "content_block_stop", "index": index}
        yield (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop, "stop_sequence": None},
                "usage": {"output_tokens": 5},
            },
        )
        yield "message_stop", {"type": "message_stop"}

    return 200, "text/event-stream", _sse(events())


# OpenAI Responses -----------------------------------------------------------------------


def _patch(action: Action) -> str:
    a = action.args
    if action.kind == "write":
        lines = "".join(f"+{line}\n" for line in a["content"].splitlines())
        return f"*** Begin Patch\n*** Add File: {a['path']}\n{lines}*** End Patch\n"
    old = "".join(f"-{line}\n" for line in a["old"].splitlines())
    new = "".join(f"+{line}\n" for line in a["new"].splitlines())
    return f"*** Begin Patch\n*** Update File: {a['path']}\n@@\n{old}{new}*** End Patch\n"


def _openai_item(server: ModelServer, action: Action) -> dict[str, Any]:
    call_id = server.next_id("call")
    if action.kind in ("shell", "read"):
        command = action.args.get("command") or f"cat {shlex.quote(action.args['path'])}"
        where = {"workdir": action.args["directory"]} if "directory" in action.args else {}
        return {
            "type": "function_call",
            "id": server.next_id("fc"),
            "call_id": call_id,
            "name": "exec_command",
            "arguments": json.dumps({"cmd": command, **where}),
            "status": "completed",
        }
    return {
        "type": "custom_tool_call",
        "id": server.next_id("ctc"),
        "call_id": call_id,
        "name": "apply_patch",
        "input": _patch(action),
        "status": "completed",
    }


def openai_reply(server: ModelServer, body: dict[str, Any], reply: Step) -> tuple[int, str, bytes]:
    if isinstance(reply, str):
        items = [
            {
                "type": "message",
                "id": server.next_id("msg"),
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": reply, "annotations": []}],
            }
        ]
    else:
        items = [_openai_item(server, action) for action in reply]
    response_id = server.next_id("resp")
    base = {
        "id": response_id,
        "object": "response",
        "model": body.get("model", "gpt"),
        "status": "in_progress",
        "output": [],
    }

    def events() -> Iterator[tuple[str | None, dict[str, Any]]]:
        yield "response.created", {"type": "response.created", "response": base}
        for index, item in enumerate(items):
            yield (
                "response.output_item.added",
                {
                    "type": "response.output_item.added",
                    "output_index": index,
                    "item": item,
                },
            )
            if item["type"] == "message":
                yield (
                    "response.output_text.delta",
                    {
                        "type": "response.output_text.delta",
                        "item_id": item["id"],
                        "output_index": index,
                        "content_index": 0,
                        "delta": item["content"][0]["text"],
                    },
                )
            yield (
                "response.output_item.done",
                {
                    "type": "response.output_item.done",
                    "output_index": index,
                    "item": item,
                },
            )
        done = {
            **base,
            "status": "completed",
            "output": items,
            "usage": {
                "input_tokens": 10,
                "input_tokens_details": {"cached_tokens": 0},
                "output_tokens": 5,
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": 15,
            },
        }
        yield "response.completed", {"type": "response.completed", "response": done}

    return 200, "text/event-stream", _sse(events())


# Gemini -------------------------------------------------------------------------------------


def _gemini_args(action: Action) -> dict[str, str]:
    a = action.args
    if action.kind == "shell":
        where = {"dir_path": a["directory"]} if "directory" in a else {}
        return {"command": a["command"], "description": "run a command", **where}
    if action.kind == "write":
        return {"file_path": a["path"], "content": a["content"]}
    if action.kind == "read":
        return {"absolute_path": a["path"]}
    return {
        "file_path": a["path"],
        "old_string": a["old"],
        "new_string": a["new"],
        "instruction": "edit the file",
    }


def schema_example(schema: Any) -> Any:
    """A value of a JSON schema (enums: the choice that ends a loop or picks the small
    model, else the first)."""
    if not isinstance(schema, dict):
        return DONE
    if "enum" in schema:
        choices = list(schema["enum"])
        for preferred in ("user", "flash"):
            if preferred in choices:
                return preferred
        return choices[0]
    kind = str(schema.get("type", "string")).lower()
    if kind == "object":
        props = schema.get("properties") or {}
        return {name: schema_example(sub) for name, sub in props.items()}
    if kind == "array":
        return [schema_example(schema.get("items"))]
    if kind in ("integer", "number"):
        return 1  # Gemini's router wants a complexity score of 1-100
    if kind == "boolean":
        return False
    return DONE


def gemini_reply(
    server: ModelServer, path: str, body: dict[str, Any], reply: Step
) -> tuple[int, str, bytes]:
    if isinstance(reply, str):
        config = body.get("generationConfig") or body.get("config") or {}
        schema = config.get("responseJsonSchema") or config.get("responseSchema")
        if schema is not None:
            reply = json.dumps(schema_example(schema))
        parts: list[dict[str, Any]] = [{"text": reply}]
    else:
        parts = [
            {"functionCall": {"name": tool_for(GEMINI, a), "args": _gemini_args(a)}} for a in reply
        ]
    chunk = {
        "candidates": [
            {"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}
        ],
        "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15},
        "modelVersion": "gemini-fake",
    }
    if ":streamGenerateContent" in path:
        return 200, "text/event-stream", _sse(iter([(None, chunk)]))
    return 200, "application/json", json.dumps(chunk).encode()
