package config

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/knadh/koanf/parsers/toml/v2"
	"github.com/knadh/koanf/v2"
	"github.com/spf13/pflag"
)

// specDefaults is every key with its default as the design states it, in
// the form Redacted shows. It pins the key names and defaults independently
// of the struct tags they are derived from.
var specDefaults = map[string]any{
	"data.dir":                          "",
	"log.level":                         "info",
	"log.format":                        "text",
	"control.listen":                    "127.0.0.1:0",
	"control.token_file":                "",
	"control.state_file":                "",
	"journal.snapshot_every":            100,
	"journal.cache_size_mb":             32,
	"actors.passivate_after":            "5m",
	"supervisor.max_restarts":           5,
	"supervisor.restart_window":         "1m",
	"supervisor.backoff_base":           "50ms",
	"supervisor.backoff_max":            "30s",
	"opencode.buffer_limit":             20,
	"opencode.stale_after":              "15m",
	"opencode.finish_grace":             "10s",
	"opencode.exit_retry_window":        "2m",
	"opencode.request_timeout":          "10s",
	"opencode.servers":                  []any{},
	"memory.embedder":                   "local",
	"memory.embeddings_url":             "",
	"memory.embeddings_model":           "",
	"memory.embeddings_api_key":         "",
	"memory.dedup_threshold":            0.85,
	"memory.stale_after":                "2160h",
	"memory.daily_budget_tokens":        0,
	"memory.idle_after":                 "2m",
	"memory.extractor":                  "",
	"memory.redact.enabled":             true,
	"memory.redact.disable":             []string{},
	"memory.redact.patterns":            []string{},
	"sweep.interval":                    "1m",
	"sweep.runtime_state_ttl":           "168h",
	"sweep.deleted_session_ttl":         "24h",
	"sweep.strand":                      true,
	"sweep.strand_interval":             "5m",
	"sweep.opencode_db":                 "",
	"im.allowed_users":                  []string{},
	"im.open":                           false,
	"im.roots":                          []string{"~"},
	"im.rename_timeout":                 "1m",
	"im.telegram.token":                 "",
	"im.telegram.api_url":               "https://api.telegram.org",
	"im.telegram.send_timeout":          "10s",
	"im.telegram.chat_interval":         "1s",
	"im.telegram.group_per_minute":      20,
	"im.on_close":                       "keep",
	"im.feishu.app_id":                  "",
	"im.feishu.app_secret":              "",
	"im.feishu.verification_token":      "",
	"im.feishu.encrypt_key":             "",
	"im.feishu.base_url":                "https://open.feishu.cn",
	"im.feishu.mode":                    "ws",
	"im.feishu.listen":                  "127.0.0.1:0",
	"im.feishu.path":                    "/feishu/events",
	"im.feishu.allowed_users":           []string{},
	"im.tmux.socket":                    "thatch",
	"im.tmux.session":                   "thatch",
	"im.tmux.adopt_sockets":             []string{},
	"im.agents.claude.launch":           "claude",
	"im.agents.claude.resume":           "claude -r {session_id}",
	"im.agents.claude.detect":           `(^|/)claude(\s|$)`,
	"im.agents.claude.input":            DefaultClaudeInput,
	"im.agents.codex.launch":            "codex",
	"im.agents.codex.resume":            "codex resume {session_id}",
	"im.agents.codex.detect":            `(^|/)codex(\s|$)`,
	"im.agents.codex.input":             DefaultCodexInput,
	"im.agents.copilot.launch":          "copilot",
	"im.agents.copilot.resume":          "copilot --resume {session_id}",
	"im.agents.copilot.detect":          `(^|/)copilot(\s|$)`,
	"im.agents.copilot.input":           "off",
	"im.agents.mimo.launch":             "mimo",
	"im.agents.mimo.resume":             "mimo --resume {session_id}",
	"im.agents.mimo.detect":             `(^|/)mimo(code)?(\s|$)`,
	"im.agents.mimo.input":              "off",
	"im.agents.claude.prompt_option":    DefaultClaudePromptOption,
	"im.agents.claude.prompt_question":  DefaultClaudePromptQuestion,
	"im.agents.claude.prompt_top":       DefaultClaudePromptTop,
	"im.agents.claude.prompt_ignore":    DefaultClaudePromptIgnore,
	"im.agents.claude.prompt_keys":      DefaultClaudePromptKeys,
	"im.agents.codex.prompt_option":     DefaultCodexPromptOption,
	"im.agents.codex.prompt_question":   DefaultCodexPromptQuestion,
	"im.agents.codex.prompt_top":        "",
	"im.agents.codex.prompt_ignore":     "",
	"im.agents.codex.prompt_keys":       DefaultCodexPromptKeys,
	"im.agents.copilot.prompt_option":   "off",
	"im.agents.copilot.prompt_question": "",
	"im.agents.copilot.prompt_top":      "",
	"im.agents.copilot.prompt_ignore":   "",
	"im.agents.copilot.prompt_keys":     "",
	"im.agents.mimo.prompt_option":      "off",
	"im.agents.mimo.prompt_question":    "",
	"im.agents.mimo.prompt_top":         "",
	"im.agents.mimo.prompt_ignore":      "",
	"im.agents.mimo.prompt_keys":        "",
	"im.agents.claude.mode":             "cycle",
	"im.agents.codex.mode":              "/approvals",
	"im.agents.copilot.mode":            "off",
	"im.agents.mimo.mode":               "off",
	"im.agents.claude.keys_esc":         "Escape",
	"im.agents.claude.keys_interrupt":   "C-c",
	"im.agents.claude.keys_enter":       "Enter",
	"im.agents.codex.keys_esc":          "Escape",
	"im.agents.codex.keys_interrupt":    "C-c",
	"im.agents.codex.keys_enter":        "Enter",
	"im.agents.copilot.keys_esc":        "Escape",
	"im.agents.copilot.keys_interrupt":  "C-c",
	"im.agents.copilot.keys_enter":      "Enter",
	"im.agents.mimo.keys_esc":           "Escape",
	"im.agents.mimo.keys_interrupt":     "C-c",
	"im.agents.mimo.keys_enter":         "Enter",
	"im.show_tools":                     false,
	"im.live":                           "turn",
	"im.live_every":                     "3s",
	"im.alert_after":                    "1m",
	"im.board":                          false,
	"im.board_interval":                 "10s",
	"im.prices":                         []string{},
	"im.inbox_dir":                      ".thatch/inbox",
	"im.transcribe":                     "",
	"im.max_file_mb":                    0,
	"cluster.node":                      "",
	"cluster.listen":                    "127.0.0.1:6250",
	"cluster.routes":                    []string{},
	"cluster.replicas":                  0,
	"cluster.lease_ttl":                 "15s",
	"cluster.tls_cert":                  "",
	"cluster.tls_key":                   "",
	"cluster.tls_ca":                    "",
	"cluster.token":                     "",
}

func TestDefaultsMatchSpec(t *testing.T) {
	got := flatten(Defaults().Redacted())
	if !reflect.DeepEqual(got, specDefaults) {
		for k, want := range specDefaults {
			if !reflect.DeepEqual(got[k], want) {
				t.Errorf("%s = %#v, want %#v", k, got[k], want)
			}
		}
		for k := range got {
			if _, ok := specDefaults[k]; !ok {
				t.Errorf("unexpected key %s", k)
			}
		}
	}
}

func TestSchemaHasNoNameClashes(t *testing.T) {
	if _, err := buildSchema(); err != nil {
		t.Fatal(err)
	}
}

func TestDefaultsValidAfterResolution(t *testing.T) {
	c := Defaults()
	if err := c.Validate(); err == nil {
		t.Fatal("unresolved Defaults validated; data.dir must be reported as empty")
	}
	c.ResolvePaths([]string{"XDG_DATA_HOME=/xdg/data"}, "/home/u")
	if err := c.Validate(); err != nil {
		t.Fatalf("resolved defaults: %v", err)
	}
}

func TestExampleLoadsToDefaults(t *testing.T) {
	o := isolated(t)
	o.File = writeFile(t, t.TempDir(), "thatch.toml", string(ExampleTOML))
	o.Env = []string{"XDG_DATA_HOME=/xdg/data"}
	got, err := Load(o)
	if err != nil {
		t.Fatalf("example does not load cleanly: %v", err)
	}
	want := Defaults()
	want.ResolvePaths(o.Env, o.HomeDir)
	if !reflect.DeepEqual(stripLoadState(got), want) {
		t.Errorf("example loads to\n%v\nwant defaults\n%v", got.Redacted(), want.Redacted())
	}
}

// parseExample reads the live (uncommented) part of the example.
func parseExample(t *testing.T) *koanf.Koanf {
	t.Helper()
	k := koanf.New(".")
	if err := k.Load(rawBytes(ExampleTOML), toml.Parser()); err != nil {
		t.Fatalf("example is not valid TOML: %v", err)
	}
	return k
}

type rawBytes []byte

func (b rawBytes) ReadBytes() ([]byte, error)    { return b, nil }
func (b rawBytes) Read() (map[string]any, error) { return nil, fmt.Errorf("unused") }

func TestExampleHasEveryKey(t *testing.T) {
	k := parseExample(t)
	for key := range flatten(Defaults().Redacted()) {
		if key == "opencode.servers" {
			continue // a commented example, checked below
		}
		if !k.Exists(key) {
			t.Errorf("example lacks key %s", key)
		}
	}
	if problems := unknownFileKeys(k); len(problems) > 0 {
		t.Errorf("example has unknown keys: %v", problems)
	}
}

// TestExampleServersBlock uncomments the example server table and checks
// that it is valid and shows every server field.
func TestExampleServersBlock(t *testing.T) {
	var block []string
	in := false
	sc := bufio.NewScanner(bytes.NewReader(ExampleTOML))
	assign := regexp.MustCompile(`^#\s*(\[\[opencode\.servers\]\]|[a-z_]+ = .*)$`)
	for sc.Scan() {
		line := sc.Text()
		if strings.TrimSpace(line) == "# [[opencode.servers]]" {
			in = true
		}
		if in && !strings.HasPrefix(line, "#") {
			break
		}
		if in {
			if m := assign.FindStringSubmatch(line); m != nil {
				block = append(block, m[1])
			}
		}
	}
	if len(block) == 0 {
		t.Fatal("example has no commented [[opencode.servers]] table")
	}
	o := isolated(t)
	o.File = writeFile(t, t.TempDir(), "s.toml", strings.Join(block, "\n")+"\n")
	c, err := Load(o)
	if err != nil {
		t.Fatalf("uncommented server example: %v\n%s", err, strings.Join(block, "\n"))
	}
	if len(c.OpenCode.Servers) != 1 {
		t.Fatalf("got %d servers, want 1", len(c.OpenCode.Servers))
	}
	shown := strings.Join(block, "\n")
	for _, f := range keys().serverFields {
		if !regexp.MustCompile(`(?m)^` + f.key + ` = `).MatchString(shown) {
			t.Errorf("example server table lacks %s", f.key)
		}
	}
}

// TestExampleCommentsStateDefaults checks that each live key is preceded by
// a "# Default: <value>" line that agrees with its value.
func TestExampleCommentsStateDefaults(t *testing.T) {
	lines := strings.Split(string(ExampleTOML), "\n")
	assign := regexp.MustCompile(`^([a-z_]+) = (.*)$`)
	for i, line := range lines {
		m := assign.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		if i == 0 || !strings.HasPrefix(lines[i-1], "# Default: "+m[2]) {
			t.Errorf("line %d %q: previous line should be \"# Default: %s\"", i+1, line, m[2])
		}
		if i < 2 || !strings.HasPrefix(lines[i-2], "#") {
			t.Errorf("line %d %q: needs a comment saying what it does", i+1, line)
		}
	}
}

func TestRegisterFlags(t *testing.T) {
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	RegisterFlags(fs)
	for _, name := range []string{"data-dir", "control-listen", "control-token-file",
		"opencode-stale-after", "memory-embeddings-api-key", "sweep-runtime-state-ttl"} {
		if fs.Lookup(name) == nil {
			t.Errorf("no flag --%s", name)
		}
	}
	if fs.Lookup("opencode-servers") != nil {
		t.Error("opencode.servers must not have a flag")
	}
	n := 0
	fs.VisitAll(func(f *pflag.Flag) {
		n++
		if f.Usage == "" {
			t.Errorf("--%s has no usage", f.Name)
		}
	})
	if want := len(specDefaults) - 1; n != want {
		t.Errorf("%d flags, want one per scalar key (%d)", n, want)
	}
	if got := fs.Lookup("log-level").DefValue; got != "info" {
		t.Errorf("--log-level default shown as %q, want info", got)
	}
	if got := fs.Lookup("opencode-stale-after").DefValue; got != (15 * time.Minute).String() {
		t.Errorf("--opencode-stale-after default shown as %q", got)
	}
}

func TestSecretNeverFormats(t *testing.T) {
	const pw = "pw-Hunter2"
	c := Defaults()
	c.OpenCode.Servers = []Server{{Name: "a", URL: "http://127.0.0.1:1", Password: pw}}
	c.Memory.EmbeddingsAPIKey = "sk-" + pw
	js, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{
		fmt.Sprintf("%v", c), fmt.Sprintf("%+v", *c), fmt.Sprintf("%#v", *c),
		fmt.Sprint(c.OpenCode.Servers), string(js), fmt.Sprint(c.Redacted()),
	} {
		if strings.Contains(s, pw) {
			t.Errorf("secret leaked in %s", s)
		}
	}
	if got := c.OpenCode.Servers[0].Password.Reveal(); got != pw {
		t.Errorf("Reveal() = %q, want the secret", got)
	}
	if got := Secret("").String(); got != "" {
		t.Errorf("empty secret shows as %q, want empty", got)
	}
}

func TestFormatDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0: "0s", 50 * time.Millisecond: "50ms", time.Minute: "1m", 90 * time.Minute: "1h30m",
		2160 * time.Hour: "2160h", 90 * time.Second: "1m30s", -time.Second: "-1s",
	} {
		if got := formatDuration(d); got != want {
			t.Errorf("formatDuration(%v) = %q, want %q", d, got, want)
		}
		if back, err := time.ParseDuration(formatDuration(d)); err != nil || back != d {
			t.Errorf("formatDuration(%v) does not parse back: %v %v", d, back, err)
		}
	}
}

func TestServerFieldsStable(t *testing.T) {
	var got []string
	for _, f := range keys().serverFields {
		got = append(got, f.key)
	}
	want := []string{"name", "url", "api", "username", "password"}
	if !slices.Equal(got, want) {
		t.Errorf("server keys %v, want %v", got, want)
	}
}

// The prompt_* keys: each bad value is reported under its own key, all at
// once; "off" turns the others' checks off.
func TestValidatePromptKeys(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(a *Agents)
		keys   []string // the problems' keys; none: valid
		msg    string   // a part of the first problem's message
	}{
		{"defaults", func(*Agents) {}, nil, ""},
		{"option does not compile", func(a *Agents) { a.Claude.PromptOption = "(" },
			[]string{"im.agents.claude.prompt_option"}, "missing closing )"},
		{"option without cursor", func(a *Agents) { a.Codex.PromptOption = `^(?P<n>\d)\. (?P<label>.*)$` },
			[]string{"im.agents.codex.prompt_option"}, "no group (?P<cursor>...)"},
		{"question with two groups", func(a *Agents) { a.Claude.PromptQuestion = `(a)(b)` },
			[]string{"im.agents.claude.prompt_question"}, "at most one group"},
		{"question empty", func(a *Agents) { a.Codex.PromptQuestion = "" },
			[]string{"im.agents.codex.prompt_question"}, "at most one group"},
		{"top does not compile", func(a *Agents) { a.Claude.PromptTop = "[" },
			[]string{"im.agents.claude.prompt_top"}, "must be a regexp or empty"},
		{"ignore does not compile", func(a *Agents) { a.Codex.PromptIgnore = "*" },
			[]string{"im.agents.codex.prompt_ignore"}, "must be a regexp or empty"},
		{"keys empty", func(a *Agents) { a.Claude.PromptKeys = " " },
			[]string{"im.agents.claude.prompt_keys"}, "names no key"},
		{"keys with an unknown placeholder", func(a *Agents) { a.Codex.PromptKeys = "{num} Enter" },
			[]string{"im.agents.codex.prompt_keys"}, "unknown placeholder {num}"},
		{"all at once", func(a *Agents) {
			a.Claude.PromptOption, a.Claude.PromptKeys, a.Codex.PromptTop = "(", "", "["
		}, []string{"im.agents.claude.prompt_option", "im.agents.claude.prompt_keys", "im.agents.codex.prompt_top"}, ""},
		{"off skips the rest", func(a *Agents) {
			a.Claude = Agent{Launch: "claude", Detect: "claude", Input: InputOff, PromptOption: PromptOff, PromptQuestion: "(", PromptKeys: "",
				Mode: ModeOff, KeysEsc: "Escape", KeysInterrupt: "C-c", KeysEnter: "Enter"}
		}, nil, ""},
		{"command keys that are no tmux keys", func(a *Agents) { a.Claude.KeysEsc, a.Mimo.KeysEnter = "Esc;ape", " " },
			[]string{"im.agents.claude.keys_esc", "im.agents.mimo.keys_enter"}, "tmux key names"},
		{"a mode that is no slash command, and a cycle only claude's footer can show", func(a *Agents) { a.Codex.Mode, a.Mimo.Mode = "approvals", "cycle" },
			[]string{"im.agents.codex.mode", "im.agents.mimo.mode"}, "slash command"},
		{"copilot turned on", func(a *Agents) { a.Copilot.PromptOption = DefaultClaudePromptOption },
			[]string{"im.agents.copilot.prompt_question", "im.agents.copilot.prompt_keys"}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := valid(t)
			tc.mutate(&c.IM.Agents)
			err := c.Validate()
			if tc.keys == nil {
				if err != nil {
					t.Fatalf("want valid, got %v", err)
				}
				return
			}
			var ve *ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("want a ValidationError, got %v", err)
			}
			var keys []string
			for _, p := range ve.Problems {
				keys = append(keys, p.Key)
			}
			if !slices.Equal(keys, tc.keys) {
				t.Errorf("problems under %q, want %q: %v", keys, tc.keys, err)
			}
			if tc.msg != "" && !strings.Contains(ve.Problems[0].Msg, tc.msg) {
				t.Errorf("message %q lacks %q", ve.Problems[0].Msg, tc.msg)
			}
		})
	}
}
