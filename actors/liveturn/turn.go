// Package liveturn is one turn of an agent as its thread shows it live:
// while the agent works on a message, one message lists its tool calls,
// each folded into a line with its outcome (`▸ Bash: npm test ✓`), the
// text it wrote so far and the time since the message was typed; it is
// edited in place as the turn goes on, and shrinks to a summary at the
// end, when the final answer goes out as its own message. The binding
// (actors/imbinding) keeps a Turn in its state and decides when to send
// or edit; this package folds what the transcript said and draws the
// message. Pure: no I/O, no clock.
package liveturn

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/thatch-run/thatch/messages"
)

// Line is one tool call of the turn.
type Line struct {
	ID      string `json:"id,omitempty"`
	Text    string `json:"text"`
	Outcome string `json:"outcome,omitempty"`
}

// Turn is one turn of the agent.
type Turn struct {
	// Since is when the turn began (Unix ms): the user's message typed.
	Since int64 `json:"since"`
	// MessageID is the live message ("" until it was sent).
	MessageID string `json:"messageID,omitempty"`
	Lines     []Line `json:"lines,omitempty"`
	// From is the first line the live message shows: the lines before it
	// are in the turn's earlier live messages, which it outgrew.
	From int `json:"from,omitempty"`
	// Text is the newest text the agent wrote in the turn: the final
	// answer once the turn ends.
	Text string `json:"text,omitempty"`
	// Rev counts the changes to what the live message shows; Shown is the
	// one the chat shows, Flight the one in flight (0: none).
	Rev    uint64 `json:"rev,omitempty"`
	Shown  uint64 `json:"shown,omitempty"`
	Flight uint64 `json:"flight,omitempty"`
	// Waiting: the edit interval's timer runs; the next edit waits for it.
	Waiting bool `json:"waiting,omitempty"`
	// Off: the chat cannot show the turn live; its texts go out as
	// messages, as with im.live = "off".
	Off bool `json:"off,omitempty"`
	// Ending: the turn ended; it is gone once nothing is in flight.
	Ending bool `json:"ending,omitempty"`
}

// Fold returns the turn after items; t is left as it was. A result marks
// its call's line; an end is the binding's to act on.
func (t Turn) Fold(items []messages.IMTurnItem) Turn {
	t.Lines = slices.Clone(t.Lines)
	for _, it := range items {
		switch it.Kind {
		case messages.TurnText:
			if s := strings.TrimSpace(it.Text); s != "" && s != t.Text {
				t.Text = s
				t.Rev++
			}
		case messages.TurnTool:
			t.Lines = append(t.Lines, Line{ID: it.ID, Text: it.Text})
			t.Rev++
		case messages.TurnResult:
			for i := len(t.Lines) - 1; i >= 0; i-- {
				if it.ID != "" && t.Lines[i].ID == it.ID && t.Lines[i].Outcome == "" {
					t.Lines[i].Outcome = it.Outcome
					t.Rev++
					break
				}
			}
		}
	}
	return t
}

// Ends reports whether items end the turn.
func Ends(items []messages.IMTurnItem) bool {
	return slices.ContainsFunc(items, func(it messages.IMTurnItem) bool { return it.Kind == messages.TurnEnd })
}

// Live reports whether the turn has something to show live: a tool call.
// A turn that only writes text is its answer, sent once it ends.
func (t Turn) Live() bool { return !t.Off && len(t.Lines) > 0 }

// Limits of the live message.
const (
	// MaxLines is how many tool lines one live message shows; a turn with
	// more rolls over into a new live message (Full, Rolled), so that no
	// line is cut.
	MaxLines = 30
	// maxText is how much of the newest text the live message shows (its
	// end: the newest words).
	maxText = 600
)

// Full reports whether the live message holds all the lines it can
// while the turn has more: it is to be finished (Rolled) and a new one
// sent.
func (t Turn) Full() bool { return t.MessageID != "" && len(t.Lines)-t.From > MaxLines }

// Rolled is the full live message's last text: its lines, and a word that
// the turn goes on below.
func (t Turn) Rolled() string {
	var b strings.Builder
	writeLines(&b, t.Lines[t.From:t.From+MaxLines])
	b.WriteString("\n(continued below)")
	return b.String()
}

func writeLines(b *strings.Builder, lines []Line) {
	for _, l := range lines {
		b.WriteString(l.Text)
		if l.Outcome != "" {
			b.WriteString(" " + l.Outcome)
		}
		b.WriteByte('\n')
	}
}

// Render draws the live message at now.
func (t Turn) Render(now time.Time) string {
	var b strings.Builder
	if t.From > 0 {
		fmt.Fprintf(&b, "(continued: %d tool calls above)\n", t.From)
	}
	writeLines(&b, t.Lines[t.From:])
	if t.Text != "" {
		text := []rune(t.Text)
		if len(text) > maxText {
			text = append([]rune("…"), text[len(text)-maxText:]...)
		}
		b.WriteString("\n" + string(text) + "\n")
	}
	b.WriteString("\n⏳ working, " + Took(t.Since, now))
	return b.String()
}

// Summary is what the live message shrinks to when the turn ends.
func (t Turn) Summary(now time.Time) string {
	failed := 0
	for _, l := range t.Lines {
		if strings.HasPrefix(l.Outcome, "✗") {
			failed++
		}
	}
	s := fmt.Sprintf("✓ %d tool call%s", len(t.Lines), plural(len(t.Lines)))
	if failed > 0 {
		s += fmt.Sprintf(" (%d failed)", failed)
	}
	return s + ", " + Took(t.Since, now)
}

// Took is the time from since (Unix ms) to now, as a person says it:
// "45s", "3m 10s", "1h 2m".
func Took(since int64, now time.Time) string {
	d := now.Sub(time.UnixMilli(since)).Round(time.Second)
	switch {
	case d < 0:
		d = 0
	case d >= time.Hour:
		return fmt.Sprintf("%dh %dm", int(d.Hours()), int(d.Minutes())%60)
	case d >= time.Minute:
		return fmt.Sprintf("%dm %ds", int(d.Minutes()), int(d.Seconds())%60)
	}
	return fmt.Sprintf("%ds", int(d.Seconds()))
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// Apply returns the turn after one of its events (nil when it ended), and
// whether ev is one.
func Apply(t *Turn, ev any) (*Turn, bool) {
	switch e := ev.(type) {
	case *messages.IMTurnStarted:
		return &Turn{Since: e.At}, true
	case *messages.IMTurnEnded:
		return nil, true
	}
	if t == nil {
		switch ev.(type) {
		case *messages.IMTurnRead, *messages.IMLiveReleased, *messages.IMLiveShown, *messages.IMLiveFailed,
			*messages.IMLiveWaiting, *messages.IMTurnEnding, *messages.IMLiveRolled:
			return nil, true
		}
		return nil, false
	}
	n := *t
	switch e := ev.(type) {
	case *messages.IMTurnRead:
		n = n.Fold(e.Items)
	case *messages.IMLiveReleased:
		n.Flight, n.Waiting = e.Rev, false
	case *messages.IMLiveShown:
		n.Shown, n.Flight = e.Rev, 0
		if e.MessageID != "" {
			n.MessageID = e.MessageID
		}
	case *messages.IMLiveFailed:
		n.Flight = 0
		n.Off = n.Off || e.Off
	case *messages.IMLiveWaiting:
		n.Waiting = e.On
	case *messages.IMTurnEnding:
		n.Ending = true
	case *messages.IMLiveRolled:
		n.From, n.MessageID, n.Shown = e.From, "", 0
	default:
		return t, false
	}
	return &n, true
}
