package persistence

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"
)

func scanRows(t tb, r *Rows, table string) []Row {
	t.Helper()
	var rows []Row
	if err := r.Scan(table, func(row Row) error {
		rows = append(rows, row)
		return nil
	}); err != nil {
		t.Fatalf("scan %s: %v", table, err)
	}
	return rows
}

func rowKeys(rows []Row) []string {
	keys := make([]string, len(rows))
	for i, r := range rows {
		keys[i] = r.Key
	}
	return keys
}

func TestRowsPutGetOverwriteDelete(t *testing.T) {
	clock := newFakeClock()
	st := openMem(t, Options{Now: clock.Now})
	r := st.Rows()

	if _, ok, err := r.Get("bindings", "chat-1"); err != nil || ok {
		t.Fatalf("get of a missing row: ok=%v err=%v", ok, err)
	}
	t1 := clock.Now()
	if err := r.Put("bindings", "chat-1", []byte("v1")); err != nil {
		t.Fatal(err)
	}
	row, ok, err := r.Get("bindings", "chat-1")
	if err != nil || !ok {
		t.Fatalf("get after put: ok=%v err=%v", ok, err)
	}
	if row.Table != "bindings" || row.Key != "chat-1" || string(row.Value) != "v1" || !row.WrittenAt.Equal(t1) {
		t.Fatalf("get after put: %+v, want v1 written at %v", row, t1)
	}

	t2 := clock.Advance(time.Minute)
	if err := r.Put("bindings", "chat-1", []byte("v2")); err != nil {
		t.Fatal(err)
	}
	row, ok, err = r.Get("bindings", "chat-1")
	if err != nil || !ok || string(row.Value) != "v2" || !row.WrittenAt.Equal(t2) {
		t.Fatalf("get after overwrite: %+v ok=%v err=%v, want v2 written at %v", row, ok, err, t2)
	}

	// An empty value is a value, not a missing row.
	if err := r.Put("bindings", "empty", nil); err != nil {
		t.Fatal(err)
	}
	if row, ok, err := r.Get("bindings", "empty"); err != nil || !ok || len(row.Value) != 0 {
		t.Fatalf("empty value: %+v ok=%v err=%v", row, ok, err)
	}

	if err := r.Delete("bindings", "chat-1"); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := r.Get("bindings", "chat-1"); err != nil || ok {
		t.Fatalf("get after delete: ok=%v err=%v", ok, err)
	}
	if err := r.Delete("bindings", "never-written"); err != nil {
		t.Fatalf("delete of a missing row: %v", err)
	}
}

func TestRowsScanOrderAndTablePrefixes(t *testing.T) {
	st := openMem(t, Options{})
	r := st.Rows()
	keys := []string{"b", "a", "", "a\x00", "ab", "B", "\xff"}
	for _, k := range keys {
		if err := r.Put("t", k, []byte("t:"+k)); err != nil {
			t.Fatal(err)
		}
	}
	// Tables whose names extend or share a prefix with "t".
	for _, table := range []string{"tt", "t\x01", "u", "s"} {
		if err := r.Put(table, "a", []byte(table)); err != nil {
			t.Fatal(err)
		}
	}
	// A journal entity must not show up as a row either.
	mustAppend(t, st.Journal(), Identity{Kind: "t", ID: "a"}, 1, 1, MarkActive)

	rows := scanRows(t, r, "t")
	wantKeys := slices.Clone(keys)
	slices.Sort(wantKeys)
	if got := rowKeys(rows); !slices.Equal(got, wantKeys) {
		t.Fatalf("scan of t: keys %q, want %q", got, wantKeys)
	}
	for _, row := range rows {
		if row.Table != "t" || string(row.Value) != "t:"+row.Key {
			t.Fatalf("scan of t returned %+v", row)
		}
	}
	if got := rowKeys(scanRows(t, r, "tt")); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("scan of tt: %q", got)
	}
	if got := scanRows(t, r, "none"); len(got) != 0 {
		t.Fatalf("scan of an empty table: %+v", got)
	}

	stop := errors.New("stop")
	n := 0
	if err := r.Scan("t", func(Row) error { n++; return stop }); !errors.Is(err, stop) || n != 1 {
		t.Fatalf("scan did not stop at the callback's error: err=%v calls=%d", err, n)
	}
}

func TestRowsBadTable(t *testing.T) {
	st := openMem(t, Options{})
	r := st.Rows()
	for _, table := range []string{"", "a\x00b"} {
		calls := map[string]error{
			"Put":    r.Put(table, "k", []byte("v")),
			"Delete": r.Delete(table, "k"),
			"Scan":   r.Scan(table, func(Row) error { return nil }),
		}
		_, _, calls["Get"] = r.Get(table, "k")
		_, calls["DeleteWrittenBefore"] = r.DeleteWrittenBefore(table, time.Now())
		for name, err := range calls {
			if !errors.Is(err, ErrBadRowKey) {
				t.Errorf("%s on table %q: %v, want ErrBadRowKey", name, table, err)
			}
		}
	}
}

func TestDeleteWrittenBeforeAgesOutOnlyOldRows(t *testing.T) {
	clock := newFakeClock()
	st := openMem(t, Options{Now: clock.Now})
	r := st.Rows()
	put := func(table, key string) {
		t.Helper()
		if err := r.Put(table, key, []byte(key)); err != nil {
			t.Fatal(err)
		}
	}
	put("state", "old-1")
	put("state", "old-2")
	put("other", "old") // same age, other table
	cutoff := clock.Advance(time.Hour)
	put("state", "at-cutoff")
	clock.Advance(time.Hour)
	put("state", "new")
	put("state", "old-2") // rewritten: fresh again

	n, err := r.DeleteWrittenBefore("state", cutoff)
	if err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Fatalf("aged out %d rows, want 1", n)
	}
	if got := rowKeys(scanRows(t, r, "state")); !slices.Equal(got, []string{"at-cutoff", "new", "old-2"}) {
		t.Fatalf("rows left: %q", got)
	}
	if got := rowKeys(scanRows(t, r, "other")); !slices.Equal(got, []string{"old"}) {
		t.Fatalf("age-out of state touched other: %q", got)
	}
	if n, err := r.DeleteWrittenBefore("state", cutoff); err != nil || n != 0 {
		t.Fatalf("second age-out: n=%d err=%v, want 0", n, err)
	}
}

// TestDeleteWrittenBeforeKeepsConcurrentWrites rewrites rows while a sweeper
// ages out the old ones. A row rewritten after the cutoff is fresh, whichever
// of the two happens first, so the sweeper must never delete it.
func TestDeleteWrittenBeforeKeepsConcurrentWrites(t *testing.T) {
	const rows = 64
	for trial := range 20 {
		clock := newFakeClock()
		st := openMem(t, Options{Now: clock.Now})
		r := st.Rows()
		for i := range rows {
			if err := r.Put("state", fmt.Sprint(i), []byte("old")); err != nil {
				t.Fatal(err)
			}
		}
		cutoff := clock.Advance(time.Hour)

		var wg sync.WaitGroup
		errs := make(chan error, 2)
		wg.Go(func() {
			for i := range rows {
				if err := r.Put("state", fmt.Sprint(i), []byte("fresh")); err != nil {
					errs <- err
					return
				}
			}
		})
		wg.Go(func() {
			for range 4 {
				if _, err := r.DeleteWrittenBefore("state", cutoff); err != nil {
					errs <- err
					return
				}
			}
		})
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		// Whatever the interleaving, every row was rewritten after the
		// cutoff; any old row left is aged out now.
		if _, err := r.DeleteWrittenBefore("state", cutoff); err != nil {
			t.Fatal(err)
		}
		got := scanRows(t, r, "state")
		if len(got) != rows {
			t.Fatalf("trial %d: %d of %d freshly written rows left after aging out", trial, len(got), rows)
		}
		for _, row := range got {
			if string(row.Value) != "fresh" {
				t.Fatalf("trial %d: row %s holds %q", trial, row.Key, row.Value)
			}
		}
		closeQuietly(t, st)
	}
}
