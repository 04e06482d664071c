package feishu

import (
	"strconv"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	larkws "github.com/larksuite/oapi-sdk-go/v3/ws"
)

func part(id string, sum, seq int, payload string) *larkws.Frame {
	return &larkws.Frame{Method: int32(larkws.FrameTypeData), Payload: []byte(payload), Headers: []larkws.Header{
		{Key: larkws.HeaderMessageID, Value: id}, {Key: larkws.HeaderSum, Value: strconv.Itoa(sum)},
		{Key: larkws.HeaderSeq, Value: strconv.Itoa(seq)}}}
}

// Parts are put together by message id in seq order, whatever order they
// come in, a part sent twice counts once, parts out of bounds are dropped
// and parts left waiting too long are forgotten.
func TestSplitPayloadsArePutTogetherBySeq(t *testing.T) {
	s := &wsSession{c: &longConn{logger: hclog.NewNullLogger()}, parts: map[string]*partial{}}
	now := time.Unix(1000, 0)
	steps := []struct {
		f     *larkws.Frame
		at    time.Duration
		whole string // "" while not whole
	}{
		{part("a", 1, 0, "alone"), 0, "alone"},
		{part("b", 3, 2, "3"), 0, ""},
		{part("c", 2, 1, "y"), 0, ""},
		{part("b", 3, 0, "1"), 0, ""},
		{part("b", 3, 0, "1"), 0, ""},
		{part("c", 2, 0, "x"), 0, "xy"},
		{part("b", 3, 1, "2"), 0, "123"},
		{part("d", 3, 3, "out of range"), 0, ""},
		{part("e", wsMaxParts+1, 0, "too many"), 0, ""},
		{part("f", 2, 0, "old"), 0, ""},
		{part("g", 2, 0, "new"), wsPartsKeep + time.Second, ""},
		{part("f", 2, 1, "er"), wsPartsKeep + time.Second, ""}, // f was forgotten: this part waits alone
	}
	for i, st := range steps {
		got, whole := s.assemble(st.f, now.Add(st.at))
		if whole != (st.whole != "") || string(got) != st.whole {
			t.Fatalf("step %d: got %q, whole %v; want %q", i, got, whole, st.whole)
		}
	}
	if _, waiting := s.parts["e"]; waiting {
		t.Fatal("a frame of too many parts is kept")
	}
	if len(s.parts) != 2 {
		t.Fatalf("%d payloads waiting, want g and the new f", len(s.parts))
	}
}
