package e2e

import (
	"encoding/json"
	"fmt"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/thatch-run/thatch/e2e/fakemodel"
	"github.com/thatch-run/thatch/e2e/faketelegram"
)

// Stack is one spec's running system: a world, a fake model, a daemon and
// one opencode server watched by it, with thatch installed globally.
type Stack struct {
	W     *World
	Model *fakemodel.Server
	D     *Daemon
	OC    *OpenCode
}

// StartStack installs thatch (seeded dependencies), then starts the daemon
// and opencode, and waits until the daemon watches opencode.
func StartStack() *Stack { return startStackWith(func(*World) {}) }

// startStackWith is StartStack with prepare run on the new world first.
func startStackWith(prepare func(*World)) *Stack {
	s := &Stack{W: NewWorld(), Model: fakemodel.New()}
	DeferCleanup(s.Model.Close)
	prepare(s.W)
	WriteOpenCodeConfig(s.W, s.Model)
	s.W.SeedDeps()
	Install(s.W)
	s.D = StartDaemon(s.W)
	s.OC = StartOpenCode(s.W, 0)
	s.D.WaitWatching(s.OC.HostPort)
	DeferCleanup(func() {
		if CurrentSpecReport().Failed() {
			dumpModel(s.Model)
		}
	})
	return s
}

// NewParent creates a top-level session and waits for thatch's
// session-start reminder to land in it, so that the spec's first prompt
// does not race the reminder (which would then be the last user message).
func (oc *OpenCode) NewParent() Session {
	p := oc.CreateSession("", "")
	EventuallyWithOffset(1, func() string { return oc.LastUserText(p.ID) }).Should(ContainSubstring("thatch is watching this session"))
	return p
}

// dumpModel writes what the fake model was asked and answered, for a
// failed spec's report.
func dumpModel(m *fakemodel.Server) {
	for i, r := range m.Requests() {
		res := r.ToolResults()
		last := ""
		if len(res) > 0 {
			last = res[len(res)-1]
		}
		fmt.Fprintf(GinkgoWriter, "[model] #%d rule=%q step=%d status=%d first-user=%.80q last-result=%.200q\n",
			i, r.Rule, r.Step, r.Status, r.FirstUser(), last)
	}
}

// payloadTools parses a thatch_get_extraction_payload result and returns
// the tools of its interactions, in order.
func payloadTools(result string) []string {
	var p struct {
		Interactions []struct {
			Tool string `json:"tool"`
		} `json:"interactions"`
		ProjectStore string `json:"projectStore"`
	}
	ExpectWithOffset(1, json.Unmarshal([]byte(result), &p)).To(Succeed(), "payload: %s", result)
	var out []string
	for _, in := range p.Interactions {
		out = append(out, in.Tool)
	}
	return out
}

// Settle waits until the daemon has read every event opencode published
// about parent so far and has done all that they started, so that a spec
// can assert what did not happen: a probe child is created under parent
// (its session.created reaches the daemon after every earlier event of the
// same server), the family records it, the daemon comes to rest, and the
// probe is deleted again.
func (s *Stack) Settle(parent string) {
	GinkgoHelper()
	probe := s.OC.CreateSession(parent, "thatch-e2e-probe")
	Eventually(func() bool { return s.D.Family(parent).HasChild(probe.ID) }).Should(BeTrue(), "the daemon never saw the probe child")
	s.D.Quiesce()
	s.OC.Delete(probe.ID)
	Eventually(func() bool { return s.D.Family(parent).HasChild(probe.ID) }).Should(BeFalse(), "the daemon kept the deleted probe child")
}

// childCreated is a session.created of a child, from the event stream.
type childCreated struct {
	ID, ParentID, Title string
}

// CreatedChildren lists the children of parent whose creation the server
// announced, oldest first.
func (oc *OpenCode) CreatedChildren(parent string) []childCreated {
	var out []childCreated
	for _, e := range oc.Events("session.created") {
		var p struct {
			Info struct {
				ID       string `json:"id"`
				ParentID string `json:"parentID"`
				Title    string `json:"title"`
			} `json:"info"`
		}
		if json.Unmarshal(e.Properties, &p) == nil && p.Info.ParentID == parent {
			out = append(out, childCreated{p.Info.ID, p.Info.ParentID, p.Info.Title})
		}
	}
	return out
}

// ExtractionChildren is a polling function: ids of parent's children
// titled thatch-extraction that the server announced.
func (oc *OpenCode) ExtractionChildren(parent string) func() []string {
	return func() []string {
		var ids []string
		for _, c := range oc.CreatedChildren(parent) {
			if c.Title == "thatch-extraction" {
				ids = append(ids, c.ID)
			}
		}
		return ids
	}
}

// Deleted reports whether the server announced session.deleted for id.
func (oc *OpenCode) Deleted(id string) func() bool {
	return func() bool {
		for _, e := range oc.Events("session.deleted") {
			if e.Prop("sessionID") == id {
				return true
			}
		}
		return false
	}
}

// Errored reports whether the server announced session.error for id.
func (oc *OpenCode) Errored(id string) func() bool {
	return func() bool {
		for _, e := range oc.Events("session.error") {
			if e.Prop("sessionID") == id {
				return true
			}
		}
		return false
	}
}

// drained is true when the family holds nothing: no pending or accepted
// interaction, no claim, no child and no extraction running.
func drained(f Family) bool {
	return f.SessionID != "" && f.Pending == 0 && f.Accepted == 0 && len(f.Claims) == 0 && len(f.Children) == 0 && !f.Extracting
}

// boardRequests are the requests that sent or edited a chat's board.
func boardRequests(tg *faketelegram.Server) []faketelegram.Sent {
	var out []faketelegram.Sent
	for _, s := range tg.Sent() {
		if (s.Method == "sendMessage" || s.Method == "editMessageText") && strings.HasPrefix(s.Text, "📋 Sessions of this chat") {
			out = append(out, s)
		}
	}
	return out
}

// boardText is the board's newest text, "" before it was sent.
func boardText(tg *faketelegram.Server) func() string {
	return func() string {
		b := boardRequests(tg)
		if len(b) == 0 {
			return ""
		}
		return b[len(b)-1].Text
	}
}

// boardSends are the board's sends (each a new message).
func boardSends(tg *faketelegram.Server) []faketelegram.Sent {
	var out []faketelegram.Sent
	for _, s := range boardRequests(tg) {
		if s.Method == "sendMessage" {
			out = append(out, s)
		}
	}
	return out
}
