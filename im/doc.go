// Package im is the IM front end: it binds one IM conversation (a Telegram
// forum topic or a Feishu chat) to one agent session (claude, copilot,
// codex, mimo) running in a tmux window, routes messages to it with checks
// (window alive, name matches, agent type matches), and runs the setup and
// recovery flows. The adapters translate each IM's protocol into typed
// messages for the binding actors; bindings and update offsets are rows in
// persistence, so no update is processed twice across a restart.
//
// The package holds the shared vocabulary so far; the Telegram and Feishu
// adapters, the tmux manager and the agent registry arrive with their issue.
//
// # Imports
//
// The IM front end will implement supervisor/frontend.FrontEnd beside the
// opencode one; it must not import hosts/ (another front end's tree) or
// Pebble: bindings reach storage through their entities.
package im

// Agent names the agent CLIs a binding can run.
type Agent string

// The agents thatch knows how to start in a tmux window.
const (
	AgentClaude  Agent = "claude"
	AgentCopilot Agent = "copilot"
	AgentCodex   Agent = "codex"
	AgentMimo    Agent = "mimo"
)
