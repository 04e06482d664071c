// Package fakemodel is a scripted stand-in for an OpenAI-compatible
// chat-completions server, for the end-to-end suite: opencode's
// "@ai-sdk/openai-compatible" provider talks to it as it would to a real
// model, and tests decide what the "model" answers.
//
// It may import only the standard library and e2e/fakewire (the wire
// pieces the fake model servers share). It is test support: it holds no
// thatch logic and never reaches beyond 127.0.0.1.
//
// # Scripts
//
// A Rule matches requests (by the text of the last user message, the system
// prompt or any message) and answers with a list of Steps. The step used is
// the number of assistant messages after the last user message, so a
// multi-step tool-calling turn is scripted as one rule and the server keeps
// no per-session state: concurrent sessions do not disturb each other. Rules
// added later are tried first; a rule with Times > 0 is spent after that
// many answers and falls through to older rules.
//
//	m := fakemodel.New()
//	defer m.Close()
//	m.On(fakemodel.Rule{
//		Name:  "parent",
//		Match: fakemodel.LastUserContains("read the readme"),
//		Steps: []fakemodel.Step{
//			{ToolCalls: []fakemodel.ToolCall{{Name: "read", Args: map[string]any{"filePath": "/p/README.md"}}}},
//			{Text: "done"},
//		},
//	})
//
// A step can answer with an HTTP status instead (Status: 400) to make the
// provider fail, or hold its answer until a Gate channel is closed.
// Every request is recorded with the rule and step that answered it.
package fakemodel
