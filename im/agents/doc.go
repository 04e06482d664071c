// Package agents is the IM front end's registry of agent CLIs (claude,
// codex, copilot, mimo): how to launch and resume each, how to tell which
// one runs in a tmux pane, where each keeps its sessions, how to read the
// assistant's replies out of its transcript, and how to find the session
// of an agent that is already running without disturbing it.
//
// # Imports
//
// agents may import the standard library, hclog, config (for the
// defaults of the agents' input lines, which the config documents) and
// modernc.org/sqlite (pure Go, to read mimo's database). It must not
// import Pebble, protoactor, hosts/... or any other thatch package: it
// reads files under the user's home directory and /proc, opens mimo's
// database read only, and runs lsof and (without /proc) ps, nothing else.
//
//	reg, err := agents.NewRegistry(home, map[string]agents.Spec{
//		"codex": {Resume: "codex resume --yolo {session_id}"},
//	})
//	a, _ := reg.Get("claude")
//	cmd, err := a.ResumeCommand(id) // "claude -r <id>"
//
// # Configuration
//
// The four agents always exist. A Spec overrides Launch, Resume and Detect
// of one agent; empty fields keep the defaults (DefaultDetect, and the
// resume commands "claude -r {session_id}", "codex resume {session_id}",
// "copilot --resume {session_id}", "mimo --resume {session_id}"; MiMo
// Code's flag is opencode's, which it is built on, and was not tried on
// MiMo Code itself). NewRegistry reports every bad regexp and unknown agent
// name at once, each naming its agent. A session id is refused unless it is
// [A-Za-z0-9_-]{1,128}: it is typed into a shell.
//
// # Detection
//
// tmux 3.3 reports pane_current_command from argv[0] of the pane's
// foreground process, and node-based agents show up as "node". Detect
// therefore looks at every process of the pane's tree (ProcTree, from
// /proc; where there is none, as on macOS, from one run of `ps -axo
// pid=,ppid=,comm=,args=`, read by ParsePS), matching each agent's regexp against the process name
// (/proc/<pid>/comm) and its command line; the process nearest the pane
// wins. The default regexp accepts the agent's name as the command, or as
// the script of node/nodejs/bun/deno ("node /usr/lib/node_modules/x/claude"),
// but not as an argument of another command ("grep claude"). ps gives no
// process state or session, so without /proc a stopped agent or a daemon
// that left the pane's session still counts. Linux is tested; the ps path
// is tested on captured Linux output and a hand-written macOS-shaped
// sample only.
//
// # Finding a running agent's session
//
// FindSession tries, in order: the transcript the pane's processes hold
// open (lsof -F, or /proc/<pid>/fd links when lsof is missing or fails;
// How is "lsof" either way); a UUID in the captured pane text whose
// transcript exists, newest on screen first ("pane"); the hook map entry
// for the window ("hook"). The hook map is a small JSON file written by
// `thatch hook claude`, which Claude Code runs as its SessionStart hook
// (ClaudeHookSettings is the snippet for ~/.claude/settings.json;
// ParseClaudeHook reads the hook's stdin; the window key is $TMUX_PANE).
// WriteHook replaces the file atomically (temp file, fsync, rename) under
// an flock, so hooks of several panes do not lose each other's entries.
//
// mimo is found only in its database: the one top-level session for the
// window's directory updated since the launch ("db"). Nothing on its
// screen is taken: a UUID there is not its session id (mimo's ids look
// like "ses_dca95f62bffeRDOQsucktegWH0"), and resuming one failed.
//
// # On-disk formats, and what each reader relies on
//
// Every transcript is JSON Lines, appended to as the session runs. Readers
// decode with encoding/json into the few fields below and ignore the rest;
// a line that does not decode, or is over MaxLine (1 MiB), yields nothing.
//
// claude (Claude Code): ~/.claude/projects/<dir>/<uuid>.jsonl, where <dir>
// is the session's cwd with every character but ASCII letters and digits
// turned into '-' (so "/home/a/p" is "-home-a-p"; the issue says only '/'
// is replaced, and both spellings are looked up). Lines have "type"; an
// assistant reply is type "assistant" with message.content an array of
// blocks, of which the "text" blocks ({"type":"text","text":...}) are the
// reply ("thinking" and "tool_use" blocks are not). A line with
// "isSidechain": true belongs to a subagent and is skipped. The first
// prompt is the first type "user" line (not isMeta) whose message.content
// is a string, or holds a text block, that does not start with '<' (tool
// results are blocks of type "tool_result"; slash commands are wrapped in
// <command-name> tags). Confirmed from several independent descriptions
// of real transcripts (Claude Code 2.x); other line types (summary,
// file-history-snapshot, queue-operation, system) are ignored.
//
// codex (OpenAI Codex CLI): ~/.codex/sessions/YYYY/MM/DD/
// rollout-<YYYY-MM-DDThh-mm-ss>-<uuid>.jsonl. Each line is {timestamp,
// type, payload}. The first is type "session_meta" with payload.id and
// payload.cwd; Sessions matches cwd there, reading only the newest
// CodexScanDays day directories and at most CodexScanFiles files. A reply
// is type "response_item" with payload {type:"message", role:"assistant",
// content:[{type:"output_text", text}]}. Codex also writes each reply a
// second time as type "event_msg" with payload {type:"agent_message",
// message}; Replies ignores that copy, so a relay sends each reply once.
// The first prompt is an event_msg "user_message" (payload.message) or a
// user response_item's "input_text", skipping injected context such as
// <environment_context>. Confirmed from descriptions of codex 0.4x-0.6x
// rollouts; codex honours $CODEX_HOME, which this package does not.
//
// copilot (GitHub Copilot CLI): ~/.copilot/session-state/<uuid>/events.jsonl.
// Each line is {type, data, id, timestamp, parentId}. The first event is
// "session.start" with data.sessionId and, in recent versions,
// data.context.cwd; without it Sessions reads "cwd:" from workspace.yaml
// beside it, and a session whose directory is recorded nowhere is listed
// for every directory. A reply is type "assistant.message" with
// data.content a string ("" when the turn only calls tools, data.toolRequests;
// the model's reasoning is data.reasoningText, not read). An event with a
// top-level "agentId" (or, in older logs, data.parentToolCallId) is a
// sub-agent's and is skipped. The first prompt is the first "user.message"
// data.content (as typed; data.transformedContent is what the model was
// sent) that is not an autopilot continuation. Checked against the event
// schema generated in github/copilot-sdk (nodejs/src/generated/
// session-events.ts, August 2026) and a published real 1.0.78 log;
// testdata/copilot is a hand-written session in that shape. Not confirmed:
// "agentId" on a real sub-agent's events (no real log with one was seen),
// the values of data.phase and data.source (a reply split by
// chunkIndex/chunkCount is relayed chunk by chunk), and $COPILOT_HOME,
// which moves ~/.copilot and which this package does not honour. The
// older layout (session-state/<uuid>.jsonl without a directory, before
// 0.0.342) is not read.
//
// mimo (MiMo Code, built on opencode): sessions live in SQLite
// (~/.local/share/mimocode/mimocode.db, opened read only; $XDG_DATA_HOME
// is not honoured), in opencode's schema: table session (id "ses_...",
// parent_id for a sub-agent's, directory, title, time_created,
// time_updated, time_archived, all times Unix milliseconds), message (id,
// session_id, time_created, data: JSON with role and time.completed once
// an assistant message is finished) and part (id, message_id,
// session_id, data: JSON with type, "text" for text, synthetic for text
// opencode made). Sessions lists the top-level, unarchived sessions of the
// directory by time_updated, each with its first typed prompt (its title
// when it has none), and Path "". SessionReplies reads the finished
// assistant messages' text after a time_created cursor, RepliesCursor
// says where a binding that starts following a session starts, and
// SessionHistory reads its exchanges for /history. The schema was
// read off opencode 1.18.33 (testdata/mimo/mimocode.db is written by it,
// see testdata/mimo/capture); that MiMo Code keeps the same tables and
// the file name above was not checked on MiMo Code itself. Transcript
// finds nothing and Replies is always nil: the front end's follower reads
// a mimo session with SessionReplies once the session is in the database,
// and captures the pane before it is (or when there is no database).
package agents
