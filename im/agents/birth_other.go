//go:build !linux && !darwin

package agents

import "time"

// birthTime is unknown here: findNewest then takes a session written
// since the launch, whenever it was made.
func birthTime(string) (time.Time, bool) { return time.Time{}, false }
