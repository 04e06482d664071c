package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/thatch-run/thatch"
	"github.com/thatch-run/thatch/hosts/control"
	"github.com/thatch-run/thatch/supervisor/frontend"
	"github.com/thatch-run/thatch/ui"
)

// withUI adds the web page to the front ends `thatch serve` runs; wire
// hands it the runtime's status report once the runtime exists.
func withUI(fes []frontend.FrontEnd) (all []frontend.FrontEnd, wire func(*thatch.Runtime)) {
	page := ui.New(ui.Options{})
	wire = func(rt *thatch.Runtime) {
		page.SetStatus(func(context.Context) (any, error) { return rt.StatusReport() })
	}
	return append(fes, page), wire
}

// uiLong is the help text of `thatch ui`.
var uiLong = fmt.Sprintf(`Prints a one-time URL of the running daemon's web page (memories with search,
edit, forget and archive; hygiene pairs to judge; sessions; extractions; IM
bindings). Open it in a browser on this machine within %d minutes: it works
once, and logs that browser in for %d hours (or until the daemon restarts).
The page is served on the control API's loopback listener; nothing leaves
this machine.
`, int(ui.CodeTTL.Minutes()), int(ui.SessionTTL.Hours()))

func runUI(args []string) int {
	cfg, code, err := loadConfig("ui", args, nil)
	if cfg == nil && err == nil {
		return code
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "thatch ui: %v\n", err)
		return code
	}
	c, _, err := control.Dial(cfg.Control.StateFile, cfg.Control.TokenFile, 10*time.Second)
	if err != nil {
		fmt.Fprintf(os.Stderr, "thatch ui: %v\n", err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var ans ui.CodeAnswer
	if err := c.Do(ctx, "POST", ui.CodePath, nil, &ans); err != nil {
		fmt.Fprintf(os.Stderr, "thatch ui: %v\n", err)
		return 1
	}
	fmt.Println(ans.URL)
	fmt.Fprintf(os.Stderr, "thatch ui: open the URL above in a browser on this machine; it works once, until %s\n", ans.Expires.Local().Format(time.TimeOnly))
	return 0
}
