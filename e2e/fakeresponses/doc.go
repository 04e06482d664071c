// Package fakeresponses is a scripted stand-in for the OpenAI Responses
// API (POST /v1/responses with "stream": true), for the end-to-end suite:
// the real codex CLI (checked with 0.169.0) talks to it as it would to a
// model, and tests decide what the "model" answers.
//
// It may import only the standard library and e2e/fakewire (the wire
// pieces the fake model servers share). It is test support: it holds no
// thatch logic and never reaches beyond 127.0.0.1.
//
// # Running codex against it
//
//	s := fakeresponses.New()
//	defer s.Close()
//	err := fakeresponses.PrepareHome(home, s.URL(), projectDir)
//
// PrepareHome writes home/.codex/config.toml: model "fake-model" from a
// provider "fake" with base_url URL()+"/v1", wire_api "responses" and
// env_key FAKE_API_KEY, no retries, no update check, no analytics, and the
// given project directories trusted (codex asks whether to trust a git
// repository it has not seen; other directories it does not ask about).
// codex must then run with HOME=home and FAKE_API_KEY set to anything
// non-empty; without it every turn fails with "Missing environment
// variable: `FAKE_API_KEY`".
//
// codex 0.169.0 makes no request at start; each user turn is one request
// (more after tool calls), and the first turn of a session also sends a
// title request on a side thread (KindTitle), answered with TitleText.
// Other paths are answered 404 and listed by Unknown.
//
// # Answers
//
// With no rule, a turn is answered "echo: " + what the user typed
// (Request.User: the last user message that is not codex's injected
// context such as <environment_context>). The stream is response.created,
// then for the text response.output_item.added, content_part.added,
// output_text.delta (a few), output_text.done, content_part.done,
// output_item.done, then a function_call item per call, then
// response.completed with usage. Of these, codex needs only
// output_item.done (it holds the text) and response.completed (without it
// the turn fails: "stream closed before response.completed"); deltas need
// an output_item.added before them.
//
// # Scripts
//
// A Rule matches requests and answers with a list of Steps. The step used
// is 0 for a user's message and n when codex sends back the outputs of the
// calls made at step n-1 (the step is written into the call ids, so the
// server keeps no per-session state). Rules added later are tried first; a
// rule with Times > 0 is spent after that many answers. Rules answer only
// KindTurn requests unless AnyKind is set.
//
//	s.On(fakeresponses.Rule{
//		Name:  "ls",
//		Match: fakeresponses.UserContains("list files"),
//		Steps: []fakeresponses.Step{
//			{Text: "Listing.", Calls: []fakeresponses.Call{fakeresponses.Shell("ls")}},
//			{TextFrom: func(r *fakeresponses.Request) string {
//				return "files: " + fakeresponses.CommandOutput(r.Outputs()[0])
//			}},
//		},
//	})
//
// A step can hold its answer after response.created (Delay, Gate) so that
// codex shows "Working (… esc to interrupt)", or answer with an HTTP
// status instead. A Shell call runs under codex's sandbox and approval
// policy; an EscalatedShell call makes codex ask the user to approve it.
// An MCPTool call calls a tool of an MCP server in codex's configuration:
// codex 0.169 offers a server's tools in a namespace "mcp__<server>"
// (Request.Tools: "mcp__<server>.<tool>"), and a call names the namespace
// and the tool. codex asks for approval first when its policy says so (by
// default for a tool annotated destructive; mcp_servers.<server>.tools.
// <tool>.approval_mode = "approve" never asks); the tool's result comes
// back as the call's output.
//
// Every request is recorded (Requests) with the rule and step that
// answered it; UserTurns lists what the user typed, one entry per turn.
package fakeresponses
