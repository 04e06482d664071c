package redact

import (
	"errors"
	"maps"
	"strings"
	"testing"
)

// Every secret below is made up: the right shape, random characters.
func TestKinds(t *testing.T) {
	cases := []struct {
		kind, in, want string
	}{
		{"aws_access_key", "key AKIAQ3EGRT7XK2MZP4WN in use", "key [redacted:aws_access_key] in use"},
		{"aws_secret_key", "aws_secret_access_key=Zq8pL2mN4vX7bC1dF6gH9jK3lQ5rS0tU2wY4aE6i", "aws_secret_access_key=[redacted:aws_secret_key]"},
		{"gcp_api_key", `"AIzaSyD3fK9pQ2mX7vL1nB8cR4tW6yH0jE5gU2s"`, `"[redacted:gcp_api_key]"`},
		{"github_token", "token ghp_a8F3kL9mQ2pX7vB1nC4tW6yH0jE5gU2sR9dZ ok", "token [redacted:github_token] ok"},
		{"gitlab_token", "glpat-x9Kd3LmQ2pX7vB1nC4tW", "[redacted:gitlab_token]"},
		{"slack_token", "xoxb-123456789012-1234567890123-Ab3dEf6hIj9kLm2nOp5qRs8t", "[redacted:slack_token]"},
		{"slack_webhook", "https://hooks.slack.com/services/T0ABCDEF1/B0ABCDEFGH2/x9Kd3LmQ2pX7vB1nC4tW6yH0", "[redacted:slack_webhook]"},
		{"stripe_key", "sk_live_x9Kd3LmQ2pX7vB1nC4tW6yH0", "[redacted:stripe_key]"},
		{"anthropic_key", "sk-ant-api03-" + strings.Repeat("x9Kd3LmQ2p", 9) + "AA", "[redacted:anthropic_key]"},
		{"openai_key", "sk-proj-" + strings.Repeat("Ab3dEf6hIj", 6), "[redacted:openai_key]"},
		{"openai_key", "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", "[redacted:openai_key]"},
		{"huggingface_token", "hf_Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAb", "[redacted:huggingface_token]"},
		{"npm_token", "npm_Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAb3d", "[redacted:npm_token]"},
		{"jwt", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dBjftJeZ4CVPmB92K27uhbUJU1p1r_wW1gFWFOEjXk", "[redacted:jwt]"},
		{"private_key", "a\n-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBg\n-----END PRIVATE KEY-----\nb", "a\n[redacted:private_key]\nb"},
		{"private_key", "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEI", "[redacted:private_key]"},
		{"password", "password=hunter22", "password=[redacted:password]"},
		{"password", `"db_password": "c0rrect-h0rse"`, `"db_password": "[redacted:password]"`},
		{"token", "GITHUB_TOKEN: a8f3k2l9m4q7x1v6", "GITHUB_TOKEN: [redacted:token]"},
		{"token", "client_secret=Zq8pL2mN4vX7bC1d", "client_secret=[redacted:token]"},
		{"url_credentials", "postgres://app:s3cr3tpass@db:5432/x", "postgres://app:[redacted:url_credentials]@db:5432/x"},
		{"bearer_token", "Authorization: Bearer Ab3dEf6hIj9kLm2nOp5qRs8t", "Authorization: Bearer [redacted:bearer_token]"},
		{"env_secret", "PORT=80\nSIGNING=Ab3dEf6hIj9kLm2nOp5qRs8tUv1w\n", "PORT=80\nSIGNING=[redacted:env_secret]\n"},
		{"env_secret", "00002| SIGNING=Ab3dEf6hIj9kLm2nOp5qRs8tUv1w\n", "00002| SIGNING=[redacted:env_secret]\n"},
	}
	r, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range cases {
		got, n := r.Redact(tc.in)
		if got != tc.want || n != 1 {
			t.Errorf("%s: Redact(%q) = %q, %d; want %q, 1", tc.kind, tc.in, got, n, tc.want)
		}
		if again, n := r.Redact(got); again != got || n != 0 {
			t.Errorf("%s: redacting %q again changed it to %q", tc.kind, got, again)
		}
	}
	for _, tc := range cases {
		if !strings.Contains(tc.want, Marker(tc.kind)) {
			t.Errorf("case of %s expects no marker of its kind", tc.kind)
		}
	}
}

func TestNotSecrets(t *testing.T) {
	r, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range []string{
		"password: string",
		"password: ${DB_PASSWORD}",
		"token = this.token",
		"const password = z.string().min(8)",
		"max_tokens: 409600",
		"commit 3f786850e387550fdab836ed7e6dc881de23001b",
		"550e8400-e29b-41d4-a716-446655440000",
		"GIT_SHA=3f786850e387550fdab836ed7e6dc881de23001b",
		"https://user@example.com/path",
		"the task is done",
	} {
		if got, n := r.Redact(in); n != 0 {
			t.Errorf("Redact(%q) = %q: not a secret", in, got)
		}
	}
}

func TestDisableAndExtra(t *testing.T) {
	r, err := New(Options{Disable: []string{"jwt"}, Extra: []Rule{{Kind: "acme", Pattern: `acme_[a-z0-9]{12}`}, {Kind: "pin", Pattern: `PIN (?P<secret>\d{4,})`}}})
	if err != nil {
		t.Fatal(err)
	}
	jwt := "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dBjftJeZ4CVPmB92K27uhbUJU1p1r_wW1gFWFOEjXk"
	if got, _ := r.Redact(jwt); got != jwt {
		t.Errorf("jwt is switched off, yet %q became %q", jwt, got)
	}
	if got, _ := r.Redact("id acme_0a1b2c3d4e5f, PIN 98765"); got != "id [redacted:acme], PIN [redacted:pin]" {
		t.Errorf("extra rules: got %q", got)
	}
	if _, err := New(Options{Disable: []string{"nope"}}); !errors.Is(err, ErrUnknownKind) {
		t.Errorf("an unknown kind: err = %v, want ErrUnknownKind", err)
	}
	for _, bad := range []Rule{{Kind: "", Pattern: "x"}, {Kind: "a b", Pattern: "x"}, {Kind: "k", Pattern: "("}, {Kind: "k", Pattern: "x*"}} {
		if _, err := New(Options{Extra: []Rule{bad}}); !errors.Is(err, ErrBadRule) {
			t.Errorf("rule %+v: err = %v, want ErrBadRule", bad, err)
		}
	}
}

func TestCounts(t *testing.T) {
	r, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	r.Redact("password=hunter22 and AKIAQ3EGRT7XK2MZP4WN")
	r.Redact("pwd: hunter23")
	if kinds := r.Find("password=hunter24"); len(kinds) != 1 || kinds[0] != "password" {
		t.Errorf("Find = %v, want [password]", kinds)
	}
	want := map[string]uint64{"password": 2, "aws_access_key": 1}
	if got := r.Counts(); !maps.Equal(got, want) {
		t.Errorf("Counts = %v, want %v (Find counts nothing)", got, want)
	}
}

// TestRefuse checks that a memory holding a secret is refused with the
// kinds, never the secret, and that a nil Redactor (redaction off)
// refuses nothing.
func TestRefuse(t *testing.T) {
	r, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	const secret = "glpat-x9Kd3LmQ2pX7vB1nC4tW"
	err = r.Refuse("Deploy token", "GITLAB_TOKEN="+secret+" and password=hunter22 and pwd: hunter23")
	if !errors.Is(err, ErrSecret) {
		t.Fatalf("Refuse = %v, want ErrSecret", err)
	}
	if msg := err.Error(); !strings.Contains(msg, "(gitlab_token, password)") || strings.Contains(msg, secret) || strings.Contains(msg, "hunter2") {
		t.Errorf("Refuse = %q, want each kind once and no secret", msg)
	}
	if err := r.Refuse("Deploy token", "GITLAB_TOKEN is in the CI settings"); err != nil {
		t.Errorf("Refuse of no secret = %v", err)
	}
	if got := r.Counts(); len(got) != 0 {
		t.Errorf("Counts = %v, want none (Refuse counts nothing)", got)
	}
	var off *Redactor
	if err := off.Refuse("GITLAB_TOKEN=" + secret); err != nil {
		t.Errorf("a nil Redactor refused: %v", err)
	}
}

func TestDropPrivate(t *testing.T) {
	cases := []struct{ in, want string }{
		{"a<private>x</private>b", "ab"},
		{"a<PRIVATE>x\ny</Private>b<private>z</private>c", "abc"},
		{"a<private>runs to the end", "a"},
		{"a < b and <privat> c", "a < b and <privat> c"},
		{"no tags", "no tags"},
	}
	for _, tc := range cases {
		if got := DropPrivate(tc.in); got != tc.want {
			t.Errorf("DropPrivate(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func BenchmarkRedact(b *testing.B) {
	r, err := New(Options{})
	if err != nil {
		b.Fatal(err)
	}
	text := strings.Repeat("func main() {\n\tfmt.Println(\"hello\", os.Getenv(\"HOME\"))\n}\n", 30)
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		r.Redact(text)
	}
}
