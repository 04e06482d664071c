package redact

import (
	"crypto/sha1"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// The corpora are generated: every secret has the shape of a real one and
// is random, never a real key. The seed is fixed so that a run repeats.

const (
	alnum   = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	upperNo = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
	b64url  = alnum + "_-"
	b64std  = alnum + "+/"
	hexdig  = "0123456789abcdef"
)

func pick(r *rand.Rand, set string, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = set[r.IntN(len(set))]
	}
	return string(b)
}

// secretGens make a secret of a kind and the text around it, as a tool
// would print or read it.
var secretGens = []struct {
	kind string
	gen  func(r *rand.Rand) (secret, text string)
}{
	{"aws_access_key", func(r *rand.Rand) (string, string) {
		s := "AKIA" + pick(r, upperNo, 16)
		return s, "[default]\naws_access_key_id = " + s + "\nregion = eu-west-1\n"
	}},
	{"aws_access_key", func(r *rand.Rand) (string, string) {
		s := "ASIA" + pick(r, upperNo, 16)
		return s, `{"Credentials": {"AccessKeyId": "` + s + `", "Expiration": "2026-01-01T00:00:00Z"}}`
	}},
	{"aws_secret_key", func(r *rand.Rand) (string, string) {
		s := pick(r, b64std, 40)
		return s, "aws_secret_access_key = " + s + "\n"
	}},
	{"gcp_api_key", func(r *rand.Rand) (string, string) {
		s := "AIza" + pick(r, b64url, 35)
		return s, `const firebaseConfig = { apiKey: "` + s + `", projectId: "demo" };`
	}},
	{"github_token", func(r *rand.Rand) (string, string) {
		s := "ghp_" + pick(r, alnum, 36)
		return s, "$ git remote -v\norigin https://x-access-token:" + s + "@github.com/acme/app.git (fetch)\n"
	}},
	{"github_token", func(r *rand.Rand) (string, string) {
		s := "github_pat_" + pick(r, alnum, 22) + "_" + pick(r, alnum, 59)
		return s, "export GH_TOKEN=" + s
	}},
	{"github_token", func(r *rand.Rand) (string, string) {
		s := "ghs_" + pick(r, alnum, 36)
		return s, "Using installation token " + s + " for checkout"
	}},
	{"gitlab_token", func(r *rand.Rand) (string, string) {
		s := "glpat-" + pick(r, b64url, 20)
		return s, "curl --header \"PRIVATE-TOKEN: " + s + "\" https://gitlab.example.com/api/v4/projects"
	}},
	{"slack_token", func(r *rand.Rand) (string, string) {
		s := fmt.Sprintf("xoxb-%d-%d-%s", 1e11+r.IntN(1e11), 1e12+r.IntN(1e12), pick(r, alnum, 24))
		return s, "SLACK_BOT_TOKEN=" + s + "\n"
	}},
	{"slack_webhook", func(r *rand.Rand) (string, string) {
		s := "https://hooks.slack.com/services/T" + pick(r, upperNo, 8) + "/B" + pick(r, upperNo, 10) + "/" + pick(r, alnum, 24)
		return s, `notify: { url: "` + s + `" }`
	}},
	{"stripe_key", func(r *rand.Rand) (string, string) {
		s := "sk_live_" + pick(r, alnum, 24)
		return s, "stripe.api_key = '" + s + "'"
	}},
	{"stripe_key", func(r *rand.Rand) (string, string) {
		s := "rk_test_" + pick(r, alnum, 99)
		return s, "Restricted key: " + s
	}},
	{"openai_key", func(r *rand.Rand) (string, string) {
		s := "sk-proj-" + pick(r, b64url, 120)
		return s, "OPENAI_API_KEY=" + s + "\n"
	}},
	{"openai_key", func(r *rand.Rand) (string, string) {
		s := "sk-" + pick(r, alnum, 20) + "T3BlbkFJ" + pick(r, alnum, 20)
		return s, "client = OpenAI(api_key=\"" + s + "\")"
	}},
	{"anthropic_key", func(r *rand.Rand) (string, string) {
		s := "sk-ant-api03-" + pick(r, b64url, 93) + "AA"
		return s, `{"env": {"ANTHROPIC_API_KEY": "` + s + `"}}`
	}},
	{"huggingface_token", func(r *rand.Rand) (string, string) {
		s := "hf_" + pick(r, alnum, 34)
		return s, "huggingface-cli login --token " + s
	}},
	{"npm_token", func(r *rand.Rand) (string, string) {
		s := "npm_" + pick(r, alnum, 36)
		return s, "//registry.npmjs.org/:_authToken=" + s + "\n"
	}},
	{"sendgrid_key", func(r *rand.Rand) (string, string) {
		s := "SG." + pick(r, b64url, 22) + "." + pick(r, b64url, 43)
		return s, "sendgrid.setApiKey('" + s + "');"
	}},
	{"jwt", func(r *rand.Rand) (string, string) {
		h := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"HS256","typ":"JWT"}`))
		p := base64.RawURLEncoding.EncodeToString([]byte(fmt.Sprintf(`{"sub":"%d","name":"%s","iat":%d}`, r.IntN(1e9), pick(r, alnum, 8), 1.7e9+r.IntN(1e8))))
		s := h + "." + p + "." + pick(r, b64url, 43)
		return s, "Cookie: session=" + s + "; Path=/"
	}},
	{"private_key", func(r *rand.Rand) (string, string) {
		var b strings.Builder
		for range 12 {
			b.WriteString(pick(r, b64std, 64) + "\n")
		}
		s := "-----BEGIN RSA PRIVATE KEY-----\n" + b.String() + "-----END RSA PRIVATE KEY-----"
		return s, "$ cat id_rsa\n" + s + "\n"
	}},
	{"private_key", func(r *rand.Rand) (string, string) {
		s := "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA" + pick(r, b64std, 40) + "\n" + pick(r, b64std, 70)
		return s, "$ head -c 200 ~/.ssh/id_ed25519\n" + s // cut by the plugin
	}},
	{"password", func(r *rand.Rand) (string, string) {
		s := pick(r, alnum, 6) + "!" + pick(r, alnum, 5)
		return s, "DB_PASSWORD=" + s + "\nDB_HOST=localhost\n"
	}},
	{"password", func(r *rand.Rand) (string, string) {
		s := pick(r, alnum, 12)
		return s, "  password: " + s + "\n  user: admin\n"
	}},
	{"token", func(r *rand.Rand) (string, string) {
		s := pick(r, hexdig, 32)
		return s, `{"access_token":"` + s + `","token_type":"bearer","expires_in":3600}`
	}},
	{"token", func(r *rand.Rand) (string, string) {
		s := pick(r, b64std, 28)
		return s, "client_secret: " + s + "\n"
	}},
	{"url_credentials", func(r *rand.Rand) (string, string) {
		s := pick(r, alnum, 16)
		return s, "DATABASE_URL=postgres://app:" + s + "@db.internal:5432/app"
	}},
	{"url_credentials", func(r *rand.Rand) (string, string) {
		s := pick(r, alnum, 10) + "%21" + pick(r, alnum, 4)
		return s, "connecting to redis://default:" + s + "@cache:6379/0 ..."
	}},
	{"bearer_token", func(r *rand.Rand) (string, string) {
		s := pick(r, b64url, 40)
		return s, "curl -H 'Authorization: Bearer " + s + "' https://api.example.com/v1/me"
	}},
	{"env_secret", func(r *rand.Rand) (string, string) {
		s := pick(r, b64std, 32)
		return s, "APP_ENV=production\nSESSION_SIGNING=" + s + "\nPORT=8080\n"
	}},
	{"env_secret", func(r *rand.Rand) (string, string) {
		s := pick(r, alnum, 40)
		return s, "export DJANGO_SALT=\"" + s + "\""
	}},
}

// benignGens make text that holds no secret but looks like it could.
var benignGens = []struct {
	name string
	gen  func(r *rand.Rand) string
}{
	{"uuid", func(r *rand.Rand) string {
		u := pick(r, hexdig, 32)
		return fmt.Sprintf(`{"id": "%s-%s-4%s-a%s-%s", "status": "ok"}`, u[:8], u[8:12], u[13:16], u[17:20], u[20:])
	}},
	{"git_log", func(r *rand.Rand) string {
		h := sha1.Sum([]byte(pick(r, alnum, 20)))
		return "commit " + hex.EncodeToString(h[:]) + "\nAuthor: Dev <dev@example.com>\n\n    fix: handle empty token list\n"
	}},
	{"git_env", func(r *rand.Rand) string {
		h := sha1.Sum([]byte(pick(r, alnum, 20)))
		return "GIT_COMMIT=" + hex.EncodeToString(h[:]) + "\nBUILD_NUMBER=" + fmt.Sprint(r.IntN(9999)) + "\n"
	}},
	{"base64_image", func(r *rand.Rand) string {
		raw := make([]byte, 600)
		for i := range raw {
			raw[i] = byte(r.IntN(256))
		}
		return `<img src="data:image/png;base64,iVBORw0KGgo` + base64.StdEncoding.EncodeToString(raw) + `" alt="logo">`
	}},
	{"lockfile_integrity", func(r *rand.Rand) string {
		h := sha512.Sum512([]byte(pick(r, alnum, 20)))
		return fmt.Sprintf(`"node_modules/left-pad": {"version": "1.%d.0", "resolved": "https://registry.npmjs.org/left-pad/-/left-pad-1.%d.0.tgz", "integrity": "sha512-%s"}`,
			r.IntN(9), r.IntN(9), base64.StdEncoding.EncodeToString(h[:]))
	}},
	{"go_sum", func(r *rand.Rand) string {
		h := sha512.Sum512_256([]byte(pick(r, alnum, 20)))
		return "github.com/acme/lib v1." + fmt.Sprint(r.IntN(20)) + ".0 h1:" + base64.StdEncoding.EncodeToString(h[:]) + "\n"
	}},
	{"minified_js", func(r *rand.Rand) string {
		v := pick(r, "abcdefghijklmnopqrstuvwxyz", 1)
		return `!function(e,t){"use strict";var n={token:` + v + `,secret:t.secret,password:e.password,auth:null};function o(e){return e.token=n.token,e}` +
			`var a=function(e){return fetch("/api/login",{method:"POST",body:JSON.stringify({username:e.user,password:e.pw})})};` +
			`t.key="` + pick(r, "abcdefghijklmnopqrstuvwxyz", 6) + `";e.exports={o:o,a:a,accessToken:this.accessToken}}(module,window);`
	}},
	{"ts_types", func(_ *rand.Rand) string {
		return "interface Login {\n  username: string;\n  password: string;\n  token?: string | null;\n}\nconst schema = z.object({ password: z.string().min(8) });\n"
	}},
	{"source", func(r *rand.Rand) string {
		return "func (c *Client) Auth(token string) error {\n\tif token == \"\" {\n\t\treturn ErrNoToken\n\t}\n\tc.token = token\n\treturn nil\n}\n// max_tokens: " + fmt.Sprint(r.IntN(100000)) + "\n"
	}},
	{"env_plain", func(r *rand.Rand) string {
		return fmt.Sprintf("NODE_ENV=production\nPORT=%d\nLOG_LEVEL=debug\nDATABASE_URL=postgres://localhost:5432/app\nPATH=/usr/local/bin:/usr/bin:/bin\nHOME=/home/dev\nGOFLAGS=-mod=mod\nVERSION=1.%d.%d\n", 3000+r.IntN(1000), r.IntN(30), r.IntN(30))
	}},
	{"docker", func(r *rand.Rand) string {
		return "sha256:" + pick(r, hexdig, 64) + "\nCONTAINER ID   IMAGE\n" + pick(r, hexdig, 12) + "   node:20-alpine\n"
	}},
	{"urls", func(r *rand.Rand) string {
		return "fetching https://github.com/acme/app/blob/" + pick(r, hexdig, 40) + "/README.md and git@github.com:acme/app.git at http://localhost:" + fmt.Sprint(3000+r.IntN(999)) + "/?page=2"
	}},
	{"config_refs", func(_ *rand.Rand) string {
		return "password: ${DB_PASSWORD}\napi_key: <your-api-key>\ntoken: \"{{ .Values.token }}\"\nsecret: ********\n"
	}},
	{"prose", func(_ *rand.Rand) string {
		return "The token bucket refills every second. Set the secret in your keychain; never commit a password. Authentication uses a bearer header.\n"
	}},
	{"css_hashes", func(r *rand.Rand) string {
		return `<link rel="stylesheet" href="/assets/index-` + pick(r, alnum, 8) + `.css"><script src="/assets/vendor.` + pick(r, hexdig, 20) + `.js"></script>`
	}},
}

func TestCorpusRecallAndPrecision(t *testing.T) {
	red, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	const perGen = 60
	found, total := 0, 0
	truePos, falsePos, benignHit, benignTotal := 0, 0, 0, 0
	missed := map[string]int{}
	for _, g := range secretGens {
		for range perGen {
			secret, text := g.gen(r)
			out, n := red.Redact(text)
			total++
			truePos += n
			if !strings.Contains(out, secret) {
				found++
			} else {
				missed[g.kind]++
				if missed[g.kind] == 1 {
					t.Logf("missed %s: %q", g.kind, text)
				}
			}
		}
	}
	for _, g := range benignGens {
		for range perGen {
			text := g.gen(r)
			out, n := red.Redact(text)
			benignTotal++
			falsePos += n
			if n > 0 {
				benignHit++
				if benignHit <= 5 {
					t.Logf("false positive in %s: %q", g.name, out)
				}
			}
		}
	}
	recall := float64(found) / float64(total)
	precision := float64(truePos) / float64(truePos+falsePos)
	t.Logf("recall %.4f (%d of %d secrets redacted); precision %.4f (%d redactions in the secret corpus, %d in %d benign texts, %d texts touched)",
		recall, found, total, precision, truePos, falsePos, benignTotal, benignHit)
	if recall < 0.97 {
		t.Errorf("recall %.4f, want >= 0.97 (missed per kind: %v)", recall, missed)
	}
	if precision < 0.98 {
		t.Errorf("precision %.4f, want >= 0.98", precision)
	}
}
