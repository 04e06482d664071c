package config

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// ErrInvalid is matched (errors.Is) by every error Validate returns.
var ErrInvalid = errors.New("config: invalid configuration")

// FieldError is one problem with the configuration. Key names what the user
// must fix: a config key such as "control.listen", an element such as
// "opencode.servers[1].url", or an environment variable such as
// "THATCH_LOG_LEVL". Msg never contains the value of a secret.
type FieldError struct {
	Key string
	Msg string
}

// Error returns "key: message".
func (e *FieldError) Error() string { return e.Key + ": " + e.Msg }

// ValidationError carries every problem Validate found, so that one run of
// `thatch check-config` shows them all. It matches ErrInvalid, and
// errors.As finds each *FieldError.
type ValidationError struct {
	Problems []*FieldError
}

// Error lists every problem, one per line after a summary line.
func (e *ValidationError) Error() string {
	var b strings.Builder
	n := len(e.Problems)
	fmt.Fprintf(&b, "%s (%d problem", ErrInvalid.Error(), n)
	if n != 1 {
		b.WriteString("s")
	}
	b.WriteString("):")
	for _, p := range e.Problems {
		b.WriteString("\n  ")
		b.WriteString(p.Error())
	}
	return b.String()
}

// Is makes errors.Is(err, ErrInvalid) hold.
func (e *ValidationError) Is(target error) bool { return target == ErrInvalid }

// Unwrap exposes each problem to errors.As.
func (e *ValidationError) Unwrap() []error {
	out := make([]error, len(e.Problems))
	for i, p := range e.Problems {
		out[i] = p
	}
	return out
}

// Validate reports every problem at once, as a *ValidationError, or returns
// nil. It includes what Load found while reading (unknown keys and
// variables, values of the wrong type) and then checks each value's range.
// Paths must already be resolved (Load does it; see ResolvePaths).
func (c *Config) Validate() error {
	v := &validator{problems: slices.Clone(c.problems)}

	v.path("data.dir", c.Data.Dir, "set it, or set XDG_DATA_HOME or HOME to derive it")
	v.oneOf("log.level", c.Log.Level, "trace", "debug", "info", "warn", "error")
	v.oneOf("log.format", c.Log.Format, "text", "json")

	v.loopback("control.listen", c.Control.Listen)
	v.path("control.token_file", c.Control.TokenFile, "set it or data.dir")
	v.path("control.state_file", c.Control.StateFile, "set it or data.dir")
	if c.Control.TokenFile != "" && filepath.Clean(c.Control.TokenFile) == filepath.Clean(c.Control.StateFile) {
		v.add("control.state_file", "must differ from control.token_file, both are %q", c.Control.StateFile)
	}

	v.atLeast("journal.snapshot_every", c.Journal.SnapshotEvery, 1)
	v.atLeast("journal.cache_size_mb", c.Journal.CacheSizeMB, 1)

	v.positive("actors.passivate_after", c.Actors.PassivateAfter)

	v.atLeast("supervisor.max_restarts", c.Supervisor.MaxRestarts, 0)
	v.positive("supervisor.restart_window", c.Supervisor.RestartWindow)
	v.positive("supervisor.backoff_base", c.Supervisor.BackoffBase)
	if c.Supervisor.BackoffMax < c.Supervisor.BackoffBase {
		v.add("supervisor.backoff_max", "must be >= supervisor.backoff_base (%s), got %s",
			formatDuration(c.Supervisor.BackoffBase), formatDuration(c.Supervisor.BackoffMax))
	}

	if n := c.OpenCode.BufferLimit; n < 1 || n > 1000 {
		v.add("opencode.buffer_limit", "must be between 1 and 1000, got %d", n)
	}
	v.positive("opencode.stale_after", c.OpenCode.StaleAfter)
	if d := c.OpenCode.FinishGrace; d < 0 {
		v.add("opencode.finish_grace", "must be >= 0, got %s", formatDuration(d))
	}
	v.positive("opencode.exit_retry_window", c.OpenCode.ExitRetryWindow)
	v.positive("opencode.request_timeout", c.OpenCode.RequestTimeout)
	v.servers(c.OpenCode.Servers, c.serverKey)

	v.oneOf("memory.embedder", c.Memory.Embedder, EmbedderLocal, EmbedderOpenAI)
	if c.Memory.EmbeddingsURL != "" {
		v.httpURL("memory.embeddings_url", c.Memory.EmbeddingsURL)
	}
	if c.Memory.Embedder == EmbedderOpenAI {
		if c.Memory.EmbeddingsURL == "" {
			v.add("memory.embeddings_url", "is required when memory.embedder is %q", EmbedderOpenAI)
		}
		if c.Memory.EmbeddingsModel == "" {
			v.add("memory.embeddings_model", "is required when memory.embedder is %q", EmbedderOpenAI)
		}
	}
	if t := c.Memory.DedupThreshold; !(t > 0 && t <= 1) { // also rejects NaN
		v.add("memory.dedup_threshold", "must be > 0 and <= 1, got %v", t)
	}
	v.positive("memory.stale_after", c.Memory.StaleAfter)
	if n := c.Memory.DailyBudgetTokens; n < 0 {
		v.add("memory.daily_budget_tokens", "must be >= 0 (0: no budget), got %d", n)
	}
	v.positive("memory.idle_after", c.Memory.IdleAfter)
	switch c.Memory.Extractor {
	case "", "claude", "codex", "off":
	default:
		v.add("memory.extractor", "must be \"\" (the same agent), claude, codex or off, got %q", c.Memory.Extractor)
	}
	v.redact(&c.Memory.Redact)

	v.positive("sweep.interval", c.Sweep.Interval)
	v.positive("sweep.runtime_state_ttl", c.Sweep.RuntimeStateTTL)
	v.positive("sweep.deleted_session_ttl", c.Sweep.DeletedSessionTTL)
	v.positive("sweep.strand_interval", c.Sweep.StrandInterval)

	v.im(&c.IM)
	v.cluster(&c.Cluster)

	if len(v.problems) == 0 {
		return nil
	}
	return &ValidationError{Problems: v.problems}
}

// validator collects problems in the order of the keys.
type validator struct {
	problems []*FieldError
}

func (v *validator) add(key, format string, args ...any) {
	v.problems = append(v.problems, &FieldError{Key: key, Msg: fmt.Sprintf(format, args...)})
}

func (v *validator) oneOf(key, got string, allowed ...string) {
	if !slices.Contains(allowed, got) {
		v.add(key, "must be one of %s, got %q", strings.Join(allowed, ", "), got)
	}
}

func (v *validator) atLeast(key string, got, min int) {
	if got < min {
		v.add(key, "must be >= %d, got %d", min, got)
	}
}

func (v *validator) positive(key string, got time.Duration) {
	if got <= 0 {
		v.add(key, "must be a duration > 0, got %s", formatDuration(got))
	}
}

func (v *validator) path(key, got, hint string) {
	switch {
	case got == "":
		v.add(key, "is empty and could not be derived; %s", hint)
	case !filepath.IsAbs(got):
		v.add(key, "must be an absolute path or start with ~/, got %q", got)
	}
}

func (v *validator) loopback(key, got string) {
	host, port, err := net.SplitHostPort(got)
	if err != nil || !IsLoopbackHost(host) {
		v.add(key, "must be a loopback address (127.0.0.1:port), got %q", got)
		return
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		v.add(key, "port must be a number from 0 to 65535 (0 picks a free port), got %q", got)
	}
}

// IsLoopbackHost reports whether host (no port) names this machine's
// loopback interface: "localhost" in any case, or a loopback IP address.
// It is the one loopback check: check-config and the control server use
// it alike, so that what one accepts the other serves.
func IsLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func (v *validator) httpURL(key, got string) {
	u, err := url.Parse(got)
	switch {
	case err != nil:
		v.add(key, "must be an http(s) URL, got %q", RedactURL(got))
	case u.Scheme != "http" && u.Scheme != "https":
		v.add(key, "must be an http(s) URL such as http://127.0.0.1:4096, got %q", RedactURL(got))
	case u.Host == "":
		v.add(key, "must name a host, got %q", RedactURL(got))
	}
}

// im checks the IM section. The allow-list and the Bot API URL matter only
// when the front end runs (a token is set); the rest always holds.
func (v *validator) im(c *IM) {
	if c.Telegram.Token != "" {
		if len(c.AllowedUsers) == 0 && !c.Open {
			v.add("im.allowed_users", "is empty: list the chat user ids allowed in (or set im.open = true to let everyone in)")
		}
		v.httpURL("im.telegram.api_url", c.Telegram.APIURL)
	}
	for i, u := range c.AllowedUsers {
		if _, err := strconv.ParseInt(u, 10, 64); err != nil {
			v.add(fmt.Sprintf("im.allowed_users[%d]", i), "must be a decimal user id, got %q", u)
		}
	}
	if len(c.Roots) == 0 {
		v.add("im.roots", "is empty: the directory browser needs at least one root, such as \"~\"")
	}
	for i, r := range c.Roots {
		if r != "~" && !strings.HasPrefix(r, "~/") && !filepath.IsAbs(r) {
			v.add(fmt.Sprintf("im.roots[%d]", i), "must be an absolute path, \"~\" or start with ~/, got %q", r)
		}
	}
	v.positive("im.rename_timeout", c.RenameTimeout)
	v.oneOf("im.on_close", c.OnClose, OnCloseKeep, OnCloseKill)
	v.oneOf("im.live", c.Live, LiveTurn, LiveOff)
	v.positive("im.live_every", c.LiveEvery)
	v.positive("im.board_interval", c.BoardInterval)
	for _, p := range c.Prices {
		if _, _, err := ParsePrice(p); err != nil {
			v.add("im.prices", "%v", err)
		}
	}
	if c.AlertAfter < 0 {
		v.add("im.alert_after", "must be >= 0 (0: never), got %v", c.AlertAfter)
	}
	if c.InboxDir == "" || strings.ContainsAny(c.InboxDir, "\x00\n") {
		v.add("im.inbox_dir", "must be a directory (relative to the binding's, or absolute), got %q", c.InboxDir)
	}
	if strings.ContainsAny(c.Transcribe, "\x00\n") {
		v.add("im.transcribe", "must be one command line, got %q", c.Transcribe)
	}
	if c.MaxFileMB < 0 {
		v.add("im.max_file_mb", "must be >= 0 (0: the platform's limit), got %d", c.MaxFileMB)
	}
	v.feishu(&c.Feishu, c.Open)
	v.positive("im.telegram.send_timeout", c.Telegram.SendTimeout)
	v.positive("im.telegram.chat_interval", c.Telegram.ChatInterval)
	v.atLeast("im.telegram.group_per_minute", c.Telegram.GroupPerMinute, 0)
	v.imTmux(&c.Tmux)
	v.imAgents(c)
}

// imTmux checks im.tmux: thatch's own socket and session, and the
// sockets it adopts windows from.
func (v *validator) imTmux(t *Tmux) {
	for key, val := range map[string]string{"im.tmux.socket": t.Socket, "im.tmux.session": t.Session} {
		if val == "" || strings.ContainsAny(val, "/:.\x00\n") {
			v.add(key, "must be a non-empty name without '/', ':', '.' or control characters, got %q", val)
		}
	}
	seen := map[string]bool{t.Socket: true}
	for _, sock := range t.AdoptSockets {
		switch {
		case strings.ContainsAny(sock, "\x00\n\r\t"):
			v.add("im.tmux.adopt_sockets", "must be socket names or absolute paths without control characters, got %q", sock)
		case strings.ContainsRune(sock, '/') && !filepath.IsAbs(sock):
			v.add("im.tmux.adopt_sockets", "must be socket names or absolute paths, got the relative path %q", sock)
		case sock == "":
			v.add("im.tmux.adopt_sockets", "must be socket names or absolute paths, got %q", sock)
		case seen[sock]:
			v.add("im.tmux.adopt_sockets", "lists %q twice, or thatch's own socket (im.tmux.socket)", sock)
		}
		seen[sock] = true
	}
}

// imAgents checks each agent of im.agents.
func (v *validator) imAgents(c *IM) {
	for _, a := range c.Agents.ByName() {
		key := "im.agents." + a.Name
		if strings.TrimSpace(a.Launch) == "" {
			v.add(key+".launch", "is empty: name the command that starts %s", a.Name)
		}
		if a.Resume != "" && !strings.Contains(a.Resume, "{session_id}") {
			v.add(key+".resume", "must contain {session_id} (or be empty), got %q", a.Resume)
		}
		if _, err := regexp.Compile(a.Detect); err != nil || a.Detect == "" {
			v.add(key+".detect", "must be a regexp that recognizes %s, got %q", a.Name, a.Detect)
		}
		if a.Input != "" && a.Input != InputOff {
			if re, err := regexp.Compile(a.Input); err != nil || re.NumSubexp() > 1 {
				v.add(key+".input", "must be a regexp with at most one group, or %q, got %q", InputOff, a.Input)
			}
		}
		v.prompt(key, a.Agent)
		v.keys(key, a.Agent)
		v.mode(key, a.Name, a.Mode)
	}
}

// slashCommand is an agent's slash command as Agent.Mode names it.
var slashCommand = regexp.MustCompile(`^/[a-z][a-z0-9_-]*$`)

// mode checks an agent's mode setting; only claude's footer is read, so
// only claude can cycle.
func (v *validator) mode(key, agent, mode string) {
	switch {
	case mode == ModeOff || slashCommand.MatchString(mode):
	case mode == ModeCycle && agent == "claude":
	case mode == ModeCycle:
		v.add(key+".mode", "cannot be %q: thatch reads the mode only from claude's footer; use a slash command or %q", ModeCycle, ModeOff)
	default:
		v.add(key+".mode", "must be %q, %q or a slash command such as /approvals, got %q", ModeCycle, ModeOff, mode)
	}
}

// PromptGroups are the named groups an Agent.PromptOption must have: the
// option's number, its label, and the cursor that marks the selected one.
var PromptGroups = []string{"n", "label", "cursor"}

// CheckPromptOption reports why expr cannot be an Agent.PromptOption: it
// does not compile, or lacks one of PromptGroups.
func CheckPromptOption(expr string) error {
	re, err := regexp.Compile(expr)
	if err != nil {
		return err
	}
	for _, g := range PromptGroups {
		if re.SubexpIndex(g) < 0 {
			return fmt.Errorf("no group (?P<%s>...)", g)
		}
	}
	return nil
}

var promptPlaceholder = regexp.MustCompile(`\{[^{}]*\}`)

// CheckPromptKeys reports why tmpl cannot be an Agent.PromptKeys: it names
// no key, or holds a placeholder other than {n} and {key}.
func CheckPromptKeys(tmpl string) error {
	if strings.TrimSpace(tmpl) == "" {
		return errors.New("names no key")
	}
	for _, p := range promptPlaceholder.FindAllString(tmpl, -1) {
		if p != "{n}" && p != "{key}" {
			return fmt.Errorf("unknown placeholder %s (known: {n}, {key})", p)
		}
	}
	return nil
}

// tmuxKey is one tmux key name as the key commands take them ("Escape",
// "C-c", "M-Enter", "q", "F5").
var tmuxKey = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9-]*$`)

// keys checks an agent's keys_* settings: tmux key names.
func (v *validator) keys(key string, a Agent) {
	for _, f := range []struct{ key, keys string }{{".keys_esc", a.KeysEsc}, {".keys_interrupt", a.KeysInterrupt}, {".keys_enter", a.KeysEnter}} {
		words := strings.Fields(f.keys)
		ok := len(words) > 0
		for _, w := range words {
			ok = ok && tmuxKey.MatchString(w)
		}
		if !ok {
			v.add(key+f.key, "must be tmux key names separated by spaces (Escape, C-c, Enter), got %q", f.keys)
		}
	}
}

// prompt checks an agent's prompt_* keys, unless prompt_option is "off".
func (v *validator) prompt(key string, a Agent) {
	if a.PromptOption == PromptOff {
		return
	}
	if err := CheckPromptOption(a.PromptOption); err != nil {
		v.add(key+".prompt_option", "must be a regexp with groups (?P<n>), (?P<label>) and (?P<cursor>), or %q, got %q: %v", PromptOff, a.PromptOption, err)
	}
	if re, err := regexp.Compile(a.PromptQuestion); err != nil || re.NumSubexp() > 1 || a.PromptQuestion == "" {
		v.add(key+".prompt_question", "must be a regexp with at most one group, got %q", a.PromptQuestion)
	}
	for _, f := range []struct{ key, expr string }{{".prompt_top", a.PromptTop}, {".prompt_ignore", a.PromptIgnore}} {
		if _, err := regexp.Compile(f.expr); err != nil {
			v.add(key+f.key, "must be a regexp or empty, got %q: %v", f.expr, err)
		}
	}
	if err := CheckPromptKeys(a.PromptKeys); err != nil {
		v.add(key+".prompt_keys", "must be tmux keys separated by spaces, got %q: %v", a.PromptKeys, err)
	}
}

// feishu checks [im.feishu] when the adapter runs (app_id is set).
func (v *validator) feishu(c *Feishu, open bool) {
	for i, u := range c.AllowedUsers {
		if !strings.HasPrefix(u, "ou_") {
			v.add(fmt.Sprintf("im.feishu.allowed_users[%d]", i), "must be an open id (ou_...), got %q", u)
		}
	}
	if c.AppID == "" {
		return
	}
	if c.AppSecret == "" {
		v.add("im.feishu.app_secret", "is empty: the app's secret is needed with im.feishu.app_id")
	}
	if len(c.AllowedUsers) == 0 && !open {
		v.add("im.feishu.allowed_users", "is empty: list the open ids (ou_...) allowed in (or set im.open = true to let everyone in)")
	}
	v.httpURL("im.feishu.base_url", c.BaseURL)
	v.oneOf("im.feishu.mode", c.Mode, FeishuModeWS, FeishuModeWebhook)
	if c.Mode != FeishuModeWebhook {
		return
	}
	if c.VerificationToken == "" {
		v.add("im.feishu.verification_token", "is empty: webhook mode checks it on every event")
	}
	if !strings.HasPrefix(c.Path, "/") {
		v.add("im.feishu.path", "must start with /, got %q", c.Path)
	}
	host, port, err := net.SplitHostPort(c.Listen)
	switch {
	case err != nil:
		v.add("im.feishu.listen", "must be host:port (127.0.0.1:0 picks a free port), got %q", c.Listen)
	case !IsLoopbackHost(host) && c.EncryptKey == "":
		v.add("im.feishu.listen", "is not a loopback address (%q): set im.feishu.encrypt_key so that every event taken is signed, or listen on 127.0.0.1 behind a proxy", c.Listen)
	}
	if err == nil {
		if _, err := strconv.ParseUint(port, 10, 16); err != nil {
			v.add("im.feishu.listen", "port must be a number from 0 to 65535 (0 picks a free port), got %q", c.Listen)
		}
	}
}

// serverKey is the key of OpenCode.Servers[i] in problems (see serverKeys).
func (c *Config) serverKey(i int) string {
	if len(c.serverKeys) == len(c.OpenCode.Servers) {
		return c.serverKeys[i]
	}
	return fmt.Sprintf("opencode.servers[%d]", i)
}

func (v *validator) servers(servers []Server, keyOf func(int) string) {
	seen := map[string]string{}
	for i, s := range servers {
		at := keyOf(i)
		if s.Name == "" {
			v.add(at+".name", "is required")
		} else if first, dup := seen[s.Name]; dup {
			v.add(at+".name", "duplicate name %q, also used by %s", s.Name, first)
		} else {
			seen[s.Name] = at
		}
		if s.URL == "" {
			v.add(at+".url", "is required")
		} else {
			v.httpURL(at+".url", s.URL)
		}
		v.oneOf(at+".api", s.API, APIAuto, APIV1, APIV2)
	}
}

// formatDuration writes a duration as people write it in config files:
// "5m", not "5m0s".
func formatDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// RedactKinds are the built-in secret kinds memory.redact.disable may
// name. They are the redactor's (internal/redact.Kinds), which config may
// not import; the opencode front end's tests keep the two lists equal.
var RedactKinds = []string{"private_key", "aws_access_key", "aws_secret_key", "gcp_api_key",
	"gcp_service_account", "azure_storage_key", "github_token", "gitlab_token", "slack_token",
	"slack_webhook", "stripe_key", "anthropic_key", "openai_key", "huggingface_token", "npm_token",
	"sendgrid_key", "jwt", "url_credentials", "bearer_token", "password", "token", "env_secret"}

// redactKindRE is what an extra pattern's kind may be made of.
var redactKindRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// redact checks [memory.redact]: every disabled kind is a built-in one and
// every pattern is "kind=regexp" with a kind of letters, digits, '_' and
// '-' and a regexp that compiles and matches no empty string.
func (v *validator) redact(r *Redact) {
	for _, k := range r.Disable {
		if !slices.Contains(RedactKinds, k) {
			v.add("memory.redact.disable", "names %q, which is no secret kind (known: %s)", k, strings.Join(RedactKinds, ", "))
		}
	}
	for _, p := range r.Patterns {
		kind, pattern, ok := RedactRule(p)
		if !ok || !redactKindRE.MatchString(kind) {
			v.add("memory.redact.patterns", "must hold kind=regexp entries (a kind of letters, digits, '_' or '-'), got %q", p)
			continue
		}
		re, err := regexp.Compile(pattern)
		switch {
		case err != nil:
			v.add("memory.redact.patterns", "%q: %v", p, err)
		case re.MatchString(""):
			v.add("memory.redact.patterns", "%q matches the empty string", p)
		}
	}
}

// clusterNode is what a node may be called: a NATS subject token and a
// bucket key.
var clusterNode = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// cluster checks the cluster section. Off loopback, the routes carry
// every chat message between machines: they must be encrypted and
// closed to strangers, so TLS (certificate, key and CA) and a token are
// required.
func (v *validator) cluster(c *Cluster) {
	if !c.Enabled() {
		return
	}
	if !clusterNode.MatchString(c.Node) {
		v.add("cluster.node", "must be 1 to 64 letters, digits, - or _, got %q", c.Node)
	}
	open := false
	host, port, err := net.SplitHostPort(c.Listen)
	if err != nil {
		v.add("cluster.listen", "must be host:port, got %q", c.Listen)
	} else {
		if n, err := strconv.ParseUint(port, 10, 16); err != nil || n == 0 {
			v.add("cluster.listen", "port must be a number from 1 to 65535 (the others route to it), got %q", c.Listen)
		}
		open = !IsLoopbackHost(host)
	}
	for i, r := range c.Routes {
		key := fmt.Sprintf("cluster.routes[%d]", i)
		u, err := url.Parse(r)
		if err != nil || u.Scheme != "nats-route" || u.Port() == "" {
			v.add(key, "must be a URL like nats-route://host:port, got %q", r)
			continue
		}
		if u.User != nil {
			v.add(key, "must not hold credentials (set cluster.token), got %q", RedactURL(r))
		}
		open = open || !IsLoopbackHost(u.Hostname())
	}
	if c.Replicas < 0 || c.Replicas > 5 {
		v.add("cluster.replicas", "must be between 0 (automatic) and 5, got %d", c.Replicas)
	} else if c.Replicas > len(c.Routes)+1 {
		v.add("cluster.replicas", "must be at most the number of nodes (%d with these routes), got %d", len(c.Routes)+1, c.Replicas)
	}
	if c.LeaseTTL < time.Second {
		v.add("cluster.lease_ttl", "must be at least 1s, got %s", formatDuration(c.LeaseTTL))
	}
	tlsSet := 0
	for _, f := range []string{c.TLSCert, c.TLSKey, c.TLSCA} {
		if f != "" {
			tlsSet++
		}
	}
	if tlsSet != 0 && tlsSet != 3 {
		v.add("cluster.tls_cert", "cluster.tls_cert, tls_key and tls_ca go together: set all three or none")
	}
	if open {
		if tlsSet != 3 {
			v.add("cluster.tls_cert", "is required (with tls_key and tls_ca) when the cluster's listener or a route is off loopback")
		}
		if c.Token == "" {
			v.add("cluster.token", "is required when the cluster's listener or a route is off loopback")
		}
	}
}
