package front

import (
	"testing"
	"time"

	"github.com/thatch-run/thatch/actors/ocfamily"
)

func TestPlanStrandActions(t *testing.T) {
	const (
		gone = "/src/wt-gone"
		live = "/src/main"
	)
	v1 := map[string]strandHostCaps{"h": {Move: true, Delete: true}}
	checkouts := map[string]string{"prj": live, "global": "/", "prj-gone": "/src/also-gone"}
	dead := map[string]bool{gone: true, "/src/also-gone": true, live: false}
	row := func(id, parent, dir, title, project string) strandRow {
		return strandRow{ID: id, Host: "h", ProjectID: project, ParentID: parent, Directory: dir, Title: title}
	}
	for _, tc := range []struct {
		name string
		row  strandRow
		caps map[string]strandHostCaps
		verb strandVerb // "" for no action at all
		to   string
		why  string
	}{
		{"a live directory is never touched, even for machinery", row("ses_x", "ses_p", live, ocfamily.ExtractionTitle, "prj"), v1, "", "", ""},
		{"a live directory is never touched, even for a top-level session", row("ses_a", "", live, "work", "prj"), v1, "", "", ""},
		{"a directory whose stat failed otherwise counts as live", row("ses_b", "", "/src/unknown", "work", "prj"), v1, "", "", ""},
		{"a row without a directory is left alone", row("ses_c", "", "", "work", "prj"), v1, "", "", ""},
		{"machinery in a dead directory is deleted", row("ses_x", "ses_p", gone, ocfamily.ExtractionTitle, "prj"), v1, strandDelete, "", reasonMachinery},
		{"top-level machinery in a dead directory is deleted too", row("ses_y", "", gone, ocfamily.ExtractionTitle, "prj"), v1, strandDelete, "", reasonMachinery},
		{"a real top-level session is moved to its project's checkout", row("ses_a", "", gone, "my work", "prj"), v1, strandMove, live, reasonStranded},
		{"a task child is always skipped", row("ses_t", "ses_p", gone, "explore the code", "prj"), v1, strandSkip, "", reasonTaskChild},
		{"no checkout for an unknown project", row("ses_a", "", gone, "w", "prj-unknown"), v1, strandSkip, "", reasonNoCheckout},
		{"the global project's / is no checkout", row("ses_a", "", gone, "w", "global"), v1, strandSkip, "", reasonNoCheckout},
		{"a checkout that is gone too", row("ses_a", "", gone, "w", "prj-gone"), v1, strandSkip, "", reasonCheckoutGone},
		{"no move endpoint", row("ses_a", "", gone, "w", "prj"), map[string]strandHostCaps{"h": {}}, strandSkip, "", reasonNoMove},
		{"no delete endpoint", row("ses_x", "ses_p", gone, ocfamily.ExtractionTitle, "prj"), map[string]strandHostCaps{"h": {}}, strandSkip, "", reasonNoDelete},
		{"a user's session is never deleted, even without a move endpoint", row("ses_a", "", gone, "w", "prj"), map[string]strandHostCaps{"h": {Delete: true}}, strandSkip, "", reasonNoMove},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := planStrandActions(strandInput{Rows: []strandRow{tc.row}, Dead: dead, Checkouts: checkouts, Caps: tc.caps})
			if tc.verb == "" {
				if len(got) != 0 {
					t.Fatalf("want no action, got %+v", got)
				}
				return
			}
			if len(got) != 1 {
				t.Fatalf("want one action, got %+v", got)
			}
			a := got[0]
			if a.Verb != tc.verb || a.To != tc.to || a.Reason != tc.why || a.Row != tc.row {
				t.Fatalf("got %+v, want %s to %q (%s)", a, tc.verb, tc.to, tc.why)
			}
		})
	}
}

func TestPlanStrandActionsIsSortedAndNeverDeletesAUsersSession(t *testing.T) {
	in := strandInput{
		Dead:      map[string]bool{"/gone": true},
		Checkouts: map[string]string{"p": "/main"},
		Caps:      map[string]strandHostCaps{"h": {Move: true, Delete: true}},
	}
	for _, id := range []string{"ses_c", "ses_a", "ses_b"} {
		in.Rows = append(in.Rows, strandRow{ID: id, Host: "h", ProjectID: "p", Directory: "/gone", Title: "t"})
	}
	got := planStrandActions(in)
	for i, want := range []string{"ses_a", "ses_b", "ses_c"} {
		if got[i].Row.ID != want || got[i].Verb != strandMove {
			t.Fatalf("action %d: %+v", i, got[i])
		}
	}
}

func TestPlanRuntimeSweep(t *testing.T) {
	now := time.Date(2026, 3, 8, 9, 0, 0, 0, time.UTC)
	cutoff := now.Add(-7 * 24 * time.Hour)
	old, fresh := cutoff.Add(-time.Hour), cutoff.Add(time.Hour)
	for _, tc := range []struct {
		name  string
		f     runtimeFamily
		want  string // drop, keep, stamp or ""
		why   string
		keyed string
	}{
		{"state older than the TTL is dropped", runtimeFamily{Touched: old}, "drop", reasonExpired, ""},
		{"state written within the TTL stays", runtimeFamily{Touched: fresh}, "", "", ""},
		{"state whose directory is gone is dropped at once", runtimeFamily{Touched: fresh, DirGone: true}, "drop", reasonDirGone, ""},
		{"state a resumed opencode inherited stays, however old", runtimeFamily{Touched: old, Inherited: "opencode@127.0.0.1:4096"}, "keep", reasonInherited, "opencode@127.0.0.1:4096"},
		{"inherited state stays even in a gone directory", runtimeFamily{Touched: old, DirGone: true, Inherited: "h"}, "keep", reasonInherited, "h"},
		{"unfinished work is finished first", runtimeFamily{Touched: old, Active: true}, "keep", reasonActive, ""},
		{"unfinished work is reported kept while the family is awake too", runtimeFamily{Touched: old, Active: true, Live: true}, "keep", reasonActive, ""},
		{"a live family is being written", runtimeFamily{Touched: old, Live: true}, "", "", ""},
		{"a tombstone is left to its own leg", runtimeFamily{Touched: old, Tombstone: true}, "", "", ""},
		{"state of an older thatch starts its TTL now", runtimeFamily{}, "stamp", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.f.ID = "ses_p"
			p := planRuntimeSweep([]runtimeFamily{tc.f}, cutoff)
			var got, why, host string
			switch {
			case len(p.Drop) == 1:
				got, why = "drop", p.Drop[0].Reason
			case len(p.Kept) == 1:
				got, why, host = "keep", p.Kept[0].Reason, p.Kept[0].Host
			case len(p.Stamp) == 1:
				got = "stamp"
			}
			if n := len(p.Drop) + len(p.Kept) + len(p.Stamp); n > 1 {
				t.Fatalf("one family, %d decisions: %+v", n, p)
			}
			if got != tc.want || (tc.why != "" && !startsWith(why, tc.why)) || host != tc.keyed {
				t.Fatalf("got %s %q %q, want %s %q %q", got, why, host, tc.want, tc.why, tc.keyed)
			}
		})
	}
}

func startsWith(s, prefix string) bool { return len(s) >= len(prefix) && s[:len(prefix)] == prefix }
