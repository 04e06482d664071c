// Package memmcp serves thatch's memory over MCP (the Model Context
// Protocol) for any agent that speaks it (claude, codex, copilot): the
// memory tools the opencode plugin gives opencode, with the same inputs,
// each call sent to the running daemon's control API, which picks the
// stores from the agent's directory and guards every write against
// secrets as it does for the plugin.
package memmcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ServerName is the name the server gives itself. The name an agent
// calls its tools by is the one its configuration gives the server (thatch
// gives "thatch": claude's mcp__thatch__memory_recall, codex's namespace
// mcp__thatch).
const ServerName = "thatch"

// DefaultTimeout bounds each call to the daemon.
const DefaultTimeout = 30 * time.Second

// Daemon is the control API's client (control.Client).
type Daemon interface {
	Do(ctx context.Context, method, path string, in, out any) error
}

// Options configure a server.
type Options struct {
	// Daemon is the running daemon's control API. Required.
	Daemon Daemon
	// Directory is the agent's working directory (absolute): its git
	// remote names the project store, as an opencode session's does.
	Directory string
	// Timeout bounds each call to the daemon. Default DefaultTimeout.
	Timeout time.Duration
	// Version is thatch's version, told to the client.
	Version string
	// Extraction, when set, is the extraction child this server is for
	// ("<agent>:<session>#<n>"): it also serves extraction_payload and
	// extraction_done, which claim and consume what the session
	// buffered, as the opencode plugin's tools do for opencode.
	Extraction string
}

// ErrOptions is returned by New for options it cannot serve with.
var ErrOptions = errors.New("memmcp: bad options")

// New returns the server, its instructions (the session-start reminder
// and the hygiene lines of the directory's stores) asked of the daemon
// now. A daemon that does not answer is an error: an agent is better
// told at its start that the memory is not there than given tools that
// fail.
func New(ctx context.Context, o Options) (*mcp.Server, error) {
	if o.Daemon == nil {
		return nil, fmt.Errorf("%w: no daemon", ErrOptions)
	}
	if !filepath.IsAbs(o.Directory) {
		return nil, fmt.Errorf("%w: directory %q is not absolute", ErrOptions, o.Directory)
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	t := &tools{o: o}
	var rem struct {
		Text string `json:"text"`
	}
	if err := t.call(ctx, "/v1/memory/reminder", map[string]string{"directory": o.Directory}, &rem); err != nil {
		return nil, fmt.Errorf("memmcp: the daemon's reminder: %w", err)
	}
	s := mcp.NewServer(&mcp.Implementation{Name: ServerName, Title: "thatch memory", Version: o.Version},
		&mcp.ServerOptions{Instructions: rem.Text})
	t.add(s)
	if o.Extraction != "" {
		t.addExtraction(s)
	}
	return s, nil
}

// addExtraction adds the extraction child's two tools.
func (t *tools) addExtraction(s *mcp.Server) {
	child := map[string]any{"child": t.o.Extraction}
	// Not destructive: a client that asks before a tool it must take for
	// destructive (codex exec, whose policy is never to ask) runs them.
	safe := &mcp.ToolAnnotations{DestructiveHint: new(false), OpenWorldHint: new(false)}
	mcp.AddTool(s, &mcp.Tool{Name: "extraction_payload", Annotations: safe,
		Description: "Fetch the tool interactions thatch buffered from the session for fact extraction: JSON {interactions, agent, directory, projectStore, globalStore}. Call it once; what you receive is yours to process."},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			var out json.RawMessage
			if err := t.call(ctx, "/v1/agent/payload", child, &out); err != nil {
				return nil, nil, fmt.Errorf("thatch: %w", err)
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(out)}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "extraction_done", Annotations: safe,
		Description: "Tell thatch that you finished processing the payload you fetched. Always call it at the end of an extraction, even if you saved nothing."},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			var out struct {
				Completed int `json:"completed"`
			}
			done := map[string]any{"child": t.o.Extraction, "wrote": t.wrote.Load()}
			if err := t.call(ctx, "/v1/agent/done", done, &out); err != nil {
				return nil, nil, fmt.Errorf("thatch: %w", err)
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("Acknowledged: %d interaction(s) completed.", out.Completed)}}}, nil, nil
		})
}

// RememberIn is memory_remember's input.
type RememberIn struct {
	Label      string `json:"label" jsonschema:"short, specific label, unique within the store"`
	Content    string `json:"content" jsonschema:"the fact, self-contained"`
	Store      string `json:"store,omitempty" jsonschema:"store name; default: this project's store"`
	Branch     string `json:"branch,omitempty" jsonschema:"git branch, only for branch-specific facts; default: project-wide"`
	Confidence int    `json:"confidence,omitempty" jsonschema:"1 (guess) to 10 (verified)"`
	Overwrite  bool   `json:"overwrite,omitempty" jsonschema:"update the memory with this label"`
	Archived   bool   `json:"archived,omitempty" jsonschema:"keep it, but out of recall"`
}

// RecallIn is memory_recall's input.
type RecallIn struct {
	Query  string `json:"query" jsonschema:"what to look for"`
	Store  string `json:"store,omitempty" jsonschema:"search only this store"`
	Branch string `json:"branch,omitempty" jsonschema:"git branch; project-wide memories always match"`
	Limit  int    `json:"limit,omitempty" jsonschema:"most hits to return (1 to 50)"`
}

// ForgetIn is memory_forget's input.
type ForgetIn struct {
	Label string `json:"label,omitempty" jsonschema:"the memory's label"`
	Slug  string `json:"slug,omitempty" jsonschema:"the memory's slug"`
	Store string `json:"store,omitempty" jsonschema:"store name; default: this project's, then the global one"`
}

// ListIn is memory_list's input.
type ListIn struct {
	Store  string `json:"store,omitempty" jsonschema:"store name"`
	Branch string `json:"branch,omitempty" jsonschema:"git branch"`
}

// rememberPath is memory_remember's route.
const rememberPath = "/v1/memory/remember"

type tools struct {
	o Options
	// wrote counts the memories this server saved (an extraction
	// child's completion says how many).
	wrote atomic.Int64
}

// call sends one request to the daemon, bounded by the timeout.
func (t *tools) call(ctx context.Context, path string, in, out any) error {
	ctx, cancel := context.WithTimeout(ctx, t.o.Timeout)
	defer cancel()
	return t.o.Daemon.Do(ctx, "POST", path, in, out)
}

// body is a tool's input as the daemon's route reads it: the input's
// fields and the caller's directory.
func (t *tools) body(in any) (map[string]any, error) {
	b, err := json.Marshal(in)
	if err != nil {
		return nil, err
	}
	m := map[string]any{}
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	m["directory"] = t.o.Directory
	return m, nil
}

// relay is a tool that sends its input to a route and gives the model
// the daemon's answer as JSON text; a refusal (a secret in a memory, a
// label that exists) is a tool error whose text says why, so that the
// model can try again.
func relay[In any](t *tools, path string, check func(In) error) mcp.ToolHandlerFor[In, any] {
	return func(ctx context.Context, _ *mcp.CallToolRequest, in In) (*mcp.CallToolResult, any, error) {
		if check != nil {
			if err := check(in); err != nil {
				return nil, nil, err
			}
		}
		body, err := t.body(in)
		if err != nil {
			return nil, nil, err
		}
		var out json.RawMessage
		if err := t.call(ctx, path, body, &out); err != nil {
			return nil, nil, fmt.Errorf("thatch: %w", err)
		}
		if path == rememberPath {
			t.wrote.Add(1)
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(out)}}}, nil, nil
	}
}

func (t *tools) add(s *mcp.Server) {
	write := &mcp.ToolAnnotations{DestructiveHint: new(false), OpenWorldHint: new(false)}
	read := &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: new(false)}
	mcp.AddTool(s, &mcp.Tool{Name: "memory_remember", Annotations: write,
		Description: "Save one durable fact (still true and useful weeks from now) as a memory. A label that exists is an error unless overwrite is true. A memory holding a secret is refused."},
		relay(t, rememberPath, func(in RememberIn) error {
			if in.Confidence != 0 && (in.Confidence < 1 || in.Confidence > 10) {
				return errors.New("confidence is 1 to 10")
			}
			return nil
		}))
	mcp.AddTool(s, &mcp.Tool{Name: "memory_recall", Annotations: read,
		Description: "Search saved memories (this project's store and the global one) for facts about a topic."},
		relay(t, "/v1/memory/recall", func(in RecallIn) error {
			if in.Limit < 0 || in.Limit > 50 {
				return errors.New("limit is 1 to 50")
			}
			return nil
		}))
	mcp.AddTool(s, &mcp.Tool{Name: "memory_list", Annotations: read,
		Description: "List saved memories of a store (default: this project's and the global one)."},
		relay[ListIn](t, "/v1/memory/list", nil))
	if t.o.Extraction != "" {
		return // an extraction child reads untrusted text: it forgets nothing
	}
	mcp.AddTool(s, &mcp.Tool{Name: "memory_forget", Annotations: &mcp.ToolAnnotations{DestructiveHint: new(true), OpenWorldHint: new(false)},
		Description: "Delete a memory that is wrong or obsolete, by label or slug."},
		relay(t, "/v1/memory/forget", func(in ForgetIn) error {
			if in.Label == "" && in.Slug == "" {
				return errors.New("memory_forget needs a label or a slug")
			}
			return nil
		}))
}
