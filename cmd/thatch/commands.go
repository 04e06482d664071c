package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/pflag"

	"github.com/thatch-run/thatch"
	"github.com/thatch-run/thatch/actors/agentmem"
	"github.com/thatch-run/thatch/actors/ocfamily"
	"github.com/thatch-run/thatch/actors/sweeper"
	"github.com/thatch-run/thatch/config"
	"github.com/thatch-run/thatch/hosts/control"
	"github.com/thatch-run/thatch/hosts/opencode/front"
	"github.com/thatch-run/thatch/im/cluster"
	imfront "github.com/thatch-run/thatch/im/front"
	"github.com/thatch-run/thatch/messages"
	"github.com/thatch-run/thatch/supervisor/frontend"
)

func versionString() string {
	return fmt.Sprintf("thatch %s (%s, %s/%s)", thatch.Version, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

// loadConfig parses the command's flags and loads the layered config.
// It returns exit code 2 for flag errors.
func loadConfig(name string, args []string, extra func(*pflag.FlagSet)) (*config.Config, int, error) {
	fs := pflag.NewFlagSet("thatch "+name, pflag.ContinueOnError)
	file := fs.String("config", "", "config file (TOML or YAML); default $THATCH_CONFIG or $XDG_CONFIG_HOME/thatch/config.toml")
	config.RegisterFlags(fs)
	if extra != nil {
		extra(fs)
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return nil, 0, nil
		}
		return nil, 2, err
	}
	cfg, err := config.Load(config.LoadOptions{File: *file, Env: os.Environ(), Flags: fs})
	return cfg, 1, err
}

func runServe(args []string) int {
	var profile string
	cfg, code, err := loadConfig("serve", args, func(fs *pflag.FlagSet) {
		fs.StringVar(&profile, "profile-start", "", "write a CPU profile of the start (store open, rehydration, mount) to this file, to see why a start is slow")
	})
	if cfg == nil && err == nil {
		return code
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "thatch serve: %v\n", err)
		return code
	}
	stopProfile, err := startProfile(profile)
	if err != nil {
		fmt.Fprintf(os.Stderr, "thatch serve: %v\n", err)
		return 1
	}
	defer stopProfile()
	fes, wireUI := withUI(frontEnds(cfg))
	rt, err := thatch.New(cfg, thatch.Options{FrontEnds: fes})
	if err != nil {
		fmt.Fprintf(os.Stderr, "thatch serve: %v\n", err)
		return 1
	}
	wireUI(rt)
	log := rt.Logger()
	if src := cfg.Source(); src != "" {
		log.Info("config loaded", "file", src)
	} else {
		log.Info("no config file; running on embedded defaults")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := rt.Start(ctx); err != nil {
		log.Error("cannot start", "error", err)
		return 1
	}
	stopProfile()
	log.Info("thatch is running; stop it with Ctrl-C or SIGTERM", "version", thatch.Version, "pid", os.Getpid())
	code = 0
	select {
	case <-ctx.Done():
	case err := <-rt.Fatal():
		log.Error("exiting so that a restart recovers from durable state", "error", err)
		code = 1
	}
	stop()
	log.Info("shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := rt.Stop(sctx); err != nil {
		log.Error("unclean shutdown", "error", err)
		return 1
	}
	log.Info("stopped")
	return code
}

// startProfile starts a CPU profile into path ("" for none) and returns
// the function that stops it; calling that again does nothing.
func startProfile(path string) (func(), error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("profile: %w", err)
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			pprof.StopCPUProfile()
			if err := f.Close(); err != nil {
				fmt.Fprintf(os.Stderr, "thatch serve: profile: %v\n", err)
			}
		})
	}, nil
}

func runCheckConfig(args []string) int {
	cfg, code, err := loadConfig("check-config", args, nil)
	if cfg == nil && err == nil {
		return code
	}
	if cfg == nil {
		fmt.Fprintf(os.Stderr, "thatch check-config: %v\n", err)
		return code
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "thatch check-config: %v\n", err)
		return 1
	}
	src := cfg.Source()
	if src == "" {
		src = "(none: embedded defaults)"
	}
	fmt.Printf("# config file: %s\n", src)
	b, _ := json.MarshalIndent(cfg.Redacted(), "", "  ")
	fmt.Println(string(b))
	return 0
}

func runStatus(args []string) int {
	var asJSON, all bool
	cfg, code, err := loadConfig("status", args, func(fs *pflag.FlagSet) {
		fs.BoolVar(&asJSON, "json", false, "print the raw JSON status (every session)")
		fs.BoolVar(&all, "all", false, "list every session, also those at rest and deleted ones")
	})
	if cfg == nil && err == nil {
		return code
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "thatch status: %v\n", err)
		return code
	}
	c, _, err := control.Dial(cfg.Control.StateFile, cfg.Control.TokenFile, 10*time.Second)
	if err != nil {
		fmt.Fprintf(os.Stderr, "thatch status: %v\n", err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var raw json.RawMessage
	if err := c.Do(ctx, "GET", "/v1/status", nil, &raw); err != nil {
		fmt.Fprintf(os.Stderr, "thatch status: %v\n", err)
		return 1
	}
	var st thatch.Status
	if err := json.Unmarshal(raw, &st); err != nil {
		fmt.Fprintf(os.Stderr, "thatch status: %v\n", err)
		return 1
	}
	if asJSON {
		fmt.Println(string(raw))
	} else {
		printStatus(&st, all)
	}
	if len(st.Down()) > 0 {
		return 3 // a front end is down: scripts and monitors see it
	}
	return 0
}

func printStatus(st *thatch.Status, all bool) {
	fmt.Printf("thatch %s, pid %d, up %s\n", st.Version, st.PID, (time.Duration(st.UptimeSeconds) * time.Second).String())
	fmt.Printf("data:    %s (journal %s)\n", st.DataDir, humanBytes(st.JournalBytes))
	fmt.Printf("control: http://%s\n\n", st.ControlAddr)
	tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "KIND\tLIVE\tPASSIVATED\tPERSISTED\tWITH WORK")
	sort.Slice(st.Kinds, func(i, j int) bool { return st.Kinds[i].Kind < st.Kinds[j].Kind })
	for _, k := range st.Kinds {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\n", k.Kind, k.Live, k.Passivated, k.Persisted, k.Active)
	}
	tw.Flush()
	var health []string
	for _, name := range slices.Sorted(maps.Keys(st.FrontEnds)) {
		if h := st.FrontEnds[name].Health; h != nil {
			health = append(health, healthLine(name, h))
		}
	}
	if len(health) > 0 {
		fmt.Printf("\nfront ends:\n  %s\n", strings.Join(health, "\n  "))
	}
	if oc, ok := st.FrontEnds["opencode"]; ok {
		printOpencode(oc, all)
	}
	if im, ok := st.FrontEnds["im"]; ok {
		printIM(im)
	}
	if ag, ok := st.FrontEnds[imfront.AgentsName]; ok {
		printExtractions(ag)
	}
	if len(st.Quarantined) > 0 {
		fmt.Printf("\nquarantined (they cannot rebuild their state; see thatch repair):\n")
		for _, q := range st.Quarantined {
			fmt.Printf("  %s  since %s: %s\n", q.Entity, q.Since.Local().Format(time.DateTime), q.Error)
		}
	}
	if st.UnhandledEffects > 0 {
		fmt.Printf("\neffects with no handler: %d (logged and dropped; a front end that runs them is missing)\n", st.UnhandledEffects)
	}
	if st.UnhandledMessages > 0 {
		fmt.Printf("\nunhandled messages: %d (logged and rejected; a bug worth reporting)\n", st.UnhandledMessages)
	}
	if len(st.LastErrors) > 0 {
		fmt.Printf("\nlast errors:\n")
		for _, e := range st.LastErrors {
			fmt.Printf("  %s  %s  %s: %s\n", e.Time.Local().Format(time.DateTime), e.Action, e.Entity, strings.TrimSpace(e.Error))
		}
	}
}

// printOpencode prints the opencode front end's part of the status: its
// sweepers, the redactions, the sessions and their incidents, and the
// extraction cost.
func printOpencode(oc frontend.Report, all bool) {
	var sweeps []sweeper.SweepView
	if err := detail(oc, "sweepers", &sweeps); err != nil {
		fmt.Printf("\nsweepers: %v\n", err)
	} else if len(sweeps) > 0 {
		fmt.Printf("\nsweepers:\n")
		writeSweepers(os.Stdout, sweeps)
	}
	var redacted map[string]uint64
	if err := detail(oc, "redactions", &redacted); err != nil {
		fmt.Printf("\nredactions: %v\n", err)
	} else if len(redacted) > 0 {
		// Counts only: what was redacted is never kept.
		fmt.Printf("\nsecrets redacted from tool calls since start:\n")
		for _, kind := range slices.Sorted(maps.Keys(redacted)) {
			fmt.Printf("  %-20s %d\n", kind, redacted[kind])
		}
	}
	if len(oc.Entities) > 0 {
		fmt.Printf("\nsessions: %d (--json shows every field):\n", oc.Total)
		writeSessions(os.Stdout, oc.Entities, all)
		writeIncidents(os.Stdout, oc.Entities)
	}
	var costs []front.StoreCost
	if err := detail(oc, "extraction", &costs); err != nil {
		fmt.Printf("\nextraction cost: %v\n", err)
	} else if len(costs) > 0 {
		fmt.Printf("\nextraction cost (estimated tokens: payload bytes / 4):\n")
		writeCosts(os.Stdout, costs)
	}
}

// printIM prints the IM front end's part of the status: its bindings, the
// windows no binding owns, and the secrets masked in chat messages.
func printIM(im frontend.Report) {
	if len(im.Entities) > 0 {
		fmt.Printf("\nIM bindings: %d\n", im.Total)
		writeBindings(os.Stdout, im.Entities)
	}
	var ws []imfront.UntrackedWindow
	if err := detail(im, imfront.DetailUntracked, &ws); err != nil {
		fmt.Printf("\n%v\n", err)
	} else if len(ws) > 0 {
		fmt.Printf("\nwindows on thatch's tmux server that no binding owns: %d\n", len(ws))
		writeUntracked(os.Stdout, ws)
	}
	var masked map[string]uint64
	if err := detail(im, imfront.DetailMasked, &masked); err != nil {
		fmt.Printf("\n%v\n", err)
	} else if len(masked) > 0 {
		// Counts only: what was masked is never kept.
		fmt.Printf("\nsecrets masked in what was sent to the chats since start:\n")
		for _, kind := range slices.Sorted(maps.Keys(masked)) {
			fmt.Printf("  %-20s %d\n", kind, masked[kind])
		}
	}
	var cl *cluster.Status
	if err := detail(im, imfront.DetailCluster, &cl); err != nil {
		fmt.Printf("\n%v\n", err)
	} else if cl != nil {
		writeCluster(os.Stdout, cl)
	}
}

// printExtractions prints the agents front end's part of the status: the
// claude and codex sessions whose memory thatch extracts.
func printExtractions(ag frontend.Report) {
	if len(ag.Entities) == 0 {
		return
	}
	fmt.Printf("\nmemory extraction of claude and codex sessions: %d\n", ag.Total)
	tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  SESSION\tFOLLOWED BY\tPENDING\tCLAIMED\tCHILD\tCHILDREN\tEXTRACTED\tLAST ERROR")
	for _, raw := range ag.Entities {
		var x agentmem.Status
		if b, err := json.Marshal(raw); err != nil || json.Unmarshal(b, &x) != nil {
			continue
		}
		by := "a chat"
		if x.Watch != "" {
			by = "thatch (started by hand)"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%d\t%d\t%s\t%d\t%d\t%s\n", x.Session, by, x.Pending, x.Claimed, dash(x.Child), x.Children, x.Extracted, oneLine(x.LastError, 80))
	}
	tw.Flush()
}

// healthLine is one front end's line in the status: its state, since when
// and its last error.
func healthLine(name string, h *frontend.Health) string {
	mark := "ok"
	if !h.OK {
		mark = "DOWN"
	}
	line := fmt.Sprintf("%s  %s  %s", name, mark, h.State)
	if !h.Since.IsZero() {
		line += "  since " + h.Since.Local().Format(time.DateTime)
	}
	if h.LastError != "" {
		line += ": " + h.LastError
	}
	return line
}

// detail decodes a front end's report detail into v (it arrives as plain
// JSON values); a report without it leaves v as it is.
func detail(rep frontend.Report, name string, v any) error {
	d, ok := rep.Details[name]
	if !ok {
		return nil
	}
	b, err := json.Marshal(d)
	if err == nil {
		err = json.Unmarshal(b, v)
	}
	if err != nil {
		return fmt.Errorf("cannot read the %s: %w", name, err)
	}
	return nil
}

// writeSweepers prints each sweeper: when it last ran, how long it took,
// what its last round did and skipped (with ids and reasons), and when it
// runs next.
func writeSweepers(w io.Writer, sweeps []sweeper.SweepView) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  SWEEPER\tLAST RUN\tTOOK\tMOVED\tDELETED\tDROPPED\tSKIPPED\tERRORS\tNEXT RUN")
	at := func(t *time.Time) string {
		if t == nil {
			return "-"
		}
		return t.Local().Format(time.DateTime)
	}
	for _, sw := range sweeps {
		next := at(sw.NextRun)
		switch {
		case sw.Disarmed:
			next = "off"
		case sw.Running:
			next = "after this round"
		}
		var c messages.SweepCounts
		if sw.Last != nil {
			c = sw.Last.Counts
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%d\t%d\t%d\t%d\t%d\t%s\n", sw.Sweeper, at(sw.LastRun),
			(time.Duration(sw.TookMS) * time.Millisecond).String(), c.Moved, c.Deleted, c.Dropped, c.Skipped, c.Errors, next)
	}
	tw.Flush()
	for _, sw := range sweeps {
		if sw.Last == nil {
			continue
		}
		for _, l := range []struct {
			what  string
			items []messages.SweepItem
		}{{"moved", sw.Last.Moved}, {"deleted", sw.Last.Deleted}, {"dropped", sw.Last.Dropped}, {"skipped", sw.Last.Skipped}} {
			for _, it := range l.items {
				line := fmt.Sprintf("  %s %s %s", sw.Sweeper, l.what, it.ID)
				if it.To != "" {
					line += " to " + it.To
				}
				if it.Reason != "" {
					line += ": " + it.Reason
				}
				fmt.Fprintln(w, line)
			}
		}
		for _, n := range sw.Last.Notes {
			fmt.Fprintf(w, "  %s: %s\n", sw.Sweeper, n)
		}
	}
}

// sessionRow is one session of a status report: a family's view, or the
// error that kept thatch from reading it.
type sessionRow struct {
	ocfamily.StatusView
	Family string `json:"family"`
	Error  string `json:"error"`
}

// writeSessions prints a table of the session families in a status report:
// what each holds (pending, accepted), what it is doing, its children and
// its armed wrap-up. Unless all is set, families at rest (holding and doing
// nothing) and deleted ones are only counted: a long-running daemon knows
// every session it ever saw.
func writeSessions(w io.Writer, sessions []any, all bool) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  SESSION\tPENDING\tACCEPTED\tSTATE\tCHILDREN\tWRAP-UP")
	var resting, deleted int
	defer func() {
		tw.Flush()
		if resting+deleted > 0 {
			fmt.Fprintf(w, "  (not listed: %d at rest, %d deleted; --all lists them)\n", resting, deleted)
		}
	}()
	for _, raw := range sessions {
		var r sessionRow
		b, err := json.Marshal(raw)
		if err == nil {
			err = json.Unmarshal(b, &r)
		}
		switch {
		case err != nil:
			fmt.Fprintf(tw, "  ?\t\t\tunreadable: %v\t\t\n", err)
			continue
		case r.Error != "":
			fmt.Fprintf(tw, "  %s\t\t\terror: %s\t\t\n", r.Family, r.Error)
			continue
		case !all && r.Deleted:
			deleted++
			continue
		case !all && atRest(&r.StatusView):
			resting++
			continue
		}
		fmt.Fprintf(tw, "  %s\t%d\t%d\t%s\t%s\t%s\n", r.SessionID, r.Pending, r.Accepted, sessionState(&r.StatusView), sessionChildren(r.Children), sessionWrapUp(&r.StatusView))
	}
}

// atRest reports whether a family holds nothing and is doing nothing.
func atRest(v *ocfamily.StatusView) bool {
	if v.Pending+v.Accepted > 0 || v.Extracting || v.Compacting || v.WrapUp != nil || v.ExitingSince != nil {
		return false
	}
	for _, c := range v.Children {
		if c.Claimed > 0 || c.Buffered > 0 || c.Finishing {
			return false
		}
	}
	return true
}

func sessionState(v *ocfamily.StatusView) string {
	var parts []string
	switch {
	case v.Deleted:
		return "deleted"
	case v.Extracting && v.ExtractionChild != "":
		parts = append(parts, "extracting in "+v.ExtractionChild)
	case v.Extracting:
		parts = append(parts, "starting an extraction")
	}
	if v.Compacting {
		parts = append(parts, "compacting")
	}
	if v.ExitingSince != nil {
		parts = append(parts, "closing (exit greenlit "+v.ExitingSince.Local().Format(time.TimeOnly)+")")
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ", ")
}

func sessionChildren(children []ocfamily.ChildView) string {
	if len(children) == 0 {
		return "-"
	}
	var parts []string
	for _, c := range children {
		p := fmt.Sprintf("%s %s", c.SessionID, c.Kind)
		if c.Claimed > 0 {
			p += fmt.Sprintf(" (holds %d)", c.Claimed)
		}
		if c.Finishing {
			p += " (finishing)"
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, "; ")
}

func sessionWrapUp(v *ocfamily.StatusView) string {
	if v.WrapUp == nil {
		return "-"
	}
	s := "/thatch/" + v.WrapUp.Kind
	if v.WrapUp.Checking {
		s += " (checking)"
	}
	return s
}

func humanBytes(n uint64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := uint64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
