// Package fakeanthropic is a scripted stand-in for the Anthropic Messages
// API, for the end-to-end suite: the real Claude Code CLI (the version in
// e2e/claude.version, installed by e2e/install-agents.sh) talks to it as it
// would to api.anthropic.com, and tests decide what the "model" answers.
//
// It may import only the standard library and e2e/fakewire (the wire
// pieces the fake model servers share). It is test support: it holds no
// thatch logic and never reaches beyond 127.0.0.1.
//
// # Running claude against it
//
//	s := fakeanthropic.New()
//	defer s.Close()
//	fakeanthropic.PrepareHome(home, fakeanthropic.APIKey, project)
//	cmd.Env = append(os.Environ(), "HOME="+home)
//	cmd.Env = append(cmd.Env, s.Env("")...)
//
// Env sets ANTHROPIC_BASE_URL, ANTHROPIC_API_KEY, DISABLE_TELEMETRY,
// CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC and DISABLE_AUTOUPDATER. All of
// them matter: without the last one claude 2.1.328 downloads an update
// (~180 MB, into HOME) from the npm registry while it runs; without
// NONESSENTIAL_TRAFFIC it sends HEAD /api/hello and a title request (see
// below). PrepareHome writes the ~/.claude.json without which the
// interactive TUI stops at the onboarding theme picker, the "Detected a
// custom API key" question or the "trust this folder" dialog. Setting
// TMPDIR to a per-test folder keeps claude's $TMPDIR/cc-socks/<pid>.sock
// and $TMPDIR/claude-<uid>/ (tool output) out of the shared /tmp.
//
// # What claude 2.1.328 sends
//
// Found by running it interactively in tmux against this server:
//
//   - Nothing at start-up (with the environment above). The first request
//     comes when the user submits a prompt.
//   - Each turn is POST /v1/messages?beta=true, stream true, the model
//     claude-opus-5-5 (the default), max_tokens 128000, about a dozen tools
//     (Bash, Read, Edit, Write, Agent, ...), the session id in
//     metadata.user_id (a JSON string) and in the X-Claude-Code-Session-Id
//     header. The user message is a list of text blocks: <system-reminder>
//     blocks first, the typed text last. The list of messages also holds
//     messages with role "system" (the environment description), which
//     Request.UserText skips. A paste that the input box shows as
//     "[Pasted text #N ...]" arrives wrapped in <pasted_content id="...">
//     lines, which UserText drops.
//   - After a tool_use, the next request ends with a user message holding
//     the tool_result; Request.Step counts the assistant messages since the
//     typed text, so a rule answers step 0 with the tool call and step 1
//     with Then, with no state kept in the server.
//   - /compact sends a request shaped like a turn (tools included) whose
//     last user message asks to "create a detailed summary of the
//     conversation"; it is recorded as Kind Compact and answered with
//     SummaryText.
//   - Only without CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: HEAD
//     /api/hello at start (answered 200) and, with the first prompt, a
//     title request: no tools, output_config.format json_schema
//     {title: string}, recorded as Kind Title and answered
//     {"title":"Fake title"}. No max_tokens=1 quota probe, no "new topic"
//     Haiku request and no count_tokens call were seen; both are handled
//     anyway (Side, CountTokens).
//
// UserTurns (and UserTexts) keep only Kind Turn at Step 0: one request per
// prompt the user submitted, in order, whatever else claude sent.
//
// # Scripts
//
// Without rules a turn is answered "echo: " + UserText. On adds a rule:
// a matcher and a Reply; rules added later are tried first.
//
//	s.On(fakeanthropic.UserSays("list files"), fakeanthropic.Bash("ls", "listed"))
//	s.On(fakeanthropic.UserSays("slow"), fakeanthropic.Reply{Text: "done", Delay: 10 * time.Second})
//	s.On(fakeanthropic.UserSays("fail"), fakeanthropic.Reply{Status: 529})
//
// A Reply with Tool streams a tool_use (input_json_delta) with stop_reason
// tool_use; the request that brings its tool_result is answered with Then
// (by default "result: <the tool's output>"). Delay and Gate hold an answer
// after message_start, while claude shows its spinner. Every request is
// recorded (Requests) with its kind, user text, step, tool results and the
// rule that answered; a path the server does not serve is answered with an
// Anthropic-style 404 error and listed by Unknown.
package fakeanthropic
