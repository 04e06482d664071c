package config

import (
	"reflect"
	"strings"
	"time"
)

// Redacted returns the effective configuration as a nested map keyed like
// the config file, for `thatch check-config` and for logging. Durations are
// strings such as "5m"; a non-empty secret is RedactedValue; a password in
// a URL's user info is masked.
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
	}
	last := l.key[strings.LastIndex(l.key, ".")+1:]
	if last == "url" || strings.HasSuffix(last, "_url") {
		return showURL(v.String())
	}
	return v.String()
}
