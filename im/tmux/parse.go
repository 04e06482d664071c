package tmux

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// tagOption is the window user option that holds a window's tag.
const tagOption = "@thatch_tag"

// windowFormat describes one window as "ID PANE PID DEAD " and then its name,
// directory, command and tag, each as "LENGTH:VALUE" (#{n:...} counts
// bytes), so that any byte in a value (a newline in a directory, a tab in
// a tag) is read back as it is. tmux finds a pane's current path through
// its foreground process group, which a just-started pane may not have
// yet; the directory it started in stands in until then.
var windowFormat = "#{window_id} #{pane_id} #{pane_pid} #{?pane_dead,1,0} " +
	sized("#{window_name}") +
	sized("#{?pane_current_path,#{pane_current_path},#{pane_start_path}}") +
	sized("#{pane_current_command}") + sized("#{"+tagOption+"}")

func sized(expr string) string { return "#{n:" + expr + "}:" + expr }

// errParse means tmux answered something windowFormat cannot produce.
var errParse = errors.New("tmux: unexpected format output")

// parseWindows reads the records of windowFormat, one after another, each
// ended by a newline (the last one may lack it).
func parseWindows(s string) ([]Window, error) {
	var ws []Window
	for s != "" {
		w, rest, err := parseWindow(s)
		if err != nil {
			return nil, err
		}
		ws = append(ws, w)
		if rest != "" && rest[0] != '\n' {
			return nil, fmt.Errorf("%w: %q after window %s", errParse, clip(rest), w.ID)
		}
		s = strings.TrimPrefix(rest, "\n")
	}
	return ws, nil
}

// parseWindow reads one record of windowFormat from the start of s and
// returns the rest.
func parseWindow(s string) (Window, string, error) {
	var w Window
	id, s, ok := strings.Cut(s, " ")
	if !ok || !validID(id) {
		return w, "", fmt.Errorf("%w: window id in %q", errParse, clip(id))
	}
	pane, s, ok := strings.Cut(s, " ")
	if !ok || !validPane(pane) {
		return w, "", fmt.Errorf("%w: pane id %q of %s", errParse, clip(pane), id)
	}
	w.Pane = pane
	pid, s, ok := strings.Cut(s, " ")
	n, err := strconv.Atoi(pid)
	if !ok || err != nil {
		return w, "", fmt.Errorf("%w: pane pid %q of %s", errParse, clip(pid), id)
	}
	w.ID, w.PanePID = id, n
	dead, s, ok := strings.Cut(s, " ")
	if !ok || (dead != "0" && dead != "1") {
		return w, "", fmt.Errorf("%w: pane_dead %q of %s", errParse, clip(dead), id)
	}
	w.Dead = dead == "1"
	for _, f := range []*string{&w.Name, &w.Dir, &w.Command, &w.Tag} {
		if *f, s, err = sizedField(s); err != nil {
			return w, "", fmt.Errorf("%w (window %s)", err, id)
		}
	}
	return w, s, nil
}

// sizedField reads "LENGTH:VALUE" from the start of s.
func sizedField(s string) (string, string, error) {
	ls, rest, ok := strings.Cut(s, ":")
	n, err := strconv.Atoi(ls)
	if !ok || err != nil || n < 0 || n > len(rest) {
		return "", "", fmt.Errorf("%w: sized field %q", errParse, clip(s))
	}
	return rest[:n], rest[n:], nil
}

func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}
