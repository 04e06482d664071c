// Command fakeagent stands in for the agent CLIs thatch drives in tmux
// (claude, codex, copilot, mimo), for tests: it writes session transcripts
// in each agent's real on-disk format and answers every message with a
// scripted reply, so the agent registry, the reply relay and the IM flows
// can be tested without a model.
//
// It may import only the standard library: it must not share code with
// im/agents, so that a reader there that misreads a format is caught by a
// writer here that does not.
//
// # Which agent
//
// The agent is filepath.Base(os.Args[0]) (tests copy or link the binary as
// claude, codex, copilot or mimo into a PATH directory), or the value of
// --as NAME. $HOME holds the session directories and the current directory
// is the session's cwd:
//
//	claude   ~/.claude/projects/<cwd, non-alphanumerics as '-'>/<uuid>.jsonl   resume: claude -r ID (or --resume ID)
//	codex    ~/.codex/sessions/YYYY/MM/DD/rollout-<time>-<uuid>.jsonl           resume: codex resume ID
//	copilot  ~/.copilot/session-state/<uuid>/events.jsonl                       resume: copilot --resume ID
//	mimo     no transcript; replies go to the terminal only
//
// On start it creates a session (or, resuming, appends to the existing
// transcript, exiting 1 with "no conversation found" when there is none),
// writes the format's header lines, keeps the transcript open for its
// whole life (so lsof and /proc/<pid>/fd show it), and prints
// "<agent> (fake) session: <uuid>". On a terminal it turns bracketed paste
// on (ESC[?2004h), as the real CLIs do, so tmux paste-buffer -p brackets.
//
// # Messages
//
// It reads stdin line by line; a bracketed paste (ESC[200~ ... ESC[201~,
// markers stripped) is one message however many lines it spans. For each
// message it appends the user's line and then the assistant's reply, in
// the agent's format, and prints the reply. Replies:
//
//	long N   N bytes of text (newlines included) over lines of 60 or fewer
//	md       Markdown: bold, inline code, a fenced code block, a link, <tag> and &
//	tool     an assistant tool call and its result, then "echo: tool"
//	slowtool as tool, the result 1.5s after the call (claude only), then
//	         "echo: slowtool"
//	slow     waits 1s, then "echo: slow"
//	sleep N  draws "✻ Working…" and a fresh input line, waits N seconds
//	         (at most 60), then "echo: sleep N"
//	ask CMD  draws a permission dialog for CMD as claude does (numbered
//	         options, the first marked ❯) and no input line; the next line
//	         read is the answer: "echo: answered <line> to CMD"
//	exit     exits 0 (so does end of input)
//	other    "echo: <message>"
package main
