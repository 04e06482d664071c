package config

import (
	"net/url"
	"reflect"
	"strings"
	"time"
)

// Redacted returns the effective configuration as a nested map keyed like
// the config file, for `thatch check-config` and for logging. Durations are
// strings such as "5m"; a non-empty secret is RedactedValue; in a URL the
// password of the user info and credential query parameters are masked (see
// RedactURL).
func (c *Config) Redacted() map[string]any {
	out := map[string]any{}
	root := reflect.ValueOf(c).Elem()
	for _, l := range keys().leaves {
		parts := strings.Split(l.key, ".")
		m := out
		for _, p := range parts[:len(parts)-1] {
			next, ok := m[p].(map[string]any)
			if !ok {
				next = map[string]any{}
				m[p] = next
			}
			m = next
		}
		last := parts[len(parts)-1]
		if l.kind == kindServers {
			servers := make([]any, 0, len(c.OpenCode.Servers))
			for i := range c.OpenCode.Servers {
				sm := map[string]any{}
				sv := reflect.ValueOf(&c.OpenCode.Servers[i]).Elem()
				for _, f := range keys().serverFields {
					sm[f.key] = shown(f, f.field(sv))
				}
				servers = append(servers, sm)
			}
			m[last] = servers
			continue
		}
		m[last] = shown(l, l.field(root))
	}
	return out
}

// shown is how a value appears in Redacted.
func shown(l leaf, v reflect.Value) any {
	switch l.kind {
	case kindSecret:
		return Secret(v.String()).String()
	case kindInt:
		return int(v.Int())
	case kindFloat:
		return v.Float()
	case kindDuration:
		return formatDuration(time.Duration(v.Int()))
	case kindBool:
		return v.Bool()
	case kindStrings:
		return append([]string{}, v.Interface().([]string)...)
	}
	last := l.key[strings.LastIndex(l.key, ".")+1:]
	if last == "url" || strings.HasSuffix(last, "_url") {
		return RedactURL(v.String())
	}
	return v.String()
}

// urlMask replaces a credential inside a URL. It is the mask url.Redacted
// uses, so that a URL reads the same whichever part held the secret.
const urlMask = "xxxxx"

// RedactURL returns s with the credentials a URL can carry masked: the
// password of the user info ("bob:xxxxx@") and the value of every query or
// fragment parameter whose name says it is a credential (see
// isCredentialParam). Everything else is kept as written, so that a person
// can still tell which endpoint it is.
//
// It works on the text, not on a parsed url.URL, because the URLs worth
// hiding include the ones url.Parse rejects: Validate quotes those in its
// errors. When in doubt it masks too much rather than too little. Use it
// wherever a configured URL is logged or shown.
func RedactURL(s string) string {
	s = redactUserinfo(s)
	rest, frag, hasFrag := strings.Cut(s, "#")
	base, query, hasQuery := strings.Cut(rest, "?")
	var b strings.Builder
	b.WriteString(base)
	if hasQuery {
		b.WriteByte('?')
		b.WriteString(redactParams(query))
	}
	if hasFrag {
		b.WriteByte('#')
		b.WriteString(redactParams(frag))
	}
	return b.String()
}

// redactUserinfo masks what follows the first colon of the user info. The
// authority is taken to run up to the first "/" after "://" (or from the
// start when there is no scheme) and the user info up to its last "@", as
// url.Parse does; a stray "?" or "#" in a password is masked with it.
func redactUserinfo(s string) string {
	start := 0
	if i := strings.Index(s, "://"); i >= 0 {
		start = i + len("://")
	}
	end := len(s)
	if i := strings.IndexByte(s[start:], '/'); i >= 0 {
		end = start + i
	}
	at := strings.LastIndexByte(s[start:end], '@')
	if at < 0 {
		return s
	}
	userinfo := s[start : start+at]
	colon := strings.IndexByte(userinfo, ':')
	if colon < 0 {
		return s // a user name alone is no secret
	}
	return s[:start] + userinfo[:colon+1] + urlMask + s[start+at:]
}

// redactParams masks the values of credential parameters in a query or
// fragment ("a=1&token=x"), keeping the names, the order and the
// separators. Both "&" and ";" separate, since some servers accept either.
func redactParams(q string) string {
	var b strings.Builder
	for q != "" {
		i := strings.IndexAny(q, "&;")
		param, sep := q, ""
		if i >= 0 {
			param, sep, q = q[:i], q[i:i+1], q[i+1:]
		} else {
			q = ""
		}
		if name, value, ok := strings.Cut(param, "="); ok && value != "" && isCredentialParam(name) {
			param = name + "=" + urlMask
		}
		b.WriteString(param)
		b.WriteString(sep)
	}
	return b.String()
}

// credentialWords are parameter names, or last words of names, that carry a
// credential. "access_token", "x-api-key" and "client_secret" match by their
// last word.
var credentialWords = map[string]bool{
	"key": true, "apikey": true, "token": true, "secret": true,
	"password": true, "passwd": true, "pwd": true, "auth": true,
	"signature": true, "sig": true, "credential": true, "credentials": true,
}

// isCredentialParam reports whether a query parameter named name (as
// written, possibly percent-encoded) holds a credential. Case does not
// matter.
func isCredentialParam(name string) bool {
	if n, err := url.QueryUnescape(name); err == nil {
		name = n
	}
	name = strings.ToLower(strings.TrimSpace(name))
	if credentialWords[name] {
		return true
	}
	if i := strings.LastIndexAny(name, "-_."); i >= 0 {
		return credentialWords[name[i+1:]]
	}
	return false
}

// SecretValues returns the values of every secret key that is set (the
// bot token, the servers' passwords, the embeddings API key): what must
// not reach a program thatch starts, in its environment or otherwise.
func (c *Config) SecretValues() []string {
	var out []string
	root := reflect.ValueOf(c).Elem()
	for _, l := range keys().leaves {
		if l.kind == kindSecret {
			if v := l.field(root).String(); v != "" {
				out = append(out, v)
			}
		}
	}
	for _, s := range c.OpenCode.Servers {
		if s.Password != "" {
			out = append(out, s.Password.Reveal())
		}
	}
	return out
}

// ChildEnv returns environ without what would hand thatch's secrets to a
// program it starts (the tmux server, and so every agent in its windows):
// every THATCH_* variable (they configure thatch, and some hold a token),
// opencode's server password variable, and every variable whose value is,
// or holds, one of the config's secret values (a URL with the bot token
// in it; a secret shorter than 8 bytes only where it is the whole value).
func (c *Config) ChildEnv(environ []string) []string {
	secrets := c.SecretValues()
	holds := func(value string) bool {
		for _, s := range secrets {
			if value == s || (len(s) >= 8 && strings.Contains(value, s)) {
				return true
			}
		}
		return false
	}
	out := make([]string, 0, len(environ))
	for _, kv := range environ {
		name, value, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, envPrefix) || name == envServerPassword || holds(value) {
			continue
		}
		out = append(out, kv)
	}
	return out
}
