package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/spf13/pflag"

	"github.com/thatch-run/thatch"
	"github.com/thatch-run/thatch/config"
	"github.com/thatch-run/thatch/hosts/control"
	"github.com/thatch-run/thatch/persistence"
	"github.com/thatch-run/thatch/persistence/memory"
)

const memoryLong = `The commands talk to the running daemon; with no daemon (or only the stale
control.json of one that crashed) they open the data directory themselves.
`

// memoryCommand is the memory entry of the command table; each subcommand
// declares its own flags, which its run parses.
func memoryCommand() *command {
	store := func(fs *pflag.FlagSet) {
		fs.String("store", "", "store (owner/repo or global); default: every store")
	}
	storeOne := func(fs *pflag.FlagSet) {
		fs.String("store", "", "store (owner/repo or global); default: global")
	}
	branch := func(fs *pflag.FlagSet) {
		fs.String("branch", "", "git branch of branch-specific memories")
	}
	asJSON := func(fs *pflag.FlagSet) { fs.Bool("json", false, "print JSON") }
	with := func(fns ...func(*pflag.FlagSet)) func(*pflag.FlagSet) {
		return func(fs *pflag.FlagSet) {
			for _, f := range fns {
				f(fs)
			}
		}
	}
	mem := &command{name: "memory", summary: "read, edit, export and import the memory store", long: memoryLong, subs: []*command{
		{name: "list", args: "[--store S] [--branch B] [--json]", summary: "list memories", flags: with(store, branch, asJSON)},
		{name: "search", args: "QUERY [--store S] [--branch B] [--limit N] [--json]", summary: "search memories as a recall does",
			flags: with(store, branch, func(fs *pflag.FlagSet) { fs.Int("limit", 10, "most results of a search") }, asJSON)},
		{name: "show", args: "LABEL|SLUG [--store S] [--json]", summary: "print one memory", flags: with(storeOne, asJSON)},
		{name: "forget", args: "LABEL|SLUG [--store S] [--json]", summary: "delete one memory", flags: with(storeOne, asJSON)},
		{name: "export", args: "[--store S] > FILE.jsonl", summary: "write every memory as JSON lines, to restore with import",
			long: exportLong, flags: store},
		{name: "import", args: "FILE.jsonl|- [--json]", summary: "add or update the memories of an export, by label",
			long: importLong, files: true, flags: asJSON},
	}}
	for _, sub := range mem.subs {
		sub.config = true
		sub.run = func(args []string) int { return runMemory(sub, args) }
	}
	mem.run = func(args []string) int { return runSub(mem, args) }
	return mem
}

// memoryBackend runs memory commands either through the daemon's control
// API or, with no daemon, on the store opened in this process. A state file
// whose daemon is gone counts as no daemon (control.Dial checks).
type memoryBackend struct {
	client *control.Client
	mem    *memory.Store
	close  func()
}

func openMemoryBackend(cfg *config.Config) (*memoryBackend, error) {
	c, _, err := control.Dial(cfg.Control.StateFile, cfg.Control.TokenFile, 30*time.Second)
	if err == nil {
		return &memoryBackend{client: c, close: func() {}}, nil
	}
	if !errors.Is(err, control.ErrNoDaemon) {
		return nil, err
	}
	if errors.Is(err, control.ErrStaleState) {
		fmt.Fprintf(os.Stderr, "thatch: %v; opening the store directly\n", err)
	}
	st, err := persistence.Open(filepath.Join(cfg.Data.Dir, "journal"), persistence.Options{})
	if errors.Is(err, persistence.ErrInUse) {
		return nil, fmt.Errorf("%w; it does not answer on %s: is it running with another config?", err, cfg.Control.StateFile)
	}
	if err != nil {
		return nil, err
	}
	mem, err := thatch.OpenMemory(context.Background(), st, cfg.Memory, hclog.NewNullLogger())
	if err != nil {
		st.Close()
		return nil, err
	}
	return &memoryBackend{mem: mem, close: func() { mem.Close(); st.Close() }}, nil
}

func (b *memoryBackend) call(path string, in any, out any) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return b.client.Do(ctx, "POST", path, in, out)
}

// importInput opens the file memory import names ("-": stdin); nil and
// the exit code when it cannot.
func importInput(positional []string) (io.ReadCloser, int) {
	if len(positional) != 1 {
		fmt.Fprintln(os.Stderr, "thatch memory import: name one file (- for stdin)")
		return nil, 2
	}
	if positional[0] == "-" {
		return io.NopCloser(os.Stdin), 0
	}
	f, err := os.Open(positional[0])
	if err != nil {
		fmt.Fprintf(os.Stderr, "thatch memory import: %v\n", err)
		return nil, 1
	}
	return f, 0
}

// runImport imports in through b and prints the report; it exits 1 when
// a line was refused.
func runImport(b *memoryBackend, in io.Reader, asJSON bool) int {
	rep, err := b.importFrom(in)
	if err != nil {
		fmt.Fprintf(os.Stderr, "thatch memory import: %v\n", err)
		return 1
	}
	if asJSON {
		printJSON(rep)
	} else {
		rep.print(os.Stdout, os.Stderr)
	}
	if len(rep.Refused) > 0 {
		return 1
	}
	return 0
}

// runMemory runs the memory subcommand sub with the arguments after its
// name.
func runMemory(sub *command, args []string) int {
	var flags *pflag.FlagSet
	cfg, code, err := loadConfig("memory "+sub.name, args, func(fs *pflag.FlagSet) {
		flags = fs
		sub.flags(fs)
	})
	if cfg == nil && err == nil {
		return code
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "thatch memory %s: %v\n", sub.name, err)
		if code == 2 {
			fmt.Fprintf(os.Stderr, "'thatch memory %s --help' lists its flags\n", sub.name)
		}
		return code
	}
	str := func(name string) string { v, _ := flags.GetString(name); return v }
	asJSON, _ := flags.GetBool("json")
	store, branch := str("store"), str("branch")
	positional := flags.Args()
	if (sub.name == "list" || sub.name == "export") && len(positional) > 0 {
		fmt.Fprintf(os.Stderr, "thatch memory %s: takes no arguments, got %q ('thatch memory %s --help')\n", sub.name, strings.Join(positional, " "), sub.name)
		return 2
	}
	var in io.Reader
	if sub.name == "import" {
		f, code := importInput(positional)
		if f == nil {
			return code
		}
		defer f.Close()
		in = f
	}
	b, err := openMemoryBackend(cfg)
	if err != nil {
		fmt.Fprintf(os.Stderr, "thatch memory: %v\n", err)
		return 1
	}
	defer b.close()
	var out any
	switch sub.name {
	case "list":
		out, err = b.list(store, branch)
	case "search":
		if len(positional) == 0 {
			err = errors.New("search needs a QUERY")
			break
		}
		limit, _ := flags.GetInt("limit")
		out, err = b.search(strings.Join(positional, " "), store, branch, limit)
	case "show", "forget":
		if len(positional) != 1 {
			err = fmt.Errorf("%s needs one LABEL or SLUG", sub.name)
			break
		}
		if sub.name == "show" {
			out, err = b.show(store, positional[0])
		} else {
			out, err = b.forget(store, positional[0])
		}
	case "export":
		err = b.export(os.Stdout, store)
		if err == nil {
			return 0
		}
	case "import":
		return runImport(b, in, asJSON)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "thatch memory %s: %v\n", sub.name, err)
		return 1
	}
	if asJSON {
		printJSON(out)
		return 0
	}
	printMemory(sub.name, out)
	return 0
}

func (b *memoryBackend) list(store, branch string) ([]memory.Entry, error) {
	if b.client != nil {
		var res struct {
			Entries []memory.Entry `json:"entries"`
		}
		err := b.call("/v1/memory/list", map[string]string{"store": store, "branch": branch}, &res)
		return res.Entries, err
	}
	stores := b.mem.Stores()
	if store != "" {
		stores = []string{store}
	}
	out := []memory.Entry{}
	for _, s := range stores {
		es, err := b.mem.List(s, branch)
		if err != nil {
			return nil, err
		}
		out = append(out, es...)
	}
	return out, nil
}

func (b *memoryBackend) search(q, store, branch string, limit int) ([]memory.Hit, error) {
	if b.client != nil {
		var res struct {
			Hits []memory.Hit `json:"hits"`
		}
		err := b.call("/v1/memory/recall", map[string]any{"query": q, "store": store, "branch": branch, "limit": limit}, &res)
		return res.Hits, err
	}
	var stores []string
	if store != "" {
		stores = []string{store}
	}
	return b.mem.Recall(context.Background(), memory.RecallInput{Query: q, Stores: stores, Branch: branch, Limit: limit})
}

func (b *memoryBackend) show(store, key string) (memory.Entry, error) {
	if store == "" {
		store = memory.GlobalStore
	}
	if b.client != nil {
		var e memory.Entry
		err := b.call("/v1/memory/show", map[string]string{"store": store, "slug": key}, &e)
		return e, err
	}
	return b.mem.Find(store, key)
}

func (b *memoryBackend) forget(store, key string) (memory.Entry, error) {
	if store == "" {
		store = memory.GlobalStore
	}
	if b.client != nil {
		var res struct {
			Forgotten memory.Entry `json:"forgotten"`
		}
		err := b.call("/v1/memory/forget", map[string]string{"store": store, "slug": key}, &res)
		return res.Forgotten, err
	}
	return b.mem.Forget(store, key)
}

func printMemory(sub string, out any) {
	tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	defer tw.Flush()
	switch v := out.(type) {
	case []memory.Entry:
		if len(v) == 0 {
			fmt.Println("no memories")
			return
		}
		fmt.Fprintln(tw, "STORE\tSLUG\tBRANCH\tCONF\tUPDATED\tRECALLS")
		for _, e := range v {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%d\n", e.Store, e.Slug, dash(e.Branch), e.Confidence, e.Updated.Local().Format(time.DateOnly), e.RecallCount)
		}
	case []memory.Hit:
		if len(v) == 0 {
			fmt.Println("no matches")
			return
		}
		fmt.Fprintln(tw, "SCORE\tSTORE\tSLUG\tCONTENT")
		for _, h := range v {
			fmt.Fprintf(tw, "%.2f\t%s\t%s\t%s\n", h.Score, h.Entry.Store, h.Entry.Slug, oneLine(h.Entry.Content, 80))
		}
	case memory.Entry:
		if sub == "forget" {
			fmt.Printf("forgot %s/%s (%s)\n", v.Store, v.Slug, v.Label)
			return
		}
		fmt.Printf("%s/%s\nlabel:      %s\nbranch:     %s\nconfidence: %d\narchived:   %v\ncreated:    %s\nupdated:    %s\nrecalls:    %d\n\n%s\n",
			v.Store, v.Slug, v.Label, dash(v.Branch), v.Confidence, v.Archived,
			v.Created.Local().Format(time.DateTime), v.Updated.Local().Format(time.DateTime), v.RecallCount, v.Content)
	}
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// hygieneFlags are the flags of thatch hygiene.
func hygieneFlags(fs *pflag.FlagSet) {
	fs.Bool("json", false, "print JSON")
	fs.String("resolve", "", "a reported pair to judge, as SLUG_A,SLUG_B")
	fs.String("verdict", "", "the judgement of --resolve: duplicate or distinct")
	fs.String("store", "", "the store of the pair")
}

func runHygiene(args []string) int {
	var flags *pflag.FlagSet
	cfg, code, err := loadConfig("hygiene", args, func(fs *pflag.FlagSet) {
		flags = fs
		hygieneFlags(fs)
	})
	if cfg == nil && err == nil {
		return code
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "thatch hygiene: %v\n", err)
		if code == 2 {
			fmt.Fprintln(os.Stderr, "'thatch hygiene --help' lists its flags")
		}
		return code
	}
	asJSON, _ := flags.GetBool("json")
	resolve, _ := flags.GetString("resolve")
	verdict, _ := flags.GetString("verdict")
	store, _ := flags.GetString("store")
	b, err := openMemoryBackend(cfg)
	if err != nil {
		fmt.Fprintf(os.Stderr, "thatch hygiene: %v\n", err)
		return 1
	}
	defer b.close()
	if resolve != "" {
		pair := strings.Split(resolve, ",")
		if len(pair) != 2 || store == "" || (verdict != "duplicate" && verdict != "distinct") {
			fmt.Fprintln(os.Stderr, "thatch hygiene: --resolve A,B needs --store and --verdict duplicate|distinct")
			return 2
		}
		if b.client != nil {
			err = b.call("/v1/memory/resolve", map[string]string{"store": store, "a": pair[0], "b": pair[1], "verdict": verdict}, nil)
		} else {
			err = b.mem.ResolvePair(store, pair[0], pair[1], memory.Verdict(verdict))
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "thatch hygiene: %v\n", err)
			return 1
		}
		fmt.Printf("recorded: %s and %s in %s are %s\n", pair[0], pair[1], store, verdict)
		return 0
	}
	var report []memory.HygieneStore
	if b.client != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		err = b.client.Do(ctx, "GET", "/v1/memory/hygiene", nil, &report)
	} else {
		report = memory.HygieneReport(b.mem)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "thatch hygiene: %v\n", err)
		return 1
	}
	if asJSON {
		printJSON(report)
		return 0
	}
	clean := true
	for _, s := range report {
		if s.Line == "" {
			continue
		}
		clean = false
		fmt.Println(s.Line)
		for _, p := range s.Pairs {
			fmt.Printf("  possible duplicate (%.2f): %s  %s   resolve: thatch hygiene --store %s --resolve %s,%s --verdict duplicate|distinct\n",
				p.Score, p.A, p.B, s.Store, p.A, p.B)
		}
	}
	if clean {
		fmt.Println("every store is clean")
	}
	return 0
}

// printJSON writes v to stdout as indented JSON.
func printJSON(v any) {
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}
