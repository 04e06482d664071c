package config

import (
	"errors"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

func TestLayerPrecedence(t *testing.T) {
	file := `
[log]
level = "debug"
format = "json"
[journal]
snapshot_every = 7
[sweep]
interval = "2m"
`
	cases := []struct {
		name  string
		file  bool
		env   []string
		args  []string
		check func(t *testing.T, c *Config)
	}{
		{
			name: "file over defaults",
			file: true,
			check: func(t *testing.T, c *Config) {
				want(t, "log.level", c.Log.Level, "debug")
				want(t, "journal.snapshot_every", c.Journal.SnapshotEvery, 7)
				want(t, "journal.cache_size_mb", c.Journal.CacheSizeMB, 32)
			},
		},
		{
			name: "env over file",
			file: true,
			env:  []string{"THATCH_JOURNAL_SNAPSHOT_EVERY=8", "THATCH_SWEEP_INTERVAL=3m"},
			check: func(t *testing.T, c *Config) {
				want(t, "journal.snapshot_every", c.Journal.SnapshotEvery, 8)
				want(t, "sweep.interval", c.Sweep.Interval, 3*time.Minute)
				want(t, "log.level", c.Log.Level, "debug")
			},
		},
		{
			name: "set flag over env over file",
			file: true,
			env:  []string{"THATCH_SWEEP_INTERVAL=3m", "THATCH_LOG_FORMAT=text"},
			args: []string{"--sweep-interval=4m", "--journal-cache-size-mb", "64"},
			check: func(t *testing.T, c *Config) {
				want(t, "sweep.interval", c.Sweep.Interval, 4*time.Minute)
				want(t, "journal.cache_size_mb", c.Journal.CacheSizeMB, 64)
				want(t, "log.format", c.Log.Format, "text")
			},
		},
		{
			name: "unset flags with defaults do not override file or env",
			file: true,
			env:  []string{"THATCH_SWEEP_INTERVAL=3m"},
			args: []string{"--control-listen=127.0.0.1:7000"},
			check: func(t *testing.T, c *Config) {
				want(t, "log.level", c.Log.Level, "debug") // --log-level defaults to info
				want(t, "journal.snapshot_every", c.Journal.SnapshotEvery, 7)
				want(t, "sweep.interval", c.Sweep.Interval, 3*time.Minute)
				want(t, "control.listen", c.Control.Listen, "127.0.0.1:7000")
			},
		},
		{
			name: "the seed's sweep variables are aliases",
			env:  []string{"THATCH_STRAND_SWEEP=off", "THATCH_STRAND_SWEEP_MS=2500", "THATCH_RUNTIME_STATE_TTL_MS=60000"},
			check: func(t *testing.T, c *Config) {
				want(t, "sweep.strand", c.Sweep.Strand, false)
				want(t, "sweep.strand_interval", c.Sweep.StrandInterval, 2500*time.Millisecond)
				want(t, "sweep.runtime_state_ttl", c.Sweep.RuntimeStateTTL, time.Minute)
			},
		},
		{
			name: "a flag beats an alias",
			env:  []string{"THATCH_STRAND_SWEEP=off"},
			args: []string{"--sweep-strand=true"},
			check: func(t *testing.T, c *Config) {
				want(t, "sweep.strand", c.Sweep.Strand, true)
			},
		},
		{
			name: "flag set to its default value still counts",
			file: true,
			args: []string{"--log-level=info"},
			check: func(t *testing.T, c *Config) {
				want(t, "log.level", c.Log.Level, "info")
			},
		},
		{
			name: "later duplicate env entry wins",
			env:  []string{"THATCH_LOG_LEVEL=warn", "THATCH_LOG_LEVEL=error"},
			check: func(t *testing.T, c *Config) {
				want(t, "log.level", c.Log.Level, "error")
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := isolated(t)
			if tc.file {
				o.File = writeFile(t, t.TempDir(), "c.toml", file)
			}
			o.Env = tc.env
			o.Flags = pflag.NewFlagSet("t", pflag.ContinueOnError)
			o.Flags.String("config", "", "not a key; must be ignored")
			RegisterFlags(o.Flags)
			if err := o.Flags.Parse(append([]string{"--config=ignored"}, tc.args...)); err != nil {
				t.Fatal(err)
			}
			c, err := Load(o)
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			tc.check(t, c)
		})
	}
}

func want[T comparable](t *testing.T, key string, got, want T) {
	t.Helper()
	if got != want {
		t.Errorf("%s = %v, want %v", key, got, want)
	}
}

// everyKey gives each scalar key a valid non-default value, as text, and
// how Redacted shows it afterwards.
var everyKey = map[string]struct {
	in   string
	show any
}{
	"data.dir":                          {"/srv/thatch", "/srv/thatch"},
	"log.level":                         {"trace", "trace"},
	"log.format":                        {"json", "json"},
	"control.listen":                    {"[::1]:9000", "[::1]:9000"},
	"control.token_file":                {"/run/t.token", "/run/t.token"},
	"control.state_file":                {"/run/t.json", "/run/t.json"},
	"journal.snapshot_every":            {"250", 250},
	"journal.cache_size_mb":             {"8", 8},
	"actors.passivate_after":            {"90s", "1m30s"},
	"supervisor.max_restarts":           {"0", 0},
	"supervisor.restart_window":         {"2m", "2m"},
	"supervisor.backoff_base":           {"10ms", "10ms"},
	"supervisor.backoff_max":            {"1m", "1m"},
	"opencode.buffer_limit":             {"1000", 1000},
	"opencode.stale_after":              {"30m", "30m"},
	"opencode.finish_grace":             {"0s", "0s"},
	"opencode.exit_retry_window":        {"5m", "5m"},
	"opencode.request_timeout":          {"3s", "3s"},
	"memory.embedder":                   {"openai", "openai"},
	"memory.embeddings_url":             {"https://emb.example/v1", "https://emb.example/v1"},
	"memory.embeddings_model":           {"m-small", "m-small"},
	"memory.embeddings_api_key":         {"sk-abc", RedactedValue},
	"memory.dedup_threshold":            {"0.5", 0.5},
	"memory.stale_after":                {"720h", "720h"},
	"memory.daily_budget_tokens":        {"50000", 50000},
	"memory.idle_after":                 {"30s", "30s"},
	"memory.extractor":                  {"codex", "codex"},
	"memory.redact.enabled":             {"false", false},
	"memory.redact.disable":             {"jwt,env_secret", []string{"jwt", "env_secret"}},
	"memory.redact.patterns":            {`acme=acme_[a-z]{8}`, []string{"acme=acme_[a-z]{8}"}},
	"sweep.interval":                    {"30s", "30s"},
	"sweep.runtime_state_ttl":           {"1h", "1h"},
	"sweep.deleted_session_ttl":         {"2h", "2h"},
	"sweep.strand":                      {"false", false},
	"sweep.strand_interval":             {"90s", "1m30s"},
	"sweep.opencode_db":                 {"/srv/oc.db", "/srv/oc.db"},
	"im.allowed_users":                  {"42,7", []string{"42", "7"}},
	"im.open":                           {"true", true},
	"im.roots":                          {"/srv,/home/u", []string{"/srv", "/home/u"}},
	"cluster.node":                      {"box-2", "box-2"},
	"cluster.listen":                    {"127.0.0.1:7250", "127.0.0.1:7250"},
	"cluster.routes":                    {"nats-route://127.0.0.1:7251", []string{"nats-route://127.0.0.1:7251"}},
	"cluster.replicas":                  {"2", 2},
	"cluster.lease_ttl":                 {"4s", "4s"},
	"cluster.tls_cert":                  {"/etc/t/c.pem", "/etc/t/c.pem"},
	"cluster.tls_key":                   {"/etc/t/k.pem", "/etc/t/k.pem"},
	"cluster.tls_ca":                    {"/etc/t/ca.pem", "/etc/t/ca.pem"},
	"cluster.token":                     {"route-secret", RedactedValue},
	"im.rename_timeout":                 {"30s", "30s"},
	"im.telegram.token":                 {"123:abc", RedactedValue},
	"im.telegram.api_url":               {"http://127.0.0.1:8081", "http://127.0.0.1:8081"},
	"im.telegram.send_timeout":          {"20s", "20s"},
	"im.telegram.chat_interval":         {"250ms", "250ms"},
	"im.telegram.group_per_minute":      {"30", 30},
	"im.on_close":                       {"kill", "kill"},
	"im.feishu.app_id":                  {"cli_a1", "cli_a1"},
	"im.feishu.app_secret":              {"s3cr3t-app", RedactedValue},
	"im.feishu.verification_token":      {"v-token", RedactedValue},
	"im.feishu.encrypt_key":             {"e-key", RedactedValue},
	"im.feishu.base_url":                {"http://127.0.0.1:9", "http://127.0.0.1:9"},
	"im.feishu.mode":                    {"webhook", "webhook"},
	"im.feishu.listen":                  {"127.0.0.1:8443", "127.0.0.1:8443"},
	"im.feishu.path":                    {"/fs", "/fs"},
	"im.feishu.allowed_users":           {"ou_a,ou_b", []string{"ou_a", "ou_b"}},
	"im.tmux.socket":                    {"t2", "t2"},
	"im.tmux.session":                   {"s2", "s2"},
	"im.tmux.adopt_sockets":             {"default", []string{"default"}},
	"im.agents.claude.launch":           {"claude --x", "claude --x"},
	"im.agents.claude.resume":           {"claude --resume {session_id}", "claude --resume {session_id}"},
	"im.agents.claude.detect":           {"cl", "cl"},
	"im.agents.claude.input":            {"^> (.*)$", "^> (.*)$"},
	"im.agents.codex.input":             {"^>> (.*)$", "^>> (.*)$"},
	"im.agents.copilot.input":           {"^c> (.*)$", "^c> (.*)$"},
	"im.agents.mimo.input":              {"^m> (.*)$", "^m> (.*)$"},
	"im.agents.codex.launch":            {"codex2", "codex2"},
	"im.agents.codex.resume":            {"codex2 resume {session_id}", "codex2 resume {session_id}"},
	"im.agents.codex.detect":            {"cx", "cx"},
	"im.agents.claude.prompt_option":    {`^(?P<cursor>>)?(?P<label>(?P<n>\d)\. .*)$`, `^(?P<cursor>>)?(?P<label>(?P<n>\d)\. .*)$`},
	"im.agents.claude.prompt_question":  {`^(.*\?)$`, `^(.*\?)$`},
	"im.agents.claude.prompt_top":       {`^=+$`, `^=+$`},
	"im.agents.claude.prompt_ignore":    {`^#`, `^#`},
	"im.agents.claude.prompt_keys":      {"{n} Enter Enter", "{n} Enter Enter"},
	"im.agents.codex.prompt_option":     {`^(?P<cursor>>)?(?P<label>(?P<n>\d)\. .*)$`, `^(?P<cursor>>)?(?P<label>(?P<n>\d)\. .*)$`},
	"im.agents.codex.prompt_question":   {`^(.*\?)$`, `^(.*\?)$`},
	"im.agents.codex.prompt_top":        {`^=+$`, `^=+$`},
	"im.agents.codex.prompt_ignore":     {`^#`, `^#`},
	"im.agents.codex.prompt_keys":       {"{n} Enter Enter", "{n} Enter Enter"},
	"im.agents.copilot.prompt_option":   {`^(?P<cursor>>)?(?P<label>(?P<n>\d)\. .*)$`, `^(?P<cursor>>)?(?P<label>(?P<n>\d)\. .*)$`},
	"im.agents.copilot.prompt_question": {`^(.*\?)$`, `^(.*\?)$`},
	"im.agents.copilot.prompt_top":      {`^=+$`, `^=+$`},
	"im.agents.copilot.prompt_ignore":   {`^#`, `^#`},
	"im.agents.copilot.prompt_keys":     {"{n} Enter Enter", "{n} Enter Enter"},
	"im.agents.claude.mode":             {"off", "off"},
	"im.agents.codex.mode":              {"/permissions", "/permissions"},
	"im.agents.copilot.mode":            {"/mode", "/mode"},
	"im.agents.mimo.mode":               {"/approvals", "/approvals"},
	"im.agents.claude.keys_esc":         {"Escape Escape", "Escape Escape"},
	"im.agents.claude.keys_interrupt":   {"C-c C-c", "C-c C-c"},
	"im.agents.claude.keys_enter":       {"C-m", "C-m"},
	"im.agents.codex.keys_esc":          {"Escape Escape", "Escape Escape"},
	"im.agents.codex.keys_interrupt":    {"C-c C-c", "C-c C-c"},
	"im.agents.codex.keys_enter":        {"C-m", "C-m"},
	"im.agents.copilot.keys_esc":        {"Escape Escape", "Escape Escape"},
	"im.agents.copilot.keys_interrupt":  {"C-c C-c", "C-c C-c"},
	"im.agents.copilot.keys_enter":      {"C-m", "C-m"},
	"im.agents.mimo.keys_esc":           {"Escape Escape", "Escape Escape"},
	"im.agents.mimo.keys_interrupt":     {"C-c C-c", "C-c C-c"},
	"im.agents.mimo.keys_enter":         {"C-m", "C-m"},
	"im.show_tools":                     {"true", true},
	"im.live":                           {"off", "off"},
	"im.live_every":                     {"5s", "5s"},
	"im.alert_after":                    {"2m", "2m"},
	"im.board":                          {"true", true},
	"im.board_interval":                 {"20s", "20s"},
	"im.prices":                         {"my-model=1/2", []string{"my-model=1/2"}},
	"im.inbox_dir":                      {"/srv/inbox", "/srv/inbox"},
	"im.transcribe":                     {"whisper-cli -m base", "whisper-cli -m base"},
	"im.max_file_mb":                    {"5", 5},
	"im.agents.mimo.prompt_option":      {`^(?P<cursor>>)?(?P<label>(?P<n>\d)\. .*)$`, `^(?P<cursor>>)?(?P<label>(?P<n>\d)\. .*)$`},
	"im.agents.mimo.prompt_question":    {`^(.*\?)$`, `^(.*\?)$`},
	"im.agents.mimo.prompt_top":         {`^=+$`, `^=+$`},
	"im.agents.mimo.prompt_ignore":      {`^#`, `^#`},
	"im.agents.mimo.prompt_keys":        {"{n} Enter Enter", "{n} Enter Enter"},
	"im.agents.copilot.launch":          {"gh copilot", "gh copilot"},
	"im.agents.copilot.resume":          {"gh copilot --resume {session_id}", "gh copilot --resume {session_id}"},
	"im.agents.copilot.detect":          {"cp", "cp"},
	"im.agents.mimo.launch":             {"mimocode", "mimocode"},
	"im.agents.mimo.resume":             {"mimocode -s {session_id}", "mimocode -s {session_id}"},
	"im.agents.mimo.detect":             {"mm", "mm"},
}

// TestEveryKeyFromEnvAndFlags checks the name mapping for every key: the
// variable and the flag each set exactly that key.
func TestEveryKeyFromEnvAndFlags(t *testing.T) {
	for _, l := range keys().leaves {
		if _, ok := everyKey[l.key]; !ok && l.scalar() {
			t.Errorf("everyKey lacks %s", l.key)
		}
	}
	var env, args []string
	for key, v := range everyKey {
		env = append(env, envName(key)+"="+v.in)
		args = append(args, "--"+flagName(key)+"="+v.in)
	}
	for _, layer := range []string{"env", "flags"} {
		t.Run(layer, func(t *testing.T) {
			o := isolated(t)
			if layer == "env" {
				o.Env = env
			} else {
				o.Flags = pflag.NewFlagSet("t", pflag.ContinueOnError)
				RegisterFlags(o.Flags)
				if err := o.Flags.Parse(args); err != nil {
					t.Fatal(err)
				}
			}
			c, err := Load(o)
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			got := flatten(c.Redacted())
			for key, v := range everyKey {
				if !reflect.DeepEqual(got[key], v.show) {
					t.Errorf("%s = %#v, want %#v", key, got[key], v.show)
				}
			}
			if string(c.Memory.EmbeddingsAPIKey) != "sk-abc" {
				t.Errorf("api key not loaded")
			}
		})
	}
}

func TestEnvNames(t *testing.T) {
	for key, name := range map[string]string{
		"control.token_file":        "THATCH_CONTROL_TOKEN_FILE",
		"data.dir":                  "THATCH_DATA_DIR",
		"memory.embeddings_api_key": "THATCH_MEMORY_EMBEDDINGS_API_KEY",
	} {
		if got := envName(key); got != name {
			t.Errorf("envName(%s) = %s, want %s", key, got, name)
		}
		if got := keys().byEnv[name]; got != key {
			t.Errorf("%s maps to %q, want %s", name, got, key)
		}
	}
}

const serversTOML = `
[log]
level = "warn"
[opencode]
stale_after = "20m"
[[opencode.servers]]
name = "main"
url = "http://127.0.0.1:4096"
[[opencode.servers]]
name = "other"
url = "https://localhost:4097"
api = "v2"
username = "me"
password = "own-pw"
`

const serversYAML = `
log:
  level: warn
opencode:
  stale_after: 20m
  servers:
    - name: main
      url: http://127.0.0.1:4096
    - name: other
      url: https://localhost:4097
      api: v2
      username: me
      password: own-pw
`

func TestTOMLAndYAMLLoadAlike(t *testing.T) {
	wantServers := []Server{
		{Name: "main", URL: "http://127.0.0.1:4096", API: "auto", Username: "opencode", Password: "env-pw"},
		{Name: "other", URL: "https://localhost:4097", API: "v2", Username: "me", Password: "own-pw"},
	}
	var loaded []*Config
	home := t.TempDir()
	for _, f := range []struct{ name, body string }{
		{"c.toml", serversTOML}, {"c.yaml", serversYAML}, {"c.yml", serversYAML}, {"C.TOML", serversTOML},
	} {
		t.Run(f.name, func(t *testing.T) {
			o := LoadOptions{HomeDir: home, Env: []string{"OPENCODE_SERVER_PASSWORD=env-pw"}}
			o.File = writeFile(t, t.TempDir(), f.name, f.body)
			c, err := Load(o)
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if c.Source() != o.File {
				t.Errorf("Source() = %q, want %q", c.Source(), o.File)
			}
			want(t, "log.level", c.Log.Level, "warn")
			want(t, "opencode.stale_after", c.OpenCode.StaleAfter, 20*time.Minute)
			if !reflect.DeepEqual(c.OpenCode.Servers, wantServers) {
				t.Errorf("servers = %#v, want %#v", c.OpenCode.Servers, wantServers)
			}
			loaded = append(loaded, stripLoadState(c))
		})
	}
	for i := 1; i < len(loaded); i++ {
		if !reflect.DeepEqual(loaded[0], loaded[i]) {
			t.Errorf("file %d loads differently from file 0", i)
		}
	}
}

func TestFileDiscovery(t *testing.T) {
	type setup struct {
		home, dir string
		opts      LoadOptions
	}
	cases := []struct {
		name    string
		prepare func(t *testing.T, s *setup)
		level   string // log.level the chosen file sets; "" = no file
		wantErr error
		errHas  string
	}{
		{
			name:    "no file anywhere is fine",
			prepare: func(t *testing.T, s *setup) {},
			level:   "",
		},
		{
			name: "XDG_CONFIG_HOME default",
			prepare: func(t *testing.T, s *setup) {
				writeFile(t, s.dir, "xdg/thatch/config.toml", "log.level = \"warn\"\n")
				s.opts.Env = []string{"XDG_CONFIG_HOME=" + filepath.Join(s.dir, "xdg")}
			},
			level: "warn",
		},
		{
			name: "~/.config default when XDG_CONFIG_HOME is unset",
			prepare: func(t *testing.T, s *setup) {
				writeFile(t, s.home, ".config/thatch/config.toml", "log.level = \"error\"\n")
			},
			level: "error",
		},
		{
			name: "relative XDG_CONFIG_HOME is ignored",
			prepare: func(t *testing.T, s *setup) {
				writeFile(t, s.home, ".config/thatch/config.toml", "log.level = \"error\"\n")
				s.opts.Env = []string{"XDG_CONFIG_HOME=relative/xdg"}
			},
			level: "error",
		},
		{
			name: "THATCH_CONFIG beats the default",
			prepare: func(t *testing.T, s *setup) {
				writeFile(t, s.home, ".config/thatch/config.toml", "log.level = \"error\"\n")
				p := writeFile(t, s.dir, "env.yaml", "log:\n  level: debug\n")
				s.opts.Env = []string{"THATCH_CONFIG=" + p}
			},
			level: "debug",
		},
		{
			name: "--config beats THATCH_CONFIG",
			prepare: func(t *testing.T, s *setup) {
				p := writeFile(t, s.dir, "env.toml", "log.level = \"debug\"\n")
				s.opts.Env = []string{"THATCH_CONFIG=" + p}
				s.opts.File = writeFile(t, s.dir, "flag.toml", "log.level = \"trace\"\n")
			},
			level: "trace",
		},
		{
			name: "~ in --config is the home directory",
			prepare: func(t *testing.T, s *setup) {
				writeFile(t, s.home, "my/thatch.toml", "log.level = \"trace\"\n")
				s.opts.File = "~/my/thatch.toml"
			},
			level: "trace",
		},
		{
			name: "missing --config is an error",
			prepare: func(t *testing.T, s *setup) {
				writeFile(t, s.home, ".config/thatch/config.toml", "log.level = \"error\"\n")
				s.opts.File = filepath.Join(s.dir, "nope.toml")
			},
			wantErr: ErrFileNotFound,
			errHas:  "nope.toml (named by --config)",
		},
		{
			name: "missing THATCH_CONFIG is an error",
			prepare: func(t *testing.T, s *setup) {
				s.opts.Env = []string{"THATCH_CONFIG=" + filepath.Join(s.dir, "gone.yaml")}
			},
			wantErr: ErrFileNotFound,
			errHas:  "gone.yaml (named by $THATCH_CONFIG)",
		},
		{
			name: "unknown extension",
			prepare: func(t *testing.T, s *setup) {
				s.opts.File = writeFile(t, s.dir, "c.json", "{}")
			},
			wantErr: ErrUnsupportedFormat,
			errHas:  "c.json",
		},
		{
			name: "TOML syntax error",
			prepare: func(t *testing.T, s *setup) {
				s.opts.File = writeFile(t, s.dir, "bad.toml", "[log\nlevel = \n")
			},
			wantErr: ErrParse,
			errHas:  "bad.toml",
		},
		{
			name: "YAML syntax error",
			prepare: func(t *testing.T, s *setup) {
				s.opts.File = writeFile(t, s.dir, "bad.yaml", "log: [\n")
			},
			wantErr: ErrParse,
			errHas:  "bad.yaml",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := &setup{home: t.TempDir(), dir: t.TempDir()}
			s.opts = LoadOptions{HomeDir: s.home, Env: []string{}}
			tc.prepare(t, s)
			c, err := Load(s.opts)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) || !strings.Contains(err.Error(), tc.errHas) {
					t.Fatalf("err = %v, want %v mentioning %q", err, tc.wantErr, tc.errHas)
				}
				if c != nil {
					t.Errorf("config returned with a fatal error")
				}
				return
			}
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if tc.level == "" {
				want(t, "source", c.Source(), "")
				want(t, "log.level", c.Log.Level, "info")
				return
			}
			if c.Source() == "" {
				t.Error("Source() is empty though a file was loaded")
			}
			want(t, "log.level", c.Log.Level, tc.level)
		})
	}
}

func TestPathResolution(t *testing.T) {
	const home = "/home/u"
	cases := []struct {
		name              string
		env               []string
		file              string
		dir, token, state string
		invalidKeys       []string
	}{
		{
			name:  "XDG_DATA_HOME",
			env:   []string{"XDG_DATA_HOME=/xdg/data"},
			dir:   "/xdg/data/thatch",
			token: "/xdg/data/thatch/control.token",
			state: "/xdg/data/thatch/control.json",
		},
		{
			name:  "~/.local/share fallback",
			dir:   "/home/u/.local/share/thatch",
			token: "/home/u/.local/share/thatch/control.token",
			state: "/home/u/.local/share/thatch/control.json",
		},
		{
			name:  "relative XDG_DATA_HOME is ignored",
			env:   []string{"XDG_DATA_HOME=data"},
			dir:   "/home/u/.local/share/thatch",
			token: "/home/u/.local/share/thatch/control.token",
			state: "/home/u/.local/share/thatch/control.json",
		},
		{
			name:  "explicit data.dir with ~ wins over XDG",
			env:   []string{"XDG_DATA_HOME=/xdg/data", "THATCH_DATA_DIR=~/td"},
			dir:   "/home/u/td",
			token: "/home/u/td/control.token",
			state: "/home/u/td/control.json",
		},
		{
			name:  "explicit token and state files are kept",
			file:  "[data]\ndir = \"/d\"\n[control]\ntoken_file = \"~/tok\"\nstate_file = \"/s/state.json\"\n",
			dir:   "/d",
			token: "/home/u/tok",
			state: "/s/state.json",
		},
		{
			name:        "relative data.dir is rejected",
			env:         []string{"THATCH_DATA_DIR=rel/dir"},
			dir:         "rel/dir",
			invalidKeys: []string{"control.state_file", "control.token_file", "data.dir"},
		},
		{
			name:        "same token and state file",
			env:         []string{"THATCH_CONTROL_TOKEN_FILE=/x/f", "THATCH_CONTROL_STATE_FILE=/x/f"},
			dir:         "/home/u/.local/share/thatch",
			token:       "/x/f",
			state:       "/x/f",
			invalidKeys: []string{"control.state_file"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := LoadOptions{HomeDir: home, Env: tc.env}
			if tc.file != "" {
				o.File = writeFile(t, t.TempDir(), "c.toml", tc.file)
			}
			c, err := Load(o)
			if got := problemKeys(t, err); !slices.Equal(got, tc.invalidKeys) {
				t.Errorf("problems %v, want %v (err: %v)", got, tc.invalidKeys, err)
			}
			if c == nil {
				t.Fatal("no config")
			}
			want(t, "data.dir", c.Data.Dir, tc.dir)
			want(t, "control.token_file", c.Control.TokenFile, tc.token)
			want(t, "control.state_file", c.Control.StateFile, tc.state)
		})
	}
}

func TestNoHomeNoXDGIsReported(t *testing.T) {
	c := Defaults()
	c.resolvePaths(nil, "")
	got := problemKeys(t, c.Validate())
	wantKeys := []string{"control.state_file", "control.token_file", "data.dir"}
	if !slices.Equal(got, wantKeys) {
		t.Errorf("problems %v, want %v", got, wantKeys)
	}
}

func TestServerPasswordFromEnvironment(t *testing.T) {
	o := isolated(t)
	o.File = writeFile(t, t.TempDir(), "c.toml", serversTOML)
	c, err := Load(o)
	if err != nil {
		t.Fatal(err)
	}
	if c.OpenCode.Servers[0].Password != "" {
		t.Errorf("password filled without OPENCODE_SERVER_PASSWORD")
	}
	o.Env = []string{"OPENCODE_SERVER_PASSWORD="}
	if c, _ = Load(o); c.OpenCode.Servers[0].Password != "" {
		t.Errorf("empty OPENCODE_SERVER_PASSWORD filled a password")
	}
}

func TestTheIMFrontEndsShellVariablesAreNotKeys(t *testing.T) {
	o := isolated(t)
	o.Env = append(o.Env, "THATCH_IM_WINDOW=thatch:tg:-1:2:1", "THATCH_IM_HOOK_FILE=/tmp/h.json")
	if _, err := Load(o); err != nil {
		t.Fatalf("an agent's shell (with the variables thatch set for its hook) cannot run thatch: %v", err)
	}
}
