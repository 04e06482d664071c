package session

import (
	"context"
	"fmt"
	"strings"
)

// HygieneSignal is one count of the memory stores' hygiene heartbeat, for
// example {"stale", 3}. The memory issue decides which signals exist.
type HygieneSignal struct {
	Name  string `json:"name"`
	Count int    `json:"count"`
}

// Hygiene computes the heartbeat signals for the stores of a directory. The
// executor of SendStartReminder consults it while it builds the reminder;
// the decision core never does, because computing them reads the stores.
type Hygiene interface {
	Signals(ctx context.Context, directory string) ([]HygieneSignal, error)
}

// Heartbeat renders the signals for the start reminder, or "" when every
// count is zero: a quiet store adds nothing to the reminder.
func Heartbeat(signals []HygieneSignal) string {
	var parts []string
	for _, s := range signals {
		if s.Count != 0 {
			parts = append(parts, fmt.Sprintf("%d %s", s.Count, s.Name))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return "memory hygiene: " + strings.Join(parts, ", ")
}
