package memory

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

// Two stores that apply every change both made, in one order, end the
// same: the last write of a label wins, deletes reach both, and a change
// applied twice changes nothing.
func TestChangesAppliedInOneOrderLeaveEveryStoreTheSame(t *testing.T) {
	a, b := newEnv(t, Options{}), newEnv(t, Options{})
	var log []Change
	for _, e := range []*env{a, b} {
		e.ms.OnChange(func(c Change) { log = append(log, c) })
	}
	a.remember(RememberInput{Label: "Deploy", Content: "make ship", Store: "acme/web"})
	b.clk.Advance(time.Second)
	b.remember(RememberInput{Label: "Deploy", Content: "make release", Store: "acme/web"})
	a.remember(RememberInput{Label: "Lint", Content: "make lint", Store: "global"})
	if _, err := a.ms.Forget("global", "Lint"); err != nil {
		t.Fatal(err)
	}
	b.remember(RememberInput{Label: "Test", Content: "make test", Store: "global", Confidence: 9})
	if len(log) != 5 {
		t.Fatalf("told %d changes; want 5", len(log))
	}
	told := len(log)
	for _, e := range []*env{a, b} {
		for _, c := range append(log[:told:told], log[:told]...) { // each twice
			if err := e.ms.Apply(context.Background(), c); err != nil {
				t.Fatalf("apply %+v: %v", c, err)
			}
		}
	}
	if len(log) != told {
		t.Fatal("an applied change was told again")
	}
	for _, e := range []*env{a, b} {
		d, err := e.ms.Find("acme/web", "Deploy")
		if err != nil || d.Content != "make release" {
			t.Errorf("deploy = %+v, %v; want the last write", d, err)
		}
		if _, err := e.ms.Find("global", "Lint"); err == nil {
			t.Error("the forgotten memory is back")
		}
		if tm, err := e.ms.Find("global", "Test"); err != nil || tm.Confidence != 9 || !tm.Updated.Equal(log[4].Entry.Updated) {
			t.Errorf("test = %+v, %v; want it as written", tm, err)
		}
	}
}

// The change log keeps a store's own writes in their own commits: a
// remember and a forget each hold their change in the same batch (it is
// in the database with them), a write whose log fails is not made, and
// a change applied from another store is not logged.
func TestTheChangeLogIsCommittedWithTheWrite(t *testing.T) {
	e := newEnv(t, Options{})
	var logged []Change
	fail := false
	e.ms.LogChanges(func(b *pebble.Batch, c Change) error {
		if fail {
			return errors.New("the log is full")
		}
		logged = append(logged, c)
		return b.Set([]byte("zz-log/"+c.Slug), []byte(fmt.Sprint(c.Delete)), nil)
	})
	inDB := func(key string) string {
		v, closer, err := e.ms.db.Get([]byte(key))
		if err != nil {
			return ""
		}
		defer closer.Close()
		return string(v)
	}
	res := e.remember(RememberInput{Label: "Deploy", Content: "make ship", Store: "global"})
	if len(logged) != 1 || logged[0].Entry == nil || logged[0].Entry.Content != "make ship" || inDB("zz-log/"+res.Entry.Slug) != "false" {
		t.Fatalf("logged %+v", logged)
	}
	if _, err := e.ms.Forget("global", "Deploy"); err != nil || inDB("zz-log/"+res.Entry.Slug) != "true" {
		t.Fatalf("forget: %v, logged %+v", err, logged)
	}
	fail = true
	if _, err := e.ms.Remember(context.Background(), RememberInput{Label: "Lint", Content: "make lint", Store: "global"}); err == nil {
		t.Fatal("a write whose change could not be kept was made")
	}
	if _, err := e.ms.Get("global", Slugify("Lint")); !errors.Is(err, ErrNotFound) {
		t.Fatalf("the failed write is in the store: %v", err)
	}
	fail = false
	n := len(logged)
	other := Entry{Slug: Slugify("Test"), Store: "global", Label: "Test", Content: "make test", Confidence: 5,
		Created: time.Unix(100, 0).UTC(), Updated: time.Unix(100, 0).UTC()}
	if err := e.ms.Apply(context.Background(), Change{Store: "global", Slug: other.Slug, Entry: &other}); err != nil {
		t.Fatal(err)
	}
	if len(logged) != n {
		t.Fatalf("an applied change was logged: %+v", logged[n:])
	}
}

// A seed (a memory another store held before it joined) fills a store
// that lacks it and is newer than what it has, and leaves a newer or
// equal write of the slug as it is.
func TestASeedDoesNotUndoANewerWrite(t *testing.T) {
	e := newEnv(t, Options{})
	e.remember(RememberInput{Label: "Deploy", Content: "make release", Store: "global"})
	have, err := e.ms.Find("global", "Deploy")
	if err != nil {
		t.Fatal(err)
	}
	seed := func(content string, updated time.Time) Change {
		en := Entry{Slug: have.Slug, Store: "global", Label: "Deploy", Content: content, Confidence: 5, Created: updated, Updated: updated}
		return Change{Store: "global", Slug: have.Slug, Entry: &en, Seed: true}
	}
	ctx := context.Background()
	if err := e.ms.Apply(ctx, seed("make ship", have.Updated.Add(-time.Hour))); err != nil {
		t.Fatal(err)
	}
	if got, _ := e.ms.Find("global", "Deploy"); got.Content != "make release" {
		t.Fatalf("an older seed overwrote the store's write: %q", got.Content)
	}
	if err := e.ms.Apply(ctx, seed("make deploy", have.Updated.Add(time.Hour))); err != nil {
		t.Fatal(err)
	}
	if got, _ := e.ms.Find("global", "Deploy"); got.Content != "make deploy" {
		t.Fatalf("a newer seed was not taken: %q", got.Content)
	}
	other := Entry{Slug: Slugify("Lint"), Store: "global", Label: "Lint", Content: "make lint", Confidence: 5, Updated: time.Unix(5, 0).UTC()}
	if err := e.ms.Apply(ctx, Change{Store: "global", Slug: other.Slug, Entry: &other, Seed: true}); err != nil {
		t.Fatal(err)
	}
	if got, err := e.ms.Find("global", "Lint"); err != nil || got.Content != "make lint" {
		t.Fatalf("a seed of a memory the store lacks: %+v %v", got, err)
	}
}
