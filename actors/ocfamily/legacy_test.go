package ocfamily

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/thatch-run/thatch/messages"
)

// An older thatch journaled a family's host (FamilyHostSeen, on the first
// stream event and on every move) and its parent's directory
// (FamilyParentCreated.Directory), and snapshotted both, before the
// registry owned them. Such a journal and such a snapshot must still read,
// and give the state the same story gives today.
func TestReplayOfAnOlderJournalIgnoresItsHostAndDirectory(t *testing.T) {
	f := newFam(t, Config{})
	f.sendAll(created(parent, "", "hello"), tool(parent, "c1"), tool(parent, "c2"), idle(parent),
		childOK(ext), extChild(ext), taskChild(task), tool(task, "t1"), fetch(ext, ""), tool(parent, "c3"),
		command("thatch/exit"))

	// The older journal: the same events, with the host journaled before
	// the parent's creation and again after a move, and the directory in
	// the creation.
	var older [][]byte
	for i, b := range f.journal {
		ev := decodeEvent(t, b)
		if pc, ok := ev.(*messages.FamilyParentCreated); ok {
			older = append(older, encodeEvent(t, &messages.FamilyHostSeen{Host: host}))
			pc.Directory = "/repo"
			b = encodeEvent(t, pc)
		}
		older = append(older, b)
		if i == len(f.journal)/2 {
			older = append(older, encodeEvent(t, &messages.FamilyHostSeen{Host: "h2"}))
		}
	}
	want := encode(t, f.s)
	if got := encode(t, replayOnto(t, f.k, f.k.Initial(parent), older)); !bytes.Equal(got, want) {
		t.Fatalf("the older journal replays to\n%s\nwant\n%s", got, want)
	}

	// The older snapshot: today's state with the host and directory an
	// older thatch wrote into it, as an envelope of the same type and
	// version.
	var body map[string]any
	if err := json.Unmarshal(jsonOf(t, want), &body); err != nil {
		t.Fatal(err)
	}
	body["host"], body["directory"] = "h2", "/repo"
	oldBody, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	snap, err := messages.DecodeAs[State](messages.Envelope("session.state", 1, oldBody))
	if err != nil {
		t.Fatalf("the older snapshot does not decode: %v", err)
	}
	if got := encode(t, snap); !bytes.Equal(got, want) {
		t.Fatalf("the older snapshot decodes to\n%s\nwant\n%s", got, want)
	}

	// A tombstone made from the older snapshot by an older event.
	tomb := replayOnto(t, f.k, snap, [][]byte{
		encodeEvent(t, &messages.FamilyHostSeen{Host: "h3"}),
		encodeEvent(t, &messages.FamilyParentDeleted{}),
	})
	f.send(&messages.FamilyReconciled{Host: host, Present: false, Parent: messages.HostSession{SessionID: parent}})
	if got, want := encode(t, tomb), encode(t, f.s); !bytes.Equal(got, want) {
		t.Fatalf("the tombstone is\n%s\nwant\n%s", got, want)
	}
}

// A journal written before incidents and drop counts existed has no
// incident events, and its snapshot no counts: the drops it journaled are
// counted on replay, and an older snapshot reads with no incidents.
func TestReplayOfAJournalBeforeIncidentsCountsItsDrops(t *testing.T) {
	k := New(Config{})
	in := func(id string) messages.Interaction {
		return messages.Interaction{ID: id, SessionID: parent, Tool: "bash"}
	}
	older := [][]byte{
		encodeEvent(t, &messages.FamilyParentCreated{}),
		encodeEvent(t, &messages.FamilyInteractionBuffered{SessionID: parent, Seq: 1, Interaction: in("c1")}),
		encodeEvent(t, &messages.FamilyInteractionBuffered{SessionID: parent, Seq: 2, Interaction: in("c2")}),
		encodeEvent(t, &messages.FamilyInteractionBuffered{SessionID: parent, Seq: 3, Interaction: in("c3"), Dropped: []uint64{1}}),
	}
	s := replayOnto(t, k, k.Initial(parent), older)
	if s.Dropped != 1 || s.DroppedSinceFetch != 1 || len(s.Incidents) != 0 {
		t.Fatalf("dropped %d since fetch %d incidents %+v: want 1, 1, none", s.Dropped, s.DroppedSinceFetch, s.Incidents)
	}
	snap, err := messages.DecodeAs[State](messages.Envelope("session.state", 1, []byte(`{"id":"`+parent+`","created":true,"lastSeq":3}`)))
	if err != nil {
		t.Fatalf("an older snapshot does not decode: %v", err)
	}
	if v := snap.Status(); v.Dropped != 0 || v.Incidents != nil || v.PayloadTokens != 0 {
		t.Fatalf("older snapshot status %+v", v)
	}
}

func replayOnto(t *testing.T, k *Family, s *State, journal [][]byte) *State {
	t.Helper()
	for _, b := range journal {
		s = k.Apply(s, decodeEvent(t, b))
	}
	return s
}

func decodeEvent(t *testing.T, b []byte) any {
	t.Helper()
	ev, err := messages.Decode(b)
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	return ev
}

func encodeEvent(t *testing.T, ev any) []byte {
	t.Helper()
	b, err := messages.Encode(ev)
	if err != nil {
		t.Fatalf("encode %T: %v", ev, err)
	}
	return b
}

// jsonOf is the JSON body of an envelope Encode wrote.
func jsonOf(t *testing.T, b []byte) []byte {
	t.Helper()
	_, _, body, err := messages.Body(b)
	if err != nil || !json.Valid(body) {
		t.Fatalf("no JSON body in %q: %v", b, err)
	}
	return body
}
