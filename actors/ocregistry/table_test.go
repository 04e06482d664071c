package ocregistry

import (
	"encoding/json"
	"fmt"
	"maps"
	"testing"

	"pgregory.net/rapid"

	"github.com/thatch-run/thatch/messages"
)

// A table behaves as a plain map under any sequence of sets and deletes,
// and every table made along the way keeps what it held: a change never
// reaches a table handed out before it.
func TestTableIsAnImmutableMap(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var tab *table
		model := map[string]string{}
		type step struct {
			tab  *table
			want map[string]string
		}
		var history []step
		for i := range rapid.IntRange(0, 200).Draw(t, "steps") {
			k := rapid.StringMatching(`[a-e]{1,2}`).Draw(t, fmt.Sprint("k", i))
			if rapid.Bool().Draw(t, fmt.Sprint("set", i)) {
				v := rapid.StringMatching(`[xy]{0,2}`).Draw(t, fmt.Sprint("v", i))
				tab, model[k] = tab.With(k, v), v
			} else {
				tab = tab.Without(k)
				delete(model, k)
			}
			history = append(history, step{tab, maps.Clone(model)})
		}
		for i, h := range history {
			if got := h.tab.Map(); !maps.Equal(got, h.want) || h.tab.Len() != len(h.want) {
				t.Fatalf("table %d holds %v (len %d), want %v", i, got, h.tab.Len(), h.want)
			}
		}
	})
}

// A state with tables is written as the plain JSON objects a state with
// maps was, so the snapshots written before tables still read, and the
// other way round.
func TestStateSnapshotsKeepTheirForm(t *testing.T) {
	old := `{"version":3,"parents":{"c":"p"},"hosts":{"p":"h"},"dirs":{"p":"/w"}}`
	var s State
	if err := json.Unmarshal([]byte(old), &s); err != nil {
		t.Fatal(err)
	}
	if s.Linked("c") != "p" || s.Host("p") != "h" || s.Directory("p") != "/w" || s.Version != 3 {
		t.Fatalf("read %+v", s)
	}
	b, err := json.Marshal(&s)
	if err != nil || string(b) != old {
		t.Fatalf("written as %s, %v; want %s", b, err, old)
	}
	if b, _ := json.Marshal(&State{Version: 1}); string(b) != `{"version":1}` {
		t.Fatalf("an empty state is written as %s", b)
	}
	enc, err := messages.Encode(&s)
	if err != nil {
		t.Fatal(err)
	}
	back, err := messages.Decode(enc)
	if err != nil {
		t.Fatal(err)
	}
	if got := back.(*State); got.Linked("c") != "p" || got.Host("p") != "h" || got.Directory("p") != "/w" {
		t.Fatalf("the codec rebuilt %+v", got)
	}
}
