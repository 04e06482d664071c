package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/thatch-run/thatch/actors/ocfamily"
	"github.com/thatch-run/thatch/hosts/opencode/front"
)

func TestWriteIncidentsShowsTheLastFewPerSessionWithWhatWasKept(t *testing.T) {
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.Local)
	var inc []ocfamily.Incident
	for i, k := range []string{"old_1", "old_2", ocfamily.IncidentBufferDrop, ocfamily.IncidentStartFailed, ocfamily.IncidentChildError} {
		inc = append(inc, ocfamily.Incident{Kind: k, Reason: "reason " + k, Kept: "kept " + k, At: at.Add(time.Duration(i) * time.Minute)})
	}
	views := []any{
		ocfamily.StatusView{SessionID: "ses_a", Incidents: inc},
		ocfamily.StatusView{SessionID: "ses_quiet"},
		ocfamily.StatusView{SessionID: "ses_gone", Deleted: true, Incidents: inc[:1]},
	}
	var buf bytes.Buffer
	writeIncidents(&buf, views)
	out := buf.String()
	for _, want := range []string{
		"ses_a  2026-12-01 10:02:00  buffer_drop: reason buffer_drop (kept buffer_drop)",
		"start_failed: reason start_failed (kept start_failed)",
		"child_error: reason child_error (kept child_error)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("incidents lack %q:\n%s", want, out)
		}
	}
	for _, not := range []string{"old_", "ses_quiet", "ses_gone"} {
		if strings.Contains(out, not) {
			t.Errorf("incidents show %q:\n%s", not, out)
		}
	}

	buf.Reset()
	writeIncidents(&buf, views[1:2])
	if buf.Len() != 0 {
		t.Errorf("no incidents, yet printed %q", buf.String())
	}
}

func TestWriteCostsShowsTokensBudgetAndPause(t *testing.T) {
	var buf bytes.Buffer
	writeCosts(&buf, []front.StoreCost{
		{Store: "acme/app", Tokens24h: 1200, Tokens7d: 9000, Budget: 1000, Paused: "extraction paused for store acme/app: budget 1000 tokens/day reached"},
		{Store: "global", Tokens24h: 0, Tokens7d: 40},
	})
	lines := strings.Split(strings.TrimRight(buf.String(), "\n"), "\n")
	if len(lines) != 4 {
		t.Fatalf("want a header, 2 stores and a pause line, got:\n%s", buf.String())
	}
	for i, want := range [][]string{
		{"STORE", "TOKENS 24H", "TOKENS 7D", "BUDGET/DAY"},
		{"acme/app", "1200", "9000", "1000"},
		{"global", "0", "40", "none"},
		{"extraction paused for store acme/app: budget 1000 tokens/day reached", "thatch extraction resume --store acme/app"},
	} {
		for _, w := range want {
			if !strings.Contains(lines[i], w) {
				t.Errorf("line %d %q lacks %q", i, lines[i], w)
			}
		}
	}
}
