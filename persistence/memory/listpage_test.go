package memory

import (
	"fmt"
	"slices"
	"testing"
)

// A page of a store is the same slice of its entries in slug order (on a
// branch, of that branch's own), and says the total and the branches.
func TestListPageIsASliceOfList(t *testing.T) {
	e := newEnv(t, Options{})
	for i := range 23 {
		branch := ""
		switch i % 3 {
		case 1:
			branch = "feature-a"
		case 2:
			branch = "feature-b"
		}
		e.remember(RememberInput{Store: "proj", Branch: branch, Label: fmt.Sprintf("fact %02d", i), Content: fmt.Sprintf("content %d", i)})
	}
	for _, branch := range []string{"", "feature-a"} {
		every, err := e.ms.List("proj", "")
		if err != nil {
			t.Fatal(err)
		}
		var all []Entry
		for _, x := range every {
			if branch == "" || x.Branch == branch {
				all = append(all, x)
			}
		}
		for _, pg := range [][2]int{{0, 5}, {5, 5}, {20, 5}, {100, 5}, {0, 100}} {
			got, total, branches, err := e.ms.ListPage("proj", branch, pg[0], pg[1])
			if err != nil {
				t.Fatal(err)
			}
			want := all[min(pg[0], len(all)):min(pg[0]+pg[1], len(all))]
			if total != len(all) || !slices.Equal(branches, []string{"feature-a", "feature-b"}) || len(got) != len(want) {
				t.Fatalf("branch %q page %v: %d entries, total %d, branches %q; want %d of %d", branch, pg, len(got), total, branches, len(want), len(all))
			}
			for i := range got {
				if got[i].Slug != want[i].Slug || got[i].Content != want[i].Content {
					t.Fatalf("branch %q page %v: entry %d is %s, want %s", branch, pg, i, got[i].Slug, want[i].Slug)
				}
			}
		}
	}
	if got, total, _, err := e.ms.ListPage("nothing-here", "", 0, 10); err != nil || total != 0 || len(got) != 0 {
		t.Fatalf("an empty store: %v %d %v", got, total, err)
	}
}
