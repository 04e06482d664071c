package control

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestDecodeJSON(t *testing.T) {
	type body struct {
		Name string `json:"name"`
		N    int    `json:"n"`
	}
	cases := []struct {
		name, in string
		limit    int64
		ok       bool
		errHas   string
		want     body
	}{
		{name: "one object", in: `{"name":"a","n":2}`, ok: true, want: body{"a", 2}},
		{name: "surrounding space", in: " \n\t{\"name\":\"a\"}\r\n  ", ok: true, want: body{Name: "a"}},
		{name: "unknown field is kept compatible", in: `{"name":"a","extra":true}`, ok: true, want: body{Name: "a"}},
		{name: "exactly at the limit", in: `{"name":"abc"}`, limit: 14, ok: true, want: body{Name: "abc"}},
		{name: "second value", in: `{"name":"a"}{"name":"b"}`, errHas: "bad JSON body: trailing data"},
		{name: "second scalar", in: `{"name":"a"} 1`, errHas: "bad JSON body: trailing data"},
		{name: "garbage after", in: `{"name":"a"}x`, errHas: "bad JSON body: trailing data"},
		{name: "closing brace after", in: `{"name":"a"}}`, errHas: "bad JSON body: trailing data"},
		{name: "NUL after", in: "{\"name\":\"a\"}\x00", errHas: "bad JSON body: trailing data"},
		{name: "empty", in: ``, errHas: "bad JSON body: empty"},
		{name: "only space", in: "  \n", errHas: "bad JSON body: empty"},
		{name: "truncated", in: `{"name":"a"`, errHas: "bad JSON body"},
		{name: "wrong type", in: `{"n":"two"}`, errHas: "bad JSON body"},
		{name: "over the limit", in: `{"name":"abcd"}`, limit: 14, errHas: "bad JSON body: larger than 14 bytes"},
		{name: "trailing space over the limit", in: `{"name":"abc"}` + strings.Repeat(" ", 100), limit: 20, errHas: "bad JSON body: larger than 20 bytes"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest("POST", "/v1/x", strings.NewReader(tc.in))
			w := httptest.NewRecorder()
			limit := tc.limit
			if limit == 0 {
				limit = 1 << 20
			}
			var got body
			ok := DecodeJSON(w, r, &got, limit)
			if ok != tc.ok {
				t.Fatalf("DecodeJSON = %v, want %v (answer %d %s)", ok, tc.ok, w.Code, w.Body)
			}
			if ok {
				if got != tc.want {
					t.Errorf("decoded %+v, want %+v", got, tc.want)
				}
				if w.Body.Len() != 0 {
					t.Errorf("wrote %q on success", w.Body)
				}
				return
			}
			if w.Code != http.StatusBadRequest {
				t.Errorf("status %d, want 400", w.Code)
			}
			var e struct {
				Error string `json:"error"`
			}
			if err := json.Unmarshal(w.Body.Bytes(), &e); err != nil {
				t.Fatalf("answer %q is not a JSON error: %v", w.Body, err)
			}
			if !strings.Contains(e.Error, tc.errHas) {
				t.Errorf("error %q, want it to contain %q", e.Error, tc.errHas)
			}
		})
	}
}

func TestDecodeJSONDefaultLimit(t *testing.T) {
	// Leading space is the cheapest way to be over the limit.
	big := strings.Repeat(" ", DefaultBodyLimit) + `{"name":"a"}`
	r := httptest.NewRequest("POST", "/v1/x", strings.NewReader(big))
	w := httptest.NewRecorder()
	var v struct{ Name string }
	if DecodeJSON(w, r, &v, 0) || w.Code != http.StatusBadRequest {
		t.Fatalf("a body over DefaultBodyLimit was accepted with limit 0: %d", w.Code)
	}
}
