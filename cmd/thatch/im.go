package main

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/thatch-run/thatch/actors/imbinding"
	"github.com/thatch-run/thatch/config"
	ocfront "github.com/thatch-run/thatch/hosts/opencode/front"
	"github.com/thatch-run/thatch/im/chat"
	"github.com/thatch-run/thatch/im/cluster"
	"github.com/thatch-run/thatch/im/feishu"
	imfront "github.com/thatch-run/thatch/im/front"
	"github.com/thatch-run/thatch/im/telegram"
	"github.com/thatch-run/thatch/supervisor/frontend"
)

// frontEnds are the front ends cfg asks for: opencode and the agents'
// memory always, IM when a bot token is set.
func frontEnds(cfg *config.Config) []frontend.FrontEnd {
	ag := imfront.NewAgents(cfg, imfront.Options{})
	fes := []frontend.FrontEnd{ocfront.New(cfg, ocfront.Options{}), ag}
	if imfront.Enabled(cfg) {
		fes = append(fes, imfront.New(cfg, imfront.Options{Agents: ag})) // opened after ag
	}
	return fes
}

// writeBindings prints the IM bindings of a status report.
func writeBindings(w io.Writer, bindings []any) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  PLATFORM\tTHREAD\tNAME\tAGENT\tWINDOW\tSTATE\tLAST MESSAGE")
	for _, raw := range bindings {
		var v struct {
			imbinding.View
			Error string `json:"error"`
		}
		b, err := json.Marshal(raw)
		if err == nil {
			err = json.Unmarshal(b, &v)
		}
		switch {
		case err != nil:
			fmt.Fprintf(tw, "  ?\t?\t\t\t\tunreadable: %v\t\n", err)
		case v.Error != "":
			fmt.Fprintf(tw, "  %s\t%s\t\t\t\terror: %s\t\n", platformOf(v.Thread), v.Thread, v.Error)
		default:
			state := v.State
			if v.Step != "" {
				state += " (" + v.Step + ")"
			}
			if v.Queued > 0 {
				state += fmt.Sprintf(", %d queued", v.Queued)
			}
			if v.Unsent > 0 {
				state += fmt.Sprintf(", %d unsent", v.Unsent)
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\t%s\n", platformOf(v.Thread), v.Thread, v.DisplayName, v.Agent, v.Window, state, v.LastMessage)
			if v.Ended != "" {
				fmt.Fprintf(tw, "  \t\t\t\t\tended: %s\t\n", v.Ended)
			}
			if v.Refused != "" {
				fmt.Fprintf(tw, "  \t\t\t\t\tthe chat refused a message for good (dropped): %s\t\n", v.Refused)
			}
		}
	}
	tw.Flush()
}

// writeUntracked prints the windows no binding owns.
func writeUntracked(w io.Writer, ws []imfront.UntrackedWindow) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  WINDOW\tNAME\tAGENT\tDIRECTORY")
	for _, x := range ws {
		agent := x.Agent
		if agent == "" {
			agent = "-"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", x.ID, x.Name, agent, x.Dir)
	}
	tw.Flush()
}

// writeCluster prints the cluster as the daemon's node sees it: the
// members, who receives for each account, and where each thread lives.
func writeCluster(w io.Writer, c *cluster.Status) {
	fmt.Fprintf(w, "\ncluster: node %s, %s (replicas %d, lease %s)\n", c.Node, c.State, c.Replicas, c.LeaseTTL)
	if c.BoardWriter != "" {
		fmt.Fprintf(w, "  the chats' boards are written by %s\n", c.BoardWriter)
	}
	if c.LastError != "" {
		fmt.Fprintf(w, "  last error: %s\n", c.LastError)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  MEMBER	UP SINCE	RECEIVES FOR	MEMORY BEHIND")
	for _, m := range c.Members {
		var accts []string
		for a, holder := range c.Leases {
			if holder == m.Node {
				accts = append(accts, a)
			}
		}
		sort.Strings(accts)
		recv := strings.Join(accts, ", ")
		if recv == "" {
			recv = "-"
		}
		behind := "-"
		if n, ok := c.MemoryBehind[m.Node]; ok {
			behind = fmt.Sprintf("%d changes", n)
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", m.Node, m.Since.Local().Format(time.DateTime), recv, behind)
	}
	for _, node := range slices.Sorted(maps.Keys(c.MemoryBehind)) {
		if !slices.ContainsFunc(c.Members, func(m cluster.Member) bool { return m.Node == node }) {
			fmt.Fprintf(tw, "  %s\tdown\t-\t%d changes\n", node, c.MemoryBehind[node])
		}
	}
	tw.Flush()
	if len(c.Threads) == 0 {
		return
	}
	threads := make([]string, 0, len(c.Threads))
	for t := range c.Threads {
		threads = append(threads, t)
	}
	sort.Strings(threads)
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  THREAD	NODE")
	for _, t := range threads {
		node := c.Threads[t]
		if node == "" {
			node = "(asking which machine)"
		}
		fmt.Fprintf(tw, "  %s\t%s\n", t, node)
	}
	tw.Flush()
}

// platformOf names the chat platform of a thread key by its scheme.
func platformOf(thread string) string {
	switch chat.SchemeOf(thread) {
	case telegram.Scheme:
		return "telegram"
	case feishu.Scheme:
		return "feishu"
	}
	return "?"
}
