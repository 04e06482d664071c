package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/thatch-run/thatch/actors/session"
)

func TestWriteSessionsShowsWhatEachFamilyHolds(t *testing.T) {
	at := time.Date(2026, 11, 30, 10, 0, 0, 0, time.Local)
	views := []any{
		session.StatusView{SessionID: "ses_busy", Pending: 3, Accepted: 2, Extracting: true, ExtractionChild: "ses_x",
			Children: []session.ChildView{
				{SessionID: "ses_t", Kind: session.ChildTask},
				{SessionID: "ses_x", Kind: session.ChildExtraction, Claimed: 2},
			},
			WrapUp: &session.WrapUpView{Kind: "exit", Token: session.TokenExit, Checking: true}},
		session.StatusView{SessionID: "ses_quiet", Pending: 1},
		session.StatusView{SessionID: "ses_leaving", ExitingSince: &at},
		map[string]string{"family": "ses_broken", "error": "supervisor: request: no answer in time"},
	}
	var buf bytes.Buffer
	writeSessions(&buf, views)
	lines := strings.Split(strings.TrimRight(buf.String(), "\n"), "\n")
	if len(lines) != 5 {
		t.Fatalf("want a header and 4 rows, got:\n%s", buf.String())
	}
	for i, want := range [][]string{
		{"SESSION", "PENDING", "ACCEPTED", "STATE", "CHILDREN", "WRAP-UP"},
		{"ses_busy", "3", "2", "extracting in ses_x", "ses_t task", "ses_x extraction (holds 2)", "/thatch/exit (checking)"},
		{"ses_quiet", "1", "0", "-"},
		{"ses_leaving", "closing (exit greenlit 10:00:00)"},
		{"ses_broken", "error: supervisor: request: no answer in time"},
	} {
		for _, w := range want {
			if !strings.Contains(lines[i], w) {
				t.Errorf("line %d %q lacks %q", i, lines[i], w)
			}
		}
	}
}
