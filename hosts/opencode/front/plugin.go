package front

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/netip"
	"net/url"
	"strings"

	"github.com/thatch-run/thatch/config"
	"github.com/thatch-run/thatch/hosts/control"
	"github.com/thatch-run/thatch/internal/redact"
	"github.com/thatch-run/thatch/messages"
	"github.com/thatch-run/thatch/persistence/memory"
	"github.com/thatch-run/thatch/supervisor/frontend"
)

// Plugin routes. Every body is JSON; every answer is JSON.

type toolBody struct {
	Host      string          `json:"host"`
	SessionID string          `json:"sessionID"`
	CallID    string          `json:"callID"`
	Tool      string          `json:"tool"`
	Args      json.RawMessage `json:"args"`
	Title     string          `json:"title"`
	Output    string          `json:"output"`
}

type commandBody struct {
	Host      string `json:"host"`
	SessionID string `json:"sessionID"`
	Command   string `json:"command"`
	Arguments string `json:"arguments"`
}

type callerBody struct {
	SessionID string `json:"sessionID"`
	// Target is the payload tool's optional session_id argument.
	Target string `json:"target"`
}

type registerBody struct {
	URL       string `json:"url"`
	Directory string `json:"directory"`
	PID       int    `json:"pid"`
	Username  string `json:"username"`
	Password  string `json:"password"`
}

func (o *FrontEnd) mountPlugin(s frontend.Mux) {
	s.MountFunc("POST /v1/opencode/tool", o.serveTool)
	s.MountFunc("POST /v1/opencode/command", o.serveCommand)
	s.MountFunc("POST /v1/opencode/payload", o.servePayload)
	s.MountFunc("POST /v1/opencode/done", o.serveDone)
	s.MountFunc("POST /v1/opencode/register", o.serveRegister)
}

// serveTool serves POST /v1/opencode/tool.
func (o *FrontEnd) serveTool(w http.ResponseWriter, r *http.Request) {
	data, ok := readBody(w, r)
	if !ok {
		return
	}
	// Secrets and <private> spans go here, before anything is journaled.
	msg, err := cleanToolMessage(data, o.cleanText, o.cleanOutput)
	o.deliverChecked(w, r, msg, err)
}

// serveCommand serves POST /v1/opencode/command.
func (o *FrontEnd) serveCommand(w http.ResponseWriter, r *http.Request) {
	var b commandBody
	if !decodeBody(w, r, &b) {
		return
	}
	msg, err := commandMessage(b, o.cleanText)
	o.deliverChecked(w, r, msg, err)
}

// deliverChecked answers a plugin call whose body became msg (or failed
// its checks with err): a 400 for a bad body, else {"ok": true} once msg
// is journaled.
func (o *FrontEnd) deliverChecked(w http.ResponseWriter, r *http.Request, msg any, err error) {
	if err != nil {
		badRequest(w, err.Error())
		return
	}
	if err := o.deliver(r.Context(), msg); err != nil {
		writeCallError(w, err)
		return
	}
	control.WriteJSON(w, http.StatusOK, map[string]bool{"ok": true})
}

// servePayload serves POST /v1/opencode/payload.
func (o *FrontEnd) servePayload(w http.ResponseWriter, r *http.Request) {
	var b callerBody
	if !decodeBody(w, r, &b) || !requireIDs(w, idField{"sessionID", b.SessionID, true}, idField{"target", b.Target, false}) {
		return
	}
	known, err := o.known(b.SessionID, b.Target)
	if err != nil {
		writeError(w, http.StatusInternalServerError, err.Error(), false)
		return
	}
	if !known {
		// Nothing to fetch, and asking would make an empty family. The
		// extractor of a deleted parent (whose links are forgotten) is
		// such a caller: it must hear "nothing", not an error.
		control.WriteJSON(w, http.StatusOK, nil)
		return
	}
	res, err := o.request(r.Context(), &messages.FetchPayload{CallerID: b.SessionID, TargetID: b.Target})
	if err != nil {
		writeCallError(w, err)
		return
	}
	p, ok := res.(*messages.PayloadFetched)
	if !ok {
		writeError(w, http.StatusInternalServerError, fmt.Sprintf("front: unexpected answer %T", res), false)
		return
	}
	if len(p.Interactions) == 0 {
		control.WriteJSON(w, http.StatusOK, nil)
		return
	}
	project, global := o.memSvc.projectStore(o.directoryOf(p.ParentID)), memory.GlobalStore
	answer := map[string]any{"interactions": p.Interactions, "projectStore": project, "globalStore": global}
	if p.Note != "" {
		answer["note"] = p.Note // the extractor sees only a tail: older ones were dropped
	}
	control.WriteJSON(w, http.StatusOK, answer)
}

// serveDone serves POST /v1/opencode/done.
func (o *FrontEnd) serveDone(w http.ResponseWriter, r *http.Request) {
	var b callerBody
	// A stranger's ack is not refused: a completion without a claim
	// completes nothing, and the extractor of a deleted parent (whose
	// links are forgotten) must hear that, not an error.
	if !decodeBody(w, r, &b) || !requireIDs(w, idField{"sessionID", b.SessionID, true}) {
		return
	}
	res, err := o.request(r.Context(), &messages.ExtractionDone{CallerID: b.SessionID})
	if err != nil {
		writeCallError(w, err)
		return
	}
	control.WriteJSON(w, http.StatusOK, res)
}

// serveRegister serves POST /v1/opencode/register.
func (o *FrontEnd) serveRegister(w http.ResponseWriter, r *http.Request) {
	var b registerBody
	if !decodeBody(w, r, &b) {
		return
	}
	u, err := url.Parse(b.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		badRequest(w, "url must be the opencode server's http URL")
		return
	}
	if !isLoopbackHost(u.Hostname()) {
		badRequest(w, "only opencode servers on loopback can register")
		return
	}
	srv := config.Server{Name: "opencode@" + u.Host, URL: b.URL, API: config.APIAuto,
		Username: b.Username, Password: config.Secret(b.Password)}
	if srv.Username == "" {
		srv.Username = config.DefaultServerUsername
	}
	o.reapGone()
	h, err := o.connect(context.WithoutCancel(r.Context()), srv, b.PID, b.Directory)
	if err != nil {
		writeError(w, http.StatusBadGateway, err.Error(), true)
		return
	}
	control.WriteJSON(w, http.StatusOK, map[string]string{"host": h.name, "api": h.info.API})
}

// directoryOf returns the directory a family's parent session runs in, as
// its host reported it (empty when unknown).
func (o *FrontEnd) directoryOf(family string) string {
	return o.dir.directory(family)
}

// known reports whether thatch holds anything for one of sessions (the
// empty ones are skipped): whether the family it belongs to (itself, or the
// parent it is linked to as a child) has journaled an event. Asking an
// unknown caller's family would only make an empty one. A family deleted
// and swept is unknown again.
func (o *FrontEnd) known(sessions ...string) (bool, error) {
	for _, session := range sessions {
		if session == "" {
			continue
		}
		seq, err := o.jr.HighestSeq(familyID(o.dir.family(session)))
		if err != nil {
			return false, fmt.Errorf("front: cannot look up the family of %s: %w", session, err)
		}
		if seq > 0 {
			return true, nil
		}
	}
	return false, nil
}

// requireIDs answers 400 and returns false when one of ids is invalid
// (see checkID).
func requireIDs(w http.ResponseWriter, ids ...idField) bool {
	if err := checkIDs(ids...); err != nil {
		badRequest(w, err.Error())
		return false
	}
	return true
}

// isLoopbackHost reports whether h is a literal loopback address or
// "localhost". It never resolves a name: 127.attacker.example would
// resolve wherever its owner wants, and the opencode password goes along.
func isLoopbackHost(h string) bool {
	if strings.EqualFold(h, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(h)
	return err == nil && ip.Unmap().IsLoopback()
}

// cleanOutput is what a tool's output keeps: its <private> spans dropped
// (always), then its secrets redacted.
func (o *FrontEnd) cleanOutput(s string) string {
	return o.cleanText(redact.DropPrivate(s))
}

// cleanText is s with its secrets redacted (s itself when the redactor is
// off).
func (o *FrontEnd) cleanText(s string) string {
	if o.red == nil {
		return s
	}
	out, _ := o.red.Redact(s)
	return out
}

// redactions returns how many secrets of each kind were redacted since
// start (nil when the redactor is off): what `thatch status` shows, never
// what was redacted.
func (o *FrontEnd) redactions() map[string]uint64 {
	if o.red == nil {
		return nil
	}
	return o.red.Counts()
}
