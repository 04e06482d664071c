package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"go/parser"
	"go/token"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// valid returns resolved defaults that pass Validate, for tests that break
// one thing at a time.
func valid(t *testing.T) *Config {
	t.Helper()
	c := Defaults()
	c.resolvePaths(nil, "/home/u")
	if err := c.Validate(); err != nil {
		t.Fatalf("baseline invalid: %v", err)
	}
	return c
}

func TestValidateOneValue(t *testing.T) {
	srv := func(name, url, api string) Server {
		return Server{Name: name, URL: url, API: api, Username: "opencode"}
	}
	cases := []struct {
		name   string
		mutate func(c *Config)
		key    string // "" = valid
		msg    string // exact message for the key
	}{
		{"listen on all interfaces", func(c *Config) { c.Control.Listen = "0.0.0.0:80" },
			"control.listen", `must be a loopback address (127.0.0.1:port), got "0.0.0.0:80"`},
		{"listen without host", func(c *Config) { c.Control.Listen = ":8080" },
			"control.listen", `must be a loopback address (127.0.0.1:port), got ":8080"`},
		{"listen without port", func(c *Config) { c.Control.Listen = "127.0.0.1" },
			"control.listen", `must be a loopback address (127.0.0.1:port), got "127.0.0.1"`},
		{"listen port out of range", func(c *Config) { c.Control.Listen = "127.0.0.1:70000" },
			"control.listen", `port must be a number from 0 to 65535 (0 picks a free port), got "127.0.0.1:70000"`},
		{"listen on localhost", func(c *Config) { c.Control.Listen = "localhost:8080" }, "", ""},
		{"listen on ::1", func(c *Config) { c.Control.Listen = "[::1]:0" }, "", ""},
		{"listen on 127.0.0.2", func(c *Config) { c.Control.Listen = "127.0.0.2:1" }, "", ""},
		{"log level", func(c *Config) { c.Log.Level = "INFO" },
			"log.level", `must be one of trace, debug, info, warn, error, got "INFO"`},
		{"log format", func(c *Config) { c.Log.Format = "xml" },
			"log.format", `must be one of text, json, got "xml"`},
		{"snapshot_every 0", func(c *Config) { c.Journal.SnapshotEvery = 0 },
			"journal.snapshot_every", "must be >= 1, got 0"},
		{"cache_size_mb 0", func(c *Config) { c.Journal.CacheSizeMB = 0 },
			"journal.cache_size_mb", "must be >= 1, got 0"},
		{"passivate_after 0", func(c *Config) { c.Actors.PassivateAfter = 0 },
			"actors.passivate_after", "must be a duration > 0, got 0s"},
		{"max_restarts 0 is allowed", func(c *Config) { c.Supervisor.MaxRestarts = 0 }, "", ""},
		{"max_restarts -1", func(c *Config) { c.Supervisor.MaxRestarts = -1 },
			"supervisor.max_restarts", "must be >= 0, got -1"},
		{"restart_window negative", func(c *Config) { c.Supervisor.RestartWindow = -time.Second },
			"supervisor.restart_window", "must be a duration > 0, got -1s"},
		{"backoff_base 0", func(c *Config) { c.Supervisor.BackoffBase = 0 },
			"supervisor.backoff_base", "must be a duration > 0, got 0s"},
		{"backoff_max below base", func(c *Config) { c.Supervisor.BackoffMax = 10 * time.Millisecond },
			"supervisor.backoff_max", "must be >= supervisor.backoff_base (50ms), got 10ms"},
		{"backoff_max equal to base", func(c *Config) { c.Supervisor.BackoffMax = c.Supervisor.BackoffBase }, "", ""},
		{"buffer_limit 0", func(c *Config) { c.OpenCode.BufferLimit = 0 },
			"opencode.buffer_limit", "must be between 1 and 1000, got 0"},
		{"buffer_limit 1001", func(c *Config) { c.OpenCode.BufferLimit = 1001 },
			"opencode.buffer_limit", "must be between 1 and 1000, got 1001"},
		{"buffer_limit 1", func(c *Config) { c.OpenCode.BufferLimit = 1 }, "", ""},
		{"stale_after 0", func(c *Config) { c.OpenCode.StaleAfter = 0 },
			"opencode.stale_after", "must be a duration > 0, got 0s"},
		{"finish_grace 0 is allowed", func(c *Config) { c.OpenCode.FinishGrace = 0 }, "", ""},
		{"finish_grace negative", func(c *Config) { c.OpenCode.FinishGrace = -time.Second },
			"opencode.finish_grace", "must be >= 0, got -1s"},
		{"exit_retry_window 0", func(c *Config) { c.OpenCode.ExitRetryWindow = 0 },
			"opencode.exit_retry_window", "must be a duration > 0, got 0s"},
		{"request_timeout 0", func(c *Config) { c.OpenCode.RequestTimeout = 0 },
			"opencode.request_timeout", "must be a duration > 0, got 0s"},
		{"server without name", func(c *Config) { c.OpenCode.Servers = []Server{srv("", "http://127.0.0.1:1", "auto")} },
			"opencode.servers[0].name", "is required"},
		{"server without url", func(c *Config) { c.OpenCode.Servers = []Server{srv("a", "", "auto")} },
			"opencode.servers[0].url", "is required"},
		{"server url scheme", func(c *Config) { c.OpenCode.Servers = []Server{srv("a", "ftp://127.0.0.1:1", "auto")} },
			"opencode.servers[0].url", `must be an http(s) URL such as http://127.0.0.1:4096, got "ftp://127.0.0.1:1"`},
		{"server url without scheme", func(c *Config) { c.OpenCode.Servers = []Server{srv("a", "127.0.0.1:4096", "auto")} },
			"opencode.servers[0].url", `must be an http(s) URL, got "127.0.0.1:4096"`},
		{"server url without host", func(c *Config) { c.OpenCode.Servers = []Server{srv("a", "http:///x", "auto")} },
			"opencode.servers[0].url", `must name a host, got "http:///x"`},
		{"server api", func(c *Config) { c.OpenCode.Servers = []Server{srv("a", "http://127.0.0.1:1", "v3")} },
			"opencode.servers[0].api", `must be one of auto, v1, v2, got "v3"`},
		{"duplicate server names", func(c *Config) {
			c.OpenCode.Servers = []Server{srv("a", "http://127.0.0.1:1", "v1"), srv("a", "http://127.0.0.1:2", "v2")}
		}, "opencode.servers[1].name", `duplicate name "a", also used by opencode.servers[0]`},
		{"embedder", func(c *Config) { c.Memory.Embedder = "bert" },
			"memory.embedder", `must be one of local, openai, got "bert"`},
		{"openai complete", func(c *Config) {
			c.Memory.Embedder, c.Memory.EmbeddingsURL, c.Memory.EmbeddingsModel = "openai", "https://api.example/v1", "m"
		}, "", ""},
		{"openai without model", func(c *Config) {
			c.Memory.Embedder, c.Memory.EmbeddingsURL = "openai", "https://api.example/v1"
		}, "memory.embeddings_model", `is required when memory.embedder is "openai"`},
		{"embeddings_url not http", func(c *Config) { c.Memory.EmbeddingsURL = "grpc://x" },
			"memory.embeddings_url", `must be an http(s) URL such as http://127.0.0.1:4096, got "grpc://x"`},
		{"dedup_threshold 0", func(c *Config) { c.Memory.DedupThreshold = 0 },
			"memory.dedup_threshold", "must be > 0 and <= 1, got 0"},
		{"dedup_threshold 1 is allowed", func(c *Config) { c.Memory.DedupThreshold = 1 }, "", ""},
		{"dedup_threshold above 1", func(c *Config) { c.Memory.DedupThreshold = 1.01 },
			"memory.dedup_threshold", "must be > 0 and <= 1, got 1.01"},
		{"dedup_threshold NaN", func(c *Config) { c.Memory.DedupThreshold = math.NaN() },
			"memory.dedup_threshold", "must be > 0 and <= 1, got NaN"},
		{"memory stale_after 0", func(c *Config) { c.Memory.StaleAfter = 0 },
			"memory.stale_after", "must be a duration > 0, got 0s"},
		{"sweep interval 0", func(c *Config) { c.Sweep.Interval = 0 },
			"sweep.interval", "must be a duration > 0, got 0s"},
		{"runtime_state_ttl 0", func(c *Config) { c.Sweep.RuntimeStateTTL = 0 },
			"sweep.runtime_state_ttl", "must be a duration > 0, got 0s"},
		{"deleted_session_ttl 0", func(c *Config) { c.Sweep.DeletedSessionTTL = 0 },
			"sweep.deleted_session_ttl", "must be a duration > 0, got 0s"},
		{"strand_interval negative", func(c *Config) { c.Sweep.StrandInterval = -time.Second },
			"sweep.strand_interval", "must be a duration > 0, got -1s"},
		{"telegram token without allow-list", func(c *Config) { c.IM.Telegram.Token = "1:x" },
			"im.allowed_users", "is empty: list the chat user ids allowed in (or set im.open = true to let everyone in)"},
		{"telegram token and open", func(c *Config) { c.IM.Telegram.Token, c.IM.Open = "1:x", true }, "", ""},
		{"telegram token and users", func(c *Config) { c.IM.Telegram.Token, c.IM.AllowedUsers = "1:x", []string{"42"} }, "", ""},
		{"user id not a number", func(c *Config) { c.IM.AllowedUsers = []string{"42", "@bob"} },
			"im.allowed_users[1]", `must be a decimal user id, got "@bob"`},
		{"telegram api_url not http", func(c *Config) {
			c.IM.Telegram.Token, c.IM.Open, c.IM.Telegram.APIURL = "1:x", true, "ftp://x"
		}, "im.telegram.api_url", `must be an http(s) URL such as http://127.0.0.1:4096, got "ftp://x"`},
		{"on_close unknown", func(c *Config) { c.IM.OnClose = "close" },
			"im.on_close", `must be one of keep, kill, got "close"`},
		{"feishu app without secret", func(c *Config) { c.IM.Feishu.AppID, c.IM.Open = "cli_a", true },
			"im.feishu.app_secret", "is empty: the app's secret is needed with im.feishu.app_id"},
		{"feishu app without allow-list", func(c *Config) { c.IM.Feishu.AppID, c.IM.Feishu.AppSecret = "cli_a", "s" },
			"im.feishu.allowed_users", "is empty: list the open ids (ou_...) allowed in (or set im.open = true to let everyone in)"},
		{"feishu app and open", func(c *Config) { c.IM.Feishu.AppID, c.IM.Feishu.AppSecret, c.IM.Open = "cli_a", "s", true }, "", ""},
		{"feishu telegram's allow-list is not feishu's", func(c *Config) {
			c.IM.Feishu.AppID, c.IM.Feishu.AppSecret, c.IM.AllowedUsers = "cli_a", "s", []string{"42"}
		}, "im.feishu.allowed_users", "is empty: list the open ids (ou_...) allowed in (or set im.open = true to let everyone in)"},
		{"feishu user not an open id", func(c *Config) { c.IM.Feishu.AllowedUsers = []string{"ou_a", "42"} },
			"im.feishu.allowed_users[1]", `must be an open id (ou_...), got "42"`},
		{"feishu mode unknown", func(c *Config) { feishuApp(c); c.IM.Feishu.Mode = "poll" },
			"im.feishu.mode", `must be one of ws, webhook, got "poll"`},
		{"feishu base_url not http", func(c *Config) { feishuApp(c); c.IM.Feishu.BaseURL = "open.feishu.cn" },
			"im.feishu.base_url", `must be an http(s) URL such as http://127.0.0.1:4096, got "open.feishu.cn"`},
		{"feishu webhook without token", func(c *Config) { feishuApp(c); c.IM.Feishu.Mode = "webhook" },
			"im.feishu.verification_token", "is empty: webhook mode checks it on every event"},
		{"feishu webhook", func(c *Config) { feishuWebhook(c) }, "", ""},
		{"feishu webhook path", func(c *Config) { feishuWebhook(c); c.IM.Feishu.Path = "events" },
			"im.feishu.path", `must start with /, got "events"`},
		{"feishu webhook listen not host:port", func(c *Config) { feishuWebhook(c); c.IM.Feishu.Listen = "8080" },
			"im.feishu.listen", `must be host:port (127.0.0.1:0 picks a free port), got "8080"`},
		{"feishu webhook beyond loopback unsigned", func(c *Config) { feishuWebhook(c); c.IM.Feishu.Listen = "0.0.0.0:8080" },
			"im.feishu.listen", `is not a loopback address ("0.0.0.0:8080"): set im.feishu.encrypt_key so that every event taken is signed, or listen on 127.0.0.1 behind a proxy`},
		{"feishu webhook beyond loopback signed", func(c *Config) {
			feishuWebhook(c)
			c.IM.Feishu.Listen, c.IM.Feishu.EncryptKey = "0.0.0.0:8080", "k"
		}, "", ""},
		{"feishu webhook bad port", func(c *Config) { feishuWebhook(c); c.IM.Feishu.Listen = "127.0.0.1:99999" },
			"im.feishu.listen", `port must be a number from 0 to 65535 (0 picks a free port), got "127.0.0.1:99999"`},
		{"no roots", func(c *Config) { c.IM.Roots = nil },
			"im.roots", `is empty: the directory browser needs at least one root, such as "~"`},
		{"relative root", func(c *Config) { c.IM.Roots = []string{"~", "src"} },
			"im.roots[1]", `must be an absolute path, "~" or start with ~/, got "src"`},
		{"rename_timeout 0", func(c *Config) { c.IM.RenameTimeout = 0 },
			"im.rename_timeout", "must be a duration > 0, got 0s"},
		{"send_timeout 0", func(c *Config) { c.IM.Telegram.SendTimeout = 0 },
			"im.telegram.send_timeout", "must be a duration > 0, got 0s"},
		{"tmux socket with a slash", func(c *Config) { c.IM.Tmux.Socket = "a/b" },
			"im.tmux.socket", `must be a non-empty name without '/', ':', '.' or control characters, got "a/b"`},
		{"agent without launch", func(c *Config) { c.IM.Agents.Codex.Launch = " " },
			"im.agents.codex.launch", "is empty: name the command that starts codex"},
		{"resume without placeholder", func(c *Config) { c.IM.Agents.Claude.Resume = "claude -c" },
			"im.agents.claude.resume", `must contain {session_id} (or be empty), got "claude -c"`},
		{"detect not a regexp", func(c *Config) { c.IM.Agents.Mimo.Detect = "(" },
			"im.agents.mimo.detect", `must be a regexp that recognizes mimo, got "("`},
		{"adopt sockets: names and paths", func(c *Config) { c.IM.Tmux.AdoptSockets = []string{"default", "/tmp/tmux-0/work"} }, "", ""},
		{"adopt socket: relative path", func(c *Config) { c.IM.Tmux.AdoptSockets = []string{"tmp/work"} },
			"im.tmux.adopt_sockets", `must be socket names or absolute paths, got the relative path "tmp/work"`},
		{"adopt socket: thatch's own", func(c *Config) { c.IM.Tmux.AdoptSockets = []string{"thatch"} },
			"im.tmux.adopt_sockets", `lists "thatch" twice, or thatch's own socket (im.tmux.socket)`},
		{"adopt socket: empty", func(c *Config) { c.IM.Tmux.AdoptSockets = []string{""} },
			"im.tmux.adopt_sockets", `must be socket names or absolute paths, got ""`},
		{"cluster on loopback", func(c *Config) {
			c.Cluster.Node, c.Cluster.Routes = "box-1", []string{"nats-route://127.0.0.1:6251", "nats-route://localhost:6252"}
		}, "", ""},
		{"cluster node name", func(c *Config) { c.Cluster.Node = "box 1" },
			"cluster.node", `must be 1 to 64 letters, digits, - or _, got "box 1"`},
		{"cluster listener off loopback, open", func(c *Config) { c.Cluster.Node, c.Cluster.Listen, c.Cluster.Token = "a", "0.0.0.0:6250", "t" },
			"cluster.tls_cert", "is required (with tls_key and tls_ca) when the cluster's listener or a route is off loopback"},
		{"cluster route off loopback without a token", func(c *Config) {
			c.Cluster.Node, c.Cluster.Routes = "a", []string{"nats-route://10.0.0.2:6250"}
			c.Cluster.TLSCert, c.Cluster.TLSKey, c.Cluster.TLSCA = "/c", "/k", "/ca"
		}, "cluster.token", "is required when the cluster's listener or a route is off loopback"},
		{"cluster off loopback, secured", func(c *Config) {
			c.Cluster.Node, c.Cluster.Listen, c.Cluster.Token = "a", "10.0.0.1:6250", "t"
			c.Cluster.TLSCert, c.Cluster.TLSKey, c.Cluster.TLSCA = "/c", "/k", "/ca"
		}, "", ""},
		{"cluster route with credentials", func(c *Config) { c.Cluster.Node, c.Cluster.Routes = "a", []string{"nats-route://u:pw@127.0.0.1:1"} },
			"cluster.routes[0]", `must not hold credentials (set cluster.token), got "nats-route://u:xxxxx@127.0.0.1:1"`},
		{"cluster replicas over the nodes", func(c *Config) { c.Cluster.Node, c.Cluster.Replicas = "a", 3 },
			"cluster.replicas", "must be at most the number of nodes (1 with these routes), got 3"},
		{"cluster off: nothing checked", func(c *Config) { c.Cluster.Listen = "0.0.0.0:1" }, "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := valid(t)
			tc.mutate(c)
			err := c.Validate()
			if tc.key == "" {
				if err != nil {
					t.Fatalf("want valid, got %v", err)
				}
				return
			}
			var ve *ValidationError
			if !errors.As(err, &ve) || len(ve.Problems) != 1 {
				t.Fatalf("want exactly one problem, got %v", err)
			}
			if got, want := ve.Problems[0].Error(), tc.key+": "+tc.msg; got != want {
				t.Errorf("got  %s\nwant %s", got, want)
			}
		})
	}
}

func TestOpenAIWithoutURLAndModelReportsBoth(t *testing.T) {
	c := valid(t)
	c.Memory.Embedder = EmbedderOpenAI
	got := problemKeys(t, c.Validate())
	if want := []string{"memory.embeddings_model", "memory.embeddings_url"}; !slices.Equal(got, want) {
		t.Errorf("problems %v, want %v", got, want)
	}
}

func TestRedactRules(t *testing.T) {
	c := valid(t)
	c.Memory.Redact.Disable = []string{"jwt", "env_secret"}
	c.Memory.Redact.Patterns = []string{`acme=acme_(?P<secret>[a-z0-9]{12})`, "pin = PIN [0-9]{4}"}
	if err := c.Validate(); err != nil {
		t.Fatalf("valid rules refused: %v", err)
	}
	for _, tc := range []struct {
		disable, pattern string
		want             []string
	}{
		{"nope", "", []string{"memory.redact.disable"}},
		{"", "no-equals-sign", []string{"memory.redact.patterns"}},
		{"", "a b=x", []string{"memory.redact.patterns"}},
		{"", "k=(", []string{"memory.redact.patterns"}},
		{"", "k=x*", []string{"memory.redact.patterns"}},
		{"jwt2", "=x", []string{"memory.redact.disable", "memory.redact.patterns"}},
	} {
		c := valid(t)
		if tc.disable != "" {
			c.Memory.Redact.Disable = []string{tc.disable}
		}
		if tc.pattern != "" {
			c.Memory.Redact.Patterns = []string{tc.pattern}
		}
		if got := problemKeys(t, c.Validate()); !slices.Equal(got, tc.want) {
			t.Errorf("disable %q, pattern %q: problems %v, want %v", tc.disable, tc.pattern, got, tc.want)
		}
	}
}

// TestEveryProblemAtOnce loads a file, environment and flags that are wrong
// in many ways and expects one error naming each problem, and nothing else.
func TestEveryProblemAtOnce(t *testing.T) {
	file := `
[log]
level = "loud"
levle = "debug"
[journal]
snapshot_every = 0
cache_size_mb = "lots"
[bogus]
x = 1
[opencode]
stale_after = 900
[[opencode.servers]]
name = "a"
url = "ftp://127.0.0.1:1"
pasword = "p"
[[opencode.servers]]
name = "a"
url = "http://127.0.0.1:2"
`
	o := isolated(t)
	o.File = writeFile(t, t.TempDir(), "c.toml", file)
	o.Env = []string{
		"THATCH_LOG_LEVL=debug",
		"THATCH_CONTROL_LISTEN=0.0.0.0:80",
		"THATCH_SUPERVISOR_BACKOFF_MAX=10ms",
		"THATCH_SWEEP_INTERVAL=soon",
		"THATCH_OPENCODE_SERVERS=x",
		"THATCH_CONFIG=",
		"PATH=/bin",
	}
	c, err := Load(o)
	if c == nil {
		t.Fatal("Load must return the config along with validation problems")
	}
	wantKeys := []string{
		"THATCH_LOG_LEVL",
		"THATCH_OPENCODE_SERVERS",
		"bogus.x",
		"control.listen",
		"journal.cache_size_mb",
		"journal.snapshot_every",
		"log.level",
		"log.levle",
		"opencode.servers[0].pasword",
		"opencode.servers[0].url",
		"opencode.servers[1].name",
		"opencode.stale_after",
		"supervisor.backoff_max",
		"sweep.interval",
	}
	if got := problemKeys(t, err); !slices.Equal(got, wantKeys) {
		t.Errorf("problems:\n%v\nwant:\n%v\nerror:\n%v", got, wantKeys, err)
	}
	text := err.Error()
	for _, frag := range []string{
		`log.levle: unknown key`,
		`THATCH_LOG_LEVL: unknown environment variable`,
		`THATCH_OPENCODE_SERVERS: opencode.servers can only be set in a config file`,
		`control.listen: must be a loopback address (127.0.0.1:port), got "0.0.0.0:80"`,
		`journal.cache_size_mb: must be an integer, got "lots"`,
		`opencode.stale_after: must be a duration string such as "15m" or "10s", got a number 900`,
		`sweep.interval: must be a duration such as "15m" or "10s", got "soon"`,
		"(14 problems)",
	} {
		if !strings.Contains(text, frag) {
			t.Errorf("error lacks %q:\n%s", frag, text)
		}
	}
}

func TestWrongTypesKeepDefaults(t *testing.T) {
	o := isolated(t)
	o.File = writeFile(t, t.TempDir(), "c.yaml", "journal:\n  snapshot_every: 2.5\nlog:\n  level: [a]\nmemory:\n  dedup_threshold: high\n")
	c, err := Load(o)
	if got, want := problemKeys(t, err), []string{"journal.snapshot_every", "log.level", "memory.dedup_threshold"}; !slices.Equal(got, want) {
		t.Errorf("problems %v, want %v", got, want)
	}
	want(t, "journal.snapshot_every", c.Journal.SnapshotEvery, 100)
	want(t, "log.level", c.Log.Level, "info")
}

func TestEmptySectionsAreNotUnknown(t *testing.T) {
	for name, body := range map[string]string{
		"c.toml": "[log]\n[memory]\n",
		"c.yaml": "log:\nmemory: {}\n",
	} {
		o := isolated(t)
		o.File = writeFile(t, t.TempDir(), name, body)
		if _, err := Load(o); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestSecretsStayHidden puts secrets in every place they can come from,
// breaks the config in many ways, and looks for the secrets everywhere the
// config or its errors are shown.
func TestSecretsStayHidden(t *testing.T) {
	secrets := []string{"pw-from-file", "pw-from-opencode-env", "sk-from-thatch-env", "urlpass", "98765432", "sk-misnamed"}
	file := `
[memory]
embedder = "openai"
embeddings_url = "ftp://bob:urlpass@emb.example/v1"
[[opencode.servers]]
name = "a"
url = "http://127.0.0.1:1"
password = "pw-from-file"
[[opencode.servers]]
name = "b"
url = "http://127.0.0.1:2"
[[opencode.servers]]
name = "c"
url = "http://127.0.0.1:3"
password = 98765432
`
	o := isolated(t)
	o.File = writeFile(t, t.TempDir(), "c.toml", file)
	o.Env = []string{
		"OPENCODE_SERVER_PASSWORD=pw-from-opencode-env",
		"THATCH_MEMORY_EMBEDDINGS_API_KEY=sk-from-thatch-env",
		"THATCH_MEMORY_API_KEY=sk-misnamed",
		"THATCH_LOG_LEVEL=nope",
	}
	c, err := Load(o)
	if err == nil || c == nil {
		t.Fatalf("want a config and an error, got %v, %v", c, err)
	}
	// The secrets were loaded: otherwise the checks below prove nothing.
	if c.OpenCode.Servers[0].Password.Reveal() != "pw-from-file" ||
		c.OpenCode.Servers[1].Password.Reveal() != "pw-from-opencode-env" ||
		c.Memory.EmbeddingsAPIKey.Reveal() != "sk-from-thatch-env" {
		t.Fatalf("secrets not loaded: %q %q %q", c.OpenCode.Servers[0].Password.Reveal(),
			c.OpenCode.Servers[1].Password.Reveal(), c.Memory.EmbeddingsAPIKey.Reveal())
	}
	for _, key := range []string{"THATCH_MEMORY_API_KEY", "memory.embeddings_url", "opencode.servers[2].password", "log.level"} {
		if !strings.Contains(err.Error(), key+": ") {
			t.Errorf("error does not name %s:\n%v", key, err)
		}
	}
	js, _ := json.Marshal(c.Redacted())
	shown := map[string]string{
		"error":      err.Error(),
		"Redacted":   fmt.Sprint(c.Redacted()) + string(js),
		"fmt config": fmt.Sprintf("%v %+v %#v", c, *c, *c),
	}
	for where, text := range shown {
		for _, s := range secrets {
			// A password inside a URL is masked where thatch shows the
			// config, but the URL field itself is not a Secret.
			if where == "fmt config" && s == "urlpass" {
				continue
			}
			if strings.Contains(text, s) {
				t.Errorf("%s shows secret %q:\n%s", where, s, text)
			}
		}
	}
	r := c.Redacted()
	servers := r["opencode"].(map[string]any)["servers"].([]any)
	if got := servers[0].(map[string]any)["password"]; got != RedactedValue {
		t.Errorf("server password shown as %v", got)
	}
	if got := r["memory"].(map[string]any)["embeddings_api_key"]; got != RedactedValue {
		t.Errorf("api key shown as %v", got)
	}
	if got := r["memory"].(map[string]any)["embeddings_url"]; got != "ftp://bob:xxxxx@emb.example/v1" {
		t.Errorf("url shown as %v", got)
	}
}

// TestImports enforces the package's import rule from DESIGN.md.
func TestImports(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, name, src, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			first, _, _ := strings.Cut(path, "/")
			switch {
			case !strings.Contains(first, "."): // standard library
			case strings.HasPrefix(path, "github.com/knadh/koanf/"):
			case path == "github.com/spf13/pflag":
			default:
				t.Errorf("%s imports %s; config may import koanf, pflag and the standard library only", name, path)
			}
		}
	}
}

func TestMisshapenTables(t *testing.T) {
	cases := map[string]struct {
		body string
		want []string
	}{
		"section as scalar": {"log = \"debug\"\n", []string{"log"}},
		"servers as a single table": {
			"[opencode.servers]\nname = \"a\"\nurl = \"http://127.0.0.1:1\"\n",
			[]string{"opencode.servers"},
		},
		"server as scalar": {"[opencode]\nservers = [\"a\"]\n", []string{"opencode.servers[0]"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			o := isolated(t)
			o.File = writeFile(t, t.TempDir(), "c.toml", tc.body)
			_, err := Load(o)
			if got := problemKeys(t, err); !slices.Equal(got, tc.want) {
				t.Errorf("problems %v, want %v (%v)", got, tc.want, err)
			}
		})
	}
}

func feishuApp(c *Config) {
	c.IM.Feishu.AppID, c.IM.Feishu.AppSecret, c.IM.Feishu.AllowedUsers = "cli_a", "s", []string{"ou_a"}
}

func feishuWebhook(c *Config) {
	feishuApp(c)
	c.IM.Feishu.Mode, c.IM.Feishu.VerificationToken = "webhook", "v"
}
