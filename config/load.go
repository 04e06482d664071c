package config

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/knadh/koanf/parsers/toml/v2"
	"github.com/knadh/koanf/parsers/yaml"
	"github.com/knadh/koanf/providers/env/v2"
	"github.com/knadh/koanf/providers/file"
	"github.com/knadh/koanf/providers/posflag"
	"github.com/knadh/koanf/v2"
	"github.com/spf13/pflag"
)

// Errors Load returns when it cannot build a configuration at all. Problems
// with values are not among them: those come back from Validate.
var (
	// ErrFileNotFound means a config file named by --config or
	// $THATCH_CONFIG does not exist. The default path may be missing.
	ErrFileNotFound = errors.New("config: file not found")
	// ErrUnsupportedFormat means the file's extension is not .toml, .yaml
	// or .yml.
	ErrUnsupportedFormat = errors.New("config: unsupported file format")
	// ErrParse means the file could not be read or is not valid TOML/YAML.
	ErrParse = errors.New("config: cannot parse file")
)

// LoadOptions are the inputs of Load. They are explicit so that tests and
// embedders never depend on the process environment.
type LoadOptions struct {
	// File is the --config path, "" if none. When set it must exist.
	File string
	// Env holds the environment in os.Environ form ("KEY=value"); later
	// entries win. nil means an empty environment: cmd passes os.Environ().
	Env []string
	// Flags are consulted for the flags RegisterFlags added, and only for
	// those the user set (Changed). May be nil.
	Flags *pflag.FlagSet
	// HomeDir expands ~ and anchors the XDG fallbacks. "" means
	// os.UserHomeDir().
	HomeDir string
}

// Load builds the configuration in layers, each overriding the one before:
// Defaults, then the config file, then THATCH_* variables, then the flags
// the user set. It then resolves the derived paths and validates.
//
// If the file cannot be found or parsed, Load returns (nil, err). Otherwise
// it returns the config together with Validate's result, so that
// `thatch check-config` can show the effective config and every problem.
func Load(o LoadOptions) (*Config, error) {
	home := o.HomeDir
	if home == "" {
		home, _ = os.UserHomeDir() // an unknown home only matters if a fallback needs it
	}
	c := Defaults()
	k := koanf.New(".")

	path, err := findFile(o.File, o.Env, home)
	if err != nil {
		return nil, err
	}
	if path != "" {
		fk, err := readFile(path)
		if err != nil {
			return nil, err
		}
		c.problems = append(c.problems, unknownFileKeys(fk)...)
		if err := k.Merge(fk); err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrParse, path, err)
		}
		c.source = path
	}

	var unknownEnv []*FieldError
	ep := env.Provider(".", env.Opt{
		Prefix:      envPrefix,
		EnvironFunc: func() []string { return o.Env },
		TransformFunc: func(name, value string) (string, any) {
			if name == envConfig || notKeys[name] {
				return "", nil
			}
			if key, ok := keys().byEnv[name]; ok {
				return key, value
			}
			if a, ok := envAliases[name]; ok {
				return a.key, a.value(value)
			}
			unknownEnv = append(unknownEnv, envProblem(name))
			return "", nil
		},
	})
	if err := k.Load(ep, nil); err != nil {
		return nil, fmt.Errorf("config: read environment: %w", err)
	}
	// Several entries may name the same unknown variable; report it once.
	slices.SortFunc(unknownEnv, func(a, b *FieldError) int { return strings.Compare(a.Key, b.Key) })
	unknownEnv = slices.CompactFunc(unknownEnv, func(a, b *FieldError) bool { return a.Key == b.Key })
	c.problems = append(c.problems, unknownEnv...)

	if o.Flags != nil {
		// A nil koanf makes posflag skip every flag the user did not set, so
		// a flag's default never overrides the file or the environment.
		fp := posflag.ProviderWithFlag(o.Flags, ".", nil, func(f *pflag.Flag) (string, any) {
			key, ok := keys().byFlag[f.Name]
			if !ok {
				return "", nil // a flag of the command, not a config key
			}
			return key, posflag.FlagVal(o.Flags, f)
		})
		if err := k.Load(fp, nil); err != nil {
			return nil, fmt.Errorf("config: read flags: %w", err)
		}
	}

	c.problems = append(c.problems, c.decode(k, o.Env)...)
	c.resolvePaths(o.Env, home)
	return c, c.Validate()
}

// envAlias is a THATCH_* variable that sets a key under another name (the
// names the sweepers had in the TypeScript seed).
type envAlias struct {
	key   string
	value func(string) string
}

// envAliases are the variables that are not named after their key. When a
// key's own variable is set too, the one later in the environment wins.
var envAliases = map[string]envAlias{
	// THATCH_STRAND_SWEEP=off disarms the strand sweep.
	"THATCH_STRAND_SWEEP":         {"sweep.strand", func(v string) string { return v }},
	"THATCH_STRAND_SWEEP_MS":      {"sweep.strand_interval", millis},
	"THATCH_RUNTIME_STATE_TTL_MS": {"sweep.runtime_state_ttl", millis},
}

// millis turns a whole number of milliseconds into a duration's text; any
// other text is kept, for the duration decoder to report.
func millis(v string) string {
	t := strings.TrimSpace(v)
	if n, err := strconv.ParseInt(t, 10, 64); err == nil && n >= 0 {
		return t + "ms"
	}
	return v
}

// findFile picks the config file: the explicit path, else $THATCH_CONFIG,
// else the XDG default if it exists. It returns "" when there is none.
func findFile(explicit string, environ []string, home string) (string, error) {
	origin := "--config"
	path := explicit
	if path == "" {
		path, _ = lookupEnv(environ, envConfig)
		origin = "$" + envConfig
	}
	if path != "" {
		path = expandHome(path, home)
		if _, err := os.Stat(path); err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return "", fmt.Errorf("%w: %s (named by %s)", ErrFileNotFound, path, origin)
			}
			return "", fmt.Errorf("%w: %s: %w", ErrParse, path, err)
		}
		return path, nil
	}

	base := xdgDir(environ, "XDG_CONFIG_HOME", home, ".config")
	if base == "" {
		return "", nil
	}
	path = filepath.Join(base, "thatch", "config.toml")
	if _, err := os.Stat(path); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", nil
		}
		return "", fmt.Errorf("%w: %s: %w", ErrParse, path, err)
	}
	return path, nil
}

// readFile parses path into its own koanf so that its keys can be checked
// before they are merged.
func readFile(path string) (*koanf.Koanf, error) {
	var p koanf.Parser
	switch strings.ToLower(filepath.Ext(path)) {
	case ".toml":
		p = toml.Parser()
	case ".yaml", ".yml":
		p = yaml.Parser()
	default:
		return nil, fmt.Errorf("%w: %s (want .toml, .yaml or .yml)", ErrUnsupportedFormat, path)
	}
	fk := koanf.New(".")
	if err := fk.Load(file.Provider(path), p); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrParse, path, err)
	}
	return fk, nil
}

// unknownFileKeys reports every key in the file that is not a config key, so
// that a typo is an error rather than a silently ignored setting.
func unknownFileKeys(fk *koanf.Koanf) []*FieldError {
	var out []*FieldError
	s := keys()
	for _, key := range fk.Keys() {
		if _, ok := s.byKey[key]; ok {
			continue
		}
		if s.sections[key] {
			// An empty table ([log] with nothing under it, or YAML "log:")
			// names a section and sets nothing.
			if v := fk.Get(key); !isEmpty(v) {
				out = append(out, &FieldError{Key: key, Msg: "must be a table, got " + describe(v, false)})
			}
			continue
		}
		if underList(s, key) {
			continue // decodeServers reports a list written as a table
		}
		out = append(out, &FieldError{Key: displayKey(key), Msg: "unknown key"})
	}
	return out
}

// displayKey writes a key from the file so that a person can read it and
// find it: a segment that is not a plain name (empty, or with spaces,
// dots or control characters in the file's quoted key) is quoted as Go
// quotes strings.
func displayKey(key string) string {
	parts := strings.Split(key, ".")
	for i, p := range parts {
		if !plainName(p) {
			parts[i] = strconv.Quote(p)
		}
	}
	return strings.Join(parts, ".")
}

// plainName reports whether s is non-empty and made of ASCII letters,
// digits, "_" and "-", as every config key is.
func plainName(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}

// underList reports whether key lies inside a list-valued key.
func underList(s *schema, key string) bool {
	for _, l := range s.leaves {
		if !l.scalar() && strings.HasPrefix(key, l.key+".") {
			return true
		}
	}
	return false
}

func isEmpty(v any) bool {
	if v == nil {
		return true
	}
	m, ok := v.(map[string]any)
	return ok && len(m) == 0
}

// notKeys are THATCH_* variables that are not config keys: the IM front
// end sets them in the shells it starts agents in, so that thatch's own
// hook (and any thatch command an agent runs) finds its way back.
var notKeys = map[string]bool{
	"THATCH_IM_WINDOW":    true,
	"THATCH_IM_HOOK_FILE": true,
}

// envProblem explains an unknown THATCH_* variable without echoing its
// value, which may be a misnamed secret.
func envProblem(name string) *FieldError {
	if key, ok := strings.CutPrefix(name, envPrefix); ok {
		for _, l := range keys().leaves {
			if !l.scalar() && envName(l.key) == envPrefix+key {
				return &FieldError{Key: name, Msg: l.key + " can only be set in a config file"}
			}
		}
	}
	return &FieldError{Key: name, Msg: "unknown environment variable: no config key maps to it"}
}

// decode copies every key present in k into c, keeping the default and
// recording a problem for a value of the wrong type.
func (c *Config) decode(k *koanf.Koanf, environ []string) []*FieldError {
	var out []*FieldError
	root := reflect.ValueOf(c).Elem()
	for _, l := range keys().leaves {
		if !k.Exists(l.key) {
			continue
		}
		v := k.Get(l.key)
		if l.kind == kindServers {
			servers, at, problems := decodeServers(l.key, v)
			out = append(out, problems...)
			c.OpenCode.Servers, c.serverKeys = servers, at
			continue
		}
		if v == nil {
			continue // YAML "key:" with no value keeps the default
		}
		if p := decodeScalar(l, l.field(root), v); p != nil {
			out = append(out, p)
		}
	}
	if pw, ok := lookupEnv(environ, envServerPassword); ok && pw != "" {
		for i := range c.OpenCode.Servers {
			if c.OpenCode.Servers[i].Password == "" {
				c.OpenCode.Servers[i].Password = Secret(pw)
			}
		}
	}
	return out
}

// decodeServers decodes the opencode.servers list of tables. An item that
// is not a table is reported and left out, so it also returns, for each
// server, the key of its place in the file ("opencode.servers[2]").
func decodeServers(key string, v any) ([]Server, []string, []*FieldError) {
	if v == nil {
		return nil, nil, nil
	}
	var items []any
	switch t := v.(type) {
	case []any:
		items = t
	case []map[string]any:
		for _, m := range t {
			items = append(items, m)
		}
	default:
		return nil, nil, []*FieldError{{Key: key, Msg: "must be a list of tables ([[opencode.servers]]), got " + describe(v, false)}}
	}
	var (
		out      []Server
		outAt    []string
		problems []*FieldError
		s        = keys()
	)
	for i, item := range items {
		at := fmt.Sprintf("%s[%d]", key, i)
		if item == nil {
			// YAML writes a lone "-" as a nil item. It names no server, and
			// a server that silently disappeared would be worse than an error.
			problems = append(problems, &FieldError{Key: at, Msg: "empty entry; give it at least name and url, or delete the line"})
			continue
		}
		m, ok := item.(map[string]any)
		if !ok {
			problems = append(problems, &FieldError{Key: at, Msg: "must be a table, got " + describe(item, false)})
			continue
		}
		srv := defaultServer()
		rv := reflect.ValueOf(&srv).Elem()
		names := make([]string, 0, len(m))
		for name := range m {
			names = append(names, name)
		}
		slices.Sort(names)
		for _, name := range names {
			l, ok := s.serverByKey[name]
			if !ok {
				problems = append(problems, &FieldError{Key: at + "." + displayKey(name), Msg: "unknown key"})
				continue
			}
			if m[name] == nil {
				continue
			}
			l.key = at + "." + name
			if p := decodeScalar(l, l.field(rv), m[name]); p != nil {
				problems = append(problems, p)
			}
		}
		out = append(out, srv)
		outAt = append(outAt, at)
	}
	return out, outAt, problems
}

// decodeScalar sets dst from v according to l's kind. Files give typed
// values, the environment gives strings, flags give the flag's Go type.
func decodeScalar(l leaf, dst reflect.Value, v any) *FieldError {
	bad := func(want string) *FieldError {
		return &FieldError{Key: l.key, Msg: "must be " + want + ", got " + describe(v, l.kind == kindSecret)}
	}
	switch l.kind {
	case kindString, kindSecret:
		s, ok := v.(string)
		if !ok {
			return bad("a string")
		}
		dst.SetString(s)
	case kindInt:
		n, ok := toInt(v)
		if !ok {
			return bad("an integer")
		}
		dst.SetInt(n)
	case kindFloat:
		f, ok := toFloat(v)
		if !ok {
			return bad("a number")
		}
		dst.SetFloat(f)
	case kindDuration:
		var d time.Duration
		switch t := v.(type) {
		case time.Duration:
			d = t
		case string:
			var err error
			if d, err = time.ParseDuration(strings.TrimSpace(t)); err != nil {
				return bad(`a duration such as "15m" or "10s"`)
			}
		default:
			return bad(`a duration string such as "15m" or "10s"`)
		}
		dst.SetInt(int64(d))
	case kindBool:
		b, ok := toBool(v)
		if !ok {
			return bad("true or false")
		}
		dst.SetBool(b)
	case kindStrings:
		list, ok := toStrings(v)
		if !ok {
			return bad(`a list of strings such as ["a", "b"] (in the environment: a,b)`)
		}
		dst.Set(reflect.ValueOf(list))
	}
	return nil
}

// toBool reads a boolean from a file (typed) or the environment ("true",
// "off", "1", ...).
func toBool(v any) (bool, bool) {
	switch t := v.(type) {
	case bool:
		return t, true
	case string:
		switch strings.ToLower(strings.TrimSpace(t)) {
		case "true", "on", "yes", "1":
			return true, true
		case "false", "off", "no", "0":
			return false, true
		}
	}
	return false, false
}

// toStrings reads a list of strings: a file's list (whose items must all
// be strings or integers, as user ids are often written), the environment's
// comma-separated text, or a flag's slice. Empty items are dropped.
func toStrings(v any) ([]string, bool) {
	var out []string
	switch t := v.(type) {
	case []string:
		out = append(out, t...)
	case string:
		out = strings.Split(t, ",")
	case []any:
		for _, item := range t {
			switch x := item.(type) {
			case string:
				out = append(out, x)
			case int64, int, float64:
				n, ok := toInt(x)
				if !ok {
					return nil, false
				}
				out = append(out, strconv.FormatInt(n, 10))
			default:
				return nil, false
			}
		}
	default:
		return nil, false
	}
	kept := out[:0]
	for _, s := range out {
		if s = strings.TrimSpace(s); s != "" {
			kept = append(kept, s)
		}
	}
	return slices.Clip(kept), true
}

func toInt(v any) (int64, bool) {
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return rv.Int(), true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if rv.Uint() > math.MaxInt64 {
			return 0, false
		}
		return int64(rv.Uint()), true
	case reflect.Float32, reflect.Float64:
		f := rv.Float()
		if f != math.Trunc(f) || math.Abs(f) > 1<<53 {
			return 0, false
		}
		return int64(f), true
	case reflect.String:
		n, err := strconv.ParseInt(strings.TrimSpace(rv.String()), 10, 64)
		return n, err == nil
	}
	return 0, false
}

func toFloat(v any) (float64, bool) {
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return float64(rv.Int()), true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return float64(rv.Uint()), true
	case reflect.Float32, reflect.Float64:
		return rv.Float(), true
	case reflect.String:
		f, err := strconv.ParseFloat(strings.TrimSpace(rv.String()), 64)
		return f, err == nil
	}
	return 0, false
}

// describe names what a wrong value is, with the value itself unless it
// belongs to a secret.
func describe(v any, secret bool) string {
	var what string
	switch v.(type) {
	case nil:
		return "nothing"
	case map[string]any:
		return "a table"
	case []any, []map[string]any:
		return "a list"
	case bool:
		what = "a boolean"
	case string:
		what = "a string"
	default:
		what = "a " + reflect.TypeOf(v).String()
		if rv := reflect.ValueOf(v); rv.CanInt() || rv.CanUint() || rv.CanFloat() {
			what = "a number"
		}
	}
	if secret {
		return what
	}
	if s, ok := v.(string); ok {
		return fmt.Sprintf("%q", s)
	}
	return fmt.Sprintf("%s %v", what, v)
}

// ResolvePaths fills the paths left empty from their documented defaults
// and expands a leading ~ in them. Load calls it; an embedder that starts
// from Defaults calls it before Validate. environ supplies XDG_DATA_HOME;
// homeDir "" means os.UserHomeDir(). A path it cannot derive stays empty
// and Validate reports it.
func (c *Config) ResolvePaths(environ []string, homeDir string) {
	if homeDir == "" {
		homeDir, _ = os.UserHomeDir()
	}
	c.resolvePaths(environ, homeDir)
}

func (c *Config) resolvePaths(environ []string, home string) {
	c.Data.Dir = expandHome(c.Data.Dir, home)
	if c.Data.Dir == "" {
		if base := xdgDir(environ, "XDG_DATA_HOME", home, filepath.Join(".local", "share")); base != "" {
			c.Data.Dir = filepath.Join(base, "thatch")
		}
	}
	c.Control.TokenFile = expandHome(c.Control.TokenFile, home)
	c.Control.StateFile = expandHome(c.Control.StateFile, home)
	if filepath.IsAbs(c.Data.Dir) {
		if c.Control.TokenFile == "" {
			c.Control.TokenFile = filepath.Join(c.Data.Dir, "control.token")
		}
		if c.Control.StateFile == "" {
			c.Control.StateFile = filepath.Join(c.Data.Dir, "control.json")
		}
	}
}

// xdgDir returns $name, or home/fallback when it is unset or not absolute
// (the XDG spec says relative values are to be ignored), or "" when neither
// is known.
func xdgDir(environ []string, name, home, fallback string) string {
	if v, _ := lookupEnv(environ, name); filepath.IsAbs(v) {
		return v
	}
	if home == "" {
		return ""
	}
	return filepath.Join(home, fallback)
}

// expandHome expands "~" and a leading "~/" when the home is known.
func expandHome(path, home string) string {
	if home == "" {
		return path
	}
	if path == "~" {
		return home
	}
	if rest, ok := strings.CutPrefix(path, "~/"); ok {
		return filepath.Join(home, rest)
	}
	return path
}

// lookupEnv finds name in an os.Environ style list; the last entry wins,
// as it does for exec.Cmd.Env.
func lookupEnv(environ []string, name string) (string, bool) {
	for i := len(environ) - 1; i >= 0; i-- {
		if k, v, ok := strings.Cut(environ[i], "="); ok && k == name {
			return v, true
		}
	}
	return "", false
}
