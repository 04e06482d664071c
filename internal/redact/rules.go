package redact

import (
	"regexp"
	"strings"
)

// builtin is a built-in rule before it is compiled. Where two rules match
// at the same place, the one listed first names the kind, so the specific
// formats come before the generic ones.
//
// A built-in rule's pattern matches from one of its keywords on: it is run
// anchored at each place a keyword occurs (see rule.at), so that its cost
// is the length of what it matches, not of the text. A rule marked whole
// runs over the whole text instead, and one marked line over each line a
// keyword occurs in, anchored at the line's start and end.
type builtin struct {
	kind     string
	pattern  string
	keywords []string
	fold     bool
	// edge: the byte before the keyword must not be a token byte, so that
	// a key is not found in the middle of a longer word.
	edge bool
	line bool
	// whole runs the pattern over the whole text (unanchored).
	whole bool
	keep  func(string) bool
}

func (b builtin) compile() rule {
	pattern := b.pattern
	if !b.whole {
		pattern = `^(?:` + pattern + `)`
		if b.line {
			pattern += `$`
		}
	}
	re := regexp.MustCompile(pattern)
	return rule{kind: b.kind, re: re, keywords: b.keywords, fold: b.fold,
		group: max(re.SubexpIndex("secret"), 0), keep: b.keep, edge: b.edge, line: b.line, whole: b.whole}
}

// end is the end of a token: a byte that cannot be part of it, or the end
// of the text.
const end = `(?:[^A-Za-z0-9_\-]|$)`

// pairSep is what separates a name from its value: "=", ":", ":=" or
// "=>", with optional quotes and blanks.
const pairSep = `["']?\s*(?::=|=>|[:=])\s*["']?`

// pairValue is a value of a pair: up to a blank, a quote or a separator.
const pairValue = "[^\\s\"'`,;&|)}\\]]"

var builtins = []builtin{
	{kind: "private_key", whole: true, keywords: []string{"PRIVATE KEY"},
		// An unterminated block (the plugin cuts long outputs) runs to
		// the end of the text.
		pattern: `-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----(?:(?s:.*?)-----END[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|(?s:.*)$)`},
	{kind: "aws_access_key", edge: true, keywords: []string{"AKIA", "ASIA", "ABIA", "ACCA"},
		pattern: `(?P<secret>(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16})` + end},
	{kind: "aws_secret_key", keywords: []string{"aws"}, fold: true,
		pattern: `(?i)aws_?secret(?:_access)?_?key` + pairSep + `(?P<secret>[A-Za-z0-9/+=]{40})`},
	{kind: "gcp_api_key", edge: true, keywords: []string{"AIza"},
		pattern: `(?P<secret>AIza[0-9A-Za-z_\-]{35})` + end},
	{kind: "gcp_service_account", keywords: []string{`"private_key_id"`},
		pattern: `"private_key_id"\s*:\s*"(?P<secret>[0-9a-f]{40})"`},
	{kind: "azure_storage_key", keywords: []string{"AccountKey="},
		pattern: `AccountKey=(?P<secret>[A-Za-z0-9+/]{86}==)`},
	{kind: "github_token", edge: true, keywords: []string{"ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"},
		pattern: `(?P<secret>gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})` + end},
	{kind: "gitlab_token", edge: true, keywords: []string{"glpat-", "gldt-", "glrt-", "glptt-"},
		pattern: `(?P<secret>(?:glpat|gldt|glrt|glptt)-[A-Za-z0-9_\-]{20,})`},
	{kind: "slack_token", edge: true, keywords: []string{"xox"},
		pattern: `(?P<secret>xox[abposre]-[A-Za-z0-9\-]{10,})`},
	{kind: "slack_webhook", keywords: []string{"https://hooks.slack.com/"},
		pattern: `https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9_/]{20,}`},
	{kind: "stripe_key", edge: true, keywords: []string{"sk_live_", "sk_test_", "rk_live_", "rk_test_"},
		pattern: `(?P<secret>[sr]k_(?:live|test)_[A-Za-z0-9]{16,})` + end},
	{kind: "anthropic_key", edge: true, keywords: []string{"sk-ant-"},
		pattern: `(?P<secret>sk-ant-[A-Za-z0-9]{3,10}-[A-Za-z0-9_\-]{40,})`},
	{kind: "openai_key", edge: true, keywords: []string{"sk-"},
		// Legacy keys hold "T3BlbkFJ" (base64 of "OpenAI"); project,
		// service-account and admin keys are long and prefixed.
		pattern: `(?P<secret>sk-(?:(?:proj|svcacct|admin|None)-[A-Za-z0-9_\-]{40,}|[A-Za-z0-9]{20}T3BlbkFJ[A-Za-z0-9]{20}|[A-Za-z0-9]{48}))` + end},
	{kind: "huggingface_token", edge: true, keywords: []string{"hf_"},
		pattern: `(?P<secret>hf_[A-Za-z0-9]{34,})` + end},
	{kind: "npm_token", edge: true, keywords: []string{"npm_"},
		pattern: `(?P<secret>npm_[A-Za-z0-9]{36})` + end},
	{kind: "sendgrid_key", edge: true, keywords: []string{"SG."},
		pattern: `(?P<secret>SG\.[A-Za-z0-9_\-]{22}\.[A-Za-z0-9_\-]{43})` + end},
	{kind: "jwt", edge: true, keywords: []string{"eyJ"},
		pattern: `(?P<secret>eyJ[A-Za-z0-9_\-]{10,}\.eyJ[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,})`},
	{kind: "url_credentials", keywords: []string{"://"},
		// From the scheme's "://": user ":" password "@".
		pattern: `://[^\s:/@"'<>]+:(?P<secret>[^\s/@"'<>]+)@`,
		keep:    func(v string) bool { return !placeholder(v) }},
	{kind: "bearer_token", keywords: []string{"bearer"}, fold: true,
		pattern: `(?i)bearer\s+(?P<secret>[A-Za-z0-9\-._~+/]{16,}=*)`,
		keep:    func(v string) bool { return !placeholder(v) && mixed(v) }},
	{kind: "password", keywords: []string{"pass", "pwd"}, fold: true,
		pattern: `(?i)(?:password|passwd|passphrase|pwd)[A-Za-z0-9_\-]*` + pairSep + `(?P<secret>` + pairValue + `{4,})`,
		keep:    func(v string) bool { return len(v) <= 256 && assignedValue(v) }},
	{kind: "token", keywords: []string{"token", "secret", "api", "access", "private", "credential", "auth"}, fold: true,
		pattern: `(?i)(?:token|secret|api[_-]?key|access[_-]?key|private[_-]?key|credentials?|auth)(?:_?key|_?id)?` + pairSep + `(?P<secret>` + pairValue + `{8,})`,
		keep:    func(v string) bool { return len(v) <= 1024 && assignedValue(v) && mixed(v) }},
	{kind: "env_secret", keywords: []string{"="}, line: true,
		// NAME=value on a line of its own (a .env file, `env`, a shell
		// export, a file as the read tool numbers its lines): the value
		// counts when it looks random.
		pattern: `[ \t]*(?:\d{1,6}[|:\t][ \t]?)?(?:export[ \t]+)?[A-Za-z_][A-Za-z0-9_]+[ \t]*=[ \t]*["']?(?P<secret>[A-Za-z0-9+/=_\-.~]{16,})["']?[ \t]*\r?`,
		keep:    random},
}

// placeholder reports whether v is an obvious stand-in rather than a
// secret: a variable reference, a template, masked or already redacted.
func placeholder(v string) bool {
	l := strings.ToLower(v)
	switch {
	case strings.HasPrefix(v, "$"), strings.HasPrefix(v, "%"), strings.HasPrefix(v, "<"),
		strings.HasPrefix(v, "{"), strings.HasPrefix(v, "["), strings.Contains(v, "${"),
		strings.Contains(v, "{{"), strings.HasPrefix(l, "redacted"), strings.Trim(v, "*x.") == "":
		return true
	}
	switch l {
	case "password", "passwd", "secret", "token", "changeme", "example", "null", "none", "undefined",
		"true", "false", "string", "number", "boolean", "required", "optional", "process.env",
		"your_password", "your-password", "yourpassword", "your_token", "your-token", "placeholder":
		return true
	}
	return false
}

// assignedValue reports whether v, the right side of a name: value or
// name = value pair, reads like a secret rather than code: not a
// placeholder, not a number, and not an identifier path (this.token,
// process.env.TOKEN, e.target), a call or a type.
func assignedValue(v string) bool {
	if placeholder(v) {
		return false
	}
	digits, letters := 0, 0
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case c >= '0' && c <= '9':
			digits++
		case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
			letters++
		}
	}
	if letters == 0 {
		return false
	}
	if identPath(v) {
		return false
	}
	return true
}

// identPath reports whether v is a dotted identifier path or a call
// (a.b.c, fn(, new Foo), as code assigns, not a literal secret. A plain
// word with no digit and no symbol (hunter) is kept: short human passwords
// look like that.
func identPath(v string) bool {
	if strings.HasSuffix(v, "(") || strings.Contains(v, "(") {
		return true
	}
	if !strings.Contains(v, ".") {
		return false
	}
	for _, part := range strings.Split(v, ".") {
		if part == "" {
			return false
		}
		for i := 0; i < len(part); i++ {
			c := part[i]
			ok := c == '_' || c == '$' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9'
			if !ok {
				return false
			}
		}
	}
	return true
}

// mixed reports whether v has both letters and digits, or is long: tokens
// are random, words are not.
func mixed(v string) bool {
	var digit, letter bool
	for i := 0; i < len(v); i++ {
		c := v[i]
		digit = digit || c >= '0' && c <= '9'
		letter = letter || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
	}
	return digit && letter || len(v) >= 24 && entropy(v) >= 3.5
}

// random reports whether v, a value assigned in an env-like line, looks
// like a generated secret: high entropy, letters and digits mixed, and not
// a hash (hex only), a UUID, a version or a path.
func random(v string) bool {
	if placeholder(v) || strings.Count(v, ".") > 1 || strings.HasPrefix(v, "/") || strings.HasPrefix(v, "./") {
		return false
	}
	hex, upper, lower, digit := true, false, false, false
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case c >= '0' && c <= '9':
			digit = true
		case c >= 'a' && c <= 'f':
			lower = true
		case c >= 'A' && c <= 'F':
			upper = true
		case c >= 'a' && c <= 'z':
			lower, hex = true, false
		case c >= 'A' && c <= 'Z':
			upper, hex = true, false
		case c == '-':
		default:
			hex = false
		}
	}
	if hex {
		return false // a hash, a UUID, a commit
	}
	classes := 0
	for _, b := range []bool{upper, lower, digit} {
		if b {
			classes++
		}
	}
	return classes >= 2 && digit && entropy(v) >= 3.8
}
