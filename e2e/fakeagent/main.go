package main

import (
	"bufio"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

func main() {
	os.Exit(run(os.Args, os.Stdin, os.Stdout, os.Stderr))
}

// session is one running fake session: where it writes and what it
// remembers between lines (the parent ids that chain the records).
type session struct {
	agent string
	id    string
	cwd   string
	file  *os.File // nil for mimo
	last  string   // uuid of the last record, for parent links
	turn  int
	// prompt starts the input line drawn before each message is read, as
	// the real agent's TUI draws one ("" when stdout is no terminal).
	prompt string
	// clear starts what is written after a message was read: it erases
	// the line below the input line (codex's status line) that the
	// terminal's echo of Enter moved the cursor onto.
	clear string
}

// inputPrompt is what starts the real agent's input line: thatch waits for
// it before typing and checks after Enter that the line let go of the text.
func inputPrompt(agent string) string {
	switch agent {
	case "claude":
		return "❯\u00a0" // a no-break space, as claude draws it
	case "codex":
		// codex draws its status line (model · directory) below its
		// input line once it reads keys, and thatch waits for it: the
		// status line is drawn, and the cursor goes back up to the
		// input line (each line erased first: the lines below the
		// cursor may hold an earlier status line).
		return "\x1b[K› \n\x1b[K  fake-model default · ~\x1b[1A\r\x1b[2C"
	}
	return ""
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	agent, resume := parseArgs(args)
	home, err := os.UserHomeDir()
	if err != nil {
		fmt.Fprintln(stderr, "fakeagent:", err)
		return 2
	}
	cwd, err := os.Getwd()
	if err != nil {
		fmt.Fprintln(stderr, "fakeagent:", err)
		return 2
	}
	s := &session{agent: agent, cwd: cwd}
	if err := s.open(home, resume); err != nil {
		fmt.Fprintln(stderr, "fakeagent:", err)
		return 1
	}
	if s.file != nil {
		defer s.file.Close()
	}
	if f, ok := stdout.(*os.File); ok && isTerminal(f) {
		fmt.Fprint(stdout, "\x1b[?2004h")
		defer fmt.Fprint(stdout, "\x1b[?2004l")
	}
	fmt.Fprintf(stdout, "%s (fake) session: %s\n", agent, s.id)
	if f, ok := stdout.(*os.File); ok && isTerminal(f) {
		s.prompt = inputPrompt(agent)
		if agent == "codex" {
			s.clear = "\r\x1b[K"
		}
	}
	return s.loop(stdin, stdout, stderr)
}

// parseArgs returns the agent to be and the session id to resume ("" for
// a new session).
func parseArgs(args []string) (agent, resume string) {
	agent = filepath.Base(args[0])
	var rest []string
	for i := 1; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--as" && i+1 < len(args):
			agent = args[i+1]
			i++
		case strings.HasPrefix(a, "--as="):
			agent = strings.TrimPrefix(a, "--as=")
		default:
			rest = append(rest, a)
		}
	}
	for i, a := range rest {
		next := ""
		if i+1 < len(rest) {
			next = rest[i+1]
		}
		switch {
		case agent == "claude" && (a == "-r" || a == "--resume"):
			resume = next
		case agent == "copilot" && a == "--resume":
			resume = next
		case agent == "codex" && a == "resume" && i == 0:
			resume = next
		case (agent == "claude" || agent == "copilot") && strings.HasPrefix(a, "--resume="):
			resume = strings.TrimPrefix(a, "--resume=")
		}
	}
	return agent, resume
}

func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

func now() string { return time.Now().UTC().Format("2006-01-02T15:04:05.000Z") }

// claudeDir is Claude Code's project directory name for cwd.
func claudeDir(cwd string) string {
	return strings.Map(func(r rune) rune {
		if r < 128 && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return r
		}
		return '-'
	}, cwd)
}

// open finds or creates the transcript and writes its header.
func (s *session) open(home, resume string) error {
	s.id = resume
	if s.id == "" {
		s.id = newUUID()
	}
	var path string
	switch s.agent {
	case "claude":
		path = filepath.Join(home, ".claude", "projects", claudeDir(s.cwd), s.id+".jsonl")
		if resume != "" {
			if m, _ := filepath.Glob(filepath.Join(home, ".claude", "projects", "*", resume+".jsonl")); len(m) > 0 {
				path = m[0]
			}
		}
	case "codex":
		t := time.Now()
		path = filepath.Join(home, ".codex", "sessions", t.Format("2006"), t.Format("01"), t.Format("02"),
			"rollout-"+t.Format("2006-01-02T15-04-05")+"-"+s.id+".jsonl")
		if resume != "" {
			if m, _ := filepath.Glob(filepath.Join(home, ".codex", "sessions", "*", "*", "*", "rollout-*-"+resume+".jsonl")); len(m) > 0 {
				path = m[0]
			}
		}
	case "copilot":
		path = filepath.Join(home, ".copilot", "session-state", s.id, "events.jsonl")
	case "mimo":
		return nil
	default:
		return fmt.Errorf("unknown agent %q (want claude, codex, copilot or mimo)", s.agent)
	}
	if resume != "" {
		if _, err := os.Stat(path); err != nil {
			return fmt.Errorf("no conversation found with session ID: %s", resume)
		}
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	s.file = f
	return s.header(resume != "")
}

func (s *session) header(resumed bool) error {
	switch s.agent {
	case "claude":
		if resumed {
			return nil
		}
		u := newUUID()
		return s.write(map[string]any{"type": "file-history-snapshot", "messageId": u, "isSnapshotUpdate": false,
			"snapshot": map[string]any{"messageId": u, "trackedFileBackups": map[string]any{}, "timestamp": now()}})
	case "codex":
		if resumed {
			return nil
		}
		if err := s.codex("session_meta", map[string]any{"id": s.id, "timestamp": now(), "cwd": s.cwd,
			"originator": "codex_cli_rs", "cli_version": "0.0.0-fakeagent", "instructions": nil, "source": "cli"}); err != nil {
			return err
		}
		return s.codex("response_item", map[string]any{"type": "message", "role": "user", "content": []any{
			map[string]any{"type": "input_text", "text": "<environment_context>\n  <cwd>" + s.cwd + "</cwd>\n</environment_context>"}}})
	case "copilot":
		if resumed {
			return s.copilot("session.resume", map[string]any{"resumeTime": now(), "eventCount": 0})
		}
		return s.copilot("session.start", map[string]any{"sessionId": s.id, "version": 1, "producer": "copilot-agent",
			"copilotVersion": "0.0.0-fakeagent", "startTime": now(), "context": map[string]any{"cwd": s.cwd}})
	}
	return nil
}

func (s *session) write(v any) error {
	if s.file == nil {
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = s.file.Write(append(b, '\n'))
	return err
}

func (s *session) codex(typ string, payload any) error {
	return s.write(map[string]any{"timestamp": now(), "type": typ, "payload": payload})
}

func (s *session) copilot(typ string, data any) error {
	id := newUUID()
	var parent any
	if s.last != "" {
		parent = s.last
	}
	s.last = id
	return s.write(map[string]any{"type": typ, "data": data, "id": id, "timestamp": now(), "parentId": parent})
}

// claude writes one Claude Code record of type typ ("user" or
// "assistant") carrying message.
func (s *session) claude(typ string, message any, extra map[string]any) error {
	u := newUUID()
	var parent any
	if s.last != "" {
		parent = s.last
	}
	s.last = u
	rec := map[string]any{"parentUuid": parent, "isSidechain": false, "userType": "external", "cwd": s.cwd,
		"sessionId": s.id, "version": "0.0.0-fakeagent", "gitBranch": "", "type": typ, "message": message,
		"uuid": u, "timestamp": now()}
	for k, v := range extra {
		rec[k] = v
	}
	return s.write(rec)
}

func (s *session) loop(stdin io.Reader, stdout, stderr io.Writer) int {
	code := 0
	fmt.Fprint(stdout, s.prompt)
	asking := "" // the command an "ask" dialog waits on
	readMessages(stdin, func(msg string) bool {
		if msg == "exit" {
			return false
		}
		if cmd, ok := strings.CutPrefix(msg, "ask "); ok && asking == "" {
			// A permission dialog drawn as claude draws one, and no
			// input line: the next line typed is the answer.
			asking = cmd
			fmt.Fprint(stdout, s.clear+permissionDialog(cmd))
			return true
		}
		if strings.HasPrefix(msg, "sleep ") {
			// As the real TUIs do while they work: the message shows as
			// taken, with a fresh input line, before the answer comes.
			fmt.Fprint(stdout, s.clear+"✻ Working…\n"+s.prompt)
		}
		reply := replyFor(msg)
		if asking != "" {
			reply, msg = "echo: answered "+msg+" to "+asking, "answer "+msg
			asking = ""
		}
		if err := s.record(msg, reply); err != nil {
			fmt.Fprintln(stderr, "fakeagent:", err)
			code = 1
			return false
		}
		fmt.Fprintln(stdout, s.clear+reply)
		fmt.Fprint(stdout, s.prompt)
		return true
	})
	return code
}

// readMessages calls fn with each message read from r, one per line or
// one per bracketed paste, markers and surrounding blank space removed,
// until r ends or fn returns false.
func readMessages(r io.Reader, fn func(string) bool) {
	br := bufio.NewReader(r)
	var msg strings.Builder
	inPaste := false
	for {
		line, err := br.ReadString('\n')
		for _, marker := range []string{"\x1b[200~", "\x1b[201~"} {
			if strings.Contains(line, marker) {
				inPaste = marker == "\x1b[200~"
				line = strings.ReplaceAll(line, marker, "")
			}
		}
		msg.WriteString(strings.ReplaceAll(line, "\r", "\n"))
		if (!inPaste && strings.HasSuffix(line, "\n")) || err != nil {
			if m := strings.TrimSpace(msg.String()); m != "" && !fn(m) {
				return
			}
			msg.Reset()
		}
		if err != nil {
			return
		}
	}
}

func replyFor(msg string) string {
	switch {
	case msg == "md":
		return mdReply
	case msg == "slow":
		time.Sleep(time.Second)
		return "echo: slow"
	case strings.HasPrefix(msg, "sleep "):
		// Works for N seconds (at most a minute) before it answers.
		n, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(msg, "sleep ")))
		if err == nil && n >= 0 && n <= 60 {
			time.Sleep(time.Duration(n) * time.Second)
		}
		return "echo: " + msg
	case strings.HasPrefix(msg, "env "):
		// What the agent's environment holds: thatch sets variables on
		// the windows it makes for the agents started there.
		name := strings.TrimSpace(strings.TrimPrefix(msg, "env "))
		return "env " + name + "=" + os.Getenv(name)
	case strings.HasPrefix(msg, "long "):
		n, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(msg, "long ")))
		if err == nil && n >= 0 && n <= 10<<20 {
			return longReply(n)
		}
	}
	return "echo: " + msg
}

const mdReply = "Here is **bold** text, `inline code` and a [link](https://example.com/a?b=1&c=2).\n\n" +
	"```go\nfunc main() {\n\tif a < b && c > d {\n\t\tfmt.Println(\"<tag>\")\n\t}\n}\n```\n\n" +
	"A <tag> & an ampersand, *italic* and a list:\n\n- one\n- two & three"

// longReply returns exactly n bytes of text in lines of at most 60.
func longReply(n int) string {
	var b strings.Builder
	for i := 1; b.Len() < n; i++ {
		fmt.Fprintf(&b, "line %05d the quick brown fox jumps over the lazy dog\n", i)
	}
	s := b.String()[:n]
	if strings.HasSuffix(s, "\n") {
		s = s[:n-1] + "."
	}
	return s
}

// record appends the user's message and the reply in the agent's format.
func (s *session) record(msg, reply string) error {
	s.turn++
	var err error
	switch s.agent {
	case "claude":
		err = s.claudeTurn(msg, reply)
	case "codex":
		err = s.codexTurn(msg, reply)
	case "copilot":
		err = s.copilotTurn(msg, reply)
	}
	return err
}

func (s *session) claudeTurn(msg, reply string) error {
	if err := s.claude("user", map[string]any{"role": "user", "content": msg}, nil); err != nil {
		return err
	}
	// The stop reason is the real claude's: tool_use on a message that
	// calls a tool, end_turn on the one that ends the turn.
	asst := func(content []any, stop string) error {
		return s.claude("assistant", map[string]any{"id": fmt.Sprintf("msg_fake_%d", s.turn), "type": "message",
			"role": "assistant", "model": "fakeagent", "content": content, "stop_reason": stop,
			"usage": map[string]any{"input_tokens": 1, "output_tokens": 1}},
			map[string]any{"requestId": fmt.Sprintf("req_fake_%d", s.turn)})
	}
	if msg == "tool" || msg == "slowtool" {
		id := fmt.Sprintf("toolu_fake_%d", s.turn)
		if err := asst([]any{map[string]any{"type": "tool_use", "id": id, "name": "Bash",
			"input": map[string]any{"command": "ls"}}}, "tool_use"); err != nil {
			return err
		}
		if msg == "slowtool" {
			time.Sleep(slowTool)
		}
		if err := s.claude("user", map[string]any{"role": "user", "content": []any{map[string]any{
			"type": "tool_result", "tool_use_id": id, "content": "README.md"}}}, nil); err != nil {
			return err
		}
	}
	return asst([]any{map[string]any{"type": "text", "text": reply}}, "end_turn")
}

// slowTool is how long the tool call of "slowtool" runs.
const slowTool = 1500 * time.Millisecond

// rec is one record to write: a codex line type and payload, or a
// copilot event type and data.
type rec struct {
	typ  string
	body map[string]any
}

func (s *session) codexTurn(msg, reply string) error {
	recs := []rec{
		{"response_item", map[string]any{"type": "message", "role": "user", "content": []any{
			map[string]any{"type": "input_text", "text": msg}}}},
		{"event_msg", map[string]any{"type": "user_message", "message": msg, "images": []any{}}},
	}
	if msg == "tool" || msg == "slowtool" {
		id := fmt.Sprintf("call_fake_%d", s.turn)
		recs = append(recs,
			rec{"response_item", map[string]any{"type": "function_call", "name": "shell", "call_id": id,
				"arguments": `{"command":["ls"]}`}},
			rec{"response_item", map[string]any{"type": "function_call_output", "call_id": id,
				"output": `{"output":"README.md\n","metadata":{"exit_code":0}}`}})
	}
	recs = append(recs,
		rec{"event_msg", map[string]any{"type": "agent_message", "message": reply}},
		rec{"response_item", map[string]any{"type": "message", "role": "assistant", "content": []any{
			map[string]any{"type": "output_text", "text": reply}}}},
		rec{"event_msg", map[string]any{"type": "task_complete", "last_agent_message": reply}})
	for _, r := range recs {
		if err := s.codex(r.typ, r.body); err != nil {
			return err
		}
	}
	return nil
}

func (s *session) copilotTurn(msg, reply string) error {
	turn := strconv.Itoa(s.turn - 1)
	steps := []rec{
		{"user.message", map[string]any{"content": msg, "attachments": []any{}}},
		{"assistant.turn_start", map[string]any{"turnId": turn}},
	}
	if msg == "tool" {
		id := fmt.Sprintf("toolu_fake_%d", s.turn)
		args := map[string]any{"command": "ls"}
		steps = append(steps, []rec{
			{"assistant.message", map[string]any{"messageId": newUUID(), "content": "", "toolRequests": []any{
				map[string]any{"toolCallId": id, "name": "bash", "arguments": args, "type": "function"}}}},
			{"tool.execution_start", map[string]any{"toolCallId": id, "toolName": "bash", "arguments": args}},
			{"tool.execution_complete", map[string]any{"toolCallId": id, "success": true,
				"result": map[string]any{"content": "README.md"}}},
		}...)
	}
	steps = append(steps, []rec{
		{"assistant.message", map[string]any{"messageId": newUUID(), "content": reply, "toolRequests": []any{}}},
		{"assistant.turn_end", map[string]any{"turnId": turn}},
	}...)
	for _, st := range steps {
		if err := s.copilot(st.typ, st.body); err != nil {
			return err
		}
	}
	return nil
}

// permissionDialog is a permission dialog for cmd laid out as claude
// 2.1.328 draws one (im/agents/testdata/prompts/claude-bash.txt).
func permissionDialog(cmd string) string {
	return "\n" + strings.Repeat("─", 60) + "\n" +
		" Bash command\n\n" +
		"   " + cmd + "\n" +
		"   Run " + cmd + "\n\n" +
		" Do you want to proceed?\n" +
		" ❯ 1. Yes\n" +
		"   2. Yes, and don’t ask again for: " + cmd + " *\n" +
		"   3. No\n\n" +
		" Esc to cancel · Tab to amend\n"
}
