package fakefeishu

import (
	"bytes"
	"encoding/json"
	"net/http"
	"testing"
)

func call(t *testing.T, s *Server, method, path, token string, body any) (int, map[string]any) {
	t.Helper()
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest(method, s.URL+path, bytes.NewReader(b))
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

func TestCallsNeedAnIssuedTokenAndCardValuesMustBeObjects(t *testing.T) {
	s := New("cli", "sec")
	defer s.Close()
	s.AddChat(Chat{ID: "oc_1", Name: "x"})
	msg := map[string]any{"receive_id": "oc_1", "msg_type": "text", "content": `{"text":"hi"}`}
	if st, out := call(t, s, "POST", "/open-apis/im/v1/messages?receive_id_type=chat_id", "t-forged", msg); st != 401 || out["code"] != float64(CodeBadToken) {
		t.Fatalf("forged token: %d %v", st, out)
	}
	if st, _ := call(t, s, "POST", "/open-apis/auth/v3/tenant_access_token/internal", "", map[string]string{"app_id": "cli", "app_secret": "wrong"}); st == 200 {
		t.Fatal("a wrong secret got a token")
	}
	_, out := call(t, s, "POST", "/open-apis/auth/v3/tenant_access_token/internal", "", map[string]string{"app_id": "cli", "app_secret": "sec"})
	tok, _ := out["tenant_access_token"].(string)
	if st, out := call(t, s, "POST", "/open-apis/im/v1/messages?receive_id_type=chat_id", tok, msg); st != 200 || out["code"] != float64(0) {
		t.Fatalf("send: %d %v", st, out)
	}
	card := map[string]any{"receive_id": "oc_1", "msg_type": "interactive",
		"content": `{"elements":[{"tag":"action","actions":[{"tag":"button","value":"plain"}]}]}`}
	if st, _ := call(t, s, "POST", "/open-apis/im/v1/messages?receive_id_type=chat_id", tok, card); st != 400 {
		t.Fatalf("a card with a string value answered %d", st)
	}
	if n := len(s.Sent()); n != 1 {
		t.Fatalf("%d recorded, want the one text", n)
	}
}
