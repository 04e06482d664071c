package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/thatch-run/thatch/actors/imbinding"
	"github.com/thatch-run/thatch/actors/ocfamily"
	"github.com/thatch-run/thatch/actors/sweeper"
	"github.com/thatch-run/thatch/messages"
)

func TestWriteSessionsShowsWhatEachFamilyHolds(t *testing.T) {
	at := time.Date(2026, 11, 30, 10, 0, 0, 0, time.Local)
	views := []any{
		ocfamily.StatusView{SessionID: "ses_busy", Pending: 3, Accepted: 2, Extracting: true, ExtractionChild: "ses_x",
			Children: []ocfamily.ChildView{
				{SessionID: "ses_t", Kind: ocfamily.ChildTask},
				{SessionID: "ses_x", Kind: ocfamily.ChildExtraction, Claimed: 2},
			},
			WrapUp: &ocfamily.WrapUpView{Kind: "exit", Token: ocfamily.TokenExit, Checking: true}},
		ocfamily.StatusView{SessionID: "ses_quiet", Pending: 1},
		ocfamily.StatusView{SessionID: "ses_leaving", ExitingSince: &at},
		map[string]string{"family": "ses_broken", "error": "supervisor: request: no answer in time"},
		ocfamily.StatusView{SessionID: "ses_done", Children: []ocfamily.ChildView{{SessionID: "ses_t2", Kind: ocfamily.ChildTask}}},
		ocfamily.StatusView{SessionID: "ses_gone", Deleted: true},
	}
	var buf bytes.Buffer
	writeSessions(&buf, views, false)
	lines := strings.Split(strings.TrimRight(buf.String(), "\n"), "\n")
	if len(lines) != 6 {
		t.Fatalf("want a header, 4 rows and a count of the rest, got:\n%s", buf.String())
	}
	for i, want := range [][]string{
		{"SESSION", "PENDING", "ACCEPTED", "STATE", "CHILDREN", "WRAP-UP"},
		{"ses_busy", "3", "2", "extracting in ses_x", "ses_t task", "ses_x extraction (holds 2)", "/thatch/exit (checking)"},
		{"ses_quiet", "1", "0", "-"},
		{"ses_leaving", "closing (exit greenlit 10:00:00)"},
		{"ses_broken", "error: supervisor: request: no answer in time"},
		{"not listed: 1 at rest, 1 deleted; --all lists them"},
	} {
		for _, w := range want {
			if !strings.Contains(lines[i], w) {
				t.Errorf("line %d %q lacks %q", i, lines[i], w)
			}
		}
	}
}

func TestWriteSessionsAllListsRestingAndDeleted(t *testing.T) {
	views := []any{
		ocfamily.StatusView{SessionID: "ses_done"},
		ocfamily.StatusView{SessionID: "ses_gone", Deleted: true},
	}
	var buf bytes.Buffer
	writeSessions(&buf, views, true)
	out := buf.String()
	for _, want := range []string{"ses_done", "ses_gone", "deleted"} {
		if !strings.Contains(out, want) {
			t.Errorf("--all output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "not listed") {
		t.Errorf("--all still hides sessions:\n%s", out)
	}
}

func TestWriteSweepersShowsWhatEachSweepDidAndWhenItRunsNext(t *testing.T) {
	last := time.Date(2026, 11, 30, 10, 0, 0, 0, time.Local)
	next := last.Add(5 * time.Minute)
	rep := &messages.SweepReport{Sweep: messages.SweepStrand, Started: last, Finished: last.Add(1200 * time.Millisecond)}
	rep.Add(&rep.Moved, messages.SweepItem{ID: "ses_top", To: "/src/main", Reason: "top-level session in a deleted directory"})
	rep.Add(&rep.Skipped, messages.SweepItem{ID: "ses_task", Reason: "task child"})
	var buf bytes.Buffer
	writeSweepers(&buf, []sweeper.SweepView{
		{Sweeper: messages.SweepRuntime, Disarmed: false, LastRun: &last, NextRun: &next},
		{Sweeper: messages.SweepStrand, LastRun: &last, NextRun: &next, TookMS: 1200, Last: rep},
		{Sweeper: "other", Disarmed: true},
	})
	out := buf.String()
	for _, want := range []string{
		"NEXT RUN", "1.2s", "10:05:00", "off",
		"strand moved ses_top to /src/main: top-level session in a deleted directory",
		"strand skipped ses_task: task child",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestWriteBindingsShowsEachThread(t *testing.T) {
	views := []any{
		imbinding.View{Thread: "tg:-100:5", DisplayName: "api", Agent: "claude", Window: "@3", State: "bound",
			LastMessage: "2026-12-01T10:00:00Z"},
		imbinding.View{Thread: "tg:-100:7", DisplayName: "web", Agent: "codex", State: "setup", Step: "dir", Queued: 2},
		map[string]string{"thread": "tg:-100:9", "error": "supervisor: request: no answer in time"},
		imbinding.View{Thread: "fs:oc_1", DisplayName: "build box", Agent: "claude", Window: "@4", State: "ended",
			Ended: "disbanded; window kept"},
	}
	var buf bytes.Buffer
	writeBindings(&buf, views)
	lines := strings.Split(strings.TrimRight(buf.String(), "\n"), "\n")
	if len(lines) != 6 {
		t.Fatalf("want a header, 4 rows and an ended line, got:\n%s", buf.String())
	}
	for i, want := range [][]string{
		{"PLATFORM", "THREAD", "NAME", "AGENT", "WINDOW", "STATE", "LAST MESSAGE"},
		{"telegram", "tg:-100:5", "api", "claude", "@3", "bound", "2026-12-01T10:00:00Z"},
		{"telegram", "tg:-100:7", "web", "codex", "setup (dir), 2 queued"},
		{"telegram", "tg:-100:9", "error: supervisor: request: no answer in time"},
		{"feishu", "fs:oc_1", "build box", "claude", "@4", "ended"},
		{"ended: disbanded; window kept"},
	} {
		for _, w := range want {
			if !strings.Contains(lines[i], w) {
				t.Errorf("line %d %q lacks %q", i, lines[i], w)
			}
		}
	}
}
