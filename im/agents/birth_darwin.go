package agents

import (
	"time"

	"golang.org/x/sys/unix"
)

// birthTime is when path was made (stat's st_birthtimespec on macOS).
func birthTime(path string) (time.Time, bool) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil || st.Btim.Sec == 0 {
		return time.Time{}, false
	}
	return time.Unix(st.Btim.Sec, st.Btim.Nsec), true
}
