package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/pflag"

	"github.com/thatch-run/thatch/hosts/control"
	"github.com/thatch-run/thatch/hosts/opencode/front"
)

// extractionResumePath is the opencode front end's route that lifts a
// budget pause.
const extractionResumePath = "/v1/opencode/extraction/resume"

const extractionLong = `Extraction pauses for a memory store once the estimated tokens (payload
bytes / 4) it sent that UTC day reach memory.daily_budget_tokens. Nothing
buffered is lost while it is paused; it resumes by itself the next day.
'thatch status' shows each store's tokens of the last 24 hours and 7 days,
and which stores are paused.
`

// extractionCommand is `thatch extraction`: the extraction budget.
func extractionCommand() *command {
	ext := &command{name: "extraction", summary: "control extraction (its daily token budget)", long: extractionLong, subs: []*command{
		{name: "resume", args: "[--store S] [--config FILE]", config: true,
			summary: "lift today's budget pause of store S (default: every paused store)",
			flags:   resumeFlags},
	}}
	ext.subs[0].run = runExtractionResume
	ext.run = func(args []string) int { return runSub(ext, args) }
	return ext
}

func resumeFlags(fs *pflag.FlagSet) {
	fs.String("store", "", "store whose pause to lift, as thatch status names it; default: every paused store")
}

// runExtractionResume asks the daemon to lift the budget pause for the
// rest of the day.
func runExtractionResume(args []string) int {
	var flags *pflag.FlagSet
	cfg, code, err := loadConfig("extraction resume", args, func(fs *pflag.FlagSet) {
		flags = fs
		resumeFlags(fs)
	})
	if cfg == nil && err == nil {
		return code
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "thatch extraction resume: %v\n", err)
		return code
	}
	c, _, err := control.Dial(cfg.Control.StateFile, cfg.Control.TokenFile, 10*time.Second)
	if err != nil {
		fmt.Fprintf(os.Stderr, "thatch extraction resume: %v (it needs the running daemon)\n", err)
		return 1
	}
	store, _ := flags.GetString("store")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var ans front.ResumeAnswer
	if err := c.Do(ctx, "POST", extractionResumePath, front.ResumeBody{Store: store}, &ans); err != nil {
		fmt.Fprintf(os.Stderr, "thatch extraction resume: %v\n", err)
		return 1
	}
	if len(ans.Resumed) == 0 {
		fmt.Println("no store was paused")
		return 0
	}
	fmt.Printf("extraction resumed for the rest of the day (UTC): %s\n", strings.Join(ans.Resumed, ", "))
	return 0
}

// maxIncidentLines is how many incidents status prints per session.
const maxIncidentLines = 3

// writeCosts prints each store's extraction cost and budget pause.
func writeCosts(w io.Writer, costs []front.StoreCost) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  STORE\tTOKENS 24H\tTOKENS 7D\tBUDGET/DAY")
	for _, c := range costs {
		budget := "none"
		if c.Budget > 0 {
			budget = fmt.Sprint(c.Budget)
		}
		fmt.Fprintf(tw, "  %s\t%d\t%d\t%s\n", c.Store, c.Tokens24h, c.Tokens7d, budget)
	}
	tw.Flush()
	for _, c := range costs {
		if c.Paused != "" {
			fmt.Fprintf(w, "  %s (thatch extraction resume --store %s)\n", c.Paused, c.Store)
		}
	}
}

// writeIncidents prints the last few extraction incidents of each session
// that is not deleted: what went wrong, and what was kept.
func writeIncidents(w io.Writer, sessions []any) {
	var lines []string
	for _, raw := range sessions {
		var r sessionRow
		b, err := json.Marshal(raw)
		if err != nil || json.Unmarshal(b, &r) != nil || r.Deleted {
			continue
		}
		inc := r.Incidents
		if len(inc) > maxIncidentLines {
			inc = inc[len(inc)-maxIncidentLines:]
		}
		for _, i := range inc {
			line := fmt.Sprintf("  %s  %s  %s: %s", r.SessionID, i.At.Local().Format(time.DateTime), i.Kind, i.Reason)
			if i.Kept != "" {
				line += " (" + i.Kept + ")"
			}
			lines = append(lines, line)
		}
	}
	if len(lines) > 0 {
		fmt.Fprintf(w, "\nextraction incidents:\n%s\n", strings.Join(lines, "\n"))
	}
}
