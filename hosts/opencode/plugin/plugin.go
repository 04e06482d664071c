package plugin

import (
	_ "embed"
	"encoding/json"
	"errors"
	"strings"
)

// FileName is the name the plugin is installed under, in an opencode
// config directory's plugin/ folder.
const FileName = "thatch.js"

// ErrTemplate is returned by Render when the embedded source lacks a
// placeholder, which would ship a plugin that cannot find the daemon.
var ErrTemplate = errors.New("plugin: embedded source is missing a placeholder")

//go:embed thatch.js
var source string

// Source returns the embedded plugin source with its placeholders.
func Source() string { return source }

// Paths are the daemon's control files, baked into the plugin at install
// time. The plugin reads the daemon's address from StateFile and its token
// from TokenFile on every call, so a restarted daemon (new port) is found
// without reinstalling. THATCH_CONTROL_STATE_FILE, THATCH_CONTROL_TOKEN_FILE
// and THATCH_DATA_DIR in opencode's environment override them.
type Paths struct {
	StateFile string
	TokenFile string
}

const (
	stateKey = "{{THATCH_STATE_FILE}}"
	tokenKey = "{{THATCH_TOKEN_FILE}}"
)

// Render returns the plugin with p's paths written in as JavaScript string
// literals.
func Render(p Paths) ([]byte, error) {
	if !strings.Contains(source, stateKey) || !strings.Contains(source, tokenKey) {
		return nil, ErrTemplate
	}
	lit := func(s string) string {
		b, _ := json.Marshal(s) // a JSON string is a valid JS string literal
		return string(b)
	}
	out := strings.NewReplacer(stateKey, lit(p.StateFile), tokenKey, lit(p.TokenFile)).Replace(source)
	return []byte(out), nil
}
