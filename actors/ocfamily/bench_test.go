package ocfamily

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/thatch-run/thatch/messages"
)

// BenchmarkToolExecuted measures the decision core's share of buffering one
// interaction: Decide, encoding the event, Apply.
func BenchmarkToolExecuted(b *testing.B) {
	k := New(Config{})
	s := k.Initial(parent)
	out := strings.Repeat("x", 800)
	now := t0
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		msg := &messages.ToolExecuted{Host: host, Interaction: messages.Interaction{
			ID: strconv.Itoa(i), SessionID: parent, Tool: "bash", Output: out, Args: json.RawMessage(`{"command":"go test ./..."}`),
		}}
		d := k.Decide(s, msg, now)
		for _, ev := range d.Events {
			if _, err := messages.Encode(ev); err != nil {
				b.Fatal(err)
			}
			s = k.Apply(s, ev)
		}
		now = now.Add(time.Millisecond)
	}
}
