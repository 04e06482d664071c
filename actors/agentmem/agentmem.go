// Package agentmem is the decision core of the memory of one agent
// session that is no opencode session (a claude or codex session thatch
// follows for a chat, or one started by hand that its hook told the
// daemon of): a parent session in the sense of the opencode half. Its tool interactions, read from the transcript (redacted at that
// edge), are buffered here; when it goes idle (its turn ended and nothing
// followed for Config.IdleAfter), an extraction child is started (the
// agent's CLI run headless with thatch's MCP server). The child's fetch
// claims what is pending, only its completion consumes it; a child that
// fails, is killed or outlives the daemon hands back what it held, and a
// claim older than Config.ClaimTTL returns to pending.
package agentmem

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/thatch-run/thatch/actors"
	"github.com/thatch-run/thatch/actors/imnotice"
	"github.com/thatch-run/thatch/messages"
)

// KindName is the kind of the entities; an entity's id is the session's
// (agent ":" session id). A session is followed by a chat binding's
// follower, or (started by hand, its hook told the daemon) by thatch's
// own (Watch).
const KindName = "agent.memory"

// Config is the kind's configuration.
type Config struct {
	// IdleAfter is how long after a turn's end with nothing new the
	// session counts as idle.
	IdleAfter time.Duration
	// ClaimTTL is how long a child's claim holds before it returns to
	// pending.
	ClaimTTL time.Duration
	// MaxPending bounds the buffer: the oldest interactions beyond it are
	// dropped (and counted).
	MaxPending int
	// Off: no extraction child is started (memory.extractor = "off"),
	// also for a session that buffered before it was switched off; nothing
	// more is buffered.
	Off bool
}

// Interaction is one tool call and its outcome.
type Interaction struct {
	Tool   string `json:"tool"`
	Input  string `json:"input,omitempty"`
	Output string `json:"output,omitempty"`
	Failed bool   `json:"failed,omitempty"`
}

// Call is a tool call read from the transcript; Result its outcome.
type (
	Call struct {
		ID    string `json:"id"`
		Tool  string `json:"tool"`
		Input string `json:"input,omitempty"`
		// End is where its transcript line ends: a read again of a line
		// folded in already (after a restart) is dropped by it.
		End int64 `json:"end,omitempty"`
	}
	Result struct {
		ID     string `json:"id"`
		Output string `json:"output,omitempty"`
		Failed bool   `json:"failed,omitempty"`
		End    int64  `json:"end,omitempty"`
	}
)

// State is one session's buffer and extraction.
type State struct {
	ID     string `json:"id"`
	Thread string `json:"thread,omitempty"`
	Agent  string `json:"agent,omitempty"`
	Dir    string `json:"dir,omitempty"`
	// Read is how far each transcript was read: a read that ends at or
	// before it is a repeat.
	Read map[string]int64 `json:"read,omitempty"`
	// Calls wait for their results.
	Calls   map[string]Call `json:"calls,omitempty"`
	Pending []Interaction   `json:"pending,omitempty"`
	// IdleAt is when the session counts as idle (Unix ms; 0: not armed).
	IdleAt int64 `json:"idleAt,omitempty"`
	// Child is the running extraction child ("": none), N how many were
	// started.
	Child    string `json:"child,omitempty"`
	N        int    `json:"n,omitempty"`
	Failures int    `json:"failures,omitempty"`
	// Claim is what Child fetched, ClaimedAt when (Unix ms).
	Claim     []Interaction `json:"claim,omitempty"`
	Fetched   bool          `json:"fetched,omitempty"`
	ClaimedAt int64         `json:"claimedAt,omitempty"`
	Extracted int           `json:"extracted,omitempty"`
	Dropped   int           `json:"dropped,omitempty"`
	LastError string        `json:"lastError,omitempty"`
	// Watch is the transcript thatch follows for this session by itself
	// (a session started by hand, whose hook told the daemon of it); ""
	// for a session a chat binding follows.
	Watch string `json:"watch,omitempty"`
}

// Commands and results.
type (
	// ToolsRead is what a read of the session's transcript from From to
	// To said: tool calls, results, and whether a turn ended. Reply: nil.
	ToolsRead struct {
		// Thread is the chat thread that follows the session ("": none);
		// it is told, silently, what a child wrote.
		Thread           string
		Agent, Dir, Path string
		From, To         int64
		Calls            []Call
		Results          []Result
		TurnEnded        bool
	}
	// Watch records that thatch follows the session's transcript Path by
	// itself (a session started by hand). Reply: int64, how far Path was
	// read: where the following goes on.
	Watch struct{ Agent, Path, Dir string }
	// FetchPayload is an extraction child's fetch: it claims what is
	// pending. Reply: *Payload.
	FetchPayload struct{ Child string }
	// Done is the child's completion: it consumes the claim; Wrote is
	// how many memories the child wrote. Reply: int, the interactions
	// consumed.
	Done struct {
		Child string
		Wrote int
	}
	// Exited is StartExtractor's result: the child's process ended (Err:
	// why it failed).
	Exited struct {
		Child string
		Err   string
	}
)

// Payload is FetchPayload's reply.
type Payload struct {
	Interactions []Interaction `json:"interactions"`
	// New is how many of them this fetch claimed (a fetch again claims
	// only what came since).
	New   int    `json:"new"`
	Agent string `json:"agent"`
	Dir   string `json:"dir"`
	// Err: the fetch was refused (not the running child).
	Err string `json:"error,omitempty"`
}

// StartExtractor is the effect that runs the child: Agent's CLI headless
// in no window, with thatch's MCP server for Dir and Child. Result:
// *Exited.
type StartExtractor struct {
	Child, Session, Agent, Dir string
}

// Events.
type (
	// Seen folds a transcript read in.
	Seen struct {
		Thread  string   `json:"thread,omitempty"`
		Agent   string   `json:"agent,omitempty"`
		Dir     string   `json:"dir,omitempty"`
		Path    string   `json:"path"`
		To      int64    `json:"to"`
		Calls   []Call   `json:"calls,omitempty"`
		Results []Result `json:"results,omitempty"`
		Max     int      `json:"max"`
	}
	// IdleArmed sets IdleAt (0: disarmed).
	IdleArmed struct {
		At int64 `json:"at"`
	}
	// ChildStarted records the child Child started.
	ChildStarted struct {
		Child string `json:"child"`
	}
	// Claimed moves what is pending into the child's claim at At.
	Claimed struct {
		Child string `json:"child"`
		At    int64  `json:"at"`
	}
	// ClaimDone consumes the claim.
	ClaimDone struct {
		Child string `json:"child"`
	}
	// ClaimReturned hands the claim back to pending (Why).
	ClaimReturned struct {
		Child string `json:"child"`
		Why   string `json:"why"`
	}
	// Watched records the transcript followed by itself (Watch).
	Watched struct {
		Agent string `json:"agent"`
		Path  string `json:"path"`
		Dir   string `json:"dir,omitempty"`
	}
	// ChildEnded records the child gone, its claim handed back; Err is
	// why it failed ("" when it completed).
	ChildEnded struct {
		Child string `json:"child"`
		Err   string `json:"err,omitempty"`
	}
)

func init() {
	messages.Register[State]("agent.memory.state", 1)
	messages.Register[Seen]("agent.memory.seen", 1)
	messages.Register[IdleArmed]("agent.memory.idle_armed", 1)
	messages.Register[ChildStarted]("agent.memory.child_started", 1)
	messages.Register[Claimed]("agent.memory.claimed", 1)
	messages.Register[ClaimDone]("agent.memory.claim_done", 1)
	messages.Register[ClaimReturned]("agent.memory.claim_returned", 1)
	messages.Register[ChildEnded]("agent.memory.child_ended", 1)
	messages.Register[Watched]("agent.memory.watched", 1)
}

// Timer names.
const (
	idleTimer  = "idle"
	claimTimer = "claim"
)

// Kind is the agent memory kind.
type Kind struct{ cfg Config }

// New returns the kind.
func New(cfg Config) *Kind {
	if cfg.ClaimTTL <= 0 {
		cfg.ClaimTTL = 15 * time.Minute
	}
	if cfg.IdleAfter <= 0 {
		cfg.IdleAfter = 2 * time.Minute
	}
	if cfg.MaxPending <= 0 {
		cfg.MaxPending = 500
	}
	return &Kind{cfg: cfg}
}

var _ actors.Kind[State] = (*Kind)(nil)

// Name returns KindName.
func (*Kind) Name() string { return KindName }

// Initial is a session with nothing buffered.
func (*Kind) Initial(id string) *State { return &State{ID: id} }

// Active: a child runs, something is claimed, or the idle timer is armed
// over pending work; such a session is rehydrated at start to re-arm its
// timers and hand back what a child of the last run held.
func (*Kind) Active(s *State) bool {
	return s.Child != "" || len(s.Claim) > 0 || (s.IdleAt > 0 && len(s.Pending) > 0)
}

// Effects lists the effect the kind releases (actors.EffectLister).
func (*Kind) Effects() []any { return []any{(*StartExtractor)(nil)} }

// Decide handles one message.
func (k *Kind) Decide(s *State, msg any, now time.Time) actors.Decision {
	p := actors.NewPlan(s, k.Apply, nil)
	switch m := msg.(type) {
	case *ToolsRead:
		k.read(&p, m, now)
	case *Watch:
		if s.Watch != m.Path || s.Agent != m.Agent || (m.Dir != "" && s.Dir != m.Dir) {
			p.Event(&Watched{Agent: m.Agent, Path: m.Path, Dir: m.Dir})
		}
		p.Reply(p.S.Read[m.Path])
	case *FetchPayload:
		p.Reply(k.fetch(&p, m.Child, now))
	case *Done:
		n := 0
		if m.Child != "" && m.Child == p.S.Child && len(p.S.Claim) > 0 {
			n = len(p.S.Claim)
			p.Event(&ClaimDone{Child: m.Child})
			if m.Wrote > 0 && p.S.Thread != "" {
				// A courtesy line, sent at most once: the memories are
				// in the store whether or not it arrives.
				p.Effect(&actors.Send{To: actors.Identity{Kind: imnotice.KindName, ID: p.S.Thread},
					Msg: &messages.IMNotice{Text: fmt.Sprintf("🧠 %d memor%s saved from this session's last %d tool call%s.",
						m.Wrote, plural(m.Wrote, "y", "ies"), n, plural(n, "", "s")), Silent: true}})
			}
		}
		p.Reply(n)
	case *Exited:
		if m.Child == p.S.Child {
			p.Event(&ChildEnded{Child: m.Child, Err: m.Err})
			k.rearm(&p, now)
		}
	case *actors.Tick:
		k.tick(&p, m.Name, now)
	case *actors.Recovered:
		k.recovered(&p, m.Restarted, now)
	default:
		return actors.Decision{Unhandled: true}
	}
	return p.Decision()
}

// read folds a transcript read in and arms or disarms the idle timer.
func (k *Kind) read(p *actors.Plan[State], m *ToolsRead, now time.Time) {
	if k.cfg.Off || m.To <= p.S.Read[m.Path] {
		p.Reply(nil)
		return
	}
	p.Event(&Seen{Thread: m.Thread, Agent: m.Agent, Dir: m.Dir, Path: m.Path, To: m.To, Calls: m.Calls, Results: m.Results, Max: k.cfg.MaxPending})
	switch {
	case m.TurnEnded && (len(p.S.Pending) > 0 || len(p.S.Calls) > 0):
		at := now.Add(k.cfg.IdleAfter)
		p.Event(&IdleArmed{At: at.UnixMilli()})
		p.Effect(&actors.StartTimer{Name: idleTimer, After: k.cfg.IdleAfter})
	case (len(m.Calls) > 0 || len(m.Results) > 0) && p.S.IdleAt > 0:
		// The session works again: it is not idle.
		p.Event(&IdleArmed{})
		p.Effect(&actors.CancelTimer{Name: idleTimer})
	}
	p.Reply(nil)
}

// fetch claims what is pending for the running child.
func (k *Kind) fetch(p *actors.Plan[State], child string, now time.Time) *Payload {
	s := p.S
	if child == "" || child != s.Child {
		return &Payload{Err: fmt.Sprintf("%s is not this session's running extraction", child)}
	}
	claimed := len(s.Pending)
	if claimed > 0 {
		p.Event(&Claimed{Child: child, At: now.UnixMilli()})
		p.Effect(&actors.StartTimer{Name: claimTimer, After: k.cfg.ClaimTTL})
	}
	return &Payload{Interactions: slices.Clone(p.S.Claim), New: claimed, Agent: s.Agent, Dir: s.Dir}
}

// tick handles the idle and claim timers.
func (k *Kind) tick(p *actors.Plan[State], name string, now time.Time) {
	s := p.S
	switch name {
	case idleTimer:
		if s.IdleAt == 0 || now.UnixMilli() < s.IdleAt {
			return
		}
		p.Event(&IdleArmed{})
		if k.cfg.Off || s.Child != "" || len(p.S.Pending) == 0 || s.Dir == "" {
			// No directory yet: which store is the session's is not
			// known; a later turn's end arms the timer again.
			return
		}
		child := fmt.Sprintf("%s#%d", s.ID, s.N+1)
		p.Event(&ChildStarted{Child: child})
		p.Effect(&StartExtractor{Child: child, Session: s.ID, Agent: s.Agent, Dir: s.Dir})
	case claimTimer:
		if len(s.Claim) == 0 {
			return
		}
		if left := time.UnixMilli(s.ClaimedAt).Add(k.cfg.ClaimTTL).Sub(now); left > 0 {
			p.Effect(&actors.StartTimer{Name: claimTimer, After: left})
			return
		}
		p.Event(&ClaimReturned{Child: s.Child, Why: "claim older than " + k.cfg.ClaimTTL.String()})
		k.rearm(p, now)
	}
}

// rearm arms the idle timer for what is pending once no child runs: the
// next child starts after IdleAfter, doubled for each failure in a row
// (at most 64 times).
func (k *Kind) rearm(p *actors.Plan[State], now time.Time) {
	if len(p.S.Pending) == 0 || p.S.Child != "" {
		return
	}
	after := k.cfg.IdleAfter << min(p.S.Failures, 6)
	p.Event(&IdleArmed{At: now.Add(after).UnixMilli()})
	p.Effect(&actors.StartTimer{Name: idleTimer, After: after})
}

// recovered hands back what a child of the last run held (its process
// died with the daemon) and re-arms the timers. After a restart of the
// entity alone (Restarted) the child's process still runs, and its end
// comes back as Exited.
func (k *Kind) recovered(p *actors.Plan[State], restarted bool, now time.Time) {
	s := p.S
	if len(s.Claim) > 0 {
		p.Effect(&actors.StartTimer{Name: claimTimer, After: max(0, time.UnixMilli(s.ClaimedAt).Add(k.cfg.ClaimTTL).Sub(now))})
	}
	if s.Child != "" && !restarted {
		p.Event(&ChildEnded{Child: s.Child, Err: "thatch restarted while it ran"})
		k.rearm(p, now)
		return
	}
	if s.IdleAt > 0 {
		p.Effect(&actors.StartTimer{Name: idleTimer, After: max(0, time.UnixMilli(s.IdleAt).Sub(now))})
	}
}

// Apply returns the state after ev; s is left as it was.
func (*Kind) Apply(s *State, ev any) *State {
	n := *s
	switch e := ev.(type) {
	case *Seen:
		n.seen(s, e)
	case *IdleArmed:
		n.IdleAt = e.At
	case *Watched:
		n.Watch, n.Agent = e.Path, e.Agent
		if e.Dir != "" {
			n.Dir = e.Dir
		}
	case *ChildStarted:
		n.Child, n.N, n.Fetched = e.Child, s.N+1, false
	case *Claimed:
		n.Claim = append(slices.Clone(s.Claim), s.Pending...)
		n.Pending, n.ClaimedAt, n.Fetched = nil, e.At, true
	case *ClaimDone:
		n.Extracted += len(s.Claim)
		n.Claim, n.ClaimedAt, n.Failures, n.LastError = nil, 0, 0, ""
	case *ClaimReturned:
		n.Pending = append(slices.Clone(s.Claim), s.Pending...)
		n.Claim, n.ClaimedAt, n.LastError = nil, 0, e.Why
	case *ChildEnded:
		switch {
		case e.Err != "" || len(s.Claim) > 0:
			n.Failures++
			n.LastError = cmp.Or(e.Err, "the child ended without completing its claim")
		case !s.Fetched && len(s.Pending) > 0:
			n.Failures++
			n.LastError = "the child ended without fetching its payload"
		}
		n.Pending = append(slices.Clone(s.Claim), s.Pending...)
		n.Claim, n.ClaimedAt, n.Child = nil, 0, ""
	default:
		return s
	}
	return &n
}

// seen folds a transcript read into n (a copy of s): calls wait for their
// results, a result completes its call into an interaction, and the
// buffer keeps the newest Max.
func (n *State) seen(s *State, e *Seen) {
	if e.Agent != "" {
		n.Agent = e.Agent
	}
	if e.Thread != "" {
		n.Thread = e.Thread
	}
	if e.Dir != "" {
		n.Dir = e.Dir
	}
	n.Read = make(map[string]int64, len(s.Read)+1)
	for k, v := range s.Read {
		n.Read[k] = v
	}
	n.Read[e.Path] = e.To
	before := s.Read[e.Path]
	n.Calls = make(map[string]Call, len(s.Calls)+len(e.Calls))
	for k, v := range s.Calls {
		n.Calls[k] = v
	}
	for _, c := range e.Calls {
		if c.End == 0 || c.End > before {
			n.Calls[c.ID] = c
		}
	}
	n.Pending = slices.Clone(s.Pending)
	for _, r := range e.Results {
		if r.End != 0 && r.End <= before {
			continue // folded in already
		}
		c, ok := n.Calls[r.ID]
		if !ok {
			continue
		}
		delete(n.Calls, r.ID)
		n.Pending = append(n.Pending, Interaction{Tool: c.Tool, Input: c.Input, Output: r.Output, Failed: r.Failed})
	}
	if e.Max > 0 && len(n.Pending) > e.Max {
		n.Dropped += len(n.Pending) - e.Max
		n.Pending = n.Pending[len(n.Pending)-e.Max:]
	}
	if len(n.Calls) > e.Max && e.Max > 0 {
		n.Calls = map[string]Call{} // calls whose results never came
	}
}

// Status is what `thatch status` shows of a session's memory.
type Status struct {
	Session   string `json:"session"`
	Agent     string `json:"agent,omitempty"`
	Dir       string `json:"dir,omitempty"`
	Pending   int    `json:"pending"`
	Claimed   int    `json:"claimed"`
	Child     string `json:"child,omitempty"`
	Children  int    `json:"children"`
	Extracted int    `json:"extracted"`
	Dropped   int    `json:"dropped,omitempty"`
	LastError string `json:"lastError,omitempty"`
	// Watch is the transcript thatch follows by itself (a session started
	// by hand), and Read how far it was read.
	Watch string `json:"watch,omitempty"`
	Read  int64  `json:"read,omitempty"`
}

// View is the session's Status.
func (*Kind) View(s *State) any {
	return Status{Session: s.ID, Agent: s.Agent, Dir: s.Dir, Pending: len(s.Pending), Claimed: len(s.Claim), Child: s.Child,
		Children: s.N, Extracted: s.Extracted, Dropped: s.Dropped, LastError: s.LastError, Watch: s.Watch, Read: s.Read[s.Watch]}
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
