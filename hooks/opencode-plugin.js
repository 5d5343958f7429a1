// guards-opencode-plugin: written by `guards install --opencode`; `guards uninstall
// --opencode` removes it (it never touches a plugin file that lacks this first line).
//
// opencode (npm `opencode-ai`) has no command hooks in its settings: its hooks are the
// functions of a JavaScript plugin, loaded from `.opencode/plugins/` (project) and
// `~/.config/opencode/plugins/` (user). This one runs `guards agent-hook opencode` with
// one JSON event on stdin and acts on its answer as the other harnesses do on their hook
// commands':
//
// - tool.execute.before (awaited before the tool runs): bash, write, edit, apply_patch.
//   Exit 2 denies the call: the Error thrown here is the tool result the model reads. A
//   hook that cannot run or does not answer in time denies too (never unchecked).
// - tool.execute.after: the answer's additionalContext (the rescue notice) is appended
//   to the tool's output, which is what the model reads.
// - shell.env: every shell command of the session runs as the guards session.
// - chat.message (a user prompt): the frame as a synthetic text part of the prompt.
// - event session.idle (a turn's end), session.deleted, and the plugin's dispose (the
//   opencode process ends): Stop, SessionEnd.
import { spawn } from "node:child_process";

// The hook command (the interpreter recorded at install, else `guards` on PATH).
const SCRIPT = @GUARDS_HOOK_SCRIPT@;
// Milliseconds a hook may take (a rescue of a large tree takes a while).
const TIMEOUT = @GUARDS_TIMEOUT_MS@;
const TOOLS = new Set(["bash", "write", "edit", "apply_patch", "multiedit"]);

// guards.state.identity.session_for("opencode", id), character for character (a run of
// characters a session id cannot hold becomes one "-"); null when too long to match.
function guardsSession(id) {
  const allowed = /[A-Za-z0-9._:@+=-]/;
  let out = "";
  for (const c of String(id).trim()) {
    if (allowed.test(c)) out += c;
    else if (!out.endsWith("-")) out += "-";
  }
  const sid = "opencode-" + (out.replace(/^-+|-+$/g, "") || "unnamed");
  return sid.length <= 128 ? sid : null;
}

function hook(event) {
  return new Promise((resolve) => {
    let child;
    try {
      child = spawn("/bin/sh", ["-c", SCRIPT], { stdio: ["pipe", "pipe", "pipe"] });
    } catch (e) {
      resolve({ code: null, stdout: "", stderr: `guards: cannot run the opencode hook (${e})` });
      return;
    }
    let stdout = "";
    let stderr = "";
    let done = false;
    const finish = (code, extra) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      resolve({ code, stdout, stderr: stderr + (extra || "") });
    };
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      finish(null, `guards: the opencode hook did not answer within ${TIMEOUT / 1000} s`);
    }, TIMEOUT);
    child.stdout.on("data", (d) => (stdout += d));
    child.stderr.on("data", (d) => (stderr += d));
    child.on("error", (e) => finish(null, `guards: cannot run the opencode hook (${e.message})`));
    child.on("close", (code) => finish(code));
    child.stdin.on("error", () => {});
    child.stdin.end(JSON.stringify(event));
  });
}

function context(answer) {
  if (answer.code !== 0 || !answer.stdout.trim()) return "";
  try {
    const doc = JSON.parse(answer.stdout);
    const text = doc && doc.hookSpecificOutput && doc.hookSpecificOutput.additionalContext;
    return typeof text === "string" ? text : "";
  } catch {
    return "";
  }
}

function report(answer) {
  const text = answer.stderr.trim();
  if (text) console.error(text);
}

export const GuardsPlugin = async ({ directory }) => {
  const sessions = new Set();
  const pending = new Set();
  const send = (event) => {
    if (event.sessionID) sessions.add(event.sessionID);
    return hook({ ...event, directory });
  };
  const later = (event) => {
    const p = send(event).then(report);
    pending.add(p);
    p.finally(() => pending.delete(p));
  };
  const end = async (sessionID) => {
    sessions.delete(sessionID);
    report(await hook({ event: "session.end", sessionID, directory }));
  };
  return {
    "tool.execute.before": async (input, output) => {
      if (!TOOLS.has(input.tool)) return;
      const answer = await send({ event: "tool.execute.before", ...input, args: output.args });
      if (answer.code === 0) {
        report(answer);
        return;
      }
      const reason = answer.stderr.trim() || `guards: the opencode hook exited ${answer.code}`;
      if (answer.code === 2 || answer.code === null) throw new Error(reason);
      console.error(reason); // a hook error that decided nothing (exit 1): go on
    },
    "tool.execute.after": async (input, output) => {
      if (!TOOLS.has(input.tool)) return;
      const answer = await send({
        event: "tool.execute.after",
        ...input,
        metadata: output && output.metadata,
      });
      report(answer);
      const text = context(answer);
      if (text && output) output.output = `${output.output || ""}\n\n${text}`;
    },
    "shell.env": async (input, output) => {
      if (!input.sessionID) return;
      output.env.OPENCODE_SESSION_ID = input.sessionID;
      const sid = guardsSession(input.sessionID);
      if (sid) output.env.GUARDS_SESSION = sid;
    },
    "chat.message": async (input, output) => {
      const parts = output.parts || [];
      const prompt = parts
        .filter((p) => p.type === "text" && !p.synthetic)
        .map((p) => p.text)
        .join("\n");
      const answer = await send({ event: "chat.message", sessionID: input.sessionID, prompt });
      report(answer);
      const text = context(answer);
      const last = parts[parts.length - 1];
      if (!text || !output.message || !last) return;
      parts.push({
        id: `${last.id}0`, // sorts right after the prompt's last part
        messageID: output.message.id,
        sessionID: input.sessionID,
        type: "text",
        text,
        synthetic: true,
      });
    },
    event: async ({ event }) => {
      const sessionID = event.properties && event.properties.sessionID;
      if (!sessionID) return;
      if (event.type === "session.idle") later({ event: "session.idle", sessionID });
      if (event.type === "session.deleted" && sessions.has(sessionID)) {
        const p = end(sessionID);
        pending.add(p);
        p.finally(() => pending.delete(p));
      }
    },
    dispose: async () => {
      await Promise.allSettled([...pending]);
      await Promise.allSettled([...sessions].map(end));
    },
  };
};
