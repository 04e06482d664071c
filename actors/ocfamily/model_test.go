package ocfamily

import (
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/thatch-run/thatch/messages"
)

// model is an independent, deliberately plain statement of the issue's
// rules about where every interaction is. It tracks interactions by their
// call id, in buffering order, and knows nothing of entry numbers, events
// or the State layout. The property test runs it beside the real Family.

type place int

const (
	atPending   place = iota
	atAccepted        // under the claim of holder
	atChildBuf        // in the own buffer of child holder
	atCompleted       // completed (holder is who completed it)
	atTaken           // taken with the deleted parent
	atDropped         // dropped on overflow
	atDiscarded       // a child's own entry, dropped with the child
)

func (p place) String() string {
	return [...]string{"pending", "accepted", "child buffer", "completed", "taken with parent", "dropped on overflow", "discarded with child"}[p]
}

type mEntry struct {
	id     string
	order  int
	where  place
	holder string
	at     time.Time
}

type mChild struct {
	kind      ChildKind
	fetched   bool
	finishing bool
	metrics   Metrics
	activeAt  time.Time // last fetch or memory write
}

type mWrap struct {
	kind, token string
	checking    bool
	since       time.Time // when the running check started
}

type model struct {
	limit    int
	stale    time.Duration
	entries  map[string]*mEntry
	next     int
	children map[string]*mChild
	deleted  bool
	// noted is set once a deleted family's note for the sweep is stored.
	noted      bool
	extracting bool
	attached   string
	// extSince is when the running extraction started.
	extSince   time.Time
	compacting bool
	wrap       *mWrap
	// checks counts the wrap-up checks started.
	checks uint64
	// exitSince is when a greenlit exit's close became due; zero when none
	// is waiting.
	exitSince time.Time
}

func newModel(limit int, stale time.Duration) *model {
	return &model{limit: limit, stale: stale, entries: map[string]*mEntry{}, children: map[string]*mChild{}}
}

// list returns the entries at where (and with holder, if not ""), in
// buffering order.
func (m *model) list(where place, holder string) []*mEntry {
	var out []*mEntry
	for _, e := range m.entries {
		if e.where == where && (holder == "" || e.holder == holder) {
			out = append(out, e)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].order < out[j].order })
	return out
}

func ids(es []*mEntry) []string {
	out := []string{}
	for _, e := range es {
		out = append(out, e.id)
	}
	return out
}

func (m *model) move(es []*mEntry, where place, holder string) {
	for _, e := range es {
		e.where, e.holder = where, holder
	}
}

// unbuffered are the tools whose calls are never buffered, written out
// here rather than taken from the code under test.
var unbuffered = map[string]bool{
	"skill": true, "task": true, "subagent": true,
	"memory_remember": true, "memory_recall": true, "memory_forget": true, "memory_list": true,
}

func (m *model) tool(session, id, toolName string) {
	if m.deleted || unbuffered[toolName] || strings.HasPrefix(toolName, "thatch_") {
		return
	}
	where := atPending
	holder := ""
	switch {
	case session == parent:
	case m.children[session] != nil:
		where, holder = atChildBuf, session
	default:
		return
	}
	buf := m.list(where, holder)
	for i := 0; len(buf)-i >= m.limit; i++ {
		buf[i].where = atDropped
	}
	m.next++
	m.entries[id] = &mEntry{id: id, order: m.next, where: where, holder: holder}
}

// fetch returns the ids the fetcher must receive.
func (m *model) fetch(caller, target string, now time.Time) []string {
	if m.deleted || caller == "" {
		return []string{}
	}
	if !(target == "" || target == caller || target == parent || m.children[target] != nil) {
		return []string{}
	}
	got := m.list(atPending, "")
	for _, e := range got {
		e.where, e.holder, e.at = atAccepted, caller, now
	}
	if c := m.children[caller]; c != nil {
		if len(got) > 0 || !c.fetched {
			c.activeAt = now // the fetch is journaled
		}
		c.fetched = true
	}
	return ids(got)
}

func (m *model) ack(caller string) int {
	if m.deleted {
		return 0
	}
	if claim := m.list(atAccepted, caller); len(claim) > 0 {
		m.move(claim, atCompleted, caller)
		return len(claim)
	}
	if c := m.children[caller]; c != nil && !c.fetched {
		all := m.list(atAccepted, "")
		m.move(all, atCompleted, caller)
		return len(all)
	}
	return 0
}

func (m *model) memory(caller string, op messages.MemoryOp, now time.Time) {
	c := m.children[caller]
	if m.deleted || c == nil {
		return
	}
	c.activeAt = now
	m.move(m.list(atAccepted, caller), atCompleted, caller)
	switch op {
	case messages.MemoryCreated:
		c.metrics.New++
	case messages.MemoryUpdated:
		c.metrics.Updated++
	case messages.MemoryDeleted:
		c.metrics.Deleted++
	}
}

// idle returns whether a FetchMessages must go out.
// idle returns whether a FetchMessages must go out, and the hung
// extraction child a parent's idle deletes ("" for none).
func (m *model) idle(session string, now time.Time) (fetch bool, abandoned string) {
	if m.deleted {
		return false, ""
	}
	if session == parent {
		if m.wrap != nil {
			m.checks++ // a running check starts over
			m.wrap.since = now
			m.wrap.checking = true
			return true, ""
		}
		return false, m.normalIdle(now)
	}
	if m.children[session] != nil {
		m.childIdle(session)
	}
	return false, ""
}

// normalIdle returns the hung extraction child it deletes ("" for none).
func (m *model) normalIdle(now time.Time) (abandoned string) {
	abandoned = m.staleSweep(now)
	if !m.compacting && !m.extracting && len(m.list(atPending, "")) > 0 {
		m.extracting, m.attached, m.extSince = true, "", now
	}
	return abandoned
}

// staleSweep is the stale reaper's sweep, which every parent idle runs
// first: stale accepted entries go back, and a create that never came is
// given up.
func (m *model) staleSweep(now time.Time) string {
	if m.deleted {
		return ""
	}
	for _, e := range m.list(atAccepted, "") {
		if now.Sub(e.at) >= m.stale {
			e.where, e.holder, e.at = atPending, "", time.Time{}
		}
	}
	return m.giveUpStaleExtraction(now)
}

// giveUpLostCheck is the sweep ending a wrap-up check that got no answer
// within the stale window.
func (m *model) giveUpLostCheck(now time.Time) {
	if !m.deleted && m.wrap != nil && m.wrap.checking && now.Sub(m.wrap.since) >= m.stale {
		m.wrap.checking = false
	}
}

// giveUpStaleExtraction ends an extraction running for the stale window:
// a child never attached is given up, an attached one is deleted and its
// claim goes back.
// It returns the child it deletes ("" for none).
func (m *model) giveUpStaleExtraction(now time.Time) string {
	if m.deleted || !m.extracting || now.Sub(m.extSince) < m.stale {
		return ""
	}
	id := m.attached
	if id == "" {
		m.extracting = false
		return ""
	}
	if c := m.children[id]; c != nil && (c.finishing || now.Sub(c.activeAt) < m.stale) {
		return "" // waiting out its grace, or active within the window
	}
	if len(m.list(atAccepted, id)) > 0 {
		return "" // working on a fresh claim
	}
	m.clearChild(id)
	m.extracting, m.attached = false, ""
	return id
}

func (m *model) requeue(es []*mEntry) {
	for _, e := range es {
		e.where, e.holder, e.at = atPending, "", time.Time{}
	}
}

func (m *model) clearChild(id string) {
	m.move(m.list(atChildBuf, id), atDiscarded, id)
	delete(m.children, id)
	if m.attached == id {
		m.extracting, m.attached = false, ""
	}
}

func (m *model) childIdle(id string) {
	c := m.children[id]
	m.move(m.list(atAccepted, id), atCompleted, id)
	if c.kind == ChildTask {
		c.finishing = false
		return
	}
	m.clearChild(id)
}

func (m *model) errored(id string) {
	c := m.children[id]
	if m.deleted || c == nil {
		return
	}
	switch {
	case c.kind == ChildTask, c.fetched:
		m.requeue(m.list(atAccepted, id))
	default:
		m.requeue(m.list(atAccepted, ""))
	}
	if c.kind == ChildExtraction {
		m.extracting, m.attached = false, ""
	}
	m.clearChild(id)
}

func (m *model) deletedSession(id string) {
	if m.deleted {
		return
	}
	if id == parent {
		m.parentDeleted()
		return
	}
	m.childGone(id)
}

func (m *model) childGone(id string) {
	c := m.children[id]
	switch {
	case c == nil:
		m.requeue(m.list(atAccepted, id))
		return
	case c.kind == ChildExtraction && !c.fetched:
		m.requeue(m.list(atAccepted, ""))
	default:
		m.requeue(m.list(atAccepted, id))
	}
	m.clearChild(id)
}

func (m *model) parentDeleted() {
	m.move(m.list(atAccepted, ""), atTaken, "")
	m.move(m.list(atPending, ""), atTaken, "")
	for id := range m.children {
		m.move(m.list(atChildBuf, id), atDiscarded, id)
	}
	m.children = map[string]*mChild{}
	m.deleted = true
	m.extracting, m.attached, m.compacting, m.wrap = false, "", false, nil
	m.exitSince = time.Time{}
}

// exitIssued is the executor's report on the close: sent, or failed. A
// failed close waits for the host's return while the window lasts.
func (m *model) exitIssued(failed bool, now time.Time, window time.Duration) {
	if m.deleted || m.exitSince.IsZero() {
		return
	}
	if !failed || now.Sub(m.exitSince) > window {
		m.exitSince = time.Time{}
	}
}

// exitReconciled is a greenlit exit meeting its host again: it returns
// whether the close is issued again (within the window); after the window
// the exit ends.
func (m *model) exitReconciled(now time.Time, window time.Duration) bool {
	if m.deleted || m.exitSince.IsZero() {
		return false
	}
	if now.Sub(m.exitSince) <= window {
		return true
	}
	m.exitSince = time.Time{}
	return false
}

// exitTick is the exit's window timer: an exit still waiting ends.
func (m *model) exitTick() {
	if !m.deleted {
		m.exitSince = time.Time{}
	}
}

func (m *model) sessionCreated(id, title string) {
	if m.deleted || id == parent || m.children[id] != nil {
		return
	}
	kind := ChildTask
	if title == ExtractionTitle {
		kind = ChildExtraction
	}
	m.children[id] = &mChild{kind: kind}
}

func (m *model) command(name string) {
	if m.deleted {
		return
	}
	switch name {
	case "thatch/compact":
		m.wrap = &mWrap{kind: WrapUpCompact, token: TokenCompact}
	case "thatch/exit":
		m.wrap = &mWrap{kind: WrapUpExit, token: TokenExit}
	}
}

func (m *model) messagesFetched(text string, failed bool, now time.Time, check uint64) {
	if m.deleted || m.wrap == nil || !m.wrap.checking || check != m.checks {
		return
	}
	if !failed {
		lines := strings.Split(strings.TrimSpace(text), "\n")
		if strings.TrimSpace(lines[len(lines)-1]) == m.wrap.token {
			if m.wrap.kind == WrapUpCompact {
				m.compacting = true
			} else {
				m.exitSince = now
			}
			m.wrap = nil
			return
		}
	}
	m.wrap.checking = false
	m.normalIdle(now)
}

// childCreated returns whether the new child must be deleted.
func (m *model) childCreated(id string, failed bool, now time.Time) bool {
	if m.deleted {
		return false
	}
	if failed {
		if m.extracting && m.attached == "" {
			m.extracting = false
		}
		return false
	}
	if id == m.attached {
		return false
	}
	if m.extracting && m.attached == "" {
		if c := m.children[id]; c != nil {
			c.kind, c.finishing = ChildExtraction, false
		} else {
			m.children[id] = &mChild{kind: ChildExtraction}
		}
		m.attached, m.extSince = id, now
		return false
	}
	if c := m.children[id]; c != nil {
		if c.kind != ChildExtraction || c.fetched {
			return false
		}
		m.clearChild(id)
	}
	return true
}

func (m *model) promptFailed(id string) {
	if !m.deleted && m.extracting && m.attached != "" && id == m.attached {
		m.extracting, m.attached = false, ""
	}
}

func (m *model) reconciled(r *messages.FamilyReconciled, now time.Time) {
	if m.deleted {
		return
	}
	if !r.Present {
		m.parentDeleted()
		return
	}
	listed := map[string]messages.HostSession{}
	for _, h := range r.Children {
		listed[h.SessionID] = h
	}
	var known []string
	for id := range m.children {
		known = append(known, id)
	}
	slices.Sort(known)
	for _, id := range known {
		h, ok := listed[id]
		if !ok {
			m.childGone(id)
			continue
		}
		if c := m.children[id]; c.kind == ChildExtraction {
			c.finishing = !h.Busy
		}
	}
	for _, h := range r.Children {
		if m.children[h.SessionID] == nil && h.Title != ExtractionTitle {
			m.children[h.SessionID] = &mChild{kind: ChildTask}
		}
	}
	if m.compacting && !r.Parent.Busy {
		m.compacting = false
	}
	// Lost calls are asked again now: their stale windows restart.
	if m.extracting && m.attached == "" {
		m.extSince = now
	}
	if m.wrap != nil && m.wrap.checking {
		m.checks++
		m.wrap.since = now
	}
}

// resumes reports which lost host calls a reconcile or an actor restart
// issues again: the create of a child not yet attached, and the message
// fetch of a running wrap-up check.
func (m *model) resumes() (create, fetch bool) {
	if m.deleted {
		return false, false
	}
	return m.extracting && m.attached == "", m.wrap != nil && m.wrap.checking
}

func (m *model) tick(child string) {
	if c := m.children[child]; !m.deleted && c != nil && c.finishing {
		m.childIdle(child)
	}
}
