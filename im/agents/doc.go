// Package agents is the IM front end's registry of agent CLIs (claude,
// codex, copilot, mimo): how to launch and resume each, how to tell which
// one runs in a tmux pane, where each keeps its sessions, how to read the
// assistant's replies out of its transcript, and how to find the session
// of an agent that is already running without disturbing it.
//
// # Imports
//
// agents may import the standard library, hclog and config (for the
// defaults of the agents' input lines, which the config documents). It
// must not import Pebble, protoactor, hosts/... or any other thatch
// package: it reads files under the user's home directory and /proc, and
// runs lsof, nothing else.
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
// "copilot --resume {session_id}"; mimo's is "" because its resume flag is
// not confirmed). NewRegistry reports every bad regexp and unknown agent
// name at once, each naming its agent. A session id is refused unless it is
// [A-Za-z0-9_-]{1,128}: it is typed into a shell.
//
// # Detection
//
// tmux 3.3 reports pane_current_command from argv[0] of the pane's
// foreground process, and node-based agents show up as "node". Detect
// therefore looks at every process of the pane's tree (ProcTree, from
// /proc), matching each agent's regexp against the process name
// (/proc/<pid>/comm) and its command line; the process nearest the pane
// wins. The default regexp accepts the agent's name as the command, or as
// the script of node/nodejs/bun/deno ("node /usr/lib/node_modules/x/claude"),
// but not as an argument of another command ("grep claude").
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
// data.content a string ("" when the turn only calls tools, data.toolRequests).
// The first prompt is the first "user.message" data.content. Confirmed from
// descriptions of copilot 0.0.3xx-0.0.4xx event logs; the older layout
// (session-state/<uuid>.jsonl without a directory) is not read.
//
// mimo (MiMo Code, built on opencode): sessions live in SQLite
// (~/.local/share/mimocode/mimocode.db), which this package does not read.
// Sessions returns ErrNoTranscripts, Transcript finds nothing, Replies is
// always nil, and the reply relay falls back to pane capture.
package agents
