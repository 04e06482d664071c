// thatch plugin for opencode. Written by `thatch install opencode`; a later
// install overwrites local edits.
//
// It connects this opencode server to the thatch daemon (`thatch serve`):
// it registers the server so the daemon can watch its sessions, forwards
// the two hooks the event bus does not carry (tool.execute.after and
// command.execute.before), and gives the model thatch's tools. The daemon
// is reached on loopback with the bearer token from its 0600 token file.
// Nothing here may break opencode: every call has a timeout, every hook
// catches its errors, and a tool whose daemon is down says so to the model.
//
// The daemon answers a call it did not carry out with {error, retryable}.
// A retryable failure (the daemon is starting, or its journal did not
// answer in time; or the daemon could not be reached) is sent again a few
// times with backoff, within the call's time budget, which is what one
// call was allowed before; a final one (a bad body, an unknown session, a
// message the daemon refused) is never sent again. Both are logged, and a
// tool tells the model what the daemon said.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { tool } from "@opencode-ai/plugin";

// Baked in by `thatch install` from the daemon's config; the environment
// wins, so one plugin can follow a daemon started with another config.
const DEFAULT_STATE_FILE = {{THATCH_STATE_FILE}};
const DEFAULT_TOKEN_FILE = {{THATCH_TOKEN_FILE}};

// Time budgets, for all the attempts of one call together.
const CALL_TIMEOUT_MS = 5000; // hooks: opencode waits for them
const TOOL_TIMEOUT_MS = 30000; // tools: the daemon journals before it answers
const MAX_ATTEMPTS = 4; // of a call whose failures are retryable
const RETRY_MS = Number(process.env.OPENCODE_THATCH_RETRY_MS) || 250; // first backoff; it doubles
const MIN_ATTEMPT_MS = 200; // a retry needs at least this much budget left
const TEXT_LIMIT = 2000; // tool output and top-level string args
const POLL_MS = Number(process.env.OPENCODE_THATCH_POLL_MS) || 2000;
const RETRY_FAILED_MS = 30000; // a daemon that did not answer is tried this often
// Tools whose calls carry no facts of their own (the daemon filters too):
// the agent-dispatch tools, and the memory tools this plugin defines (a
// memory already written is durable; extracting it again would duplicate
// it). Another plugin's memory_* tools are buffered like any other tool.
const SKIPPED_TOOLS = new Set(["skill", "task", "subagent", "memory_remember", "memory_recall", "memory_forget", "memory_list"]);
// What serverUrl says when the server does not listen on a port (the TUI
// started without --port or --hostname): the daemon has nothing to reach.
const NO_SERVER_URL = "http://localhost:4096/";

function controlFiles() {
  const env = process.env;
  const dataDir = env.THATCH_DATA_DIR;
  return {
    state: env.THATCH_CONTROL_STATE_FILE || (dataDir ? join(dataDir, "control.json") : DEFAULT_STATE_FILE),
    token: env.THATCH_CONTROL_TOKEN_FILE || (dataDir ? join(dataDir, "control.token") : DEFAULT_TOKEN_FILE),
  };
}

// daemonState reads where the daemon listens; null when it is not running.
function daemonState() {
  try {
    const st = JSON.parse(readFileSync(controlFiles().state, "utf8"));
    return st && typeof st.addr === "string" ? st : null;
  } catch {
    return null;
  }
}

// DaemonError is a call that failed, with a message meant for a person (or
// a model). retryable says whether sending it again may succeed; attempts
// is how many times it was sent.
class DaemonError extends Error {
  constructor(message, retryable = false) {
    super(message);
    this.retryable = retryable;
    this.attempts = 1;
  }

  // detail is the message with what was done about it.
  get detail() {
    return this.retryable
      ? `${this.message} (gave up after ${this.attempts} attempt${this.attempts === 1 ? "" : "s"})`
      : `${this.message} (final: not retried)`;
  }
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// call posts body to the daemon's control API and returns the JSON answer,
// sending it again after a retryable failure while attempts and the time
// budget last. It throws DaemonError.
async function call(path, body, budgetMs, attempts = MAX_ATTEMPTS) {
  const deadline = Date.now() + budgetMs;
  for (let n = 1; ; n++) {
    try {
      return await callOnce(path, body, Math.max(deadline - Date.now(), 1));
    } catch (err) {
      if (!(err instanceof DaemonError)) throw err;
      err.attempts = n;
      const wait = RETRY_MS * 2 ** (n - 1);
      if (!err.retryable || n >= attempts || deadline - Date.now() < wait + MIN_ATTEMPT_MS) throw err;
      await sleep(wait);
    }
  }
}

// callOnce is one attempt of call.
async function callOnce(path, body, timeoutMs) {
  const st = daemonState();
  if (!st) {
    throw new DaemonError(`the thatch daemon is not running (no ${controlFiles().state}); start it with \`thatch serve\``);
  }
  let token;
  try {
    token = readFileSync(controlFiles().token, "utf8").trim();
  } catch (err) {
    throw new DaemonError(`cannot read the thatch token file ${controlFiles().token}: ${err.message}`);
  }
  let res;
  try {
    res = await fetch(`http://${st.addr}${path}`, {
      method: "POST",
      headers: { "Content-Type": "application/json", Authorization: `Bearer ${token}` },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(timeoutMs),
    });
  } catch (err) {
    // Nothing reached the daemon, or its answer did not come in time: a
    // daemon restarting may take the call a moment later.
    throw new DaemonError(`the thatch daemon at ${st.addr} is not reachable (${err?.name === "TimeoutError" ? "timed out" : err?.message ?? err})`, true);
  }
  const text = await res.text().catch(() => "");
  let data = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    data = null;
  }
  if (!res.ok) {
    const said = data && typeof data.error === "string";
    if (res.status === 404 && !said) {
      throw new DaemonError(`this thatch daemon does not offer ${path} (HTTP 404); upgrade thatch`);
    }
    throw new DaemonError(said ? data.error : `HTTP ${res.status}`, data?.retryable === true);
  }
  return data;
}

function cut(s) {
  return typeof s === "string" && s.length > TEXT_LIMIT ? s.slice(0, TEXT_LIMIT) + "…" : s;
}

// trimArgs cuts top-level string arguments; nested values pass as they are.
function trimArgs(args) {
  if (!args || typeof args !== "object" || Array.isArray(args)) return args ?? {};
  const out = {};
  for (const [k, v] of Object.entries(args)) out[k] = cut(v);
  return out;
}

function outputText(output) {
  if (typeof output?.output === "string") return output.output;
  try {
    return JSON.stringify(output?.content ?? output ?? "");
  } catch {
    return "";
  }
}

// failureText says why a call failed, and whether it was retried.
function failureText(err) {
  return err instanceof DaemonError ? err.detail : `unexpected error: ${err?.message ?? err}`;
}

function defined(obj) {
  const out = {};
  for (const [k, v] of Object.entries(obj)) if (v !== undefined && v !== null) out[k] = v;
  return out;
}

export const ThatchPlugin = async (input) => {
  const { client } = input;
  let hostName = "";
  let registeredWith = ""; // pid+start of the daemon we registered with
  let attempt = ""; // ... of the daemon we are registering with
  let failedWith = ""; // ... of the daemon that last refused, and when
  let failedAt = 0;
  let warnedNoServer = false;

  const log = (level, message, extra) => {
    try {
      const p = client?.app?.log?.({ body: { service: "thatch", level, message, extra } });
      p?.catch?.(() => {});
    } catch {
      // logging is best effort
    }
  };

  // toolReply turns a daemon answer, or its failure, into the text the
  // model reads; a failure is logged too. A tool never throws: a daemon
  // that is down is news, not a crash.
  const toolReply = async (what, f) => {
    try {
      return await f();
    } catch (err) {
      log("warn", `thatch: ${what} failed: ${failureText(err)}`);
      return `thatch: ${what} failed: ${failureText(err)}. Nothing was changed by this call.`;
    }
  };

  const serverURL = () => {
    try {
      return String(input.serverUrl ?? "");
    } catch {
      return "";
    }
  };
  const currentHost = () => {
    if (hostName) return hostName;
    try {
      return "opencode@" + new URL(serverURL()).host;
    } catch {
      return "";
    }
  };

  // register tells the daemon about this server when the daemon we last
  // registered with is not the one running now (first load, or a daemon
  // restart: a restarted daemon has forgotten its connections).
  let registering = false;
  const register = async () => {
    if (registering) return;
    registering = true;
    try {
      const url = serverURL();
      if (url === NO_SERVER_URL) {
        // This opencode runs its server in-process (the TUI without
        // --port): nothing can reach it. Another opencode may well listen
        // on that address, so probing it would wire up the wrong server.
        if (!warnedNoServer) {
          warnedNoServer = true;
          log("warn", "thatch: this opencode has no HTTP server for the thatch daemon to watch; start the TUI with --port 0 (or use `opencode serve`)");
        }
        return;
      }
      const st = daemonState();
      if (!st) {
        registeredWith = "";
        return;
      }
      const daemonID = `${st.pid}/${st.startedAt}`;
      if (daemonID === registeredWith) return;
      // A daemon killed without cleanup leaves its state file behind: try
      // it again only now and then, and complain about it once.
      if (daemonID === failedWith && Date.now() - failedAt < RETRY_FAILED_MS) return;
      attempt = daemonID;
      const ans = await call("/v1/opencode/register", defined({
        url,
        directory: input.directory,
        pid: process.pid,
        username: process.env.OPENCODE_SERVER_PASSWORD ? process.env.OPENCODE_SERVER_USERNAME || "opencode" : undefined,
        password: process.env.OPENCODE_SERVER_PASSWORD || undefined,
      }), CALL_TIMEOUT_MS, 1); // the poll tries again
      if (ans && typeof ans.host === "string") hostName = ans.host;
      registeredWith = daemonID;
      log("info", `thatch: registered with the thatch daemon as ${hostName}`);
    } catch (err) {
      registeredWith = "";
      if (attempt !== failedWith) {
        log("warn", `thatch: cannot register with the thatch daemon: ${err?.message ?? err}`);
      }
      failedWith = attempt;
      failedAt = Date.now();
    } finally {
      registering = false;
    }
  };

  const timer = setInterval(() => {
    register().catch(() => {});
  }, POLL_MS);
  timer.unref?.();
  register().catch(() => {});

  return {
    dispose: async () => {
      clearInterval(timer);
    },

    "tool.execute.after": async (hook, output) => {
      try {
        const name = hook?.tool ?? "";
        if (!name || name.startsWith("thatch_") || SKIPPED_TOOLS.has(name) || !hook.sessionID) return;
        await call("/v1/opencode/tool", {
          host: currentHost(),
          sessionID: hook.sessionID,
          callID: hook.callID ?? "",
          tool: name,
          args: trimArgs(hook.args),
          title: cut(typeof output?.title === "string" ? output.title : ""),
          output: cut(outputText(output)),
        }, CALL_TIMEOUT_MS);
      } catch (err) {
        log("warn", `thatch: tool call ${hook?.tool} of ${hook?.sessionID} not recorded: ${failureText(err)}`);
      }
    },

    "command.execute.before": async (hook) => {
      try {
        const command = String(hook?.command ?? "").replace(/^\//, "");
        if (!command.startsWith("thatch/") || !hook.sessionID) return;
        await call("/v1/opencode/command", {
          host: currentHost(),
          sessionID: hook.sessionID,
          command,
          arguments: hook.arguments ?? "",
        }, CALL_TIMEOUT_MS);
      } catch (err) {
        log("warn", `thatch: /${hook?.command} of ${hook?.sessionID} not armed: ${failureText(err)}`);
      }
    },

    tool: {
      thatch_get_extraction_payload: tool({
        description:
          "Fetch the tool interactions thatch buffered for fact extraction. Returns JSON {interactions, projectStore, globalStore}, or null when nothing is queued. Call it once; what you receive is yours to process.",
        args: {
          session_id: tool.schema.string().optional().describe("the session whose queue to fetch; default: your parent session"),
        },
        async execute(args, ctx) {
          return toolReply("fetching the extraction payload", async () => {
            const ans = await call("/v1/opencode/payload", defined({ sessionID: ctx.sessionID, target: args.session_id }), TOOL_TIMEOUT_MS);
            return JSON.stringify(ans ?? null);
          });
        },
      }),

      thatch_extraction_done: tool({
        description:
          "Tell thatch that you finished processing the payload you fetched. Always call it at the end of an extraction, even if you saved nothing.",
        args: {},
        async execute(_args, ctx) {
          return toolReply("acknowledging the extraction", async () => {
            const ans = await call("/v1/opencode/done", { sessionID: ctx.sessionID }, TOOL_TIMEOUT_MS);
            return `Acknowledged: ${ans?.completed ?? 0} interaction(s) completed.`;
          });
        },
      }),

      memory_remember: tool({
        description:
          "Save one durable fact (still true and useful weeks from now) as a memory. A label that exists is an error unless overwrite is true.",
        args: {
          label: tool.schema.string().describe("short, specific label, unique within the store"),
          content: tool.schema.string().describe("the fact, self-contained"),
          store: tool.schema.string().optional().describe("store name; default: this project's store"),
          branch: tool.schema.string().optional().describe("git branch, only for branch-specific facts; default: project-wide"),
          confidence: tool.schema.number().int().min(1).max(10).optional().describe("1 (guess) to 10 (verified)"),
          overwrite: tool.schema.boolean().optional().describe("update the memory with this label"),
          archived: tool.schema.boolean().optional().describe("keep it, but out of recall"),
        },
        async execute(args, ctx) {
          return toolReply("saving the memory", async () =>
            JSON.stringify(await call("/v1/memory/remember", defined({ sessionID: ctx.sessionID, ...args }), TOOL_TIMEOUT_MS)));
        },
      }),

      memory_recall: tool({
        description: "Search saved memories (this project's store and the global one) for facts about a topic.",
        args: {
          query: tool.schema.string().describe("what to look for"),
          store: tool.schema.string().optional().describe("search only this store"),
          branch: tool.schema.string().optional().describe("git branch; project-wide memories always match"),
          limit: tool.schema.number().int().min(1).max(50).optional().describe("most hits to return"),
        },
        async execute(args, ctx) {
          return toolReply("recalling memories", async () =>
            JSON.stringify(await call("/v1/memory/recall", defined({ sessionID: ctx.sessionID, ...args }), TOOL_TIMEOUT_MS)));
        },
      }),

      memory_forget: tool({
        description: "Delete a memory that is wrong or obsolete, by label or slug.",
        args: {
          label: tool.schema.string().optional().describe("the memory's label"),
          slug: tool.schema.string().optional().describe("the memory's slug"),
          store: tool.schema.string().optional().describe("store name; default: this project's, then the global one"),
        },
        async execute(args, ctx) {
          if (!args.label && !args.slug) return "thatch: memory_forget needs a label or a slug.";
          return toolReply("forgetting the memory", async () =>
            JSON.stringify(await call("/v1/memory/forget", defined({ sessionID: ctx.sessionID, ...args }), TOOL_TIMEOUT_MS)));
        },
      }),

      memory_list: tool({
        description: "List saved memories of a store (default: this project's).",
        args: {
          store: tool.schema.string().optional().describe("store name"),
          branch: tool.schema.string().optional().describe("git branch"),
        },
        async execute(args, ctx) {
          return toolReply("listing memories", async () =>
            JSON.stringify(await call("/v1/memory/list", defined({ sessionID: ctx.sessionID, ...args }), TOOL_TIMEOUT_MS)));
        },
      }),
    },
  };
};
