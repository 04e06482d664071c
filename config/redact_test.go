package config

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestRedactURL(t *testing.T) {
	cases := []struct{ in, want string }{
		{"http://127.0.0.1:4096", "http://127.0.0.1:4096"},
		{"http://127.0.0.1:4096/v1?model=x&limit=3", "http://127.0.0.1:4096/v1?model=x&limit=3"},
		{"https://bob:hunter2@emb.example/v1", "https://bob:xxxxx@emb.example/v1"},
		{"https://bob@emb.example/v1", "https://bob@emb.example/v1"},
		{"https://emb.example/v1?api-key=s3cr3t", "https://emb.example/v1?api-key=xxxxx"},
		{"https://emb.example/v1?model=m&token=s3cr3t&n=1", "https://emb.example/v1?model=m&token=xxxxx&n=1"},
		{"https://emb.example/v1?KEY=s3cr3t", "https://emb.example/v1?KEY=xxxxx"},
		{"https://emb.example/v1?Access_Token=s3cr3t", "https://emb.example/v1?Access_Token=xxxxx"},
		{"https://emb.example/v1?password=s3cr3t;secret=s3cr3t", "https://emb.example/v1?password=xxxxx;secret=xxxxx"},
		{"https://emb.example/v1?x-api-key=s3cr3t&client_secret=s3cr3t", "https://emb.example/v1?x-api-key=xxxxx&client_secret=xxxxx"},
		{"https://emb.example/v1?api%2Dkey=s3cr3t", "https://emb.example/v1?api%2Dkey=xxxxx"},
		{"https://emb.example/v1#access_token=s3cr3t&state=ok", "https://emb.example/v1#access_token=xxxxx&state=ok"},
		{"https://a:s3cr3t@emb.example/v1?token=s3cr3t", "https://a:xxxxx@emb.example/v1?token=xxxxx"},
		// Not valid URLs: they appear in Validate's errors, so the
		// redaction must not depend on url.Parse succeeding.
		{"http://bob:s3cr3t@host:notaport/?token=s3cr3t", "http://bob:xxxxx@host:notaport/?token=xxxxx"},
		{"127.0.0.1:4096/?api-key=s3cr3t", "127.0.0.1:4096/?api-key=xxxxx"},
		{"http://bob:pa?ss#wd@host/", "http://bob:xxxxx@host/"},
		{"http://ho st/?key=s3cr3t", "http://ho st/?key=xxxxx"},
	}
	for _, tc := range cases {
		if got := RedactURL(tc.in); got != tc.want {
			t.Errorf("RedactURL(%q)\n got %q\nwant %q", tc.in, got, tc.want)
		}
		if strings.Contains(RedactURL(tc.in), "s3cr3t") || strings.Contains(RedactURL(tc.in), "hunter2") {
			t.Errorf("RedactURL(%q) leaks a secret", tc.in)
		}
	}
}

// TestQueryCredentialsStayHidden loads URLs with credentials in their query
// and checks neither check-config's map nor Validate's errors show them.
func TestQueryCredentialsStayHidden(t *testing.T) {
	file := `
[memory]
embedder = "openai"
embeddings_model = "m"
embeddings_url = "https://emb.example/v1?api-key=qs-apikey&Token=qs-token"
[[opencode.servers]]
name = "a"
url = "http://u:qs-userpass@127.0.0.1:1/?access_token=qs-access"
[[opencode.servers]]
name = "b"
url = "ftp://127.0.0.1:2/?password=qs-password&SECRET=qs-secret&key=qs-key"
`
	o := isolated(t)
	o.File = writeFile(t, t.TempDir(), "c.toml", file)
	c, err := Load(o)
	if c == nil {
		t.Fatalf("no config: %v", err)
	}
	if got := problemKeys(t, err); len(got) != 1 || got[0] != "opencode.servers[1].url" {
		t.Fatalf("problems %v, want only opencode.servers[1].url (%v)", got, err)
	}
	js, _ := json.Marshal(c.Redacted())
	for where, text := range map[string]string{"Redacted": string(js), "error": err.Error()} {
		for _, s := range []string{"qs-apikey", "qs-token", "qs-userpass", "qs-access", "qs-password", "qs-secret", "qs-key"} {
			if strings.Contains(text, s) {
				t.Errorf("%s shows %q:\n%s", where, s, text)
			}
		}
	}
	// The rest of the URL stays readable.
	if !strings.Contains(string(js), "https://emb.example/v1?api-key=xxxxx\\u0026Token=xxxxx") {
		t.Errorf("embeddings_url not shown as expected: %s", js)
	}
}

func TestChildEnvKeepsSecretsFromWhatThatchStarts(t *testing.T) {
	c := Defaults()
	c.IM.Telegram.Token = "123:bot-token"
	c.IM.Feishu.AppSecret = "fs-app-secret"
	c.Memory.EmbeddingsAPIKey = "sk-embed"
	c.OpenCode.Servers = []Server{{URL: "http://127.0.0.1:4096", Password: "pw-1"}}
	env := []string{
		"HOME=/home/u", "PATH=/usr/bin", "LANG=C.UTF-8",
		"THATCH_IM_TELEGRAM_TOKEN=123:bot-token", "THATCH_CONFIG=/etc/thatch.toml",
		"OPENCODE_SERVER_PASSWORD=pw-1", "MY_TOKEN=123:bot-token", "EMBED=sk-embed", "OTHER=pw-1x",
		"THATCH_IM_FEISHU_APP_SECRET=fs-app-secret",
		"BOT_URL=https://api.telegram.org/bot123:bot-token/", "SHORT_IN=xpw-1x",
	}
	got := strings.Join(c.ChildEnv(env), " ")
	if want := "HOME=/home/u PATH=/usr/bin LANG=C.UTF-8 OTHER=pw-1x SHORT_IN=xpw-1x"; got != want {
		t.Fatalf("ChildEnv = %q, want %q", got, want)
	}
	if got := strings.Join(c.SecretValues(), " "); got != "sk-embed 123:bot-token fs-app-secret pw-1" {
		t.Fatalf("SecretValues = %q", got)
	}
}
