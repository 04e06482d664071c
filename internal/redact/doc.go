// Package redact finds secrets in text and replaces each with
// "[redacted:<kind>]", so that what a coding agent's tools read and print
// (keys, tokens, passwords) never reaches thatch's journal, its memory
// store or the extraction model.
//
// It is a leaf: it imports nothing of thatch, no storage and no wire. The
// opencode front end runs a Redactor over every tool call's args and
// output at the edge, before anything is journaled, and over every memory
// that memory_remember would store. The memory store itself asks Refuse
// about every memory it is given (the plugin's tool, an import, an edit on
// the web page): a memory holding a secret is refused, never stored.
//
// # Rules
//
// A Redactor holds the built-in rules (Kinds lists them: cloud provider
// keys, GitHub, GitLab, Slack, Stripe, OpenAI and Anthropic style tokens,
// JWTs, private key blocks, password=/token=/secret: pairs, credentials in
// URLs, bearer tokens and high-entropy values assigned in env-like lines)
// minus the kinds Options.Disable switches off, plus Options.Extra. Every
// rule is an RE2 regexp (linear in its input, never pathological) with
// literal keywords as a prefilter: a rule whose keywords are all absent
// from a text is not run on it. A rule with a group named "secret"
// replaces only that group, so "password=hunter22" becomes
// "password=[redacted:password]".
//
// # Example
//
//	r, err := redact.New(redact.Options{Disable: []string{"jwt"}})
//	if err != nil { ... }
//	clean, n := r.Redact(output) // n: how many secrets were replaced
//	clean = redact.DropPrivate(clean)
//
// Counts are kept per kind since the Redactor was made (Counts); what was
// redacted is never kept.
package redact
